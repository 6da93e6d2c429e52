"""Private Newton's momentum rule (docs/newton.md, "Momentum"; issue 19): its top
:data:`noisygd.planning.NEWTON_MOMENTUM` against 0 (the rule off: no momentum, the method as
it was) and other tops.

The rule (:func:`noisygd.planning.newton_momentum`) gives the full-curvature steps Nesterov
momentum :math:`m = m_N(1 - r(q))`, from the plan's public noise-to-signal ratio
:math:`q = \\sqrt p\\,z_0/n` along NoisyGD's noise-regime scale. Variants: :math:`m_N` in
{0, 0.3, 0.5, 0.7}, set by patching the module constant, everything else the default's.

Problems:
- ``bench_raw_tables``'s binary tables (raw UCI columns, plain);
- ``bench_utility``'s binary sets with their declared bounds;
- ``bench_conditioning``'s binary families (one-hot, imbalanced, scales; n 500, 2000, 10 000;
  p 5, 20, 100), plain and with the declared box.

All with ``method="newton"``; epsilon 1, 2 and 8; seeds 0 and 1. The measure is the share of
the non-private AUC gain (AUC 0.5 as 0) on the test rows. The summary table gives, per
group and epsilon, the mean share, the mean change against ``m_N = 0``, and the worst
change.

Run: ``python experiments/newton_momentum.py [--data-dir ../shared/data/uci]``; writes
``experiments/results/newton_momentum.{json,md}`` (the groups' summary) and
``newton_momentum_cells.{json,md}`` (every cell).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))

import newton_steps  # noqa: E402
from _common import write_results  # noqa: E402

TOPS = (0.0, 0.3, 0.5, 0.7)
EPSILONS = (1.0, 2.0, 8.0)
SEEDS = (0, 1)
def _problems(root: Path) -> list[tuple[str, str, tuple[Any, ...]]]:
    """``(group, name, (X, y, Xt, yt, declared keywords))`` of every problem (module doc):
    ``newton_steps``'s raw tables and bench_utility sets, then the generated families."""
    import bench_conditioning as bc

    out = [("raw tables" if key.startswith("raw ") else "bench_utility", key.split(" ", 1)[1],
            data) for key, data in newton_steps.problems(root).items()]
    for family in ("onehot", "imbalanced", "scales"):
        for n in (500, 2000, 10000):
            for p in (5, 20, 100):
                prob = bc.family_problem(family, n, p)
                data = (prob["X"], prob["y"], prob["Xt"], prob["yt"])
                out.append(("families plain", f"{family}-{n}x{p}", (*data, {})))
                out.append(("families box", f"{family}-{n}x{p}",
                            (*data, {"feature_bounds": (prob["lo"], prob["hi"])})))
    return out


def main(argv: list[str] | None = None) -> int:
    import noisygd.planning as planning

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path,
                        default=HERE.parent.parent / "shared" / "data" / "uci")
    args = parser.parse_args(argv)
    default = planning.NEWTON_MOMENTUM
    cells = []
    try:
        for group, name, data in _problems(args.data_dir):
            ceiling = newton_steps.nonprivate_auc(*data[:4])
            for eps in EPSILONS:
                cell: dict[str, Any] = {"group": group, "problem": name, "epsilon": eps}
                for top in TOPS:
                    planning.NEWTON_MOMENTUM = top
                    cell[f"top {top}"] = float(np.mean([
                        newton_steps.share(*data, eps, s, None, ceiling) for s in SEEDS]))
                cells.append(cell)
                print(cell, flush=True)
    finally:
        planning.NEWTON_MOMENTUM = default
    summary = []
    for group in dict.fromkeys(c["group"] for c in cells):
        for eps in EPSILONS:
            found = [c for c in cells if c["group"] == group and c["epsilon"] == eps]
            row: dict[str, Any] = {"group": group, "epsilon": eps, "cells": len(found),
                                   "mean share, top 0": float(np.mean(
                                       [c["top 0.0"] for c in found]))}
            for top in TOPS[1:]:
                diff = [c[f"top {top}"] - c["top 0.0"] for c in found]
                row[f"top {top}: mean change"] = float(np.mean(diff))
                row[f"top {top}: worst change"] = float(np.min(diff))
            summary.append(row)
    meta = {"command": "python experiments/newton_momentum.py",
            "description": ("Private Newton's momentum rule, its top m_N against 0 (module "
                            "doc of `experiments/newton_momentum.py`): share of the "
                            "non-private AUC gain, mean of seeds 0 and 1.")}
    write_results("newton_momentum_cells", cells,
                  {**meta, "title": "Private Newton's momentum rule: every cell"},
                  columns=["group", "problem", "epsilon", *(f"top {t}" for t in TOPS)],
                  results_dir=HERE / "results")
    write_results("newton_momentum", summary,
                  {**meta, "title": "Private Newton's momentum rule: change against no "
                                    "momentum, by group"},
                  columns=list(summary[0]), results_dir=HERE / "results")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
