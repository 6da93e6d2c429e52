r"""Accountants for Zhang, Zheng, Mou & Wang (IJCAI 2017), seed ``002``.

The two events of the paper are defined with every other event in
:mod:`noisygd.accounting.events` (and re-exported here):

:class:`~noisygd.accounting.events.OutputPerturbation`
    Algorithm 1: a deterministic vector :math:`w_T` with L2 sensitivity
    :math:`\Delta` under replace-one neighbours (Lemma 2 or 3; ``n`` public)
    released once as :math:`w_T + z`. Three noises:

    * ``L2_LAPLACE``: density :math:`\propto\exp(-\lVert z\rVert/b)`. It is
      :math:`(\Delta/b)`-DP (pure), see :mod:`noisygd.mechanisms.l2_laplace`.
      Read by :class:`PureDPAccountant` (``"pure_dp"``) and, via the pure-DP
      conversions (Bun & Steinke 2016 Prop. 1.4), by ``zcdp`` and ``rdp``.
    * ``GAUSSIAN_PAPER``: :math:`\mathcal N(0,\sigma^2 I)` with the paper's
      :math:`\sigma = \Delta\sqrt{2\log(2/\delta_0)}/\varepsilon_0`. It is the
      Gaussian mechanism with :math:`\mu = \Delta/\sigma`: every exact
      Gaussian accountant (``gdp``, ``zcdp``, ``rdp``, ``pld``) reads it, and
      :class:`PaperTheoremAccountant` (``"paper_thm"``, a paper accountant)
      reports the :math:`\varepsilon_0` it was calibrated for, only where the
      classical theorem behind it holds (:math:`\varepsilon_0 < 1`, Dwork & Roth
      2014, Theorem A.1) and only at :math:`\delta \ge \delta_0`.
    * ``GAUSSIAN_ANALYTIC``: the same Gaussian mechanism with the exact
      (analytic-Gaussian) :math:`\sigma`; read by the exact accountants.

:class:`~noisygd.accounting.events.RRPSGDPaperArgument`
    Algorithm 2 (RRPSGD) as the paper proves it private (Theorem 4, Appendix
    A.4): per-step Gaussian mechanism, amplification by sampling one example of
    ``n`` (Lemma 9), strong composition over the horizon (Lemma 10). Read only by
    :class:`RRPSGDPaperAccountant` (``"zhang2017_thm4"``, a paper accountant),
    which *computes* the epsilon that chain of lemmas yields at the requested
    delta (it does not copy the target: the paper's per-step constant is
    optimistic, see that class). The tight description of the same run is
    ``SelfComposed(SampledWithoutReplacement(1, n, Gaussian(...)), R)`` and is
    read by the general accountants.

``pure_dp`` is a :data:`~noisygd.accounting.base.GENERAL` accountant (basic
composition is sound for every pure-DP event); ``paper_thm`` and
``zhang2017_thm4`` are :data:`~noisygd.accounting.base.PAPER` accountants,
consulted by :func:`~noisygd.accounting.best` only with ``include_paper=True``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from noisygd._checks import check_positive
from noisygd.accounting import gdp as _gdp
from noisygd.accounting.base import (
    GENERAL,
    PAPER,
    Accountant,
    UnsupportedEventError,
    check_delta,
    dispatch,
)
from noisygd.accounting.events import (
    Composed,
    DpEvent,
    EpsilonDelta,
    OutputNoise,
    OutputPerturbation,
    RRPSGDPaperArgument,
    SelfComposed,
)

__all__ = [
    "PAPER_THEOREM",
    "PURE_EPSILON",
    "RRPSGD_PAPER",
    "OutputNoise",
    "OutputPerturbation",
    "PaperTheoremAccountant",
    "PureDPAccountant",
    "RRPSGDPaperAccountant",
    "RRPSGDPaperArgument",
    "rrpsgd_paper_epsilon",
]


# ---------------------------------------------------------------------- accountants
def _pure_epsilon(event: DpEvent) -> float:
    return dispatch(
        PURE_EPSILON, event, refusal="pure_dp bounds only pure-DP events, not {name}"
    )


def _pure_epsilon_delta(event: EpsilonDelta) -> float:
    if event.delta > 0:
        raise UnsupportedEventError(f"{event.describe()} is not pure DP")
    return float(event.epsilon)


#: Event type -> pure epsilon: the events the ``pure_dp`` accountant reads.
PURE_EPSILON: dict[type[DpEvent], Callable[[Any], float]] = {
    OutputPerturbation: lambda event: event.pure_epsilon,  # refuses Gaussian noise
    EpsilonDelta: _pure_epsilon_delta,
    SelfComposed: lambda event: event.count * _pure_epsilon(event.event),
    Composed: lambda event: math.fsum(_pure_epsilon(e) for e in event.events),
}


class PureDPAccountant(Accountant):
    r"""Pure :math:`\varepsilon`-DP events, composed by basic composition.

    Answers :class:`OutputPerturbation` with L2-Laplace noise
    (:math:`\varepsilon = \Delta/b`, triangle inequality on
    :math:`\exp(-\lVert z\rVert/b)`: Zhang et al. 2017, Theorem 1),
    ``EpsilonDelta(eps, 0)``, and their (self-)compositions by adding epsilons
    (Dwork & Roth 2014, Theorem 3.16). The answer does not depend on ``delta``.
    Everything else (Gaussian noise included) is refused.
    """

    name = "pure_dp"
    theorem = "pure DP: K-norm density ratio (Zhang et al. 2017 Thm 1) + basic composition"
    kind = GENERAL
    DISPATCH = PURE_EPSILON

    def epsilon(self, event: DpEvent, delta: float) -> float:
        check_delta(delta)
        return _pure_epsilon(event)


def _paper_theorem_epsilon(event: OutputPerturbation, delta: float) -> float:
    if event.noise is not OutputNoise.GAUSSIAN_PAPER:
        raise UnsupportedEventError(
            "paper_thm only reads OutputPerturbation events with the paper's Gaussian noise"
        )
    if event.target_epsilon >= 1.0:
        raise UnsupportedEventError(
            f"Dwork-Roth Theorem A.1 needs epsilon < 1; the noise was calibrated for "
            f"epsilon = {event.target_epsilon}"
        )
    if delta < event.target_delta:
        raise UnsupportedEventError(
            f"the calibration certifies delta >= {event.target_delta}, asked {delta}"
        )
    # The calibration must actually be the paper's (guards hand-made events).
    needed = event.sensitivity * math.sqrt(2.0 * math.log(1.25 / event.target_delta))
    if event.scale * event.target_epsilon < needed * (1.0 - 1e-12):
        raise UnsupportedEventError("sigma is below the classical Gaussian-mechanism noise")
    return float(event.target_epsilon)


#: Event type -> epsilon at delta: the events the ``paper_thm`` accountant reads.
PAPER_THEOREM: dict[type[DpEvent], Callable[[Any, float], float]] = {
    OutputPerturbation: _paper_theorem_epsilon,
}


class PaperTheoremAccountant(Accountant):
    r"""The epsilon Algorithm 1's Gaussian noise was calibrated for, where the theorem holds.

    For ``OutputPerturbation(noise=GAUSSIAN_PAPER)`` calibrated to
    :math:`(\varepsilon_0, \delta_0)`: the noise
    :math:`\sigma = \Delta\sqrt{2\log(2/\delta_0)}/\varepsilon_0` exceeds the
    classical :math:`\Delta\sqrt{2\log(1.25/\delta_0)}/\varepsilon_0`, so by
    Dwork & Roth (2014), Theorem A.1, the release is
    :math:`(\varepsilon_0, \delta_0)`-DP **provided** :math:`\varepsilon_0 < 1`
    (that theorem's hypothesis); the paper quotes it (Lemma 1) without the
    hypothesis. Returns :math:`\varepsilon_0` for any ``delta >= delta_0``;
    refuses ``delta < delta_0``, :math:`\varepsilon_0 \ge 1`, and every other
    event. The exact accountants give the true (smaller) epsilon.
    """

    name = "paper_thm"
    theorem = "Zhang et al. 2017 Alg. 1 calibration via Dwork-Roth 2014 Thm A.1 (eps < 1)"
    kind = PAPER
    DISPATCH = PAPER_THEOREM

    def epsilon(self, event: DpEvent, delta: float) -> float:
        delta = check_delta(delta)
        return dispatch(
            PAPER_THEOREM, event, delta,
            refusal="paper_thm only reads OutputPerturbation events with the paper's "
            "Gaussian noise, not {name}",
        )


# ------------------------------------------------------------------ RRPSGD (Alg. 2)
def rrpsgd_paper_epsilon(step_mu: float, n: int, horizon: int, delta: float) -> float:
    r"""Epsilon the proof of Theorem 4 (Zhang et al. 2017, Appendix A.4) yields at ``delta``.

    The paper's split of :math:`\delta` and chain of lemmas, each applied with
    its hypotheses checked:

    1. :math:`\delta' = \delta/2`, per-composed-step :math:`\delta_1 = \delta/(2T)`,
       per-mechanism :math:`\delta_0 = n\delta_1` (with :math:`T=n^2`:
       :math:`\delta_0 = \delta/(2n)`, as in the paper).
    2. Per step: the Gaussian mechanism with parameter :math:`\mu_0` is
       :math:`(\varepsilon_0, \delta_0)`-DP with the *exact*
       :math:`\varepsilon_0 = \varepsilon_{\mu_0}(\delta_0)` (Balle & Wang 2018,
       Theorem 8). (The paper asserts the privacy loss is at most
       :math:`\varepsilon/(2\sqrt{2\log(2/\delta)})` here, citing Kifer et al.;
       for its :math:`\sigma_z` the exact value is about 4 times larger.)
    3. Lemma 9 (amplification, sampling one of ``n``; holds for
       :math:`\varepsilon_0 \le 1` because Balle, Barthe & Gaboardi 2018,
       Theorem 9 gives :math:`\log(1 + (e^{\varepsilon_0}-1)/n) \le 2\varepsilon_0/n`):
       :math:`(\varepsilon_1, \delta_1) = (2\varepsilon_0/n, \delta_0/n)`.
    4. Lemma 10 (strong composition, Dwork, Rothblum & Vadhan 2010) over
       ``T`` steps: :math:`\varepsilon = \sqrt{2T\log(1/\delta')}\,\varepsilon_1
       + T\varepsilon_1(e^{\varepsilon_1}-1)`, total
       :math:`T\delta_1 + \delta' = \delta`.

    Raises
    ------
    UnsupportedEventError
        If :math:`\varepsilon_0 > 1` (Lemma 9's hypothesis fails).
    """
    delta = check_delta(delta)
    mu0 = check_positive("step_mu", step_mu)
    n = int(n)
    T = int(horizon)
    delta_prime = delta / 2.0
    delta1 = delta / (2.0 * T)
    delta0 = min(n * delta1, 0.5)
    eps0 = _gdp.gdp_epsilon(mu0, delta0)
    if eps0 > 1.0:
        raise UnsupportedEventError(
            f"per-step epsilon {eps0:.4g} > 1: the amplification lemma (Lemma 9) does not apply"
        )
    eps1 = 2.0 * eps0 / n
    return math.sqrt(2.0 * T * math.log(1.0 / delta_prime)) * eps1 + T * eps1 * math.expm1(eps1)


def _rrpsgd_epsilon(event: RRPSGDPaperArgument, delta: float) -> float:
    return rrpsgd_paper_epsilon(event.step_mu, event.population_size, event.horizon, delta)


#: Event type -> epsilon at delta: the events the ``zhang2017_thm4`` accountant reads.
RRPSGD_PAPER: dict[type[DpEvent], Callable[[Any, float], float]] = {
    RRPSGDPaperArgument: _rrpsgd_epsilon,
}


class RRPSGDPaperAccountant(Accountant):
    """Theorem 4 of Zhang et al. 2017 (sampling + strong composition), computed honestly.

    Reads only :class:`~noisygd.accounting.events.RRPSGDPaperArgument`; see
    :func:`rrpsgd_paper_epsilon`. A paper accountant.
    """

    name = "zhang2017_thm4"
    theorem = "Zhang et al. 2017 Thm 4: Gaussian + Lemma 9 amplification + Lemma 10 (DRV10)"
    kind = PAPER
    DISPATCH = RRPSGD_PAPER

    def epsilon(self, event: DpEvent, delta: float) -> float:
        return dispatch(
            RRPSGD_PAPER, event, delta,
            refusal="zhang2017_thm4 reads only RRPSGDPaperArgument events, not {name}",
        )
