r"""Direct tests of public noise, planning and tuning helpers that no other test names.

Covered: :func:`noisygd.mechanisms.noise.is_secure`, :func:`~noisygd.mechanisms.noise.secure_event`,
:func:`~noisygd.mechanisms.noise.secure_noise_scale`, :func:`noisygd.planning.check_sharp_ratio`,
:func:`noisygd.planning_langevin.langevin_constants`,
:func:`noisygd.planning_langevin.secure_langevin_inflation` and
:func:`noisygd.tuning.secure_private_sum_event`.

The secure-mode quantities are checked against the grid rule written out here
(:math:`\gamma = 2^{\lfloor\log_2(\sigma 2^{-b}/\sqrt d)\rfloor}`, inflation
:math:`1 + \gamma\sqrt d/\Delta`) and against the zCDP of the discrete Gaussian
(Canonne, Kamath and Steinke 2020: :math:`\kappa^2\Delta^2/(2\sigma^2)`). None of them draws
noise, so OpenDP is not needed.
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from noisygd.accounting.events import DiscreteGaussianNoise, Gaussian, Neighbouring
from noisygd.accounting.zcdp import zcdp_rho
from noisygd.mechanisms.noise import (
    is_secure,
    secure_event,
    secure_noise_scale,
    sensitivity_inflation,
)
from noisygd.mechanisms.secure import DEFAULT_GRID_BITS, SecureRandom
from noisygd.objectives.base import ObjectiveConstants
from noisygd.planning import check_sharp_ratio
from noisygd.planning_langevin import LangevinPlan, langevin_constants, secure_langevin_inflation
from noisygd.solvers.base import PublicFacts
from noisygd.tuning import private_sum_event, secure_private_sum_event

ADD = Neighbouring.ADD_REMOVE
REP = Neighbouring.REPLACE_ONE


def _grid(sd: float, dim: int, bits: int) -> float:
    """gamma = 2^floor(log2(sd 2^-b / sqrt(d))), one power lower where gamma sqrt(d) could
    exceed sd 2^-b by rounding (the documented rule of SecureRandom.grid_exponent)."""
    target = sd * 2.0**-bits
    k = math.floor(math.log2(target / math.sqrt(dim)))
    if 2.0**k * math.sqrt(dim) * (1 + 2.0**-50) > target:
        k -= 1
    return 2.0**k


def _inflation(sd: float, dim: int, sens: float, bits: int = DEFAULT_GRID_BITS) -> float:
    """1 + gamma sqrt(d) / Delta, before the upward rounding."""
    return 1.0 + _grid(sd, dim, bits) * math.sqrt(dim) / sens


# ======================================================================= is_secure
class _MySecure(SecureRandom):
    pass


@pytest.mark.parametrize(("rng", "expected"), [
    (SecureRandom(), True),
    (SecureRandom(grid_bits=0), True),
    (_MySecure(), True),
    (np.random.default_rng(0), False),
    (np.random.RandomState(0), False),
    (random.SystemRandom(), False),
    (None, False),
    (SecureRandom, False),  # the class itself is not a random source
], ids=["secure", "secure-b0", "subclass", "generator", "randomstate", "systemrandom", "none",
        "class"])
def test_is_secure_recognises_exactly_secure_random_instances(rng, expected):
    assert is_secure(rng) is expected


# ==================================================================== secure_event
def test_secure_event_is_the_event_itself_for_numpy():
    """A NumPy generator draws continuous noise: the event is returned unchanged (the same
    object), whatever the inflation."""
    event = Gaussian(2.0, 1.0)
    rng = np.random.default_rng(0)
    assert secure_event(event, rng, 1.5) is event
    assert secure_event(event, rng, 1.0) is event


def test_secure_event_wraps_in_discrete_gaussian_noise_for_secure_random():
    """Secure: DiscreteGaussianNoise(event, kappa), whose zCDP is kappa^2 times the event's."""
    event = Gaussian(2.0, 1.5, REP)
    out = secure_event(event, SecureRandom(), 1.25)
    assert isinstance(out, DiscreteGaussianNoise)
    assert out.event is event
    assert out.sensitivity_inflation == 1.25
    assert out.neighbouring is REP
    assert zcdp_rho(out) == pytest.approx(1.25**2 * (1.5 / 2.0) ** 2 / 2, rel=1e-14)


@pytest.mark.parametrize(("kappa", "exc", "match"), [
    (0.99, ValueError, "sensitivity_inflation must be >= 1"),
    (0.0, ValueError, "sensitivity_inflation must be positive"),
    (math.nan, ValueError, "sensitivity_inflation must be positive"),
    ("1.1", TypeError, "sensitivity_inflation must be a real number"),
])
def test_secure_event_refuses_an_invalid_inflation(kappa, exc, match):
    with pytest.raises(exc, match=match):
        secure_event(Gaussian(1.0), SecureRandom(), kappa)


# ============================================================= secure_noise_scale
def test_secure_noise_scale_numpy_keeps_a_sufficient_sigma():
    """kappa = 1; sigma is kept when Delta/sigma <= mu, else raised to Delta/mu (1 + 1e-12)."""
    rng = np.random.default_rng(0)
    assert secure_noise_scale(rng, 5.0, 3, 2.0, 0.5) == (5.0, 1.0)  # 2/5 <= 0.5
    assert secure_noise_scale(rng, 4.0, 3, 2.0, 0.5) == (4.0, 1.0)  # the boundary
    sigma, kappa = secure_noise_scale(rng, 1.0, 3, 2.0, 0.5)
    assert kappa == 1.0
    assert 2.0 / sigma <= 0.5
    assert sigma == pytest.approx(4.0, rel=1e-11)


@pytest.mark.parametrize(("sigma0", "dim", "sens", "mu", "bits"), [
    (1.0, 1, 1.0, 0.5, 30),
    (0.3, 10, 2.0, 1.0, 30),
    (0.1, 1000, 0.7, 0.2, 4),
    (0.1, 5, 1.0, 0.9, 0),
    (0.1, 1, 1.0, 2.0, 0),
])
def test_secure_noise_scale_secure_meets_mu_with_its_own_inflation(sigma0, dim, sens, mu, bits):
    """The returned (sigma, kappa): kappa is the inflation of sigma's grid, kappa Delta/sigma
    <= mu, sigma is barely above kappa Delta/mu, and the discrete event is mu^2/2-zCDP."""
    rng = SecureRandom(grid_bits=bits)
    sigma, kappa = secure_noise_scale(rng, sigma0, dim, sens, mu)
    assert kappa == sensitivity_inflation(rng, sigma, dim, sens)
    assert kappa >= _inflation(sigma, dim, sens, bits)
    assert kappa <= _inflation(sigma, dim, sens, bits) * (1 + 1e-14)
    assert kappa * sens / sigma <= mu
    assert sigma <= kappa * sens / mu * (1 + 1e-9)
    event = secure_event(Gaussian(sigma, sens), rng, kappa)
    assert zcdp_rho(event) <= mu * mu / 2 * (1 + 1e-12)


def test_secure_noise_scale_secure_keeps_a_sigma_that_already_suffices():
    rng = SecureRandom()
    sigma0 = 10.0
    sigma, kappa = secure_noise_scale(rng, sigma0, 4, 1.0, 0.5)
    assert sigma == sigma0
    assert kappa == sensitivity_inflation(rng, sigma0, 4, 1.0)
    assert kappa > 1.0


def test_secure_noise_scale_fewer_grid_bits_need_more_noise():
    """A coarser grid inflates the sensitivity more, so the scale that meets mu is larger."""
    sigmas = [secure_noise_scale(SecureRandom(grid_bits=b), 0.1, 100, 1.0, 2.0)[0]
              for b in (0, 2, 8, 30)]
    assert all(a >= b for a, b in itertools.pairwise(sigmas))
    assert sigmas[0] > sigmas[-1]
    assert sigmas[-1] == pytest.approx(0.5, rel=1e-8)  # kappa ~ 1 + 2^-30 sigma/Delta


def test_secure_noise_scale_infeasible_budget_raises():
    """With grid_bits = 0 the rounding adds gamma sqrt(d) >= sigma/2, so (Delta + gamma
    sqrt(d))/sigma > 1/2: no scale meets mu = 0.5, and the iteration says so."""
    with pytest.raises(RuntimeError, match="no secure noise scale meets"):
        secure_noise_scale(SecureRandom(grid_bits=0), 1.0, 5, 1.0, 0.5)


def test_secure_noise_scale_refuses_when_no_round_is_allowed():
    with pytest.raises(RuntimeError, match="no secure noise scale meets"):
        secure_noise_scale(SecureRandom(), 0.1, 3, 1.0, 0.5, max_rounds=0)
    with pytest.raises(RuntimeError, match="no secure noise scale meets"):
        secure_noise_scale(np.random.default_rng(0), 0.1, 3, 1.0, 0.5, max_rounds=0)


@pytest.mark.parametrize("rng", [SecureRandom(), np.random.default_rng(0)],
                         ids=["secure", "numpy"])
def test_secure_noise_scale_refuses_invalid_arguments(rng):
    """Both generators check their arguments (the NumPy path used to return a sensitivity-0
    release's sigma unchecked)."""
    with pytest.raises(ValueError, match="sensitivity must be positive"):
        secure_noise_scale(rng, 1.0, 3, 0.0, 0.5)
    with pytest.raises(ValueError, match="dim must be an integer >= 1"):
        secure_noise_scale(rng, 1.0, 0, 1.0, 0.5)
    with pytest.raises(TypeError, match="dim must be an integer"):
        secure_noise_scale(rng, 1.0, 2.5, 1.0, 0.5)
    with pytest.raises(ValueError, match="sigma must be positive"):
        secure_noise_scale(rng, -1.0, 3, 1.0, 0.5)
    with pytest.raises(ValueError, match="mu must be positive"):
        secure_noise_scale(rng, 1.0, 3, 1.0, float("nan"))


# ============================================================== check_sharp_ratio
@pytest.mark.parametrize("value", [1e-12, 0.25, 0.5, 1.0, 1, np.float64(0.75), np.float32(0.5)])
def test_check_sharp_ratio_returns_the_value_as_a_float(value):
    out = check_sharp_ratio(value)
    assert type(out) is float
    assert out == float(value)


@pytest.mark.parametrize("value", [0.0, -0.5, 1.0 + 1e-12, 2.0, math.inf, -math.inf, math.nan])
def test_check_sharp_ratio_refuses_values_outside_the_half_open_unit_interval(value):
    with pytest.raises(ValueError, match=r"sharp must be in \(0, 1\]"):
        check_sharp_ratio(value)


@pytest.mark.parametrize("value", ["0.5", None, True, np.bool_(True), 0.5j, [0.5]])
def test_check_sharp_ratio_refuses_non_numbers(value):
    with pytest.raises(TypeError, match="sharp must be a real number"):
        check_sharp_ratio(value)


def test_check_sharp_ratio_names_the_argument_in_its_messages():
    with pytest.raises(ValueError, match=r"^clip_ratio must be in \(0, 1\], got 1\.5$"):
        check_sharp_ratio(1.5, "clip_ratio")
    with pytest.raises(TypeError, match=r"^clip_ratio must be a real number"):
        check_sharp_ratio("x", name="clip_ratio")


# ============================================================= langevin_constants
def _facts(*, lipschitz=1.5, smoothness=0.25, strong=0.1, convex=True, l2=0.1,
           total=None, relation=REP) -> PublicFacts:
    c = ObjectiveConstants(lipschitz=lipschitz, smoothness=smoothness, strong_convexity=strong,
                           convex=convex, row_norm_bound=1.0)
    return PublicFacts(n_samples=100, n_params=3, constants=c, row_norm_bound=1.0,
                       relation=relation, l2=l2, total_gradient_sensitivity=total)


def test_langevin_constants_of_a_strongly_convex_smooth_lipschitz_loss():
    """lambda = strong convexity, beta = smoothness + l2, S_g = 2L (replace-one)."""
    lam, beta, sens = langevin_constants(_facts())
    assert lam == 0.1
    assert beta == pytest.approx(0.35, rel=1e-15)
    assert sens == 3.0


def test_langevin_constants_prefer_the_stated_total_gradient_sensitivity():
    assert langevin_constants(_facts(total=2.5))[2] == 2.5
    assert langevin_constants(_facts(lipschitz=None, total=0.75))[2] == 0.75


def test_langevin_constants_sensitivity_is_replace_one_whatever_the_facts_relation():
    """Algorithm 1's neighbours are replace-one: 2L even when the facts say add/remove."""
    assert langevin_constants(_facts(relation=ADD))[2] == 3.0


def test_langevin_constants_without_lipschitz_or_smoothness():
    """No Lipschitz constant and no stated S_g: S_g = inf; no smoothness: beta = None."""
    lam, beta, sens = langevin_constants(_facts(lipschitz=None, smoothness=None))
    assert lam == 0.1
    assert beta is None
    assert sens == math.inf


def test_langevin_constants_nonconvex_loss_has_zero_strong_convexity():
    lam, beta, _ = langevin_constants(_facts(convex=False, strong=0.3, l2=0.0))
    assert lam == 0.0
    assert beta == 0.25


# ======================================================== secure_langevin_inflation
def _plan(sigma=0.05, eta=0.02, n=5000, d=7, sens=4.0) -> LangevinPlan:
    return LangevinPlan(sigma=sigma, step_size=eta, steps=100, rho=0.5, strong_convexity=1.0,
                        smoothness=4.0, sensitivity=sens, n_samples=n, n_params=d,
                        step_rule="theorem4", k_star=100.0, excess_risk_bound=None)


@pytest.mark.parametrize("bits", [0, 10, 30, 52])
def test_secure_langevin_inflation_is_the_grid_rule_of_the_step_noise(bits):
    """kappa = 1 + gamma sqrt(d)/(eta S_g/n), gamma the grid of sqrt(2 eta) sigma in d coords,
    rounded up (and equal to sensitivity_inflation on those values)."""
    plan = _plan()
    sd, sens = math.sqrt(2 * plan.step_size) * plan.sigma, plan.step_size * 4.0 / 5000
    kappa = secure_langevin_inflation(plan, grid_bits=bits)
    expected = _inflation(sd, 7, sens, bits)
    assert expected <= kappa <= expected * (1 + 1e-14)
    assert kappa == sensitivity_inflation(SecureRandom(grid_bits=bits), sd, 7, sens)
    assert kappa - 1 <= 2.0**-bits * sd / sens * (1 + 1e-12)  # gamma sqrt(d) <= 2^-b sd


def test_secure_langevin_inflation_default_grid_bits_and_monotonicity():
    plan = _plan()
    assert secure_langevin_inflation(plan) == secure_langevin_inflation(
        plan, grid_bits=DEFAULT_GRID_BITS)
    kappas = [secure_langevin_inflation(plan, grid_bits=b) for b in (0, 5, 20, 40)]
    assert all(a > b for a, b in itertools.pairwise(kappas))
    assert all(k > 1.0 for k in kappas)
    # more noise per step (larger sigma) means a coarser grid: a larger inflation
    assert secure_langevin_inflation(_plan(sigma=5.0), grid_bits=8) > secure_langevin_inflation(
        _plan(sigma=0.05), grid_bits=8)


@pytest.mark.parametrize(("bits", "exc", "match"), [
    (61, ValueError, r"grid_bits must be in \[0, 60\]"),
    (-1, ValueError, r"grid_bits must be in \[0, 60\]"),
    (2.0, TypeError, "grid_bits must be an integer"),
    (True, TypeError, "grid_bits must be an integer"),
])
def test_secure_langevin_inflation_refuses_bad_grid_bits(bits, exc, match):
    with pytest.raises(exc, match=match):
        secure_langevin_inflation(_plan(), grid_bits=bits)


# ======================================================== secure_private_sum_event
@pytest.mark.parametrize(("mu", "bound"), [(1.0, 1.0), (0.3, 5.0), (2.0, 1e-3), (0.05, 1e4)])
@pytest.mark.parametrize("relation", [ADD, REP])
def test_secure_private_sum_event_is_the_discrete_form_of_private_sum_event(mu, bound, relation):
    """DiscreteGaussianNoise(private_sum_event(mu), kappa), kappa = 1 + gamma/b for the grid of
    noise b/mu in one coordinate; its zCDP is kappa^2 mu^2/2, barely above mu^2/2."""
    event = secure_private_sum_event(mu, bound, relation)
    assert isinstance(event, DiscreteGaussianNoise)
    assert event.event == private_sum_event(mu, relation)
    assert event.event == Gaussian(1.0 / mu, 1.0, relation)
    assert event.neighbouring is relation
    kappa = event.sensitivity_inflation
    expected = _inflation(bound / mu, 1, bound)
    assert expected <= kappa <= expected * (1 + 1e-14)
    assert 2.0**-31 / mu * (1 - 1e-9) <= kappa - 1.0 <= 2.0**-30 / mu * (1 + 1e-9)
    assert zcdp_rho(event) == pytest.approx(kappa**2 * mu**2 / 2, rel=1e-14)


def test_secure_private_sum_event_accepts_the_relation_by_name():
    assert secure_private_sum_event(1.0, 1.0, "replace_one").neighbouring is REP
    assert secure_private_sum_event(1.0, 1.0).neighbouring is ADD


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    ({"mu": 1.0, "bound": 0.0}, ValueError, "bound must be positive"),
    ({"mu": 1.0, "bound": math.inf}, ValueError, "bound must be positive"),
    ({"mu": -1.0, "bound": 1.0}, ValueError, "mu must be positive"),
    ({"mu": math.nan, "bound": 1.0}, ValueError, "mu must be positive"),
    ({"mu": "1", "bound": 1.0}, TypeError, "mu must be a real number"),
    ({"mu": 1.0, "bound": 1.0, "relation": "neighbours"}, ValueError,
     "'neighbours' is not a valid Neighbouring"),
])
def test_secure_private_sum_event_refusals(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        secure_private_sum_event(**kwargs)
