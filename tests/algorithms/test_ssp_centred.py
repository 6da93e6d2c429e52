"""Centred AdaSSP (``noisygd.algorithms.ssp_centred``): the six releases' sensitivities by brute
force under both relations, the plan's closed forms and event, the solution at a huge budget
(ordinary least squares with an intercept), the noise of each release, and the solver's choice
of the form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from noisygd.accounting.events import Composed, Gaussian, Neighbouring
from noisygd.accounting.gdp import calibrate_mu, gaussian_mu
from noisygd.algorithms.ssp import SSPPlan, sufficient_statistics
from noisygd.algorithms.ssp_centred import (
    DEFAULT_CENTRED_SHARES,
    CentredSSPPlan,
    CentredSSPRelease,
    centred_adassp,
    centred_statistics,
    plan_centred_ssp,
    release_centred_statistics,
    solve_centred_release,
)
from noisygd.objectives.glm import SquaredLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.solvers import Budget, PublicFacts
from noisygd.solvers.ssp import SSPSolver


def _rows(n: int, q: int, R: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` rows of ``q`` features with norms up to ``R`` (some on the bound)."""
    X = rng.normal(size=(n, q))
    X *= (R * rng.uniform(0.0, 1.0, (n, 1)) ** (1.0 / q)) / np.linalg.norm(X, axis=1,
                                                                            keepdims=True)
    X[: max(1, n // 4)] *= R / np.linalg.norm(X[: max(1, n // 4)], axis=1, keepdims=True)
    return X


def _exact(X: np.ndarray, y: np.ndarray, s: float = 1.0):
    """The six exact statistics of rows ``[x, s]``, computed directly (not through
    :func:`centred_statistics`)."""
    n = X.shape[0]
    C = (X - X.mean(0)).T @ (X - X.mean(0)) if n else np.zeros((X.shape[1],) * 2)
    lam = float(np.linalg.eigvalsh(C)[0])
    return np.array([lam]), X.T @ X, X.sum(0), np.array([float(n)]), np.array([y.sum()]), X.T @ y


def _plan(q: int = 3, mu: float = 1.0, **kw) -> CentredSSPPlan:
    return plan_centred_ssp(mu, 1e-5, relation=kw.pop("relation", "add_remove"),
                            n_params=q + 1, row_bound=kw.pop("row_bound", math.sqrt(2.0)),
                            target_bound=kw.pop("target_bound", 1.0),
                            constant=kw.pop("constant", (q, 1.0)), **kw)


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_every_release_moves_by_at_most_its_sensitivity_brute_force(relation):
    """Brute force over random datasets and neighbours (rows on and inside the bound, targets
    at +-Y): each of the six statistics moves by at most Delta times its unit (4R^2, R^2, R,
    1, Y, RY; the upper triangle's L2 norm for S_xx)."""
    R, Y, q = 0.7, 0.5, 3
    plan = _plan(q, relation=relation, row_bound=math.hypot(R, 1.0), target_bound=Y)
    units = np.array(plan.units()) * plan.sensitivity
    np.testing.assert_allclose(plan.units(), [4 * R * R, R * R, R, 1.0, Y, R * Y])
    iu = np.triu_indices(q)
    rng = np.random.default_rng(0)
    worst = np.zeros(6)
    for _ in range(400):
        n = int(rng.integers(1, 8))
        X = _rows(n, q, R, rng)
        y = rng.choice([-Y, Y], n) * rng.uniform(0.5, 1.0, n)
        x_new = _rows(1, q, R, rng)
        y_new = rng.choice([-Y, Y], 1)
        if relation == "add_remove":
            X2, y2 = np.vstack([X, x_new]), np.concatenate([y, y_new])
        else:
            X2, y2 = X.copy(), y.copy()
            X2[0], y2[0] = x_new[0], y_new[0]
        a, b = _exact(X, y), _exact(X2, y2)
        moves = [abs(a[0][0] - b[0][0]), np.linalg.norm((a[1] - b[1])[iu]),
                 np.linalg.norm(a[2] - b[2]), abs(a[3][0] - b[3][0]), abs(a[4][0] - b[4][0]),
                 np.linalg.norm(a[5] - b[5])]
        worst = np.maximum(worst, np.array(moves) / units)
    assert np.all(worst <= 1.0 + 1e-12), worst
    # rows on the bound reach the bounds of S_x, S_y and S_xy (the test can fail if they
    # were loose); lambda_min(C)'s is reached by the next test; the count moves by exactly
    # 1 when a row is added, not at all when one is replaced
    assert np.all(worst[[2, 4, 5]] >= 0.9), worst
    assert worst[3] == (1.0 if relation == "add_remove" else 0.0)


def test_lambda_min_sensitivity_is_attained_up_to_n_over_n_plus_1():
    """Rows x = -R and a canary x = +R (one feature): lambda_min(C) moves by
    (n/(n+1)) (2R)^2, so 4R^2 cannot be lowered."""
    R, n = 0.8, 40
    X = np.full((n, 1), -R)
    X2 = np.vstack([X, [[R]]])
    move = _exact(X2, np.zeros(n + 1))[0][0] - _exact(X, np.zeros(n))[0][0]
    assert move == pytest.approx(4 * R * R * n / (n + 1), rel=1e-12)


def test_centred_statistics_are_the_blocks_of_wang_statistics():
    """S_xx = A_rr, S_x = A_rk/s, n = A_kk/s^2, S_y = b_k/s, S_xy = b_r for rows [x, s]."""
    rng = np.random.default_rng(1)
    X, y, s = rng.uniform(-0.5, 0.5, (30, 3)), rng.uniform(-1, 1, 30), 0.3
    Z = np.hstack([X, np.full((30, 1), s)])
    st = centred_statistics(Z.T @ Z, Z.T @ y, (3, s))
    np.testing.assert_allclose(st.gram, X.T @ X, rtol=1e-12)
    np.testing.assert_allclose(st.feature_sum, X.sum(0), rtol=1e-12)
    assert st.count == pytest.approx(30.0, rel=1e-12)
    assert st.target_sum == pytest.approx(y.sum(), rel=1e-12)
    np.testing.assert_allclose(st.moment, X.T @ y, rtol=1e-12)
    np.testing.assert_allclose(st.centred_gram(), (X - X.mean(0)).T @ (X - X.mean(0)),
                               atol=1e-12)


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_event_is_the_gdp_composition_of_six_gaussians_spending_mu(relation):
    mu = calibrate_mu(1.0, 1e-5)
    shares = (0.1, 0.3, 0.2, 0.05, 0.05, 0.3)
    plan = _plan(4, mu=mu, relation=relation, shares=shares)
    sens = Neighbouring(relation).clipped_sum_sensitivity
    ev = plan.event
    assert isinstance(ev, Composed) and len(ev.events) == 6
    assert all(isinstance(e, Gaussian) and e.sensitivity == sens for e in ev.events)
    np.testing.assert_allclose(plan.noise_multipliers,
                               [sens / (mu * math.sqrt(w)) for w in shares], rtol=1e-12)
    assert gaussian_mu(ev) == pytest.approx(mu, rel=1e-12)
    assert DEFAULT_CENTRED_SHARES == pytest.approx((1 / 6,) * 6)


def test_thresholds_follow_algorithm_2_in_the_features_dimension():
    """shift = sigma_lambda sqrt(log(6/delta)), eta = sigma_xx sqrt(q log(2 q^2 / rho))."""
    plan = _plan(5, mu=0.7, failure_probability=0.1)
    s_l, s_xx = plan.noise_sds[:2]
    assert plan.shift == pytest.approx(s_l * math.sqrt(math.log(6e5)), rel=1e-12)
    assert plan.threshold == pytest.approx(s_xx * math.sqrt(5 * math.log(2 * 25 / 0.1)),
                                           rel=1e-12)
    assert plan.dims == (1, 15, 5, 1, 1, 5)


def test_huge_budget_gives_ordinary_least_squares_with_an_intercept():
    rng = np.random.default_rng(2)
    X = _rows(200, 3, 1.0, rng)
    y = np.clip(0.6 + X @ np.array([0.3, -0.2, 0.1]) + 0.05 * rng.normal(size=200), -1, 1)
    oracle = ArrayOracle(SquaredLoss(fit_intercept=True, target_bound=1.0), X, y,
                         row_norm_bound=1.0)
    plan = _plan(3, mu=1e9, row_bound=math.sqrt(2.0))
    fit = centred_adassp(oracle, plan, np.random.default_rng(0))
    assert fit.info["plan"]["adaptive_ridge"] == 0.0
    exact = np.linalg.lstsq(np.hstack([X, np.ones((200, 1))]), y, rcond=None)[0]
    np.testing.assert_allclose(fit.theta, exact, atol=1e-6)
    assert fit.event == plan.event


def test_a_large_ridge_predicts_the_released_mean_not_the_midpoint():
    """The objective's ridge on the intercept is centred at S_y/n (module doc)."""
    q, n, s = 2, 100, 0.5
    release = CentredSSPRelease(lambda_min=0.0, gram=np.eye(q) * 10, feature_sum=np.zeros(q),
                                count=float(n), target_sum=0.8 * n, moment=np.zeros(q))
    plan = _plan(q, mu=1e9, constant=(q, s), ridge=1e12)
    theta, _ = solve_centred_release(release, plan)
    assert s * theta[-1] == pytest.approx(0.8, rel=1e-6)
    np.testing.assert_allclose(theta[:q], 0.0, atol=1e-9)


def test_each_release_carries_its_planned_noise_ks():
    """(release - exact)/sigma is N(0, 1) for each of the six releases: KS tests on 300 draws
    (fixed seed; false-failure rate 1e-3 each under a correct sampler)."""
    rng = np.random.default_rng(3)
    X, y = _rows(50, 2, 1.0, rng), rng.uniform(-1, 1, 50)
    Z = np.hstack([X, np.ones((50, 1))])
    st = centred_statistics(Z.T @ Z, Z.T @ y, (2, 1.0))
    plan = _plan(2, mu=0.5)
    exact = [float(np.linalg.eigvalsh(st.centred_gram())[0]), st.gram[0, 1], st.feature_sum[1],
             st.count, st.target_sum, st.moment[0]]
    draws = np.array([
        [r.lambda_min, r.gram[0, 1], r.feature_sum[1], r.count, r.target_sum, r.moment[0]]
        for r in (release_centred_statistics(st, plan, rng) for _ in range(300))])
    for k, sd in enumerate(plan.noise_sds):
        assert stats.kstest((draws[:, k] - exact[k]) / sd, "norm").pvalue > 1e-3, k


def test_same_seed_same_model():
    rng = np.random.default_rng(4)
    X, y = _rows(80, 3, 1.0, rng), rng.uniform(-1, 1, 80)
    oracle = ArrayOracle(SquaredLoss(fit_intercept=True, target_bound=1.0), X, y,
                         row_norm_bound=1.0)
    plan = _plan(3)
    a = centred_adassp(oracle, plan, np.random.default_rng(7)).theta
    b = centred_adassp(oracle, plan, np.random.default_rng(7)).theta
    c = centred_adassp(oracle, plan, np.random.default_rng(8)).theta
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


@pytest.mark.parametrize(("kw", "exc", "match"), [
    ({"constant": (1, 1.0)}, ValueError, "must be the last"),
    ({"constant": (3, 2.0)}, ValueError, "below the row bound"),
    ({"shares": (0.2, 0.2, 0.2, 0.2, 0.2)}, ValueError, "six positive numbers"),
    ({"shares": (0.5, 0.5, 0.0, 0.0, 0.0, 0.0)}, ValueError, "shares"),
    ({"failure_probability": 0.0}, ValueError, "failure_probability"),
])
def test_plan_argument_checks(kw, exc, match):
    with pytest.raises(exc, match=match):
        _plan(3, **kw)


def test_the_solver_plans_the_centred_form_exactly_with_an_intercept():
    rng = np.random.default_rng(5)
    X, y = _rows(60, 2, 1.0, rng), rng.uniform(-1, 1, 60)
    for fit_intercept, kind in ((True, CentredSSPPlan), (False, SSPPlan)):
        oracle = ArrayOracle(SquaredLoss(fit_intercept=fit_intercept, target_bound=1.0), X, y,
                             row_norm_bound=1.0)
        facts = PublicFacts.from_oracle(oracle, n_samples=60.0, relation="add_remove")
        plan = SSPSolver().plan(facts, Budget(1.0, 1e-5))
        assert isinstance(plan, kind)
        assert gaussian_mu(plan.event) == pytest.approx(calibrate_mu(1.0, 1e-5), rel=1e-12)
    with pytest.raises(ValueError, match="three or six"):
        SSPSolver().check_options({"shares": (0.25, 0.25, 0.25, 0.25)})


def test_the_run_refuses_an_oracle_without_the_planned_constant_column():
    rng = np.random.default_rng(6)
    X, y = _rows(40, 2, 1.0, rng), rng.uniform(-1, 1, 40)
    with_b = ArrayOracle(SquaredLoss(fit_intercept=True, target_bound=1.0), X, y,
                         row_norm_bound=1.0)
    plan = SSPSolver().plan(PublicFacts.from_oracle(with_b, n_samples=40.0,
                                                    relation="add_remove"), Budget(1.0, 1e-5))
    without = ArrayOracle(SquaredLoss(fit_intercept=False, target_bound=1.0),
                          np.hstack([X, np.zeros((40, 1))]), y, row_norm_bound=math.sqrt(2.0))
    with pytest.raises(ValueError, match="constant column"):
        SSPSolver().run(plan, without, np.random.default_rng(0))


def test_statistics_through_the_oracle_feed_the_centred_blocks():
    rng = np.random.default_rng(7)
    X, y = _rows(25, 2, 1.0, rng), rng.uniform(-1, 1, 25)
    oracle = ArrayOracle(SquaredLoss(fit_intercept=True, target_bound=1.0), X, y,
                         row_norm_bound=1.0)
    st = centred_statistics(*sufficient_statistics(oracle), (2, 1.0))
    assert st.count == pytest.approx(25.0, rel=1e-12)
    np.testing.assert_allclose(st.moment, X.T @ y, atol=1e-12)


def test_white_box_audit_statistic_is_shifted_by_nu_close_to_mu():
    """noisygd audit --method ssp_centred: the statistic is N(m, 1) on D and N(m + nu, 1) on
    D', nu = mu sqrt(1 - w_lambda (1 - (n/(n+1))^2)); 3000 runs each, the mean difference
    within 4.5 standard errors (false-failure rate about 7e-6) and unit variances (chi-square
    two-sided, 1e-4 each)."""
    from noisygd.audit.problems import ssp_centred_problem

    n = 50
    problem = ssp_centred_problem(epsilon=2.0, n_ordinary=n, row_bound=0.8, target_bound=0.5)
    mu = calibrate_mu(2.0, 1e-5)
    assert problem.nu == pytest.approx(
        mu * math.sqrt(1 - (1 - (n / (n + 1)) ** 2) / 6), rel=1e-9)
    rng = np.random.default_rng(11)
    runs = 3000
    s0 = np.array([problem.run(0, rng).info["audit_statistic"] for _ in range(runs)])
    s1 = np.array([problem.run(1, rng).info["audit_statistic"] for _ in range(runs)])
    se = math.sqrt(2.0 / runs)
    assert abs((s1.mean() - s0.mean()) - problem.nu) < 4.5 * se
    for s in (s0, s1):
        chi = (runs - 1) * s.var(ddof=1)
        assert stats.chi2.ppf(5e-5, runs - 1) < chi < stats.chi2.ppf(1 - 5e-5, runs - 1)
