"""The compiled CSR kernel (``noisygd.oracles._csr_kernels_c``) against the SciPy path.

Every case compares ``ArrayOracle.clipped_gradient_sum`` over all rows computed by the
compiled kernel with the same oracle's SciPy path (``_kernel`` set to None: SciPy's
``csr_matvec``/``csc_matvec`` and NumPy's residuals) and with dense storage. The two
differ only in rounding: the margins and scatter sums are in the same order, and the
logistic residual is ``-y/(1 + exp(yz))`` in C against NumPy's ``tanh`` form, so the
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
    reason="noisygd.oracles._csr_kernels_c was not built (no C compiler at install)")


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
    assert oracle._kernel is not None
    dense = ArrayOracle(make(), X.toarray(), y, row_norm_bound=bound, sparse="never")
    for _ in range(3):
        theta = rng.standard_normal(oracle.n_params)
        got = oracle.clipped_gradient_sum(theta, clip)
        _close(got, _scipy_path(oracle, theta, clip))
        _close(got, dense.clipped_gradient_sum(theta, clip))


def test_compiled_kernel_with_public_centre():
    X, yb, _, rng = _problem(seed=1)
    centre = rng.uniform(0.0, 0.5, X.shape[1])
    obj = CentredGLM(LogisticLoss(), centre=centre, intercept_scale=0.4)
    oracle = ArrayOracle(obj, X, yb, row_norm_bound=2.0)
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


def test_compiled_kernel_does_not_depend_on_threads():
    X, yb, _, rng = _problem(seed=3, n=40_000, d=500, density=0.01)
    one = ArrayOracle(LogisticLoss(), X, yb, row_norm_bound=1.0, n_threads=1)
    two = ArrayOracle(LogisticLoss(), X, yb, row_norm_bound=1.0, n_threads=2)
    assert len(one._blocks) > 1  # several blocks, so threads could change the order
    theta = rng.standard_normal(one.n_params)
    for clip in (None, 0.2):
        assert np.array_equal(one.clipped_gradient_sum(theta, clip),
                              two.clipped_gradient_sum(theta, clip))


def test_kernel_not_used_where_it_does_not_apply():
    X, yb, _, _ = _problem(seed=4)
    dense = ArrayOracle(LogisticLoss(), X.toarray(), yb, row_norm_bound=1.0, sparse="never")
    assert dense._kernel is None  # dense storage: BLAS path
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
    args = [1, 0.0, 4, X.indptr, X.indices, X.data, yr, False, None, None, w, 0.0, 0.0, 0.0, starts,
            0, 1, G, rsum, srsum]
    array_module._margin_blocks(*args)  # well-formed: runs
    bad_y = list(args)
    bad_y[6] = yr[:50]
    with pytest.raises(ValueError, match="y holds"):
        array_module._margin_blocks(*bad_y)
    bad_range = list(args)
    bad_range[16] = 2
    with pytest.raises(ValueError, match="block range"):
        array_module._margin_blocks(*bad_range)
    bad_kind = list(args)
    bad_kind[0] = 7
    with pytest.raises(ValueError, match="loss kind"):
        array_module._margin_blocks(*bad_kind)


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
