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
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))

from _common import write_results  # noqa: E402

TOPS = (0.0, 0.3, 0.5, 0.7)
EPSILONS = (1.0, 2.0, 8.0)
SEEDS = (0, 1)
UTILITY_SETS = ("adult", "credit", "bank", "breast_cancer", "digits_binary")


def _problems(root: Path) -> list[tuple[str, str, tuple[Any, ...]]]:
    """``(group, name, (X, y, Xt, yt, declared keywords))`` of every problem (module doc)."""
    import bench_conditioning as bc
    import bench_raw_tables as raw
    import bench_utility as bu

    out = []
    for name, (X, y, Xt, yt) in raw.tables(root).items():
        if name not in raw.TARGET_RANGES:
            out.append(("raw tables", name, (X, y, Xt, yt, {})))
    for name in UTILITY_SETS:
        p = bu.load_problem(name, root)
        out.append(("bench_utility", name, (p.X, p.y, p.Xt, p.yt, bu.declarations(p))))
    for family in ("onehot", "imbalanced", "scales"):
        for n in (500, 2000, 10000):
            for p in (5, 20, 100):
                prob = bc.family_problem(family, n, p)
                data = (prob["X"], prob["y"], prob["Xt"], prob["yt"])
                out.append(("families plain", f"{family}-{n}x{p}", (*data, {})))
                out.append(("families box", f"{family}-{n}x{p}",
                            (*data, {"feature_bounds": (prob["lo"], prob["hi"])})))
    return out


def _ceiling(X: np.ndarray, y: np.ndarray, Xt: np.ndarray, yt: np.ndarray) -> float:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(X)
    model = LogisticRegression(max_iter=5000).fit(scaler.transform(X), y)
    return float(roc_auc_score(yt, model.decision_function(scaler.transform(Xt))))


def _share(data: tuple[Any, ...], eps: float, seed: int, ceiling: float) -> float:
    from sklearn.metrics import roc_auc_score

    from noisygd.estimators import DPLogisticRegression

    X, y, Xt, yt, declared = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPLogisticRegression(epsilon=eps, delta=min(1e-5, len(y) ** -1.1),
                                   classes=[0, 1], random_state=seed, method="newton",
                                   **declared).fit(X, y)
    return (float(roc_auc_score(yt, est.decision_function(Xt))) - 0.5) / (ceiling - 0.5)


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
            ceiling = _ceiling(*data[:4])
            for eps in EPSILONS:
                cell: dict[str, Any] = {"group": group, "problem": name, "epsilon": eps}
                for top in TOPS:
                    planning.NEWTON_MOMENTUM = top
                    cell[f"top {top}"] = float(np.mean([_share(data, eps, s, ceiling)
                                                        for s in SEEDS]))
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
