"""Honest horizons: NoisyGD's initial distance from a paid estimate against the theorem's bound.

For each problem and epsilon, the default fit (``method="auto"``: NoisyGD or Newton by the
public rule) and ``method="noisy_gd"``, each twice: **before** with
``method_options={"distance_pilot": False}`` (the plan's ``D`` is the theorem's bound
``sqrt(2 F0 / l2)``: the default) and **after** with ``{"distance_pilot": True}`` (the
distance pilot of :mod:`noisygd.solvers.distance` where it applies: Newton at a 0.1 share of
mu^2, NoisyGD started at its release with ``D = min(||pilot|| + theorem, 4 ||pilot||)``).
Test ROC AUC (R^2 for regression) and NoisyGD's steps,
mean over seeds; the fitted norm in the fit's coordinates is reported beside the plan's
``D``. Problems: scikit-learn's breast cancer and digits (binary) and the UCI tables of
``bench_utility`` (adult, bank, credit; bike and wine for regression) with their declared
boxes, the synthetic families of ``bench_newton`` (isotropic and uncentred one-hot, 20 000 x
50), and ``_scale_problems``'s dense 1e5 x 50 (half held out).

Not a timing benchmark (no lock needed); ``seconds`` is the whole fit's wall time, for
orientation only.

Usage::

    PYTHONPATH=src python benchmarks/bench_horizons.py --data-dir ../shared/data/uci
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, write_results

EPSILONS = (0.5, 1.0, 2.0, 8.0)
TABLES = ("breast_cancer", "digits_binary", "adult", "bank", "credit", "bike", "wine")
FAMILIES = (("isotropic", 20000, 50), ("onehot", 20000, 50))


def _fit_norm(est: Any) -> float:
    """The fitted model's norm in the coordinates the fit ran in (conditioned: the
    coefficients and the scaled intercept)."""
    coef = np.atleast_2d(est.coef_)
    b = np.atleast_1d(est.intercept_)
    cond = getattr(est, "conditioning_", None) or {}
    s = cond.get("intercept_scale")
    if s is None:
        return float(np.linalg.norm(np.column_stack([coef, b])))
    c = cond.get("centre")
    vb = (b + (0.0 if c is None else coef @ c)) / s
    return float(np.linalg.norm(np.column_stack([coef, vb])))


def _one(task: str, X, y, Xt, yt, extra: dict[str, Any], eps: float, method: str | None,
         pilot: bool, seed: int) -> dict[str, Any]:
    import bench_utility as bu

    from noisygd.estimators import DPLinearRegression, DPLogisticRegression

    kw: dict[str, Any] = {"epsilon": eps, "random_state": seed, **extra}
    if method is not None:
        kw["method"] = method
    kw["method_options"] = {"distance_pilot": bool(pilot)}
    if task == "binary":
        est: Any = DPLogisticRegression(classes=[0, 1], **kw)
    else:
        est = DPLinearRegression(**kw)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    seconds = time.perf_counter() - start
    scores = est.decision_function(Xt) if task == "binary" else est.predict(Xt)
    plan = est.fit_info_["plans"][0].get("plan", {})
    return {"metric": bu.metrics(task, yt, scores)[bu.primary(task)],
            "method": est.fit_info_.get("method"), "steps": plan.get("steps"),
            "D": plan.get("init_distance"), "source": plan.get("init_distance_source"),
            "norm": _fit_norm(est), "seconds": seconds}


def _problems(data: Path | None, only: tuple[str, ...] | None = None
              ) -> list[tuple[str, str, Any, Any, Any, Any, dict]]:
    import bench_utility as bu
    from _scale_problems import dense_problem
    from bench_newton import _family

    out = []
    for name in TABLES:
        if (name in ("adult", "bank", "credit", "bike", "wine") and data is None) or (
                only is not None and name not in only):
            continue
        p = bu.load_problem(name, data) if data is not None else bu.load_problem(name, Path())
        out.append((name, p.task, p.X, p.y, p.Xt, p.yt, bu.declarations(p)))
    if only is not None:
        return out
    for kind, n, d in FAMILIES:
        X, y = _family(kind, n, d)
        out.append((f"{kind}-{n}x{d}", "binary", X[:n], y[:n], X[n:], y[n:],
                    {"n_samples_public": n}))
    X, y = dense_problem(200_000)
    out.append(("dense-100000x50", "binary", X[::2], y[::2], X[1::2], y[1::2],
                {"n_samples_public": 100_000}))
    return out


def rows(seeds: int, data: Path | None, only: tuple[str, ...] | None = None,
         fits: tuple[str, ...] = ("default", "noisy_gd")) -> list[dict[str, Any]]:
    out = []
    for name, task, X, y, Xt, yt, extra in _problems(data, only):
        for eps in EPSILONS:
            methods = [None if f == "default" else f for f in fits]
            for method in (methods if task == "binary" else (None,)):
                row: dict[str, Any] = {"problem": name, "n": X.shape[0], "d": X.shape[1],
                                       "epsilon": eps, "fit": method or "default"}
                for label, pilot in (("before", False), ("after", True)):
                    recs = [_one(task, X, y, Xt, yt, extra, eps, method, pilot, s)
                            for s in range(seeds)]
                    row[f"_{label}"] = [r["metric"] for r in recs]
                    row[f"{label}_metric"] = float(np.mean([r["metric"] for r in recs]))
                    row[f"{label}_steps"] = float(np.mean([r["steps"] for r in recs]))
                    row[f"{label}_D"] = float(np.mean([r["D"] or np.nan for r in recs]))
                    row[f"{label}_seconds"] = float(np.mean([r["seconds"] for r in recs]))
                    row[f"{label}_method"] = recs[0]["method"]
                    if pilot:
                        row["after_source"] = recs[0]["source"]
                        row["fitted_norm"] = float(np.mean([r["norm"] for r in recs]))
                row["change"] = row["after_metric"] - row["before_metric"]
                # paired over seeds (same seed, same noise stream up to the pilot's draws)
                diffs = np.array(row.pop("_after")) - np.array(row.pop("_before"))
                row["change_se"] = (float(diffs.std(ddof=1) / np.sqrt(len(diffs)))
                                    if len(diffs) > 1 else float("nan"))
                out.append(row)
                print(name, eps, row["fit"], f"{row['before_metric']:.4f}",
                      f"{row['after_metric']:.4f}", row["before_steps"], row["after_steps"],
                      flush=True)
    return out


COLUMNS = ("problem", "n", "d", "epsilon", "fit", "before_method", "after_method",
           "before_metric", "after_metric", "change", "change_se", "before_steps", "after_steps",
           "before_D", "after_D", "fitted_norm", "after_source", "before_seconds",
           "after_seconds")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--problems", default=None,
                        help="comma-separated tables only (no synthetic problems)")
    parser.add_argument("--fits", default="default,noisy_gd")
    parser.add_argument("--name", default="bench_horizons")
    args = parser.parse_args(argv)
    data = None if args.data_dir is None else Path(args.data_dir)
    only = None if args.problems is None else tuple(args.problems.split(","))
    table = rows(args.seeds, data, only, tuple(args.fits.split(",")))
    changes = np.array([r["change"] for r in table])
    cut = [r for r in table if r["after_steps"] < r["before_steps"]]
    summary = (f"Cells: {len(table)}; utility change after - before: min {changes.min():+.4f}, "
               f"median {np.median(changes):+.4f}, max {changes.max():+.4f}; NoisyGD steps cut "
               f"in {len(cut)} cells (mean {np.mean([r['before_steps'] for r in cut]):.0f} -> "
               f"{np.mean([r['after_steps'] for r in cut]):.0f}).")
    meta = {
        "title": "Honest horizons: the distance pilot against the theorem's bound",
        "description": (
            "metric = test ROC AUC (binary) or R^2 (regression), mean over seeds 0.."
            f"{args.seeds - 1}; before = method_options={{'distance_pilot': False}} (D = "
            "sqrt(2 F0 / l2), the default), after = {'distance_pilot': True} (the pilot where "
            "it applies); steps = NoisyGD's steps (Newton's 10 where the default chose Newton); "
            "D = the plan's init_distance; change_se = standard error of the paired (same seed) "
            "difference; fitted_norm = the after fit's norm in the fit's "
            "coordinates. " + summary),
        "command": "PYTHONPATH=src python benchmarks/bench_horizons.py " + " ".join(
            sys.argv[1:] if argv is None else argv),
        "environment": environment(),
    }
    jpath, mpath = write_results(args.name, table, meta, columns=COLUMNS)
    print(summary)
    print(f"wrote {jpath} and {mpath}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
