"""Accountant interface, registry and the ``best`` selector.

An accountant maps an event and a ``delta`` to an ``epsilon`` (and back) or
raises :class:`UnsupportedEventError`. It never guesses: an event that its
theorem does not cover is refused.

Accountants register themselves with :func:`register_accountant`;
:func:`best` asks every registered accountant and returns the smallest
epsilon among those that did not refuse, naming it.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from noisygd.accounting.events import DpEvent


class UnsupportedEventError(ValueError):
    """Raised by an accountant for an event its theorem cannot bound."""


def check_delta(delta: float) -> float:
    """Validate ``delta`` in the open interval (0, 1) and return it as float."""
    try:
        d = float(delta)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"delta must be a real number, got {delta!r}") from exc
    if not (0.0 < d < 1.0):
        raise ValueError(f"delta must be in the open interval (0, 1), got {delta!r}")
    return d


def check_epsilon(epsilon: float) -> float:
    """Validate ``epsilon`` > 0 and finite, and return it as float."""
    try:
        e = float(epsilon)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"epsilon must be a real number, got {epsilon!r}") from exc
    if not (e > 0.0) or math.isinf(e):
        raise ValueError(f"epsilon must be positive and finite, got {epsilon!r}")
    return e


class Accountant(ABC):
    """An accountant: epsilon at a given delta for the events it can bound.

    Subclasses set ``name`` (short, used as a key in reports) and ``theorem``
    (the result that justifies the bound, printed beside every epsilon).
    """

    name: ClassVar[str] = "abstract"
    theorem: ClassVar[str] = ""

    @abstractmethod
    def epsilon(self, event: DpEvent, delta: float) -> float:
        """Smallest epsilon this accountant certifies for ``event`` at ``delta``.

        Raises
        ------
        UnsupportedEventError
            If the event is outside the accountant's theorem.
        """

    def delta(self, event: DpEvent, epsilon: float) -> float:
        """Smallest delta certified at ``epsilon``; by default inverts :meth:`epsilon`.

        Subclasses with a direct formula override this.
        """
        check_epsilon(epsilon)
        lo, hi = 1e-300, 1.0 - 1e-12
        if self.epsilon(event, hi) > epsilon:
            return 1.0
        for _ in range(200):  # bisection on log(delta)
            mid = math.sqrt(lo * hi)
            if self.epsilon(event, mid) <= epsilon:
                hi = mid
            else:
                lo = mid
            if hi / lo < 1 + 1e-9:
                break
        return hi

    def supports(self, event: DpEvent) -> bool:
        """Whether :meth:`epsilon` would bound ``event`` (at delta = 1e-5)."""
        try:
            self.epsilon(event, 1e-5)
        except UnsupportedEventError:
            return False
        return True

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


_REGISTRY: dict[str, Callable[[], Accountant]] = {}


def register_accountant(cls: type[Accountant]) -> type[Accountant]:
    """Class decorator adding an accountant to the set :func:`best` consults."""
    if cls.name in _REGISTRY:
        raise ValueError(f"an accountant named {cls.name!r} is already registered")
    _REGISTRY[cls.name] = cls
    return cls


def available_accountants() -> list[Accountant]:
    """Fresh instances of every registered accountant, in registration order."""
    return [factory() for factory in _REGISTRY.values()]


def get_accountant(name: str) -> Accountant:
    """The registered accountant called ``name``."""
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise KeyError(
            f"unknown accountant {name!r}; available: {', '.join(_REGISTRY)}"
        ) from None


@dataclass(frozen=True)
class AccountingResult:
    """Epsilon of an event at a delta under every accountant consulted.

    Attributes
    ----------
    event : DpEvent
    delta : float
    epsilon : float
        The epsilon of the named accountant: the smallest among accountants
        that bound the event, up to a relative 1e-9 (ties go to the accountant
        registered first).
    accountant : str
        The name of the accountant that gave it.
    by_accountant : dict
        Name to epsilon for accountants that bound the event.
    refused : dict
        Name to the reason for accountants that refused it.
    theorems : dict
        Name to the theorem behind each epsilon.
    """

    event: DpEvent
    delta: float
    epsilon: float
    accountant: str
    by_accountant: dict[str, float] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    theorems: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (the ``noisygd account --json`` schema)."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "accountant": self.accountant,
            "theorem": self.theorems.get(self.accountant, ""),
            "by_accountant": dict(self.by_accountant),
            "refused": dict(self.refused),
            "theorems": dict(self.theorems),
            "event": self.event.describe(),
            "neighbouring": self.event.neighbouring.value,
        }

    def __str__(self) -> str:
        lines = [f"event: {self.event.describe()}  [{self.event.neighbouring.value}]"]
        for name, eps in sorted(self.by_accountant.items(), key=lambda kv: kv[1]):
            mark = "  <- tightest" if name == self.accountant else ""
            lines.append(
                f"  {name:>14}: eps = {eps:.6g} at delta = {self.delta:.3g}"
                f"  ({self.theorems.get(name, '')}){mark}"
            )
        if self.refused:
            lines.append(f"  not applicable (refused): {', '.join(self.refused)}")
        return "\n".join(lines)


def best(
    event: DpEvent, delta: float, accountants: Iterable[Accountant] | None = None
) -> AccountingResult:
    """Epsilon of ``event`` at ``delta`` under every accountant; the tightest named.

    Parameters
    ----------
    event : DpEvent
    delta : float
        In (0, 1).
    accountants : iterable of Accountant, optional
        Defaults to every registered accountant.

    Returns
    -------
    AccountingResult

    Raises
    ------
    UnsupportedEventError
        If no accountant can bound the event.
    """
    delta = check_delta(delta)
    if not isinstance(event, DpEvent):
        raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
    accs = list(available_accountants() if accountants is None else accountants)
    by: dict[str, float] = {}
    refused: dict[str, str] = {}
    theorems: dict[str, str] = {}
    for acc in accs:
        try:
            eps = float(acc.epsilon(event, delta))
        except UnsupportedEventError as exc:
            refused[acc.name] = str(exc)
            continue
        by[acc.name] = eps
        theorems[acc.name] = acc.theorem
    if not by:
        raise UnsupportedEventError(
            f"no accountant can bound {event.describe()}: "
            + "; ".join(f"{k}: {v}" for k, v in refused.items())
        )
    smallest = min(by.values())
    # Among values equal up to floating-point noise, name the first registered
    # (the exact Gaussian accountant precedes the numerical ones).
    name = next(k for k, v in by.items() if v <= smallest * (1 + 1e-9))
    return AccountingResult(event, delta, by[name], name, by, refused, theorems)
