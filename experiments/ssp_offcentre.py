"""AdaSSP (``method="ssp"``) on off-centre targets: share of the non-private test R^2.

``bench_conditioning``'s ``offcentre`` family (targets near 0.8 in [0, 1]; module doc there),
``DPLinearRegression(method="ssp", target_range=(0, 1))``, plain and with the declared box,
4 seeds, epsilon 0.5 and 1. The table in docs/ssp.md ("The centred form") is this script run
on the change's base (Wang's single-matrix form, ``PYTHONPATH`` at commit 3ec7adc) and after it.

Run: ``python experiments/ssp_offcentre.py [--name NAME]``; writes
``experiments/results/ssp_offcentre[_NAME].{json,md}``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))

import bench_conditioning as bc  # noqa: E402
from _common import write_results  # noqa: E402

CELLS = ((500, 20), (500, 100), (2000, 20), (2000, 100), (10000, 100))
EPSILONS = (0.5, 1.0)
SEEDS = 4


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="")
    args = parser.parse_args(argv)
    rows = []
    for n, p in CELLS:
        prob = bc.family_problem("offcentre", n, p)
        ceiling = bc.nonprivate(prob)
        for eps in EPSILONS:
            for declared in ("plain", "box"):
                shares = []
                for seed in range(SEEDS):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        metric, _ = bc.fit_estimator(prob, "ssp", declared, eps, seed)
                    shares.append(bc._share("regression", metric, ceiling))
                rows.append({"problem": f"offcentre-{n}x{p}", "n": n, "p": p,
                             "epsilon": eps, "declared": declared,
                             "share_mean": float(np.mean(shares)),
                             "share_min": float(np.min(shares)), "seeds": SEEDS})
                print(rows[-1], flush=True)
    name = "ssp_offcentre" + (f"_{args.name}" if args.name else "")
    write_results(name, rows, {
        "title": "AdaSSP on off-centre targets: share of the non-private test R^2",
        "description": ("`DPLinearRegression(method=\"ssp\", target_range=(0, 1))` on "
                        "bench_conditioning's offcentre family; mean and worst of "
                        f"{SEEDS} seeds; 0 is the constant predictor."),
        "command": "python experiments/ssp_offcentre.py" + (
            f" --name {args.name}" if args.name else "")},
        columns=["problem", "n", "p", "epsilon", "declared", "share_mean", "share_min",
                 "seeds"], results_dir=HERE / "results")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
