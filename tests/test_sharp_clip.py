"""The sharp clip of a noise-limited NoisyGD run (``method_options["sharp_clip"]``).

The lemma behind the sharp ratio 1/2 is checked on the logistic residual itself (no formula of
the bound); the factor's closed form and end points against ``noise_regime`` and the momentum's
scale; the solver's plan against a plan made directly at the scaled clip; the estimator's
option (binary NoisyGD without ``clip=`` only); and privacy: the clip is public, so the event
is the budget's whatever the factor.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.estimators import DPLogisticRegression
from noisygd.objectives import CentredGLM, LogisticLoss
from noisygd.oracles import ArrayOracle
from noisygd.planning import (
    DEFAULT_MOMENTUM,
    NOISE_TO_SIGNAL_HIGH,
    NOISE_TO_SIGNAL_LOW,
    auto_momentum,
    noise_regime,
    sharp_clip_factor,
)
from noisygd.solvers import NoisyGDSolver
from noisygd.solvers.base import Budget, PublicFacts


def _rows_in_ball(rng, n, d, B):
    """Rows with norms spread over (0, B], a quarter exactly on the sphere."""
    X = rng.standard_normal((n, d))
    X *= (B * rng.uniform(0.05, 1.0, size=(n, 1))) / np.linalg.norm(X, axis=1, keepdims=True)
    X[: n // 4] *= B / np.linalg.norm(X[: n // 4], axis=1, keepdims=True)
    return X


def test_residual_lemma_holds_and_is_attained():
    """|phi'(z, y)| <= 1/2 wherever y z >= 0 (ties included), = 1/2 at z = 0, and up to 1
    (never beyond) for misclassified rows."""
    loss = LogisticLoss()
    bound = loss.correct_class_residual_bound()
    assert bound == 0.5
    rng = np.random.default_rng(21)
    for scale in (1e-6, 0.3, 3.0, 40.0):
        z = scale * rng.standard_normal(20000)
        y = np.where(rng.random(20000) < 0.5, 1.0, -1.0)
        r = np.abs(loss.residual(z, y))
        assert r[y * z >= 0].max() <= bound
        assert r.max() <= loss.residual_bound()
    assert np.all(np.abs(loss.residual(np.zeros(2), np.array([1.0, -1.0]))) == bound)
    assert np.abs(loss.residual(np.array([-30.0]), np.array([1.0])))[0] > 0.99


def test_half_lipschitz_clip_leaves_correct_rows_and_the_start_unchanged():
    """At C = L/2 (the sharp ratio times the Lipschitz clip) the clipped gradient sum equals
    the unclipped one at theta = 0 (all rows) and, at random theta, over the correctly
    classified rows; a misclassified row's clipped gradient is its own, rescaled by a factor
    in [1/2, 1]. In the centred, rescaled coordinates of the estimators."""
    rng = np.random.default_rng(22)
    d, B, s = 6, 1.3, 0.7
    c = 0.1 * rng.standard_normal(d)
    f = rng.uniform(0.5, 1.5, d)
    obj = CentredGLM(LogisticLoss(), c, s, feature_scale=f)
    X = c + _rows_in_ball(rng, 400, d, B) / f  # ||f (x - c)|| <= B
    y = np.where(rng.random(400) < 0.4, 1.0, -1.0)
    D = np.hstack([(X - c) * f, np.full((400, 1), s)])
    C = 0.5 * obj.constants(B).lipschitz
    assert C == pytest.approx(0.5 * math.hypot(B, s), rel=1e-12)
    zero = np.zeros(d + 1)
    np.testing.assert_allclose(obj.clipped_gradient_sum(zero, X, y, C),
                               obj.clipped_gradient_sum(zero, X, y, None), rtol=1e-13,
                               atol=1e-13)
    for scale in (0.5, 4.0):
        theta = scale * rng.standard_normal(d + 1)
        ok = y * (D @ theta) >= 0
        np.testing.assert_allclose(obj.clipped_gradient_sum(theta, X[ok], y[ok], C),
                                   obj.clipped_gradient_sum(theta, X[ok], y[ok], None),
                                   rtol=1e-12, atol=1e-12)
        for i in np.flatnonzero(~ok)[:20]:
            full = obj.clipped_gradient_sum(theta, X[i:i + 1], y[i:i + 1], None)
            cut = obj.clipped_gradient_sum(theta, X[i:i + 1], y[i:i + 1], C)
            ratio = np.linalg.norm(cut) / np.linalg.norm(full)
            assert 0.5 - 1e-12 <= ratio <= 1 + 1e-12
            np.testing.assert_allclose(cut, ratio * full, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("q", [0.0, 0.005, 0.02, 0.03, 0.063, 0.1, 0.2, 0.5, 3.0])
def test_factor_closed_form_and_the_momentum_scale(q):
    lo, hi = NOISE_TO_SIGNAL_LOW, NOISE_TO_SIGNAL_HIGH
    r = noise_regime(q)
    expect = 0.0 if q <= lo else 1.0 if q >= hi else math.log(q / lo) / math.log(hi / lo)
    assert r == pytest.approx(expect, abs=1e-15)
    assert auto_momentum(q) == pytest.approx(DEFAULT_MOMENTUM * (1.0 - r), abs=1e-12)
    for s in (0.5, 0.8, 1.0):
        f = sharp_clip_factor(q, s)
        assert f == pytest.approx(1.0 - (1.0 - s) * r, abs=1e-15)
        assert s <= f <= 1.0
    assert sharp_clip_factor(q, 1.0) == 1.0


def test_factor_end_points_and_checks():
    assert sharp_clip_factor(NOISE_TO_SIGNAL_LOW, 0.5) == 1.0
    assert sharp_clip_factor(NOISE_TO_SIGNAL_HIGH, 0.5) == 0.5
    mid = math.sqrt(NOISE_TO_SIGNAL_LOW * NOISE_TO_SIGNAL_HIGH)  # half way on the log scale
    assert sharp_clip_factor(mid, 0.5) == pytest.approx(0.75, rel=1e-12)
    for bad in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match=r"sharp must be in \(0, 1\]"):
            sharp_clip_factor(0.1, bad)
    with pytest.raises(TypeError):
        sharp_clip_factor("0.1", 0.5)


def _facts(n, options, clip=None):
    rng = np.random.default_rng(5)
    X = _rows_in_ball(rng, n, 8, 1.0)
    y = (X[:, 0] > 0).astype(float)
    oracle = ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0)
    return PublicFacts.from_oracle(oracle, n_samples=float(n), relation="add_remove",
                                   options=options, clip=clip)


@pytest.mark.parametrize("n,epsilon", [(300, 0.5), (3000, 1.0), (200000, 8.0)])
def test_solver_plans_at_the_scaled_clip(n, epsilon):
    """The plan with the option is the plan made directly at base * factor, the factor read
    from the base plan's noise-to-signal ratio; an optimisation-limited plan keeps its clip."""
    solver, budget = NoisyGDSolver(), Budget(epsilon, 1e-6)
    base_facts = _facts(n, {"l2": "auto"})
    base, _ = solver.plan_quietly(base_facts, budget)
    q = base.details["noise_to_signal"]
    z, d = base.noise_multiplier, base_facts.n_params
    assert q == pytest.approx(math.sqrt(d) * z / n, rel=1e-12)
    plan, kwargs = solver.plan_quietly(_facts(n, {"l2": "auto", "sharp_clip": 0.5}), budget)
    rule = plan.details["clip_rule"]
    factor = sharp_clip_factor(q, 0.5)
    assert rule["factor"] == factor and rule["noise_to_signal"] == q
    assert rule["base_clip"] == base_facts.clip_norm()
    assert kwargs["clip"] == pytest.approx(base_facts.clip_norm() * factor, rel=1e-15)
    direct, direct_kwargs = solver.plan_quietly(_facts(n, {"l2": "auto"}, kwargs["clip"]),
                                                budget)
    assert plan.steps == direct.steps
    assert plan.noise_multiplier == pytest.approx(direct.noise_multiplier, rel=1e-12)
    assert kwargs["_ridge"] == pytest.approx(direct_kwargs["_ridge"], rel=1e-12)
    assert solver.planned_event((plan, kwargs)) is not None
    if n == 200000:
        assert factor == 1.0 and kwargs["clip"] == base_facts.clip_norm()
    if n == 300:
        assert factor == 0.5


def _problem(n=400, d=4, seed=13):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 0.5, size=(n, d))
    y = (X[:, 0] + 0.2 * rng.standard_normal(n) > 0.25).astype(int)
    return X, y, (np.zeros(d), np.full(d, 0.5))


def test_estimator_option_binary_noisy_gd_without_a_clip_only():
    X, y, bounds = _problem()
    common = dict(epsilon=1.0, delta=1e-5, n_samples_public=400, random_state=0,
                  classes=[0, 1])
    for kw in ({}, {"feature_bounds": bounds}):
        m = DPLogisticRegression(**common, **kw).fit(X, y)
        plan = m.fit_info_["plans"][0]
        rule = plan["plan"]["clip_rule"]
        assert plan["clip"] == pytest.approx(rule["base_clip"] * rule["factor"], rel=1e-15)
        assert rule["factor"] < 1.0  # 400 rows at epsilon 1: noise-limited
    R = float(np.linalg.norm(np.full(4, 0.25)))
    boxed = DPLogisticRegression(**common, feature_bounds=bounds).fit(X, y)
    s = boxed.conditioning_["intercept_scale"]
    assert boxed.fit_info_["plans"][0]["plan"]["clip_rule"]["base_clip"] == pytest.approx(
        math.hypot(R, s), rel=1e-12)  # the Lipschitz constant of the conditioned rows
    given = DPLogisticRegression(**common, clip=0.3).fit(X, y)
    assert given.fit_info_["plans"][0]["clip"] == 0.3
    assert "clip_rule" not in given.fit_info_["plans"][0]["plan"]
    sgd = DPLogisticRegression(**common, method="noisy_sgd").fit(X, y)
    assert sgd._method_options()["sharp_clip"] == 0.5
    sgd_rule = sgd.fit_info_["plans"][0]["plan"]["clip_rule"]
    assert sgd.fit_info_["plans"][0]["clip"] == pytest.approx(
        sgd_rule["base_clip"] * sgd_rule["factor"], rel=1e-15)
    ftrl = DPLogisticRegression(**{**common, "neighbouring": "replace_one"}, method="dp_ftrl")
    assert ftrl._method_options()["sharp_clip"] == 0.5  # tests below
    langevin = DPLogisticRegression(**{**common, "neighbouring": "replace_one"},
                                    method="langevin")
    assert "sharp_clip" not in (langevin._method_options() or {})
    off = DPLogisticRegression(**common, method_options={"sharp_clip": 1.0}).fit(X, y)
    assert off.fit_info_["plans"][0]["plan"]["clip_rule"]["factor"] == 1.0
    y3 = np.digitize(X[:, 0], [0.17, 0.33])
    multi = DPLogisticRegression(**{**common, "classes": [0, 1, 2]}).fit(X, y3)
    assert "clip_rule" not in multi.fit_info_["plans"][0]["plan"]


def test_same_seed_same_model_and_the_event_is_the_budgets():
    X, y, bounds = _problem()
    kw = dict(epsilon=1.0, delta=1e-5, n_samples_public=400, classes=[0, 1],
              feature_bounds=bounds, random_state=3)
    a = DPLogisticRegression(**kw).fit(X, y)
    b = DPLogisticRegression(**kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    off = DPLogisticRegression(**kw, method_options={"sharp_clip": 1.0}).fit(X, y)
    assert a.fit_info_["plans"][0]["clip"] < off.fit_info_["plans"][0]["clip"]
    assert a.privacy_.epsilon <= 1.0 + 1e-9
    assert a.privacy_.epsilon == pytest.approx(off.privacy_.epsilon, rel=1e-9)


@pytest.mark.parametrize("extra", [{"radius": 5.0}, {"plan": {"accelerate": False}}])
def test_a_run_a_theorem_covers_keeps_its_clip(extra):
    """With a projection radius or the textbook plan the base clip stays (the section-12.2
    bounds assume it), and the rule says why."""
    solver, budget = NoisyGDSolver(), Budget(0.5, 1e-6)
    rng = np.random.default_rng(5)
    X = _rows_in_ball(rng, 300, 8, 1.0)
    y = (X[:, 0] > 0).astype(float)
    loss = LogisticLoss(l2=0.01, radius=extra.get("radius"))
    options = {"sharp_clip": 0.5, **({"plan": extra["plan"]} if "plan" in extra else {})}
    facts = PublicFacts.from_oracle(ArrayOracle(loss, X, y, row_norm_bound=1.0),
                                    n_samples=300.0, relation="add_remove", options=options)
    plan, kwargs = solver.plan_quietly(facts, budget)
    rule = plan.details["clip_rule"]
    assert rule["factor"] == 1.0 and rule["rule"].startswith("not applied")
    assert kwargs["clip"] == facts.clip_norm()


def test_regression_ratio_is_the_median_residual_over_hubers_threshold():
    """DPLinearRegression's ratio takes Huber's clip k sigma to the median of |e| for
    Gaussian residuals e ~ N(0, sigma^2): checked against scipy's quantile and a sample."""
    from scipy.stats import norm

    from noisygd.estimators import HUBER_K, DPHuberRegressor, DPLinearRegression

    s = DPLinearRegression._sharp_clip_ratio()
    assert s == pytest.approx(norm.ppf(0.75) / HUBER_K, rel=1e-12)
    n = 200_000
    e = np.random.default_rng(9).standard_normal(n)
    # the median of |e| (sigma = 1) is s * k: a sample median lies within 4 standard errors
    # 1 / (2 f(m) sqrt(n)), f = 2 phi the density of |e| (false-failure rate 6e-5; fixed seed)
    se = 1.0 / (2.0 * 2.0 * norm.pdf(s * HUBER_K) * np.sqrt(n))
    assert abs(np.median(np.abs(e)) - s * HUBER_K) < 4 * se
    assert DPHuberRegressor._sharp_clip_ratio() is None


def test_regression_option_default_noisy_gd_only():
    from noisygd.estimators import DPHuberRegressor, DPLinearRegression

    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, (600, 5)) / np.sqrt(5)
    y = np.clip(0.5 + X @ np.full(5, 0.3) + 0.05 * rng.standard_normal(600), 0, 1)
    kw = dict(epsilon=1.0, delta=1e-5, target_range=(0.0, 1.0), random_state=0)
    m = DPLinearRegression(**kw).fit(X, y)
    rule = m.fit_info_["plans"][0]["plan"]["clip_rule"]
    assert rule["sharp"] == DPLinearRegression._sharp_clip_ratio()
    assert m.fit_info_["plans"][0]["clip"] == pytest.approx(rule["base_clip"] * rule["factor"],
                                                            rel=1e-15)
    assert "sharp_clip" not in (DPLinearRegression(method="ssp", **kw)._method_options() or {})
    # least squares: NoisyGD and NoisySGD only (DP-FTRL's was mixed there: the docs)
    assert DPLinearRegression(method="noisy_sgd", **kw)._method_options()["sharp_clip"] == (
        DPLinearRegression._sharp_clip_ratio())
    for method in ("dp_ftrl", "dynamic"):
        assert "sharp_clip" not in (DPLinearRegression(method=method, **kw)._method_options()
                                    or {})
    given = DPLinearRegression(clip=0.2, **kw).fit(X, y)
    assert "clip_rule" not in given.fit_info_["plans"][0]["plan"]
    assert "sharp_clip" not in (DPHuberRegressor(epsilon=1.0)._method_options() or {})


@pytest.mark.parametrize("n,epsilon", [(300, 0.5), (200000, 8.0)])
def test_noisy_sgd_plans_at_the_scaled_clip(n, epsilon):
    """NoisySGD's plan with the option is its plan at base * factor, the factor read from the
    base plan's sqrt(d) z / b; the calibrated noise multiplier does not depend on the clip."""
    from noisygd.solvers.noisy_sgd import NoisySGDSolver

    solver, budget = NoisySGDSolver(), Budget(epsilon, 1e-6)
    base_facts = _facts(n, {})
    base = solver.plan(base_facts, budget)
    q = math.sqrt(base_facts.n_params) * base.noise_multiplier / (base.sampling_rate * n)
    plan = solver.plan(_facts(n, {"sharp_clip": 0.5}), budget)
    rule = plan.budget_info["clip_rule"]
    factor = sharp_clip_factor(q, 0.5)
    assert rule["factor"] == pytest.approx(factor, rel=1e-12)
    assert plan.clip == pytest.approx(base.clip * factor, rel=1e-15)
    direct = solver.plan(_facts(n, {}, plan.clip), budget)
    assert (plan.steps, plan.sampling_rate) == (direct.steps, direct.sampling_rate)
    assert plan.noise_multiplier == pytest.approx(direct.noise_multiplier, rel=1e-12)
    assert plan.settings == direct.settings
    if n == 300:
        assert factor == 0.5


@pytest.mark.parametrize("bad", [0.0, 1.5, -1.0])
def test_both_solvers_refuse_a_ratio_outside_0_1(bad):
    from noisygd.solvers.noisy_sgd import NoisySGDSolver

    budget = Budget(1.0, 1e-6)
    for solver in (NoisyGDSolver(), NoisySGDSolver()):
        with pytest.raises(ValueError, match=r"method_options\['sharp_clip'\] must be in"):
            solver.plan(_facts(300, {"sharp_clip": bad}), budget)


@pytest.mark.parametrize("method", ["dp_ftrl", "dynamic"])
def test_dp_ftrl_and_dynamic_read_the_regime_from_noisy_gds_plan(method):
    """Their plan with the option is their plan at base * factor, the factor from NoisyGD's
    plan of the same facts and budget; the estimator passes it and reports the rule."""
    from noisygd.solvers import SOLVERS
    from noisygd.solvers.noisy_gd import regime_clip

    solver = SOLVERS[method]()
    budget = Budget(0.5, 1e-6)
    # a ridge: dynamic's theorems need strong convexity, DP-FTRL's bound a public D
    rng = np.random.default_rng(5)
    X = _rows_in_ball(rng, 300, 8, 1.0)
    oracle = ArrayOracle(LogisticLoss(l2=1e-3), X, (X[:, 0] > 0).astype(float),
                         row_norm_bound=1.0)
    base_facts = PublicFacts.from_oracle(oracle, n_samples=300.0, relation="add_remove")
    gd, _ = NoisyGDSolver().plan_quietly(base_facts, budget)
    scaled, rule = regime_clip(base_facts, budget, 0.5)
    assert rule["noise_to_signal"] == gd.details["noise_to_signal"]
    assert rule["factor"] == sharp_clip_factor(rule["noise_to_signal"], 0.5)
    assert scaled.clip_norm() == pytest.approx(base_facts.clip_norm() * rule["factor"])
    import dataclasses

    with_option = solver.plan(dataclasses.replace(base_facts, options={"sharp_clip": 0.5}),
                              budget)
    direct = solver.plan(scaled, budget)
    assert with_option.clip == pytest.approx(direct.clip, rel=1e-15)
    assert with_option.clip < base_facts.clip_norm()
    X, y, bounds = _problem()
    est = DPLogisticRegression(epsilon=1.0, delta=1e-5, classes=[0, 1], random_state=0,
                               method=method, feature_bounds=bounds,
                               l2=1e-3 if method == "dynamic" else None).fit(X, y)
    plan = est.fit_info_["plans"][0]
    got = plan["plan"]["clip_rule"]
    assert got["factor"] < 1.0
    assert got["clip"] == pytest.approx(got["base_clip"] * got["factor"], rel=1e-15)
