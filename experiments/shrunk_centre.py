"""The private conditioning's centre: the released mean against its James-Stein shrinkage.

Without ``feature_bounds`` the classifiers and regressors centre their rows at a released mean
``c_hat = S_x / N`` whose noise has the same variance ``tau^2 = sigma^2 / N^2`` in every
coordinate. Where ``p`` is large against ``n epsilon`` that noise is of the order of the rows'
own spread (``bench_conditioning``'s imbalanced 2000 x 100 at epsilon 1: ``||c_hat - x_bar||``
0.48-0.49 of the rows' root-mean-square distance to their mean, seeds 0-3). The positive-part
James-Stein rule toward the grand mean (``noisygd.estimators.shrunk_centre``; Efron and Morris
1973) has a smaller expected squared error than ``c_hat`` for every mean when ``p >= 4``, and
it is post-processing of the same release. This script measures what the better centre does to
the fit: the default fit of ``DPLogisticRegression`` and ``DPLinearRegression`` with the
released mean (``released``) and with the shrunk one (``shrunk``), plain (no bounds: the only
fits that release a centre), on ``bench_conditioning``'s families (n 500, 2000, 10 000; p 5,
20, 100; epsilon 0.5, 1, 2, 8) and, where the data is present, the eight binary and regression
``bench_utility`` sets. The estimators' class attribute ``_SHRINK_CENTRE`` selects the rule.

Run: ``python experiments/shrunk_centre.py --part k/2`` for k = 0, 1, then ``--merge 2``;
writes ``experiments/results/shrunk_centre.{json,md}``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from _experiment import (
    add_part_arguments,
    change_summary,
    experiment_parser,
    rows_in_parts,
    write_experiment,
)

NAME = "shrunk_centre"
CELLS = tuple((fam, n, p) for fam in ("onehot", "imbalanced", "scales", "offcentre")
              for n in (500, 2000, 10000) for p in (5, 20, 100))
TABLES = ("adult", "bank", "credit", "breast_cancer", "digits_binary", "wine", "bike",
          "diabetes")
EPSILONS = (0.5, 1.0, 2.0, 8.0)


def share_with(prob: dict[str, Any], eps: float, seed: int, shrink: bool) -> float:
    """The plain default fit's share of the non-private gain with the centre rule
    ``shrink`` (set on both estimators' class for this fit)."""
    from bench_conditioning import _share, fit_estimator, nonprivate

    from noisygd.estimators import DPLinearRegression, DPLogisticRegression

    saved = DPLogisticRegression._SHRINK_CENTRE, DPLinearRegression._SHRINK_CENTRE
    DPLogisticRegression._SHRINK_CENTRE = DPLinearRegression._SHRINK_CENTRE = shrink
    try:
        metric = fit_estimator(prob, "auto", "plain", eps, seed)[0]
    finally:
        DPLogisticRegression._SHRINK_CENTRE, DPLinearRegression._SHRINK_CENTRE = saved
    return _share(prob["task"], metric, prob.setdefault("_ceiling", nonprivate(prob)))


def main(argv: list[str] | None = None) -> int:
    from bench_conditioning import named_problems

    ap = experiment_parser(__doc__, seeds=2)
    add_part_arguments(ap)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")

    def run_item(item: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
        name, prob = item
        out = []
        for eps in EPSILONS:
            row: dict[str, Any] = {"problem": name, "task": prob["task"], "epsilon": eps}
            for label, shrink in (("released", False), ("shrunk", True)):
                shares = [share_with(prob, eps, seed, shrink) for seed in range(args.seeds)]
                row[label], row[f"{label} min"] = (float(np.mean(shares)),
                                                   float(np.min(shares)))
            row["change"] = row["shrunk"] - row["released"]
            out.append(row)
        return out

    rows = rows_in_parts(NAME, lambda: named_problems(CELLS, args.data_dir, TABLES),
                         args.part, args.merge, run_item)
    if rows is None:
        return 0
    lines = [
        "# The released centre against its James-Stein shrinkage (plain default fits)",
        "",
        "Share of the non-private gain (AUC, 0.5 as 0, or R^2; mean and min over seeds "
        f"0..{args.seeds - 1}) of the default fit with the released mean as centre and with "
        "it shrunk toward its grand mean (module doc). "
        + "; ".join(change_summary(task, [r["change"] for r in rows if r["task"] == task])
                    for task in ("binary", "regression")) + ".",
        "",
        "| problem | task | epsilon | released | released min | shrunk | shrunk min | change |",
        "|---|---|---|---|---|---|---|---|",
        *(f"| {r['problem']} | {r['task']} | {r['epsilon']:g} | {r['released']:.3f} | "
          f"{r['released min']:.3f} | {r['shrunk']:.3f} | {r['shrunk min']:.3f} | "
          f"{r['change']:+.3f} |" for r in rows),
        "",
        "Command: `python experiments/shrunk_centre.py --part k/2` for k = 0, 1, then "
        "`--merge 2`.",
    ]
    write_experiment(NAME, rows, "\n".join(lines) + "\n")
    print("\n".join(lines[:3]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
