"""RDP of private selection by random stopping (Papernot and Steinke 2022).

The selection's curve is checked against the theorems' closed forms computed here with plain
NumPy from the paper's formulas (Theorem 2: truncated negative binomial; Theorem 6: Poisson),
and against dp_accounting's ``RepeatAndSelectDpEvent``, an independent implementation.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from noisygd.accounting import (
    SUPPORT,
    Composed,
    EpsilonDelta,
    Gaussian,
    Neighbouring,
    PoissonSampled,
    SelfComposed,
    UnsupportedEventError,
    available_accountants,
    best,
    get_accountant,
)
from noisygd.accounting.events import RandomStoppingSelection, truncated_negative_binomial_mean
from noisygd.accounting.rdp import DEFAULT_ORDERS, rdp_curve
from noisygd.accounting.serialization import event_from_dict, event_to_dict

TNB = "truncated_negative_binomial"
ORDERS = np.array([1.5, 2.0, 3.0, 4.0, 8.0, 16.0, 32.0, 64.0])
GRID = np.union1d(ORDERS, np.asarray(DEFAULT_ORDERS))


def _gauss_rdp(mu: float, orders: np.ndarray) -> np.ndarray:
    return orders * mu * mu / 2.0  # Mironov (2017) Prop. 7


def _suffix_min(x: np.ndarray) -> np.ndarray:
    return np.minimum.accumulate(x[::-1])[::-1]


def _theorem2(mu: float, eta: float, gamma: float) -> np.ndarray:
    """Theorem 2 at ORDERS for a run with curve alpha mu^2/2; lambda-hat in {1} u GRID."""
    if eta == 0:
        mean = (1 / gamma - 1) / math.log(1 / gamma)
    else:
        mean = eta * (1 - gamma) / (gamma * (1 - gamma**eta))
    lh = GRID
    hat = np.min((1 + eta) * (1 - 1 / lh) * _gauss_rdp(mu, lh) + (1 + eta) * math.log(1 / gamma)
                 / lh)
    hat = min(hat, (1 + eta) * math.log(1 / gamma))  # lambda-hat = 1
    raw = _gauss_rdp(mu, ORDERS) + hat + math.log(mean) / (ORDERS - 1)
    return _suffix_min(raw)


def _delta_cks(eps: float, mu: float) -> float:
    """delta(eps) of the curve alpha mu^2/2 on GRID: CKS20 Prop. 12 and Bretagnolle-Huber."""
    tau = _gauss_rdp(mu, GRID)
    logd = 0.5 * np.log(-np.expm1(-tau))
    cks = (GRID - 1) * (tau - eps + np.log1p(-1 / GRID)) - np.log(GRID)
    logd = np.minimum(logd, np.where(GRID > 1.01, cks, (GRID - 1) * (tau - eps)))
    return float(min(1.0, math.exp(min(float(np.min(logd)), 0.0))))


def _theorem6(mu: float, mean: float) -> np.ndarray:
    """Theorem 6 at ORDERS: eps + mean * delta-hat + log(mean)/(lambda - 1)."""
    raw = np.array([
        lam * mu * mu / 2 + mean * _delta_cks(math.log1p(1 / (lam - 1)), mu)
        + math.log(mean) / (lam - 1) for lam in ORDERS
    ])
    return _suffix_min(raw)


def _run(mu: float) -> Gaussian:
    return Gaussian(1.0 / mu)


@pytest.mark.parametrize("mu", [0.2, 1.0, 3.0])
@pytest.mark.parametrize("eta", [-0.5, 0.0, 0.5, 1.0, 2.0])
def test_truncated_negative_binomial_matches_theorem_2(mu: float, eta: float) -> None:
    event = RandomStoppingSelection(_run(mu), TNB, mean=8.0, eta=eta)
    got = rdp_curve(event, ORDERS)
    np.testing.assert_allclose(got, _theorem2(mu, eta, event.gamma), rtol=1e-12)


def test_geometric_is_corollary_4_form() -> None:
    # eta = 1, gamma = 1/mean: eps + 2(1 - 1/lh) eps-hat + 2 log(1/gamma)/lh + log(1/gamma)/(l-1)
    mu, mean = 0.7, 10.0
    event = RandomStoppingSelection(_run(mu), TNB, mean=mean, eta=1.0)
    assert event.gamma == pytest.approx(1 / mean, rel=1e-12)
    lh = GRID
    hat = min(float(np.min(2 * (1 - 1 / lh) * _gauss_rdp(mu, lh) + 2 * math.log(mean) / lh)),
              2 * math.log(mean))
    expected = _suffix_min(_gauss_rdp(mu, ORDERS) + hat + math.log(mean) / (ORDERS - 1))
    np.testing.assert_allclose(rdp_curve(event, ORDERS), expected, rtol=1e-9)


@pytest.mark.parametrize("mu", [0.2, 1.0, 3.0])
@pytest.mark.parametrize("mean", [1.0, 3.0, 20.0])
def test_poisson_matches_theorem_6(mu: float, mean: float) -> None:
    event = RandomStoppingSelection(_run(mu), "poisson", mean=mean)
    np.testing.assert_allclose(rdp_curve(event, ORDERS), _theorem6(mu, mean), rtol=1e-12)


@pytest.mark.parametrize(("shape", "eta"), [(math.inf, None), (1.0, 1.0), (0.0, 0.0),
                                            (0.5, 0.5), (3.0, 3.0)])
@pytest.mark.parametrize("z", [0.8, 2.0, 5.0])
def test_against_dp_accounting_repeat_and_select(shape: float, eta: float | None,
                                                 z: float) -> None:
    dp_event = pytest.importorskip("dp_accounting.dp_event")
    rdp_mod = pytest.importorskip("dp_accounting.rdp")
    dist = "poisson" if eta is None else TNB
    inner = SelfComposed(Gaussian(z), 5)
    ours = best(RandomStoppingSelection(inner, dist, 10.0, eta), 1e-6)
    acc = rdp_mod.RdpAccountant(list(DEFAULT_ORDERS))
    acc.compose(dp_event.RepeatAndSelectDpEvent(
        dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), 5), 10.0, shape))
    theirs = acc.get_epsilon(1e-6)
    assert ours.accountant == "rdp"
    # Never above theirs; equal (up to dp_accounting's conservative rounding of gamma) unless
    # the lambda-hat = 1 term of Theorem 2, which dp_accounting does not use, is active.
    assert ours.epsilon <= theirs * (1 + 1e-9)
    mu2 = 5 / z**2
    lambda_hat_one_active = eta is not None and all(
        (1 - 1 / a) * a * mu2 / 2 + math.log(1 / ours.event.gamma) / a
        > math.log(1 / ours.event.gamma) for a in DEFAULT_ORDERS)
    if not lambda_hat_one_active:
        assert ours.epsilon == pytest.approx(theirs, rel=1e-8)
    else:  # Theorem 2's lambda-hat = 1 term is the smaller one: strictly below theirs
        assert ours.epsilon < theirs * (1 - 1e-3)


@pytest.mark.parametrize(("dist", "eta"), [(TNB, 1.0), (TNB, 0.0), (TNB, -0.5), ("poisson", None)])
def test_more_expected_runs_never_cost_less(dist: str, eta: float | None) -> None:
    inner = SelfComposed(Gaussian(3.0), 10)
    single = best(inner, 1e-5).epsilon
    eps = [best(RandomStoppingSelection(inner, dist, m, eta), 1e-5).epsilon
           for m in (1.5, 2.0, 4.0, 10.0, 50.0, 300.0)]
    assert all(a <= b for a, b in itertools.pairwise(eps))
    assert eps[0] >= single  # selecting is never cheaper than one run
    curves = [rdp_curve(RandomStoppingSelection(inner, dist, m, eta), ORDERS)
              for m in (1.5, 4.0, 50.0)]
    assert np.all(np.diff(np.vstack(curves), axis=0) >= 0)


def test_less_noise_per_run_never_costs_less() -> None:
    eps = [best(RandomStoppingSelection(Gaussian(z), TNB, 10.0, 1.0), 1e-5).epsilon
           for z in (20.0, 5.0, 2.0, 1.0, 0.5)]
    assert all(a < b for a, b in itertools.pairwise(eps))


def test_curve_is_nondecreasing_in_the_order() -> None:
    for dist, eta in ((TNB, 1.0), ("poisson", None)):
        c = rdp_curve(RandomStoppingSelection(_run(1.0), dist, 10.0, eta), np.asarray(
            DEFAULT_ORDERS))
        assert np.all(np.diff(c) >= 0)


def test_several_candidate_runs_take_the_pointwise_maximum() -> None:
    runs = (Gaussian(2.0), SelfComposed(Gaussian(4.0), 3))  # mu^2 = 0.25 and 0.1875
    both = RandomStoppingSelection(runs, TNB, 6.0, 1.0)
    worst = RandomStoppingSelection(Gaussian(2.0), TNB, 6.0, 1.0)
    np.testing.assert_allclose(rdp_curve(both, ORDERS), rdp_curve(worst, ORDERS), rtol=1e-12)
    assert both.runs == runs
    assert RandomStoppingSelection((Gaussian(2.0),), TNB, 6.0, 1.0).event == Gaussian(2.0)


def test_sampled_inner_event_and_composition() -> None:
    inner = SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 200)
    sel = RandomStoppingSelection(inner, TNB, 5.0, 1.0)
    r = best(sel, 1e-5)
    assert r.accountant == "rdp" and math.isfinite(r.epsilon)
    assert r.epsilon > get_accountant("rdp").epsilon(inner, 1e-5)
    # composed with a count released before the selection: RDP adds
    whole = best(Composed((Gaussian(50.0), sel)), 1e-5)
    assert whole.epsilon > r.epsilon


def test_only_the_rdp_accountant_bounds_it() -> None:
    sel = RandomStoppingSelection(_run(1.0), TNB, 10.0, 1.0)
    for acc in available_accountants():
        if acc.name == "rdp":
            assert acc.supports(sel)
            assert RandomStoppingSelection in SUPPORT["rdp"]
        else:
            assert RandomStoppingSelection not in SUPPORT[acc.name]
            with pytest.raises(UnsupportedEventError):
                acc.epsilon(sel, 1e-5)
    r = best(sel, 1e-5, include_paper=True, exhaustive=True)
    assert set(r.by_accountant) == {"rdp"}
    # an inner event rdp cannot bound is refused, never guessed
    with pytest.raises(UnsupportedEventError):
        best(RandomStoppingSelection(EpsilonDelta(1.0, 1e-6), TNB, 10.0, 1.0), 1e-5)


@pytest.mark.parametrize("eta", [-0.9, -0.5, 0.0, 0.3, 1.0, 4.0])
@pytest.mark.parametrize("mean", [1.01, 2.0, 10.0, 1000.0])
def test_gamma_gives_the_mean(eta: float, mean: float) -> None:
    e = RandomStoppingSelection(_run(1.0), TNB, mean, eta)
    assert 0 < e.gamma < 1
    assert e.expected_runs == pytest.approx(mean, rel=1e-9)
    assert e.expected_runs >= mean * (1 - 1e-15)  # rounded to the side of more runs
    assert truncated_negative_binomial_mean(eta, e.gamma) == e.expected_runs


def test_argument_checks_and_relation() -> None:
    g = _run(1.0)
    with pytest.raises(TypeError):
        RandomStoppingSelection("not an event", TNB, 5.0, 1.0)
    with pytest.raises(ValueError):
        RandomStoppingSelection(g, "uniform", 5.0, 1.0)
    with pytest.raises(ValueError):
        RandomStoppingSelection(g, TNB, 5.0)  # eta missing
    with pytest.raises(ValueError):
        RandomStoppingSelection(g, TNB, 5.0, -1.0)
    with pytest.raises(ValueError):
        RandomStoppingSelection(g, TNB, 1.0, 1.0)  # mean must exceed 1
    with pytest.raises(ValueError):
        RandomStoppingSelection(g, "poisson", 0.5)
    with pytest.raises(ValueError):
        RandomStoppingSelection(g, "poisson", 5.0, 1.0)
    with pytest.raises(TypeError):
        RandomStoppingSelection(g, TNB, "5", 1.0)
    with pytest.raises(ValueError):
        RandomStoppingSelection((), TNB, 5.0, 1.0)
    rep = Gaussian(2.0, 2.0, Neighbouring.REPLACE_ONE)
    with pytest.raises(ValueError):
        RandomStoppingSelection((g, rep), TNB, 5.0, 1.0)
    assert RandomStoppingSelection(rep, TNB, 5.0, 1.0).neighbouring is Neighbouring.REPLACE_ONE


def test_serialises_for_the_ledger() -> None:
    for e in (RandomStoppingSelection(_run(1.0), TNB, 10.0, 0.5),
              RandomStoppingSelection((Gaussian(2.0), SelfComposed(Gaussian(3.0), 4)),
                                      "poisson", 5.0)):
        assert event_from_dict(event_to_dict(e)) == e
