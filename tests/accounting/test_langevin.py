"""Last-iterate (seed 004) and composition accountants for projected noisy GD."""

from __future__ import annotations

import dataclasses
import math

import dp_accounting as dpa
import numpy as np
import pytest
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

from noisygd.accounting import best, get_accountant
from noisygd.accounting.base import UnsupportedEventError
from noisygd.accounting.events import Gaussian, Neighbouring, SelfComposed
from noisygd.accounting.gdp import gaussian_mu
from noisygd.accounting.langevin import (
    LangevinCompositionAccountant,
    LastIterateLangevin,
    LastIterateLangevinAccountant,
    composition_mu,
    last_iterate_rho,
    verified_lsi_constant,
)

# Figure 1 of seed 004: beta = 4, S_g = 4, n = 5000, eta = 0.02, sigma = 0.02.
FIG = {"smoothness": 4.0, "sensitivity": 4.0, "n_samples": 5000, "step_size": 0.02,
       "sigma": 0.02}
LAST = LastIterateLangevinAccountant()
COMP = LangevinCompositionAccountant()


def cor1_event(lam: float = 1.0, K: int = 100, **kw) -> LastIterateLangevin:
    args = dict(strong_convexity=lam, steps=K, theorem="corollary1", constraint="none",
                start="projected_gaussian", start_variance=2 * FIG["sigma"] ** 2 / lam, **FIG)
    args.update(kw)
    return LastIterateLangevin(**args)


def cor2_event(K: int = 100, eta: float = 0.02, **kw) -> LastIterateLangevin:
    args = dict(strong_convexity=1.0, smoothness=1.0, step_size=eta, sigma=0.02, steps=K,
                n_samples=5000, sensitivity=4.0, theorem="corollary2", constraint="none",
                start="fixed", quadratic_constant_hessian=True)
    args.update(kw)
    return LastIterateLangevin(**args)


# ---------------------------------------------------------------- closed forms
@pytest.mark.parametrize("lam", [1.0, 2.0, 4.0])
@pytest.mark.parametrize("K", [0, 1, 37, 500, 10_000])
def test_corollary1_closed_form(lam, K):
    alphas = np.array([1.5, 10.0, 20.0, 30.0])
    # Corollary 1: alpha S^2 / (lam sigma^2 n^2) (1 - exp(-lam eta K / 2)), written out here.
    expected = alphas * 16.0 / (lam * 0.0004 * 25e6) * (1 - math.exp(-lam * 0.02 * K / 2))
    np.testing.assert_allclose(LAST.rdp(cor1_event(lam, K), alphas), expected, rtol=1e-12,
                               atol=0)


def test_theorem2_with_lemma5_constant_is_corollary1():
    ev = cor1_event(2.0, 123)
    c = 2.0 / (2 * 0.02**2)  # Lemma 5: c = lambda / (2 sigma^2)
    assert verified_lsi_constant(ev) == pytest.approx(c, rel=1e-12)
    ev2 = dataclasses.replace(ev, theorem="theorem2", lsi_constant=c)
    assert last_iterate_rho(ev2) == pytest.approx(last_iterate_rho(ev), rel=1e-12)
    # A smaller (weaker) LSI constant is also implied, and gives a larger bound (eq. 16).
    ev3 = dataclasses.replace(ev, theorem="theorem2", lsi_constant=c / 3)
    assert last_iterate_rho(ev3) > last_iterate_rho(ev)


@pytest.mark.parametrize("eta", [0.02, 0.3, 0.9])
@pytest.mark.parametrize("K", [1, 50, 300])
def test_corollary2_closed_form(eta, K):
    alpha = 20.0
    # eq. (18): alpha S^2 / ((2 - eta) sigma^2 n^2) (1 - exp(-(2 - eta) eta K / 2))
    expected = alpha * 16.0 / ((2 - eta) * 0.0004 * 25e6) * (1 - math.exp(-(2 - eta) * eta * K / 2))
    assert LAST.rdp(cor2_event(K, eta), [alpha])[0] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("K", [0, 1, 250, 5000])
def test_composition_baseline_closed_form(K):
    ev = cor1_event(1.0, K)
    alphas = np.array([10.0, 20.0, 30.0])
    expected = alphas * 16.0 / (4 * 25e6 * 0.0004) * 0.02 * K  # Figure 1 caption
    np.testing.assert_allclose(COMP.rdp(ev, alphas), expected, rtol=1e-12, atol=0)
    # The same run as K Gaussian mechanisms: mu adds in quadrature.
    assert gaussian_mu(ev.as_composition()) == pytest.approx(composition_mu(ev), rel=1e-12)
    # RDP of a Gaussian with that mu is alpha mu^2 / 2 per unit: matches the baseline.
    np.testing.assert_allclose(alphas * composition_mu(ev) ** 2 / 2, expected, rtol=1e-12)


def test_composition_epsilon_matches_dp_accounting_pld():
    ev = cor1_event(1.0, 400)
    # Noise std / sensitivity of one step: sqrt(2 eta) sigma / (eta S_g / n).
    z = math.sqrt(2 * 0.02) * 0.02 / (0.02 * 4.0 / 5000)
    acc = PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(z), 400))
    for delta in (1e-5, 1e-8):
        acc_eps = acc.get_epsilon(delta)
        assert COMP.epsilon(ev, delta) == pytest.approx(acc_eps, rel=2e-3)


def test_last_iterate_epsilon_against_dp_accounting_rdp():
    # The bound is rho * alpha for all alpha, the RDP curve of a Gaussian with
    # noise multiplier 1/sqrt(2 rho); dp_accounting converts it on its order grid,
    # we optimise over alpha continuously: never worse, and close.
    for K in (10, 200, 5000):
        ev = cor1_event(1.0, K)
        rho = last_iterate_rho(ev)
        r = RdpAccountant()
        r.compose(dpa.GaussianDpEvent(1 / math.sqrt(2 * rho)))
        for delta in (1e-5, 1e-9):
            ours = LAST.epsilon(ev, delta)
            theirs = r.get_epsilon(delta)
            assert ours <= theirs * (1 + 1e-9)
            assert ours >= 0.9 * theirs


def test_delta_inverts_epsilon():
    ev = cor1_event(1.0, 300)
    for acc in (LAST, COMP):
        eps = acc.epsilon(ev, 1e-6)
        assert acc.delta(ev, eps) == pytest.approx(1e-6, rel=1e-4)


def test_bound_saturates_and_composition_grows_linearly():
    ks = [10, 100, 1000, 10_000, 100_000]
    ours = [LAST.epsilon(cor1_event(1.0, k), 1e-5) for k in ks]
    comp = [COMP.epsilon(cor1_event(1.0, k), 1e-5) for k in ks]
    assert ours[0] < ours[1] < ours[2] < ours[3] <= ours[4]
    assert ours[-1] == pytest.approx(ours[-2], rel=1e-6)  # converged (exp(-50) factor)
    assert comp[-1] > 20 * ours[-1]  # composition keeps growing (as sqrt(K) in GDP)
    # At K = 1 the hidden-state bound is 2x the composition RDP (1 - e^{-x} ~ x).
    ev1 = cor1_event(1.0, 1)
    assert LAST.rdp(ev1, [10])[0] == pytest.approx(2 * COMP.rdp(ev1, [10])[0], rel=1e-2)


def test_zero_steps_is_free():
    ev = cor1_event(1.0, 0)
    assert LAST.epsilon(ev, 1e-5) == 0.0
    assert COMP.epsilon(ev, 1e-5) == 0.0


# ---------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    "change, reason",
    [
        ({"hidden_trajectory": False}, "intermediate iterate"),
        ({"clipped_gradients": True}, "clipped"),
        ({"strong_convexity": 0.0, "start_variance": 1.0}, "strongly convex"),
        ({"smoothness": None}, "smoothness"),
        ({"smoothness": 50.0}, "step size"),
        ({"start_variance": 1e-3}, "LSI"),
        ({"start": "fixed", "start_variance": None}, "LSI"),
        ({"sensitivity": math.inf}, "unbounded"),
    ],
)
def test_last_iterate_refuses_violated_assumptions(change, reason):
    ev = dataclasses.replace(cor1_event(1.0, 100), **change)
    with pytest.raises(UnsupportedEventError, match=reason):
        LAST.epsilon(ev, 1e-5)
    assert not LAST.supports(ev)


def test_composition_needs_only_finite_sensitivity():
    ev = dataclasses.replace(cor1_event(1.0, 100), hidden_trajectory=False,
                             clipped_gradients=True, smoothness=None)
    assert COMP.epsilon(ev, 1e-5) > 0
    with pytest.raises(UnsupportedEventError, match="unbounded"):
        COMP.epsilon(dataclasses.replace(ev, sensitivity=math.inf), 1e-5)


def test_corollary2_needs_its_setting():
    with pytest.raises(UnsupportedEventError):  # projection breaks Gaussianity
        LAST.epsilon(cor2_event(constraint="ball", radius=1.0), 1e-5)
    with pytest.raises(UnsupportedEventError):  # not quadratic
        LAST.epsilon(cor2_event(quadratic_constant_hessian=False), 1e-5)
    with pytest.raises(UnsupportedEventError):  # claims Cor. 2 with Lemma 5's start only
        LAST.epsilon(cor1_event(1.0, 10, theorem="corollary2"), 1e-5)


def test_theorem2_refuses_unverifiable_lsi_constant():
    ev = cor1_event(1.0, 100)
    c = verified_lsi_constant(ev)
    with pytest.raises(UnsupportedEventError, match="cannot be verified"):
        LAST.epsilon(dataclasses.replace(ev, theorem="theorem2", lsi_constant=1.01 * c), 1e-5)
    with pytest.raises(UnsupportedEventError, match="LSI constant"):
        LAST.epsilon(dataclasses.replace(ev, theorem="theorem2"), 1e-5)


@pytest.mark.parametrize("other", [Gaussian(2.0), SelfComposed(Gaussian(2.0), 10)])
def test_both_refuse_other_events(other):
    for acc in (LAST, COMP):
        with pytest.raises(UnsupportedEventError):
            acc.epsilon(other, 1e-5)


def test_generic_accountants_refuse_and_best_names_ours():
    res = best(cor1_event(1.0, 1000), 1e-5, include_paper=True)
    assert set(res.by_accountant) == {"langevin_last_iterate", "langevin_composition"}
    for name in ("gdp", "zcdp", "rdp", "pld"):
        assert name in res.refused
    assert res.accountant == "langevin_last_iterate"
    assert get_accountant("langevin_composition").name == "langevin_composition"
    # By default the composition baseline (a paper accountant) is not consulted.
    default = best(cor1_event(1.0, 1000), 1e-5)
    assert set(default.by_accountant) == {"langevin_last_iterate"}
    assert default.epsilon == res.epsilon
    assert default.not_consulted["langevin_composition"].startswith("paper-specific")


def test_baseline_only_on_request_when_the_last_iterate_bound_refuses():
    clipped = cor1_event(clipped_gradients=True)
    with pytest.raises(UnsupportedEventError, match="include_paper=True"):
        best(clipped, 1e-5)
    res = best(clipped, 1e-5, include_paper=True)
    assert res.accountant == "langevin_composition"
    assert res.epsilon == COMP.epsilon(clipped, 1e-5)
    # ... and equals exact GDP of the same run seen as a Gaussian composition.
    assert res.epsilon == get_accountant("gdp").epsilon(clipped.as_composition(), 1e-5)


def test_event_relation_and_validation():
    ev = cor1_event()
    assert ev.neighbouring is Neighbouring.REPLACE_ONE
    assert ev.as_composition().neighbouring is Neighbouring.REPLACE_ONE
    with pytest.raises(ValueError, match="theorem"):
        cor1_event(theorem="corollary7")
    with pytest.raises(ValueError, match="radius"):
        cor1_event(constraint="ball")
    with pytest.raises(ValueError, match="steps"):
        cor1_event(K=-1)
    with pytest.raises(ValueError, match="sigma"):
        cor1_event(sigma=0.0)
    with pytest.raises(ValueError, match="n_samples"):
        cor1_event(n_samples=0)
