"""RDP accountant: curves (Mironov 2017), conversion equal to dp_accounting's RdpAccountant."""

from __future__ import annotations

import math
from dataclasses import dataclass

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dp_rdp

from noisygd.accounting import (
    Composed,
    DpEvent,
    EpsilonDelta,
    Gaussian,
    Neighbouring,
    NonPrivate,
    RDPAccountant,
    SelfComposed,
    UnsupportedEventError,
    rdp_curve,
)
from noisygd.accounting.rdp import DEFAULT_ORDERS, rdp_to_delta, rdp_to_epsilon

ACC = RDPAccountant()


@dataclass(frozen=True)
class Unknown(DpEvent):
    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring.ADD_REMOVE


def test_default_orders_are_dp_accountings():
    assert np.array_equal(np.asarray(DEFAULT_ORDERS), np.asarray(dp_rdp.DEFAULT_RDP_ORDERS))
    assert any(a != int(a) for a in DEFAULT_ORDERS)  # fractional orders included


def test_gaussian_curve_and_additive_composition():
    orders = np.array([1.5, 2.0, 10.0, 256.0])
    assert np.allclose(rdp_curve(Gaussian(2.0, 1.0), orders), orders / 8.0, rtol=1e-15)
    c = Composed((Gaussian(2.0), SelfComposed(Gaussian(1.0, 3.0), 5)))
    assert np.allclose(rdp_curve(c, orders), orders / 8 + 5 * orders * 9 / 2, rtol=1e-15)
    assert np.all(rdp_curve(SelfComposed(Gaussian(1.0), 0), orders) == 0.0)


def test_pure_dp_curve_is_min_of_eps_and_zcdp():
    orders = np.array([1.1, 2.0, 4.0, 100.0])
    eps = 0.5
    expected = np.minimum(eps, orders * eps**2 / 2)  # [0.1375, 0.25, 0.5, 0.5]
    assert np.allclose(rdp_curve(EpsilonDelta(eps), orders), expected, rtol=1e-15)


def _peer_epsilon(dp_event, delta, orders=None):
    acc = dp_rdp.RdpAccountant(orders=orders)
    return acc.compose(dp_event).get_epsilon(delta)


CASES = [
    (Gaussian(1.0), dp_accounting.GaussianDpEvent(1.0)),
    (
        SelfComposed(Gaussian(10.0), 100),
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(10.0), 100),
    ),
    (SelfComposed(Gaussian(100.0), 1), dp_accounting.GaussianDpEvent(100.0)),
    (
        SelfComposed(Gaussian(1.0), 10_000),
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(1.0), 10_000),
    ),
    (
        SelfComposed(Gaussian(6.0, sensitivity=3.0), 7),
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.0), 7),
    ),
    (
        Composed((Gaussian(3.0), SelfComposed(Gaussian(0.7), 3))),
        dp_accounting.ComposedDpEvent(
            [
                dp_accounting.GaussianDpEvent(3.0),
                dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(0.7), 3),
            ]
        ),
    ),
]


@pytest.mark.parametrize("event, peer_event", CASES)
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-8, 1e-12])
def test_epsilon_equals_dp_accounting_rdp(event, peer_event, delta):
    assert ACC.epsilon(event, delta) == pytest.approx(_peer_epsilon(peer_event, delta), rel=1e-12)


@pytest.mark.parametrize("event, peer_event", CASES)
@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0])
def test_delta_equals_dp_accounting_rdp(event, peer_event, eps):
    peer = dp_rdp.RdpAccountant().compose(peer_event).get_delta(eps)
    assert ACC.delta(event, eps) == pytest.approx(peer, rel=1e-10, abs=1e-300)


def test_custom_orders_equal_dp_accounting():
    orders = [1.25, 2.0, 3.5, 8.0, 32.0, 100.0]
    acc = RDPAccountant(orders)
    ev = SelfComposed(Gaussian(2.0), 50)
    peer = _peer_epsilon(
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.0), 50), 1e-6, orders
    )
    assert acc.epsilon(ev, 1e-6) == pytest.approx(peer, rel=1e-12)
    assert acc.epsilon(ev, 1e-6) >= ACC.epsilon(ev, 1e-6)  # coarser grid is never tighter


@pytest.mark.parametrize("alpha, tau, delta", [(2.0, 0.3, 1e-5), (32.0, 4.0, 1e-9)])
def test_conversion_closed_forms(alpha, tau, delta):
    # Single order: CKS20 Prop. 12 beats the classical tau + log(1/delta)/(alpha - 1).
    eps, order = rdp_to_epsilon([alpha], [tau], delta)
    cks = tau + math.log1p(-1 / alpha) - (math.log(delta) + math.log(alpha)) / (alpha - 1)
    assert order == alpha
    assert eps == pytest.approx(cks, rel=1e-15)
    assert eps < tau + math.log(1 / delta) / (alpha - 1)
    d, _ = rdp_to_delta([alpha], [tau], eps)
    assert d == pytest.approx(delta, rel=1e-9)


def test_low_orders_use_classical_conversion():
    eps, _ = rdp_to_epsilon([1.005], [0.01], 1e-5)
    assert eps == pytest.approx(0.01 + math.log(1e5) / (1.005 - 1.0), rel=1e-14)


@pytest.mark.parametrize(
    "event",
    [NonPrivate(), Unknown(), EpsilonDelta(1.0, 1e-6), Composed((Gaussian(1.0), Unknown()))],
)
def test_refusals(event):
    with pytest.raises(UnsupportedEventError):
        ACC.epsilon(event, 1e-5)
    with pytest.raises(UnsupportedEventError):
        ACC.delta(event, 1.0)


@pytest.mark.parametrize("orders", [[1.0, 2.0], [0.5], [], [2.0, math.inf], [[2.0]]])
def test_invalid_orders_raise(orders):
    with pytest.raises(ValueError):
        RDPAccountant(orders)


def test_invalid_curves_and_delta_raise():
    with pytest.raises(ValueError):
        rdp_to_epsilon([2.0, 3.0], [0.1], 1e-5)
    with pytest.raises(ValueError):
        rdp_to_epsilon([2.0], [-0.1], 1e-5)
    with pytest.raises(ValueError):
        ACC.epsilon(Gaussian(1.0), 0.0)
