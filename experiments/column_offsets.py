"""The private feature range in one release against the one refined by column offsets.

The plain default fit (no ``feature_bounds``) scales each column by its released magnitude
(``noisygd.mechanisms.feature_range``). ``single`` is every plain fit before the offsets: one
histogram at 0.05 of ``mu^2``. ``offsets`` is the default: ``FEATURE_RANGE_ROUNDS`` of
``FEATURE_RANGE_SHARE`` = 0.0625, the histogram at 0.05 (the same release), then the offsets
of the columns far from the origin and their distances to them
(``noisygd.mechanisms.column_offsets``).

* the grid (default): ``bench_conditioning``'s four families at n 500, 2000, 10 000 and p 5,
  20, 100 and the eight ``bench_utility`` sets, epsilon 0.5, 1, 2, 8, seeds 0 and 1 (share of
  the non-private gain, ``_experiment.compare_plain_default``);
* ``--offsets``: five standard normal columns, the third moved to ``ratio + z`` (ratio 0, 30,
  300, 1000, 10 000: a count, a temperature in kelvin, a year, a timestamp), n 8000 (6000 to
  fit, 2000 to test), ``DPLinearRegression`` (test R^2) and ``DPLogisticRegression`` (test
  AUC), epsilon 1 and 8, seeds 0-2, beside the default on the same rows with that column
  centred (``centred``); and the regressor sweep's timestamp (``timestamp``: the third column
  Unix time over one week, ``1.7e9 + t``, adding ``2 (t - mean)/sd`` to the targets).

Run: ``python experiments/column_offsets.py --part k/2`` for k = 0, 1, then ``--merge 2``
(``experiments/results/column_offsets.{json,md}``); ``python experiments/column_offsets.py
--offsets`` (``experiments/results/column_offsets_ratios.{json,md}``).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import numpy as np
from _experiment import compare_plain_default, plain_default_share, write_lines

NAME = "column_offsets"
RATIOS_NAME = "column_offsets_ratios"
RATIOS = (0.0, 30.0, 300.0, 1000.0, 10_000.0)
RATIO_EPSILONS = (1.0, 8.0)


def _rule(offsets: bool) -> Any:
    """The feature range's rounds and share of one rule (the defaults for ``offsets``)."""
    from unittest import mock

    import noisygd.mechanisms.feature_range as feature_range

    rounds, share = ((feature_range.FEATURE_RANGE_ROUNDS, feature_range.FEATURE_RANGE_SHARE)
                     if offsets else ((1.0,), 0.05))
    return mock.patch.multiple(feature_range, FEATURE_RANGE_ROUNDS=rounds,
                               FEATURE_RANGE_SHARE=share)


def fit_single(prob: dict[str, Any], eps: float, seed: int) -> tuple[float, dict]:
    """The plain default's share with the feature range in one release."""
    with _rule(False):
        return plain_default_share(prob, eps, seed)[0], {}


def fit_offsets(prob: dict[str, Any], eps: float, seed: int) -> tuple[float, dict]:
    """The plain default's share with the column offsets, and how many columns it moved."""
    with _rule(True):
        share, est = plain_default_share(prob, eps, seed)
    report = getattr(est, "fit_info_", {}).get("feature_range") or {}
    return share, {"offset columns": len(report.get("offset_columns") or [])}


def ratio_score(ratio: float | None, logistic: bool, eps: float, seed: int, rule: str) -> float:
    """Test R^2 or AUC of the default on the ``ratio`` table (module doc) under ``rule``;
    ``ratio`` None: the timestamp table."""
    from sklearn.metrics import roc_auc_score

    from noisygd.estimators import DPLinearRegression, DPLogisticRegression

    rng = np.random.default_rng(1000 + seed)
    X = rng.standard_normal((8000, 5))
    s = X @ rng.standard_normal(5)
    y = ((rng.random(8000) < 1.0 / (1.0 + np.exp(-s))).astype(int) if logistic
         else s + 0.5 * s.std() * rng.standard_normal(8000))
    if ratio is None:  # Unix time over one week, carrying signal
        t = rng.uniform(0.0, 7 * 86400.0, 8000)
        y = y + 2.0 * (t - t.mean()) / t.std()
        X[:, 2] = (t - t.mean()) / t.std() if rule == "centred" else 1.7e9 + t
    elif rule != "centred":
        X[:, 2] += ratio
    with _rule(rule != "single"):
        if logistic:
            m = DPLogisticRegression(epsilon=eps, classes=[0, 1], random_state=seed)
            m.fit(X[:6000], y[:6000])
            return float(roc_auc_score(y[6000:], m.decision_function(X[6000:])))
        m = DPLinearRegression(epsilon=eps, random_state=seed).fit(X[:6000], y[:6000])
        return float(m.score(X[6000:], y[6000:]))


def ratios(seeds: int) -> int:
    """The ``--offsets`` table (module doc)."""
    rows = []
    for logistic in (False, True):
        for eps in RATIO_EPSILONS:
            for ratio in (*RATIOS, *(() if logistic else (None,))):
                row: dict[str, Any] = {"model": "logistic (AUC)" if logistic else
                                       "linear (R^2)", "epsilon": eps,
                                       "ratio": "timestamp" if ratio is None else ratio}
                for rule in ("single", "offsets", "centred"):
                    row[rule] = float(np.mean([ratio_score(ratio, logistic, eps, s, rule)
                                               for s in range(seeds)]))
                print(row, flush=True)
                rows.append(row)
    lines = [
        "# Column offsets: one column far from the origin",
        "",
        f"Test metric, mean over seeds 0..{seeds - 1}, of the plain default with the feature "
        "range in one release (`single`), refined by the column offsets (`offsets`, the "
        "default) and on the same rows with the moved column centred (`centred`); module doc "
        f"of `experiments/{NAME}.py`. Command: `python experiments/{NAME}.py --offsets`.",
        "",
        "| model | epsilon | ratio | single | offsets | centred |",
        "|---|---|---|---|---|---|",
        *(f"| {r['model']} | {r['epsilon']:g} | {r['ratio']} | {r['single']:.3f} | "
          f"{r['offsets']:.3f} | {r['centred']:.3f} |" for r in rows),
    ]
    write_lines(RATIOS_NAME, rows, lines)
    return 0


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")
    args = sys.argv[1:] if argv is None else argv
    if "--offsets" in args:
        return ratios(3)
    return compare_plain_default(
        NAME, __doc__, (("single", fit_single), ("offsets", fit_offsets)),
        "The feature range with and without column offsets",
        "(plain: no bounds) with the feature range in one release (`single`, 0.05 of mu^2) "
        "and refined by the column offsets (`offsets`, the default)",
        extra=("offset columns",), argv=args)


if __name__ == "__main__":
    raise SystemExit(main())
