"""The built-in accountants, in one explicit list, and the event x accountant support view.

Nothing registers itself by being imported: :data:`ACCOUNTANTS` names every
built-in accountant class, in the order :func:`~noisygd.accounting.best`
reports them (ties in epsilon go to the one listed first, so the exact Gaussian
accountant comes first). Each accountant declares the event types it reads in
its own module's dispatch table (its ``DISPATCH`` attribute); :data:`SUPPORT`
collects them.

========================  =======  =============================================
accountant                kind     dispatch table (module)
========================  =======  =============================================
``gdp``                   general  ``MU`` (:mod:`~noisygd.accounting.gdp`)
``zcdp``                  general  ``RHO`` (:mod:`~noisygd.accounting.zcdp`)
``rdp``                   general  ``CURVE`` (:mod:`~noisygd.accounting.rdp`; its
                                   selection entry reads
                                   :mod:`~noisygd.accounting.selection`)
``pld``                   general  ``TRANSLATIONS``
                                   (:mod:`~noisygd.accounting.dp_accounting_bridge`)
``pure_dp``               general  ``PURE_EPSILON``
                                   (:mod:`~noisygd.accounting.output_perturbation`)
``subsampling_lemma``     general  ``PAIRS`` (:mod:`~noisygd.accounting.subsampling`)
``langevin_last_iterate`` general  ``RHO`` (:mod:`~noisygd.accounting.langevin`)
``langevin_composition``  paper    ``COMPOSITION_MU`` (:mod:`~noisygd.accounting.langevin`)
``paper_thm``             paper    ``PAPER_THEOREM``
                                   (:mod:`~noisygd.accounting.output_perturbation`)
``zhang2017_thm4``        paper    ``RRPSGD_PAPER``
                                   (:mod:`~noisygd.accounting.output_perturbation`)
========================  =======  =============================================

A type in a table means the accountant can read events of that type; whether it
bounds a particular event is :meth:`~noisygd.accounting.base.Accountant.supports`
(a composition is bounded when its parts are, a Poisson-sampled event when its
inner event is Gaussian, a last-iterate event when its recorded facts meet the
theorem's assumptions, and so on).
"""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType

from noisygd._checks import check_bool
from noisygd.accounting.base import (
    GENERAL,
    Accountant,
    AccountingResult,
    UnsupportedEventError,
    check_delta,
)
from noisygd.accounting.events import DpEvent
from noisygd.accounting.gdp import GaussianAccountant
from noisygd.accounting.langevin import LangevinCompositionAccountant, LastIterateLangevinAccountant
from noisygd.accounting.output_perturbation import (
    PaperTheoremAccountant,
    PureDPAccountant,
    RRPSGDPaperAccountant,
)
from noisygd.accounting.pld import PLDAccountant
from noisygd.accounting.rdp import RDPAccountant
from noisygd.accounting.subsampling import SubsamplingLemmaAccountant
from noisygd.accounting.zcdp import ZCDPAccountant

__all__ = [
    "ACCOUNTANTS",
    "SUPPORT",
    "available_accountants",
    "best",
    "get_accountant",
    "register_accountant",
]

#: Every built-in accountant class, in report order (general ones first).
ACCOUNTANTS: tuple[type[Accountant], ...] = (
    GaussianAccountant,
    ZCDPAccountant,
    RDPAccountant,
    PLDAccountant,
    PureDPAccountant,
    SubsamplingLemmaAccountant,
    LastIterateLangevinAccountant,
    LangevinCompositionAccountant,
    PaperTheoremAccountant,
    RRPSGDPaperAccountant,
)

#: Accountant name -> the event types it reads (the keys of its dispatch table).
SUPPORT: MappingProxyType[str, tuple[type, ...]] = MappingProxyType(
    {cls.name: cls.event_types() for cls in ACCOUNTANTS}
)


# ------------------------------------------------------------------------- registry
_EXTRA: dict[str, type[Accountant]] = {}


def _builtin() -> tuple[type[Accountant], ...]:
    return ACCOUNTANTS


def register_accountant(cls: type[Accountant]) -> type[Accountant]:
    """Add a user-defined accountant class to the set :func:`best` consults.

    The built-in accountants are listed in :data:`noisygd.accounting.registry.ACCOUNTANTS`
    and need no registration.
    """
    if not (isinstance(cls, type) and issubclass(cls, Accountant)):
        raise TypeError(f"register_accountant takes an Accountant subclass, got {cls!r}")
    if cls.name in {c.name for c in _builtin()} or cls.name in _EXTRA:
        raise ValueError(f"an accountant named {cls.name!r} is already registered")
    _EXTRA[cls.name] = cls
    return cls


def _classes() -> dict[str, type[Accountant]]:
    return {**{c.name: c for c in _builtin()}, **_EXTRA}


def available_accountants() -> list[Accountant]:
    """Fresh instances of every accountant (built-ins first, in registry order)."""
    return [cls() for cls in _classes().values()]


def get_accountant(name: str) -> Accountant:
    """A fresh instance of the accountant called ``name``."""
    classes = _classes()
    try:
        return classes[name]()
    except KeyError:
        raise KeyError(
            f"unknown accountant {name!r}; available: {', '.join(classes)}"
        ) from None


# --------------------------------------------------------------------------- result


#: Relative tolerance within which two epsilons are a tie when naming the tightest.
_TIE_RTOL = 1e-9


def best(
    event: DpEvent,
    delta: float,
    accountants: Iterable[Accountant] | None = None,
    *,
    include_paper: bool = False,
    exhaustive: bool = False,
) -> AccountingResult:
    """Epsilon of ``event`` at ``delta``: the smallest over the accountants consulted, named.

    Parameters
    ----------
    event : DpEvent
    delta : float
        In (0, 1).
    accountants : iterable of Accountant, optional
        The accountants to consult. Default: every :data:`GENERAL` accountant
        (exact GDP, zCDP, RDP, PLD, pure DP, the subsampling lemma, the
        last-iterate Langevin bound), plus the :data:`~noisygd.accounting.base.PAPER` ones when
        ``include_paper`` is True.
    include_paper : bool, default=False
        Also consult the paper-specific accountants (``paper_thm``,
        ``zhang2017_thm4``, ``langevin_composition``). Ignored when
        ``accountants`` is given.
    exhaustive : bool, default=False
        Consult every accountant even after an exact one has answered. By
        default the cheap accountants are asked first, and once one that is
        exact for the event answers (exact GDP for a composition of Gaussian
        mechanisms) the others are not consulted: none can certify less, and
        PLD would cost about a thousand times more. They are listed in
        :attr:`AccountingResult.not_consulted` with the reason.

    Returns
    -------
    AccountingResult

    Raises
    ------
    UnsupportedEventError
        If no accountant consulted can bound the event.
    """
    delta = check_delta(delta)
    if not isinstance(event, DpEvent):
        raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
    include_paper = check_bool("include_paper", include_paper)
    exhaustive = check_bool("exhaustive", exhaustive)
    not_consulted: dict[str, str] = {}
    if accountants is None:
        accs = []
        for acc in available_accountants():
            if acc.kind == GENERAL or include_paper:
                accs.append(acc)
            else:
                not_consulted[acc.name] = "paper-specific accountant (include_paper=False)"
    else:
        accs = list(accountants)
        for acc in accs:
            if not isinstance(acc, Accountant):
                raise TypeError(f"accountants must be Accountant instances, got {acc!r}")
    by: dict[str, float] = {}
    refused: dict[str, str] = {}
    theorems: dict[str, str] = {}
    exact_name: str | None = None
    # Cheap accountants first (stable), so that an exact one can spare the expensive ones.
    for acc in sorted(accs, key=lambda a: a.expensive):
        if exact_name is not None and not exhaustive:
            not_consulted[acc.name] = f"{exact_name} is exact for this event"
            continue
        try:
            eps = float(acc.epsilon(event, delta))
        except UnsupportedEventError as exc:
            refused[acc.name] = str(exc)
            continue
        by[acc.name] = eps
        theorems[acc.name] = acc.theorem_for(event)
        if exact_name is None and acc.is_exact(event):
            exact_name = acc.name
    if not by:
        hint = ""
        paper = [k for k, v in not_consulted.items() if v.startswith("paper")]
        if paper:
            hint = f" (paper-specific accountants not consulted: {', '.join(paper)}; " \
                   "pass include_paper=True)"
        raise UnsupportedEventError(
            f"no accountant can bound {event.describe()}: "
            + "; ".join(f"{k}: {v}" for k, v in refused.items()) + hint
        )
    # Report in the order given; among values equal up to floating-point noise, name the
    # first listed (the exact Gaussian accountant precedes the numerical ones).
    order = [a.name for a in accs if a.name in by]
    by = {k: by[k] for k in order}
    smallest = min(by.values())
    name = next(k for k, v in by.items() if v <= smallest * (1 + _TIE_RTOL))
    return AccountingResult(
        event, delta, by[name], name, by, refused, theorems, not_consulted,
        exact=name == exact_name,
    )
