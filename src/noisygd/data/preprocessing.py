"""Row-wise and bound-based preprocessing, plus the data-dependent scalers that warn.

Privacy accounting in noisygd covers the releases a fit makes (the training run, and the
statistics it pays for before it: a private count, conditioning, schema bounds), not the steps
applied to the data before the fit. Such a step is free (costs no privacy budget) when it is a
fixed function applied to each row separately, with all of its constants chosen without looking at
the private data: clipping a row to a norm ball, mapping a feature through public bounds, one-hot
encoding against a documented category list, ``log1p``.
Such a map ``x_i -> f(x_i)`` turns neighbouring datasets into neighbouring datasets, so any
(epsilon, delta) guarantee of the algorithm run on ``f(D)`` holds for ``D`` unchanged.

A step that computes a statistic of the data (mean, standard deviation, minimum, maximum) couples
the rows: changing one row changes every other row's features, and the statistic itself is
released through the model. :func:`standardize` and :func:`minmax_scale` therefore emit
:class:`noisygd.exceptions.PrivacyLeakWarning` unless the caller declares the data (or the
statistics) public with ``declare_public=True``.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from noisygd._checks import check_positive_int
from noisygd.exceptions import PrivacyLeakWarning
from noisygd.oracles import rows as _rows

__all__ = [
    "clip_rows",
    "minmax_scale",
    "one_hot",
    "scale_by_bounds",
    "signed_log1p",
    "standardize",
]


def _as_matrix(X: ArrayLike, what: str = "X") -> np.ndarray:
    """Return ``X`` as a finite 2-D float64 array or raise ``ValueError`` naming the problem."""
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be a numeric array: {exc}") from exc
    if arr.ndim != 2:
        raise ValueError(f"{what} must be 2-D (n_rows, n_features); got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} contains NaN or infinite values")
    return arr


def clip_rows(X: ArrayLike | sp.sparray | sp.spmatrix, bound: float) -> np.ndarray | sp.csr_array:
    """Scale every row to Euclidean norm at most ``bound``.

    Implements ``x_i <- x_i * min(1, B / ||x_i||_2)``, the per-row projection onto the ball of
    radius ``B``. Rows already inside the ball are returned unchanged; longer rows keep their
    direction. The result satisfies ``||x_i||_2 <= B`` as computed in floating point (a row whose
    rescaled norm still rounds above ``B`` is shrunk by a further ulp-sized factor).

    The map acts on each row alone and has no data-dependent constant, so it is free under any
    neighbouring relation. This is :func:`noisygd.oracles.rows.clip_rows`, the one home of row
    clipping (the gradient oracles apply the same map as a scale factor, without a copy).

    Parameters
    ----------
    X : array_like or scipy.sparse matrix, shape (n, d)
        Rows to clip.
    bound : float
        The radius ``B > 0``.

    Returns
    -------
    numpy.ndarray or scipy.sparse.csr_array, shape (n, d)
        A new float64 array (C-contiguous; CSR for sparse ``X``); ``X`` is not modified.

    Raises
    ------
    TypeError
        ``bound`` is not a real number.
    ValueError
        ``bound`` is not positive and finite, ``X`` is not 2-D or holds NaN or infinities.
    """
    return _rows.clip_rows(X, bound)


def scale_by_bounds(X: ArrayLike, lower: ArrayLike, upper: ArrayLike) -> np.ndarray:
    """Clip each column to public bounds ``[lower, upper]`` and map it affinely onto ``[0, 1]``.

    Implements ``z_ij = (clip(x_ij, l_j, u_j) - l_j) / (u_j - l_j)``. The bounds must be public
    (documented coding, domain knowledge), never computed from ``X``; then the map is per-row and
    free.

    Parameters
    ----------
    X : array_like, shape (n, d)
    lower, upper : float or array_like of shape (d,)
        Public bounds with ``lower < upper`` in every column.

    Returns
    -------
    numpy.ndarray, shape (n, d)
        Values in ``[0, 1]``.
    """
    arr = _as_matrix(X)
    d = arr.shape[1]
    lo = np.asarray(lower, dtype=np.float64)
    hi = np.asarray(upper, dtype=np.float64)
    lo = np.full(d, float(lo)) if lo.ndim == 0 else lo
    hi = np.full(d, float(hi)) if hi.ndim == 0 else hi
    if lo.shape != (d,) or hi.shape != (d,):
        raise ValueError(
            f"lower and upper must be scalars or have shape ({d},) to match X's {d} columns; "
            f"got {lo.shape} and {hi.shape}"
        )
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError("lower and upper bounds must be finite")
    bad = np.flatnonzero(~(lo < hi))
    if bad.size:
        raise ValueError(
            f"lower must be strictly below upper in every column; fails in columns {bad.tolist()}"
        )
    out = (np.clip(arr, lo, hi) - lo) / (hi - lo)
    return np.ascontiguousarray(np.clip(out, 0.0, 1.0))


def signed_log1p(x: ArrayLike) -> np.ndarray:
    """Return ``sign(x) * log(1 + |x|)``, a monotone per-value compression of heavy tails."""
    a = np.asarray(x, dtype=np.float64)
    return np.sign(a) * np.log1p(np.abs(a))


def one_hot(codes: ArrayLike, n_categories: int) -> np.ndarray:
    """One-hot encode integer codes; a negative code (unknown or missing) gives an all-zero row.

    Parameters
    ----------
    codes : array_like of int, shape (n,)
        Index of each row's category in a public category list, or ``-1``.
    n_categories : int
        Length of the category list.

    Returns
    -------
    numpy.ndarray, shape (n, n_categories)
        Each row sums to 1 (known category) or 0 (unknown).

    Raises
    ------
    TypeError
        ``codes`` not of an integer dtype, ``n_categories`` not an integer.
    ValueError
        ``codes`` not 1-D, a code ``>= n_categories``, ``n_categories < 1``.
    """
    c = np.asarray(codes)
    if not np.issubdtype(c.dtype, np.integer):
        raise TypeError(f"codes must be an integer array, got dtype {c.dtype}")
    if c.ndim != 1:
        raise ValueError(f"codes must be 1-D, got {c.ndim} dimension(s)")
    n_categories = check_positive_int("n_categories", n_categories)
    if np.any(c >= n_categories):
        raise ValueError(f"codes must be below n_categories={n_categories}")
    out = np.zeros((c.shape[0], n_categories), dtype=np.float64)
    known = np.flatnonzero(c >= 0)
    out[known, c[known]] = 1.0
    return out


def _warn_unless_public(step: str, declare_public: bool) -> None:
    if not declare_public:
        warnings.warn(
            f"{step} computes statistics from the data, which is not differentially private: "
            "the statistics couple all rows and are released through the model. Use public "
            "bounds (scale_by_bounds) instead, or pass declare_public=True if X or the statistics "
            "are public.",
            PrivacyLeakWarning,
            stacklevel=3,
        )


def standardize(X: ArrayLike, *, declare_public: bool = False) -> np.ndarray:
    """Centre each column to mean 0 and scale it to standard deviation 1 (data-dependent).

    Implements ``z_ij = (x_ij - mean_j) / sd_j`` with the population standard deviation
    (``ddof=0``); a constant column is only centred. Because ``mean_j`` and ``sd_j`` are computed
    from ``X``, this step is not private: it warns with
    :class:`~noisygd.exceptions.PrivacyLeakWarning` unless ``declare_public=True`` (the caller
    declares that ``X``, or these statistics, are public).

    Returns
    -------
    numpy.ndarray
        The standardized copy.
    """
    _warn_unless_public("standardize", declare_public)
    arr = _as_matrix(X)
    if arr.shape[0] == 0:
        raise ValueError("standardize needs at least one row")
    mean = arr.mean(axis=0)
    sd = arr.std(axis=0)
    sd = np.where(sd > 0.0, sd, 1.0)
    return np.ascontiguousarray((arr - mean) / sd)


def minmax_scale(X: ArrayLike, *, declare_public: bool = False) -> np.ndarray:
    """Map each column affinely onto ``[0, 1]`` using its observed min and max (data-dependent).

    Implements ``z_ij = (x_ij - min_j) / (max_j - min_j)``; a constant column maps to 0. The
    minimum and maximum are computed from ``X`` (and are as revealing as statistics get), so this
    warns with :class:`~noisygd.exceptions.PrivacyLeakWarning` unless ``declare_public=True``.
    For a private pipeline use :func:`scale_by_bounds` with public bounds.
    """
    _warn_unless_public("minmax_scale", declare_public)
    arr = _as_matrix(X)
    if arr.shape[0] == 0:
        raise ValueError("minmax_scale needs at least one row")
    lo = arr.min(axis=0)
    span = arr.max(axis=0) - lo
    span = np.where(span > 0.0, span, 1.0)
    return np.ascontiguousarray((arr - lo) / span)
