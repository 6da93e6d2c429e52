"""Private Newton (``method="newton"``) beside scikit-learn's lbfgs: whole fits, same data.

For each problem of ``_scale_problems.py`` (dense ``n x 50`` rows in the unit ball with
logistic labels, ``||w|| = 4``; CSR ``1e6 x 1e4`` with 10 nonzeros per row), in one process
and interleaved (lbfgs, Newton, lbfgs, Newton, ...; median of ``--repeats``; each timed fit
after ``_scale_problems.PAUSE_S`` of rest, so that neither starts while the other's OpenBLAS
threads still spin):

* scikit-learn ``LogisticRegression(solver="lbfgs")`` at its defaults (non-private);
* ``DPLogisticRegression(epsilon=1, delta=1e-5, method="newton")`` with public classes and
  ``n`` (as ``bench_scale.py``'s default fit), the estimator's defaults otherwise; on the
  CSR problem with ``l2=0``, ``method_options={"l2": "auto", "row_nonzeros": 11}`` (the
  diagonal preconditioner needs the declared bound: 10 features and the intercept).

Columns: wall seconds of each fit, their ratio, training log loss of each and the
difference, Newton's noisy steps and curvature releases, and the planned curvature noise
ratio. Writes ``benchmarks/results/bench_newton.json`` and ``.md``. Heavy: run under the
shared lock (``flock /work/notes/heavy.lock``) and alone.

    python benchmarks/bench_newton.py [--problems dense-100000 dense-1000000 sparse]
                                      [--repeats 3]

``--rule [--seeds 3] [--data-dir ../shared/data/uci]``: the default's choice between NoisyGD and
Newton (``method="auto"``, :func:`noisygd.solvers.auto.choose_method`) beside both methods'
test AUC, on synthetic families (:func:`_family`) and bench_utility's binary UCI tables;
writes ``bench_newton_rule.json`` and ``.md`` (light: a few minutes, no lock needed).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _common import environment, write_results
from _scale_problems import PAUSE_S, make_problem

EPSILON, DELTA = 1.0, 1e-5
SPARSE_OPTIONS = {"l2": "auto", "row_nonzeros": 11}


def _newton(problem: str, X: Any, y: np.ndarray) -> Any:
    from noisygd.estimators import DPLogisticRegression

    sparse = problem == "sparse"
    return DPLogisticRegression(
        epsilon=EPSILON, delta=DELTA, classes=[0.0, 1.0], n_samples_public=X.shape[0],
        random_state=0, method="newton", l2=0.0 if sparse else None,
        method_options=dict(SPARSE_OPTIONS) if sparse else None)


def _log_loss(y: np.ndarray, proba: np.ndarray) -> float:
    from sklearn.metrics import log_loss

    return float(log_loss(y, proba[:, 1]))


def one_problem(problem: str, repeats: int) -> dict[str, Any]:
    """Interleaved fits on one problem; the medians and the quality of the last fits."""
    from sklearn.linear_model import LogisticRegression

    X, y = make_problem(problem)
    times: dict[str, list[float]] = {"sklearn": [], "newton": []}
    sk = nw = None
    for _ in range(repeats):  # each timed fit rested (bench_scale's protocol: PAUSE_S)
        time.sleep(PAUSE_S)
        t0 = time.perf_counter()
        sk = LogisticRegression(solver="lbfgs").fit(X, y)
        times["sklearn"].append(time.perf_counter() - t0)
        time.sleep(PAUSE_S)
        t0 = time.perf_counter()
        nw = _newton(problem, X, y).fit(X, y)
        times["newton"].append(time.perf_counter() - t0)
    plan = nw.fit_info_["plans"][0]["plan"]
    ll_sk, ll_nw = _log_loss(y, sk.predict_proba(X)), _log_loss(y, nw.predict_proba(X))
    t_sk, t_nw = statistics.median(times["sklearn"]), statistics.median(times["newton"])
    return {
        "problem": problem, "n": X.shape[0], "d": X.shape[1],
        "sklearn_s": t_sk, "newton_s": t_nw, "ratio": t_nw / t_sk,
        "sklearn_log_loss": ll_sk, "newton_log_loss": ll_nw, "excess": ll_nw - ll_sk,
        "newton_steps": int(plan["steps"]), "curvature_releases": len(plan["hessian_steps"]),
        "hessian": plan["hessian"], "hessian_noise_ratio": plan["hessian_noise_ratio"],
        "sklearn_iters": int(np.max(sk.n_iter_)),
        "sklearn_times": times["sklearn"], "newton_times": times["newton"],
    }


# ------------------------------------------------------------------ the default's choice
#: Synthetic families of ``--rule`` (``_family``): n, p and epsilon of each cell.
RULE_KINDS = ("isotropic", "scaled", "onehot")
RULE_N = (20_000, 100_000)
RULE_P = (10, 50)
RULE_EPSILONS = (0.5, 1.0, 2.0, 8.0)
RULE_TABLES = ("adult", "bank", "credit")


def _family(kind: str, n: int, p: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``2n`` rows in the unit ball (the first ``n`` to fit, the rest to test) with logistic
    labels, ``||w|| = 4``: ``isotropic`` Gaussian rows; ``scaled`` feature scales spanning
    100x; ``onehot`` uncentred 0/1 columns with rates from 0.5 down to 0.01 and a base rate
    below one half (rare positive class)."""
    rng = np.random.default_rng(seed)
    if kind == "isotropic":
        X = rng.standard_normal((2 * n, p)) / np.sqrt(p)
    elif kind == "scaled":
        X = 3.0 * rng.standard_normal((2 * n, p)) * np.geomspace(0.01, 1.0, p) / np.sqrt(p)
    else:
        rates = np.geomspace(0.5, 0.01, p)
        X = (rng.random((2 * n, p)) < rates).astype(float) / np.sqrt(max(1.0, 2 * rates.sum()))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w = rng.standard_normal(p)
    w *= 4.0 / np.linalg.norm(w)
    margin = X @ w - (1.5 if kind == "onehot" else 0.0)
    y = (rng.random(2 * n) < 1.0 / (1.0 + np.exp(-margin))).astype(float)
    return X, y


def _rule_cell(name: str, X, y, Xt, yt, eps: float, delta: float, seeds: int,
               extra: dict[str, Any]) -> dict[str, Any]:
    """Test AUC of NoisyGD, Newton and the default (its choice and why) at one epsilon."""
    from sklearn.metrics import roc_auc_score

    from noisygd.estimators import DPLogisticRegression

    row: dict[str, Any] = {"problem": name, "n": X.shape[0], "d": X.shape[1], "epsilon": eps}
    for method in ("noisy_gd", "newton", "auto"):
        aucs = []
        for seed in range(seeds):
            est = DPLogisticRegression(epsilon=eps, delta=delta, classes=[0, 1],
                                       random_state=seed, **extra,
                                       **({} if method == "auto" else {"method": method}))
            est.fit(X, y)
            aucs.append(roc_auc_score(yt, est.decision_function(Xt)))
        row[f"{method}_auc"] = float(np.mean(aucs))
        if method == "auto":
            row["chosen"] = est.fit_info_["method"]
            row["rule"] = est.fit_info_["method_choice"]["rule"]
    best = max(row["noisy_gd_auc"], row["newton_auc"])
    row["auto_below_best"] = best - row["auto_auc"]
    return row


def rule_rows(seeds: int, data: Path | None) -> list[dict[str, Any]]:
    """``--rule``: the default's choice beside both methods on the synthetic families and
    ``bench_utility``'s binary UCI tables (declared boxes, as bench_utility declares)."""
    rows = []
    for kind in RULE_KINDS:
        for n in RULE_N:
            for p in RULE_P:
                X, y = _family(kind, n, p)
                for eps in (1.0, 8.0):
                    rows.append(_rule_cell(f"{kind}-{n}x{p}", X[:n], y[:n], X[n:], y[n:],
                                           eps, 1e-5, seeds, {"n_samples_public": n}))
                    print(rows[-1]["problem"], eps, rows[-1]["chosen"], flush=True)
    if data is not None:
        import bench_utility as bu

        for table in RULE_TABLES:
            prob = bu.load_problem(table, data)
            for eps in RULE_EPSILONS:
                rows.append(_rule_cell(table, prob.X, prob.y, prob.Xt, prob.yt, eps,
                                       prob.delta, seeds, bu.declarations(prob)))
                print(table, eps, rows[-1]["chosen"], flush=True)
    return rows


def main_rule(args: argparse.Namespace, argv: list[str] | None) -> int:
    """Write ``bench_newton_rule.json`` and ``.md`` (``--rule``)."""
    from _common import data_dir

    root = data_dir(args.data_dir)
    rows = rule_rows(args.seeds, root if root is not None and root.exists() else None)
    columns = ["problem", "n", "d", "epsilon", "noisy_gd_auc", "newton_auc", "auto_auc",
               "chosen", "auto_below_best", "rule"]
    meta = {
        "title": "The default's choice between NoisyGD and Newton (method='auto')",
        "description": (
            "Test ROC AUC, mean over seeds 0.."
            f"{args.seeds - 1}, of DPLogisticRegression with method='noisy_gd', "
            "method='newton' and the default (method='auto', its choice and its rule's "
            "numbers). Synthetic families (_family: isotropic, feature scales spanning 100x, "
            "uncentred one-hot-like with a rare class; ||w|| = 4; n rows to fit and n to "
            "test; public n) and bench_utility's binary UCI tables with their declared "
            "feature boxes. auto_below_best: the better method's AUC minus the default's."),
        "command": "python " + " ".join(["benchmarks/bench_newton.py", *(argv or sys.argv[1:])]),
        "environment": environment(),
    }
    write_results("bench_newton_rule", rows, meta, columns=columns,
                  results_dir=args.results_dir)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+",
                        default=["dense-100000", "dense-1000000", "sparse"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--results-dir", type=Path, default=None)
    parser.add_argument("--rule", action="store_true",
                        help="the default's choice (method='auto') beside both methods on "
                             "synthetic families and UCI tables (bench_newton_rule)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per --rule cell")
    parser.add_argument("--data-dir", default=None, help="UCI data for --rule")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=UserWarning)
    if args.rule:
        return main_rule(args, argv)
    rows = []
    for problem in args.problems:
        row = one_problem(problem, args.repeats)
        rows.append(row)
        print(f"{problem}: lbfgs {row['sklearn_s']:.2f}s, newton {row['newton_s']:.2f}s "
              f"(x{row['ratio']:.2f}); log loss {row['sklearn_log_loss']:.5f} / "
              f"{row['newton_log_loss']:.5f} ({row['excess']:+.5f})", flush=True)
    columns = ["problem", "n", "d", "sklearn_s", "newton_s", "ratio", "sklearn_log_loss",
               "newton_log_loss", "excess", "newton_steps", "curvature_releases", "hessian",
               "hessian_noise_ratio", "sklearn_iters"]
    meta = {
        "title": "Private Newton beside scikit-learn lbfgs (whole fits, interleaved)",
        "description": (f"DPLogisticRegression(epsilon={EPSILON}, method='newton') against "
                        "LogisticRegression(solver='lbfgs') on the same matrix, one process, "
                        f"median of {args.repeats}, each timed fit after {PAUSE_S:g} s of rest; "
                        "CSR: l2=0 and method_options="
                        f"{SPARSE_OPTIONS}."),
        "command": "python " + " ".join(["benchmarks/bench_newton.py", *(argv or sys.argv[1:])]),
        "environment": environment(),
    }
    write_results("bench_newton", rows, meta, columns=columns, results_dir=args.results_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
