"""BST14 mini-batch baseline (Zhang et al. 2017, Section 4)."""

import math

import numpy as np
import pytest
from scipy import stats

from noisygd.accounting import best
from noisygd.algorithms.bassily import (
    bassily_noise_std,
    bassily_sgd,
    bassily_steps,
    sample_without_replacement,
)
from noisygd.objectives.glm import LogisticLoss
from noisygd.oracles import ArrayOracle


def test_noise_and_steps_closed_form():
    # BST14: sigma^2 = 32 L^2 n^2 log(n/delta) log(1/delta) / eps^2 on n * grad; mean scale / n / m.
    L, n, eps, delta, m = 1.5, 1000, 0.5, 1e-3, 50
    sigma = math.sqrt(32 * L**2 * n**2 * math.log(n / delta) * math.log(1 / delta)) / eps
    assert bassily_noise_std(L, n, eps, delta, m) == pytest.approx(sigma / n / m)
    assert bassily_steps(1000, 50) == 400
    assert bassily_steps(1001, 50) == math.ceil((1001 / 50) ** 2)


def test_sampler_distinct_and_uniform():
    rng = np.random.default_rng(0)
    idx = sample_without_replacement(rng, 10, 4, (20_000,))
    assert idx.shape == (20_000, 4)
    ordered = np.sort(idx, axis=1)
    assert np.all(ordered[:, 1:] != ordered[:, :-1])  # every draw: 4 distinct rows
    assert idx.min() >= 0 and idx.max() <= 9
    counts = np.bincount(idx.ravel(), minlength=10)
    # chi-square uniformity of marginal counts, alpha = 1e-3 (fixed seed).
    assert stats.chisquare(counts).pvalue > 1e-3


def test_run_event_and_determinism():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    obj = LogisticLoss(l2=0.1)
    o = ArrayOracle(obj, X, y, row_norm_bound=1.0)
    a = bassily_sgd(o, epsilon=1.0, delta=1e-3, radius=5.0, rng=np.random.default_rng(2))
    b = bassily_sgd(o, epsilon=1.0, delta=1e-3, radius=5.0, rng=np.random.default_rng(2))
    np.testing.assert_array_equal(a.theta, b.theta)
    assert a.n_iter == 36
    assert np.linalg.norm(a.theta) <= 5.0 + 1e-9
    ev = a.event
    assert ev.count == 36 and ev.event.sample_size == 50 and ev.event.population_size == 300
    # BST14's constants are loose: the run is far more private than the target.
    assert best(ev, 1e-3).epsilon < 1.0
