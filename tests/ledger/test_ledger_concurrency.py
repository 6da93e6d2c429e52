"""Concurrent processes never overspend; a killed process never un-records a spend.

Child processes are started with ``spawn`` (fresh interpreters, as separate programs
would be); their bodies are in ``ledger_workers.py``. No assertion involves time: joins
carry a generous limit only so that a deadlock fails the test instead of hanging it.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal

import pytest
from ledger_workers import die_inside_spend, fit_and_die, open_new_ledger, spend_repeatedly

from noisygd.accounting import Composed, Gaussian, PoissonSampled, SelfComposed, best
from noisygd.accounting.serialization import event_to_dict
from noisygd.ledger import Ledger

DELTA = 1e-5
PROCESSES = 8
ATTEMPTS = 3
HANG_GUARD_S = 540  # join limit: only a deadlock reaches it

SPAWN = multiprocessing.get_context("spawn")


def _join_all(processes) -> None:
    for p in processes:
        p.join(HANG_GUARD_S)
    alive = [p for p in processes if p.is_alive()]
    for p in alive:
        p.kill()
        p.join()
    assert not alive, f"{len(alive)} child processes did not finish (deadlock?)"


def _collect(results, n: int) -> list:
    out = [results.get(timeout=HANG_GUARD_S) for _ in range(n)]
    errors = [r for r in out if isinstance(r, str)]
    assert not errors, f"child processes failed: {errors}"
    return out


def test_eight_processes_spending_at_once_never_overspend(ledger_url):
    g = Gaussian(4.0)  # mu = 1/4 per release; k releases compose to mu = sqrt(k)/4
    admit = 10
    # a budget between the spend of 10 and of 11 releases: exactly 10 of 24 attempts fit
    budget = (best(Composed((g,) * admit), DELTA).epsilon
              + best(Composed((g,) * (admit + 1)), DELTA).epsilon) / 2
    with Ledger(ledger_url) as ledger:
        ledger.set_budget("shared", epsilon=budget, delta=DELTA)
    barrier, results = SPAWN.Barrier(PROCESSES), SPAWN.Queue()
    processes = [
        SPAWN.Process(target=spend_repeatedly,
                      args=(ledger_url, "shared", event_to_dict(g), ATTEMPTS, barrier, results))
        for _ in range(PROCESSES)
    ]
    for p in processes:
        p.start()
    outcomes = _collect(results, PROCESSES)
    _join_all(processes)
    admitted = sum(a for a, _ in outcomes)
    refused = sum(r for _, r in outcomes)
    assert refused == PROCESSES * ATTEMPTS - admitted

    with Ledger(ledger_url) as ledger:
        recorded = ledger.releases("shared")
        spent = ledger.spent("shared")
    assert admitted == len(recorded) == admit
    assert spent.epsilon <= budget
    assert spent.epsilon == best(Composed((g,) * admit), DELTA).epsilon
    # each release saw every earlier one: its running total is the composition of k events
    for k, release in enumerate(recorded, start=1):
        assert release.spent_epsilon == best(Composed((g,) * k), DELTA).epsilon
    assert len({r.parameters["pid"] for r in recorded}) > 1  # the spends really interleaved


def test_eight_processes_creating_one_ledger_at_once(ledger_url):
    barrier, results = SPAWN.Barrier(PROCESSES), SPAWN.Queue()
    processes = [SPAWN.Process(target=open_new_ledger, args=(ledger_url, barrier, results))
                 for _ in range(PROCESSES)]
    for p in processes:
        p.start()
    assert _collect(results, PROCESSES) == [[]] * PROCESSES
    _join_all(processes)
    with Ledger(ledger_url) as ledger:
        ledger.set_budget("a", epsilon=1.0, delta=DELTA)
        assert ledger.datasets() == ["a"]


def test_a_process_killed_after_its_spend_leaves_the_spend_recorded(ledger_url):
    g = Gaussian(3.0)
    with Ledger(ledger_url) as ledger:
        ledger.set_budget("adult", epsilon=5.0, delta=DELTA)
    child = SPAWN.Process(target=fit_and_die, args=(ledger_url, "adult", event_to_dict(g)))
    child.start()
    _join_all([child])
    assert child.exitcode == -signal.SIGKILL
    with Ledger(ledger_url) as ledger:
        (release,) = ledger.releases("adult")
        assert release.algorithm == "fit_and_die" and release.event == g
        assert ledger.spent("adult").epsilon == best(Composed((g,)), DELTA).epsilon


def test_a_process_killed_inside_spend_records_nothing_and_frees_the_lock(ledger_url):
    g = Gaussian(3.0)
    with Ledger(ledger_url) as ledger:
        ledger.set_budget("adult", epsilon=5.0, delta=DELTA)
    inside = SPAWN.Event()
    child = SPAWN.Process(target=die_inside_spend,
                          args=(ledger_url, "adult", event_to_dict(g), inside))
    child.start()
    try:
        assert inside.wait(HANG_GUARD_S), "the child never reached spend's transaction"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        _join_all([child])
    assert child.exitcode == -signal.SIGKILL
    with Ledger(ledger_url, timeout=120) as ledger:
        assert ledger.releases("adult") == []
        release = ledger.spend("adult", g, algorithm="after")  # the lock was released
        assert [r.id for r in ledger.releases("adult")] == [release.id]
        assert math.isfinite(release.spent_epsilon)


@pytest.mark.slow
def test_eight_processes_spending_subsampled_releases_never_overspend(ledger_url):
    """As above for DP-SGD-like releases, composed by the PLD accountant (each spend costs
    seconds of accounting under the lock, so the spends overlap far more)."""
    event = SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 100)
    admit = 8
    totals = [best(Composed((event,) * k), DELTA) for k in range(1, admit + 2)]
    assert totals[-1].accountant == "pld"
    budget = (totals[admit - 1].epsilon + totals[admit].epsilon) / 2
    with Ledger(ledger_url) as ledger:
        ledger.set_budget("shared", epsilon=budget, delta=DELTA)
    attempts = 2
    barrier, results = SPAWN.Barrier(PROCESSES), SPAWN.Queue()
    processes = [
        SPAWN.Process(target=spend_repeatedly,
                      args=(ledger_url, "shared", event_to_dict(event), attempts, barrier,
                            results))
        for _ in range(PROCESSES)
    ]
    for p in processes:
        p.start()
    outcomes = _collect(results, PROCESSES)
    _join_all(processes)
    with Ledger(ledger_url) as ledger:
        recorded = ledger.releases("shared")
        assert sum(a for a, _ in outcomes) == len(recorded) == admit
        assert ledger.spent("shared").epsilon <= budget
    for k, release in enumerate(recorded, start=1):
        assert release.spent_epsilon == totals[k - 1].epsilon
