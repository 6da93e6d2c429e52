"""Exact L2-Laplace sampler (Zhang et al. 2017, Algorithm 1 line 6; Lemma 6)."""

import math

import numpy as np
import pytest
from scipy import stats

from noisygd.mechanisms.l2_laplace import (
    l2_laplace_expected_sq_norm,
    l2_laplace_norm_distribution,
    l2_laplace_scale,
    sample_l2_laplace,
    sample_unit_sphere,
)


def test_shapes_and_determinism():
    a = sample_l2_laplace(5, 2.0, np.random.default_rng(1), size=3)
    b = sample_l2_laplace(5, 2.0, np.random.default_rng(1), size=3)
    assert a.shape == (3, 5)
    np.testing.assert_array_equal(a, b)
    assert sample_l2_laplace(4, 1.0, np.random.default_rng(0)).shape == (4,)
    u = sample_unit_sphere(7, np.random.default_rng(0), size=10)
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0)


def test_lemma6_second_moment():
    # E||z||^2 = d (d + 1) b^2 (Lemma 6). Monte Carlo with 40k draws: the relative
    # std of the mean of ||z||^2 (Gamma(d,b) second moment) is about
    # sqrt(Var/E^2 / N) ~ 0.006 for d = 3; tolerance 5% is > 8 sigma (false-failure < 1e-15).
    d, b = 3, 0.7
    z = sample_l2_laplace(d, b, np.random.default_rng(123), size=40_000)
    m = float(np.mean(np.sum(z * z, axis=1)))
    assert l2_laplace_expected_sq_norm(d, b) == pytest.approx(d * (d + 1) * b * b)
    assert m == pytest.approx(d * (d + 1) * b * b, rel=0.05)


def test_norm_is_gamma_ks_small():
    # KS against Gamma(d, b), 5000 draws, alpha = 1e-3 (false failure rate 0.1%, fixed seed).
    d, b = 4, 1.5
    z = sample_l2_laplace(d, b, np.random.default_rng(7), size=5000)
    res = stats.kstest(np.linalg.norm(z, axis=1), l2_laplace_norm_distribution(d, b).cdf)
    assert res.pvalue > 1e-3


def test_density_ratio_bounded_by_exp_epsilon():
    """The privacy argument for the scale b = Delta/eps that l2_laplace_scale returns: with
    the density p(z) ~ exp(-||z||/b) written out here (its law is checked by the Gamma KS test
    above and tests/statistical/test_l2_laplace_sampler.py), log p(x - a) - log p(x - a') =
    (||x - a'|| - ||x - a||)/b <= ||a - a'||/b = eps for ||a - a'|| = Delta (triangle
    inequality), with equality on the ray through a, a', so no smaller eps holds at this b."""
    rng = np.random.default_rng(0)
    b = l2_laplace_scale(2.0, 0.5)
    assert b == 4.0
    for _ in range(100):
        x, a = rng.standard_normal(6) * 5, rng.standard_normal(6)
        u = sample_unit_sphere(6, rng)
        a2 = a + 2.0 * u
        log_ratio = (np.linalg.norm(x - a2) - np.linalg.norm(x - a)) / b
        assert log_ratio <= 0.5 + 1e-12
        beyond = a - 3.0 * u  # on the ray from a2 through a: the bound is attained
        assert (np.linalg.norm(beyond - a2) - np.linalg.norm(beyond - a)) / b == pytest.approx(
            0.5, rel=1e-12)
    for sens, eps in ((1.0, 1.0), (0.3, 2.5), (7.0, 0.01)):
        assert l2_laplace_scale(sens, eps) == pytest.approx(sens / eps, rel=1e-15)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_dim(bad):
    with pytest.raises(ValueError, match="dim"):
        sample_l2_laplace(bad, 1.0, np.random.default_rng(0))


def test_bad_scale_and_rng():
    with pytest.raises(ValueError, match="scale"):
        sample_l2_laplace(2, 0.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="scale"):
        sample_l2_laplace(2, math.inf, np.random.default_rng(0))
    with pytest.raises(TypeError, match="Generator"):
        sample_l2_laplace(2, 1.0, 0)
    with pytest.raises(ValueError, match="epsilon"):
        l2_laplace_scale(1.0, 0.0)
