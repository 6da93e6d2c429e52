r"""NoisyGD's planned ridge (:mod:`noisygd.solvers.ridge`) in NoisySGD and DP-FTRL.

NoisySGD (``method_options={"l2": "auto"}``, what the estimators' ``l2=None`` asks for) adds
it to the objective it descends and plans for that objective: the plan and the run are those
of an objective that carries the ridge itself, noise for noise. DP-FTRL takes its comparator
radius :math:`\sqrt{2F_0/\lambda_r}` for its regret bound's ``D`` and leaves the objective
alone: the event and the noise are those of the same ``D`` declared.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from test_noisy_gd_plan import _oracle  # the same small data sets (tests/solvers)

from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.events import Neighbouring
from noisygd.estimators import DPLinearRegression, DPLogisticRegression
from noisygd.objectives.glm import LogisticLoss, SquaredLoss
from noisygd.planning import RIDGE_STATUS
from noisygd.solvers import Budget, PublicFacts
from noisygd.solvers.dp_ftrl import PLANNED_RIDGE_DISTANCE, DPFTRLSolver, ridge_distance
from noisygd.solvers.noisy_sgd import NoisySGDSolver
from noisygd.solvers.ridge import RidgedOracle, planned_ridge, ridge_record, with_ridge

ADD = Neighbouring.ADD_REMOVE


def _facts(oracle, n, options, relation=ADD):
    """The facts of ``oracle`` with a clip of 1 (least squares states no Lipschitz constant)."""
    return PublicFacts.from_oracle(oracle, n_samples=n, relation=relation, options=options,
                                   clip=1.0)


# ------------------------------------------------------------------------------ with_ridge


def test_with_ridge_states_the_regularised_objective_s_facts():
    """l2 and the strong convexity grow by the ridge, and the optimum's bound is
    sqrt(2 F0 / l2') (F0 = log 2 for the logistic loss), as RidgedOracle states it."""
    oracle = _oracle(LogisticLoss(l2=1e-3))
    facts = _facts(oracle, 600.0, {})
    ridged = with_ridge(facts, 4e-3)
    assert ridged.l2 == pytest.approx(5e-3)
    assert ridged.constants.strong_convexity == pytest.approx(5e-3)
    assert ridged.optimum_norm_bound == pytest.approx(math.sqrt(2 * math.log(2) / 5e-3))
    ref = _facts(RidgedOracle(oracle, 4e-3), 600.0, {})
    assert ridged.optimum_norm_bound == pytest.approx(ref.optimum_norm_bound, rel=1e-12)
    assert ridged.constants == ref.constants
    assert with_ridge(facts, 0.0) is facts
    with pytest.raises(ValueError):
        with_ridge(facts, -1.0)


def test_with_ridge_keeps_a_radius_bound():
    """With a projection ball the optimum's bound is the radius, ridge or not."""
    facts = _facts(_oracle(LogisticLoss(l2=1e-3, radius=2.0)), 600.0, {})
    assert with_ridge(facts, 0.5).optimum_norm_bound == facts.optimum_norm_bound == 2.0


def test_ridge_record_labels_the_ridge_a_heuristic():
    assert ridge_record(0.0) == {}
    assert ridge_record(0.3) == {"l2_planned": 0.3, "l2_planned_status": RIDGE_STATUS}


# ----------------------------------------------------------------------------- the solvers


@pytest.mark.parametrize("objective", [LogisticLoss(l2=1e-5),
                                       SquaredLoss(l2=1e-5, target_bound=1.0)])
def test_dp_ftrl_comparator_radius_is_the_planned_ridge_s_bound(objective):
    """Without a declared D the regret bound's comparator radius is the smaller of the
    objective's sqrt(2 F0 / l2) and the planned ridge's sqrt(2 F0 / lambda_r); lambda* is the
    regret bound's minimiser at that D; the objective, the noise and the event are unchanged."""
    oracle = _oracle(objective)
    budget = Budget(1.0, 1e-5, mu=0.4)
    solver = DPFTRLSolver()
    facts = _facts(oracle, 600.0, {})
    plan = solver.plan(facts, budget)
    lam_r = planned_ridge(facts, budget, 0.4, "auto")
    want = math.sqrt(2 * facts.loss_at_zero_bound / lam_r)
    assert want < facts.optimum_norm_bound  # here the planned ridge's bound is the smaller
    assert ridge_distance(facts, budget, 0.4) == pytest.approx(want, rel=1e-12)
    assert plan.distance == pytest.approx(want, rel=1e-12)
    assert plan.distance_source == PLANNED_RIDGE_DISTANCE
    # the same plan as with that D declared, but for the label
    given = solver.plan(_facts(oracle, 600.0, {"optimum_norm_bound": want}), budget)
    assert (given.l2_ftrl, given.noise_multiplier, given.regret_bound) == pytest.approx(
        (plan.l2_ftrl, plan.noise_multiplier, plan.regret_bound), rel=1e-12)
    assert given.distance_source == "given"
    # the theorem's bound where it is the smaller (a ridge above the planned one)
    strong = _facts(_oracle(type(objective)(**{**_kwargs(objective), "l2": 10 * lam_r})),
                    600.0, {})
    assert solver.plan(strong, budget).distance == pytest.approx(strong.optimum_norm_bound)
    assert solver.plan(strong, budget).distance_source == "derived"
    # the run: the objective's own l2, and the tree's event of the plan's noise
    result = solver.run(plan, oracle, np.random.default_rng(3))
    assert result.event == solver.planned_event(plan) == solver.planned_event(given)
    assert result.info["plan"]["distance_source"] == PLANNED_RIDGE_DISTANCE


def _kwargs(objective):
    return ({"target_bound": 1.0} if isinstance(objective, SquaredLoss) else {})


def test_dp_ftrl_plans_an_unregularised_objective_from_the_planned_ridge():
    """l2 = 0 states no bound on ||w*||: the planned ridge's radius replaces it (before, the
    plan refused); a projection ball or no F0 keeps the former rule."""
    from noisygd.exceptions import AssumptionError

    budget = Budget(1.0, 1e-5, mu=0.4)
    facts = _facts(_oracle(LogisticLoss(l2=0.0)), 600.0, {})
    assert facts.optimum_norm_bound is None
    plan = DPFTRLSolver().plan(facts, budget)
    assert plan.distance_source == PLANNED_RIDGE_DISTANCE and plan.distance > 0
    ball = _facts(_oracle(LogisticLoss(l2=0.0, radius=3.0)), 600.0, {})
    assert ridge_distance(ball, budget, 0.4) is None
    assert DPFTRLSolver().plan(ball, budget).distance == 3.0
    no_f0 = dataclasses.replace(facts, loss_at_zero_bound=None)
    assert ridge_distance(no_f0, budget, 0.4) is None
    with pytest.raises(AssumptionError, match="optimum_norm_bound"):
        DPFTRLSolver().plan(no_f0, budget)
    # an l2_ftrl given needs no D: none is chosen for it
    fixed = DPFTRLSolver().plan(_facts(_oracle(LogisticLoss(l2=0.0)), 600.0,
                                       {"l2_ftrl": 50.0}), budget)
    assert fixed.l2_ftrl == 50.0 and fixed.distance is None


@pytest.mark.parametrize("objective", [LogisticLoss(l2=0.0),
                                       SquaredLoss(l2=0.0, target_bound=1.0)])
def test_noisy_sgd_plans_noisy_gd_s_ridge_and_runs_on_the_ridged_objective(objective):
    oracle = _oracle(objective)
    budget = Budget(1.0, 1e-5)
    solver = NoisySGDSolver()
    plan = solver.plan(_facts(oracle, 600.0, {"l2": "auto"}), budget)
    mu = calibrate_mu(1.0, 1e-5)  # no prior release: the budget's whole mu
    lam = planned_ridge(_facts(oracle, 600.0, {}), budget, mu, "auto")
    assert plan.ridge == pytest.approx(lam, rel=1e-12) and lam > 0
    ref_oracle = RidgedOracle(oracle, lam)
    ref = solver.plan(_facts(ref_oracle, 600.0, {}), budget)
    assert dataclasses.replace(ref, ridge=plan.ridge) == plan  # batch, T, z, step, momentum
    a = solver.run(plan, oracle, np.random.default_rng(4))
    b = solver.run(ref, ref_oracle, np.random.default_rng(4))
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-12, atol=1e-14)
    assert a.event == b.event == solver.planned_event(plan)
    assert a.info["plan"]["l2"] == pytest.approx(lam, rel=1e-12)
    assert a.info["plan"]["l2_planned_status"] == RIDGE_STATUS


def test_noisy_sgd_ridge_reads_the_run_s_mu_after_a_prior_release():
    """With a prior release (the private count) the ridge is planned at the run's mu, the
    budget's less the prior's in quadrature: a larger ridge than with no prior."""
    from noisygd.accounting.events import Gaussian
    from noisygd.accounting.gdp import gaussian_mu

    oracle = _oracle(LogisticLoss(l2=0.0))
    prior = Gaussian(20.0)
    budget = Budget(1.0, 1e-5, prior_event=prior)
    plan = NoisySGDSolver().plan(_facts(oracle, 600.0, {"l2": "auto"}), budget)
    mu = math.sqrt(calibrate_mu(1.0, 1e-5) ** 2 - gaussian_mu(prior) ** 2)
    assert plan.ridge == pytest.approx(
        planned_ridge(_facts(oracle, 600.0, {}), budget, mu, "auto"), rel=1e-12)
    assert plan.ridge > NoisySGDSolver().plan(_facts(oracle, 600.0, {"l2": "auto"}),
                                              Budget(1.0, 1e-5)).ridge


# --------------------------------------------------------------------------- the estimators


def _regression_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(800, 5))
    return X, X @ np.linspace(-1, 1, 5) + 0.5 * rng.normal(size=800)


def _models(method, **kw):
    X, y = _regression_data()
    yield DPLinearRegression(method=method, epsilon=1.0, random_state=0, **kw).fit(X, y), X, y
    yield DPLogisticRegression(method=method, epsilon=1.0, classes=[0, 1], random_state=0,
                               **kw).fit(X, (y > 0).astype(int)), X, (y > 0).astype(int)


def test_estimators_default_l2_with_noisy_sgd_is_the_planned_ridge():
    for model, X, y in _models("noisy_sgd"):
        plan = model.fit_info_["plans"][0]["plan"]
        assert plan["l2_planned"] > 0 and plan["l2_planned_status"] == RIDGE_STATUS
        assert model.l2_ == pytest.approx(plan["l2_planned"], rel=1e-12)  # objective's own: 0
        again = type(model)(**model.get_params()).fit(X, y)
        np.testing.assert_array_equal(again.coef_, model.coef_)  # same seed, same model
    for given, _, _ in _models("noisy_sgd", l2=1e-3):
        assert given.l2_ == 1e-3
        assert "l2_planned" not in given.fit_info_["plans"][0]["plan"]


def test_estimators_dp_ftrl_keeps_its_objective_and_takes_the_ridge_s_radius():
    for model, _, _ in _models("dp_ftrl"):
        plan = model.fit_info_["plans"][0]["plan"]
        assert plan["distance_source"] == PLANNED_RIDGE_DISTANCE
        assert model.l2_ == type(model)._L2_DEFAULT and "l2_planned" not in plan
    for declared, _, _ in _models("dp_ftrl", method_options={"optimum_norm_bound": 0.5}):
        assert declared.fit_info_["plans"][0]["plan"]["distance_source"] == "given"
