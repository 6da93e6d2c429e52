"""DPLinearRegression's released facts, before and after (issue 19, item 3: honest horizons).

The default ``DPLinearRegression`` plans NoisyGD from the declared worst case: the smoothness
at the row bound ``R`` (rows of norm ``R`` everywhere) and the ridge's comparator radius
``sqrt(2 n F0)``. With its private scales released (the default), the planner instead reads
the rows' released mean squared norm (an upper confidence bound: a smoothness by the trace
bound), a comparator radius and a mean curvature from the same release, and balances the ridge
by :func:`noisygd.planning.released_ridge_strength` (``ReleasedFacts``;
docs/estimators.md, "Released smoothness and comparator"); where the release does not
resolve the scale (``U_high > 2 U``) the declared facts are kept.

This script fits the default with (``new``) and without (``old``: ``_released_facts``
returning None, everything else equal) on ``bench_conditioning``'s ``offcentre`` family
(n 500, 2000, 10000; p 5, 20, 100) and ``bench_utility``'s three regression sets (wine, bike,
diabetes), plain and with the declared box, epsilon 0.5, 1, 2, 8, seeds 0 and 1, and reports the
share of the non-private R^2 (mean and min over seeds).

Run: ``python experiments/released_facts_regression.py [--data-dir ../shared/data/uci]``; writes
``experiments/results/released_facts_regression.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))


def main(argv: list[str] | None = None) -> int:
    import bench_utility as bu
    from _common import data_dir
    from bench_conditioning import family_problem, fit_noisygd, nonprivate

    from noisygd import estimators

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    released = estimators.DPLinearRegression._released_facts
    mode = {"use": True}

    def switched(self, n_features):
        return released(self, n_features) if mode["use"] else None

    estimators.DPLinearRegression._released_facts = switched
    problems = [(f"offcentre-{n}x{p}", family_problem("offcentre", n, p))
                for n in (500, 2000, 10000) for p in (5, 20, 100)]
    root = data_dir(args.data_dir)
    for name in ("wine", "bike", "diabetes"):
        pr = bu.load_problem(name, root)
        problems.append((name, {"X": pr.X, "y": pr.y, "Xt": pr.Xt, "yt": pr.yt,
                                "lo": pr.bounds_lo, "hi": pr.bounds_hi, "task": "regression"}))
    rows = []
    for name, prob in problems:
        ceiling = nonprivate(prob)
        for eps in (0.5, 1.0, 2.0, 8.0):
            for declared in ("plain", "box"):
                row = {"problem": name, "epsilon": eps, "declared": declared}
                for label, use in (("old", False), ("new", True)):
                    mode["use"] = use
                    shares = [fit_noisygd(prob, "auto", declared, eps, s)[0] / ceiling
                              for s in (0, 1)]
                    row[f"{label}_mean"], row[f"{label}_min"] = (float(np.mean(shares)),
                                                                 float(min(shares)))
                rows.append(row)
                print(row, flush=True)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "released_facts_regression.json").write_text(json.dumps(rows, indent=1))
    lines = ["# DPLinearRegression: declared facts (old) against released facts (new)", "",
             "Share of the non-private R^2 (mean / min over seeds 0, 1). Command: "
             "`python experiments/released_facts_regression.py`.", "",
             "| problem | declared | epsilon | old mean | old min | new mean | new min |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['problem']} | {r['declared']} | {r['epsilon']} | {r['old_mean']:.3f} | "
              f"{r['old_min']:.3f} | {r['new_mean']:.3f} | {r['new_min']:.3f} |" for r in rows]
    (out / "released_facts_regression.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
