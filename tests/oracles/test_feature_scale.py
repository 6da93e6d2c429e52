"""A per-feature scale (``CentredGLM(feature_scale=f)``) behind the oracle: the same problem
as the rows ``f * x`` stored scaled, centred at ``f * c`` (issue 19, item 4).

The oracle never scales ``X``: it serves the rows :math:`[f\\odot(x_i - c), s]` by taking
the margins at :math:`f\\odot w` and multiplying the feature part of every sum by
:math:`f`. These tests compare each of its results with the oracle over the explicitly
rescaled matrix, whose rows are those served rows: equal up to rounding (1e-10 relative).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from noisygd.objectives import CentredGLM, LogisticLoss, SquaredLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.oracles.rows import row_scale


def _problem(sparse: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    n, d = 300, 6
    X = rng.uniform(0.0, 1.0, (n, d)) * np.geomspace(0.05, 2.0, d)
    X[rng.random((n, d)) < 0.4] = 0.0
    c = X.mean(axis=0)
    f = np.geomspace(4.0, 0.3, d)
    y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    return (sp.csr_matrix(X) if sparse else X), X, c, f, y


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("loss", [LogisticLoss, SquaredLoss])
def test_scaled_oracle_is_the_oracle_of_the_rescaled_rows(sparse, loss):
    Xin, X, c, f, y = _problem(sparse)
    if loss is SquaredLoss:
        y = (y + 1.0) / 4.0
    B, s = 0.3, 0.4  # a ball that projects some rescaled rows
    scaled = ArrayOracle(CentredGLM(loss(), c, s, feature_scale=f), Xin, y, row_norm_bound=B)
    Xf = X * f
    plain = ArrayOracle(CentredGLM(loss(), c * f, s), sp.csr_matrix(Xf) if sparse else Xf, y,
                        row_norm_bound=B)
    assert np.any(row_scale(Xf, B, centre=c * f) < 1.0)  # the projection is exercised
    np.testing.assert_allclose(row_scale(X, B, centre=c, feature_scale=f),
                               row_scale(Xf, B, centre=c * f), rtol=1e-12)
    rng = np.random.default_rng(1)
    for _ in range(3):
        v = rng.normal(size=X.shape[1] + 1)
        for clip in (None, 0.3):
            np.testing.assert_allclose(scaled.clipped_gradient_sum(v, clip),
                                       plain.clipped_gradient_sum(v, clip), rtol=1e-10,
                                       atol=1e-12)
            rows = np.array([3, 7, 11, 250])
            np.testing.assert_allclose(scaled.clipped_gradient_sum(v, clip, rows),
                                       plain.clipped_gradient_sum(v, clip, rows), rtol=1e-10,
                                       atol=1e-12)
        np.testing.assert_allclose(scaled.per_example_loss(v), plain.per_example_loss(v),
                                   rtol=1e-10)
        np.testing.assert_allclose(scaled.clipped_curvature_sum(v, 0.5),
                                   plain.clipped_curvature_sum(v, 0.5), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(scaled.clipped_curvature_diagonal(v, None),
                                   plain.clipped_curvature_diagonal(v, None), rtol=1e-10,
                                   atol=1e-12)
    a, b = scaled.bounded_row_sums(absolute=True), plain.bounded_row_sums(absolute=True)
    assert a.count == b.count
    np.testing.assert_allclose(a.rows, b.rows, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.squared_norms, b.squared_norms, rtol=1e-10)
    np.testing.assert_allclose(a.absolute_rows, b.absolute_rows, rtol=1e-9, atol=1e-12)


def test_absolute_rows_are_the_served_rows_squares_by_brute_force():
    Xin, X, c, f, y = _problem(False, seed=3)
    B = 0.5
    oracle = ArrayOracle(CentredGLM(LogisticLoss(), c, 1.0, feature_scale=f), Xin, y,
                         row_norm_bound=B)
    served = (X - c) * f
    norms = np.linalg.norm(served, axis=1)
    a = served * np.minimum(1.0, B / norms)[:, None] / B  # ||a_i|| <= 1
    for stored in (Xin, sp.csr_matrix(Xin)):
        oracle = ArrayOracle(CentredGLM(LogisticLoss(), c, 1.0, feature_scale=f), stored, y,
                             row_norm_bound=B)
        sums = oracle.bounded_row_sums(absolute=True)
        np.testing.assert_allclose(sums.absolute_rows, np.abs(a).sum(axis=0), rtol=1e-10)
        np.testing.assert_allclose(sums.rows, a.sum(axis=0), rtol=1e-10, atol=1e-12)
    assert np.all(np.linalg.norm(np.abs(a), axis=1) <= 1.0 + 1e-12)


def test_centred_glm_maps_back_to_the_users_coordinates():
    _, X, c, f, _ = _problem(False)
    obj = CentredGLM(LogisticLoss(), c, 0.7, feature_scale=f)
    v = np.random.default_rng(2).normal(size=X.shape[1] + 1)
    theta = obj.to_base(v)
    np.testing.assert_allclose(theta[:-1], f * v[:-1])
    np.testing.assert_allclose(X @ theta[:-1] + theta[-1],
                               ((X - c) * f) @ v[:-1] + 0.7 * v[-1], rtol=1e-12)
    np.testing.assert_allclose(obj.from_base(theta), v, rtol=1e-12)
    with pytest.raises(ValueError, match="feature_scale"):
        CentredGLM(LogisticLoss(), c, 0.7, feature_scale=-f)
