"""Secure mode at the algorithm level, and bit-for-bit equality of the default (NumPy) mode.

The "old formula" references below are the noise loops as they were written before the noise
went through :func:`noisygd.mechanisms.noise.add_gaussian_noise` (``g += sd *
rng.standard_normal(p)`` and friends): the seeded default mode must reproduce them exactly.
Statistical assertions under OS entropy state their false-failure rate (ALPHA = 1e-6 each).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from _goodness_of_fit import UNSEEDED_ALPHA
from noisygd.accounting import best, get_accountant
from noisygd.accounting.events import (
    DiscreteGaussianNoise,
    Gaussian,
    Neighbouring,
    PoissonSampled,
    SelfComposed,
    TreeAggregation,
)
from noisygd.accounting.serialization import event_from_dict, event_to_dict
from noisygd.algorithms.dp_ftrl import dp_ftrl
from noisygd.algorithms.langevin_gd import projected_noisy_gd
from noisygd.algorithms.noisy_gd import noisy_gd
from noisygd.algorithms.noisy_sgd import noisy_sgd
from noisygd.algorithms.output_perturbation import (
    output_perturbation_gd,
    perturb,
    plan_output_perturbation,
)
from noisygd.algorithms.rrpsgd import rrpsgd
from noisygd.algorithms.schedules import dynamic_noisy_gd
from noisygd.exceptions import UnsupportedEventError
from noisygd.mechanisms.secure import SecureRandom
from noisygd.mechanisms.tree import TreeAggregator
from noisygd.objectives import LogisticLoss, SquaredLoss
from noisygd.oracles import ArrayOracle

pytest.importorskip("opendp.prelude", reason="secure noise needs the optional opendp package "
                    "(pip install 'noisygd[secure]')")

#: Per-test false-failure rate of every statistical assertion below.
ALPHA = UNSEEDED_ALPHA
REP = Neighbouring.REPLACE_ONE


def _data(seed: int = 0, n: int = 200, d: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ rng.normal(size=d))), 1.0, -1.0)
    return X, y


def _oracle(l2: float = 0.01, radius: float | None = None) -> ArrayOracle:
    X, y = _data()
    return ArrayOracle(LogisticLoss(l2=l2, radius=radius), X, y, row_norm_bound=1.0)


# ------------------------------------------------------------ default mode: bit for bit
@pytest.mark.parametrize("momentum", [0.0, 0.8])
def test_noisy_gd_default_mode_is_the_old_formula_bit_for_bit(momentum: float) -> None:
    o = _oracle(radius=3.0)
    z, C, T, eta, n = 1.3, 0.7, 25, 0.02, 200.0
    fit = noisy_gd(o, noise_multiplier=z, clip=C, steps=T, learning_rate=eta, n_samples=n,
                   momentum=momentum, rng=np.random.default_rng(42))
    rng = np.random.default_rng(42)
    p = o.n_params
    theta = o.project(np.zeros(p))
    velocity = np.zeros(p)
    for _ in range(T):
        point = theta + momentum * velocity if momentum else theta
        g = o.clipped_gradient_sum(point, C)
        g += n * o.l2 * point
        g += z * C * rng.standard_normal(p)
        if momentum:
            new = o.project(point - eta * g)
            velocity = new - theta
            theta = new
        else:
            theta = o.project(theta - eta * g)
    assert np.array_equal(fit.theta, theta)
    assert fit.event == SelfComposed(Gaussian(z, 1.0), T)


@pytest.mark.parametrize("sampling", ["poisson", "shuffle_fixed"])
def test_noisy_sgd_default_mode_is_the_old_formula_bit_for_bit(sampling: str) -> None:
    o = _oracle()
    z, C, eta, n, m, T = 1.1, 1.0, 0.05, 200, 20, 30
    kw = {"sampling_rate": m / n} if sampling == "poisson" else {"batch_size": m}
    fit = noisy_sgd(o, noise_multiplier=z, clip=C, learning_rate=eta, n_samples=n,
                    sampling=sampling, steps=T, momentum=0.5, rng=np.random.default_rng(7), **kw)
    rng = np.random.default_rng(7)
    p, gamma = o.n_params, m / n
    theta, velocity, perm = np.zeros(p), np.zeros(p), None
    # Poisson (issue 22): 128 bits of seed material once, then per step t the rows' stream
    # SeedSequence(entropy, spawn_key=(t, 0)) (one block: n < 2**16), Geometric gaps
    entropy = [int(v) for v in rng.integers(0, 2**63, size=2)] if sampling == "poisson" else []
    for t in range(T):
        if sampling == "poisson":
            gen = np.random.Generator(np.random.PCG64(
                np.random.SeedSequence(entropy, spawn_key=(t, 0))))
            pos = np.cumsum(gen.geometric(gamma, size=4096)) - 1
            idx = pos[pos < n]
        else:
            j = t % math.ceil(n / m)
            if j == 0:
                perm = rng.permutation(n)
            idx = perm[j * m:(j + 1) * m]
        gsum = o.clipped_gradient_sum(theta, C, rows=idx) if idx.size else np.zeros(p)
        ghat = (1.0 / gamma) * (gsum + z * C * rng.standard_normal(p))
        ghat = ghat + o.l2 * n * theta
        velocity = 0.5 * velocity + ghat
        theta = o.project(theta - eta * velocity)
    assert np.array_equal(fit.theta, theta)


def test_dynamic_schedule_default_mode_is_the_old_formula_bit_for_bit() -> None:
    o = _oracle()
    sig = np.array([3.0, 2.5, 2.0, 1.5, 1.2])
    C, eta, N = 1.0, 0.5, 200.0
    fit = dynamic_noisy_gd(o, sigmas=sig, budget=10.0, clip=C, learning_rate=eta, n_samples=N,
                           rng=np.random.default_rng(3))
    rng = np.random.default_rng(3)
    theta = np.zeros(o.n_params)
    for s in sig:
        grad = o.clipped_gradient_sum(theta, C) / N
        g = grad + (C * s / N) * rng.standard_normal(o.n_params) + o.l2 * theta
        theta = o.project(theta - eta * g)
    assert np.array_equal(fit.theta, theta)
    assert fit.info["zcdp_rho"] == 1.0 * float(np.sum(1 / sig**2)) / 2.0


def test_tree_default_mode_is_the_old_formula_bit_for_bit() -> None:
    # plain variant: at step t the node of height i = v2(t) is exact + sd * N(0, I), one draw
    d, sd, T = 3, 0.9, 13
    gs = np.random.default_rng(0).normal(size=(T, d))
    agg = TreeAggregator(d, sd, variant="plain", rng=np.random.default_rng(9))
    got = np.array([agg.add(g) for g in gs])
    rng = np.random.default_rng(9)
    noisy: dict[int, np.ndarray] = {}
    exact: dict[int, np.ndarray] = {}
    ref = []
    for t in range(1, T + 1):
        i = (t & -t).bit_length() - 1
        e = gs[t - 1].copy()
        for j in range(i):
            e += exact[j]
        exact[i] = e
        noisy[i] = e + sd * rng.standard_normal(d)
        out = np.zeros(d)
        for j in range(t.bit_length()):
            if (t >> j) & 1:
                out += noisy[j]
        ref.append(out)
    assert np.array_equal(got, np.array(ref))


# ------------------------------------------------------------ secure mode: events
def test_secure_noisy_gd_event_carries_the_inflated_sensitivity() -> None:
    o = _oracle()
    z, C, T = 2.0, 0.5, 20
    rng = SecureRandom()
    fit = noisy_gd(o, noise_multiplier=z, clip=C, steps=T, learning_rate=0.01, n_samples=200,
                   rng=rng)
    ev = fit.event
    assert isinstance(ev, DiscreteGaussianNoise)
    assert ev.event == SelfComposed(Gaussian(z, 1.0), T)
    p = o.n_params
    gamma = rng.grid(z * C, p)
    kappa = ev.sensitivity_inflation
    assert kappa * C >= C + gamma * math.sqrt(p)  # Delta + gamma sqrt(d), in units of C
    assert kappa - 1.0 < 1e-8
    rho = get_accountant("zcdp").rho(ev)
    assert rho == pytest.approx(kappa**2 * T / (2 * z * z), rel=1e-14)
    assert rho > T / (2 * z * z)
    rdp = get_accountant("rdp").curve(ev)
    np.testing.assert_allclose(rdp, get_accountant("rdp").orders * rho, rtol=1e-14)
    for name in ("gdp", "pld"):
        with pytest.raises(UnsupportedEventError):
            get_accountant(name).epsilon(ev, 1e-5)
    assert best(ev, 1e-5).accountant in {"zcdp", "rdp"}
    assert event_from_dict(event_to_dict(ev)) == ev


def test_secure_noisy_sgd_shuffle_and_without_replacement_events() -> None:
    o = _oracle()
    z, C, m = 1.5, 1.0, 40
    rng = SecureRandom()
    fit = noisy_sgd(o, noise_multiplier=z, clip=C, learning_rate=0.01, n_samples=200,
                    sampling="shuffle_fixed", batch_size=m, epochs=3, rng=rng)
    ev = fit.event
    assert ev.event == SelfComposed(Gaussian(z, 2.0, REP), 3)
    gamma = rng.grid(z * C, o.n_params)
    assert ev.sensitivity_inflation * 2 * C >= 2 * C + gamma * math.sqrt(o.n_params)
    assert ev.neighbouring is REP

    # without replacement: accounted by RDP (Wang, Balle, Kasiviswanathan 2019, Thm 9)
    fit = noisy_sgd(_oracle(), noise_multiplier=z, clip=C, learning_rate=0.01, n_samples=200,
                    sampling="without_replacement", batch_size=10, steps=3, rng=SecureRandom())
    assert isinstance(fit.event, DiscreteGaussianNoise)
    assert best(fit.event, 1e-5).accountant == "rdp"


def test_secure_noisy_sgd_poisson_is_accounted_by_the_general_subsampling_bound() -> None:
    o = _oracle()
    z, C, q, T = 1.2, 1.0, 0.1, 40
    rng = SecureRandom()
    fit = noisy_sgd(o, noise_multiplier=z, clip=C, learning_rate=0.01, n_samples=200,
                    sampling_rate=q, steps=T, rng=rng)
    ev = fit.event
    assert isinstance(ev, DiscreteGaussianNoise)
    assert ev.event == SelfComposed(PoissonSampled(q, Gaussian(z)), T)
    gamma = rng.grid(z * C, o.n_params)
    assert ev.sensitivity_inflation * C >= C + gamma * math.sqrt(o.n_params)
    with pytest.raises(UnsupportedEventError):
        get_accountant("zcdp").epsilon(ev, 1e-5)  # zCDP does not amplify by subsampling
    res = best(ev, 1e-5)
    assert res.accountant == "rdp"
    plain = best(ev.event, 1e-5).epsilon  # the continuous Gaussian's exact-curve RDP/PLD
    # sound side: never below the continuous event; amplified: far below no subsampling
    assert plain < res.epsilon < get_accountant("zcdp").epsilon(
        DiscreteGaussianNoise(SelfComposed(Gaussian(z), T), ev.sensitivity_inflation), 1e-5)


def test_secure_dp_ftrl_and_dynamic_schedule_events() -> None:
    o = _oracle()
    rng = SecureRandom()
    fit = dp_ftrl(o, noise_multiplier=2.0, clip=1.0, l2_ftrl=50.0, batch_size=25, rng=rng)
    assert isinstance(fit.event, DiscreteGaussianNoise)
    assert fit.event.event == TreeAggregation(2.0, 8)
    assert fit.info["mu"] is None and fit.info["sensitivity_inflation"] > 1.0
    rho = get_accountant("zcdp").rho(fit.event)
    assert rho == pytest.approx(fit.event.sensitivity_inflation**2 * TreeAggregation(2.0, 8).mu**2
                                / 2, rel=1e-14)

    sig = np.array([3.0, 2.0, 1.5])
    fit = dynamic_noisy_gd(o, sigmas=sig, budget=10.0, clip=1.0, learning_rate=0.5,
                           n_samples=200.0, rng=SecureRandom())
    ev = fit.event
    assert isinstance(ev, DiscreteGaussianNoise)
    assert get_accountant("zcdp").rho(ev) == pytest.approx(fit.info["zcdp_rho"], rel=1e-12)
    assert fit.info["zcdp_rho"] > float(np.sum(1 / sig**2)) / 2
    # closed form: with kappa the event's one inflation factor (the largest step's), step t
    # is (kappa / sigma_t)^2 / 2-zCDP (clip 1, sensitivity 1), and zCDP adds over the steps
    assert fit.info["zcdp_rho"] == pytest.approx(
        ev.sensitivity_inflation**2 * float(np.sum(1 / sig**2)) / 2, rel=1e-12)


def test_langevin_and_rrpsgd_run_in_secure_mode_with_their_own_events() -> None:
    # formerly refused; now accounted by composition (Langevin) and by the general
    # without-replacement RDP bound (RRPSGD): tests/secure/test_secure_langevin_rrpsgd_bassily.py
    o = _oracle()
    fit = projected_noisy_gd(o, sigma=1.0, step_size=0.1, steps=3, n_samples=200,
                             rng=SecureRandom())
    assert isinstance(fit.event, DiscreteGaussianNoise)
    with pytest.raises(UnsupportedEventError):
        get_accountant("langevin_last_iterate").epsilon(fit.event, 1e-5)
    fit = rrpsgd(o, epsilon=1.0, delta=1e-5, horizon=10, rng=SecureRandom())
    assert isinstance(fit.event, DiscreteGaussianNoise)
    assert best(fit.event, 1e-5).accountant == "rdp"


def test_secure_output_perturbation_meets_its_target_by_zcdp() -> None:
    o = _oracle(l2=0.1)
    eps, delta = 1.0, 1e-5
    fit = output_perturbation_gd(o, epsilon=eps, delta=delta, rng=SecureRandom())
    ev = fit.event
    assert isinstance(ev, DiscreteGaussianNoise)
    inner = ev.event
    gamma = SecureRandom().grid(inner.scale, o.n_params)
    assert ev.sensitivity_inflation * inner.sensitivity >= (
        inner.sensitivity + gamma * math.sqrt(o.n_params))
    res = best(ev, delta)
    assert res.accountant == "zcdp" and res.epsilon <= eps
    assert res.epsilon > 0.999 * eps  # calibrated, not wasteful
    default = output_perturbation_gd(o, epsilon=eps, delta=delta, rng=np.random.default_rng(0))
    assert fit.info["noise_scale"] > default.info["noise_scale"]  # zCDP costs some noise
    plan_kw = {"n": 200, "dim": o.n_params, "epsilon": eps}
    with pytest.raises(ValueError, match="no L2-Laplace"):
        plan_output_perturbation(o.constants(), delta=0.0, secure=True, **plan_kw)
    secure_plan = plan_output_perturbation(o.constants(), delta=delta, secure=True, **plan_kw)
    plain_plan = plan_output_perturbation(o.constants(), delta=delta, **plan_kw)
    w = np.zeros(o.n_params)
    with pytest.raises(TypeError, match="SecureRandom"):
        perturb(w, secure_plan, np.random.default_rng(0))
    with pytest.raises(TypeError, match="secure mode"):
        perturb(w, plain_plan, SecureRandom())
    out = perturb(w, secure_plan, SecureRandom())
    g = SecureRandom().grid(secure_plan.scale, o.n_params)
    assert np.all(out / g == np.round(out / g))


# ------------------------------------------------------------ secure mode: statistics
@pytest.mark.parametrize("source", ["numpy", "secure"])
def test_noisy_gd_noise_law_ks(source: str) -> None:
    # zero data (X = 0, y = 0, squared loss, no intercept): every clipped gradient is 0, so
    # theta_{T+1} = -eta sum_t noise_t ~ N(0, T (eta z C)^2 I): KS over the p = 1500
    # coordinates (ALPHA; the NumPy case is seeded and deterministic)
    n, p, z, C, T, eta = 10, 1500, 1.7, 0.4, 6, 0.3
    o = ArrayOracle(SquaredLoss(fit_intercept=False), np.zeros((n, p)), np.zeros(n),
                    row_norm_bound=1.0)
    rng = np.random.default_rng(8) if source == "numpy" else SecureRandom()
    fit = noisy_gd(o, noise_multiplier=z, clip=C, steps=T, learning_rate=eta, n_samples=n,
                   rng=rng)
    assert stats.kstest(fit.theta / (eta * z * C * math.sqrt(T)), "norm").pvalue > ALPHA


@pytest.mark.parametrize("variant", ["plain", "honaker"])
def test_secure_tree_prefix_error_ks(variant: str) -> None:
    # d = 2000 coordinates of Z_t at t = 7 (three nodes) against N(0, error_variance(7)) (ALPHA)
    d, sd = 2000, 1.3
    agg = TreeAggregator(d, sd, variant=variant, rng=SecureRandom())
    for _ in range(7):
        out = agg.add(np.zeros(d))
    assert stats.kstest(out / math.sqrt(agg.error_variance(7)), "norm").pvalue > ALPHA


# ------------------------------------------------------------ the general subsampling bound
@pytest.mark.parametrize(("q", "sigma"), [(0.01, 1.0), (0.1, 2.0), (0.001, 0.7), (0.5, 5.0)])
def test_general_poisson_bound_is_above_the_exact_gaussian_curve(q: float, sigma: float) -> None:
    # Zhu-Wang Theorem 6 holds for every mechanism, so on the continuous Gaussian it can never
    # be below Mironov-Talwar-Zhang's exact value (integer orders); at order 2 the two coincide
    # (both are log(1 - q^2 + q^2 e^{1/sigma^2})), and it never exceeds the unsampled curve.
    from noisygd.accounting.rdp import DEFAULT_ORDERS, rdp_poisson_subsampled_general
    from noisygd.accounting.subsampling import rdp_poisson_sampled_gaussian

    orders = np.asarray(DEFAULT_ORDERS)
    general = rdp_poisson_subsampled_general(q, lambda a: a / (2 * sigma**2), orders)
    exact = rdp_poisson_sampled_gaussian(q, sigma, orders)
    ints = orders == np.floor(orders)
    assert np.all(general[ints] >= exact[ints] * (1 - 1e-12))
    two = orders == 2.0
    np.testing.assert_allclose(general[two], np.log1p(q * q * np.expm1(1 / sigma**2)),
                               rtol=1e-12)
    assert np.all(general <= orders / (2 * sigma**2) * (1 + 1e-12))
    assert np.all(np.diff(general[ints]) >= -1e-15)  # non-decreasing in the order


def test_secure_dp_ftrl_inflation_is_stated_per_relation() -> None:
    # kappa = 1 + gamma sqrt(p) / (Delta C), Delta = 2 (replace-one, positional leaves) or 1
    # (add/remove, random leaves), gamma the grid of sd = z C in dimension p (D1)
    o = _oracle()
    p, C, z = o.n_params, 1.0, 2.0
    gamma_sqrt_p = SecureRandom().rounding_distance(z * C, p)
    pos = dp_ftrl(o, noise_multiplier=z, clip=C, l2_ftrl=50.0, batch_size=25,
                  rng=SecureRandom())
    rnd = dp_ftrl(o, noise_multiplier=z, clip=C, l2_ftrl=50.0, batch_size=25,
                  rng=SecureRandom(), leaves="random", steps_per_epoch=8, n_samples=200.0)
    assert pos.event.event.relation.value == "replace_one"
    assert rnd.event.event.relation.value == "add_remove"
    assert pos.info["sensitivity_inflation"] == pytest.approx(1 + gamma_sqrt_p / (2 * C),
                                                              rel=1e-15)
    assert rnd.info["sensitivity_inflation"] == pytest.approx(1 + gamma_sqrt_p / (1 * C),
                                                              rel=1e-15)
