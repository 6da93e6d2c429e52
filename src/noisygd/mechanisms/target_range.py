r"""The private target range: a paid range for regression targets nobody bounded.

A regressor clips its targets to a range :math:`[m - h, m + h]` and fits them centred at
:math:`m`; every constant of the fit (the clip, the Huber threshold, the planned ridge, the
prediction's projection) is in units of :math:`h`. A user who declares neither
``target_range`` nor ``target_bound`` and hands in targets in their own units (hourly bike
rentals near 500, a bill near :math:`10^5`, wine quality near 6) used to get the fixed range
:math:`[-1, 1]`: every target clipped to one of its ends, and a test :math:`R^2` far below
the constant predictor's (-1.06, -0.67 and -29.4 on ``benchmarks/bench_raw_tables.py``'s
three regression tables at epsilon 1), with no sign of it. This release measures the range
instead, from a declared share of the budget.

**The release.** The histogram of the targets by sign and binary exponent, with a bin for
zero: target :math:`y_i` adds 1 to the zero bin when :math:`y_i = 0`, else to bin
:math:`(\operatorname{sign} y_i, k)` with :math:`2^k < |y_i| \le 2^{k+1}` (upper-closed,
so that a target at a power of two, the common bound 1.0 of a proportion or a score, sets
the range's end at itself rather than at twice it), :math:`k` clipped to
:data:`TARGET_EXPONENTS` (the public grid, below). A row adds exactly one count, so
under add/remove the counts move by one unit vector (L2 sensitivity 1) and under
replace-one by :math:`e_a - e_b` (:math:`\sqrt2`,
:func:`target_range_sensitivity`; both reached). The Gaussian mechanism with
:math:`\sigma = \Delta/\mu_t` is exactly :math:`\mu_t`-GDP (Dong, Roth and Su 2022, Thm
2.7), :math:`\mu_t = \sqrt{r_0 f_t}\,\mu` with ``f_t`` the declared share
(:data:`TARGET_RANGE_SHARE`) and :math:`r_0` the first round's fraction of it
(:data:`TARGET_RANGE_ROUNDS`; 1 without an intercept).

**The grid** (:data:`TARGET_EXPONENTS`, :data:`EXTENSION_SHARE`). The bins run from
:math:`2^{-497}` to :math:`2^{498}`: the **core**, the private feature range's grid
:data:`~noisygd.mechanisms.feature_range.EXPONENTS` (:math:`2^{-30}` to :math:`2^{41}`,
:math:`10^{-9}` to :math:`2\cdot10^{12}`), and the **extension** on either side of it.
Before 2026-11-30 the grid was the core alone, its end bins counting every target beyond, so
targets in other units were clipped or coarse, with a warning: near :math:`10^{13}` (a
country's GDP in dollars, bytes moved) clipped to :math:`2^{41}`, test :math:`R^2` 0.18 at
:math:`10^{13}` and -0.09 at :math:`10^{15}` (epsilon 8); near :math:`10^{-15}` (a
concentration in moles per litre) fitted in units of :math:`2^{-29}`, a million times their
spread, test :math:`R^2` -6009. An extension bin costs no privacy (a row still adds one
count) but each bin read is a chance of a false occupancy, and a false bin far from the
targets widens the range by orders of magnitude. So the two are read at their own levels:
the core's bins and windows as before, at :math:`\alpha`
(:data:`~noisygd.mechanisms.feature_range.FALSE_OCCUPANCY`), with the same thresholds to the
bit; the extension's bins, and every window that reaches into it, at :math:`\alpha_x =
0.1\,\alpha` (:data:`EXTENSION_OCCUPANCY`; Bonferroni over their :math:`2K_x` bins,
:func:`extension_threshold`, and their windows, :func:`extension_window_threshold`). A bin
of the extension needs about 5.4 noise standard deviations against the core's 4.5; the
chance that any empty bin or window passes is at most :math:`1.1\,\alpha`. The vector keeps
the core's layout and appends the extension's bins (:func:`target_bin_index`,
:func:`signed_counts`), so the core's noisy counts, drawn first, are the same draws as
before: a release whose targets lie on the core grid reads the same range as before unless
an extension bin passes falsely (at most :math:`\alpha_x`). The grid's ends keep every
released range a valid target bound (at most :data:`~noisygd._checks.MAX_SCALE`); targets
beyond them fall in its end bins, clipped, with the regressor's warning.

**Post-processing** (:func:`target_range_from_release`). A bin is occupied when its noisy
count reaches :math:`z\sigma`, :math:`z = \Phi^{-1}(1 - \alpha/(2(2K + 1)))` over the
:math:`2K + 1` bins of the core and the zero bin (Bonferroni at half of :math:`\alpha` =
:data:`~noisygd.mechanisms.feature_range.FALSE_OCCUPANCY`; the extension's at its own level,
above). Each sign is read alone: where none of its bins is occupied (few targets spread over
several octaves: none alone reaches the threshold), its noisy counts are read again in
windows of ``w`` adjacent bins, ``w`` from 2 to :data:`MAX_WINDOW`: a window is occupied
when its noisy sum reaches :math:`z_W\sigma\sqrt w` (its noise's standard deviation is
:math:`\sigma\sqrt w`), Bonferroni at the other half of :math:`\alpha` over every window of
the core of every width and sign, and the sign's narrowest width with an occupied window is
used. (Before, the windows were read only where no bin of either sign was occupied, so a
sign whose bins fell just short dropped out beside a sign whose bins passed.) So at most
:math:`\alpha` chance that any empty bin or window of the core passes (:math:`1.1\,\alpha`
with the extension), and the windows cost no privacy (post-processing of the same release).
The range is the hull of the occupied bins on the real line: from the lower end of the
lowest (:math:`-2^{k+1}` for a negative bin, :math:`2^k` for a positive one, 0 for the zero
bin) to the upper end of the highest. It is a robust range, within a factor 2 of the
targets' extremes, that may leave out tails of fewer than about :math:`z\sigma` targets per
bin (clipped to it, as a declared range clips them). Targets near 5 500 give
:math:`[4096, 8192]`, proportions in :math:`(0.5, 1]` give :math:`[0.5, 1]`; a range anchored at 0
(the first version: the highest bin of each sign, 0 as the other end) gave :math:`[0, 8192]` and
:math:`[0, 2]`, and the fit's noise, which scales with the range's half-width, 2 to 8 times
larger (``experiments/target_range.py``). Where no bin and no window is occupied, or only
the zero bin, nothing is resolved and the caller keeps its fallback.

**Targets about 0** (:data:`MIRROR_LEVEL`, :data:`MIRROR_SHARE`). Targets about 0 split
their count between the two signs, and at small ``n`` each sign's bins sit near the
threshold: one sign could pass and the other not, and the range, e.g. ``[1, 4]``, clipped
every target of the other sign to its end (centred targets, n 300-1000, epsilon 0.5-1: 3-5 of
10 fits, test :math:`R^2` down to -1.0 against 0.37; ``experiments/target_range_mirror.py``).
So where the occupied bins are all of one sign and the zero bin is not occupied, the other
sign's ``w`` bins mirroring the hull of the occupied ones join the range when their noisy sum
reaches :math:`z_m\sigma\sqrt w`, :math:`z_m = \Phi^{-1}(1 - \ell)` at the level
:math:`\ell` = 0.05 (:func:`mirror_threshold`), and :data:`MIRROR_SHARE` = 0.25 of the occupied
sign's noisy count over the same octaves. Their positions are set by the occupied sign's
counts, whose noise is independent of theirs, so a sign with no target passes with
probability at most :math:`\ell`; the share keeps a sign with a few targets (clipped to the
range's end, as before) from doubling the range, and with it the fit's noise. A wider range
costs the refined rounds little (they narrow it about the targets' centre), a one-signed one
half of the targets. Measured on five families (about 0, mostly positive near 0, lognormal,
counts with zeros, proportions; n 300, 1000, 5000; epsilon 0.5, 1, 8; 10 seeds each): the
targets about 0 lost no fit to a one-signed range, and no other cell changed.

**Edges** (:data:`EDGE_LEVEL`, :func:`edge_bins`; the first histogram). At small ``n`` a
bin next to the occupied ones can hold a large share of the targets and still fall short of
:math:`z\sigma`: scikit-learn's diabetes targets on :math:`[0, 1]`, 353 rows at epsilon 0.5,
put about a quarter of the rows in :math:`(0.5, 1]` against a threshold near 100, and the
range :math:`[0.125, 0.5]` clipped them all (a test :math:`R^2` share of 0.30 on one seed).
So, outwards from each end of a sign's stretch, the next bin joins it when its noisy count
reaches :math:`z_e\sigma`, :math:`z_e = \Phi^{-1}(1 - \ell)` at the level :math:`\ell` =
0.05 (:func:`edge_threshold`), and :data:`EDGE_SHARE` = 0.25 of the stretch's noisy count
(the mirror test's share, for the same trade: a bin with fewer targets costs less clipped
than the doubled range would), and the next after it is tested only if it did. The bins'
positions are set by the stretch, whose counts' noise is independent of theirs, so an empty
bin next to the stretch joins with probability at most :math:`\ell`, and a run of :math:`j`
empty ones with at most :math:`\ell^j`; the share's bar makes that far smaller where the
stretch holds many rows. A false join widens the range by one octave (the fit's noise by at
most a factor 2); a bin left out falsely clips every target in it. Only the
first histogram reads edges: the refined rounds and the rows' radius
(:mod:`noisygd.estimators._conditioning`) already take twice the hull's end, one octave
above it. Measured (the diabetes set, bike and wine, the off-centre family at n 500-10 000,
epsilon 0.5-8, 2 seeds; docs/estimators.md, "Private target range"): diabetes at epsilon 0.5
0.44 -> 0.60 (the worse seed 0.30 -> 0.58), no cell lower by more than 0.006.

A false occupied bin far from the targets would widen the range, and the fit's noise with
it, by orders of magnitude, which is why the occupancy level is the feature range's
:math:`10^{-3}` and not a conventional 0.05. Finer bins (quarter and eighth octaves, alone or
refining the octaves' ends) resolved nothing at small ``n`` (scikit-learn's diabetes set,
353 rows, at epsilon 1) or clipped the targets too tightly; measured and not adopted
(docs/estimators.md, "Private target range").

**Refined rounds** (:data:`TARGET_RANGE_ROUNDS`; a fit with an intercept). The range above
is within a factor 2 of the targets' extremes, so where the targets sit far from 0 against
their spread (a year, a temperature in kelvin, an altitude, a price near :math:`5\cdot10^6`)
its half-width is set by their offset: targets :math:`5\cdot10^6 + \mathcal N(0, 1)` get
:math:`[2^{22}, 2^{23}]`, a half-width two million times their spread, and every constant of
the fit in units of :math:`h` with it (a test :math:`R^2` of -838 at epsilon 8, n 20 000:
the intercept's noise alone). As the rows' refined conditioning
(:mod:`noisygd.estimators._conditioning`; CoinPress, Biswas, Dong, Kamath and Ullman 2020),
the release alternates, on its own shares of ``target_range_share``:

* a **mean round**: with :math:`(m, h)` the current range's centre and half-width, the
  noisy pair :math:`(\sum_i 1, \sum_i \operatorname{clip}((y_i - m)/h, -1, 1))`
  (:func:`target_mean_statistic`; one row moves it by at most :math:`(1, 1)` under
  add/remove and :math:`(0, 2)` under replace-one: L2 sensitivity :math:`\sqrt2` or 2,
  :func:`target_mean_sensitivity`, both reached), whose ratio gives the centre
  :math:`\hat m = m + h\,\operatorname{clip}(S/N, -1, 1)` (:func:`centre_from_release`:
  kept at ``m`` where the noisy count :math:`N` is below :math:`2\sigma`);
* a **histogram round**: the histogram above of the distances :math:`|y_i - \hat m|`
  (folded: a target adds 1 to one bin, whichever its side), whose hull's upper end
  :math:`u` gives the range :math:`[\hat m - r, \hat m + r]`, :math:`r = 2u`, intersected
  with the
  previous one (:func:`refined_range`; the previous range is kept where the round resolves
  nothing or the intersection is empty). Twice the hull's end, as the rows' radius in the
  refined conditioning: a later round has a sixth of the first's share, so its threshold is
  2.4 times higher and its hull leaves out more of the tails (standard normal targets times
  2.4, n 2000, epsilon 1: :math:`u = 4` clipped a tenth of them, and the test :math:`R^2`
  fell 0.02). Where the targets sit far from 0 the factor costs nothing that matters (a
  range of 4 spreads instead of 2), and elsewhere the range before is the tighter one.
  Folded, every bin holds the targets of both
  sides: read by sign, targets spread over a few octaves about :math:`\hat m` passed the
  threshold on one side only, and the range left out the other (0.8 + 0.05 z at n 2000,
  epsilon 1: a range of width 0.03 and a test :math:`R^2` of -0.01). Intersected, the
  first range's ends stay where they are tighter: targets clipped at 1.0 keep the end 1.0
  (a symmetric range about their mean would not), and skewed targets (counts, bills) keep
  their lower end near 0; replacing the range instead cost 0.013-0.019 of the non-private
  :math:`R^2` on the off-centre family at n 10 000, hourly bike rentals and a bill
  (``experiments/refined_target_range.py``, an earlier run).

A mean round moves the centre to within about :math:`h\sigma/N` of the targets' mean, so
the next histogram's hull has a half-width of about the larger of that and the targets'
spread: each pair of rounds narrows the range by a factor of about :math:`N/\sigma` until
it reaches the spread. Every round is a Gaussian mechanism with its own share of
:math:`\mu_t^2`, recorded before its statistic is read; the centres, ranges and their rule
are post-processing, and the shares add up to ``target_range_share`` exactly (Dong, Roth and
Su 2022, Cor. 3.3). A fit without an intercept keeps one round at the whole share (its range
is symmetric about 0: :meth:`PrivateTargetRange.centre_half`).

Why written here rather than taken from a library: as for
:mod:`noisygd.mechanisms.feature_range` (whose histogram this reuses), dp_accounting accounts
for the Gaussian mechanism but releases nothing, and diffprivlib computes bounds it is not
given from the data, with a ``PrivacyLeakWarning``.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from noisygd._checks import check_positive
from noisygd.mechanisms.feature_range import (
    EXPONENTS,
    FALSE_OCCUPANCY,
    SEPARATED_OCTAVES,
    separated_spans,
)

__all__ = [
    "EDGE_LEVEL",
    "EDGE_SHARE",
    "EXTENSION_OCCUPANCY",
    "EXTENSION_SHARE",
    "MAX_WINDOW",
    "MIRROR_LEVEL",
    "MIRROR_SHARE",
    "SEPARATED_OCTAVES",
    "TARGET_EXPONENTS",
    "TARGET_GRID_BOTTOM_EDGE",
    "TARGET_GRID_TOP_EDGE",
    "TARGET_RANGE_ROUNDS",
    "TARGET_RANGE_SHARE",
    "PrivateTargetRange",
    "centre_from_release",
    "edge_bins",
    "edge_threshold",
    "extension_threshold",
    "extension_window_threshold",
    "mirror_threshold",
    "range_within_declared",
    "refined_range",
    "separated_spans",
    "signed_counts",
    "target_bin_index",
    "target_histogram",
    "target_histogram_size",
    "target_mean_sensitivity",
    "target_mean_statistic",
    "target_occupancy_threshold",
    "target_range_from_release",
    "target_range_sensitivity",
    "window_threshold",
]

#: The declared share of the Gaussian-DP budget :math:`\mu^2` spent on the release, its
#: rounds together (a budget split, like the private feature range's 0.05; a public
#: constant). The first histogram keeps 0.048 of it (the single release's 0.05 before the
#: refined rounds), and the four refining rounds share 0.032.
TARGET_RANGE_SHARE = 0.08
#: The rounds' fractions of ``target_range_share`` (module doc, "Refined rounds"): a
#: histogram, then alternately a mean and a histogram about it. The first histogram keeps
#: most of it (it must resolve a bin where nothing bounds the targets; the later rounds read
#: rows already concentrated in a few bins, and a round that resolves nothing keeps the
#: range before it).
TARGET_RANGE_ROUNDS = (0.6, 0.1, 0.1, 0.1, 0.1)


#: Binary exponents of the target histogram's whole grid (public): bin ``k`` holds
#: :math:`2^k < |y| \le 2^{k+1}`, the end bins every value beyond. The **core**
#: :data:`~noisygd.mechanisms.feature_range.EXPONENTS` (-30 to 40: :math:`10^{-9}` to
#: :math:`2 \cdot 10^{12}`, the units of nearly every table) is read at the level
#: :data:`~noisygd.mechanisms.feature_range.FALSE_OCCUPANCY`, the **extension** on either side
#: of it at :data:`EXTENSION_OCCUPANCY` (module doc, "The grid"). Its ends are
#: :math:`2^{\pm 498}`: every range it releases is a valid target bound (at most
#: :data:`~noisygd._checks.MAX_SCALE` = :math:`10^{150}`, whose square is a finite double), and
#: so is the inverse square of its half-width.
TARGET_EXPONENTS = (-497, 497)
#: The level at which the extension's bins and windows are read, as a share of the core's
#: (module doc, "The grid"): a tenth, so that a range of ordinary targets falsely widened by
#: orders of magnitude is at most 1.1 times as likely as on the core grid alone.
EXTENSION_SHARE = 0.1
#: The extension's level at the core's default level
#: :data:`~noisygd.mechanisms.feature_range.FALSE_OCCUPANCY`: :math:`10^{-4}`.
EXTENSION_OCCUPANCY = FALSE_OCCUPANCY * EXTENSION_SHARE


#: The upper edges of the whole grid's top bin (:math:`2^{498}`: it also counts every
#: larger target) and of its bottom bin (:math:`2^{-496}`: it also counts every smaller
#: nonzero one).
TARGET_GRID_TOP_EDGE = math.ldexp(1.0, TARGET_EXPONENTS[1] + 1)
TARGET_GRID_BOTTOM_EDGE = math.ldexp(1.0, TARGET_EXPONENTS[0] + 1)


def _bins() -> int:
    """Core bins per sign (:data:`~noisygd.mechanisms.feature_range.EXPONENTS`)."""
    return EXPONENTS[1] - EXPONENTS[0] + 1


def _grid_bins() -> int:
    """Bins per sign on the whole grid (:data:`TARGET_EXPONENTS`)."""
    return TARGET_EXPONENTS[1] - TARGET_EXPONENTS[0] + 1


def _extension_bins() -> int:
    """Extension bins per sign (the whole grid's less the core's)."""
    return _grid_bins() - _bins()


def _layout() -> tuple[np.ndarray, np.ndarray]:
    """``(positions, in_core)`` of the whole grid (module doc, "The grid"): ``(2, K_grid)``
    integers, each sign's bins' positions in :func:`target_histogram`'s vector in increasing
    exponent order (the zero bin, the core's bins by sign, then the extension's by sign), and
    ``(K_grid,)`` bools, whether each exponent is a core one. Computed once, read-only."""
    k = np.arange(TARGET_EXPONENTS[0], TARGET_EXPONENTS[1] + 1)
    core = (k >= EXPONENTS[0]) & (k <= EXPONENTS[1])
    extension = np.where(k < EXPONENTS[0], k - TARGET_EXPONENTS[0],
                         k - TARGET_EXPONENTS[0] - _bins())
    positive = np.where(core, 1 + k - EXPONENTS[0], 1 + 2 * _bins() + extension)
    negative = np.where(core, positive + _bins(), positive + _extension_bins())
    positions = np.stack([positive, negative])
    positions.setflags(write=False)
    core.setflags(write=False)
    return positions, core


_POSITIONS, _IN_CORE = _layout()


@functools.lru_cache(maxsize=16)
def _windows_in_core(width: int) -> np.ndarray:
    """``(K_grid - width + 1,)`` bools: whether each window of ``width`` adjacent bins of one
    sign lies wholly in the core (module doc, "The grid"). Computed once a width, read-only."""
    inside = np.convolve(_IN_CORE.astype(np.float64), np.ones(width), mode="valid") >= width - 0.5
    inside.setflags(write=False)
    return inside


def target_histogram_size() -> int:
    """The length of :func:`target_histogram`'s vector: :math:`1 + 2K + 2K_x` (the zero bin,
    the positive then negative targets' ``K`` core bins, then their ``K_x`` extension bins;
    module doc, "The grid")."""
    return 1 + 2 * _grid_bins()


def signed_counts(counts: np.ndarray) -> np.ndarray:
    """``(2, K_grid)``: the positive and negative targets' counts of a
    :func:`target_histogram` vector (noisy or not), each in increasing exponent order along
    :data:`TARGET_EXPONENTS` (index ``j``: the bin of exponent ``j + TARGET_EXPONENTS[0]``)."""
    values = np.asarray(counts, dtype=np.float64).reshape(-1)
    if values.size != target_histogram_size():
        raise ValueError(f"counts must hold {target_histogram_size()} values (the zero bin "
                         f"and 2 signs x {_grid_bins()} exponents)")
    return values[_POSITIONS]


def target_bin_index(y: np.ndarray) -> np.ndarray:
    r"""Each target's bin (module doc): 0 for a zero target; on the core grid
    :math:`1 + (k - k_{\min})` for a positive one and :math:`1 + K + (k - k_{\min})` for a
    negative one; beyond it, the extension's positions after the core's
    (:func:`signed_counts` reads them back), with :math:`2^k < |y| \le 2^{k+1}` (``frexp``:
    :math:`|y| = m 2^e`, :math:`m \in [1/2, 1)`, so :math:`k = e - 1`, or :math:`e - 2` at an
    exact power of two), clipped to :data:`TARGET_EXPONENTS`. Raises ``ValueError`` on NaN
    or infinite targets."""
    values = np.asarray(y, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(values)):
        raise ValueError("the targets hold NaN or infinite values")
    mantissa, exponent = np.frexp(np.abs(values))
    k = exponent.astype(np.int64) - 1 - (mantissa == 0.5)
    k = np.clip(k, TARGET_EXPONENTS[0], TARGET_EXPONENTS[1]) - TARGET_EXPONENTS[0]
    index = _POSITIONS[(values < 0).astype(np.int64), k]
    return np.where(values == 0, 0, index)


def target_histogram(y: np.ndarray) -> np.ndarray:
    r"""What the release adds its noise to (module doc): the counts of the targets in the
    zero bin and by sign and binary exponent (shape :math:`(2K + 1,)`, float64; layout of
    :func:`target_bin_index`). **Not private.** Raises ``ValueError`` on NaN or infinite
    targets."""
    return np.bincount(target_bin_index(y), minlength=target_histogram_size()).astype(
        np.float64)


def target_range_sensitivity(replace_one: bool = False) -> float:
    r"""The L2 sensitivity of :func:`target_histogram`: 1 under add/remove (one count
    appears or disappears), :math:`\sqrt2` under replace-one (one count moves to another
    bin); both reached."""
    return math.sqrt(2.0) if replace_one else 1.0


def _half_level_z(failure: float, tests: int) -> float:
    r""":math:`\Phi^{-1}(1 - \alpha/(2N))`: Bonferroni at half the level ``failure``
    (:math:`\alpha`) over ``tests`` (:math:`N`) one-sided Gaussian tests."""
    if not 0.0 < failure < 1.0:
        raise ValueError("failure must be in (0, 1)")
    return _normal_isf(failure / 2.0 / tests)


@functools.lru_cache(maxsize=64)
def _normal_isf(tail: float) -> float:
    r"""scipy's :math:`\Phi^{-1}(1 - p)`, remembered: a release reads up to 16 thresholds at
    a few fixed levels, and scipy's call costs more than the rest of the release."""
    from scipy.stats import norm

    return float(norm.isf(tail))


def target_occupancy_threshold(sigma: float, failure: float = FALSE_OCCUPANCY) -> float:
    r""":math:`z\sigma`, :math:`z = \Phi^{-1}(1 - \alpha/(2(2K + 1)))`: the noisy count at
    which a bin of the core grid (and the zero bin, :math:`2K + 1` bins in all) is read as
    occupied (module doc: half the level :math:`\alpha`; the wider windows take the other
    half)."""
    return _half_level_z(failure, 2 * _bins() + 1) * check_positive("sigma", sigma)


def extension_threshold(sigma: float, failure: float = EXTENSION_OCCUPANCY) -> float:
    r""":math:`z_x\sigma`, :math:`z_x = \Phi^{-1}(1 - \alpha_x/(2 \cdot 2K_x))`: the noisy
    count at which a bin of the grid's extension (:math:`K_x` a sign beyond the core) is read
    as occupied (module doc, "The grid": half the level :math:`\alpha_x`; the windows that
    reach into the extension take the other half)."""
    return _half_level_z(failure, 2 * _extension_bins()) * check_positive("sigma", sigma)


#: The widest window of adjacent bins read where no single bin is occupied (module doc).
MAX_WINDOW = 8


def window_threshold(sigma: float, width: int, failure: float = FALSE_OCCUPANCY) -> float:
    r""":math:`z_W\sigma\sqrt w`: the noisy sum at which a window of ``width`` adjacent bins
    of one sign is read as occupied, :math:`z_W = \Phi^{-1}(1 - \alpha/(2N))` over the
    :math:`N = \sum_{w=2}^{W} 2(K - w + 1)` windows of widths 2 to :data:`MAX_WINDOW`
    (Bonferroni; module doc)."""
    K = _bins()
    windows = sum(2 * (K - w + 1) for w in range(2, MAX_WINDOW + 1))
    return (_half_level_z(failure, windows) * check_positive("sigma", sigma)
            * math.sqrt(width))


def extension_window_threshold(sigma: float, width: int,
                               failure: float = EXTENSION_OCCUPANCY) -> float:
    r""":math:`z_{xW}\sigma\sqrt w`: the noisy sum at which a window of ``width`` adjacent
    bins of one sign that reaches into the grid's extension is read as occupied,
    :math:`z_{xW} = \Phi^{-1}(1 - \alpha_x/(2N_x))` over the :math:`N_x = 2K_x(W - 1)` such
    windows of widths 2 to :data:`MAX_WINDOW` (for each width, the whole grid's
    :math:`K_{\rm grid} - w + 1` windows a sign less the core's :math:`K - w + 1`;
    Bonferroni; module doc, "The grid")."""
    windows = 2 * _extension_bins() * (MAX_WINDOW - 1)
    return (_half_level_z(failure, windows) * check_positive("sigma", sigma)
            * math.sqrt(width))


#: The level of the mirror test (module doc, "Targets about 0"): a conventional 0.05, since
#: a false two-sided range costs the refined rounds little, and a false one-sided one clips
#: half of the targets.
MIRROR_LEVEL = 0.05
#: The least share of the occupied sign's (noisy) count over the mirrored octaves that the
#: other sign must hold there too (module doc, "Targets about 0"): less, and clipping those
#: targets to the range's end costs less than the wider range would.
MIRROR_SHARE = 0.25
#: The least share of the occupied stretch's (noisy) count that a bin next to it must hold
#: to join it (module doc, "Edges"): less, and clipping its targets to the range's end costs
#: less than the wider range would (the mirror test's :data:`MIRROR_SHARE`, for the same
#: trade).
EDGE_SHARE = MIRROR_SHARE


#: The level of the edge test (module doc, "Edges"): a conventional 0.05, since a bin next
#: to the occupied ones that joins falsely widens the range by one octave, and one left out
#: falsely clips every target in it.
EDGE_LEVEL = 0.05


def edge_threshold(sigma: float, level: float = EDGE_LEVEL) -> float:
    r""":math:`z_e\sigma`, :math:`z_e = \Phi^{-1}(1 - \ell)`: the noisy count at which a bin
    next to the occupied stretch of its sign joins it (module doc, "Edges")."""
    if not 0.0 < level < 1.0:
        raise ValueError("level must be in (0, 1)")
    return _normal_isf(float(level)) * check_positive("sigma", sigma)


def mirror_threshold(sigma: float, width: int, level: float = MIRROR_LEVEL) -> float:
    r""":math:`z_m\sigma\sqrt w`, :math:`z_m = \Phi^{-1}(1 - \ell)`: the noisy sum over
    the ``width`` bins of one sign mirroring the other sign's occupied stretch at which the
    range takes them in too (module doc, "Targets about 0")."""
    if not 0.0 < level < 1.0:
        raise ValueError("level must be in (0, 1)")
    return _normal_isf(float(level)) * check_positive("sigma", sigma) * math.sqrt(int(width))


def target_mean_statistic(y: np.ndarray, centre: float, half: float) -> np.ndarray:
    r"""A mean round's statistic (module doc, "Refined rounds"): :math:`(\sum_i 1,
    \sum_i \operatorname{clip}((y_i - m)/h, -1, 1))` for ``centre`` :math:`m` and
    ``half`` :math:`h > 0` (float64, shape ``(2,)``). **Not private.** Raises
    ``ValueError`` on NaN or infinite targets."""
    values = np.asarray(y, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(values)):
        raise ValueError("the targets hold NaN or infinite values")
    h = check_positive("half", half)
    return np.array([float(values.size),
                     float(np.sum(np.clip((values - float(centre)) / h, -1.0, 1.0)))])


def target_mean_sensitivity(replace_one: bool = False) -> float:
    r"""The L2 sensitivity of :func:`target_mean_statistic`: :math:`\sqrt2` under
    add/remove (a row adds 1 to the count and at most 1 in absolute value to the sum) and 2
    under replace-one (the count is unchanged, the sum moves by at most 2); both reached."""
    return 2.0 if replace_one else math.sqrt(2.0)


def centre_from_release(noisy: np.ndarray, centre: float, half: float, sigma: float,
                        z: float = 2.0) -> float | None:
    r"""The refined centre :math:`m + h\,\operatorname{clip}(S/N, -1, 1)` from a mean
    round's noisy pair :math:`(N, S)` (module doc; post-processing), or None where the
    noisy count is below :math:`z\sigma` (the round does not resolve a mean: the caller
    keeps its centre)."""
    count, total = (float(v) for v in np.asarray(noisy, dtype=np.float64).reshape(-1)[:2])
    if not count >= z * check_positive("sigma", sigma):
        return None
    return float(centre) + check_positive("half", half) * min(max(total / count, -1.0), 1.0)


def refined_range(previous: tuple[float, float], centre: float,
                  distances: PrivateTargetRange) -> tuple[float, float]:
    """The range after a histogram round of the distances to ``centre`` (module doc):
    :math:`[c - r, c + r]`, ``r`` twice the upper end of the released hull of the
    distances, intersected with ``previous``; ``previous`` where the round resolved nothing
    (or only the zero bin) or the intersection is empty."""
    low, high = (float(v) for v in previous)
    r = 2.0 * max(-distances.low, distances.high)
    if not distances.resolved or not r > 0.0:
        return low, high
    return _intersected((low, high), float(centre) - r, float(centre) + r)


def range_within_declared(declared: tuple[float, float],
                          released: PrivateTargetRange) -> tuple[float, float]:
    """A declared range narrowed by the first histogram's release (module doc; the
    estimators' "Within a declared range"): ``declared`` intersected with the released
    range, except on a side where that reached the grid's end (targets beyond it fall in
    the end bin: it bounds nothing there); ``declared`` where the release resolved nothing
    or the intersection is empty. Post-processing: public."""
    low, high = (float(v) for v in declared)
    if not released.resolved:
        return low, high
    top = TARGET_GRID_TOP_EDGE
    return _intersected((low, high), released.low if released.low > -top else -math.inf,
                        released.high if released.high < top else math.inf)


def _intersected(previous: tuple[float, float], low: float, high: float
                 ) -> tuple[float, float]:
    """``previous`` intersected with ``[low, high]``; ``previous`` where that is empty."""
    new_low, new_high = max(previous[0], low), min(previous[1], high)
    return (new_low, new_high) if new_high > new_low else previous


@dataclasses.dataclass(frozen=True)
class PrivateTargetRange:
    r"""What :func:`target_range_from_release` computes (post-processing of the release).

    Attributes
    ----------
    low, high : float
        The released range (module doc); ``0, 0`` when nothing is resolved.
    resolved : bool
        Whether the occupied bins span a range of positive width.
    threshold : float
        :math:`z\sigma`, the count a single bin needed.
    noise_std : float
        :math:`\sigma` of each released count.
    window : int
        The width (in bins) of the windows the range was read from: 1 where single bins
        were occupied, up to :data:`MAX_WINDOW` where only wider windows were; 0 where
        nothing was resolved.
    occupied : tuple of (float, float, float)
        The occupied bins whose hull is the range, as ``(low, high, noisy count)``
        (``(0, 0, count)``: the zero bin, also where it alone was occupied; empty where the
        range was read from windows);
        :func:`separated_spans` finds a few targets far beyond the rest in them.
    rounds : tuple of dict
        The refined rounds (module doc, "Refined rounds"), one record each: ``kind``
        (``"mean"`` or ``"histogram"``), what it released (``centre``; ``range``) or None
        where it resolved nothing, and ``noise_std``; empty for a single release.
        ``low``, ``high``, ``threshold``, ``noise_std`` and ``window`` are the first
        histogram's, with ``low`` and ``high`` narrowed by the rounds.
    """

    low: float
    high: float
    resolved: bool
    threshold: float
    noise_std: float
    window: int = 1
    rounds: tuple[dict, ...] = ()
    #: The first histogram's occupied bins as ``(low, high, noisy count)``, ``(0, 0, count)``
    #: for the zero bin; empty where it read windows (:func:`separated_spans` reads them).
    occupied: tuple[tuple[float, float, float], ...] = ()
    #: Whether the other sign's bins mirroring a one-signed range passed the mirror test
    #: and the range spans both signs (module doc, "Targets about 0").
    mirrored: bool = False

    @property
    def zero_only(self) -> bool:
        """Whether the zero bin alone was occupied (the targets all, or nearly all, exactly 0):
        nothing is resolved, as where no bin is, but for a reason a user can act on."""
        return not self.resolved and any(lo == hi == 0.0 for lo, hi, _ in self.occupied)

    @staticmethod
    def unresolved_reason(zero_only: bool) -> str:
        """Why a release resolved no range, for the warnings that say so (the regressors',
        ``noisygd fit``'s): ``zero_only`` is :attr:`zero_only`."""
        return ("only its zero bin was occupied: the targets are all, or nearly all, exactly 0"
                if zero_only else "too few rows against its noise at this epsilon")

    def centre_half(self, symmetric: bool = False) -> tuple[float, float]:
        """``(m, h)`` of the range: its midpoint and half-width, or with ``symmetric``
        (a fit without an intercept) ``(0, max(|low|, |high|))``."""
        if symmetric:
            return 0.0, max(-self.low, self.high)
        return (self.low + self.high) / 2.0, (self.high - self.low) / 2.0


def _span(sign: int, first: int, last: int) -> tuple[float, float]:
    """The real interval of the bins ``first..last`` (indices along
    :data:`TARGET_EXPONENTS`) of one sign (0 positive: :math:`(2^k, 2^{k+1}]`; 1 negative:
    mirrored)."""
    lo = math.ldexp(1.0, first + TARGET_EXPONENTS[0])
    hi = math.ldexp(1.0, last + TARGET_EXPONENTS[0] + 1)
    return (lo, hi) if sign == 0 else (-hi, -lo)


def edge_bins(counts: np.ndarray, first: int, last: int, sigma: float,
              level: float = EDGE_LEVEL, share: float = EDGE_SHARE) -> list[int]:
    r"""The bins next to the occupied stretch ``first..last`` of one sign's noisy ``counts``
    that join it (module doc, "Edges"): outwards from each end, each bin whose noisy count
    reaches both :func:`edge_threshold` ``(sigma, level)`` and ``share`` times the
    stretch's noisy count, until one does not. Post-processing.

    Parameters
    ----------
    counts : ndarray of shape (K,)
        One sign's noisy counts along the exponent grid.
    first, last : int
        The stretch's first and last bin (indices into ``counts``), ``first <= last``.
    sigma : float
        The noise's standard deviation.
    level : float, default=EDGE_LEVEL
        The chance that an empty bin next to the stretch joins it (at most; exactly where
        the share's bar is the lower one).
    share : float, default=EDGE_SHARE
        The least share of the stretch's noisy count a joining bin holds, in [0, 1).

    Returns
    -------
    list of int
        The joining bins: those above ``last`` in increasing order, then those below
        ``first`` in decreasing order.
    """
    values = np.asarray(counts, dtype=np.float64).reshape(-1)
    if not 0 <= int(first) <= int(last) < values.size:
        raise ValueError("need 0 <= first <= last < len(counts)")
    if not 0.0 <= share < 1.0:
        raise ValueError("share must be in [0, 1)")
    need = max(edge_threshold(sigma, level),
               share * float(values[int(first):int(last) + 1].sum()))
    out = []
    j = int(last) + 1
    while j < values.size and values[j] >= need:
        out.append(j)
        j += 1
    j = int(first) - 1
    while j >= 0 and values[j] >= need:
        out.append(j)
        j -= 1
    return out


def target_range_from_release(noisy: np.ndarray, sigma: float,
                              failure: float = FALSE_OCCUPANCY,
                              edge_level: float | None = None) -> PrivateTargetRange:
    r"""The released range from the noisy histogram ``noisy`` (:func:`target_histogram`'s
    vector plus Gaussian noise of standard deviation ``sigma``; module doc): the hull of
    the occupied bins of each sign, or where none of a sign's bins is occupied, of its
    occupied windows of the narrowest width that has one; where only one sign is occupied and
    the zero bin is not, the other sign's mirroring bins join it when they pass the mirror
    test (module doc, "Targets about 0"). With ``edge_level``, the bins next to each sign's
    stretch join it where they pass the edge test at that level (:func:`edge_bins`; module
    doc, "Edges"; the estimators read the first histogram so, at :data:`EDGE_LEVEL`).
    Post-processing: public."""
    counts = np.asarray(noisy, dtype=np.float64).reshape(-1)
    if counts.size != target_histogram_size():
        raise ValueError(f"noisy must hold {target_histogram_size()} counts (the zero bin "
                         f"and 2 signs x {_grid_bins()} exponents)")
    threshold = target_occupancy_threshold(sigma, failure)
    signed = signed_counts(counts)
    # each bin's and window's threshold: the core's level within it, the extension's level
    # for those that reach beyond it (module doc, "The grid"); the same for both signs
    needs = {1: np.where(_IN_CORE, threshold,
                         extension_threshold(sigma, failure * EXTENSION_SHARE))}

    def need(width: int) -> np.ndarray:
        if width not in needs:
            inside = _windows_in_core(width)
            needs[width] = np.where(inside, window_threshold(sigma, width, failure),
                                    extension_window_threshold(sigma, width,
                                                               failure * EXTENSION_SHARE))
        return needs[width]

    ends: list[tuple[float, float]] = []
    occupied: tuple[tuple[float, float, float], ...] = ()
    hulls: dict[int, tuple[int, int]] = {}  # sign -> its first and last occupied bin
    widest = 0
    for sign in (0, 1):  # each sign read alone: its bins, else its narrowest windows
        for width in range(1, MAX_WINDOW + 1):
            if width == 1:
                passing = np.flatnonzero(signed[sign] >= need(1))
            else:  # sums of ``width`` adjacent bins of this sign
                sums = np.convolve(signed[sign], np.ones(width), mode="valid")
                passing = np.flatnonzero(sums >= need(width))
            if passing.size:
                spans = [_span(sign, int(j), int(j) + width - 1) for j in passing]
                ends += spans
                if width == 1:  # single bins with their noisy counts (windows: not recorded)
                    occupied += tuple((*span, float(signed[sign, j]))
                                      for span, j in zip(spans, passing, strict=True))
                hulls[sign] = (int(passing[0]), int(passing[-1]) + width - 1)
                widest = max(widest, width)
                if edge_level is not None:
                    for j in edge_bins(signed[sign], *hulls[sign], sigma, edge_level):
                        ends.append(_span(sign, j, j))
                        if width == 1:
                            occupied += ((*_span(sign, j, j), float(signed[sign, j])),)
                break
    mirrored = False
    if counts[0] >= threshold:
        ends.append((0.0, 0.0))
        occupied += ((0.0, 0.0, float(counts[0])),)
    elif len(hulls) == 1:
        # one sign only, and no zero bin: the other sign's bins mirroring the occupied ones
        # (their positions fixed by this sign's counts, their noise independent of them)
        ((sign, (first, last)),) = hulls.items()
        mirror = float(signed[1 - sign, first:last + 1].sum())
        held = float(signed[sign, first:last + 1].sum())
        if mirror >= max(mirror_threshold(sigma, last - first + 1), MIRROR_SHARE * held):
            ends.append(_span(1 - sign, first, last))
            mirrored = True
    if not ends:
        return PrivateTargetRange(0.0, 0.0, False, threshold, float(sigma), 0)
    low, high = min(a for a, _ in ends), max(b for _, b in ends)
    return PrivateTargetRange(low, high, high > low, threshold, float(sigma),
                              max(widest, 1) if high > low else 0,
                              occupied=occupied if widest <= 1 else (), mirrored=mirrored)

