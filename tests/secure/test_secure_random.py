"""SecureRandom's exact samplers (OS entropy, so no seed: every statistical test states its
false-failure rate, ALPHA = 1e-6 each).

These tests need no OpenDP: the discrete samplers are noisygd's own (integers and rationals on
``os.urandom`` bits); the Gaussian is tested in ``test_secure_noise.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from _goodness_of_fit import UNSEEDED_ALPHA, chi2_pvalue
from noisygd._checks import check_generator
from noisygd.mechanisms.secure import SecureRandom

#: Per-test false-failure rate of every statistical assertion below (OS entropy: no seed).
ALPHA = UNSEEDED_ALPHA


def test_integers_uniform_and_in_range() -> None:
    rng = SecureRandom()
    x = rng.integers(3, 10, size=20_000)
    assert x.dtype == np.int64 and x.min() >= 3 and x.max() <= 9
    counts = np.bincount(x - 3, minlength=7)
    assert chi2_pvalue(counts, np.ones(7)) > ALPHA
    assert isinstance(int(rng.integers(5)), int) and 0 <= int(rng.integers(5)) < 5
    y = rng.integers(0, 4, size=(50, 3), endpoint=True)
    assert y.shape == (50, 3) and y.max() <= 4
    big = rng.integers(0, 2**64, size=4, dtype=np.uint64)  # range above 2^63: exact Python path
    assert big.dtype == np.uint64 and big.shape == (4,)
    with pytest.raises(ValueError, match="out of bounds"):
        rng.integers(0, 2**70)
    with pytest.raises(ValueError):
        rng.integers(5, 5)


def test_random_is_on_the_2_pow_53_grid_and_uniform() -> None:
    u = SecureRandom().random(20_000)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert np.all(u * 2.0**53 == np.floor(u * 2.0**53))
    assert stats.kstest(u, "uniform").pvalue > ALPHA
    assert isinstance(SecureRandom().random(), float)


def test_permutation_choice_shuffle() -> None:
    rng = SecureRandom()
    assert sorted(rng.permutation(100).tolist()) == list(range(100))
    a = np.arange(20).reshape(10, 2)
    pa = rng.permutation(a)
    assert sorted(map(tuple, pa.tolist())) == sorted(map(tuple, a.tolist()))
    s = rng.choice(1000, size=100, replace=False)
    assert len(set(s.tolist())) == 100 and s.min() >= 0 and s.max() < 1000
    b = np.arange(7.0)
    rng.shuffle(b)
    assert sorted(b.tolist()) == list(np.arange(7.0))
    # first element of a permutation of 5 is uniform (chi-square, ALPHA)
    firsts = np.array([rng.permutation(5)[0] for _ in range(5000)])
    assert chi2_pvalue(np.bincount(firsts, minlength=5), np.ones(5)) > ALPHA
    # the first draw of a sample without replacement is uniform too
    picks = np.array([rng.choice(4, size=2, replace=False)[0] for _ in range(4000)])
    assert chi2_pvalue(np.bincount(picks, minlength=4), np.ones(4)) > ALPHA
    with pytest.raises(ValueError, match="p is not supported"):
        rng.choice(3, p=[0.2, 0.3, 0.5])


# p = 0.3 = m 2^-54 (one 64-bit word decides); p = 2e-4 = m 2^-65 (ties go to the extra bits)
@pytest.mark.parametrize(("n", "p"), [(12, 0.3), (5000, 2e-4)])
def test_binomial_matches_its_pmf(n: int, p: float) -> None:
    rng = SecureRandom()
    x = rng.binomial(n, p, size=4000)
    counts = np.bincount(x, minlength=n + 1)
    assert chi2_pvalue(counts, stats.binom.pmf(np.arange(n + 1), n, p)) > ALPHA
    assert int(rng.binomial(10, 0.0)) == 0 and int(rng.binomial(10, 1.0)) == 10


def test_bernoulli_of_a_tiny_probability_uses_the_exact_tie_path() -> None:
    # p = 2^-70 (exponent > 64): the top-64-bit comparison ties with probability 2^-64; the count
    # over 10^6 draws is 0 except with probability < 10^6 * 2^-70 (far below ALPHA)
    assert int(SecureRandom().binomial(10**6, 2.0**-70)) == 0
    # p = 1 - 2^-53, the largest float below 1: all successes except with probability
    # < 10^6 2^-53 ~ 1e-10
    assert int(SecureRandom().binomial(10**6, 1 - 2.0**-53)) == 10**6


@pytest.mark.parametrize("lam", [0.3, 3.7])
def test_poisson_matches_its_pmf(lam: float) -> None:
    x = SecureRandom().poisson(lam, size=4000)
    kmax = int(lam + 8 * math.sqrt(lam) + 8)
    counts = np.bincount(np.minimum(x, kmax), minlength=kmax + 1)
    pmf = stats.poisson.pmf(np.arange(kmax + 1), lam)
    pmf[-1] = stats.poisson.sf(kmax - 1, lam)
    assert chi2_pvalue(counts, pmf) > ALPHA
    assert int(SecureRandom().poisson(0.0)) == 0


@pytest.mark.parametrize("method", ["standard_normal", "normal", "gamma", "exponential",
                                    "laplace", "uniform", "standard_gamma"])
def test_continuous_draws_are_refused(method: str) -> None:
    with pytest.raises(TypeError, match="secure mode draws no continuous noise"):
        getattr(SecureRandom(), method)(1.0)


def test_check_generator_accepts_the_secure_source_where_allowed() -> None:
    rng = SecureRandom()
    assert check_generator("rng", rng) is rng
    g = np.random.default_rng(0)
    assert check_generator("rng", g, secure=False) is g
    with pytest.raises(TypeError, match="secure mode"):
        check_generator("rng", rng, secure=False)
    with pytest.raises(TypeError, match=r"rng must be a numpy\.random\.Generator or a noisygd"):
        check_generator("rng", 0)


def test_grid_is_a_public_power_of_two_with_bounded_rounding() -> None:
    rng = SecureRandom(grid_bits=30)
    for sd, d in [(1.0, 1), (2.5, 50), (0.013, 10**5), (1e6, 7)]:
        k = rng.grid_exponent(sd, d)
        gamma = rng.grid(sd, d)
        assert gamma == 2.0**k
        # gamma sqrt(d) <= 2^-b sd, and the next grid up would break it (largest such grid)
        assert gamma * math.sqrt(d) <= sd * 2.0**-30 * (1 + 1e-15)
        assert 2 * gamma * math.sqrt(d) > sd * 2.0**-30 * (1 - 1e-15)
        assert rng.rounding_distance(sd, d) >= gamma * math.sqrt(d)
    with pytest.raises(ValueError):
        SecureRandom(grid_bits=61)
    with pytest.raises(TypeError):
        SecureRandom(grid_bits=2.0)  # type: ignore[arg-type]
