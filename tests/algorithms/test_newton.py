"""Private Newton: the curvature release's sensitivity by brute force, the events re-accounted
independently (dp_accounting's PLD), the noise and the eigenvalue rule, and utility."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import pld_privacy_accountant

from noisygd.accounting import best
from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.events import Composed, DiscreteGaussianNoise, Gaussian, Neighbouring
from noisygd.algorithms.newton import (
    DEFAULT_DIAGONAL_HESSIAN_RATIO,
    DEFAULT_HESSIAN_RATIO,
    curvature_sensitivity,
    modify_curvature,
    newton,
    noise_floor,
    plan_newton,
    symmetric_gaussian_noise,
)
from noisygd.objectives.glm import HuberLoss, LogisticLoss, SquaredLoss
from noisygd.oracles.array import ArrayOracle

ADD, REPLACE = Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE


# ----------------------------------------------------------------- sensitivity, brute force
def _candidates():
    """Rows of the domain ||x|| <= 1 (boundary and interior, 12 directions) and labels."""
    rows = [np.zeros(2)]
    for k in range(12):
        angle = 2 * math.pi * k / 12
        for r in (1.0, 0.6):
            rows.append(r * np.array([math.cos(angle), math.sin(angle)]))
    return [(x, lab) for x in rows for lab in (-1.0, 1.0)]


def _released(X, y, theta, diagonal):
    """The released curvature sum (clip = the declared smoothness) through the oracle."""
    o = ArrayOracle(LogisticLoss(), np.asarray(X), np.asarray(y), row_norm_bound=1.0)
    beta = o.constants().smoothness
    if diagonal:
        return o.clipped_curvature_diagonal(theta, beta), beta
    return o.clipped_curvature_sum(theta, beta), beta


BASE_X = np.array([[0.3, -0.2], [-0.5, 0.1], [0.0, 0.8], [0.7, 0.7], [-0.1, -0.4]])
BASE_Y = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
THETAS = [np.zeros(3), np.array([0.8, -1.5, 0.3]), np.array([-2.0, 0.5, 1.0])]


@pytest.mark.parametrize("diagonal", [False, True])
def test_curvature_sensitivity_by_enumerating_add_remove_neighbours(diagonal):
    worst = 0.0
    for theta in THETAS:
        H, beta = _released(BASE_X, BASE_Y, theta, diagonal)
        for i in range(len(BASE_X)):  # remove row i
            H2, _ = _released(np.delete(BASE_X, i, 0), np.delete(BASE_Y, i), theta, diagonal)
            worst = max(worst, float(np.linalg.norm(H - H2)))
        for x, lab in _candidates():  # add a row
            H2, _ = _released(np.vstack([BASE_X, x]), np.append(BASE_Y, lab), theta, diagonal)
            worst = max(worst, float(np.linalg.norm(H - H2)))
    declared = curvature_sensitivity(ADD) * beta
    assert worst <= declared * (1 + 1e-12)
    if not diagonal:
        # tight: a boundary row at theta = 0 (phi'' = 1/4) attains it (the Frobenius norm
        # of a a^T / 4 is ||a||^2 / 4 = beta); the diagonal's bound is not tight with an
        # intercept (sqrt(x_1^4 + x_2^4 + 1) / 4 < beta)
        assert worst >= declared * (1 - 1e-12)


@pytest.mark.parametrize("diagonal", [False, True])
def test_curvature_sensitivity_by_enumerating_replace_one_neighbours(diagonal):
    worst = 0.0
    for theta in THETAS:
        H, beta = _released(BASE_X, BASE_Y, theta, diagonal)
        for i in range(len(BASE_X)):
            for x, lab in _candidates():  # replace row i
                X2, y2 = BASE_X.copy(), BASE_Y.copy()
                X2[i], y2[i] = x, lab
                H2, _ = _released(X2, y2, theta, diagonal)
                worst = max(worst, float(np.linalg.norm(H - H2)))
    declared = curvature_sensitivity(REPLACE) * beta
    assert declared == pytest.approx(math.sqrt(2) * beta)
    assert worst <= declared * (1 + 1e-12)
    if not diagonal:
        # sqrt(2) beta is attained by two orthogonal boundary rows [x, 1] and [-x, 1] at
        # theta = 0: the generic replace-one factor 2 would be loose
        assert worst >= 0.99 * declared


def test_replace_one_attains_sqrt2_with_orthogonal_rows():
    x = np.array([[0.6, 0.8]])
    H1, beta = _released(x, [1.0], np.zeros(3), False)
    H2, _ = _released(-x, [1.0], np.zeros(3), False)
    assert np.linalg.norm(H1 - H2) == pytest.approx(math.sqrt(2) * beta, rel=1e-12)


# ----------------------------------------------------------------- the noise and the floor
def test_symmetric_noise_is_isometric_gaussian():
    rng = np.random.default_rng(0)
    p, sd, draws = 4, 2.0, 4000
    Z = np.stack([symmetric_gaussian_noise(np.zeros((p, p)), sd, rng) for _ in range(draws)])
    assert np.array_equal(Z, np.transpose(Z, (0, 2, 1)))
    diag = Z[:, np.arange(p), np.arange(p)].ravel()
    off = Z[:, 0, 1:].ravel()
    # variances sd^2 and sd^2 / 2; the sample variance of k normals has relative sd
    # sqrt(2/k) (<= 0.011 here): 5 of them bound a false failure by about 1e-6
    assert np.var(diag) / sd**2 == pytest.approx(1.0, abs=5 * math.sqrt(2 / diag.size))
    assert np.var(off) / (sd**2 / 2) == pytest.approx(1.0, abs=5 * math.sqrt(2 / off.size))
    # Frobenius norm^2 / sd^2 is chi-square with k = p(p+1)/2 degrees of freedom (each
    # off-diagonal pair counts twice at variance sd^2 / 2): mean k, variance 2k. Its mean over
    # the draws within 5 standard errors sqrt(2k / draws) (false failure about 6e-7)
    k = p * (p + 1) / 2
    frob = np.mean(np.sum(Z**2, axis=(1, 2))) / sd**2
    assert frob == pytest.approx(k, abs=5 * math.sqrt(2 * k / draws))


@pytest.mark.parametrize("hessian", ["full", "diagonal"])
def test_noise_floor_bounds_the_smallest_eigenvalue(hessian):
    # P(lambda_min(Z) < -tau) <= rho (Tropp's bound, loose: the true probability is far
    # smaller); the frequency over 500 draws exceeds rho = 0.2 with probability below
    # 1e-6 even if the probability were exactly rho (binomial tail)
    rng = np.random.default_rng(1)
    p, sd, rho = 8, 1.0, 0.2
    tau = noise_floor(sd, p, rho, hessian)
    below = 0
    for _ in range(500):
        if hessian == "full":
            lam = np.linalg.eigvalsh(symmetric_gaussian_noise(np.zeros((p, p)), sd, rng))[0]
        else:
            lam = float(np.min(sd * rng.standard_normal(p)))
        below += lam < -tau
    assert below / 500 <= rho


def test_the_add_rule_majorises_the_curvature_when_the_noise_is_within_the_floor():
    rng = np.random.default_rng(2)
    A = rng.standard_normal((6, 6))
    H = A @ A.T
    E = rng.standard_normal((6, 6))
    E = 0.5 * (E + E.T)
    tau = -np.linalg.eigvalsh(E)[0]
    floor = 0.01
    Hh = modify_curvature(H + E, tau, floor, "add")
    assert np.linalg.eigvalsh(Hh - H)[0] >= -1e-9
    assert np.linalg.eigvalsh(Hh)[0] >= floor * (1 - 1e-12)
    clipped = modify_curvature(H + E, tau, floor, "clip")
    assert np.linalg.eigvalsh(clipped)[0] >= tau * (1 - 1e-12)
    np.testing.assert_allclose(modify_curvature(np.array([-3.0, 2.0]), 1.0, 0.5, "add"),
                               [0.5, 3.0])


# ----------------------------------------------------------------- accounting
def _peer_epsilon(event: Composed, delta: float) -> float:
    """dp_accounting's PLD epsilon of the plan's releases, each a Gaussian of noise z/Delta
    with the sensitivity stated here independently (1 or sqrt(2) for the curvature)."""
    acc = pld_privacy_accountant.PLDAccountant(
        dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
        value_discretization_interval=1e-4)
    for part in event.events:
        acc.compose(dp_accounting.GaussianDpEvent(part.noise_multiplier / part.sensitivity))
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("relation", [ADD, REPLACE])
@pytest.mark.parametrize("constant", [False, True])
def test_events_reaccounted_independently(relation, constant):
    eps, delta = 1.0, 1e-5
    mu = calibrate_mu(eps, delta)
    plan = plan_newton(mu, relation=relation, n_params=11, n_samples=5000, n_step=5100,
                       clip=1.5, curvature_clip=0.5, constant_hessian=constant)
    event = plan.event
    T, R = plan.steps, len(plan.hessian_steps)
    assert len(event.events) == T + R
    # the sensitivities, stated here from the lemmas (not read from the plan)
    grad_sens = 1.0 if relation is ADD else 2.0
    curv_sens = 1.0 if relation is ADD else math.sqrt(2.0)
    sens = sorted([grad_sens] * T + [curv_sens] * R)
    assert sorted(g.sensitivity for g in event.events) == pytest.approx(sens)
    assert all(g.relation is relation for g in event.events)
    mu_again = math.sqrt(sum((g.sensitivity / g.noise_multiplier) ** 2 for g in event.events))
    assert mu_again == pytest.approx(mu, rel=1e-12)
    peer = _peer_epsilon(event, delta)
    assert peer == pytest.approx(eps, rel=0.01)
    assert best(event, delta).epsilon <= eps * (1 + 1e-9)


def test_the_budget_split_follows_the_rule():
    mu = 0.5
    plan = plan_newton(mu, relation=ADD, n_params=51, n_samples=1e6, n_step=1e6, clip=1.0,
                       curvature_clip=0.5, steps=10)
    g, h = plan.mu_squares()
    assert plan.tail == 4 and plan.hessian_steps == (0, 2, 4, 5)
    # curvature at the rule's mu_H (well below its cap at n = 1e6)
    per = noise_floor(1.0, 51, 0.05, "full") * 51 / (DEFAULT_HESSIAN_RATIO * 1e6)
    assert h == pytest.approx([per * per] * 4)
    rest = mu * mu - sum(h)
    assert g[:6] == pytest.approx([0.25 * rest / 6] * 6)
    assert g[6:] == pytest.approx([0.75 * rest / 4] * 4)
    assert plan.details["hessian_noise_ratio"] == pytest.approx(DEFAULT_HESSIAN_RATIO)
    sparse = plan_newton(mu, relation=ADD, n_params=51, n_samples=1e6, n_step=1e6, clip=1.0,
                         curvature_clip=0.5, steps=10, hessian_every=0)
    assert sparse.hessian_steps == (0, 5)
    small = plan_newton(mu, relation=ADD, n_params=51, n_samples=1000, n_step=1000, clip=1.0,
                        curvature_clip=0.5)
    assert sum(small.mu_squares()[1]) == pytest.approx(0.5 * mu * mu)  # the cap binds


def test_the_floor_target_depends_on_the_form():
    """``hessian_ratio=None`` is the full form's target, or the diagonal form's; an explicit
    ratio is used as given, and the curvature's mu^2 scales as 1/r^2 below the cap."""
    kw = dict(relation=ADD, n_params=51, n_samples=1e7, n_step=1e7, clip=1.0,
              curvature_clip=0.5, steps=10)
    full = plan_newton(0.5, **kw)
    assert full.details["hessian_ratio_target"] == DEFAULT_HESSIAN_RATIO
    diag = plan_newton(0.5, hessian="diagonal", row_nonzeros=8, **kw)
    assert diag.details["hessian_ratio_target"] == DEFAULT_DIAGONAL_HESSIAN_RATIO
    assert diag.details["hessian_noise_ratio"] == pytest.approx(DEFAULT_DIAGONAL_HESSIAN_RATIO)
    loose = plan_newton(0.5, hessian_ratio=2 * DEFAULT_HESSIAN_RATIO, **kw)
    assert sum(loose.mu_squares()[1]) == pytest.approx(sum(full.mu_squares()[1]) / 4)


# ----------------------------------------------------------------- runs
def _logistic(n=20_000, d=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / math.sqrt(d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w = rng.standard_normal(d)
    w *= 3.0 / np.linalg.norm(w)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-(X @ w - 0.5))), 1.0, -1.0)
    return X, y


def _plan_for(oracle, eps=8.0, relation=ADD, clip=None, **kw):
    c = oracle.constants()
    return plan_newton(calibrate_mu(eps, 1e-5), relation=relation, n_params=oracle.n_params,
                       n_samples=oracle.n_rows, n_step=oracle.n_rows,
                       clip=c.lipschitz if clip is None else clip,
                       curvature_clip=c.smoothness, **kw)


def test_run_returns_the_planned_event_and_reaches_the_optimum():
    X, y = _logistic()
    o = ArrayOracle(LogisticLoss(l2=1e-4), X, y, row_norm_bound=1.0)
    plan = _plan_for(o)
    res = newton(o, plan, np.random.default_rng(0))
    assert res.event == plan.event and res.n_iter == plan.steps
    _, best_value = o.minimize()
    assert o.value(res.theta) - best_value <= 1e-3
    again = newton(o, plan, np.random.default_rng(0))
    assert np.array_equal(again.theta, res.theta)


def test_damped_steps_decrease_the_objective_without_noise():
    # with (almost) no noise the self-concordant step is a monotone descent method
    X, y = _logistic(n=3000, d=5, seed=1)
    o = ArrayOracle(LogisticLoss(l2=1e-3), X, y, row_norm_bound=1.0)
    plan = plan_newton(1e6, relation=ADD, n_params=6, n_samples=3000, n_step=3000, clip=10.0,
                       curvature_clip=o.constants().smoothness, steps=8, tail=1,
                       damping="self_concordant")
    res = newton(o, plan, np.random.default_rng(0))
    assert all(0 < s <= 1 for s in res.info["damping"])
    _, best_value = o.minimize()
    assert o.value(res.theta) - best_value <= 1e-6


def test_secure_run_draws_discrete_noise_and_reports_its_event():
    from noisygd.mechanisms.secure import SecureRandom

    X, y = _logistic(n=2000, d=3)
    o = ArrayOracle(LogisticLoss(l2=1e-3), X, y, row_norm_bound=1.0)
    plan = _plan_for(o, steps=4, secure=True)
    res = newton(o, plan, SecureRandom())
    assert res.event == plan.event
    assert all(isinstance(e, DiscreteGaussianNoise) for e in res.event.events)
    with pytest.raises(TypeError, match="secure"):
        newton(o, plan, np.random.default_rng(0))


def test_secure_run_on_another_grid_is_refused():
    # plan.event prices each release's rounding for the default grid (2^-30 of the noise
    # scale); a coarser grid inflates the sensitivity more, so its run is not that event:
    # refused before a row is read, as the training entry point refuses it (N1)
    from noisygd.mechanisms.noise import sensitivity_inflation
    from noisygd.mechanisms.secure import DEFAULT_GRID_BITS, SecureRandom

    X, y = _logistic(n=2000, d=3)
    o = ArrayOracle(LogisticLoss(l2=1e-3), X, y, row_norm_bound=1.0)
    plan = _plan_for(o, steps=4, secure=True)
    coarse = SecureRandom(grid_bits=4)
    z, sens, unit, dim = plan._releases()[0]
    assert (sensitivity_inflation(coarse, z * unit, dim, sens * unit)
            > plan.event.events[0].sensitivity_inflation)
    with pytest.raises(ValueError, match=f"grid_bits={DEFAULT_GRID_BITS}"):
        newton(o, plan, coarse)


def test_losses_without_curvature_are_refused_before_any_row_is_read():
    """Huber's phi'' jumps: no self-concordance constant, refused before any read (the
    softmax loss has one: tests/oracles/test_softmax_curvature.py)."""
    X, _ = _logistic(n=60, d=3)
    o = ArrayOracle(HuberLoss(), X, X[:, 0], row_norm_bound=1.0)
    plan = plan_newton(1.0, relation=ADD, n_params=o.n_params, n_samples=60, n_step=60,
                       clip=1.0, curvature_clip=1.0)
    with pytest.raises(TypeError, match="curvature sums"):
        newton(o, plan, np.random.default_rng(0))
    assert o.rows_read == 0


def test_least_squares_releases_its_constant_hessian_once():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((4000, 4)) / 2
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.clip(X @ np.array([1.0, -0.5, 0.3, 0.0]) + 0.1 * rng.standard_normal(4000), -1, 1)
    o = ArrayOracle(SquaredLoss(l2=1e-4, target_bound=1.0), X, y, row_norm_bound=1.0)
    plan = _plan_for(o, clip=2.0, constant_hessian=True)  # |r| ||x|| <= 2: never clips
    assert plan.hessian_steps == (0,)
    res = newton(o, plan, np.random.default_rng(0))
    assert [isinstance(e, Gaussian) for e in res.event.events].count(True) == plan.steps + 1
    _, best_value = o.minimize()
    assert o.value(res.theta) - best_value <= 1e-3


@pytest.mark.parametrize("bad", [{"tail": 11}, {"eigenvalue_rule": "shift"},
                                 {"hessian": "lowrank"}, {"damping": "armijo"},
                                 {"hessian_max_share": 1.0}, {"tail_share": 1.0}])
def test_plan_arguments_are_checked(bad):
    with pytest.raises((ValueError, TypeError)):
        plan_newton(1.0, relation=ADD, n_params=3, n_samples=100, n_step=100, clip=1.0,
                    curvature_clip=1.0, **bad)


def test_every_release_is_one_gaussian_in_release_order():
    plan = plan_newton(1.0, relation=ADD, n_params=3, n_samples=100, n_step=100, clip=1.0,
                       curvature_clip=1.0, steps=3)
    # W = 2 approach steps (curvature at 0 and 1), tail 1
    kinds = [e.sensitivity for e in plan.event.events]
    assert plan.hessian_steps == (0, 1)
    assert len(kinds) == 5
    zs = [e.noise_multiplier for e in plan.event.events]
    assert zs[0] == zs[2] == plan.hessian_noise[0]
    assert zs[1] == plan.gradient_noise[0] and zs[4] == plan.gradient_noise[2]


# ----------------------------------------------------------------- the empirical audit
@pytest.mark.parametrize("relation", [ADD, REPLACE])
def test_audit_canary_is_the_worst_case(relation, monkeypatch):
    """The audit's datasets D, D' (the oracles its runs read, recorded as newton is called):
    their clipped gradient sums differ by exactly the gradient release's sensitivity times
    the clip (1 C add/remove, 2 C replace-one) along e_0 at every theta; their curvature sums
    by exactly the curvature release's sensitivity times C_H = 1 under add/remove, and not at
    all under replace-one (phi'' of the squared loss does not see the canary's target, so
    that release is not audited at its worst case there: newton_problem's docstring)."""
    from noisygd.audit import problems

    real, seen = problems.newton, []

    def recording(oracle, plan, rng):
        seen.append((oracle, plan))
        return real(oracle, plan, rng)

    monkeypatch.setattr(problems, "newton", recording)
    p = problems.newton_problem(epsilon=1.0, relation=relation)
    runs = [p.run(k, np.random.default_rng(0)) for k in (0, 1)]
    assert runs[0].event == runs[1].event
    assert best(runs[0].event, 1e-5).epsilon == pytest.approx(1.0, rel=1e-6)
    (d0, plan), (d1, _) = seen
    grad_sens = 1.0 if relation is ADD else 2.0  # stated from the lemmas, not the plan
    assert {e.sensitivity for e in plan.event.events} == {
        grad_sens, curvature_sensitivity(relation)}
    for theta in (np.zeros(2), np.array([0.3, -2.0]), np.array([-5.0, 7.0])):
        dg = d1.clipped_gradient_sum(theta, 1.0) - d0.clipped_gradient_sum(theta, 1.0)
        np.testing.assert_allclose(dg, [-grad_sens, 0.0], rtol=0, atol=1e-12)
        dh = d1.clipped_curvature_sum(theta, 1.0) - d0.clipped_curvature_sum(theta, 1.0)
        # Frobenius norm 1 = curvature_sensitivity(ADD) * C_H under add/remove
        want = np.diag([1.0, 0.0]) if relation is ADD else np.zeros((2, 2))
        np.testing.assert_allclose(dh, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("relation", [ADD, REPLACE])
def test_audit_finds_no_violation(relation):
    from noisygd.audit.problems import newton_problem
    from noisygd.audit.runner import run_audit

    # a violation at confidence 0.95 has probability <= 5% when the accountant is right;
    # fixed seed
    res = run_audit(newton_problem(epsilon=1.0, relation=relation), runs=1000, delta=1e-5,
                    confidence=0.95, seed=0)
    assert res.bound == "clopper_pearson"
    assert res.sound
    assert res.accountant_epsilon == pytest.approx(1.0, rel=1e-6)


def test_diagonal_preconditioner_majorises_on_sparse_rows():
    import scipy.sparse as sp

    # one-hot rows (3 fields) plus an intercept: m = 4 nonzeros, H <= 4 diag(H)
    rng = np.random.default_rng(5)
    n, levels = 6000, 20
    cols = np.column_stack([rng.integers(0, levels, n) + levels * k for k in range(3)])
    X = sp.csr_array((np.full(3 * n, 0.5), cols.ravel(), np.arange(0, 3 * n + 1, 3)),
                     shape=(n, 3 * levels))
    w = rng.standard_normal(3 * levels)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-(X @ w))), 1.0, -1.0)
    o = ArrayOracle(LogisticLoss(l2=1e-3), X, y, row_norm_bound=1.0)
    H = o.clipped_curvature_sum(np.zeros(o.n_params), None)
    assert np.linalg.eigvalsh(4 * np.diag(np.diag(H)) - H)[0] >= -1e-9
    with pytest.raises(ValueError, match="row_nonzeros"):  # secure mode: declare it
        _plan_for(o, hessian="diagonal", secure=True)
    _, best_value = o.minimize()
    # declared m = 4, and the paid m (no declaration: released from the row histogram)
    for kw in ({"row_nonzeros": 4}, {}):
        plan = _plan_for(o, eps=1e6, hessian="diagonal", steps=60, **kw)
        res = newton(o, plan, np.random.default_rng(0))
        value = o.value(res.theta)
        assert value - best_value <= 0.02 * (o.value(np.zeros(o.n_params)) - best_value)
    assert res.info["plan"]["row_nonzeros"]["released"] == 4
