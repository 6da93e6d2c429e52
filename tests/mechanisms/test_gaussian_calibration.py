"""Gaussian calibrations of output perturbation: the paper's and the analytic Gaussian."""

import math

import dp_accounting
import numpy as np
import pytest

from noisygd.mechanisms.gaussian import (
    analytic_gaussian_sigma,
    gaussian_noise,
    paper_gaussian_sigma,
)


def _dp_accounting_eps(sigma_over_sens: float, delta: float) -> float:
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.GaussianDpEvent(sigma_over_sens))
    return acc.get_epsilon(delta)


def test_paper_sigma_closed_form():
    # Algorithm 1 line 8: exp(-eps^2 ||z||^2 / (4 log(2/delta) Delta^2)) = N(0, sigma^2),
    # sigma^2 = 2 log(2/delta) Delta^2 / eps^2.
    s = paper_gaussian_sigma(0.3, 0.5, 1e-3)
    assert s == pytest.approx(0.3 * math.sqrt(2 * math.log(2000.0)) / 0.5, rel=1e-14)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0])
def test_analytic_sigma_is_exact_against_dp_accounting(eps):
    delta = 1e-3
    sig = analytic_gaussian_sigma(1.0, eps, delta)
    # dp_accounting's PLD (pessimistic) at the calibrated sigma gives eps up to discretisation.
    assert _dp_accounting_eps(sig, delta) == pytest.approx(eps, abs=2e-3)
    # 1% less noise fails the target (the calibration is tight).
    assert _dp_accounting_eps(0.99 * sig, delta) > eps + 1e-3


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0])
def test_analytic_needs_less_noise_than_paper(eps):
    assert analytic_gaussian_sigma(2.0, eps, 1e-3) < paper_gaussian_sigma(2.0, eps, 1e-3)


def test_sigma_scales_linearly_with_sensitivity():
    assert analytic_gaussian_sigma(3.0, 1.0, 1e-5) == pytest.approx(
        3.0 * analytic_gaussian_sigma(1.0, 1.0, 1e-5), rel=1e-12)


def test_gaussian_noise_moments_and_validation():
    z = gaussian_noise(4, 2.0, np.random.default_rng(0), size=50_000)
    # std of the sample variance ~ 4*sqrt(2/200000) ~ 0.013; tolerance 0.1 (~8 sigma).
    assert np.var(z) == pytest.approx(4.0, abs=0.1)
    with pytest.raises(ValueError, match="sigma"):
        gaussian_noise(2, -1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="delta"):
        paper_gaussian_sigma(1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="sensitivity"):
        analytic_gaussian_sigma(0.0, 1.0, 1e-3)
