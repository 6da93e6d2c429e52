r"""Privacy-loss-distribution (PLD) accounting through Google's ``dp-accounting``.

Theorem: the (epsilon, delta) curve of a composition is the hockey-stick
divergence of the composed privacy-loss distributions (Meiser and Mohammadi
2018; Koskela, Jälkö and Honkela 2020); dp_accounting discretises each PLD
with *pessimistic* rounding (privacy losses rounded up, truncated mass moved
to infinite loss), so the epsilon it reports is an upper bound on the true
one (Doroshenko, Ghazi, Kamath, Kumar and Manurangsi 2022, "Connect the dots",
Theorem 3.6). This module only translates noisygd events into dp_accounting's
and reads back the result; it is the independent cross-check of the closed
forms in :mod:`~noisygd.accounting.gdp`, :mod:`~noisygd.accounting.zcdp` and
:mod:`~noisygd.accounting.rdp`.

Neighbouring relations. dp_accounting's ``GaussianDpEvent(z)`` means noise of
standard deviation ``z`` per unit *per-record contribution*: under
``ADD_OR_REMOVE_ONE`` the means differ by 1, under ``REPLACE_ONE`` by 2 (see
``GaussianPrivacyLoss``: "the privacy loss distribution for REPLACE adjacency
corresponds to the same privacy loss distribution with twice the
sensitivity"). A noisygd :class:`~noisygd.accounting.events.Gaussian` carries
the L2 sensitivity *under its own relation* (1 for add/remove of a clipped
example, 2 for replace-one), so it is translated to
``GaussianDpEvent(noise_multiplier / sensitivity)`` under add/remove and to
``GaussianDpEvent(2 * noise_multiplier / sensitivity)`` under replace-one; in
both cases the PLD is that of a Gaussian shift of ``sensitivity /
noise_multiplier`` standard deviations, as it must be.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import dp_accounting
from dp_accounting.pld import pld_privacy_accountant

from noisygd.accounting.base import (
    Accountant,
    UnsupportedEventError,
    check_delta,
    check_epsilon,
    register_accountant,
)
from noisygd.accounting.events import Composed, DpEvent, Gaussian, Neighbouring, SelfComposed
from noisygd.accounting.rdp import RDPAccountant

__all__ = [
    "MAX_EPSILON_SCALE",
    "PLDAccountant",
    "adaptive_discretization",
    "dp_accounting_relation",
    "to_dp_accounting",
]


def dp_accounting_relation(relation: Neighbouring) -> dp_accounting.NeighboringRelation:
    """dp_accounting's ``NeighboringRelation`` for a noisygd :class:`Neighbouring`."""
    relation = Neighbouring(relation)
    if relation is Neighbouring.ADD_REMOVE:
        return dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    return dp_accounting.NeighboringRelation.REPLACE_ONE


# --------------------------------------------------------------------------- hook
@functools.singledispatch
def to_dp_accounting(event: DpEvent) -> dp_accounting.DpEvent:
    """Translate a noisygd event into the equivalent ``dp_accounting.DpEvent``.

    The returned event must be accounted under
    ``dp_accounting_relation(event.neighbouring)``.

    Raises
    ------
    UnsupportedEventError
        For events with no dp_accounting counterpart (including
        :class:`~noisygd.accounting.events.NonPrivate`, which is refused
        rather than reported as infinite epsilon).
    """
    raise UnsupportedEventError(
        f"no dp_accounting translation is registered for {type(event).__name__}"
    )


@to_dp_accounting.register
def _(event: Gaussian) -> dp_accounting.DpEvent:
    if math.isinf(event.noise_multiplier):
        return dp_accounting.NoOpDpEvent()
    z = event.noise_multiplier / event.sensitivity
    if event.relation is Neighbouring.REPLACE_ONE:
        z *= 2.0  # dp_accounting doubles the shift under REPLACE_ONE (module docstring)
    return dp_accounting.GaussianDpEvent(noise_multiplier=z)


@to_dp_accounting.register
def _(event: SelfComposed) -> dp_accounting.DpEvent:
    if event.count == 0:
        return dp_accounting.NoOpDpEvent()
    return dp_accounting.SelfComposedDpEvent(to_dp_accounting(event.event), event.count)


@to_dp_accounting.register
def _(event: Composed) -> dp_accounting.DpEvent:
    return dp_accounting.ComposedDpEvent([to_dp_accounting(e) for e in event.events])


# ------------------------------------------------------------------ resolution
def adaptive_discretization(epsilon_scale: float) -> float:
    """Value discretisation interval for an epsilon of about ``epsilon_scale``.

    ``max(min(1e-4, 1e-3 s), 1e-5 s)`` (floored at 1e-7): dp_accounting's
    default 1e-4 for moderate epsilons, at most 0.1% of epsilon for small ones
    and 0.001% of it for large ones (where 1e-4 would need millions of
    points), capped at 10 (dp_accounting overflows beyond). The interval
    affects accuracy only: pessimistic rounding keeps the estimate an upper
    bound at any resolution.
    """
    s = float(epsilon_scale)
    if not math.isfinite(s) or s <= 0:
        return 1e-4
    return min(max(min(1e-4, 1e-3 * s), 1e-5 * s, 1e-7), _MAX_INTERVAL)


#: Largest discretisation interval used (``expm1`` of it must not overflow in dp_accounting).
_MAX_INTERVAL = 10.0
#: Events whose RDP epsilon exceeds this are refused: their PLD would not fit in memory
#: at any useful resolution (and such epsilons carry no meaningful privacy anyway).
MAX_EPSILON_SCALE = 1e6


def _epsilon_scale(event: DpEvent, delta: float) -> float:
    # Resolution heuristic only (never the reported value): our RDP bound if it exists.
    try:
        return RDPAccountant().epsilon(event, delta)
    except UnsupportedEventError:
        return math.nan


def _build_accountant(event: DpEvent, interval: float) -> pld_privacy_accountant.PLDAccountant:
    translated = to_dp_accounting(event)
    acc = pld_privacy_accountant.PLDAccountant(
        neighboring_relation=dp_accounting_relation(event.neighbouring),
        value_discretization_interval=interval,
    )
    if not acc.supports(translated):
        raise UnsupportedEventError(
            f"dp_accounting's PLD accountant cannot bound {event.describe()} "
            f"under {event.neighbouring.value}"
        )
    try:
        acc.compose(translated)
    except (OverflowError, FloatingPointError, MemoryError, ValueError) as exc:
        raise UnsupportedEventError(
            f"dp_accounting's PLD construction failed for {event.describe()} "
            f"(value_discretization_interval={interval:g}): {exc}"
        ) from exc
    return acc


# A few recent PLDs (``best`` and ``supports`` ask twice); each may hold ~1e6 floats.
_cached_accountant = functools.lru_cache(maxsize=8)(_build_accountant)


def _composed_accountant(event: DpEvent, interval: float) -> pld_privacy_accountant.PLDAccountant:
    # Events are frozen dataclasses; one holding an unhashable field is built uncached.
    try:
        hash(event)
    except TypeError:
        return _build_accountant(event, interval)
    return _cached_accountant(event, interval)


# -------------------------------------------------------------------- accountant
@register_accountant
class PLDAccountant(Accountant):
    """dp_accounting's PLD accountant with pessimistic estimates (a sound upper bound).

    Parameters
    ----------
    value_discretization_interval : float, optional
        Loss discretisation interval passed to dp_accounting. ``None`` (the
        default) picks it per call with :func:`adaptive_discretization` from a
        rough epsilon scale (the RDP bound of the event at the requested delta,
        or at delta = 1e-6 for :meth:`delta`), so that tiny and huge epsilons are both resolved to
        about 0.1% in well under a second.
    """

    name = "pld"
    theorem = "privacy loss distributions, pessimistic (dp_accounting; Doroshenko et al. 2022)"

    def __init__(self, value_discretization_interval: float | None = None) -> None:
        if value_discretization_interval is not None:
            v = float(value_discretization_interval)
            if not (v > 0) or math.isinf(v):
                raise ValueError(
                    f"value_discretization_interval must be positive and finite, got "
                    f"{value_discretization_interval!r}"
                )
            value_discretization_interval = v
        self.value_discretization_interval = value_discretization_interval

    def _accountant(
        self, event: DpEvent, scale_from: Callable[[], float]
    ) -> pld_privacy_accountant.PLDAccountant:
        if not isinstance(event, DpEvent):
            raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
        to_dp_accounting(event)  # refuse early, before any work
        interval = self.value_discretization_interval
        if interval is None:
            scale = scale_from()
            if scale > MAX_EPSILON_SCALE:
                raise UnsupportedEventError(
                    f"epsilon of about {scale:.3g} is beyond the PLD accountant's range "
                    f"(> {MAX_EPSILON_SCALE:g}); the closed-form accountants bound it"
                )
            interval = adaptive_discretization(scale)
        return _composed_accountant(event, interval)

    @staticmethod
    def _read(what: str, fn: Callable[[float], float], x: float) -> float:
        try:
            return float(fn(x))
        except (OverflowError, FloatingPointError, ValueError) as exc:
            raise UnsupportedEventError(f"dp_accounting's PLD {what} failed: {exc}") from exc

    def epsilon(self, event: DpEvent, delta: float) -> float:
        delta = check_delta(delta)
        acc = self._accountant(event, lambda: _epsilon_scale(event, delta))
        return self._read("epsilon", acc.get_epsilon, delta)

    def delta(self, event: DpEvent, epsilon: float) -> float:
        eps = check_epsilon(epsilon)

        def scale() -> float:
            # The resolution follows the event's epsilon at a typical delta, not the
            # query point (a small query epsilon must not force a needlessly fine grid).
            s = _epsilon_scale(event, 1e-6)
            return s if math.isfinite(s) and s > 0 else eps

        acc = self._accountant(event, scale)
        return min(1.0, self._read("delta", acc.get_delta, eps))

    def __repr__(self) -> str:
        vdi = self.value_discretization_interval
        return f"PLDAccountant(value_discretization_interval={vdi!r})"
