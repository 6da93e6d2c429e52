"""ArrayOracle: the clipped gradient sum against an explicit per-example computation, the
per-row map against clip_rows, no copy of X, thread-count independence, overflow safety and
the rows_read counter."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from noisygd.algorithms.noisy_gd import noisy_gd
from noisygd.objectives import (
    HuberLoss,
    LogisticLoss,
    SquaredDistanceLoss,
    SquaredLoss,
)
from noisygd.objectives.nonconvex import SigmoidLoss
from noisygd.oracles import ArrayOracle, GradientOracle, clip_rows, row_scale


def _data(seed=0, n=2500, d=6, density=1.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.exp(rng.uniform(-1.5, 1.5, size=(n, 1)))
    if density < 1.0:
        X[rng.random((n, d)) > density] = 0.0
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return X, y


def _explicit(obj, Xm, y, theta, clip):
    """(n, p) per-example gradients r_i [x_i, 1], clipped one by one, then summed."""
    Xa = np.hstack([Xm, np.ones((Xm.shape[0], 1))]) if obj.fit_intercept else Xm
    G = obj.residual(Xa @ theta, y)[:, None] * Xa
    if clip is not None:
        norms = np.linalg.norm(G, axis=1)
        G = G * np.minimum(1.0, clip / np.maximum(norms, 1e-300))[:, None]
    return G


LOSSES = [
    ("logistic", lambda fi: LogisticLoss(l2=0.1, fit_intercept=fi)),
    ("huber", lambda fi: HuberLoss(threshold=0.5, fit_intercept=fi)),
    ("squared", lambda fi: SquaredLoss(fit_intercept=fi)),
    ("sigmoid", lambda fi: SigmoidLoss(fit_intercept=fi)),
]


@pytest.mark.parametrize("name,make", LOSSES)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("storage", ["dense", "csr"])
def test_clipped_sum_equals_explicit_per_example_computation(name, make, fit_intercept, storage):
    X, y = _data(1, density=0.3 if storage == "csr" else 1.0)
    obj = make(fit_intercept)
    B = 1.0
    oracle = ArrayOracle(obj, sp.csr_array(X) if storage == "csr" else X, y, row_norm_bound=B,
                         sparse="always" if storage == "csr" else "never")
    assert oracle.is_sparse == (storage == "csr")
    Xm = clip_rows(X, B)  # the explicit per-row map
    assert (np.linalg.norm(X, axis=1) > B).any() and (np.linalg.norm(X, axis=1) < B).any()
    yy = obj.check_targets(y)
    rng = np.random.default_rng(2)
    rows = rng.choice(X.shape[0], size=700, replace=True)  # repeats allowed, any order
    for _ in range(2):
        theta = rng.standard_normal(oracle.n_params)
        for clip in (None, 0.05, 0.7):
            G = _explicit(obj, Xm, yy, theta, clip)
            scale = np.abs(G).sum(axis=0).max()
            np.testing.assert_allclose(oracle.clipped_gradient_sum(theta, clip), G.sum(axis=0),
                                       rtol=0, atol=1e-12 * scale)
            np.testing.assert_allclose(oracle.clipped_gradient_sum(theta, clip, rows=rows),
                                       G[rows].sum(axis=0), rtol=0, atol=1e-12 * scale)
            contiguous = np.arange(300, 1900)
            np.testing.assert_allclose(oracle.clipped_gradient_sum(theta, clip, rows=contiguous),
                                       G[300:1900].sum(axis=0), rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(oracle.per_example_loss(theta), obj.per_example_loss(
            theta, Xm, yy), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(oracle.per_example_loss(theta, rows=rows),
                                   obj.per_example_loss(theta, Xm[rows], yy[rows]), rtol=1e-12,
                                   atol=1e-14)
        assert oracle.value(theta) == pytest.approx(obj.value(theta, Xm, yy), rel=1e-12)
        np.testing.assert_allclose(oracle.gradient(theta), obj.gradient(theta, Xm, yy),
                                   rtol=1e-10, atol=1e-13)
    assert np.array_equal(oracle.clipped_gradient_sum(theta, 1.0, rows=np.array([], int)),
                          np.zeros(oracle.n_params))


def test_generic_objective_is_served_on_mapped_rows():
    """A loss without a margin model (SquaredDistanceLoss) gets blocks of mapped rows."""
    X, y = _data(3, n=3000, d=4)
    obj = SquaredDistanceLoss(l2=0.2)
    oracle = ArrayOracle(obj, X, y, row_norm_bound=0.8)
    Xm = clip_rows(X, 0.8)
    theta = np.array([0.3, -0.1, 0.2, 0.0])
    for clip in (None, 0.5):
        np.testing.assert_allclose(oracle.clipped_gradient_sum(theta, clip),
                                   obj.clipped_gradient_sum(theta, Xm, y, clip), rtol=1e-12)
    np.testing.assert_allclose(oracle.per_example_loss(theta), obj.per_example_loss(theta, Xm, y))
    assert oracle.total_gradient_sensitivity() == 1.6  # exact S_g = 2B, forwarded
    assert oracle.quadratic_constant_hessian
    assert not oracle.is_sparse  # never stored as CSR: the loss does not declare sparse support
    o2 = ArrayOracle(obj, sp.csr_array(X), y, row_norm_bound=0.8)  # sparse input: dense blocks
    np.testing.assert_allclose(o2.clipped_gradient_sum(theta, 0.5),
                               oracle.clipped_gradient_sum(theta, 0.5), rtol=1e-12)
    with pytest.raises(TypeError, match="does not support sparse"):
        ArrayOracle(obj, X, y, row_norm_bound=0.8, sparse="always")


def test_row_map_equals_clip_rows_and_declared_facts_are_forwarded():
    X, y = _data(4)
    obj = LogisticLoss(l2=0.3)
    oracle = ArrayOracle(obj, X, y, row_norm_bound=1.5)
    Xm, ym = oracle.take(np.arange(X.shape[0]))
    np.testing.assert_array_equal(Xm, X * row_scale(X, 1.5)[:, None])  # s_i x_i exactly
    np.testing.assert_allclose(Xm, clip_rows(X, 1.5), rtol=1e-14, atol=0)  # up to ulp guard
    np.testing.assert_array_equal(ym, obj.check_targets(y))
    assert isinstance(oracle, GradientOracle)
    assert oracle.constants() == obj.constants(1.5)
    assert oracle.l2 == 0.3 and oracle.radius is None
    assert oracle.optimum_norm_bound() == obj.optimum_norm_bound()
    assert oracle.loss_at_zero_bound() == obj.loss_at_zero_bound()
    assert oracle.total_gradient_sensitivity() is None
    assert oracle.n_params == 7 and oracle.n_features == 6 and oracle.n_rows == X.shape[0]
    y2 = np.where(X[:, 0] > 0, 1.0, -1.0)
    other = oracle.with_targets(y2)
    fresh = ArrayOracle(obj, X, y2, row_norm_bound=1.5)
    th = np.linspace(-1, 1, 7)
    np.testing.assert_array_equal(other.clipped_gradient_sum(th, 0.3),
                                  fresh.clipped_gradient_sum(th, 0.3))
    assert other._X is oracle._X  # no new storage
    with pytest.raises(ValueError, match="y has 3"):
        oracle.with_targets(np.ones(3))
    theta, f = oracle.minimize()
    ref, f_ref = obj.minimize(clip_rows(X, 1.5), obj.check_targets(y))
    np.testing.assert_allclose(theta, ref, atol=1e-7)
    assert f == pytest.approx(f_ref, rel=1e-12)


def test_float64_c_contiguous_input_is_never_copied():
    """The oracle keeps a view of X, and a fit allocates O(n) vectors, not a copy of X."""
    rng = np.random.default_rng(5)
    n, d = 40_000, 100  # X is 32 MB, one O(n) vector 0.32 MB
    X = rng.standard_normal((n, d)) / 8.0
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    tracemalloc.start()
    try:
        oracle = ArrayOracle(LogisticLoss(l2=1e-3), X, y, row_norm_bound=1.0)
        noisy_gd(oracle, noise_multiplier=1.0, clip=1.0, steps=3, learning_rate=1e-4,
                 n_samples=n, rng=np.random.default_rng(0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.shares_memory(oracle._X, X)  # the oracle holds X itself (a view)
    assert peak < 0.25 * X.nbytes, peak  # no copy of X (nor of any large part of it)


@pytest.mark.parametrize("kind", [sp.csr_matrix, sp.csr_array])
def test_float64_csr_input_is_never_copied(kind):
    """Sparse X in canonical float64 CSR (matrix or array) is wrapped, not copied.

    X holds 2e6 nonzeros (24 MB); the oracle's own state is O(n) vectors (0.4 MB each) and
    one row block of temporaries, far below half of X.
    """
    rng = np.random.default_rng(3)
    n, d, k = 50_000, 2_000, 40
    indices = np.sort(rng.choice(d, size=(n, k)), axis=1).astype(np.int32).ravel()
    indptr = np.arange(0, n * k + 1, k, dtype=np.int32)
    X = kind(sp.csr_array((rng.random(n * k) / 8.0, indices, indptr), shape=(n, d)))
    X.sum_duplicates()
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    tracemalloc.start()
    try:
        oracle = ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0)
        oracle.clipped_gradient_sum(np.zeros(oracle.n_params), 1.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    for part in ("data", "indices", "indptr"):
        assert np.shares_memory(getattr(oracle._X, part), getattr(X, part)), part
    assert peak < 0.5 * (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes), peak


def test_result_does_not_depend_on_the_number_of_threads():
    """Fixed block partition, partial sums added in block order: bit-for-bit equal."""
    X, y = _data(6, n=40_000, d=30)  # several blocks
    Xs, _ = _data(6, n=40_000, d=30, density=0.1)
    rng = np.random.default_rng(0)
    rows = rng.choice(40_000, size=25_000, replace=False)
    for A, sparse in ((X, "never"), (sp.csr_array(Xs), "always")):
        results = []
        for k in (1, 2, 3, 5):
            oracle = ArrayOracle(LogisticLoss(l2=0.1), A, y, row_norm_bound=1.0,
                                 sparse=sparse, n_threads=k)
            theta = np.linspace(-1, 1, oracle.n_params)
            results.append((oracle.clipped_gradient_sum(theta, 0.3),
                            oracle.clipped_gradient_sum(theta, None, rows=rows),
                            oracle.per_example_loss(theta)))
        for r in results[1:]:
            for a, b in zip(results[0], r, strict=True):
                np.testing.assert_array_equal(a, b)
    fits = [noisy_gd(ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0, n_threads=k),
                     noise_multiplier=1.0, clip=1.0, steps=5, learning_rate=1e-4,
                     n_samples=40_000, rng=np.random.default_rng(3)).theta for k in (1, 2)]
    np.testing.assert_array_equal(fits[0], fits[1])  # same seed -> same model


@pytest.mark.parametrize("storage", ["dense", "csr"])
def test_overflow_prone_rows_stay_finite(storage):
    X, y = _data(7, n=600, d=3)
    X[10] = [1.3e154, -1.3e154, 2.0]
    X[400] = [1.5e308, 1.5e308, -1.5e308]
    X[401] = [-1.5e308, 0.0, 1.0]
    A = sp.csr_array(X) if storage == "csr" else X
    for obj in (LogisticLoss(l2=0.01), SquaredLoss(), HuberLoss()):
        oracle = ArrayOracle(obj, A, y, row_norm_bound=1.0,
                             sparse="always" if storage == "csr" else "never")
        Xm = clip_rows(X, 1.0)
        assert np.all(np.isfinite(Xm))
        theta = np.array([2.0, 1.0, -0.5, 0.3])
        yy = obj.check_targets(y)
        G = _explicit(obj, Xm, yy, theta, 0.5)
        np.testing.assert_allclose(oracle.clipped_gradient_sum(theta, 0.5), G.sum(axis=0),
                                   rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(oracle.clipped_gradient_sum(theta, 0.5, rows=np.array(
            [400, 3, 10, 401])), G[[400, 3, 10, 401]].sum(axis=0), rtol=1e-11, atol=1e-12)
        assert np.all(np.isfinite(oracle.per_example_loss(theta)))
        res = noisy_gd(oracle, noise_multiplier=1.0, clip=1.0, steps=20, learning_rate=1e-3,
                       n_samples=600, rng=np.random.default_rng(0))
        assert np.all(np.isfinite(res.theta))


def test_rows_read_counts_one_pass_per_full_call():
    X, y = _data(8, n=5000)
    oracle = ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0)
    assert oracle.rows_read == 0  # setup (one pass for the norms) is not a gradient call
    theta = np.zeros(7)
    oracle.clipped_gradient_sum(theta, 1.0)
    assert oracle.rows_read == 5000
    oracle.per_example_loss(theta)
    assert oracle.rows_read == 10_000
    oracle.clipped_gradient_sum(theta, 1.0, rows=np.arange(17))
    assert oracle.rows_read == 10_017
    noisy_gd(oracle, noise_multiplier=1.0, clip=1.0, steps=12, learning_rate=1e-3,
             n_samples=5000, rng=np.random.default_rng(0))
    assert oracle.rows_read == 10_017 + 12 * 5000  # exactly one read of X per step


def test_sparse_auto_rule_and_other_dtypes():
    rng = np.random.default_rng(9)
    n = 3000
    onehot = np.zeros((n, 20))
    onehot[np.arange(n), rng.integers(0, 20, n)] = 1.0
    y = np.where(rng.random(n) < 0.5, 1.0, 0.0)
    obj = LogisticLoss(l2=0.01)
    auto = ArrayOracle(obj, onehot, y, row_norm_bound=1.0)
    dense = ArrayOracle(obj, onehot, y, row_norm_bound=1.0, sparse="never")
    assert auto.is_sparse and not dense.is_sparse
    theta = rng.standard_normal(21)
    np.testing.assert_allclose(auto.clipped_gradient_sum(theta, 0.4),
                               dense.clipped_gradient_sum(theta, 0.4), rtol=1e-12)
    X, yb = _data(10, n=n)
    assert not ArrayOracle(obj, X, yb, row_norm_bound=1.0).is_sparse
    ref = ArrayOracle(obj, X.astype(np.float32).astype(np.float64), yb, row_norm_bound=1.0)
    f32 = ArrayOracle(obj, X.astype(np.float32), yb, row_norm_bound=1.0)
    np.testing.assert_allclose(f32.clipped_gradient_sum(theta[:7], 0.4),
                               ref.clipped_gradient_sum(theta[:7], 0.4), rtol=1e-12)
    Xi = rng.integers(-3, 4, size=(n, 6))
    np.testing.assert_allclose(
        ArrayOracle(obj, Xi, yb, row_norm_bound=2.0).clipped_gradient_sum(theta[:7], 0.4),
        ArrayOracle(obj, Xi.astype(float), yb, row_norm_bound=2.0).clipped_gradient_sum(
            theta[:7], 0.4), rtol=1e-12)


def test_validation_messages_show_no_data():
    X, y = _data(11, n=50, d=3)
    obj = LogisticLoss()
    Xn = X.copy()
    Xn[3, 1] = np.nan
    Xn[0, 0] = 98765.4321
    with pytest.raises(ValueError, match="NaN or infinite") as err:
        ArrayOracle(obj, Xn, y, row_norm_bound=1.0)
    assert "98765" not in str(err.value)
    Xs = sp.csr_array(X)
    Xs.data[0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        ArrayOracle(obj, Xs, y, row_norm_bound=1.0)
    with pytest.raises(ValueError, match="2-D"):
        ArrayOracle(obj, X[0], y, row_norm_bound=1.0)
    with pytest.raises(ValueError, match="at least one row"):
        ArrayOracle(obj, X[:0], y[:0], row_norm_bound=1.0)
    with pytest.raises(ValueError, match="real numbers"):
        ArrayOracle(obj, X.astype(complex), y, row_norm_bound=1.0)
    with pytest.raises(ValueError, match="X has 50 rows but y has 49"):
        ArrayOracle(obj, X, y[:49], row_norm_bound=1.0)
    with pytest.raises(ValueError, match="labels") as err:
        ArrayOracle(obj, X, np.where(y > 0, 1.0, 7.25), row_norm_bound=1.0)
    assert "7.25" not in str(err.value)
    with pytest.raises(ValueError, match="row_norm_bound"):
        ArrayOracle(obj, X, y, row_norm_bound=0.0)
    with pytest.raises(TypeError, match="row_norm_bound"):
        ArrayOracle(obj, X, y, row_norm_bound="1")
    with pytest.raises(ValueError, match="sparse must be one of"):
        ArrayOracle(obj, X, y, row_norm_bound=1.0, sparse="yes")
    with pytest.raises(TypeError, match="objective must be an Objective"):
        ArrayOracle("logistic", X, y, row_norm_bound=1.0)
    oracle = ArrayOracle(obj, X, y, row_norm_bound=1.0)
    with pytest.raises(ValueError, match="theta must have shape"):
        oracle.clipped_gradient_sum(np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="outside the rows held") as err:
        oracle.clipped_gradient_sum(np.zeros(4), 1.0, rows=np.array([0, 50]))
    assert "50" not in str(err.value)
    with pytest.raises(ValueError, match="integer row indices"):
        oracle.clipped_gradient_sum(np.zeros(4), 1.0, rows=np.array([0.5]))
    with pytest.raises(ValueError, match="clip must be positive"):
        oracle.clipped_gradient_sum(np.zeros(4), 0.0)


@pytest.mark.parametrize("intercept", [True, False])
def test_inverse_augmented_norms_closed_form(intercept):
    # 1 / ||[s_i x_i, kappa]||: ||x_i|| inside the ball, B outside, kappa for the intercept
    from noisygd.oracles.array import _inverse_augmented_norms

    norms = np.array([0.0, 0.5, 1.0, 3.0, 7.0])
    outside = np.flatnonzero(norms > 1.0)
    kappa = 0.5 if intercept else None
    with np.errstate(divide="ignore"):  # a zero row without intercept: inf
        expected = 1.0 / np.sqrt(np.minimum(norms, 1.0) ** 2 + (kappa or 0.0) ** 2)
    got = _inverse_augmented_norms(norms.copy(), outside, 1.0, kappa)
    np.testing.assert_allclose(got, expected, rtol=1e-15)


@pytest.mark.parametrize("storage", ["dense", "csr"])
@pytest.mark.parametrize("loss", ["logistic", "huber"])
def test_provably_inactive_clip_is_skipped_bit_for_bit(storage, loss):
    # clip >= sup|phi'| * max_i ||x~_i||: clipping changes no residual, so the oracle skips it
    # and returns exactly the unclipped sum; a clip just below that bound does clip
    from noisygd.objectives import HuberLoss, LogisticLoss

    rng = np.random.default_rng(7)
    X = rng.standard_normal((300, 6))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    if storage == "csr":
        X[np.abs(X) < 0.3] = 0.0
        X = sp.csr_array(X)
    obj = LogisticLoss() if loss == "logistic" else HuberLoss(threshold=0.5)
    y = np.where(rng.random(300) < 0.5, -1.0, 1.0) if loss == "logistic" else rng.random(300)
    oracle = ArrayOracle(obj, X, y, row_norm_bound=1.0)
    theta = rng.standard_normal(oracle.n_params) * 20.0  # large margins: residuals at the bound
    model = obj.margin_model()
    assert model.residual_bound == (1.0 if loss == "logistic" else 0.5)
    top = model.residual_bound / float(np.min(oracle._inv_aug))
    unclipped = oracle.clipped_gradient_sum(theta, None)
    assert np.array_equal(oracle.clipped_gradient_sum(theta, top * (1 + 1e-12)), unclipped)
    assert not np.array_equal(oracle.clipped_gradient_sum(theta, 0.5 * top), unclipped)
    z = np.array([-1e300, -50.0, 0.0, 50.0, 1e300])
    for label in (-1.0, 1.0):
        r = LogisticLoss().residual(z, np.full(5, label))
        assert np.all(np.abs(r) <= 1.0)


# ------------------------------------------- row sums taken by the construction's scan
@pytest.mark.parametrize("centred", [False, True])
def test_row_sums_from_the_scan_equal_the_oracle_pass(centred: bool) -> None:
    """``row_sums``: the pre-release sums taken by the construction's scan (no row read by
    ``bounded_row_sums``) equal those of the pass over ``X`` (to rounding: another order of
    summation), with a public centre, feature scale and rows outside the ball."""
    from noisygd.objectives.centred import CentredGLM

    rng = np.random.default_rng(7)
    X = rng.standard_normal((40_000, 6)) * rng.uniform(0.2, 2.0, size=(40_000, 1))
    y = np.where(rng.random(40_000) < 0.5, 1.0, -1.0)
    obj = LogisticLoss(l2=1e-3)
    if centred:
        obj = CentredGLM(obj, centre=rng.standard_normal(6) * 0.3, intercept_scale=0.7,
                         feature_scale=rng.uniform(0.5, 2.0, 6))
    plain = ArrayOracle(obj, X, y, row_norm_bound=1.5)
    summed = ArrayOracle(obj, X, y, row_norm_bound=1.5, row_sums=("rows", "absolute_rows"))
    want = plain.bounded_row_sums(2.0, absolute=True)
    assert plain.rows_read == X.shape[0]
    got = summed.bounded_row_sums(2.0, absolute=True)
    assert summed.rows_read == 0  # nothing read: the scan summed them
    np.testing.assert_allclose(got.rows, want.rows, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(got.absolute_rows, want.absolute_rows, rtol=1e-11)
    assert got.squared_norms == want.squared_norms
    assert (got.count, got.targets, got.squared_targets) == (
        want.count, want.targets, want.squared_targets)
    theta = rng.standard_normal(plain.n_params)  # the same oracle otherwise
    np.testing.assert_array_equal(summed.clipped_gradient_sum(theta, 1.0),
                                  plain.clipped_gradient_sum(theta, 1.0))


def test_a_closed_oracle_serves_nothing() -> None:
    rng = np.random.default_rng(8)
    X, y = rng.standard_normal((500, 4)) * 0.3, np.where(rng.random(500) < 0.5, 1.0, -1.0)
    oracle = ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0)
    other = oracle.with_targets(-y)
    oracle.close()
    for call in (lambda: oracle.clipped_gradient_sum(np.zeros(5), 1.0),
                 lambda: oracle.per_example_loss(np.zeros(5)),
                 lambda: oracle.clipped_curvature_sum(np.zeros(5), 1.0),
                 lambda: oracle.bounded_row_sums(), lambda: oracle.take(np.arange(3)),
                 lambda: oracle.with_targets(y)):
        with pytest.raises(RuntimeError, match="closed"):
            call()
    assert other.clipped_gradient_sum(np.zeros(5), 1.0).shape == (5,)  # its own arrays


@pytest.mark.parametrize("columns", [[0, 1, 5, 1], [0, -1, 0, 1]])
def test_a_csr_matrix_with_a_column_outside_its_shape_is_refused(columns):
    """SciPy builds a CSR matrix whose stored column indices lie outside its shape; the
    compiled gradient kernel reads the parameters by column index, so the oracle refuses it
    when it is built (it once read outside the parameter vector)."""
    X = sp.csr_matrix((np.full(4, 0.1), np.array(columns), np.array([0, 2, 3, 4])),
                      shape=(3, 2))
    with pytest.raises(ValueError, match=r"column index lies outside \[0, 2\)"):
        ArrayOracle(LogisticLoss(l2=0.1), X, np.array([1.0, -1.0, 1.0]), row_norm_bound=1.0)
