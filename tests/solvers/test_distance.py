"""NoisyGD's initial distance (:mod:`noisygd.solvers.distance`): where it comes from, the
distance pilot's event and determinism, and the compute budget through an honest distance."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from noisygd.accounting import Composed, Gaussian, SelfComposed
from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.gdp import gaussian_mu
from noisygd.algorithms.newton import curvature_sensitivity
from noisygd.estimators import DPLogisticRegression
from noisygd.planning import RIDGE_STATUS, ComputeBudgetWarning
from noisygd.solvers.distance import (
    DECLARED,
    DEFAULT_PILOT_SHARE,
    GIVEN,
    PAID,
    PILOT_MIN_DISTANCE,
    PILOT_MIN_STEPS,
    PILOT_SAFETY,
    RELEASED,
    THEOREM,
    paid_distance,
    pilot_share,
    released_distance,
)

DELTA = 1e-5
N, P = 20000, 10


@pytest.fixture(scope="module")
def data():
    """Logistic labels on rows in the unit ball, ||w|| = 4: the theorem's horizon is far above
    the floor of 100 steps at epsilon 1 (the pilot applies)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, P)) / math.sqrt(P)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w = rng.standard_normal(P)
    w *= 4.0 / np.linalg.norm(w)
    y = (rng.random(N) < 1.0 / (1.0 + np.exp(-X @ w))).astype(int)
    return X, y


def _fit(data, options=None, **kwargs):
    X, y = data
    kwargs.setdefault("method", "noisy_gd")
    kwargs.setdefault("epsilon", 1.0)
    model = DPLogisticRegression(delta=DELTA, classes=[0, 1], random_state=0,
                                 n_samples_public=N, conditioning_share=0.0,
                                 method_options=options, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ComputeBudgetWarning)
        model.fit(X, y)
    return model, model.fit_info_["plans"][0]["plan"]


def _theorem(plan):
    """sqrt(2 F0 / l2) with F0 = log 2 (the logistic loss at zero) and the run's l2."""
    return math.sqrt(2.0 * math.log(2.0) / plan["l2"])


# ------------------------------------------------------------------ the source, each case
def test_default_is_the_theorem_bound_labelled(data):
    _, plan = _fit(data)
    assert plan["init_distance_source"] == THEOREM
    assert plan["init_distance"] == pytest.approx(_theorem(plan), rel=1e-12)
    assert "distance_pilot" not in plan
    assert plan["l2_planned_status"] == RIDGE_STATUS  # the ridge: a heuristic balance


def test_every_fit_with_a_planned_ridge_labels_it_a_heuristic(data):
    for options, method in (({"distance_pilot": True}, "noisy_gd"), (None, "newton"),
                            (None, "auto")):
        model, plan = _fit(data, options, method=method)
        assert plan["l2_planned_status"] == RIDGE_STATUS, (method, model.fit_info_["method"])


def test_a_declared_bound_below_the_theorem_s_is_used(data):
    _, plan = _fit(data, {"optimum_norm_bound": 6.0})
    assert plan["init_distance_source"] == DECLARED
    assert plan["init_distance"] == 6.0
    _, theorem_plan = _fit(data)
    assert plan["steps"] < theorem_plan["steps"]  # T* grows like sqrt(D)


def test_a_declared_bound_above_the_theorem_s_gives_way_to_it(data):
    _, plan = _fit(data, {"optimum_norm_bound": 1e9})
    assert plan["init_distance_source"] == THEOREM
    assert plan["init_distance"] == pytest.approx(_theorem(plan), rel=1e-12)


def test_a_given_planner_distance_is_labelled_given(data):
    _, plan = _fit(data, {"plan": {"init_distance": 2.5}})
    assert plan["init_distance_source"] == GIVEN and plan["init_distance"] == 2.5


def test_the_paid_estimate_is_labelled_and_follows_its_rule(data):
    _, plan = _fit(data, {"distance_pilot": True})
    pilot = plan["distance_pilot"]
    assert plan["init_distance_source"] == PAID
    assert pilot["share"] == DEFAULT_PILOT_SHARE
    # D = min(||theta_p|| + sqrt(2 F0 / l2), max(kappa ||theta_p||, D_min)), never above the
    # theorem's bound on ||theta_p - theta*||
    norm, theorem = pilot["released_norm"], _theorem(plan)
    assert pilot["theorem_bound"] == pytest.approx(theorem, rel=1e-12)
    assert plan["init_distance"] == pytest.approx(
        min(norm + theorem, max(PILOT_SAFETY * norm, PILOT_MIN_DISTANCE)), rel=1e-12)
    assert plan["init_distance"] < theorem
    assert plan["steps"] < pilot["planned_steps_at_theorem_bound"]


def test_no_pilot_with_a_fixed_step_count(data):
    _, plan = _fit(data, {"distance_pilot": True}, max_iter=200)
    assert plan["steps"] == 200 and "distance_pilot" not in plan
    assert plan["init_distance_source"] == THEOREM


def test_no_pilot_without_curvature_sums(data):
    # the multinomial loss serves no curvature sums (Newton's pilot cannot run on it)
    X, _ = data
    y3 = np.digitize(X[:, 0], [-0.1, 0.1])
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1, 2], random_state=0,
                                 n_samples_public=N, conditioning_share=0.0,
                                 method_options={"distance_pilot": True})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ComputeBudgetWarning)
        model.fit(X, y3)
    plan = model.fit_info_["plans"][0]["plan"]
    assert "distance_pilot" not in plan and plan["init_distance_source"] == THEOREM


def test_no_pilot_below_the_pilot_s_minimum_horizon(data):
    # 2000 rows: the theorem's horizon wants 206 steps (above the floor of 100, below
    # PILOT_MIN_STEPS = 400): the pilot's share would buy at most a few steps
    X, y = data
    kwargs = {"epsilon": 1.0, "classes": [0, 1], "random_state": 0, "method": "noisy_gd",
              "n_samples_public": 2000, "conditioning_share": 0.0}
    plain = DPLogisticRegression(**kwargs).fit(X[:2000], y[:2000])
    wanted = plain.fit_info_["plans"][0]["plan"]["unconstrained_steps"]
    assert 100 < wanted < PILOT_MIN_STEPS
    model = DPLogisticRegression(**kwargs, method_options={"distance_pilot": True}).fit(
        X[:2000], y[:2000])
    plan = model.fit_info_["plans"][0]["plan"]
    assert "distance_pilot" not in plan and plan["init_distance_source"] == THEOREM
    np.testing.assert_array_equal(model.coef_, plain.coef_)


def test_no_pilot_at_the_floor():
    # 300 rows: 2 ceil(T*) is below the floor of 100 steps, a smaller D cannot cut a step
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0,
                                 method="noisy_gd", n_samples_public=300,
                                 conditioning_share=0.0,
                                 method_options={"distance_pilot": True}).fit(X, y)
    plan = model.fit_info_["plans"][0]["plan"]
    assert plan["steps"] == 100 and "distance_pilot" not in plan
    assert plan["init_distance_source"] == THEOREM


# ------------------------------------------------------------------ the pilot's event
def test_the_piloted_event_is_the_pilot_then_noisy_gd_at_the_rest(data):
    model, plan = _fit(data, {"distance_pilot": True})
    mu = calibrate_mu(1.0, DELTA)
    event = model.privacy_.event
    pilot_event, rest = event.events  # public n: the run's event alone, pilot then NoisyGD
    assert isinstance(pilot_event, Composed)
    pilot = plan["distance_pilot"]
    # re-accounted from the closed forms: Newton's releases at mu_p = sqrt(s) mu (each a
    # Gaussian with the gradient's or the curvature's sensitivity), NoisyGD's T steps at
    # noise z compose to sqrt(T) Delta / z = mu_rest = sqrt(1 - s) mu
    assert gaussian_mu(pilot_event) == pytest.approx(math.sqrt(pilot["share"]) * mu, rel=1e-9)
    assert all(isinstance(e, Gaussian) and e.sensitivity in (1.0, curvature_sensitivity(
        "add_remove")) for e in pilot_event.events)
    assert rest == Gaussian(1.0 / pilot["mu_rest"], sensitivity=1.0)
    steps = SelfComposed(Gaussian(plan["noise_multiplier"], 1.0), plan["steps"])
    assert gaussian_mu(steps) == pytest.approx(pilot["mu_rest"], rel=1e-12)
    assert math.sqrt(plan["steps"]) / plan["noise_multiplier"] == pytest.approx(
        math.sqrt(1.0 - pilot["share"]) * mu, rel=1e-9)
    assert gaussian_mu(event) == pytest.approx(mu, rel=1e-9)
    assert model.privacy_.epsilon <= 1.0 + 1e-9


def test_same_seed_same_model_and_another_seed_another(data):
    a, _ = _fit(data, {"distance_pilot": True})
    b, _ = _fit(data, {"distance_pilot": True})
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.intercept_ == b.intercept_
    X, y = data
    other = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=1,
                                 method="noisy_gd", n_samples_public=N, conditioning_share=0.0,
                                 method_options={"distance_pilot": True})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ComputeBudgetWarning)
        other.fit(X, y)
    assert not np.array_equal(a.coef_, other.coef_)


# ------------------------------------------------------------------ the compute budget
def test_the_budget_binding_through_a_declared_distance_is_said(data):
    X, y = data
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0,
                                 method="noisy_gd", n_samples_public=N, conditioning_share=0.0,
                                 method_options={"optimum_norm_bound": 6.0,
                                                 "plan": {"step_budget": 50}})
    with pytest.warns(ComputeBudgetWarning) as record:
        model.fit(X, y)
    plan = model.fit_info_["plans"][0]["plan"]
    assert plan["compute_budget_binds"] and plan["steps"] == 50
    assert plan["init_distance_source"] == DECLARED
    wanted = plan["unconstrained_steps"]
    assert wanted > 50
    assert any(f"wanted {wanted:,.0f} steps" in str(w.message) for w in record)


def test_the_budget_binding_after_the_pilot_is_said_with_the_paid_distance(data):
    X, y = data
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0,
                                 method="noisy_gd", n_samples_public=N, conditioning_share=0.0,
                                 method_options={"distance_pilot": True,
                                                 "plan": {"step_budget": 50}})
    with pytest.warns(ComputeBudgetWarning) as record:
        model.fit(X, y)
    plan = model.fit_info_["plans"][0]["plan"]
    assert plan["init_distance_source"] == PAID and plan["compute_budget_binds"]
    messages = [str(w.message) for w in record]
    # one warning, after the pilot, naming the steps the paid distance's plan wanted
    assert messages == [m for m in messages if f"wanted {plan['unconstrained_steps']:,.0f}" in m]
    assert len(messages) == 1


def test_no_warning_when_the_budget_does_not_bind(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ComputeBudgetWarning)
        X, y = data
        model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0,
                                     method="noisy_gd", n_samples_public=N,
                                     conditioning_share=0.0,
                                     method_options={"optimum_norm_bound": 6.0}).fit(X, y)
    assert not model.fit_info_["plans"][0]["plan"]["compute_budget_binds"]


# ------------------------------------------------------------------ the rules alone
def test_released_distance_closed_form():
    assert released_distance(2.5) == PILOT_SAFETY * 2.5
    assert released_distance(1e-9) == PILOT_MIN_DISTANCE
    with pytest.raises(ValueError, match="comparator"):
        released_distance(0.0)


def test_a_regressor_plans_at_its_released_comparator_unless_a_bound_is_declared():
    """DPLinearRegression's private scales release a comparator radius D0 (for its smoothness
    and ridge): the plan's distance is safety * D0 where that is below the theorem's bound,
    labelled a released estimate; a declared bound is used instead (a public fact wins over
    a heuristic)."""
    from noisygd.estimators import DPLinearRegression

    rng = np.random.default_rng(3)
    X = rng.random((5000, 8)) / math.sqrt(8)
    y = np.clip(0.5 + X @ rng.normal(0, 1, 8) + rng.normal(0, 0.05, 5000), 0, 1)
    kw = {"target_range": (0.0, 1.0), "random_state": 0, "method": "noisy_gd"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ComputeBudgetWarning)
        est = DPLinearRegression(**kw).fit(X, y)
        plan = est.fit_info_["plans"][0]["plan"]
        d0 = est.fit_info_["released_facts"]["comparator_radius"]
        assert plan["init_distance_source"] == RELEASED
        assert plan["init_distance"] == pytest.approx(PILOT_SAFETY * d0, rel=1e-12)
        declared = DPLinearRegression(method_options={"optimum_norm_bound": 50.0}, **kw).fit(
            X, y).fit_info_["plans"][0]["plan"]
        assert declared["init_distance_source"] == DECLARED
        assert declared["init_distance"] == 50.0
        loose = DPLinearRegression(method_options={"optimum_norm_bound": 1e12}, **kw).fit(
            X, y).fit_info_["plans"][0]["plan"]  # a declaration gives way to the theorem only
        assert loose["init_distance_source"] == THEOREM
        assert loose["init_distance"] > 10 * plan["init_distance"]


def test_paid_distance_closed_form():
    assert paid_distance(3.0, 1000.0) == PILOT_SAFETY * 3.0
    assert paid_distance(3.0, 1.0) == 4.0  # capped at ||theta_p|| + the theorem's bound
    assert paid_distance(0.0, 10.0) == PILOT_MIN_DISTANCE
    assert paid_distance(math.inf, 10.0) == 10.0


@pytest.mark.parametrize(("option", "share"), [(None, 0.0), (False, 0.0), (0, 0.0),
                                               (True, DEFAULT_PILOT_SHARE), (0.2, 0.2)])
def test_pilot_share(option, share):
    assert pilot_share(option) == share


@pytest.mark.parametrize(("option", "error"), [(-0.1, ValueError), (0.9, ValueError),
                                               ("yes", TypeError), (math.nan, ValueError)])
def test_pilot_share_refuses(option, error):
    with pytest.raises(error, match="distance_pilot"):
        pilot_share(option)


def test_auto_chooses_at_the_theorem_s_distance_and_noisy_gd_uses_the_declared_one(data):
    # the choice's input is the theorem's bound whatever is declared (the rule was measured
    # with it): the same method as without the declaration; NoisyGD, if chosen, plans with it
    # (epsilon 2: at epsilon 1 NoisyGD runs 0.65 of its rule's steps and is chosen)
    plain, _ = _fit(data, method="auto", epsilon=2.0)
    declared, plan = _fit(data, {"optimum_norm_bound": 6.0}, method="auto", epsilon=2.0)
    assert declared.fit_info_["method"] == plain.fit_info_["method"]
    assert declared.fit_info_["method_choice"] == plain.fit_info_["method_choice"]
    assert declared.fit_info_["method"] == "newton"  # NoisyGD's budget binds at the bound
    # 4000 rows: the rule keeps NoisyGD, which then plans with the declared distance
    X, y = data
    kwargs = {"epsilon": 1.0, "classes": [0, 1], "random_state": 0, "n_samples_public": 4000,
              "conditioning_share": 0.0}
    small = DPLogisticRegression(**kwargs, method_options={"optimum_norm_bound": 6.0}).fit(
        X[:4000], y[:4000])
    plan = small.fit_info_["plans"][0]["plan"]
    assert small.fit_info_["method"] == "noisy_gd"
    assert plan["init_distance_source"] == DECLARED and plan["init_distance"] == 6.0


# ------------------------------------------------------------------ noisygd plan
def _plan_output(capsys, *extra):
    from noisygd.cli import main

    code = main(["plan", "--features", "20", "--n-samples", "30000", "--epsilon", "1",
                 "--relation", "add_remove", *extra])
    assert code == 0
    return capsys.readouterr().out


def _row_block(out, head):
    """The lines ``noisygd plan`` prints under the bound of the row starting with ``head``."""
    lines = out.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith(f"  {head}"))
    block = []
    for x in lines[start + 1:]:
        if not x.startswith("      "):
            break
        block.append(x.strip())
    return block


def test_noisygd_plan_prints_the_distance_s_premise_and_source(capsys):
    block = _row_block(_plan_output(capsys), "noisy_gd (add_remove) [")
    premise = [x for x in block if x.startswith("assumes D >= ||theta_1 - theta*||")]
    assert len(premise) == 1
    assert "[derived: sqrt(2 F0 / l2) with F0 = 0.6931 (the loss at zero)]" in premise[0]
    # the planned ridge is labelled a heuristic in the plan's note
    assert any(x.startswith("note:") and "planned: heuristic balance" in x for x in block)
    block = _row_block(_plan_output(capsys, "--method-options", '{"optimum_norm_bound": 5}'),
                       "noisy_gd (add_remove) [")
    premise = [x for x in block if x.startswith("assumes D >= ||theta_1 - theta*||")]
    assert "= 5 [declared: method_options['optimum_norm_bound']" in premise[0]
    # with the pilot the plan (made before it) shows the theorem's bound and says the fit
    # replaces it by the paid estimate
    block = _row_block(_plan_output(capsys, "--method-options", '{"distance_pilot": true}'),
                       "noisy_gd (add_remove) [")
    premise = [x for x in block if x.startswith("assumes D >= ||theta_1 - theta*||")]
    assert "[derived: sqrt(2 F0 / l2)" in premise[0]
    assert "replaces it by the distance pilot's paid estimate (share 0.1 of mu^2)" in premise[0]


def test_bound_sources_include_paid():
    from noisygd.bounds import SOURCES, Assumption

    assert "paid" in SOURCES
    assert Assumption("D", 3.0, "paid", "pilot").text() == "D = 3 [paid: pilot]"
