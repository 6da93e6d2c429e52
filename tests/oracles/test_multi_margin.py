"""ArrayOracle's K-margin path (MultinomialLogisticLoss): the clipped gradient sum and the
losses against an explicit (n, K, p) per-example computation, dense and CSR, with and without
an intercept, with a centre and a per-feature scale, over row subsets, clipping active;
thread-count independence, overflow safety, one read of X per call and no copy of X."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from noisygd.algorithms.noisy_gd import noisy_gd
from noisygd.objectives import MultinomialLogisticLoss
from noisygd.objectives.multinomial import MultiMarginModel
from noisygd.oracles import ArrayOracle


def _data(seed=0, n=2500, d=6, K=4, density=1.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.exp(rng.uniform(-1.5, 1.5, size=(n, 1)))
    if density < 1.0:
        X[rng.random((n, d)) > density] = 0.0
    return X, rng.integers(0, K, size=n)


def _mapped_augmented(obj, X, B):
    """[s_i f (x_i - c), kappa] row by row, s_i = min(1, B / ||f (x_i - c)||) (the explicit
    map; f the objective's feature scale, ones when None)."""
    D = X - (0.0 if obj.centre is None else obj.centre)
    if obj.feature_scale is not None:
        D = D * obj.feature_scale
    norms = np.linalg.norm(D, axis=1)
    s = np.ones_like(norms)
    s[norms > B] = B / norms[norms > B]
    D = D * s[:, None]
    if obj.fit_intercept:
        D = np.hstack([D, np.full((X.shape[0], 1), obj.intercept_scale)])
    return D


def _explicit(obj, Xa, y, theta, clip):
    """Per-example gradients (pi_i - e_{y_i}) x~_i^T as an (n, K, p) tensor, each clipped to
    Frobenius norm `clip`; and the per-example losses, by logsumexp written out."""
    K = obj.n_classes
    Z = Xa @ theta.reshape(K, -1).T
    M = Z.max(axis=1, keepdims=True)
    P = np.exp(Z - M)
    P /= P.sum(axis=1, keepdims=True)
    P[np.arange(len(y)), y] -= 1.0
    G = P[:, :, None] * Xa[:, None, :]
    if clip is not None:
        norms = np.sqrt((G * G).sum(axis=(1, 2)))
        G = G * np.minimum(1.0, clip / np.maximum(norms, 1e-300))[:, None, None]
    losses = (M[:, 0] + np.log(np.exp(Z - M).sum(axis=1))) - Z[np.arange(len(y)), y]
    return G.reshape(len(y), -1), losses


OBJECTIVES = [
    ("intercept", lambda d: MultinomialLogisticLoss(4, l2=0.1)),
    ("no-intercept", lambda d: MultinomialLogisticLoss(4, fit_intercept=False)),
    ("centred", lambda d: MultinomialLogisticLoss(
        4, intercept_scale=0.4, centre=np.linspace(-0.3, 0.3, d))),
    ("scaled", lambda d: MultinomialLogisticLoss(
        4, intercept_scale=0.4, centre=np.linspace(-0.3, 0.3, d),
        feature_scale=np.geomspace(0.05, 20.0, d))),
    ("scaled-no-intercept", lambda d: MultinomialLogisticLoss(
        4, fit_intercept=False, feature_scale=np.geomspace(20.0, 0.05, d))),
]


@pytest.mark.parametrize("name,make", OBJECTIVES)
@pytest.mark.parametrize("storage", ["dense", "csr"])
def test_clipped_sum_and_losses_equal_explicit_per_example_computation(name, make, storage):
    X, y = _data(1, density=0.3 if storage == "csr" else 1.0)
    obj = make(X.shape[1])
    assert isinstance(obj.margin_model(), MultiMarginModel)
    B = 1.0
    oracle = ArrayOracle(obj, sp.csr_array(X) if storage == "csr" else X, y, row_norm_bound=B,
                         sparse="always" if storage == "csr" else "never")
    assert oracle.is_sparse == (storage == "csr")
    assert oracle.n_params == 4 * (X.shape[1] + int(obj.fit_intercept))
    Xa = _mapped_augmented(obj, X, B)
    rng = np.random.default_rng(2)
    rows = rng.choice(X.shape[0], size=700, replace=True)  # repeats allowed, any order
    few = rng.choice(X.shape[0], size=9, replace=False)  # the gathered small-batch path
    contiguous = np.arange(300, 1900)
    for _ in range(2):
        theta = 2.0 * rng.standard_normal(oracle.n_params)
        for clip in (None, 0.05, 0.7):
            G, losses = _explicit(obj, Xa, y, theta, clip)
            if clip == 0.7:  # clipping active for some rows, inactive for others
                full, _ = _explicit(obj, Xa, y, theta, None)
                norms = np.linalg.norm(full, axis=1)
                assert (norms > clip).any() and (norms < clip).any()
            scale = np.abs(G).sum(axis=0).max()
            for sel in (None, rows, few, contiguous):
                want = G.sum(axis=0) if sel is None else G[sel].sum(axis=0)
                np.testing.assert_allclose(oracle.clipped_gradient_sum(theta, clip, rows=sel),
                                           want, rtol=0, atol=1e-12 * scale)
        for sel in (None, rows, few, contiguous):
            want = losses if sel is None else losses[sel]
            np.testing.assert_allclose(oracle.per_example_loss(theta, rows=sel), want,
                                       rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name,make", OBJECTIVES)
def test_objective_array_methods_agree_with_the_oracle_on_mapped_rows(name, make):
    X, y = _data(4, n=800, density=0.5)
    obj = make(X.shape[1])
    B = 1.5
    oracle = ArrayOracle(obj, X, y, row_norm_bound=B)
    Xa = _mapped_augmented(obj, X, B)
    f = 1.0 if obj.feature_scale is None else obj.feature_scale
    Xm = Xa[:, :X.shape[1]] / f + (0.0 if obj.centre is None else obj.centre)  # c + s (x - c)
    theta = np.random.default_rng(0).standard_normal(oracle.n_params)
    for clip in (None, 0.2):
        want = oracle.clipped_gradient_sum(theta, clip)
        for A in (Xm, sp.csr_array(Xm)):
            np.testing.assert_allclose(obj.clipped_gradient_sum(theta, A, y, clip), want,
                                       rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(obj.per_example_loss(theta, Xm, y), oracle.per_example_loss(theta),
                               rtol=1e-12, atol=1e-13)
    assert obj.value(theta, Xm, y) == pytest.approx(oracle.value(theta), rel=1e-12)


def test_result_does_not_depend_on_the_number_of_threads():
    """Fixed block partition, partial sums added in block order: bit-for-bit equal."""
    n = 30_000
    X, y = _data(6, n=n, d=40, K=5)  # 40 columns: several row blocks
    Xs, _ = _data(6, n=n, d=40, K=5, density=0.5)
    rows = np.random.default_rng(0).choice(n, size=20_000, replace=False)
    obj = MultinomialLogisticLoss(5, l2=0.1, intercept_scale=0.5, centre=np.full(40, 0.01))
    for A, sparse in ((X, "never"), (sp.csr_array(Xs), "always")):
        results = []
        for k in (1, 2, 3):
            oracle = ArrayOracle(obj, A, y, row_norm_bound=1.0, sparse=sparse, n_threads=k)
            assert len(oracle._blocks) > 3
            theta = np.linspace(-1, 1, oracle.n_params)
            results.append((oracle.clipped_gradient_sum(theta, 0.3),
                            oracle.clipped_gradient_sum(theta, None, rows=rows),
                            oracle.per_example_loss(theta)))
        for r in results[1:]:
            for a, b in zip(results[0], r, strict=True):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("storage", ["dense", "csr"])
def test_overflow_prone_rows_stay_finite(storage):
    X, y = _data(7, n=600, d=3, K=3)
    X[10] = [1.3e154, -1.3e154, 2.0]
    X[400] = [1.5e308, 1.5e308, -1.5e308]
    X[401] = [-1.5e308, 0.0, 1.0]
    A = sp.csr_array(X) if storage == "csr" else X
    obj = MultinomialLogisticLoss(3, l2=0.01)
    oracle = ArrayOracle(obj, A, y, row_norm_bound=1.0,
                         sparse="always" if storage == "csr" else "never")
    theta = np.linspace(-2.0, 2.0, oracle.n_params)
    # the explicit map, overflow-free: divide by the row's max-abs first
    m = np.abs(X).max(axis=1, keepdims=True)
    unit = X / m
    Xm = unit * np.minimum(m, 1.0 / np.linalg.norm(unit, axis=1, keepdims=True))
    Xa = np.hstack([Xm, np.ones((600, 1))])
    assert np.all(np.isfinite(Xa)) and np.all(np.linalg.norm(Xm, axis=1) <= 1.0 + 1e-12)
    G, losses = _explicit(obj, Xa, y, theta, 0.5)
    np.testing.assert_allclose(oracle.clipped_gradient_sum(theta, 0.5), G.sum(axis=0),
                               rtol=1e-11, atol=1e-12)
    sel = np.array([400, 3, 10, 401])
    np.testing.assert_allclose(oracle.clipped_gradient_sum(theta, 0.5, rows=sel),
                               G[sel].sum(axis=0), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(oracle.per_example_loss(theta), losses, rtol=1e-11, atol=1e-12)
    res = noisy_gd(oracle, noise_multiplier=1.0, clip=1.0, steps=20, learning_rate=1e-3,
                   n_samples=600, rng=np.random.default_rng(0))
    assert np.all(np.isfinite(res.theta))


def test_extreme_margins_give_finite_losses_and_exact_residuals():
    """Margins of 1e5 (exp overflows without the max shift): exact, finite losses and a
    finite clipped sum."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    y = np.array([0, 2, 1])
    obj = MultinomialLogisticLoss(3, fit_intercept=False)
    oracle = ArrayOracle(obj, X, y, row_norm_bound=1.0)
    theta = obj.from_coefficients(np.array([[1e5, 0.0], [0.0, 1e5], [-1e5, 0.0]]))
    loss = oracle.per_example_loss(theta)
    assert np.all(np.isfinite(loss))
    assert loss[0] == 0.0 and loss[1] == pytest.approx(1e5, rel=1e-12)
    g = oracle.clipped_gradient_sum(theta, 1.0)
    assert np.all(np.isfinite(g))
    assert np.linalg.norm(g) <= 3.0 + 1e-12  # three rows, each clipped to norm 1


def test_rows_read_counts_one_pass_per_full_call():
    X, y = _data(8, n=5000)
    oracle = ArrayOracle(MultinomialLogisticLoss(4), X, y, row_norm_bound=1.0)
    assert oracle.rows_read == 0
    theta = np.zeros(oracle.n_params)
    oracle.clipped_gradient_sum(theta, 1.0)
    assert oracle.rows_read == 5000
    oracle.per_example_loss(theta)
    assert oracle.rows_read == 10_000
    noisy_gd(oracle, noise_multiplier=1.0, clip=1.0, steps=12, learning_rate=1e-3,
             n_samples=5000, rng=np.random.default_rng(0))
    assert oracle.rows_read == 10_000 + 12 * 5000  # exactly one read of X per step


@pytest.mark.parametrize("storage", ["dense", "csr"])
def test_x_is_never_copied(storage):
    """The oracle keeps X itself and a fit allocates row-block temporaries, not a copy."""
    rng = np.random.default_rng(5)
    n, d, K = 40_000, 100, 10
    if storage == "dense":
        X = rng.standard_normal((n, d)) / 8.0  # 32 MB
        size = X.nbytes
    else:  # 2e6 nonzeros, 24 MB (row-block temporaries are a few MB: X must be larger)
        n, d, k = 50_000, 2_000, 40
        indices = np.sort(rng.choice(d, size=(n, k)), axis=1).astype(np.int32).ravel()
        indptr = np.arange(0, n * k + 1, k, dtype=np.int32)
        X = sp.csr_array((rng.random(n * k) / 8.0, indices, indptr), shape=(n, d))
        X.sum_duplicates()
        size = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    y = rng.integers(0, K, size=n)
    tracemalloc.start()
    try:
        oracle = ArrayOracle(MultinomialLogisticLoss(K, l2=1e-3), X, y, row_norm_bound=1.0,
                             sparse="never" if storage == "dense" else "always")
        noisy_gd(oracle, noise_multiplier=1.0, clip=1.0, steps=2, learning_rate=1e-4,
                 n_samples=n, rng=np.random.default_rng(0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    if storage == "dense":
        assert np.shares_memory(oracle._X, X)
    else:
        assert np.shares_memory(oracle._X.data, X.data)
    assert peak < 0.5 * size, peak
