"""Would the intercept started at the base rate help the noise-limited classifier cells (issue 19,
item 4: "the intercept or base rate from one cheap release")? Measured: hardly, even free.

The variant hands the default fit the *exact* training base rate :math:`\\hat p` for nothing
(an upper bound on what a paid release of :math:`\\sum_i y_i` could give): NoisyGD starts at
:math:`\\theta_0 = (0, \\operatorname{logit}(\\hat p)/\\kappa)` in the fit's centred
coordinates (``method_options={"theta0": ...}``, :math:`\\kappa` the released intercept
scale, read from a first fit with the same seed), everything else the default's. Problems:
``bench_conditioning``'s classifier cells that miss or nearly miss issue 19's 0.90 at epsilon
1 (imbalanced 2000 x 100) and neighbours (imbalanced 2000 x 20, 10000 x 100; one-hot and
scales 2000 x 100); plain and with the box; seeds 0, 1, 2; share of the non-private AUC gain
on the 20 000 test rows.

Measured (``experiments/results/intercept_warm_start.md``): imbalanced 2000 x 100 plain
0.50 / 0.49 / 0.63 -> 0.58 / 0.54 / 0.67; every other cell within 0.04 (most within 0.01).
AUC does not depend on the intercept, only on the direction the steps find, and the steps
move the intercept to the base rate early; not worth a release.

Run: ``python experiments/intercept_warm_start.py``; writes
``experiments/results/intercept_warm_start.{json,md}``.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))

import bench_conditioning as bc  # noqa: E402
from _common import write_results  # noqa: E402

CELLS = (("imbalanced", 2000, 100), ("imbalanced", 2000, 20), ("imbalanced", 10000, 100),
         ("onehot", 2000, 100), ("scales", 2000, 100))


def main() -> None:
    warnings.simplefilter("ignore")
    rows = []
    for family, n, p in CELLS:
        prob = bc.family_problem(family, n, p, 0)
        ceiling = bc.nonprivate(prob)
        rate = float(np.mean(prob["y"]))
        for declared in ("plain", "box"):
            base, warm = [], []
            for seed in (0, 1, 2):
                metric, est = bc.fit_estimator(prob, "auto", declared, 1.0, seed)
                base.append(bc._share("binary", metric, ceiling))
                kappa = est.conditioning_["intercept_scale"] or 1.0
                theta0 = np.zeros(p + 1)
                theta0[p] = np.log(rate / (1.0 - rate)) / kappa
                metric, _ = bc.fit_estimator(prob, "auto", declared, 1.0, seed,
                                             method_options={"theta0": theta0})
                warm.append(bc._share("binary", metric, ceiling))
            rows.append({"problem": f"{family}-{n}x{p}", "declared": declared, "rate": rate,
                         "method": str(est.fit_info_.get("method")), "default": base,
                         "warm_start": warm})
            print(rows[-1], flush=True)
    for r in rows:  # the table's columns (the JSON keeps the numbers)
        r["default (seeds 0, 1, 2)"] = ", ".join(f"{v:.3f}" for v in r["default"])
        r["warm start"] = ", ".join(f"{v:.3f}" for v in r["warm_start"])
    write_results("intercept_warm_start", rows, {
        "title": "The intercept started at the exact base rate (issue 19, item 4)",
        "description": (
            "Share of the non-private AUC gain at epsilon 1, seeds 0, 1, 2: the default fit "
            "and the same fit started at the exact training base rate (module doc of "
            "`experiments/intercept_warm_start.py`)."),
        "command": "python experiments/intercept_warm_start.py"},
        columns=("problem", "declared", "rate", "method", "default (seeds 0, 1, 2)",
                 "warm start"),
        results_dir=HERE / "results")

if __name__ == "__main__":
    main()
