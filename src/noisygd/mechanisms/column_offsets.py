r"""Column offsets: the private feature range refined about each column's own centre (issue 19).

The private feature range (:mod:`noisygd.mechanisms.feature_range`) scales each column by its
released magnitude :math:`m_j`, the upper edge of its highest occupied binary-exponent bin. A
column far from the origin against its spread (a year, a latitude, a temperature in kelvin, a
timestamp) has its magnitude set by where it lies, not by how it varies: ``1990 + z`` gets
:math:`m_j = 2048` and, once scaled, a spread about :math:`10^{-3}` of its neighbours'. The
later per-feature scale can weigh a column up at most :data:`~noisygd.estimators.
FEATURE_SCALE_CAP` times and resolves no spread finer than its noise, so the fit learns
little of such a column. Measured (``python experiments/column_offsets.py --offsets``, n 8000,
3 seeds): Unix time over one week, carrying signal, gave the regressor a test :math:`R^2` of
0.478 at epsilon 1 and 0.501 at epsilon 8, against 0.815 and 0.816 with the column centred;
``1e4 + z`` beside standard normal columns 0.721 against 0.796 at epsilon 1. With the offsets
every such cell matches the centred fit (within 0.001).

**Which columns** (:func:`offset_box`, post-processing of the feature range's release). A
column is an *offset column* when its histogram shows it nonzero in (nearly) every row, of
one sign and within a factor 4 of itself: no bin of the other sign is occupied, the hull
:math:`[k_{lo}, k_{hi}]` of its occupied bins spans at most :data:`MAX_HULL_OCTAVES` = 2 of
them, and their noisy counts reach the noisy row count less
:math:`z\sigma\sqrt{k_{hi} - k_{lo} + 2}` (the noise of their difference, ``z`` the range's
occupancy :math:`z`). Where the range pooled the columns (they look alike), the rule reads
their mean histogram and takes all of them or none. Its *box* is the hull's value range,
:math:`[2^{k_{lo}}, 2^{k_{hi}+1}]` (negated for a negative column), midpoint :math:`b_j`,
half-width :math:`h_j`. Columns with zeros (a one-hot level, a count) are not offset columns:
centring them would make every row dense.

**Two releases**, each exactly :math:`\mu_k`-GDP (Gaussian mechanism; Dong, Roth and Su 2022,
Thm 2.7), on the :math:`S` offset columns, with the shares of
:data:`~noisygd.mechanisms.feature_range.FEATURE_RANGE_ROUNDS`:

1. the **offset round** (:func:`offset_statistic`): per offset column
   :math:`\sum_i \operatorname{clip}((x_{ij} - b_j)/h_j, -1, 1)`, and the row count. A row
   moves :math:`S + 1` entries by at most 1 under add/remove (L2 sensitivity
   :math:`\sqrt{S + 1}`) and :math:`S` entries by at most 2 under replace-one
   (:math:`2\sqrt S`; :func:`offset_sensitivity`, both reached). The offset is
   :math:`o_j = b_j + h_j\,\operatorname{clip}(\tilde s_j/\tilde N, -1, 1)`
   (:func:`offsets_from_release`).
2. the **deviation round** (:func:`deviation_statistic`): per offset column, the counts of
   :math:`|x_{ij} - o_j|` by binary exponent on the feature range's grid (a value equal to
   :math:`o_j` is not counted), and the row count. A row adds one count per column and one to
   the row count: :math:`\sqrt{S + 1}` under add/remove, :math:`\sqrt{2S}` under replace-one
   (:func:`deviation_sensitivity`). Column ``j``'s refined magnitude :math:`m'_j` is the
   upper edge of its highest bin whose noisy count reaches :math:`z\sigma` (the feature
   range's Bonferroni threshold over these :math:`S` columns), and it keeps :math:`m_j`
   where no bin is occupied (:func:`refined_feature_range`).

The fit's rows are then :math:`g\odot(x - o)` with :math:`o_j = 0` off the offset columns and
:math:`g_j = R/(\min(m_j, m'_j)\sqrt{\bar k})` (the feature range's formula with the refined
magnitude): a public affine map inside the oracle (the conditioning's centre starts at
:math:`g\odot o`), no copy of ``X``. A value the release cannot see (a zero in a column of
years, fewer than :math:`z\sigma` rows) lands outside the box and is clipped by the oracle's
ball, as every row beyond it is.

Which columns are offset columns is decided from the first release, so :math:`S` is known
only when the rounds run, while each stage's noise must be fixed when the fit is planned. The
statistics are therefore divided by :math:`\sqrt{S+1}` (:func:`offset_statistic`,
:func:`deviation_statistic`): their sensitivity is then at most 1 under add/remove (2 and
:math:`\sqrt2` under replace-one) whatever :math:`S` is, the stage's :math:`\sigma =
\Delta/\mu_k` is planned from public facts, and the post-processing multiplies back (noise
:math:`\sqrt{S+1}\,\sigma` on each sum). Choosing the next mechanism from earlier outputs with
its :math:`\mu_k` fixed in advance is adaptive composition (Dong, Roth and Su 2022,
Cor. 3.3). Where no column is an offset column both releases are made anyway (a noisy row
count each): the plan spends their shares whatever the data.

Why written here rather than taken from a library: as for
:mod:`noisygd.mechanisms.feature_range`, dp_accounting accounts for the Gaussian mechanism but
releases nothing, and we found no maintained library that releases per-column offsets.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from noisygd._checks import check_positive
from noisygd.mechanisms.feature_range import (
    FALSE_OCCUPANCY,
    PrivateFeatureRange,
    _bins,
    bin_upper_edge,
    magnitude_histogram,
    occupancy_threshold,
    pooled_top_bin,
    release_counts,
    upper_edges,
)

__all__ = [
    "MAX_HULL_OCTAVES",
    "OffsetBox",
    "deviation_sensitivity",
    "deviation_statistic",
    "deviation_statistic_size",
    "offset_box",
    "offset_sensitivity",
    "offset_statistic",
    "offsets_from_release",
    "refined_feature_range",
    "round_sensitivity",
]

#: Rows per block of the statistics (block-sized temporaries of the offset columns only).
_BLOCK_ROWS = 1 << 14


@dataclasses.dataclass(frozen=True)
class OffsetBox:
    r"""The offset columns and their boxes (:func:`offset_box`; post-processing, public).

    Attributes
    ----------
    columns : ndarray of int
        The offset columns' indices, increasing (:math:`S` of them).
    low, high : ndarray of shape (S,)
        Their boxes :math:`[b_j - h_j, b_j + h_j]` in the units of ``X``.
    """

    columns: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @property
    def size(self) -> int:
        """:math:`S`, the number of offset columns."""
        return int(self.columns.size)

    @property
    def mid(self) -> np.ndarray:
        """:math:`b_j`."""
        return 0.5 * (self.low + self.high)

    @property
    def half(self) -> np.ndarray:
        """:math:`h_j`."""
        return 0.5 * (self.high - self.low)

    @property
    def unit(self) -> float:
        r""":math:`\sqrt{S + 1}`, the statistics' divisor (module doc)."""
        return math.sqrt(self.size + 1.0)


#: The widest hull of occupied bins an offset column may span, in binary exponents: values
#: within a factor :math:`2^{W+1}` of each other (:func:`offset_box`). A wider column varies on
#: the scale of its magnitude already (an age from 18 to 90), so centring it gains at most a
#: factor 2 and would only spread the offset round's noise over more columns.
MAX_HULL_OCTAVES = 2


def _hull_box(counts: np.ndarray, rows: float, sigma: float, threshold: float
              ) -> tuple[float, float] | None:
    """The box of one column's counts ``(2, K)`` where it is an offset column (module doc),
    else None."""
    occupied = counts >= threshold
    signs = occupied.any(axis=1)
    if signs.sum() != 1:
        return None
    s = int(np.argmax(signs))
    bins = np.flatnonzero(occupied[s])
    lo, hi = int(bins[0]), int(bins[-1])
    if hi - lo + 1 > MAX_HULL_OCTAVES:
        return None
    hull = float(counts[s, lo:hi + 1].sum())
    if hull < rows - threshold * math.sqrt(hi - lo + 2.0):
        return None
    a, b = 0.5 * bin_upper_edge(lo), bin_upper_edge(hi)
    return (a, b) if s == 0 else (-b, -a)


def offset_box(noisy: np.ndarray, sigma: float, failure: float = FALSE_OCCUPANCY,
               pooled: bool = False) -> OffsetBox:
    r"""The offset columns and their boxes from the feature range's noisy release ``noisy``
    (:func:`~noisygd.mechanisms.feature_range.range_statistic` plus Gaussian noise of
    standard deviation ``sigma``; module doc, "Which columns"): one sign, a hull of at most
    :data:`MAX_HULL_OCTAVES` occupied bins whose counts reach the row count less
    :math:`z\sigma\sqrt{k_{hi} - k_{lo} + 2}`. With ``pooled`` (the release read the columns
    as one, :func:`~noisygd.mechanisms.feature_range.pooled_top_bin`) the rule reads the
    columns' mean counts (noise :math:`\sigma/\sqrt p`, threshold :math:`z_1\sigma/\sqrt
    p`, :math:`z_1 = \Phi^{-1}(1 - \alpha/(2K))`) and takes every column or none, with one
    box. Post-processing: public."""
    from scipy.stats import norm

    sig = check_positive("sigma", sigma)
    K = _bins()
    counts, rows = release_counts(noisy)
    p = counts.shape[0]
    threshold = occupancy_threshold(p, sig, failure)
    boxes: list[tuple[int, tuple[float, float]]] = []
    if rows >= threshold:
        if pooled:
            mean_threshold = float(norm.isf(failure / (2 * K))) * sig / math.sqrt(p)
            box = _hull_box(counts.mean(axis=0), rows, sig, mean_threshold)
            boxes = [] if box is None else [(j, box) for j in range(p)]
        else:
            boxes = [(j, box) for j in range(p)
                     if (box := _hull_box(counts[j], rows, sig, threshold)) is not None]
    return OffsetBox(np.asarray([j for j, _ in boxes], dtype=np.int64),
                     np.asarray([b[0] for _, b in boxes], dtype=np.float64),
                     np.asarray([b[1] for _, b in boxes], dtype=np.float64))


def _column_blocks(X: object, columns: np.ndarray):  # type: ignore[no-untyped-def]
    """The offset columns of ``X`` (an array or a sparse matrix), a dense float64 block of
    rows at a time."""
    import scipy.sparse as sp

    n = X.shape[0]  # type: ignore[attr-defined]
    sparse = sp.issparse(X)
    A = sp.csr_array(X) if sparse else X
    for a in range(0, n, _BLOCK_ROWS):
        block = A[a:a + _BLOCK_ROWS][:, columns]  # type: ignore[index]
        yield np.asarray(block.toarray() if sparse else block, dtype=np.float64)


def offset_statistic(X: object, box: OffsetBox) -> np.ndarray:
    r"""What the offset round releases, before its noise: per offset column
    :math:`\sum_i\operatorname{clip}((x_{ij} - b_j)/h_j, -1, 1)`, then the row count, all
    over :math:`\sqrt{S+1}` (module doc: L2 sensitivity at most 1 under add/remove, 2 under
    replace-one). Reads only the offset columns, a block of rows at a time. **Not
    private.** Raises ``ValueError`` on NaN or infinite values."""
    S = box.size
    sums = np.zeros(S + 1)
    sums[S] = float(X.shape[0])  # type: ignore[attr-defined]
    if S:
        mid, half = box.mid, box.half
        for block in _column_blocks(X, box.columns):
            if not np.all(np.isfinite(block)):
                raise ValueError("X holds NaN or infinite values")
            sums[:S] += np.clip((block - mid) / half, -1.0, 1.0).sum(axis=0)
    return sums / box.unit


def offset_sensitivity(n_columns: int, replace_one: bool = False) -> float:
    r"""The L2 sensitivity of the offset round's sums over :math:`S` columns before the
    divisor (module doc): :math:`\sqrt{S+1}` under add/remove (a row adds entries in
    :math:`[-1, 1]` and one to the count), :math:`2\sqrt S` under replace-one (the count
    stays, each entry moves by at most 2). Both are reached."""
    S = int(n_columns)
    if S < 0:
        raise ValueError("n_columns must be at least 0")
    return 2.0 * math.sqrt(S) if replace_one else math.sqrt(S + 1.0)


def offsets_from_release(noisy: np.ndarray, box: OffsetBox, sigma: float
                         ) -> tuple[np.ndarray, float]:
    r"""The offsets :math:`o_j = b_j + h_j\operatorname{clip}(\tilde s_j/\tilde N, -1, 1)`
    (:math:`\tilde N` floored at 1) and the noisy row count from the offset round's noisy
    release (:func:`offset_statistic` plus noise of standard deviation ``sigma`` on the
    divided sums). Post-processing: public."""
    check_positive("sigma", sigma)
    v = np.asarray(noisy, dtype=np.float64).ravel() * box.unit
    if v.size != box.size + 1:
        raise ValueError(f"noisy must hold {box.size + 1} values (S sums and the count)")
    count = float(v[-1])
    mean = np.clip(v[:-1] / max(count, 1.0), -1.0, 1.0)
    return box.mid + box.half * mean, count


def deviation_statistic(X: object, box: OffsetBox, offset: np.ndarray) -> np.ndarray:
    r"""What the deviation round releases, before its noise: per offset column the counts of
    :math:`|x_{ij} - o_j|` by binary exponent (the feature range's bins, positive sign;
    zeros not counted), shape ``(S, K)`` flattened, then the row count, all over
    :math:`\sqrt{S+1}` (module doc: L2 sensitivity at most 1 under add/remove,
    :math:`\sqrt2` under replace-one). **Not private.**"""
    S, K = box.size, _bins()
    out = np.zeros(S * K + 1)
    out[-1] = float(X.shape[0])  # type: ignore[attr-defined]
    if S:
        o = np.asarray(offset, dtype=np.float64)
        counts = np.zeros((S, K))
        for block in _column_blocks(X, box.columns):
            counts += magnitude_histogram(np.abs(block - o))[:, 0, :]
        out[:-1] = counts.ravel()
    return out / box.unit


def deviation_sensitivity(n_columns: int, replace_one: bool = False) -> float:
    r"""The L2 sensitivity of the deviation round's counts over :math:`S` columns before the
    divisor: :math:`\sqrt{S+1}` under add/remove, :math:`\sqrt{2S}` under replace-one (one
    count down and one up per column, the row count unchanged). Both are reached."""
    S = int(n_columns)
    if S < 0:
        raise ValueError("n_columns must be at least 0")
    return math.sqrt(2.0 * S) if replace_one else math.sqrt(S + 1.0)


def deviation_statistic_size(n_columns: int) -> int:
    """The length of :func:`deviation_statistic`'s vector over ``S`` offset columns:
    :math:`SK + 1` (the counts and the row count)."""
    return int(n_columns) * _bins() + 1


def round_sensitivity(k: int, replace_one: bool = False) -> float:
    r"""The L2 sensitivity of round ``k`` (1: the offset round, 2: the deviation round) as
    released, its statistic divided by :math:`\sqrt{S+1}`, whatever :math:`S` is (module
    doc): the supremum over :math:`S` of :func:`offset_sensitivity` or
    :func:`deviation_sensitivity` over :math:`\sqrt{S+1}`, 1 under add/remove (reached at
    every :math:`S`), 2 and :math:`\sqrt2` under replace-one (approached as :math:`S` grows).
    Raises ``ValueError`` for any other round."""
    if k == 1:
        return 2.0 if replace_one else 1.0
    if k == 2:
        return math.sqrt(2.0) if replace_one else 1.0
    raise ValueError(f"the column offsets have rounds 1 and 2, not {k!r}")


def refined_feature_range(released: PrivateFeatureRange, box: OffsetBox, offset: np.ndarray,
                          noisy: np.ndarray, sigma: float, row_norm_bound: float = 1.0,
                          failure: float = FALSE_OCCUPANCY) -> PrivateFeatureRange:
    r"""The feature range with the offset columns centred and rescaled (module doc): from
    the deviation round's noisy release ``noisy`` (:func:`deviation_statistic` plus noise of
    standard deviation ``sigma`` on the divided counts), each offset column's refined
    magnitude :math:`m'_j` (the upper edge of its highest bin reaching
    :func:`~noisygd.mechanisms.feature_range.occupancy_threshold` over the ``S`` columns at
    the counts' noise :math:`\sqrt{S+1}\,\sigma`), its magnitude :math:`\min(m_j, m'_j)`
    where a bin is occupied, its scale :math:`R/(\min(m_j, m'_j)\sqrt{\bar k})`, and the
    offsets :math:`o` (zeros off the offset columns). Post-processing: public."""
    R = check_positive("row_norm_bound", row_norm_bound)
    K, S = _bins(), box.size
    v = np.asarray(noisy, dtype=np.float64).ravel() * box.unit
    if v.size != S * K + 1:
        raise ValueError(f"noisy must hold {S * K + 1} values (S x {K} counts and the count)")
    p = released.scale.size
    full_offset = np.zeros(p)
    if S == 0:
        return dataclasses.replace(released, offset=full_offset)
    full_offset[box.columns] = offset
    noise = box.unit * check_positive("sigma", sigma)
    counts = v[:-1].reshape(S, K)
    occupied = counts >= occupancy_threshold(S, noise, failure)
    resolved = occupied.any(axis=1)
    deviation = upper_edges(occupied)  # 0 where no bin is occupied
    magnitude = released.magnitude.copy()
    scale = released.scale.copy()
    if resolved.any():
        # columns whose distances the noise cannot tell apart take one magnitude, the
        # widest any resolves, and so does a column that resolves none (as the feature
        # range reads its own columns): never a scale set apart by the noise alone
        pooled, _, _ = pooled_top_bin(np.stack([counts, np.zeros_like(counts)], axis=1),
                                      noise, failure)
        if pooled is not None:
            deviation[:] = bin_upper_edge(pooled)
        else:
            deviation[~resolved] = deviation[resolved].max()
        refined = np.minimum(magnitude[box.columns], deviation)
        magnitude[box.columns] = refined
        scale[box.columns] = R / (refined * math.sqrt(released.row_features or 1.0))
    return dataclasses.replace(released, scale=scale, magnitude=magnitude,
                               offset=full_offset, deviation=deviation,
                               offset_columns=box.columns.copy())
