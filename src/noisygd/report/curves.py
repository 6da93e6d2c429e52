r"""Privacy curves of an event: epsilon against delta, and epsilon against the number of steps.

Every point is an epsilon certified by one named accountant (its ``epsilon(event, delta)``);
nothing is interpolated or guessed. An accountant that refuses the event at a point
(:class:`~noisygd.exceptions.UnsupportedEventError`) leaves that point out (``nan``) and its
reason is kept.

*Epsilon against steps* asks the same accountants about the event the run would have been had
it stopped after ``k`` steps (:func:`truncate_event`): in a composition, every
:class:`~noisygd.accounting.events.SelfComposed` part (one noisy step repeated ``T`` times) is
cut to ``min(k, T)`` repetitions, and a
:class:`~noisygd.accounting.events.LastIterateLangevin` run to ``K = k`` steps; the other parts
(a noisy row count, paid for before the first step) stay whole. This is Figure 1 of
Chourasia, Ye and Shokri (NeurIPS 2021, seed ``004``): the last-iterate bound levels off
where the composition of every step keeps growing.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from noisygd._checks import check_positive_int
from noisygd.accounting.base import Accountant, AccountingResult, check_delta
from noisygd.accounting.events import Composed, DpEvent, LastIterateLangevin, SelfComposed
from noisygd.accounting.registry import best, get_accountant
from noisygd.exceptions import UnsupportedEventError

__all__ = [
    "Curve",
    "delta_grid",
    "epsilon_delta_curves",
    "epsilon_step_curves",
    "full_accounting",
    "run_steps",
    "step_grid",
    "truncate_event",
]


@dataclass
class Curve:
    """One accountant's epsilons along a grid.

    Attributes
    ----------
    accountant : str
        Its name (as in :func:`noisygd.accounting.best`).
    theorem : str
        The result behind every point.
    kind : str
        ``"general"`` or ``"paper"`` (a paper's own argument).
    x : list of float
        The grid (deltas, or step counts).
    epsilon : list of float
        One epsilon per grid point; ``nan`` where the accountant refused.
    refused : dict
        Grid point to the accountant's reason, for the points left out.
    """

    accountant: str
    theorem: str
    kind: str
    x: list[float]
    epsilon: list[float]
    refused: dict[float, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form (``nan`` written as None)."""
        return {
            "accountant": self.accountant, "theorem": self.theorem, "kind": self.kind,
            "x": list(self.x),
            "epsilon": [None if math.isnan(e) else e for e in self.epsilon],
            "refused": {str(k): v for k, v in self.refused.items()},
        }


def full_accounting(event: DpEvent, delta: float) -> AccountingResult:
    """``best(event, delta, include_paper=True, exhaustive=True)``: every accountant asked.

    The report lists every accountant's answer or refusal, so none is spared (the default
    :func:`~noisygd.accounting.best` stops once an exact accountant has answered).
    """
    return best(event, delta, include_paper=True, exhaustive=True)


def delta_grid(delta: float, points: int = 25) -> list[float]:
    """Log-spaced deltas from ``min(1e-12, delta/100)`` to
    ``min(0.5, max(1000 delta, 1e-3))`` (at least up to 1e-3, so that a tiny ``delta`` still
    shows the curve's shape), with ``delta`` itself included."""
    delta = check_delta(delta)
    points = check_positive_int("points", points, minimum=2)
    lo = min(1e-12, delta / 100.0)
    hi = min(0.5, max(delta * 1000.0, 1e-3))
    grid = set(np.geomspace(lo, hi, points).tolist())
    grid.add(delta)
    return sorted(grid)


def run_steps(event: DpEvent) -> int | None:
    """The number of steps of the run in ``event`` (None if it has no step structure).

    The largest repetition count of a :class:`SelfComposed` part, or the ``steps`` of a
    :class:`LastIterateLangevin` run.
    """
    if isinstance(event, SelfComposed):
        return event.count
    if isinstance(event, LastIterateLangevin):
        return event.steps
    if isinstance(event, Composed):
        counts = [c for c in (run_steps(e) for e in event.events) if c is not None]
        return max(counts) if counts else None
    return None


def truncate_event(event: DpEvent, steps: int) -> DpEvent:
    """The event of the same run stopped after ``steps`` steps (module doc).

    Raises
    ------
    UnsupportedEventError
        If ``event`` has no step structure this function knows how to cut (a tree
        aggregation, an output perturbation, a random-stopping selection, ...).
    """
    steps = check_positive_int("steps", steps, minimum=0)
    if isinstance(event, SelfComposed):
        return SelfComposed(event.event, min(steps, event.count))
    if isinstance(event, LastIterateLangevin):
        return dataclasses.replace(event, steps=min(steps, event.steps))
    if isinstance(event, Composed):
        if run_steps(event) is None:
            raise UnsupportedEventError(
                f"no part of {event.describe()} is a repeated step that can be cut")
        return Composed(tuple(truncate_event(e, steps) if run_steps(e) is not None else e
                              for e in event.events))
    raise UnsupportedEventError(
        f"{type(event).__name__} has no step structure to cut (epsilon against steps is "
        "shown for compositions of repeated steps and for last-iterate Langevin runs)")


def step_grid(total: int, points: int = 16) -> list[int]:
    """About ``points`` step counts from 1 to ``total`` (both included), log-spaced."""
    total = check_positive_int("total", total)
    points = check_positive_int("points", points, minimum=2)
    grid = np.unique(np.round(np.geomspace(1, total, points)).astype(int))
    return sorted({int(k) for k in grid} | {total})


def _curve(acc: Accountant, events: Sequence[DpEvent], deltas: Sequence[float],
           x: Sequence[float]) -> Curve:
    eps: list[float] = []
    refused: dict[float, str] = {}
    for ev, d, xi in zip(events, deltas, x, strict=True):
        try:
            eps.append(float(acc.epsilon(ev, d)))
        except UnsupportedEventError as exc:
            eps.append(math.nan)
            refused[xi] = str(exc)
    theorem = acc.theorem_for(events[-1]) if events else acc.theorem  # the events share parts
    return Curve(acc.name, theorem, acc.kind, [float(v) for v in x], eps, refused)


def _accountants(event: DpEvent, delta: float,
                 result: AccountingResult | None) -> list[Accountant]:
    result = full_accounting(event, delta) if result is None else result
    return [get_accountant(name) for name in result.by_accountant]


def epsilon_delta_curves(event: DpEvent, delta: float, *,
                         result: AccountingResult | None = None,
                         deltas: Sequence[float] | None = None) -> list[Curve]:
    """Epsilon against delta under every accountant that bounds ``event`` at ``delta``.

    Parameters
    ----------
    event : DpEvent
    delta : float
        The fit's delta (its accountants are those of :func:`full_accounting`).
    result : AccountingResult, optional
        A :func:`full_accounting` result already computed for ``(event, delta)``.
    deltas : sequence of float, optional
        The grid (default :func:`delta_grid`).
    """
    grid = delta_grid(delta) if deltas is None else [check_delta(d) for d in deltas]
    accs = _accountants(event, delta, result)
    return [_curve(a, [event] * len(grid), grid, grid) for a in accs]


def epsilon_step_curves(event: DpEvent, delta: float, *,
                        result: AccountingResult | None = None,
                        steps: Sequence[int] | None = None) -> list[Curve]:
    """Epsilon at ``delta`` against the number of steps, under every accountant of the fit.

    Raises
    ------
    UnsupportedEventError
        If the event has no step structure (:func:`truncate_event`).
    """
    delta = check_delta(delta)
    total = run_steps(event)
    if total is None or total < 1:
        raise UnsupportedEventError(
            f"{event.describe()} has no run of steps to cut (epsilon against steps is shown "
            "for compositions of repeated steps and for last-iterate Langevin runs)")
    grid = step_grid(total) if steps is None else [check_positive_int("steps", k)
                                                   for k in steps]
    events = [truncate_event(event, k) for k in grid]
    accs = _accountants(event, delta, result)
    return [_curve(a, events, [delta] * len(grid), grid) for a in accs]
