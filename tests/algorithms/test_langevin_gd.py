"""Projected noisy GD (seed 004, Algorithm 1), exact Gaussian dynamics, Theorem 4 planner."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.optimize import minimize

from noisygd.accounting import best
from noisygd.accounting.events import Neighbouring
from noisygd.accounting.langevin import (
    LangevinCompositionAccountant,
    LastIterateLangevinAccountant,
    corollary2_rdp,
    theorem3_lower_bound,
)
from noisygd.algorithms.langevin_gd import (
    gaussian_renyi_divergence,
    langevin_facts,
    linear_gaussian_dynamics,
    projected_noisy_gd,
    squared_loss_exact_divergence,
)
from noisygd.exceptions import AssumptionError
from noisygd.objectives import SquaredDistanceLoss
from noisygd.objectives.glm import LogisticLoss, SquaredLoss
from noisygd.oracles import ArrayOracle, clip_rows
from noisygd.planning_langevin import plan_langevin, rho_for_epsilon_delta
from noisygd.solvers.base import PublicFacts


def _facts(obj, n, d, bound):
    """Public facts of a problem without data (the planner reads nothing else)."""
    return PublicFacts(n_samples=n, n_params=obj.n_params(d), constants=obj.constants(bound),
                       row_norm_bound=bound, relation=Neighbouring.REPLACE_ONE, l2=obj.l2,
                       radius=obj.radius,
                       total_gradient_sensitivity=obj.total_gradient_sensitivity(bound),
                       quadratic_constant_hessian=obj.quadratic_constant_hessian)

LAST = LastIterateLangevinAccountant()


@pytest.fixture(scope="module")
def logistic_data():
    rng = np.random.default_rng(3)
    n, d = 2000, 5
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    w = rng.normal(size=d) * 3
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ w)), 1.0, -1.0)
    return X, y


def _run(obj, X, y, seed, bound=1.0, **kw):
    args = dict(sigma=0.05, step_size=0.5, steps=50, n_samples=X.shape[0])
    args.update(kw)
    oracle = ArrayOracle(obj, X, y, row_norm_bound=bound)
    return projected_noisy_gd(oracle, rng=np.random.default_rng(seed), **args)


# ---------------------------------------------------------------- Algorithm 1
def test_same_seed_same_result_and_no_history(logistic_data):
    X, y = logistic_data
    obj = LogisticLoss(l2=0.1)
    a, b, c = _run(obj, X, y, 1), _run(obj, X, y, 1), _run(obj, X, y, 2)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert not np.array_equal(a.theta, c.theta)
    assert a.theta.shape == (6,) and a.n_iter == 50
    # Only theta_K is released: info holds public scalars, no iterate.
    for v in a.info.values():
        assert v is None or isinstance(v, int | float | str)
    assert a.event.hidden_trajectory and not a.event.clipped_gradients
    assert a.event.theorem == "corollary1"
    assert a.event.start_variance == pytest.approx(2 * 0.05**2 / 0.1)
    assert a.event.smoothness == pytest.approx(2 / 4 + 0.1)  # (B^2 + 1)/4 + l2
    assert a.event.sensitivity == pytest.approx(2 * math.sqrt(2))  # 2L, L = sqrt(B^2 + 1)


def test_strict_assumption_checks(logistic_data):
    X, y = logistic_data
    with pytest.raises(AssumptionError, match="strongly convex"):
        _run(LogisticLoss(l2=0.0), X, y, 0, theta0=np.zeros(6))
    with pytest.raises(AssumptionError, match="step size"):
        _run(LogisticLoss(l2=0.1), X, y, 0, step_size=2.0)  # 1/beta = 1/0.6
    with pytest.raises(AssumptionError, match="unbounded"):
        _run(SquaredLoss(l2=0.1), X, y, 0)  # no radius: no Lipschitz constant
    # strict=False runs; only the composition accountant bounds it.
    res = _run(LogisticLoss(l2=0.1), X, y, 0, step_size=2.0, strict=False)
    assert not LAST.supports(res.event)
    assert LangevinCompositionAccountant().supports(res.event)
    with pytest.raises(ValueError, match="n_samples"):
        _run(LogisticLoss(l2=0.1), X, y, 0, n_samples=X.shape[0] + 1)
    with pytest.raises(TypeError, match="sigma must be a real number"):
        _run(LogisticLoss(l2=0.1), X, y, 0, sigma="0.1")
    with pytest.raises(ValueError, match="theorem must be one of"):
        _run(LogisticLoss(l2=0.1), X, y, 0, theorem="lemma5")


def test_rows_are_served_inside_the_declared_bound(logistic_data):
    """Rows above B are mapped onto the sphere by the oracle (free per-row map): the run on
    3X with B = 1 is the run on clip_rows(3X, 1), and the event records B's constants."""
    X, y = logistic_data
    obj = LogisticLoss(l2=0.1)
    a = _run(obj, 3 * X, y, 4)
    b = _run(obj, clip_rows(3 * X, 1.0), y, 4)
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-10, atol=1e-12)
    assert a.event.sensitivity == b.event.sensitivity == pytest.approx(2 * math.sqrt(2))
    facts = langevin_facts(ArrayOracle(obj, 3 * X, y, row_norm_bound=1.0))
    assert facts["smoothness"] == pytest.approx(0.5 + 0.1)


def test_projection_keeps_iterates_in_ball(logistic_data):
    X, y = logistic_data
    obj = LogisticLoss(l2=0.1, radius=0.3)
    res = _run(obj, X, y, 5, sigma=1.0)
    assert np.linalg.norm(res.theta) <= 0.3 + 1e-12
    assert res.event.constraint == "ball" and res.event.radius == 0.3
    assert LAST.supports(res.event)


def test_converges_to_the_minimiser_with_small_noise(logistic_data):
    X, y = logistic_data
    obj = LogisticLoss(l2=0.1)
    opt = minimize(lambda t: obj.value(t, X, y), np.zeros(6), jac=lambda t: obj.gradient(t, X, y),
                   method="L-BFGS-B", options={"gtol": 1e-12})
    res = _run(obj, X, y, 0, sigma=1e-4, step_size=1.5, steps=400)
    assert obj.value(res.theta, X, y) - opt.fun < 1e-6


def test_first_step_law_on_squared_distance_loss():
    # One step from the Gaussian start on 0.5||theta - x||^2 with all x = 0 (lambda = beta = 1):
    # theta_1 = (1 - eta) theta_0 + sqrt(2 eta) sigma Z, theta_0 ~ N(0, 2 sigma^2) per coordinate,
    # so Var = (1 - eta)^2 2 sigma^2 + 2 eta sigma^2. 4000 coordinates x 5 runs, fixed seeds.
    sigma, eta, d = 0.3, 0.4, 4000
    X = np.zeros((3, d))
    var = (1 - eta) ** 2 * 2 * sigma**2 + 2 * eta * sigma**2
    oracle = ArrayOracle(SquaredDistanceLoss(), X, np.zeros(3), row_norm_bound=1.0)
    samples = np.concatenate([
        projected_noisy_gd(oracle, sigma=sigma, step_size=eta, steps=1, n_samples=3,
                           rng=np.random.default_rng(s)).theta for s in range(5)])
    N = samples.size
    # Chi-square test of the variance, two-sided, false-failure rate 1e-6 (mean is 0).
    stat = np.sum(samples**2) / var
    assert stats.chi2.ppf(5e-7, N) < stat < stats.chi2.isf(5e-7, N)


# ------------------------------------------------------------ exact Gaussian dynamics
def test_linear_gaussian_dynamics_matches_appendix_e():
    eta, sigma, n, x1, K = 0.1, 0.2, 50, 3.0, 40
    means, covs = linear_gaussian_dynamics(np.eye(1), np.array([x1 / n]), step_size=eta,
                                           sigma=sigma, steps=K, mean0=np.zeros(1),
                                           cov0=np.zeros((1, 1)))
    i = np.arange(K)
    # Appendix E: mean eta x1/n sum (1-eta)^i, variance 2 eta sigma^2 sum (1-eta)^{2i}.
    assert means[K, 0] == pytest.approx(eta * x1 / n * np.sum((1 - eta) ** i), rel=1e-12)
    assert covs[K, 0, 0] == pytest.approx(2 * eta * sigma**2 * np.sum((1 - eta) ** (2 * i)),
                                          rel=1e-12)


def test_gaussian_renyi_divergence_against_quadrature():
    alpha, m1, v1, m2, v2 = 3.0, 0.4, 0.8, -0.1, 1.1

    def integrand(t):
        lp = stats.norm.logpdf(t, m1, math.sqrt(v1))
        lq = stats.norm.logpdf(t, m2, math.sqrt(v2))
        return math.exp(alpha * lp + (1 - alpha) * lq)

    val, _ = integrate.quad(integrand, -20, 20, epsabs=1e-14, epsrel=1e-12, limit=200)
    expected = math.log(val) / (alpha - 1)
    got = gaussian_renyi_divergence(alpha, [m1], [[v1]], [m2], [[v2]])
    assert got == pytest.approx(expected, rel=1e-8)
    # Equal covariances: alpha ||m1 - m2||^2 / (2 s^2) (Mironov 2017, Prop. 7).
    assert gaussian_renyi_divergence(5.0, [1.0, 2.0], np.eye(2) * 0.5, [0.0, 0.0],
                                     np.eye(2) * 0.5) == pytest.approx(5 * 5 / (2 * 0.5))
    # Sigma_alpha not positive definite: infinite.
    assert gaussian_renyi_divergence(10.0, [0.0], [[1.0]], [0.0], [[0.5]]) == math.inf


@pytest.mark.parametrize("eta", [0.02, 0.3, 0.9])
def test_tightness_lower_exact_upper(eta):
    sigma, n, S, alpha, K_max = 0.02, 5000, 4.0, 20.0, 300
    laws = [linear_gaussian_dynamics(np.eye(1), np.array([x / n]), step_size=eta, sigma=sigma,
                                     steps=K_max, mean0=np.zeros(1), cov0=np.zeros((1, 1)))
            for x in (S / 2, -S / 2)]
    for K in range(1, K_max + 1):
        exact = gaussian_renyi_divergence(alpha, laws[0][0][K], laws[0][1][K], laws[1][0][K],
                                          laws[1][1][K])
        closed = squared_loss_exact_divergence(alpha, sigma, eta, K, n, S)
        assert exact == pytest.approx(float(closed), rel=1e-8)
        assert theorem3_lower_bound(alpha, sigma, eta, K, n, S) <= exact * (1 + 1e-12)
        assert exact <= corollary2_rdp(alpha, sigma, eta, K, n, S) * (1 + 1e-12)


def test_squared_distance_loss_facts_give_corollary2():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    oracle = ArrayOracle(SquaredDistanceLoss(), X, np.zeros(20), row_norm_bound=1.0)
    res = projected_noisy_gd(oracle, sigma=0.1, step_size=0.5, steps=10, n_samples=20,
                             theta0=np.zeros(3), rng=rng)
    assert res.event.theorem == "corollary2"
    assert res.event.sensitivity == 2.0
    expected = corollary2_rdp(7.0, 0.1, 0.5, 10, 20, 2.0)
    assert LAST.rdp(res.event, [7.0])[0] == pytest.approx(float(expected), rel=1e-12)


# ---------------------------------------------------------------- Theorem 4 planner
def test_theorem4_plan_rdp_target():
    obj = LogisticLoss(l2=0.05, radius=5.0)
    n, d, alpha, eps_p = 10_000, 9, 10.0, 0.5
    plan = plan_langevin(_facts(obj, n, d, 1.0), rdp_order=alpha, rdp_epsilon=eps_p,
                         step_rule="theorem4", max_steps=10**9)
    lam, beta, L = 0.05, 0.5 + 0.05, math.sqrt(2.0)
    assert plan.step_size == pytest.approx(lam / (2 * beta**2))
    assert plan.k_star == pytest.approx(2 * beta**2 / lam**2 * math.log(n**2 * eps_p
                                                                        / (alpha * 10)))
    assert plan.steps == math.ceil(plan.k_star)
    # Theorem 4's sigma^2 = 4 alpha L^2 / (lam eps' n^2) dominates the finite-K choice.
    paper = 4 * alpha * L**2 / (lam * eps_p * n**2)
    assert plan.sigma**2 <= paper
    assert plan.sigma**2 == pytest.approx(paper * -math.expm1(-lam * plan.step_size
                                                             * plan.steps / 2), rel=1e-12)
    assert plan.excess_risk_bound is not None and plan.excess_risk_bound > 0


def test_plan_meets_epsilon_delta_tightly():
    obj = LogisticLoss(l2=0.02)
    for eps in (0.3, 1.0, 4.0):
        plan = plan_langevin(_facts(obj, 5000, 10, 1.0), epsilon=eps, delta=1e-6)
        from noisygd.accounting.langevin import LastIterateLangevin

        ev = LastIterateLangevin(
            strong_convexity=0.02, smoothness=plan.smoothness, step_size=plan.step_size,
            sigma=plan.sigma, steps=plan.steps, n_samples=5000, sensitivity=plan.sensitivity,
            constraint="none", start_variance=2 * plan.sigma**2 / 0.02)
        spent = LAST.epsilon(ev, 1e-6)
        assert spent <= eps * (1 + 1e-9)
        assert spent >= eps * (1 - 1e-6)
        assert plan.step_size * plan.smoothness < 1
    assert rho_for_epsilon_delta(1.0, 1e-5) < rho_for_epsilon_delta(2.0, 1e-5)


def test_planner_refuses_without_assumptions():
    with pytest.raises(AssumptionError):
        plan_langevin(_facts(LogisticLoss(l2=0.0), 100, 3, 1.0), epsilon=1, delta=1e-5)
    with pytest.raises(AssumptionError):
        plan_langevin(_facts(SquaredLoss(l2=0.1), 100, 3, 1.0), epsilon=1, delta=1e-5)
    with pytest.raises(ValueError):
        plan_langevin(_facts(LogisticLoss(l2=0.1), 100, 3, 1.0), epsilon=1)
    with pytest.raises(AssumptionError):
        plan_langevin(_facts(LogisticLoss(l2=0.1), 100, 3, 1.0), epsilon=1, delta=1e-5,
                      step_rule=5.0)


def test_planned_run_end_to_end(logistic_data):
    """Plan (Theorem 4 / Corollary 1) from public facts, run Algorithm 1 through the oracle,
    account with the last-iterate accountant: the target is met and beats composition."""
    X, y = logistic_data
    n = X.shape[0]
    obj = LogisticLoss(l2=0.05)
    oracle = ArrayOracle(obj, X, y, row_norm_bound=1.0)

    def run(eps, seed):
        plan = plan_langevin(PublicFacts.from_oracle(oracle, n_samples=n,
                                                     relation="replace_one"),
                             epsilon=eps, delta=1e-5)
        return projected_noisy_gd(oracle, sigma=plan.sigma, step_size=plan.step_size,
                                  steps=plan.steps, n_samples=n,
                                  rng=np.random.default_rng(seed))

    res = run(1.0, 0)
    acc = best(res.event, 1e-5, include_paper=True, exhaustive=True)
    assert acc.accountant == "langevin_last_iterate"
    assert acc.epsilon <= 1.0 * (1 + 1e-9)
    assert acc.by_accountant["langevin_composition"] > acc.epsilon
    # Utility: at eps = 8 the excess risk is small (Lemma 6 regime).
    _, f_star = oracle.minimize()
    assert oracle.value(run(8.0, 1).theta) - f_star < 0.01
