"""Private Newton (``method="newton"``) beside scikit-learn's lbfgs: whole fits, same data.

For each problem of ``_scale_problems.py`` (dense ``n x 50`` rows in the unit ball with
logistic labels, ``||w|| = 4``; CSR ``1e6 x 1e4`` with 10 nonzeros per row), in one process
and interleaved (lbfgs, Newton, lbfgs, Newton, ...; median of ``--repeats``):

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
from _scale_problems import make_problem

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
    for _ in range(repeats):
        t0 = time.perf_counter()
        sk = LogisticRegression(solver="lbfgs").fit(X, y)
        times["sklearn"].append(time.perf_counter() - t0)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+",
                        default=["dense-100000", "dense-1000000", "sparse"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--results-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=UserWarning)
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
                        f"median of {args.repeats}; CSR: l2=0 and method_options="
                        f"{SPARSE_OPTIONS}."),
        "command": "python " + " ".join(["benchmarks/bench_newton.py", *(argv or sys.argv[1:])]),
        "environment": environment(),
    }
    write_results("bench_newton", rows, meta, columns=columns, results_dir=args.results_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
