"""Private statistics: noisy histograms over public bins, quantile bounds, kept levels.

Statistical tests use fixed seeds; each states its false-failure rate (the probability, over
the seed, that a correct implementation fails).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from noisygd.accounting.events import Composed, DiscreteGaussianNoise, Gaussian, Neighbouring
from noisygd.accounting.gdp import gaussian_mu, gdp_epsilon
from noisygd.accounting.registry import best
from noisygd.mechanisms.private_statistics import (
    DEFAULT_GRID_RATIO,
    bin_index,
    clip_counts,
    code_counts,
    geometric_grid,
    histogram_event,
    histogram_sensitivity,
    noisy_clip_counts,
    noisy_histogram,
    noisy_histogram_of_counts,
    private_bounds,
    private_levels,
    private_levels_of_counts,
    quantile_bounds,
)


def test_histogram_sensitivity_is_the_largest_change_of_one_row():
    """Brute force over every dataset of 3 rows on 3 bins (plus 'no bin') and every neighbour:
    the largest L2 change is 1 (add/remove) and sqrt(2) (replace-one), as stated."""
    assert histogram_sensitivity("add_remove") == 1.0
    assert histogram_sensitivity("replace_one") == pytest.approx(math.sqrt(2.0), abs=0.0)
    assert histogram_sensitivity("replace_one") <= Neighbouring.REPLACE_ONE.clipped_sum_sensitivity

    def h(rows):
        return np.bincount([r for r in rows if r >= 0], minlength=3).astype(float)

    worst = {"add_remove": 0.0, "replace_one": 0.0}
    for rows in itertools.product(range(-1, 3), repeat=3):
        for i in range(3):
            removed = rows[:i] + rows[i + 1:]
            worst["add_remove"] = max(worst["add_remove"],
                                      float(np.linalg.norm(h(rows) - h(removed))))
            for new in range(-1, 3):
                replaced = (*rows[:i], new, *rows[i + 1:])
                worst["replace_one"] = max(worst["replace_one"],
                                           float(np.linalg.norm(h(rows) - h(replaced))))
    assert worst["add_remove"] == histogram_sensitivity("add_remove")
    assert worst["replace_one"] == pytest.approx(histogram_sensitivity("replace_one"))


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_noise_is_gaussian_with_the_stated_scale(relation):
    """KS test of (noisy - true) / sigma against N(0, 1) on 20,000 bins, sigma = Delta/mu.

    False-failure rate: 1e-3 (the KS p-value of a correct sampler is uniform), fixed seed.
    """
    rng = np.random.default_rng(20261122)
    mu, n_bins = 0.5, 20_000
    codes = rng.integers(-1, n_bins, size=50_000)
    hist = noisy_histogram(codes, n_bins, mu=mu, relation=relation, rng=rng)
    assert hist.noise_std == histogram_sensitivity(relation) / mu
    true = np.bincount(codes[codes >= 0], minlength=n_bins)
    z = (hist.counts - true) / hist.noise_std
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert hist.event == Gaussian(hist.noise_std, histogram_sensitivity(relation), relation)
    assert gaussian_mu(hist.event) == pytest.approx(mu, rel=1e-12)


def test_events_compose_to_the_gdp_closed_form():
    """m histograms at mu_j compose to mu = sqrt(sum mu_j^2) (Dong, Roth and Su 2022, Cor.
    3.3), computed here by hand from the noise scales; the accountant's epsilon is that of
    the closed form."""
    rng = np.random.default_rng(1)
    mus = [0.3, 0.1, 0.2, 0.05]
    events = [noisy_histogram(rng.integers(0, 5, 100), 5, mu=m, relation="add_remove",
                              rng=rng).event for m in mus]
    by_hand = math.sqrt(sum((1.0 / e.noise_multiplier) ** 2 for e in events))
    assert by_hand == pytest.approx(math.sqrt(sum(m * m for m in mus)), rel=1e-12)
    result = best(Composed(tuple(events)), 1e-5)
    assert result.epsilon == pytest.approx(gdp_epsilon(by_hand, 1e-5), rel=1e-9)


def test_geometric_grid_is_public_and_fine():
    edges = geometric_grid(-1e3, 1e6)
    assert edges[0] == -1e3 and edges[-1] == 1e6 and 0.0 in edges
    assert np.all(np.diff(edges) > 0)
    r = 1e-6 * 1e6
    # beyond the resolution, each bin is at most (ratio - 1) of its distance to 0 wide
    inner = edges[(np.abs(edges) >= r)]
    pos = inner[inner > 0]
    assert np.all(pos[1:] / pos[:-1] <= DEFAULT_GRID_RATIO * (1 + 1e-12))
    with pytest.raises(ValueError, match="low < high"):
        geometric_grid(1.0, 1.0)
    assert np.array_equal(bin_index(np.array([-5e3, np.nan, 2e6]), edges),
                          [0, -1, edges.shape[0] - 2])


def test_quantile_bounds_land_within_a_grid_step_at_large_epsilon():
    """200,000 log-normal values, mu = 20 (noise sd 0.05): the released bounds are the grid
    edges around the empirical 1% and 99% quantiles, within two grid steps (the threshold
    of 3 noise sd zeroes only bins with < 0.15 expected rows, so nothing else moves them)."""
    rng = np.random.default_rng(7)
    x = rng.lognormal(mean=8.0, sigma=1.0, size=200_000)
    pb = private_bounds(x, (0.0, 1e8), mu=20.0, relation="add_remove", rng=rng)
    lo, hi = pb.bounds
    q_lo, q_hi = np.quantile(x, [0.01, 0.99])
    step = DEFAULT_GRID_RATIO ** 2
    assert not pb.fallback
    assert q_lo / step <= lo <= q_lo
    assert q_hi <= hi <= q_hi * step


def test_quantile_bounds_fall_back_when_nothing_passes_the_threshold():
    rng = np.random.default_rng(3)
    # one row, noise sd 100, threshold 50 sd: a count passes w.p. < 162 * Phi(-49) ~ 0
    pb = private_bounds(np.array([5.0]), (0.0, 100.0), mu=0.01, relation="add_remove",
                        rng=rng, threshold=50.0)
    assert pb.fallback and pb.bounds == (0.0, 100.0)
    edges = geometric_grid(0.0, 1.0)
    empty = noisy_histogram(np.full(3, -1), edges.shape[0] - 1, mu=1e-3,
                            relation="add_remove", rng=rng)
    assert quantile_bounds(empty, edges, threshold=1e9) is None


def test_levels_kept_are_those_with_rows_at_large_epsilon():
    rng = np.random.default_rng(11)
    codes = np.repeat([0, 1, 3, -1], [500, 80, 30, 200])  # level 2 absent; -1: unlisted
    levels = private_levels(codes, 4, mu=2.0, relation="add_remove", rng=rng)
    assert levels.kept.tolist() == [True, True, False, True]


def test_an_absent_level_is_kept_at_the_stated_rate():
    """An absent level is kept when N(0, sigma^2) >= 3 sigma: probability Phi(-3) = 0.135%.
    Over 200,000 absent levels the count is Binomial; the test fails w.p. < 1e-6 (a
    binomial two-sided tail at 5 sd)."""
    rng = np.random.default_rng(5)
    n = 200_000
    levels = private_levels(np.full(10, -1), n, mu=0.5, relation="add_remove", rng=rng)
    p = stats.norm.sf(3.0)
    k = int(levels.kept.sum())
    assert abs(k - n * p) <= 5.0 * math.sqrt(n * p * (1 - p))


def test_secure_mode_is_a_discrete_gaussian_within_its_share():
    pytest.importorskip("opendp")
    from noisygd.accounting.zcdp import zcdp_rho
    from noisygd.mechanisms.secure import SecureRandom

    rng = SecureRandom()
    mu = 0.2
    sigma, planned = histogram_event(50, mu=mu, relation="add_remove", rng=rng)
    hist = noisy_histogram(np.arange(50) % 7, 50, mu=mu, relation="add_remove", rng=rng)
    assert isinstance(hist.event, DiscreteGaussianNoise) and hist.event == planned
    assert hist.noise_std == sigma
    assert zcdp_rho(hist.event) <= 0.5 * mu * mu * (1 + 1e-12)


def test_argument_checks():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="mu"):
        noisy_histogram(np.zeros(3, dtype=int), 2, mu=0.0, relation="add_remove", rng=rng)
    with pytest.raises(ValueError, match="codes"):
        noisy_histogram(np.array([0, 5]), 2, mu=1.0, relation="add_remove", rng=rng)
    with pytest.raises(TypeError):
        noisy_histogram(np.zeros(3, dtype=int), 2.5, mu=1.0, relation="add_remove", rng=rng)


def test_releases_from_counts_equal_those_from_codes_and_counts_add_over_parts():
    """The exact-count entry points (used by the Dask reductions) make the same release as
    the in-memory ones with the same generator: same noisy counts, same event; and the
    counts of disjoint parts add up to those of all the rows (integers, exactly)."""
    codes = np.random.default_rng(5).integers(-1, 9, size=1000)
    parts = np.array_split(codes, 7)
    summed = sum(code_counts(p, 9) for p in parts)
    assert summed.dtype == np.int64 and np.array_equal(summed, code_counts(codes, 9))
    assert np.array_equal(summed, [np.sum(codes == k) for k in range(9)])
    a = noisy_histogram(codes, 9, mu=0.5, relation="replace_one", rng=np.random.default_rng(1))
    b = noisy_histogram_of_counts(summed, mu=0.5, relation="replace_one",
                                  rng=np.random.default_rng(1))
    assert np.array_equal(a.counts, b.counts) and a.event == b.event
    la = private_levels(codes, 9, mu=0.05, relation="add_remove", rng=np.random.default_rng(2))
    lb = private_levels_of_counts(summed, mu=0.05, relation="add_remove",
                                  rng=np.random.default_rng(2))
    assert np.array_equal(la.kept, lb.kept) and la.event == lb.event
    values = np.array([-3.0, 0.5, np.nan, 7.0, 9.0, 2.0])
    assert clip_counts(values, 0.0, 5.0).tolist() == [1, 2]
    ca = noisy_clip_counts(values, (0.0, 5.0), mu=1.0, relation="add_remove",
                           rng=np.random.default_rng(3))
    cb = noisy_histogram_of_counts(clip_counts(values[:3], 0.0, 5.0)
                                   + clip_counts(values[3:], 0.0, 5.0), mu=1.0,
                                   relation="add_remove", rng=np.random.default_rng(3))
    assert np.array_equal(ca.counts, cb.counts) and ca.event == cb.event
    rng = np.random.default_rng(0)
    for bad in (np.array([1.0, 2.0]), np.array([1, -1]), np.zeros((2, 2), dtype=int),
                np.zeros(0, dtype=int)):
        with pytest.raises(ValueError, match="exact histogram"):
            noisy_histogram_of_counts(bad, mu=1.0, relation="add_remove", rng=rng)
