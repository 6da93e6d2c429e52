"""The private conditioning's centre: the released mean against its James-Stein shrinkage.

Without ``feature_bounds`` the classifiers and regressors centre their rows at a released mean
``c_hat = S_x / N`` whose noise has the same variance ``tau^2 = sigma^2 / N^2`` in every
coordinate. Where ``p`` is large against ``n epsilon`` that noise is of the order of the rows'
own spread (``bench_conditioning``'s imbalanced 2000 x 100 at epsilon 1: ``||c_hat - x_bar||``
0.48-0.49 of the rows' root-mean-square distance to their mean, seeds 0-3). The positive-part
James-Stein rule toward the grand mean (``noisygd.estimators.shrunk_centre``; Efron and Morris
1973) has a smaller expected squared error than ``c_hat`` for every mean when ``p >= 4``, and
it is post-processing of the same release. This script measures what the better centre does to
the fit: the default fit of ``DPLogisticRegression`` and ``DPLinearRegression`` with the
released mean (``released``) and with the shrunk one (``shrunk``), plain (no bounds: the only
fits that release a centre), on ``bench_conditioning``'s families (n 500, 2000, 10 000; p 5,
20, 100; epsilon 0.5, 1, 2, 8) and, where the data is present, the eight binary and regression
``bench_utility`` sets. The estimators' class attribute ``_SHRINK_CENTRE`` selects the rule.

Run: ``python experiments/shrunk_centre.py --part k/2`` for k = 0, 1, then ``--merge 2``;
writes ``experiments/results/shrunk_centre.{json,md}``.
"""

from __future__ import annotations

import warnings
from typing import Any

from _experiment import compare_plain_default, plain_default_share

NAME = "shrunk_centre"


def share_with(prob: dict[str, Any], eps: float, seed: int, shrink: bool
               ) -> tuple[float, dict]:
    """The plain default fit's share of the non-private gain with the centre rule
    ``shrink`` (set on both estimators' class for this fit)."""
    from noisygd.estimators import DPLinearRegression, DPLogisticRegression

    saved = DPLogisticRegression._SHRINK_CENTRE, DPLinearRegression._SHRINK_CENTRE
    DPLogisticRegression._SHRINK_CENTRE = DPLinearRegression._SHRINK_CENTRE = shrink
    try:
        return plain_default_share(prob, eps, seed)[0], {}
    finally:
        DPLogisticRegression._SHRINK_CENTRE, DPLinearRegression._SHRINK_CENTRE = saved


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")
    return compare_plain_default(
        NAME, __doc__,
        (("released", lambda prob, eps, seed: share_with(prob, eps, seed, False)),
         ("shrunk", lambda prob, eps, seed: share_with(prob, eps, seed, True))),
        "The released centre against its James-Stein shrinkage (plain default fits)",
        "with the released mean as centre and with it shrunk toward its grand mean (module "
        "doc)", argv=argv)


if __name__ == "__main__":
    raise SystemExit(main())
