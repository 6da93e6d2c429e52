r"""Last-iterate privacy of projected noisy gradient descent (Langevin dynamics).

Source: Chourasia, Ye and Shokri, "Differential Privacy Dynamics of Langevin
Diffusion and Noisy Gradient Descent", NeurIPS 2021 (seed 004). Their
Algorithm 1 runs, for :math:`k = 0, \dots, K-1`,

.. math::

    \theta_{k+1} = \Pi_{\mathcal C}\Bigl(\theta_k - \frac{\eta}{n} g(\theta_k; D)
                   + \sqrt{2\eta}\,\mathcal N(0, \sigma^2 \mathbb I_d)\Bigr),
    \qquad g(\theta; D) = \sum_{i=1}^n \nabla\ell(\theta; x_i),

and releases **only** :math:`\theta_K`. Neighbouring datasets have the same size
``n`` and differ in one record (seed 004, Section 2): the relation is
:attr:`~noisygd.accounting.events.Neighbouring.REPLACE_ONE`. The total-gradient
sensitivity is :math:`S_g = \max_{D \sim D'} \max_\theta \lVert g(\theta; D)
- g(\theta; D')\rVert` (Definition B.10), :math:`S_g \le 2L` for an
``L``-Lipschitz loss.

Two accountants read the :class:`LastIterateLangevin` event:

``langevin_last_iterate``
    The RDP bound of the hidden-state analysis, linear in the order
    :math:`\alpha`, i.e. a :math:`\rho`-zCDP guarantee:

    * Theorem 2 (any :math:`c`-LSI tracing diffusion), eq. (16):
      :math:`\varepsilon(\alpha) = \frac{\alpha S_g^2}{2c\sigma^4 n^2}
      (1 - e^{-\sigma^2 c \eta K})`;
    * Corollary 1 (:math:`c = \lambda / (2\sigma^2)` by Lemma 5, for a
      :math:`\lambda`-strongly convex, :math:`\beta`-smooth loss,
      :math:`\eta < 1/\beta` and start :math:`\Pi_{\mathcal C}(\mathcal N(0,
      2\sigma^2/\lambda\,\mathbb I))`):
      :math:`\varepsilon(\alpha) = \frac{\alpha S_g^2}{\lambda\sigma^2 n^2}
      (1 - e^{-\lambda\eta K/2})`;
    * Corollary 2 (quadratic loss with a data-independent Hessian, such as
      :math:`\ell(\theta; x) = \frac12\lVert\theta - x\rVert^2`, on
      :math:`\mathcal C = \mathbb R^d` from a fixed start): every tracing
      distribution is Gaussian with per-coordinate variance at most
      :math:`2\sigma^2/(\lambda(2 - \eta\lambda))`, hence
      :math:`c = \lambda(2 - \eta\lambda)/(2\sigma^2)` (Lemma 9), which for
      :math:`\lambda = 1` is eq. (18):
      :math:`\varepsilon(\alpha) = \frac{\alpha S_g^2}{(2-\eta)\sigma^2 n^2}
      (1 - e^{-\frac{2-\eta}{2}\eta K})`.

    Because :math:`\varepsilon(\alpha) = \rho\alpha` for every
    :math:`\alpha > 1`, the event is :math:`\rho`-zCDP and is converted to
    :math:`(\varepsilon, \delta)` by the same conversion as the zCDP accountant
    (:func:`noisygd.accounting.zcdp.zcdp_epsilon`: the better of Bun-Steinke
    Prop. 1.3 and Canonne-Kamath-Steinke 2020 Prop. 12 optimised continuously
    over :math:`\alpha`).

``langevin_composition``
    The baseline of Figure 1 / Appendix E: each step is a Gaussian mechanism
    with sensitivity :math:`\eta S_g / n` and noise :math:`\sqrt{2\eta}\sigma`,
    so :math:`K` steps have RDP
    :math:`\varepsilon(\alpha) = \frac{\alpha S_g^2}{4 n^2\sigma^2}\eta K`;
    (eps, delta) is computed exactly by Gaussian DP with
    :math:`\mu = \sqrt{K}\, S_g \sqrt{\eta/2} / (\sigma n)` (Dong-Roth-Su 2022,
    Cor. 2.13 and 3.3). It needs no convexity and holds even if every iterate
    is released. It is the paper's *baseline*, a
    :data:`~noisygd.accounting.base.PAPER` accountant that
    :func:`~noisygd.accounting.best` consults only with ``include_paper=True``.

The event :class:`~noisygd.accounting.events.LastIterateLangevin` is defined
with every other event in :mod:`noisygd.accounting.events` (re-exported here).
The last-iterate accountant checks every assumption recorded on the event and
raises :class:`~noisygd.accounting.base.UnsupportedEventError` when one fails;
both accountants refuse every other event type (their dispatch tables are
:data:`RHO` and :data:`COMPOSITION_MU`), and the generic accountants (gdp,
zcdp, rdp, pld) refuse :class:`LastIterateLangevin` because it is in none of
their tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from noisygd.accounting.base import (
    GENERAL,
    PAPER,
    Accountant,
    UnsupportedEventError,
    check_delta,
    check_epsilon,
    dispatch,
)
from noisygd.accounting.events import LANGEVIN_THEOREMS, DpEvent, LastIterateLangevin
from noisygd.accounting.gdp import gdp_delta, gdp_epsilon
from noisygd.accounting.zcdp import zcdp_delta, zcdp_epsilon

__all__ = [
    "COMPOSITION_MU",
    "RHO",
    "THEOREMS",
    "LangevinCompositionAccountant",
    "LastIterateLangevin",
    "LastIterateLangevinAccountant",
    "composition_mu",
    "composition_rdp",
    "corollary1_rdp",
    "corollary2_rdp",
    "last_iterate_rdp",
    "last_iterate_rho",
    "theorem2_rdp",
    "theorem3_lower_bound",
    "verified_lsi_constant",
]

#: Theorem names an event may claim (see :class:`LastIterateLangevin`).
THEOREMS = LANGEVIN_THEOREMS
_REL_TOL = 1e-9


# ----------------------------------------------------------------- closed forms
def corollary1_rdp(alpha, lam, sigma, eta, steps, n, sensitivity):
    r"""Corollary 1 of seed 004.

    :math:`\frac{\alpha S_g^2}{\lambda\sigma^2 n^2}(1 - e^{-\lambda\eta K/2})`.

    Vectorised over any argument (numpy broadcasting).
    """
    alpha, lam, sigma, eta, steps = (np.asarray(a, dtype=float) for a in
                                     (alpha, lam, sigma, eta, steps))
    return alpha * sensitivity**2 / (lam * sigma**2 * n**2) * -np.expm1(-lam * eta * steps / 2.0)


def theorem2_rdp(alpha, c, sigma, eta, steps, n, sensitivity):
    r"""Theorem 2 of seed 004, eq. (16).

    :math:`\frac{\alpha S_g^2}{2c\sigma^4 n^2}(1 - e^{-\sigma^2 c\eta K})`.
    """
    alpha, c, sigma, eta, steps = (np.asarray(a, dtype=float) for a in
                                   (alpha, c, sigma, eta, steps))
    return (alpha * sensitivity**2 / (2.0 * c * sigma**4 * n**2)
            * -np.expm1(-(sigma**2) * c * eta * steps))


def corollary2_rdp(alpha, sigma, eta, steps, n, sensitivity, lam=1.0):
    r"""Corollary 2 of seed 004, eq. (18), for strong convexity ``lam`` (the paper: 1).

    Theorem 2 with :math:`c = \lambda(2 - \eta\lambda)/(2\sigma^2)`; for
    :math:`\lambda = 1`:
    :math:`\frac{\alpha S_g^2}{(2-\eta)\sigma^2 n^2}(1 - e^{-\frac{2-\eta}{2}\eta K})`.
    """
    sigma = np.asarray(sigma, dtype=float)
    eta = np.asarray(eta, dtype=float)
    c = lam * (2.0 - eta * lam) / (2.0 * sigma**2)
    return theorem2_rdp(alpha, c, sigma, eta, steps, n, sensitivity)


def theorem3_lower_bound(alpha, sigma, eta, steps, n, sensitivity):
    r"""Theorem 3 of seed 004, eq. (17).

    :math:`\frac{\alpha S_g^2}{4\sigma^2 n^2}(1 - e^{-\eta K})`:

    A lower bound on the exact Rényi divergence of Algorithm 1 on the squared
    loss :math:`\frac12\lVert\theta - x\rVert^2` from :math:`\theta_0 = 0`
    (for :math:`\eta < 1`).
    """
    alpha, sigma, eta, steps = (np.asarray(a, dtype=float) for a in (alpha, sigma, eta, steps))
    return alpha * sensitivity**2 / (4.0 * sigma**2 * n**2) * -np.expm1(-eta * steps)


def composition_rdp(alpha, sigma, eta, steps, n, sensitivity):
    r"""Composition baseline of Figure 1 (Appendix E).

    :math:`\frac{\alpha S_g^2}{4n^2\sigma^2}\eta K`.
    """
    alpha, sigma, eta, steps = (np.asarray(a, dtype=float) for a in (alpha, sigma, eta, steps))
    return alpha * sensitivity**2 / (4.0 * n**2 * sigma**2) * eta * steps


# ------------------------------------------------------------ assumption checks
def _assumption_failures(event: LastIterateLangevin) -> list[str]:
    """Every assumption of Theorem 2 / Lemma 5 that the recorded facts violate."""
    bad: list[str] = []
    if not event.hidden_trajectory:
        bad.append("an intermediate iterate was released (the trajectory must be hidden)")
    if event.clipped_gradients:
        bad.append("per-example gradients were clipped (breaks the gradient-field assumptions)")
    if not math.isfinite(event.sensitivity):
        bad.append("the total-gradient sensitivity S_g is unbounded")
    if event.strong_convexity <= 0:
        bad.append("the loss is not declared strongly convex (lambda = 0)")
    if event.smoothness is None:
        bad.append("the loss declares no smoothness constant beta")
    elif event.step_size * event.smoothness >= 1.0:
        bad.append(f"step size eta = {event.step_size:.6g} is not < 1/beta = "
                   f"{1.0 / event.smoothness:.6g}")
    return bad


def _lemma5_facts_hold(event: LastIterateLangevin) -> bool:
    """Lemma 5's start: theta_0 ~ Pi_C(N(0, 2 sigma^2 / lambda I))."""
    if event.start != "projected_gaussian" or event.start_variance is None:
        return False
    target = 2.0 * event.sigma**2 / event.strong_convexity
    return abs(event.start_variance - target) <= _REL_TOL * target


def _gaussian_facts_hold(event: LastIterateLangevin) -> bool:
    """Corollary 2's setting: quadratic, constant Hessian, C = R^d, fixed start."""
    return (event.quadratic_constant_hessian and event.constraint == "none"
            and event.start == "fixed")


def verified_lsi_constant(event: LastIterateLangevin) -> float:
    r"""The largest LSI constant the event's recorded facts prove, or raise.

    * Lemma 5 (strongly convex, smooth, :math:`\eta < 1/\beta`, start
      :math:`\Pi_{\mathcal C}(\mathcal N(0, 2\sigma^2/\lambda I))`):
      :math:`c = \lambda/(2\sigma^2)`.
    * Quadratic loss with a constant Hessian :math:`\lambda I \preceq H \preceq
      \beta I` on :math:`\mathbb R^d` from a fixed start: all tracing
      distributions are Gaussian with covariance at most
      :math:`2\eta\sigma^2\sum_i(1-\eta\lambda)^{2i} I \preceq
      \frac{2\sigma^2}{\lambda(2-\eta\lambda)} I`, so by Lemma 9 (a Gaussian of
      covariance :math:`\Sigma` is :math:`1/\lambda_{\max}(\Sigma)`-LSI)
      :math:`c = \lambda(2 - \eta\lambda)/(2\sigma^2)` (Corollary 2's proof).

    Raises
    ------
    UnsupportedEventError
        If an assumption fails or neither set of facts holds.
    """
    bad = _assumption_failures(event)
    if bad:
        raise UnsupportedEventError("last-iterate bound does not apply: " + "; ".join(bad))
    lam, eta, s2 = event.strong_convexity, event.step_size, event.sigma**2
    candidates = []
    if _lemma5_facts_hold(event):
        candidates.append(lam / (2.0 * s2))
    if _gaussian_facts_hold(event):
        candidates.append(lam * (2.0 - eta * lam) / (2.0 * s2))
    if not candidates:
        raise UnsupportedEventError(
            "no LSI constant can be verified: the start must be Pi_C(N(0, 2 sigma^2/lambda I)) "
            f"(got start={event.start!r}, variance={event.start_variance!r}, target "
            f"{2.0 * s2 / lam:.6g}), or the loss quadratic with a constant Hessian on R^d "
            "from a fixed start"
        )
    return max(candidates)


def last_iterate_rho(event: DpEvent) -> float:
    r"""The :math:`\rho` with :math:`\varepsilon(\alpha) = \rho\alpha` for the event's theorem.

    Raises
    ------
    UnsupportedEventError
        For any other event type, or when an assumption of the claimed theorem fails.
    """
    return dispatch(
        RHO, event,
        refusal="the last-iterate Langevin accountant bounds only LastIterateLangevin events, "
        "got {name}",
    )


def _rho_last_iterate(event: LastIterateLangevin) -> float:
    c_max = verified_lsi_constant(event)
    lam, eta, sig, K = event.strong_convexity, event.step_size, event.sigma, event.steps
    n, S = event.n_samples, float(event.sensitivity)
    if event.theorem == "corollary1":
        if not _lemma5_facts_hold(event):
            raise UnsupportedEventError(
                "Corollary 1 needs the start Pi_C(N(0, 2 sigma^2 / lambda I)) (Lemma 5)")
        return float(corollary1_rdp(1.0, lam, sig, eta, K, n, S))
    if event.theorem == "corollary2":
        if not _gaussian_facts_hold(event):
            raise UnsupportedEventError(
                "Corollary 2 needs a quadratic loss with a constant Hessian on C = R^d "
                "from a fixed start")
        return float(corollary2_rdp(1.0, sig, eta, K, n, S, lam=lam))
    # theorem2
    if event.lsi_constant is None:
        raise UnsupportedEventError("Theorem 2 needs an LSI constant (lsi_constant=...)")
    if event.lsi_constant > c_max * (1.0 + _REL_TOL):
        raise UnsupportedEventError(
            f"claimed LSI constant c = {event.lsi_constant:.6g} exceeds the largest one the "
            f"recorded facts prove ({c_max:.6g}); it cannot be verified"
        )
    return float(theorem2_rdp(1.0, event.lsi_constant, sig, eta, K, n, S))


def last_iterate_rdp(event: DpEvent, orders) -> np.ndarray:
    r"""RDP :math:`\varepsilon(\alpha) = \rho\alpha` at each order (:func:`last_iterate_rho`)."""
    orders = np.asarray(orders, dtype=float)
    if np.any(orders <= 1):
        raise ValueError("RDP orders must be > 1")
    return last_iterate_rho(event) * orders


def composition_mu(event: DpEvent) -> float:
    r"""Gaussian-DP :math:`\mu = \sqrt K S_g\sqrt{\eta/2}/(\sigma n)` of the composition."""
    return dispatch(
        COMPOSITION_MU, event,
        refusal="the Langevin composition accountant bounds only LastIterateLangevin events, "
        "got {name}",
    )


def _mu_composition(event: LastIterateLangevin) -> float:
    if not math.isfinite(event.sensitivity):
        raise UnsupportedEventError("total-gradient sensitivity S_g is unbounded")
    return (math.sqrt(event.steps) * float(event.sensitivity) * math.sqrt(event.step_size / 2.0)
            / (event.sigma * event.n_samples))


#: Event type -> rho of the hidden-state bound: the events ``langevin_last_iterate`` reads.
RHO: dict[type[DpEvent], Callable[[Any], float]] = {LastIterateLangevin: _rho_last_iterate}
#: Event type -> GDP mu of the composition baseline: the events ``langevin_composition`` reads.
COMPOSITION_MU: dict[type[DpEvent], Callable[[Any], float]] = {
    LastIterateLangevin: _mu_composition,
}


# -------------------------------------------------------------------- accountants
class LastIterateLangevinAccountant(Accountant):
    r"""Hidden-state RDP of projected noisy GD (seed 004, Theorem 2 / Corollaries 1-2).

    Checks strong convexity, smoothness, :math:`\eta < 1/\beta`, the start
    distribution, a closed convex :math:`\mathcal C`, unclipped gradients, a
    hidden trajectory and finite :math:`S_g`; refuses otherwise.
    """

    name = "langevin_last_iterate"
    theorem = ("Chourasia-Ye-Shokri 2021 Thm 2 / Cor. 1-2 (hidden-state RDP) + "
               "CKS20 Prop. 12 conversion")
    kind = GENERAL
    DISPATCH = RHO

    def rho(self, event: DpEvent) -> float:
        """The slope of the RDP curve (the event is rho-zCDP)."""
        return last_iterate_rho(event)

    def rdp(self, event: DpEvent, orders) -> np.ndarray:
        """RDP epsilon at each order."""
        return last_iterate_rdp(event, orders)

    def epsilon(self, event: DpEvent, delta: float) -> float:
        delta = check_delta(delta)
        return zcdp_epsilon(last_iterate_rho(event), delta)

    def delta(self, event: DpEvent, epsilon: float) -> float:
        eps = check_epsilon(epsilon)
        return zcdp_delta(last_iterate_rho(event), eps)


class LangevinCompositionAccountant(Accountant):
    r"""Composition baseline for Algorithm 1 of seed 004 (Figure 1, Appendix E).

    ``K`` Gaussian mechanisms of sensitivity :math:`\eta S_g/n` and noise
    :math:`\sqrt{2\eta}\sigma`; accounted exactly by Gaussian DP. A
    :data:`~noisygd.accounting.base.PAPER` accountant: the baseline the paper
    compares its last-iterate bound with, consulted by
    :func:`~noisygd.accounting.best` only with ``include_paper=True`` (the same
    run as a plain Gaussian composition, ``event.as_composition()``, is read by
    the general ``gdp`` accountant).
    """

    name = "langevin_composition"
    theorem = ("composition of K Gaussian steps (Chourasia-Ye-Shokri 2021 App. E), "
               "exact GDP (Dong-Roth-Su 2022, Cor. 2.13, 3.3)")
    kind = PAPER
    DISPATCH = COMPOSITION_MU

    def mu(self, event: DpEvent) -> float:
        return composition_mu(event)

    def rdp(self, event: DpEvent, orders) -> np.ndarray:
        """RDP epsilon at each order: the Figure 1 baseline formula."""
        composition_mu(event)  # type and sensitivity checks
        orders = np.asarray(orders, dtype=float)
        return composition_rdp(orders, event.sigma, event.step_size, event.steps,
                               event.n_samples, float(event.sensitivity))

    def epsilon(self, event: DpEvent, delta: float) -> float:
        delta = check_delta(delta)
        return gdp_epsilon(composition_mu(event), delta)

    def delta(self, event: DpEvent, epsilon: float) -> float:
        eps = check_epsilon(epsilon)
        return gdp_delta(composition_mu(event), eps)
