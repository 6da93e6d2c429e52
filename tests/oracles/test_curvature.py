"""The oracle's curvature sums against a per-row computation, and their refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from noisygd.objectives.centred import CentredGLM
from noisygd.objectives.glm import HuberLoss, LogisticLoss, SquaredLoss
from noisygd.objectives.multinomial import MultinomialLogisticLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.oracles.base import GradientOracle


def _data(n=300, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * 0.7
    X[rng.random((n, d)) < 0.4] = 0.0
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return X, y


def _per_row(objective, X, y, theta, B, clip):
    """The sum of clip(phi''(z_i) a_i a_i^T) row by row, from the definition."""
    model = objective.margin_model()
    c = np.zeros(X.shape[1]) if model.centre is None else model.centre
    total = np.zeros((theta.size, theta.size))
    for x, yi in zip(X, objective.check_targets(y), strict=True):
        e = x - c
        top = float(np.max(np.abs(e)))
        norm = top * float(np.linalg.norm(e / top)) if top > 0 else 0.0  # no overflow
        if norm > B:
            e = (e / top) * (B / (norm / top))
        a = e if model.intercept_scale is None else np.append(e, model.intercept_scale)
        z = float(a @ theta)
        name = model.compiled_residual[0]
        if name == "logistic":
            h = math.exp(-abs(z)) / (1.0 + math.exp(-abs(z))) ** 2
        elif name == "squared":
            h = 1.0
        else:
            h = float(abs(z - yi) <= model.compiled_residual[1])
        if clip is not None and a @ a > 0:
            h = min(h, clip / float(a @ a))
        total += h * np.outer(a, a)
    return total


OBJECTIVES = [
    pytest.param(LogisticLoss(), id="logistic"),
    pytest.param(LogisticLoss(fit_intercept=False), id="logistic-no-intercept"),
    pytest.param(SquaredLoss(), id="squared"),
    pytest.param(HuberLoss(threshold=0.5), id="huber"),
    pytest.param(CentredGLM(LogisticLoss(), np.linspace(-0.2, 0.3, 6), 0.7), id="centred"),
]


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("storage", ["dense", "csr"])
@pytest.mark.parametrize("B", [10.0, 1.0])  # every row inside; many rows projected
@pytest.mark.parametrize("clip", [None, 0.05])
def test_curvature_sum_equals_the_per_row_sum(objective, storage, B, clip):
    X, y = _data()
    Xin = sp.csr_array(X) if storage == "csr" else X
    o = ArrayOracle(objective, Xin, y, row_norm_bound=B,
                    sparse="always" if storage == "csr" else "never")
    theta = np.random.default_rng(1).standard_normal(o.n_params)
    expected = _per_row(objective, X, y, theta, B, clip)
    H = o.clipped_curvature_sum(theta, clip)
    np.testing.assert_allclose(H, expected, rtol=1e-12, atol=1e-12)
    assert np.array_equal(H, H.T)
    np.testing.assert_allclose(o.clipped_curvature_diagonal(theta, clip), np.diag(expected),
                               rtol=1e-12, atol=1e-12)
    rows = np.array([5, 3, 200, 201, 202, 17])
    sub = _per_row(objective, X[rows], y[rows], theta, B, clip)
    np.testing.assert_allclose(o.clipped_curvature_sum(theta, clip, rows), sub,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(o.clipped_curvature_diagonal(theta, clip, rows), np.diag(sub),
                               rtol=1e-12, atol=1e-12)


def test_clipped_terms_have_frobenius_norm_at_most_the_clip():
    X, y = _data(n=50)
    o = ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0)
    theta = np.zeros(o.n_params)  # phi'' = 1/4, its maximum
    clip = 0.1
    for i in range(50):
        term = o.clipped_curvature_sum(theta, clip, np.array([i]))
        assert np.linalg.norm(term) <= clip * (1 + 1e-12)


def test_the_result_does_not_depend_on_the_threads():
    X, y = _data(n=20_000, d=5)
    theta = np.random.default_rng(2).standard_normal(6)
    one = ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0, n_threads=1)
    three = ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0, n_threads=3)
    assert np.array_equal(one.clipped_curvature_sum(theta, None),
                          three.clipped_curvature_sum(theta, None))
    assert one.rows_read == 20_000


def test_overflow_prone_rows_are_served_mapped():
    X, y = _data(n=40, d=3)
    X[7] = [1e160, -2e160, 0.0]  # squared norm above 1e290: evaluated on its mapped copy
    o = ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0)
    theta = np.array([0.3, -0.2, 0.1, 0.05])
    H = o.clipped_curvature_sum(theta, None)
    assert np.all(np.isfinite(H))
    np.testing.assert_allclose(H, _per_row(LogisticLoss(), X, y, theta, 1.0, None),
                               rtol=1e-12, atol=1e-12)


def test_self_concordance_constants():
    X, y = _data(n=20, d=3)
    assert ArrayOracle(LogisticLoss(), X, y, row_norm_bound=2.0).self_concordance() == \
        pytest.approx(math.sqrt(5.0))
    assert ArrayOracle(LogisticLoss(fit_intercept=False), X, y,
                       row_norm_bound=2.0).self_concordance() == 2.0
    assert ArrayOracle(SquaredLoss(), X, y, row_norm_bound=2.0).self_concordance() == 0.0
    assert ArrayOracle(HuberLoss(), X, y, row_norm_bound=2.0).self_concordance() is None


def test_losses_without_curvature_refuse():
    """Huber serves curvature sums but no self-concordance constant (its phi'' jumps); the
    K-margin refusal is tests/oracles/test_softmax_curvature.py's."""
    X, y = _data(n=30, d=3)
    o = ArrayOracle(HuberLoss(), X, y, row_norm_bound=1.0)
    assert o.self_concordance() is None
    labels = np.arange(30) % 3  # the softmax loss serves both (test_softmax_curvature.py)
    multi = ArrayOracle(MultinomialLogisticLoss(n_classes=3), X, labels, row_norm_bound=1.0)
    assert multi.self_concordance() == pytest.approx(math.sqrt(2.0) * math.sqrt(2.0))
    assert multi.clipped_curvature_sum(np.zeros(multi.n_params), None).shape == (12, 12)


def test_the_interface_default_refuses():
    class Bare(GradientOracle):
        n_params = 2
        n_rows = 1
        row_norm_bound = 1.0

        def per_example_loss(self, theta, rows=None):
            return np.zeros(1)

        def clipped_gradient_sum(self, theta, clip, rows=None):
            return np.zeros(2)

        def constants(self):
            raise NotImplementedError

    with pytest.raises(NotImplementedError, match="no curvature sums"):
        Bare().clipped_curvature_sum(np.zeros(2), None)
    with pytest.raises(NotImplementedError, match="no curvature sums"):
        Bare().clipped_curvature_diagonal(np.zeros(2), None)
    assert Bare().self_concordance() is None
