"""Plans report only true bounds: DP-FTRL's lambda from the regret bound, Lemma 6 where it holds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.events import Neighbouring
from noisygd.accounting.gdp import gaussian_mu
from noisygd.accounting.tree import tree_event
from noisygd.exceptions import AssumptionError
from noisygd.objectives.glm import LogisticLoss
from noisygd.planning_langevin import plan_langevin
from noisygd.solvers import Budget, DPFTRLSolver, PublicFacts
from noisygd.solvers.dp_ftrl import ftrl_regret_terms

REPLACE = Neighbouring.REPLACE_ONE


def _facts(obj, n=30000.0, p=101, relation=REPLACE, options=None, **kw):
    return PublicFacts(
        n_samples=n, n_params=p, constants=obj.constants(1.0), row_norm_bound=1.0,
        relation=Neighbouring(relation), l2=obj.l2, radius=obj.radius,
        optimum_norm_bound=obj.optimum_norm_bound(), loss_at_zero_bound=obj.loss_at_zero_bound(),
        options=dict(options or {}), **kw)


# ----------------------------------------------------------------- DP-FTRL
def test_dp_ftrl_lambda_minimises_its_regret_bound():
    obj = LogisticLoss(l2=1e-4)
    plan = DPFTRLSolver().plan(_facts(obj), Budget(1.0, 1e-5))
    C = obj.constants(1.0).lipschitz
    a, b, terms = ftrl_regret_terms(
        n_samples=30000.0, batch_size=256, epochs=4, restart_every_epoch=True, n_params=101,
        clip=C, gradient_bound=C, noise_multiplier=plan.noise_multiplier,
        distance=obj.optimum_norm_bound())
    assert terms["steps_per_epoch"] == math.ceil(30000 / 256)
    assert terms["tree_nodes_per_prefix"] == 4 * (math.floor(math.log2(118)) + 1)
    assert plan.l2_ftrl == pytest.approx(math.sqrt(b / a))
    assert plan.regret_bound == pytest.approx(2 * math.sqrt(a * b))
    grid = np.geomspace(plan.l2_ftrl / 100, plan.l2_ftrl * 100, 2001)
    assert np.all(a * grid + b / grid >= plan.regret_bound * (1 - 1e-12))
    # l2 > 0 without a radius: the linearised L2 term is unbounded, the bound is only a rule.
    assert plan.l2_ftrl_source.startswith("regret bound") and not plan.bound_covers_run


def test_dp_ftrl_noise_is_exact_and_lambda_grows_with_noise():
    obj = LogisticLoss(l2=1e-4)
    solver = DPFTRLSolver()
    p1 = solver.plan(_facts(obj), Budget(1.0, 1e-5))
    p2 = solver.plan(_facts(obj), Budget(0.25, 1e-5))
    unit = tree_event(1.0, p1.steps_per_epoch, 4, restart_every_epoch=True)
    assert p1.noise_multiplier == pytest.approx(gaussian_mu(unit) / calibrate_mu(1.0, 1e-5))
    assert p2.noise_multiplier > p1.noise_multiplier and p2.l2_ftrl > p1.l2_ftrl
    # A given mu (split budget) is used as is.
    mu = calibrate_mu(1.0, 1e-5)
    p3 = solver.plan(_facts(obj), Budget(1.0, 1e-5, mu=mu / 2))
    assert p3.noise_multiplier == pytest.approx(2 * p1.noise_multiplier)


def test_dp_ftrl_bound_covers_a_convex_run_on_a_ball_and_one_epoch_is_online_to_batch():
    obj = LogisticLoss(l2=0.0, radius=5.0)
    plan = DPFTRLSolver().plan(_facts(obj, options={"epochs": 1}), Budget(1.0, 1e-5))
    assert plan.bound_covers_run and plan.online_to_batch
    plan4 = DPFTRLSolver().plan(_facts(obj), Budget(1.0, 1e-5))
    assert plan4.bound_covers_run and not plan4.online_to_batch


def test_dp_ftrl_needs_a_public_distance_or_an_explicit_lambda():
    import dataclasses

    obj = LogisticLoss(l2=0.0)
    # l2 = 0 bounds no optimum; the planned ridge's radius needs F0: without one, refused
    with pytest.raises(AssumptionError, match="optimum_norm_bound"):
        DPFTRLSolver().plan(dataclasses.replace(_facts(obj), loss_at_zero_bound=None),
                            Budget(1.0, 1e-5))
    assert DPFTRLSolver().plan(_facts(obj), Budget(1.0, 1e-5)).distance_source == (
        "planned ridge")
    given = DPFTRLSolver().plan(_facts(obj, options={"l2_ftrl": 30.0}), Budget(1.0, 1e-5))
    assert given.l2_ftrl == 30.0 and given.regret_bound is None
    declared = DPFTRLSolver().plan(_facts(obj, options={"optimum_norm_bound": 3.0}),
                                   Budget(1.0, 1e-5))
    assert declared.regret_bound is not None and declared.bound_covers_run


@pytest.mark.parametrize(("options", "exc"), [({"epochs": 0}, ValueError),
                                              ({"epochs": 2.0}, TypeError),
                                              ({"batch_size": -3}, ValueError)])
def test_dp_ftrl_option_checks(options, exc):
    with pytest.raises(exc):
        DPFTRLSolver().plan(_facts(LogisticLoss(l2=1e-4), options=options), Budget(1.0, 1e-5))


def test_dp_ftrl_refuses_max_iter_it_would_not_honour():
    """Its steps are ceil(n / batch_size) x epochs; a max_iter was silently ignored before
    (the estimators document max_iter as a cap): it is refused, naming the options to set."""
    with pytest.raises(ValueError, match=r"batch_size.*epochs"):
        DPFTRLSolver().plan(_facts(LogisticLoss(l2=1e-4), max_iter=5), Budget(1.0, 1e-5))
    from noisygd.estimators import DPLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.random((300, 3))
    y = (X[:, 0] > 0.5).astype(int)
    with pytest.raises(ValueError, match="leave max_iter=None"):
        DPLogisticRegression(method="dp_ftrl", max_iter=5, classes=[0, 1]).fit(X, y)


def test_dp_ftrl_regret_is_per_gradient_term_when_b_does_not_divide_n():
    # n = 30000, b = 256: T_e = 118 leaves, the last of 48 rows, so T b = 120832 > E n = 120000
    # gradient terms; sum ||g_t||^2 <= b E n G^2 and sum ||g_t|| ||Z_t|| <= b G T Z_bar
    kw = dict(batch_size=256, epochs=4, restart_every_epoch=True, n_params=11, clip=1.0,
              gradient_bound=1.5, noise_multiplier=2.0, distance=3.0)
    a, b, terms = ftrl_regret_terms(n_samples=30000.0, **kw)
    T, z_bar = terms["steps"], terms["noise_norm_bound"]
    assert T == 4 * 118
    assert a == pytest.approx(9.0 / (2 * 4 * 30000))
    assert b == pytest.approx(256 * 1.5**2 / 2 + T * 256 / (4 * 30000) * 1.5 * z_bar)


def test_random_leaves_second_moment_is_binomials():
    # E sum_t |B_t|^2 / n = m + 1 - 1/T_e for rows assigned to T_e leaves uniformly at random
    # (m = n / T_e); a 5-standard-error test (false-failure rate < 1e-6, fixed seed)
    rng = np.random.default_rng(2023)
    n, leaves, epochs = 2048, 16, 4000
    counts = np.stack([np.bincount(rng.integers(0, leaves, size=n), minlength=leaves)
                       for _ in range(epochs)])
    ratio = (counts.astype(float) ** 2).sum(axis=1) / n
    exact = n / leaves + 1 - 1 / leaves
    assert abs(ratio.mean() - exact) < 5 * ratio.std(ddof=1) / math.sqrt(epochs)
    assert exact > n / leaves  # above the fixed-size b = m the streamed bound uses


def test_dp_ftrl_regret_terms_with_random_leaves():
    kw = dict(batch_size=256, epochs=4, restart_every_epoch=True, n_params=11, clip=1.0,
              gradient_bound=1.5, noise_multiplier=2.0, distance=3.0)
    n = 256 * 100.0  # b divides n: fixed leaves of exactly b = m rows
    a_f, b_f, terms = ftrl_regret_terms(n_samples=n, **kw)
    a_r, b_r, terms_r = ftrl_regret_terms(n_samples=n, leaves="random", **kw)
    z_bar, T_e = terms["noise_norm_bound"], terms["steps_per_epoch"]
    assert T_e == 100 and terms_r["noise_norm_bound"] == z_bar
    assert a_r == pytest.approx(9.0 / (2 * 4 * n)) == a_f
    assert b_r == pytest.approx(1.5**2 / 2 * (256 + 1 - 1 / 100) + 1.5 * z_bar)
    assert b_r > b_f and 2 * math.sqrt(a_r * b_r) > 2 * math.sqrt(a_f * b_f)
    # a private count: n_lo in the distance term, n_hi in the leaf size
    a_p, b_p, _ = ftrl_regret_terms(n_samples=n, n_samples_high=n + 500, leaves="random", **kw)
    assert a_p == a_r
    assert b_p == pytest.approx(1.5**2 / 2 * ((n + 500) / 100 + 1 - 1 / 100) + 1.5 * z_bar)
    with pytest.raises(ValueError, match="fixed leaf sizes"):
        ftrl_regret_terms(n_samples=n, leaves="random", confidence=0.05, **kw)
    with pytest.raises(ValueError, match="leaves"):
        ftrl_regret_terms(n_samples=n, leaves="shuffled", **kw)


def test_dp_ftrl_plan_with_random_leaves_bounds_only_the_expectation():
    # the plan reads the leaf law from settings["leaves"], set by the solver from the relation
    # (add/remove: random leaves); an option cannot set it (Solver.check_options)
    obj = LogisticLoss(l2=0.0, radius=5.0)
    facts = _facts(obj, n=25600.0, relation=Neighbouring.ADD_REMOVE, n_samples_high=26000.0)
    plan = DPFTRLSolver().plan(facts, Budget(1.0, 1e-5))
    C = obj.constants(1.0).lipschitz
    a, b, _ = ftrl_regret_terms(
        n_samples=25600.0, n_samples_high=26000.0, leaves="random", batch_size=256, epochs=4,
        restart_every_epoch=True, n_params=101, clip=C, gradient_bound=C,
        noise_multiplier=plan.noise_multiplier, distance=5.0)
    assert plan.l2_ftrl == pytest.approx(math.sqrt(b / a))
    assert plan.regret_bound == pytest.approx(2 * math.sqrt(a * b))
    assert plan.regret_bound_high_probability is None


# ----------------------------------------------------------------- Langevin, Lemma 6
def _lemma6(obj, plan, p):
    c = obj.constants(1.0)
    lam, beta = c.strong_convexity, c.smoothness + obj.l2
    L = c.lipschitz + obj.l2 * obj.radius
    return (2 * beta * L**2 / lam**2 * math.exp(-lam * plan.step_size * plan.steps)
            + 2 * beta * p * plan.sigma**2 / lam)


def test_lemma6_reported_when_its_step_condition_holds():
    obj = LogisticLoss(l2=0.1, radius=10.0)
    plan = plan_langevin(_facts(obj, n=5000.0, p=11), epsilon=1.0, delta=1e-5,
                         step_rule="theorem4")
    c = obj.constants(1.0)
    assert plan.step_size == pytest.approx(c.strong_convexity / (2 * (c.smoothness + 0.1)**2))
    assert plan.excess_risk_bound == pytest.approx(_lemma6(obj, plan, 11))
    assert plan.excess_risk_bound_reason is None


@pytest.mark.parametrize("step_rule", ["auto", 0.5])
def test_lemma6_withheld_where_the_step_exceeds_lambda_over_2_beta_squared(step_rule):
    obj = LogisticLoss(l2=0.1, radius=10.0)
    plan = plan_langevin(_facts(obj, n=5000.0, p=11), epsilon=1.0, delta=1e-5,
                         step_rule=step_rule, max_steps=50)
    c = obj.constants(1.0)
    assert plan.step_size > c.strong_convexity / (2 * (c.smoothness + 0.1)**2)
    assert plan.excess_risk_bound is None
    assert "lambda/(2 beta^2)" in plan.excess_risk_bound_reason


def test_lemma6_withheld_without_a_ball():
    obj = LogisticLoss(l2=0.1)
    plan = plan_langevin(_facts(obj, n=5000.0, p=11), epsilon=1.0, delta=1e-5,
                         step_rule="theorem4")
    assert plan.excess_risk_bound is None and "radius" in plan.excess_risk_bound_reason
