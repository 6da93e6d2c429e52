"""Privacy events: small immutable descriptions of what a private algorithm did.

An algorithm *runs* and then *says what it did* as an event; accountants read
events and answer "epsilon at this delta" or refuse. Nothing else computes
privacy. The shape follows ``dp_accounting.DpEvent``: frozen dataclasses,
composed by nesting.

Every event carries its neighbouring relation:

* ``Neighbouring.ADD_REMOVE``: datasets differ by adding or removing one row;
* ``Neighbouring.REPLACE_ONE``: datasets of equal size differ in one row.

Composing events of different relations is refused (:class:`Composed` raises),
because no accountant can bound such a mixture without extra assumptions.

Further event types live next to their accountants (for example
``TreeAggregation`` in :mod:`noisygd.accounting.tree` and
``LastIterateLangevin`` in :mod:`noisygd.accounting.langevin`); all subclass
:class:`DpEvent` and are re-exported by :mod:`noisygd.accounting`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from enum import Enum, StrEnum


class Neighbouring(StrEnum):
    """Neighbouring relation under which an event's guarantee holds."""

    ADD_REMOVE = "add_remove"
    REPLACE_ONE = "replace_one"

    @property
    def clipped_sum_sensitivity(self) -> float:
        r"""L2 sensitivity of a sum of per-example terms each of norm <= 1.

        :math:`\Delta = 1` under add/remove (one term appears or disappears) and
        :math:`\Delta = 2` under replace-one (one term leaves, another arrives). Multiply by
        the clipping norm ``C`` (or a per-example bound) for the sensitivity of a clipped
        gradient sum. This property is the one place the rule is written.
        """
        return 1.0 if self is Neighbouring.ADD_REMOVE else 2.0


def _check_positive(name: str, value: float, *, allow_inf: bool = False) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if math.isnan(value) or value <= 0 or (math.isinf(value) and not allow_inf):
        raise ValueError(f"{name} must be positive and finite, got {value!r}")


def _short(value: object) -> str:
    if isinstance(value, DpEvent):
        return value.describe()
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_short(v) for v in value) + ")"
    return repr(value)


@dataclass(frozen=True)
class DpEvent:
    """Base class of all privacy events."""

    @property
    def neighbouring(self) -> Neighbouring:  # pragma: no cover - overridden
        raise NotImplementedError

    def describe(self) -> str:
        """Compact one-line description: fields with short number formats.

        The neighbouring relation is left out (reports print it once).
        """
        parts = []
        for f in fields(self):
            if f.name == "relation":
                continue
            parts.append(f"{f.name}={_short(getattr(self, f.name))}")
        return f"{type(self).__name__}({', '.join(parts)})"


@dataclass(frozen=True)
class Gaussian(DpEvent):
    r"""The Gaussian mechanism :math:`f(D) + \mathcal N(0, \sigma^2 I)`.

    Parameters
    ----------
    noise_multiplier : float
        Standard deviation of the noise, in units of the clipping norm ``C``
        (so the noise is :math:`\mathcal N(0, (zC)^2 I)`).
    sensitivity : float, default=1.0
        L2 sensitivity of ``f`` in the same units: 1 for adding or removing one
        clipped example, 2 for replacing one.
    relation : Neighbouring, default=ADD_REMOVE

    Notes
    -----
    It is :math:`\mu`-GDP with :math:`\mu = \Delta / \sigma`
    = ``sensitivity / noise_multiplier`` and :math:`\rho`-zCDP with
    :math:`\rho = \mu^2 / 2`.
    """

    noise_multiplier: float
    sensitivity: float = 1.0
    relation: Neighbouring = Neighbouring.ADD_REMOVE

    def __post_init__(self) -> None:
        _check_positive("noise_multiplier", self.noise_multiplier, allow_inf=True)
        _check_positive("sensitivity", self.sensitivity)
        object.__setattr__(self, "relation", Neighbouring(self.relation))

    @property
    def neighbouring(self) -> Neighbouring:
        return self.relation

    @property
    def mu(self) -> float:
        """Gaussian-DP parameter ``sensitivity / noise_multiplier``."""
        return self.sensitivity / self.noise_multiplier


@dataclass(frozen=True)
class SelfComposed(DpEvent):
    """``count`` adaptive repetitions of ``event``."""

    event: DpEvent
    count: int

    def __post_init__(self) -> None:
        if not isinstance(self.event, DpEvent):
            raise TypeError(f"event must be a DpEvent, got {type(self.event).__name__}")
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 0:
            raise ValueError(f"count must be a non-negative integer, got {self.count!r}")

    @property
    def neighbouring(self) -> Neighbouring:
        return self.event.neighbouring

    def describe(self) -> str:
        return f"{self.count} x {self.event.describe()}"


@dataclass(frozen=True)
class Composed(DpEvent):
    """Adaptive composition of heterogeneous events (all of one relation)."""

    events: tuple[DpEvent, ...]

    def __post_init__(self) -> None:
        events = tuple(self.events)
        object.__setattr__(self, "events", events)
        if not events:
            raise ValueError("Composed needs at least one event")
        for e in events:
            if not isinstance(e, DpEvent):
                raise TypeError(f"every event must be a DpEvent, got {type(e).__name__}")
        relations = {e.neighbouring for e in events}
        if len(relations) > 1:
            raise ValueError(
                "cannot compose events under different neighbouring relations: "
                + ", ".join(sorted(r.value for r in relations))
            )

    @property
    def neighbouring(self) -> Neighbouring:
        return self.events[0].neighbouring

    def describe(self) -> str:
        return " + ".join(
            f"[{e.describe()}]" if isinstance(e, Composed | SelfComposed) else e.describe()
            for e in self.events
        )


@dataclass(frozen=True)
class PoissonSampled(DpEvent):
    """``event`` run on a Poisson subsample: each row kept independently w.p. ``rate``.

    Amplification by Poisson sampling holds for add/remove neighbours, so the
    inner event must be an add/remove event.
    """

    rate: float
    event: DpEvent

    def __post_init__(self) -> None:
        if not (0.0 <= self.rate <= 1.0) or math.isnan(self.rate):
            raise ValueError(f"rate must be in [0, 1], got {self.rate!r}")
        if self.event.neighbouring is not Neighbouring.ADD_REMOVE:
            raise ValueError("Poisson subsampling is accounted under add/remove neighbours")

    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring.ADD_REMOVE


@dataclass(frozen=True)
class SampledWithoutReplacement(DpEvent):
    """``event`` run on a uniformly random subset of ``sample_size`` of ``population_size`` rows.

    Accounted under replace-one neighbours (the population size is public).
    """

    sample_size: int
    population_size: int
    event: DpEvent

    def __post_init__(self) -> None:
        if not (0 < self.sample_size <= self.population_size):
            raise ValueError(
                "need 0 < sample_size <= population_size, got "
                f"{self.sample_size} and {self.population_size}"
            )
        if self.event.neighbouring is not Neighbouring.REPLACE_ONE:
            raise ValueError("sampling without replacement is accounted under replace-one")

    @property
    def rate(self) -> float:
        return self.sample_size / self.population_size

    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring.REPLACE_ONE


@dataclass(frozen=True)
class EpsilonDelta(DpEvent):
    """A mechanism known only to satisfy (epsilon, delta)-DP (delta may be 0)."""

    epsilon: float
    delta: float = 0.0
    relation: Neighbouring = Neighbouring.ADD_REMOVE

    def __post_init__(self) -> None:
        if not (self.epsilon >= 0) or math.isinf(self.epsilon):
            raise ValueError(f"epsilon must be finite and >= 0, got {self.epsilon!r}")
        if not (0 <= self.delta < 1):
            raise ValueError(f"delta must be in [0, 1), got {self.delta!r}")
        object.__setattr__(self, "relation", Neighbouring(self.relation))

    @property
    def neighbouring(self) -> Neighbouring:
        return self.relation


@dataclass(frozen=True)
class NonPrivate(DpEvent):
    """A release with no privacy guarantee. Every accountant refuses it."""

    reason: str = "non-private release"
    relation: Neighbouring = Neighbouring.ADD_REMOVE

    @property
    def neighbouring(self) -> Neighbouring:
        return self.relation
