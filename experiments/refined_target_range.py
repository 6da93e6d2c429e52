"""The private target range in one release against the refined one in five rounds.

A regressor with no declared ``target_range`` or ``target_bound`` releases its targets' range
(``noisygd.mechanisms.target_range``) and fits in units of its half-width ``h``. One
histogram by sign and binary exponent (``single``: every plain fit before, at 0.05 of
``mu^2``) gives a range within a factor 2 of the targets' extremes, so where the targets sit
far from 0 against their spread, ``h`` is set by their offset. The refined release
(``refined``, the default: ``TARGET_RANGE_ROUNDS`` of ``TARGET_RANGE_SHARE`` = 0.08) follows it
with a mean of the clipped targets and a histogram of their distances to it, twice.

Plain ``DPLinearRegression`` fits (no target range, no feature bounds), share of the
non-private R^2 (scikit-learn's ``LinearRegression``) on the test split:

* the regression grid: ``bench_conditioning``'s ``offcentre`` family (n 500, 2000, 10 000;
  p 5, 20, 100), the ``bench_utility`` regression sets (bike, diabetes) and
  ``bench_raw_tables``' three raw regression tables (wine quality, hourly bike rentals, a
  bill in dollars), epsilon 0.5, 1, 2, 8, seeds 0 and 1;
* ``--offsets``: the ``offcentre`` family at n 2000 and 10 000, p 20, its targets (train and
  test) shifted by ``ratio`` times their standard deviation, ratio 0, 10, 100, 1000, 10 000,
  epsilon 1 and 8, seeds 0-2.

Run: ``python experiments/refined_target_range.py --part k/2`` for k = 0, 1, then
``--merge 2`` (``experiments/results/refined_target_range.{json,md}``); the same with
``--offsets`` (``experiments/results/refined_target_range_offsets.{json,md}``).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from _experiment import (
    add_part_arguments,
    change_summary,
    experiment_parser,
    rows_in_parts,
    write_lines,
)

NAME = "refined_target_range"
OFFSETS_NAME = "refined_target_range_offsets"
CELLS = tuple(("offcentre", n, p) for n in (500, 2000, 10_000) for p in (5, 20, 100))
OFFSET_CELLS = tuple(("offcentre", n, 20) for n in (2000, 10_000))
RATIOS = (0.0, 10.0, 100.0, 1000.0, 10_000.0)
EPSILONS = (0.5, 1.0, 2.0, 8.0)
OFFSET_EPSILONS = (1.0, 8.0)
RAW_TABLES = ("wine-quality", "bike-cnt", "credit-bill")
LABELS = ("single", "refined")


def share_with(prob: dict[str, Any], eps: float, seed: int, refine: bool) -> float:
    """The plain default fit's share of the non-private R^2 with the target range in one
    release at 0.05 of ``mu^2`` (``refine`` False) or refined (the default)."""
    from unittest import mock

    from bench_conditioning import _share, fit_estimator, nonprivate

    import noisygd.mechanisms.target_range as target_range

    # the single release: one round at 0.05 (patching the defaults with themselves refines)
    rounds, share = ((target_range.TARGET_RANGE_ROUNDS, target_range.TARGET_RANGE_SHARE)
                     if refine else ((1.0,), 0.05))
    with mock.patch.multiple(target_range, TARGET_RANGE_ROUNDS=rounds,
                             TARGET_RANGE_SHARE=share):
        metric, _ = fit_estimator(prob, "auto", "plain", eps, seed)
    return _share("regression", metric, prob.setdefault("_ceiling", nonprivate(prob)))


def shifted(prob: dict[str, Any], ratio: float) -> dict[str, Any]:
    """``prob`` with its targets shifted by ``ratio`` times their standard deviation."""
    shift = ratio * float(np.std(prob["y"]))
    return {**prob, "y": prob["y"] + shift, "yt": prob["yt"] + shift}


def problems(data_dir: Any) -> list[tuple[str, dict[str, Any]]]:
    """The regression grid (module doc)."""
    from bench_conditioning import named_problems

    out = named_problems(CELLS, data_dir, ("bike", "diabetes"))
    root = Path(data_dir)
    if root.is_dir():
        from bench_raw_tables import tables

        raw = tables(root)
        for name in RAW_TABLES:
            X, y, Xt, yt = raw[name]
            out.append((name, {"X": X, "y": y, "Xt": Xt, "yt": yt, "lo": None, "hi": None,
                               "task": "regression"}))
    return out


def run_rows(name: str, prob: dict[str, Any], epsilons: tuple[float, ...], seeds: int,
             **extra: Any) -> list[dict[str, Any]]:
    """Per epsilon, both rules' mean and min share over ``seeds`` and their change."""
    out = []
    for eps in epsilons:
        row: dict[str, Any] = {"problem": name, "epsilon": eps, **extra}
        for label in LABELS:
            shares = [share_with(prob, eps, seed, label == "refined") for seed in range(seeds)]
            row[label], row[f"{label} min"] = float(np.mean(shares)), float(min(shares))
        row["change"] = row["refined"] - row["single"]
        out.append(row)
    return out


def table(rows: list[dict[str, Any]], first: tuple[str, ...]) -> list[str]:
    """The Markdown table of ``rows`` (``first``: the leading columns)."""
    cols = [*first, *LABELS[:1], f"{LABELS[0]} min", LABELS[1], f"{LABELS[1]} min", "change"]
    return ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols),
            *("| " + " | ".join(
                [str(r[c]) if c == "problem" else f"{r[c]:g}" for c in first]
                + [f"{r[c]:.3f}" for c in cols[len(first):-1]] + [f"{r['change']:+.3f}"]) + " |"
              for r in rows)]


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")
    offsets = "--offsets" in (sys.argv[1:] if argv is None else argv)
    ap = experiment_parser(__doc__, seeds=3 if offsets else 2)
    add_part_arguments(ap)
    ap.add_argument("--offsets", action="store_true")
    args = ap.parse_args(argv)
    if offsets:
        from bench_conditioning import family_problem

        def run(item: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
            name, base = item
            return [r for ratio in RATIOS
                    for r in run_rows(name, shifted(base, ratio), OFFSET_EPSILONS, args.seeds,
                                      ratio=ratio)]

        rows = rows_in_parts(OFFSETS_NAME, lambda: [(f"{f}-{n}x{p}", family_problem(f, n, p, 0))
                                                    for f, n, p in OFFSET_CELLS],
                             args.part, args.merge, run)
        if rows is None:
            return 0
        lines = [
            "# The refined target range on targets far from 0",
            "",
            "Share of the non-private R^2 (mean and min over seeds "
            f"0..{args.seeds - 1}) of the plain default `DPLinearRegression` with the target "
            "range in one release and refined in five rounds, the targets shifted by `ratio` "
            f"times their spread (module doc of `experiments/{NAME}.py`). "
            + change_summary("shifted targets", [r["change"] for r in rows if r["ratio"] > 0])
            + "; " + change_summary("no shift", [r["change"] for r in rows
                                                  if r["ratio"] == 0]) + ".",
            "",
            *table(rows, ("problem", "ratio", "epsilon")),
            "",
            f"Command: `python experiments/{NAME}.py --offsets --part k/2` for k = 0, 1, "
            "then `--offsets --merge 2`.",
        ]
        write_lines(OFFSETS_NAME, rows, lines)
        return 0
    rows = rows_in_parts(NAME, lambda: problems(args.data_dir), args.part, args.merge,
                         lambda item: run_rows(item[0], item[1], EPSILONS, args.seeds))
    if rows is None:
        return 0
    lines = [
        "# The private target range in one release against five rounds",
        "",
        "Share of the non-private R^2 (mean and min over seeds "
        f"0..{args.seeds - 1}) of the plain default `DPLinearRegression` (module doc of "
        f"`experiments/{NAME}.py`). "
        + change_summary("regression", [r["change"] for r in rows]) + ".",
        "",
        *table(rows, ("problem", "epsilon")),
        "",
        f"Command: `python experiments/{NAME}.py --part k/2` for k = 0, 1, then `--merge 2`.",
    ]
    write_lines(NAME, rows, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
