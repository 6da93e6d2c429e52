r"""Events and accountants for Zhang, Zheng, Mou & Wang (IJCAI 2017), seed ``002``.

Two events live here, with the accountants that read them:

:class:`OutputPerturbation`
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
      :class:`PaperTheoremAccountant` (``"paper_thm"``) reports the
      :math:`\varepsilon_0` it was calibrated for, only where the classical
      theorem behind it holds (:math:`\varepsilon_0 < 1`, Dwork & Roth 2014,
      Theorem A.1) and only at :math:`\delta \ge \delta_0`.
    * ``GAUSSIAN_ANALYTIC``: the same Gaussian mechanism with the exact
      (analytic-Gaussian) :math:`\sigma`; read by the exact accountants.

:class:`RRPSGDPaperArgument`
    Algorithm 2 (RRPSGD) as the paper proves it private (Theorem 4, Appendix
    A.4): per-step Gaussian mechanism, amplification by sampling one example of
    ``n`` (Lemma 9), strong composition over the horizon (Lemma 10). Read only by
    :class:`RRPSGDPaperAccountant` (``"zhang2017_thm4"``), which *computes* the
    epsilon that chain of lemmas yields at the requested delta (it does not copy
    the target: the paper's per-step constant is optimistic, see that class).
    The tight description of the same run is
    ``SelfComposed(SampledWithoutReplacement(1, n, Gaussian(...)), R)`` and is
    read by the general accountants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from noisygd._checks import check_positive as _pos
from noisygd.accounting import gdp as _gdp
from noisygd.accounting import pld as _pld
from noisygd.accounting import rdp as _rdp
from noisygd.accounting import zcdp as _zcdp
from noisygd.accounting.base import (
    Accountant,
    UnsupportedEventError,
    check_delta,
    register_accountant,
)
from noisygd.accounting.events import (
    Composed,
    DpEvent,
    EpsilonDelta,
    Gaussian,
    Neighbouring,
    SelfComposed,
)

__all__ = [
    "OutputNoise",
    "OutputPerturbation",
    "PaperTheoremAccountant",
    "PureDPAccountant",
    "RRPSGDPaperAccountant",
    "RRPSGDPaperArgument",
    "rrpsgd_paper_epsilon",
]


class OutputNoise(str, Enum):  # noqa: UP042 - matches Neighbouring
    """Which noise Algorithm 1 added to :math:`w_T`."""

    L2_LAPLACE = "l2_laplace"
    GAUSSIAN_PAPER = "gaussian_paper"
    GAUSSIAN_ANALYTIC = "gaussian_analytic"


@dataclass(frozen=True)
class OutputPerturbation(DpEvent):
    r"""One release :math:`w_T + z` of a vector with replace-one L2 sensitivity ``sensitivity``.

    Parameters
    ----------
    noise : OutputNoise
    sensitivity : float
        :math:`\Delta` (Lemma 2: :math:`3LT\eta/n`; Lemma 3:
        :math:`5L(\mu+\beta)/(n\mu\beta)`; or the contraction bound).
    scale : float
        :math:`b` of :math:`\exp(-\lVert z\rVert/b)` for ``L2_LAPLACE``, the
        standard deviation :math:`\sigma` for the Gaussian noises.
    target_epsilon, target_delta : float
        What the noise was calibrated for (informational, and the value
        :class:`PaperTheoremAccountant` certifies for ``GAUSSIAN_PAPER``).
        ``target_delta`` is 0 for ``L2_LAPLACE``.
    sensitivity_theorem : str
        Which lemma gave :math:`\Delta` (for reports).
    relation : Neighbouring
        Must be ``REPLACE_ONE``: the sensitivity lemmas compare datasets of the
        same public size ``n`` differing in one row.
    """

    noise: OutputNoise
    sensitivity: float
    scale: float
    target_epsilon: float
    target_delta: float = 0.0
    sensitivity_theorem: str = ""
    relation: Neighbouring = Neighbouring.REPLACE_ONE

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise", OutputNoise(self.noise))
        _pos("sensitivity", self.sensitivity)
        _pos("scale", self.scale)
        _pos("target_epsilon", self.target_epsilon)
        if not (0.0 <= float(self.target_delta) < 1.0):
            raise ValueError(f"target_delta must be in [0, 1), got {self.target_delta!r}")
        if self.noise is OutputNoise.L2_LAPLACE and self.target_delta != 0.0:
            raise ValueError("L2-Laplace output perturbation is pure DP: target_delta must be 0")
        if self.noise is not OutputNoise.L2_LAPLACE and not self.target_delta > 0.0:
            raise ValueError("Gaussian output perturbation needs target_delta > 0")
        object.__setattr__(self, "relation", Neighbouring(self.relation))
        if self.relation is not Neighbouring.REPLACE_ONE:
            raise ValueError(
                "output perturbation sensitivities (Lemmas 2-3 of Zhang et al. 2017) are "
                "for replace-one neighbours with public n"
            )

    @property
    def neighbouring(self) -> Neighbouring:
        return self.relation

    @property
    def is_gaussian(self) -> bool:
        return self.noise is not OutputNoise.L2_LAPLACE

    @property
    def pure_epsilon(self) -> float:
        r""":math:`\Delta/b` for the L2-Laplace noise (refused for Gaussian noise)."""
        if self.is_gaussian:
            raise UnsupportedEventError("Gaussian output perturbation is not pure DP")
        return self.sensitivity / self.scale

    def as_gaussian(self) -> Gaussian:
        """The equivalent :class:`Gaussian` event (shift ``sensitivity``, std ``scale``)."""
        if not self.is_gaussian:
            raise UnsupportedEventError(
                "L2-Laplace output perturbation is not a Gaussian mechanism"
            )
        return Gaussian(noise_multiplier=float(self.scale), sensitivity=float(self.sensitivity),
                        relation=Neighbouring.REPLACE_ONE)


# ---------------------------------------------------------------- hook registration
@_gdp.gaussian_mu.register
def _(event: OutputPerturbation) -> float:
    return _gdp.gaussian_mu(event.as_gaussian())


@_zcdp.zcdp_rho.register
def _(event: OutputPerturbation) -> float:
    if event.is_gaussian:
        return _zcdp.zcdp_rho(event.as_gaussian())
    # Bun & Steinke (2016) Prop. 1.4: eps-DP implies (eps^2/2)-zCDP.
    return _zcdp.zcdp_rho(EpsilonDelta(event.pure_epsilon, 0.0, Neighbouring.REPLACE_ONE))


@_rdp.rdp_curve.register
def _(event: OutputPerturbation, orders: np.ndarray) -> np.ndarray:
    if event.is_gaussian:
        return _rdp.rdp_curve(event.as_gaussian(), orders)
    return _rdp.rdp_curve(EpsilonDelta(event.pure_epsilon, 0.0, Neighbouring.REPLACE_ONE), orders)


@_pld.to_dp_accounting.register
def _(event: OutputPerturbation):
    # Only the Gaussian noises have a dp_accounting counterpart; the K-norm
    # (L2-Laplace) mechanism has none, so it is refused (pure_dp reads it).
    return _pld.to_dp_accounting(event.as_gaussian())


# ---------------------------------------------------------------------- accountants
def _pure_epsilon(event: DpEvent) -> float:
    if isinstance(event, OutputPerturbation):
        return event.pure_epsilon
    if isinstance(event, EpsilonDelta):
        if event.delta > 0:
            raise UnsupportedEventError(f"{event.describe()} is not pure DP")
        return float(event.epsilon)
    if isinstance(event, SelfComposed):
        return event.count * _pure_epsilon(event.event)
    if isinstance(event, Composed):
        return math.fsum(_pure_epsilon(e) for e in event.events)
    raise UnsupportedEventError(f"pure_dp bounds only pure-DP events, not {type(event).__name__}")


@register_accountant
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

    def epsilon(self, event: DpEvent, delta: float) -> float:
        check_delta(delta)
        return _pure_epsilon(event)


@register_accountant
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

    def epsilon(self, event: DpEvent, delta: float) -> float:
        delta = check_delta(delta)
        if not isinstance(event, OutputPerturbation) or event.noise is not (
            OutputNoise.GAUSSIAN_PAPER
        ):
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


# ------------------------------------------------------------------ RRPSGD (Alg. 2)
@dataclass(frozen=True)
class RRPSGDPaperArgument(DpEvent):
    r"""Algorithm 2 of Zhang et al. 2017, described the way Theorem 4 proves it private.

    Parameters
    ----------
    step_mu : float
        Per-step Gaussian-DP parameter :math:`2L/\sigma_z`: the noisy gradient
        :math:`\nabla f(w_t,\xi) + z_t` of one example with
        :math:`\lVert\nabla f\rVert \le L` has replace-one sensitivity
        :math:`2L`, and :math:`z_t \sim \mathcal N(0, \sigma_z^2 I)`.
    population_size : int
        ``n`` (public); one example sampled uniformly per step.
    horizon : int
        ``T``: the composition is taken over ``T`` steps (the paper:
        :math:`T = n^2 \ge R`).
    """

    step_mu: float
    population_size: int
    horizon: int

    def __post_init__(self) -> None:
        _pos("step_mu", self.step_mu)
        for name in ("population_size", "horizon"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if self.population_size < 2:
            raise ValueError("population_size must be at least 2")

    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring.REPLACE_ONE


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
    mu0 = _pos("step_mu", step_mu)
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


@register_accountant
class RRPSGDPaperAccountant(Accountant):
    """Theorem 4 of Zhang et al. 2017 (sampling + strong composition), computed honestly.

    Reads only :class:`RRPSGDPaperArgument`; see :func:`rrpsgd_paper_epsilon`.
    """

    name = "zhang2017_thm4"
    theorem = "Zhang et al. 2017 Thm 4: Gaussian + Lemma 9 amplification + Lemma 10 (DRV10)"

    def epsilon(self, event: DpEvent, delta: float) -> float:
        if not isinstance(event, RRPSGDPaperArgument):
            raise UnsupportedEventError("zhang2017_thm4 reads only RRPSGDPaperArgument events")
        return rrpsgd_paper_epsilon(event.step_mu, event.population_size, event.horizon, delta)
