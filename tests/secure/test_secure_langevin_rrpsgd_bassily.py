"""Secure mode for projected noisy GD (Langevin), RRPSGD and the BST14 baseline.

* Langevin: the last-iterate bound needs continuous noise, so the secure run is accounted as
  the composition of its K discrete Gaussian steps (zCDP / RDP), checked here in closed form.
* RRPSGD and BST14 sample without replacement: their secure events are read by the ``rdp``
  accountant through the general bound of Wang, Balle and Kasiviswanathan (2019, Theorem 9)
  applied to the discrete Gaussian's RDP; the bound is recomputed here independently with
  mpmath at 60 digits.
* The noise scales are tested by Kolmogorov-Smirnov tests. OS entropy cannot be seeded: every
  statistical assertion has false-failure rate ALPHA = 1e-6.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from _goodness_of_fit import UNSEEDED_ALPHA
from noisygd.accounting import best, get_accountant
from noisygd.accounting.base import UnsupportedEventError
from noisygd.accounting.events import (
    DiscreteGaussianNoise,
    Gaussian,
    Neighbouring,
    SampledWithoutReplacement,
    SelfComposed,
)
from noisygd.accounting.rdp import (
    DEFAULT_ORDERS,
    RDPAccountant,
    rdp_curve,
    rdp_sampled_without_replacement_general,
)
from noisygd.accounting.serialization import event_from_dict, event_to_dict
from noisygd.accounting.subsampling import rdp_sampled_without_replacement_gaussian
from noisygd.algorithms.bassily import bassily_sgd
from noisygd.algorithms.langevin_gd import projected_noisy_gd
from noisygd.algorithms.rrpsgd import rrpsgd, rrpsgd_noise_std
from noisygd.exceptions import AssumptionError
from noisygd.mechanisms.secure import SecureRandom
from noisygd.objectives import LogisticLoss, SquaredDistanceLoss
from noisygd.oracles import ArrayOracle

pytest.importorskip("opendp.prelude", reason="secure noise needs the optional opendp package "
                    "(pip install 'noisygd[secure]')")

#: Per-test false-failure rate of every statistical assertion below.
ALPHA = UNSEEDED_ALPHA
REP = Neighbouring.REPLACE_ONE
INT_ORDERS = tuple(float(a) for a in range(2, 65))


def _data(seed: int = 0, n: int = 200, d: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ rng.normal(size=d))), 1.0, -1.0)
    return X, y


# ------------------------------------------- independent Theorem 9 (WBK19), mpmath
def _wbk_theorem9(q: float, eps, alpha: int) -> mpmath.mpf:
    """WBK19 Theorem 9 at integer ``alpha`` for a base curve ``eps(j)`` (eps(inf) = inf)."""
    with mpmath.workdps(60):
        q = mpmath.mpf(q)
        e2 = mpmath.mpf(eps(2))
        total = 1 + q**2 * mpmath.binomial(alpha, 2) * min(4 * (mpmath.exp(e2) - 1),
                                                          2 * mpmath.exp(e2))
        for j in range(3, alpha + 1):
            total += q**j * mpmath.binomial(alpha, j) * 2 * mpmath.exp((j - 1) * mpmath.mpf(eps(j)))
        return mpmath.log(total) / (alpha - 1)


def _independent_epsilon(q: float, eps, count: int, delta: float) -> float:
    """min over integer orders 2..64 of CKS20 Prop. 12 on count x min(Theorem 9, eps)."""
    best_eps = math.inf
    for alpha in range(2, 65):
        tau = count * min(float(_wbk_theorem9(q, eps, alpha)), eps(alpha))
        e = tau + math.log1p(-1.0 / alpha) - (math.log(delta) + math.log(alpha)) / (alpha - 1)
        best_eps = min(best_eps, max(e, 0.0))
    return best_eps


@pytest.mark.parametrize(("q", "sigma"), [(0.01, 1.0), (0.1, 0.7), (0.05, 4.0), (0.5, 2.0)])
def test_general_wor_bound_is_theorem_9(q: float, sigma: float) -> None:
    def base(a):
        return np.asarray(a, dtype=float) / (2 * sigma**2)

    orders = np.array(INT_ORDERS)
    ours = rdp_sampled_without_replacement_general(q, base, orders)
    indep = np.array([min(float(_wbk_theorem9(q, lambda j: j / (2 * sigma**2), int(a))),
                          a / (2 * sigma**2)) for a in orders])
    # our curve also takes the running minimum over higher orders: never above Theorem 9
    assert np.all(ours <= indep * (1 + 1e-12))
    np.testing.assert_allclose(ours, np.minimum.accumulate(indep[::-1])[::-1], rtol=1e-10)
    # sound against the continuous Gaussian's curve (Theorems 9 and 27): never below it,
    # and equal at order 2 (Theorem 27 changes only the terms j >= 3)
    cont = rdp_sampled_without_replacement_gaussian(q, sigma, orders)
    assert np.all(ours >= cont * (1 - 1e-12))
    assert ours[0] == pytest.approx(cont[0], rel=1e-12)


def test_general_wor_bound_fractional_orders_interpolate_and_rate_one_is_the_base() -> None:
    sigma, q = 1.5, 0.2

    def base(a):
        return np.asarray(a, dtype=float) / (2 * sigma**2)

    a = np.array([2.0, 2.5, 3.0])
    lo_hi = rdp_sampled_without_replacement_general(q, base, np.array([2.0, 3.0]))
    mid = rdp_sampled_without_replacement_general(q, base, a)[1]
    # (alpha - 1) eps is convex in alpha: the bound at 2.5 is the chord of 1 x eps(2), 2 x eps(3)
    assert mid == pytest.approx(min((0.5 * lo_hi[0] + 0.5 * 2 * lo_hi[1]) / 1.5, lo_hi[1]),
                                rel=1e-12)
    np.testing.assert_array_equal(rdp_sampled_without_replacement_general(1.0, base, a), base(a))


def test_discrete_wor_event_is_accounted_by_rdp_only_and_exactly() -> None:
    z, m, n, T, kappa = 3.0, 10, 1000, 500, 1.0 + 1e-9
    ev = DiscreteGaussianNoise(
        SelfComposed(SampledWithoutReplacement(m, n, Gaussian(z, 2.0, REP)), T), kappa)
    for name in ("gdp", "pld", "zcdp"):
        with pytest.raises(UnsupportedEventError):
            get_accountant(name).epsilon(ev, 1e-5)
    res = best(ev, 1e-5)
    assert res.accountant == "rdp"
    # discrete base: alpha kappa^2 (2)^2 / (2 z^2) in clip units
    rho = kappa**2 * 4.0 / (2 * z * z)
    indep = _independent_epsilon(m / n, lambda j: j * rho, T, 1e-5)
    assert RDPAccountant(orders=INT_ORDERS).epsilon(ev, 1e-5) == pytest.approx(indep, rel=1e-9)
    # never below the continuous event's RDP bound; the default grid is at least as tight
    assert res.epsilon >= RDPAccountant().epsilon(ev.event, 1e-5)
    assert res.epsilon == RDPAccountant().epsilon(ev, 1e-5)
    assert event_from_dict(event_to_dict(ev)) == ev


# -------------------------------------------------------------------------- Langevin
def test_secure_langevin_event_is_the_composition_of_discrete_steps() -> None:
    X, y = _data()
    o = ArrayOracle(LogisticLoss(l2=0.05), X, y, row_norm_bound=1.0)
    sigma, eta, K, n = 0.05, 0.1, 40, 200
    rng = SecureRandom()
    fit = projected_noisy_gd(o, sigma=sigma, step_size=eta, steps=K, n_samples=n, rng=rng)
    ev = fit.event
    assert isinstance(ev, DiscreteGaussianNoise) and ev.neighbouring is REP
    S_g = 2.0 * o.constants().lipschitz  # no exact S_g declared for the logistic loss
    z = math.sqrt(2 * eta) * sigma * n / eta
    assert ev.event == SelfComposed(Gaussian(z, S_g, REP), K)
    noise_sd = math.sqrt(2 * eta) * sigma
    gamma = rng.grid(noise_sd, o.n_params)
    assert ev.sensitivity_inflation * eta * S_g / n >= (
        eta * S_g / n + gamma * math.sqrt(o.n_params))
    # the grid rule gamma sqrt(p) <= 2^-30 sd (plus the float round-up)
    assert ev.sensitivity_inflation - 1 <= 2.0**-30 * noise_sd / (eta * S_g / n) * (1 + 1e-9)
    # zCDP: K kappa^2 eta S_g^2 / (4 n^2 sigma^2) (the paper's composition baseline x kappa^2)
    rho = K * ev.sensitivity_inflation**2 * eta * S_g**2 / (4 * n**2 * sigma**2)
    assert get_accountant("zcdp").rho(ev) == pytest.approx(rho, rel=1e-12)
    assert best(ev, 1e-5).accountant in ("zcdp", "rdp")
    for name in ("langevin_last_iterate", "langevin_composition", "gdp", "pld"):
        with pytest.raises(UnsupportedEventError):
            get_accountant(name).epsilon(ev, 1e-5)
    assert fit.info["lsi_constant"] is None and "composition" in fit.info["accounting"]
    assert np.all(np.isfinite(fit.theta))


def test_secure_langevin_noise_scale_ks() -> None:
    # One step from theta0 = 0 on 0.5||theta - x||^2 with all x = 0: theta_1 is the noise,
    # N_Z-on-grid with scale sqrt(2 eta) sigma, p = 4000 coordinates.
    sigma, eta, d = 0.3, 0.4, 4000
    o = ArrayOracle(SquaredDistanceLoss(), np.zeros((3, d)), np.zeros(3), row_norm_bound=1.0)
    fit = projected_noisy_gd(o, sigma=sigma, step_size=eta, steps=1, n_samples=3,
                             theta0=np.zeros(d), rng=SecureRandom())
    sd = math.sqrt(2 * eta) * sigma
    assert stats.kstest(fit.theta / sd, "norm").pvalue > ALPHA
    # Gaussian start (discrete, scale sqrt(2 sigma^2 / lambda), lambda = 1), then one step:
    # Var = (1 - eta)^2 2 sigma^2 + 2 eta sigma^2
    fit = projected_noisy_gd(o, sigma=sigma, step_size=eta, steps=1, n_samples=3,
                             rng=SecureRandom())
    var = (1 - eta) ** 2 * 2 * sigma**2 + 2 * eta * sigma**2
    assert stats.kstest(fit.theta / math.sqrt(var), "norm").pvalue > ALPHA


def test_secure_langevin_needs_a_finite_sensitivity() -> None:
    X, y = _data()
    from noisygd.objectives import SquaredLoss

    o = ArrayOracle(SquaredLoss(l2=0.1), X, 1e3 * y, row_norm_bound=1.0)
    if math.isfinite(o.constants().lipschitz or math.inf):
        pytest.skip("the squared loss declares a Lipschitz constant here")
    with pytest.raises(AssumptionError, match="secure mode"):
        projected_noisy_gd(o, sigma=1.0, step_size=0.1, steps=3, n_samples=200,
                           rng=SecureRandom())


# --------------------------------------------------------------------------- RRPSGD
def test_secure_rrpsgd_event_and_accounting() -> None:
    X, y = _data()
    o = ArrayOracle(LogisticLoss(l2=0.01), X, y, row_norm_bound=1.0)
    rng = SecureRandom()
    fit = rrpsgd(o, epsilon=1.0, delta=1e-5, horizon=300, rng=rng)
    ev = fit.event
    L = o.constants().lipschitz
    sz = rrpsgd_noise_std(L, 200, 1.0, 1e-5)
    assert isinstance(ev, DiscreteGaussianNoise)
    assert ev.event == SelfComposed(
        SampledWithoutReplacement(1, 200, Gaussian(sz / L, 2.0, REP)), fit.info["R"])
    assert 1 <= fit.info["R"] <= 300
    gamma = rng.grid(sz, o.n_params)
    assert ev.sensitivity_inflation * 2 * L >= 2 * L + gamma * math.sqrt(o.n_params)
    assert fit.info["paper_event"] is None
    assert fit.info["worst_case_event"] == DiscreteGaussianNoise(
        SelfComposed(ev.event.event, 300), ev.sensitivity_inflation)
    with pytest.raises(UnsupportedEventError):
        get_accountant("zcdp").epsilon(ev, 1e-5)
    res = best(fit.info["worst_case_event"], 1e-5)
    assert res.accountant == "rdp"
    rho = ev.sensitivity_inflation**2 * 4.0 / (2 * (sz / L) ** 2)
    indep = _independent_epsilon(1 / 200, lambda j: j * rho, 300, 1e-5)
    assert RDPAccountant(orders=INT_ORDERS).epsilon(fit.info["worst_case_event"], 1e-5) == (
        pytest.approx(indep, rel=1e-9))
    assert res.epsilon == RDPAccountant().epsilon(fit.info["worst_case_event"], 1e-5)


def test_secure_rrpsgd_noise_scale_ks() -> None:
    # Zero rows, no intercept: every gradient is 0, so with R = 1 the update is
    # w_1 = -eta * noise (l2 = 0, no projection); p = 3000 coordinates.
    d, n = 3000, 10
    o = ArrayOracle(LogisticLoss(fit_intercept=False), np.zeros((n, d)), np.ones(n),
                    row_norm_bound=1.0)
    fit = rrpsgd(o, epsilon=1.0, delta=1e-5, horizon=1, rng=SecureRandom())
    assert fit.info["R"] == 1
    noise = -fit.theta / fit.info["step_size"]
    assert stats.kstest(noise / fit.info["sigma_z"], "norm").pvalue > ALPHA


# ---------------------------------------------------------------------------- BST14
def test_secure_bassily_event_noise_and_accounting() -> None:
    rng0 = np.random.default_rng(1)
    X = rng0.standard_normal((300, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    o = ArrayOracle(LogisticLoss(l2=0.1), X, y, row_norm_bound=1.0)
    rng = SecureRandom()
    fit = bassily_sgd(o, epsilon=1.0, delta=1e-3, radius=5.0, rng=rng)
    ev = fit.event
    assert isinstance(ev, DiscreteGaussianNoise)
    default = bassily_sgd(o, epsilon=1.0, delta=1e-3, radius=5.0, rng=np.random.default_rng(2))
    assert ev.event == default.event and fit.n_iter == 36
    assert np.linalg.norm(fit.theta) <= 5.0 + 1e-9
    L, m, s = o.constants().lipschitz, 50, fit.info["noise_std"][0]
    gamma = rng.grid(s, o.n_params)
    assert ev.sensitivity_inflation * 2 * L / m >= 2 * L / m + gamma * math.sqrt(o.n_params)
    rho = ev.sensitivity_inflation**2 * 4.0 / (2 * (s * m / L) ** 2)
    indep = _independent_epsilon(m / 300, lambda j: j * rho, 36, 1e-3)
    assert RDPAccountant(orders=INT_ORDERS).epsilon(ev, 1e-3) == pytest.approx(indep, rel=1e-9)
    res = best(ev, 1e-3)
    assert res.accountant == "rdp" and res.epsilon == RDPAccountant().epsilon(ev, 1e-3)
    assert res.epsilon >= RDPAccountant().epsilon(ev.event, 1e-3)


def test_secure_bassily_noise_scale_ks() -> None:
    # Zero rows: the batch gradient is 0; with mu > 0 the first step is
    # theta_1 = -(1/mu) noise (eta_1 = 1/mu), inside a huge ball; p = 3000 coordinates.
    d, n, mu = 3000, 20, 0.5
    o = ArrayOracle(LogisticLoss(l2=mu, fit_intercept=False), np.zeros((n, d)), np.ones(n),
                    row_norm_bound=1.0)
    fit = bassily_sgd(o, epsilon=1.0, delta=1e-3, radius=1e12, batch_size=5, steps=1,
                      rng=SecureRandom())
    noise = -mu * fit.theta
    assert stats.kstest(noise / fit.info["noise_std"][0], "norm").pvalue > ALPHA


def test_default_orders_curve_of_secure_wor_is_finite_and_monotone() -> None:
    ev = DiscreteGaussianNoise(
        SelfComposed(SampledWithoutReplacement(50, 300, Gaussian(5.0, 2.0, REP)), 36), 1.0)
    c = rdp_curve(ev, np.array(DEFAULT_ORDERS))
    assert np.all(np.isfinite(c)) and np.all(np.diff(c) >= 0)


# ----------------------------------------------------- Langevin solver and estimator
def _langevin_facts():
    from noisygd.solvers import PublicFacts

    X, y = _data(n=2000)
    o = ArrayOracle(LogisticLoss(l2=0.05, radius=10.0), X, y, row_norm_bound=1.0)
    return o, PublicFacts.from_oracle(o, n_samples=o.n_rows, relation=REP)


def test_secure_langevin_plan_meets_its_zcdp_budget_by_composition() -> None:
    from noisygd.accounting.zcdp import zcdp_rho
    from noisygd.planning_langevin import plan_langevin, plan_langevin_secure
    from noisygd.solvers import Budget, get_solver

    _, facts = _langevin_facts()
    rho = 0.03
    plan = plan_langevin_secure(facts, rho=rho)
    plain = plan_langevin(facts, rdp_order=2.0, rdp_epsilon=2.0 * rho)
    assert (plan.steps, plan.step_size) == (plain.steps, plain.step_size)
    K, eta, S, n = plan.steps, plan.step_size, plan.sensitivity, plan.n_samples
    kappa = plan.info["sensitivity_inflation"]
    spent = K * kappa**2 * eta * S**2 / (4 * n**2 * plan.sigma**2)
    assert spent <= rho and spent >= rho * (1 - 1e-9)
    # composition costs noise against the last-iterate bound at the same rho
    assert plan.sigma > plain.sigma
    solver = get_solver("langevin")
    assert solver.secure_mode
    splan = solver.plan(facts, Budget(1.0, 1e-5, secure=True))
    ev = solver.planned_event(splan)
    assert isinstance(ev, DiscreteGaussianNoise)
    assert zcdp_rho(ev) <= splan.rho
    assert best(ev, 1e-5).epsilon <= 1.0


def test_secure_langevin_estimator_fits_within_the_budget() -> None:
    from noisygd.estimators import DPLogisticRegression

    X, y = _data(n=600)
    model = DPLogisticRegression(epsilon=1.0, delta=1e-5, classes=[-1, 1], method="langevin",
                                 neighbouring="replace_one", secure=True).fit(X, y)
    event = model.privacy_.event
    assert isinstance(event, DiscreteGaussianNoise)
    assert model.privacy_.accountant in ("zcdp", "rdp")
    assert model.privacy_.epsilon <= 1.0 * (1 + 1e-9)


# ------------------------------------------------------------ L2-Laplace: still refused
def test_l2_laplace_output_perturbation_stays_refused_in_secure_mode() -> None:
    from noisygd.algorithms.output_perturbation import perturb, plan_output_perturbation

    X, y = _data()
    o = ArrayOracle(LogisticLoss(l2=0.1), X, y, row_norm_bound=1.0)
    kw = {"n": 200, "dim": o.n_params, "epsilon": 1.0}
    with pytest.raises(ValueError, match="secure mode has no L2-Laplace"):
        plan_output_perturbation(o.constants(), delta=0.0, secure=True, **kw)
    laplace_plan = plan_output_perturbation(o.constants(), delta=0.0, **kw)
    with pytest.raises(TypeError, match="secure mode"):
        perturb(np.zeros(o.n_params), laplace_plan, SecureRandom())
