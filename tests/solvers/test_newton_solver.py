"""method="newton" through the solver interface, fit_private and the estimators."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import log_loss, r2_score

from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.events import Composed, Gaussian, Neighbouring
from noisygd.estimators import CONDITIONING_RELEASES, DPLinearRegression, DPLogisticRegression
from noisygd.exceptions import AssumptionError
from noisygd.objectives.glm import LogisticLoss, SquaredLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.planning import NEWTON_MOMENTUM, newton_momentum
from noisygd.solvers import Budget, NewtonSolver, PublicFacts, get_solver
from noisygd.solvers.newton import (
    DEFAULT_DIAGONAL_STEPS,
    MAX_FULL_PARAMS,
    with_ruled_momentum,
)
from noisygd.training import fit_private


def _well_specified(n=20_000, d=10, seed=0):
    """Rows in the unit ball, labels from a logistic model with ||w|| = 3 and a bias."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / math.sqrt(d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w = rng.standard_normal(d)
    w *= 3.0 / np.linalg.norm(w)
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ w + 0.5)))).astype(int)
    return X, y


def _facts(objective=None, n=1000, d=4, **kw):
    objective = objective or LogisticLoss(l2=1e-3)
    return PublicFacts.from_objective(objective, d, row_norm_bound=1.0, n_samples=n,
                                      relation="add_remove", **kw)


def test_newton_reaches_sklearns_training_loss_at_eps_8():
    X, y = _well_specified()
    model = DPLogisticRegression(epsilon=8.0, method="newton", classes=[0, 1],
                                 random_state=0).fit(X, y)
    reference = LogisticRegression(C=1e6, max_iter=1000).fit(X, y)
    ours = log_loss(y, model.predict_proba(X)[:, 1])
    theirs = log_loss(y, reference.predict_proba(X)[:, 1])
    assert ours - theirs <= 0.002
    assert model.privacy_.epsilon <= 8.0 * (1 + 1e-9)
    plan = model.fit_info_["plans"][0]["plan"]
    assert plan["steps"] == model.n_iter_[0] == 10


def test_same_seed_same_model():
    X, y = _well_specified(n=3000, d=5)
    a = DPLogisticRegression(epsilon=1.0, method="newton", classes=[0, 1], random_state=7)
    b = DPLogisticRegression(epsilon=1.0, method="newton", classes=[0, 1], random_state=7)
    c = DPLogisticRegression(epsilon=1.0, method="newton", classes=[0, 1], random_state=8)
    a.fit(X, y)
    b.fit(X, y)
    c.fit(X, y)
    assert np.array_equal(a.coef_, b.coef_) and a.intercept_ == b.intercept_
    assert not np.array_equal(a.coef_, c.coef_)


def test_fit_private_pays_for_the_count_in_one_gaussian_budget():
    X, y = _well_specified(n=4000, d=3)
    oracle = ArrayOracle(LogisticLoss(l2=1e-3), X, y, row_norm_bound=1.0)
    fit = fit_private([oracle], method="newton", epsilon=1.0, delta=1e-5,
                      rng=np.random.default_rng(0))
    event = fit.event
    assert isinstance(event, Composed)
    assert event.events[0] == Gaussian(event.events[0].noise_multiplier, sensitivity=1.0)
    assert fit.privacy.epsilon <= 1.0 * (1 + 1e-9)
    assert fit.privacy.epsilon == pytest.approx(1.0, rel=1e-6)  # the whole budget is used
    assert "count" in fit.info["n_samples_source"].lower()


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_estimator_under_both_relations(relation):
    X, y = _well_specified(n=4000, d=4)
    model = DPLogisticRegression(epsilon=2.0, method="newton", neighbouring=relation,
                                 classes=[0, 1], random_state=0).fit(X, y)
    assert model.privacy_.epsilon <= 2.0 * (1 + 1e-9)
    assert model.score(X, y) > 0.6


def test_secure_mode():
    X, y = _well_specified(n=3000, d=3)
    model = DPLogisticRegression(epsilon=2.0, method="newton", secure=True,
                                 classes=[0, 1]).fit(X, y)
    assert model.privacy_.epsilon <= 2.0 * (1 + 1e-9)
    assert model.privacy_.accountant in ("zcdp", "rdp")


def test_linear_regression_with_newton():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((20_000, 5)) / math.sqrt(5)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = X @ np.array([1.0, -2.0, 0.5, 0.0, 1.0]) + 0.2 * rng.standard_normal(20_000)
    model = DPLinearRegression(epsilon=8.0, method="newton", random_state=0).fit(X, y)
    plan = model.fit_info_["plans"][0]["plan"]
    assert plan["hessian_steps"] == [0] and plan["constant_hessian"]
    ours = r2_score(y, model.predict(X))
    # the estimator's defaults (domain, clip, ridge) limit every method alike: Newton is
    # judged against AdaSSP's one-shot release under the same defaults, and the ceiling
    ssp = DPLinearRegression(epsilon=8.0, method="ssp", random_state=0).fit(X, y)
    assert ours >= r2_score(y, ssp.predict(X)) - 0.01
    assert ours <= r2_score(y, LinearRegression().fit(X, y).predict(X))


def _softmax_data(n=20_000, d=6, K=4, seed=0):
    """Rows in the unit ball, labels from a softmax model with weights N(0, 3^2 / d)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / math.sqrt(d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    W = rng.standard_normal((K, d)) * 3.0
    y = np.argmax(X @ W.T + rng.gumbel(size=(n, K)), axis=1)
    return X, y


def test_multinomial_newton_reaches_sklearns_training_loss_at_eps_8():
    """The softmax loss's curvature sums (ArrayOracle) let Newton fit K > 2 classes as one
    multinomial problem: within 0.005 of the unregularised optimum's training log loss, in
    its 10 steps, inside the budget, and the same model from the same seed."""
    X, y = _softmax_data()
    fit = dict(epsilon=8.0, method="newton", classes=[0, 1, 2, 3], random_state=0)
    model = DPLogisticRegression(**fit).fit(X, y)
    reference = LogisticRegression(C=1e6, max_iter=2000).fit(X, y)
    ours, theirs = log_loss(y, model.predict_proba(X)), log_loss(y, reference.predict_proba(X))
    assert ours - theirs <= 0.005
    assert model.fit_info_["method"] == "newton" and model.n_iter_[0] == 10
    assert model.coef_.shape == (4, 6) and model.privacy_.epsilon <= 8.0 * (1 + 1e-9)
    plan = model.fit_info_["plans"][0]["plan"]
    # the curvature clip is the softmax loss's smoothness B~^2 / 2 at the released bound
    assert plan["curvature_clip"] == pytest.approx(
        0.5 * (model.conditioning_["row_norm_bound"] ** 2
               + model.conditioning_["intercept_scale"] ** 2), rel=1e-9)
    again = DPLogisticRegression(**fit).fit(X, y)
    assert np.array_equal(again.coef_, model.coef_)


def test_the_multinomial_default_chooses_by_the_same_public_rule():
    """method="auto" on K > 2 classes: Newton where NoisyGD's budget binds and the curvature
    release resolves the curvature (n = 20 000 at eps 8), NoisyGD where it would not (the
    premise, n = 2 000 at eps 1); fit_info_ says which and why, the ledger's label too."""
    X, y = _softmax_data(n=20_000)
    chosen = DPLogisticRegression(epsilon=8.0, classes=[0, 1, 2, 3], random_state=0).fit(X, y)
    assert chosen.fit_info_["method"] == "newton"
    assert chosen.fit_info_["method_choice"]["rule"].startswith("Newton: ")
    assert chosen.privacy_.epsilon <= 8.0 * (1 + 1e-9)
    X, y = _softmax_data(n=2000)
    kept = DPLogisticRegression(epsilon=1.0, classes=[0, 1, 2, 3], random_state=0).fit(X, y)
    assert kept.fit_info_["method"] == "noisy_gd"
    assert "would not resolve the curvature" in kept.fit_info_["method_choice"]["rule"]


def test_the_diagonal_form_is_refused_for_k_margins():
    """Newton's diagonal preconditioner (p > MAX_FULL_PARAMS) has a step rule proven for one
    margin only: planned multinomial facts refuse it, before any data is read."""
    from noisygd.objectives.multinomial import MultinomialLogisticLoss

    facts = PublicFacts.from_objective(MultinomialLogisticLoss(n_classes=5, l2=1e-3), 300,
                                       row_norm_bound=1.0, n_samples=10_000,
                                       relation="add_remove")
    assert facts.margins == 5 and facts.n_params > MAX_FULL_PARAMS
    with pytest.raises(ValueError, match="one margin, not for 5 margins"):
        NewtonSolver().plan(facts, Budget(1.0, 1e-5))
    small = dataclasses.replace(facts, n_params=5 * 11)
    assert NewtonSolver().plan(small, Budget(1.0, 1e-5)).hessian == "full"
    assert _facts().margins == 1


def test_plan_options():
    solver = get_solver("newton")
    assert isinstance(solver, NewtonSolver) and solver.gaussian and solver.secure_mode
    budget = Budget(1.0, 1e-5)
    assert solver.plan(_facts(), budget).steps == 10
    assert solver.plan(_facts(max_iter=4), budget).steps == 4
    assert solver.plan(_facts(options={"steps": 15}), budget).steps == 15
    plan = solver.plan(_facts(options={"eigenvalue_rule": "clip", "tail": 2}), budget)
    assert plan.eigenvalue_rule == "clip" and plan.tail == 2
    with pytest.raises(TypeError, match="unknown method_options for method='newton'"):
        solver.plan(_facts(options={"stepz": 3}), budget)
    # the declared smoothness is the curvature clip (logistic: (B^2 + 1) / 4)
    assert solver.plan(_facts(), budget).curvature_clip == pytest.approx(0.5)
    with pytest.raises(ValueError, match="row_nonzeros"):  # an oracle without the histogram
        solver.plan(dataclasses.replace(_facts(d=MAX_FULL_PARAMS), row_nonzero_counts=None),
                    budget)
    wide = solver.plan(_facts(d=MAX_FULL_PARAMS, options={"row_nonzeros": 11}), budget)
    assert wide.hessian == "diagonal" and wide.step_scale == pytest.approx(1 / 11)
    # the diagonal form: T = ceil(6 sqrt(m)), momentum 1 - 1/sqrt(m), one curvature release
    # at step 0, equal gradient noise and the last half averaged
    assert wide.steps == math.ceil(6 * math.sqrt(11)) and wide.hessian_steps == (0,)
    assert wide.momentum == pytest.approx(1 - 1 / math.sqrt(11)) and wide.tail == 10
    assert len(set(wide.gradient_noise)) == 1
    # no declaration: the paid row support, where the oracle serves its histogram
    paid = solver.plan(_facts(d=MAX_FULL_PARAMS), budget)
    assert paid.nnz_noise is not None and paid.adaptive_steps
    assert paid.steps == DEFAULT_DIAGONAL_STEPS and paid.hessian_steps == (0,)
    assert paid.summary()["mu"] == pytest.approx(calibrate_mu(1.0, 1e-5), rel=1e-12)
    assert solver.plan(_facts(d=MAX_FULL_PARAMS - 1), budget).hessian == "full"
    squared = solver.plan(_facts(SquaredLoss(l2=1e-3, target_bound=1.0), clip=1.0), budget)
    assert squared.hessian_steps == (0,)



def test_the_full_forms_momentum_is_the_plans_noise_regimes():
    """The full form's Nesterov momentum is newton_momentum(q), q = sqrt(p) z_0 / n from the
    plan (public); the user's option, a constant Hessian and the diagonal form keep theirs;
    the event does not depend on it."""
    solver, budget = NewtonSolver(), Budget(1.0, 1e-5)
    plan = solver.plan(_facts(n=1000, d=4), budget)
    q = math.sqrt(plan.n_params) * plan.gradient_noise[0] / 1000
    assert plan.details["noise_to_signal"] == pytest.approx(q, rel=1e-12)
    assert plan.momentum == pytest.approx(newton_momentum(q), rel=1e-12)
    assert plan.summary()["momentum"] == plan.momentum
    assert solver.plan(_facts(n=10**7), budget).momentum == NEWTON_MOMENTUM
    assert solver.plan(_facts(n=50), budget).momentum == 0.0
    assert solver.plan(_facts(n=10**7, options={"momentum": 0.1}), budget).momentum == 0.1
    off = solver.plan(_facts(n=1000, d=4, options={"momentum": 0.0}), budget)
    assert off.momentum == 0.0 and off.event == plan.event
    squared = solver.plan(_facts(SquaredLoss(l2=1e-3, target_bound=1.0), n=10**7, clip=1.0),
                          budget)
    assert squared.momentum == 0.0 and "noise_to_signal" not in squared.details
    assert with_ruled_momentum(off, 1000).momentum == plan.momentum
    with pytest.raises(ValueError, match="n_samples"):
        with_ruled_momentum(off, 0.0)


def test_the_momentum_lengthens_the_steps_toward_a_far_optimum():
    """One feature nearly separates the classes, so the logistic curvature at the optimum is
    far below the step-0 release the approach uses; at a negligible noise the rule's momentum
    ends nearer the optimum in the same 10 steps (training log loss)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, (5000, 4)) / 2.0
    y = (rng.random(5000) < 1 / (1 + np.exp(-40.0 * X[:, 0]))).astype(int)
    losses = {}
    for label, options in (("rule", None), ("none", {"momentum": 0.0})):
        model = DPLogisticRegression(epsilon=1e4, method="newton", classes=[0, 1],
                                     random_state=0, feature_bounds=(-np.ones(4) / 2,
                                                                     np.ones(4) / 2),
                                     method_options=options).fit(X, y)
        assert model.n_iter_[0] == 10
        losses[label] = log_loss(y, model.predict_proba(X)[:, 1])
    assert losses["rule"] < losses["none"] - 0.005

def test_plan_refuses_without_a_curvature_bound():
    facts = _facts()
    facts = dataclasses.replace(facts, constants=dataclasses.replace(facts.constants,
                                                                     smoothness=None))
    with pytest.raises(AssumptionError, match="smoothness"):
        NewtonSolver().plan(facts, Budget(1.0, 1e-5))
    assert NewtonSolver().plan(dataclasses.replace(facts, options={"curvature_clip": 0.3}),
                               Budget(1.0, 1e-5)).curvature_clip == 0.3


def test_planned_mu_meets_a_split_budget():
    plan = NewtonSolver().plan(_facts(), Budget(1.0, 1e-5, mu=0.3))
    assert plan.summary()["mu"] == pytest.approx(0.3, rel=1e-12)
    assert plan.relation is Neighbouring.ADD_REMOVE


def test_planned_ridge_option():
    solver = NewtonSolver()
    budget = Budget(1.0, 1e-5)
    assert solver.plan(_facts(), budget).ridge == 0.0
    assert solver.plan(_facts(options={"l2": 0.01}), budget).ridge == 0.01
    auto = solver.plan(_facts(options={"l2": "auto"}), budget)
    # ridge_strength at the tail's mu: sqrt(d) C Delta / (n mu D_0), D_0 = sqrt(2 n F_0)
    d0 = math.sqrt(2 * 1000 * math.log(2))
    expected = math.sqrt(5) * math.sqrt(2) / (1000 * auto.tail_mu() * d0)
    assert auto.ridge == pytest.approx(expected, rel=1e-12)
    assert auto.summary()["l2_planned"] == auto.ridge
    assert solver.plan(_facts(options={"l2": "auto", "l2_factor": 0.5}), budget).ridge == \
        pytest.approx(0.5 * auto.ridge)
    with pytest.raises(ValueError, match="'auto' or a number"):
        solver.plan(_facts(options={"l2": "big"}), budget)
    X, y = _well_specified(n=3000, d=4)
    model = DPLogisticRegression(epsilon=1.0, method="newton", l2=0.0, classes=[0, 1],
                                 method_options={"l2": "auto"}, random_state=0).fit(X, y)
    assert model.l2_ == pytest.approx(model.fit_info_["plans"][0]["plan"]["l2_planned"])


def test_auto_choice_of_newton_keeps_noisy_gds_planned_ridge():
    # method="auto" choosing Newton carries NoisyGD's ridge options over: the chosen plan's
    # ridge is Newton's own plan of l2="auto" (0 was the bug: options={}).
    from noisygd.solvers.auto import ChoosingSolver, SecondOrderPlan

    budget = Budget(200.0, 1e-5)
    facts = _facts(n=3000, d=10, options={"l2": "auto", "plan": {"step_budget": 100}})
    chosen = ChoosingSolver().plan(facts, budget)  # NoisyGD's budget: 100 of 1,246 steps
    assert isinstance(chosen, SecondOrderPlan), chosen[0].details.get("method_choice")
    own = NewtonSolver().plan(_facts(n=3000, d=10, options={"l2": "auto"}), budget)
    assert chosen.plan.ridge > 0
    assert chosen.plan.ridge == pytest.approx(own.ridge, rel=1e-12)


def test_auto_rule_compares_the_fractions_each_method_keeps():
    # Newton iff NoisyGD's budget binds and T_max / T_want < mu_tail^2 / mu^2 (choose_method)
    from noisygd.planning import NoisyGDPlan
    from noisygd.solvers.auto import choose_method, gradient_share

    newton_plan = NewtonSolver().plan(_facts(n=10_000, d=10), Budget(1.0, 1e-5))
    g, h = newton_plan.mu_squares()
    kept = gradient_share(newton_plan)
    tail = sum(g[newton_plan.steps - newton_plan.tail:])
    assert kept == pytest.approx(tail / (sum(g) + sum(h)), rel=1e-12)
    assert 0 < kept < 1

    def gd(wanted, budget=1000):
        details = {"unconstrained_steps": float(wanted), "compute_budget": budget,
                   "compute_budget_binds": wanted > budget}
        return NoisyGDPlan(1.0, min(wanted, budget), 1.0, "constant", "last",
                           newton_plan.relation and _facts().constants.regime, "12.2.2", 1.0,
                           1.0, details=details)

    facts = _facts()
    assert choose_method(gd(900), facts, newton_plan)[0] == "noisy_gd"  # within its budget
    edge = 1000 / kept  # T_max / T_want == kept: NoisyGD keeps as much, NoisyGD stays
    assert choose_method(gd(edge * 0.99), facts, newton_plan)[0] == "noisy_gd"
    method, why = choose_method(gd(edge * 1.01), facts, newton_plan)
    assert method == "newton" and f"{kept:.3g}" in why
    assert choose_method(gd(10**6), facts, None)[0] == "noisy_gd"  # no Newton plan


def test_auto_needs_a_curvature_release_that_resolves_the_curvature():
    """choose_method's premise: Newton only where its planned eigenvalue floor is at most the
    mean curvature per direction (curvature_floor_ratio <= 1), whatever the fractions."""
    from noisygd.planning import NoisyGDPlan
    from noisygd.solvers.auto import choose_method, curvature_floor_ratio

    budget = Budget(1.0, 1e-5)
    resolved = NewtonSolver().plan(_facts(n=10_000, d=10), budget)
    # the same facts, 40 rows: the floor that the capped curvature share can buy is far above
    # the curvature of 40 rows
    unresolved = NewtonSolver().plan(_facts(n=40, d=10), budget)
    assert curvature_floor_ratio(resolved) <= 1.0 < curvature_floor_ratio(unresolved)
    assert curvature_floor_ratio(resolved) == resolved.details["hessian_noise_ratio"]
    details = {"unconstrained_steps": 1e9, "compute_budget": 1000, "compute_budget_binds": True}
    gd = NoisyGDPlan(1.0, 1000, 1.0, "constant", "last", _facts().constants.regime, "12.2.2",
                     1.0, 1.0, details=details)
    assert choose_method(gd, _facts(), resolved)[0] == "newton"
    method, why = choose_method(gd, _facts(), unresolved)
    assert method == "noisy_gd" and "would not resolve the curvature" in why


def test_auto_floor_steps_keep_the_default_step_length():
    """floor_steps: T = floor(T0 (1 + r) / (1 + r0)), T0 = 10 where r <= r0, at most 19 where
    Newton is chosen (r <= 1); the re-planned run keeps the releases and the output's noise."""
    from noisygd.algorithms.newton import DEFAULT_STEPS
    from noisygd.solvers.auto import ChoosingSolver, SecondOrderPlan, floor_steps, gradient_share

    budget = Budget(1.0, 1e-5)
    base = NewtonSolver().plan(_facts(n=10_000, d=10), budget)
    r0 = base.details["hessian_ratio_target"]
    for r, steps in ((0.0, 10), (r0, 10), (0.5, math.floor(10 * 1.5 / (1 + r0))),
                     (1.0, math.floor(20 / (1 + r0)))):
        plan = dataclasses.replace(base, details={**base.details, "hessian_noise_ratio": r})
        assert floor_steps(plan) == steps >= DEFAULT_STEPS
    assert floor_steps(dataclasses.replace(base, details={**base.details,
                                                          "hessian_noise_ratio": 1.0})) == 19
    # the diagonal form (p > MAX_FULL_PARAMS) keeps its own steps, chosen or not
    wide = _facts(n=1_000_000, d=3000, options={"plan": {"step_budget": 100}})
    diagonal = NewtonSolver().plan(dataclasses.replace(wide, options={}), budget)
    assert diagonal.hessian == "diagonal" and floor_steps(diagonal) == diagonal.steps
    chosen_wide = ChoosingSolver().plan(wide, Budget(8.0, 1e-5))
    assert isinstance(chosen_wide, SecondOrderPlan)
    assert chosen_wide.plan.hessian == "diagonal"
    assert chosen_wide.plan.steps == NewtonSolver().plan(
        dataclasses.replace(wide, options={}), Budget(8.0, 1e-5)).steps
    assert "curvature floor" not in chosen_wide.choice["rule"]
    # a multinomial problem whose floor is between r0 and 1: the chosen run takes more steps
    from noisygd.objectives.multinomial import MultinomialLogisticLoss

    facts = PublicFacts.from_objective(
        MultinomialLogisticLoss(n_classes=7, l2=1e-4), 50, row_norm_bound=1.0,
        n_samples=100_000, relation="add_remove", options={"plan": {"step_budget": 100}})
    budget = Budget(8.0, 1e-5)
    plain = NewtonSolver().plan(dataclasses.replace(facts, options={}), budget)
    r = plain.details["hessian_noise_ratio"]
    assert r0 < r <= 1.0
    chosen = ChoosingSolver().plan(facts, budget)
    assert isinstance(chosen, SecondOrderPlan)
    assert chosen.plan.steps == floor_steps(plain) > DEFAULT_STEPS
    assert f"{chosen.plan.steps} steps for its curvature floor" in chosen.choice["rule"]
    assert chosen.plan.hessian_noise == plain.hessian_noise
    assert gradient_share(chosen.plan) == pytest.approx(gradient_share(plain), rel=1e-12)


def test_newton_estimator_plans_its_ridge_like_noisy_gd():
    # l2=None with method="newton" is the planned ridge (method_options {"l2": "auto"}), not
    # the estimators' fixed 1e-4 on top of it
    X, y = _well_specified(n=3000, d=4)
    model = DPLogisticRegression(epsilon=1.0, method="newton", classes=[0, 1],
                                 random_state=0).fit(X, y)
    plan = model.fit_info_["plans"][0]["plan"]
    assert plan["l2_planned"] > 0
    assert model.l2_ == pytest.approx(plan["l2_planned"], rel=1e-12)  # the objective's is 0
    # labelled a heuristic: ridge_strength's horizon is not this run's (issue 19, item 3)
    from noisygd.planning import RIDGE_STATUS

    assert plan["l2_planned_status"] == RIDGE_STATUS and "heuristic" in RIDGE_STATUS
    gd = DPLogisticRegression(epsilon=1.0, method="noisy_gd", classes=[0, 1],
                              random_state=0).fit(X, y)
    assert gd.fit_info_["plans"][0]["plan"]["l2_planned_status"] == RIDGE_STATUS


def test_ledger_label_names_the_method_auto_ran(tmp_path):
    from noisygd.ledger import Ledger

    X, y = _well_specified(n=3000, d=4)
    with Ledger(str(tmp_path / "l.db")) as ledger:
        ledger.set_budget("d", 400.0, 1e-5)
        # a large budget: NoisyGD's rule wants far more steps than its budget; Newton runs
        model = DPLogisticRegression(
            feature_range_share=0.0, epsilon=200.0, classes=[0, 1], random_state=0,
                                     ledger=ledger, dataset="d").fit(X, y)
        assert model.fit_info_["method"] == "newton", model.fit_info_["method_choice"]
        small = DPLogisticRegression(
            feature_range_share=0.0, epsilon=1.0, classes=[0, 1], random_state=0,
                                     ledger=ledger, dataset="d").fit(X, y)
        assert small.fit_info_["method"] == "noisy_gd"
        # the default's private conditioning is its own release, recorded before each fit's
        releases = [r for r in ledger.releases("d") if r.algorithm.split("/")[1] not in (
            *CONDITIONING_RELEASES, "feature_scale")]
        assert [r.algorithm for r in releases] == ["DPLogisticRegression/newton",
                                                   "DPLogisticRegression/noisy_gd"]
        assert releases[0].settled_at is not None  # private n: the reservation, relabelled
        DPLogisticRegression(
            feature_range_share=0.0, epsilon=200.0, classes=[0, 1], random_state=0, ledger=ledger,
                             dataset="d", n_samples_public=3000).fit(X, y)  # public n
        last = ledger.releases("d")[-1]
        assert last.algorithm == "DPLogisticRegression/newton"
        assert last.parameters["method_run"] == "newton" and last.parameters["method"] == "auto"


@pytest.mark.parametrize("public_n", [True, False])
def test_unsupported_loss_is_refused_before_any_spend(tmp_path, public_n):
    """Huber's phi'' jumps, so it states no self-concordance constant: Newton refuses it
    before the ledger's reservation."""
    from noisygd.estimators import DPHuberRegressor
    from noisygd.ledger import Ledger
    from noisygd.objectives.glm import HuberLoss

    X, _ = _well_specified(n=300, d=3)
    y = X @ np.array([1.0, -1.0, 0.5])
    with Ledger(str(tmp_path / "l.db")) as ledger:
        ledger.set_budget("d", 2.0, 1e-5)
        with pytest.raises(TypeError, match=r"curvature sums"):
            DPHuberRegressor(epsilon=1.0, method="newton",
                             n_samples_public=300 if public_n else None,
                             ledger=ledger, dataset="d").fit(X, y)
        assert ledger.releases("d") == []
        # fit_private itself: refused before the ledger's reservation (private n)
        oracle = ArrayOracle(HuberLoss(), X, y, row_norm_bound=1.0)
        with pytest.raises(TypeError, match="curvature sums"):
            fit_private([oracle], method="newton", epsilon=1.0, delta=1e-5,
                        n_samples_public=300 if public_n else None,
                        rng=np.random.default_rng(0), ledger=ledger, dataset="d")
        assert ledger.releases("d") == []
    facts = PublicFacts.from_oracle(oracle, n_samples=300, relation="add_remove")
    assert facts.curvature_sums is False
    assert PublicFacts.from_objective(HuberLoss(), 3, row_norm_bound=1.0, n_samples=300,
                                      relation="add_remove").curvature_sums is False
    with pytest.raises(TypeError, match="curvature sums"):
        NewtonSolver().plan(facts, Budget(1.0, 1e-5))
    assert _facts().curvature_sums is True
