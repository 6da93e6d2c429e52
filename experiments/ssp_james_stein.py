"""Would James-Stein shrinkage of the released centred moment keep ``method="ssp"`` above the
constant predictor (issue 19, item 5)? Measured: no; not adopted.

Results (``experiments/results/ssp_james_stein.md``, 64 cells):
- **The worst seeds move toward 0.** Off-centre 500 x 5, plain, epsilon 0.5: the worst seed
  goes from -0.566 to -0.023.
- **More cells fall below the constant.** Cells with a seed below the constant predictor go
  from 17 to 21. The intercept's noise remains, and shrunk coefficients no longer offset it.
- **It costs the mean.** Where the fit had signal (released mean above 0.1, 40 cells), the
  mean share falls by 0.045 on average and by up to 0.128. Wang's ridge has already shrunk
  those coefficients.

The variant post-processes the centred AdaSSP release (:mod:`noisygd.algorithms.ssp_centred`)
before the solve: the centred moment :math:`\\tilde b = \\tilde S_{xy} - \\tilde S_x\\tilde m`
(:math:`\\tilde m = \\tilde S_y/\\tilde n`) is shrunk by the positive-part James-Stein factor
:math:`(1 - T/\\lVert\\tilde b\\rVert^2)_+` (Baranchik 1964), where
:math:`T = \\sum_j(\\sigma_{xy}^2 + \\sigma_x^2\\tilde m^2 + \\bar x_j^2\\sigma_y^2)` is the
noise variance the plan's public standard deviations give :math:`\\tilde b` (first order; the
count's noise is left out). With the objective's ridge 0, this shrinks the features'
coefficients by the same factor and moves the intercept to the released mean. It is free:
post-processing of the release, no privacy cost.

Problems: ``bench_conditioning``'s ``offcentre`` family (regression, targets near 0.8 in
[0, 1]). Cells: n in {500, 2000, 10 000} and p in {5, 20, 100} (10 000 x 5 left out).
Epsilon 0.5, 1, 2 and 8. Plain and with the declared box. Seeds 0 to 3.
``DPLinearRegression(method="ssp", target_range=(0, 1))``. The measure is the share of the
non-private test R^2 (the constant predictor is 0).

Run: ``python experiments/ssp_james_stein.py``; writes
``experiments/results/ssp_james_stein.{json,md}``.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))

import bench_conditioning as bc  # noqa: E402
from _common import write_results  # noqa: E402

CELLS = ((500, 5), (500, 20), (500, 100), (2000, 5), (2000, 20), (2000, 100), (10000, 20),
         (10000, 100))
EPSILONS = (0.5, 1.0, 2.0, 8.0)
SEEDS = 4


def james_stein_release(release: Any, plan: Any) -> Any:
    """The release with its centred moment shrunk by the positive-part James-Stein factor
    (module doc); public values only."""
    _, _, s_x, _, s_y, s_xy = plan.noise_sds
    n = max(release.count, 1.0)
    mean = release.target_sum / n
    centred = release.moment - release.feature_sum * mean
    noise = float(np.sum(s_xy ** 2 + (s_x * mean) ** 2
                         + (release.feature_sum / n * s_y) ** 2))
    factor = max(0.0, 1.0 - noise / max(float(centred @ centred), 1e-300))
    return dataclasses.replace(release, moment=factor * centred + release.feature_sum * mean)


def _shares(prob: dict[str, Any], ceiling: float, eps: float, declared: str) -> list[float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [bc._share("regression", bc.fit_estimator(prob, "ssp", declared, eps, seed)[0],
                          ceiling) for seed in range(SEEDS)]


def main(argv: list[str] | None = None) -> int:
    import noisygd.algorithms.ssp_centred as centred

    solve = centred.solve_centred_release
    rows = []
    for n, p in CELLS:
        prob = bc.family_problem("offcentre", n, p)
        ceiling = bc.nonprivate(prob)
        for eps in EPSILONS:
            for declared in ("plain", "box"):
                row: dict[str, Any] = {"problem": f"offcentre-{n}x{p}", "epsilon": eps,
                                       "declared": declared}
                for label, solver in (("released", solve), ("james-stein", lambda r, pl:
                                                            solve(james_stein_release(r, pl),
                                                                  pl))):
                    centred.solve_centred_release = solver
                    try:
                        shares = _shares(prob, ceiling, eps, declared)
                    finally:
                        centred.solve_centred_release = solve
                    row[f"{label} mean"] = float(np.mean(shares))
                    row[f"{label} worst"] = float(np.min(shares))
                rows.append(row)
                print(row, flush=True)
    write_results("ssp_james_stein", rows, {
        "title": "AdaSSP (centred) with James-Stein shrinkage of the released moment",
        "description": ("Share of the non-private test R^2 of `DPLinearRegression(method="
                        "\"ssp\")` on bench_conditioning's offcentre family, as released and "
                        f"with the shrinkage (module doc); mean and worst of {SEEDS} seeds."),
        "command": "python experiments/ssp_james_stein.py"},
        columns=list(rows[0]), results_dir=HERE / "results")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
