"""Direct tests of public accounting helpers that no other test names.

Covered: ``dp_accounting_bridge`` (:func:`clear_pld_cache`, :func:`composed_pld_accountant`,
:func:`contains_without_replacement`, :func:`pld_delta`, :func:`pld_epsilon`,
:func:`pld_supports`), ``langevin`` (:func:`composition_rdp`, :func:`corollary1_rdp`,
:func:`last_iterate_rdp`, :func:`theorem2_rdp`), ``registry`` (:func:`register_accountant`) and
``selection`` (:func:`rdp_random_stopping`, :func:`run_curve`, :func:`selection_curve`).

The PLD helpers are checked against dp_accounting called directly and against the closed form
of the Gaussian mechanism's privacy profile (Balle and Wang 2018); the Langevin RDP bounds
against the formulas of Chourasia, Ye and Shokri (NeurIPS 2021) written out here; the
random-stopping bound against Papernot and Steinke (ICLR 2022, Theorems 2 and 6).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import ClassVar

import dp_accounting
import numpy as np
import pytest
from scipy import optimize, stats

from noisygd.accounting import registry
from noisygd.accounting.base import Accountant, UnsupportedEventError
from noisygd.accounting.dp_accounting_bridge import (
    clear_pld_cache,
    composed_pld_accountant,
    contains_without_replacement,
    pld_delta,
    pld_epsilon,
    pld_supports,
)
from noisygd.accounting.events import (
    Composed,
    DiscreteGaussianNoise,
    DpEvent,
    EpsilonDelta,
    Gaussian,
    LastIterateLangevin,
    Neighbouring,
    NonPrivate,
    PoissonSampled,
    RandomStoppingSelection,
    SampledWithoutReplacement,
    SelfComposed,
)
from noisygd.accounting.langevin import (
    composition_rdp,
    corollary1_rdp,
    last_iterate_rdp,
    last_iterate_rho,
    theorem2_rdp,
)
from noisygd.accounting.rdp import DEFAULT_ORDERS, rdp_curve, rdp_to_delta
from noisygd.accounting.registry import best, get_accountant, register_accountant
from noisygd.accounting.selection import rdp_random_stopping, run_curve, selection_curve

ADD = Neighbouring.ADD_REMOVE
REP = Neighbouring.REPLACE_ONE
TNB = "truncated_negative_binomial"
#: Coarse PLD grid: enough for the comparisons below, fast.
INTERVAL = 1e-3


# =============================================================== PLD bridge helpers
def _gaussian_delta(mu: float, eps: float) -> float:
    """Exact delta(eps) of a Gaussian shift of mu standard deviations (Balle and Wang 2018)."""
    return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact epsilon(delta) of the same mechanism (the delta above is decreasing in eps)."""
    return optimize.brentq(lambda e: _gaussian_delta(mu, e) - delta, 0.0, 200.0, xtol=1e-13)


@dataclass(frozen=True)
class _TaggedGaussian(Gaussian):
    """A Gaussian carrying an unhashable field: translated like a Gaussian, never cached."""

    tags: list = field(default_factory=list)


@dataclass(frozen=True)
class _Unknown(DpEvent):
    """An event no accountant reads."""

    @property
    def neighbouring(self) -> Neighbouring:
        return ADD


def _wor(m: int = 10, n: int = 100, sigma: float = 1.0) -> SampledWithoutReplacement:
    return SampledWithoutReplacement(m, n, Gaussian(sigma, 2.0, REP))


def test_contains_without_replacement_searches_composites():
    """True exactly when a SampledWithoutReplacement occurs, at any depth of composition."""
    wor = _wor()
    assert contains_without_replacement(wor)
    assert contains_without_replacement(SelfComposed(wor, 3))
    assert contains_without_replacement(Composed((Gaussian(1.0, 2.0, REP), wor)))
    assert contains_without_replacement(
        SelfComposed(Composed((Gaussian(1.0, 2.0, REP), SelfComposed(wor, 2))), 4))
    assert not contains_without_replacement(Gaussian(1.0))
    assert not contains_without_replacement(PoissonSampled(0.1, Gaussian(1.0)))
    assert not contains_without_replacement(
        SelfComposed(Composed((Gaussian(1.0), Gaussian(2.0))), 5))
    assert not contains_without_replacement(EpsilonDelta(1.0, 1e-5))


@pytest.mark.parametrize("event", [
    Gaussian(1.0),
    Gaussian(2.0, 2.0, REP),
    SelfComposed(Gaussian(3.0), 10),
    Composed((Gaussian(1.0), PoissonSampled(0.01, Gaussian(1.0)))),
    _wor(),
    SelfComposed(Composed((Gaussian(5.0, 2.0, REP), _wor())), 3),
], ids=["gaussian", "gaussian-replace", "self-composed", "composed-poisson", "wor",
        "composed-wor"])
def test_pld_supports_translatable_events(event):
    """Gaussian mechanisms, their compositions and subsamplings have a PLD."""
    assert pld_supports(event) is True


@pytest.mark.parametrize("event", [
    EpsilonDelta(1.0, 1e-6),
    NonPrivate(),
    _Unknown(),
    DiscreteGaussianNoise(Gaussian(1.0), 1.01),
    Composed((Gaussian(1.0), EpsilonDelta(0.5))),
    SampledWithoutReplacement(10, 100, EpsilonDelta(1.0, relation=REP)),
    Composed((Gaussian(1.0, 2.0, REP), _wor(), NonPrivate(relation=REP))),
    LastIterateLangevin(strong_convexity=1.0, smoothness=2.0, step_size=0.1, sigma=1.0,
                        steps=10, n_samples=100, sensitivity=2.0, constraint="none"),
], ids=["eps-delta", "non-private", "unknown", "discrete", "composed-eps-delta",
        "wor-eps-delta", "composed-wor-non-private", "langevin"])
def test_pld_supports_refuses_untranslatable_events(event):
    """Events without a dp_accounting translation are reported unsupported (no exception)."""
    assert pld_supports(event) is False


@pytest.mark.parametrize(("sigma", "sens", "relation"), [
    (2.0, 1.0, ADD), (1.0, 1.0, ADD), (3.0, 2.0, REP), (0.8, 2.0, REP)])
def test_pld_delta_bounds_the_exact_gaussian_delta_tightly(sigma, sens, relation):
    """PLD delta of Gaussian(sigma, sens) is >= Balle-Wang's exact delta with mu = sens/sigma,
    under either relation, and within a relative 1e-4 (the discretisation's pessimism)."""
    mu = sens / sigma
    event = Gaussian(sigma, sens, relation)
    for eps in (0.1, 0.5, 1.0, 2.0):
        exact = _gaussian_delta(mu, eps)
        got = pld_delta(event, eps, INTERVAL)
        assert got >= exact * (1 - 1e-9)
        assert got <= exact * (1 + 1e-4)


@pytest.mark.parametrize(("sigma", "sens", "relation"), [
    (2.0, 1.0, ADD), (1.0, 1.0, ADD), (3.0, 2.0, REP)])
def test_pld_epsilon_bounds_the_exact_gaussian_epsilon_tightly(sigma, sens, relation):
    """PLD epsilon is an upper bound on the exact Gaussian epsilon, and within 1e-4 of it."""
    mu = sens / sigma
    event = Gaussian(sigma, sens, relation)
    for delta in (1e-3, 1e-5, 1e-7):
        exact = _gaussian_epsilon(mu, delta)
        got = pld_epsilon(event, delta, INTERVAL)
        assert exact - 1e-9 <= got <= exact + 1e-4


def test_pld_of_self_composition_is_the_gaussian_of_sqrt_k_mu():
    """k Gaussians of multiplier sigma compose to one Gaussian of mu = sqrt(k)/sigma."""
    event = SelfComposed(Gaussian(4.0), 16)
    mu = math.sqrt(16) / 4.0
    for eps in (0.5, 1.5):
        exact = _gaussian_delta(mu, eps)
        got = pld_delta(event, eps, INTERVAL)
        assert exact * (1 - 1e-9) <= got <= exact * (1 + 1e-4)


@pytest.mark.parametrize("relation", [ADD, REP])
def test_pld_epsilon_and_delta_match_dp_accounting_called_directly(relation):
    """The bridge reads the same PLD as dp_accounting's PLDAccountant on the Gaussian with the
    same shift (under add/remove dp_accounting's shift is 1/z: z = sigma/sens)."""
    sigma, sens = 1.5, 2.0 if relation is REP else 1.0
    acc = dp_accounting.pld.PLDAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
        value_discretization_interval=INTERVAL)
    acc.compose(dp_accounting.GaussianDpEvent(noise_multiplier=sigma / sens))
    event = Gaussian(sigma, sens, relation)
    for delta in (1e-3, 1e-6):
        assert pld_epsilon(event, delta, INTERVAL) == pytest.approx(
            acc.get_epsilon(delta), rel=1e-6, abs=1e-9)
    for eps in (0.3, 1.0):
        assert pld_delta(event, eps, INTERVAL) == pytest.approx(
            acc.get_delta(eps), rel=1e-6, abs=1e-12)


def test_pld_epsilon_and_delta_are_inverse_and_monotone():
    """epsilon(delta) decreases in delta; delta(epsilon(d)) <= d (both pessimistic reads of
    one PLD)."""
    event = SelfComposed(Gaussian(2.0), 4)
    deltas = [1e-2, 1e-4, 1e-6, 1e-8]
    eps = [pld_epsilon(event, d, INTERVAL) for d in deltas]
    assert all(a < b for a, b in itertools.pairwise(eps))
    for d, e in zip(deltas, eps, strict=True):
        assert pld_delta(event, e, INTERVAL) <= d * (1 + 1e-6)
    ds = [pld_delta(event, e, INTERVAL) for e in (0.0, 0.5, 1.0, 3.0)]
    assert all(a > b for a, b in itertools.pairwise(ds))
    assert all(0.0 <= d <= 1.0 for d in ds)


def test_pld_without_replacement_amplifies_and_full_sample_is_the_gaussian():
    """Sampling m of n rows without replacement costs less than the full-data Gaussian,
    more for larger m, and m = n is the full-data Gaussian itself."""
    inner = Gaussian(1.0, 2.0, REP)
    full = pld_epsilon(inner, 1e-5, INTERVAL)
    eps = [pld_epsilon(_wor(m, 100), 1e-5, INTERVAL) for m in (5, 20, 50)]
    assert all(a < b for a, b in itertools.pairwise(eps))
    assert eps[-1] < full
    assert pld_epsilon(_wor(100, 100), 1e-5, INTERVAL) == pytest.approx(full, rel=1e-6)


@pytest.mark.parametrize("event", [EpsilonDelta(1.0, 1e-5), NonPrivate(), _Unknown()])
def test_pld_epsilon_and_delta_refuse_untranslatable_events(event):
    with pytest.raises(UnsupportedEventError, match="no dp_accounting translation"):
        pld_epsilon(event, 1e-5, INTERVAL)
    with pytest.raises(UnsupportedEventError, match="no dp_accounting translation"):
        pld_delta(event, 1.0, INTERVAL)


@pytest.mark.parametrize("interval", [0.0, -1.0, math.nan])
def test_pld_helpers_refuse_a_non_positive_interval(interval):
    """A degenerate discretisation interval is refused before any PLD is built."""
    with pytest.raises(ValueError, match="interval must be positive"):
        pld_epsilon(Gaussian(2.0, 1.0), 1e-5, interval)
    with pytest.raises(ValueError, match="interval must be positive"):
        pld_delta(Gaussian(2.0, 1.0), 1.0, interval)


@pytest.mark.parametrize(("fn", "value", "name"), [
    ("pld_delta", math.nan, "epsilon"), ("pld_delta", -0.1, "epsilon"),
    ("pld_delta", math.inf, "epsilon"), ("pld_epsilon", math.nan, "delta"),
    ("pld_epsilon", 0.0, "delta"), ("pld_epsilon", 1.5, "delta"),
    ("pld_epsilon", -0.1, "delta")])
def test_pld_helpers_refuse_bad_epsilon_and_delta(fn, value, name):
    """A NaN epsilon used to give a tiny, reassuring delta (4.99e-16); now refused."""
    helper = {"pld_delta": pld_delta, "pld_epsilon": pld_epsilon}[fn]
    with pytest.raises(ValueError, match=name):
        helper(Gaussian(2.0, 1.0), value, 1e-3)


def test_composed_pld_accountant_is_cached_per_event_and_interval():
    """Equal (event, interval) pairs return the same accountant; another interval does not."""
    event = SelfComposed(Gaussian(3.0), 3)
    a = composed_pld_accountant(event, INTERVAL)
    assert composed_pld_accountant(SelfComposed(Gaussian(3.0), 3), INTERVAL) is a
    b = composed_pld_accountant(event, 2 * INTERVAL)
    assert b is not a
    # the coarser grid is still pessimistic: never below the exact value
    exact = _gaussian_epsilon(math.sqrt(3) / 3.0, 1e-5)
    assert a.get_epsilon(1e-5) >= exact - 1e-9
    assert b.get_epsilon(1e-5) >= exact - 1e-9
    assert a.get_epsilon(1e-5) == pytest.approx(pld_epsilon(event, 1e-5, INTERVAL), abs=1e-12)


def test_composed_pld_accountant_builds_unhashable_events_uncached():
    """A frozen event with an unhashable field is accounted (as its Gaussian), but afresh."""
    event = _TaggedGaussian(2.0, 1.0, ADD, ["x"])
    with pytest.raises(TypeError):
        hash(event)
    a = composed_pld_accountant(event, INTERVAL)
    b = composed_pld_accountant(event, INTERVAL)
    assert a is not b
    plain = composed_pld_accountant(Gaussian(2.0, 1.0, ADD), INTERVAL)
    assert a.get_epsilon(1e-5) == pytest.approx(plain.get_epsilon(1e-5), rel=1e-12)


def test_composed_pld_accountant_reads_without_replacement_events():
    """For without-replacement events the returned object has consistent get_epsilon and
    get_delta, and agrees with pld_epsilon / pld_delta."""
    event = SelfComposed(_wor(10, 100, 1.0), 5)
    acc = composed_pld_accountant(event, INTERVAL)
    eps = acc.get_epsilon(1e-5)
    assert eps == pld_epsilon(event, 1e-5, INTERVAL)
    assert 0.0 < eps < pld_epsilon(SelfComposed(Gaussian(1.0, 2.0, REP), 5), 1e-5, INTERVAL)
    assert acc.get_delta(eps) <= 1e-5 * (1 + 1e-6)
    assert acc.get_delta(1.0) == pld_delta(event, 1.0, INTERVAL)


def test_composed_pld_accountant_refuses_untranslatable_events():
    with pytest.raises(UnsupportedEventError, match="no dp_accounting translation"):
        composed_pld_accountant(Composed((Gaussian(1.0), EpsilonDelta(1.0))), INTERVAL)
    with pytest.raises(UnsupportedEventError, match="no dp_accounting translation"):
        composed_pld_accountant(Composed((_wor(), NonPrivate(relation=REP))), INTERVAL)


def test_clear_pld_cache_forces_a_rebuild_with_the_same_answer():
    """After clearing, the same (event, interval) builds a new accountant (the cache is empty)
    that reports the same epsilon as before."""
    from noisygd.accounting import dp_accounting_bridge as bridge

    event = SelfComposed(Gaussian(2.5), 2)
    before = composed_pld_accountant(event, INTERVAL)
    assert composed_pld_accountant(event, INTERVAL) is before
    assert bridge._cached_build.cache_info().currsize >= 1
    clear_pld_cache()
    assert bridge._cached_build.cache_info().currsize == 0
    after = composed_pld_accountant(event, INTERVAL)
    assert after is not before
    assert after.get_epsilon(1e-6) == before.get_epsilon(1e-6)
    clear_pld_cache()  # idempotent
    clear_pld_cache()
    assert bridge._cached_build.cache_info().currsize == 0


# ================================================================== Langevin RDP
S_G, N, SIGMA, ETA = 4.0, 5000, 0.02, 0.02
ALPHAS = np.array([1.5, 2.0, 10.0, 64.0])


def test_corollary1_rdp_closed_form_and_limits():
    """alpha S^2/(lam sigma^2 n^2) (1 - e^{-lam eta K/2}); 0 at K = 0; the K -> inf limit;
    ~ alpha S^2 eta K/(2 sigma^2 n^2) for small lam eta K."""
    lam = 2.0
    for K in (0, 1, 50, 1000):
        expected = (ALPHAS * S_G**2 / (lam * SIGMA**2 * N**2)
                    * (1 - math.exp(-lam * ETA * K / 2)))
        np.testing.assert_allclose(corollary1_rdp(ALPHAS, lam, SIGMA, ETA, K, N, S_G),
                                   expected, rtol=1e-12, atol=0)
    assert np.all(corollary1_rdp(ALPHAS, lam, SIGMA, ETA, 0, N, S_G) == 0.0)
    limit = ALPHAS * S_G**2 / (lam * SIGMA**2 * N**2)
    np.testing.assert_allclose(corollary1_rdp(ALPHAS, lam, SIGMA, ETA, 1e7, N, S_G), limit,
                               rtol=1e-12)
    small = corollary1_rdp(ALPHAS, lam, SIGMA, 1e-6, 1, N, S_G)
    np.testing.assert_allclose(small, ALPHAS * S_G**2 * 1e-6 / (2 * SIGMA**2 * N**2), rtol=1e-5)


def test_corollary1_rdp_is_theorem2_with_the_lemma5_constant():
    """Corollary 1 is Theorem 2 at c = lam/(2 sigma^2) (Lemma 5)."""
    for lam in (0.1, 1.0, 4.0):
        for K in (1, 30, 10_000):
            np.testing.assert_allclose(
                corollary1_rdp(ALPHAS, lam, SIGMA, ETA, K, N, S_G),
                theorem2_rdp(ALPHAS, lam / (2 * SIGMA**2), SIGMA, ETA, K, N, S_G), rtol=1e-12)


def test_corollary1_rdp_broadcasts_over_arguments():
    lams = np.array([[0.5], [1.0], [2.0]])
    steps = np.array([1, 10, 100, 1000])
    out = corollary1_rdp(2.0, lams, SIGMA, ETA, steps, N, S_G)
    assert out.shape == (3, 4)
    for i, lam in enumerate(lams[:, 0]):
        for j, K in enumerate(steps):
            assert out[i, j] == pytest.approx(
                float(corollary1_rdp(2.0, lam, SIGMA, ETA, K, N, S_G)), rel=1e-14)
    assert np.all(np.diff(out, axis=1) > 0)  # increasing in K
    assert np.all(np.diff(out, axis=0) < 0)  # decreasing in lambda


def test_theorem2_rdp_closed_form_monotone_and_limits():
    """alpha S^2/(2c sigma^4 n^2)(1 - e^{-sigma^2 c eta K}): linear in alpha, increasing and
    bounded in K, first order alpha S^2 eta K/(2 sigma^2 n^2) for one small step."""
    c = 3.0
    steps = np.array([0, 1, 5, 100, 10_000, 10**9])
    out = theorem2_rdp(2.0, c, SIGMA, ETA, steps, N, S_G)
    expected = (2.0 * S_G**2 / (2 * c * SIGMA**4 * N**2)
                * (1 - np.exp(-(SIGMA**2) * c * ETA * steps)))
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=0)
    assert out[0] == 0.0
    assert np.all(np.diff(out) >= 0)
    limit = 2.0 * S_G**2 / (2 * c * SIGMA**4 * N**2)
    assert out[-1] == pytest.approx(limit, rel=1e-9)
    assert np.all(out <= limit * (1 + 1e-12))
    np.testing.assert_allclose(theorem2_rdp(ALPHAS, c, SIGMA, ETA, 7, N, S_G),
                               ALPHAS / 2.0 * theorem2_rdp(2.0, c, SIGMA, ETA, 7, N, S_G),
                               rtol=1e-12)
    one = float(theorem2_rdp(2.0, c, SIGMA, 1e-6, 1, N, S_G))
    assert one == pytest.approx(2.0 * S_G**2 * 1e-6 / (2 * SIGMA**2 * N**2), rel=1e-5)
    # a larger LSI constant (faster mixing) gives a smaller bound
    cs = np.array([0.5, 1.0, 2.0, 8.0])
    assert np.all(np.diff(theorem2_rdp(2.0, cs, SIGMA, ETA, 1000, N, S_G)) < 0)


def test_composition_rdp_closed_form_and_agreement_with_gaussian_composition():
    """alpha S^2 eta K/(4 n^2 sigma^2), linear in K, equals the RDP of K Gaussian steps
    (event.as_composition()) and, for one small step, half of Theorem 2's first order."""
    steps = np.array([0, 1, 10, 1000])
    out = composition_rdp(ALPHAS[:, None], SIGMA, ETA, steps[None, :], N, S_G)
    expected = ALPHAS[:, None] * S_G**2 * ETA * steps[None, :] / (4 * N**2 * SIGMA**2)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=0)
    event = LastIterateLangevin(strong_convexity=1.0, smoothness=4.0, step_size=ETA,
                                sigma=SIGMA, steps=250, n_samples=N, sensitivity=S_G,
                                constraint="none", start_variance=2 * SIGMA**2)
    np.testing.assert_allclose(composition_rdp(ALPHAS, SIGMA, ETA, 250, N, S_G),
                               rdp_curve(event.as_composition(), ALPHAS), rtol=1e-12)
    # the hidden-state bound of Corollary 1 saturates; composition grows without bound
    assert float(composition_rdp(2.0, SIGMA, ETA, 10**6, N, S_G)) > float(
        corollary1_rdp(2.0, 1.0, SIGMA, ETA, 10**6, N, S_G))


def _cor1_event(**kw) -> LastIterateLangevin:
    args = dict(strong_convexity=1.0, smoothness=4.0, step_size=ETA, sigma=SIGMA, steps=100,
                n_samples=N, sensitivity=S_G, theorem="corollary1", constraint="none",
                start="projected_gaussian", start_variance=2 * SIGMA**2)
    args.update(kw)
    return LastIterateLangevin(**args)


def test_last_iterate_rdp_is_linear_in_the_order_with_the_claimed_theorem():
    """rho * alpha, with rho from Corollary 1 (or Theorem 2 with the claimed constant)."""
    event = _cor1_event()
    orders = np.array([1.01, 2.0, 32.0, 1024.0])
    got = last_iterate_rdp(event, orders)
    np.testing.assert_allclose(got, corollary1_rdp(orders, 1.0, SIGMA, ETA, 100, N, S_G),
                               rtol=1e-12)
    np.testing.assert_allclose(got, last_iterate_rho(event) * orders, rtol=1e-15)
    c = 0.5 / (2 * SIGMA**2)  # below the proven lam/(2 sigma^2): accepted, a looser bound
    t2 = _cor1_event(theorem="theorem2", lsi_constant=c)
    np.testing.assert_allclose(last_iterate_rdp(t2, orders),
                               theorem2_rdp(orders, c, SIGMA, ETA, 100, N, S_G), rtol=1e-12)
    assert np.all(last_iterate_rdp(t2, orders) > got)
    assert last_iterate_rdp(event, 3.0).shape == ()


def test_last_iterate_rdp_refusals():
    event = _cor1_event()
    with pytest.raises(ValueError, match="RDP orders must be > 1"):
        last_iterate_rdp(event, [2.0, 1.0])
    with pytest.raises(ValueError, match="RDP orders must be > 1"):
        last_iterate_rdp(event, 0.5)
    with pytest.raises(UnsupportedEventError, match="only LastIterateLangevin"):
        last_iterate_rdp(Gaussian(1.0), [2.0])
    with pytest.raises(UnsupportedEventError, match="clipped"):
        last_iterate_rdp(_cor1_event(clipped_gradients=True), [2.0])
    with pytest.raises(UnsupportedEventError, match="intermediate iterate"):
        last_iterate_rdp(_cor1_event(hidden_trajectory=False), [2.0])
    with pytest.raises(UnsupportedEventError, match="not < 1/beta"):
        last_iterate_rdp(_cor1_event(smoothness=100.0), [2.0])
    with pytest.raises(UnsupportedEventError, match="exceeds"):
        last_iterate_rdp(_cor1_event(theorem="theorem2", lsi_constant=2.0 / SIGMA**2), [2.0])


# ===================================================================== registry
@dataclass(frozen=True)
class _OnlyMine(DpEvent):
    """An event only the test accountant reads."""

    @property
    def neighbouring(self) -> Neighbouring:
        return ADD


class _MineAccountant(Accountant):
    name = "test_public_helpers_mine"
    theorem = "test accountant"
    DISPATCH: ClassVar[dict] = {_OnlyMine: lambda event: 0.25}

    def epsilon(self, event, delta):
        if not isinstance(event, _OnlyMine):
            raise UnsupportedEventError("reads only _OnlyMine")
        return 0.25


@pytest.fixture
def isolated_registry(monkeypatch):
    """A private copy of the user-registered accountants, restored after the test."""
    monkeypatch.setattr(registry, "_EXTRA", dict(registry._EXTRA))
    return registry


def test_register_accountant_makes_the_name_resolvable_and_consulted(isolated_registry):
    with pytest.raises(KeyError, match="unknown accountant"):
        get_accountant(_MineAccountant.name)
    with pytest.raises(UnsupportedEventError, match="no accountant can bound"):
        best(_OnlyMine(), 1e-5)
    assert register_accountant(_MineAccountant) is _MineAccountant  # usable as a decorator
    assert isinstance(get_accountant(_MineAccountant.name), _MineAccountant)
    names = [a.name for a in registry.available_accountants()]
    assert names[-1] == _MineAccountant.name  # appended after everything else
    builtins = [c.name for c in registry.ACCOUNTANTS]
    assert names[:len(builtins)] == builtins  # built-ins first, unchanged
    result = best(_OnlyMine(), 1e-5)
    assert result.accountant == _MineAccountant.name
    assert result.epsilon == 0.25


def test_register_accountant_is_undone_by_the_fixture():
    """The previous test's registration does not leak (the registry copy was restored)."""
    with pytest.raises(KeyError, match="unknown accountant"):
        get_accountant(_MineAccountant.name)


def test_register_accountant_refuses_duplicates(isolated_registry):
    register_accountant(_MineAccountant)
    with pytest.raises(ValueError, match="already registered"):
        register_accountant(_MineAccountant)

    class Twin(_MineAccountant):
        pass

    with pytest.raises(ValueError, match="already registered"):
        register_accountant(Twin)

    class Shadow(_MineAccountant):
        name = "gdp"  # a built-in's name

    with pytest.raises(ValueError, match="'gdp' is already registered"):
        register_accountant(Shadow)
    assert type(get_accountant("gdp")) is registry.ACCOUNTANTS[0]


@pytest.mark.parametrize("bad", [_MineAccountant(), object, int, "gdp", None],
                         ids=["instance", "object", "int", "str", "none"])
def test_register_accountant_refuses_non_accountant_classes(isolated_registry, bad):
    before = dict(isolated_registry._EXTRA)
    with pytest.raises(TypeError, match="takes an Accountant subclass"):
        register_accountant(bad)
    assert isolated_registry._EXTRA == before


# ==================================================================== selection
ORDERS = np.array([1.5, 2.0, 3.0, 5.0, 8.0, 16.0, 64.0])


def _suffix_min(x: np.ndarray) -> np.ndarray:
    """out[i] = min_{j >= i} x[j] (for orders sorted ascending)."""
    return np.array([min(x[i:]) for i in range(len(x))])


def _tnb_mean(eta: float, gamma: float) -> float:
    if eta == 0:
        return (1 / gamma - 1) / math.log(1 / gamma)
    return eta * (1 - gamma) / (gamma * (1 - gamma**eta))


def _theorem2(orders, rdp, eta, gamma, aux_orders, aux_rdp) -> np.ndarray:
    """Papernot-Steinke Theorem 2, lambda-hat over {1} u aux_orders, then the suffix minimum."""
    log_inv = math.log(1 / gamma)
    middle = min([log_inv] + [(1 - 1 / lh) * rh + log_inv / lh
                              for lh, rh in zip(aux_orders, aux_rdp, strict=True)])
    raw = [r + (1 + eta) * middle + math.log(_tnb_mean(eta, gamma)) / (lam - 1)
           for lam, r in zip(orders, rdp, strict=True)]
    return _suffix_min(np.array(raw))


@pytest.mark.parametrize(("eta", "gamma"), [(1.0, 0.1), (0.0, 0.05), (-0.5, 0.01), (3.0, 0.3)])
@pytest.mark.parametrize("mu", [0.2, 1.0])
def test_rdp_random_stopping_truncated_negative_binomial_closed_form(eta, gamma, mu):
    """Theorem 2 for a Gaussian run (curve alpha mu^2/2), lambda-hat over the orders and 1."""
    rdp = ORDERS * mu * mu / 2
    got = rdp_random_stopping(ORDERS, rdp, TNB, mean=99.0, eta=eta, gamma=gamma)
    np.testing.assert_allclose(got, _theorem2(ORDERS, rdp, eta, gamma, ORDERS, rdp),
                               rtol=1e-12)
    assert np.all(np.diff(got) >= 0)  # non-decreasing in the order
    assert np.all(got >= rdp)  # selection never costs less than one run


def test_rdp_random_stopping_geometric_is_corollary4():
    """eta = 1: eps + 2(1 - 1/lh) eps-hat + 2 log(1/gamma)/lh + log(1/gamma)/(lambda - 1)."""
    mu, gamma = 0.5, 0.02
    rdp = ORDERS * mu * mu / 2
    log_inv = math.log(1 / gamma)
    middle = min(2 * log_inv, min(2 * (1 - 1 / lh) * lh * mu * mu / 2 + 2 * log_inv / lh
                                  for lh in ORDERS))
    expected = _suffix_min(rdp + middle + log_inv / (ORDERS - 1))
    got = rdp_random_stopping(ORDERS, rdp, TNB, mean=1 / gamma, eta=1.0, gamma=gamma)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_rdp_random_stopping_uses_the_auxiliary_grid_for_lambda_hat():
    """A richer auxiliary grid can only lower the Theorem 2 bound; it matches the formula."""
    mu, eta, gamma = 0.3, 1.0, 0.05
    aux = np.union1d(ORDERS, np.asarray(DEFAULT_ORDERS))
    rdp, aux_rdp = ORDERS * mu * mu / 2, aux * mu * mu / 2
    coarse = rdp_random_stopping(ORDERS, rdp, TNB, mean=2.0, eta=eta, gamma=gamma)
    fine = rdp_random_stopping(ORDERS, rdp, TNB, mean=2.0, eta=eta, gamma=gamma,
                               aux_orders=aux, aux_rdp=aux_rdp)
    np.testing.assert_allclose(fine, _theorem2(ORDERS, rdp, eta, gamma, aux, aux_rdp),
                               rtol=1e-12)
    assert np.all(fine <= coarse * (1 + 1e-15))
    assert np.any(fine < coarse)


def test_rdp_random_stopping_poisson_closed_form():
    """Theorem 6: eps + mu delta-hat + log(mu)/(lambda - 1), delta-hat read by to_delta at
    eps-hat = log(1 + 1/(lambda - 1)) on the auxiliary grid."""
    calls = []

    def to_delta(orders, rdp, eps):
        calls.append((np.array(orders), np.array(rdp), eps))
        return 0.003 * eps, 2.0  # any decreasing function of eps works for the check

    mean = 4.0
    rdp = ORDERS * 0.1
    got = rdp_random_stopping(ORDERS, rdp, "poisson", mean=mean, to_delta=to_delta)
    eps_hat = np.log1p(1 / (ORDERS - 1))
    expected = _suffix_min(rdp + mean * 0.003 * eps_hat + math.log(mean) / (ORDERS - 1))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose([c[2] for c in calls], eps_hat, rtol=1e-14)
    for orders_seen, rdp_seen, _ in calls:
        np.testing.assert_array_equal(orders_seen, ORDERS)
        np.testing.assert_array_equal(rdp_seen, rdp)


def test_rdp_random_stopping_poisson_is_monotone_in_the_mean_and_run_curve():
    rdp = ORDERS * 0.08
    means = [1.0, 2.0, 10.0, 100.0]
    curves = [rdp_random_stopping(ORDERS, rdp, "poisson", mean=m, to_delta=rdp_to_delta)
              for m in means]
    for lo, hi in itertools.pairwise(curves):
        assert np.all(lo <= hi)
    # mean 1: no log term, only the delta-hat term on top of one run
    assert np.all(curves[0] >= rdp)
    bigger = rdp_random_stopping(ORDERS, 2 * rdp, "poisson", mean=10.0, to_delta=rdp_to_delta)
    assert np.all(bigger >= curves[2])


def test_rdp_random_stopping_infinite_run_rdp_takes_a_higher_orders_bound():
    """Where one run has no bound at an order, the bound of a higher order is used; where no
    higher order has one, the result is inf."""
    rdp = ORDERS * 0.1
    holes = rdp.copy()
    holes[0] = math.inf
    got = rdp_random_stopping(ORDERS, holes, TNB, mean=5.0, eta=1.0, gamma=0.2,
                              aux_orders=ORDERS, aux_rdp=rdp)
    ref = rdp_random_stopping(ORDERS, rdp, TNB, mean=5.0, eta=1.0, gamma=0.2)
    assert got[0] == ref[1]
    np.testing.assert_array_equal(got[1:], ref[1:])
    top = rdp.copy()
    top[-1] = math.inf
    got = rdp_random_stopping(ORDERS, top, "poisson", mean=3.0, to_delta=rdp_to_delta,
                              aux_orders=ORDERS, aux_rdp=rdp)
    assert math.isinf(got[-1]) and np.all(np.isfinite(got[:-1]))


def test_rdp_random_stopping_refusals():
    rdp = ORDERS * 0.1
    with pytest.raises(ValueError, match="orders > 1"):
        rdp_random_stopping([1.0, 2.0], [0.1, 0.2], "poisson", mean=2.0, to_delta=rdp_to_delta)
    with pytest.raises(ValueError, match="equal length"):
        rdp_random_stopping(ORDERS, rdp[:-1], TNB, mean=2.0, eta=1.0, gamma=0.5)
    with pytest.raises(ValueError, match="equal length"):
        rdp_random_stopping([], [], TNB, mean=2.0, eta=1.0, gamma=0.5)
    with pytest.raises(ValueError, match="RDP values must be >= 0"):
        rdp_random_stopping([2.0], [-0.1], TNB, mean=2.0, eta=1.0, gamma=0.5)
    with pytest.raises(ValueError, match="RDP values must be >= 0"):
        rdp_random_stopping([2.0], [math.nan], TNB, mean=2.0, eta=1.0, gamma=0.5)
    with pytest.raises(ValueError, match="distribution must be one of"):
        rdp_random_stopping(ORDERS, rdp, "geometric", mean=2.0)
    with pytest.raises(ValueError, match="needs eta and gamma"):
        rdp_random_stopping(ORDERS, rdp, TNB, mean=2.0, eta=1.0)
    with pytest.raises(ValueError, match="need eta > -1 and 0 < gamma < 1"):
        rdp_random_stopping(ORDERS, rdp, TNB, mean=2.0, eta=-1.0, gamma=0.5)
    with pytest.raises(ValueError, match="need eta > -1 and 0 < gamma < 1"):
        rdp_random_stopping(ORDERS, rdp, TNB, mean=2.0, eta=1.0, gamma=1.0)
    with pytest.raises(TypeError, match="gamma must be a real number"):
        rdp_random_stopping(ORDERS, rdp, TNB, mean=2.0, eta=1.0, gamma="0.5")
    with pytest.raises(ValueError, match="mean must be >= 1"):
        rdp_random_stopping(ORDERS, rdp, "poisson", mean=0.5, to_delta=rdp_to_delta)
    with pytest.raises(ValueError, match="mean must be positive"):
        rdp_random_stopping(ORDERS, rdp, "poisson", mean=0.0, to_delta=rdp_to_delta)
    with pytest.raises(ValueError, match="needs to_delta"):
        rdp_random_stopping(ORDERS, rdp, "poisson", mean=2.0)


def test_run_curve_is_the_pointwise_maximum_over_the_runs():
    """Q picks one of the runs: its curve is the largest of theirs at every order."""
    g1, g2 = Gaussian(1.0), Gaussian(3.0)
    table = {g1: lambda o: 0.5 * o, g2: lambda o: np.full_like(o, 2.0)}

    def curve(event, orders):
        return table[event](np.asarray(orders, dtype=float))

    event = RandomStoppingSelection((g1, g2), "poisson", mean=2.0)
    np.testing.assert_array_equal(run_curve(event, ORDERS, curve), np.maximum(0.5 * ORDERS, 2.0))
    single = RandomStoppingSelection(g2, "poisson", mean=2.0)
    np.testing.assert_array_equal(run_curve(single, ORDERS, curve), np.full_like(ORDERS, 2.0))
    # with the rdp module's curves: the least noisy run dominates (alpha mu^2 / 2)
    real = RandomStoppingSelection((Gaussian(4.0), Gaussian(2.0), Gaussian(8.0)), TNB,
                                   mean=3.0, eta=1.0)
    np.testing.assert_allclose(run_curve(real, ORDERS, rdp_curve), ORDERS / 8.0, rtol=1e-14)


def test_selection_curve_matches_theorem2_on_the_union_grid():
    """TNB: Theorem 2 with lambda-hat over orders u default_orders, the run's curve from
    ``curve``; equal to the rdp module's curve for the event with its default orders."""
    event = RandomStoppingSelection(Gaussian(2.0), TNB, mean=10.0, eta=0.5)
    default = [2.5, 6.0, 12.0, 40.0]
    got = selection_curve(event, ORDERS, curve=rdp_curve, default_orders=default,
                          to_delta=rdp_to_delta)
    aux = np.union1d(ORDERS, default)
    expected = _theorem2(ORDERS, ORDERS / 8.0, 0.5, event.gamma, aux, aux / 8.0)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose(
        selection_curve(event, ORDERS, curve=rdp_curve, default_orders=DEFAULT_ORDERS,
                        to_delta=rdp_to_delta),
        rdp_curve(event, ORDERS), rtol=1e-15)
    assert _tnb_mean(0.5, event.gamma) == pytest.approx(10.0, rel=1e-9)


def test_selection_curve_poisson_reads_delta_hat_on_the_union_grid():
    event = RandomStoppingSelection((Gaussian(3.0), Gaussian(1.5)), "poisson", mean=5.0)
    default = (2.5, 100.0)
    seen = []

    def to_delta(orders, rdp, eps):
        seen.append((np.array(orders), np.array(rdp)))
        return rdp_to_delta(orders, rdp, eps)

    got = selection_curve(event, ORDERS, curve=rdp_curve, default_orders=default,
                          to_delta=to_delta)
    aux = np.union1d(ORDERS, default)
    assert seen
    for orders_seen, rdp_seen in seen:
        np.testing.assert_array_equal(orders_seen, aux)
        np.testing.assert_allclose(rdp_seen, aux / (2 * 1.5**2), rtol=1e-14)
    expected = rdp_random_stopping(ORDERS, ORDERS / (2 * 1.5**2), "poisson", mean=5.0,
                                   aux_orders=aux, aux_rdp=aux / (2 * 1.5**2),
                                   to_delta=rdp_to_delta)
    np.testing.assert_allclose(got, expected, rtol=1e-15)
    np.testing.assert_allclose(
        selection_curve(event, ORDERS, curve=rdp_curve, default_orders=DEFAULT_ORDERS,
                        to_delta=rdp_to_delta),
        rdp_curve(event, ORDERS), rtol=1e-15)
