"""Adult benchmark: DPLogisticRegression (NoisyGD) at eps = 1 vs non-private scikit-learn.

Train on ``adult.data``, test on ``adult.test``, preprocessing of
``noisygd.data.load_uci("adult", ...)`` (one-hot categoricals, numerics mapped by public
bounds, rows scaled to norm <= 1). Reports, in ``benchmarks/results/adult_noisygd.{json,md}``:

* accuracy (mean, std over ``--seeds`` seeds) and mean excess empirical risk
  ``F(theta) - F*`` of the private fit, where ``F`` is noisygd's regularised logistic
  objective (``LogisticLoss(l2)``, intercept regularised) and ``F*`` its minimum computed by
  scipy L-BFGS-B to gradient norm ~1e-10; and ``own_excess_mean``, the excess on the
  objective the fit optimised (:func:`own_objective`: its released centre and scales, its
  ridge), issue 2's "training objective minus the non-private optimum of the same objective";
* the same for scikit-learn ``LogisticRegression(solver="lbfgs", C=1/(n*l2))`` (which does not
  regularise the intercept: its excess risk on ``F`` is reported for reference);
* speed: the private fit's wall time against scikit-learn's on the same matrix (the two are
  timed alternately, once per seed, and medians compared), and one NoisyGD iteration against
  one non-private full-gradient evaluation of the same objective (alternating repeats, medians).

Targets (issue 2): accuracy >= 0.840, excess risk <= 0.005, fit time <= 2x scikit-learn,
per-iteration time <= 1.3x a full gradient. The checks of issue 2 are for the fit at the declared
``--l2``; the row "default" is the estimator as a user first meets it (``method="auto"``, the
planned ridge, the private conditioning), checked for accuracy >= 0.840 and excess <= 0.005 on
its own objective too (issue 19: "Adult unchanged or better").

Run: ``.venv/bin/python benchmarks/bench_adult.py [--data-dir ../shared/data/uci]``.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
import warnings

# One BLAS thread for both contenders (set before numpy loads): on a small shared machine
# multi-threaded BLAS timings are dominated by contention. Override with the environment.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import scipy.sparse as sp
from _common import UTILITY_COLUMNS, data_dir, environment, write_results

from noisygd.algorithms.noisy_gd import noisy_gd
from noisygd.estimators import DPLogisticRegression
from noisygd.objectives import LogisticLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.planning import plan_noisy_gd

#: The fixed T of the accelerated plan before issue 10 planned it (MIN_STEPS_ACCELERATED).
FORMER_STEPS = 100


def nonprivate_optimum(
    obj: LogisticLoss, X: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, float]:
    """Minimiser of ``F`` at high precision (the reference for excess risk)."""
    return obj.minimize(X, y)


def own_objective(est: DPLogisticRegression, X: np.ndarray, y_pm: np.ndarray
                  ) -> tuple[ArrayOracle, np.ndarray]:
    r"""The objective a conditioned fit optimised, as a non-private oracle, and the fitted
    parameters in its coordinates.

    ``F'(v) = (1/n) sum_i logistic(<v, [f (x~_i - c), s]>, y_i) + (l2_/2) ||v||^2`` with the
    fit's ``conditioning_`` (centre ``c``, intercept scale ``s``, per-feature scale ``f``, rows
    ``x~_i`` projected onto the ball of radius ``R`` about ``c``, as the fit's oracle serves
    them) and its ridge ``l2_`` (declared, or NoisyGD's planned ridge): issue 2's "training
    objective" of the fit. Its excess ``F'(v) - min F'`` is the fit's optimisation and noise
    error; the excess on ``F`` (``--l2`` on the data's own coordinates) also counts that the
    two objectives differ."""
    from noisygd.objectives import CentredGLM

    cond = est.conditioning_
    centre = cond["centre"] if cond["centre"] is not None else np.zeros(X.shape[1])
    objective = CentredGLM(LogisticLoss(l2=float(est.l2_)), centre, cond["intercept_scale"],
                           feature_scale=cond["feature_scale"])
    oracle = ArrayOracle(objective, X, y_pm, row_norm_bound=cond["row_norm_bound"])
    return oracle, objective.from_base(np.append(est.coef_, est.intercept_))


def fit_seeds(args, X, y01, Xt, yt01, obj, y_pm, f_star, own: bool = False, **params) -> dict:
    """``DPLogisticRegression(epsilon, delta, classes=[0, 1], **params)`` fitted once per seed:
    the last estimator and, per seed, the test accuracy, the excess risk on ``F``, the fit
    time and the epsilon spent; with ``own``, also the excess on the fit's own objective
    (:func:`own_objective`) and the test accuracy of that objective's non-private optimum."""
    out: dict = {"accs": [], "excess": [], "times": [], "eps": [], "own_excess": [],
                 "own_optimum_accs": []}
    for seed in range(args.seeds):
        t0 = time.perf_counter()
        est = DPLogisticRegression(epsilon=args.epsilon, delta=args.delta, classes=[0, 1],
                                   random_state=seed, **params).fit(X, y01)
        out["times"].append(time.perf_counter() - t0)
        out["accs"].append(float(est.score(Xt, yt01)))
        out["excess"].append(obj.value(np.append(est.coef_, est.intercept_), X, y_pm) - f_star)
        out["eps"].append(est.privacy_.epsilon)
        out["est"] = est
        if own:
            excess, optimum_acc = own_excess(est, X, y_pm, Xt, yt01)
            out["own_excess"].append(excess)
            out["own_optimum_accs"].append(optimum_acc)
    return out


def own_excess(est: DPLogisticRegression, X: np.ndarray, y_pm: np.ndarray, Xt: np.ndarray,
               yt01: np.ndarray) -> tuple[float, float]:
    """The fit's excess risk on its own objective (:func:`own_objective`) and the test
    accuracy of that objective's non-private optimum (rows served as the fit serves them)."""
    oracle, v = own_objective(est, X, y_pm)
    v_star, own_star = oracle.minimize()
    theta = oracle.objective.to_base(v_star)
    optimum = copy.copy(est)
    optimum.coef_ = theta[:-1].reshape(np.shape(est.coef_))
    optimum.intercept_ = theta[-1:].reshape(np.shape(est.intercept_))
    return oracle.value(v) - own_star, float(optimum.score(Xt, yt01))


def default_row(args, X, y01, Xt, yt01, obj, y_pm, f_star) -> dict:
    """The estimator as a user first meets it (``DPLogisticRegression(epsilon, delta,
    classes)``: ``method="auto"``, the planned ridge, the private conditioning), same seeds.
    Its objective is its own (the planned ridge, in the released coordinates), so its excess
    risk on ``F`` (``l2 = --l2`` in the data's coordinates) is reported for reference only."""
    fits = fit_seeds(args, X, y01, Xt, yt01, obj, y_pm, f_star, own=True)
    est, accs, excess, times, eps = (fits[k] for k in ("est", "accs", "excess", "times", "eps"))
    released = ", ".join(r["name"] for r in est.fit_info_.get("pre_releases", ()))
    return {
        "method": "noisygd DPLogisticRegression (default: method='auto', l2=None)",
        "epsilon": max(eps), "delta": args.delta,
        "accuracy_mean": float(np.mean(accs)), "accuracy_std": float(np.std(accs)),
        "excess_risk_mean": float(np.mean(excess)),
        "own_excess_mean": float(np.mean(fits["own_excess"])),
        "fit_seconds": statistics.median(times),
        "seconds_per_epoch": statistics.median(times) / int(np.ravel(est.n_iter_)[0]),
        "accountant": est.privacy_.accountant,
        "notes": (f"{args.seeds} seeds; ran {est.fit_info_['method']}, "
                  f"T={int(np.ravel(est.n_iter_)[0])}, planned l2={est.l2_:.3g}; released "
                  f"before the run: {released or 'nothing'}; its objective's non-private "
                  f"optimum: test accuracy {np.mean(fits['own_optimum_accs']):.4f}; excess "
                  "risk on F for reference (the fit's ridge is its own)"),
    }


def other_method_rows(args, X, y01, Xt, yt01, obj, y_pm, f_star) -> list[dict]:
    """NoisySGD and DP-FTRL through the same estimator, same seeds, same objective (issue 3)."""
    from noisygd.solvers import DPFTRLSolver, NoisySGDSolver

    specs = [
        ("noisy_sgd", "add_remove", NoisySGDSolver.defaults["epochs"],
         "Poisson sampling, rate and steps planned from the sampled Gaussian's trade-off; "
         "noisy count (1% of mu^2); noise calibrated on count + SGD jointly"),
        ("dp_ftrl", "replace_one", DPFTRLSolver.defaults["epochs"],
         "Honaker tree, batch 256, lambda from the slides' regret bound, 4 epochs, restart "
         "per epoch, averaged; replace-one (rows streamed in order; add/remove would assign "
         "them to leaves at random), n public"),
    ]
    rows = []
    for method, relation, epochs, note in specs:
        fits = fit_seeds(args, X, y01, Xt, yt01, obj, y_pm, f_star, own=True, l2=args.l2,
                         method=method, neighbouring=relation)
        est, accs, excess, times, eps = (fits[k] for k in ("est", "accs", "excess", "times",
                                                            "eps"))
        fit = statistics.median(times)
        if method == "dp_ftrl":
            lam = est.fit_info_["plans"][0]["plan"].get("l2_ftrl")
            note = f"{note} (lambda = {lam:.4g})" if lam is not None else note
        if method == "noisy_sgd":  # the last seed's plan (it depends on the noisy count)
            plan = est.fit_info_["plans"][0]["plan"]
            rate, steps = plan["sampling_rate"], plan["steps"]
            epochs = rate * steps
            note = f"{note} (q = {rate:.3g}, {steps} steps, {epochs:.3g} epochs)"
        rows.append({
            "method": f"noisygd DPLogisticRegression ({method})",
            "epsilon": max(eps), "delta": args.delta,
            "accuracy_mean": float(np.mean(accs)), "accuracy_std": float(np.std(accs)),
            "excess_risk_mean": float(np.mean(excess)),
            "own_excess_mean": float(np.mean(fits["own_excess"])),
            "fit_seconds": fit, "seconds_per_epoch": fit / epochs,
            "accountant": est.privacy_.accountant,
            "notes": f"{args.seeds} seeds; {note}; defaults in noisygd.solvers",
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--l2", type=float, default=1e-4)
    parser.add_argument("--iter-repeats", type=int, default=7)
    parser.add_argument("--name", default="adult_noisygd")
    args = parser.parse_args(argv)

    from sklearn.linear_model import LogisticRegression

    from noisygd.data.uci import load_uci

    root = data_dir(args.data_dir)
    if not (root / "adult").is_dir():
        print(f"Adult data not found under {root}: skipping", file=sys.stderr)
        return 0
    meta = {"title": "Adult: NoisyGD (DPLogisticRegression) vs non-private L-BFGS",
            "command": "python " + " ".join(["benchmarks/bench_adult.py", *sys.argv[1:]]),
            "environment": environment(), "data_dir": str(root), "l2": args.l2,
            "seeds": args.seeds,
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS")}
    X, y01, Xt, yt01 = load_uci("adult", root)
    n, d = X.shape
    obj = LogisticLoss(l2=args.l2)
    y_pm = obj.check_targets(y01)
    theta_star, f_star = nonprivate_optimum(obj, X, y_pm)
    acc_star = float(np.mean((obj.margins(theta_star, Xt) > 0) == (yt01 == 1)))
    meta.update(n_train=n, n_test=Xt.shape[0], n_features=d, reference_objective=f_star,
                reference_accuracy=acc_star, max_row_norm=float(np.linalg.norm(X, axis=1).max()))

    options = None

    sk_times, dp_times, dp_acc, dp_excess, eps_used = [], [], [], [], []
    dp_own: list[float] = []
    sk_model = None
    # warm-up (imports, first BLAS call) for both, untimed
    LogisticRegression(C=1.0 / (n * args.l2)).fit(X, y01)
    DPLogisticRegression(epsilon=args.epsilon, delta=args.delta, l2=args.l2, classes=[0, 1],
                         method_options=options, random_state=0).fit(X[:2000], y01[:2000])
    est = None
    t100_times: list[float] = []
    for seed in range(args.seeds):
        t0 = time.perf_counter()
        sk_model = LogisticRegression(solver="lbfgs", C=1.0 / (n * args.l2)).fit(X, y01)
        sk_times.append(time.perf_counter() - t0)
        # the same fit capped at T = 100, the planner's fixed T before issue 10 (the fit time
        # at equal work, to compare with results from before the planned T)
        t0 = time.perf_counter()
        DPLogisticRegression(epsilon=args.epsilon, delta=args.delta, l2=args.l2, classes=[0, 1],
                             method_options=options, max_iter=FORMER_STEPS,
                             random_state=seed).fit(X, y01)
        t100_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        est = DPLogisticRegression(epsilon=args.epsilon, delta=args.delta, l2=args.l2,
                                   classes=[0, 1], method_options=options,
                                   random_state=seed).fit(X, y01)
        dp_times.append(time.perf_counter() - t0)
        theta = np.append(est.coef_, est.intercept_)
        dp_acc.append(float(est.score(Xt, yt01)))
        dp_excess.append(obj.value(theta, X, y_pm) - f_star)
        dp_own.append(own_excess(est, X, y_pm, Xt, yt01)[0])
        eps_used.append(est.privacy_.epsilon)
    assert est is not None and sk_model is not None
    privacy = est.privacy_.to_dict()
    plan_info = est.fit_info_
    sk_theta = np.append(sk_model.coef_.ravel(), sk_model.intercept_)
    sk_acc = float(sk_model.score(Xt, yt01))

    # Per-iteration cost: NoisyGD steps vs non-private full gradients of the same objective on
    # the same matrix, alternating repeats. noisy_gd stores one-hot X as CSR ("auto"), so the
    # fair baseline is the gradient on the same CSR matrix; the dense pair is reported too.
    plan = plan_noisy_gd(args.epsilon, args.delta, n, d + 1, obj.constants(1.0))
    steps = plan.steps
    S = sp.csr_array(X)
    clip = obj.constants(1.0).lipschitz

    def run_noisy_gd(sparse: str, **kwargs) -> ArrayOracle:
        oracle = ArrayOracle(obj, X, y_pm, row_norm_bound=1.0, sparse=sparse)
        noisy_gd(oracle, clip=clip, n_samples=n, rng=rng, **kwargs)
        return oracle

    timing: dict[str, list[float]] = {"iter_auto": [], "iter_dense": [], "grad_csr": [],
                                      "grad_dense": [], "setup_auto": [], "setup_dense": []}
    one_step = {**plan.noisy_gd_kwargs(), "steps": 1}
    rng = np.random.default_rng(0)
    g_reps = 20
    used_sparse = None
    for _ in range(args.iter_repeats):
        for mode in ("auto", "dense"):
            sparse = "never" if mode == "dense" else mode
            # marginal cost of an iteration: (time of T steps - time of 1 step) / (T - 1),
            # which removes the one-off setup (validation, row norms, CSR conversion); the
            # setup is reported separately.
            t0 = time.perf_counter()
            run_noisy_gd(sparse, **one_step)
            t1 = time.perf_counter()
            oracle = run_noisy_gd(sparse, **plan.noisy_gd_kwargs())
            t2 = time.perf_counter()
            timing[f"iter_{mode}"].append(((t2 - t1) - (t1 - t0)) / (steps - 1))
            timing[f"setup_{mode}"].append(t1 - t0)
            if mode == "auto":
                used_sparse = bool(oracle.is_sparse)
        for M, key in ((S, "grad_csr"), (X, "grad_dense")):
            t0 = time.perf_counter()
            for _ in range(g_reps):
                obj.gradient(theta_star, M, y_pm)
            timing[key].append((time.perf_counter() - t0) / g_reps)
    med = {k: statistics.median(v) for k, v in timing.items()}
    per_iter = med["iter_auto"]
    per_grad = med["grad_csr"] if used_sparse else med["grad_dense"]
    sk_sparse_times = []
    for _ in range(3):
        t0 = time.perf_counter()
        LogisticRegression(solver="lbfgs", C=1.0 / (n * args.l2)).fit(S, y01)
        sk_sparse_times.append(time.perf_counter() - t0)

    sk_fit, dp_fit = statistics.median(sk_times), statistics.median(dp_times)
    rows = [
        {
            "method": "sklearn LogisticRegression(lbfgs), non-private",
            "epsilon": float("inf"), "delta": 0.0,
            "accuracy_mean": sk_acc, "accuracy_std": 0.0,
            "excess_risk_mean": obj.value(sk_theta, X, y_pm) - f_star,
            "fit_seconds": sk_fit, "seconds_per_epoch": sk_fit / max(int(sk_model.n_iter_[0]), 1),
            "accountant": "", "notes": (f"C=1/(n*l2), intercept unregularised; "
                                        f"{int(sk_model.n_iter_[0])} iterations; "
                                        "seconds_per_epoch = fit / iterations"),
        },
        {
            "method": "noisygd DPLogisticRegression (noisy_gd)",
            "epsilon": args.epsilon, "delta": args.delta,
            "accuracy_mean": float(np.mean(dp_acc)), "accuracy_std": float(np.std(dp_acc)),
            "excess_risk_mean": float(np.mean(dp_excess)),
            "own_excess_mean": float(np.mean(dp_own)),
            "fit_seconds": dp_fit, "seconds_per_epoch": per_iter,
            "accountant": f"{privacy['accountant']} (eps={max(eps_used):.4f})",
            "notes": (f"{args.seeds} seeds; T={int(est.n_iter_[0])}, noisy count (1% of mu^2); "
                      f"excess max {max(dp_excess):.4f}; l2={args.l2}"),
        },
    ]
    rows.append(default_row(args, X, y01, Xt, yt01, obj, y_pm, f_star))
    rows.extend(other_method_rows(args, X, y01, Xt, yt01, obj, y_pm, f_star))
    checks = {
        "accuracy_mean>=0.840": rows[1]["accuracy_mean"] >= 0.840,
        "default_accuracy_mean>=0.840": rows[2]["accuracy_mean"] >= 0.840,
        "excess_risk_mean<=0.005": rows[1]["excess_risk_mean"] <= 0.005,
        "default_own_excess_mean<=0.005": rows[2]["own_excess_mean"] <= 0.005,
        "fit_time<=2x_sklearn": dp_fit <= 2 * sk_fit,
        "iteration<=1.3x_full_gradient": per_iter <= 1.3 * per_grad,
        "dense_iteration<=1.3x_dense_full_gradient": med["iter_dense"] <= 1.3 * med["grad_dense"],
    }
    meta.update(
        fit_time_ratio=dp_fit / sk_fit, iteration_to_gradient_ratio=per_iter / per_grad,
        seconds_per_iteration=per_iter, seconds_per_full_gradient=per_grad,
        sklearn_fit_times=sk_times, private_fit_times=dp_times, accuracies=dp_acc,
        private_fit_times_at_former_steps=t100_times, former_steps=FORMER_STEPS,
        excess_risks=dp_excess, privacy=privacy, fit_info=plan_info, checks=checks,
        per_iteration_plan=plan.noisy_gd_kwargs(), noisy_gd_used_csr=used_sparse,
        median_seconds=med, sklearn_fit_seconds_on_csr=statistics.median(sk_sparse_times),
    )
    extra = "\n".join([
        f"Reference optimum of F: {f_star:.6f} (test accuracy {acc_star:.4f}).",
        f"Fit time: private {dp_fit:.3f} s vs scikit-learn {sk_fit:.3f} s "
        f"(ratio {dp_fit / sk_fit:.2f}, target <= 2; medians over {args.seeds} alternating runs).",
        f"The planner runs T = {int(est.n_iter_[0])} steps here (2 ceil(T*) of the accelerated "
        f"plan, docs/noisygd.md); the same fit capped at the former fixed T = {FORMER_STEPS} "
        f"(max_iter={FORMER_STEPS}) takes {statistics.median(t100_times):.3f} s "
        f"(ratio {statistics.median(t100_times) / sk_fit:.2f} to scikit-learn): the fit time "
        "grew with the planned T, not with the cost of a step (next line).",
        f"One NoisyGD iteration {per_iter * 1e3:.2f} ms vs one full gradient "
        f"{per_grad * 1e3:.2f} ms (ratio {per_iter / per_grad:.2f}, target <= 1.3; "
        f"noisy_gd stored X as CSR: {used_sparse}, and the gradient is timed on the same "
        f"storage). Dense storage: iteration {med['iter_dense'] * 1e3:.2f} ms vs gradient "
        f"{med['grad_dense'] * 1e3:.2f} ms (ratio {med['iter_dense'] / med['grad_dense']:.2f}).",
        f"scikit-learn on the CSR copy of the same matrix: "
        f"{statistics.median(sk_sparse_times):.3f} s (for reference; the target compares "
        "against scikit-learn on the matrix as given).",
        f"Iteration = marginal cost ((T steps - 1 step) / (T - 1)); one-off setup of an "
        f"oracle and a noisy_gd call (validation, row norms, CSR conversion, one step): "
        f"{med['setup_auto'] * 1e3:.1f} ms (CSR), {med['setup_dense'] * 1e3:.1f} ms (dense).",
        "Checks: " + ", ".join(f"{k}: {'pass' if v else 'FAIL'}" for k, v in checks.items()),
        f"Load average at start: {meta['environment']['load_average_at_start']} "
        f"on {meta['environment']['cpu_count']} CPUs (timings on a shared machine are noisy).",
    ])
    columns = (*UTILITY_COLUMNS[:6], "own_excess_mean", *UTILITY_COLUMNS[6:])
    _, mpath = write_results(args.name, rows, meta, columns=columns, extra_markdown=extra)
    print(mpath.read_text())
    return 0


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        sys.exit(main())
