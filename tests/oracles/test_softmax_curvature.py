"""The softmax cross-entropy's curvature sums (``K`` margins: what ``method="newton"`` runs
on for a multinomial fit) against the definition, and their privacy-relevant bounds."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import scipy.sparse as sp

from noisygd.objectives.multinomial import MultinomialLogisticLoss, softmax
from noisygd.oracles.array import (
    SOFTMAX_CURVATURE_BOUND,
    SOFTMAX_SELF_CONCORDANCE,
    ArrayOracle,
    softmax_curvature_norms,
)

K = 3


def _data(n=120, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * 0.8
    X[rng.random((n, d)) < 0.3] = 0.0
    return X, rng.integers(0, K, n)


def _served(objective, X, B):
    """The served rows a_i = [f (s_i (x_i - c)), kappa], s_i the projection onto the ball of
    radius B of f (x_i - c), from the definition."""
    c = np.zeros(X.shape[1]) if objective.centre is None else objective.centre
    f = np.ones(X.shape[1]) if objective.feature_scale is None else objective.feature_scale
    rows = []
    for x in X:
        e = f * (x - c)
        norm = float(np.linalg.norm(e))
        if norm > B:
            e = e * (B / norm)
        rows.append(np.append(e, objective.intercept_scale) if objective.fit_intercept else e)
    return np.array(rows)


def _per_row(objective, X, theta, B, clip):
    """sum_i min(1, C_H / (||M_i||_F ||a_i||^2)) M_i (x) a_i a_i^T, M_i = diag(pi) - pi pi^T,
    row by row with explicit Kronecker products."""
    A = _served(objective, X, B)
    T = theta.reshape(objective.n_classes, -1)
    total = np.zeros((theta.size, theta.size))
    for a in A:
        pi = softmax((T @ a)[None, :])[0]
        M = np.diag(pi) - np.outer(pi, pi)
        term = np.kron(M, np.outer(a, a))
        norm = float(np.linalg.norm(term))
        if clip is not None and norm > clip:
            term *= clip / norm
        total += term
    return total


OBJECTIVES = [
    pytest.param(MultinomialLogisticLoss(K), id="plain"),
    pytest.param(MultinomialLogisticLoss(K, fit_intercept=False), id="no-intercept"),
    pytest.param(MultinomialLogisticLoss(K, centre=np.linspace(-0.3, 0.2, 4),
                                         intercept_scale=0.6,
                                         feature_scale=np.array([1.0, 2.0, 0.5, 1.5])),
                 id="centred-scaled"),
]


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("storage", ["dense", "csr"])
@pytest.mark.parametrize("B", [10.0, 1.0])  # every row inside; many rows projected
@pytest.mark.parametrize("clip", [None, 0.05])
def test_softmax_curvature_sum_equals_the_per_row_kronecker_sum(objective, storage, B, clip):
    X, y = _data()
    Xin = sp.csr_array(X) if storage == "csr" else X
    o = ArrayOracle(objective, Xin, y, row_norm_bound=B,
                    sparse="always" if storage == "csr" else "never")
    theta = np.random.default_rng(1).standard_normal(o.n_params)
    expected = _per_row(objective, X, theta, B, clip)
    H = o.clipped_curvature_sum(theta, clip)
    np.testing.assert_allclose(H, expected, rtol=1e-11, atol=1e-12)
    assert np.array_equal(H, H.T)
    np.testing.assert_allclose(o.clipped_curvature_diagonal(theta, clip), np.diag(expected),
                               rtol=1e-11, atol=1e-12)
    rows = np.array([5, 3, 100, 101, 17])
    np.testing.assert_allclose(o.clipped_curvature_sum(theta, clip, rows),
                               _per_row(objective, X[rows], theta, B, clip),
                               rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_unclipped_sum_is_the_hessian_of_the_loss(objective):
    """Independent of the formula: central differences of the oracle's (unclipped) gradient
    sum, an implementation that forms no curvature."""
    X, y = _data(n=60)
    o = ArrayOracle(objective, X, y, row_norm_bound=1.0)
    theta = np.random.default_rng(3).standard_normal(o.n_params)
    h = 1e-5
    numeric = np.empty((o.n_params, o.n_params))
    for j in range(o.n_params):
        e = np.zeros(o.n_params)
        e[j] = h
        numeric[:, j] = (o.clipped_gradient_sum(theta + e, None)
                         - o.clipped_gradient_sum(theta - e, None)) / (2 * h)
    np.testing.assert_allclose(o.clipped_curvature_sum(theta, None), numeric, atol=1e-7)


def test_curvature_norm_bound_is_a_half_and_attained():
    rng = np.random.default_rng(4)
    for k in (2, 3, 5, 10, 50):
        P = rng.dirichlet(np.full(k, 0.3), size=20_000)
        P = np.vstack([P, np.eye(k)[0], np.full(k, 1.0 / k)])
        norms = softmax_curvature_norms(P)
        direct = [np.linalg.norm(np.diag(p) - np.outer(p, p)) for p in P[:200]]
        np.testing.assert_allclose(norms[:200], direct, rtol=1e-12, atol=1e-15)
        assert norms.max() <= SOFTMAX_CURVATURE_BOUND
        half = np.zeros(k)
        half[:2] = 0.5
        assert softmax_curvature_norms(half[None, :])[0] == pytest.approx(0.5, abs=1e-15)


def test_smoothness_is_a_clip_no_row_of_the_domain_reaches():
    """C_H = beta = B~^2 / 2 (the objective's declared smoothness, the planner's default
    curvature clip): every row's term is at most that in Frobenius norm, so clipping there
    changes nothing."""
    X, y = _data(n=200)
    objective = MultinomialLogisticLoss(K)
    o = ArrayOracle(objective, X, y, row_norm_bound=1.0)
    beta = objective.constants(1.0).smoothness
    assert beta == pytest.approx(0.5 * (1.0 + 1.0))
    for seed in range(3):
        theta = np.random.default_rng(seed).standard_normal(o.n_params) * 3
        assert np.array_equal(o.clipped_curvature_sum(theta, beta),
                              o.clipped_curvature_sum(theta, None))


@pytest.mark.parametrize("clip", [0.02, 0.3])
def test_sensitivity_by_brute_force_under_both_relations(clip):
    """Removing any one row moves the clipped sum by at most C_H in Frobenius norm; replacing
    it by any other row, by at most sqrt(2) C_H (each term is PSD, so <A, B> >= 0)."""
    X, y = _data(n=25)
    objective = MultinomialLogisticLoss(K, feature_scale=np.array([1.0, 3.0, 0.5, 1.0]))
    theta = np.random.default_rng(5).standard_normal(objective.n_params(4)) * 2
    full = ArrayOracle(objective, X, y, row_norm_bound=1.0).clipped_curvature_sum(theta, clip)
    worst_remove = worst_replace = 0.0
    for i in range(25):
        keep = np.arange(25) != i
        less = ArrayOracle(objective, X[keep], y[keep], row_norm_bound=1.0)
        Hi = less.clipped_curvature_sum(theta, clip)
        worst_remove = max(worst_remove, float(np.linalg.norm(full - Hi)))
        for j in range(25):
            Xr, yr = X.copy(), y.copy()
            Xr[i], yr[i] = X[j] * 5.0, (y[j] + 1) % K
            other = ArrayOracle(objective, Xr, yr, row_norm_bound=1.0)
            diff = full - other.clipped_curvature_sum(theta, clip)
            worst_replace = max(worst_replace, float(np.linalg.norm(diff)))
    assert worst_remove <= clip * (1 + 1e-12)
    assert worst_replace <= math.sqrt(2) * clip * (1 + 1e-12)
    assert worst_remove > 0.5 * clip  # the clip binds: the bound is not vacuous here


def test_terms_are_positive_semidefinite_and_clipped():
    X, y = _data(n=40)
    o = ArrayOracle(MultinomialLogisticLoss(K), X, y, row_norm_bound=1.0)
    theta = np.zeros(o.n_params)  # pi uniform
    for i in range(40):
        term = o.clipped_curvature_sum(theta, 0.1, np.array([i]))
        assert np.linalg.norm(term) <= 0.1 * (1 + 1e-12)
        assert np.linalg.eigvalsh(term).min() >= -1e-14


def test_self_concordance_of_the_softmax_loss():
    """|D^3 l[Delta]| <= M ||Delta|| D^2 l[Delta] along random lines, M the oracle's
    constant; D^2 l = Var_pi(delta) in closed form, D^3 by central differences of it."""
    X, y = _data(n=30)
    objective = MultinomialLogisticLoss(K, intercept_scale=0.5)
    o = ArrayOracle(objective, X, y, row_norm_bound=1.5)
    M = o.self_concordance()
    assert M == pytest.approx(SOFTMAX_SELF_CONCORDANCE * math.hypot(1.5, 0.5))
    A = _served(objective, X, 1.5)
    rng = np.random.default_rng(6)
    worst = 0.0
    for _ in range(300):
        a = A[rng.integers(0, len(A))]
        T = rng.standard_normal((K, a.size)) * 3
        D = rng.standard_normal((K, a.size))

        def second(s, a=a, T=T, D=D):
            pi = softmax(((T + s * D) @ a)[None, :])[0]
            delta = D @ a
            return float(pi @ delta**2 - (pi @ delta) ** 2)

        h = 1e-4
        third = (second(h) - second(-h)) / (2 * h)
        worst = max(worst, abs(third) / (np.linalg.norm(D) * second(0.0) + 1e-300))
    assert worst <= M * (1 + 1e-4)
    assert worst > 0.2 * M  # and not far from sharp


def test_the_result_does_not_depend_on_the_threads_and_counts_its_rows():
    X, y = _data(n=30_000, d=5)
    objective = MultinomialLogisticLoss(4)
    theta = np.random.default_rng(2).standard_normal(objective.n_params(5))
    one = ArrayOracle(objective, X, y % 4, row_norm_bound=1.0, n_threads=1)
    three = ArrayOracle(objective, X, y % 4, row_norm_bound=1.0, n_threads=3)
    assert np.array_equal(one.clipped_curvature_sum(theta, 0.2),
                          three.clipped_curvature_sum(theta, 0.2))
    assert one.rows_read == 30_000


def test_a_k_margin_loss_other_than_softmax_refuses():
    class Other(MultinomialLogisticLoss):
        def margin_model(self):
            return dataclasses.replace(super().margin_model(), softmax=False)

    X, y = _data(n=30, d=3)
    o = ArrayOracle(Other(K), X, y, row_norm_bound=1.0)
    assert o.self_concordance() is None
    with pytest.raises(NotImplementedError, match="curvature"):
        o.clipped_curvature_sum(np.zeros(o.n_params), None)
    assert o.rows_read == 0
