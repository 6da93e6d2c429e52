"""The private feature range: columns read one by one against columns pooled when the release
cannot tell them apart.

Per column, a bin of the feature range's histogram must pass the occupancy threshold on its
own; where the columns share one distribution, the noise splits them (``bench_conditioning``'s
imbalanced 2000 x 100 at epsilon 1: 73 columns resolve no bin, 25 the top one and 2 only the
bin below, which then get twice the others' scale; ``experiments/feature_range_uniformity.py``).
``noisygd.mechanisms.feature_range.pooled_top_bin`` tests whether the columns' noisy counts
are consistent with one common histogram (chi-square, level ``HOMOGENEITY_LEVEL``) and, where
they are, gives every column the widest magnitude any column resolves. This script measures
the plain default fit (no bounds: the only fits that release the range) with the columns read
one by one (``pool=False``, the rule before) and pooled (the default), on
``bench_conditioning``'s families (n 500, 2000, 10 000; p 5, 20, 100; epsilon 0.5, 1, 2, 8)
and, where the data is present, the eight binary and regression ``bench_utility`` sets; it
also reports in how many of each cell's fits the columns were pooled.

Run: ``python experiments/pooled_feature_range.py --part k/2`` for k = 0, 1, then
``--merge 2``; writes ``experiments/results/pooled_feature_range.{json,md}``.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

from _experiment import compare_plain_default, plain_default_share

NAME = "pooled_feature_range"


def fit_with(prob: dict[str, Any], eps: float, seed: int, pool: bool) -> tuple[float, dict]:
    """The plain default fit's share of the non-private gain with the range's columns pooled
    (``pool``) or read one by one, and ``{"fits pooled": 0 or 1}`` (whether they were)."""
    from noisygd.mechanisms import feature_range

    saved = feature_range.feature_range_from_release
    feature_range.feature_range_from_release = functools.partial(saved, pool=pool)
    try:
        share, est = plain_default_share(prob, eps, seed)
    finally:
        feature_range.feature_range_from_release = saved
    report = (getattr(est, "conditioning_", None) or {}).get("feature_range_release") or {}
    return share, ({"fits pooled": int(bool(report.get("pooled")))} if pool else {})


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")
    return compare_plain_default(
        NAME, __doc__,
        (("one by one", lambda prob, eps, seed: fit_with(prob, eps, seed, False)),
         ("pooled", lambda prob, eps, seed: fit_with(prob, eps, seed, True))),
        "The feature range's columns, read one by one or pooled (plain default fits)",
        "with the feature range's columns read one by one and pooled where the homogeneity "
        "test passes (module doc); `fits pooled`: in how many of the cell's fits the test "
        "passed", extra=("fits pooled",), argv=argv)


if __name__ == "__main__":
    raise SystemExit(main())
