r"""The privacy ledger: a persistent record of every release against a named dataset.

A release is recorded by :meth:`Ledger.spend` *before* the algorithm reads the data: in one
transaction that holds the ledger's lock (:mod:`noisygd.ledger.storage`) it reads every
event already stored for the dataset, composes them with the new one, refuses with
:class:`~noisygd.exceptions.BudgetExceededError` (recording nothing) if the composition's
epsilon at the budget's delta exceeds the budget's epsilon, and otherwise inserts the
release and commits. Only then does the caller run the algorithm. So

* a process killed after ``spend`` returned (while fitting, or before returning the model)
  leaves the spend recorded: the ledger errs toward *spent*;
* a process killed before the commit recorded nothing, and had read no data either;
* concurrent processes serialise on the lock, so none can read a stale total: the budget
  is never overspent.

Composition
-----------
The spend of a dataset is

.. math:: \varepsilon_{\text{spent}} = \text{best}\big(\text{Composed}(E_1, \dots, E_k),
          \ \delta_{\text{budget}}\big),

the smallest epsilon at the budget's delta among the registered accountants that can bound
the adaptive composition of the stored events :math:`E_1, \dots, E_k` in the order they
were recorded (:func:`noisygd.accounting.best`: exact Gaussian DP (Dong, Roth & Su 2022,
Cor. 3.3) for Gaussian compositions, the PLD accountant of dp_accounting for subsampled
ones, RDP and zCDP otherwise). Epsilons are never added: three Gaussian releases at
epsilon 1 each cost their composition, which is less than 3. If no accountant can bound
the composition, :meth:`Ledger.spend` refuses the new release (it cannot show it fits).

Every event of one dataset must be accounted under one neighbouring relation (add/remove
or replace-one): no accountant composes the two, so a release under the other relation
is refused with :class:`LedgerError`. Record such releases under another dataset name
only if they concern disjoint data.

Policy for a dataset with no budget: every spend is refused (:class:`LedgerError`); set
one first with :meth:`Ledger.set_budget` (``noisygd ledger set-budget``). Budgets may be
raised or lowered later; lowering one below the spend refuses all further releases.
"""

from __future__ import annotations

import contextlib
import json
import math
import numbers
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa

from noisygd import __version__
from noisygd._checks import check_positive, check_probability
from noisygd.accounting import AccountingResult, Composed, DpEvent, best, within_budget
from noisygd.accounting.serialization import event_from_dict, event_to_dict
from noisygd.exceptions import BudgetExceededError
from noisygd.ledger import storage
from noisygd.ledger.storage import budgets, releases

__all__ = [
    "BudgetExceededError",
    "DatasetBudget",
    "Ledger",
    "LedgerError",
    "Release",
    "check_ledger_arguments",
    "record_release",
]

#: Seconds to wait for the ledger's lock (another process's spend) before failing.
DEFAULT_TIMEOUT = 120.0

EXPORT_FORMAT = "noisygd-ledger-export"
EXPORT_VERSION = 1


class LedgerError(ValueError):
    """A ledger request that cannot be served: no budget, mixed relations, unreadable event."""


def check_budget(dataset: Any, epsilon: Any, delta: Any) -> tuple[str, float, float]:
    """``(dataset, epsilon, delta)`` of :meth:`Ledger.set_budget`, checked (a name of 1 to
    255 characters, epsilon positive and finite, delta in (0, 1))."""
    return (_check_name("dataset", dataset), check_positive("epsilon", epsilon),
            check_probability("delta", delta))


@dataclass(frozen=True)
class DatasetBudget:
    """The (epsilon, delta) budget of one dataset, and when it was set."""

    dataset: str
    epsilon: float
    delta: float
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class Release:
    """One recorded release.

    Attributes
    ----------
    id : int
        Increasing with the order of recording.
    dataset, time, algorithm : str
        ``time`` is ISO 8601 in UTC, taken when the release was recorded.
    parameters : dict
        The JSON form of the parameters the caller passed.
    event_data : dict
        The serialised event (:func:`noisygd.accounting.serialization.event_to_dict`).
    event_description : str
    relation : str
        Neighbouring relation of the event.
    delta, epsilon, accountant, theorem
        Epsilon of this release alone at the budget's delta (as it was when recorded),
        under the tightest accountant, named with its theorem.
    spent_epsilon, spent_accountant
        Epsilon of the composition of every release of the dataset up to and including this
        one, at the same delta, and its accountant.
    noisygd_version : str
    reserved_event_data : dict or None
        For a release replaced by :meth:`Ledger.settle`: the event first recorded (the
        reservation); None otherwise.
    settled_at : str or None
        When :meth:`Ledger.settle` replaced the event; None if it never did.
    """

    id: int
    dataset: str
    time: str
    algorithm: str
    parameters: dict[str, Any]
    event_data: dict[str, Any]
    event_description: str
    relation: str
    delta: float
    epsilon: float
    accountant: str
    theorem: str
    spent_epsilon: float
    spent_accountant: str
    noisygd_version: str
    reserved_event_data: dict[str, Any] | None = None
    settled_at: str | None = None

    @property
    def event(self) -> DpEvent:
        """The stored event, rebuilt (raises ``ValueError`` if its class is unknown)."""
        return event_from_dict(self.event_data)

    def to_dict(self, *, full: bool = True) -> dict[str, Any]:
        """JSON-ready form; ``full=False`` leaves out parameters and the serialised event."""
        out: dict[str, Any] = {
            "id": self.id,
            "time": self.time,
            "algorithm": self.algorithm,
            "event_description": self.event_description,
            "relation": self.relation,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "accountant": self.accountant,
            "theorem": self.theorem,
            "spent_epsilon": self.spent_epsilon,
            "spent_accountant": self.spent_accountant,
            "settled_at": self.settled_at,
        }
        if full:
            out["parameters"] = self.parameters
            out["event"] = self.event_data
            out["reserved_event"] = self.reserved_event_data
            out["noisygd_version"] = self.noisygd_version
        return out


class Ledger:
    """A privacy ledger in an SQLite file or a PostgreSQL database (module docstring).

    Parameters
    ----------
    target : str or path-like
        A file path (SQLite; created if absent, its folder must exist) or an SQLAlchemy URL
        (``sqlite:///path``, ``postgresql+psycopg://user@host:port/db``).
    timeout : float, default=120.0
        Seconds to wait for the lock held by another process's spend before failing.

    Examples
    --------
    >>> import tempfile, os
    >>> from noisygd.accounting import Gaussian
    >>> path = os.path.join(tempfile.mkdtemp(), "ledger.db")
    >>> with Ledger(path) as ledger:
    ...     _ = ledger.set_budget("adult", epsilon=4.0, delta=1e-5)
    ...     for _ in range(3):  # each alone: epsilon = 1.993 at delta = 1e-5
    ...         _ = ledger.spend("adult", Gaussian(2.0), algorithm="example")
    ...     round(ledger.spent("adult").epsilon, 3)  # their composition, not 3 x 1.993
    3.709
    """

    def __init__(self, target: str | os.PathLike[str], *, timeout: float = DEFAULT_TIMEOUT):
        self._timeout = check_positive("timeout", timeout)
        self._engine = storage.make_engine(target, timeout=self._timeout)
        self.url = storage.describe_url(self._engine.url)
        try:
            storage.create_schema(self._engine, timeout=self._timeout)
        except BaseException:
            self._engine.dispose()
            raise

    # ---------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Release the engine (connections are not pooled, so this is cheap)."""
        self._engine.dispose()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Ledger({self.url!r})"

    def __copy__(self) -> Ledger:
        """The same ledger: a copy of the handle would still spend against the same store."""
        return self

    def __deepcopy__(self, memo: dict) -> Ledger:
        """The same ledger (so ``sklearn.base.clone`` of an estimator with ``ledger=Ledger(...)``
        spends against the one store, as a path or URL does)."""
        return self

    @contextlib.contextmanager
    def _tx(self, *, write: bool) -> Iterator[sa.Connection]:
        """One transaction (:func:`storage.transaction`); a damaged row is reported as a
        :class:`LedgerError` naming this ledger."""
        try:
            with storage.transaction(self._engine, write=write, timeout=self._timeout) as conn:
                yield conn
        except _DamagedRow as exc:
            raise LedgerError(f"ledger {self.url}: {exc}") from None

    # ------------------------------------------------------------------ budgets
    def set_budget(self, dataset: str, epsilon: float, delta: float) -> DatasetBudget:
        """Set (or replace) the budget of ``dataset``: total epsilon at ``delta``.

        Parameters
        ----------
        dataset : str
            A name, 1 to 255 characters, no control characters.
        epsilon : float
            Positive, finite.
        delta : float
            In (0, 1). Every spend of the dataset is accounted at this delta.
        """
        dataset, epsilon, delta = check_budget(dataset, epsilon, delta)
        now = _now()
        with self._tx(write=True) as conn:
            row = conn.execute(
                sa.select(budgets.c.created_at)
                .where(budgets.c.dataset == dataset)
                .with_for_update()
            ).first()
            if row is None:
                conn.execute(sa.insert(budgets).values(
                    dataset=dataset, epsilon=epsilon, delta=delta, created_at=now, updated_at=now
                ))
                created = now
            else:
                conn.execute(
                    sa.update(budgets).where(budgets.c.dataset == dataset)
                    .values(epsilon=epsilon, delta=delta, updated_at=now)
                )
                created = row.created_at
        return DatasetBudget(dataset, epsilon, delta, created, now)

    def budget(self, dataset: str) -> DatasetBudget | None:
        """The budget of ``dataset``, or None if none was set."""
        dataset = _check_name("dataset", dataset)
        with self._tx(write=False) as conn:
            return _read_budget(conn, dataset, lock=False)

    def datasets(self) -> list[str]:
        """Names of the datasets with a budget, sorted."""
        with self._tx(write=False) as conn:
            return list(conn.execute(sa.select(budgets.c.dataset).order_by(budgets.c.dataset))
                        .scalars())

    # ----------------------------------------------------------------- releases
    def releases(self, dataset: str) -> list[Release]:
        """Every release of ``dataset``, in the order recorded."""
        dataset = _check_name("dataset", dataset)
        with self._tx(write=False) as conn:
            return _read_releases(conn, dataset)

    def spent(self, dataset: str, delta: float | None = None) -> AccountingResult | None:
        """Composition of every release of ``dataset`` by the accountants.

        Parameters
        ----------
        dataset : str
        delta : float, optional
            Defaults to the budget's delta.

        Returns
        -------
        AccountingResult or None
            ``best(Composed(E_1, ..., E_k), delta)`` for the stored events in recording
            order; None if nothing was released.

        Raises
        ------
        LedgerError
            If ``delta`` is not given and the dataset has no budget, or a stored event cannot
            be rebuilt.
        UnsupportedEventError
            If no accountant bounds the composition.
        """
        dataset = _check_name("dataset", dataset)
        with self._tx(write=False) as conn:
            budget = _read_budget(conn, dataset, lock=False)
            stored = _read_releases(conn, dataset)
        if delta is None:
            if budget is None:
                raise _no_budget(dataset)
            delta = budget.delta
        delta = check_probability("delta", delta)
        if not stored:
            return None
        return _compose(dataset, [_rebuild(r) for r in stored], delta)

    def preview(self, dataset: str, event: DpEvent, *, check: bool = False) -> AccountingResult:
        """What the dataset's spend would be after releasing ``event`` (nothing is recorded).

        Advisory only: another process may spend in between; :meth:`spend` re-checks under
        the lock. With ``check=True`` it raises :class:`~noisygd.exceptions.BudgetExceededError`
        when :meth:`spend` would refuse ``event`` now, so that an estimator can refuse a fit
        before it even validates the data.

        Raises
        ------
        BudgetExceededError
            With ``check=True``, if the composition would exceed the budget.
        LedgerError, UnsupportedEventError
            As :meth:`spend`.
        """
        dataset = _check_name("dataset", dataset)
        _check_event(event)
        with self._tx(write=False) as conn:
            budget = _read_budget(conn, dataset, lock=False)
            stored = _read_releases(conn, dataset)
        if budget is None:
            raise _no_budget(dataset)
        events = [_rebuild(r) for r in stored]
        total = _compose(dataset, [*events, event], budget.delta)
        if check and not within_budget(total.epsilon, budget.epsilon):
            raise _exceeded(dataset, budget, total, events)
        return total

    def spend(
        self,
        dataset: str,
        event: DpEvent,
        *,
        algorithm: str,
        parameters: Mapping[str, Any] | None = None,
    ) -> Release:
        """Record the release of ``event`` on ``dataset`` if the budget admits it.

        Call it *before* the algorithm reads the data, with the event the run will produce
        (module docstring: transaction, lock and crash semantics).

        Parameters
        ----------
        dataset : str
        event : DpEvent
            The privacy event of the planned release.
        algorithm : str
            A name for reports (for example the estimator's class and method).
        parameters : mapping, optional
            Public parameters of the run, stored as JSON (NumPy values become Python ones,
            non-finite floats strings, other objects their ``repr``; a password in a URL
            is masked).

        Returns
        -------
        Release
            The committed record.

        Raises
        ------
        BudgetExceededError
            If the composition of the stored events and ``event`` would exceed the budget's
            epsilon at its delta (compared by :func:`noisygd.accounting.within_budget`, whose
            relative tolerance ``BUDGET_RTOL`` = 1e-9 only absorbs the rounding of an epsilon
            calibrated to the budget). Nothing is recorded.
        LedgerError
            If the dataset has no budget, or ``event``'s neighbouring relation differs from
            the stored events'. Nothing is recorded.
        UnsupportedEventError
            If no accountant bounds the composition. Nothing is recorded.
        """
        dataset = _check_name("dataset", dataset)
        _check_event(event)
        algorithm = _check_name("algorithm", algorithm)
        event_data = event_to_dict(event)
        event_json = json.dumps(event_data, sort_keys=True, allow_nan=False)
        params = _jsonable(dict(parameters or {}))
        params_json = json.dumps(params, sort_keys=True, allow_nan=False)
        with self._tx(write=True) as conn:
            budget = _read_budget(conn, dataset, lock=True)
            if budget is None:
                raise _no_budget(dataset)
            stored = [_rebuild(r) for r in _read_releases(conn, dataset)]
            total = _compose(dataset, [*stored, event], budget.delta)
            if not within_budget(total.epsilon, budget.epsilon):
                raise _exceeded(dataset, budget, total, stored)
            own = best(event, budget.delta)
            row = {
                "dataset": dataset,
                "created_at": _now(),
                "algorithm": algorithm,
                "parameters": params_json,
                "event": event_json,
                "event_description": event.describe(),
                "relation": event.neighbouring.value,
                "delta": budget.delta,
                "epsilon": own.epsilon,
                "accountant": own.accountant,
                "theorem": own.theorems.get(own.accountant, ""),
                "spent_epsilon": total.epsilon,
                "spent_accountant": total.accountant,
                "noisygd_version": __version__,
            }
            new_id = conn.execute(sa.insert(releases).values(**row)).inserted_primary_key[0]
        return _release_from_row({"id": new_id, **row})

    def settle(self, release: Release | int, event: DpEvent, *,
               algorithm: str | None = None) -> Release:
        r"""Replace a release's recorded event (a reservation) by the event of the run.

        For a fit that must read the data once before its own event is known (a noisy row
        count whose value the plan needs), so that the fit is still *one* release:

        1. before reading any data, :meth:`spend` an event that dominates everything the
           fit will do (for a Gaussian fit under a total :math:`\mu`-GDP budget:
           ``Gaussian(noise_multiplier=1/mu)``, since the count and the problems compose
           to at most :math:`\mu`-GDP, Dong, Roth & Su 2022, Cor. 3.3); a refusal stops
           the fit before any data is read;
        2. take the count, plan, and call ``settle`` with the planned event of the whole
           fit *before* the training reads the data;
        3. run, and check that the run's event equals the planned one.

        A process killed between 1 and 2 leaves the reservation recorded, which dominates
        what was released; after 2 the exact event is recorded. The caller must make sure
        the recorded event always dominates what has been released so far. (A fit with no
        dominating event in the accountants' language may reserve the count's own event and
        settle it with the whole fit's; a refusal then comes after the count, which stays
        recorded, as it was released.) ``settle`` does not require the new event to cost
        less than the reservation: it re-checks the budget.

        Parameters
        ----------
        release : Release or int
            The reservation (or its id), as returned by :meth:`spend`.
        event : DpEvent
            The event of the whole fit.
        algorithm : str, optional
            A new label for the release (e.g. the method a choosing solver picked once the
            count was known); default: the reservation's label is kept.

        Returns
        -------
        Release
            The updated record: the new event, its epsilon, the running total up to it
            recomputed, ``reserved_event_data`` and ``settled_at`` set. The running totals
            of later releases keep the values recorded when they were made.

        Raises
        ------
        BudgetExceededError
            If the dataset's releases with ``event`` in place of the reservation would
            exceed the budget. The reservation stays recorded.
        LedgerError
            If the release does not exist or was already settled, or the relations differ.
        """
        release_id = release.id if isinstance(release, Release) else release
        if isinstance(release_id, bool) or not isinstance(release_id, int):
            raise TypeError(f"release must be a Release or an int id, got {release!r}")
        _check_event(event)
        event_json = json.dumps(event_to_dict(event), sort_keys=True, allow_nan=False)
        with self._tx(write=True) as conn:
            dataset = conn.execute(
                sa.select(releases.c.dataset).where(releases.c.id == release_id)
            ).scalar_one_or_none()
            if dataset is None:
                raise LedgerError(f"no release with id {release_id} in this ledger")
            budget = _read_budget(conn, dataset, lock=True)
            if budget is None:  # pragma: no cover - a release always has a budget row
                raise _no_budget(dataset)
            stored = _read_releases(conn, dataset)
            index = next(i for i, r in enumerate(stored) if r.id == release_id)
            target = stored[index]
            if target.settled_at is not None:
                raise LedgerError(f"release {release_id} was already settled")
            events = [event if r.id == release_id else _rebuild(r) for r in stored]
            total = _compose(dataset, events, budget.delta)
            if not within_budget(total.epsilon, budget.epsilon):
                raise BudgetExceededError(
                    f"dataset {dataset!r}: release {release_id} settled with this event would "
                    f"bring the spend to epsilon = {total.epsilon:.6g} ({total.accountant}) at "
                    f"delta = {budget.delta:.3g}, over the budget epsilon = "
                    f"{budget.epsilon:.6g}; the reservation stays recorded"
                )
            upto = (total if index == len(events) - 1
                    else _compose(dataset, events[: index + 1], budget.delta))
            own = best(event, budget.delta)
            values = {
                "event": event_json,
                "event_description": event.describe(),
                "relation": event.neighbouring.value,
                "epsilon": own.epsilon,
                "accountant": own.accountant,
                "theorem": own.theorems.get(own.accountant, ""),
                "spent_epsilon": upto.epsilon,
                "spent_accountant": upto.accountant,
                "reserved_event": json.dumps(target.event_data, sort_keys=True,
                                             allow_nan=False),
                "settled_at": _now(),
                **({"algorithm": str(algorithm)} if algorithm is not None else {}),
            }
            conn.execute(sa.update(releases).where(releases.c.id == release_id).values(**values))
            row = conn.execute(sa.select(releases).where(releases.c.id == release_id)).mappings()
            return _release_from_row(row.one())

    def withdraw(self, release: Release | int) -> None:
        """Remove a release whose output never left the process.

        For :func:`noisygd.training.fit_private` only (docs/ledger.md, "A fit that fails"):
        a fit that raises before its first noise draw on the data made no release, so its
        records are removed (whatever the exception; from the first draw on they stay). The
        running totals
        of later releases keep the values recorded when they were made (as for
        :meth:`settle`).

        Raises
        ------
        LedgerError
            If the release does not exist.
        """
        release_id = release.id if isinstance(release, Release) else release
        if isinstance(release_id, bool) or not isinstance(release_id, int):
            raise TypeError(f"release must be a Release or an int id, got {release!r}")
        with self._tx(write=True) as conn:
            gone = conn.execute(sa.delete(releases).where(releases.c.id == release_id))
            if gone.rowcount != 1:
                raise LedgerError(f"no release with id {release_id} in this ledger")

    # ------------------------------------------------------------------ reports
    def show(self, dataset: str) -> dict[str, Any]:
        """Summary of ``dataset``: budget, composed spend, one line per release.

        Returns
        -------
        dict
            ``ledger``, ``dataset``, ``budget_epsilon``, ``budget_delta``,
            ``spent_epsilon`` (0.0 before any release), ``spent_accountant``,
            ``spent_theorem``, ``spent_by_accountant``, ``remaining_epsilon``,
            ``n_releases`` and ``releases`` (:meth:`Release.to_dict` with ``full=False``).
        """
        return self._report(dataset, full=False)

    def export(self, dataset: str) -> dict[str, Any]:
        """Everything recorded for ``dataset``, JSON-ready, enough to re-account it.

        The :meth:`show` fields plus ``format``, ``version``, ``exported_at``, budget
        timestamps, and per release its parameters and serialised event.
        """
        out = self._report(dataset, full=True)
        return {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "exported_at": _now(),
                **out}

    def overview(self) -> dict[str, Any]:
        """One line per dataset: budget, composed spend and number of releases."""
        rows = []
        for name in self.datasets():
            report = self._report(name, full=False)
            rows.append({k: report[k] for k in (
                "dataset", "budget_epsilon", "budget_delta", "spent_epsilon",
                "spent_accountant", "remaining_epsilon", "n_releases")})
        return {"ledger": self.url, "datasets": rows}

    def _report(self, dataset: str, *, full: bool) -> dict[str, Any]:
        dataset = _check_name("dataset", dataset)
        with self._tx(write=False) as conn:
            budget = _read_budget(conn, dataset, lock=False)
            stored = _read_releases(conn, dataset)
        if budget is None:
            raise _no_budget(dataset)
        spent = (_compose(dataset, [_rebuild(r) for r in stored], budget.delta)
                 if stored else None)
        spent_eps = spent.epsilon if spent is not None else 0.0
        out: dict[str, Any] = {
            "ledger": self.url,
            "dataset": dataset,
            "budget_epsilon": budget.epsilon,
            "budget_delta": budget.delta,
            "budget_created_at": budget.created_at,
            "budget_updated_at": budget.updated_at,
            "spent_epsilon": spent_eps,
            "spent_accountant": spent.accountant if spent is not None else None,
            "spent_theorem": (spent.theorems.get(spent.accountant, "")
                              if spent is not None else None),
            "spent_by_accountant": dict(spent.by_accountant) if spent is not None else {},
            "remaining_epsilon": budget.epsilon - spent_eps,
            "n_releases": len(stored),
            "releases": [r.to_dict(full=full) for r in stored],
        }
        return out


# ------------------------------------------------------------------ estimator hooks
def check_ledger_arguments(
    ledger: str | os.PathLike[str] | Ledger | None, dataset: str | None
) -> None:
    """Check an estimator's ``ledger=`` and ``dataset=`` (both None, or both given).

    Raises
    ------
    TypeError
        If ``ledger`` is not a path, URL string or :class:`Ledger`, or ``dataset`` not a str.
    ValueError
        If only one of the two is given, or ``dataset`` is not a valid name.
    """
    if ledger is None and dataset is None:
        return
    if ledger is None:
        raise ValueError("dataset= needs ledger= (a file path or an SQLAlchemy URL)")
    if dataset is None:
        raise ValueError("ledger= needs dataset= (the name the budget was set for)")
    if not isinstance(ledger, str | os.PathLike | Ledger):
        raise TypeError(
            "ledger must be a file path, an SQLAlchemy URL string or a Ledger, got "
            f"{type(ledger).__name__}"
        )
    _check_name("dataset", dataset)


def record_release(
    ledger: str | os.PathLike[str] | Ledger,
    dataset: str,
    event: DpEvent,
    *,
    algorithm: str,
    parameters: Mapping[str, Any] | None = None,
) -> Release:
    """:meth:`Ledger.spend` on a ledger given as a path, URL or open :class:`Ledger`.

    For estimators: call it after planning and before the first read of the data, with the
    planned event; a :class:`~noisygd.exceptions.BudgetExceededError` then stops the fit
    before any data is read.
    """
    with opened_ledger(ledger) as opened:
        return opened.spend(dataset, event, algorithm=algorithm, parameters=parameters)


@contextlib.contextmanager
def opened_ledger(ledger: str | os.PathLike[str] | Ledger) -> Iterator[Ledger]:
    """The ledger given as a path, URL or open :class:`Ledger`, open: an open one is used
    as it is (and stays open), a path or URL is opened here and closed on exit."""
    if isinstance(ledger, Ledger):
        yield ledger
        return
    with Ledger(ledger) as opened:
        yield opened


# ------------------------------------------------------------------------ helpers
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:)[^@\s]*@")


def _check_name(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if not value or len(value) > 255 or _CONTROL.search(value) or value != value.strip():
        raise ValueError(
            f"{name} must be 1 to 255 characters without control characters or surrounding "
            f"spaces, got {value[:60]!r}"
        )
    return value


def _check_event(event: Any) -> None:
    if not isinstance(event, DpEvent):
        raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")


def _no_budget(dataset: str) -> LedgerError:
    return LedgerError(
        f"no budget is set for dataset {dataset!r} in this ledger; set one first "
        "(Ledger.set_budget, or: noisygd ledger set-budget --ledger L --dataset NAME "
        "--epsilon E --delta D)"
    )


def _exceeded(dataset: str, budget: DatasetBudget, total: AccountingResult,
              stored: Sequence[DpEvent]) -> BudgetExceededError:
    already = (f" (already spent: {_compose(dataset, stored, budget.delta).epsilon:.6g})"
               if stored else "")
    return BudgetExceededError(
        f"dataset {dataset!r}: this release would bring the spend to epsilon = "
        f"{total.epsilon:.6g} ({total.accountant}) at delta = {budget.delta:.3g}, over the "
        f"budget epsilon = {budget.epsilon:.6g}{already}; nothing was recorded"
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _read_budget(conn: sa.Connection, dataset: str, *, lock: bool) -> DatasetBudget | None:
    query = sa.select(budgets).where(budgets.c.dataset == dataset)
    if lock:
        query = query.with_for_update()
    row = conn.execute(query).first()
    if row is None:
        return None
    return DatasetBudget(row.dataset, float(row.epsilon), float(row.delta), row.created_at,
                         row.updated_at)


def _read_releases(conn: sa.Connection, dataset: str) -> list[Release]:
    rows = conn.execute(
        sa.select(releases).where(releases.c.dataset == dataset).order_by(releases.c.id)
    ).mappings()
    return [_release_from_row(r) for r in rows]


class _DamagedRow(LedgerError):
    """A stored release whose JSON cannot be read (re-raised naming the ledger)."""


def _json_field(row: Mapping[str, Any], key: str) -> Any:
    """The JSON column ``key`` of a release row, parsed; :class:`_DamagedRow` names the
    release and the column, never the stored text."""
    try:
        return json.loads(row[key])
    except (TypeError, ValueError, RecursionError):
        raise _DamagedRow(
            f"release {row['id']} of dataset {row['dataset']!r} has a damaged {key} column "
            "(not the JSON noisygd writes): the dataset cannot be re-accounted, so no "
            "further release is admitted; restore the ledger from a backup") from None


def _release_from_row(row: Mapping[str, Any]) -> Release:
    return Release(
        id=int(row["id"]),
        dataset=row["dataset"],
        time=row["created_at"],
        algorithm=row["algorithm"],
        parameters=_json_field(row, "parameters"),
        event_data=_json_field(row, "event"),
        event_description=row["event_description"],
        relation=row["relation"],
        delta=float(row["delta"]),
        epsilon=float(row["epsilon"]),
        accountant=row["accountant"],
        theorem=row["theorem"],
        spent_epsilon=float(row["spent_epsilon"]),
        spent_accountant=row["spent_accountant"],
        noisygd_version=row["noisygd_version"],
        reserved_event_data=(_json_field(row, "reserved_event")
                             if row.get("reserved_event") is not None else None),
        settled_at=row.get("settled_at"),
    )


def _rebuild(release: Release) -> DpEvent:
    try:
        return release.event
    except (TypeError, ValueError) as exc:
        raise LedgerError(
            f"release {release.id} of dataset {release.dataset!r} holds an event this noisygd "
            f"cannot rebuild ({exc}); the dataset cannot be re-accounted, so no further "
            "release is admitted"
        ) from exc


def _compose(dataset: str, events: Sequence[DpEvent], delta: float) -> AccountingResult:
    """``best(Composed(events), delta)``, refusing mixed neighbouring relations."""
    relations = sorted({e.neighbouring.value for e in events})
    if len(relations) > 1:
        raise LedgerError(
            f"dataset {dataset!r} would hold releases under different neighbouring relations "
            f"({', '.join(relations)}); no accountant composes them, so this release is "
            "refused"
        )
    return best(Composed(tuple(events)), delta)


def _jsonable(value: Any) -> Any:
    """JSON form of public run parameters (see :meth:`Ledger.spend`)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _URL_PASSWORD.sub(r"\1***@", value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        v = float(value)
        return v if math.isfinite(v) else repr(v)
    if isinstance(value, Enum):
        return _jsonable(value.value)
    if isinstance(value, DpEvent):
        return value.describe()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_jsonable(v) for v in value), key=repr)
    return _jsonable(repr(value))
