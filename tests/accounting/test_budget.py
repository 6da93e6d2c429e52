"""Budget arithmetic owned by accounting: tolerance, Gaussian split, zCDP budget, checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.accounting import (
    BUDGET_RTOL,
    Composed,
    Gaussian,
    GaussianAccountant,
    Neighbouring,
    SelfComposed,
    budget_for_zcdp,
    calibrate_mu,
    check_delta,
    check_epsilon,
    split_gaussian_budget,
    within_budget,
    zcdp_rho,
)
from noisygd.accounting.gdp import gdp_epsilon

GDP = GaussianAccountant()


# ----------------------------------------------------------------- budget tolerance
def test_within_budget_uses_the_one_relative_tolerance():
    assert BUDGET_RTOL == 1e-9
    assert within_budget(1.0, 1.0)
    assert within_budget(1.0 + 0.5e-9, 1.0)
    assert not within_budget(1.0 + 2e-9, 1.0)
    assert within_budget(0.0, 0.0) and not within_budget(1e-12, 0.0)
    assert not within_budget(math.inf, 10.0) and within_budget(5.0, math.inf)


@pytest.mark.parametrize("spent, budget, exc", [
    (-1.0, 1.0, ValueError), (1.0, -1.0, ValueError), (math.nan, 1.0, ValueError),
    ("1", 1.0, TypeError), (1.0, True, TypeError),
])
def test_within_budget_checks_its_arguments(spent, budget, exc):
    with pytest.raises(exc):
        within_budget(spent, budget)


# ------------------------------------------------------------ Gaussian budget split
@pytest.mark.parametrize("eps, delta, k, f", [
    (1.0, 1e-5, 1, 0.01), (0.3, 1e-6, 2, 0.05), (8.0, 1e-9, 10, 0.2), (1.0, 1e-5, 3, 0.0),
])
def test_split_composes_back_to_the_budget(eps, delta, k, f):
    mu, mu_count, mu_k = split_gaussian_budget(eps, delta, k, f)
    assert mu == calibrate_mu(eps, delta)
    assert mu_count == pytest.approx(math.sqrt(f) * mu, rel=1e-15)
    assert mu_k == pytest.approx(mu * math.sqrt((1 - f) / k), rel=1e-15)
    # DRS22 Cor. 3.3: the count and the K runs compose to mu-GDP, which meets the budget
    # (exactly, up to rounding) under the exact accountant.
    parts = [SelfComposed(Gaussian(1.0 / mu_k), k)]
    if f > 0:
        parts.insert(0, Gaussian(1.0 / mu_count))
    spent = GDP.epsilon(Composed(tuple(parts)), delta)
    assert within_budget(spent, eps)
    assert spent == pytest.approx(eps, rel=1e-7)
    # Each run alone is worth at most the whole budget.
    assert gdp_epsilon(mu_k, delta) <= eps


@pytest.mark.parametrize("kwargs, exc", [
    ({"n_problems": 0}, ValueError), ({"n_problems": 2.0}, TypeError),
    ({"count_fraction": 1.0}, ValueError), ({"count_fraction": -0.1}, ValueError),
    ({"count_fraction": "0.1"}, TypeError), ({"epsilon": 0.0}, ValueError),
])
def test_split_checks_its_arguments(kwargs, exc):
    args = {"epsilon": 1.0, "delta": 1e-5, "n_problems": 2, "count_fraction": 0.01, **kwargs}
    with pytest.raises(exc):
        split_gaussian_budget(**args)


# ------------------------------------------------------------------ zCDP budget units
def test_budget_for_zcdp_closed_form():
    assert budget_for_zcdp(0.1) == pytest.approx(0.2)
    assert budget_for_zcdp(0.1, Neighbouring.REPLACE_ONE) == pytest.approx(0.05)
    assert budget_for_zcdp(0.1, "replace_one") == pytest.approx(0.05)
    with pytest.raises(ValueError):
        budget_for_zcdp(0.0)
    with pytest.raises(TypeError):
        budget_for_zcdp("0.1")  # type: ignore[arg-type]


@pytest.mark.parametrize("relation", list(Neighbouring))
def test_a_run_spending_the_budget_is_exactly_rho_zcdp(relation):
    # Any noise schedule with sum_t sigma_t^-2 = R, on clipped sums of the relation's
    # sensitivity, is rho-zCDP by the zcdp accountant (Bun-Steinke Prop. 1.6, Lemma 1.7).
    rho = 0.37
    R = budget_for_zcdp(rho, relation)
    w = np.random.default_rng(3).uniform(0.5, 2.0, 50)
    sigmas = np.sqrt(w.sum() / (w * R))  # sum sigma^-2 = R
    delta_ = relation.clipped_sum_sensitivity
    run = Composed(tuple(Gaussian(float(s), delta_, relation) for s in sigmas))
    assert zcdp_rho(run) == pytest.approx(rho, rel=1e-12)


# ------------------------------------------------------------------- argument checks
def test_check_delta_and_epsilon_follow_the_checks_policy():
    assert check_delta(1e-5) == 1e-5 and check_epsilon(np.float64(2.0)) == 2.0
    for bad in ("0.1", None, True, 1j):
        with pytest.raises(TypeError):
            check_delta(bad)
        with pytest.raises(TypeError):
            check_epsilon(bad)
    for bad in (0.0, 1.0, -1e-5, math.nan):
        with pytest.raises(ValueError, match="delta"):
            check_delta(bad)
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="epsilon"):
            check_epsilon(bad)


def test_messages_show_the_value_as_passed():
    # epsilon = 1e-9 is valid; a bad tiny value is printed as given, not rounded to 0.0.
    assert check_epsilon(1e-9) == 1e-9
    with pytest.raises(ValueError, match=r"got -1e-09$"):
        check_epsilon(-1e-9)
    with pytest.raises(ValueError, match=r"got 1.000000001$"):
        check_delta(1.0 + 1e-9)  # out of range, shown in full (not as 1.0)
