"""Where the plain classifier loses to the declared box at epsilon 1: the feature range's scale.

``bench_conditioning``'s worst eps-1 cell with n >= 2000, ``imbalanced`` 2000 x 100, has 100
identically distributed columns (uniform on [0, 0.1]). The private feature range
(``noisygd.mechanisms.feature_range``) reads each column's magnitude ``m_j`` from the highest
binary-exponent bin whose noisy count passes its threshold. At this ``n`` and epsilon the top
bin [2^-4, 2^-3) holds about 750 rows against a threshold near 880, the next one about 625:
most columns resolve no bin (they take the smallest ``g_j``), a quarter resolve the top bin,
and a few resolve only the bin below and get twice the scale of the rest. This script measures
what that non-uniform scale costs: the plain default fit against the same fit with the
released scale replaced by its smallest value for every column (``uniform``), by ones (the
release paid for and not used: ``ones``), and without the release (``feature_range_share=0``:
``none``), at epsilon 1, on the families' 100-column cells and the UCI tables. The
``uniform`` and ``ones`` variants are diagnostics (post-processing replaced by hand), not
rules: on tables whose columns differ in range (the ``scales`` family, the raw tables of
``bench_raw_tables``) the per-column scale is the point of the release.

Run: ``python experiments/feature_range_uniformity.py [--seeds 4]``; writes
``experiments/results/feature_range_uniformity.{json,md}``.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from typing import Any

import numpy as np
from _experiment import experiment_parser, write_experiment

NAME = "feature_range_uniformity"
CELLS = tuple((fam, n, 100) for fam in ("onehot", "imbalanced", "scales") for n in (2000, 10000))
EPSILON = 1.0


def _replaced(orig: Any, how: str) -> Any:
    def release(*args: Any, **kwargs: Any) -> Any:
        got = orig(*args, **kwargs)
        value = got.scale.min() if how == "uniform" else 1.0
        return dataclasses.replace(got, scale=np.full_like(got.scale, value))
    return release


def shares(prob: dict[str, Any], variant: str, seeds: int) -> list[float]:
    """The plain default fit's shares of the non-private AUC gain under ``variant``."""
    from bench_conditioning import _share, fit_estimator, nonprivate

    import noisygd.mechanisms.feature_range as fr

    orig = fr.feature_range_from_release
    extra = {"feature_range_share": 0.0} if variant == "none" else {}
    if variant in ("uniform", "ones"):
        fr.feature_range_from_release = _replaced(orig, variant)
    try:
        ceiling = prob.setdefault("_ceiling", nonprivate(prob))
        return [_share("binary", fit_estimator(prob, "auto", "plain", EPSILON, seed, **extra)[0],
                       ceiling) for seed in range(seeds)]
    finally:
        fr.feature_range_from_release = orig


def occupancy(prob: dict[str, Any]) -> str:
    """Seed 0's released magnitudes: how many columns resolved which bin."""
    from bench_conditioning import fit_estimator

    released = fit_estimator(prob, "auto", "plain", EPSILON, 0)[1].fit_info_["feature_range"]
    values, counts = np.unique(np.asarray(released["magnitude"]), return_counts=True)
    return ", ".join(f"{c} at {v:g}" for v, c in zip(values, counts, strict=True))


def main(argv: list[str] | None = None) -> int:
    from bench_conditioning import named_problems

    args = experiment_parser(__doc__, seeds=4).parse_args(argv)
    warnings.filterwarnings("ignore")
    rows = []
    for name, prob in named_problems(CELLS, args.data_dir):
        row: dict[str, Any] = {"problem": name, "magnitudes (seed 0)": occupancy(prob)}
        for variant in ("default", "uniform", "ones", "none"):
            row[variant] = float(np.mean(shares(prob, variant, args.seeds)))
        rows.append(row)
        print(json.dumps(row), flush=True)
    lines = [
        "# The feature range's non-uniform scale at epsilon 1 (plain default fits)",
        "",
        f"Share of the non-private AUC gain, mean over seeds 0..{args.seeds - 1} (module doc): "
        "`default` the released scale; `uniform` its smallest value for every column; `ones` "
        "no scale (the release still paid); `none` no release (`feature_range_share=0`).",
        "",
        "| problem | default | uniform | ones | none | magnitudes (seed 0) |",
        "|---|---|---|---|---|---|",
        *(f"| {r['problem']} | {r['default']:.3f} | {r['uniform']:.3f} | {r['ones']:.3f} | "
          f"{r['none']:.3f} | {r['magnitudes (seed 0)']} |" for r in rows),
        "",
        f"Command: `python experiments/feature_range_uniformity.py --seeds {args.seeds}`.",
    ]
    write_experiment(NAME, rows, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
