"""The seeds' bounds wired into the solvers' plans: NoisySGD (12.3.3), DP-FTRL (tree accuracy,
online-to-batch), RRPSGD (Theorems 5-6)."""

from __future__ import annotations

import math

import pytest

from noisygd.accounting.events import Neighbouring
from noisygd.accounting.gdp import gaussian_mu
from noisygd.accounting.tree import tree_event
from noisygd.bounds import noisy_sgd_utility_bound, theorem6_bound, tree_error_bound
from noisygd.objectives.glm import LogisticLoss
from noisygd.solvers import Budget, DPFTRLSolver, NoisySGDSolver, PublicFacts, RRPSGDSolver
from noisygd.solvers.dp_ftrl import BOUND_CONFIDENCE


def _facts(obj, n=30000.0, p=11, relation=Neighbouring.REPLACE_ONE, options=None, **kw):
    return PublicFacts(
        n_samples=n, n_params=p, constants=obj.constants(1.0), row_norm_bound=1.0,
        relation=Neighbouring(relation), l2=obj.l2, radius=obj.radius,
        optimum_norm_bound=obj.optimum_norm_bound(), loss_at_zero_bound=obj.loss_at_zero_bound(),
        options=dict(options or {}), **kw)


def test_noisy_sgd_plan_reports_section_12_3_3_with_its_premises():
    obj = LogisticLoss(l2=1e-3)
    plan = NoisySGDSolver().plan(_facts(obj, relation=Neighbouring.ADD_REMOVE),
                                 Budget(1.0, 1e-5))
    c = obj.constants(1.0)
    want, eta = noisy_sgd_utility_bound(
        n=30000.0, d=11, noise_std=plan.noise_multiplier * plan.clip,
        sampling_rate=plan.sampling_rate, lipschitz=plan.clip,
        smoothness=c.smoothness + 1e-3, init_distance=obj.optimum_norm_bound(),
        steps=plan.steps)
    assert plan.bound_value == pytest.approx(want, rel=1e-12)
    d = plan.bound_details
    assert d["init_distance_source"] == "derived" and d["bound_covers_run"] is False
    assert d["textbook_learning_rate"] == eta
    # without a bound on ||theta*|| the premise is the planner's nominal D = 1
    flat = NoisySGDSolver().plan(_facts(LogisticLoss(l2=0.0), relation=Neighbouring.ADD_REMOVE),
                                 Budget(1.0, 1e-5))
    assert flat.bound_details["init_distance_source"] == "nominal"
    assert flat.bound_details["init_distance"] == 1.0


def test_dp_ftrl_high_probability_regret_uses_the_tree_accuracy_bound():
    obj = LogisticLoss(l2=0.0, radius=5.0)
    plan = DPFTRLSolver().plan(_facts(obj), Budget(1.0, 1e-5))
    b, E = plan.settings["batch_size"], plan.settings["epochs"]
    T_e = math.ceil(30000 / b)
    T = E * T_e
    k = E * (math.floor(math.log2(T_e)) + 1)  # restarted trees
    G, D, lam = plan.clip, 5.0, plan.l2_ftrl
    z = plan.noise_multiplier
    assert gaussian_mu(tree_event(z, T_e, E)) == pytest.approx(gaussian_mu(
        tree_event(1.0, T_e, E)) / z)  # the plan's noise is the tree's (1/z scaling)
    A = D * D / (2 * E * 30000)  # per gradient term: E n of them (T b > E n here)
    for bound, beta in ((plan.regret_bound, None),
                        (plan.regret_bound_high_probability, BOUND_CONFIDENCE)):
        zbar = tree_error_bound(noise_std=z * plan.clip, n_params=11, nodes_per_prefix=k,
                                beta=beta)
        noise = T * b / (E * 30000) * G * zbar
        assert bound == pytest.approx(A * lam + (b * G * G / 2 + noise) / lam, rel=1e-12)
    assert plan.regret_bound_high_probability > plan.regret_bound
    assert plan.distance == 5.0 and plan.distance_source == "declared"


def test_dp_ftrl_online_to_batch_is_a_bound_for_one_averaged_pass():
    obj = LogisticLoss(l2=0.0, radius=5.0)
    one = DPFTRLSolver().plan(_facts(obj, options={"epochs": 1}), Budget(1.0, 1e-5))
    assert one.population_risk_bound == one.regret_bound and one.online_to_batch_reason is None
    four = DPFTRLSolver().plan(_facts(obj), Budget(1.0, 1e-5))
    assert four.population_risk_bound is None and "4 epochs" in four.online_to_batch_reason
    last = DPFTRLSolver().plan(_facts(obj, options={"epochs": 1, "output": "last"}),
                               Budget(1.0, 1e-5))
    assert last.population_risk_bound is None and "output='last'" in last.online_to_batch_reason


def test_rrpsgd_plan_reports_theorems_5_and_6():
    obj = LogisticLoss(l2=0.0)
    plan = RRPSGDSolver().plan(_facts(obj, n=200.0, p=3), Budget(1.0, 1e-5))
    b = plan.bounds
    c = obj.constants(1.0)
    assert b["steps"] == 200 * 200 and b["loss_gap"] == pytest.approx(math.log(2))
    want = theorem6_bound(lipschitz=c.lipschitz, smoothness=c.smoothness,
                          loss_gap=math.log(2), noise_std=b["sigma_z"], n_params=3,
                          steps=40000, step_size=b["step_size"], confidence=0.05)
    assert b["theorem6_bound"] == pytest.approx(want, rel=1e-12)
    # the high-probability bound is above the bound on the expectation
    assert b["theorem6_bound"] > b["theorem5_bound"] > 0
