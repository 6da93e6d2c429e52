r"""Rényi differential privacy (RDP) accounting over a grid of orders.

Results used:

* the Gaussian mechanism with L2 sensitivity :math:`\Delta` and noise
  :math:`\mathcal N(0, \sigma^2)` is :math:`(\alpha, \alpha\Delta^2/(2\sigma^2))`-RDP
  for every :math:`\alpha > 1` (Mironov 2017, "Rényi differential privacy",
  Proposition 7);
* RDP composes additively order by order (Mironov 2017, Proposition 1);
* pure :math:`\varepsilon`-DP implies
  :math:`(\alpha, \min(\varepsilon, \alpha\varepsilon^2/2))`-RDP: :math:`D_\alpha \le
  D_\infty \le \varepsilon` (Mironov 2017, Proposition 3 and monotonicity of
  :math:`D_\alpha` in :math:`\alpha`) and :math:`\varepsilon^2/2`-zCDP (Bun and Steinke
  2016, Proposition 1.4), which is :math:`D_\alpha \le \alpha\varepsilon^2/2` for all
  :math:`\alpha`.

Conversion of an RDP curve :math:`\tau(\alpha)` to :math:`(\varepsilon, \delta)`-DP,
minimised over the grid (the same conversion as dp_accounting's
``rdp_privacy_accountant.compute_epsilon``):

* Canonne, Kamath and Steinke (2020) Proposition 12 (also Asoodeh et al. 2021,
  and Balle et al. 2020 "Hypothesis testing interpretations and Rényi DP",
  Theorem 21): :math:`\varepsilon = \tau(\alpha) + \log(1 - 1/\alpha) -
  (\log\delta + \log\alpha)/(\alpha - 1)` for :math:`\alpha > 1.01` (where it is
  numerically stable);
* the classical :math:`\varepsilon = \tau(\alpha) + \log(1/\delta)/(\alpha - 1)`
  (Mironov 2017, Proposition 3), which is never better for :math:`\alpha > 1`
  but is used at orders :math:`\le 1.01`;
* :math:`\varepsilon = 0` when :math:`\delta \ge \sqrt{1 - e^{-\tau(\alpha)}}`
  (KL :math:`\le \tau(\alpha)` and the Bretagnolle-Huber inequality).

The events read are those of the dispatch table :data:`CURVE`: Gaussian
compositions, pure-DP events, ``TreeAggregation``, ``OutputPerturbation``,
``DiscreteGaussianNoise`` of secure mode (:math:`\alpha\rho` with its zCDP :math:`\rho`;
its Poisson-subsampled parts by the general bound of Zhu and Wang 2019, Theorem 6:
:func:`rdp_poisson_subsampled_general`; its parts sampled without replacement by the general
bound of Wang, Balle and Kasiviswanathan 2019, Theorem 9:
:func:`rdp_sampled_without_replacement_general`), and sub-sampled Gaussians, whose curves
(Mironov, Talwar and Zhang 2019; Wang, Balle and Kasiviswanathan 2019) are computed in
:mod:`noisygd.accounting.subsampling`.
Curves at the default orders are cached for recent events (``best`` and the PLD
accountant's resolution both ask for them).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.special import gammaln, logsumexp

from noisygd._checks import check_real
from noisygd.accounting.base import (
    GENERAL,
    Accountant,
    UnsupportedEventError,
    check_delta,
    check_epsilon,
    dispatch,
)
from noisygd.accounting.events import (
    Composed,
    DiscreteGaussianNoise,
    DpEvent,
    EpsilonDelta,
    Gaussian,
    OutputPerturbation,
    PoissonSampled,
    RandomStoppingSelection,
    SampledWithoutReplacement,
    SelfComposed,
    TreeAggregation,
    contains,
)
from noisygd.accounting.selection import selection_curve
from noisygd.accounting.subsampling import (
    effective_noise_multiplier,
    rdp_poisson_sampled_gaussian,
    rdp_sampled_without_replacement_gaussian,
)
from noisygd.accounting.zcdp import zcdp_rho

__all__ = [
    "CURVE",
    "DEFAULT_ORDERS",
    "RDPAccountant",
    "rdp_curve",
    "rdp_poisson_subsampled_general",
    "rdp_sampled_without_replacement_general",
    "rdp_to_delta",
    "rdp_to_epsilon",
]

#: Default orders: the grid of dp_accounting's ``RdpAccountant`` (``DEFAULT_RDP_ORDERS``).
DEFAULT_ORDERS: tuple[float, ...] = tuple(
    [1 + x / 10.0 for x in range(1, 100)]
    + [float(a) for a in range(11, 64)]
    + [128.0, 256.0, 512.0, 1024.0]
)


# -------------------------------------------------------------- dispatch table
def rdp_curve(event: DpEvent, orders: np.ndarray) -> np.ndarray:
    r"""RDP :math:`\tau(\alpha)` of ``event`` at each order in ``orders`` (all > 1).

    Looks the event's type up in :data:`CURVE`.

    Raises
    ------
    UnsupportedEventError
        For events without an RDP bound.
    """
    return dispatch(CURVE, event, orders, refusal="no RDP bound is known for {name}")


def _curve_gaussian(event: Gaussian, orders: np.ndarray) -> np.ndarray:
    # Mironov (2017) Proposition 7: alpha * Delta^2 / (2 sigma^2).
    mu = event.sensitivity / event.noise_multiplier
    return np.asarray(orders, dtype=float) * (mu * mu / 2.0)


def _curve_self_composed(event: SelfComposed, orders: np.ndarray) -> np.ndarray:
    # Mironov (2017) Proposition 1: composition adds.
    if event.count == 0:
        return np.zeros_like(np.asarray(orders, dtype=float))
    return event.count * rdp_curve(event.event, orders)


def _curve_composed(event: Composed, orders: np.ndarray) -> np.ndarray:
    total = np.zeros_like(np.asarray(orders, dtype=float))
    for e in event.events:
        total = total + rdp_curve(e, orders)
    return total


def _curve_epsilon_delta(event: EpsilonDelta, orders: np.ndarray) -> np.ndarray:
    if event.delta > 0:
        raise UnsupportedEventError(
            f"(epsilon, delta)-DP with delta = {event.delta} > 0 has no RDP guarantee"
        )
    a = np.asarray(orders, dtype=float)
    eps = event.epsilon
    # Mironov (2017) Prop. 3 / monotonicity (<= eps) and Bun-Steinke (2016) Prop. 1.4.
    return np.minimum(eps, a * eps * eps / 2.0)


def _curve_poisson(event: PoissonSampled, orders: np.ndarray) -> np.ndarray:
    # Mironov, Talwar and Zhang (2019), Section 3 (noisygd.accounting.subsampling).
    sigma = effective_noise_multiplier(event.event)
    return rdp_poisson_sampled_gaussian(event.rate, sigma, orders)


def _curve_without_replacement(
    event: SampledWithoutReplacement, orders: np.ndarray
) -> np.ndarray:
    # Wang, Balle and Kasiviswanathan (2019), Theorems 9 and 27 (noisygd.accounting.subsampling);
    # effective_noise_multiplier divides by the inner (replace-one) sensitivity.
    sigma = effective_noise_multiplier(event.event)
    return rdp_sampled_without_replacement_gaussian(event.rate, sigma, orders)


def _curve_tree(event: TreeAggregation, orders: np.ndarray) -> np.ndarray:
    # Mironov (2017) Prop. 7 and composition: alpha mu^2 / 2 (see TreeAggregation)
    return np.asarray(orders, dtype=float) * (event.mu**2 / 2.0)


def _curve_output_perturbation(event: OutputPerturbation, orders: np.ndarray) -> np.ndarray:
    if event.is_gaussian:
        return rdp_curve(event.as_gaussian(), orders)
    return rdp_curve(event.as_pure(), orders)


def rdp_poisson_subsampled_general(
    rate: float, base: Callable[[np.ndarray], np.ndarray], orders: np.ndarray
) -> np.ndarray:
    r"""RDP of a Poisson-subsampled mechanism from the base mechanism's RDP curve alone.

    Zhu and Wang (2019), "Poisson subsampled Rényi differential privacy" (ICML), Theorem 6
    (the general upper bound, any mechanism, add/remove neighbours): for integer
    :math:`\alpha \ge 2` and sampling rate :math:`\gamma`,

    .. math::

        \varepsilon'(\alpha) \le \frac{1}{\alpha-1}\log\Big((1-\gamma)^{\alpha-1}
        (\alpha\gamma - \gamma + 1) + \binom{\alpha}{2}\gamma^2(1-\gamma)^{\alpha-2}
        e^{\varepsilon(2)} + 3\sum_{\ell=3}^{\alpha}\binom{\alpha}{\ell}
        (1-\gamma)^{\alpha-\ell}\gamma^\ell e^{(\ell-1)\varepsilon(\ell)}\Big).

    A fractional order is bounded by the next integer, every order by the smallest bound at
    the orders above it (:math:`D_\alpha` is non-decreasing in :math:`\alpha`), and by the
    base curve itself (a Poisson subsample is a mixture
    over subsets: joint quasi-convexity of Rényi divergence). For the continuous Gaussian
    (:math:`\varepsilon(\ell) = \ell/(2\sigma^2)`) the sum is the exact binomial expansion of
    Mironov, Talwar and Zhang (2019) with the :math:`\ell \ge 3` terms tripled.

    Parameters
    ----------
    rate : float
        :math:`\gamma \in [0, 1]`.
    base : callable
        ``base(integer_orders)``: the base mechanism's RDP at the integer orders ``>= 2``.
    orders : ndarray
        Orders :math:`\alpha > 1`.
    """
    a = np.asarray(orders, dtype=float)
    own = np.asarray(base(a), dtype=float)
    if rate == 0.0:
        return np.zeros_like(a)
    if rate == 1.0:
        return own
    top = int(np.ceil(a.max()))
    ints = np.arange(2, max(top, 2) + 1, dtype=float)
    eps = np.asarray(base(ints), dtype=float)  # eps(l) for l = 2..top
    lq, l1q = math.log(rate), math.log1p(-rate)
    out = np.empty_like(a)
    for i, alpha in enumerate(a.tolist()):
        m = max(math.ceil(alpha), 2)
        ell = np.arange(2, m + 1, dtype=float)
        log_binom = gammaln(m + 1.0) - gammaln(ell + 1.0) - gammaln(m - ell + 1.0)
        terms = log_binom + ell * lq + (m - ell) * l1q + (ell - 1.0) * eps[: m - 1]
        terms[1:] += math.log(3.0)
        first = (m - 1) * l1q + math.log1p((m - 1) * rate)  # (1-g)^(m-1) (m g - g + 1)
        val = float(logsumexp(np.append(terms, first))) / (m - 1.0)
        out[i] = min(max(val, 0.0), float(own[i]))
    # D_alpha <= D_beta for beta >= alpha: each order also takes the best bound above it
    order = np.argsort(a, kind="stable")
    out[order] = np.minimum.accumulate(out[order][::-1])[::-1]
    return out


def rdp_sampled_without_replacement_general(
    rate: float, base: Callable[[np.ndarray], np.ndarray], orders: np.ndarray
) -> np.ndarray:
    r"""RDP of a mechanism run on a subset drawn without replacement, from its RDP curve alone.

    Wang, Balle and Kasiviswanathan (2019), "Subsampled Rényi differential privacy and
    analytical moments accountant" (AISTATS), Theorem 9 (the general upper bound, any
    mechanism, replace-one neighbours): if :math:`M` is :math:`(\alpha, \varepsilon(\alpha))`-RDP
    under replacement of one element of its input and :math:`\gamma = m/n`, then
    :math:`M \circ \mathrm{subsample}_m` is, for every integer :math:`\alpha \ge 2`,

    .. math::

        \varepsilon'(\alpha) \le \frac{1}{\alpha-1}\log\Big(1 + \gamma^2\binom{\alpha}{2}
        \min\{4(e^{\varepsilon(2)} - 1), 2e^{\varepsilon(2)}\}
        + \sum_{j=3}^{\alpha}\gamma^j\binom{\alpha}{j}\,2e^{(j-1)\varepsilon(j)}\Big),

    the theorem's :math:`\min\{2, (e^{\varepsilon(\infty)} - 1)^j\}` taken as 2 (no pure-DP
    bound is assumed). Only :math:`\varepsilon(j)` at integer :math:`j \ge 2` enters: nothing
    specific to the Gaussian (unlike Theorem 27, used for the continuous Gaussian in
    :func:`noisygd.accounting.subsampling.rdp_sampled_without_replacement_gaussian`).
    A fractional order is bounded by linear interpolation of :math:`(\alpha-1)\varepsilon'`
    between the integers around it (:math:`(\alpha-1)D_\alpha` is convex in :math:`\alpha`:
    van Erven and Harremoës 2014, Corollary 2; WBK19 Corollary 10), every order by the smallest
    bound at the orders above it (:math:`D_\alpha` is non-decreasing) and by the base curve
    itself (the subsample is a mixture over subsets coupled to differ in at most one element:
    joint quasi-convexity of Rényi divergence).

    Parameters
    ----------
    rate : float
        :math:`\gamma = m/n \in (0, 1]`.
    base : callable
        ``base(orders)``: the base mechanism's RDP (replace-one) at the given orders.
    orders : ndarray
        Orders :math:`\alpha > 1`.
    """
    a = np.asarray(orders, dtype=float)
    own = np.asarray(base(a), dtype=float)
    if rate >= 1.0:
        return own
    top = max(int(np.ceil(a.max())), 2)
    ints = np.arange(2, top + 1, dtype=float)
    eps = np.asarray(base(ints), dtype=float)  # eps(j) for j = 2..top
    lq = math.log(rate)
    e2 = float(eps[0])
    log_two = math.log(2.0)
    # j = 2: min{4 (e^{eps(2)} - 1), 2 e^{eps(2)}}
    t2 = min(math.log(4.0) + e2 + math.log(-math.expm1(-e2)) if e2 > 0 else -math.inf,
             log_two + e2)

    def log_moment(m: int) -> float:  # (m - 1) eps'(m): log of the bracket of Theorem 9
        if m <= 1:
            return 0.0
        j = np.arange(2, m + 1, dtype=float)
        log_binom = gammaln(m + 1.0) - gammaln(j + 1.0) - gammaln(m - j + 1.0)
        terms = log_binom + j * lq + np.append(t2, log_two + (j[1:] - 1.0) * eps[1 : m - 1])
        return float(logsumexp(np.append(terms, 0.0)))

    cache: dict[int, float] = {}

    def moment(m: int) -> float:
        if m not in cache:
            cache[m] = log_moment(m)
        return cache[m]

    out = np.empty_like(a)
    for i, alpha in enumerate(a.tolist()):
        lo, hi = math.floor(alpha), math.ceil(alpha)
        if lo == hi:
            val = moment(hi) / (alpha - 1.0)
        else:  # (alpha - 1) eps' is convex: interpolate between the integers around alpha
            t = alpha - lo
            val = ((1.0 - t) * moment(lo) + t * moment(hi)) / (alpha - 1.0)
        out[i] = min(max(val, 0.0), float(own[i]))
    order = np.argsort(a, kind="stable")
    out[order] = np.minimum.accumulate(out[order][::-1])[::-1]
    return out


def _discrete_curve(event: DpEvent, kappa: float, orders: np.ndarray) -> np.ndarray:
    """RDP of ``event`` with its Gaussian queries replaced by rounded discrete Gaussians."""
    a = np.asarray(orders, dtype=float)
    if isinstance(event, SelfComposed):
        if event.count == 0:
            return np.zeros_like(a)
        return event.count * _discrete_curve(event.event, kappa, a)
    if isinstance(event, Composed):
        return sum((_discrete_curve(e, kappa, a) for e in event.events), np.zeros_like(a))
    if isinstance(event, PoissonSampled):
        # Zhu and Wang (2019) Theorem 6 on the discrete base curve
        return rdp_poisson_subsampled_general(
            event.rate, lambda o: _discrete_curve(event.event, kappa, o), a)
    if isinstance(event, SampledWithoutReplacement):
        # Wang, Balle and Kasiviswanathan (2019) Theorem 9 on the discrete base curve
        return rdp_sampled_without_replacement_general(
            event.rate, lambda o: _discrete_curve(event.event, kappa, o), a)
    # Canonne, Kamath and Steinke (2020): D_alpha <= alpha (kappa Delta)^2 / (2 sigma^2) per
    # discrete Gaussian query: alpha times the event's zCDP rho scaled by kappa^2 (refused, as
    # by zcdp, for events without one)
    return a * (kappa * kappa * zcdp_rho(event))


def _curve_discrete(event: DiscreteGaussianNoise, orders: np.ndarray) -> np.ndarray:
    # kappa^2 alpha rho for unsampled events (CKS20); Poisson-subsampled parts by Zhu and
    # Wang (2019) Theorem 6 on that curve, parts sampled without replacement by Wang, Balle
    # and Kasiviswanathan (2019) Theorem 9 on it.
    return _discrete_curve(event.event, event.sensitivity_inflation, orders)


def _curve_selection(event: RandomStoppingSelection, orders: np.ndarray) -> np.ndarray:
    """Private selection by random stopping (Papernot and Steinke 2022):
    :func:`noisygd.accounting.selection.selection_curve` with this module's curves."""
    return selection_curve(event, orders, curve=rdp_curve, default_orders=DEFAULT_ORDERS,
                           to_delta=rdp_to_delta)


#: Event type -> RDP curve at given orders: the events the ``rdp`` accountant reads.
CURVE: dict[type[DpEvent], Callable[[Any, np.ndarray], np.ndarray]] = {
    Gaussian: _curve_gaussian,
    SelfComposed: _curve_self_composed,
    Composed: _curve_composed,
    EpsilonDelta: _curve_epsilon_delta,
    PoissonSampled: _curve_poisson,
    SampledWithoutReplacement: _curve_without_replacement,
    TreeAggregation: _curve_tree,
    OutputPerturbation: _curve_output_perturbation,
    RandomStoppingSelection: _curve_selection,
    DiscreteGaussianNoise: _curve_discrete,
}


# ------------------------------------------------------------------- conversions
def _check_curve(orders: Sequence[float], rdp: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(orders, dtype=float)
    r = np.asarray(rdp, dtype=float)
    if a.ndim != 1 or a.shape != r.shape or a.size == 0:
        raise ValueError(
            f"orders and rdp must be 1-d of equal non-zero length, got {a.shape} and {r.shape}"
        )
    if np.any(~(a > 1.0)) or np.any(np.isinf(a)):
        raise ValueError("RDP orders must be finite and > 1")
    if np.any(np.isnan(r)) or np.any(r < 0):
        raise ValueError("RDP values must be >= 0 (NaN or negative found)")
    return a, r


def rdp_to_epsilon(
    orders: Sequence[float], rdp: Sequence[float], delta: float
) -> tuple[float, float]:
    """Smallest epsilon over the grid and the order achieving it.

    Parameters
    ----------
    orders, rdp : sequences of float
        The RDP curve :math:`\\tau(\\alpha)` at the orders (all > 1).
    delta : float
        In (0, 1).

    Returns
    -------
    (epsilon, order)
    """
    a, r = _check_curve(orders, rdp)
    delta = check_delta(delta)
    log_delta = math.log(delta)
    best, best_order = math.inf, float(a[0])
    for alpha, tau in zip(a.tolist(), r.tolist(), strict=True):
        if math.isinf(tau):
            continue
        if tau == 0.0 or delta * delta + math.expm1(-tau) >= 0.0:
            eps = 0.0  # KL <= tau and Bretagnolle-Huber: (0, delta)-DP
        elif alpha > 1.01:
            # CKS20 Prop. 12 (as in dp_accounting.rdp.compute_epsilon)
            eps = tau + math.log1p(-1.0 / alpha) - (log_delta + math.log(alpha)) / (alpha - 1.0)
        else:
            # Mironov (2017) Prop. 3
            eps = tau - log_delta / (alpha - 1.0)
        if eps < best:
            best, best_order = eps, alpha
    return max(0.0, best), best_order


def rdp_to_delta(
    orders: Sequence[float], rdp: Sequence[float], epsilon: float
) -> tuple[float, float]:
    """Smallest delta over the grid at ``epsilon`` and the order achieving it.

    Same bounds as :func:`rdp_to_epsilon`, solved for delta (as in
    dp_accounting's ``compute_delta``).
    """
    a, r = _check_curve(orders, rdp)
    eps = check_real("epsilon", epsilon)
    if math.isnan(eps) or eps < 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    best, best_order = math.inf, float(a[0])
    for alpha, tau in zip(a.tolist(), r.tolist(), strict=True):
        if math.isinf(tau):
            continue
        if tau == 0.0:
            log_d = -math.inf
        else:
            log_d = 0.5 * math.log(-math.expm1(-tau))  # Bretagnolle-Huber
        if alpha > 1.01:
            cks = (alpha - 1.0) * (tau - eps + math.log1p(-1.0 / alpha)) - math.log(alpha)
            log_d = min(log_d, cks)
        else:
            log_d = min(log_d, (alpha - 1.0) * (tau - eps))
        if log_d < best:
            best, best_order = log_d, alpha
    return min(1.0, math.exp(min(best, 0.0))), best_order


# -------------------------------------------------------------------- accountant
_DEFAULT_ORDERS_ARRAY = np.asarray(DEFAULT_ORDERS, dtype=float)


@functools.lru_cache(maxsize=64)
def _default_curve(event: DpEvent) -> np.ndarray:
    # RDP curves of recent events at the default orders: ``best`` asks RDP, and the PLD
    # accountant asks it again for its resolution; calibration asks both at every step.
    curve = np.asarray(rdp_curve(event, _DEFAULT_ORDERS_ARRAY), dtype=float)
    curve.setflags(write=False)
    return curve


class RDPAccountant(Accountant):
    """RDP accountant over a grid of orders with the CKS20 / Balle et al. 2020 conversion.

    Parameters
    ----------
    orders : sequence of float, optional
        RDP orders (> 1). Defaults to :data:`DEFAULT_ORDERS`, dp_accounting's grid.
    """

    name = "rdp"
    theorem = "RDP composition (Mironov 2017) + CKS20 Prop. 12 / Balle et al. 2020 conversion"
    kind = GENERAL
    DISPATCH = CURVE

    def theorem_for(self, event: DpEvent) -> str:
        """:attr:`theorem`, with the subsampling bounds the event's curve rests on."""
        parts = [self.theorem]
        if contains(event, PoissonSampled):
            parts.append("Poisson subsampling: Mironov-Talwar-Zhang 2019")
        if contains(event, SampledWithoutReplacement):
            parts.append("sampling without replacement: Wang-Balle-Kasiviswanathan 2019 "
                         "Thms 27 and 9")
        return "; ".join(parts)

    def __init__(self, orders: Sequence[float] | None = None) -> None:
        a = np.asarray(DEFAULT_ORDERS if orders is None else orders, dtype=float)
        _check_curve(a, np.zeros_like(a))
        self.orders = a
        self._default = orders is None

    def curve(self, event: DpEvent) -> np.ndarray:
        """RDP of ``event`` at :attr:`orders` (see :func:`rdp_curve`)."""
        if self._default:
            try:
                hash(event)
            except TypeError:
                pass
            else:
                return _default_curve(event)
        r = np.asarray(rdp_curve(event, self.orders), dtype=float)
        if r.shape != self.orders.shape:
            raise ValueError(f"rdp_curve returned shape {r.shape}, expected {self.orders.shape}")
        return r

    def epsilon(self, event: DpEvent, delta: float) -> float:
        delta = check_delta(delta)
        return rdp_to_epsilon(self.orders, self.curve(event), delta)[0]

    def delta(self, event: DpEvent, epsilon: float) -> float:
        eps = check_epsilon(epsilon)
        return rdp_to_delta(self.orders, self.curve(event), eps)[0]

    def __repr__(self) -> str:
        return f"RDPAccountant(orders=<{self.orders.size} orders>)"
