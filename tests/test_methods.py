"""The built-in solvers through the estimators (`method=`), and the budget they spend."""

from __future__ import annotations

import numpy as np
import pytest

from noisygd.accounting import best
from noisygd.accounting.events import Composed, Gaussian, PoissonSampled, SelfComposed
from noisygd.estimators import DPHuberRegressor, DPLogisticRegression
from noisygd.solvers import SOLVERS, get_solver


def _binary(n=3000, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y = (X @ np.ones(d) > 0).astype(int)
    return X, y


def test_named_methods():
    assert {"noisy_gd", "noisy_sgd", "dp_ftrl", "langevin", "output_perturbation",
            "rrpsgd"} == set(SOLVERS)
    with pytest.raises(ValueError, match="unknown method"):
        get_solver("nope")


def test_noisy_sgd_pays_for_the_count_in_one_calibration():
    X, y = _binary()
    model = DPLogisticRegression(epsilon=1.0, method="noisy_sgd", classes=[0, 1],
                                 random_state=0).fit(X, y)
    event = model.privacy_.event
    assert isinstance(event, Composed)
    count, sgd = event.events
    assert isinstance(count, Gaussian)
    assert isinstance(sgd, SelfComposed) and isinstance(sgd.event, PoissonSampled)
    # The whole release meets the budget, and uses most of it (calibration is tight).
    assert 0.95 <= model.privacy_.epsilon <= 1.0
    assert model.score(X, y) > 0.85


def test_noisy_sgd_refuses_replace_one():
    X, y = _binary(n=500)
    with pytest.raises(ValueError, match="add_remove"):
        DPLogisticRegression(method="noisy_sgd", neighbouring="replace_one",
                             classes=[0, 1]).fit(X, y)


def test_noisy_sgd_needs_single_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) / 2
    y = rng.integers(0, 3, size=300)
    with pytest.raises(ValueError, match="single"):
        DPLogisticRegression(method="noisy_sgd", classes=[0, 1, 2]).fit(X, y)


def test_dp_ftrl_is_a_tree_event_under_replace_one():
    X, y = _binary()
    model = DPLogisticRegression(epsilon=1.0, method="dp_ftrl", neighbouring="replace_one",
                                 classes=[0, 1], random_state=0).fit(X, y)
    event = model.privacy_.event
    assert type(event).__name__ == "TreeAggregation"
    plan = model.fit_info_["plans"][0]["plan"]
    assert plan["l2_ftrl_source"].startswith("regret bound") and plan["regret_bound"] > 0
    # The tree is a Gaussian mechanism: the exact accountant applies and the budget is spent.
    assert model.privacy_.by_accountant["gdp"] == pytest.approx(1.0, rel=1e-6)
    assert model.score(X, y) > 0.8
    with pytest.raises(ValueError, match="replace_one"):
        DPLogisticRegression(method="dp_ftrl", classes=[0, 1]).fit(X, y)


def test_langevin_uses_the_last_iterate_accountant():
    X, y = _binary(n=2000)
    model = DPLogisticRegression(epsilon=1.0, method="langevin", neighbouring="replace_one",
                                 l2=0.05, max_iter=300, classes=[0, 1],
                                 random_state=0).fit(X, y)
    assert model.privacy_.accountant == "langevin_last_iterate"
    assert model.privacy_.epsilon <= 1.0 + 1e-9
    plan = model.fit_info_["plans"][0]["plan"]
    # No radius: Lemma 6 does not apply, and the plan says so instead of printing a number.
    assert plan["excess_risk_bound"] is None and "radius" in plan["excess_risk_bound_reason"]
    # The composition baseline (a paper-specific accountant, consulted on request) is looser.
    full = best(model.privacy_.event, model.delta, include_paper=True)
    assert full.by_accountant["langevin_composition"] >= model.privacy_.epsilon
    with pytest.raises(ValueError, match="replace_one"):
        DPLogisticRegression(method="langevin", classes=[0, 1], l2=0.05).fit(X, y)


def test_regressor_with_noisy_sgd():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4000, 3)) / 2
    y = np.clip(X @ np.array([0.5, -0.5, 0.2]), -1, 1)
    model = DPHuberRegressor(method="noisy_sgd", random_state=0).fit(X, y)
    assert model.privacy_.epsilon <= 1.0
    assert model.score(X, y) > 0.5


def test_same_budget_same_event_recomputed():
    """The reported epsilon is what an independent call of `best` gives for the event."""
    X, y = _binary(n=800)
    model = DPLogisticRegression(method="noisy_gd", classes=[0, 1], random_state=0).fit(X, y)
    again = best(model.privacy_.event, model.delta)
    assert again.epsilon == pytest.approx(model.privacy_.epsilon, rel=1e-12)


def test_output_perturbation_method():
    X, y = _binary(n=2000)
    model = DPLogisticRegression(epsilon=1.0, method="output_perturbation", l2=0.1,
                                 neighbouring="replace_one", classes=[0, 1],
                                 random_state=0).fit(X, y)
    assert type(model.privacy_.event).__name__ == "OutputPerturbation"
    assert model.privacy_.epsilon <= 1.0 + 1e-9
    assert model.score(X, y) > 0.8
    with pytest.raises(ValueError, match="clip"):
        DPLogisticRegression(method="output_perturbation", l2=0.1, clip=1.0,
                             neighbouring="replace_one", classes=[0, 1]).fit(X, y)


def test_rrpsgd_method_reports_both_accounts():
    X, y = _binary(n=150)
    model = DPLogisticRegression(epsilon=1.0, delta=1e-3, method="rrpsgd",
                                 neighbouring="replace_one", classes=[0, 1],
                                 random_state=0).fit(X, y)
    assert model.privacy_.epsilon <= 1.0
    paper = model.fit_info_["plans"][0]["paper_argument"]
    assert paper["accountant"] == "zhang2017_thm4"
    # The paper's argument is looser than the tight account of the same run.
    assert paper["epsilon"] > model.privacy_.epsilon
    X_big, y_big = _binary(n=5000)
    with pytest.raises(ValueError, match="max_iter"):
        DPLogisticRegression(method="rrpsgd", neighbouring="replace_one",
                             classes=[0, 1]).fit(X_big, y_big)
