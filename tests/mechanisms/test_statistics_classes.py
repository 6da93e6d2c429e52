"""The released-statistics classes and the relations between their fields.

Covers :class:`noisygd.mechanisms.private_statistics.NoisyHistogram` (counts are the exact
histogram plus the seeded Gaussian draw of scale ``noise_std``; its event is the mu-GDP
Gaussian), :class:`~noisygd.mechanisms.private_statistics.PrivateBounds` (bounds are grid
edges read off the histogram's thresholded noisy CDF, or the declared range on fallback),
:class:`~noisygd.mechanisms.private_statistics.PrivateLevels` (``kept`` is the noisy count
reaching ``threshold`` noise deviations) and
:class:`noisygd.mechanisms.feature_range.PrivateFeatureRange` (magnitudes, occupied count,
threshold, mean row support and scale from a hand-built release).

Statistical checks use fixed seeds and state their false-failure rate.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from scipy import stats

from noisygd.accounting.events import Gaussian, Neighbouring
from noisygd.mechanisms.feature_range import (
    EXPONENTS,
    FALSE_OCCUPANCY,
    PrivateFeatureRange,
    feature_range_from_release,
    range_statistic,
)
from noisygd.mechanisms.private_statistics import (
    DEFAULT_LEVEL_THRESHOLD,
    NoisyHistogram,
    PrivateBounds,
    PrivateLevels,
    code_counts,
    geometric_grid,
    noisy_histogram,
    noisy_histogram_of_counts,
    private_bounds,
    private_levels,
    private_levels_of_counts,
)

K = EXPONENTS[1] - EXPONENTS[0] + 1  # exponent bins per sign


# --------------------------------------------------------------------------- NoisyHistogram


@pytest.mark.parametrize("relation,sens", [("add_remove", 1.0), ("replace_one", math.sqrt(2))])
def test_noisy_histogram_is_the_exact_histogram_plus_the_seeded_gaussian_draw(relation, sens):
    """counts = bincount(codes) + sigma * z with sigma = Delta / mu and z the generator's
    standard normals; the event is Gaussian(sigma, Delta, relation), exactly mu-GDP."""
    codes = np.array([0, 2, 2, -1, 4, 2, 0, -1, 1])
    mu = 0.8
    hist = noisy_histogram(codes, 6, mu=mu, relation=relation, rng=np.random.default_rng(5))
    assert isinstance(hist, NoisyHistogram)
    sigma = sens / mu
    assert hist.noise_std == pytest.approx(sigma, rel=1e-15)
    true = np.array([2, 1, 3, 0, 1, 0], dtype=float)  # the -1 rows are counted nowhere
    z = np.random.default_rng(5).standard_normal(6)
    np.testing.assert_allclose(hist.counts, true + sigma * z, rtol=1e-15, atol=1e-15)
    assert hist.event == Gaussian(noise_multiplier=sigma, sensitivity=sens,
                                  relation=Neighbouring(relation))
    assert hist.event.mu == pytest.approx(mu, rel=1e-14)
    with pytest.raises(dataclasses.FrozenInstanceError):
        hist.noise_std = 1.0  # type: ignore[misc]


def test_noisy_histogram_noise_is_standard_normal_in_units_of_noise_std():
    """(counts - exact) / noise_std over 4000 bins: a KS test against N(0, 1) at level 1e-6
    (the false-failure rate of this test for a correct sampler)."""
    counts = np.random.default_rng(8).integers(0, 50, 4000)
    hist = noisy_histogram_of_counts(counts, mu=0.3, relation="add_remove",
                                     rng=np.random.default_rng(9))
    z = (hist.counts - counts) / hist.noise_std
    assert stats.kstest(z, "norm").pvalue > 1e-6


def test_noisy_histogram_refuses_bad_counts_and_codes():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="non-negative integers"):
        noisy_histogram_of_counts(np.array([1, -1, 2]), mu=1.0, relation="add_remove", rng=rng)
    with pytest.raises(ValueError, match="non-negative integers"):
        noisy_histogram_of_counts(np.array([1.5, 2.0]), mu=1.0, relation="add_remove", rng=rng)
    with pytest.raises(ValueError, match=r"codes must lie in -1 \.\. n_bins - 1"):
        noisy_histogram(np.array([0, 3]), 3, mu=1.0, relation="add_remove", rng=rng)
    with pytest.raises(ValueError, match="mu must be positive"):
        noisy_histogram(np.array([0, 1]), 3, mu=0.0, relation="add_remove", rng=rng)


# --------------------------------------------------------------------------- PrivateBounds


def _hand_quantile_bounds(counts, sigma, edges, q_lo, q_hi, tau):
    """The documented rule, written out: counts below tau sigma set to 0, F the noisy CDF;
    low = lower edge of the first bin with F > q_lo, high = upper edge of the first bin
    with F >= q_hi."""
    c = [x if x >= tau * sigma else 0.0 for x in counts]
    total = sum(c)
    F, run = [], 0.0
    for x in c:
        run += x
        F.append(run / total)
    i_lo = next(i for i, f in enumerate(F) if f > q_lo)
    i_hi = next(i for i, f in enumerate(F) if f >= q_hi - 1e-12)
    return edges[i_lo], edges[max(i_hi, i_lo) + 1]


@pytest.mark.parametrize("mu", [0.5, 50.0])
def test_private_bounds_are_grid_edges_read_off_the_histograms_noisy_cdf(mu):
    values = np.random.default_rng(1).lognormal(0.0, 1.0, 300)
    values[:5] = np.nan  # missing values are counted nowhere
    rng = np.random.default_rng(2)
    pb = private_bounds(values, (-5.0, 40.0), mu=mu, relation="add_remove", rng=rng)
    assert isinstance(pb, PrivateBounds) and not pb.fallback
    np.testing.assert_array_equal(pb.edges, geometric_grid(-5.0, 40.0))
    assert pb.histogram.counts.shape == (pb.edges.size - 1,)
    assert pb.event is pb.histogram.event
    assert pb.event.mu == pytest.approx(mu)
    low, high = pb.bounds
    assert low < high and low in pb.edges and high in pb.edges
    want = _hand_quantile_bounds(pb.histogram.counts, pb.histogram.noise_std, pb.edges,
                                 0.01, 0.99, DEFAULT_LEVEL_THRESHOLD)
    assert (low, high) == want
    # the release is the histogram of the clipped values plus the seeded draw
    true = np.histogram(np.clip(values[5:], -5.0, 40.0), bins=pb.edges)[0]
    z = np.random.default_rng(2).standard_normal(true.size)
    np.testing.assert_allclose(pb.histogram.counts, true + pb.histogram.noise_std * z,
                               rtol=1e-12, atol=1e-9)


def test_private_bounds_bracket_the_empirical_quantiles_at_negligible_noise():
    """At mu = 1e6 (sigma = 1e-6) the noisy CDF is the empirical one: low is the lower edge
    of the bin holding order statistic floor(0.01 n) + 1, high the upper edge of the bin
    holding order statistic ceil(0.99 n)."""
    values = np.random.default_rng(3).uniform(0.5, 9.0, 250)
    pb = private_bounds(values, (0.0, 10.0), mu=1e6, relation="replace_one",
                        rng=np.random.default_rng(4))
    low, high = pb.bounds
    x = np.sort(values)
    n = x.size
    lo_stat, hi_stat = x[math.floor(0.01 * n)], x[math.ceil(0.99 * n) - 1]
    e = pb.edges
    i = int(np.flatnonzero(e == low)[0])
    assert e[i] <= lo_stat < e[i + 1]  # low is the edge just below that order statistic
    j = int(np.flatnonzero(e == high)[0])
    assert e[j - 1] <= hi_stat < e[j]
    assert (x >= low).mean() >= 0.99 and (x < high).mean() >= 0.99


def test_private_bounds_narrower_quantiles_give_nested_bounds_from_the_same_release():
    values = np.random.default_rng(6).normal(2.0, 3.0, 400)
    wide = private_bounds(values, (-30.0, 30.0), mu=2.0, relation="add_remove",
                          rng=np.random.default_rng(7), quantiles=(0.01, 0.99))
    narrow = private_bounds(values, (-30.0, 30.0), mu=2.0, relation="add_remove",
                            rng=np.random.default_rng(7), quantiles=(0.25, 0.75))
    np.testing.assert_array_equal(wide.histogram.counts, narrow.histogram.counts)
    assert wide.bounds[0] <= narrow.bounds[0] < narrow.bounds[1] <= wide.bounds[1]


def test_private_bounds_fall_back_to_the_declared_range_when_nothing_passes():
    """Only missing values: every noisy count is pure noise; at threshold 10 the chance that
    any of the ~300 bins passes is below 300 * Phi(-10) < 3e-21."""
    pb = private_bounds(np.full(50, np.nan), (-2.0, 3.0), mu=1.0, relation="add_remove",
                        rng=np.random.default_rng(0), threshold=10.0)
    assert pb.fallback and pb.bounds == (-2.0, 3.0)
    assert np.all(pb.histogram.counts < 10.0 * pb.histogram.noise_std)
    assert pb.event is pb.histogram.event


@pytest.mark.parametrize("kw,exc,match", [
    ({"value_range": (3.0, 3.0)}, ValueError, "low < high"),
    ({"value_range": (0.0, np.inf)}, ValueError, "low < high"),
    ({"quantiles": (0.9, 0.1)}, ValueError, "quantiles must be increasing"),
    ({"quantiles": (0.0, 0.5)}, ValueError, r"quantiles\[0\] must be in \(0, 1\]"),
    ({"mu": -1.0}, ValueError, "mu must be positive"),
    ({"value_range": ("a", 1.0)}, TypeError, r"value_range\[0\] must be a real number"),
])
def test_private_bounds_refuse_bad_arguments(kw, exc, match):
    args = {"value_range": (0.0, 1.0), "mu": 1.0, "relation": "add_remove",
            "rng": np.random.default_rng(0), **kw}
    vr = args.pop("value_range")
    with pytest.raises(exc, match=match):
        private_bounds(np.array([0.2, 0.5]), vr, **args)


# --------------------------------------------------------------------------- PrivateLevels


def test_private_levels_keeps_exactly_the_counts_reaching_the_threshold():
    codes = np.array([0, 0, 0, 2, 2, 5, -1, 0, 5, 5, 5, 5])
    tau = 1.5
    lv = private_levels(codes, 7, mu=0.7, relation="replace_one",
                        rng=np.random.default_rng(11), threshold=tau)
    assert isinstance(lv, PrivateLevels)
    assert lv.threshold == tau and lv.kept.dtype == bool and lv.kept.shape == (7,)
    np.testing.assert_array_equal(lv.kept, lv.histogram.counts >= tau * lv.histogram.noise_std)
    assert lv.histogram.noise_std == pytest.approx(math.sqrt(2) / 0.7)
    true = np.array([4, 0, 2, 0, 0, 5, 0], dtype=float)
    z = np.random.default_rng(11).standard_normal(7)
    np.testing.assert_allclose(lv.histogram.counts, true + lv.histogram.noise_std * z,
                               rtol=1e-14, atol=1e-14)
    assert lv.event is lv.histogram.event and lv.event.mu == pytest.approx(0.7)


def test_private_levels_at_negligible_noise_keep_the_occurring_levels():
    codes = np.array([1, 1, 3, 6, -1, 6])
    lv = private_levels(codes, 8, mu=1e6, relation="add_remove", rng=np.random.default_rng(0))
    np.testing.assert_array_equal(lv.kept, np.bincount(codes[codes >= 0], minlength=8) > 0)


def test_private_levels_from_codes_equal_those_from_counts_and_nest_in_the_threshold():
    """The same seed gives the same release from codes or counts; a higher threshold keeps
    a subset of the levels (post-processing of one release)."""
    codes = np.random.default_rng(12).integers(-1, 10, 60)
    a = private_levels(codes, 10, mu=0.5, relation="add_remove", rng=np.random.default_rng(1))
    b = private_levels_of_counts(code_counts(codes, 10), mu=0.5, relation="add_remove",
                                 rng=np.random.default_rng(1))
    np.testing.assert_array_equal(a.histogram.counts, b.histogram.counts)
    np.testing.assert_array_equal(a.kept, b.kept)
    kept = [private_levels(codes, 10, mu=0.5, relation="add_remove",
                           rng=np.random.default_rng(1), threshold=t).kept
            for t in (0.5, 1.0, 3.0, 6.0)]
    for looser, stricter in itertools.pairwise(kept):
        assert np.all(looser | ~stricter)  # stricter implies looser
    assert kept[0].sum() > kept[-1].sum()  # the thresholds do separate levels here


def test_private_levels_refuse_bad_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="threshold must be positive"):
        private_levels(np.array([0, 1]), 2, mu=1.0, relation="add_remove", rng=rng,
                       threshold=0.0)
    with pytest.raises(ValueError, match="threshold must be positive"):
        private_levels_of_counts(np.array([1, 1]), mu=1.0, relation="add_remove", rng=rng,
                                 threshold=-1.0)
    with pytest.raises(ValueError, match="vocabulary_size must be an integer >= 1"):
        private_levels(np.array([0]), 0, mu=1.0, relation="add_remove", rng=rng)
    with pytest.raises(ValueError, match="codes must lie in"):
        private_levels(np.array([0, 2]), 2, mu=1.0, relation="add_remove", rng=rng)


# --------------------------------------------------------------------------- PrivateFeatureRange


def _magnitude(v: float) -> float:
    """The upper edge 2^(k+1) of the binary bin [2^k, 2^(k+1)) holding |v| (by log2)."""
    return 2.0 ** (math.floor(math.log2(abs(v))) + 1)


def test_private_feature_range_fields_from_an_exact_release():
    """Columns of mixed signs and supports, released with negligible noise: m_j is the upper
    edge of the largest |x_j|'s bin, k_occ the nonzero columns, k_bar the mean support,
    g_j = R / (m_j sqrt(k_bar)), the empty column the smallest g, z sigma the threshold."""
    X = np.array([
        [3.0, 0.0, -0.2, 0.0, 100.0],
        [-5.5, 0.0, 0.1, 0.0, 0.0],
        [0.5, 0.0, 0.0, 0.0, 0.0],
        [1.0, 0.0, 0.15, 0.0, 7.0],
    ])
    n, p = X.shape
    sigma, R = 1e-3, 3.0
    rel = feature_range_from_release(range_statistic(X), sigma, row_norm_bound=R)
    assert isinstance(rel, PrivateFeatureRange)
    want_m = [_magnitude(np.max(np.abs(X[:, j]))) if np.any(X[:, j]) else 0.0
              for j in range(p)]
    np.testing.assert_array_equal(rel.magnitude, want_m)  # [8, 0, 0.25, 0, 128]
    assert rel.occupied == 3
    z = stats.norm.isf(FALSE_OCCUPANCY / (2 * p * K))
    assert rel.threshold == pytest.approx(z * sigma, rel=1e-12)
    assert rel.noise_std == sigma
    k_bar = np.count_nonzero(X) / n  # 9 / 4
    assert rel.row_features == pytest.approx(k_bar, rel=1e-12)
    g = np.array([R / (m * math.sqrt(k_bar)) if m else np.nan for m in want_m])
    g[np.isnan(g)] = np.nanmin(g)
    np.testing.assert_allclose(rel.scale, g, rtol=1e-12)
    # a row with at most k_bar nonzeros, each within its magnitude, lands in the R-ball
    for row in X:
        if np.count_nonzero(row) <= k_bar:
            assert np.linalg.norm(rel.scale * row) <= R


def test_private_feature_range_reads_only_bins_reaching_the_threshold():
    """Hand-built noisy counts: a count just below z sigma does not occupy its bin; the
    highest occupied bin of either sign sets m_j; k_bar is clipped to [1, p]."""
    p, sigma = 3, 2.0
    z_sigma = stats.norm.isf(FALSE_OCCUPANCY / (2 * p * K)) * sigma
    counts = np.zeros((p, 2, K))
    k0 = -EXPONENTS[0]  # the bin of [1, 2)
    counts[0, 0, k0 + 3] = z_sigma  # [8, 16), positive: occupied
    counts[0, 1, k0 + 5] = z_sigma * (1 - 1e-9)  # [32, 64), negative: just below
    counts[1, 1, k0 - 2] = 10 * z_sigma  # [0.25, 0.5), negative: occupied
    counts[1, 0, k0 - 4] = 10 * z_sigma  # a lower positive bin: not the top
    counts[2, 0, k0 + 20] = z_sigma / 2  # never occupied
    rows = 1e6  # far more rows than counts: k_bar clipped up to 1
    rel = feature_range_from_release(np.append(counts.ravel(), rows), sigma)
    np.testing.assert_array_equal(rel.magnitude, [16.0, 0.5, 0.0])
    assert rel.occupied == 2 and rel.row_features == 1.0
    np.testing.assert_allclose(rel.scale, [1 / 16.0, 2.0, 1 / 16.0])
    # a row count below the threshold is not resolved: k_bar = p
    low = feature_range_from_release(np.append(counts.ravel(), z_sigma / 2), sigma)
    assert low.row_features == p
    np.testing.assert_allclose(low.scale, np.array([1 / 16.0, 2.0, 1 / 16.0]) / math.sqrt(p))


def test_private_feature_range_with_nothing_occupied_is_the_identity_scale():
    p = 4
    rel = feature_range_from_release(np.zeros(p * 2 * K + 1), sigma=1.0, row_norm_bound=5.0)
    np.testing.assert_array_equal(rel.scale, np.ones(p))
    np.testing.assert_array_equal(rel.magnitude, np.zeros(p))
    assert rel.occupied == 0 and rel.row_features == p
    with pytest.raises(dataclasses.FrozenInstanceError):
        rel.occupied = 1  # type: ignore[misc]
    assert PrivateFeatureRange(np.ones(1), np.ones(1), 1, 1.0, 1.0).row_features == 0.0


@pytest.mark.parametrize("kw,match", [
    ({"noisy": np.zeros(2 * K)}, "noisy must hold"),
    ({"sigma": 0.0}, "sigma must be positive"),
    ({"row_norm_bound": -1.0}, "row_norm_bound must be positive"),
    ({"failure": 1.0}, r"failure must be in \(0, 1\)"),
])
def test_private_feature_range_release_refuses_bad_arguments(kw, match):
    args = {"noisy": np.zeros(2 * 2 * K + 1), "sigma": 1.0, **kw}
    with pytest.raises(ValueError, match=match):
        feature_range_from_release(**args)
