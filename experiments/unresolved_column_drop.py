"""Would dropping (or not weighting up) the columns the private per-feature scale cannot
resolve help the plain default (issue 19, item 4: "levels too rare to learn from dropped by a
paid count", "fewer released coordinates")? Measured: no. Dropping lowers the share by more than
0.01 in 15-25 of 36 cells and raises it by as much in at most 2; not weighting them up gains
Adult 0.0014-0.0027 and loses 0.01-0.05 on ``scales`` (2000 x 100 at epsilon 1: 0.910 -> 0.883,
below the 0.90 target).

The count is already paid for: the per-feature scale's release
``Q~_j = sum_i |a_ij| + N(0, sigma^2)`` (docs/estimators.md, "Private per-feature scale") is,
for a one-hot level of frequency ``pi`` and entry ``v`` (units of ``R``), about
``2 pi (1 - pi) v n``: a noisy count of the level's rows. The rule simulated here drops
column ``j`` (mode ``drop``: its weight ``f_j`` set to ``1e-9``, the fit cannot move its
prediction; mode ``clamp``: ``f_j`` capped at 1, the column not weighted up) where
``q_j = Q~_j / N < k z tau`` (``tau = sigma / N`` the noise sd of ``q_j``, ``z = 2``,
:data:`~noisygd.estimators._conditioning.FEATURE_SCALE_Z`), i.e. where the release cannot tell
the column from one no row uses, at ``k = 1`` (the resolution floor) and ``k = 1/4`` (only
columns far below it). Pure post-processing of a release the default already makes: no
budget, the same event. Implemented by wrapping :func:`feature_scale_from_release` (the
function the estimators call) for the duration of this script only.

Why it loses: a column below the release's resolution is not a column without signal. At
``n mu`` small the resolution is coarse, so the rule drops numeric columns that carry the
label's signal (``imbalanced`` 500 x 100: 71-75 of 100 at ``k = 1``), and the fit's noise on
a kept column does not grow with the number of columns beside it (NoisyGD's noise is
per-coordinate), so dropping buys nothing back. Not weighting them up spares the families
without narrow columns but undoes the per-feature scale where narrow columns are individually
unresolved and jointly resolved (the James-Stein shrinkage pools them): ``scales``. The Adult
gain is the cost of the cap on rare levels the docs already state (0.004-0.008). Hence neither
is adopted.

Run: ``python experiments/unresolved_column_drop.py [--seeds 3] [--data-dir ../shared/data/uci]``;
writes ``experiments/results/unresolved_column_drop.{json,md}``.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))
from _experiment import experiment_parser  # noqa: E402

#: The generated families measured (``bench_conditioning``'s four).
FAMILIES = ("onehot", "imbalanced", "scales", "offcentre")
#: The drop thresholds ``k`` compared with the default (``k = 0``: nothing dropped).
THRESHOLDS = (0.0, 0.25, 1.0)
#: What happens to an unresolved column: dropped, or not weighted up.
MODES = ("drop", "clamp")


def dropping(k: float, mode: str, dropped: list[int]) -> Any:
    """A wrapper of :func:`feature_scale_from_release` that sets ``f_j = 1e-9`` (``mode``
    ``"drop"``) or ``min(f_j, 1)`` (``"clamp"``) where ``q_j < k z tau``, and appends the number
    of columns it touched to ``dropped``."""
    from noisygd.estimators._conditioning import PrivateFeatureScale, feature_scale_from_release

    def wrapped(noisy: np.ndarray, count: float, sigma: float, z: float = 2.0,
                cap: float = 10.0) -> PrivateFeatureScale:
        released = feature_scale_from_release(noisy, count, sigma, z, cap)
        if k <= 0.0:
            return released
        n = max(float(count), 1.0)
        drop = np.asarray(noisy, dtype=np.float64) / n < k * z * sigma / n
        dropped.append(int(drop.sum()))
        f = released.scale.copy()
        f[drop] = 1e-9 if mode == "drop" else np.minimum(f[drop], 1.0)
        return PrivateFeatureScale(f, released.resolution, released.spread,
                                   released.noise_std, released.shrinkage)

    return wrapped


def problems(data_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    """The generated cells (``bench_conditioning.family_problem``, seed 0) and, where the data
    is present, Adult and Bank (``bench_utility.load_problem``; Adult has one-hot levels of a
    handful of rows)."""
    from bench_conditioning import named_problems

    return named_problems([(fam, n, p) for fam in FAMILIES for n in (500, 2000)
                           for p in (20, 100)], data_dir, ("adult", "bank"))


def main(argv: list[str] | None = None) -> int:
    from bench_conditioning import _share, fit_estimator, nonprivate

    import noisygd.estimators._prereleases as prereleases

    ap = experiment_parser(__doc__, seeds=3)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    variants = [("default", "drop", 0.0)] + [(f"{m} k={k}", m, k) for m in MODES
                                              for k in THRESHOLDS if k > 0]
    original = prereleases.feature_scale_from_release
    rows = []
    try:
        for name, prob in problems(args.data_dir):
            ceiling = nonprivate(prob)
            for eps in (0.5, 1.0):
                row: dict[str, Any] = {"problem": name, "epsilon": eps}
                for label, mode, k in variants:
                    touched: list[int] = []
                    prereleases.feature_scale_from_release = dropping(k, mode, touched)
                    shares = [_share(prob["task"], fit_estimator(prob, "auto", "plain", eps,
                                                                 seed)[0], ceiling)
                              for seed in range(args.seeds)]
                    row[label] = {"share_mean": float(np.mean(shares)),
                                  "share_min": float(np.min(shares)), "columns": touched}
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        prereleases.feature_scale_from_release = original
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "unresolved_column_drop.json").write_text(json.dumps(
        {"seeds": args.seeds, "variants": [v[0] for v in variants], "rows": rows},
        indent=1) + "\n")
    labels = [v[0] for v in variants]

    def moved(label: str, sign: float) -> int:
        return sum(sign * (r[label]["share_mean"] - r["default"]["share_mean"]) > 0.01
                   for r in rows)

    lines = ["# Dropping, or not weighting up, the columns the per-feature scale cannot "
             "resolve (issue 19, item 4)", "",
             f"Plain default, {args.seeds} seeds, share of the non-private gain: mean (min; "
             "columns touched per seed). Cells more than 0.01 lower / higher than the default: "
             + ", ".join(f"{lb}: {moved(lb, -1.0)} / {moved(lb, 1.0)} of {len(rows)}"
                         for lb in labels[1:]) + ". Command: `python "
             f"experiments/unresolved_column_drop.py --seeds {args.seeds}`.", "",
             "| problem | epsilon | " + " | ".join(labels) + " |",
             "|---|---|" + "---|" * len(labels)]
    for r in rows:
        cells = []
        for lb in labels:
            c = r[lb]
            cols = f"; {','.join(map(str, c['columns']))}" if lb != "default" else ""
            cells.append(f"{c['share_mean']:.3f} ({c['share_min']:.3f}{cols})")
        lines.append(f"| {r['problem']} | {r['epsilon']} | " + " | ".join(cells) + " |")
    (out / "unresolved_column_drop.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
