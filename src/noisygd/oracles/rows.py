r"""Row norms and the per-row map into the declared domain: the one home of row clipping.

The domain of every theorem in noisygd is :math:`\lVert x_i - c\rVert \le B` (``c`` = 0 except
for :class:`~noisygd.objectives.centred.CentredGLM`'s public centre). A row outside it is
mapped onto the sphere by the **scale factor**

.. math::

    s_i = \min\big(1, B / \lVert x_i - c\rVert\big), \qquad x_i \mapsto c + s_i (x_i - c),

the Euclidean projection onto the ball. The map acts on each row alone and has no
data-dependent constant, so it is free under every neighbouring relation.
:class:`~noisygd.oracles.array.ArrayOracle` keeps the vector ``s`` (``O(n)``) and never
copies ``X``; :func:`clip_rows` returns the mapped copy for public preprocessing.

Numerics: a squared norm :math:`\sum_j x_{ij}^2` overflows for entries above about
:math:`1.3\times10^{154}` (and underflows below :math:`10^{-154}`). Rows whose squared norm
leaves :math:`[10^{-290}, 10^{290}]` are recomputed after dividing by the row's max-abs
:math:`m_i`: :math:`\lVert x_i\rVert = m_i\lVert x_i/m_i\rVert` and
:math:`s_i = \min(1, (B/m_i)/\lVert x_i/m_i\rVert)`, finite and positive for every finite row
(a norm above the largest float is reported as ``inf``; its scale factor stays finite).
Each function reads ``X`` once, in row blocks of 2 to 4 MiB (1 MiB for CSR: :func:`block_rows`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from noisygd._checks import check_positive, check_positive_int
from noisygd.oracles._parallel import run_blocks

try:  # the compiled dense scan (setup.py); optional: without it NumPy serves every block
    from noisygd.oracles._row_kernels_c import scan_blocks as _scan_blocks
except ImportError:  # pragma: no cover (an install without a C compiler)
    _scan_blocks = None
try:  # the compiled CSR squared norms (the same sums in the same order as the NumPy path)
    from noisygd.oracles._row_kernels_c import csr_sq_norms as _csr_sq_norms
except ImportError:  # pragma: no cover (an install without a C compiler, or an older build)
    _csr_sq_norms = None

__all__ = ["BLOCK_BYTES", "block_rows", "canonical_rows", "clip_rows", "row_norms", "row_scale",
           "scan_rows"]

#: Smallest target size of one row block (bytes of ``X``): two blocks in flight stay in the
#: L2/L3 cache, so the second pass of a fused kernel reads them from cache.
BLOCK_BYTES = 1 << 21
#: Largest target block size; blocks grow from :data:`BLOCK_BYTES` to this so that a larger
#: ``X`` makes about :data:`TARGET_BLOCKS` blocks (fewer per-block Python calls and thread
#: hand-offs). Measured on 2 cores, d = 50: n = 1e5, one gradient 1.34 reads with 2 MiB blocks,
#: 1.22 with 4 MiB; n = 1e6, 0.97-1.03 against 0.74-0.97.
MAX_BLOCK_BYTES = 1 << 22
#: Block size for CSR rows, whatever their number (see :func:`block_rows`).
SPARSE_BLOCK_BYTES = 1 << 20
#: Blocks per pass the size rule aims at between the two bounds.
TARGET_BLOCKS = 10

_SQ_HI = 1e290  # squared norms above: recompute with max-abs scaling (and mark the row "big")
_SQ_LO = 1e-290  # squared norms below (and nonzero rows): recompute with max-abs scaling


def block_rows(X: np.ndarray | sp.sparray | sp.spmatrix) -> int:
    """Rows per block for ``X``: a fixed function of its shape (and, for CSR, its nonzeros).

    The partition of the rows into blocks is the summation order of every blocked sum;
    it never depends on the number of threads. Blocks hold about
    ``clamp(bytes(X) / TARGET_BLOCKS, BLOCK_BYTES, MAX_BLOCK_BYTES)`` bytes: an ``X`` of at
    most ``TARGET_BLOCKS * BLOCK_BYTES`` (20 MiB) gets the 2 MiB blocks it always had.
    CSR gets :data:`SPARSE_BLOCK_BYTES` (1 MiB) blocks whatever its size: its kernels gain
    nothing from larger ones (1e6 x 1e4 at 0.1%: 10.0 ms a gradient with 2 MiB blocks, 10.5
    with 4 MiB), and the NumPy/SciPy temporaries of a block (the scan's, the curvature's: a
    few arrays of the block's nonzeros, one set per thread) grow with it. With 1 MiB blocks
    that fit's peak resident memory fell by 4 MB against 2 MiB; one compiled gradient took
    7.3 ms against 7.2, one diagonal curvature 34.7 ms against 31.2 (median of 12 and 5
    calls, 2 cores; ``benchmarks/bench_scale.py``'s problem).
    """
    n, d = X.shape
    sparse = sp.issparse(X)
    per_row = max((X.nnz / max(n, 1)) * 12.0 if sparse else d * 8.0, 1.0)
    if sparse:
        target = SPARSE_BLOCK_BYTES
    else:
        target = min(MAX_BLOCK_BYTES, max(BLOCK_BYTES, n * per_row / TARGET_BLOCKS))
    return int(max(16, min(n, target // per_row)))


@dataclass(frozen=True)
class RowScan:
    """What one pass over the rows finds (see :func:`scan_rows`).

    Attributes
    ----------
    norms : ndarray (n,)
        :math:`\\lVert x_i - c\\rVert` (``inf`` only when it exceeds the largest float).
    outside : ndarray of int64
        Sorted indices of the rows outside the ball, those whose scale factor
        :math:`s_i = \\min(1, B/\\lVert x_i - c\\rVert)` is not exactly 1 (empty with a
        ``None`` bound). Kept sparse: usually few rows lie outside, and a dense vector of
        factors would hold 8 bytes a row for the whole fit (:attr:`scale` makes one).
    outside_scale : ndarray of float64
        Their factors :math:`s_i`, in the same order (every other factor is 1).
    big : ndarray of int
        Sorted indices of rows with squared norm above ``1e290`` (entries so large that a
        margin could overflow: the oracle evaluates them on scaled copies).
    nonzeros : int or None
        Number of nonzero entries (dense ``X``, when asked).
    squared_norms : float or None
        :math:`\\sum_i \\min(\\lVert f\\odot(x_i - c)\\rVert/B, 1)^2` (with a bound; the
        blocks' sums added in block order).
    rows : ndarray (d,) or None
        :math:`\\sum_i s_i f\\odot(x_i - c)` (when asked: ``sums``).
    absolute_rows : ndarray (d,) or None
        :math:`\\sum_i s_i |f\\odot(x_i - c)|`, entrywise (when asked: ``sums``).
    """

    norms: np.ndarray
    outside: np.ndarray
    outside_scale: np.ndarray
    big: np.ndarray
    nonzeros: int | None
    squared_norms: float | None = None
    rows: np.ndarray | None = None
    absolute_rows: np.ndarray | None = None

    @property
    def scale(self) -> np.ndarray:
        """The factors :math:`s_i` of every row, dense (a new array; 1 inside the ball)."""
        return scale_at(self.outside, self.outside_scale, slice(0, self.norms.shape[0]))


def scale_at(outside: np.ndarray, outside_scale: np.ndarray,
             sel: slice | np.ndarray) -> np.ndarray:
    """The factors :math:`s_i` of the rows ``sel`` (a slice ``a:b`` or row indices), dense,
    from their sparse form (:class:`RowScan`): 1.0 except at the rows ``outside``."""
    if isinstance(sel, slice):
        a, b = int(sel.start or 0), int(sel.stop)
        lo, hi = np.searchsorted(outside, (a, b))
        s = np.ones(b - a)
        s[outside[lo:hi] - a] = outside_scale[lo:hi]
        return s
    rows = np.asarray(sel, dtype=np.int64)
    s = np.ones(rows.shape[0])
    if outside.size:
        pos = np.minimum(np.searchsorted(outside, rows), outside.size - 1)
        hit = outside[pos] == rows
        s[hit] = outside_scale[pos[hit]]
    return s


def canonical_rows(X: Any, *, check_columns: bool = False) -> Any:
    """``X`` with each sparse row as the matrix means it: a sparse ``X`` whose entries are not
    in canonical CSR form (a column stored twice in a row, unsorted columns, another format)
    is returned as a CSR copy of its kind (matrix or array) with the duplicates summed and
    the columns sorted; anything else is returned as it is (no copy).

    A row's norm read from its stored entries (:func:`scan_rows`) is that of the row only
    when no column is stored twice: the entries 3 and 4 in one column are the value 7, norm
    7, where their squares sum to 25 (norm 5). A clip computed from the smaller norm would
    let the row add more than the sensitivity bound of a release, so every scan reads
    canonical rows.

    A CSR matrix whose row pointers decrease is refused (``ValueError``), and with
    ``check_columns`` one that stores a column index outside ``[0, n_columns)``: SciPy
    builds both without complaint (its construction checks only shapes), and a compiled
    kernel that reads parameters by column index would read outside them. An estimator checks
    once per fit, an oracle once when it is built; a scan of an ``X`` already checked does
    not check again.
    """
    if not sp.issparse(X):
        return X
    A = X
    if not (X.format == "csr" and X.has_canonical_format):
        if X.format == "csr" and np.any(np.diff(X.indptr) < 0):
            # SciPy's sum_duplicates fails with a C++ vector error on such a matrix
            raise ValueError("X is not a valid CSR matrix: its row pointers (indptr) decrease")
        A = X.tocsr(copy=True)  # a csr_matrix stays a matrix, a sparse array an array
        A.sum_duplicates()
    if check_columns and A.nnz and (int(A.indices.min()) < 0
                                    or int(A.indices.max()) >= A.shape[1]):
        raise ValueError(f"X is not a valid CSR matrix: a stored column index lies outside "
                         f"[0, {A.shape[1]})")
    return A


def _as_matrix(X: object) -> np.ndarray | sp.csr_array:
    if sp.issparse(X):
        if len(X.shape) != 2:  # type: ignore[attr-defined]
            raise ValueError("X must be a 2-D matrix")
        X = sp.csr_array(canonical_rows(X))
        if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
            raise ValueError(f"X must hold real numbers, got dtype {X.dtype}")
        return X
    A = np.asarray(X)
    if A.ndim != 2:
        raise ValueError(f"X must be a 2-D array, got {A.ndim} dimension(s)")
    if not np.issubdtype(A.dtype, np.number) or np.issubdtype(A.dtype, np.complexfloating) \
            or A.dtype == np.bool_:
        raise ValueError(f"X must hold real numbers, got dtype {A.dtype}")
    return A


def _exact(D: np.ndarray, bound: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Norms and scale factors of the rows of ``D`` by max-abs scaling (finite rows only)."""
    m = np.max(np.abs(D), axis=1) if D.shape[1] else np.zeros(D.shape[0])
    if not np.all(np.isfinite(m)):
        raise ValueError("X contains NaN or infinite values")
    norms = np.zeros(D.shape[0])
    scale = np.ones(D.shape[0])
    nz = m > 0
    if np.any(nz):
        unit = np.sqrt(np.einsum("ij,ij->i", D[nz] / m[nz, None], D[nz] / m[nz, None]))
        with np.errstate(over="ignore"):
            norms[nz] = m[nz] * unit
        if bound is not None:
            # bound / m overflows to inf for a subnormal row maximum m: min(1, inf) = 1
            with np.errstate(over="ignore"):
                scale[nz] = np.minimum(1.0, (bound / m[nz]) / unit)
    return norms, scale


def _dense_block(X: np.ndarray, a: int, b: int) -> np.ndarray:
    block = X[a:b]
    return block if block.dtype == np.float64 else block.astype(np.float64)


def _compiled_csr(X: sp.csr_array) -> bool:
    """Whether :func:`_block_sq` reads the CSR ``X`` with the compiled squared norms: built,
    float64 values, indices and pointers of one integer width (SciPy's int32 or int64)."""
    return (_csr_sq_norms is not None and X.data.dtype == np.float64
            and X.indices.dtype == X.indptr.dtype
            and X.indices.dtype in (np.dtype(np.int32), np.dtype(np.int64))
            and X.data.flags.c_contiguous and X.indices.flags.c_contiguous
            and X.indptr.flags.c_contiguous)


def _block_sq(
    X: np.ndarray | sp.csr_array, a: int, b: int, c: np.ndarray | None, cc: float,
    count_nonzero: bool, nnz: int, f: np.ndarray | None = None, buf: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, object, int]:
    r"""Squared norms of rows ``a:b`` (minus ``c``, times the column weights ``f``); the
    block's rows as summed (dense without ``c`` and ``f``: the block; else None), empty rows
    (CSR), the block. ``cc`` is :math:`\lVert f\odot c\rVert^2`; ``buf`` (dense, any number of
    rows) receives the centred (weighted) rows a chunk at a time, so that a scan allocates one
    small buffer per thread, not a block-sized temporary per block."""
    if sp.issparse(X):
        # the block's entries are a slice of X.data (no copy of the block's structure)
        counts = np.diff(X.indptr[a:b + 1])
        cw = None if c is None else c if f is None else c * f * f
        if _compiled_csr(X):  # the same sums, in the same order, in one read of the block
            sq, mv = np.empty(b - a), None if cw is None else np.empty(b - a)
            _csr_sq_norms(X.data, X.indices, X.indptr, a, b,
                          None if f is None else np.square(f), cw, sq, mv)
        else:
            p0, p1 = X.indptr[a], X.indptr[b]
            data = np.square(X.data[p0:p1], dtype=np.float64)
            if f is not None:
                data *= np.square(f)[X.indices[p0:p1]]
            rid = np.repeat(np.arange(b - a, dtype=np.int32), counts)
            sq = np.bincount(rid, weights=data, minlength=b - a)
            mv = None if cw is None else np.asarray(X[a:b] @ cw).ravel()
        if mv is not None:
            sq = np.maximum(sq - 2.0 * mv + cc, 0.0)
        return sq, None, counts == 0, None, nnz
    Xb = _dense_block(X, a, b)
    if count_nonzero:
        nnz += int(np.count_nonzero(Xb))
    if c is None and f is None:
        return np.einsum("ij,ij->i", Xb, Xb), Xb, None, Xb, nnz
    # never write into X: the centred (weighted) rows go to the buffer, a chunk of rows at a
    # time (a chunk small enough to stay in the core's cache between its write and its read)
    if buf is None:
        buf = np.empty((min(b - a, _chunk_rows(Xb.shape[1])), Xb.shape[1]))
    sq = np.empty(b - a)
    step = buf.shape[0]
    for i in range(0, b - a, step):
        j = min(i + step, b - a)
        D = buf[:j - i]
        if c is None:
            np.multiply(Xb[i:j], f, out=D)
        else:
            np.subtract(Xb[i:j], c, out=D)
            if f is not None:
                np.multiply(D, f, out=D)
        np.einsum("ij,ij->i", D, D, out=sq[i:j])
    return sq, None, None, Xb, nnz


def _chunk_rows(d: int) -> int:
    """Rows of the centred-copy buffer: about 256 KiB (at least 16 rows)."""
    return max(16, (1 << 18) // max(8 * d, 1))


def _centred(E: np.ndarray, c: np.ndarray | None, f: np.ndarray | None) -> np.ndarray:
    r""":math:`f\odot(E - c)` row by row, as the scan computes it (a copy)."""
    E = E.astype(np.float64, copy=False)
    if c is not None:
        E = E - c
    if f is not None:
        E = E * f
    return E


#: What :func:`scan_rows` sums besides the norms when asked (``sums``).
SCAN_SUMS = ("rows", "absolute_rows")


def scan_rows(
    X: np.ndarray | sp.sparray | sp.spmatrix,
    bound: float | None = None,
    *,
    centre: np.ndarray | None = None,
    count_nonzero: bool = False,
    feature_scale: np.ndarray | None = None,
    nonzero_limit: float | None = None,
    n_threads: int = 1,
    sums: tuple[str, ...] = (),
) -> RowScan:
    r"""One pass over ``X``: norms, scale factors, overflow-prone rows, nonzeros; checks finiteness.

    With ``feature_scale`` :math:`f` (public, positive) the norms are those of the
    rescaled centred rows :math:`\lVert f\odot(x_i - c)\rVert` and the scale factors
    :math:`s_i = \min(1, B/\lVert f\odot(x_i - c)\rVert)` project onto the ball in those
    coordinates (a per-row map with public constants, as without it).

    With a bound, the same pass sums :math:`\sum_i\min(\lVert f\odot(x_i - c)\rVert/B, 1)^2`
    (``squared_norms``) and, for a dense ``X`` and the names in ``sums``, the served rows
    :math:`\sum_i s_i f\odot(x_i - c)` (``"rows"``) and their absolute values
    :math:`\sum_i s_i|f\odot(x_i - c)|` (``"absolute_rows"``), each row while it is in cache
    (the sums of :meth:`~noisygd.oracles.array.ArrayOracle.bounded_row_sums`, formed directly
    from the centred rows: no cancellation against :math:`c\sum_i s_i`). Each block's sums are
    taken in row order and the blocks' added in block order, so they do not depend on
    ``n_threads``. A C-contiguous float64 dense ``X`` is scanned by the compiled kernel
    (``_row_kernels.c``, one read per row) where it is built; other dtypes, blocks holding a
    row whose squared norm leaves :math:`[10^{-290}, 10^{290}]` and installs without it take
    the NumPy path (equal up to rounding). A CSR block's squared norms
    :math:`\sum_t f_{j_t}^2x_t^2 - 2\sum_t x_t c_{j_t}f_{j_t}^2 + \lVert f\odot c\rVert^2`
    are read by the compiled ``csr_sq_norms`` in one pass over its nonzeros (float64 values,
    indices and pointers of one width): the same sums in the same order as the NumPy path's
    ``bincount`` and sparse product, so equal to the last bit (no copy of the block; 2.6 times
    faster on ``bench_scale``'s CSR matrix).

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n, d)
        Any real dtype (blocks are converted to float64 one at a time: ``X`` is never copied).
    bound : float or None
        ``B`` for the scale factors (None: scale factors all 1).
    centre : ndarray of shape (d,) or None
        Public centre ``c``.
    count_nonzero : bool
        Also count the nonzeros of a dense ``X`` (for the "auto" sparse storage rule).
    feature_scale : ndarray of shape (d,) or None
        Public positive column weights :math:`f` (None: all ones).
    nonzero_limit : float or None
        With ``count_nonzero``: stop counting once the count exceeds this (the reported
        ``nonzeros`` is then some value above it, not the total). For a caller that only
        compares the count with a threshold (:class:`~noisygd.oracles.array.ArrayOracle`'s
        "auto" storage rule): a dense ``X`` is not counted past the threshold.
    n_threads : int, default=1
        Threads over the row blocks (:func:`~noisygd.oracles._parallel.run_blocks`); each
        row's results are computed alone, so they are the same for every value.
    sums : tuple of str, default=()
        Names in :data:`SCAN_SUMS` to sum in the same pass (dense ``X`` and a bound only;
        ignored for sparse ``X``).

    Raises
    ------
    ValueError
        If ``X`` holds NaN or infinite values (the message shows no value of ``X``).
    """
    X = _as_matrix(X)
    n, d = X.shape
    c = None if centre is None else np.asarray(centre, dtype=np.float64)
    if c is not None and c.shape != (d,):
        raise ValueError(f"centre has shape {c.shape}, X has {d} columns")
    f = None if feature_scale is None else np.asarray(feature_scale, dtype=np.float64)
    if f is not None and (f.shape != (d,) or not np.all(np.isfinite(f)) or np.any(f <= 0)):
        raise ValueError(f"feature_scale must hold {d} finite positive values")
    unknown = sorted(set(sums) - set(SCAN_SUMS))
    if unknown:
        raise ValueError(f"unknown scan sums {unknown}; known: {list(SCAN_SUMS)}")
    if sums and bound is None:
        raise ValueError("the scan's sums need a bound")
    dense = not sp.issparse(X)
    want_rows, want_abs = dense and "rows" in sums, dense and "absolute_rows" in sums
    norms = np.empty(n)
    rows = block_rows(X) if n else 1
    blocks = [(a, min(a + rows, n)) for a in range(0, n, rows)]
    n_blocks = len(blocks)
    cc = 0.0 if c is None else float(c @ c) if f is None else float((c * f) @ (c * f))
    fast = (_scan_blocks is not None and dense and X.dtype == np.float64
            and X.flags.c_contiguous and n > 0)
    need_buf = not fast and dense and (c is not None or f is not None)
    local = threading.local()  # one block-sized buffer per thread, reused for its blocks
    count = [0]  # nonzeros so far (blocks counted while at most nonzero_limit)
    lock = threading.Lock()
    row_sums = np.zeros((n_blocks, d)) if want_rows else None
    abs_sums = np.zeros((n_blocks, d)) if want_abs else None
    sq_sums = np.zeros(n_blocks)
    # the factors of the rows outside the ball, per block (sparse: RowScan.outside)
    outside: list[tuple[np.ndarray, np.ndarray] | None] = [None] * n_blocks

    if fast:
        starts = np.array([a for a, _ in blocks] + [n], dtype=np.int64)
        nnz_blocks = np.zeros(n_blocks, dtype=np.int64)
        flagged = np.zeros(n_blocks, dtype=np.uint8)

    def one(j: int) -> np.ndarray | None:
        a, b = blocks[j]
        counting = count_nonzero and (nonzero_limit is None or count[0] <= nonzero_limit)
        if fast:  # norms (and the sums) in one read of each row (_row_kernels.c)
            _scan_blocks(X, c, f, 0.0 if bound is None else float(bound), starts, j, j + 1,
                         norms, None if row_sums is None else row_sums,
                         None if abs_sums is None else abs_sums,
                         nnz_blocks if counting else None, flagged)
            sq, D, empty, Xb = norms[a:b].copy(), None, None, X[a:b]
            nnz = int(nnz_blocks[j]) if counting else 0
        else:
            buf = getattr(local, "buf", None)
            if need_buf and buf is None:
                buf = local.buf = np.empty((min(rows, n, _chunk_rows(d)), d))
            with np.errstate(over="ignore", invalid="ignore"):
                sq, D, empty, Xb, nnz = _block_sq(X, a, b, c, cc, counting, 0, f, buf)
        if counting:
            with lock:
                count[0] += nnz
        with np.errstate(invalid="ignore"):
            special = ~(sq <= _SQ_HI)  # overflow, inf or NaN
        low = np.flatnonzero(sq < _SQ_LO)  # sq == 0 is exact only for a zero row
        if low.size:
            if empty is not None:  # CSR
                special[low[~empty[low]]] = True
            else:  # dense: the low rows' centred (weighted) entries, as the scan made them
                Dl = D[low] if D is not None else _centred(Xb[low], c, f)  # type: ignore[index]
                special[low[np.any(Dl != 0, axis=1)]] = True
        nb = norms[a:b]
        np.sqrt(sq, out=nb)
        if bound is None:
            sb = None
        else:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                sb = np.minimum(1.0, bound / nb)  # 1 for a zero row (bound / 0 = inf)
        big = None
        recompute = bool(fast and flagged[j])
        if np.any(special):
            recompute = True
            idx = np.flatnonzero(special)
            E = X[a + idx].toarray() if sp.issparse(X) else Xb[idx]  # type: ignore[index]
            # weights above 1 could overflow f (x - c) near the largest float: the rows are
            # taken at f / k (k = max(1, max f)) and their norms and factors rescaled by k
            k = 1.0 if f is None else max(1.0, float(np.max(f)))
            nb[idx], s_exact = _exact(_centred(E, c, None if f is None else f / k),
                                      None if bound is None else bound / k)
            if k > 1.0:
                with np.errstate(over="ignore"):
                    nb[idx] *= k
            if sb is not None:
                sb[idx] = s_exact
            with np.errstate(invalid="ignore"):
                hi = ~(sq[idx] <= _SQ_HI)
            if np.any(hi):
                big = a + idx[hi]
        if bound is not None:
            u = np.divide(nb, bound)
            np.minimum(u, 1.0, out=u)
            sq_sums[j] = float(np.square(u, out=u).sum())  # no BLAS call (module doc)
        if (want_rows or want_abs) and (recompute or not fast):
            _block_sums(Xb, c, f, sb, None if row_sums is None else row_sums[j],
                        None if abs_sums is None else abs_sums[j])
        if sb is not None:
            out = np.flatnonzero(sb != 1.0)
            if out.size:
                outside[j] = ((a + out).astype(np.int64), sb[out])
        return big

    # rows are independent: the result is the same for every number of threads (einsum,
    # ufuncs, count_nonzero and the compiled scan: no BLAS call, so no BLAS limit is needed)
    parts = run_blocks(one, n_blocks, check_positive_int("n_threads", n_threads), blas=False)
    big = [bg for bg in parts if bg is not None]
    kept = [part for part in outside if part is not None]  # in block order: sorted rows
    return RowScan(
        norms=norms,
        outside=(np.concatenate([r for r, _ in kept]) if kept
                 else np.empty(0, dtype=np.int64)),
        outside_scale=np.concatenate([v for _, v in kept]) if kept else np.empty(0),
        big=np.concatenate(big) if big else np.empty(0, dtype=np.intp),
        nonzeros=count[0] if (count_nonzero and not sp.issparse(X)) else None,
        squared_norms=None if bound is None else float(np.sum(sq_sums)),
        rows=None if row_sums is None else row_sums.sum(axis=0),
        absolute_rows=None if abs_sums is None else abs_sums.sum(axis=0),
    )


def _block_sums(Xb: np.ndarray, c: np.ndarray | None, f: np.ndarray | None,
                sb: np.ndarray | None, rows_out: np.ndarray | None,
                abs_out: np.ndarray | None) -> None:
    r"""A dense block's :math:`\sum_i s_i f\odot(x_i - c)` and :math:`\sum_i s_i|f\odot(x_i -
    c)|` (the NumPy path of :func:`scan_rows`'s sums), written into ``rows_out``, ``abs_out``
    (a chunk of rows at a time: no block-sized temporary)."""
    step = _chunk_rows(Xb.shape[1])
    if rows_out is not None:
        rows_out[:] = 0.0
    if abs_out is not None:
        abs_out[:] = 0.0
    for i in range(0, Xb.shape[0], step):  # ufuncs only: no BLAS call (scan_rows)
        D = _centred(Xb[i:i + step], c, f)
        s = None if sb is None else sb[i:i + step, None]
        if rows_out is not None:
            rows_out += (D if s is None else D * s).sum(axis=0)
        if abs_out is not None:
            A = np.abs(D)  # a new chunk (D may be a view of X when there is no c and f)
            if s is not None:
                A *= s
            abs_out += A.sum(axis=0)


def row_norms(
    X: np.ndarray | sp.sparray | sp.spmatrix, *, centre: np.ndarray | None = None,
    feature_scale: np.ndarray | None = None,
) -> np.ndarray:
    r""":math:`\lVert x_i - c\rVert` for every row, overflow-safe, in one pass (module doc).

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n, d)
    centre : ndarray of shape (d,), optional
    feature_scale : ndarray of shape (d,), optional
        Public column weights :math:`f`: the norms of :math:`f\odot(x_i - c)`.

    Returns
    -------
    ndarray of shape (n,)
    """
    return scan_rows(X, None, centre=centre, feature_scale=feature_scale).norms


def row_scale(
    X: np.ndarray | sp.sparray | sp.spmatrix, bound: float, *, centre: np.ndarray | None = None,
    feature_scale: np.ndarray | None = None,
) -> np.ndarray:
    r"""Scale factors :math:`s_i = \min(1, B/\lVert f\odot(x_i - c)\rVert)` (1.0 exactly
    inside the ball; :math:`f` the public ``feature_scale``, all ones when None).

    Finite and positive for every finite row, however large its entries (module doc).
    """
    return scan_rows(X, check_positive("bound", bound), centre=centre,
                     feature_scale=feature_scale).scale


def clip_rows(X: np.ndarray | sp.sparray | sp.spmatrix, bound: float) -> np.ndarray | sp.csr_array:
    r"""A copy of ``X`` with every row scaled to norm at most ``bound``: :math:`s_i x_i`.

    The per-row projection onto the ball of radius ``B`` (module doc). Rows inside are
    copied bit for bit; longer rows keep their direction, and the result satisfies
    :math:`\lVert x_i\rVert_2 \le B` as computed in floating point (a row whose rescaled
    norm still rounds above ``B`` is shrunk by a further ulp-sized factor).

    Parameters
    ----------
    X : array_like or scipy.sparse matrix of shape (n, d)
    bound : float
        The radius ``B > 0``.

    Returns
    -------
    ndarray (float64, C-contiguous) or scipy.sparse.csr_array
        A new array; ``X`` is not modified.
    """
    B = check_positive("bound", bound)
    X = _as_matrix(X)
    s = scan_rows(X, B).scale
    shrink = 1.0 - 4.0 * np.finfo(np.float64).eps
    if sp.issparse(X):
        out = sp.csr_array(X, dtype=np.float64, copy=True)
        out.data *= np.repeat(s, np.diff(out.indptr))
        for _ in range(8):  # rounding guard: shrink the few rows still above B by ulps
            norms = row_norms(out)
            still = np.flatnonzero(norms > B)
            if still.size == 0:
                break
            factor = np.ones(out.shape[0])
            factor[still] = (B / norms[still]) * shrink
            out.data *= np.repeat(factor, np.diff(out.indptr))
        return out
    out = np.array(X, dtype=np.float64, order="C", copy=True)
    over = np.flatnonzero(s < 1.0)
    out[over] *= s[over, None]
    for _ in range(8):  # rounding guard, as np.linalg.norm and as row_norms measure
        rows = out[over]
        norms = np.maximum(np.maximum(np.linalg.norm(rows, axis=1),
                                      np.sqrt(np.einsum("ij,ij->i", rows, rows))),
                           row_norms(rows))  # the scan's own sum (compiled or NumPy)
        still = norms > B
        if not np.any(still):
            break
        out[over[still]] *= ((B / norms[still]) * shrink)[:, None]
    return out
