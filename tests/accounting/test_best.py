"""Acceptance grid against dp_accounting's PLD, ``best``, registry and refusals."""

from __future__ import annotations

import math
from dataclasses import dataclass

import dp_accounting
import pytest
from dp_accounting.pld import pld_privacy_accountant

from noisygd.accounting import (
    Composed,
    DpEvent,
    EpsilonDelta,
    Gaussian,
    Neighbouring,
    NonPrivate,
    SelfComposed,
    UnsupportedEventError,
    available_accountants,
    best,
    get_accountant,
)

CORE = ("gdp", "zcdp", "rdp", "pld")


def _core():
    """The four accountants of this module (other modules register more)."""
    return [get_accountant(n) for n in CORE]


@dataclass(frozen=True)
class Unknown(DpEvent):
    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring.ADD_REMOVE


def _peer_pld_epsilon(z: float, steps: int, delta: float) -> float:
    """dp_accounting's PLD epsilon, computed directly (not through our translation).

    The privacy loss of a mu-Gaussian (mu = sqrt(steps)/z) spans about mu^2/2 +- 10 mu,
    so with dp_accounting's default interval 1e-4 the mu = 100 point would need ~2e7
    grid points (minutes). The interval 1e-4 * max(1, mu^2) keeps ~1e5-1e6 points and
    a resolution below 1e-3 of epsilon (pessimistic either way).
    """
    mu = math.sqrt(steps) / z
    acc = pld_privacy_accountant.PLDAccountant(
        dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
        value_discretization_interval=1e-4 * max(1.0, mu * mu),
    )
    acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), steps))
    return acc.get_epsilon(delta)


GRID = [
    (z, steps, delta)
    for z in (1.0, 10.0, 100.0)
    for steps in (1, 100, 10_000)
    for delta in (1e-5, 1e-8)
]


@pytest.mark.parametrize("z, steps, delta", GRID)
def test_acceptance_grid(z, steps, delta):
    event = SelfComposed(Gaussian(z), steps)
    peer = _peer_pld_epsilon(z, steps, delta)
    res = best(event, delta, _core(), exhaustive=True)
    eps = res.by_accountant
    assert set(eps) == set(CORE)
    # Exact Gaussian equals dp_accounting's PLD within 1%.
    assert abs(eps["gdp"] / peer - 1) <= 0.01
    # The pessimistic PLD is an upper bound on the exact value.
    assert peer >= eps["gdp"] * (1 - 1e-9)
    # zCDP and RDP are upper bounds too, never below the exact value.
    assert eps["zcdp"] >= eps["gdp"] * (1 - 1e-9)
    assert eps["rdp"] >= eps["gdp"] * (1 - 1e-9)
    # Our PLD accountant (through the translation) agrees with the direct peer.
    assert abs(eps["pld"] / peer - 1) <= 0.01
    assert eps["pld"] >= eps["gdp"] * (1 - 1e-9)


def test_best_returns_the_minimum_and_names_it():
    event = SelfComposed(Gaussian(2.0), 30)
    res = best(event, 1e-6, _core(), exhaustive=True)
    assert res.epsilon == min(res.by_accountant.values())
    assert res.by_accountant[res.accountant] == res.epsilon
    assert res.accountant in ("gdp", "pld")  # the exact one, or PLD within rounding of it
    assert res.theorems[res.accountant] == get_accountant(res.accountant).theorem
    assert res.refused == {} and res.not_consulted == {}
    # With every general accountant, the answer is still the minimum of those that bound it.
    full = best(event, 1e-6, exhaustive=True)
    assert full.epsilon == min(full.by_accountant.values()) <= res.epsilon
    assert set(CORE) <= set(full.by_accountant)
    d = res.to_dict()
    assert d["accountant"] == res.accountant and d["epsilon"] == res.epsilon
    assert d["neighbouring"] == "add_remove"
    assert res.accountant in str(res)


def test_exact_accountant_answers_alone():
    # A Gaussian composition: exact GDP answers, nothing else is consulted, and the value is
    # the one every accountant would have given its minimum to (PLD and the others are upper
    # bounds on it).
    event = SelfComposed(Gaussian(4.0), 500)
    fast = best(event, 1e-5)
    assert fast.accountant == "gdp" and fast.exact
    assert set(fast.by_accountant) == {"gdp"}
    for name in ("zcdp", "rdp", "pld", "pure_dp", "subsampling_lemma",
                 "langevin_last_iterate"):
        assert fast.not_consulted[name] == "gdp is exact for this event"
    for name in ("langevin_composition", "paper_thm", "zhang2017_thm4"):
        assert fast.not_consulted[name].startswith("paper-specific")
    full = best(event, 1e-5, exhaustive=True)
    assert full.epsilon == fast.epsilon and full.accountant == "gdp" and full.exact
    assert min(full.by_accountant.values()) >= fast.epsilon * (1 - 1e-9)
    assert {"zcdp", "rdp", "pld"} <= set(full.by_accountant)
    assert "gdp is exact" in str(fast) and fast.to_dict()["not_consulted"] == fast.not_consulted


def test_best_asks_cheap_accountants_before_pld():
    # Explicit accountants, PLD listed first: gdp is still asked first and answers alone.
    pld, gdp = get_accountant("pld"), get_accountant("gdp")
    res = best(SelfComposed(Gaussian(3.0), 20), 1e-5, [pld, gdp])
    assert res.accountant == "gdp" and res.not_consulted == {"pld": "gdp is exact for this event"}
    assert res.exact and res.by_accountant == {"gdp": res.epsilon}


def test_best_skips_refusing_accountants():
    # Pure DP composed with Gaussians: GDP and PLD cannot bound it, zCDP and RDP can.
    event = Composed((EpsilonDelta(0.1), SelfComposed(Gaussian(5.0), 10)))
    res = best(event, 1e-6, _core())
    assert set(res.by_accountant) == {"zcdp", "rdp"}
    assert set(res.refused) == {"gdp", "pld"}
    assert res.epsilon == min(res.by_accountant.values())
    assert res.accountant == min(res.by_accountant, key=res.by_accountant.__getitem__)


def test_best_with_explicit_accountants():
    event = SelfComposed(Gaussian(3.0), 10)
    res = best(event, 1e-5, [get_accountant("zcdp"), get_accountant("rdp")])
    assert set(res.by_accountant) == {"zcdp", "rdp"}
    assert res.accountant == "zcdp"  # CKS20 over continuous alpha beats the finite grid


@pytest.mark.parametrize("event", [NonPrivate(), Unknown()])
def test_best_raises_when_nothing_bounds_the_event(event):
    with pytest.raises(UnsupportedEventError):
        best(event, 1e-5)  # every registered accountant refuses these


def test_core_accountants_refuse_approximate_dp():
    with pytest.raises(UnsupportedEventError):
        best(EpsilonDelta(1.0, 1e-6), 1e-5, _core())


def test_registration_order():
    names = [a.name for a in available_accountants()]
    assert names[:4] == ["gdp", "zcdp", "rdp", "pld"]
    for acc in available_accountants():
        assert acc.theorem  # every accountant names its theorem


@pytest.mark.parametrize("name", ["gdp", "zcdp", "rdp", "pld"])
@pytest.mark.parametrize("event", [NonPrivate(), Unknown()])
def test_every_accountant_refuses_non_private_and_unknown_events(name, event):
    acc = get_accountant(name)
    with pytest.raises(UnsupportedEventError, match=type(event).__name__ + "|non-private|Non"):
        acc.epsilon(event, 1e-5)
    assert not acc.supports(event)


@pytest.mark.parametrize("name", ["gdp", "zcdp", "rdp", "pld"])
def test_delta_epsilon_round_trip_every_accountant(name):
    acc = get_accountant(name)
    event = SelfComposed(Gaussian(4.0), 25)
    delta = 1e-6
    eps = acc.epsilon(event, delta)
    back = acc.delta(event, eps)
    # Delta at the reported epsilon meets the target, and not by a wide margin.
    assert back <= delta * (1 + 1e-6)
    assert back >= delta * 0.5


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 1.5, math.nan])
def test_invalid_delta_raises(delta):
    with pytest.raises(ValueError, match="delta"):
        best(SelfComposed(Gaussian(1.0), 2), delta)


def test_non_numeric_delta_and_bad_event():
    with pytest.raises(TypeError):
        best(Gaussian(1.0), "small")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        best("gaussian", 1e-5)  # type: ignore[arg-type]


def test_mixing_relations_raises():
    with pytest.raises(ValueError, match="neighbouring"):
        Composed((Gaussian(1.0), Gaussian(1.0, 2.0, Neighbouring.REPLACE_ONE)))


def test_include_and_exhaustive_must_be_bools():
    with pytest.raises(TypeError, match="include_paper"):
        best(Gaussian(1.0), 1e-5, include_paper=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="exhaustive"):
        best(Gaussian(1.0), 1e-5, exhaustive="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Accountant"):
        best(Gaussian(1.0), 1e-5, ["gdp"])  # type: ignore[list-item]


def test_unknown_accountant_name():
    with pytest.raises(KeyError, match="available"):
        get_accountant("moments")


def test_printed_theorems_name_the_subsampling_results_the_event_rests_on():
    """PLD names Zhu-Dong-Wang's dominating pair only for an event that samples without
    replacement, and RDP names the subsampled curve's paper (MTZ19 for Poisson, WBK19 without
    replacement) only where the event has that sampling; an unsampled event gets the plain
    theorem. Composites are searched."""
    from noisygd.accounting.events import (
        Composed,
        Neighbouring,
        PoissonSampled,
        SampledWithoutReplacement,
    )

    r1 = Neighbouring.REPLACE_ONE
    plain = SelfComposed(Gaussian(2.0), 30)
    poisson = SelfComposed(PoissonSampled(0.01, Gaussian(2.0)), 100)
    wor = SelfComposed(SampledWithoutReplacement(10, 1000, Gaussian(2.0, 2.0, r1)), 100)
    mixed = Composed([SelfComposed(Gaussian(2.0, 2.0, r1), 3), wor])
    pld, rdp = get_accountant("pld"), get_accountant("rdp")
    assert "Zhu-Dong-Wang" in pld.theorem  # the class's full statement
    for event, wor_named, poisson_named in ((plain, False, False), (poisson, False, True),
                                            (wor, True, False), (mixed, True, False)):
        assert ("Zhu-Dong-Wang" in pld.theorem_for(event)) is wor_named
        assert ("Wang-Balle-Kasiviswanathan" in rdp.theorem_for(event)) is wor_named
        assert ("Mironov-Talwar-Zhang" in rdp.theorem_for(event)) is poisson_named
        assert pld.theorem_for(event).startswith("privacy loss distributions")
        assert rdp.theorem_for(event).startswith(rdp.theorem)
    res = best(poisson, 1e-5, exhaustive=True)
    assert res.theorems["pld"] == pld.theorem_for(poisson)
    assert "Zhu-Dong-Wang" not in res.theorems["pld"]
