r"""Privacy amplification by subsampling: sampled Gaussians and Lemma 12.2.

Lecture 12 (seed 000), section 12.3.1: NoisySGD runs a mechanism on a random
subsample. Two sampling schemes are accounted, each under its own relation:

* **Poisson sampling** (each row kept independently with probability
  :math:`\gamma`), add/remove neighbours: event
  :class:`~noisygd.accounting.events.PoissonSampled`.
* **Sampling without replacement** (a uniform subset of ``m`` of ``n`` rows,
  :math:`\gamma = m/n`), replace-one neighbours: event
  :class:`~noisygd.accounting.events.SampledWithoutReplacement`.

What this module provides:

RDP curves (read through the ``rdp`` accountant's table :data:`noisygd.accounting.rdp.CURVE`)
    * Poisson-sampled Gaussian: Mironov, Talwar and Zhang (2019), "Rényi
      differential privacy of the sampled Gaussian mechanism", Section 3:
      :math:`\varepsilon(\alpha) = \log A_\alpha / (\alpha - 1)` with, for
      integer :math:`\alpha`, the exact binomial expansion (their eq. (3.3))

      .. math:: A_\alpha = \sum_{i=0}^{\alpha} \binom{\alpha}{i} (1-\gamma)^{\alpha-i}
                \gamma^i \exp\Big(\frac{i^2 - i}{2\sigma^2}\Big),

      and for fractional :math:`\alpha` the two-sided series of their
      Section 3.3 (as implemented by dp_accounting and Opacus, with the
      magnitudes :math:`|\binom{\alpha}{i}|` of the generalised binomial
      coefficients, which makes the sum an upper bound; an order whose series has not
      converged in 1000 terms gets a bound on the series' tail, :func:`_log_frac_tail`,
      where dp_accounting drops it). All sums are in log
      space. Here :math:`\sigma` is the noise standard deviation in units of the
      add/remove sensitivity.
    * Without replacement: Wang, Balle and Kasiviswanathan (2019), "Subsampled
      Rényi differential privacy and analytical moments accountant", AISTATS,
      Theorem 27 (the Gaussian-specific bound with forward differences of
      :math:`e^{(j-1)\varepsilon(j)}`) for integer orders up to 256, the general
      bound of their Theorem 9 above 256, and the convex interpolation of the
      cumulant generating function (their Corollary 10) for fractional orders:
      the same bound dp_accounting's ``RdpAccountant`` implements for
      ``SampledWithoutReplacementDpEvent`` under ``REPLACE_ONE``. Forward
      differences are computed exactly in 250-digit decimal arithmetic.

    Both curves are capped, order by order, by the unsampled Gaussian's
    :math:`\alpha/(2\sigma^2)` (joint quasi-convexity of the Rényi divergence; proof in
    :func:`_sampled_gaussian_curve`), so subsampling never reports less privacy than the
    full batch.

PLD (:mod:`noisygd.accounting.dp_accounting_bridge`)
    Poisson-sampled Gaussians become ``PoissonSampledDpEvent(gamma,
    GaussianDpEvent(sigma))`` under ``ADD_OR_REMOVE_ONE``, with ``sigma`` from
    :func:`effective_noise_multiplier`. dp_accounting's PLD accountant does not support
    ``SampledWithoutReplacementDpEvent``; the PLD of sampling without replacement is built
    by :mod:`noisygd.accounting.wor_pld` (the symmetric dominating pair of Zhu, Dong and
    Wang 2022, Proposition 30) and composed in the bridge.

A new accountant ``"subsampling_lemma"``
    Lemma 12.2 of the lecture (Balle, Barthe and Gaboardi 2018, "Privacy
    amplification by subsampling: tight analyses via couplings and
    divergences", Theorem 8 for Poisson sampling with add/remove and Theorem 9
    for sampling without replacement with substitution): if :math:`M` is
    :math:`(\varepsilon, \delta)`-DP then :math:`M \circ \mathrm{sample}_\gamma`
    is :math:`(\log(1 + \gamma(e^\varepsilon - 1)), \gamma\delta)`-DP. It
    bounds sampled :class:`~noisygd.accounting.events.EpsilonDelta` events and
    their compositions (basic composition, and the advanced composition of
    Dwork, Rothblum and Vadhan 2010, Theorem III.3, for self-compositions).

Gaussian DP and zCDP have no entry for sampled events (a sampled Gaussian is not
exactly a Gaussian trade-off, and the zCDP bound would not be amplified), so those
accountants refuse them.
"""

from __future__ import annotations

import decimal
import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import gammaln, log_ndtr, logsumexp

from noisygd._checks import check_positive, check_real
from noisygd.accounting.base import (
    GENERAL,
    Accountant,
    UnsupportedEventError,
    check_delta,
    dispatch,
)
from noisygd.accounting.events import (
    Composed,
    DpEvent,
    EpsilonDelta,
    Gaussian,
    PoissonSampled,
    SampledWithoutReplacement,
    SelfComposed,
    contains,
)

__all__ = [
    "PAIRS",
    "SubsamplingLemmaAccountant",
    "effective_noise_multiplier",
    "rdp_poisson_sampled_gaussian",
    "rdp_sampled_without_replacement_gaussian",
    "subsampled_epsilon_delta",
]

# as dp_accounting; an order not converged by then gets a tail bound (dp_accounting drops it)
_MAX_FRAC_TERMS = 1000
_WOR_EXACT_MAX_ORDER = 256  # WBK19 Theorem 27 up to here, Theorem 9 above (as dp_accounting)


# ------------------------------------------------------------------ helpers
def effective_noise_multiplier(event: DpEvent) -> float:
    r"""Noise multiplier :math:`\sigma` of the single Gaussian equivalent to ``event``.

    ``event`` must be a :class:`Gaussian` or a (self-)composition of Gaussians
    *on the same input* (as inside a sampled event, where all queries see the
    same subsample). The answers, each rescaled by its own noise scale, form one
    Gaussian query with sensitivity :math:`\sqrt{\sum_i (\Delta_i/\sigma_i)^2}`
    and unit noise (Mironov, Talwar and Zhang 2019, Section 3; dp_accounting's
    ``_effective_gaussian_noise_multiplier``), so
    :math:`\sigma = 1/\sqrt{\sum_i (\Delta_i / z_i)^2}`.

    Raises
    ------
    UnsupportedEventError
        If ``event`` contains anything other than Gaussians.
    """
    inv_sq = _inverse_square(event)
    if math.isinf(inv_sq):  # a noise multiplier below ~1e-154 of the sensitivity
        raise UnsupportedEventError(
            "the noise is too small against the sensitivity for the sampled-Gaussian bounds"
        )
    return math.inf if inv_sq == 0.0 else 1.0 / math.sqrt(inv_sq)


def _inverse_square(event: DpEvent) -> float:
    if isinstance(event, Gaussian):
        ratio = event.sensitivity / event.noise_multiplier
        return ratio * ratio  # inf rather than OverflowError for a subnormal noise
    if isinstance(event, SelfComposed):
        return event.count * _inverse_square(event.event)
    if isinstance(event, Composed):
        return math.fsum(_inverse_square(e) for e in event.events)
    raise UnsupportedEventError(
        f"the sampled-Gaussian bounds need a Gaussian inside the sampled event, got "
        f"{type(event).__name__}"
    )


def _log_comb(n: float, k: np.ndarray) -> np.ndarray:
    # log |binom(n, k)| for real n (magnitude of the generalised binomial coefficient)
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


def _log_erfc(x: np.ndarray) -> np.ndarray:
    return math.log(2.0) + log_ndtr(-np.asarray(x) * math.sqrt(2.0))


def _check_orders(orders: np.ndarray) -> np.ndarray:
    a = np.asarray(orders, dtype=float)
    if a.ndim != 1 or np.any(np.isnan(a)) or np.any(a <= 1.0):
        raise ValueError("RDP orders must be a 1-d array of numbers > 1")
    return a


def _check_q_sigma(q: float, sigma: float) -> tuple[float, float]:
    """A sampling rate in [0, 1] and a noise multiplier > 0 (``inf`` allowed); reals only
    (``TypeError`` for ``True`` or ``"2"``, :func:`~noisygd._checks.check_real`)."""
    q = check_real("sampling rate", q)
    if not (0.0 <= q <= 1.0):
        raise ValueError(f"sampling rate must be in [0, 1], got {q!r}")
    sigma = check_real("noise multiplier", sigma)
    if sigma != math.inf:
        check_positive("noise multiplier", sigma)
    return q, sigma


# ------------------------------------------------- Poisson: Mironov et al. 2019
_ROWS = 128  # orders evaluated together (bounds the memory of the vectorised series)


def _log_a_int_many(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    r"""MTZ19 eq. (3.3) at integer orders: :math:`\log A_\alpha` by the binomial expansion."""
    out = np.empty(alphas.size)
    for start in range(0, alphas.size, _ROWS):
        a = alphas[start:start + _ROWS, None]
        i = np.arange(int(a.max()) + 1, dtype=float)[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            terms = (
                _log_comb(a, i)
                + i * math.log(q)
                + (a - i) * math.log1p(-q)
                + (i * i - i) / (2.0 * sigma**2)
            )
        terms = np.where(i <= a, terms, -np.inf)  # terms i > alpha do not exist
        out[start:start + _ROWS] = logsumexp(terms, axis=1)
    return out


def _log_frac_tail(q: float, sigma: float, z0: float, alphas: np.ndarray) -> np.ndarray:
    r"""Log of an upper bound on each of the two tails :math:`\sum_{i \ge N}` of the
    MTZ19 Section-3.3 series, :math:`N` = ``_MAX_FRAC_TERMS``.

    With :math:`c_i = |\binom{\alpha}{i}|` and :math:`\tfrac12\mathrm{erfc}(x) \le
    \tfrac12 e^{-x^2}` for :math:`x \ge 0`, and :math:`2z_0 - 1 = 2\sigma^2\log(1/q - 1)`,
    the Gaussian factors of the :math:`i`-th term of either series cancel:

    .. math:: s_{0,i},\ s_{1,i} \le \tfrac12\,c_i\,(1-q)^\alpha e^{-z_0^2/(2\sigma^2)}

    (for :math:`s_0` the erfc argument is :math:`(i - z_0)/(\sqrt2\sigma)`, for :math:`s_1`
    it is :math:`(z_0 - \alpha + i)/(\sqrt2\sigma)`: both >= 0 when
    :math:`N \ge \max(z_0, \alpha - z_0)`). For :math:`i > \alpha`,
    :math:`(i+1)c_{i+1} = (i - \alpha)c_i`, so :math:`\sum_{i \ge N}(i c_i - (i+1)c_{i+1})
    = \alpha\sum_{i \ge N} c_i` telescopes to :math:`N c_N` (:math:`i c_i \to 0`):
    :math:`\sum_{i \ge N} c_i = N c_N/\alpha`. ``inf`` where :math:`N \le \alpha` or the
    erfc arguments may be negative (no bound).
    """
    n = float(_MAX_FRAC_TERMS)
    with np.errstate(invalid="ignore", divide="ignore"):
        tail = (math.log(0.5) + alphas * math.log1p(-q) - z0 * z0 / (2.0 * sigma**2)
                + math.log(n) + _log_comb(alphas, np.full_like(alphas, n)) - np.log(alphas))
    valid = (n > alphas) & (n >= z0) & (n >= alphas - z0)
    return np.where(valid, tail, np.inf)


def _log_a_frac_many(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    r"""MTZ19 Section 3.3 at fractional orders: :math:`A = A_0 + A_1`, two series.

    :math:`A_0, A_1` are the integrals over :math:`(-\infty, z_0]` and
    :math:`[z_0, \infty)`, each a series of ``_MAX_FRAC_TERMS`` terms with the
    magnitudes of the generalised binomial coefficients (an upper bound). An order
    whose series has converged by then (both sequences decreasing at the tail and
    negligible, e^-30, against the total: dp_accounting's rule) gets the sum of the
    terms, as in dp_accounting. Any other order gets the sum plus the bound
    :func:`_log_frac_tail` on both tails (at low noise and high rates the terms decay
    only polynomially, and dp_accounting drops such orders: ``inf``); ``inf`` where that
    bound does not apply.
    """
    z0 = sigma**2 * math.log(1.0 / q - 1.0) + 0.5
    i = np.arange(_MAX_FRAC_TERMS, dtype=float)[None, :]
    log_e0 = math.log(0.5) + _log_erfc((i - z0) / (math.sqrt(2.0) * sigma))
    out = np.empty(alphas.size)
    for start in range(0, alphas.size, _ROWS):
        a = alphas[start:start + _ROWS, None]
        j = a - i
        log_coef = _log_comb(a, i)
        log_t0 = log_coef + i * math.log(q) + j * math.log1p(-q)
        log_t1 = log_coef + j * math.log(q) + i * math.log1p(-q)
        log_e1 = math.log(0.5) + _log_erfc((z0 - j) / (math.sqrt(2.0) * sigma))
        log_s0 = log_t0 + (i * i - i) / (2.0 * sigma**2) + log_e0
        log_s1 = log_t1 + (j * j - j) / (2.0 * sigma**2) + log_e1
        cum = np.logaddexp(
            np.logaddexp.accumulate(log_s0, axis=1), np.logaddexp.accumulate(log_s1, axis=1)
        )
        ok = (
            (log_s0[:, 1:] < log_s0[:, :-1])
            & (log_s1[:, 1:] < log_s1[:, :-1])
            & (np.maximum(log_s0[:, 1:], log_s1[:, 1:]) < cum[:, 1:] - 30.0)
        ).any(axis=1)
        # the series have non-negative terms (magnitudes): summing all of them is an upper bound
        total = np.logaddexp(logsumexp(log_s0, axis=1), logsumexp(log_s1, axis=1))
        tail = _log_frac_tail(q, sigma, z0, a[:, 0])
        bounded = np.logaddexp(total, tail + math.log(2.0))  # the two tails
        out[start:start + _ROWS] = np.where(ok, total, bounded)
    return out


LogA = Callable[[float, float, np.ndarray], np.ndarray]


def _sampled_gaussian_curve(q: float, sigma: float, orders: np.ndarray, log_a: LogA) -> np.ndarray:
    r"""RDP curve :math:`\log A_\alpha / (\alpha - 1)` of a sampled Gaussian over ``orders``.

    Shared by both sampling schemes: checks the arguments, handles the exact cases
    (:math:`q = 0` or :math:`\sigma = \infty`: 0; :math:`q = 1`: the Gaussian's
    :math:`\alpha/(2\sigma^2)`; :math:`\alpha = \infty`: :math:`\infty`) and calls
    ``log_a(q, sigma, alphas)`` on the array of every other order, then caps each order
    by the unsampled Gaussian's :math:`\alpha/(2\sigma^2)` and floors it at 0.

    **The cap is sound** (joint quasi-convexity; van Erven and Harremoës 2014, "Rényi
    divergence and Kullback-Leibler divergence", IEEE Trans. Inf. Theory, Theorem 13:
    for :math:`\alpha \in (0, \infty]`, :math:`D_\alpha(\sum_s w_s P_s \,\|\, \sum_s w_s
    Q_s) \le \max_s D_\alpha(P_s \,\|\, Q_s)`). Let :math:`X, X'` be neighbours and
    couple the two runs through the same sampling randomness :math:`s` (the Poisson
    coin of every row, or the set of drawn positions), with weight :math:`w_s`; the
    sampled mechanism's outputs are the mixtures :math:`\sum_s w_s P_s` and
    :math:`\sum_s w_s Q_s` with :math:`P_s, Q_s` the Gaussian mechanism on the two
    subsamples. Under add/remove with Poisson sampling, the two subsamples are equal or
    differ by the added row; under replace-one with sampling without replacement (the
    neighbours differ at one position), they are equal or differ in that one row. So
    either :math:`P_s = Q_s` or the subsamples are neighbours under the same relation, and
    :math:`D_\alpha(P_s \| Q_s) \le \alpha/(2\sigma^2)` (Mironov 2017, Proposition 7,
    :math:`\sigma` in units of that relation's sensitivity), in both directions. Hence
    the subsampled mechanism is :math:`(\alpha, \alpha/(2\sigma^2))`-RDP, and the minimum
    of two upper bounds is an upper bound. (Without the cap, WBK19's bound at
    :math:`m/N = 103/200` and MTZ19's fractional series at rates near 1 exceeded the
    unsampled value: found by fuzzing, tests/accounting/test_properties.py.)
    """
    q, sigma = _check_q_sigma(q, sigma)
    a = _check_orders(orders)
    if q == 0.0 or math.isinf(sigma):
        return np.zeros_like(a)
    if q == 1.0:
        return a / (2.0 * sigma**2)
    out = np.full_like(a, np.inf)
    finite = np.isfinite(a)
    if finite.any():
        out[finite] = log_a(q, sigma, a[finite]) / (a[finite] - 1.0)
    with np.errstate(over="ignore", divide="ignore", under="ignore"):
        cap = a / (2.0 * np.float64(sigma) ** 2)  # inf for a subnormal sigma, 0 for a huge one
    # rounding can leave log A a few ulps below 0 at a tiny rate (q = 1e-300): RDP is >= 0,
    # and raising an upper bound keeps it one
    return np.maximum(np.minimum(out, cap), 0.0)


def rdp_poisson_sampled_gaussian(q: float, sigma: float, orders: np.ndarray) -> np.ndarray:
    r"""RDP of the Poisson-sampled Gaussian mechanism at each order.

    Mironov, Talwar and Zhang (2019), Section 3: :math:`\log A_\alpha/(\alpha-1)`,
    exact (binomial expansion) at integer orders, the Section-3.3 series at
    fractional ones (both vectorised over the orders).

    Parameters
    ----------
    q : float
        Sampling rate :math:`\gamma \in [0, 1]`.
    sigma : float
        Noise standard deviation over the add/remove sensitivity (> 0; ``inf``
        gives 0).
    orders : ndarray
        Orders :math:`\alpha > 1`.

    Returns
    -------
    ndarray
        RDP values, each at most the unsampled Gaussian's :math:`\alpha/(2\sigma^2)` (a
        fractional order whose series did not converge gets its tail bound, or that cap).
    """
    def log_a(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
        out = np.empty_like(alphas)
        integer = alphas == np.floor(alphas)
        if integer.any():
            out[integer] = _log_a_int_many(q, sigma, alphas[integer])
        if (~integer).any():
            out[~integer] = _log_a_frac_many(q, sigma, alphas[~integer])
        return out

    return _sampled_gaussian_curve(q, sigma, orders, log_a)


# ------------------------------------- without replacement: Wang, Balle, Kasiviswanathan 2019
def _forward_differences_at(sigma: float, n: int, prec: int) -> list[float]:
    r"""``log |Delta^l f(0)|``, ``l = 0..n``, in ``prec``-digit decimal arithmetic.

    The values :math:`f(k) = e^{k(k-1)/(2\sigma^2)}` come from one exponential,
    :math:`g = e^{1/\sigma^2}`, by the recurrence :math:`f(k+1) = f(k)\,g^k` (two
    multiplications a value: a few ulps of the working precision over the table, which
    :func:`_log_forward_differences`'s agreement of two precisions checks); the logarithm
    of each difference is read from its decimal exponent and the double nearest its leading
    digits (exact to double precision, which is all the caller keeps). A high-precision
    ``exp`` and ``ln`` for each of the ``n + 1`` values had made this table cost 2.9 s at
    :math:`\sigma = 50` and 20 s at :math:`\sigma = 500` (most of it at 800 and 1600
    digits), enough to stall a noise calibration that evaluates many :math:`\sigma`.

    Every operation goes through the local context ``ctx`` (``ctx.copy_abs``, not the
    built-in ``abs``, which rounds in the thread's default context, whose exponent limit
    of 999999 overflowed for noise below about 0.2: tests/hostile/test_hostile_cli.py). Raises
    :class:`decimal.Overflow` only when :math:`e^{n(n-1)/(2\sigma^2)}` exceeds
    ``decimal.MAX_EMAX`` (:math:`\sigma` below about :math:`10^{-7}`).
    """
    ctx = decimal.Context(prec=prec, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
    s2 = ctx.power(decimal.Decimal(repr(sigma)), 2)
    g = ctx.exp(ctx.divide(decimal.Decimal(1), s2))
    vals = [decimal.Decimal(1)]  # f(0) = 1
    step = decimal.Decimal(1)  # g^k
    for _ in range(n):
        vals.append(ctx.multiply(vals[-1], step))  # f(k + 1) = f(k) g^k
        step = ctx.multiply(step, g)
    out = []
    for _ in range(n + 1):
        out.append(_log_abs(ctx.copy_abs(vals[0]), ctx))
        vals = [ctx.subtract(vals[k + 1], vals[k]) for k in range(len(vals) - 1)]
    return out


def _log_abs(x: decimal.Decimal, ctx: decimal.Context) -> float:
    r""":math:`\ln x` of a non-negative decimal as a double (``-inf`` at 0): its decimal
    exponent times :math:`\ln 10` plus the log of its leading digits, exact to double
    precision without a high-precision logarithm."""
    if x == 0:
        return -math.inf
    e = x.adjusted()  # x = m 10^e, 1 <= m < 10
    return math.log(float(x.scaleb(-e, context=ctx))) + e * math.log(10.0)


@functools.lru_cache(maxsize=64)
def _log_forward_differences(sigma: float) -> tuple[float, ...]:
    r"""``log |Delta^l f(0)|`` for ``l = 0..257`` with :math:`f(k) = e^{(k-1)\varepsilon(k)}`.

    :math:`\varepsilon(k) = k/(2\sigma^2)`, so :math:`f(k) = e^{k(k-1)/(2\sigma^2)}`
    (WBK19 Theorem 27). The alternating sums cancel heavily, so they are
    computed in decimal arithmetic at increasing precision (100, 200, 400, ...
    digits) until two successive precisions agree to 1e-9 in every log.

    If the decimal exponent range overflows (:math:`\sigma` below about
    :math:`10^{-7}`) every entry is ``+inf``: "no Theorem-27 bound", so
    :func:`_wor_log_a_int` keeps its Theorem-9 term :math:`2e^{(j-1)\varepsilon(j)}` (the
    minimum of the two bounds is then that one; sound).
    """
    n = _WOR_EXACT_MAX_ORDER + 1
    try:
        prev = _forward_differences_at(sigma, n, 100)
    except decimal.Overflow:
        return (math.inf,) * (n + 1)
    prec = 200
    while True:
        cur = _forward_differences_at(sigma, n, prec)
        if all(
            (math.isinf(x) and math.isinf(y)) or abs(x - y) <= 1e-9 * max(1.0, abs(y))
            for x, y in zip(prev, cur, strict=True)
        ):
            return tuple(cur)
        if prec > 20000:  # pragma: no cover - never reached for sigma in float range
            raise ArithmeticError(f"forward differences did not stabilise for sigma={sigma}")
        prev, prec = cur, 2 * prec


def _wor_log_a_int(q: float, sigma: float, alpha: int) -> float:
    # WBK19: log of 1 + sum_{j>=2} q^j binom(alpha, j) * bound_j
    if alpha == 1:
        return 0.0

    def eps(x: float) -> float:  # RDP of the Gaussian at order x (replace-one)
        return x / (2.0 * sigma**2)

    log_q = math.log(q)
    e2 = eps(2.0)
    # j = 2 term: q^2 binom(alpha,2) min{4 (e^{eps(2)} - 1), 2 e^{eps(2)}}
    terms = [
        2 * log_q
        + float(_log_comb(float(alpha), np.array(2.0)))
        + min(math.log(4.0) + e2 + math.log(-math.expm1(-e2)), e2 + math.log(2.0))
    ]
    j = np.arange(3, alpha + 1, dtype=float)
    general = math.log(2.0) + j * (j - 1.0) / (2.0 * sigma**2)  # log(2 e^{(j-1) eps(j)})
    if alpha <= _WOR_EXACT_MAX_ORDER:
        d = _log_forward_differences(sigma)
        lo = np.array([d[2 * (int(x) // 2)] for x in j])
        hi = np.array([d[2 * ((int(x) + 1) // 2)] for x in j])
        general = np.minimum(math.log(4.0) + 0.5 * (lo + hi), general)
    rest = j * log_q + _log_comb(float(alpha), j) + general
    return float(logsumexp(np.concatenate([[0.0], terms, rest])))


def rdp_sampled_without_replacement_gaussian(
    q: float, sigma: float, orders: np.ndarray
) -> np.ndarray:
    r"""RDP upper bound of the Gaussian mechanism on a subset drawn without replacement.

    Wang, Balle and Kasiviswanathan (2019), Theorem 27 (integer orders <= 256),
    Theorem 9 (larger integer orders), Corollary 10 (fractional orders by
    linear interpolation of :math:`(\alpha-1)\varepsilon(\alpha)`), for
    replace-one neighbours.

    Parameters
    ----------
    q : float
        :math:`m/n`.
    sigma : float
        Noise standard deviation over the *replace-one* sensitivity (for a
        clipped sum that is ``noise_multiplier / 2``).
    orders : ndarray
        Orders :math:`\alpha > 1`.
    """
    def log_a_one(alpha: float) -> float:
        if float(alpha).is_integer():
            return _wor_log_a_int(q, sigma, int(alpha))
        lo, hi = math.floor(alpha), math.ceil(alpha)
        t = alpha - lo
        return (1.0 - t) * _wor_log_a_int(q, sigma, lo) + t * _wor_log_a_int(q, sigma, hi)

    def log_a(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
        return np.array([log_a_one(alpha) for alpha in alphas.tolist()], dtype=float)

    return _sampled_gaussian_curve(q, sigma, orders, log_a)


# ------------------------------------------------------ Lemma 12.2 accountant
def subsampled_epsilon_delta(rate: float, epsilon: float, delta: float) -> tuple[float, float]:
    r"""Lemma 12.2: :math:`(\log(1 + \gamma(e^\varepsilon - 1)), \gamma\delta)`.

    Balle, Barthe and Gaboardi (2018), Theorems 8 (Poisson, add/remove) and 9
    (without replacement, substitution).
    """
    if not (0.0 <= rate <= 1.0):
        raise ValueError(f"rate must be in [0, 1], got {rate!r}")
    return math.log1p(rate * math.expm1(epsilon)), rate * delta


Triples = list[tuple[float, float, int]]


def _sampled_pairs(event: DpEvent) -> Triples:
    """Flatten into ``(eps, delta, count)`` triples of amplified (eps, delta) mechanisms."""
    return dispatch(PAIRS, event, refusal="the subsampling lemma does not apply to {name}")


def _pairs_sampled(event: PoissonSampled | SampledWithoutReplacement) -> Triples:
    inner = event.event
    if not isinstance(inner, EpsilonDelta):
        raise UnsupportedEventError(
            "the subsampling lemma applies to sampled EpsilonDelta events, got a sampled "
            f"{type(inner).__name__}"
        )
    e, d = subsampled_epsilon_delta(event.rate, inner.epsilon, inner.delta)
    return [(e, d, 1)]


def _pairs_epsilon_delta(event: EpsilonDelta) -> Triples:
    return [(event.epsilon, event.delta, 1)]


def _pairs_self_composed(event: SelfComposed) -> Triples:
    return [(e, d, c * event.count) for e, d, c in _sampled_pairs(event.event)]


def _pairs_composed(event: Composed) -> Triples:
    return [t for ev in event.events for t in _sampled_pairs(ev)]


#: Event type -> amplified (eps, delta, count) triples: the events ``subsampling_lemma`` reads
#: (a composition must contain at least one sampled event).
PAIRS: dict[type[DpEvent], Callable[[Any], Triples]] = {
    PoissonSampled: _pairs_sampled,
    SampledWithoutReplacement: _pairs_sampled,
    EpsilonDelta: _pairs_epsilon_delta,
    SelfComposed: _pairs_self_composed,
    Composed: _pairs_composed,
}


def _advanced_composition(eps: float, k: int, slack: float) -> float:
    # Dwork, Rothblum and Vadhan (2010) Theorem III.3: k-fold (eps, d) is
    # (sqrt(2k ln(1/slack)) eps + k eps (e^eps - 1), k d + slack)-DP.
    return math.sqrt(2.0 * k * math.log(1.0 / slack)) * eps + k * eps * math.expm1(eps)


class SubsamplingLemmaAccountant(Accountant):
    r"""Lemma 12.2 for sampled (epsilon, delta) mechanisms, then composition.

    Each sampled :class:`EpsilonDelta` becomes
    :math:`(\log(1+\gamma(e^\varepsilon-1)), \gamma\delta)` (Balle, Barthe and
    Gaboardi 2018, Theorems 8-9). A composition of such events is bounded by
    basic composition (sums), or, when it is a self-composition of a single
    kind, by the smaller of basic and advanced composition (Dwork, Rothblum and
    Vadhan 2010, Theorem III.3) with all remaining delta as slack. Refuses
    everything else, and refuses when the target delta is below the summed
    deltas (no bound exists from the given guarantees).
    """

    name = "subsampling_lemma"
    theorem = (
        "subsampling lemma 12.2 (Balle-Barthe-Gaboardi 2018 Thm 8/9) + basic/advanced "
        "composition (Dwork-Rothblum-Vadhan 2010 Thm III.3)"
    )
    kind = GENERAL
    DISPATCH = PAIRS

    def epsilon(self, event: DpEvent, delta: float) -> float:
        delta = check_delta(delta)
        if not isinstance(event, DpEvent):
            raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
        if not _contains_sampling(event):
            raise UnsupportedEventError("no subsampled (epsilon, delta) event to amplify")
        triples = _sampled_pairs(event)
        total_delta = math.fsum(d * c for _, d, c in triples)
        if total_delta > delta:
            raise UnsupportedEventError(
                f"the composed deltas sum to {total_delta:.3g} > target delta {delta:.3g}"
            )
        basic = math.fsum(e * c for e, _, c in triples)
        kinds = {(e, d) for e, d, _ in triples}
        slack = delta - total_delta
        if len(kinds) == 1 and slack > 0:
            (e, _), k = next(iter(kinds)), sum(c for _, _, c in triples)
            return min(basic, _advanced_composition(e, k, slack))
        return basic


def _contains_sampling(event: DpEvent) -> bool:
    return contains(event, (PoissonSampled, SampledWithoutReplacement))
