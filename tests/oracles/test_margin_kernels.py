"""The compiled margin kernel (``noisygd.oracles._margin_kernels_c``) against NumPy/SciPy.

Every case compares ``ArrayOracle.clipped_gradient_sum`` over all rows computed by the
compiled kernel, on CSR and on dense storage, with the same oracle's NumPy/SciPy path
(``_kernel`` set to None: SciPy's ``csr_matvec``/``csc_matvec`` or BLAS, and NumPy's
residuals). They differ only in rounding (the dense margins' summation order, and the
logistic residual ``-y/(1 + exp(yz))`` in C against NumPy's ``tanh`` form), so the
tolerance is a relative 1e-12 of the gradient's largest entry.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from noisygd.objectives.centred import CentredGLM
from noisygd.objectives.glm import HuberLoss, LogisticLoss, SquaredLoss
from noisygd.objectives.multinomial import MultinomialLogisticLoss
from noisygd.oracles import array as array_module
from noisygd.oracles.array import ArrayOracle

pytestmark = pytest.mark.skipif(
    array_module._margin_blocks is None,
    reason="noisygd.oracles._margin_kernels_c was not built (no C compiler at install)")


def _problem(seed: int = 0, n: int = 3000, d: int = 200, density: float = 0.05):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=seed, format="csr") * 3.0
    return X.tocsr(), rng.integers(0, 2, n), rng.standard_normal(n) * 2.0, rng


def _scipy_path(oracle: ArrayOracle, theta: np.ndarray, clip: float | None) -> np.ndarray:
    kernel, oracle._kernel = oracle._kernel, None
    try:
        return oracle.clipped_gradient_sum(theta, clip)
    finally:
        oracle._kernel = kernel


def _close(a: np.ndarray, b: np.ndarray) -> None:
    scale = max(float(np.abs(b).max()), 1e-300)
    assert float(np.abs(a - b).max()) <= 1e-12 * scale


LOSSES = [
    pytest.param(lambda: LogisticLoss(), "binary", id="logistic"),
    pytest.param(lambda: LogisticLoss(fit_intercept=False), "binary", id="logistic-no-intercept"),
    pytest.param(lambda: SquaredLoss(), "real", id="squared"),
    pytest.param(lambda: HuberLoss(threshold=0.7), "real", id="huber"),
]


@pytest.mark.parametrize(("make", "targets"), LOSSES)
@pytest.mark.parametrize("bound", [100.0, 0.5], ids=["rows-inside", "rows-projected"])
@pytest.mark.parametrize("clip", [None, 0.05, 1e6], ids=["no-clip", "clip-active", "clip-wide"])
def test_compiled_kernel_matches_scipy_and_dense(make, targets, bound, clip):
    X, yb, yr, rng = _problem()
    y = yb if targets == "binary" else yr
    oracle = ArrayOracle(make(), X, y, row_norm_bound=bound)
    dense = ArrayOracle(make(), X.toarray(), y, row_norm_bound=bound, sparse="never")
    assert oracle._kernel[2] == 4 and dense._kernel[2] == 0  # CSR int32, dense
    for _ in range(3):
        theta = rng.standard_normal(oracle.n_params)
        got = oracle.clipped_gradient_sum(theta, clip)
        _close(got, _scipy_path(oracle, theta, clip))
        _close(got, dense.clipped_gradient_sum(theta, clip))
        _close(dense.clipped_gradient_sum(theta, clip), _scipy_path(dense, theta, clip))


def test_compiled_kernel_with_public_centre():
    X, yb, _, rng = _problem(seed=1)
    centre = rng.uniform(0.0, 0.5, X.shape[1])
    obj = CentredGLM(LogisticLoss(), centre=centre, intercept_scale=0.4)
    for A in (X, X.toarray()):
        oracle = ArrayOracle(obj, A, yb, row_norm_bound=2.0, sparse="never" if A is not X
                             else "auto")
        assert oracle._kernel is not None
        theta = rng.standard_normal(oracle.n_params)
        for clip in (None, 0.1):
            _close(oracle.clipped_gradient_sum(theta, clip), _scipy_path(oracle, theta, clip))


def test_compiled_kernel_int64_indices():
    X, _, yr, rng = _problem(seed=2)
    X64 = sp.csr_array((X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)),
                       shape=X.shape)
    oracle = ArrayOracle(SquaredLoss(), X64, yr, row_norm_bound=1.0)
    assert oracle._kernel is not None and oracle._kernel[2] == 8
    ref = ArrayOracle(SquaredLoss(), X, yr, row_norm_bound=1.0)
    theta = rng.standard_normal(oracle.n_params)
    assert np.array_equal(oracle.clipped_gradient_sum(theta, 0.3),
                          ref.clipped_gradient_sum(theta, 0.3))


@pytest.mark.parametrize("storage", ["csr", "dense"])
def test_compiled_kernel_does_not_depend_on_threads(storage):
    X, yb, _, rng = _problem(seed=3, n=40_000, d=500, density=0.01)
    if storage == "dense":
        X = X[:12_000].toarray()  # 48 MB: several dense blocks
        yb = yb[:12_000]
    mode = "never" if storage == "dense" else "auto"
    one = ArrayOracle(LogisticLoss(), X, yb, row_norm_bound=1.0, n_threads=1, sparse=mode)
    two = ArrayOracle(LogisticLoss(), X, yb, row_norm_bound=1.0, n_threads=2, sparse=mode)
    assert one._kernel is not None
    assert len(one._blocks) > 1  # several blocks, so threads could change the order
    theta = rng.standard_normal(one.n_params)
    for clip in (None, 0.2):
        assert np.array_equal(one.clipped_gradient_sum(theta, clip),
                              two.clipped_gradient_sum(theta, clip))


def test_kernel_not_used_where_it_does_not_apply():
    X, yb, _, _ = _problem(seed=4)
    single = ArrayOracle(LogisticLoss(), X.toarray().astype(np.float32), yb,
                         row_norm_bound=1.0, sparse="never")
    assert single._kernel is None  # float32 rows: converted block by block, NumPy path
    fortran = ArrayOracle(LogisticLoss(), np.asfortranarray(X.toarray()), yb,
                          row_norm_bound=1.0, sparse="never")
    assert fortran._kernel is None
    multi = ArrayOracle(MultinomialLogisticLoss(n_classes=3), X,
                        np.arange(X.shape[0]) % 3, row_norm_bound=1.0)
    assert multi._kernel is None  # K margins: the matrix path


def test_subsets_of_rows_use_the_scipy_path_and_agree(monkeypatch):
    """A call over all rows runs the compiled kernel; the same rows given as ``rows`` never
    call it (the SciPy path), and the two sums agree."""
    X, yb, _, rng = _problem(seed=5)
    oracle = ArrayOracle(LogisticLoss(), X, yb, row_norm_bound=1.0)
    theta = rng.standard_normal(oracle.n_params)
    rows = np.arange(X.shape[0])
    calls = []
    kernel = array_module._margin_blocks

    def counting(*args):
        calls.append(1)
        return kernel(*args)

    monkeypatch.setattr(array_module, "_margin_blocks", counting)
    subset = oracle.clipped_gradient_sum(theta, 0.1, rows=rows)
    assert calls == []
    whole = oracle.clipped_gradient_sum(theta, 0.1)
    assert calls  # the compiled kernel ran
    _close(subset, whole)


def test_margin_blocks_refuses_short_buffers():
    X, _, yr, _ = _problem(seed=6, n=100, d=20)
    starts = np.array([0, 100], dtype=np.int64)
    G, rsum, srsum = np.empty((1, 20)), np.empty(1), np.empty(1)
    w = np.zeros(20)
    args = [1, 0.0, 4, X.indptr, X.indices, X.data, 100, yr, False, None, None, None, w, 0.0,
            0.0, 0.0, starts, 0, 1, G, rsum, srsum]
    array_module._margin_blocks(*args)  # well-formed: runs
    bad_y = list(args)
    bad_y[7] = yr[:50]
    with pytest.raises(ValueError, match="y holds"):
        array_module._margin_blocks(*bad_y)
    bad_range = list(args)
    bad_range[18] = 2
    with pytest.raises(ValueError, match="block range"):
        array_module._margin_blocks(*bad_range)
    bad_kind = list(args)
    bad_kind[0] = 7
    with pytest.raises(ValueError, match="loss kind"):
        array_module._margin_blocks(*bad_kind)
    int8_squared = list(args)
    int8_squared[7], int8_squared[8] = np.ones(100, dtype=np.int8), True
    with pytest.raises(ValueError, match="int8 labels"):
        array_module._margin_blocks(*int8_squared)
    short_ptr = list(args)
    short_ptr[3] = X.indptr[:50]
    with pytest.raises(ValueError, match="indptr holds"):
        array_module._margin_blocks(*short_ptr)
    outside = list(args)
    outside[3] = X.indptr + 1  # the last row would end past data
    with pytest.raises(ValueError, match="outside data"):
        array_module._margin_blocks(*outside)
    frozen = np.empty((1, 20))
    frozen.flags.writeable = False
    read_only = list(args)
    read_only[19] = frozen
    with pytest.raises(ValueError, match="writable"):
        array_module._margin_blocks(*read_only)
    dense = [1, 0.0, 0, X.toarray()[:60], None, None, 100, yr, False, None, None, None, w,
             0.0, 0.0, 0.0, starts, 0, 1, G, rsum, srsum]
    with pytest.raises(ValueError, match="X holds"):  # 60 rows where 100 are declared
        array_module._margin_blocks(*dense)
    # the sparse scale factors: sorted rows inside [0, n), as many factors, both or neither
    for rows, values, match in (
        (np.array([3, 3], dtype=np.int64), np.ones(2), "increase strictly"),
        (np.array([5, 2], dtype=np.int64), np.ones(2), "increase strictly"),
        (np.array([100], dtype=np.int64), np.ones(1), "increase strictly"),
        (np.array([-1], dtype=np.int64), np.ones(1), "increase strictly"),
        (np.array([1, 2], dtype=np.int64), np.ones(1), "scale_values holds"),
    ):
        scaled = list(args)
        scaled[9], scaled[10] = rows, values
        with pytest.raises(ValueError, match=match):
            array_module._margin_blocks(*scaled)
    half = list(args)
    half[9] = np.array([1], dtype=np.int64)
    with pytest.raises(TypeError, match="both or neither"):
        array_module._margin_blocks(*half)


@pytest.mark.parametrize("layout", ["csr", "dense"])
def test_sparse_scale_factors_equal_dense_ones_bit_for_bit(layout):
    """The kernel's sparse factors (rows outside the ball and their s_i) against the same
    rows pre-multiplied: the margins s_i <x_i, w> and the sums G = sum s_i r_i x_i agree with
    a NumPy evaluation, and a block boundary inside the scaled rows changes nothing."""
    X, _, yr, _ = _problem(seed=7, n=700, d=20)
    A = X if layout == "csr" else np.ascontiguousarray(X.toarray())
    rng = np.random.default_rng(3)
    rows = np.sort(rng.choice(700, size=90, replace=False)).astype(np.int64)
    values = rng.uniform(0.2, 0.9, size=rows.size)
    w = rng.standard_normal(20)
    s = np.ones(700)
    s[rows] = values
    parts = (A.indptr, A.indices, A.data) if layout == "csr" else (A, None, None)
    code = 4 if layout == "csr" else 0
    results = []
    for starts in (np.array([0, 700], dtype=np.int64),
                   np.array([0, 257, 300, 700], dtype=np.int64)):
        k = starts.size - 1
        G, rsum, srsum = np.empty((k, 20)), np.empty(k), np.empty(k)
        array_module._margin_blocks(1, 0.0, code, *parts, 700, yr, False, rows, values, None,
                                    w, 0.0, 0.0, 0.0, starts, 0, k, G, rsum, srsum)
        results.append((G.sum(axis=0), rsum.sum(), srsum.sum()))
    dense = X.toarray()
    r = s * (dense @ w) - yr  # squared loss: r_i = z_i - y_i, z_i = s_i <x_i, w>
    np.testing.assert_allclose(results[0][0], dense.T @ (s * r), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(results[0][1], r.sum(), rtol=1e-12)
    np.testing.assert_allclose(results[0][2], (s * r).sum(), rtol=1e-12)
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12, atol=1e-12)


def test_malformed_csr_takes_the_scipy_path():
    X = _problem(seed=9, n=200, d=30)[0]
    bad = sp.csr_array((X.data, X.indices.copy(), X.indptr), shape=X.shape)
    bad.indices[0] = 30  # a column outside the matrix: the kernel would write past G
    oracle = ArrayOracle.__new__(ArrayOracle)
    oracle._X, oracle._csr, oracle._d, oracle._n = bad, True, 30, 200
    oracle._multi, oracle._big = False, np.empty(0, dtype=np.intp)
    oracle._blocks = [(0, 200)]
    assert oracle._compiled_kernel(SquaredLoss().margin_model()) is None
    oracle._X = X
    assert oracle._compiled_kernel(SquaredLoss().margin_model()) is not None


@pytest.mark.parametrize("loss", [LogisticLoss(), SquaredLoss(), HuberLoss(threshold=2.0)])
def test_compiled_residual_names_the_loss(loss):
    model = loss.margin_model()
    assert model.compiled_residual is not None
    assert model.compiled_residual[0] in array_module.COMPILED_RESIDUALS


def test_strided_targets_and_arrays():
    X, _, yr, rng = _problem(seed=7)
    Y = np.stack([yr, -yr], axis=1)  # y = Y[:, 0] is a strided view
    oracle = ArrayOracle(SquaredLoss(), X, Y[:, 0], row_norm_bound=1.0)
    theta = rng.standard_normal(oracle.n_params)
    _close(oracle.clipped_gradient_sum(theta, 0.3), _scipy_path(oracle, theta, 0.3))
    wide = np.stack([X.data, X.data], axis=1)
    strided = sp.csr_array((wide[:, 0], X.indices, X.indptr), shape=X.shape, copy=False)
    other = ArrayOracle(SquaredLoss(), strided, yr, row_norm_bound=1.0)
    _close(other.clipped_gradient_sum(theta, 0.3), oracle.clipped_gradient_sum(theta, 0.3))


def test_int8_labels_are_bit_identical_and_follow_new_targets(monkeypatch):
    X, yb, _, rng = _problem(seed=8)
    oracle = ArrayOracle(LogisticLoss(), X, yb, row_norm_bound=1.0)
    theta = rng.standard_normal(oracle.n_params)
    with_int8 = oracle.clipped_gradient_sum(theta, 0.2)
    assert oracle._kernel_y is not None and oracle._kernel_y[1].dtype == np.int8
    monkeypatch.setattr(ArrayOracle, "_kernel_targets", lambda self, kind: (self._y, False))
    assert np.array_equal(with_int8, oracle.clipped_gradient_sum(theta, 0.2))
    monkeypatch.undo()
    flipped = oracle.with_targets(1 - yb)  # other labels: the int8 copy must follow them
    _close(flipped.clipped_gradient_sum(theta, 0.2), _scipy_path(flipped, theta, 0.2))
    assert not np.array_equal(flipped.clipped_gradient_sum(theta, 0.2), with_int8)


@pytest.mark.parametrize("sparse", ["auto", "never"])
def test_int8_labels_are_held_as_they_are_and_give_the_float_results(sparse):
    """LogisticLoss keeps int8 labels in {-1, +1} (one byte a row, no float64 copy); every
    oracle result equals the one with float64 labels bit for bit, on the compiled path and
    on the NumPy/SciPy one (the labels converted a block at a time)."""
    X, yb, _, rng = _problem(seed=8, n=2000, d=60)
    y8 = np.where(yb == 1, 1, -1).astype(np.int8)
    assert LogisticLoss().check_targets(y8) is y8
    assert LogisticLoss().check_targets(y8.astype(np.int16)).dtype == np.float64
    with pytest.raises(ValueError, match="logistic labels"):
        LogisticLoss().check_targets(np.array([0, 2], dtype=np.int8))
    centre = rng.standard_normal(60) * 0.01
    objective = CentredGLM(LogisticLoss(), centre=centre, intercept_scale=0.5)
    held = ArrayOracle(objective, X, y8, row_norm_bound=0.5, sparse=sparse)
    ref = ArrayOracle(objective, X, y8.astype(np.float64), row_norm_bound=0.5, sparse=sparse)
    assert held._y is y8
    theta = rng.standard_normal(held.n_params)
    for clip in (None, 0.2):
        assert np.array_equal(held.clipped_gradient_sum(theta, clip),
                              ref.clipped_gradient_sum(theta, clip))
        assert np.array_equal(_scipy_path(held, theta, clip), _scipy_path(ref, theta, clip))
    rows = np.array([5, 3, 1999])
    assert np.array_equal(held.per_example_loss(theta, rows), ref.per_example_loss(theta, rows))
    assert np.array_equal(held.clipped_curvature_diagonal(theta, 1.0),
                          ref.clipped_curvature_diagonal(theta, 1.0))


def test_many_blocks_sum_in_groups_whatever_the_threads(monkeypatch):
    """More blocks than SUM_GROUPS: the compiled path adds them in fixed groups (memory of
    one d-vector per group); the sum equals the SciPy path's to rounding, and is the same
    bit for bit for 1, 2 and 3 threads."""
    from noisygd.oracles import rows as rows_module

    monkeypatch.setattr(rows_module, "SPARSE_BLOCK_BYTES", 1)  # 16 rows a block
    X, yb, _, rng = _problem(seed=9, n=1500, d=40)
    oracles = [ArrayOracle(LogisticLoss(), X, yb, row_norm_bound=0.5, n_threads=t)
               for t in (1, 2, 3)]
    assert len(oracles[0]._blocks) > 4 * array_module.SUM_GROUPS
    theta = rng.standard_normal(oracles[0].n_params)
    for clip in (None, 0.3):
        sums = [o.clipped_gradient_sum(theta, clip) for o in oracles]
        assert np.array_equal(sums[0], sums[1]) and np.array_equal(sums[0], sums[2])
        _close(sums[0], _scipy_path(oracles[0], theta, clip))


def test_weighted_column_sums_equal_scipy_bit_for_bit():
    """The CSR row sums sum_i s_i x_i are taken block by block into one vector (no O(n)
    copy of the factors): SciPy's X^T s bit for bit, rows outside the ball included."""
    X, yb, _, _ = _problem(seed=10, n=3000, d=50)
    oracle = ArrayOracle(LogisticLoss(), X, yb, row_norm_bound=0.3)
    assert oracle._outside[0].size > 0  # some rows lie outside the ball
    s = oracle._scale_at(slice(0, 3000))
    assert np.array_equal(oracle._weighted_column_sums(s), sp.csr_array(X).T @ s)
    ones = np.broadcast_to(np.float64(1.0), (3000,))
    assert np.array_equal(oracle._weighted_column_sums(ones), sp.csr_array(X).T @ np.ones(3000))
