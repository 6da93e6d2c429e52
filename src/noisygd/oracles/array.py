r"""The gradient oracle over in-memory NumPy dense and SciPy sparse rows.

:class:`ArrayOracle` holds ``X`` **as given** (never a copy: a float64 C-contiguous array
is used in place; other real dtypes are converted one row block at a time) plus the
vector of per-row scale factors :math:`s_i = \min(1, B/\lVert x_i - c\rVert)` that maps
every row into the declared domain (:mod:`noisygd.oracles.rows`). A fit therefore needs
the memory of ``X`` plus ``O(n)`` vectors.

The hot path, for a loss with a :class:`~noisygd.objectives.base.MarginModel`
(:math:`z = \langle w, \tilde x - c\rangle + \kappa v`,
:math:`\nabla\ell = \phi'(z, y)[\tilde x - c, \kappa]`, with the mapped row
:math:`\tilde x_i - c = s_i(x_i - c)`), reads ``X`` **once** per call. For each block
``b`` of consecutive rows (2 to 4 MiB of a dense ``X``, 1 MiB of a CSR one,
:func:`~noisygd.oracles.rows.block_rows`, a fixed partition), while the block is in cache:

.. math::

    z_b = s_b \odot (X_b w - \langle c, w\rangle) + \kappa v, \qquad
    r_b = \mathrm{clip}\big(\phi'(z_b, y_b),\ \pm C/\lVert[\tilde x_i - c, \kappa]\rVert\big),

    g_b = \big[X_b^\top (s_b \odot r_b) - c\,\textstyle\sum_i s_i r_i,\ \
          \kappa\textstyle\sum_i r_i\big],

the clipped sum of Lecture 12, eq. (12.1) (clipping the gradient :math:`r_i[\tilde x_i - c,
\kappa]` to norm ``C`` is clipping the scalar :math:`r_i`). Blocks run on a small
persistent thread pool; the partial sums :math:`g_b` are added in block order, so the
result does not depend on the number of threads. Rows whose entries are so large that a
margin could overflow (squared norm above :math:`10^{290}`) are evaluated on their mapped
copies (kept, they are rare), so finite input never gives ``inf`` or ``NaN``.

Losses of ``K`` margins (a :class:`~noisygd.objectives.multinomial.MultiMarginModel`, e.g.
:class:`~noisygd.objectives.multinomial.MultinomialLogisticLoss`;
:math:`\Theta = [W, v]` of shape ``(K, p)``, flattened row-major) take the same path with
matrices: per block, with the same fixed partition, scale factors and overflow-prone rows,

.. math::

    Z_b = s_b \odot (X_b W^\top - \mathbf 1 (Wc)^\top) + \kappa\mathbf 1 v^\top, \qquad
    R_b = \mathrm{diag}\Big(\min\big(1, \tfrac{C}{\lVert r_i\rVert\,
          \lVert[\tilde x_i - c, \kappa]\rVert}\big)\Big)\,\phi'(Z_b, y_b),

    G_b = \big[(s_b \odot R_b)^\top X_b - (\textstyle\sum_i s_i r_i)\,c^\top,\ \
          \kappa\textstyle\sum_i r_i\big],

(the per-example gradient :math:`r_i[\tilde x_i - c, \kappa]^\top` is rank one, its
Frobenius norm :math:`\lVert r_i\rVert\,\lVert[\tilde x_i - c, \kappa]\rVert`: clipping it
scales the residual row :math:`r_i`). With a per-feature scale :math:`f` (one margin or
``K``) the rows served are :math:`f\odot(\tilde x_i - c)`: the blocks run on the stored
rows with the weights :math:`w\odot f` (:math:`W\mathrm{diag}(f)`), and the feature part of
the summed gradient is multiplied by :math:`f` once. ``X`` is read once per call (one product
for the margins and one for the gradient while the block is in cache; CSR blocks by SciPy's
``csr_matvecs``/``csc_matvecs`` on the caller's arrays, no copy); nothing of size
``(n, K, p)`` exists.

For one margin and a residual the compiled kernel implements
(``MarginModel.compiled_residual``: logistic, squared, Huber), a call over all rows runs
``_margin_kernels.c`` instead, on CSR storage or a C-contiguous float64 dense ``X``: the same
blocks, and per block one read of its rows that computes :math:`z_b`, the clipped
:math:`r_b` and :math:`g_b` row group by row group (the rows prefetched ahead of the
margins, the gradient accumulated while they are cached), with no NumPy temporaries; the
partial sums are added in block order as above. Subsets of rows, ``K`` margins,
overflow-prone rows, other dtypes and installs without the compiled module take the
NumPy/SciPy path (results equal up to rounding). docs/noisygd.md says why this one kernel
is hand-written.

Losses without a margin model (e.g.
:class:`~noisygd.objectives.distance.SquaredDistanceLoss`) are evaluated by the objective's
own array methods on each block of mapped rows (a block-sized temporary).

Storage (``sparse``): ``"auto"`` stores a dense ``X`` with at most 25% nonzeros once as
CSR (for objectives that declare ``supports_sparse``), ``"always"`` always does, ``"never"``
densifies sparse input. The choice reads the density of the private ``X``: it changes the
running time and the summation order only, and it is never reported in any ``info``
(a timing side channel, outside the privacy model like the dependence of time on ``n``).
"""

from __future__ import annotations

import copy
import math
from contextlib import nullcontext

import numpy as np
import scipy.sparse as sp
from scipy.sparse._sparsetools import csc_matvec as _csc_matvec
from scipy.sparse._sparsetools import csc_matvecs as _csc_matvecs
from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
from scipy.sparse._sparsetools import csr_matvecs as _csr_matvecs

from noisygd._checks import check_choice, check_positive, check_positive_int
from noisygd.objectives.base import MarginModel, Objective
from noisygd.objectives.multinomial import MultiMarginModel
from noisygd.oracles._parallel import default_threads, run_blocks
from noisygd.oracles.base import ObjectiveOracle, RowSums
from noisygd.oracles.rows import block_rows, canonical_rows, scale_at, scan_rows

try:  # the compiled kernel (setup.py); optional: without it NumPy/SciPy serve every block
    from noisygd.oracles._margin_kernels_c import margin_blocks as _margin_blocks
except ImportError:  # pragma: no cover (an install without a C compiler)
    _margin_blocks = None

#: Residuals the compiled kernel implements (``MarginModel.compiled_residual`` names).
COMPILED_RESIDUALS = {"logistic": 0, "squared": 1, "huber": 2}

__all__ = ["SOFTMAX_CURVATURE_BOUND", "SOFTMAX_SELF_CONCORDANCE", "SPARSE_DENSITY", "SPARSE_MODES",
           "ArrayOracle", "softmax_curvature_norms"]

def _logistic_curvature(z: np.ndarray, y: np.ndarray, t: float) -> np.ndarray:
    r""":math:`\phi''(z) = \sigma(z)\sigma(-z) = \frac14(1 - \tanh^2(z/2))` (labels
    :math:`\pm1` do not enter)."""
    h = np.tanh(0.5 * z)
    np.square(h, out=h)
    np.subtract(1.0, h, out=h)
    h *= 0.25
    return h


def _squared_curvature(z: np.ndarray, y: np.ndarray, t: float) -> np.ndarray:
    r""":math:`\phi'' = 1`."""
    return np.ones_like(z)


def _huber_curvature(z: np.ndarray, y: np.ndarray, t: float) -> np.ndarray:
    r""":math:`\phi'' = 1\{|z - y| \le t\}` (the right derivative at the kinks)."""
    return (np.abs(z - y) <= t).astype(np.float64)


#: :math:`\phi''` of each residual the compiled kernel names (``(z, y, parameter)``).
_CURVATURES = {"logistic": _logistic_curvature, "squared": _squared_curvature,
               "huber": _huber_curvature}
#: :math:`\sup|\phi'''/\phi''|` where it exists (Huber's :math:`\phi''` jumps: none).
_SELF_CONCORDANCE = {"logistic": 1.0, "squared": 0.0}


def curvature_kind(model: MarginModel | None) -> tuple[str, float] | None:
    """The ``compiled_residual`` ``(name, parameter)`` of a :class:`MarginModel` whose
    :math:`\\phi''` the curvature sums implement, else None (no model, a multi-margin one,
    or a residual without curvature)."""
    if model is None or isinstance(model, MultiMarginModel) or model.compiled_residual is None:
        return None
    named = model.compiled_residual
    return named if named[0] in _CURVATURES else None


def has_self_concordance(model: MarginModel | None) -> bool:
    """Whether an :class:`ArrayOracle` over ``model`` states a self-concordance constant
    (:meth:`ArrayOracle.self_concordance` is not None): what ``method="newton"`` needs.
    A softmax model of ``K`` margins (``MultiMarginModel.softmax``) has one."""
    if _softmax_margins(model):
        return True
    kind = curvature_kind(model)
    return kind is not None and kind[0] in _SELF_CONCORDANCE


def _softmax_margins(model: MarginModel | None) -> bool:
    """Whether ``model`` is the softmax cross-entropy of ``K`` margins, whose curvature sums
    :meth:`ArrayOracle.clipped_curvature_sum` serves (:func:`softmax_curvature_norms`)."""
    return isinstance(model, MultiMarginModel) and bool(model.softmax)


#: :math:`\sup|D^3\ell[\Delta]|/(\lVert\Delta\rVert\lVert\tilde x\rVert D^2\ell[\Delta])`
#: of the softmax cross-entropy (:meth:`ArrayOracle.self_concordance`): :math:`\sqrt2`.
SOFTMAX_SELF_CONCORDANCE = math.sqrt(2.0)
#: :math:`\sup_\pi\lVert\mathrm{diag}\,\pi - \pi\pi^\top\rVert_F` over probability
#: vectors (:func:`softmax_curvature_norms`): 1/2, attained at :math:`\pi = (\frac12,
#: \frac12, 0, \dots)`.
SOFTMAX_CURVATURE_BOUND = 0.5


def softmax_curvature_norms(P: np.ndarray) -> np.ndarray:
    r""":math:`\lVert\mathrm{diag}\,\pi_i - \pi_i\pi_i^\top\rVert_F` for each row
    :math:`\pi_i` of ``P`` (shape ``(m, K)``, rows of probabilities): the Frobenius norm of
    the softmax cross-entropy's curvature in the margins, so that row ``i``'s curvature term
    :math:`(\mathrm{diag}\,\pi_i - \pi_i\pi_i^\top)\otimes a_ia_i^\top` has Frobenius norm
    this times :math:`\lVert a_i\rVert^2`.

    With :math:`s_2 = \sum_k\pi_k^2` and :math:`s_3 = \sum_k\pi_k^3` the squared norm is
    :math:`\sum_k(\pi_k - \pi_k^2)^2 + \sum_{k\ne l}\pi_k^2\pi_l^2 = s_2 - 2s_3 + s_2^2`.
    It is at most 1/4 (:data:`SOFTMAX_CURVATURE_BOUND` squared): by Cauchy-Schwarz
    :math:`s_2^2 = (\sum_k\pi_k^{1/2}\pi_k^{3/2})^2 \le \sum_k\pi_k\sum_k\pi_k^3 = s_3`,
    so the square is at most :math:`s_2 - s_3 = \sum_k\pi_k\cdot\pi_k(1 - \pi_k) \le
    \max_k\pi_k(1 - \pi_k) \le 1/4`.
    """
    P = np.asarray(P, dtype=np.float64)
    if P.shape[0] == 0:
        return np.zeros(0)
    # the square as sum_k pi_k^2 ((1 - pi_k)^2 + sum_{l != k} pi_l^2), every term >= 0; for
    # each row's largest pi_k both factors are summed from the other entries (no
    # cancellation when pi_k is near 1; every other pi_k is at most 1/2 and loses nothing)
    P2 = P * P
    top = np.argmax(P, axis=1)
    rows = np.arange(P.shape[0])
    masked = P.copy()
    masked[rows, top] = 0.0
    others = masked.sum(axis=1)  # 1 - pi_top, summed from the small entries: accurate
    q = 1.0 - P
    q[rows, top] = others
    r = P2.sum(axis=1)[:, None] - P2
    r[rows, top] = np.einsum("ij,ij->i", masked, masked)
    return np.sqrt(np.einsum("ij,ij->i", P2, q * q + r))


def _syrk(R: np.ndarray) -> np.ndarray:
    r""":math:`R^\top R` by NumPy's ``R.T @ R``, which calls BLAS ``dsyrk`` for the product
    of an array with its own transpose (half the work of a general product; both triangles
    filled). NumPy's BLAS, not SciPy's ``scipy.linalg.blas.dsyrk``: the same values, about
    20% faster here (NumPy's OpenBLAS build), and no SciPy BLAS library to load or to limit
    to one thread. Sums of these are symmetrised once (:func:`_symmetrised`)."""
    if R.shape[0] == 0:
        return np.zeros((R.shape[1], R.shape[1]))
    return R.T @ R


def _symmetrised(U: np.ndarray) -> np.ndarray:
    """The symmetric matrix whose upper triangle (diagonal included) is ``U``'s."""
    out = np.triu(U)
    out += np.triu(U, 1).T
    return out

#: Rows per chunk of a dense block's curvature product (:meth:`ArrayOracle.
#: clipped_curvature_sum`): a buffer of ``_CURVATURE_ROWS x (d + 2)`` per thread.
_CURVATURE_ROWS = 2048

SPARSE_MODES = ("auto", "always", "never")
#: ``sparse="auto"`` stores a dense ``X`` as CSR when at most this fraction is nonzero.
SPARSE_DENSITY = 0.25
#: Targets per block of :meth:`ArrayOracle.bounded_row_sums`' clipped target sums (a
#: 512 KiB float64 temporary).
TARGET_BLOCK = 1 << 16


def _check_matrix(X: object) -> np.ndarray | sp.csr_array:
    """``X`` as a 2-D real ndarray (no copy) or a canonical CSR array; shape and dtype only."""
    if sp.issparse(X):
        if len(X.shape) != 2 or X.shape[0] == 0 or X.shape[1] == 0:  # type: ignore[attr-defined]
            raise ValueError(f"X must be a non-empty 2-D matrix, got shape {X.shape}")  # type: ignore[attr-defined]
        dt = X.dtype  # type: ignore[attr-defined]
        if not np.issubdtype(dt, np.number) or np.issubdtype(dt, np.complexfloating):
            raise ValueError(f"X must hold real numbers, got dtype {dt}")
        if X.format == "csr" and X.dtype == np.float64:  # type: ignore[attr-defined]
            # wrap the caller's arrays: no copy of data, indices or indptr
            A = sp.csr_array((X.data, X.indices, X.indptr),  # type: ignore[attr-defined]
                             shape=X.shape, copy=False)  # type: ignore[attr-defined]
        else:
            A = sp.csr_array(X, dtype=np.float64)
        # duplicates summed, corrupt pointers and columns refused: the kernels read w by index
        return canonical_rows(A, check_columns=True)
    A = np.asarray(X)
    if A.ndim != 2:
        raise ValueError(f"X must be a 2-D array, got {A.ndim} dimension(s)")
    if A.shape[0] == 0 or A.shape[1] == 0:
        raise ValueError(f"X must have at least one row and one column, got shape {A.shape}")
    if not np.issubdtype(A.dtype, np.number) or np.issubdtype(A.dtype, np.complexfloating):
        raise ValueError(f"X must hold real numbers, got dtype {A.dtype}")
    return A


#: Most groups of consecutive row blocks whose partial gradient sums the compiled path holds
#: at once (:meth:`ArrayOracle._compiled_sum`); more than any thread count used here, so that
#: threads claiming groups in turn stay balanced.
SUM_GROUPS = 16


class _CSRRows:
    r"""Rows ``a:b`` of a canonical CSR matrix, multiplied without any copy.

    SciPy's ``csr_array`` constructor (and its ``.T``) copies slices of ``data`` and
    ``indices`` that are small against their base array ("pruning"), which would copy every
    row block on every call. The products here call SciPy's compiled CSR kernels
    (``csr_matvec``; ``csc_matvec`` on the same arrays read as the CSC form of the transpose)
    on the caller's arrays, with the block's slice of ``indptr``, which indexes into them.
    """

    __slots__ = ("X", "a", "b")

    def __init__(self, X: sp.csr_array, a: int, b: int) -> None:
        self.X, self.a, self.b = X, a, b

    def matvec(self, w: np.ndarray) -> np.ndarray:
        r""":math:`X_{a:b} w`."""
        X, m = self.X, self.b - self.a
        out = np.zeros(m)
        _csr_matvec(m, X.shape[1], X.indptr[self.a:self.b + 1], X.indices, X.data, w, out)
        return out

    def rmatvec(self, r: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        r""":math:`X_{a:b}^\top r`, added to ``out`` when given (float64, length ``d``; the
        rows' terms are added in row order, so consecutive blocks into one ``out`` give
        SciPy's :math:`X^\top r` bit for bit)."""
        X, m = self.X, self.b - self.a
        if out is None:
            out = np.zeros(X.shape[1])
        _csc_matvec(X.shape[1], m, X.indptr[self.a:self.b + 1], X.indices, X.data,
                    np.ascontiguousarray(r, dtype=np.float64), out)
        return out

    def matmat(self, M: np.ndarray) -> np.ndarray:
        r""":math:`X_{a:b} M` for a dense ``M`` of shape ``(d, K)``."""
        X, m = self.X, self.b - self.a
        M = np.ascontiguousarray(M, dtype=np.float64)
        out = np.zeros((m, M.shape[1]))
        _csr_matvecs(m, X.shape[1], M.shape[1], X.indptr[self.a:self.b + 1], X.indices, X.data,
                     M.ravel(), out.ravel())
        return out

    def rmatmat(self, R: np.ndarray) -> np.ndarray:
        r""":math:`X_{a:b}^\top R` for a dense ``R`` of shape ``(m, K)``: shape ``(d, K)``."""
        X, m = self.X, self.b - self.a
        R = np.ascontiguousarray(R, dtype=np.float64)
        out = np.zeros((X.shape[1], R.shape[1]))
        _csc_matvecs(X.shape[1], m, R.shape[1], X.indptr[self.a:self.b + 1], X.indices, X.data,
                     R.ravel(), out.ravel())
        return out

    def to_csr(self) -> sp.csr_array:
        """A CSR copy of the rows (for objectives without the fused margin kernel)."""
        X, a, b = self.X, self.a, self.b
        p0, p1 = int(X.indptr[a]), int(X.indptr[b])
        return sp.csr_array((X.data[p0:p1].copy(), X.indices[p0:p1].copy(),
                             X.indptr[a:b + 1] - p0), shape=(b - a, X.shape[1]))


def _inverse_augmented_norms(
    norms: np.ndarray, outside: np.ndarray, bound: float | None, kappa: float | None
) -> np.ndarray:
    r""":math:`1/\lVert[s_i(x_i - c), \kappa]\rVert`, computed in place in ``norms``.

    The mapped row's norm is :math:`\lVert x_i - c\rVert` inside the ball and ``B``
    outside it (``outside``: the rows whose scale factor is not exactly 1); ``inf`` for a zero
    row without intercept. Overwrites and returns ``norms`` (the oracle's construction
    allocates no other O(n) vector for it).
    """
    out = norms
    if bound is not None:
        out[outside] = bound
    if kappa is not None:
        np.square(out, out=out)
        out += kappa * kappa
        np.sqrt(out, out=out)
    with np.errstate(divide="ignore"):
        np.divide(1.0, out, out=out)
    return out


class ArrayOracle(ObjectiveOracle):
    r"""Private rows in memory (NumPy dense or SciPy sparse) behind the oracle interface.

    Parameters
    ----------
    objective : Objective
        The loss, its ridge ``l2``, its ball and its constants.
    X : ndarray or scipy.sparse matrix of shape (n, d)
        Private rows: 2-D, non-empty, real and finite (checked in the same pass that
        computes the row norms; no message shows a value or a norm of the data). Not
        copied: do not modify it while the oracle is in use.
    y : array_like of shape (n,)
        Private targets, checked by ``objective.check_targets``.
    row_norm_bound : float
        The declared bound ``B``: every row is served as its projection onto
        :math:`\lVert x - c\rVert \le B` (``c`` the objective's public centre, else 0).
        For :class:`~noisygd.objectives.centred.CentredGLM`, ``B`` bounds the centred rows.
    sparse : {"auto", "always", "never"}, default="auto"
        Storage of ``X`` (module doc; never reported).
    n_threads : int, optional
        Threads over row blocks (default: the cores available, at most 8). The result is
        the same for every value.
    row_sums : tuple of str, default=()
        Sums of :meth:`bounded_row_sums` to take in the construction's scan of a dense
        ``X`` (``"rows"``, ``"absolute_rows"``: :func:`~noisygd.oracles.rows.scan_rows`),
        for a pre-release stage that reads this oracle: its call then reads no row.
        Ignored for sparse ``X``.

    Attributes
    ----------
    objective : Objective
    rows_read : int
        Diagnostic: rows touched by gradient and loss calls so far (a full call adds
        ``n``). For benchmarks (passes over ``X`` per step); private, never part of a
        ``FitResult``.
    is_sparse : bool
        Diagnostic: whether ``X`` is stored as CSR (a timing side channel; never report it).
    """

    def __init__(
        self,
        objective: Objective,
        X: np.ndarray | sp.sparray | sp.spmatrix,
        y: np.ndarray,
        *,
        row_norm_bound: float,
        sparse: str = "auto",
        n_threads: int | None = None,
        row_sums: tuple[str, ...] = (),
    ) -> None:
        if not isinstance(objective, Objective):
            raise TypeError(f"objective must be an Objective, got {type(objective).__name__}")
        B = check_positive("row_norm_bound", row_norm_bound)
        sparse = check_choice("sparse", sparse, SPARSE_MODES)
        self.n_threads = default_threads() if n_threads is None else check_positive_int(
            "n_threads", n_threads)
        if sparse == "always" and not objective.supports_sparse:
            raise TypeError(f"{type(objective).__name__} does not support sparse X "
                            "(sparse='always')")
        A = _check_matrix(X)
        if sp.issparse(A) and sparse == "never":
            A = A.toarray()
        y = np.ascontiguousarray(objective.check_targets(y))  # no copy unless strided
        if y.shape[0] != A.shape[0]:
            raise ValueError(f"X has {A.shape[0]} rows but y has {y.shape[0]} entries")
        model = objective.margin_model()
        centre = None if model is None else model.centre
        if centre is not None and centre.shape != (A.shape[1],):
            raise ValueError(f"X has {A.shape[1]} columns but the objective's centre has "
                             f"{centre.size}")
        fs = None if model is None else getattr(model, "feature_scale", None)
        if fs is not None:
            fs = np.asarray(fs, dtype=np.float64)
            if fs.shape != (A.shape[1],):
                raise ValueError(f"a feature scale needs {A.shape[1]} values, got {fs.size}")
        want_nnz = (not sp.issparse(A)) and sparse == "auto" and objective.supports_sparse
        scan = scan_rows(A, B, centre=centre, count_nonzero=want_nnz, feature_scale=fs,
                         nonzero_limit=SPARSE_DENSITY * A.size,  # counted up to the rule
                         n_threads=self.n_threads, sums=tuple(row_sums))
        if not sp.issparse(A) and objective.supports_sparse and (
            sparse == "always"
            or (sparse == "auto" and scan.nonzeros is not None
                and scan.nonzeros <= SPARSE_DENSITY * A.size)
        ):
            A = sp.csr_array(A, dtype=np.float64)

        self.objective = objective
        self._X = A
        self._csr = bool(sp.issparse(A))
        self._y = y
        self._B = B
        self._model: MarginModel | None = model
        self._centre = centre
        self._fs = fs  # public column weights f (MarginModel.feature_scale) or None
        self._n, self._d = A.shape
        self._p = objective.n_params(self._d)
        self._all_inside = not scan.outside.size
        # the scale factors of the rows outside the ball, sparse (RowScan.outside): 1 at
        # every other row, so no O(n) vector of factors is kept
        self._outside = (scan.outside, scan.outside_scale)
        kappa = None if model is None else model.intercept_scale
        self._kappa = kappa
        # sum_i min(||f (x_i - c)||/B, 1)^2 for bounded_row_sums, and the sums asked for
        # (row_sums), from this scan: no second pass
        self._sq_sum = float(scan.squared_norms)  # type: ignore[arg-type]
        self._scan_sums = {"rows": scan.rows, "absolute_rows": scan.absolute_rows}
        self._inv_aug = _inverse_augmented_norms(scan.norms, scan.outside, B, kappa)
        # clipping at C changes no gradient when fl(C * min_i 1/||x~_i||) >= sup|phi'| (then
        # fl(C / ||x~_i||) >= |r_i| for every row: the clipped kernel would return r as is)
        rb = None if model is None else model.residual_bound
        self._unclipped_from = (None if rb is None or not self._n
                                else (float(rb), float(np.min(self._inv_aug))))
        # rows whose entries could overflow a margin: kept as mapped copies (rare)
        self._big = scan.big
        self._big_rows = self._mapped_centred(scan.big)  # s_i (x_i - c), rare
        self._multi = isinstance(model, MultiMarginModel)  # which fused kernel serves blocks
        self._block = block_rows(A)
        self._blocks = [(a, min(a + self._block, self._n)) for a in range(0, self._n, self._block)]
        self._kernel = self._compiled_kernel(model)
        # (its source y, the kernel's int8 copy of its labels, or None: not all +-1)
        self._kernel_y: tuple[np.ndarray, np.ndarray | None] | None = None
        self.rows_read = 0

    # ------------------------------------------------------------------ interface
    @property
    def is_sparse(self) -> bool:
        """Whether ``X`` is stored as CSR (diagnostic; a timing side channel, never report it)."""
        return self._csr


    def per_example_loss(self, theta: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        r""":math:`\ell(\theta; \tilde x_i, y_i)` for all rows (or ``rows``, in that order)."""
        theta = self._check_theta(theta)
        parts = self._map(theta, None, rows, loss=True)
        return np.concatenate(parts) if parts else np.empty(0)

    def clipped_gradient_sum(
        self, theta: np.ndarray, clip: float | None, rows: np.ndarray | None = None
    ) -> np.ndarray:
        r""":math:`\sum_{i\in S}\mathrm{clip}_C(\nabla\ell(\theta; \tilde x_i, y_i))`, one read.

        Partial sums of the fixed row blocks are added in block order (module doc).
        """
        theta = self._check_theta(theta)
        C = None if clip is None else check_positive("clip", clip)
        if rows is None and self._kernel is not None:
            return self._scaled_gradient(self._compiled_sum(theta, C))
        total = np.zeros(self._p)
        for part in self._map(theta, C, rows, loss=False):
            total += part
        return self._scaled_gradient(total)

    def _scaled_gradient(self, total: np.ndarray) -> np.ndarray:
        r"""The gradient in the optimised coordinates: with a feature scale :math:`f` the
        blocks sum :math:`r_i s_i(x_i - c)` on the rows as stored (margins from
        :math:`f\odot w`, :meth:`_params`), and the rows are :math:`f\odot(x_i - c)`, so
        the feature part is multiplied by :math:`f` once here."""
        if self._fs is not None:
            K = self._p // (self._d + int(self._kappa is not None))  # margins: 1, or K
            total.reshape(K, -1)[:, :self._d] *= self._fs  # a view: scaled in place
        return total

    # ------------------------------------------------------------------ curvature
    def clipped_curvature_sum(
        self, theta: np.ndarray, clip: float | None, rows: np.ndarray | None = None
    ) -> np.ndarray:
        r""":math:`\sum_{i\in S}\min(\phi''(z_i), C_H/\lVert a_i\rVert^2)\,a_ia_i^\top` with the
        served augmented rows :math:`a_i = [s_i(x_i - c), \kappa]`
        (:meth:`GradientOracle.clipped_curvature_sum`), shape ``(p, p)``.

        With the block's weights :math:`u = w\odot s^2` and :math:`q = w\odot s`, one read
        of each row block gives :math:`M_b = X_b^\top\mathrm{diag}(u)X_b`,
        :math:`m_b = X_b^\top u`, :math:`r_b = X_b^\top q` and the sums of :math:`u, q, w`:
        for a dense block all of them from one BLAS ``syrk`` of
        :math:`[\sqrt u\odot X_b,\ \sqrt u,\ \sqrt w]` (its Gram matrix holds them, as
        :math:`\sqrt u\sqrt w = q`); for CSR a sparse product of the block with its rows
        scaled by :math:`\sqrt u`, and two products for :math:`m_b, r_b`; then

        .. math::

            H_{xx} = \sum_b M_b - cm^\top - mc^\top + (\textstyle\sum u)\,cc^\top, \quad
            H_{x\kappa} = \kappa\big(r - c\textstyle\sum q\big), \quad
            H_{\kappa\kappa} = \kappa^2\textstyle\sum w .

        Blocks are added in block order (the result does not depend on ``n_threads``).
        :math:`\phi''` is the derivative of the residual the compiled kernel names
        (``MarginModel.compiled_residual``: logistic :math:`\sigma(z)\sigma(-z)`, squared 1,
        Huber :math:`1\{|z - y| \le t\}`); the softmax cross-entropy of ``K`` margins has its
        own sum (:meth:`_softmax_curvature`); other losses refuse. A CSR ``X`` needs the
        ``p x p`` result in memory: use :meth:`clipped_curvature_diagonal` for many columns.
        """
        return self._curvature(theta, clip, rows, diagonal=False)

    def clipped_curvature_diagonal(
        self, theta: np.ndarray, clip: float | None, rows: np.ndarray | None = None
    ) -> np.ndarray:
        r"""The diagonal of :meth:`clipped_curvature_sum`, shape ``(p,)``, in one read of
        ``X`` and memory ``O(p)``: per block :math:`\sum_i u_i x_{ij}^2` (dense:
        :math:`(X_b\odot X_b)^\top u`; CSR: the squared stored values weighted by their
        row's :math:`u_i`, summed by column), then
        :math:`H_{jj} = \sum_i u_ix_{ij}^2 - 2c_jm_j + c_j^2\sum u` and
        :math:`H_{\kappa\kappa} = \kappa^2\sum w`."""
        return self._curvature(theta, clip, rows, diagonal=True)

    serves_row_nonzeros = True

    def row_nonzero_histogram(self, edges: np.ndarray) -> np.ndarray:
        r"""Counts of the rows by :math:`k_i`, their stored nonzeros plus 1 for the intercept
        column (:meth:`GradientOracle.row_nonzero_histogram`; bins by ``edges``, increasing
        integers). :math:`k_i` counts the support of :math:`x_i` itself: the projection onto
        the ball and a feature scale keep it; a public centre :math:`c` makes the served row
        :math:`x_i - c` dense, and the count then bounds the support of its data part (the
        rank-one public part :math:`c` is not counted; docs/newton.md, "The paid row
        support"). CSR: the row pointers only (the stored entries, explicit zeros included: an
        upper bound); dense: one pass, block by block. **Not private**."""
        e = np.asarray(edges, dtype=np.int64)
        if e.ndim != 1 or e.size == 0 or np.any(np.diff(e) <= 0):
            raise ValueError("edges must be a non-empty increasing 1-D array of integers")
        if not self._csr:
            self.rows_read += self._n
        extra = 0 if self._kappa is None else 1
        out = np.zeros(e.size + 1, dtype=np.int64)
        for a, b in self._blocks:  # block-sized temporaries only
            if self._csr:
                k = np.diff(self._X.indptr[a:b + 1])
            else:
                k = np.count_nonzero(self._X[a:b], axis=1)
            out += np.bincount(np.searchsorted(e, k + extra, side="left"),
                               minlength=e.size + 1)
        return out.astype(np.float64)

    def self_concordance(self) -> float | None:
        r""":math:`M = \sup|\phi'''/\phi''|\,\sqrt{B^2 + \kappa^2}`
        (:meth:`GradientOracle.self_concordance`): logistic :math:`\sqrt{B^2 + \kappa^2}`
        (:math:`\phi''' = \phi''(1 - 2\sigma(z))`), squared 0, others None; the softmax
        cross-entropy of ``K`` margins :math:`\sqrt2\sqrt{B^2 + \kappa^2}`
        (:data:`SOFTMAX_SELF_CONCORDANCE`: along a direction :math:`\Delta` the margins move
        by :math:`\delta_k = \langle\Delta_k, a\rangle`, :math:`D^2\ell = \mathrm{Var}_\pi
        \delta` and :math:`|D^3\ell| = |E_\pi(\delta - E_\pi\delta)^3| \le (\max_k\delta_k
        - \min_k\delta_k)\mathrm{Var}_\pi\delta`, and :math:`\delta_k - \delta_l \le
        \lVert\Delta_k - \Delta_l\rVert\lVert a\rVert \le \sqrt2\lVert\Delta\rVert_F
        \lVert a\rVert`)."""
        kappa = 0.0 if self._kappa is None else float(self._kappa)
        if _softmax_margins(self._model):  # K margins: module doc of noisygd.objectives.multinomial
            return SOFTMAX_SELF_CONCORDANCE * float(np.hypot(self._B, kappa))
        kind = self._curvature_kind()
        if kind is None or kind[0] not in _SELF_CONCORDANCE:
            return None
        factor = _SELF_CONCORDANCE[kind[0]]
        return factor * float(np.hypot(self._B, kappa)) if factor else 0.0

    def _curvature_kind(self) -> tuple[str, float] | None:
        """The ``compiled_residual`` name whose derivative is :math:`\\phi''` (None: no
        curvature for this loss): :func:`curvature_kind`."""
        return curvature_kind(self._model)

    def _curvature(self, theta: np.ndarray, clip: float | None, rows: np.ndarray | None,
                   *, diagonal: bool) -> np.ndarray:
        """:meth:`clipped_curvature_sum` (or its diagonal): blocks, then assembly."""
        if _softmax_margins(self._model):
            return self._softmax_curvature(theta, clip, rows, diagonal=diagonal)
        kind = self._curvature_kind()
        if kind is None:
            raise NotImplementedError(
                f"no curvature sums for {type(self.objective).__name__}: second-order methods "
                "(method='newton') need a loss of one margin with a known second derivative "
                "(logistic, least squares, Huber)")
        theta = self._check_theta(theta)
        CH = None if clip is None else check_positive("clip", clip)
        params = self._params(theta)
        curvature = _CURVATURES[kind[0]]
        d, p = self._d, self._p
        if rows is None:
            self.rows_read += self._n
            spans: list = self._blocks
        else:
            idx = self._check_rows(rows)
            self.rows_read += int(idx.size)
            step = self._block
            spans = [idx[j:j + step] for j in range(0, idx.size, step)]

        def one(j: int) -> tuple:
            span = spans[j]
            if isinstance(span, tuple):
                a, b = span
                Xb = self._csr_view(a, b) if self._csr else self._X[a:b]
                sel: slice | np.ndarray = slice(a, b)
            else:
                a = b = None
                Xb, sel = self._X[span], span
            if not self._csr and Xb.dtype != np.float64:
                Xb = Xb.astype(np.float64)
            quiet = (np.errstate(over="ignore", invalid="ignore") if self._big.size
                     else nullcontext())
            with quiet:
                z, pos, E = self._block_margins(Xb, self._scale_at(sel), sel, a, b, params)
            weights = curvature(z, self._targets_at(sel), kind[1])
            return self._curvature_block(Xb, sel, z, pos, E, weights, CH, diagonal)

        shape = (d,) if diagonal else (d, d)
        M, m, r = np.zeros(shape), np.zeros(d), np.zeros(d)
        su = sq = sw = 0.0
        extra = np.zeros(p if diagonal else (p, p))
        # bounded memory: the blocks' (d, d) partials held at once take at most 32 MiB
        # (or 4 per thread)
        chunk = max(4 * self.n_threads, (1 << 25) // (8 * (d + 2) ** 2))
        for start in range(0, len(spans), chunk):
            count = min(chunk, len(spans) - start)
            for part in run_blocks(lambda j, s0=start: one(s0 + j), count, self.n_threads):
                M += part[0]
                m += part[1]
                r += part[2]
                su += part[3]
                sq += part[4]
                sw += part[5]
                if part[6] is not None:
                    extra += part[6]
        out = self._assemble_curvature(M, m, r, su, sq, sw, extra, diagonal)
        if self._fs is not None:  # rows f (x - c): H = diag([f, 1]) H_stored diag([f, 1])
            g = np.ones(p)
            g[:d] = self._fs
            out = out * (g * g) if diagonal else out * np.outer(g, g)
        return out

    def _softmax_curvature(self, theta: np.ndarray, clip: float | None,
                           rows: np.ndarray | None, *, diagonal: bool) -> np.ndarray:
        r"""The clipped curvature sum of the softmax cross-entropy of ``K`` margins (or its
        diagonal), shape ``(Kp', Kp')`` in :math:`\Theta`'s row-major layout:

        .. math::

            H_S(\Theta) = \sum_{i\in S} w_i\,(\mathrm{diag}\,\pi_i - \pi_i\pi_i^\top)
                \otimes a_ia_i^\top, \qquad
            w_i = \min\Big(1, \frac{C_H}{\lVert\mathrm{diag}\,\pi_i -
                \pi_i\pi_i^\top\rVert_F\,\lVert a_i\rVert^2}\Big),

        :math:`\pi_i = \mathrm{softmax}(\Theta a_i)` and :math:`a_i = [f\odot s_i(x_i - c),
        \kappa]` the served row. Each term is positive semi-definite (a Kronecker product of
        two) with Frobenius norm at most :math:`C_H` (:func:`softmax_curvature_norms`), so the
        sensitivities are those of one margin (:meth:`GradientOracle.clipped_curvature_sum`);
        :math:`C_H \ge \tilde B^2/2` (the objective's smoothness) clips no row of the
        declared domain. Per chunk of rows, the dense served rows ``A``, then
        :math:`\sum_k e_ke_k^\top\otimes A^\top\mathrm{diag}(w\odot\pi_{\cdot k})A`
        minus :math:`B^\top B` for the rows :math:`b_i = \sqrt{w_i}\,\pi_i\otimes a_i`
        (each a BLAS ``syrk``, so the sum is exactly symmetric); chunks added in order (the
        result does not depend on ``n_threads``). The diagonal:
        :math:`\sum_i w_i\,\pi_{ik}(1 - \pi_{ik})\,a_i\odot a_i` for class ``k``'s block.
        """
        from noisygd.objectives.multinomial import softmax

        theta = self._check_theta(theta)
        CH = None if clip is None else check_positive("clip", clip)
        K = self._model.n_outputs
        width = self._p // K
        T = theta.reshape(K, width)
        idx = (np.arange(self._n) if rows is None else self._check_rows(rows))
        self.rows_read += int(idx.size)
        # rows per chunk: the (rows, K p') matrix of pi_i (x) a_i at most 32 MiB
        step = max(1, min(self._block, (1 << 22) // (K * width)))
        kappa, fs = self._kappa, self._fs

        def one(j: int) -> np.ndarray:
            sel = idx[j * step:(j + 1) * step]
            E = self._mapped_centred(sel)
            if fs is not None:
                E *= fs
            A = E if kappa is None else np.column_stack([E, np.full(sel.size, kappa)])
            P = softmax(A @ T.T)
            w = np.ones(sel.size)
            if CH is not None:
                with np.errstate(divide="ignore", invalid="ignore"):
                    limit = CH / (softmax_curvature_norms(P) * np.einsum("ij,ij->i", A, A))
                w = np.fmin(w, limit)  # 1 where the term is 0 (the limit inf or NaN)
            if diagonal:
                return ((P * (1.0 - P) * w[:, None]).T @ (A * A)).ravel()
            Bm = (np.sqrt(w)[:, None, None] * P[:, :, None] * A[:, None, :]).reshape(
                sel.size, K * width)
            H = -_syrk(Bm)
            for k in range(K):
                block = slice(k * width, (k + 1) * width)
                H[block, block] += _syrk(A * np.sqrt(w * P[:, k])[:, None])
            return H  # exactly symmetric: sums of syrk products

        count = -(-int(idx.size) // step)
        out = np.zeros(K * width if diagonal else (K * width, K * width))
        group = max(1, 4 * self.n_threads)  # partial sums held at once
        for start in range(0, count, group):
            for part in run_blocks(lambda j, s0=start: one(s0 + j),
                                   min(group, count - start), self.n_threads):
                out += part
        return out

    def _curvature_block(self, Xb: np.ndarray | _CSRRows, sel: slice | np.ndarray,
                         z: np.ndarray, pos: np.ndarray | None, E: np.ndarray | None,
                         w: np.ndarray, clip: float | None, diagonal: bool) -> tuple:
        """One block's ``(M_b, m_b, r_b, sum u, sum q, sum w, overflow-prone rows' part)``
        (:meth:`clipped_curvature_sum`); ``w`` the block's :math:`\\phi''`, clipped here."""
        inv = self._inv_aug[sel]
        if clip is not None:
            np.minimum(w, clip * inv * inv, out=w)
        extra = None
        if pos is not None and pos.size:  # overflow-prone rows: from their mapped copies
            Aug = E if self._kappa is None else np.column_stack(
                [E, np.full(E.shape[0], self._kappa)])
            wb = w[pos]
            extra = (wb @ (Aug * Aug) if diagonal else (Aug * wb[:, None]).T @ Aug)
            w = w.copy()
            w[pos] = 0.0
        sw = float(w.sum())
        if self._all_inside:
            q, u = w, w
        else:
            s = self._scale_at(sel)
            q = w * s
            u = q * s
        if isinstance(Xb, _CSRRows):
            m, r = Xb.rmatvec(u), Xb.rmatvec(q)
            X, p0, p1 = Xb.X, int(Xb.X.indptr[Xb.a]), int(Xb.X.indptr[Xb.b])
            counts = np.diff(Xb.X.indptr[Xb.a:Xb.b + 1])
            if diagonal:
                vals = X.data[p0:p1]
                M = np.bincount(X.indices[p0:p1], weights=vals * vals * np.repeat(u, counts),
                                minlength=self._d)
            else:
                R = sp.csr_array((X.data[p0:p1] * np.repeat(np.sqrt(u), counts),
                                  X.indices[p0:p1], Xb.X.indptr[Xb.a:Xb.b + 1] - p0),
                                 shape=(Xb.b - Xb.a, self._d))
                M = (R.T @ R).toarray()
        elif sp.issparse(Xb):  # gathered CSR rows (a subset)
            Xc = sp.csr_array(Xb)
            m, r = Xc.T @ u, Xc.T @ q
            if diagonal:
                M = Xc.multiply(Xc).T @ u
            else:
                R = sp.csr_array(Xc.multiply(np.sqrt(u)[:, None]))
                M = (R.T @ R).toarray()
        elif diagonal:
            m, r = u @ Xb, q @ Xb
            M = np.einsum("i,ij,ij->j", u, Xb, Xb)
        else:
            # one syrk on [sqrt(u) X_b, sqrt(u), sqrt(w)] (sqrt(u) sqrt(w) = q): M, m, r
            # and the three sums in one product while the rows are cached, a chunk of
            # _CURVATURE_ROWS rows at a time (a cache-sized buffer, not a block-sized one)
            d, m_rows = self._d, Xb.shape[0]
            step = min(m_rows, _CURVATURE_ROWS)
            R = np.empty((step, d + 2))
            root_u, root_w = np.sqrt(u), np.sqrt(w)
            G = None
            for i in range(0, m_rows, step):
                j = min(i + step, m_rows)
                Rc = R[:j - i]
                np.multiply(Xb[i:j], root_u[i:j, None], out=Rc[:, :d])
                Rc[:, d] = root_u[i:j]
                Rc[:, d + 1] = root_w[i:j]
                part = _syrk(Rc)
                G = part if G is None else G + part
            if G is None:
                G = _syrk(R[:0])
            return (G[:d, :d], G[:d, d], G[:d, d + 1], float(G[d, d]), float(G[d, d + 1]),
                    float(G[d + 1, d + 1]), extra)
        return M, m, r, float(u.sum()), float(q.sum()), sw, extra

    def _assemble_curvature(self, M: np.ndarray, m: np.ndarray, r: np.ndarray, su: float,
                            sq: float, sw: float, extra: np.ndarray,
                            diagonal: bool) -> np.ndarray:
        """The ``(p, p)`` sum (or its diagonal) from the blocks' totals (centre and
        intercept column: :meth:`clipped_curvature_sum`)."""
        c, kappa, d = self._centre, self._kappa, self._d
        if diagonal:
            out = np.zeros(self._p)
            out[:d] = M if c is None else M - 2.0 * c * m + su * c * c
            if kappa is not None:
                out[d] = kappa * kappa * sw
            return out + extra
        out = np.zeros((self._p, self._p))
        H = out[:d, :d]
        H += M if self._csr else _symmetrised(M)  # dense blocks: their upper triangles
        if c is not None:
            cm = np.outer(c, m)
            H -= cm
            H -= cm.T
            H += su * np.outer(c, c)
        if kappa is not None:
            cross = kappa * (r if c is None else r - c * sq)
            out[:d, d] = cross
            out[d, :d] = cross
            out[d, d] = kappa * kappa * sw
        out += extra
        return 0.5 * (out + out.T)

    def bounded_row_sums(self, target_half_range: float | None = None, *,
                         absolute: bool = False) -> RowSums:
        r""":class:`~noisygd.oracles.base.RowSums` of the rows served:
        :math:`a_i = s_i f\odot(x_i - c)/B` (:math:`f` the feature scale, ones without one),
        :math:`\lVert a_i\rVert^2 = \min(\lVert f\odot(x_i - c)\rVert/B, 1)^2` (summed by
        the construction's scan); with ``absolute`` also :math:`\sum_i |a_i|`, entrywise.
        The sums named in the constructor's ``row_sums`` were taken by its scan, row by row
        from the centred rows (no row is read here); the others take one pass over ``X``
        each: :math:`\sum_i a_i = f\odot(X^\top s - c\sum_i s_i)/B`, and the absolute values
        block by block. **Not private** (the caller adds the noise)."""
        self._open()
        h = None if target_half_range is None else check_positive("target_half_range",
                                                                   target_half_range)
        # the construction's scan: the same scale factors s_i the gradients use, its sum of
        # min(||f (x_i - c)||/B, 1)^2 and, when asked for there (row_sums), the row sums
        rows, ab = self._scan_sums["rows"], self._scan_sums["absolute_rows"]
        if rows is None or (absolute and ab is None):
            self.rows_read += self._n
            s = (np.broadcast_to(np.float64(1.0), (self._n,)) if self._all_inside
                 else self._scale_at(slice(0, self._n)))  # a temporary
            if rows is None:
                rows = self._weighted_column_sums(s)
                if self._centre is not None:
                    rows = rows - self._centre * float(s.sum())
                if self._fs is not None:
                    rows = rows * self._fs
            if absolute and ab is None:
                ab = self._absolute_columns(s)
        else:
            ab = None if ab is None else np.maximum(ab, 0.0)
        t1, t2 = (0.0, 0.0) if h is None else self._clipped_target_sums(h)
        return RowSums(float(self._n), rows / self._B, self._sq_sum, t1, t2,
                       None if not absolute else ab / self._B)

    def _clipped_target_sums(self, h: float) -> tuple[float, float]:
        r""":math:`(\sum_i t_i, \sum_i t_i^2)` with :math:`t_i = \mathrm{clip}(y_i/h, -1, 1)`,
        :data:`TARGET_BLOCK` targets at a time (block sums added exactly, ``math.fsum``): no
        O(n) float64 temporary (three of them, 24 MB at :math:`n = 10^6`, were the peak of
        ``bench_scale``'s CSR fit)."""
        firsts, seconds = [], []
        for a in range(0, self._n, TARGET_BLOCK):
            t = self._targets_at(slice(a, a + TARGET_BLOCK)) / h  # a new float64 block
            np.clip(t, -1.0, 1.0, out=t)
            firsts.append(float(t.sum()))
            seconds.append(float(np.dot(t, t)))
        return math.fsum(firsts), math.fsum(seconds)

    def _weighted_column_sums(self, s: np.ndarray) -> np.ndarray:
        r""":math:`\sum_i s_i x_i`: CSR block by block into one vector (SciPy's
        :math:`X^\top s` bit for bit, without the O(n) copy SciPy makes of a broadcast
        ``s``), dense as one product."""
        if not self._csr:
            return np.ravel(np.asarray(s @ self._X, dtype=np.float64))
        total = np.zeros(self._d)
        for a, b in self._blocks:
            self._csr_view(a, b).rmatvec(s[a:b], out=total)
        return total

    def _absolute_columns(self, s: np.ndarray) -> np.ndarray:
        r""":math:`B\sum_i |a_i| = \sum_i s_i|f\odot(x_i - c)|` (entrywise), block
        by block (a block-sized temporary). CSR: a column's zeros add :math:`|c_j|s_i`, so
        :math:`\sum_i s_i|x_{ij} - c_j| = |c_j|\sum_i s_i + \sum_{x_{ij}\ne0}
        s_i(|x_{ij} - c_j| - |c_j|)`; then times :math:`f_j` (the caller divides by
        :math:`B`)."""
        X, c, d = self._X, self._centre, self._d
        out = np.zeros(d)
        buf = None if self._csr else np.empty((self._block, d))  # reused: no per-block malloc
        for a, b in self._blocks:
            if self._csr:
                p0, p1 = int(X.indptr[a]), int(X.indptr[b])
                cols, vals = X.indices[p0:p1], X.data[p0:p1]
                wr = np.repeat(s[a:b], np.diff(X.indptr[a:b + 1]))
                terms = np.abs(vals) if c is None else np.abs(vals - c[cols]) - np.abs(c[cols])
                out += np.bincount(cols, weights=terms * wr, minlength=d)
            else:
                Db = buf[:b - a]  # one block-sized buffer for every block
                if c is not None:
                    np.subtract(X[a:b], c, out=Db, dtype=np.float64)
                    np.abs(Db, out=Db)
                else:
                    np.abs(X[a:b], out=Db, dtype=np.float64)
                out += s[a:b] @ Db
        if self._csr and c is not None:
            out += np.abs(c) * float(s.sum())
        out = np.maximum(out, 0.0)
        if self._fs is not None:
            out = out * self._fs
        return out

    # ------------------------------------------------------------------ extras
    def take(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Dense float64 copies of the mapped rows ``rows`` and their targets.

        For kernels that batch many parameter vectors at once (the Table-3 BST14
        baseline); algorithms otherwise use :meth:`clipped_gradient_sum`.
        """
        self._open()
        idx = self._check_rows(rows)
        self.rows_read += int(idx.size)
        return self._mapped(idx), self._targets_at(idx)

    def with_targets(self, y: np.ndarray) -> ArrayOracle:
        """The same rows (same storage, scale factors and partition: no new pass over ``X``)
        with other targets ``y`` (e.g. one-vs-rest labels), checked by the objective."""
        self._open()
        y = np.ascontiguousarray(self.objective.check_targets(y))
        if y.shape[0] != self._n:
            raise ValueError(f"X has {self._n} rows but y has {y.shape[0]} entries")
        other = copy.copy(self)
        other._y = y
        other.rows_read = 0
        return other

    def close(self) -> None:
        """Free what this oracle holds of size ``O(n)`` (scale factors, norms, targets, the
        rows' references); it serves no further call (a later one raises). Oracles made by
        :meth:`with_targets` share these arrays: they are freed once all are closed. For a
        fit that builds its next oracle in other coordinates (a pre-release stage's
        post-processing): the memory of one oracle, not two, at a time."""
        self._X = self._y = self._outside = self._inv_aug = None  # type: ignore[assignment]
        self._big_rows = self._kernel_y = self._kernel = None  # type: ignore[assignment]
        self._scan_sums = {"rows": None, "absolute_rows": None}

    def _open(self) -> None:
        """Refuse a call on a closed oracle (:meth:`close`)."""
        if self._X is None:
            raise RuntimeError("this ArrayOracle was closed (close()): it serves no call")

    def _check_theta(self, theta: np.ndarray) -> np.ndarray:
        self._open()
        return super()._check_theta(theta)

    def __repr__(self) -> str:
        return (f"ArrayOracle({self.objective!r}, <{self._d} columns>, "
                f"row_norm_bound={self._B!r})")

    # ------------------------------------------------------------------ internals
    def _check_rows(self, rows: np.ndarray) -> np.ndarray:
        idx = np.asarray(rows)
        if idx.ndim != 1 or not (idx.dtype.kind in "iu" or idx.size == 0):
            raise ValueError("rows must be a 1-D array of integer row indices")
        idx = idx.astype(np.intp, copy=False)
        if idx.size == 1:
            if not 0 <= int(idx[0]) < self._n:
                raise ValueError("rows holds an index outside the rows held")
        elif idx.size and (int(idx.min()) < 0 or int(idx.max()) >= self._n):
            raise ValueError("rows holds an index outside the rows held")
        return idx

    def _compiled_kernel(self, model: MarginModel | None) -> tuple | None:
        """``(kind, parameter, layout, block starts)`` when the compiled kernel serves
        :meth:`clipped_gradient_sum` over all rows, else None.

        It does for a scalar-margin loss whose ``compiled_residual`` it implements, with no
        overflow-prone rows, over CSR storage (contiguous arrays, int32 or int64 indices of
        one width: layout 4 or 8) or a C-contiguous float64 dense ``X`` (layout 0). The CSR
        structure the kernel trusts (nondecreasing ``indptr``, indices inside the columns) is
        checked here once, allocation-free but for ``n`` bytes.
        """
        if _margin_blocks is None or model is None or self._multi:
            return None
        named = model.compiled_residual
        if named is None or named[0] not in COMPILED_RESIDUALS or self._big.size:
            return None
        X = self._X
        if self._csr:
            layout = X.indices.dtype.itemsize
            if (X.indptr.dtype != X.indices.dtype or X.indices.dtype.kind != "i"
                    or layout not in (4, 8)
                    or not all(a.flags.c_contiguous for a in (X.data, X.indices, X.indptr))):
                return None
            ptr = X.indptr
            if (int(ptr[0]) < 0 or not bool(np.all(ptr[1:] >= ptr[:-1]))
                    or (X.indices.size and (int(X.indices.min()) < 0
                                            or int(X.indices.max()) >= self._d))):
                return None
        else:
            if X.dtype != np.float64 or not X.flags.c_contiguous:
                return None
            layout = 0
        starts = np.array([a for a, _ in self._blocks] + [self._n], dtype=np.int64)
        return COMPILED_RESIDUALS[named[0]], float(named[1]), layout, starts

    def _compiled_sum(self, theta: np.ndarray, clip: float | None) -> np.ndarray:
        r""":meth:`clipped_gradient_sum` over all rows by the compiled kernel.

        The kernel (``_margin_kernels.c``) computes, per row block ``b`` and in one read of
        its rows, :math:`G_b = X_b^\top(s_b\odot r_b)`, :math:`\sum_{i\in b} r_i` and
        :math:`\sum_{i\in b} s_i r_i` with the margins, residuals and clipping of the
        module doc. The blocks fall into at most :data:`SUM_GROUPS` groups of consecutive
        blocks (a fixed function of the number of blocks); a group adds its blocks'
        centred partial sums :math:`G_b - c\sum_{i\in b}s_ir_i` in block order, and the
        groups' sums are added in group order. So the result does not depend on
        ``n_threads``, and memory holds one ``d``-vector per group, not per block (CSR
        ``X`` of 1e6 rows and 1e4 columns: 115 blocks, 9 MB of partial sums otherwise).
        With at most :data:`SUM_GROUPS` blocks each group is one block.
        """
        kind, param, layout, starts = self._kernel
        w, v, cw = self._params(theta)
        X, d, c, kappa = self._X, self._d, self._centre, self._kappa
        n_blocks = starts.size - 1
        n_groups = min(n_blocks, SUM_GROUPS)
        edges = [j * n_blocks // n_groups for j in range(n_groups + 1)]
        G = np.zeros((n_groups, d))
        rsum = np.empty(n_blocks)
        srsum = np.empty(n_blocks)
        active = clip is not None and not self._clip_is_inactive(clip)
        inv = self._inv_aug if active else None
        y, labels8 = self._kernel_targets(kind)
        rows = (X, None, None) if layout == 0 else (X.indptr, X.indices, X.data)
        outside = (None, None) if self._all_inside else self._outside
        args = (kind, param, layout, *rows, self._n, y, labels8, *outside, inv,
                np.ascontiguousarray(w), 0.0 if cw is None else cw, v,
                clip if active else 0.0)

        def group(g: int) -> None:  # threads claim groups in turn
            part = np.empty((1, d))
            for j in range(edges[g], edges[g + 1]):
                # block j alone: its slice of starts, so the kernel writes row 0 of part
                _margin_blocks(*args, starts[j:j + 2], 0, 1, part, rsum[j:j + 1],
                               srsum[j:j + 1])
                if c is not None:  # centred block by block (small cancellation)
                    part[0] -= srsum[j] * c
                G[g] += part[0]

        run_blocks(group, n_groups, self.n_threads)
        self.rows_read += self._n
        total = np.empty(self._p)
        total[:d] = G.sum(axis=0)
        if kappa is not None:
            total[d] = (kappa * rsum).sum()
        return total

    def _kernel_targets(self, kind: int) -> tuple[np.ndarray, bool]:
        """The targets as the kernel reads them: logistic labels (exactly -1 or +1) as int8
        (held so when the objective kept int8 labels, else an int8 copy made once per target
        vector: an eighth of the bytes read per step), other targets as held (contiguous
        float64: the squared and Huber losses' check_targets)."""
        y = self._y
        if kind == COMPILED_RESIDUALS["logistic"]:
            if y.dtype == np.int8:  # checked to lie in {-1, +1} (check_targets)
                return y, True
            cached = self._kernel_y
            if cached is None or cached[0] is not y:
                labels = y.astype(np.int8)
                cached = (y, labels) if np.array_equal(labels, y) else (y, None)
                self._kernel_y = cached
            if cached[1] is not None:
                return cached[1], True
        return y, False

    def _scale_at(self, sel: slice | np.ndarray) -> np.ndarray | None:
        """Scale factors :math:`s_i` of rows ``sel``, dense (None: every row is inside)."""
        return None if self._all_inside else scale_at(*self._outside, sel)

    def _targets_at(self, sel: slice | np.ndarray) -> np.ndarray:
        """Targets of rows ``sel`` as the objective checked them, int8 labels converted to
        float64 (a block at a time; class indices of a multi-margin model stay integers)."""
        yb = self._y[sel]
        return yb.astype(np.float64) if yb.dtype == np.int8 and not self._multi else yb

    def _csr_view(self, a: int, b: int) -> _CSRRows:
        """Rows ``a:b`` of the CSR ``X`` without a copy (see :class:`_CSRRows`)."""
        return _CSRRows(self._X, a, b)

    def _mapped_centred(self, idx: np.ndarray) -> np.ndarray:
        """Dense copies of :math:`s_i(x_i - c)` for rows ``idx`` (no overflow: ``x s - c s``)."""
        X = self._X
        R = X[idx].toarray() if self._csr else np.asarray(X[idx], dtype=np.float64)
        if self._all_inside:
            return R if self._centre is None else R - self._centre
        s = self._scale_at(idx)[:, None]
        return R * s if self._centre is None else R * s - self._centre * s

    def _mapped(self, idx: np.ndarray) -> np.ndarray:
        """Dense copies of rows ``idx`` mapped into the domain: ``c + s_i (x_i - c)``."""
        E = self._mapped_centred(idx)
        return E if self._centre is None else E + self._centre

    def _map(
        self, theta: np.ndarray, clip: float | None, rows: np.ndarray | None, *, loss: bool
    ) -> list[np.ndarray]:
        """Per-block results (losses or gradient partial sums) in block order."""
        params = self._params(theta)
        if rows is None:
            self.rows_read += self._n
            def fetch(j: int) -> tuple:
                a, b = self._blocks[j]
                Xb = self._csr_view(a, b) if self._csr else self._X[a:b]
                return Xb, slice(a, b), a, b

            n_blocks = len(self._blocks)
        else:
            idx = self._check_rows(rows)
            self.rows_read += int(idx.size)
            k = int(idx.size)
            if k == 0:
                return []
            if k <= 32:  # a few rows (one-example SGD, small batches): one gathered block
                Xg = self._X[idx]
                if not self._csr and Xg.dtype != np.float64:
                    Xg = Xg.astype(np.float64)
                return [self._block_result(Xg, idx, None, None, params, clip, loss)]
            step = self._block
            contiguous = k > 1 and int(idx[-1]) - int(idx[0]) == k - 1 and bool(
                np.all(np.diff(idx) == 1))

            def fetch(j: int) -> tuple:
                lo, hi = j * step, min((j + 1) * step, k)
                if contiguous:
                    a, b = int(idx[lo]), int(idx[hi - 1]) + 1
                    Xb = self._csr_view(a, b) if self._csr else self._X[a:b]
                    return Xb, slice(a, b), a, b
                sel = idx[lo:hi]
                return self._X[sel], sel, None, None

            n_blocks = -(-k // step)

        def one(j: int) -> np.ndarray:
            Xb, sel, a, b = fetch(j)
            if not self._csr and Xb.dtype != np.float64:
                Xb = Xb.astype(np.float64)
            return self._block_result(Xb, sel, a, b, params, clip, loss)

        return run_blocks(one, n_blocks, self.n_threads)

    def _clip_is_inactive(self, clip: float) -> bool:
        """Whether clipping scalar residuals at ``clip`` provably changes none of them."""
        known = self._unclipped_from
        return known is not None and clip * known[1] >= known[0]

    def _params(self, theta: np.ndarray) -> tuple | np.ndarray:
        """What every block's kernel needs of ``theta``, computed once per call.

        Scalar margins: ``(w, kappa v, <c, w>)``; ``K`` margins: ``(W, kappa v, W c)`` with
        ``W`` contiguous (a strided ``W.T`` would miss the BLAS path); no model: ``theta``.
        """
        model, d, kappa, c = self._model, self._d, self._kappa, self._centre
        if model is None:
            return theta
        if isinstance(model, MultiMarginModel):  # margins W f (x - c) = (W diag f)(x - c)
            T = theta.reshape(model.n_outputs, self._p // model.n_outputs)
            W = np.ascontiguousarray(T[:, :d] if self._fs is None else T[:, :d] * self._fs)
            return (W, None if kappa is None else kappa * T[:, d],
                    None if c is None else W @ c)
        w = theta[:d] if self._fs is None else self._fs * theta[:d]  # <w, f (x - c)>
        return (w, 0.0 if kappa is None else kappa * float(theta[d]),
                None if c is None else float(c @ w))

    def _big_in(self, sel: slice | np.ndarray, a: int | None, b: int | None
                ) -> tuple[np.ndarray, np.ndarray]:
        """(positions within the block, mapped rows) of the overflow-prone rows in a block."""
        big = self._big
        if a is not None:
            lo, hi = np.searchsorted(big, [a, b])
            return big[lo:hi] - a, self._big_rows[lo:hi]
        sel = np.asarray(sel)
        pos = np.searchsorted(big, sel)
        hit = (pos < big.size) & (big[np.minimum(pos, big.size - 1)] == sel)
        return np.flatnonzero(hit), self._big_rows[pos[hit]]

    def _block_result(
        self,
        Xb: np.ndarray | sp.csr_array,
        sel: slice | np.ndarray,
        a: int | None,
        b: int | None,
        params: tuple | np.ndarray,
        clip: float | None,
        loss: bool,
    ) -> np.ndarray:
        """One block's result; ``params`` from :meth:`_params` (``theta`` without a model)."""
        yb = self._targets_at(sel)
        sb = self._scale_at(sel)
        model = self._model
        if model is None:
            return self._generic_block(Xb, yb, sb, params, clip, loss)
        # margins of overflow-prone rows may overflow here; the kernel recomputes them
        quiet = np.errstate(over="ignore", invalid="ignore") if self._big.size else nullcontext()
        with quiet:
            kernel = self._multi_margin_block if self._multi else self._margin_block
            return kernel(Xb, yb, sb, sel, a, b, params, clip, loss, model)

    def _margin_block(
        self,
        Xb: np.ndarray | sp.csr_array,
        yb: np.ndarray,
        sb: np.ndarray | None,
        sel: slice | np.ndarray,
        a: int | None,
        b: int | None,
        params: tuple,
        clip: float | None,
        loss: bool,
        model: MarginModel,
    ) -> np.ndarray:
        """The fused kernel of the module doc for one block (loss or gradient partial sum)."""
        d, kappa, c = self._d, self._kappa, self._centre
        z, pos, E = self._block_margins(Xb, sb, sel, a, b, params)
        if loss:
            return model.loss(z, yb)
        r = model.residual(z, yb)
        if clip is not None and not self._clip_is_inactive(clip):
            bound = self._inv_aug[sel] * clip  # clip r to [-bound, bound], in place
            np.minimum(r, bound, out=r)
            np.maximum(r, np.negative(bound, out=bound), out=r)
        out = np.empty(self._p)
        if kappa is not None:
            out[d] = kappa * r.sum()
        if pos is not None and pos.size:
            r_big = r[pos].copy()
            r[pos] = 0.0
        if sb is not None:
            r *= sb
        if isinstance(Xb, _CSRRows):
            g = Xb.rmatvec(r)
        else:
            g = Xb.T @ r if self._csr else r @ Xb
        if c is not None:
            g -= c * r.sum()
        if pos is not None and pos.size:
            g += r_big @ E
        out[:d] = g
        return out

    def _block_margins(
        self,
        Xb: np.ndarray | sp.csr_array | _CSRRows,
        sb: np.ndarray | None,
        sel: slice | np.ndarray,
        a: int | None,
        b: int | None,
        params: tuple,
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        r"""``(z, pos, E)``: the block's margins :math:`z_b = s_b\odot(X_bw - \langle c,
        w\rangle) + \kappa v` (module doc), and the positions and mapped rows of its
        overflow-prone rows (whose margins are recomputed from ``E``; None when there are
        none)."""
        c = self._centre
        w, v, cw = params
        z = Xb.matvec(w) if isinstance(Xb, _CSRRows) else Xb @ w
        if c is not None:
            z -= cw
        if sb is not None:
            z *= sb
        if v:
            z += v
        if self._big.size:
            pos, E = self._big_in(sel, a, b)
            if pos.size:
                z[pos] = E @ w + v
            return z, pos, E
        return z, None, None

    def _multi_margin_block(
        self,
        Xb: np.ndarray | sp.csr_array,
        yb: np.ndarray,
        sb: np.ndarray | None,
        sel: slice | np.ndarray,
        a: int | None,
        b: int | None,
        params: tuple,
        clip: float | None,
        loss: bool,
        model: MultiMarginModel,
    ) -> np.ndarray:
        """The ``K``-margin kernel of the module doc for one block (loss or gradient sum)."""
        d, kappa, c = self._d, self._kappa, self._centre
        K = model.n_outputs
        W, v, Wc = params
        if isinstance(Xb, _CSRRows):
            Z = Xb.matmat(W.T)
        else:
            Z = np.asarray(Xb @ W.T, dtype=np.float64)
        if c is not None:
            Z -= Wc
        if sb is not None:
            Z *= sb[:, None]
        if v is not None:
            Z += v
        if self._big.size:
            pos, E = self._big_in(sel, a, b)
            if pos.size:
                Z[pos] = E @ W.T + (0.0 if v is None else v)
        else:
            pos = E = None
        if loss:
            return model.loss(Z, yb)
        R = model.residual(Z, yb)
        if clip is not None:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                f = (clip * self._inv_aug[sel]) / np.sqrt(np.einsum("ij,ij->i", R, R))
            R *= np.fmin(1.0, f)[:, None]  # 1 where f is inf or NaN (r = 0 or x~ = 0)
        out = np.empty((K, self._p // K))
        if kappa is not None:
            out[:, d] = kappa * R.sum(axis=0)
        if pos is not None and pos.size:
            R_big = R[pos].copy()
            R[pos] = 0.0
        if sb is not None:
            R *= sb[:, None]
        if isinstance(Xb, _CSRRows):
            G = Xb.rmatmat(R).T
        elif self._csr:
            G = np.asarray(Xb.T @ R).T
        else:
            G = R.T @ Xb
        if c is not None:
            G -= np.outer(R.sum(axis=0), c)
        if pos is not None and pos.size:
            G += R_big.T @ E
        out[:, :d] = G
        return out.ravel()

    def _generic_block(
        self,
        Xb: np.ndarray | sp.csr_array,
        yb: np.ndarray,
        sb: np.ndarray | None,
        theta: np.ndarray,
        clip: float | None,
        loss: bool,
    ) -> np.ndarray:
        obj = self.objective
        if isinstance(Xb, _CSRRows):
            Xb = Xb.to_csr()
        if sp.issparse(Xb):
            if obj.supports_sparse:
                if sb is not None:
                    Xb = sp.csr_array((Xb.data * np.repeat(sb, np.diff(Xb.indptr)), Xb.indices,
                                       Xb.indptr), shape=Xb.shape)
            else:
                Xb = Xb.toarray()
                if sb is not None:
                    Xb *= sb[:, None]
        elif sb is not None:
            Xb = Xb * sb[:, None]
        if loss:
            return np.asarray(obj.per_example_loss(theta, Xb, yb), dtype=np.float64)
        return np.asarray(obj.clipped_gradient_sum(theta, Xb, yb, clip), dtype=np.float64)
