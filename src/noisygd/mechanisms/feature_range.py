r"""The private feature range: a paid per-feature scale for rows nobody bounded (issue 19).

A user who declares no ``feature_bounds`` hands the estimator raw columns: a census weight
near :math:`10^5` beside one-hot levels in :math:`\{0, 1\}`. Projecting such rows onto the
unit ball (the row bound every clipped method needs) keeps little more than the largest
column's sign, and no later release made on the projected rows can undo that. The private
conditioning (the released centre and per-feature spread) works on rows already projected,
so it cannot either. This release comes first and measures each column's magnitude on the
raw rows.

**The release.** For each feature :math:`j` and sign, the histogram of the binary exponents
of its nonzero values: value :math:`x_{ij} \ne 0` adds 1 to bin
:math:`(j, \operatorname{sign} x_{ij}, k)` with :math:`2^k \le |x_{ij}| < 2^{k+1}`,
:math:`k` clipped to :data:`EXPONENTS` (a public grid); and the number of rows
(:func:`range_statistic`). A row adds at most one count per feature and one to the row count,
so the released vector moves by at most :math:`p + 1` ones: L2 sensitivity
:math:`\Delta_r = \sqrt{p+1}` under add/remove; under replace-one the row count stays and
each feature's count moves down in one bin and up in another, :math:`\Delta_r = \sqrt{2p}`
(:func:`range_sensitivity`; both reached). The Gaussian mechanism with
:math:`\sigma = \Delta_r/\mu_r` is exactly :math:`\mu_r`-GDP (Dong, Roth and Su
2022, Thm 2.7), :math:`\mu_r = \sqrt{f_r}\,\mu`, ``f_r`` the histogram's part of the
declared share (:data:`FEATURE_RANGE_ROUNDS`'s first times :data:`FEATURE_RANGE_SHARE`; the
rest pays for the column offsets' rounds, :mod:`noisygd.mechanisms.column_offsets`, which
centre and rescale the columns that lie far from the origin).

**Post-processing** (:func:`feature_range_from_release`). A bin counts as occupied when its
noisy count reaches :math:`z\sigma` with :math:`z = \Phi^{-1}(1 - \alpha/(2pK))`, ``K`` bins
per sign: at most :data:`FALSE_OCCUPANCY` (:math:`\alpha`) chance that any empty bin of the
whole histogram passes (Bonferroni). Feature :math:`j`'s magnitude :math:`m_j` is the upper
edge :math:`2^{k+1}` of its highest occupied bin, of either sign: a robust maximum (a bin
holding fewer than about :math:`z\sigma` rows may lie above it). With :math:`\bar k` the
released mean number of nonzero features per row (all noisy counts over the noisy row count,
within :math:`[1, p]`; :math:`p` when the row count is below the threshold), the released
scale is

.. math:: g_j = \frac{R}{m_j\sqrt{\bar k}},

so that a row with :math:`\bar k` nonzero values within the magnitudes has
:math:`\lVert g\odot x\rVert \le R` (one-hot blocks hold one nonzero per block: dividing by
:math:`\sqrt p` would waste most of the ball). A feature with no occupied bin (constant zero,
or a level too rare for the noise to find) gets the smallest released :math:`g_j` (it weighs
no more than the widest column); when no feature has one, :math:`g = 1` (nothing learnt: the
rows are used as given). Rows beyond the ball are projected onto it by the oracle, as every
row is. The fit then runs on :math:`g\odot x` (a public diagonal map inside the oracle, no
copy of ``X``); the private conditioning and per-feature scale follow in those coordinates.

**Columns the release cannot tell apart** (:func:`pooled_top_bin`). Per column, a bin must
pass :math:`z\sigma` on its own; where many columns share one distribution (pixels, sensor
channels, the generated families of ``bench_conditioning``) most of them then resolve no bin
and a few resolve one bin lower than the rest, and that column gets twice the others' scale
for no reason but the noise. So before reading the columns one by one, post-processing tests
whether their noisy counts are consistent with one common histogram (a chi-square test at
level :data:`HOMOGENEITY_LEVEL` on the bins occupied in the columns' mean or in any column,
against the noise's variance, known exactly). Where it is, every column takes the widest
magnitude any column resolves, which is what an unresolved column takes already. Where it is
not, or where no column resolves a bin, nothing changes.

Beside the schema's private bounds (:mod:`noisygd.mechanisms.private_statistics`): those
need a declared value range per column and release one histogram per column over a grid in
that range; this release needs no declaration at all (one histogram over a public exponent
grid for every column), which is what a fit without a schema has.

Why written here rather than taken from a library: dp_accounting accounts for the Gaussian
mechanism (the event goes through :mod:`noisygd.accounting`), but releases nothing; diffprivlib
computes bounds it is not given from the data, with a ``PrivacyLeakWarning``; we found no
maintained library that releases per-feature magnitudes privately.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.stats import chi2, norm

from noisygd._checks import check_positive

try:  # the compiled counts (setup.py); optional: without them NumPy counts every block
    from noisygd.oracles._row_kernels_c import magnitude_counts as _magnitude_counts
except ImportError:  # pragma: no cover (an install without a C compiler)
    _magnitude_counts = None

__all__ = [
    "EXPONENTS",
    "FALSE_OCCUPANCY",
    "FEATURE_RANGE_ROUNDS",
    "FEATURE_RANGE_SHARE",
    "GRID_BOTTOM_EDGE",
    "GRID_TOP_EDGE",
    "HOMOGENEITY_LEVEL",
    "SEPARATED_OCTAVES",
    "SEPARATED_SHARE",
    "PrivateFeatureRange",
    "bin_upper_edge",
    "columns_at_the_grid_ends",
    "feature_range_from_release",
    "magnitude_histogram",
    "occupancy_threshold",
    "pooled_top_bin",
    "range_sensitivity",
    "range_statistic",
    "range_statistic_size",
    "release_counts",
    "separated_columns",
    "separated_spans",
    "upper_edges",
]

#: Binary exponents of the histogram's bins: :math:`[2^k, 2^{k+1})` for ``k`` from the first
#: to the second value; values beyond fall in the end bins (public grid).
EXPONENTS = (-30, 40)
#: The declared share of the Gaussian-DP budget :math:`\mu^2` spent on the release and its
#: column-offset rounds together (a budget split; a public constant). The histogram keeps
#: 0.05 of it exactly, the single release's share before the rounds
#: (:mod:`noisygd.mechanisms.column_offsets`), so a table with no column far from the origin
#: gets the same range as before and pays 0.0125 more.
FEATURE_RANGE_SHARE = 0.0625
#: How :data:`FEATURE_RANGE_SHARE` is split: the histogram, then the offset round and the
#: deviation round of :mod:`noisygd.mechanisms.column_offsets` (shares of the share; they
#: add up to 1). A fit that releases no offsets keeps one round, ``(1.0,)``.
FEATURE_RANGE_ROUNDS = (0.8, 0.1, 0.1)
#: The chance that any empty bin of the histogram is read as occupied (module doc): the
#: failure probability the fit accepts for its paid count's confidence bounds
#: (:data:`noisygd.training.COUNT_CONFIDENCE_BETA`). It was 0.05, and a false bin is not
#: harmless: where no true bin is resolved (small ``n`` or epsilon), one false bin at a low
#: exponent set every feature's scale (a column with no occupied bin takes the smallest
#: released ``g_j``), e.g. ``g = 3.75e6`` on ``bench_conditioning``'s offcentre 500 x 20 at
#: epsilon 1 (seed 2 of ``method="dp_ftrl"``): every row pushed to the ball's edge,
#: coefficients of 3e6 and a test R^2 7 times the non-private one below the constant's.
FALSE_OCCUPANCY = 1e-3
#: The level of :func:`pooled_top_bin`'s homogeneity test: the chance (exact: the noise is
#: Gaussian with a known variance) that columns whose counts are equal are still read one by
#: one. An error that way costs what the release cost before the test existed; the other way
#: (columns that differ, pooled) is what the test guards against, so the level is the
#: conventional 0.05 rather than a smaller one, not a value tuned on any problem.
HOMOGENEITY_LEVEL = 0.05
#: Values per block of a histogram (a block-sized temporary).
_BLOCK_VALUES = 1 << 16
#: A dense ``X`` of at least this many values is counted by every core
#: (:func:`_count_rows_in_parts`).
PARALLEL_COUNT_VALUES = 1 << 20


def _bins() -> int:
    return EXPONENTS[1] - EXPONENTS[0] + 1


def bin_upper_edge(k: int) -> float:
    r"""The upper edge :math:`2^{k + k_{\min} + 1}` of bin ``k`` (an index along the grid
    :data:`EXPONENTS`): the magnitude a column whose highest occupied bin is ``k`` gets."""
    return math.ldexp(1.0, int(k) + EXPONENTS[0] + 1)


def upper_edges(occupied: np.ndarray) -> np.ndarray:
    """:func:`bin_upper_edge` of the highest True bin along the last axis of ``occupied``
    (bins of :data:`EXPONENTS`), 0 where none is True."""
    occupied = np.asarray(occupied, dtype=bool)
    top = occupied.shape[-1] - 1 - np.argmax(occupied[..., ::-1], axis=-1)
    return np.where(occupied.any(axis=-1), np.ldexp(1.0, top + EXPONENTS[0] + 1), 0.0)


#: The upper edges of the grid's top bin (:math:`2^{41}`: it also counts every larger value)
#: and of its bottom bin (:math:`2^{-29}`: it also counts every smaller one).
GRID_TOP_EDGE = bin_upper_edge(EXPONENTS[1] - EXPONENTS[0])
GRID_BOTTOM_EDGE = bin_upper_edge(0)


#: Empty binary octaves below the largest values' occupied bins at which
#: :func:`separated_spans` reports them (the private target range's bins, and each column's
#: in the private feature range): no occupied bin over a factor of :math:`2^3 = 8` in
#: magnitude. A smooth distribution's counts fall off from octave to octave, so a bin far out
#: is occupied only where its octaves in between are too (a heavy tail thins out, it does
#: not skip); a stretch this empty with a few values beyond it is a second population:
#: sentinel codes (999, 99999), a unit mixed up, or two kinds of row.
SEPARATED_OCTAVES = 3
#: The largest share of the occupied bins' (noisy) count the separated top stretch may hold
#: for :func:`separated_spans` to report it: "a few values far from the rest". A larger
#: group beyond the gap is a population of its own, whose scale the range rightly keeps.
SEPARATED_SHARE = 0.1


def separated_spans(occupied: Sequence[tuple[float, float, float]],
                    octaves: int = SEPARATED_OCTAVES, share: float = SEPARATED_SHARE
                    ) -> tuple[tuple[float, float], tuple[float, float], int] | None:
    r"""A few values that set a range far beyond the rest (post-processing of a release).

    The occupied bins ``(low, high, count)`` (the zero bin's ``(0, 0, count)`` left out) are
    merged into stretches of adjacent bins of one sign, their counts summed. The top
    stretch, the one holding the largest magnitude, sets the range. It is reported where
    the next stretch of its sign toward 0 ends :math:`\log_2(b/a) \ge` ``octaves`` octaves
    below it (:math:`a` that stretch's largest magnitude, :math:`b` the top stretch's
    smallest, both powers of two) and the top stretch holds at most ``share`` of the
    bins' total count. Small values far below the bulk (a standardised column's values
    near 0) set nothing and are never reported.

    Parameters
    ----------
    occupied : sequence of (float, float, float)
        Occupied bins of the binary grid as ``(low, high, noisy count)``
        (:attr:`~noisygd.mechanisms.target_range.PrivateTargetRange.occupied`, a column's
        occupied bins).
    octaves : int
        :data:`SEPARATED_OCTAVES` by default.
    share : float
        :data:`SEPARATED_SHARE` by default.

    Returns
    -------
    (rest, top, empty) or None
        The stretch below the gap, the top stretch (each ``(low, high)``) and the number of
        empty octaves between them; None where the top stretch is not so separated.
    """
    merged: list[list[float]] = []
    for lo, hi, count in sorted((float(a), float(b), float(c)) for a, b, c in occupied
                                if b > a):
        if merged and lo <= merged[-1][1] and (lo >= 0.0) == (merged[-1][0] >= 0.0):
            merged[-1][1] = max(merged[-1][1], hi)
            merged[-1][2] += count
        else:
            merged.append([lo, hi, count])
    if len(merged) < 2:
        return None
    size = [max(abs(lo), abs(hi)) for lo, hi, _ in merged]
    t = int(np.argmax(size))
    top = merged[t]
    j = t - 1 if top[0] >= 0.0 else t + 1  # the next stretch toward 0
    if not 0 <= j < len(merged) or (merged[j][0] >= 0.0) != (top[0] >= 0.0):
        return None
    rest = merged[j]
    empty = round(math.log2(min(abs(top[0]), abs(top[1])) / size[j]))
    total = sum(c for _, _, c in merged)
    if empty < octaves or not top[2] <= share * total:
        return None
    return (rest[0], rest[1]), (top[0], top[1]), empty


def separated_columns(counts: np.ndarray, occupied: np.ndarray,
                      octaves: int = SEPARATED_OCTAVES, share: float = SEPARATED_SHARE
                      ) -> tuple[tuple[int, tuple[float, float], tuple[float, float], int], ...]:
    """:func:`separated_spans` of each column's occupied bins (post-processing of the
    release): ``(j, rest, top, empty)`` for each column it reports, in column order.

    Parameters
    ----------
    counts : ndarray of shape (p, 2, K)
        The noisy counts (:func:`release_counts`).
    occupied : ndarray of bool, shape (p, 2, K)
        Which of them reached the occupancy threshold.
    octaves, share :
        As for :func:`separated_spans`.
    """
    occupied = np.asarray(occupied, dtype=bool)
    j, s, k = np.nonzero(occupied)  # sorted by column, sign, exponent
    same = (j[1:] == j[:-1]) & (s[1:] == s[:-1])
    out = []
    for col in np.unique(j[1:][same & (k[1:] - k[:-1] - 1 >= octaves)]).tolist():
        bins = []
        for sign, b in zip(*np.nonzero(occupied[col]), strict=True):
            lo, hi = bin_upper_edge(int(b)) / 2.0, bin_upper_edge(int(b))
            bins.append(((lo, hi) if sign == 0 else (-hi, -lo)) + (counts[col, sign, b],))
        found = separated_spans(bins, octaves, share)
        if found is not None:
            out.append((col, *found))
    return tuple(out)

def _bin_index(values: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Flat bin ``(column * 2 + negative) * K + (k - k_min)`` of each value and whether it is
    nonzero, read from the IEEE-754 bits: the biased exponent ``e`` gives
    :math:`2^{e - 1023} \le |v| < 2^{e - 1022}` for a normal number (a subnormal has
    ``e = 0`` and falls in the lowest bin), the top bit the sign. Integer operations only
    (no ``frexp``). Raises ``ValueError`` on NaN or infinite values (``e = 2047``)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    k = (bits >> 52) & 0x7FF
    if np.any(k == 0x7FF):
        raise ValueError("X holds NaN or infinite values")
    nonzero = (bits & 0x7FFF_FFFF_FFFF_FFFF) != 0  # -0.0 is zero
    k -= 1023 + EXPONENTS[0]
    np.clip(k, 0, _bins() - 1, out=k)
    k += (columns * 2 + (bits < 0)) * _bins()
    return k, nonzero


def magnitude_histogram(X: np.ndarray | sp.sparray | sp.spmatrix) -> np.ndarray:
    r"""The counts of the release (module doc), shape ``(p, 2, K)``: ``[j, 0, k]`` the
    positive values of feature ``j`` in bin ``k`` (:math:`2^{k + k_{\min}}` up to twice
    that), ``[j, 1, k]`` the negative ones. Zeros are not counted. Each row adds at most one
    count per feature (a CSR matrix with duplicate entries is summed first, on a copy).
    **Not private** (the caller adds the noise). Raises ``ValueError`` on NaN or infinite
    values (the message shows none)."""
    counts = np.zeros(X.shape[1] * 2 * _bins(), dtype=np.float64)
    _count_into(X, counts)
    return counts.astype(np.int64).reshape(X.shape[1], 2, _bins())


def _count_into(X: np.ndarray | sp.sparray | sp.spmatrix, counts: np.ndarray,
                compiled: bool = True) -> None:
    """Add :func:`magnitude_histogram`'s flat counts to ``counts`` (float64, exact below
    :math:`2^{53}`), a block of values at a time: the compiled ``magnitude_counts``
    (``_row_kernels.c``, one read of the values, the same bins as :func:`_bin_index`) when
    it is built and ``compiled`` (a large dense ``X`` by every core:
    :func:`_count_rows_in_parts`), else :func:`_bin_index` with ``bincount`` when the
    histogram is no larger than a block, ``np.add.at`` (whose cost is the block's, not the
    histogram's) when it is."""
    p = X.shape[1]
    size = p * 2 * _bins()
    kernel = _magnitude_counts if compiled else None

    def add(values: np.ndarray, columns: np.ndarray | None, into: np.ndarray = counts) -> None:
        if kernel is not None:
            kernel(values, columns, p, _bins(), EXPONENTS[0], into)
            return
        k, nonzero = _bin_index(values, np.arange(p, dtype=np.int64)[None, :]
                                if columns is None else columns.astype(np.int64))
        if size <= _BLOCK_VALUES:
            counts[:] += np.bincount(k[nonzero], minlength=size)
        else:
            np.add.at(counts, k[nonzero], 1.0)

    if sp.issparse(X):
        A = sp.csr_array(X)
        if not A.has_canonical_format:
            A = A.copy()
            A.sum_duplicates()
        data = np.ascontiguousarray(A.data, dtype=np.float64)
        cols = np.ascontiguousarray(A.indices)
        if kernel is not None:  # the whole of a contiguous array in one call
            add(data, cols)
            return
        for a in range(0, data.size, _BLOCK_VALUES):
            add(data[a:a + _BLOCK_VALUES], cols[a:a + _BLOCK_VALUES])
        return
    X = np.asarray(X)
    if kernel is not None and X.dtype == np.float64 and X.flags.c_contiguous:
        _count_rows_in_parts(X, counts, add)
        return
    rows = max(1, _BLOCK_VALUES // max(p, 1))
    for a in range(0, X.shape[0], rows):
        add(np.ascontiguousarray(X[a:a + rows], dtype=np.float64), None)


def _count_rows_in_parts(X: np.ndarray, counts: np.ndarray, add: Any) -> None:
    """The compiled counts of a dense C-contiguous ``X`` by the cores available: its rows in
    one contiguous part per thread (:func:`~noisygd.oracles._parallel.run_blocks`; the
    kernel releases the GIL), each counted into its own vector, the vectors added. Counts are
    integers below :math:`2^{53}`, so the sum is exact and the same for every thread count.
    One call where ``X`` holds fewer than :data:`PARALLEL_COUNT_VALUES` values, or where the
    counts are larger than a part of ``X`` (a thread's vector would cost more than it saves).
    1e5 x 50 on 2 cores: 7.2 ms in one call, 3.8 ms in two parts."""
    from noisygd.oracles._parallel import default_threads, run_blocks

    n = X.shape[0]
    threads = min(default_threads(), n)
    if threads < 2 or X.size < PARALLEL_COUNT_VALUES or counts.size * threads > X.size:
        add(X, None)
        return
    bounds = np.linspace(0, n, threads + 1).astype(np.int64)

    def part(j: int) -> np.ndarray:
        out = counts if j == 0 else np.zeros_like(counts)
        add(X[bounds[j]:bounds[j + 1]], None, out)
        return out

    for extra in run_blocks(part, threads, threads, blas=False)[1:]:
        counts += extra


def range_statistic(X: np.ndarray | sp.sparray | sp.spmatrix) -> np.ndarray:
    r"""What the release adds its noise to: the flat :func:`magnitude_histogram` of ``X``
    followed by its number of rows (a row adds at most ``p + 1`` ones: L2 sensitivity
    :math:`\sqrt{p+1}`), as one float64 vector counted in place. **Not private.**"""
    out = np.zeros(range_statistic_size(X.shape[1]), dtype=np.float64)
    _count_into(X, out[:-1])
    out[-1] = X.shape[0]
    return out


def range_statistic_size(n_features: int) -> int:
    """The length of :func:`range_statistic`'s vector over ``p`` features:
    :math:`2pK + 1` (the histogram and the row count)."""
    return int(n_features) * 2 * _bins() + 1


def range_sensitivity(n_features: int, replace_one: bool = False) -> float:
    r"""The L2 sensitivity of :func:`range_statistic` over ``p`` features: adding or
    removing a row moves at most ``p`` counts and the row count by one each,
    :math:`\sqrt{p + 1}`; replacing a row leaves the row count alone and, per feature, moves
    the old value's bin down by one and the new value's up by one (nothing when they share
    a bin or both are zero), :math:`\sqrt{2p}`. Both are reached (every value nonzero, in
    other bins)."""
    p = int(n_features)
    if p < 1:
        raise ValueError("n_features must be at least 1")
    return math.sqrt(2.0 * p) if replace_one else math.sqrt(p + 1.0)


def occupancy_threshold(n_features: int, sigma: float,
                        failure: float = FALSE_OCCUPANCY) -> float:
    r""":math:`z\sigma`, :math:`z = \Phi^{-1}(1 - \alpha/(2pK))`: the noisy count at which a
    bin is read as occupied (module doc)."""
    p = int(n_features)
    if p < 1:
        raise ValueError("n_features must be at least 1")
    if not 0.0 < failure < 1.0:
        raise ValueError("failure must be in (0, 1)")
    return float(norm.isf(failure / (2 * p * _bins()))) * check_positive("sigma", sigma)


@dataclasses.dataclass(frozen=True)
class PrivateFeatureRange:
    r"""What :func:`feature_range_from_release` computes (post-processing of the release).

    Attributes
    ----------
    scale : ndarray of shape (p,)
        :math:`g_j` (module doc): the fit runs on :math:`g\odot x`.
    magnitude : ndarray of shape (p,)
        :math:`m_j`, the released robust maximum of :math:`|x_j|` (0: no occupied bin).
    occupied : int
        :math:`k_{\rm occ}`, the features with an occupied bin (all of them when the
        columns were pooled).
    threshold : float
        :math:`z\sigma`, the count a bin needed.
    noise_std : float
        :math:`\sigma` of each released count.
    row_features : float
        :math:`\bar k`, the released mean number of nonzero features per row (module doc).
    pooled : bool
        Whether the columns passed :func:`pooled_top_bin`'s homogeneity test and took one
        common magnitude.
    homogeneity : tuple of (float, int)
        The test's statistic :math:`X^2` and degrees of freedom (``(nan, 0)``: not tested,
        one column or no occupied bin).
    offset : ndarray of shape (p,) or None
        :math:`o`, the released column offsets (:mod:`noisygd.mechanisms.column_offsets`;
        zeros off the offset columns): the fit runs on :math:`g\odot(x - o)`. None: no
        offset rounds.
    deviation : ndarray or None
        The offset columns' refined magnitudes :math:`m'_j` (an unresolved column takes the
        widest resolved one; all 0 where none resolves).
    offset_columns : ndarray of int or None
        The offset columns.
    separated : tuple of (int, (float, float), (float, float), int)
        :func:`separated_columns` of the occupied bins: columns with a stretch of
        :data:`SEPARATED_OCTAVES` or more empty octaves between occupied bins of one sign
        (the estimators warn: sentinel codes set the column's scale).
    """

    scale: np.ndarray
    magnitude: np.ndarray
    occupied: int
    threshold: float
    noise_std: float
    row_features: float = 0.0
    pooled: bool = False
    homogeneity: tuple[float, int] = (math.nan, 0)
    offset: np.ndarray | None = None
    deviation: np.ndarray | None = None
    offset_columns: np.ndarray | None = None
    separated: tuple[tuple[int, tuple[float, float], tuple[float, float], int], ...] = ()


def release_counts(noisy: np.ndarray) -> tuple[np.ndarray, float]:
    """The noisy release (:func:`range_statistic`'s layout plus noise) as its counts of shape
    ``(p, 2, K)`` and its row count. Raises ``ValueError`` on any other length."""
    K = _bins()
    flat = np.asarray(noisy, dtype=np.float64).ravel()
    if flat.size % (2 * K) != 1:
        raise ValueError(f"noisy must hold p * 2 * {K} counts and the row count")
    return flat[:-1].reshape(-1, 2, K), float(flat[-1])


def feature_range_from_release(noisy: np.ndarray, sigma: float, row_norm_bound: float = 1.0,
                               failure: float = FALSE_OCCUPANCY, pool: bool = True
                               ) -> PrivateFeatureRange:
    r"""The released scale :math:`g` from the noisy release ``noisy`` (the flat
    :func:`range_statistic` vector plus noise: ``p * 2 * K`` counts, then the row count;
    module doc): the magnitude :math:`m_j = 2^{k+1}` of feature ``j``'s highest occupied bin,
    :math:`g_j = R/(m_j\sqrt{\bar k})` with :math:`\bar k` the released mean number of
    nonzero features per row, the smallest such :math:`g_j` for a feature with no occupied
    bin, and all ones when no feature has one. With ``pool`` (the default), columns that
    pass :func:`pooled_top_bin`'s homogeneity test all take the magnitude of its top bin
    instead (module doc, "Columns the release cannot tell apart"). Post-processing of the
    release: public."""
    R = check_positive("row_norm_bound", row_norm_bound)
    counts, rows = release_counts(noisy)
    p = counts.shape[0]
    threshold = occupancy_threshold(p, sigma, failure)
    occupied_bins = counts >= threshold
    any_bin = occupied_bins.any(axis=(1, 2))
    # the highest occupied exponent of either sign: the last True along the merged signs
    magnitude = upper_edges(occupied_bins.any(axis=1))
    pooled, statistic, df = (pooled_top_bin(counts, sigma, failure) if pool
                             else (None, math.nan, 0))
    if pooled is not None:  # one common magnitude: every column as an unresolved one
        any_bin = np.ones(p, dtype=bool)
        magnitude = np.full(p, bin_upper_edge(pooled))
    k_occ = int(any_bin.sum())
    # the mean number of nonzero features a row holds: the noisy nonzero counts over the
    # noisy row count, within [1, p] (p when the count is not resolved)
    k_row = (min(max(float(counts.sum()) / rows, 1.0), float(p))
             if rows > threshold else float(p))
    if k_occ == 0:
        scale = np.ones(p)
    else:
        scale = np.empty(p)
        scale[any_bin] = R / (magnitude[any_bin] * math.sqrt(k_row))
        scale[~any_bin] = scale[any_bin].min()
    return PrivateFeatureRange(scale, magnitude, k_occ, threshold, float(sigma), k_row,
                               pooled is not None, (statistic, df),
                               separated=separated_columns(counts, occupied_bins))


def columns_at_the_grid_ends(released: PrivateFeatureRange) -> tuple[list[int], list[int]]:
    r"""The columns whose released magnitude sits at an end of :data:`EXPONENTS` (public:
    post-processing of the release): ``(top, bottom)``. A top column's highest occupied bin is
    :math:`[2^{40}, 2^{41})`, which also counts every larger value, so values beyond
    :math:`2^{41}` are served beyond the ball and projected onto it; a bottom column's only
    occupied bin is the lowest, which also counts every value below :math:`2^{-30}`, so its
    scale treats values of :math:`10^{-18}` as if they were :math:`2^{-29}` and the fit sees
    them shrunk to nothing. Either way the column is learnt badly, and only a declaration
    (``feature_bounds``) or a rescaled column fixes it (the estimators warn)."""
    magnitude = np.asarray(released.magnitude)
    top = np.flatnonzero(magnitude == GRID_TOP_EDGE)
    bottom = np.flatnonzero(magnitude == GRID_BOTTOM_EDGE)
    return top.tolist(), bottom.tolist()


def pooled_top_bin(counts: np.ndarray, sigma: float,
                   failure: float = FALSE_OCCUPANCY, level: float = HOMOGENEITY_LEVEL
                   ) -> tuple[int | None, float, int]:
    r"""The columns' common top bin where the release cannot tell them apart (module doc):
    ``(k, X2, df)``, ``k`` None where the columns are read one by one.

    With :math:`\tilde c_{jb}` the noisy count of column ``j`` in bin ``b`` (sign and
    exponent, ``counts`` of shape ``(p, 2, K)``), :math:`\bar c_b = \frac1p\sum_j
    \tilde c_{jb}` and the bins

    .. math:: S = \{b : \bar c_b \ge z_1\sigma/\sqrt p\} \cup
        \{b : \max_j \tilde c_{jb} \ge z\sigma\},

    occupied in the columns' mean (:math:`z_1 = \Phi^{-1}(1 - \alpha/(2K))`, Bonferroni
    over the mean's :math:`2K` bins, whose noise is :math:`\sigma/\sqrt p`) or in any column
    (:func:`occupancy_threshold`'s :math:`z\sigma`), the statistic is

    .. math:: X^2 = \frac1{\sigma^2}\sum_j\sum_{b\in S}(\tilde c_{jb} - \bar c_b)^2.

    Under the hypothesis that the columns' true counts are equal in every bin, the
    deviations are the release's noise about its mean, Gaussian with the known variance
    :math:`\sigma^2`, so :math:`X^2` is exactly :math:`\chi^2` with :math:`(p - 1)|S|`
    degrees of freedom given the mean (the deviations are independent of the mean, hence of
    its selection of bins; the selection by any column's count only raises :math:`X^2`,
    toward reading the columns one by one). The hypothesis is about what the noise can hide:
    columns drawn from one distribution differ by the rows' sampling too, which the test
    sees where the counts are large against :math:`\sigma`, and there each column resolves
    its own bins anyway; where they are small (the noise-limited release that splits
    identically distributed columns) the sampling hides in the noise. The columns are pooled
    when :math:`X^2 \le \chi^2_{(p-1)|S|}(1 - \text{level})`, and then ``k`` is the highest
    bin occupied in any column: every column takes the widest magnitude a column resolves,
    which a column with no occupied bin takes already (:func:`feature_range_from_release`).
    The mean's bins add power to the test but set no magnitude, so pooling never reads a
    bin as occupied that no column passes (the false-occupancy level is unchanged), and where
    no column has an occupied bin nothing is pooled (the rows are used as given, as
    before). There is no guarantee against pooling columns that differ by less than the
    noise can show: they take that widest magnitude.

    Parameters
    ----------
    counts : ndarray of shape (p, 2, K)
        The released histogram's noisy counts.
    sigma : float
        The noise's standard deviation per count.
    failure, level : float
        :data:`FALSE_OCCUPANCY` (the occupancy thresholds) and :data:`HOMOGENEITY_LEVEL`.

    Returns
    -------
    (int or None, float, int)
        The common top bin's index along the last axis (None: not pooled), :math:`X^2` and
        its degrees of freedom (``(None, nan, 0)`` for one column or no bin occupied in any
        column).
    """
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 3 or c.shape[1] != 2:
        raise ValueError(f"counts must have shape (p, 2, K), got {c.shape}")
    p, _, K = c.shape
    sig = check_positive("sigma", sigma)
    if not 0.0 < level < 1.0:
        raise ValueError("level must be in (0, 1)")
    if p < 2:
        return None, math.nan, 0
    mean = c.mean(axis=0)
    in_column = (c >= occupancy_threshold(p, sig, failure)).any(axis=0)
    if not in_column.any():  # nothing resolved: the release leaves the rows as given
        return None, math.nan, 0
    bins = in_column | (mean >= float(norm.isf(failure / (2 * K))) * sig / math.sqrt(p))
    deviation = c[:, bins] - mean[bins]
    statistic = float(np.sum(deviation * deviation)) / (sig * sig)
    df = (p - 1) * int(bins.sum())
    if statistic > float(chi2.isf(level, df)):
        return None, statistic, df
    return int(K - 1 - np.argmax(in_column.any(axis=0)[::-1])), statistic, df
