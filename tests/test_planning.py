"""Tests of the NoisyGD planner (Lecture 12, sections 12.1.2 and 12.2)."""

from __future__ import annotations

import itertools
import math

import dp_accounting
import numpy as np
import pytest

from noisygd.accounting.events import Gaussian, Neighbouring, SelfComposed
from noisygd.accounting.registry import get_accountant
from noisygd.exceptions import AssumptionError
from noisygd.objectives import HuberLoss, LogisticLoss, Regime, SquaredLoss
from noisygd.objectives.base import ObjectiveConstants
from noisygd.planning import (
    DEFAULT_MAX_STEPS_ACCELERATED,
    DEFAULT_MOMENTUM,
    MAX_STEPS_ACCELERATED,
    MIN_STEPS_ACCELERATED,
    NEWTON_MOMENTUM,
    accelerated_steps,
    accelerated_t_star,
    auto_momentum,
    comparator_radius,
    newton_momentum,
    noise_to_signal_ratio,
    plan_noisy_gd,
    ridge_strength,
)

N, D_PARAMS = 30000, 100


def _event(plan, relation=Neighbouring.ADD_REMOVE):
    sens = relation.clipped_sum_sensitivity
    return SelfComposed(Gaussian(plan.noise_multiplier, sens, relation), plan.steps)


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-5), (0.3, 1e-6), (4.0, 1e-5)])
@pytest.mark.parametrize("accelerate", [True, False])
def test_plan_meets_privacy_target(eps, delta, accelerate):
    c = LogisticLoss(l2=1e-4).constants(1.0)
    plan = plan_noisy_gd(eps, delta, N, D_PARAMS, c, accelerate=accelerate, max_steps=150)
    event = _event(plan)
    got = get_accountant("gdp").epsilon(event, delta)
    assert got <= eps * (1 + 1e-9)
    assert got >= eps * (1 - 1e-6)  # the noise is the smallest that meets the target
    assert plan.mu == pytest.approx(math.sqrt(plan.steps) / plan.noise_multiplier)
    # independent check with dp_accounting's PLD accountant (tight for Gaussians):
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.GaussianDpEvent(plan.noise_multiplier), plan.steps)
    assert acc.get_epsilon(delta) == pytest.approx(eps, abs=0.01 * eps + 2e-3)


def test_replace_one_doubles_noise():
    c = LogisticLoss(l2=1e-4).constants(1.0)
    # at a fixed T (the accelerated T* depends on the sensitivity too)
    a = plan_noisy_gd(1.0, 1e-5, N, D_PARAMS, c, max_steps=100)
    b = plan_noisy_gd(1.0, 1e-5, N, D_PARAMS, c, relation="replace_one", max_steps=100)
    assert b.noise_multiplier == pytest.approx(2 * a.noise_multiplier)
    ev = _event(b, Neighbouring.REPLACE_ONE)
    assert get_accountant("gdp").epsilon(ev, 1e-5) <= 1.0 + 1e-9


def test_textbook_convex_smooth_plan_minimises_12_2_2():
    obj = LogisticLoss()  # l2 = 0: convex smooth
    c = obj.constants(1.0)
    assert c.regime is Regime.CONVEX_SMOOTH
    Dist, n, d = 3.0, 2000.0, 10
    plan = plan_noisy_gd(1.0, 1e-5, n, d, c, init_distance=Dist, accelerate=False,
                         max_steps=5000)
    assert plan.bound_name == "12.2.2" and plan.regime is Regime.CONVEX_SMOOTH
    assert plan.schedule == "constant" and plan.averaging == "uniform"
    assert plan.momentum == 0.0 and plan.details["bound_covers_run"]
    # closed form of the 12.2.2 bound (mean objective) on the grid, computed here
    mu = plan.mu
    L, beta = math.sqrt(2), 0.5
    T = np.arange(1, 5001, dtype=float)
    s2 = T * L**2 / mu**2
    eta = np.minimum(1 / (n * beta), Dist / np.sqrt(d * s2 * T))
    bound = (Dist**2 / (T * eta) + eta * d * s2) / n
    assert plan.steps == int(np.argmin(bound)) + 1
    assert plan.bound_value == pytest.approx(bound.min(), rel=1e-12)
    assert plan.learning_rate == pytest.approx(eta[plan.steps - 1])
    # the notes' closed form T = n beta D sqrt(rho) / (L sqrt d) is where the bound flattens:
    t_cf = plan.details["candidates"]["12.2.2"]["closed_form_T"]
    assert t_cf == pytest.approx(n * beta * Dist * math.sqrt(mu**2 / 2) / (L * math.sqrt(d)))
    assert plan.steps <= 5000


def test_max_steps_respected_and_bound_decreasing_in_cap():
    c = LogisticLoss(l2=1e-4).constants(1.0)
    vals = []
    for cap in (5, 20, 80):
        for acc in (True, False):
            plan = plan_noisy_gd(1.0, 1e-5, N, D_PARAMS, c, max_steps=cap, accelerate=acc)
            assert 1 <= plan.steps <= cap
        vals.append(plan_noisy_gd(1.0, 1e-5, N, D_PARAMS, c, max_steps=cap,
                                  accelerate=False).bound_value)
    assert vals[0] >= vals[1] >= vals[2]


def test_strongly_convex_with_radius_considers_12_2_4():
    obj = LogisticLoss(l2=0.5, radius=2.0)
    c = obj.constants(1.0)
    assert c.regime is Regime.STRONGLY_CONVEX
    plan = plan_noisy_gd(1.0, 1e-5, 1000, 5, c, radius=2.0, accelerate=False, max_steps=2000)
    cands = plan.details["candidates"]
    assert set(cands) == {"12.2.2", "12.2.4"}
    assert plan.bound_value == pytest.approx(min(v["bound"] for v in cands.values()))
    # 12.2.4 at its T (mean form): 4 (n^2 G^2 + d sigma^2) / (n^2 lambda (T+1))
    t4 = cands["12.2.4"]["steps"]
    G = math.sqrt(2) + 0.5 * 2.0
    s2 = t4 * 2.0 / plan.mu**2
    expect = 4 * (1000**2 * G**2 + 5 * s2) / (1000**2 * 0.5 * (t4 + 1))
    assert cands["12.2.4"]["bound"] == pytest.approx(expect, rel=1e-9)
    # here 12.2.4's bound is the smaller (about half of 12.2.2's): the plan runs its schedule
    assert cands["12.2.4"]["bound"] < cands["12.2.2"]["bound"]
    assert plan.bound_name == "12.2.4"
    assert plan.schedule == "inverse_t" and plan.averaging == "weighted"
    assert plan.learning_rate is None
    # without a radius the Lipschitz assumption of 12.2.4 fails: only 12.2.2 remains
    plan2 = plan_noisy_gd(1.0, 1e-5, 1000, 5, c, accelerate=False)
    assert set(plan2.details["candidates"]) == {"12.2.2"}
    assert plan2.details["init_distance_source"].startswith("nominal")


def test_convex_lipschitz_regime_uses_12_2_3():
    c = ObjectiveConstants(lipschitz=1.0, smoothness=None, strong_convexity=0.0, convex=True,
                           row_norm_bound=1.0)
    assert c.regime is Regime.CONVEX_LIPSCHITZ
    plan = plan_noisy_gd(1.0, 1e-5, 500, 3, c, accelerate=False, max_steps=300, init_distance=2)
    assert plan.bound_name == "12.2.3" and plan.averaging == "uniform"
    T = plan.steps
    g2 = 500**2 + 3 * T / plan.mu**2
    assert plan.bound_value == pytest.approx(2 * math.sqrt(g2) / math.sqrt(T) / 500)
    # the bound decreases in T at fixed mu (first term n L D / sqrt T), so T = max_steps
    assert T == 300
    with pytest.raises(AssumptionError, match="smoothness"):
        plan_noisy_gd(1.0, 1e-5, 500, 3, c, accelerate=True)


def test_nonconvex_needs_loss_gap():
    c = ObjectiveConstants(lipschitz=1.0, smoothness=2.0, strong_convexity=0.0, convex=False,
                           row_norm_bound=1.0)
    with pytest.raises(AssumptionError, match=r"no section-12\.2 bound"):
        plan_noisy_gd(1.0, 1e-5, 500, 3, c, accelerate=False)
    plan = plan_noisy_gd(1.0, 1e-5, 500, 3, c, accelerate=False, loss_gap=0.7)
    assert plan.bound_name == "12.2.1" and plan.regime is Regime.NONCONVEX_SMOOTH
    T = plan.steps
    s2 = T / plan.mu**2
    gap = 500 * 0.7
    eta = min(1 / (500 * 2.0), math.sqrt(2 * gap / (500 * 2.0 * 3 * s2 * T)))
    expect = (2 * gap / (T * eta) + eta * 500 * 2.0 * 3 * s2) / 500**2
    assert plan.bound_value == pytest.approx(expect)
    # The bound is on E||grad f(x_tau)||^2 for tau uniform on 1..T: the plan releases that
    # iterate, and only then says the bound covers the run.
    assert plan.averaging == "random" and plan.details["bound_covers_run"]
    assert plan.covers(averaging="random", momentum=0.0)
    assert not plan.covers(averaging="last", momentum=0.0)
    assert not plan.covers(averaging="random", momentum=0.5)
    # With momentum and the last iterate (accelerate) the bound does not cover the run.
    fast = plan_noisy_gd(1.0, 1e-5, 500, 3, c, loss_gap=0.7)
    assert fast.bound_name == "12.2.1" and not fast.details["bound_covers_run"]
    assert not fast.covers(averaging=fast.averaging, momentum=fast.momentum)


def test_bound_does_not_cover_a_run_whose_clip_changes_gradients():
    c = LogisticLoss().constants(1.0)
    plan = plan_noisy_gd(1.0, 1e-5, 2000.0, 10, c, init_distance=3.0, accelerate=False,
                         clip=0.5 * c.lipschitz)
    assert not plan.details["clip_covers_lipschitz"]
    assert not plan.details["bound_covers_run"]


def test_given_mu_is_used_without_conversion():
    from noisygd.accounting.calibration import calibrate_mu

    c = LogisticLoss(l2=1e-4).constants(1.0)
    mu = calibrate_mu(1.0, 1e-5)
    a = plan_noisy_gd(1.0, 1e-5, N, D_PARAMS, c)
    b = plan_noisy_gd(1.0, 1e-5, N, D_PARAMS, c, mu=mu)
    assert b.noise_multiplier == a.noise_multiplier
    a = plan_noisy_gd(1.0, 1e-5, N, D_PARAMS, c, max_steps=100)
    half = plan_noisy_gd(1.0, 1e-5, N, D_PARAMS, c, mu=mu / 2, max_steps=100)
    assert half.noise_multiplier == pytest.approx(2 * a.noise_multiplier)


def test_squared_loss_without_lipschitz_needs_clip():
    c = SquaredLoss().constants(1.0)
    with pytest.raises(AssumptionError, match="Lipschitz"):
        plan_noisy_gd(1.0, 1e-5, 500, 3, c)
    plan = plan_noisy_gd(1.0, 1e-5, 500, 3, c, clip=2.0)
    assert plan.details["clip"] == 2.0 and not plan.details["clip_covers_lipschitz"]


def test_accelerated_plan_is_honest_about_its_bound():
    c = HuberLoss(l2=1e-3).constants(1.0)
    plan = plan_noisy_gd(1.0, 1e-5, N, D_PARAMS, c, max_steps=60)
    # momentum from the public noise-to-signal ratio r = sqrt(p) z / n (auto_momentum)
    r = math.sqrt(D_PARAMS) * plan.noise_multiplier / N
    assert r <= 0.02 and plan.momentum == DEFAULT_MOMENTUM == 0.95
    assert plan.steps == 60 and plan.averaging == "last"
    assert plan.learning_rate == pytest.approx(1 / (N * (2.0 + 1e-3)))
    assert not plan.details["bound_covers_run"]
    kw = plan.noisy_gd_kwargs()
    assert kw["momentum"] == 0.95 and kw["steps"] == 60


@pytest.mark.parametrize("args,match", [
    ((0.0, 1e-5, N, 3), "epsilon"),
    ((1.0, 0.0, N, 3), "delta"),
    ((1.0, 1e-5, -5, 3), "n_samples"),
    ((1.0, 1e-5, N, 0), "n_params"),
])
def test_bad_inputs(args, match):
    c = LogisticLoss().constants(1.0)
    with pytest.raises(ValueError, match=match):
        plan_noisy_gd(*args, c)
    with pytest.raises(ValueError, match="max_steps"):
        plan_noisy_gd(1.0, 1e-5, N, 3, c, max_steps=0)
    with pytest.raises(ValueError, match="momentum"):
        plan_noisy_gd(1.0, 1e-5, N, 3, c, momentum=1.0)


def test_argument_types_follow_the_checks_policy():
    c = LogisticLoss().constants(1.0)
    with pytest.raises(TypeError, match="n_params"):
        plan_noisy_gd(1.0, 1e-5, N, 3.0, c)
    with pytest.raises(TypeError, match="max_steps"):
        plan_noisy_gd(1.0, 1e-5, N, 3, c, max_steps=10.5)
    with pytest.raises(TypeError, match="n_samples"):
        plan_noisy_gd(1.0, 1e-5, "many", 3, c)
    with pytest.raises(TypeError, match="accelerate"):
        plan_noisy_gd(1.0, 1e-5, N, 3, c, accelerate=1)


def test_newton_momentum_is_noisygds_rule_scaled_to_its_own_top():
    """m = m_N (1 - r(q)): the top for an optimisation-limited plan, 0 for a noise-limited
    one, log-linear in q between the thresholds 0.02 and 0.2 (noise_regime)."""
    assert 0.0 < NEWTON_MOMENTUM < 1.0
    assert newton_momentum(0.0) == newton_momentum(0.02) == NEWTON_MOMENTUM
    assert newton_momentum(0.2) == newton_momentum(5.0) == 0.0
    # q a quarter of the way (in log q) from 0.02 to 0.2: three quarters of the top
    assert newton_momentum(0.02 * 10 ** 0.25) == pytest.approx(0.75 * NEWTON_MOMENTUM)
    for q in (0.03, 0.07, 0.15):
        assert newton_momentum(q) / NEWTON_MOMENTUM == pytest.approx(
            auto_momentum(q) / DEFAULT_MOMENTUM, rel=1e-12)
    with pytest.raises(TypeError, match="noise_to_signal"):
        newton_momentum("quiet")


def test_noise_to_signal_ratio_is_sqrt_p_z_over_n_and_the_plans_recorded_ratio():
    assert noise_to_signal_ratio(16, 3.0, 600) == pytest.approx(4 * 3.0 / 600, rel=1e-15)
    plan = plan_noisy_gd(1.0, 1e-5, N, D_PARAMS, LogisticLoss(l2=1e-4).constants(1.0))
    assert plan.details["noise_to_signal"] == pytest.approx(
        noise_to_signal_ratio(D_PARAMS, plan.noise_multiplier, N), rel=1e-12)

def test_auto_momentum_is_zero_for_noisy_steps_and_the_default_for_quiet_ones():
    assert auto_momentum(0.5) == 0.0 and auto_momentum(0.2) == 0.0
    assert auto_momentum(0.01) == DEFAULT_MOMENTUM
    assert 0.0 < auto_momentum(0.05) < DEFAULT_MOMENTUM
    # The breast-cancer demo (n = 398 training rows, p = 31, eps = 1, delta = 1e-5,
    # add/remove with a paid-for count): the planner's momentum is 0.
    from noisygd.accounting.calibration import calibrate_mu

    mu = calibrate_mu(1.0, 1e-5) * math.sqrt(0.99)
    obj = LogisticLoss(l2=1e-4)  # D = the objective's optimum bound, as the solver passes it
    plan = plan_noisy_gd(1.0, 1e-5, 398, 31, obj.constants(1.0), mu=mu,
                         init_distance=obj.optimum_norm_bound())
    assert plan.momentum == 0.0


def test_accelerated_T_minimises_the_accelerated_bound():
    # T* = (4 n^2 beta_F^2 D^2 mu^2 / (d C^2 Delta^2))^(1/4) (planning module doc): the
    # minimiser of A(T) = 2 n beta_F D^2 / T^2 + T^2 d C^2 Delta^2 / (2 n beta_F mu^2).
    from noisygd.accounting.calibration import calibrate_mu

    obj = LogisticLoss(l2=1e-4)
    c = obj.constants(1.0)
    D = obj.optimum_norm_bound()
    mu = calibrate_mu(1.0, 1e-5)
    n = 1000
    plan = plan_noisy_gd(1.0, 1e-5, n, 101, c, init_distance=D)
    beta_f = c.smoothness + c.strong_convexity
    t_star = (4 * (n * beta_f * D * mu) ** 2 / (101 * c.lipschitz**2)) ** 0.25
    assert plan.details["accelerated_T"] == pytest.approx(t_star, rel=1e-12)

    def bound(t):
        return (2 * n * beta_f * D**2 / t**2
                + t**2 * 101 * c.lipschitz**2 / (2 * n * beta_f * mu**2))

    assert bound(t_star) <= min(bound(0.5 * t_star), bound(2 * t_star))
    # the notes' 12.2.2 horizon T_cf = n beta_F D sqrt(rho)/(L sqrt d): T*^2 = 2 sqrt(2) T_cf
    t_cf = n * beta_f * D * math.sqrt(mu**2 / 2) / (c.lipschitz * math.sqrt(101))
    assert t_star**2 == pytest.approx(2 * math.sqrt(2) * t_cf, rel=1e-12)
    assert plan.details["accelerated_T"] == pytest.approx(accelerated_t_star(
        n=n, smoothness=beta_f, init_distance=D, mu=mu, n_params=101, clip=c.lipschitz))
    # here 2 ceil(T*) < T_min: the floor (the former fixed T) and the last iterate
    assert 2 * math.ceil(t_star) < MIN_STEPS_ACCELERATED
    assert plan.steps == MIN_STEPS_ACCELERATED == DEFAULT_MAX_STEPS_ACCELERATED
    assert plan.averaging == "last"
    assert plan_noisy_gd(1.0, 1e-5, n, 101, c, init_distance=D, max_steps=77).steps == 77
    assert plan_noisy_gd(1.0, 1e-5, 1e9, 101, c, init_distance=D).details["accelerated_T"] > t_star


@pytest.mark.parametrize("n", [2e3, 3e4, 3e5, 1e8])
@pytest.mark.parametrize("eps", [0.5, 1.0, 8.0])
def test_accelerated_steps_are_twice_t_star_within_floor_and_cap(n, eps):
    # T = min(T_max, max(T_min, 2 ceil(T*))), suffix average iff 2 ceil(T*) > T_min
    from noisygd.accounting.calibration import calibrate_mu

    obj = LogisticLoss(l2=1e-4)
    c = obj.constants(1.0)
    D = obj.optimum_norm_bound()
    plan = plan_noisy_gd(eps, 1e-5, n, 31, c, init_distance=D)
    t_star = (4 * (n * (c.smoothness + 1e-4) * D * calibrate_mu(eps, 1e-5)) ** 2
              / (31 * c.lipschitz**2)) ** 0.25
    assert plan.details["accelerated_T"] == pytest.approx(t_star, rel=1e-9)
    want = min(MAX_STEPS_ACCELERATED, max(MIN_STEPS_ACCELERATED, 2 * math.ceil(t_star)))
    assert plan.steps == want
    assert plan.averaging == ("suffix" if 2 * math.ceil(t_star) > MIN_STEPS_ACCELERATED
                              else "last")
    assert accelerated_steps(t_star) == (want, 2 * math.ceil(t_star) > MIN_STEPS_ACCELERATED)
    # the noise is calibrated for the whole run: exactly mu-GDP whatever T
    assert plan.noise_multiplier == pytest.approx(
        math.sqrt(plan.steps) / calibrate_mu(eps, 1e-5), rel=1e-12)
    got = get_accountant("gdp").epsilon(_event(plan), 1e-5)
    assert got == pytest.approx(eps, rel=1e-6)


def test_accelerated_steps_grow_with_epsilon_and_n():
    obj = LogisticLoss(l2=1e-4)
    c = obj.constants(1.0)
    D = obj.optimum_norm_bound()
    for n in (500.0, 5e3, 5e4, 5e5):
        steps = [plan_noisy_gd(e, 1e-5, n, 53, c, init_distance=D).steps
                 for e in (0.1, 0.5, 1.0, 2.0, 8.0, 32.0)]
        assert steps == sorted(steps)
    for e in (0.5, 1.0, 8.0):
        steps = [plan_noisy_gd(e, 1e-5, n, 53, c, init_distance=D).steps
                 for n in (500.0, 5e3, 5e4, 5e5, 5e7)]
        assert steps == sorted(steps)
        t = [plan_noisy_gd(e, 1e-5, n, 53, c, init_distance=D).details["accelerated_T"]
             for n in (500.0, 5e3)]
        assert t[1] == pytest.approx(t[0] * math.sqrt(10), rel=1e-9)  # T* ~ sqrt(n)
    # between the floor and the cap, more budget means strictly more steps
    a = plan_noisy_gd(1.0, 1e-5, 3e4, 53, c, init_distance=D)
    b = plan_noisy_gd(2.0, 1e-5, 3e4, 53, c, init_distance=D)
    assert MIN_STEPS_ACCELERATED < a.steps < b.steps < MAX_STEPS_ACCELERATED


def test_accelerated_steps_checks_its_argument():
    assert accelerated_steps(1e9) == (MAX_STEPS_ACCELERATED, True)
    assert accelerated_steps(50.0) == (MIN_STEPS_ACCELERATED, False)
    assert accelerated_steps(50.5) == (102, True)
    with pytest.raises(ValueError, match="t_star"):
        accelerated_steps(0.0)


def test_quadratic_loss_releases_the_suffix_average_and_others_the_last_iterate():
    from noisygd.objectives.glm import SquaredLoss

    c = SquaredLoss(l2=1e-3).constants(1.0)
    quad = plan_noisy_gd(1.0, 1e-5, 5000, 13, c, clip=1.4, quadratic=True)
    assert quad.averaging == "suffix"
    other = plan_noisy_gd(1.0, 1e-5, 5000, 13, c, clip=1.4)
    assert other.averaging == "last"  # the floor T (2 ceil(T*) <= 100 here)
    assert 2 * math.ceil(other.details["accelerated_T"]) <= MIN_STEPS_ACCELERATED
    # a T fixed by the caller: the last iterate unless the loss is quadratic
    assert plan_noisy_gd(1e3, 1e-5, 5e6, 13, c, clip=1.4, max_steps=500).averaging == "last"
    assert plan_noisy_gd(1e3, 1e-5, 5e6, 13, c, clip=1.4, max_steps=500,
                         quadratic=True).averaging == "suffix"
    assert plan_noisy_gd(1.0, 1e-5, 5000, 13, c, clip=1.4, quadratic=True,
                         accelerate=False).averaging != "suffix"


def test_step_uses_n_step_and_refuses_n_step_below_n():
    c = LogisticLoss(l2=1e-4).constants(1.0)
    a = plan_noisy_gd(1.0, 1e-5, 1000, 11, c, max_steps=50)
    b = plan_noisy_gd(1.0, 1e-5, 1000, 11, c, max_steps=50, n_step=4000)
    assert b.learning_rate == pytest.approx(a.learning_rate / 4)
    assert b.noise_multiplier == a.noise_multiplier
    with pytest.raises(ValueError, match="n_step"):
        plan_noisy_gd(1.0, 1e-5, 1000, 11, c, n_step=999)


def test_accelerated_reference_bound_is_the_12_2_2_closed_form_at_the_planned_t():
    # In the accelerated mode bound_value is the 12.2.2 bound of the textbook run with the same
    # (z, T), evaluated at the planned T (which may exceed the textbook search's 100 steps).
    obj = LogisticLoss(l2=1e-4)
    c = obj.constants(1.0)
    D, n, d = obj.optimum_norm_bound(), 3e5, 31
    plan = plan_noisy_gd(2.0, 1e-5, n, d, c, init_distance=D)
    assert plan.steps > DEFAULT_MAX_STEPS_ACCELERATED and plan.bound_name == "12.2.2"
    T, L, beta_f = plan.steps, c.lipschitz, c.smoothness + c.strong_convexity
    s2 = T * L**2 / plan.mu**2
    eta = min(1 / (n * beta_f), D / math.sqrt(d * s2 * T))
    assert plan.bound_value == pytest.approx((D**2 / (T * eta) + eta * d * s2) / n, rel=1e-12)
    assert not plan.details["bound_covers_run"]


# ------------------------------------------- max_steps: limit, bounded grid (requests-fuzz R4)

@pytest.mark.parametrize("accelerate", [True, False])
def test_max_steps_above_the_limit_is_refused_naming_max_iter(accelerate):
    """``max_iter=10**9`` made the planner allocate arrays of 10**9 floats per candidate;
    above MAX_STEPS_LIMIT the planner refuses, naming the estimator's parameter too."""
    from noisygd.planning import MAX_STEPS_LIMIT

    c = LogisticLoss(l2=1e-4).constants(1.0)
    with pytest.raises(ValueError, match=r"max_steps.*max_iter.*10,000,000"):
        plan_noisy_gd(1.0, 1e-5, N, 3, c, max_steps=10**9, accelerate=accelerate)
    assert MAX_STEPS_LIMIT == 10**7
    # the limit itself is accepted; the accelerated plan runs exactly max_steps steps (a
    # step count), the textbook plan takes it as a cap
    assert plan_noisy_gd(1.0, 1e-5, N, 3, c, max_steps=MAX_STEPS_LIMIT).steps == MAX_STEPS_LIMIT
    textbook = plan_noisy_gd(1.0, 1e-5, N, 3, c, max_steps=MAX_STEPS_LIMIT, accelerate=False)
    assert 1 <= textbook.steps <= MAX_STEPS_LIMIT


def test_steps_grid_is_exact_up_to_its_threshold_and_bounded_above():
    from noisygd.planning import EXACT_STEP_GRID, _steps_grid

    np.testing.assert_array_equal(_steps_grid(150), np.arange(1.0, 151.0))
    assert _steps_grid(EXACT_STEP_GRID).size == EXACT_STEP_GRID
    big = _steps_grid(10**7)
    assert big.size <= 1024 + 4096 + 1
    assert big[0] == 1 and big[-1] == 10**7 and np.all(np.diff(big) > 0)
    assert np.all(big == np.round(big))


@pytest.mark.parametrize("loss, kwargs", [
    (LogisticLoss(l2=0.5, radius=2.0), {"radius": 2.0}),
    (LogisticLoss(l2=1e-4), {}),
])
def test_grid_plan_is_within_a_hair_of_the_exhaustive_one(loss, kwargs):
    """Above EXACT_STEP_GRID the bounds are evaluated on a grid: the chosen bound is never
    below the exhaustive minimum (it is a value of the same bound) and within 1e-3 of it
    (the bounds are smooth in T, the geometric grid's ratio is ~1.003)."""
    from noisygd import planning

    c = loss.constants(1.0)
    cap = 300_000
    grid = plan_noisy_gd(1.0, 1e-5, 1000, 5, c, accelerate=False, max_steps=cap, **kwargs)
    old = planning._steps_grid
    try:
        planning._steps_grid = lambda m: np.arange(1, m + 1, dtype=float)
        full = plan_noisy_gd(1.0, 1e-5, 1000, 5, c, accelerate=False, max_steps=cap, **kwargs)
    finally:
        planning._steps_grid = old
    assert full.bound_value <= grid.bound_value <= full.bound_value * (1 + 1e-3)


# ------------------------------------------------ extreme public constants (requests-fuzz R6)

def test_accelerated_t_star_in_the_log_domain_when_squares_leave_the_float_range():
    kw = {"n": 1000.0, "smoothness": 0.25, "init_distance": 1.0, "mu": 1.0, "n_params": 5}
    for clip in (1e-3, 1.0, 7.0):
        direct = (4.0 * (1000.0 * 0.25 * 1.0) ** 2 / (5 * clip**2)) ** 0.25
        assert accelerated_t_star(clip=clip, **kw) == direct  # the ordinary path, unchanged
    tiny = accelerated_t_star(clip=1e-300, **kw)  # C^2 underflows to 0
    assert tiny == pytest.approx(accelerated_t_star(clip=1.0, **kw) * 1e150, rel=1e-9)
    assert accelerated_t_star(clip=5e-324, **{**kw, "n": 1e300}) == math.inf
    assert accelerated_steps(math.inf) == (MAX_STEPS_ACCELERATED, True)


@pytest.mark.parametrize("clip", [1e200, 1e300])
def test_huge_clip_is_refused_naming_clip_and_row_norm_bound(clip):
    c = LogisticLoss(l2=1e-4).constants(1.0)
    with pytest.raises(ValueError, match=r"clip=.*row_norm_bound.*l2") as info:
        plan_noisy_gd(1.0, 1e-5, 1000, 5, c, clip=clip)
    assert "floating-point range" in str(info.value)


def test_huge_l2_is_refused_naming_l2():
    c = LogisticLoss(l2=1e308).constants(1.0)
    with pytest.raises(ValueError, match="l2"):
        plan_noisy_gd(1.0, 1e-5, 1000, 5, c)


@pytest.mark.parametrize("accelerate", [True, False])
def test_tiny_clip_is_planned(accelerate):
    """``clip=1e-300``: C^2 underflows (ZeroDivisionError before); the plan is valid and
    meets the budget (z does not depend on C)."""
    c = LogisticLoss(l2=1e-4).constants(1.0)
    plan = plan_noisy_gd(1.0, 1e-5, 1000, 5, c, clip=1e-300, accelerate=accelerate)
    assert math.isfinite(plan.noise_multiplier) and plan.noise_multiplier > 0
    if accelerate:
        assert plan.steps == MAX_STEPS_ACCELERATED
    eps = get_accountant("gdp").epsilon(_event(plan), 1e-5)
    assert eps <= 1.0 * (1 + 1e-9)


# ------------------------------------------------------------------ the planned ridge


def _ridge_bound(lam, *, n, d, C, mu, F0, sens=1.0):
    """The bias + stationary-noise bound ridge_strength minimises (its docstring)."""
    D0 = math.sqrt(2.0 * n * F0)
    return 0.5 * lam * D0**2 + d * C**2 * sens**2 / (2.0 * lam * n**2 * mu**2)


@pytest.mark.parametrize("n,d,C,mu,F0,sens", [
    (36000, 53, 0.73, 0.27, math.log(2), 1.0), (455, 31, 0.71, 0.14, math.log(2), 2.0),
    (1437, 650, 1.0, 1.66, math.log(10), 1.0)])
def test_ridge_strength_is_the_closed_form_minimiser_of_its_bound(n, d, C, mu, F0, sens):
    from scipy.optimize import minimize_scalar

    lam = ridge_strength(n=n, n_params=d, clip=C, mu=mu, loss_at_zero=F0, sensitivity=sens)
    assert lam == pytest.approx(math.sqrt(d) * C * sens / (mu * n**1.5 * math.sqrt(2 * F0)),
                                rel=1e-12)
    # an independent numerical minimisation of the bound (in log lambda) finds the same point
    res = minimize_scalar(lambda t: _ridge_bound(math.exp(t), n=n, d=d, C=C, mu=mu, F0=F0,
                                                 sens=sens),
                          bracket=(math.log(lam) - 3, math.log(lam) + 3), tol=1e-12)
    assert math.exp(res.x) == pytest.approx(lam, rel=1e-5)
    # at the optimum the two terms are equal, and the value is sqrt(d) C Delta D0 / (n mu)
    D0 = comparator_radius(n=n, loss_at_zero=F0)
    assert _ridge_bound(lam, n=n, d=d, C=C, mu=mu, F0=F0, sens=sens) == pytest.approx(
        math.sqrt(d) * C * sens * D0 / (n * mu), rel=1e-12)


def test_ridge_strength_grows_with_noise_and_shrinks_with_data_and_budget():
    base = {"n": 5000.0, "n_params": 20, "clip": 1.0, "mu": 0.5, "loss_at_zero": math.log(2)}
    lam = ridge_strength(**base)
    # more rows or more budget: less ridge, as n^(-3/2) and 1/mu
    assert ridge_strength(**{**base, "n": 4 * base["n"]}) == pytest.approx(lam / 8, rel=1e-12)
    assert ridge_strength(**{**base, "mu": 2 * base["mu"]}) == pytest.approx(lam / 2, rel=1e-12)
    # more noise (dimensions, clip, replace-one sensitivity): more ridge
    assert ridge_strength(**{**base, "n_params": 80}) == pytest.approx(2 * lam, rel=1e-12)
    assert ridge_strength(**{**base, "clip": 3.0}) == pytest.approx(3 * lam, rel=1e-12)
    assert ridge_strength(**base, sensitivity=2.0) == pytest.approx(2 * lam, rel=1e-12)
    from noisygd.accounting.calibration import calibrate_mu

    lams = [ridge_strength(**{**base, "mu": calibrate_mu(e, 1e-5)}) for e in (0.5, 1, 2, 8)]
    assert all(a > b for a, b in itertools.pairwise(lams))


def test_comparator_radius_bounds_the_norm_of_the_unit_prior_map_model():
    # D0 = sqrt(2 n F0) bounds ||w0|| for w0 = argmin sum_i l_i(w) + ||w||^2 / 2 (mean-form
    # ridge 1/n), whatever the data: checked on separable data (no unregularised optimum).
    from noisygd.oracles.array import ArrayOracle

    rng = np.random.default_rng(0)
    for n in (50, 400):
        X = rng.normal(size=(n, 3)) / math.sqrt(3)
        y = np.where(X[:, 0] > 0, 1.0, -1.0)
        oracle = ArrayOracle(LogisticLoss(l2=1.0 / n), X, y, row_norm_bound=2.0)
        w0, _ = oracle.minimize()
        assert np.linalg.norm(w0) <= comparator_radius(n=n, loss_at_zero=math.log(2))
    assert comparator_radius(n=8.0, loss_at_zero=2.0) == pytest.approx(math.sqrt(32.0))


@pytest.mark.parametrize("kwargs,exc", [
    ({"n": 0.0}, ValueError), ({"n": "10"}, TypeError), ({"n_params": 0}, ValueError),
    ({"clip": -1.0}, ValueError), ({"mu": 0.0}, ValueError), ({"loss_at_zero": 0.0}, ValueError),
    ({"sensitivity": math.nan}, ValueError)])
def test_ridge_strength_checks_its_arguments(kwargs, exc):
    base = {"n": 100.0, "n_params": 3, "clip": 1.0, "mu": 1.0, "loss_at_zero": 1.0}
    with pytest.raises(exc):
        ridge_strength(**{**base, **kwargs})


# --------------------------------------------------------------------------- ridge horizon
def test_ridge_horizon_steps_closed_form():
    from noisygd.planning import MAX_STEPS_ACCELERATED, ridge_horizon_steps

    f = ridge_horizon_steps
    assert f(smoothness=0.25, strong_convexity=1e-3, planned_steps=100) == 250
    assert f(smoothness=0.25, strong_convexity=1e-3, planned_steps=100, momentum=0.5) == 125
    # momentum 0.9: (1 - m) kappa = 25 < T_plan: the plan's T
    assert f(smoothness=0.25, strong_convexity=1e-3, planned_steps=100, momentum=0.9) == 100
    assert f(smoothness=0.25, strong_convexity=1e-7, planned_steps=100) == MAX_STEPS_ACCELERATED
    assert f(smoothness=0.25, strong_convexity=0.2501 / 301.5, planned_steps=100) == 302
    for bad in ({"strong_convexity": 0.0}, {"momentum": 1.0}, {"momentum": -0.1},
                {"planned_steps": 0}):
        kw = {"smoothness": 0.25, "strong_convexity": 1e-3, "planned_steps": 100, **bad}
        with pytest.raises(ValueError):
            f(**kw)


@pytest.mark.parametrize("m", [0.0, 0.5, 0.8])
def test_ridge_horizon_premises_on_the_quadratic_model(m):
    """The two facts ridge_horizon_steps rests on, checked on the linear recursion itself
    (heavy ball, step 1/beta, curvature h = lambda << beta): after (1 - m) kappa steps the
    slowest direction has contracted by about e^-1, and the stationary variance of the
    noise-driven iterate is 1/(1 - m) times plain GD's (discrete Lyapunov equation)."""
    from scipy.linalg import solve_discrete_lyapunov

    beta, lam = 1.0, 1e-3
    eta, kappa = 1.0 / beta, beta / lam

    def transition(mom):
        # state (x_t, x_{t-1}); x_{t+1} = x_t - eta h x_t + mom (x_t - x_{t-1})
        return np.array([[1.0 + mom - eta * lam, -mom], [1.0, 0.0]])

    A = transition(m)
    state = np.array([1.0, 1.0])
    for _ in range(round((1 - m) * kappa)):
        state = A @ state
    assert math.exp(-1) * 0.8 <= abs(state[0]) <= math.exp(-1) * 1.3
    Q = np.array([[eta**2, 0.0], [0.0, 0.0]])  # unit noise on the gradient, step eta
    var_m = solve_discrete_lyapunov(A, Q)[0, 0]
    var_0 = solve_discrete_lyapunov(transition(0.0), Q)[0, 0]
    assert var_m / var_0 == pytest.approx(1.0 / (1.0 - m), rel=0.02)


def test_the_compute_budget_is_a_parameter_the_plan_records_and_warns_about():
    # Issue 19, item 2: no hidden cap. The accelerated rule's T = max(T_min, 2 ceil(T*)) is
    # capped by step_budget (default MAX_STEPS_ACCELERATED); the plan records what it wanted.
    import warnings as _w

    from noisygd.planning import (
        MAX_STEPS_ACCELERATED,
        ComputeBudgetWarning,
        accelerated_steps,
        unconstrained_steps,
    )
    from noisygd.solvers import Budget, NoisyGDSolver, PublicFacts

    assert accelerated_steps(700.2, 1000) == (1000, True)
    assert accelerated_steps(700.2, 5000) == (1402, True)
    assert unconstrained_steps(700.2) == 1402.0 and unconstrained_steps(10.0) == 100.0
    from noisygd.objectives.glm import LogisticLoss

    facts = PublicFacts.from_objective(LogisticLoss(l2=1e-6), 20, row_norm_bound=1.0,
                                       n_samples=1e6, relation="add_remove")
    with pytest.warns(ComputeBudgetWarning, match=r"wanted [\d,]+ steps"):
        plan, _ = NoisyGDSolver().plan(facts, Budget(8.0, 1e-6))
    d = plan.details
    assert d["compute_budget"] == MAX_STEPS_ACCELERATED and d["compute_budget_binds"]
    assert plan.steps == MAX_STEPS_ACCELERATED < d["unconstrained_steps"]
    wanted = int(d["unconstrained_steps"])
    raised = PublicFacts.from_objective(LogisticLoss(l2=1e-6), 20, row_norm_bound=1.0,
                                        n_samples=1e6, relation="add_remove",
                                        options={"plan": {"step_budget": wanted}})
    with _w.catch_warnings():
        _w.simplefilter("error", ComputeBudgetWarning)
        plan2, _ = NoisyGDSolver().plan(raised, Budget(8.0, 1e-6))
    assert plan2.steps == wanted and not plan2.details["compute_budget_binds"]


def test_noisy_sgd_records_its_compute_budget_and_warns_when_it_binds():
    from noisygd.objectives.glm import LogisticLoss
    from noisygd.planning import ComputeBudgetWarning
    from noisygd.solvers import Budget, NoisySGDSolver, PublicFacts

    def facts(**options):
        return PublicFacts.from_objective(LogisticLoss(l2=1e-6), 20, row_norm_bound=1.0,
                                          n_samples=1e6, relation="add_remove",
                                          options=options)

    with pytest.warns(ComputeBudgetWarning, match="NoisySGD's plan wanted"):
        plan = NoisySGDSolver().plan(facts(), Budget(8.0, 1e-6))
    info = plan.budget_info
    assert info["compute_budget_binds"] and plan.steps == info["compute_budget"] == 1000
    assert info["unconstrained_steps"] > 1000
    raised = NoisySGDSolver().plan(facts(step_budget=int(info["unconstrained_steps"])),
                                   Budget(8.0, 1e-6))
    assert raised.steps == int(info["unconstrained_steps"])
    assert not raised.budget_info["compute_budget_binds"]
