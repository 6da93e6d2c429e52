r"""Exact accounting of Gaussian compositions by Gaussian differential privacy (GDP).

Theorem (Dong, Roth and Su 2022, "Gaussian differential privacy", JRSS-B,
Corollary 3.3; Balle and Wang 2018, Theorem 8). The adaptive composition of
Gaussian mechanisms with L2 sensitivities :math:`\Delta_i` and noise standard
deviations :math:`\sigma_i` is :math:`\mu`-GDP with

.. math:: \mu = \sqrt{\textstyle\sum_i (\Delta_i / \sigma_i)^2},

and :math:`\mu`-GDP holds for exactly the :math:`(\varepsilon, \delta)` pairs
(Dong, Roth and Su, Corollary 2.13)

.. math:: \delta(\varepsilon) = \Phi(-\varepsilon/\mu + \mu/2)
          - e^{\varepsilon}\,\Phi(-\varepsilon/\mu - \mu/2).

The accountant is exact, so it is only used for events that are *pure*
Gaussian compositions: :func:`gaussian_mu` refuses everything else
(sub-sampled, pure-DP and unknown events). One event it reads is a mixture rather than a
Gaussian composition: a :class:`TreeAggregation` whose rows are assigned to leaves at random
(``leaves="random"``) is :math:`\mu`-GDP but not exactly, so its epsilon is an upper bound
(:meth:`GaussianAccountant.is_exact`). For the lecture notes' NoisyGD
(seed 000, Section 12.1.2: a composition of T Gaussian mechanisms of
sensitivity L and noise sigma) it gives :math:`\mu = \sqrt{T} L / \sigma`.

All computations are done in log space with :func:`scipy.special.log_ndtr`,
so they are stable for :math:`\mu \in [10^{-3}, 10^{3}]` and
:math:`\delta` down to :math:`10^{-12}` (and beyond). Above :data:`MU_EXACT_MAX`
(:math:`10^6`, where :math:`\varepsilon > 5 \cdot 10^{11}`) the exact curve is replaced
by its upper bound :math:`\delta \le \Phi(-\varepsilon/\mu + \mu/2)` (the privacy-loss
tail, :func:`gdp_epsilon_tail`), whose epsilon exceeds the exact one by less than
:math:`10^{-11}` relative there; :math:`\mu = \infty` (noise multiplier 0 after
rounding) gives :math:`\varepsilon = \infty`. Such answers are sound but not exact,
so :meth:`GaussianAccountant.is_exact` is False for them and
:func:`~noisygd.accounting.best` consults the other accountants too.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import erfcx, log_ndtr, ndtri

from noisygd._checks import check_fraction, check_nonnegative, check_positive_int, check_real
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
    DpEvent,
    Gaussian,
    OutputPerturbation,
    SelfComposed,
    TreeAggregation,
    contains,
)

_SQRT2 = math.sqrt(2.0)
_X_ABS_ERR = 1e-15

__all__ = [
    "DELTA_SAFETY",
    "MU",
    "MU_EXACT_MAX",
    "GaussianAccountant",
    "calibrate_mu",
    "gaussian_mu",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_epsilon_tail",
    "gdp_log_delta",
    "gdp_mu",
    "split_gaussian_budget",
]


# -------------------------------------------------------------- dispatch table
def gaussian_mu(event: DpEvent) -> float:
    r"""Exact Gaussian-DP parameter :math:`\mu` of a pure Gaussian composition.

    Looks the event's type up in :data:`MU`.

    Parameters
    ----------
    event : DpEvent
        A :class:`Gaussian`, a (self-)composition of Gaussians, a
        :class:`TreeAggregation` or a Gaussian :class:`OutputPerturbation`.

    Returns
    -------
    float
        :math:`\mu \ge 0` such that the event is exactly :math:`\mu`-GDP (only
        :math:`\mu`-GDP, an upper bound, for a tree with ``leaves="random"``).

    Raises
    ------
    UnsupportedEventError
        For any event that is not a pure Gaussian composition (sub-sampled
        Gaussians are *not* Gaussian: their trade-off curve is not a Gaussian
        one, so the exact-GDP formula would be wrong).
    """
    return dispatch(
        MU, event,
        refusal="exact Gaussian DP applies only to compositions of Gaussian mechanisms; "
        "got {name}",
    )


def _mu_gaussian(event: Gaussian) -> float:
    # Dong, Roth and Su (2022) Theorem 2.7: the Gaussian mechanism is (Delta/sigma)-GDP.
    return event.sensitivity / event.noise_multiplier


def _mu_self_composed(event: SelfComposed) -> float:
    # Dong, Roth and Su (2022) Corollary 3.3: mu adds in quadrature.
    return math.sqrt(event.count) * gaussian_mu(event.event)


def _mu_composed(event: Composed) -> float:
    return math.sqrt(math.fsum(gaussian_mu(e) ** 2 for e in event.events))


def _mu_tree(event: TreeAggregation) -> float:
    # Adaptive composition of the node releases (DRS22 Cor. 3.3); see TreeAggregation.
    return event.mu


def _mu_output_perturbation(event: OutputPerturbation) -> float:
    # Gaussian noise only: the release is one Gaussian mechanism (L2-Laplace is refused).
    return gaussian_mu(event.as_gaussian())


#: Event type -> exact GDP parameter: the events the ``gdp`` accountant reads.
MU: dict[type[DpEvent], Callable[[Any], float]] = {
    Gaussian: _mu_gaussian,
    SelfComposed: _mu_self_composed,
    Composed: _mu_composed,
    TreeAggregation: _mu_tree,
    OutputPerturbation: _mu_output_perturbation,
}


# ------------------------------------------------------------------ closed forms
#: Largest :math:`\mu` for which :func:`gdp_epsilon` solves the exact curve (DRS22
#: Cor. 2.13); above it the privacy-loss tail bound :func:`gdp_epsilon_tail` is returned
#: (the exact root loses its accuracy to cancellation near :math:`\mu = 10^8`, where
#: :math:`\varepsilon \approx 5 \cdot 10^{15}`; at :math:`10^6` the two differ by about 1
#: in an epsilon of :math:`5 \cdot 10^{11}`).
MU_EXACT_MAX = 1e6


def _check_mu(mu: float) -> float:
    return check_nonnegative("mu", mu)


def _check_mu_or_inf(mu: float) -> float:
    """``mu`` >= 0, ``inf`` allowed (a Gaussian of noise multiplier 0 after rounding)."""
    value = check_real("mu", mu)
    if value == math.inf:
        return value
    return _check_mu(value)


def gdp_epsilon_tail(mu: float, delta: float) -> float:
    r"""Upper bound :math:`\mu^2/2 + \mu\,\Phi^{-1}(1 - \delta)` on the epsilon of :math:`\mu`-GDP.

    DRS22 Corollary 2.13 gives :math:`\delta(\varepsilon) = \Phi(a) - e^{\varepsilon}\Phi(a -
    \mu) \le \Phi(a)` with :math:`a = -\varepsilon/\mu + \mu/2` (the second term is >= 0;
    :math:`\Phi(a)` is the probability that the privacy loss, distributed
    :math:`N(\mu^2/2, \mu^2)`, exceeds :math:`\varepsilon`). Hence :math:`\Phi(a) \le \delta`,
    i.e. :math:`\varepsilon \ge \mu^2/2 - \mu\,\Phi^{-1}(\delta)`, implies
    :math:`(\varepsilon, \delta)`-DP. The exact epsilon is below this by
    :math:`\mu\,\Delta a` where :math:`\Phi(a - \Delta a) = \Phi(a) - e^\varepsilon\Phi(a-\mu)
    \approx \Phi(a)(1 - |a|/\mu)`, about 1 in absolute terms for large :math:`\mu`.

    Evaluated at ``delta * (1 - DELTA_SAFETY)`` and raised by
    :math:`10^{-12}\mu(\mu/2 + |\Phi^{-1}(\delta)|)` (far above the rounding error of the sum,
    the product and :func:`scipy.special.ndtri`), so the float returned is never below the
    bound. Overflows
    to ``inf`` (a sound, useless answer) for :math:`\mu > 1.3 \cdot 10^{154}`.

    Parameters
    ----------
    mu : float
        GDP parameter, >= 0 (``inf`` allowed: the answer is ``inf``).
    delta : float
        In (0, 1).
    """
    mu = _check_mu_or_inf(mu)
    delta = check_delta(delta)
    if mu == 0.0:
        return 0.0
    t = -float(ndtri(delta * (1.0 - DELTA_SAFETY)))
    eps = mu * (mu / 2.0 + t) + 1e-12 * mu * (mu / 2.0 + abs(t))
    return max(0.0, eps)


def gdp_log_delta(mu: float, epsilon: float) -> float:
    r"""Natural log of the exact :math:`\delta(\varepsilon)` of :math:`\mu`-GDP.

    Implements Dong, Roth and Su (2022) Corollary 2.13,
    :math:`\delta = \Phi(a) - e^{\varepsilon}\Phi(b)` with
    :math:`a = -\varepsilon/\mu + \mu/2`, :math:`b = a - \mu`, as
    :math:`\log\Phi(a) + \log(-\mathrm{expm1}(x))` with
    :math:`x = \log(e^{\varepsilon}\Phi(b)/\Phi(a))`. For :math:`a \le 0`,
    writing :math:`\Phi(-t) = \varphi(t)\,\mathrm{erfcx}(t/\sqrt2)\sqrt{\pi/2}`,
    the Gaussian factors cancel :math:`e^{\varepsilon}` exactly and
    :math:`x = \log\mathrm{erfcx}(-b/\sqrt2) - \log\mathrm{erfcx}(-a/\sqrt2)`; for
    :math:`a > 0`, :math:`x = \varepsilon + \log\Phi(b) - \log\Phi(a)`. Neither
    form cancels large terms, so small :math:`\mu` and small :math:`\delta` are
    accurate (relative error of delta below 3e-11 for :math:`\mu \ge 10^{-3}`).
    A bound on the rounding error of :math:`x` (1e-15) is added to
    :math:`-\mathrm{expm1}(x)`, so the value errs upwards for extremely small
    :math:`\mu`.

    Parameters
    ----------
    mu : float
        GDP parameter, >= 0.
    epsilon : float
        >= 0.

    Returns
    -------
    float
        ``log(delta)``; ``-inf`` when ``mu == 0``.
    """
    mu = _check_mu(mu)
    eps = check_real("epsilon", epsilon)
    if math.isnan(eps) or eps < 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    if mu == 0.0 or math.isinf(eps):
        return -math.inf
    a = -eps / mu + mu / 2.0
    b = a - mu
    la = float(log_ndtr(a))
    if a <= 0.0:
        # x = log(e^eps Phi(b) / Phi(a)). With Phi(-t) = phi(t) erfcx(t/sqrt2) sqrt(pi/2) and
        # log phi(b) - log phi(a) = a mu - mu^2/2 = -eps (exactly, by the choice of a), the
        # eps terms cancel analytically: x = log erfcx(-b/sqrt2) - log erfcx(-a/sqrt2).
        # No term of size log Phi(a) enters x, so small mu loses no accuracy.
        x = math.log(float(erfcx(-b / _SQRT2))) - math.log(float(erfcx(-a / _SQRT2)))
    else:
        x = eps + float(log_ndtr(b)) - la  # a > 0: mu > 2 eps / mu, no cancellation issue
    # delta = Phi(a) * (-expm1(x)). x carries an absolute rounding error of a few ulps of
    # numbers of order one (<= 1e-15); adding that bound keeps the result an upper bound
    # even when |x| is tiny (mu far below 1e-3) and changes nothing measurable otherwise.
    return la + math.log(max(-math.expm1(x), 0.0) + _X_ABS_ERR)


#: Relative safety margin on delta covering the floating-point error of
#: :func:`gdp_log_delta` (measured at most 3e-11 against 50-digit mpmath for
#: mu in [1e-3, 1e3] and delta down to 1e-16, 3e-10 at mu = 1e-4; checked in
#: tests/accounting/test_gdp.py).
DELTA_SAFETY = 1e-9


def gdp_delta(mu: float, epsilon: float) -> float:
    r"""Exact :math:`\delta(\varepsilon)` of :math:`\mu`-GDP (DRS22 Corollary 2.13).

    Returned inflated by the relative margin :data:`DELTA_SAFETY` so that
    floating-point error can never make it smaller than the true value.
    """
    return min(1.0, math.exp(gdp_log_delta(mu, epsilon)) * (1.0 + DELTA_SAFETY))


def _eps_upper(mu: float, delta: float) -> float:
    # Classical zCDP conversion (Bun and Steinke 2016, Prop. 1.3) with rho = mu^2/2:
    # an upper bound on the exact epsilon, used only as a bracket end.
    rho = mu * mu / 2.0
    return rho + 2.0 * math.sqrt(rho * -math.log(delta)) + 1.0  # 1/delta overflows below 5e-309


def gdp_epsilon(mu: float, delta: float) -> float:
    r"""Smallest :math:`\varepsilon \ge 0` with :math:`\delta_\mu(\varepsilon) \le \delta`.

    Solves DRS22 Corollary 2.13 for :math:`\varepsilon` with Brent's method on
    :math:`\log\delta_\mu(\varepsilon) - \log\delta` (decreasing in
    :math:`\varepsilon`), then moves up by a few ulps until the inequality is
    verified, so the value returned is never below the true root. The target is
    ``delta * (1 - DELTA_SAFETY)``, which absorbs the floating-point error of the
    delta evaluation (the change in epsilon is negligible).

    Parameters
    ----------
    mu : float
        GDP parameter, >= 0 (``inf`` allowed).
    delta : float
        In (0, 1).

    Returns
    -------
    float
        The epsilon (0 when :math:`\delta_\mu(0) \le \delta`); above
        :data:`MU_EXACT_MAX` the upper bound :func:`gdp_epsilon_tail` (``inf`` for
        ``mu = inf``).
    """
    mu = _check_mu_or_inf(mu)
    delta = check_delta(delta)
    if mu > MU_EXACT_MAX:
        return gdp_epsilon_tail(mu, delta)
    log_delta = math.log(delta) + math.log1p(-DELTA_SAFETY)
    if gdp_log_delta(mu, 0.0) <= log_delta:
        return 0.0
    hi = _eps_upper(mu, delta)
    while gdp_log_delta(mu, hi) > log_delta:  # pragma: no cover - bracket is an upper bound
        hi *= 2.0

    def f(e: float) -> float:
        return gdp_log_delta(mu, e) - log_delta

    eps = brentq(f, 0.0, hi, xtol=1e-14 * max(1.0, hi), rtol=4 * np.finfo(float).eps, maxiter=500)
    # Never return an epsilon below the root: step up until delta(eps) <= delta.
    step = max(abs(eps), 1e-300) * 4 * np.finfo(float).eps
    while f(eps) > 0.0:
        eps += step
        step *= 2.0
    return float(eps)


#: Largest epsilon :func:`gdp_mu` inverts. Its search stops at :math:`\mu = e^{50}`, where
#: :math:`\delta_\mu(\varepsilon)` is zero in floating point for :math:`\varepsilon >
#: \mu^2/2 + 40\mu \approx 1.3\cdot10^{43}`, so the answer above this is "unbounded" anyway;
#: near 1e308 the evaluation itself left floating-point range ("math domain error").
MAX_BOUNDED_EPSILON = 1e44


def gdp_mu(epsilon: float, delta: float) -> float:
    r"""Largest :math:`\mu` such that :math:`\mu`-GDP implies :math:`(\varepsilon, \delta)`-DP.

    Inverts DRS22 Corollary 2.13 in :math:`\mu` (:math:`\delta_\mu(\varepsilon)`
    is increasing in :math:`\mu`) by Brent's method on :math:`\log\mu`, then
    steps down until :math:`\delta_\mu(\varepsilon) \le \delta(1 - \mathrm{DELTA\_SAFETY})`
    is verified.

    Parameters
    ----------
    epsilon : float
        > 0.
    delta : float
        In (0, 1).
    """
    eps = check_epsilon(epsilon)
    delta = check_delta(delta)
    if eps > MAX_BOUNDED_EPSILON:  # the search below stops at mu = e^50 (about 5e21)
        raise ValueError(f"mu is unbounded for epsilon={eps}, delta={delta}")
    log_delta = math.log(delta) + math.log1p(-DELTA_SAFETY)

    def f(log_mu: float) -> float:
        return gdp_log_delta(math.exp(log_mu), eps) - log_delta

    lo, hi = -1.0, 1.0
    while f(lo) > 0.0:
        lo -= 2.0
        if lo < -745.0:  # pragma: no cover - would need delta below float range
            raise ValueError(f"no mu > 0 meets epsilon={eps}, delta={delta}")
    while f(hi) <= 0.0:
        hi += 2.0
        if hi > 50.0:  # pragma: no cover
            raise ValueError(f"mu is unbounded for epsilon={eps}, delta={delta}")
    log_mu = brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    mu = math.exp(log_mu)
    factor = 1.0 - 4 * np.finfo(float).eps
    while gdp_log_delta(mu, eps) > log_delta:
        mu *= factor
        factor = 1.0 - 2.0 * (1.0 - factor)
    return mu


# -------------------------------------------------------------------- accountant
class GaussianAccountant(Accountant):
    r"""Exact (epsilon, delta) of compositions of Gaussian mechanisms via Gaussian DP.

    Theorem: Dong, Roth and Su (2022) Corollaries 2.13 and 3.3 (equivalently
    Balle and Wang 2018, Theorem 8). Exact, hence the tightest possible, but
    only for the events of :data:`MU` (pure Gaussian compositions): every other
    event is refused with :class:`~noisygd.accounting.base.UnsupportedEventError`.
    Where it is exact (:meth:`is_exact`: not above :data:`MU_EXACT_MAX`, nor for a tree with
    random leaves), :func:`~noisygd.accounting.best` stops as soon as it has answered.
    """

    name = "gdp"
    theorem = "Gaussian DP (Dong-Roth-Su 2022, Cor. 2.13 and 3.3)"
    kind = GENERAL
    DISPATCH = MU

    def mu(self, event: DpEvent) -> float:
        """The exact GDP parameter of ``event`` (see :func:`gaussian_mu`)."""
        return gaussian_mu(event)

    def epsilon(self, event: DpEvent, delta: float) -> float:
        r"""Exact epsilon at ``delta`` (:func:`gdp_epsilon`; its tail upper bound for
        :math:`\mu >` :data:`MU_EXACT_MAX`, ``inf`` for :math:`\mu = \infty`)."""
        delta = check_delta(delta)
        return gdp_epsilon(gaussian_mu(event), delta)

    def delta(self, event: DpEvent, epsilon: float) -> float:
        r"""Exact delta at ``epsilon`` (DRS22 Corollary 2.13, no inversion); for
        :math:`\mu >` :data:`MU_EXACT_MAX` its upper bound :math:`\Phi(-\varepsilon/\mu +
        \mu/2)` (see :func:`gdp_epsilon_tail`), 1 for :math:`\mu = \infty`."""
        eps = check_epsilon(epsilon)
        mu = check_real("mu", gaussian_mu(event))
        if mu > MU_EXACT_MAX:
            if math.isinf(mu):
                return 1.0
            a = -eps / mu + mu / 2.0
            return min(1.0, float(np.exp(log_ndtr(a))) * (1.0 + DELTA_SAFETY))
        return gdp_delta(mu, eps)

    def supports(self, event: DpEvent) -> bool:
        """Whether ``event`` is a Gaussian composition (its mu is computable)."""
        try:
            gaussian_mu(event)
        except UnsupportedEventError:
            return False
        return True

    def is_exact(self, event: DpEvent) -> bool:
        r"""Whether the answer is exact: the privacy-loss distribution of every event of
        :data:`MU` is Gaussian, and its curve is solved exactly for :math:`\mu \le`
        :data:`MU_EXACT_MAX` (above it :meth:`epsilon` returns an upper bound). Not for a
        tree whose rows are assigned to leaves at random (``leaves="random"``): its release
        is a mixture over the row's leaf of :math:`\mu`-GDP releases, so :math:`\mu` is an
        upper bound there (:class:`~noisygd.accounting.events.TreeAggregation`), and other
        accountants are consulted."""
        return gaussian_mu(event) <= MU_EXACT_MAX and not contains(
            event, TreeAggregation, where=lambda tree: tree.leaves == "random")

    @staticmethod
    def mu_for(epsilon: float, delta: float) -> float:
        """Largest mu whose mu-GDP guarantee meets ``(epsilon, delta)`` (:func:`gdp_mu`)."""
        return gdp_mu(epsilon, delta)


# ----------------------------------------------------------------- budgets in mu
def calibrate_mu(epsilon: float, delta: float) -> float:
    r"""Largest :math:`\mu` such that :math:`\mu`-GDP meets ``(epsilon, delta)``.

    Exact inversion of Dong, Roth and Su (2022) Corollary 2.13 (:func:`gdp_mu`),
    stepped down if needed so that the exact epsilon at ``delta``
    (:func:`gdp_epsilon`) is also verified to be <= ``epsilon``.
    """
    return _calibrated_mu(float(check_epsilon(epsilon)), float(check_delta(delta)))


@functools.lru_cache(maxsize=1024)
def _calibrated_mu(epsilon: float, delta: float) -> float:
    """:func:`calibrate_mu` of checked floats, memoised: a fit asks for the same budgets'
    ``mu`` dozens of times (stage planning, the ledger, the report), and each answer is two
    root searches (a pure function of its two floats)."""
    mu = gdp_mu(epsilon, delta)
    factor = 1.0 - 4 * np.finfo(float).eps
    while gdp_epsilon(mu, delta) > epsilon:
        mu *= factor
        factor = 1.0 - 2.0 * (1.0 - factor)
    return mu


def split_gaussian_budget(
    epsilon: float, delta: float, n_problems: int, count_fraction: float
) -> tuple[float, float, float]:
    r"""Split an :math:`(\varepsilon, \delta)` budget between a Gaussian count and ``K`` runs.

    The whole release (a noisy row count, then ``K`` = ``n_problems`` Gaussian
    runs, e.g. one per class) is one adaptive composition of Gaussian
    mechanisms, hence :math:`\mu`-GDP with :math:`\mu^2 = \mu_c^2 + K\mu_k^2`
    (Dong, Roth and Su 2022, Corollary 3.3). With :math:`\mu` =
    :func:`calibrate_mu` of the budget and the count given the fraction ``f`` of
    :math:`\mu^2`:

    .. math:: \mu_c = \sqrt f\,\mu, \qquad \mu_k = \mu\sqrt{(1 - f)/K},

    so :math:`\mu_c^2 + K\mu_k^2 = \mu^2` and the composition meets the budget
    exactly. A run's own epsilon at ``delta`` is
    ``gdp_epsilon(mu_per_problem, delta)``.

    Parameters
    ----------
    epsilon, delta : float
        The total budget.
    n_problems : int
        ``K >= 1``.
    count_fraction : float
        ``f`` in [0, 1): the share of :math:`\mu^2` spent on the count (0 when
        the row count is public).

    Returns
    -------
    (mu_total, mu_count, mu_per_problem) : tuple of float
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    k = check_positive_int("n_problems", n_problems)
    f = check_real("count_fraction", count_fraction)
    if f != 0.0:
        f = check_fraction("count_fraction", f, closed_right=False)
    mu = calibrate_mu(epsilon, delta)
    return mu, math.sqrt(f) * mu, mu * math.sqrt((1.0 - f) / k)
