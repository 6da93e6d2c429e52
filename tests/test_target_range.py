"""The private target range (noisygd.mechanisms.target_range) and its stage in the
regressors' default fit."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy.stats import norm

from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.events import Gaussian, Neighbouring
from noisygd.accounting.gdp import gaussian_mu
from noisygd.estimators import (
    FALLBACK_TARGET_BOUND,
    TARGET_RANGE_RELEASES,
    DPHuberRegressor,
    DPLinearRegression,
)
from noisygd.mechanisms.feature_range import EXPONENTS, FALSE_OCCUPANCY, separated_spans
from noisygd.mechanisms.target_range import (
    EDGE_LEVEL,
    EDGE_SHARE,
    EXTENSION_OCCUPANCY,
    EXTENSION_SHARE,
    MAX_WINDOW,
    MIRROR_LEVEL,
    MIRROR_SHARE,
    TARGET_EXPONENTS,
    TARGET_GRID_BOTTOM_EDGE,
    TARGET_GRID_TOP_EDGE,
    TARGET_RANGE_ROUNDS,
    TARGET_RANGE_SHARE,
    PrivateTargetRange,
    centre_from_release,
    edge_bins,
    edge_threshold,
    extension_threshold,
    extension_window_threshold,
    mirror_threshold,
    range_within_declared,
    refined_range,
    signed_counts,
    target_bin_index,
    target_histogram,
    target_histogram_size,
    target_mean_sensitivity,
    target_mean_statistic,
    target_occupancy_threshold,
    target_range_from_release,
    target_range_sensitivity,
    window_threshold,
)

K = EXPONENTS[1] - EXPONENTS[0] + 1  # core bins a sign
KG = TARGET_EXPONENTS[1] - TARGET_EXPONENTS[0] + 1  # the whole grid's bins a sign
KX = KG - K  # the extension's
SIZE = 1 + 2 * KG
#: The first histogram's share of mu^2 (the refined rounds take the rest of the share).
FIRST_SHARE = TARGET_RANGE_SHARE * TARGET_RANGE_ROUNDS[0]


def _brute_position(k: int, negative: bool) -> int:
    """The vector position of the bin (2^k, 2^(k+1)] of one sign (the layout of the module
    doc, "The grid": zero bin, core by sign, extension by sign)."""
    if EXPONENTS[0] <= k <= EXPONENTS[1]:
        return 1 + (k - EXPONENTS[0]) + K * int(negative)
    j = k - TARGET_EXPONENTS[0] if k < EXPONENTS[0] else k - TARGET_EXPONENTS[0] - K
    return 1 + 2 * K + j + KX * int(negative)


def _brute_histogram(y: np.ndarray) -> np.ndarray:
    """Target by target, with log2 (independent of the frexp path): the zero bin, then
    (2^k, 2^(k+1)] by sign."""
    out = np.zeros(SIZE)
    for v in y:
        if v == 0:
            out[0] += 1
            continue
        k = min(max(math.ceil(math.log2(abs(v))) - 1, TARGET_EXPONENTS[0]),
                TARGET_EXPONENTS[1])
        out[_brute_position(k, v < 0)] += 1
    return out


def _table(n: int = 3000, seed: int = 0, offset: float = 750.0, scale: float = 100.0
           ) -> tuple[np.ndarray, np.ndarray]:
    """Targets in their own units, nobody bounded them: ``offset + scale tanh(signal)`` plus
    a little noise (by default all in (620, 880), inside the bin (512, 1024])."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    y = offset + scale * np.tanh(X[:, 0] - 0.5 * X[:, 1]) + 0.2 * scale * np.clip(
        rng.standard_normal(n), -1.0, 1.0)
    return X, y


# ------------------------------------------------------------------ the statistic
def test_histogram_equals_the_target_by_target_count():
    rng = np.random.default_rng(1)
    y = np.concatenate([rng.normal(0, 10, 200) * 10.0 ** rng.integers(-3, 4, 200),
                        [0.0, -0.0, 1.0, -1.0, 0.5, 2.0 ** 40, 2.0 ** 45, 2.0 ** -31, 1e-300,
                         -1e-15, 1e20, -1e200, 5e-324, 1.7e308, 2.0 ** 498, 2.0 ** -496,
                         2.0 ** 499]])
    assert target_histogram(y).tolist() == _brute_histogram(y).tolist()
    assert target_histogram(y).size == target_histogram_size() == SIZE == 1991
    # the core's bins keep their positions; signed_counts reads every bin back in order
    assert np.array_equal(signed_counts(target_histogram(y)).sum(axis=1),
                          [np.sum(y > 0), np.sum(y < 0)])
    # upper-closed: 1.0 in (1/2, 1], 0.5 in (1/4, 1/2], -1.0 in [-1, -1/2); zeros apart
    index = target_bin_index(np.array([1.0, 0.5, -1.0, 0.0, 1.5]))
    assert index.tolist() == [1 - 1 - EXPONENTS[0], 1 - 2 - EXPONENTS[0],
                              1 + K - 1 - EXPONENTS[0], 0, 1 - EXPONENTS[0]]


def test_histogram_refuses_non_finite_targets():
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match="NaN or infinite"):
            target_histogram(np.array([1.0, bad]))


def test_one_row_moves_the_histogram_by_its_sensitivity():
    # brute force over neighbours: adding/removing a target moves the counts by a unit
    # vector (or nothing, a zero target); replacing one by e_a - e_b (or nothing)
    y = np.array([3.0, -0.5, 700.0, 0.0])
    base = target_histogram(y)
    values = [0.0, 3.5, -0.2, 1e6, -1e-12]
    for v in values:
        added = target_histogram(np.append(y, v))
        assert np.linalg.norm(added - base) <= target_range_sensitivity() + 1e-12
    worst = 0.0
    for i, v in itertools.product(range(y.size), values):
        replaced = y.copy()
        replaced[i] = v
        worst = max(worst, float(np.linalg.norm(target_histogram(replaced) - base)))
    assert worst == pytest.approx(target_range_sensitivity(replace_one=True))  # reached
    assert target_range_sensitivity() == 1.0


# ------------------------------------------------------------------ post-processing
def test_range_from_an_exact_release():
    y = np.concatenate([np.full(80, 700.0), np.full(80, -3.0), np.full(5, 1e6)])
    released = target_range_from_release(target_histogram(y), sigma=2.0)
    # 700 in (512, 1024]; -3 in [-4, -2); the 5 targets near 1e6 under the threshold
    # z sigma = 8.7: the hull [-4, 1024]
    assert released.resolved and (released.low, released.high) == (-4.0, 1024.0)
    assert released.threshold == pytest.approx(
        2.0 * norm.isf(FALSE_OCCUPANCY / 2 / (2 * K + 1)))  # half the level: single bins
    assert released.window == 1
    assert released.centre_half() == (510.0, 514.0)
    assert released.centre_half(symmetric=True) == (0.0, 1024.0)


@pytest.mark.parametrize(("targets", "expected"), [
    (np.full(50, 6.0), (4.0, 8.0)),
    (np.full(50, -6.0), (-8.0, -4.0)),
    (np.full(50, 1.0), (0.5, 1.0)),  # a power of two is its bin's upper end
    (np.concatenate([np.full(50, 0.0), np.full(50, 6.0)]), (0.0, 8.0)),  # the zero bin
    (np.concatenate([np.full(50, 5000.0), np.full(50, 6000.0)]), (4096.0, 8192.0)),
])
def test_the_range_is_the_hull_of_the_occupied_bins(targets, expected):
    released = target_range_from_release(target_histogram(targets), sigma=1.0)
    assert released.resolved and (released.low, released.high) == expected


def test_the_extension_is_read_at_its_own_level():
    # a bin beyond the core grid (module doc, "The grid") needs z_x sigma, z_x over the 2 K_x
    # extension bins at half of EXTENSION_OCCUPANCY; a core bin still needs z sigma
    sigma = 2.0
    z_x = extension_threshold(sigma)
    assert z_x == pytest.approx(sigma * norm.isf(EXTENSION_OCCUPANCY / 2 / (2 * KX)))
    assert EXTENSION_OCCUPANCY == pytest.approx(EXTENSION_SHARE * FALSE_OCCUPANCY)
    z = target_occupancy_threshold(sigma)
    assert z < z_x
    between = (z + z_x) / 2.0
    for k, core in ((-50, False), (60, False), (-30, True), (40, True)):
        noisy = np.zeros(SIZE)
        noisy[_brute_position(k, False)] = between
        released = target_range_from_release(noisy, sigma)
        assert released.resolved is core, k
        noisy[_brute_position(k, False)] = z_x
        released = target_range_from_release(noisy, sigma)
        assert released.resolved and (released.low, released.high) == (2.0 ** k, 2.0 ** (k + 1))
    # windows: one reaching into the extension needs its own threshold (N_x = 2 K_x (W - 1)
    # windows), one inside the core the core's
    assert extension_window_threshold(1.0, 2) == pytest.approx(
        math.sqrt(2) * norm.isf(EXTENSION_OCCUPANCY / 2 / (2 * KX * (MAX_WINDOW - 1))))
    pair = (window_threshold(1.0, 2) + extension_window_threshold(1.0, 2)) / 2.0
    for first, core in ((EXPONENTS[0], True), (EXPONENTS[0] - 1, False)):
        noisy = np.zeros(SIZE)
        for k in (first, first + 1):
            noisy[_brute_position(k, False)] = pair / 2.0  # no single bin passes
        released = target_range_from_release(noisy, 1.0)
        assert released.resolved is core and released.window == (2 if core else 0), first


def test_mass_spread_thin_over_adjacent_bins_is_read_in_windows():
    # three adjacent positive bins, (4, 8], (8, 16], (16, 32], each 3.6 sigma: no single bin
    # reaches z sigma (4.49), pairs of them (7.2 sigma) reach z_W sigma sqrt 2 (6.97):
    # both windows of width 2 pass, and their hull spans the three bins
    sigma = 1.0
    noisy = np.zeros(SIZE)
    first = 1 + (2 - EXPONENTS[0])  # the bin (2^2, 2^3]
    noisy[first:first + 3] = 3.6
    assert 3.6 < target_occupancy_threshold(sigma)
    assert 7.2 >= window_threshold(sigma, 2) and 3.6 * 2 < 2 * target_occupancy_threshold(sigma)
    released = target_range_from_release(noisy, sigma)
    assert released.resolved and released.window == 2
    assert (released.low, released.high) == (4.0, 32.0)
    # the same mass in single bins far above the threshold is read bin by bin
    noisy[first:first + 3] = 10.0
    assert target_range_from_release(noisy, sigma).window == 1
    # the windows' threshold: z_W over every window of widths 2..MAX_WINDOW, times sqrt(w)
    windows = sum(2 * (K - w + 1) for w in range(2, MAX_WINDOW + 1))
    assert window_threshold(2.0, 3) == pytest.approx(
        2.0 * math.sqrt(3) * norm.isf(FALSE_OCCUPANCY / 2 / windows))


def test_few_targets_over_several_octaves_are_resolved_where_single_bins_are_not():
    # 200 targets, 25 in each octave of (2^4, 2^12]: at sigma = 12 no bin alone reaches
    # z sigma (54 counts); windows of several adjacent octaves do (exact counts: the rule,
    # without the draw of its noise)
    y = np.concatenate([np.full(25, 1.5 * 2.0 ** k) for k in range(4, 12)])
    counts = target_histogram(y)
    sigma = 12.0
    assert counts.max() < target_occupancy_threshold(sigma)
    released = target_range_from_release(counts, sigma)
    width = released.window
    assert released.resolved and 1 < width <= MAX_WINDOW
    # the narrowest occupied width: no window narrower than it passes
    assert 25.0 * (width - 1) < window_threshold(sigma, width - 1) or width == 2
    assert 25.0 * width >= window_threshold(sigma, width)
    # every occupied window lies inside the targets' octaves, and together they span them
    assert (released.low, released.high) == (16.0, 4096.0)


def _signed_bins(positive: dict[int, float], negative: dict[int, float], zero: float = 0.0
                 ) -> np.ndarray:
    """A release with these counts in the bins (2^k, 2^(k+1)] of each sign, keyed by k."""
    noisy = np.zeros(SIZE)
    noisy[0] = zero
    for sign, bins in ((0, positive), (1, negative)):
        for k, count in bins.items():
            noisy[1 + (k - EXPONENTS[0]) + K * sign] = count
    return noisy


def test_each_sign_is_read_alone_bins_then_windows():
    # positive bins pass alone; the negative side only in windows of 2 (3.6 sigma per bin,
    # 7.2 sigma per pair): before, the windows were read only where no bin of either sign
    # passed, and the negative targets fell out of the range
    released = target_range_from_release(
        _signed_bins({0: 10.0, 1: 10.0}, {2: 3.6, 3: 3.6, 4: 3.6}), 1.0)
    assert (released.low, released.high) == (-32.0, 4.0)
    assert released.window == 2 and not released.mirrored
    assert released.occupied == ()  # windows overlap: no bin counts recorded


def test_one_signed_range_takes_in_the_mirror_bins_that_pass_the_mirror_test():
    # targets about 0 at a noise near the threshold: the positive bins (0.5, 1], (1, 2] pass,
    # the negative ones (and their windows) do not, but their sum over the same octaves
    # passes z_m sigma sqrt 2 (z_m for MIRROR_LEVEL = 0.05: 1.645)
    sigma = 32.0
    thr = target_occupancy_threshold(sigma)
    assert 150.0 >= thr and 100.0 < thr and 200.0 < window_threshold(sigma, 2)
    assert mirror_threshold(sigma, 2) == pytest.approx(norm.isf(MIRROR_LEVEL) * sigma * 2 ** .5)
    released = target_range_from_release(_signed_bins({-1: 150.0, 0: 150.0},
                                                      {-1: 100.0, 0: 100.0}), sigma)
    assert released.mirrored and (released.low, released.high) == (-2.0, 2.0)
    # mirrored alike from the negative side
    released = target_range_from_release(_signed_bins({-1: 100.0, 0: 100.0},
                                                      {-1: 150.0, 0: 150.0}), sigma)
    assert released.mirrored and (released.low, released.high) == (-2.0, 2.0)
    # nothing on the other side: one-signed (targets in (0.5, 2], a proportion, a price)
    released = target_range_from_release(_signed_bins({-1: 150.0, 0: 150.0}, {}), sigma)
    assert not released.mirrored and (released.low, released.high) == (0.5, 2.0)
    # the other sign must also hold MIRROR_SHARE of this sign's count over those octaves:
    # at sigma 10 (a bin needs 45, a pair 69): 56 clears the noise (z_m sigma sqrt 2 = 23)
    # but not a quarter of 240; 64 clears both
    assert MIRROR_SHARE == 0.25 and window_threshold(10.0, 2) > 64.0
    released = target_range_from_release(_signed_bins({-1: 120.0, 0: 120.0},
                                                      {-1: 28.0, 0: 28.0}), 10.0)
    assert not released.mirrored and (released.low, released.high) == (0.5, 2.0)
    released = target_range_from_release(_signed_bins({-1: 120.0, 0: 120.0},
                                                      {-1: 32.0, 0: 32.0}), 10.0)
    assert released.mirrored and (released.low, released.high) == (-2.0, 2.0)
    # an occupied zero bin already joins 0: no mirror test (zero-inflated counts, bills)
    released = target_range_from_release(_signed_bins({-1: 150.0, 0: 150.0},
                                                      {-1: 100.0, 0: 100.0}, zero=150.0), sigma)
    assert not released.mirrored and (released.low, released.high) == (0.0, 2.0)


def test_false_mirror_rate_is_at_most_its_level():
    # one-signed targets (one positive bin 8 sigma, above the threshold 4.5 sigma), the
    # mirror bin pure noise: it passes with probability at most MIRROR_LEVEL (the count's
    # quarter, 2 sigma, is the larger bar here). 2000 draws, P(Binomial(2000, <= 0.05) > 130)
    # < 1e-3 (this test's false-failure rate)
    rng = np.random.default_rng(6)
    sigma = 5.0
    base = _signed_bins({3: 40.0}, {})
    mirrored = 0
    for _ in range(2000):
        noisy = base + rng.normal(0.0, sigma, base.size)
        mirrored += target_range_from_release(noisy, sigma).mirrored
    assert mirrored <= 130


def test_edge_threshold_is_the_one_sided_normal_quantile():
    assert EDGE_LEVEL == 0.05
    assert edge_threshold(3.0) == pytest.approx(norm.isf(0.05) * 3.0, rel=1e-12)
    assert edge_threshold(3.0, 0.01) == pytest.approx(norm.isf(0.01) * 3.0, rel=1e-12)
    for level in (0.0, 1.0, float("nan")):
        with pytest.raises(ValueError, match="level"):
            edge_threshold(1.0, level)
    with pytest.raises(ValueError, match="sigma"):
        edge_threshold(0.0)


def test_edge_bins_walk_outwards_while_they_pass():
    # the level's bar alone (share 0): z_e sigma = 16.45 at sigma 10. Stretch 3..4; above:
    # 5 (20) and 6 (17) pass, 7 (16) fails, so 8 (40) is not reached; below: 2 (10) fails,
    # so 1 (50) is not reached
    sigma = 10.0
    counts = np.array([0.0, 50.0, 10.0, 300.0, 300.0, 20.0, 17.0, 16.0, 40.0])
    assert edge_bins(counts, 3, 4, sigma, share=0.0) == [5, 6]
    # below, outwards: 1 and 0 after 2 (in decreasing order), the grid's ends stop the walk
    counts[2], counts[0] = 30.0, 25.0
    assert edge_bins(counts, 3, 4, sigma, share=0.0) == [5, 6, 2, 1, 0]
    counts[7] = 100.0
    assert edge_bins(counts, 3, 4, sigma, share=0.0) == [5, 6, 7, 8, 2, 1, 0]
    assert edge_bins(counts, 3, 4, sigma, level=1e-6, share=0.0) == []  # z 4.75: none
    # the share's bar: EDGE_SHARE of the stretch's 600 is 150; only a bin that holds it joins
    assert EDGE_SHARE == MIRROR_SHARE == 0.25
    assert edge_bins(counts, 3, 4, sigma) == []
    counts[5], counts[6], counts[2] = 150.0, 149.0, 200.0
    assert edge_bins(counts, 3, 4, sigma) == [5, 2]
    for first, last in ((-1, 2), (3, 2), (0, 9)):
        with pytest.raises(ValueError, match="first"):
            edge_bins(counts, first, last, sigma)
    with pytest.raises(ValueError, match="share"):
        edge_bins(counts, 3, 4, sigma, share=1.0)


def test_a_bin_next_to_the_range_joins_it_with_the_edge_test():
    # diabetes-like: the bin (0.5, 1] holds a quarter of the rows, short of z sigma, next to
    # the occupied (0.125, 0.25], (0.25, 0.5]: without the edge test the range stops at 0.5
    sigma = 30.0
    thr = target_occupancy_threshold(sigma)
    assert 90.0 < thr < 140.0 and 90.0 > edge_threshold(sigma)
    noisy = _signed_bins({-3: 140.0, -2: 150.0, -1: 90.0}, {})
    plain = target_range_from_release(noisy, sigma)
    assert (plain.low, plain.high) == (0.125, 0.5)
    edged = target_range_from_release(noisy, sigma, edge_level=EDGE_LEVEL)
    assert (edged.low, edged.high) == (0.125, 1.0)
    assert (0.5, 1.0, 90.0) in edged.occupied and edged.resolved
    # windows read alike: the edges of the narrowest occupied window join it
    assert 240.0 > window_threshold(sigma, 2)
    noisy = _signed_bins({-3: 4.0 * sigma, -2: 4.0 * sigma, -1: 2.5 * sigma}, {})
    assert target_range_from_release(noisy, sigma).high == 0.5
    assert target_range_from_release(noisy, sigma, edge_level=EDGE_LEVEL).high == 1.0


def test_false_edge_rate_is_at_most_its_level():
    # one occupied bin (8, 16] at 8 sigma, its neighbours pure noise. The level's bar alone
    # (share 0): each joins with probability EDGE_LEVEL; 2000 draws: Binomial(2000, 0.05),
    # mean 100, sd 9.7, P(> 135) < 2e-4 and P(< 65) < 2e-4. The release (share's bar too,
    # read from the bins it records: the mirror test may widen the range as well) joins them
    # at most that often: P(Binomial(2000, 0.05) > 135) < 2e-4. This test's false-failure
    # rate: below 1e-3.
    rng = np.random.default_rng(7)
    sigma = 5.0
    base = _signed_bins({3: 40.0}, {})
    j = 1 + 3 - EXPONENTS[0]  # the occupied bin's index in the release
    level_only = {"above": 0, "below": 0}
    released_joins = {"above": 0, "below": 0}
    for _ in range(2000):
        noisy = base + rng.normal(0.0, sigma, base.size)
        joined = edge_bins(noisy[1:1 + K], j - 1, j - 1, sigma, share=0.0)
        level_only["above"] += j in joined
        level_only["below"] += (j - 2) in joined
        lows = {low for low, _, _ in target_range_from_release(
            noisy, sigma, edge_level=EDGE_LEVEL).occupied}
        released_joins["above"] += 16.0 in lows
        released_joins["below"] += 4.0 in lows
    assert all(65 <= v <= 135 for v in level_only.values())
    assert all(v <= 135 for v in released_joins.values())


def test_targets_about_zero_get_a_range_of_both_signs():
    # centred targets (sd about 1) at n 500, epsilon 1: 8 of 20 seeds got a one-signed first
    # range, which the intersected rounds kept (test R^2 down to -1.04 against a non-private
    # 0.37; the session-28 sweep's "small-n one-sided first range"); now none of these do
    for seed in range(8):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(500, 5))
        y = X @ np.array([0.5, -0.3, 0.2, 0.1, 0.0]) + rng.normal(0.0, 0.8, 500)
        model = DPLinearRegression(epsilon=1.0, random_state=seed).fit(X, y)
        low, high = model.target_range_
        assert low < 0.0 < high, (seed, model.target_range_)


def test_nothing_occupied_or_only_zeros_is_not_resolved():
    released = target_range_from_release(np.zeros(SIZE), sigma=1.0)
    assert not released.resolved and (released.low, released.high) == (0.0, 0.0)
    assert isinstance(released, PrivateTargetRange)
    zeros = target_range_from_release(target_histogram(np.zeros(50)), sigma=1.0)
    assert not zeros.resolved


def test_release_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError, match="counts"):
        target_range_from_release(np.zeros(2 * K), sigma=1.0)
    with pytest.raises(ValueError, match="failure"):
        target_occupancy_threshold(1.0, failure=0.0)


def test_false_occupancy_rate_is_at_most_its_level():
    # pure noise: the chance that any bin or window is read as occupied is at most the
    # level on the core grid plus EXTENSION_SHARE of it on the extension (Bonferroni: half
    # over the 2K + 1 core bins, half over its windows; the same over the extension). 400
    # draws at 0.05 (1.1 x 0.05 in all): P(Binomial(400, <= 0.055) > 37) < 1e-3 (this
    # test's false-failure rate); 4000 draws at the default 1e-3:
    # P(Binomial(4000, <= 1.1e-3) > 12) < 1e-3
    rng = np.random.default_rng(5)
    sigma = 3.0
    assert EXTENSION_SHARE == 0.1
    for level, draws, most in ((0.05, 400, 37), (FALSE_OCCUPANCY, 4000, 12)):
        false = 0
        for _ in range(draws):
            noise = rng.normal(0.0, sigma, SIZE)
            released = target_range_from_release(noise, sigma, failure=level)
            assert released.threshold == target_occupancy_threshold(sigma, level)
            # any bin or window read as occupied: a range, or the zero bin alone
            false += released.resolved or bool(noise[0] >= released.threshold)
        assert false <= most, (level, false)


# ------------------------------------------------------------------ in the estimators
def test_default_fit_releases_the_range_first_and_composes_it():
    X, y = _table()
    model = DPLinearRegression(epsilon=1.0, random_state=0, n_samples_public=len(y)).fit(X, y)
    events = model.privacy_.event.events
    mu = calibrate_mu(1.0, 1e-5)
    first = events[0]
    assert isinstance(first, Gaussian) and first.relation is Neighbouring.ADD_REMOVE
    assert gaussian_mu(first) == pytest.approx(math.sqrt(FIRST_SHARE) * mu, rel=1e-9)
    # the rounds' mu^2 add up to the declared share exactly
    rounds = events[:len(TARGET_RANGE_ROUNDS)]
    assert math.fsum(gaussian_mu(e) ** 2 for e in rounds) == pytest.approx(
        TARGET_RANGE_SHARE * mu * mu, rel=1e-9)
    assert model.privacy_.epsilon <= 1.0 * (1 + 1e-9)
    report = model.fit_info_["target_range"]
    names = [r["name"] for r in model.fit_info_["pre_releases"]]
    assert names[:len(TARGET_RANGE_RELEASES)] == list(TARGET_RANGE_RELEASES)
    assert report["noise_std"] == pytest.approx(1.0 / (math.sqrt(FIRST_SHARE) * mu))
    # the refined range lies inside the first one, (512, 1024], and holds the targets'
    # middle 95% (targets within a few spreads of their offset: the rounds narrow nothing
    # here; targets far from 0 below)
    low, high = model.target_range_
    assert report["resolved"] and report["released"] == pytest.approx((low, high), rel=1e-12)
    q = np.quantile(y, [0.025, 0.975])
    assert 512.0 <= low <= q[0] and q[1] <= high <= 1024.0
    assert [r["kind"] for r in report["rounds"]] == ["mean", "histogram"] * 2
    predictions = model.predict(X)
    assert predictions.min() >= low and predictions.max() <= high


@pytest.mark.parametrize("cls", [DPLinearRegression, DPHuberRegressor])
def test_targets_in_their_units_are_learnt_and_were_crushed_before(cls):
    # before the release the default clipped these targets to [-1, 1] silently
    X, y = _table(n=4000)
    Xt, yt = _table(n=2000, seed=1)

    def r2(model):
        return 1.0 - np.mean((model.predict(Xt) - yt) ** 2) / np.var(yt)

    released = cls(epsilon=1.0, random_state=0).fit(X, y)
    declared = cls(epsilon=1.0, random_state=0, target_range=(0.0, 1024.0)).fit(X, y)
    with pytest.warns(UserWarning, match=r"clipped to \[-1, 1\]"):
        fallback = cls(epsilon=1.0, random_state=0, target_range_share=0.0).fit(X, y)
    from sklearn.linear_model import LinearRegression

    ceiling = r2(LinearRegression().fit(X, y))
    assert r2(released) > 0.9 * ceiling and r2(declared) > 0.9 * ceiling
    # the release costs 8% of the budget, and its range is tighter than (0, 1024)
    assert r2(released) > r2(declared) - 0.02
    assert r2(fallback) < 0.0  # below the constant predictor
    assert fallback.target_range_ == (-FALLBACK_TARGET_BOUND, FALLBACK_TARGET_BOUND)
    assert "target_range" not in fallback.fit_info_


def test_a_declared_range_or_bound_is_kept_with_share_0():
    X, y = _table(n=1000, scale=0.2, offset=0.0)  # in [-1, 1]
    for kw in ({"target_range": (-1.0, 1.0)}, {"target_bound": 1.0}):
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*target_range.*")
            model = DPLinearRegression(epsilon=1.0, random_state=0, target_range_share=0,
                                       **kw).fit(X, y)
        assert "target_range" not in model.fit_info_
        assert all(r["name"] != "target_range" for r in model.fit_info_["pre_releases"])
        assert model.target_range_ == (-1.0, 1.0)


def test_a_declared_range_is_narrowed_by_the_release():
    # a proportion declared on [0, 1] whose values lie in (0.5, 1]: the release narrows the
    # declared range to [0.5, 1] (the fit's noise halves), recorded with it, on the budget
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, (3000, 3))
    y = np.clip(0.8 + 0.1 * (X @ np.array([1.0, -1.0, 0.5]) - 0.25)
                + rng.normal(0.0, 0.02, 3000), 0.51, 1.0)
    model = DPLinearRegression(epsilon=1.0, random_state=0, target_range=(0.0, 1.0)).fit(X, y)
    info = model.fit_info_["target_range"]
    assert info["declared"] == (0.0, 1.0) and info["resolved"]
    # the first histogram's [0.5, 1], then the refined rounds about the targets' mean
    low, high = model.target_range_
    assert 0.5 <= low < 0.6 and high == 1.0
    assert (low, high) == pytest.approx(info["released"], rel=1e-12)
    assert [r["name"] for r in model.fit_info_["pre_releases"]][:len(TARGET_RANGE_RELEASES)] \
        == list(TARGET_RANGE_RELEASES)
    mu = calibrate_mu(1.0, 1e-5)
    assert gaussian_mu(model.privacy_.event) == pytest.approx(mu, rel=1e-9)
    assert gaussian_mu(model.privacy_.event.events[0]) == pytest.approx(
        math.sqrt(FIRST_SHARE) * mu, rel=1e-9)
    kept = DPLinearRegression(epsilon=1.0, random_state=0, target_range=(0.0, 1.0),
                              target_range_share=0).fit(X, y)
    assert kept.target_range_ == (0.0, 1.0)
    # the noise's half-range halves: the narrowed fit is at least as good on these rows
    assert model.score(X, y) > kept.score(X, y) - 0.01


def test_range_within_declared_intersects_except_at_the_grid_end():
    def released(low, high, resolved=True):
        return PrivateTargetRange(low, high, resolved, 1.0, 1.0)

    assert range_within_declared((0.0, 1.0), released(0.5, 1.0)) == (0.5, 1.0)
    assert range_within_declared((0.0, 700.0), released(512.0, 1024.0)) == (512.0, 700.0)
    # unresolved, or disjoint: the declared range
    assert range_within_declared((0.0, 1.0), released(0.0, 0.0, False)) == (0.0, 1.0)
    assert range_within_declared((0.0, 1.0), released(4.0, 8.0)) == (0.0, 1.0)
    # a side at the grid's end bounds nothing: the declared end stays there
    top = TARGET_GRID_TOP_EDGE
    assert range_within_declared((0.0, 1e160), released(2.0, top)) == (2.0, 1e160)
    assert range_within_declared((-1e160, 0.0), released(-top, -2.0)) == (-1e160, -2.0)
    # the core grid's top (2^41) is an ordinary edge now: it bounds the declared range
    assert range_within_declared((0.0, 1e13), released(2.0, 2.0 ** 41)) == (2.0, 2.0 ** 41)


def test_a_declared_range_is_never_widened():
    # targets beyond the declared range are clipped to it, as without the release; a range
    # that resolves no bin (4 rows) keeps the declared one, with no warning of the fallback
    X, y = _table(n=3000)  # in (620, 880)
    model = DPLinearRegression(epsilon=1.0, random_state=0, target_range=(0.0, 700.0)).fit(X, y)
    low, high = model.target_range_
    assert 0.0 <= low < high <= 700.0 and model.fit_info_["target_range"]["declared"] == (
        0.0, 700.0)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*target.range.*")
        tiny = DPLinearRegression(epsilon=0.5, random_state=0, target_range=(0.0, 1000.0)
                                  ).fit(X[:4], y[:4])
    assert not tiny.fit_info_["target_range"]["resolved"]
    assert tiny.target_range_[0] >= 0.0 and tiny.target_range_[1] <= 1000.0


def test_the_range_is_recorded_first_in_the_ledger(tmp_path):
    X, y = _table(n=1500)
    ledger = str(tmp_path / "ledger.db")
    from noisygd.ledger import Ledger

    with Ledger(ledger) as opened:
        opened.set_budget("d", epsilon=4.0, delta=1e-5)
    DPLinearRegression(epsilon=1.0, random_state=0, ledger=ledger, dataset="d").fit(X, y)
    with Ledger(ledger) as opened:
        names = [r.algorithm.split("/")[1] for r in opened.releases("d")]
    assert names[0] == "target_range" and "target_scale" in names


def test_same_seed_same_model_and_a_refit_releases_again():
    X, y = _table(n=2000)
    a = DPLinearRegression(epsilon=1.0, random_state=3).fit(X, y)
    b = DPLinearRegression(epsilon=1.0, random_state=3).fit(X, y)
    assert np.array_equal(a.coef_, b.coef_) and a.intercept_ == b.intercept_
    # a refit on targets 1000 times smaller releases its own range (not the earlier fit's)
    first = a.target_range_
    a.fit(X, y / 1000.0)
    low, high = a.target_range_
    q = np.quantile(y / 1000.0, [0.025, 0.975])
    assert 0.25 <= low <= q[0] and q[1] <= high <= 2.0
    assert high - low < (first[1] - first[0]) / 100.0


def test_replace_one_draws_the_exact_noise():
    X, y = _table(n=2000)
    model = DPLinearRegression(epsilon=1.0, random_state=0, neighbouring="replace_one",
                               n_samples_public=len(y)).fit(X, y)
    mu = calibrate_mu(1.0, 1e-5)
    first = model.privacy_.event.events[0]
    assert first.relation is Neighbouring.REPLACE_ONE
    assert gaussian_mu(first) == pytest.approx(math.sqrt(FIRST_SHARE) * mu, rel=1e-9)
    assert model.fit_info_["target_range"]["noise_std"] == pytest.approx(
        math.sqrt(2.0) / (math.sqrt(FIRST_SHARE) * mu), rel=1e-9)
    # a mean round's noise: its exact replace-one sensitivity 2 over its own mu
    mean_round = model.fit_info_["target_range"]["rounds"][0]
    assert mean_round["noise_std"] == pytest.approx(
        2.0 / (math.sqrt(TARGET_RANGE_SHARE * TARGET_RANGE_ROUNDS[1]) * mu), rel=1e-9)


def test_a_range_resolving_no_bin_warns_and_keeps_the_fallback():
    X, y = _table(n=40)  # 40 targets against a threshold of ~ 80 counts at epsilon 1
    with pytest.warns(UserWarning, match=r"resolved no bin \(too few rows"):
        model = DPLinearRegression(epsilon=1.0, random_state=0).fit(X, y)
    assert not model.fit_info_["target_range"]["resolved"]
    assert not model.fit_info_["target_range"]["zero_only"]
    assert model.target_range_ == (-FALLBACK_TARGET_BOUND, FALLBACK_TARGET_BOUND)


def test_targets_all_zero_warn_that_only_the_zero_bin_was_occupied():
    # 3000 targets at 0 pass the zero bin's threshold many times over: the warning says why
    # nothing was resolved (before: "too few rows against its noise", false here)
    X, _ = _table(n=3000)
    with pytest.warns(UserWarning, match="only its zero bin was occupied") as record:
        model = DPLinearRegression(epsilon=1.0, random_state=0).fit(X, np.zeros(3000))
    assert not any("too few rows" in str(w.message) for w in record)
    info = model.fit_info_["target_range"]
    assert info["zero_only"] and not info["resolved"]
    released = target_range_from_release(target_histogram(np.zeros(50)), sigma=1.0)
    assert released.zero_only and released.occupied == ((0.0, 0.0, 50.0),)
    # a zero bin beside an occupied sign bin is part of a resolved range, not zero_only
    both = target_range_from_release(target_histogram(np.r_[np.zeros(50), np.full(50, 3.0)]),
                                     sigma=1.0)
    assert both.resolved and not both.zero_only


@pytest.mark.parametrize("method", ["output_perturbation", "langevin"])
def test_methods_that_cannot_compose_warn_and_keep_the_fallback(method):
    X, y = _table(n=500, scale=0.2, offset=0.0)
    with pytest.warns(UserWarning, match="does not release a private target range"):
        model = DPLinearRegression(epsilon=1.0, random_state=0, method=method, radius=5.0,
                                   neighbouring="replace_one", max_iter=20).fit(X, y)
    assert model.target_range_ == (-1.0, 1.0)


def test_ssp_releases_the_range_and_composes_with_it():
    """SSP's sensitivity is the declared target bound's and its event a Gaussian composition
    (``gaussian``): the private target range is released first and composed exactly, and its
    half-range is the bound SSP's plan uses."""
    from noisygd.accounting.gdp import gaussian_mu

    X, y = _table(n=3000)
    model = DPLinearRegression(epsilon=1.0, random_state=0, method="ssp").fit(X, y)
    assert [r["name"] for r in model.fit_info_["pre_releases"]] == list(TARGET_RANGE_RELEASES)
    released = model.fit_info_["target_range"]
    assert released["resolved"]
    assert model.target_range_ == pytest.approx(released["released"], rel=1e-12)
    rounds = model.privacy_.event.events[:len(TARGET_RANGE_ROUNDS)]
    assert " + ".join(e.describe() for e in rounds) == released["event"]
    mu = calibrate_mu(1.0, 1e-5)
    assert gaussian_mu(rounds[0]) == pytest.approx(math.sqrt(FIRST_SHARE) * mu, rel=1e-9)
    assert gaussian_mu(model.privacy_.event) == pytest.approx(mu, rel=1e-9)
    assert model.privacy_.epsilon <= 1.0 * (1 + 1e-9)


def test_without_an_intercept_the_range_is_symmetric():
    X, y = _table(n=3000)
    model = DPLinearRegression(epsilon=1.0, random_state=0, fit_intercept=False).fit(X, y)
    low, high = model.target_range_
    # the bin (512, 1024], or one octave more where the edge test joins the bin above
    # (module doc, "Edges": at most a 0.05 chance for an empty one)
    assert low == -high and high in (1024.0, 2048.0)
    # one round at the whole share: no centre to refine about without an intercept
    assert [r["name"] for r in model.fit_info_["pre_releases"]][:2] != list(
        TARGET_RANGE_RELEASES[:2])
    assert model.fit_info_["target_range"]["rounds"] == []
    mu = calibrate_mu(1.0, 1e-5)
    assert gaussian_mu(model.privacy_.event.events[0]) == pytest.approx(
        math.sqrt(TARGET_RANGE_SHARE) * mu, rel=1e-9)


# ------------------------------------------------------------------ refined rounds
def test_a_mean_round_moves_by_its_sensitivity_and_reaches_it():
    # brute force over neighbours of (count, sum of clipped standardised targets)
    y = np.array([3.0, -0.5, 700.0, 0.0, 5.5])
    m, h = 2.0, 4.0
    base = target_mean_statistic(y, m, h)
    assert base.tolist() == [5.0, float(np.sum(np.clip((y - m) / h, -1, 1)))]
    values = [-1e9, -2.0, 2.0, 6.0, 1e9, 0.0]
    worst_add = max(float(np.linalg.norm(target_mean_statistic(np.append(y, v), m, h) - base))
                    for v in values)
    assert worst_add <= target_mean_sensitivity() + 1e-12
    assert worst_add == pytest.approx(target_mean_sensitivity())  # a target beyond the range
    worst = 0.0
    for i, v in itertools.product(range(y.size), values):
        replaced = y.copy()
        replaced[i] = v
        worst = max(worst, float(np.linalg.norm(target_mean_statistic(replaced, m, h) - base)))
    assert worst == pytest.approx(target_mean_sensitivity(replace_one=True))  # reached
    with pytest.raises(ValueError, match="NaN or infinite"):
        target_mean_statistic(np.array([1.0, np.nan]), m, h)


def test_the_centre_from_an_exact_release_is_the_clipped_mean():
    y = np.array([1.0, 2.0, 3.0, 10.0])
    exact = target_mean_statistic(y, centre=2.0, half=2.0)  # 10 clipped to 4
    assert centre_from_release(exact, 2.0, 2.0, sigma=1.0) == pytest.approx(2.0 + 2.0 * 1.0 / 4)
    # a count below 2 sigma resolves no mean; a ratio beyond +-1 is clipped to the range
    assert centre_from_release(np.array([3.0, 1.0]), 0.0, 1.0, sigma=2.0) is None
    assert centre_from_release(np.array([5.0, 50.0]), 0.0, 1.0, sigma=1.0) == 1.0


def test_a_histogram_round_reads_the_distances_about_the_centre():
    dist = target_range_from_release(target_histogram(np.abs(np.array([0.3, -0.7, 0.2]))),
                                     sigma=1e-3)
    assert (dist.low, dist.high) == (0.125, 1.0)
    # twice the hull's end about the centre, intersected with the range before
    assert refined_range((64.0, 128.0), 100.0, dist) == (98.0, 102.0)
    assert refined_range((64.0, 101.0), 100.0, dist) == (98.0, 101.0)  # its tighter end
    nothing = PrivateTargetRange(0.0, 0.0, False, 1.0, 1.0, 0)
    assert refined_range((64.0, 128.0), 100.0, nothing) == (64.0, 128.0)
    assert refined_range((-8.0, 8.0), 100.0, dist) == (-8.0, 8.0)  # disjoint: kept


@pytest.mark.parametrize("offset,scale,n,eps,single_below",
                         [(1e4, 1.0, 2000, 8.0, 0.0), (-5e6, 1.0, 20000, 8.0, 0.0),
                          (300.0, 1.0, 2000, 1.0, 0.75)])
def test_targets_far_from_zero_against_their_spread_are_learnt(monkeypatch, offset, scale, n,
                                                              eps, single_below):
    # targets 1e4 + z, -5e6 + z, 300 + z (a year, an altitude, kelvin): the first
    # histogram's range is set by their offset, and with it alone (the release before the
    # refined rounds) the test R^2 is below the constant predictor's (kelvin at epsilon 1:
    # well below the refined fit's)
    rng = np.random.default_rng(7)
    X = rng.standard_normal((n + 2000, 5))
    z = X @ rng.standard_normal(5) + 0.5 * rng.standard_normal(n + 2000)
    y = offset + scale * z / z.std()
    from sklearn.linear_model import LinearRegression

    def r2(model):
        return 1.0 - np.mean((model.predict(X[n:]) - y[n:]) ** 2) / np.var(y[n:])

    ceiling = r2(LinearRegression().fit(X[:n], y[:n]))
    refined = DPLinearRegression(epsilon=eps, random_state=0).fit(X[:n], y[:n])
    assert r2(refined) > 0.95 * ceiling
    low, high = refined.target_range_
    assert high - low < 20.0 * scale  # of the order of the spread, not of the offset
    import noisygd.mechanisms.target_range as target_range

    monkeypatch.setattr(target_range, "TARGET_RANGE_ROUNDS", (1.0,))
    single = DPLinearRegression(epsilon=eps, random_state=0).fit(X[:n], y[:n])
    assert r2(single) < single_below


@pytest.mark.parametrize("bad", [-0.1, 0.6, "some"])
def test_share_is_validated(bad):
    X, y = _table(n=200)
    with pytest.raises((ValueError, TypeError), match="target_range_share"):
        DPLinearRegression(target_range_share=bad).fit(X, y)


@pytest.mark.parametrize("scale", [1e12, 1e-15])
def test_targets_far_from_the_core_grid_are_resolved_on_its_extension(scale):
    # targets near 1e13 (beyond the core grid's 2^41) and near 1e-15 (below its 2^-30): before
    # the extension, clipped to 2^41 (R^2 0.18) or fitted in units of 2^-29, two million times
    # their spread (R^2 -293 at epsilon 8); now their own octaves, and the fit as in any units
    X, y = _table(n=3000, offset=10.0 * scale, scale=scale)
    Xt, yt = _table(n=3000, seed=1, offset=10.0 * scale, scale=scale)
    reference = DPLinearRegression(epsilon=8.0, random_state=0).fit(X, y / scale)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*of its grid.*")
        model = DPLinearRegression(epsilon=8.0, random_state=0).fit(X, y)
    low, high = model.target_range_
    assert 5.0 * scale < low < high < 20.0 * scale
    ceiling = reference.score(Xt, yt / scale)
    assert ceiling > 0.8
    assert model.score(Xt, yt) > ceiling - 0.05


def test_targets_beyond_the_grid_warn_that_they_were_clipped():
    # targets near 1e152 fall in the whole grid's top bin (2^497, 2^498]: the range ends at
    # 2^498 (8e149, within the largest target bound, 1e150) and every larger target is
    # clipped to it, with a warning
    X, y = _table(n=3000, offset=1e152, scale=1e151)
    with pytest.warns(UserWarning, match=r"reached the end of its grid .*2\^498"):
        model = DPLinearRegression(epsilon=8.0, random_state=0).fit(X, y)
    assert model.target_range_[1] <= TARGET_GRID_TOP_EDGE == 2.0 ** 498
    with warnings.catch_warnings():  # targets inside the grid: no such warning
        warnings.filterwarnings("error", message=".*end of its grid.*")
        DPLinearRegression(epsilon=8.0, random_state=0).fit(X, y / 1e150)


def test_targets_at_the_bottom_of_the_grid_warn_that_they_are_resolved_coarsely():
    # targets near 1e-160 fall in the whole grid's bottom bin: the range is +-2^-496, far
    # wider than their spread; the warning says so and names this line
    X, y = _table(n=3000, offset=0.0, scale=1e-160)
    with pytest.warns(UserWarning, match=r"bottom of its grid .*2\^-496") as record:
        model = DPLinearRegression(epsilon=8.0, random_state=0).fit(X, y)
    assert model.target_range_[1] == TARGET_GRID_BOTTOM_EDGE == 2.0 ** -496
    assert all(w.filename == __file__ for w in record if "bottom" in str(w.message))
    with warnings.catch_warnings():  # targets inside the grid: no such warning
        warnings.filterwarnings("error", message=".*bottom of its grid.*")
        DPLinearRegression(epsilon=8.0, random_state=0).fit(X, y * 1e12)


def test_the_release_records_its_occupied_bins_with_their_counts():
    y = np.concatenate([np.full(5000, 20.0), np.full(30, 99999.0), np.zeros(200)])
    released = target_range_from_release(target_histogram(y), 1e-3)
    assert sorted(released.occupied) == [(0.0, 0.0, 200.0), (16.0, 32.0, 5000.0),
                                         (65536.0, 131072.0, 30.0)]
    assert separated_spans(released.occupied) == ((16.0, 32.0), (65536.0, 131072.0), 11)
    # read from windows (no single bin occupied): nothing recorded, nothing reported
    noisy = np.zeros(SIZE)
    first = 1 + (2 - EXPONENTS[0])  # three adjacent bins of 3.6 sigma, read in pairs
    noisy[first:first + 3] = 3.6
    thin = target_range_from_release(noisy, 1.0)
    assert thin.window == 2 and thin.occupied == ()


def test_sentinel_targets_far_from_the_rest_warn():
    # 1% of the targets are a sentinel 99999 (a "missing" code) among targets near 20: the
    # private range covers both and the fit is poor on the clean rows (R^2 -54 at 0.3%, 50 000
    # rows, epsilon 8), silently before; the warning names both stretches and this line
    rng = np.random.default_rng(3)
    X = rng.uniform(0.0, 1.0, (20_000, 4))
    clean = 20.0 + X @ np.array([3.0, -2.0, 1.0, 0.5]) + rng.normal(0.0, 1.0, 20_000)
    y = np.where(rng.random(20_000) < 0.01, 99999.0, clean)
    with pytest.warns(UserWarning, match=r"empty binary octaves") as record:
        DPLinearRegression(epsilon=8.0, random_state=0).fit(X, y)
    hits = [w for w in record if "empty binary octaves" in str(w.message)]
    assert len(hits) == 1 and hits[0].filename == __file__
    assert "6.554e+04" in str(hits[0].message)
    # heavy tails thin out octave by octave: no such warning (Pareto 1.1, lognormal sd 2)
    for tail in (rng.pareto(1.1, 20_000) + 1.0, np.exp(rng.normal(3.0, 2.0, 20_000)), clean):
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*empty binary octaves.*")
            DPLinearRegression(epsilon=8.0, random_state=0).fit(X, tail)


def test_releases_target_range_says_what_the_fit_will_do():
    # public facts only, before any data: the rule the fit applies (and the CLI asks)
    assert DPLinearRegression(epsilon=1.0).releases_target_range()
    assert DPHuberRegressor(epsilon=1.0).releases_target_range()
    for declared in ({"target_range": (0.0, 1.0)}, {"target_bound": 1.0}):
        # a declared range is narrowed by the release (class doc, target_range)
        assert DPLinearRegression(epsilon=1.0, **declared).releases_target_range()
    for kept in ({"target_range": (0.0, 1.0), "target_range_share": 0.0},
                 {"target_range_share": 0.0}, {"secure": True}):
        assert not DPLinearRegression(epsilon=1.0, **kept).releases_target_range()
    with pytest.raises(ValueError, match="target_range"):
        DPLinearRegression(epsilon=1.0, target_range=(1.0, 0.0)).releases_target_range()
    X, y = _table(n=2000)
    model = DPLinearRegression(epsilon=1.0, random_state=0)
    assert model.releases_target_range() and model.fit(X, y).fit_info_.get("target_range")
    declared = DPLinearRegression(epsilon=1.0, target_range=(500.0, 1000.0), random_state=0,
                                  target_range_share=0)
    assert "target_range" not in declared.fit(X, y).fit_info_
