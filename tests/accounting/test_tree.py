"""TreeAggregation event: node counts, mu, hooks and agreement with dp_accounting."""

from __future__ import annotations

import itertools
import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant

from noisygd.accounting import (
    Neighbouring,
    best,
    gaussian_mu,
    get_accountant,
    rdp_curve,
    to_dp_accounting,
    zcdp_rho,
)
from noisygd.accounting.tree import TreeAggregation, max_squared_node_count, tree_event


def _brute_force(steps: int, epochs: int, restart_every: int | None) -> int:
    """Enumerate the complete dyadic nodes of each tree and count leaves per node."""
    s = steps // epochs
    R = steps if restart_every is None else restart_every
    best_total = 0
    for p in range(s):
        counts: dict[tuple[int, int, int], int] = {}
        for k in range(epochs):
            leaf = p + k * s
            tree, local = divmod(leaf, R)
            length = min(R, steps - tree * R)
            h = 0
            while (1 << h) <= length:
                lo = (local >> h) << h
                if lo + (1 << h) <= length:  # node [lo, lo + 2^h) is complete
                    counts[(tree, h, lo)] = counts.get((tree, h, lo), 0) + 1
                h += 1
        best_total = max(best_total, sum(c * c for c in counts.values()))
    return best_total


@pytest.mark.parametrize(
    "steps,epochs,restart",
    [(1, 1, None), (7, 1, None), (8, 1, None), (100, 1, None), (8, 2, None), (12, 3, None),
     (30, 5, None), (30, 5, 6), (64, 4, 16), (21, 3, 7), (40, 4, 8)],
)
def test_node_count_matches_enumeration(steps: int, epochs: int, restart: int | None) -> None:
    assert max_squared_node_count(steps, epochs, restart) == _brute_force(steps, epochs, restart)


@pytest.mark.parametrize("T", [1, 2, 3, 7, 8, 9, 1000, 1024, 60000])
def test_single_epoch_count_is_floor_log2_plus_one(T: int) -> None:
    # each leaf is in at most floor(log2 T) + 1 = ceil(log2(T + 1)) complete nodes
    assert TreeAggregation(1.0, T).squared_node_count == math.floor(math.log2(T)) + 1
    assert math.ceil(math.log2(T + 1)) == math.floor(math.log2(T)) + 1


@pytest.mark.parametrize("z,T", [(1.0, 100), (3.7, 1000), (10.0, 4096)])
def test_single_epoch_matches_dp_accounting_tree_rdp(z: float, T: int) -> None:
    # dp_accounting's SingleEpochTreeAggregationDpEvent (Kairouz et al. 2021, App. D) is
    # accounted under REPLACE_SPECIAL with unit per-leaf sensitivity; replace-one doubles it,
    # i.e. noise multiplier z / 2.
    ev = TreeAggregation(z, T)
    orders = np.array([1.5, 2.0, 8.0, 64.0])
    acc = rdp_privacy_accountant.RdpAccountant(
        orders, dp_accounting.NeighboringRelation.REPLACE_SPECIAL
    )
    acc.compose(dp_accounting.SingleEpochTreeAggregationDpEvent(z / 2, T))
    np.testing.assert_allclose(rdp_curve(ev, orders), acc.rdp, rtol=1e-12)


def test_hooks_are_consistent() -> None:
    ev = tree_event(2.0, 500, epochs=3)
    mu = 2.0 * math.sqrt(max_squared_node_count(1500, 3)) / 2.0
    assert gaussian_mu(ev) == pytest.approx(mu)
    assert zcdp_rho(ev) == pytest.approx(mu * mu / 2)
    tr = to_dp_accounting(ev)
    assert tr.noise_multiplier == pytest.approx(2.0 / mu)
    res = best(ev, 1e-5, exhaustive=True)
    assert res.accountant in ("gdp", "pld")
    assert res.by_accountant["pld"] == pytest.approx(res.by_accountant["gdp"], rel=1e-3)
    assert res.by_accountant["gdp"] < res.by_accountant["zcdp"]


def test_restarts_and_multiple_epochs() -> None:
    single = tree_event(1.0, 256)
    multi = tree_event(1.0, 256, epochs=4)
    restarted = tree_event(1.0, 256, epochs=4, restart_every_epoch=True)
    assert restarted.squared_node_count == 4 * single.squared_node_count
    assert multi.squared_node_count > restarted.squared_node_count  # shared ancestors
    assert multi.mu > restarted.mu > single.mu
    # the root of one tree over 4 epochs holds all 4 leaves: m = 4 contributes 16
    assert multi.squared_node_count >= 16


def test_refuses_add_remove_and_bad_input() -> None:
    with pytest.raises(ValueError, match="replace-one"):
        TreeAggregation(1.0, 10, relation=Neighbouring.ADD_REMOVE)
    with pytest.raises(ValueError, match="multiple of epochs"):
        TreeAggregation(1.0, 10, epochs=3)
    with pytest.raises(ValueError):
        TreeAggregation(0.0, 10)
    with pytest.raises(ValueError):
        tree_event(1.0, 0)


def test_pld_accountant_on_tree() -> None:
    ev = tree_event(5.0, 1000)
    eps_pld = get_accountant("pld").epsilon(ev, 1e-5)
    eps_gdp = get_accountant("gdp").epsilon(ev, 1e-5)
    assert eps_pld == pytest.approx(eps_gdp, rel=1e-3)


def test_enumeration_cases_cover_products() -> None:
    for steps, epochs in itertools.product([6, 12], [1, 2, 3]):
        assert max_squared_node_count(steps, epochs) == _brute_force(steps, epochs, None)
