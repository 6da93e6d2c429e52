"""Accountant interface, dispatch tables, the accountants' kinds and the budget tolerance.

An accountant maps an event and a ``delta`` to an ``epsilon`` (and back) or
raises :class:`UnsupportedEventError`. It never guesses: an event that its
theorem does not cover is refused.

Each accountant module declares the events it reads in **one explicit dispatch
table** ``{EventType: handler}`` (``MU`` in :mod:`~noisygd.accounting.gdp`,
``RHO`` in :mod:`~noisygd.accounting.zcdp`, ``CURVE`` in
:mod:`~noisygd.accounting.rdp`, ``TRANSLATIONS`` in
:mod:`~noisygd.accounting.dp_accounting_bridge`, ...), set as the class
attribute :attr:`Accountant.DISPATCH`; :func:`dispatch` looks an event's type up
in such a table. :data:`noisygd.accounting.registry.SUPPORT` collects them all.

Every accountant declares its **kind**: :data:`GENERAL` (a sound accountant for
every event of its table, consulted by :func:`~noisygd.accounting.best` by default) or :data:`PAPER`
(a paper's own argument or a baseline, consulted only on request).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from noisygd._checks import check_positive, check_probability, check_real
from noisygd.accounting.events import DpEvent
from noisygd.exceptions import UnsupportedEventError

__all__ = [
    "BUDGET_RTOL",
    "GENERAL",
    "PAPER",
    "Accountant",
    "AccountingResult",
    "UnsupportedEventError",
    "check_delta",
    "check_epsilon",
    "dispatch",
    "within_budget",
]

#: Kind of an accountant that is sound for every event of its table (``best`` consults it).
GENERAL = "general"
#: Kind of a paper-specific accountant (a paper's own proof, or a baseline it compares to).
PAPER = "paper"

#: The one relative tolerance of budget comparisons: a spend is within a budget when
#: ``spent <= budget * (1 + BUDGET_RTOL)`` (:func:`within_budget`). It absorbs the rounding
#: of an epsilon that was calibrated to the budget and then recomputed, nothing more.
BUDGET_RTOL = 1e-9


# ------------------------------------------------------------------ argument checks
def check_delta(delta: Any) -> float:
    """``delta`` as a float in the open interval (0, 1) (``TypeError``/``ValueError``)."""
    return check_probability("delta", delta)


def check_epsilon(epsilon: Any) -> float:
    """``epsilon`` as a float, positive and finite (``TypeError``/``ValueError``)."""
    return check_positive("epsilon", epsilon)


def within_budget(spent: float, budget: float) -> bool:
    """Whether ``spent`` is within ``budget`` up to the relative :data:`BUDGET_RTOL`.

    Parameters
    ----------
    spent, budget : float
        Non-negative (``inf`` allowed: an infinite spend is within no finite budget).

    Returns
    -------
    bool
        ``spent <= budget * (1 + BUDGET_RTOL)``.
    """
    s = check_real("spent", spent)
    b = check_real("budget", budget)
    for name, v in (("spent", s), ("budget", b)):
        if math.isnan(v) or v < 0:
            raise ValueError(f"{name} must be >= 0, got {v!r}")
    return s <= b * (1.0 + BUDGET_RTOL)


# ------------------------------------------------------------------------- dispatch
Handler = Callable[..., Any]


def dispatch(
    table: Mapping[type, Handler], event: DpEvent, *args: Any, refusal: str | None = None
) -> Any:
    """Call the handler of ``table`` for the type of ``event`` (or its nearest base class).

    Parameters
    ----------
    table : mapping
        ``{EventType: handler}``; ``handler(event, *args)`` computes the quantity.
    event : DpEvent
    *args
        Passed on to the handler.
    refusal : str, optional
        Message of the :class:`UnsupportedEventError` raised when no type matches;
        ``{name}`` is replaced by the event's class name.

    Raises
    ------
    UnsupportedEventError
        When neither the event's class nor a base class (other than
        :class:`DpEvent`) is in the table.
    """
    for cls in type(event).__mro__:
        if cls is DpEvent:
            break
        handler = table.get(cls)
        if handler is not None:
            return handler(event, *args)
    name = type(event).__name__
    msg = refusal if refusal is not None else "no handler for {name}"
    raise UnsupportedEventError(msg.format(name=name))


# ------------------------------------------------------------------------ interface
class Accountant(ABC):
    """An accountant: epsilon at a given delta for the events it can bound.

    Subclasses set

    * ``name`` (short, used as a key in reports) and ``theorem`` (the result that
      justifies the bound, printed beside every epsilon);
    * ``DISPATCH``: the dispatch table of the events it reads (its keys are the
      event types it supports; a composite such as ``SelfComposed`` is supported
      when its parts are);
    * ``kind``: :data:`GENERAL` or :data:`PAPER`;
    * ``expensive``: True for an accountant whose evaluation costs far more than
      a closed form (PLD); :func:`~noisygd.accounting.best` consults it last and
      calibration refines with it only after bracketing with the cheap ones.
    """

    name: ClassVar[str] = "abstract"
    theorem: ClassVar[str] = ""
    kind: ClassVar[str] = GENERAL
    expensive: ClassVar[bool] = False
    DISPATCH: ClassVar[Mapping[type, Handler]] = {}

    @classmethod
    def event_types(cls) -> tuple[type, ...]:
        """The event types of :attr:`DISPATCH` (what this accountant can read)."""
        return tuple(cls.DISPATCH)

    def theorem_for(self, event: DpEvent) -> str:
        """The result behind this accountant's epsilon for ``event``, as printed beside it:
        :attr:`theorem`, unless a subclass names only the parts that apply to the event."""
        return self.theorem

    @abstractmethod
    def epsilon(self, event: DpEvent, delta: float) -> float:
        """Smallest epsilon this accountant certifies for ``event`` at ``delta``.

        Raises
        ------
        UnsupportedEventError
            If the event is outside the accountant's theorem.
        """

    def delta(self, event: DpEvent, epsilon: float) -> float:
        r"""Smallest delta certified at ``epsilon``; by default inverts :meth:`epsilon`.

        Bisection on :math:`\log\delta` over :math:`[10^{-300}, 1)`: the answer is always a
        delta at which :meth:`epsilon` certified at most ``epsilon`` (sound). A delta at which
        the accountant's theorem does not apply (:meth:`epsilon` raises
        :class:`UnsupportedEventError` there, e.g. below a calibration's :math:`\delta_0`)
        counts as not certified. Subclasses with a direct formula override this.

        Raises
        ------
        UnsupportedEventError
            If the accountant cannot bound ``event`` at any delta below 1.
        """
        check_epsilon(epsilon)
        lo, hi = math.log(1e-300), math.log1p(-1e-12)
        if self.epsilon(event, math.exp(hi)) > epsilon:
            return 1.0

        def certified(log_delta: float) -> bool:
            try:
                return self.epsilon(event, math.exp(log_delta)) <= epsilon
            except UnsupportedEventError:
                return False

        if certified(lo):
            return math.exp(lo)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if certified(mid):
                hi = mid
            else:
                lo = mid
            if hi - lo < 1e-9:
                break
        return math.exp(hi)

    def supports(self, event: DpEvent) -> bool:
        """Whether :meth:`epsilon` bounds ``event`` (by default: it does at delta = 1e-5)."""
        try:
            self.epsilon(event, 1e-5)
        except UnsupportedEventError:
            return False
        return True

    def is_exact(self, event: DpEvent) -> bool:
        """Whether this accountant's epsilon for ``event`` is the exact one.

        Exact means no sound accountant can certify a smaller epsilon (up to the
        accountant's rounding, which errs upwards), so :func:`~noisygd.accounting.best`
        need not ask any other. Only meaningful for an event the accountant supports;
        False by default.
        """
        return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


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
        listed first).
    accountant : str
        The name of the accountant that gave it.
    by_accountant : dict
        Name to epsilon for accountants that bound the event.
    refused : dict
        Name to the reason for accountants that refused it.
    theorems : dict
        Name to the theorem behind each epsilon.
    not_consulted : dict
        Name to the reason an accountant was not asked: an exact accountant had
        already answered (``"gdp is exact for this event"``), or it is a
        paper-specific accountant and ``include_paper`` was False.
    exact : bool
        Whether the named accountant is exact for the event (its epsilon is the
        true one, not only an upper bound).
    """

    event: DpEvent
    delta: float
    epsilon: float
    accountant: str
    by_accountant: dict[str, float] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    theorems: dict[str, str] = field(default_factory=dict)
    not_consulted: dict[str, str] = field(default_factory=dict)
    exact: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (the ``noisygd account --json`` schema)."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "accountant": self.accountant,
            "theorem": self.theorems.get(self.accountant, ""),
            "exact": self.exact,
            "by_accountant": dict(self.by_accountant),
            "refused": dict(self.refused),
            "not_consulted": dict(self.not_consulted),
            "theorems": dict(self.theorems),
            "event": self.event.describe(),
            "neighbouring": self.event.neighbouring.value,
        }

    def __str__(self) -> str:
        lines = [f"event: {self.event.describe()}  [{self.event.neighbouring.value}]"]
        for name, eps in sorted(self.by_accountant.items(), key=lambda kv: kv[1]):
            mark = "  <- tightest" if name == self.accountant else ""
            if name == self.accountant and self.exact:
                mark += " (exact)"
            lines.append(
                f"  {name:>14}: eps = {eps:.6g} at delta = {self.delta:.3g}"
                f"  ({self.theorems.get(name, '')}){mark}"
            )
        if self.refused:
            lines.append(f"  not applicable (refused): {', '.join(self.refused)}")
        if self.not_consulted:
            lines.append(
                "  not consulted: "
                + "; ".join(f"{k} ({v})" for k, v in self.not_consulted.items())
            )
        return "\n".join(lines)
