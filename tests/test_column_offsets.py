"""The column offsets (noisygd.mechanisms.column_offsets): the private feature range refined
about each column far from the origin, and its two stages in the estimators' default fit."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.gdp import gaussian_mu
from noisygd.estimators import CONDITIONING_RELEASES, DPLinearRegression, DPLogisticRegression
from noisygd.mechanisms import feature_range
from noisygd.mechanisms.column_offsets import (
    MAX_HULL_OCTAVES,
    OffsetBox,
    deviation_sensitivity,
    deviation_statistic,
    offset_box,
    offset_sensitivity,
    offset_statistic,
    offsets_from_release,
    refined_feature_range,
)
from noisygd.mechanisms.feature_range import (
    EXPONENTS,
    FEATURE_RANGE_ROUNDS,
    FEATURE_RANGE_SHARE,
    feature_range_from_release,
    range_statistic,
)

K = EXPONENTS[1] - EXPONENTS[0] + 1


def _offset_table(n: int, ratio: float, seed: int = 0, logistic: bool = False
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Five standard normal columns, the third moved to ``ratio + z`` (a year, a latitude):
    the rows, the targets and the same rows with that column centred."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    w = rng.standard_normal(5)
    s = X @ w
    y = ((rng.random(n) < 1.0 / (1.0 + np.exp(-s))).astype(int) if logistic
         else s + 0.5 * s.std() * rng.standard_normal(n))
    centred = X.copy()
    X[:, 2] += ratio
    return X, y, centred


# ------------------------------------------------------------------ which columns
def test_offset_box_takes_one_signed_columns_nonzero_in_every_row():
    rng = np.random.default_rng(0)
    n = 4000
    X = np.column_stack([
        1990.0 + rng.standard_normal(n),                # a year: one bin, every row
        -(40.0 + 0.1 * rng.standard_normal(n)),         # a negative longitude
        rng.standard_normal(n),                         # both signs
        (rng.random(n) < 0.5).astype(float),            # a one-hot level: zeros
        np.where(rng.random(n) < 0.2, 0.0, 500.0 + rng.standard_normal(n)),  # 20% zeros
    ])
    box = offset_box(range_statistic(X), sigma=1.0)
    assert box.columns.tolist() == [0, 1]
    assert box.low.tolist() == [1024.0, -64.0] and box.high.tolist() == [2048.0, -32.0]
    assert box.size == 2 and box.unit == pytest.approx(math.sqrt(3.0))
    # the counts' noise decides: at sigma = n nothing is resolved, so no column is taken
    assert offset_box(range_statistic(X), sigma=float(n)).size == 0


def test_offset_box_leaves_columns_that_vary_on_the_scale_of_their_magnitude():
    # an age from 18 to 90 spans three binary exponents: centring it gains at most a factor
    # 2, so it is not an offset column (MAX_HULL_OCTAVES); 100 +- 30 spans two and is
    rng = np.random.default_rng(4)
    X = np.column_stack([rng.uniform(18.0, 90.0, 3000), rng.uniform(70.0, 130.0, 3000)])
    box = offset_box(range_statistic(X), sigma=1.0)
    assert MAX_HULL_OCTAVES == 2
    assert box.columns.tolist() == [1] and box.low.tolist() == [64.0]
    assert box.high.tolist() == [256.0]


def test_pooled_columns_are_offset_columns_together_or_not_at_all():
    # columns of one distribution (pooled by the range): the rule reads their mean counts;
    # at a noise where single columns resolve their bin only now and then, all are taken
    rng = np.random.default_rng(5)
    n, p = 400, 30
    X = 1990.0 + rng.standard_normal((n, p))
    noisy = range_statistic(X) + rng.normal(0.0, 60.0, 2 * p * K + 1)
    alone = offset_box(noisy, sigma=60.0)
    pooled = offset_box(noisy, sigma=60.0, pooled=True)
    assert 0 < alone.size < p  # one by one, the noise splits them
    assert pooled.columns.tolist() == list(range(p))
    assert set(pooled.low) == {1024.0} and set(pooled.high) == {2048.0}
    # and a pooled table of one-hot levels (zeros in most rows) has none
    levels = (rng.random((n, p)) < 0.3).astype(float)
    assert offset_box(range_statistic(levels) + rng.normal(0.0, 1.0, 2 * p * K + 1), 1.0,
                      pooled=True).size == 0


# ------------------------------------------------------------------ the statistics
def test_offset_statistic_is_the_clipped_mean_over_the_divisor_dense_and_csr():
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.normal(1500.0, 300.0, 300), rng.standard_normal(300),
                         rng.normal(-50.0, 5.0, 300)])
    box = OffsetBox(np.array([0, 2]), np.array([1024.0, -64.0]), np.array([2048.0, -32.0]))
    expected = np.array([np.clip((X[:, 0] - 1536.0) / 512.0, -1, 1).sum(),
                         np.clip((X[:, 2] + 48.0) / 16.0, -1, 1).sum(), 300.0])
    for form in (X, sp.csr_matrix(X), sp.csr_array(X)):
        got = offset_statistic(form, box)
        assert got * math.sqrt(3.0) == pytest.approx(expected, rel=1e-12)
    offset, count = offsets_from_release(offset_statistic(X, box), box, sigma=1.0)
    assert count == pytest.approx(300.0)
    clipped = np.clip(X[:, [0, 2]], box.low, box.high).mean(axis=0)
    assert offset == pytest.approx(clipped, rel=1e-12)
    with pytest.raises(ValueError, match="NaN or infinite"):
        offset_statistic(np.where(X == X[0, 0], np.nan, X), box)


def test_deviation_statistic_counts_the_distances_by_binary_exponent():
    X = np.array([[2000.0, 1.0], [2003.0, 2.0], [1999.5, 3.0], [2000.0, 4.0]])
    box = OffsetBox(np.array([0]), np.array([1024.0]), np.array([2048.0]))
    got = deviation_statistic(X, box, np.array([2000.0])) * math.sqrt(2.0)
    counts = got[:-1].reshape(1, K)
    assert got[-1] == 4.0
    assert counts.sum() == 2.0  # the two rows at the offset are not counted
    assert counts[0, 1 - EXPONENTS[0]] == 1.0   # |2003 - 2000| = 3 in [2, 4)
    assert counts[0, -1 - EXPONENTS[0]] == 1.0  # 0.5 in [0.5, 1)
    assert np.array_equal(deviation_statistic(sp.csr_matrix(X), box, np.array([2000.0])),
                          deviation_statistic(X, box, np.array([2000.0])))


@pytest.mark.parametrize("replace_one", [False, True])
def test_sensitivities_hold_and_are_reached_by_brute_force(replace_one):
    rng = np.random.default_rng(2)
    box = OffsetBox(np.array([0, 1, 2]), np.array([1.0, 8.0, -4.0]),
                    np.array([4.0, 16.0, -2.0]))
    offset = np.array([2.5, 12.0, -3.0])
    base = np.column_stack([rng.uniform(1, 4, 6), rng.uniform(8, 16, 6), rng.uniform(-4, -2, 6)])
    candidates = [np.array(v) for v in itertools.product([0.0, 1.0, 4.0, 50.0],
                                                         [8.0, 12.0, -9.0, 1e6],
                                                         [-3.0, -4.0, 0.0, 7.0])]

    def stats(D):
        return (offset_statistic(D, box) * box.unit,
                deviation_statistic(D, box, offset) * box.unit)

    s0 = stats(base)
    worst = [0.0, 0.0]
    for row in candidates:
        if replace_one:
            other = base.copy()
            other[0] = row
        else:
            other = np.vstack([base, row])
        for k, (a, b) in enumerate(zip(s0, stats(other), strict=True)):
            worst[k] = max(worst[k], float(np.linalg.norm(a - b)))
    assert worst[0] <= offset_sensitivity(3, replace_one) * (1 + 1e-12)
    assert worst[1] <= deviation_sensitivity(3, replace_one) * (1 + 1e-12)
    # reached: a row at the far end of every box (clip +-1 against the base row's entries)
    # and a row whose distances leave every bin the base row's lie in
    assert worst[1] == pytest.approx(deviation_sensitivity(3, replace_one))
    far = np.array([1e6, 1e6, 1e6])
    near = box.low.copy()
    if replace_one:
        a, b = base.copy(), base.copy()
        a[0], b[0] = far, near
        gap = offset_statistic(a, box) - offset_statistic(b, box)
    else:
        gap = offset_statistic(np.vstack([base, far]), box) - offset_statistic(base, box)
    assert float(np.linalg.norm(gap * box.unit)) == pytest.approx(
        offset_sensitivity(3, replace_one))
    # divided by sqrt(S + 1), every statistic moves by at most the stage's declared Delta
    assert offset_sensitivity(3, replace_one) / box.unit <= (2.0 if replace_one else 1.0)
    assert deviation_sensitivity(3, replace_one) / box.unit <= (math.sqrt(2) if replace_one
                                                                else 1.0)


def test_refined_range_lowers_the_magnitude_of_resolved_columns_only():
    rng = np.random.default_rng(3)
    n = 5000
    X = np.column_stack([1990.0 + rng.standard_normal(n), rng.standard_normal(n),
                         300.0 + 1e-12 * rng.standard_normal(n)])
    noisy = range_statistic(X)
    released = feature_range_from_release(noisy, 1.0)
    box = offset_box(noisy, 1.0)
    assert box.columns.tolist() == [0, 2]
    offset, _ = offsets_from_release(offset_statistic(X, box), box, 1.0)
    dev = deviation_statistic(X, box, offset)
    refined = refined_feature_range(released, box, offset, dev, 1.0)
    assert refined.offset[1] == 0.0 and refined.offset[[0, 2]] == pytest.approx(
        [1990.0, 300.0], abs=0.1)
    # 1990 + z: |x - o| up to about 4 (an edge of 4 or 8), below the year's 2048
    assert refined.magnitude[0] in (4.0, 8.0) and refined.magnitude[1] == released.magnitude[1]
    assert refined.scale[0] == pytest.approx(
        released.scale[0] * released.magnitude[0] / refined.magnitude[0])
    # the third column is constant within 1e-12 of 300: its distances fall in the grid's
    # bottom bin, so it resolves 2^-29 (and can never go above its own magnitude)
    assert refined.magnitude[2] <= released.magnitude[2]
    # no bin occupied (all the noise): the magnitude is kept, the offset applied
    kept = refined_feature_range(released, box, offset, np.zeros_like(dev), 1.0)
    assert np.array_equal(kept.magnitude, released.magnitude)
    assert kept.offset[0] == offset[0]
    with pytest.raises(ValueError, match="counts and the count"):
        refined_feature_range(released, box, offset, dev[:-1], 1.0)


# ------------------------------------------------------------------ the estimators
@pytest.mark.parametrize("logistic", [False, True])
def test_a_column_far_from_the_origin_learns_as_if_centred(logistic):
    # before the offsets, 1000 + z lost 0.053 of the regressor's test R^2 at epsilon 1 and
    # 0.018 of the classifier's AUC (experiments/results/column_offsets_ratios.md)
    from sklearn.metrics import roc_auc_score

    X, y, centred = _offset_table(8000, 1000.0, logistic=logistic)
    train, test = slice(0, 6000), slice(6000, None)

    def score(rows):
        if logistic:
            m = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0)
            m.fit(rows[train], y[train])
            return m, roc_auc_score(y[test], m.decision_function(rows[test]))
        m = DPLinearRegression(epsilon=1.0, random_state=0).fit(rows[train], y[train])
        return m, m.score(rows[test], y[test])

    model, shifted = score(X)
    _, plain = score(centred)
    assert shifted >= plain - 0.01
    report = model.fit_info_["feature_range"]
    assert report["offset_columns"] == [2]
    # the offset misses the column's clipped mean by the round's noise: sd h sqrt(S + 1)
    # sigma_unit / N over the box [512, 1024] (h = 256, S = 1); 4 sd (a false failure at
    # about 6e-5 for a fresh seed)
    mu_o = math.sqrt(FEATURE_RANGE_SHARE * FEATURE_RANGE_ROUNDS[1]) * calibrate_mu(1.0, 1e-5)
    sd = 256.0 * math.sqrt(2.0) / (mu_o * 6000)
    assert report["offset"][2] == pytest.approx(float(np.mean(X[train, 2])), abs=4 * sd)
    assert report["rounds"] == list(FEATURE_RANGE_ROUNDS)


def test_rounds_are_composed_at_their_shares_and_recorded_in_order(tmp_path):
    from noisygd.ledger import Ledger

    X, y, _ = _offset_table(1500, 1000.0, logistic=True)
    ledger = str(tmp_path / "ledger.db")
    with Ledger(ledger) as opened:
        opened.set_budget("d", epsilon=4.0, delta=1e-5)
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0, ledger=ledger,
                                 dataset="d", n_samples_public=len(y)).fit(X, y)
    mu = calibrate_mu(1.0, 1e-5)
    events = model.privacy_.event.events[:3]
    shares = [gaussian_mu(e) ** 2 / mu**2 for e in events]
    assert shares == pytest.approx([FEATURE_RANGE_SHARE * s for s in FEATURE_RANGE_ROUNDS],
                                   rel=1e-9)
    assert sum(shares) == pytest.approx(FEATURE_RANGE_SHARE, rel=1e-9)
    with Ledger(ledger) as opened:
        names = [r.algorithm.split("/")[1] for r in opened.releases("d")]
    assert names[:3] == ["feature_range", "column_offsets", "column_deviations"]
    assert names[3:3 + len(CONDITIONING_RELEASES)] == list(CONDITIONING_RELEASES)
    assert model.privacy_.epsilon <= 1.0 * (1 + 1e-9)
    assert [r["name"] for r in model.fit_info_["pre_releases"]][:3] == names[:3]


def test_one_round_restores_the_single_release(monkeypatch):
    X, y, _ = _offset_table(1500, 1000.0)
    monkeypatch.setattr(feature_range, "FEATURE_RANGE_ROUNDS", (1.0,))
    model = DPLinearRegression(epsilon=1.0, random_state=0).fit(X, y)
    report = model.fit_info_["feature_range"]
    assert report["offset"] is None and report["offset_columns"] == []
    assert "column_offsets" not in [r["name"] for r in model.fit_info_["pre_releases"]]


def test_replace_one_and_sparse_rows_fit_with_offsets():
    X, y, _ = _offset_table(3000, 500.0, logistic=True)
    model = DPLogisticRegression(epsilon=2.0, classes=[0, 1], random_state=0,
                                 neighbouring="replace_one").fit(X, y)
    assert model.fit_info_["feature_range"]["offset_columns"] == [2]
    dense = DPLogisticRegression(epsilon=2.0, classes=[0, 1], random_state=1).fit(X, y)
    sparse = DPLogisticRegression(epsilon=2.0, classes=[0, 1], random_state=1).fit(
        sp.csr_matrix(X), y)
    assert sparse.coef_ == pytest.approx(dense.coef_, rel=1e-6, abs=1e-9)


def test_round_sensitivities_bound_the_divided_statistics_at_every_size():
    from noisygd.mechanisms.column_offsets import deviation_statistic_size, round_sensitivity

    for replace_one in (False, True):
        for S in range(0, 200):
            unit = math.sqrt(S + 1.0)
            assert offset_sensitivity(S, replace_one) / unit <= round_sensitivity(1, replace_one)
            assert deviation_sensitivity(S, replace_one) / unit <= round_sensitivity(
                2, replace_one)
    assert round_sensitivity(1) == round_sensitivity(2) == 1.0  # reached at every S
    with pytest.raises(ValueError, match="rounds 1 and 2"):
        round_sensitivity(0)
    box = OffsetBox(np.array([0, 1]), np.array([1.0, 2.0]), np.array([2.0, 4.0]))
    assert deviation_statistic(np.ones((3, 2)) * 1.5, box, np.array([1.0, 3.0])).size == (
        deviation_statistic_size(2))
