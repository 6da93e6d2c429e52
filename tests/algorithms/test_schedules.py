"""Dynamic privacy-budget allocation (seed 003): schedules, T*, Algorithms 1-2, the budget."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from noisygd.accounting import best, get_accountant
from noisygd.accounting.events import Composed
from noisygd.algorithms.schedules import (
    SCHEDULES,
    dynamic_noisy_gd,
    dynamic_optimal_steps,
    dynamic_schedule,
    eer_bound,
    momentum_weights,
    noise_schedule,
    noise_weights,
    uniform_optimal_steps,
    utility_alpha,
)
from noisygd.objectives.glm import LogisticLoss
from noisygd.oracles import ArrayOracle


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(7)
    n, d = 500, 4
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ (2 * rng.normal(size=d)))), 1.0, -1.0)
    obj = LogisticLoss(l2=0.05)
    return obj, X, y, ArrayOracle(obj, X, y, row_norm_bound=1.0)


@pytest.mark.parametrize("kind", SCHEDULES)
@pytest.mark.parametrize("budget, steps", [(0.01, 1), (0.3, 17), (5.0, 400)])
def test_every_schedule_spends_the_budget_and_never_more(kind, budget, steps):
    s = noise_schedule(kind, budget, steps, gamma=0.9, decay=0.95, period=5, power=0.7)
    assert s.shape == (steps,) and np.all(s > 0)
    spent = math.fsum(1.0 / s**2)
    assert spent <= budget
    assert spent >= budget * (1 - 1e-9)


def test_uniform_and_decay_shapes():
    np.testing.assert_allclose(noise_schedule("uniform", 2.0, 8), math.sqrt(8 / 2.0) *
                               (1 + 1e-12) ** 0.5 * np.ones(8), rtol=1e-14)
    for kind in ("exponential", "step", "polynomial", "dynamic"):
        s = noise_schedule(kind, 1.0, 30, gamma=0.8, decay=0.9, period=4, power=1.0)
        assert np.all(np.diff(s) <= 1e-15)  # noise decays over time
        assert s[-1] < s[0]


def test_lemma31_dynamic_schedule_is_optimal():
    rng = np.random.default_rng(0)
    q = rng.uniform(0.1, 2.0, size=25)
    R = 0.7
    s = dynamic_schedule(q, R)
    value = R * np.sum(q * s**2)
    # Eq. (10): the minimum is (sum sqrt q)^2.
    assert value == pytest.approx(np.sum(np.sqrt(q)) ** 2, rel=1e-10)
    # Any other allocation of the same budget is no better.
    for _ in range(200):
        w = rng.dirichlet(np.ones(25))  # 1/sigma_t^2 = R w_t
        assert R * np.sum(q / (R * w)) >= value * (1 - 1e-10)
    # q_t = gamma^{T-t}: sigma_t^2 proportional to gamma^{-(T-t)/2}.
    s = noise_schedule("dynamic", R, 10, gamma=0.81)
    np.testing.assert_allclose(s[:-1] ** 2 / s[1:] ** 2, 0.9 ** -1 * np.ones(9), rtol=1e-12)


def test_lemma32_dynamic_t_star_minimises_the_bound():
    for kappa, alpha in [(11.0, 3e-3), (11.0, 3e-5), (50.0, 1e-4), (4.0, 1e-2)]:
        gamma = 1 - 1 / kappa

        def bound(T, gamma=gamma, alpha=alpha):
            # Eq. (6) with Eq. (10): gamma^T + alpha (sum_t gamma^{(T-t)/2})^2.
            return gamma**T + alpha * np.sum(gamma ** ((T - np.arange(1, T + 1)) / 2)) ** 2

        Ts = np.arange(1, 3000)
        vals = np.array([bound(T) for T in Ts])
        t_star = dynamic_optimal_steps(kappa, alpha)
        # Eq. (11) is the continuous minimiser rounded up: the integer one is T* or T* - 1.
        assert Ts[np.argmin(vals)] in (t_star - 1, t_star)
        # eer_bound evaluates the same thing for the actual schedule.
        s = noise_schedule("dynamic", 0.5, t_star, gamma=gamma)
        assert eer_bound(s, 0.5, kappa, alpha) == pytest.approx(bound(t_star), rel=1e-9)


def test_theorem33_uniform_t_star():
    for kappa, alpha in [(11.0, 3e-3), (11.0, 3e-5), (50.0, 1e-4)]:
        gamma = 1 - 1 / kappa
        Ts = np.arange(0, 5000)
        approx = gamma**Ts + kappa * alpha * Ts  # the bound Eq. (8) minimises
        t_star = uniform_optimal_steps(kappa, alpha)
        assert abs(t_star - Ts[np.argmin(approx)]) <= 1
    assert uniform_optimal_steps(2.0, 1.0) == 0  # kappa alpha + ln gamma >= 0
    with pytest.raises(ValueError):
        uniform_optimal_steps(1.0, 0.1)


def test_alpha_units():
    a = utility_alpha(11, 2.0, 0.5, 0.6, 1000, math.log(2))
    assert a == pytest.approx(11 * 4 / (2 * 0.5 * 0.6 * 1e6 * math.log(2)))


def test_momentum_weights_eq17():
    q = momentum_weights(5, 0.5, 0.9)
    k = np.arange(5, 0, -1)
    np.testing.assert_allclose(q, (0.25**k - 0.9**k) / (0.25 - 0.9))
    np.testing.assert_allclose(noise_weights(4, 0.5, 2.0), [0.25, 0.5, 1.0, 2.0])


# ----------------------------------------------------------- Algorithm 1 / 2
def test_budget_is_never_exceeded_and_run_terminates(problem):
    _obj, X, _y, o = problem
    planned = np.full(30, 2.0)  # requests of exactly 1/4 each
    for R, fits in ((1.0, 4), (0.99, 3), (1.01, 4), (7.5, 30)):
        res = dynamic_noisy_gd(o, sigmas=planned, budget=R, clip=1.5,
                               learning_rate=1.0, n_samples=X.shape[0],
                               rng=np.random.default_rng(0))
        assert res.n_iter == fits
        assert res.info["spent"] == fits / 4 <= R and res.info["planned_steps"] == 30
        assert isinstance(res.event, Composed) and len(res.event.events) == fits
    R = 0.4
    res = dynamic_noisy_gd(o, sigmas=noise_schedule("uniform", 2 * R, 30), budget=R,
                           clip=1.5, learning_rate=1.0, n_samples=X.shape[0],
                           rng=np.random.default_rng(0))
    assert res.n_iter in (14, 15) and res.info["spent"] <= R
    # The event's zCDP (foundation accountant) is sum 1/(2 sigma_t^2) = spent / 2 <= R / 2.
    rho = get_accountant("zcdp").rho(res.event)
    assert rho == pytest.approx(res.info["spent"] / 2, rel=1e-12)
    assert rho <= R / 2
    acc = best(res.event, 1e-5, exhaustive=True)
    assert {"gdp", "zcdp", "rdp"} <= set(acc.by_accountant)


@pytest.mark.parametrize("kind", SCHEDULES)
def test_planned_schedules_run_to_the_end_within_budget(problem, kind):
    _obj, X, _y, o = problem
    R, T = 0.3, 25
    s = noise_schedule(kind, R, T, gamma=0.9, decay=0.9)
    res = dynamic_noisy_gd(o, sigmas=s, budget=R, clip=1.5, learning_rate=1.0,
                           n_samples=X.shape[0], relation="replace_one",
                           rng=np.random.default_rng(1))
    assert res.n_iter == T
    assert res.info["spent"] <= R
    assert get_accountant("zcdp").rho(res.event) <= 4 * R / 2  # replace-one: sensitivity 2


def test_first_request_over_budget_raises(problem):
    _obj, X, _y, o = problem
    with pytest.raises(ValueError, match="exceeds the budget"):
        dynamic_noisy_gd(o, sigmas=np.array([1.0]), budget=0.5, clip=1.0,
                         learning_rate=1.0, n_samples=X.shape[0], rng=np.random.default_rng(0))


def test_seed_reproducibility_and_momentum_debiasing(problem):
    _obj, X, _y, o = problem
    s = noise_schedule("dynamic", 1.0, 1, gamma=0.9)
    kw = dict(sigmas=s, budget=1.0, clip=1.5, learning_rate=1.0, n_samples=X.shape[0])
    a = dynamic_noisy_gd(o, rng=np.random.default_rng(4), **kw)
    b = dynamic_noisy_gd(o, rng=np.random.default_rng(4), **kw)
    np.testing.assert_array_equal(a.theta, b.theta)
    # Debiased momentum: v_2 / (1 - beta) = g_1, so the first step equals plain GD's.
    m = dynamic_noisy_gd(o, rng=np.random.default_rng(4), momentum=0.9, **kw)
    np.testing.assert_allclose(m.theta, a.theta, rtol=1e-12)


def test_momentum_converges_with_negligible_noise(problem):
    obj, X, y, o = problem
    opt = minimize(lambda t: obj.value(t, X, y), np.zeros(5), jac=lambda t: obj.gradient(t, X, y),
                   method="L-BFGS-B", options={"gtol": 1e-12})
    s = noise_schedule("uniform", 1e16, 300)  # sigma ~ 1e-7
    res = dynamic_noisy_gd(o, sigmas=s, budget=1e16, clip=1.5, learning_rate=0.5,
                           n_samples=X.shape[0], momentum=0.5, rng=np.random.default_rng(0))
    assert obj.value(res.theta, X, y) - opt.fun < 1e-8
