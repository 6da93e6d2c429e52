"""Secure Gaussian noise: the rounded discrete Gaussian drawn by OpenDP.

OS entropy admits no seed: every statistical assertion has false-failure rate ALPHA = 1e-6.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from _goodness_of_fit import UNSEEDED_ALPHA, chi2_pvalue
from noisygd.mechanisms.noise import (
    add_gaussian_noise,
    add_gaussian_noise_in_place,
    sensitivity_inflation,
)
from noisygd.mechanisms.secure import SecureRandom

dp = pytest.importorskip("opendp.prelude", reason="secure noise needs the optional opendp "
                         "package (pip install 'noisygd[secure]')")

#: Per-test false-failure rate of every statistical assertion below.
ALPHA = UNSEEDED_ALPHA


def test_numpy_path_is_the_old_expression_bit_for_bit() -> None:
    values = np.random.default_rng(5).normal(size=7)
    a = add_gaussian_noise(values, 0.37, np.random.default_rng(11))
    g = np.random.default_rng(11)
    old = values.copy()
    old += 0.37 * g.standard_normal(7)  # noisy_gd's in-place form
    assert np.array_equal(a, old)
    assert np.array_equal(a, values + 0.37 * np.random.default_rng(11).standard_normal(7))


def test_in_place_noise_equals_the_new_array_bit_for_bit() -> None:
    """Blocks of draws from one generator are one stream: the in-place form (several blocks,
    a 2-D answer) gives exactly :func:`add_gaussian_noise`'s sums, written into the answer."""
    values = np.random.default_rng(5).standard_normal((3, 70_001)) * 1e3
    expected = add_gaussian_noise(values, 0.37, np.random.default_rng(11))
    out = values.copy()
    returned = add_gaussian_noise_in_place(out, 0.37, np.random.default_rng(11))
    assert returned is out
    assert np.array_equal(out, expected)


def test_in_place_noise_refuses_what_it_cannot_overwrite() -> None:
    with pytest.raises(TypeError, match="float64"):
        add_gaussian_noise_in_place(np.zeros(3, dtype=np.int64), 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="contiguous"):
        add_gaussian_noise_in_place(np.zeros((4, 4))[:, :2], 1.0, np.random.default_rng(0))


def test_in_place_noise_on_the_secure_grid() -> None:
    rng = SecureRandom()
    out = np.random.default_rng(2).uniform(-5, 5, size=500)
    add_gaussian_noise_in_place(out, 0.8, rng)
    gamma = rng.grid(0.8, 500)
    assert np.all(out / gamma == np.round(out / gamma))  # the secure form, written back


@pytest.mark.parametrize("sd", [1.0, 3.5e-3, 250.0])
def test_noise_scale_ks_against_the_normal(sd: float) -> None:
    # grid <= 2^-30 sd / sqrt(d): the discrete Gaussian is within ~1e-9 of N(0, sd^2) in CDF,
    # far below the KS statistic's resolution at n = 5000
    n = 5000
    x = np.random.default_rng(1).uniform(-10, 10, size=n) * sd
    out = add_gaussian_noise(x, sd, SecureRandom())
    assert stats.kstest((out - x) / sd, "norm").pvalue > ALPHA


def test_output_is_on_the_grid_and_values_are_rounded_first() -> None:
    rng = SecureRandom()
    sd, n = 0.8, 3000
    x = np.random.default_rng(2).uniform(-5, 5, size=n)
    out = add_gaussian_noise(x, sd, rng)
    gamma = rng.grid(sd, n)
    assert np.all(out / gamma == np.round(out / gamma))  # exactly on the grid
    # the unrounded x is nowhere on a grid that fine: its low bits must not survive
    assert not np.all(x / gamma == np.round(x / gamma))


def _discrete_gaussian_pmf(ks: np.ndarray, s: float) -> np.ndarray:
    w = np.exp(-(ks.astype(float) ** 2) / (2 * s * s))
    return w / w.sum()


def test_coarse_grid_matches_the_discrete_gaussian_pmf() -> None:
    # grid_bits = 0, d = 4, sd = 3: gamma = 2^floor(log2(3/2)) = 1, so the noise is N_Z(0, 9)
    rng = SecureRandom(grid_bits=0)
    assert rng.grid(3.0, 4) == 1.0
    centre = np.array([0.3, -0.2, 1.4, 2.6])  # rounds to 0, 0, 1, 3
    draws = np.concatenate([add_gaussian_noise(centre, 3.0, rng) - np.array([0, 0, 1, 3])
                            for _ in range(1500)])
    assert np.all(draws == np.round(draws))
    ks = np.arange(-30, 31)
    pmf = _discrete_gaussian_pmf(ks, 3.0)  # tails beyond 10 sd are < 1e-20: renormalised
    counts = np.array([(draws == k).sum() for k in ks])
    assert chi2_pvalue(counts, pmf) > ALPHA  # adjacent cells pooled: each expects >= 5
    # the discrete Gaussian's variance is below sd^2 (CKS20, Corollary of Poisson summation):
    # one-sided check at ALPHA via the chi-square bound on the sample variance
    var = draws.var()
    assert var < 9.0 * stats.chi2.ppf(1 - ALPHA, draws.size - 1) / (draws.size - 1)


def test_refuses_non_finite_values_without_showing_them() -> None:
    with pytest.raises(ValueError, match="must be finite") as exc:
        add_gaussian_noise(np.array([1.0, np.nan, 12345.678]), 1.0, SecureRandom())
    assert "12345" not in str(exc.value)
    with pytest.raises(ValueError):
        add_gaussian_noise(np.zeros(3), 0.0, SecureRandom())


def test_inflation_is_sound_and_below_opendps_stated_map() -> None:
    # our rounding term gamma sqrt(d) (Minkowski) against OpenDP's privacy map of the same
    # measurement, which adds (gamma - 2^-1074) d to d_in before rho = d^2/(2 scale^2)
    rng = SecureRandom()
    for sd, d, delta in [(2.0, 50, 1.0), (0.5, 1000, 2.0), (7.0, 3, 0.1)]:
        kappa = sensitivity_inflation(rng, sd, d, delta)
        gamma = rng.grid(sd, d)
        assert kappa * delta >= delta + gamma * math.sqrt(d)
        assert kappa - 1.0 <= 2.0**-30 * sd / delta * (1 + 1e-12)
        ours = (kappa * delta) ** 2 / (2 * sd * sd)
        meas = rng._measurement(d, sd, rng.grid_exponent(sd, d))
        theirs = float(meas.map(delta))
        assert delta**2 / (2 * sd * sd) < ours <= theirs * (1 + 1e-12)
    assert sensitivity_inflation(np.random.default_rng(0), 1.0, 10, 1.0) == 1.0


def test_secure_sigma_meets_the_target_and_is_tight() -> None:
    from noisygd.accounting.zcdp import zcdp_epsilon
    from noisygd.mechanisms.noise import secure_gaussian_sigma, zcdp_rho_for

    for eps, delta in [(0.3, 1e-6), (1.0, 1e-5), (8.0, 1e-9)]:
        rho = zcdp_rho_for(eps, delta)
        assert zcdp_epsilon(rho, delta) <= eps < zcdp_epsilon(rho * (1 + 1e-9), delta)
        for sens, d in [(1.0, 1), (0.27, 50), (3.0, 10_000)]:
            sigma = secure_gaussian_sigma(sens, eps, delta, d)
            kappa = sensitivity_inflation(SecureRandom(), sigma, d, sens)
            rho_release = (kappa * sens) ** 2 / (2 * sigma**2)
            assert rho_release <= rho
            # no noise wasted beyond the grid rule's slack 2^-30 sigma / Delta (relative)
            assert rho_release > rho * (1 - 4 * 2.0**-30 * sigma / sens)
