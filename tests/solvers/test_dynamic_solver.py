"""``method="dynamic"``: Hong-Wang-Zhou Algorithms 1-2 as a solver (seed 003)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.accounting import best
from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.events import Neighbouring
from noisygd.algorithms.schedules import (
    dynamic_noisy_gd,
    dynamic_optimal_steps,
    momentum_weights,
    noise_schedule,
)
from noisygd.objectives.glm import LogisticLoss
from noisygd.oracles import ArrayOracle
from noisygd.solvers import SOLVERS, Budget, DynamicSolver, PublicFacts, get_solver
from noisygd.solvers.dynamic import momentum_step_limit, momentum_zeta, momentum_zeta_step


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(11)
    n, d = 400, 3
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ (2 * rng.normal(size=d)))), 1.0, -1.0)
    obj = LogisticLoss(l2=0.05, fit_intercept=False)
    return obj, X, y, ArrayOracle(obj, X, y, row_norm_bound=1.0)


def _facts(oracle, n, **kw):
    return PublicFacts.from_oracle(oracle, n_samples=n, relation="add_remove", **kw)


def _hand_loop(X, y, *, sigmas, clip, eta, n, l2, momentum, rng):
    """Algorithm 2 written out: clipped per-example logistic gradients, Gaussian noise of
    std C sigma_t / N on their mean, the ridge's gradient, debiased momentum."""
    theta = np.zeros(X.shape[1])
    v = np.zeros_like(theta)
    for t, s in enumerate(sigmas, start=1):
        margins = y * (X @ theta)
        per = (-y / (1.0 + np.exp(margins)))[:, None] * X
        norms = np.linalg.norm(per, axis=1)
        per *= np.minimum(1.0, clip / np.maximum(norms, 1e-300))[:, None]
        g = per.sum(axis=0) / n
        g = g + clip * s / n * rng.standard_normal(theta.size) + l2 * theta
        v = momentum * v + (1.0 - momentum) * g
        theta = theta - eta * v / (1.0 - momentum**t)
    return theta


def test_registered_and_resolved_by_name():
    assert SOLVERS["dynamic"] is DynamicSolver
    assert isinstance(get_solver("dynamic"), DynamicSolver)


def test_debiased_momentum_matches_a_hand_written_loop_over_several_steps(problem):
    _obj, X, y, o = problem
    n = X.shape[0]
    sig = noise_schedule("dynamic", 2.0, 7, q=momentum_weights(7, 0.8, 0.9))
    kw = dict(sigmas=sig, budget=2.0, clip=0.3, learning_rate=0.7, n_samples=n)
    got = dynamic_noisy_gd(o, momentum=0.8, rng=np.random.default_rng(5), **kw)
    want = _hand_loop(X, y, sigmas=sig, clip=0.3, eta=0.7, n=n, l2=0.05, momentum=0.8,
                      rng=np.random.default_rng(5))
    assert got.n_iter == 7
    np.testing.assert_allclose(got.theta, want, rtol=1e-10, atol=1e-13)
    # and the solver's run is the same algorithm with the planned settings
    solver = DynamicSolver()
    plan = solver.plan(_facts(o, n, clip=0.3, options={"momentum": 0.8, "steps": 7}),
                       Budget(1.0, 1e-5, mu=math.sqrt(2.0)))
    res = solver.run(plan, o, np.random.default_rng(5))
    want = _hand_loop(X, y, sigmas=plan.sigmas, clip=0.3, eta=plan.learning_rate, n=n, l2=0.05,
                      momentum=0.8, rng=np.random.default_rng(5))
    np.testing.assert_allclose(res.theta, want, rtol=1e-10, atol=1e-13)


def test_plan_is_lemma_3_2_and_lemma_3_1_and_spends_exactly_the_budget(problem):
    _obj, X, _y, o = problem
    n = X.shape[0]
    solver = DynamicSolver()
    mu = calibrate_mu(1.0, 1e-5)
    plan = solver.plan(_facts(o, n), Budget(1.0, 1e-5, mu=mu))
    c = o.constants()
    M = c.smoothness + 0.05
    kappa, gamma = M / 0.05, 1 - 0.05 / M
    R = mu**2  # add/remove: the run is sqrt(R)-GDP
    alpha = o.n_params * c.lipschitz**2 / (2 * R * M * n**2 * math.log(2))  # Eq. (5)
    assert plan.budget == pytest.approx(R, rel=1e-12)
    assert plan.details["alpha"] == pytest.approx(alpha, rel=1e-12)
    assert plan.steps == min(1000, dynamic_optimal_steps(kappa, alpha))
    # Eq. (10): sigma_t^2 proportional to 1 / sqrt(q_t) = gamma^(-(T-t)/2)
    ratio = plan.sigmas[:-1] ** 2 / plan.sigmas[1:] ** 2
    np.testing.assert_allclose(ratio, gamma**-0.5, rtol=1e-10)
    assert math.fsum(plan.sigmas**-2.0) <= R
    assert math.fsum(plan.sigmas**-2.0) == pytest.approx(R, rel=1e-11)
    assert plan.bound_covers_run  # clip = L, eta = 1/M
    event = solver.planned_event(plan)
    res = solver.run(plan, o, np.random.default_rng(0))
    assert res.event == event and res.n_iter == plan.steps
    assert best(event, 1e-5).epsilon <= 1.0 + 1e-9


def test_replace_one_halves_the_budget_unit(problem):
    _obj, X, _y, o = problem
    facts = PublicFacts.from_oracle(o, n_samples=X.shape[0], relation=Neighbouring.REPLACE_ONE)
    plan = DynamicSolver().plan(facts, Budget(1.0, 1e-5, mu=2.0))
    assert plan.budget == pytest.approx(1.0)  # R = (mu / Delta)^2 with Delta = 2


def test_momentum_plan_uses_eq17_weights_and_reports_zeta(problem):
    _obj, X, _y, o = problem
    n = X.shape[0]
    plan = DynamicSolver().plan(_facts(o, n, options={"momentum": 0.5}),
                                Budget(1.0, 1e-5, mu=1.0))
    gamma = plan.details["gamma"]
    q = momentum_weights(plan.steps, 0.5, gamma)
    s2 = plan.sigmas**2
    np.testing.assert_allclose(s2 / s2[-1], np.sqrt(q[-1] / q), rtol=1e-10)  # Eq. (10)
    # zeta of Eq. (17) at the planned step, and the covering rule
    M = plan.details["smoothness_M"]
    z = momentum_zeta(momentum=0.5, gamma=gamma, smoothness=M, learning_rate=1 / M)
    assert plan.details["zeta"] == pytest.approx(z)
    assert plan.bound_covers_run == (z <= 0)
    # T minimises Eq. (16)'s data-free terms: no other T in 1..200 does better
    from noisygd.solvers.dynamic import momentum_eer_bound

    def bound(T):
        qq = momentum_weights(T, 0.5, gamma)
        return momentum_eer_bound(noise_schedule("dynamic", plan.budget, T, q=qq), q=qq,
                                  gamma=gamma, loss_gap=math.log(2), learning_rate=1 / M,
                                  n_params=3, clip=plan.clip, n_samples=n)

    best_T = min(range(1, 201), key=bound)
    assert plan.steps == best_T
    assert plan.bound_value == pytest.approx(bound(best_T), rel=1e-9)


def test_zeta_closed_form_and_step_limit():
    # Eq. (17) at M = 1, beta = 0.5, gamma = 0.9, eta = 0.01
    z = momentum_zeta(momentum=0.5, gamma=0.9, smoothness=1.0, learning_rate=0.01)
    assert z == pytest.approx(4 * 0.5 * 0.9 / (0.4**2 * 0.5**3) * 1e-4 + 0.005 - 1)
    lim = momentum_step_limit(momentum=0.5, smoothness=2.0)
    c = 0.5 * 0.5**3
    assert lim == pytest.approx(c / 16 * (math.sqrt(0.25 + 16 / c) - 1))
    assert momentum_step_limit(momentum=0.0, smoothness=1.0) == math.inf


def test_refuses_without_strong_convexity_and_unknown_options(problem):
    from noisygd.exceptions import AssumptionError

    _obj, X, y, _o = problem
    flat = ArrayOracle(LogisticLoss(l2=0.0, fit_intercept=False), X, y, row_norm_bound=1.0)
    with pytest.raises(AssumptionError, match="strongly convex"):
        DynamicSolver().plan(_facts(flat, X.shape[0]), Budget(1.0, 1e-5))
    o = ArrayOracle(LogisticLoss(l2=0.1, fit_intercept=False), X, y, row_norm_bound=1.0)
    with pytest.raises(ValueError, match="unknown method_options"):
        DynamicSolver().plan(_facts(o, X.shape[0], options={"momentun": 0.9}),
                             Budget(1.0, 1e-5))


def test_estimators_fit_with_method_dynamic(problem):
    from noisygd.estimators import DPLinearRegression, DPLogisticRegression

    _obj, X, y, _o = problem
    clf = DPLogisticRegression(epsilon=2.0, method="dynamic", l2=0.05, classes=[-1.0, 1.0],
                               n_samples_public=len(X), random_state=0).fit(X, y)
    again = DPLogisticRegression(epsilon=2.0, method="dynamic", l2=0.05, classes=[-1.0, 1.0],
                                 n_samples_public=len(X), random_state=0).fit(X, y)
    np.testing.assert_array_equal(clf.coef_, again.coef_)  # same seed, same model
    assert clf.score(X, y) > 0.6
    t = X @ np.array([1.0, -0.5, 0.25]) + 0.1 * np.random.default_rng(0).normal(size=len(X))
    reg = DPLinearRegression(epsilon=2.0, method="dynamic", target_range=(-3, 3),
                             random_state=0).fit(X, np.clip(t, -3, 3))
    assert np.all(np.isfinite(reg.coef_))


@pytest.mark.data
@pytest.mark.parametrize("name", ["adult", "bank", "credit", "wine", "bike"])
def test_dynamic_fits_the_uci_five(name, uci_file):
    from sklearn.metrics import r2_score, roc_auc_score

    from noisygd.data import load_uci, public_centring
    from noisygd.estimators import DPLinearRegression, DPLogisticRegression

    root = uci_file("README.md").parent
    X, y, Xt, yt = load_uci(name, root)
    common = dict(epsilon=1.0, method="dynamic", random_state=0,
                  feature_bounds=public_centring(name))
    if name in ("wine", "bike"):  # targets in [0, 1] (load_uci)
        model = DPLinearRegression(target_range=(0.0, 1.0), **common).fit(X, y)
        assert r2_score(yt, model.predict(Xt)) > 0.0  # better than the test mean
    else:
        model = DPLogisticRegression(classes=[0.0, 1.0], **common).fit(X, y)
        assert roc_auc_score(yt, model.decision_function(Xt)) > 0.6
    assert model.privacy_.epsilon <= 1.0 + 1e-9
    plan = model.fit_info_["plans"][0]["plan"]
    assert plan["steps"] >= 1 and plan["bound_name"].startswith("Theorem 3.2")


@pytest.mark.data
def test_cli_fit_method_dynamic_on_raw_adult(tmp_path, capsys, uci_file):
    import json
    from pathlib import Path

    from noisygd.cli import main

    schema = Path(__file__).resolve().parents[2] / "examples" / "schemas" / "adult.toml"
    out = tmp_path / "m.json"
    code = main(["fit", str(uci_file("adult/adult.data")), "--schema", str(schema),
                 "--method", "dynamic", "--epsilon", "1", "--seed", "0", "--out", str(out),
                 "--quiet"])
    capsys.readouterr()
    assert code == 0
    payload = json.loads(out.read_text())
    assert payload["privacy"]["epsilon"] <= 1.0 + 1e-9


def test_momentum_bound_covers_the_run_only_below_the_zeta_root(problem):
    _obj, X, _y, o = problem
    M = o.constants().smoothness + 0.05
    root = momentum_zeta_step(momentum=0.5, smoothness=M, pl_constant=0.05)
    facts = _facts(o, X.shape[0], options={"momentum": 0.5, "learning_rate": 0.99 * root})
    small = DynamicSolver().plan(facts, Budget(1.0, 1e-5, mu=1.0))
    assert small.details["zeta"] <= 0 and small.bound_covers_run
    assert small.details["zeta_step"] == pytest.approx(root, rel=1e-12)
    facts = _facts(o, X.shape[0], options={"momentum": 0.5, "learning_rate": 1.01 * root})
    big = DynamicSolver().plan(facts, Budget(1.0, 1e-5, mu=1.0))
    assert big.details["zeta"] > 0 and not big.bound_covers_run


@pytest.mark.parametrize(("beta", "zeta_at_limit"), [(0.5, 0.384), (0.7, 6.85), (0.9, 107.5)])
def test_the_papers_noise_dominates_step_is_not_zeta_le_0(beta, zeta_at_limit):
    # Eq. (17) at M = mu = 1 and Theorem 3.4's "noise dominates" step: zeta > 0 there, so
    # that step is not the coverage condition; the root of zeta is (and zeta changes sign).
    # Both written out here: eta = c/8 (sqrt(1/4 + 16/c) - 1), c = beta (1 - beta)^3, and
    # zeta = 4 beta gamma eta^2 / ((gamma - beta)^2 (1 - beta)^3) + eta/2 - 1, gamma = 1 - eta
    # (the parametrised values are these, rounded: 0.38400, 6.8517, 107.51)
    c = beta * (1 - beta) ** 3
    eta = c / 8 * (math.sqrt(0.25 + 16 / c) - 1)
    gamma = 1 - eta
    by_hand = 4 * beta * gamma * eta**2 / ((gamma - beta) ** 2 * (1 - beta) ** 3) + eta / 2 - 1
    limit = momentum_step_limit(momentum=beta, smoothness=1.0)
    assert limit == pytest.approx(eta, rel=1e-12)
    at_limit = momentum_zeta(momentum=beta, gamma=1 - limit, smoothness=1.0, learning_rate=limit)
    assert at_limit == pytest.approx(by_hand, rel=1e-10)
    assert at_limit == pytest.approx(zeta_at_limit, rel=2e-3) and at_limit > 0
    root = momentum_zeta_step(momentum=beta, smoothness=1.0, pl_constant=1.0)
    assert 0 < root < limit < 1 - beta

    def zeta(eta):
        return momentum_zeta(momentum=beta, gamma=1 - eta, smoothness=1.0, learning_rate=eta)

    assert abs(zeta(root)) < 1e-9
    assert zeta(root * (1 - 1e-6)) < 0 < zeta(root * (1 + 1e-6))
    grid = np.linspace(1e-6, 1 - beta, 2000, endpoint=False)  # gamma > beta on the grid
    assert all((zeta(e) <= 0) == (e <= root) for e in grid)
    assert momentum_zeta_step(momentum=0.0, smoothness=4.0, pl_constant=1.0) == 0.5


def test_momentum_plan_names_the_noise_dominates_step_apart_from_the_coverage_step(problem):
    _obj, X, _y, o = problem
    plan = DynamicSolver().plan(_facts(o, X.shape[0], options={"momentum": 0.7}),
                                Budget(1.0, 1e-5, mu=1.0))
    M = plan.details["smoothness_M"]
    assert "step_limit" not in plan.details
    assert plan.details["noise_dominates_step"] == momentum_step_limit(momentum=0.7,
                                                                        smoothness=M)
    assert plan.details["zeta_step"] == momentum_zeta_step(momentum=0.7, smoothness=M,
                                                           pl_constant=0.05)


def _regularised_mean(X, y, l2):
    def f(theta):
        return float(np.mean(np.logaddexp(0.0, -y * (X @ theta))) + l2 / 2 * theta @ theta)

    def grad(theta):
        r = -y / (1.0 + np.exp(y * (X @ theta)))
        return X.T @ r / X.shape[0] + l2 * theta

    return f, grad


@pytest.mark.parametrize("momentum", [None, 0.5])
def test_projected_run_is_not_covered_by_the_unconstrained_theorems(momentum):
    # the reviewer's case: radius 0.05, l2 = 0.01, n = 5000, d = 10. Every point of the ball
    # is farther above F* than the reported bound, so no output of the projected run meets it
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    n, d, l2, radius = 5000, 10, 0.01, 0.05
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ (8 * rng.normal(size=d)))), 1.0, -1.0)
    o = ArrayOracle(LogisticLoss(l2=l2, fit_intercept=False, radius=radius), X, y,
                    row_norm_bound=1.0)
    options = {} if momentum is None else {"momentum": momentum}
    plan = DynamicSolver().plan(_facts(o, n, options=options), Budget(1.0, 1e-5, mu=1.0))
    f, grad = _regularised_mean(X, y, l2)
    f_star = minimize(f, np.zeros(d), jac=grad, method="L-BFGS-B", tol=1e-12).fun
    theta = np.zeros(d)  # projected GD: the minimum of F over the ball
    for _ in range(3000):
        theta = theta - grad(theta) / plan.details["smoothness_M"]
        theta *= min(1.0, radius / np.linalg.norm(theta))
    assert f(theta) - f_star > plan.bound_value
    assert plan.details["projection_radius"] == radius
    assert not plan.bound_covers_run
    free = DynamicSolver().plan(_facts(ArrayOracle(LogisticLoss(l2=l2, fit_intercept=False),
                                                   X, y, row_norm_bound=1.0), n,
                                       options=options), Budget(1.0, 1e-5, mu=1.0))
    assert free.details["projection_radius"] is None
    assert free.bound_covers_run == (momentum is None or free.details["zeta"] <= 0)


def test_private_count_is_not_covered_a_public_one_is(problem):
    # with n_lo < n_hi the run divides by n_hi and descends (n / n_hi) F_data + l2/2 ||.||^2,
    # not the regularised mean objective the bound's comparator minimises
    _obj, X, _y, o = problem
    n = X.shape[0]
    public = DynamicSolver().plan(_facts(o, n, n_samples_high=n), Budget(1.0, 1e-5, mu=1.0))
    assert public.details["n_public"] and public.bound_covers_run
    private = DynamicSolver().plan(_facts(o, n - 20, n_samples_high=n + 20),
                                   Budget(1.0, 1e-5, mu=1.0))
    assert private.n_samples == n + 20
    assert not private.details["n_public"] and not private.bound_covers_run
