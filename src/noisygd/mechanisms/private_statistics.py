r"""Private statistics of a table: noisy histograms, quantile bounds and kept level lists.

Every statistic here is **one Gaussian mechanism** on a histogram over a public,
data-independent set of bins (a numeric column's geometric grid over a declared range, or a
categorical column's declared vocabulary), followed by post-processing (quantiles of the
noisy CDF, a threshold on the noisy counts). The release is therefore exactly one
:class:`~noisygd.accounting.events.Gaussian` event per column, which the Gaussian-DP and PLD
accountants compose exactly with the noisy row count and the training run
(:func:`noisygd.training.fit_private`, ``prior_events``).

**Sensitivity.** A histogram is :math:`h(D) = \sum_{x \in D} e_{b(x)}` with :math:`b(x)` the
bin of row :math:`x` (rows with no bin, e.g. a missing value, contribute the zero vector):
a sum of per-row vectors of norm at most 1, so ``Neighbouring.clipped_sum_sensitivity``
bounds its L2 sensitivity. Under add/remove one row, :math:`h(D') - h(D) = \pm e_{b(x)}`
or 0: :math:`\Delta_2 = 1` (exact). Under replace-one, :math:`h(D') - h(D) = e_{b(x')} -
e_{b(x)}`, of norm 0, 1 or :math:`\sqrt 2` (two distinct one-hot vectors): :math:`\Delta_2 =
\sqrt 2`, tighter than the clipped-sum rule's 2 (:func:`histogram_sensitivity`).

**Theorem** (Gaussian mechanism, Dong, Roth and Su 2022, Thm. 2.7): releasing
:math:`h(D) + \mathcal N(0, \sigma^2 I)` with :math:`\sigma = \Delta_2/\mu` is
:math:`\mu`-GDP, whatever the number of bins. Every quantity computed from the noisy counts
and public constants alone (the noisy CDF, its quantiles, a threshold) is post-processing
(ibid., Prop. 2.8) and costs nothing more. ``m`` such histograms on the same rows compose to
:math:`\sqrt{\sum_j \mu_j^2}`-GDP (ibid., Cor. 3.3).

**Clipped-value counts** (:func:`noisy_clip_counts`). Against public bounds
:math:`[l, u]`, each row :math:`x` falls in at most one of *below* (:math:`x < l`),
*inside* and *above* (:math:`x > u`); a missing value in none. The released vector
:math:`(n_{\rm below}, n_{\rm above}) = \sum_{x \in D} v(x)` with :math:`v(x) = e_1`,
:math:`e_2` or 0 is therefore a histogram over two public bins (the *inside* rows are the
uncounted bin): each row adds a vector of norm at most 1, so adding or removing a row changes it
by :math:`\pm e_k` or 0 (:math:`\Delta_2 = 1`), and replacing a row by
:math:`v(x') - v(x) \in \{0, \pm e_k, \pm(e_1 - e_2)\}` (:math:`\Delta_2 = \sqrt 2`):
the same sensitivity as any histogram, and the same Gaussian event.

Noise is drawn by :func:`noisygd.mechanisms.noise.add_gaussian_noise` (seedable NumPy, or
the discrete Gaussian of a :class:`~noisygd.mechanisms.secure.SecureRandom`, whose event is
wrapped in :class:`~noisygd.accounting.events.DiscreteGaussianNoise` and calibrated so that
its zCDP is at most the share asked for).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from noisygd._checks import (
    check_fraction,
    check_positive,
    check_positive_int,
    check_real,
)
from noisygd.accounting.events import DpEvent, Gaussian, Neighbouring
from noisygd.mechanisms.noise import (
    add_gaussian_noise,
    is_secure,
    secure_event,
    secure_noise_scale,
    sensitivity_inflation,
)

__all__ = [
    "DEFAULT_GRID_RATIO",
    "DEFAULT_LEVEL_THRESHOLD",
    "DEFAULT_QUANTILES",
    "DEFAULT_RELATIVE_RESOLUTION",
    "NoisyHistogram",
    "PrivateBounds",
    "PrivateLevels",
    "bin_index",
    "clip_codes",
    "clip_counts",
    "code_counts",
    "geometric_grid",
    "histogram_event",
    "histogram_sensitivity",
    "noisy_clip_counts",
    "noisy_histogram",
    "noisy_histogram_of_counts",
    "private_bounds",
    "private_levels",
    "private_levels_of_counts",
    "quantile_bounds",
    "released_counts",
]

#: Growth ratio of consecutive grid edges: :math:`2^{1/8}`, a relative resolution of 9%
#: (about 160 bins per sign and factor :math:`10^6` of magnitudes).
DEFAULT_GRID_RATIO = 2.0 ** 0.125
#: Smallest magnitude resolved, relative to :math:`\max(|{\rm low}|, |{\rm high}|)` of the
#: declared range.
DEFAULT_RELATIVE_RESOLUTION = 1e-6
#: Quantiles estimated as a numeric column's bounds: at most about 1% of the rows are clipped
#: on each side, a standard robust range that keeps one outlier from stretching the scale
#: of a column onto which every other row is squashed (the user may declare others).
DEFAULT_QUANTILES = (0.01, 0.99)
#: A noisy count below this many noise standard deviations is set to 0 (post-processing):
#: a bin or level absent from the data survives with probability
#: :math:`\Phi(-3) \approx 0.13\%`.
DEFAULT_LEVEL_THRESHOLD = 3.0


def histogram_sensitivity(relation: Neighbouring | str) -> float:
    r"""L2 sensitivity of a histogram (one count per row at most): 1 (add/remove) or
    :math:`\sqrt 2` (replace-one).

    ``Neighbouring.clipped_sum_sensitivity`` (1, 2) bounds it, a histogram being a sum of
    one-hot vectors of norm 1; under replace-one the difference of two one-hot vectors has
    norm at most :math:`\sqrt 2` (module docstring), the exact value used here.
    """
    relation = Neighbouring(relation)
    return min(relation.clipped_sum_sensitivity, math.sqrt(2.0))


def geometric_grid(low: float, high: float, *, ratio: float = DEFAULT_GRID_RATIO,
                   resolution: float | None = None) -> np.ndarray:
    r"""Public bin edges over ``[low, high]``: 0 and :math:`\pm r\,g^k` inside, plus the ends.

    With :math:`r` = ``resolution`` (default :data:`DEFAULT_RELATIVE_RESOLUTION`
    :math:`\times \max(|{\rm low}|, |{\rm high}|)`) and :math:`g` = ``ratio``, the edges
    are ``low``, ``high`` and every point of :math:`\{0\} \cup \{\pm r g^k : k \ge 0\}`
    strictly between them, sorted: a bin's width is at most :math:`(g - 1)` times its
    distance to 0 beyond :math:`r`. Data-independent: a function of declared constants only.

    Returns
    -------
    ndarray
        Increasing edges :math:`e_0 = {\rm low} < \dots < e_B = {\rm high}`; bin ``i`` is
        :math:`[e_i, e_{i+1})` (the last one closed).
    """
    low, high = check_real("low", low), check_real("high", high)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError("the range must be finite numbers with low < high")
    ratio = check_real("ratio", ratio)
    if not ratio > 1.0:
        raise ValueError(f"ratio must be > 1, got {ratio!r}")
    scale = max(abs(low), abs(high))
    r = (DEFAULT_RELATIVE_RESOLUTION * scale if resolution is None
         else check_positive("resolution", resolution))
    # logarithms of each side: scale / r overflows for a tiny r (1e300 / 1e-300)
    k_max = (max(0, math.ceil((math.log(scale) - math.log(r)) / math.log(ratio)))
             if scale > r else 0)
    mags = np.exp(math.log(r) + math.log(ratio) * np.arange(k_max + 1, dtype=np.float64))
    mags = np.unique(mags[mags > 0.0])  # a subnormal r may round to 0 or repeat
    points = np.concatenate([-mags[::-1], [0.0], mags])
    inner = points[(points > low) & (points < high)]
    return np.concatenate([[low], inner, [high]])


def bin_index(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin of each value (clipped into ``[edges[0], edges[-1]]`` first); ``-1`` for NaN."""
    v = np.asarray(values, dtype=np.float64)
    n_bins = edges.shape[0] - 1
    idx = np.searchsorted(edges, np.clip(v, edges[0], edges[-1]), side="right") - 1
    idx = np.clip(idx, 0, n_bins - 1)
    return np.where(np.isnan(v), -1, idx).astype(np.int64)


@dataclass(frozen=True)
class NoisyHistogram:
    """A released histogram.

    Attributes
    ----------
    counts : ndarray
        The noisy counts :math:`h(D) + \\mathcal N(0, \\sigma^2 I)` (public).
    noise_std : float
        :math:`\\sigma`.
    event : DpEvent
        ``Gaussian(sigma, sensitivity, relation)`` (secure mode: wrapped in
        :class:`~noisygd.accounting.events.DiscreteGaussianNoise`).
    """

    counts: np.ndarray
    noise_std: float
    event: DpEvent


def _secure_sigma(rng: Any, sigma: float, dim: int, sensitivity: float, mu: float) -> float:
    """Secure mode: the smallest ``sigma`` (to 1e-12 relative) with :math:`\\kappa\\Delta/\\sigma
    \\le \\mu`, so the discrete event's zCDP :math:`(\\kappa\\Delta/\\sigma)^2/2` is at most
    :math:`\\mu^2/2`."""
    return secure_noise_scale(rng, sigma, dim, sensitivity, mu)[0]


def histogram_event(n_bins: int, *, mu: float, relation: Neighbouring | str,
                    rng: Any) -> tuple[float, DpEvent]:
    r"""``(sigma, event)`` of :func:`noisy_histogram` over ``n_bins`` bins at ``mu``, known
    before any data is read (the bins, ``mu`` and the relation are public), so that a ledger
    can record the release first.

    :math:`\sigma = \Delta_2/\mu` and ``Gaussian(sigma, Delta_2, relation)``; secure mode:
    the smallest :math:`\sigma` whose discrete event (rounding included) is at most
    :math:`\mu^2/2`-zCDP, and that event.
    """
    n_bins = check_positive_int("n_bins", n_bins)
    mu = check_positive("mu", mu)
    relation = Neighbouring(relation)
    sens = histogram_sensitivity(relation)
    sigma = sens / mu
    if is_secure(rng):
        sigma = _secure_sigma(rng, sigma, n_bins, sens, mu)
    event = secure_event(Gaussian(noise_multiplier=sigma, sensitivity=sens, relation=relation),
                         rng, sensitivity_inflation(rng, sigma, n_bins, sens))
    return float(sigma), event


def code_counts(codes: np.ndarray, n_bins: int) -> np.ndarray:
    r"""The exact histogram :math:`h(D) = \sum_{x \in D} e_{b(x)}` of ``codes`` over ``n_bins``
    bins (int64; ``-1`` rows uncounted): what :func:`noisy_histogram` adds noise to.

    Histograms of disjoint parts of the rows (e.g. a Dask DataFrame's partitions) add up to
    the histogram of all of them, exactly (integers).

    Raises
    ------
    ValueError
        A code outside ``-1 .. n_bins - 1``.
    """
    n_bins = check_positive_int("n_bins", n_bins)
    codes = np.asarray(codes, dtype=np.int64).ravel()
    if codes.size and (codes.max(initial=-1) >= n_bins or codes.min(initial=0) < -1):
        raise ValueError("codes must lie in -1 .. n_bins - 1")
    return np.bincount(codes[codes >= 0], minlength=n_bins).astype(np.int64)


def noisy_histogram_of_counts(counts: np.ndarray, *, mu: float, relation: Neighbouring | str,
                              rng: Any) -> NoisyHistogram:
    r"""The Gaussian mechanism on an exact histogram given as its counts.

    ``counts`` must be a histogram (:func:`code_counts`, or a sum of such over disjoint
    parts of the rows): each row adds at most one to one count, which is what the
    sensitivity :func:`histogram_sensitivity` assumes. Releases
    :math:`h + \mathcal N(0, \sigma^2 I)` with :math:`\sigma = \Delta_2/\mu` over
    ``len(counts)`` public bins, exactly as :func:`noisy_histogram` (which calls this): the
    same event, and the same draw from ``rng``.

    Raises
    ------
    ValueError
        ``counts`` is not a non-empty vector of non-negative integers.
    """
    true = np.asarray(counts)
    if true.ndim != 1 or true.size == 0 or not np.issubdtype(true.dtype, np.integer) \
            or (true < 0).any():
        raise ValueError("counts must be a non-empty vector of non-negative integers (an "
                         "exact histogram)")
    sigma, event = histogram_event(true.size, mu=mu, relation=relation, rng=rng)
    noisy = np.asarray(add_gaussian_noise(true.astype(np.float64), sigma, rng),
                       dtype=np.float64)
    return NoisyHistogram(noisy, sigma, event)


def noisy_histogram(codes: np.ndarray, n_bins: int, *, mu: float,
                    relation: Neighbouring | str, rng: Any) -> NoisyHistogram:
    r"""The Gaussian mechanism on the histogram of ``codes`` over ``n_bins`` public bins.

    Parameters
    ----------
    codes : array of int
        Each row's bin in ``0 .. n_bins - 1``, or ``-1`` for a row counted nowhere (a row
        contributes at most one count; module docstring).
    n_bins : int
        The number of bins (public).
    mu : float
        Gaussian-DP parameter of the release: :math:`\sigma = \Delta_2/\mu` with
        :math:`\Delta_2` = :func:`histogram_sensitivity` ``(relation)``.
    relation : {"add_remove", "replace_one"}
    rng : numpy.random.Generator or SecureRandom

    Returns
    -------
    NoisyHistogram
        Its event is exactly :math:`\mu`-GDP (secure mode: at most :math:`\mu^2/2`-zCDP);
        :func:`noisy_histogram_of_counts` of :func:`code_counts` ``(codes, n_bins)``.
    """
    return noisy_histogram_of_counts(code_counts(codes, n_bins), mu=mu, relation=relation,
                                     rng=rng)


def _thresholded(hist: NoisyHistogram, threshold: float) -> np.ndarray:
    t = check_positive("threshold", threshold) if threshold else 0.0
    return np.where(hist.counts >= t * hist.noise_std, hist.counts, 0.0)


def quantile_bounds(hist: NoisyHistogram, edges: np.ndarray,
                    quantiles: Sequence[float] = DEFAULT_QUANTILES, *,
                    threshold: float = DEFAULT_LEVEL_THRESHOLD) -> tuple[float, float] | None:
    r"""Bounds from the noisy CDF (post-processing of ``hist``; no privacy cost).

    With :math:`\tilde c_i` the noisy counts set to 0 below ``threshold`` noise standard
    deviations, :math:`F_i = \sum_{j \le i}\tilde c_j / \sum_j \tilde c_j`, and
    :math:`(q_{lo}, q_{hi})` = ``quantiles``: the lower bound is the *lower* edge of the
    first bin with :math:`F_i > q_{lo}`, the upper bound the *upper* edge of the first bin
    with :math:`F_i \ge q_{hi}`; so ``low < high`` always, and each is rounded outwards to the
    grid. Returns None when no noisy count passes the threshold (nothing usable released).
    """
    q_lo = check_fraction("quantiles[0]", quantiles[0])
    q_hi = check_fraction("quantiles[1]", quantiles[1])
    if not q_lo < q_hi:
        raise ValueError("quantiles must be increasing: [q_low, q_high]")
    c = _thresholded(hist, threshold)
    total = float(c.sum())
    if not total > 0.0:
        return None
    cdf = np.cumsum(c) / total
    i_lo = int(np.argmax(cdf > q_lo))
    i_hi = int(np.argmax(cdf >= q_hi - 1e-12))
    i_hi = max(i_hi, i_lo)
    return float(edges[i_lo]), float(edges[i_hi + 1])


@dataclass(frozen=True)
class PrivateBounds:
    """Bounds of a numeric column paid for privately (:func:`private_bounds`).

    Attributes
    ----------
    bounds : (float, float)
        The released ``[low, high]`` (the declared range when nothing passed the threshold).
    fallback : bool
        True when the declared range was used (no noisy count passed the threshold).
    histogram : NoisyHistogram
    edges : ndarray
        The public grid.
    """

    bounds: tuple[float, float]
    fallback: bool
    histogram: NoisyHistogram
    edges: np.ndarray

    @property
    def event(self) -> DpEvent:
        return self.histogram.event


def private_bounds(values: np.ndarray, value_range: tuple[float, float], *, mu: float,
                   relation: Neighbouring | str, rng: Any,
                   quantiles: Sequence[float] = DEFAULT_QUANTILES,
                   ratio: float = DEFAULT_GRID_RATIO, resolution: float | None = None,
                   threshold: float = DEFAULT_LEVEL_THRESHOLD) -> PrivateBounds:
    r"""``[low, high]`` of a numeric column by the noisy CDF over a public geometric grid.

    The histogram of ``values`` (clipped into ``value_range``; NaN rows uncounted) over
    :func:`geometric_grid` ``(*value_range)`` is released by :func:`noisy_histogram` at
    ``mu`` (exactly :math:`\mu`-GDP); the bounds are :func:`quantile_bounds` of it
    (post-processing). When nothing passes the threshold the declared range itself is
    returned (``fallback``; still a function of the release only).
    """
    lo, hi = (check_real("value_range[0]", value_range[0]),
              check_real("value_range[1]", value_range[1]))
    edges = geometric_grid(lo, hi, ratio=ratio, resolution=resolution)
    hist = noisy_histogram(bin_index(values, edges), edges.shape[0] - 1, mu=mu,
                           relation=relation, rng=rng)
    found = quantile_bounds(hist, edges, quantiles, threshold=threshold)
    if found is None:
        return PrivateBounds((lo, hi), True, hist, edges)
    return PrivateBounds(found, False, hist, edges)


@dataclass(frozen=True)
class PrivateLevels:
    """The levels of a declared vocabulary kept by a noisy histogram (:func:`private_levels`).

    Attributes
    ----------
    kept : ndarray of bool
        One per vocabulary entry: its noisy count reached ``threshold`` noise deviations.
    histogram : NoisyHistogram
    threshold : float
        In noise standard deviations.
    """

    kept: np.ndarray
    histogram: NoisyHistogram
    threshold: float

    @property
    def event(self) -> DpEvent:
        return self.histogram.event


def private_levels(codes: np.ndarray, vocabulary_size: int, *, mu: float,
                   relation: Neighbouring | str, rng: Any,
                   threshold: float = DEFAULT_LEVEL_THRESHOLD) -> PrivateLevels:
    r"""Which levels of a declared vocabulary occur: a thresholded Gaussian histogram.

    ``codes`` are each row's position in the vocabulary, ``-1`` for a value outside it or
    missing (uncounted). The histogram over the ``vocabulary_size`` declared levels is
    released at ``mu`` (:func:`noisy_histogram`); level ``j`` is kept when
    :math:`\tilde h_j \ge \tau\sigma` with :math:`\tau` = ``threshold`` (post-processing).
    The caller maps the other levels to an explicit unknown level. Because the bins are the
    declared vocabulary, no value read from the data can appear in the output (unlike a
    histogram over the observed values, which needs a stability argument and a delta).
    """
    size = check_positive_int("vocabulary_size", vocabulary_size)
    check_positive("threshold", threshold)
    return private_levels_of_counts(code_counts(codes, size), mu=mu, relation=relation,
                                    rng=rng, threshold=threshold)


def private_levels_of_counts(counts: np.ndarray, *, mu: float, relation: Neighbouring | str,
                             rng: Any, threshold: float = DEFAULT_LEVEL_THRESHOLD
                             ) -> PrivateLevels:
    r""":func:`private_levels` from the exact histogram of the codes (:func:`code_counts`,
    or a sum of such over disjoint parts of the rows), one count per vocabulary level: the
    same release (:func:`noisy_histogram_of_counts`) and the same kept levels."""
    tau = check_positive("threshold", threshold)
    hist = noisy_histogram_of_counts(counts, mu=mu, relation=relation, rng=rng)
    return PrivateLevels(hist.counts >= tau * hist.noise_std, hist, tau)


def clip_codes(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """Each row's clipping bin against ``[low, high]``: 0 below ``low``, 1 above ``high``,
    ``-1`` inside (or NaN: a missing value is not clipped). A row is in at most one bin."""
    low, high = check_real("low", low), check_real("high", high)
    if not low < high:
        raise ValueError("the bounds must have low < high")
    v = np.asarray(values, dtype=np.float64).ravel()
    return np.where(v < low, 0, np.where(v > high, 1, -1)).astype(np.int64)


def noisy_clip_counts(values: np.ndarray, bounds: tuple[float, float], *, mu: float,
                      relation: Neighbouring | str, rng: Any) -> NoisyHistogram:
    r"""Noisy numbers of values below and above ``bounds``: one Gaussian mechanism.

    The two-bin histogram of :func:`clip_codes` (module docstring, *Clipped-value counts*:
    L2 sensitivity 1 under add/remove, :math:`\sqrt 2` under replace-one) released by
    :func:`noisy_histogram` at ``mu``: exactly :math:`\mu`-GDP (Dong, Roth and Su 2022,
    Thm. 2.7); ``counts`` is ``[below, above]``. Its event is :func:`histogram_event`
    ``(2, ...)``, known before the data is read.
    """
    lo, hi = bounds
    return noisy_histogram_of_counts(clip_counts(values, lo, hi), mu=mu, relation=relation,
                                     rng=rng)


def clip_counts(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """The exact numbers ``[below, above]`` of ``values`` below ``low`` and above ``high``
    (int64; :func:`code_counts` of :func:`clip_codes`): what :func:`noisy_clip_counts` adds
    noise to, additive over disjoint parts of the rows."""
    return code_counts(clip_codes(values, low, high), 2)


def released_counts(hist: NoisyHistogram) -> list[int]:
    """The noisy counts as shown: rounded to integers and clipped at 0 (post-processing)."""
    return [int(max(0.0, round(float(c)))) for c in hist.counts]
