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


def test_subsets_of_rows_use_the_scipy_path_and_agree():
    X, yb, _, rng = _problem(seed=5)
    oracle = ArrayOracle(LogisticLoss(), X, yb, row_norm_bound=1.0)
    theta = rng.standard_normal(oracle.n_params)
    rows = np.arange(X.shape[0])
    _close(oracle.clipped_gradient_sum(theta, 0.1, rows=rows),
           oracle.clipped_gradient_sum(theta, 0.1))


def test_margin_blocks_refuses_short_buffers():
    X, _, yr, _ = _problem(seed=6, n=100, d=20)
    starts = np.array([0, 100], dtype=np.int64)
    G, rsum, srsum = np.empty((1, 20)), np.empty(1), np.empty(1)
    w = np.zeros(20)
    args = [1, 0.0, 4, X.indptr, X.indices, X.data, 100, yr, False, None, None, w, 0.0, 0.0,
            0.0, starts, 0, 1, G, rsum, srsum]
    array_module._margin_blocks(*args)  # well-formed: runs
    bad_y = list(args)
    bad_y[7] = yr[:50]
    with pytest.raises(ValueError, match="y holds"):
        array_module._margin_blocks(*bad_y)
    bad_range = list(args)
    bad_range[17] = 2
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
    read_only[18] = frozen
    with pytest.raises(ValueError, match="writable"):
        array_module._margin_blocks(*read_only)
    dense = [1, 0.0, 0, X.toarray()[:60], None, None, 100, yr, False, None, None, w, 0.0,
             0.0, 0.0, starts, 0, 1, G, rsum, srsum]
    with pytest.raises(ValueError, match="X holds"):  # 60 rows where 100 are declared
        array_module._margin_blocks(*dense)


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
    assert oracle._labels8 is not None and oracle._labels8[1].dtype == np.int8
    monkeypatch.setattr(ArrayOracle, "_kernel_targets", lambda self, kind: (self._y, False))
    assert np.array_equal(with_int8, oracle.clipped_gradient_sum(theta, 0.2))
    monkeypatch.undo()
    flipped = oracle.with_targets(1 - yb)  # other labels: the int8 copy must follow them
    _close(flipped.clipped_gradient_sum(theta, 0.2), _scipy_path(flipped, theta, 0.2))
    assert not np.array_equal(flipped.clipped_gradient_sum(theta, 0.2), with_int8)
