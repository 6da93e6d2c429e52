"""Event classes: validation, immutability and neighbouring relations."""

from __future__ import annotations

import dataclasses
import math

import pytest

from noisygd.accounting import (
    Composed,
    EpsilonDelta,
    Gaussian,
    Neighbouring,
    NonPrivate,
    PoissonSampled,
    SampledWithoutReplacement,
    SelfComposed,
)

ADD = Neighbouring.ADD_REMOVE
REP = Neighbouring.REPLACE_ONE


def test_gaussian_mu_is_sensitivity_over_noise():
    assert Gaussian(4.0).mu == 0.25
    assert Gaussian(4.0, sensitivity=2.0, relation=REP).mu == 0.5
    assert Gaussian(math.inf).mu == 0.0


def test_relation_is_coerced_from_string():
    g = Gaussian(1.0, relation="replace_one")
    assert g.relation is REP and g.neighbouring is REP
    assert EpsilonDelta(1.0, relation="add_remove").neighbouring is ADD


@pytest.mark.parametrize(
    "kwargs",
    [
        {"noise_multiplier": 0.0},
        {"noise_multiplier": -1.0},
        {"noise_multiplier": math.nan},
        {"noise_multiplier": 1.0, "sensitivity": 0.0},
        {"noise_multiplier": 1.0, "sensitivity": math.inf},
    ],
)
def test_gaussian_rejects_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        Gaussian(**kwargs)


def test_gaussian_rejects_non_numbers():
    with pytest.raises(TypeError):
        Gaussian("1.0")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Gaussian(True)  # type: ignore[arg-type]


def test_events_are_frozen_and_hashable():
    e = SelfComposed(Gaussian(1.0), 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.count = 4  # type: ignore[misc]
    assert hash(e) == hash(SelfComposed(Gaussian(1.0), 3))
    assert e == SelfComposed(Gaussian(1.0), 3)


def test_self_composed_validation():
    with pytest.raises(ValueError):
        SelfComposed(Gaussian(1.0), -1)
    with pytest.raises(TypeError):  # a float is never a count (noisygd._checks policy)
        SelfComposed(Gaussian(1.0), 2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        SelfComposed("gaussian", 2)  # type: ignore[arg-type]
    assert SelfComposed(Gaussian(1.0, relation=REP), 2).neighbouring is REP


def test_composing_different_relations_raises():
    with pytest.raises(ValueError, match="neighbouring"):
        Composed((Gaussian(1.0, relation=ADD), Gaussian(1.0, sensitivity=2.0, relation=REP)))
    with pytest.raises(ValueError):
        Composed(())
    c = Composed([Gaussian(1.0, relation=REP), EpsilonDelta(1.0, relation=REP)])
    assert isinstance(c.events, tuple) and c.neighbouring is REP


def test_sampled_events_carry_their_relation():
    assert PoissonSampled(0.1, Gaussian(1.0)).neighbouring is ADD
    with pytest.raises(ValueError):
        PoissonSampled(0.1, Gaussian(1.0, relation=REP))
    with pytest.raises(ValueError):
        PoissonSampled(1.5, Gaussian(1.0))
    s = SampledWithoutReplacement(10, 100, Gaussian(1.0, 2.0, REP))
    assert s.rate == 0.1 and s.neighbouring is REP
    with pytest.raises(ValueError):
        SampledWithoutReplacement(10, 100, Gaussian(1.0))
    with pytest.raises(ValueError):
        SampledWithoutReplacement(101, 100, Gaussian(1.0, 2.0, REP))


def test_epsilon_delta_validation():
    with pytest.raises(ValueError):
        EpsilonDelta(-1.0)
    with pytest.raises(ValueError):
        EpsilonDelta(math.inf)
    with pytest.raises(ValueError):
        EpsilonDelta(1.0, 1.0)
    assert NonPrivate().neighbouring is ADD
