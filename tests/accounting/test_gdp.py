"""Exact Gaussian-DP accountant (Dong, Roth and Su 2022, Cor. 2.13 and 3.3)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import dp_accounting
import numpy as np
import pytest
from scipy.stats import norm

from noisygd.accounting import (
    Composed,
    DpEvent,
    EpsilonDelta,
    Gaussian,
    GaussianAccountant,
    Neighbouring,
    NonPrivate,
    PoissonSampled,
    SelfComposed,
    UnsupportedEventError,
    gaussian_mu,
)
from noisygd.accounting.gdp import DELTA_SAFETY, gdp_delta, gdp_epsilon, gdp_log_delta, gdp_mu

try:  # mpmath (a dependency of sympy/torch) gives a 50-digit reference; optional.
    import mpmath
except ImportError:  # pragma: no cover
    mpmath = None

needs_mpmath = pytest.mark.skipif(mpmath is None, reason="mpmath is not installed")

REP = Neighbouring.REPLACE_ONE
ACC = GaussianAccountant()


@dataclass(frozen=True)
class Unknown(DpEvent):
    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring.ADD_REMOVE


def _mp_delta(mu: float, eps: float):
    """Cor. 2.13 in 50-digit arithmetic (an independent evaluation)."""
    with mpmath.workdps(50):
        mu_, eps_ = mpmath.mpf(mu), mpmath.mpf(eps)
        return mpmath.ncdf(-eps_ / mu_ + mu_ / 2) - mpmath.exp(eps_) * mpmath.ncdf(
            -eps_ / mu_ - mu_ / 2
        )


# ----------------------------------------------------------------------- mu hook
def test_mu_of_compositions():
    assert gaussian_mu(Gaussian(2.0)) == 0.5
    assert gaussian_mu(Gaussian(2.0, sensitivity=3.0)) == 1.5
    # Seed 000 Section 12.1.2: T Gaussian steps of sensitivity L and noise sigma.
    T, L, sigma = 400, 0.5, 3.0
    assert gaussian_mu(SelfComposed(Gaussian(sigma / L), T)) == pytest.approx(
        math.sqrt(T) * L / sigma, rel=1e-15
    )
    c = Composed((Gaussian(1.0), SelfComposed(Gaussian(2.0), 4), Gaussian(4.0, 2.0)))
    assert gaussian_mu(c) == pytest.approx(math.sqrt(1 + 4 * 0.25 + 0.25), rel=1e-15)
    assert gaussian_mu(SelfComposed(Gaussian(1.0), 0)) == 0.0
    # Replace-one with sensitivity 2 (one clipped example replaced): mu = 2/z.
    assert gaussian_mu(Gaussian(4.0, 2.0, REP)) == 0.5


@pytest.mark.parametrize(
    "event",
    [
        PoissonSampled(0.01, Gaussian(1.0)),
        NonPrivate(),
        EpsilonDelta(1.0),
        Unknown(),
        Composed((Gaussian(1.0), EpsilonDelta(1.0))),
        SelfComposed(PoissonSampled(0.5, Gaussian(1.0)), 3),
    ],
)
def test_refuses_everything_but_pure_gaussian_compositions(event):
    with pytest.raises(UnsupportedEventError):
        ACC.epsilon(event, 1e-5)
    with pytest.raises(UnsupportedEventError):
        ACC.delta(event, 1.0)
    assert not ACC.supports(event)


# ----------------------------------------------------------------- closed forms
@pytest.mark.parametrize("mu, eps", [(0.5, 0.3), (1.0, 1.0), (2.0, 3.0), (5.0, 10.0)])
def test_delta_matches_textbook_formula(mu, eps):
    # Direct evaluation with scipy.stats.norm is accurate at these moderate values.
    expected = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    assert math.exp(gdp_log_delta(mu, eps)) == pytest.approx(expected, rel=1e-12)


MUS = np.logspace(-3, 3, 13)
DELTAS = [1e-2, 1e-5, 1e-8, 1e-12]


@pytest.mark.parametrize("mu", MUS)
@pytest.mark.parametrize("delta", DELTAS)
def test_epsilon_matches_dp_accounting_analytic_gaussian(mu, delta):
    # dp_accounting.get_epsilon_gaussian: Balle-Wang (2018) analytic Gaussian, sigma = 1/mu.
    ours = ACC.epsilon(SelfComposed(Gaussian(1.0 / mu), 1), delta)
    peer = dp_accounting.get_epsilon_gaussian(1.0 / mu, delta)
    assert ours == pytest.approx(peer, rel=1e-6, abs=1e-12)


@needs_mpmath
@pytest.mark.parametrize("mu", MUS)
@pytest.mark.parametrize("delta", DELTAS)
def test_epsilon_is_sound_and_tight_in_high_precision(mu, delta):
    eps = gdp_epsilon(mu, delta)
    if eps == 0.0:
        assert _mp_delta(mu, 0.0) <= delta
        return
    true_delta = _mp_delta(mu, eps)
    assert true_delta <= delta  # never below the exact root
    assert true_delta >= delta * (1 - 10 * DELTA_SAFETY)  # and only a hair below it
    # The exact delta at a 0.1% smaller epsilon exceeds the target.
    assert _mp_delta(mu, eps * (1 - 1e-3)) > delta


@pytest.mark.parametrize("mu", [1e-3, 0.1, 1.0, 30.0, 1e3])
@pytest.mark.parametrize("delta", [1e-5, 1e-12])
def test_delta_and_mu_round_trips(mu, delta):
    event = SelfComposed(Gaussian(1.0 / mu), 1)
    eps = ACC.epsilon(event, delta)
    back = ACC.delta(event, eps)
    assert delta * (1 - 1e-6) <= back <= delta * (1 + 1e-6)
    if mpmath is not None:
        assert ACC.delta(event, eps) >= float(_mp_delta(mu, eps))  # delta is an upper bound
    assert ACC.mu_for(eps, delta) == pytest.approx(mu, rel=1e-6)
    assert gdp_delta(gdp_mu(eps, delta), eps) <= delta


def test_composition_equals_single_gaussian_with_same_mu():
    c = Composed((Gaussian(1.0), SelfComposed(Gaussian(2.0), 12)))  # mu^2 = 1 + 3 = 4
    assert ACC.epsilon(c, 1e-6) == pytest.approx(ACC.epsilon(Gaussian(0.5), 1e-6), rel=1e-12)


def test_replace_one_uses_stated_sensitivity():
    a = ACC.epsilon(SelfComposed(Gaussian(4.0, 2.0, REP), 10), 1e-5)
    b = ACC.epsilon(SelfComposed(Gaussian(2.0), 10), 1e-5)
    assert a == b


def test_zero_mu_gives_zero_epsilon_and_delta():
    assert ACC.epsilon(SelfComposed(Gaussian(1.0), 0), 1e-9) == 0.0
    assert ACC.epsilon(Gaussian(math.inf), 1e-9) == 0.0
    assert ACC.delta(Gaussian(math.inf), 0.5) == 0.0


def test_small_mu_large_delta_gives_zero_epsilon():
    # delta(0) = Phi(mu/2) - Phi(-mu/2) ~ 0.0004 < 0.01 for mu = 1e-3.
    assert ACC.epsilon(Gaussian(1e3), 1e-2) == 0.0
    assert ACC.epsilon(Gaussian(1e3), 1e-4) > 0.0


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-5, math.nan])
def test_invalid_delta_raises(delta):
    with pytest.raises(ValueError):
        ACC.epsilon(Gaussian(1.0), delta)


@pytest.mark.parametrize("eps", [0.0, -1.0, math.inf])
def test_invalid_epsilon_raises(eps):
    with pytest.raises(ValueError):
        ACC.delta(Gaussian(1.0), eps)
    with pytest.raises(ValueError):
        ACC.mu_for(eps, 1e-5)


@needs_mpmath
@pytest.mark.parametrize("mu", np.logspace(-3, 3, 7))
def test_log_delta_relative_error_is_far_below_the_safety_margin(mu):
    # DELTA_SAFETY (1e-7) must cover the float error of gdp_log_delta.
    for delta in [1e-2, 1e-6, 1e-12]:
        eps0 = dp_accounting.get_epsilon_gaussian(1.0 / mu, delta)
        for eps in [eps0 * 0.5, eps0, eps0 * 1.5]:
            if eps <= 0:
                continue
            exact = _mp_delta(mu, eps)
            if exact < 1e-300:
                continue
            ours = mpmath.mpf(gdp_log_delta(mu, eps))
            assert abs(mpmath.exp(ours) / exact - 1) < DELTA_SAFETY / 10


@needs_mpmath
@pytest.mark.parametrize("mu", [1e-9, 1e-6, 1e-4])
@pytest.mark.parametrize("delta", [1e-13, 1e-30])
def test_epsilon_stays_sound_far_below_the_supported_mu_range(mu, delta):
    # Below mu = 1e-3 the result may be loose but must still be an upper bound.
    eps = gdp_epsilon(mu, delta)
    assert eps > 0.0
    assert _mp_delta(mu, eps) <= delta


def test_subnormal_delta_has_a_finite_epsilon():
    # issue 12: --delta 5e-324 ended in scipy's "Failed to converge" (1/delta overflowed the
    # bracket to inf). The root is finite and meets the target.
    from noisygd.accounting.gdp import gdp_epsilon, gdp_log_delta

    delta = 5e-324
    eps = gdp_epsilon(math.sqrt(10.0), delta)
    assert math.isfinite(eps) and eps > 0
    assert gdp_log_delta(math.sqrt(10.0), eps) <= math.log(delta)
    assert gdp_log_delta(math.sqrt(10.0), eps * (1 - 1e-6)) > math.log(delta)


# ------------------------------------------------ huge mu: the privacy-loss tail bound (R8)

@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-12, 1e-300])
@pytest.mark.parametrize("mu", [1e2, 1e3, 1e4, 1e5, 1e6])
def test_tail_bound_is_above_the_exact_epsilon_and_close(mu, delta):
    """``gdp_epsilon_tail`` (delta <= Phi(-eps/mu + mu/2)) bounds the exact root from above,
    by about 1 in absolute terms (the dropped term e^eps Phi(b) is ~|a|/mu of Phi(a))."""
    from noisygd.accounting.gdp import gdp_epsilon_tail

    exact, tail = gdp_epsilon(mu, delta), gdp_epsilon_tail(mu, delta)
    assert tail >= exact
    assert tail - exact < 2.0


def test_tail_bound_closed_form_and_its_delta():
    """At the tail epsilon, Phi(a) <= delta (the bound's defining inequality), and the
    exact delta there is below delta too."""
    from noisygd.accounting.gdp import gdp_epsilon_tail

    for mu in (3.0, 1e3, 1e6):
        eps = gdp_epsilon_tail(mu, 1e-5)
        assert norm.cdf(-eps / mu + mu / 2) <= 1e-5
        assert gdp_delta(mu, eps) <= 1e-5
    assert gdp_epsilon_tail(0.0, 1e-5) == 0.0
    assert gdp_epsilon_tail(math.inf, 1e-5) == math.inf
    assert gdp_epsilon_tail(1e200, 1e-5) == math.inf


@pytest.mark.parametrize("mu", [1e6 * (1 + 1e-9), 1e7, 1e10, 1e150, 1e300, math.inf])
def test_huge_mu_answers_with_the_tail_bound_not_exact(mu):
    """Above MU_EXACT_MAX the root finder lost accuracy (RuntimeError / OverflowError for
    mu = 1e10): the accountant answers with the tail bound, says it is not exact, and its
    delta is the tail probability (requests-fuzz.md R8)."""
    from noisygd.accounting.gdp import MU_EXACT_MAX, gdp_epsilon_tail

    eps = gdp_epsilon(mu, 1e-5)
    assert eps == gdp_epsilon_tail(mu, 1e-5)
    assert eps > mu * mu / 2 or math.isinf(eps)
    assert mu > MU_EXACT_MAX
    # the accountant on an event of that mu: the same bound, not claimed exact, and its
    # delta at that epsilon is the tail probability Phi(-eps/mu + mu/2) (scipy, written out)
    event = Gaussian(1.0 / mu) if math.isfinite(mu) else Gaussian(5e-324)
    m = ACC.mu(event)
    assert m > MU_EXACT_MAX and not ACC.is_exact(event)
    e = ACC.epsilon(event, 1e-5)
    assert e == gdp_epsilon_tail(m, 1e-5)
    if math.isfinite(e):
        tail = float(norm.cdf(-e / m + m / 2))
        assert ACC.delta(event, e) == pytest.approx(tail, rel=1e-6, abs=1e-300)
        assert ACC.delta(event, e) <= 1e-5 * (1 + 1e-6)
    else:  # the bound overflowed (mu above ~1.3e154, or inf): nothing below 1 is certified
        assert ACC.delta(event, 1.0) == 1.0


def test_accountant_is_exact_only_up_to_mu_exact_max():
    from noisygd.accounting.gdp import MU_EXACT_MAX

    small = SelfComposed(Gaussian(1.0), 100)
    huge = SelfComposed(Gaussian(1.0), 10**20)
    assert ACC.is_exact(small) and not ACC.is_exact(huge)
    assert ACC.mu(huge) > MU_EXACT_MAX
    eps = ACC.epsilon(huge, 1e-5)
    assert math.isfinite(eps) and eps >= ACC.mu(huge) ** 2 / 2
    assert 0.0 < ACC.delta(huge, eps) <= 1e-5 * (1 + 1e-6)
    assert ACC.delta(huge, 1.0) == 1.0


def test_a_tree_with_random_leaves_is_an_upper_bound_not_exact():
    """Rows assigned to leaves at random (add/remove): the release is a mixture over the row's
    leaf of mu-GDP releases, so mu bounds it and is not claimed exact, wherever the tree sits
    in a composition; positional leaves (replace-one) stay exact."""
    from noisygd.accounting import best
    from noisygd.accounting.events import Composed, Neighbouring, TreeAggregation

    add, rep = Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE
    random_tree = TreeAggregation(5.0, 64, relation=add, leaves="random")
    positional = TreeAggregation(5.0, 64, relation=rep)
    assert ACC.mu(random_tree) == pytest.approx(math.sqrt(math.floor(math.log2(64)) + 1) / 5.0)
    assert not ACC.is_exact(random_tree)
    assert not ACC.is_exact(Composed((Gaussian(3.0, 1.0, add), random_tree)))
    assert ACC.is_exact(positional)
    assert not best(random_tree, 1e-5).exact and best(positional, 1e-5).exact
