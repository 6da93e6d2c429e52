"""Tests of NoisyGD (Lecture 12, eq. 12.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from noisygd.accounting.events import Gaussian, Neighbouring, SelfComposed
from noisygd.algorithms.noisy_gd import noisy_gd
from noisygd.objectives import HuberLoss, LogisticLoss, SquaredLoss
from noisygd.oracles import ArrayOracle


def _oracle(obj, X, y, bound=1.0, **kw):
    return ArrayOracle(obj, X, y, row_norm_bound=bound, **kw)


def _logistic_data(seed=0, n=300, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    w = rng.normal(size=d) * 2
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-(X @ w + 0.3))), 1.0, -1.0)
    return X, y


def _optimum(obj, X, y):
    p = obj.n_params(X.shape[1])
    res = optimize.minimize(lambda t: (obj.value(t, X, y), obj.gradient(t, X, y)), np.zeros(p),
                            jac=True, method="L-BFGS-B",
                            options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000})
    return res.x, res.fun


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_tiny_noise_converges_to_nonprivate_optimum(momentum):
    X, y = _logistic_data()
    n = X.shape[0]
    obj = LogisticLoss(l2=0.05)
    theta_star, f_star = _optimum(obj, X, y)
    beta_f = obj.constants(1.0).smoothness + obj.l2
    res = noisy_gd(_oracle(obj, X, y), noise_multiplier=1e-9, clip=10.0, steps=1500,
                   learning_rate=1.0 / (n * beta_f), n_samples=n, momentum=momentum,
                   rng=np.random.default_rng(0))
    np.testing.assert_allclose(res.theta, theta_star, atol=1e-5)
    assert obj.value(res.theta, X, y) - f_star < 1e-9


def test_inverse_t_weighted_converges_with_tiny_noise():
    X, y = _logistic_data(1)
    n = X.shape[0]
    obj = LogisticLoss(l2=0.5, radius=5.0)
    theta_star, f_star = _optimum(obj, X, y)
    assert np.linalg.norm(theta_star) < 5.0
    res = noisy_gd(_oracle(obj, X, y), noise_multiplier=1e-9, clip=10.0, steps=3000,
                   learning_rate=None,
                   n_samples=n, schedule="inverse_t", averaging="weighted",
                   rng=np.random.default_rng(0))
    # 12.2.4 with sigma ~ 0: excess <= 4 n^2 G^2 / (n lambda n (T+1)) in mean units
    G = math.sqrt(2) + 0.5 * 5.0
    assert obj.value(res.theta, X, y) - f_star <= 4 * G**2 / (0.5 * 3001)
    assert obj.value(res.theta, X, y) - f_star < 1e-3
    # the schedule is reported as a formula and scalars, never a length-T array
    assert res.info["learning_rate"] is None and res.info["strong_convexity"] == 0.5
    assert res.info["learning_rate_formula"] == (
        "eta_t = 1/(n_samples * strong_convexity * (t + 1))")
    assert all(np.ndim(v) == 0 for k, v in res.info.items() if k != "last_iterate")


def _manual(obj, X, y, z, C, T, etas, n, seed, momentum=0.0):
    """Independent loop for eq. 12.1 (with the same noise draws)."""
    rng = np.random.default_rng(seed)
    p = obj.n_params(X.shape[1])
    theta, v = np.zeros(p), np.zeros(p)
    iterates = []
    xt = np.hstack([X, np.ones((X.shape[0], 1))])
    for t in range(T):
        iterates.append(theta.copy())
        q = theta + momentum * v
        g = np.zeros(p)
        for i in range(X.shape[0]):
            gi = obj.residuals(q, X[i:i + 1], y[i:i + 1])[0] * xt[i]
            gi *= min(1.0, C / np.linalg.norm(gi)) if np.linalg.norm(gi) > 0 else 1.0
            g += gi
        g += n * obj.l2 * q + z * C * rng.standard_normal(p)
        new = obj.project(q - etas[t] * g)
        v = new - theta
        theta = new
    return np.array(iterates), theta


@pytest.mark.parametrize("momentum", [0.0, 0.5])
def test_matches_independent_loop_and_averaging_formulas(momentum):
    X, y = _logistic_data(2, n=25, d=3)
    obj = LogisticLoss(l2=0.1, radius=1.5)
    T, z, C, n = 7, 0.8, 0.3, 25.0
    its, last = _manual(obj, X, y, z, C, T, np.full(T, 0.05), n, seed=11, momentum=momentum)
    common = dict(noise_multiplier=z, clip=C, steps=T, learning_rate=0.05, n_samples=n,
                  momentum=momentum)
    o = _oracle(obj, X, y)
    r_last = noisy_gd(o, averaging="last", rng=np.random.default_rng(11), **common)
    r_uni = noisy_gd(o, averaging="uniform", rng=np.random.default_rng(11), **common)
    r_w = noisy_gd(o, averaging="weighted", rng=np.random.default_rng(11), **common)
    r_s = noisy_gd(o, averaging="suffix", rng=np.random.default_rng(11), **common)
    np.testing.assert_allclose(r_last.theta, last, rtol=1e-10, atol=1e-12)
    # suffix: the last ceil(T/2) = 4 iterates theta_5..theta_8 (theta_8 = theta_{T+1})
    np.testing.assert_allclose(r_s.theta, np.vstack([its[4:], last]).mean(axis=0),
                               rtol=1e-10, atol=1e-12)
    assert r_s.event == r_last.event
    np.testing.assert_allclose(r_uni.theta, its.mean(axis=0), rtol=1e-10, atol=1e-12)
    t = np.arange(1, T + 1)
    np.testing.assert_allclose(r_w.theta, 2.0 / (T * (T + 1)) * (t[:, None] * its).sum(0),
                               rtol=1e-10, atol=1e-12)
    assert np.linalg.norm(r_last.theta) <= 1.5 + 1e-12


def test_same_seed_same_result_and_event():
    X, y = _logistic_data()
    obj = LogisticLoss(l2=0.01)
    kw = dict(noise_multiplier=3.0, clip=1.0, steps=20, learning_rate=0.01, n_samples=300)
    o = _oracle(obj, X, y)
    a = noisy_gd(o, rng=np.random.default_rng(5), **kw)
    b = noisy_gd(o, rng=np.random.default_rng(5), **kw)
    c = noisy_gd(o, rng=np.random.default_rng(6), **kw)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert not np.allclose(a.theta, c.theta)
    assert a.event == SelfComposed(Gaussian(3.0, 1.0, Neighbouring.ADD_REMOVE), 20)
    assert a.n_iter == 20
    r = noisy_gd(o, rng=np.random.default_rng(5), relation="replace_one", **kw)
    assert r.event == SelfComposed(Gaussian(3.0, 2.0, Neighbouring.REPLACE_ONE), 20)


def test_noise_has_the_stated_scale():
    """One step from theta=0 with l2=0 reveals the noise: (theta_1 - theta_0)/(-eta) - g.

    Chi-square test of the pooled variance, two-sided, false-failure rate 1e-4 (fixed seed).
    """
    rng = np.random.default_rng(0)
    n, d = 50, 400
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    y = rng.normal(size=n)
    obj = SquaredLoss()
    z, C, eta = 2.5, 0.7, 0.1
    g = obj.clipped_gradient_sum(np.zeros(d + 1), X, y, C)
    noise = []
    o = _oracle(obj, X, y, bound=10.0)
    for seed in range(10):
        res = noisy_gd(o, noise_multiplier=z, clip=C, steps=1, learning_rate=eta,
                       n_samples=n, rng=np.random.default_rng(seed))
        noise.append(-res.theta / eta - g)
    noise = np.concatenate(noise)
    k = noise.size
    stat = np.sum(noise**2) / (z * C) ** 2
    lo, hi = stats.chi2.ppf([0.5e-4, 1 - 0.5e-4], k)
    assert lo < stat < hi
    assert abs(noise.mean()) < 4.5 * z * C / math.sqrt(k)


@pytest.mark.parametrize("kwargs,err,match", [
    ({"noise_multiplier": 0.0}, ValueError, "noise_multiplier must be positive"),
    ({"noise_multiplier": float("inf")}, ValueError, "noise_multiplier must be positive"),
    ({"clip": -1.0}, ValueError, "clip must be positive"),
    ({"steps": 0}, ValueError, "steps must be an integer >= 1"),
    ({"steps": 2.5}, TypeError, "steps must be an integer"),
    ({"noise_multiplier": True}, TypeError, "noise_multiplier must be a real number"),
    ({"momentum": "0.5"}, TypeError, "momentum must be a real number"),
    ({"learning_rate": None}, ValueError, "learning_rate is required"),
    ({"n_samples": 0}, ValueError, "n_samples must be positive"),
    ({"schedule": "cosine"}, ValueError, "schedule must be one of"),
    ({"averaging": "median"}, ValueError, "averaging must be one of"),
    ({"momentum": 1.0}, ValueError, "momentum must be in"),
    ({"schedule": "inverse_t"}, ValueError, "learning_rate must be None"),
    ({"theta0": np.zeros(2)}, ValueError, "theta0 must be a finite vector"),
    ({"relation": "neighbours"}, ValueError, "neighbours"),
    ({"rng": 0}, TypeError, "rng must be a numpy.random.Generator"),
])
def test_bad_inputs_raise(kwargs, err, match):
    X, y = _logistic_data(n=20)
    kw = dict(noise_multiplier=1.0, clip=1.0, steps=3, learning_rate=0.1, n_samples=20,
              rng=np.random.default_rng(0))
    kw.update(kwargs)
    with pytest.raises(err, match=match):
        noisy_gd(_oracle(LogisticLoss(), X, y), **kw)


def test_bad_data_raise():
    X, y = _logistic_data(n=20)
    kw = dict(noise_multiplier=1.0, clip=1.0, steps=3, learning_rate=0.1, n_samples=20,
              rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="oracle must be a GradientOracle"):
        noisy_gd(LogisticLoss(), **kw)
    with pytest.raises(ValueError, match="strong_convexity"):
        noisy_gd(_oracle(HuberLoss(), X, y),
                 **{**kw, "learning_rate": None, "schedule": "inverse_t"})


def test_random_iterate_is_the_tau_th_iterate_of_an_independent_loop():
    """averaging="random": tau ~ U{1..T} is the first draw of rng, then the noise as usual."""
    X, y = _logistic_data(2, n=25, d=3)
    obj = LogisticLoss(l2=0.1, radius=1.5)
    T, z, C, n = 9, 0.8, 0.3, 25.0
    o = _oracle(obj, X, y)
    for seed in range(6):
        res = noisy_gd(o, noise_multiplier=z, clip=C, steps=T, learning_rate=0.05, n_samples=n,
                       averaging="random", rng=np.random.default_rng(seed))
        tau = int(np.random.default_rng(seed).integers(1, T + 1))
        assert res.info["random_iterate"] == tau
        # the same noise stream after the draw of tau
        rng = np.random.default_rng(seed)
        rng.integers(1, T + 1)
        theta = np.zeros(4)
        for t in range(1, T + 1):
            if t == tau:
                np.testing.assert_allclose(res.theta, theta, rtol=1e-12, atol=1e-14)
            g = obj.clipped_gradient_sum(theta, X, y, C) + n * obj.l2 * theta
            theta = obj.project(theta - 0.05 * (g + z * C * rng.standard_normal(4)))
        np.testing.assert_allclose(res.info["last_iterate"], theta, rtol=1e-12, atol=1e-14)
        assert res.event == SelfComposed(Gaussian(z, 1.0, Neighbouring.ADD_REMOVE), T)


def test_random_iterate_index_is_uniform():
    """Chi-square goodness of fit of tau over 2000 runs (T = 5, 4 d.o.f.), fixed seeds.

    Threshold: the 1 - 1e-4 quantile, so a correct sampler fails with probability 1e-4
    over the choice of seeds (the seeds are fixed, so the test is deterministic).
    """
    X, y = _logistic_data(n=10, d=2)
    o = _oracle(LogisticLoss(), X, y)
    T, runs = 5, 2000
    counts = np.zeros(T)
    for seed in range(runs):
        res = noisy_gd(o, noise_multiplier=1.0, clip=1.0, steps=T, learning_rate=0.1,
                       n_samples=10, averaging="random", rng=np.random.default_rng(seed))
        counts[res.info["random_iterate"] - 1] += 1
    stat = float(np.sum((counts - runs / T) ** 2 / (runs / T)))
    assert stat < stats.chi2.ppf(1 - 1e-4, T - 1)


def test_memory_does_not_grow_with_the_number_of_steps():
    """The run keeps no per-step array: info holds scalars only, whatever T (a huge T is
    refused by nothing but time, so this checks the info of a moderate run)."""
    X, y = _logistic_data(n=10, d=2)
    o = _oracle(LogisticLoss(l2=0.1), X, y)
    for schedule, lr in (("constant", 0.1), ("inverse_t", None)):
        res = noisy_gd(o, noise_multiplier=1.0, clip=1.0, steps=500, learning_rate=lr,
                       n_samples=10, schedule=schedule, rng=np.random.default_rng(0))
        sizes = [np.size(v) for k, v in res.info.items() if k != "last_iterate"]
        assert max(sizes) == 1


def _one_hot_data(seed=3, n=400):
    rng = np.random.default_rng(seed)
    cats = rng.integers(0, 8, size=(n, 3))
    X = np.zeros((n, 24))
    for j in range(3):
        X[np.arange(n), 8 * j + cats[:, j]] = 1 / math.sqrt(3)
    y = np.where(X @ rng.normal(size=24) + 0.2 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sparse_storage_gives_the_same_result(momentum):
    import scipy.sparse as sp

    X, y = _one_hot_data()
    obj = LogisticLoss(l2=1e-3)
    kw = dict(noise_multiplier=2.0, clip=1.0, steps=30, learning_rate=1 / (400 * 0.5),
              n_samples=400, momentum=momentum)
    o_dense = _oracle(obj, X, y, sparse="never")
    o_auto = _oracle(obj, X, y, sparse="auto")
    o_given = _oracle(obj, sp.csr_matrix(X), y)
    assert o_auto.is_sparse and not o_dense.is_sparse and o_given.is_sparse
    dense = noisy_gd(o_dense, rng=np.random.default_rng(1), **kw)
    auto = noisy_gd(o_auto, rng=np.random.default_rng(1), **kw)
    given = noisy_gd(o_given, rng=np.random.default_rng(1), **kw)
    assert not any("sparse" in k for k in auto.info)  # a statistic of the data: never released
    np.testing.assert_allclose(auto.theta, dense.theta, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(given.theta, dense.theta, rtol=1e-10, atol=1e-12)
    # a dense-looking matrix stays dense under "auto"
    Xd, yd = _logistic_data(n=50)
    assert not _oracle(obj, Xd, yd).is_sparse
