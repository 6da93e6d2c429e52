"""The private conditioning in one release against the refined one in three rounds.

Without ``feature_bounds`` the classifiers and regressors centre their rows at a released mean
and clip at their released spread about it. One release at the row bound ``R``
(``single``: what every plain fit did before) has noise ``R sigma / N`` in each coordinate of
the centre, and its spread is the difference of two numbers near ``R^2``: where the columns sit
far from the origin against their spread (years, latitudes, pH), the centre misses by several
spreads and the spread is not resolved. The refined conditioning (``refined``, the default:
``noisygd.estimators._conditioning.refined_conditioning``) releases three centres, each later
one about the centre before it within a radius read off a released histogram of the rows'
distances to it, with the same share of the budget in all. The estimators' class attribute
``_REFINES_CONDITIONING`` selects the rule (set on their common base for each fit).

Two grids, plain default fits (no bounds: the only fits that release a centre):

* the default grid (``_experiment.compare_plain_default``): ``bench_conditioning``'s families
  (n 500, 2000, 10 000; p 5, 20, 100) and the eight binary and regression ``bench_utility``
  sets, epsilon 0.5, 1, 2, 8, seeds 0 and 1;
* ``--offsets``: ``bench_conditioning``'s imbalanced, one-hot and off-centre families at n 2000
  and 10 000, p 20, each column shifted by ``ratio`` times its spread times a factor in [0.5,
  1.5] drawn once per column (seed ``[7, p]``), ratio 0 (no shift), 3, 10, 30, 100, epsilon 1,
  seeds 0-2 (``--seeds``).

Run: ``python experiments/refined_conditioning.py --part k/2`` for k = 0, 1, then ``--merge
2`` (``experiments/results/refined_conditioning.{json,md}``); the same with ``--offsets``
(``experiments/results/refined_conditioning_offsets.{json,md}``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from _experiment import (
    add_part_arguments,
    change_summary,
    compare_plain_default,
    experiment_parser,
    plain_default_share,
    rows_in_parts,
    write_experiment,
)

NAME = "refined_conditioning"
OFFSETS_NAME = "refined_conditioning_offsets"
OFFSET_CELLS = tuple((fam, n, 20) for fam in ("imbalanced", "onehot", "offcentre")
                     for n in (2000, 10_000))
RATIOS = (0.0, 3.0, 10.0, 30.0, 100.0)


def share_with(prob: dict[str, Any], eps: float, seed: int, refine: bool
               ) -> tuple[float, dict]:
    """The plain default fit's share of the non-private gain with the conditioning rule
    ``refine`` (set on the estimators' common base for this fit)."""
    from unittest import mock

    from noisygd.estimators._prereleases import _PrivatePreReleases

    with mock.patch.object(_PrivatePreReleases, "_REFINES_CONDITIONING", refine):
        return plain_default_share(prob, eps, seed)[0], {}


def shifted(prob: dict[str, Any], ratio: float) -> dict[str, Any]:
    """``prob`` with every column shifted by ``ratio`` times its spread (module doc)."""
    spread = prob["hi"] - prob["lo"]
    p = spread.size
    shift = ratio * spread * np.random.default_rng([7, p]).uniform(0.5, 1.5, p)
    return {**prob, "X": prob["X"] + shift, "Xt": prob["Xt"] + shift, "lo": prob["lo"] + shift,
            "hi": prob["hi"] + shift}


def run_offsets(item: tuple[str, dict[str, Any]], seeds: int) -> list[dict[str, Any]]:
    """Rows of one ``--offsets`` cell: per ratio, both rules' mean and min share."""
    from bench_conditioning import nonprivate

    name, base = item
    out = []
    for ratio in RATIOS:
        prob = shifted(base, ratio)
        prob["_ceiling"] = nonprivate(prob)
        row: dict[str, Any] = {"problem": name, "task": prob["task"], "ratio": ratio,
                               "epsilon": 1.0}
        for label, refine in (("single", False), ("refined", True)):
            shares = [share_with(prob, 1.0, seed, refine)[0] for seed in range(seeds)]
            row[label], row[f"{label} min"] = float(np.mean(shares)), float(min(shares))
        row["change"] = row["refined"] - row["single"]
        out.append(row)
    return out


def offsets_main(argv: list[str] | None) -> int:
    from bench_conditioning import family_problem

    ap = experiment_parser(__doc__, seeds=3)
    add_part_arguments(ap)
    ap.add_argument("--offsets", action="store_true")
    args = ap.parse_args(argv)
    rows = rows_in_parts(
        OFFSETS_NAME, lambda: [(f"{f}-{n}x{p}", family_problem(f, n, p, 0))
                               for f, n, p in OFFSET_CELLS],
        args.part, args.merge, lambda item: run_offsets(item, args.seeds))
    if rows is None:
        return 0
    shifted_rows = [r for r in rows if r["ratio"] > 0]
    lines = [
        "# The refined conditioning on columns far from the origin",
        "",
        "Share of the non-private gain (AUC, 0.5 as 0, or R^2; mean and min over seeds "
        f"0..{args.seeds - 1}) of the plain default fit at epsilon 1 with the conditioning "
        "in one release and refined in three rounds, every column shifted by `ratio` times "
        f"its spread (module doc of `experiments/{NAME}.py`). "
        + change_summary("shifted columns", [r["change"] for r in shifted_rows]) + "; "
        + change_summary("no shift", [r["change"] for r in rows if r["ratio"] == 0]) + ".",
        "",
        "| problem | task | ratio | single | single min | refined | refined min | change |",
        "|---|---|---|---|---|---|---|---|",
        *(f"| {r['problem']} | {r['task']} | {r['ratio']:g} | {r['single']:.3f} | "
          f"{r['single min']:.3f} | {r['refined']:.3f} | {r['refined min']:.3f} | "
          f"{r['change']:+.3f} |" for r in rows),
        "",
        f"Command: `python experiments/{NAME}.py --offsets --part k/2` for k = 0, 1, then "
        "`--offsets --merge 2`.",
    ]
    write_experiment(OFFSETS_NAME, rows, "\n".join(lines) + "\n")
    print("\n".join(lines[:3]))
    return 0


def main(argv: list[str] | None = None) -> int:
    import sys

    warnings.filterwarnings("ignore")
    if "--offsets" in (sys.argv[1:] if argv is None else argv):
        return offsets_main(argv)
    return compare_plain_default(
        NAME, __doc__,
        (("single", lambda prob, eps, seed: share_with(prob, eps, seed, False)),
         ("refined", lambda prob, eps, seed: share_with(prob, eps, seed, True))),
        "The private conditioning in one release against three rounds (plain default fits)",
        "with the conditioning in one release at the row bound and refined in three rounds "
        "(module doc)", argv=argv)


if __name__ == "__main__":
    raise SystemExit(main())
