"""The noise floor of the CSR scale problem: how close any noisy-gradient fit can come to lbfgs.

On ``benchmarks/_scale_problems.py``'s CSR problem (1e6 x 1e4, 10 nonzeros per row), issue 19
asks for the default ``DPLogisticRegression(epsilon=1)`` within 0.002 training log loss of
scikit-learn's lbfgs. This script measures the floor that target meets: for each epsilon, the
default fit is run, and in the same coordinates as that fit (its released centre ``c``, feature
scale ``f`` and intercept scale ``kappa``: rows ``a = [f (x - c), kappa]``) the *oracle* estimator

.. math:: v = v^* - H^{-1}\\xi, \\qquad \\xi \\sim N(0, (C/\\mu_g)^2 I_p),

is evaluated: the unregularised optimum ``v*`` (lbfgs at ``C = 1e6``; scikit-learn's
default ``C = 1`` adds a ridge, so its loss is slightly above the minimum) moved by one exact
Newton step (the true Hessian ``H`` at ``v*``, solved by conjugate gradients) on a gradient
carrying the noise of one Gaussian release at the fit's whole gradient budget
:math:`\\mu_g` and clip ``C`` (read from ``fit_info_``). That is what a method whose output
has the noise of one gradient release at :math:`\\mu_g` reaches with perfect optimisation
and perfect curvature and no shrinkage: noisy Newton from the optimum, or NoisyGD's
Polyak-averaged stationary phase on the quadratic model (docs/newton.md, "Why the tail
average"). Its excess training log loss over lbfgs is the floor of such methods (a ridge can
trade a little of it for bias); the default's gap is beside it.

Run: ``python experiments/sparse_noise_floor.py [--eps 1 2 4 8] [--draws 5]``; writes
``experiments/results/sparse_noise_floor.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, cg

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))

from _scale_problems import sparse_problem, training_log_loss  # noqa: E402


def _floor(X: sp.csr_array, y: np.ndarray, w: np.ndarray, b: float, c: np.ndarray,
           f: np.ndarray, kappa: float, sd: float, draws: int, sk_loss: float) -> list[float]:
    """Excess training log loss over lbfgs of ``v* - H^{-1} xi`` (module doc) for ``draws``
    noise draws of sd ``sd``, in the coordinates ``a = [f (x - c), kappa]``."""
    n, d = X.shape
    # A v - shift.v is the centred rows' margin (implicit centring keeps A sparse)
    A = sp.hstack([X @ sp.diags(f), sp.csr_array(np.full((n, 1), kappa))]).tocsr()
    shift = np.concatenate([f * c, [0.0]])

    def margins(v: np.ndarray) -> np.ndarray:
        return A @ v - shift @ v

    v_star = np.concatenate([w / f, [(b + c @ w) / kappa]])
    s = 1.0 / (1.0 + np.exp(-margins(v_star)))
    h = s * (1.0 - s)

    def hv(u: np.ndarray) -> np.ndarray:
        m = h * margins(u)
        return A.T @ m - shift * m.sum()

    H = LinearOperator((d + 1, d + 1), matvec=hv, dtype=float)
    rng = np.random.default_rng(0)
    out = []
    for _ in range(draws):
        step, _ = cg(H, rng.standard_normal(d + 1) * sd, rtol=1e-8, maxiter=1000)
        z = margins(v_star - step)
        out.append(float(np.mean(np.logaddexp(0.0, z) - y * z)) - sk_loss)
    return out


def main(argv: list[str] | None = None) -> int:
    from sklearn.linear_model import LogisticRegression

    from noisygd.estimators import DPLogisticRegression

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, nargs="*", default=[1.0, 2.0, 4.0, 8.0])
    parser.add_argument("--draws", type=int, default=5)
    args = parser.parse_args(argv)
    X, y = sparse_problem()
    n, d = X.shape
    lr = LogisticRegression(solver="lbfgs").fit(X, y)
    sk_loss = training_log_loss(lr, X, y)
    # the floor's base point: the unregularised optimum (lbfgs's default C = 1 adds a ridge)
    opt = LogisticRegression(solver="lbfgs", C=1e6, tol=1e-10, max_iter=2000).fit(X, y)
    opt_loss = training_log_loss(opt, X, y)
    w, b = opt.coef_.ravel(), float(opt.intercept_[0])
    rows = []
    for eps in args.eps:
        est = DPLogisticRegression(epsilon=eps, delta=1e-5, classes=[0.0, 1.0],
                                   n_samples_public=n, random_state=0).fit(X, y)
        gap = training_log_loss(est, X, y) - sk_loss
        cond = est.conditioning_
        c = np.asarray(cond["centre"], dtype=float)
        f = np.asarray(cond.get("feature_scale", np.ones(d)), dtype=float)
        kappa = float(cond["intercept_scale"])
        plan = est.fit_info_["plans"][0]["plan"]
        clip = float(plan["clip"])
        mult = plan.get("gradient_noise_multipliers")
        sens = 1.0  # add/remove, in units of the clip
        if mult is not None:  # Newton: mu_g^2 = sum (Delta / z_t)^2
            mu_g = math.sqrt(math.fsum((sens / z) ** 2 for z in mult))
        else:  # NoisyGD: T steps at z
            mu_g = math.sqrt(plan["steps"]) * sens / float(plan["noise_multiplier"])
        excess = _floor(X, y, w, b, c, f, kappa, clip / mu_g, args.draws, sk_loss)
        row = {"epsilon": eps, "method": est.fit_info_["method"],
               "steps": int(np.sum(est.n_iter_)),
               "gradient_mu": mu_g, "clip": clip, "default_gap": gap,
               "floor_mean": statistics.mean(excess), "floor_sd": statistics.stdev(excess),
               "default_above_floor": gap - statistics.mean(excess)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    meta = {"problem": "benchmarks/_scale_problems.py sparse (1e6 x 1e4, 10 nonzeros/row)",
            "sklearn_log_loss": sk_loss, "unregularised_optimum_log_loss": opt_loss,
            "draws": args.draws, "delta": 1e-5,
            "command": "python experiments/sparse_noise_floor.py " + " ".join(argv or sys.argv[1:])}
    (out / "sparse_noise_floor.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                            indent=2))
    lines = ["# Noise floor of the CSR scale problem (issue 19)", "",
             f"lbfgs training log loss {sk_loss:.5f} (the unregularised optimum: {opt_loss:.5f}). "
             "`floor` = excess training log loss over lbfgs of the unregularised optimum moved "
             "by one exact Newton step on a gradient with the noise of one "
             "release at the default fit's whole gradient budget `gradient_mu` and clip "
             "(mean +- sd over "
             f"{args.draws} draws; module doc of `experiments/sparse_noise_floor.py`). "
             "`default_gap` = the default fit's excess over lbfgs (seed 0).", "",
             "| epsilon | method | steps | gradient_mu | clip | default_gap | floor "
             "| default - floor |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['epsilon']:g} | {r['method']} | {r['steps']} | "
                     f"{r['gradient_mu']:.4f} | {r['clip']:.4f} | {r['default_gap']:.4f} | "
                     f"{r['floor_mean']:.4f} +- "
                     f"{r['floor_sd']:.4f} | {r['default_above_floor']:.4f} |")
    lines += ["", f"Command: `{meta['command']}`", ""]
    (out / "sparse_noise_floor.md").write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
