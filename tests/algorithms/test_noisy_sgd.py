"""NoisySGD (Lecture 12, eqs. 12.2-12.3): events, scaling, sampling and reproducibility."""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.accounting import (
    Gaussian,
    Neighbouring,
    PoissonSampled,
    SampledWithoutReplacement,
    SelfComposed,
    best,
)
from noisygd.algorithms.noisy_gd import noisy_gd
from noisygd.algorithms.noisy_sgd import noisy_sgd
from noisygd.objectives.glm import LogisticLoss, SquaredLoss
from noisygd.oracles import ArrayOracle


def _oracle(obj, X, y, bound=1.0):
    return ArrayOracle(obj, X, y, row_norm_bound=bound)

R1 = Neighbouring.REPLACE_ONE


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    n, d = 2000, 5
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w = np.array([3.0, -2.0, 1.0, 0.0, 0.5])
    y = np.where(X @ w + 0.2 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def test_events_follow_the_sampling(data) -> None:
    X, y = data
    n = len(y)
    obj = LogisticLoss()
    o = _oracle(obj, X, y)
    common = dict(noise_multiplier=1.3, clip=1.0, learning_rate=0.1, n_samples=n,
                  rng=np.random.default_rng(1))
    r = noisy_sgd(o, sampling="poisson", sampling_rate=0.05, epochs=2, **common)
    assert r.event == SelfComposed(PoissonSampled(0.05, Gaussian(1.3)), 40)
    assert r.n_iter == 40
    r = noisy_sgd(o, sampling="without_replacement", batch_size=100, steps=7, **common)
    assert r.event == SelfComposed(
        SampledWithoutReplacement(100, n, Gaussian(1.3, sensitivity=2.0, relation=R1)), 7
    )
    # shuffling into fixed batches is not Poisson: one Gaussian (replace-one) per epoch touched
    r = noisy_sgd(o, sampling="shuffle_fixed", batch_size=300, epochs=2.5, **common)
    per_epoch = math.ceil(n / 300)
    assert r.n_iter == math.ceil(2.5 * per_epoch)
    assert r.event == SelfComposed(Gaussian(1.3, sensitivity=2.0, relation=R1), 3)
    assert r.event.neighbouring is R1
    assert best(r.event, 1e-5).accountant in ("gdp", "pld")


def test_full_batch_limit_equals_noisy_gd(data) -> None:
    # gamma = 1 and "rate" normalisation is NoisyGD (12.1) with the same noise draws order
    X, y = data
    obj = LogisticLoss(l2=1e-3)
    o = _oracle(obj, X, y)
    kw = dict(noise_multiplier=1e-9, clip=1.0, learning_rate=1e-3, n_samples=len(y))
    a = noisy_sgd(o, sampling="poisson", sampling_rate=1.0, steps=30,
                  rng=np.random.default_rng(0), **kw)
    b = noisy_gd(o, steps=30, rng=np.random.default_rng(0), **kw)
    np.testing.assert_allclose(a.theta, b.theta, atol=1e-6)
    c = noisy_sgd(o, sampling="without_replacement", batch_size=len(y), steps=30,
                  rng=np.random.default_rng(0), **kw)
    np.testing.assert_allclose(c.theta, b.theta, atol=1e-6)


@pytest.mark.parametrize("normalize,scale", [("rate", 1.0), ("expected_batch", 1.0 / 400)])
def test_one_step_is_unbiased(normalize: str, scale: float) -> None:
    # E[theta_1] = theta_0 - eta * scale * grad of the clipped sum (12.2 is unbiased with 1/gamma).
    # 3000 one-step runs; each coordinate within 5 standard errors (false failure < 1e-5).
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3)) / 2
    y = X @ np.array([1.0, -1.0, 0.5]) + 0.1 * rng.normal(size=400)
    obj = SquaredLoss(fit_intercept=False)
    theta0 = np.array([0.2, 0.1, -0.3])
    full = obj.clipped_gradient_sum(theta0, X, y, 0.5)
    o = _oracle(obj, X, y, bound=10.0)
    eta = 0.01
    outs = np.array([
        noisy_sgd(o, noise_multiplier=0.5, clip=0.5, learning_rate=eta, n_samples=400,
                  sampling="poisson", sampling_rate=0.1, steps=1, normalize=normalize,
                  theta0=theta0, rng=np.random.default_rng(s)).theta
        for s in range(3000)
    ])
    expected = theta0 - eta * scale * full
    se = outs.std(axis=0) / math.sqrt(len(outs))
    assert np.all(np.abs(outs.mean(axis=0) - expected) < 5 * se)


def test_momentum_is_heavy_ball(data) -> None:
    X, y = data
    obj = LogisticLoss()
    o = _oracle(obj, X, y)
    eta, beta, T = 1e-3, 0.9, 5
    r = noisy_sgd(o, noise_multiplier=1e-12, clip=1.0, learning_rate=eta,
                  n_samples=len(y), sampling="poisson", sampling_rate=1.0, steps=T,
                  momentum=beta, rng=np.random.default_rng(0))
    theta, v = np.zeros(6), np.zeros(6)
    for _ in range(T):
        v = beta * v + obj.clipped_gradient_sum(theta, X, y, 1.0)
        theta = theta - eta * v
    np.testing.assert_allclose(r.theta, theta, atol=1e-8)


def test_empty_batches_and_reproducibility(data) -> None:
    X, y = data
    obj = LogisticLoss()
    kw = dict(noise_multiplier=1.0, clip=1.0, learning_rate=0.1, n_samples=len(y),
              sampling="poisson", sampling_rate=1e-4, steps=50)
    o = _oracle(obj, X[:10], y[:10])
    a = noisy_sgd(o, rng=np.random.default_rng(9), **kw)
    b = noisy_sgd(o, rng=np.random.default_rng(9), **kw)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert np.all(np.isfinite(a.theta))
    c = noisy_sgd(o, rng=np.random.default_rng(10), **kw)
    assert not np.array_equal(a.theta, c.theta)


def test_learns_with_private_noise(data) -> None:
    X, y = data
    obj = LogisticLoss(l2=1e-4)
    o = _oracle(obj, X, y)
    for sampling, kw in [("poisson", {"sampling_rate": 0.05}),
                         ("without_replacement", {"batch_size": 100}),
                         ("shuffle_fixed", {"batch_size": 100})]:
        r = noisy_sgd(o, noise_multiplier=1.0, clip=1.0, learning_rate=1.0,
                      n_samples=len(y), sampling=sampling, epochs=5, normalize="expected_batch",
                      momentum=0.5, averaging="uniform", rng=np.random.default_rng(4), **kw)
        acc = np.mean(np.sign(X @ r.theta[:-1] + r.theta[-1]) == y)
        assert acc > 0.9, sampling


def test_input_validation(data) -> None:
    X, y = data
    o = _oracle(LogisticLoss(), X, y)
    kw = dict(noise_multiplier=1.0, clip=1.0, learning_rate=0.1, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="exactly one of epochs and steps"):
        noisy_sgd(o, n_samples=len(y), sampling_rate=0.1, **kw)
    with pytest.raises(ValueError, match="sampling must be"):
        noisy_sgd(o, n_samples=len(y), sampling="bernoulli", sampling_rate=0.1,
                  steps=1, **kw)
    with pytest.raises(ValueError, match="population size is public"):
        noisy_sgd(o, n_samples=len(y) + 1, sampling="without_replacement",
                  batch_size=10, steps=1, **kw)
    with pytest.raises(ValueError, match="batch_size"):
        noisy_sgd(o, n_samples=len(y), sampling="shuffle_fixed", sampling_rate=0.1,
                  steps=1, **kw)
    with pytest.raises(ValueError, match="momentum"):
        noisy_sgd(o, n_samples=len(y), sampling_rate=0.1, steps=1, momentum=1.0, **kw)
    with pytest.raises(ValueError, match="sampling_rate must be in"):
        noisy_sgd(o, n_samples=len(y), sampling_rate=1.5, steps=1, **kw)
    with pytest.raises(TypeError, match="batch_size must be an integer"):
        noisy_sgd(o, n_samples=len(y), sampling="without_replacement", batch_size=10.0,
                  steps=1, **kw)
    with pytest.raises(TypeError, match="oracle must be a GradientOracle"):
        noisy_sgd(LogisticLoss(), n_samples=len(y), sampling_rate=0.1, steps=1, **kw)
