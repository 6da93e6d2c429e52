"""Child-process bodies of the ledger's concurrency and crash tests (started with ``spawn``).

They live in their own module so that a spawned interpreter can import them by name.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any


def spend_repeatedly(url: str, dataset: str, event_data: dict[str, Any], attempts: int,
                     barrier: Any, results: Any) -> None:
    """Open the ledger, wait for every sibling, then try ``attempts`` spends.

    Puts ``(admitted, refused)`` on ``results``; any other exception is put as its repr.
    """
    try:
        from noisygd.accounting.serialization import event_from_dict
        from noisygd.exceptions import BudgetExceededError
        from noisygd.ledger import Ledger

        event = event_from_dict(event_data)
        ledger = Ledger(url, timeout=300)
        barrier.wait()
        admitted = refused = 0
        for i in range(attempts):
            try:
                ledger.spend(dataset, event, algorithm="worker",
                             parameters={"pid": os.getpid(), "attempt": i})
                admitted += 1
            except BudgetExceededError:
                refused += 1
        ledger.close()
        results.put((admitted, refused))
    except BaseException as exc:  # report, so the parent fails with the reason
        results.put(repr(exc))


def open_new_ledger(url: str, barrier: Any, results: Any) -> None:
    """Wait for every sibling, then open (and so create) the same new ledger."""
    try:
        from noisygd.ledger import Ledger

        barrier.wait()
        with Ledger(url, timeout=300) as ledger:
            results.put(ledger.datasets())
    except BaseException as exc:
        results.put(repr(exc))


def fit_and_die(url: str, dataset: str, event_data: dict[str, Any]) -> None:
    """A fit that records its spend, then is SIGKILLed before it can return a model."""
    from noisygd.accounting.serialization import event_from_dict
    from noisygd.ledger import record_release

    event = event_from_dict(event_data)
    record_release(url, dataset, event, algorithm="fit_and_die", parameters={"stage": "plan"})
    os.kill(os.getpid(), signal.SIGKILL)  # killed between the spend and returning the model
    time.sleep(600)  # pragma: no cover - never reached


def die_inside_spend(url: str, dataset: str, event_data: dict[str, Any], inside: Any) -> None:
    """Enter ``spend`` (lock held), signal ``inside``, then wait to be killed there."""
    import noisygd.ledger.core as core
    from noisygd.accounting.serialization import event_from_dict

    def stall(*args: Any, **kwargs: Any) -> None:
        inside.set()
        time.sleep(600)

    core.best = stall  # the accountant call inside spend's transaction never returns
    event = event_from_dict(event_data)
    with core.Ledger(url, timeout=300) as ledger:
        ledger.spend(dataset, event, algorithm="die_inside_spend")
