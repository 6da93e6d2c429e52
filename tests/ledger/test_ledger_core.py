"""The ledger on one process: composition, refusals, policies and reports (both backends)."""

from __future__ import annotations

import json
import math

import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from noisygd.accounting import (
    Composed,
    EpsilonDelta,
    Gaussian,
    Neighbouring,
    NonPrivate,
    PoissonSampled,
    SelfComposed,
    UnsupportedEventError,
    best,
)
from noisygd.accounting.serialization import event_from_dict
from noisygd.exceptions import BudgetExceededError
from noisygd.ledger import Ledger, LedgerError, check_ledger_arguments, record_release

DELTA = 1e-5


def gdp_epsilon_closed_form(mu: float, delta: float) -> float:
    r"""Epsilon of mu-GDP at delta, solved from Dong, Roth & Su (2022), Cor. 2.13.

    :math:`\delta(\varepsilon) = \Phi(-\varepsilon/\mu + \mu/2)
    - e^{\varepsilon}\Phi(-\varepsilon/\mu - \mu/2)`, written here with scipy only
    (independent of noisygd's implementation).
    """
    def excess(eps: float) -> float:
        return (norm.cdf(-eps / mu + mu / 2)
                - math.exp(eps + norm.logcdf(-eps / mu - mu / 2)) - delta)

    # the zCDP conversion (Bun & Steinke 2016, Prop. 1.3) bounds the root from above
    upper = mu * mu / 2 + 2 * mu * math.sqrt(math.log(1 / delta)) + 1.0
    return brentq(excess, 0.0, upper, xtol=1e-14, rtol=1e-13)


def gaussian_at_epsilon(epsilon: float, delta: float) -> Gaussian:
    """A Gaussian release whose epsilon alone at ``delta`` is ``epsilon``."""
    mu = brentq(lambda m: gdp_epsilon_closed_form(m, delta) - epsilon, 1e-2, 10.0, xtol=1e-14)
    return Gaussian(noise_multiplier=1.0 / mu)


@pytest.fixture
def ledger(ledger_url):
    with Ledger(ledger_url, timeout=60) as opened:
        yield opened


# ------------------------------------------------------------------------ composition
def test_three_gaussian_releases_at_epsilon_one_cost_their_composition(ledger):
    g = gaussian_at_epsilon(1.0, DELTA)
    ledger.set_budget("adult", epsilon=10.0, delta=DELTA)
    for _ in range(3):
        release = ledger.spend("adult", g, algorithm="test")
        assert release.epsilon == pytest.approx(1.0, rel=1e-6)
    spent = ledger.spent("adult")
    assert spent.epsilon == best(Composed((g, g, g)), DELTA).epsilon
    # mu-GDP composes to sqrt(3) mu (DRS22 Cor. 3.3); its epsilon is far below 3 x 1
    assert spent.epsilon == pytest.approx(gdp_epsilon_closed_form(math.sqrt(3) * g.mu, DELTA),
                                          rel=1e-7)
    assert spent.epsilon < 1.84  # about 1.835, not 3
    assert spent.accountant == "gdp"


def test_heterogeneous_releases_compose_as_the_accountants_compose_them(ledger):
    events = [
        SelfComposed(PoissonSampled(0.02, Gaussian(1.1)), 200),
        Gaussian(4.0),
        EpsilonDelta(0.1, 0.0),
        SelfComposed(Gaussian(8.0), 5),
    ]
    ledger.set_budget("census", epsilon=50.0, delta=DELTA)
    for k, event in enumerate(events, start=1):
        release = ledger.spend("census", event, algorithm=f"step{k}")
        expected = best(Composed(tuple(events[:k])), DELTA)
        assert release.spent_epsilon == expected.epsilon
        assert release.spent_accountant == expected.accountant
        assert release.epsilon == best(event, DELTA).epsilon
    spent = ledger.spent("census")
    assert spent.epsilon == best(Composed(tuple(events)), DELTA).epsilon
    assert spent.event == Composed(tuple(events))
    assert [r.event for r in ledger.releases("census")] == events


def test_spent_at_another_delta(ledger):
    ledger.set_budget("d", epsilon=5.0, delta=DELTA)
    ledger.spend("d", Gaussian(2.0), algorithm="t")
    assert ledger.spent("d", delta=1e-8).epsilon == best(Composed((Gaussian(2.0),)), 1e-8).epsilon


def test_nothing_released_spends_nothing(ledger):
    ledger.set_budget("empty", epsilon=1.0, delta=DELTA)
    assert ledger.spent("empty") is None
    shown = ledger.show("empty")
    assert shown["spent_epsilon"] == 0.0 and shown["releases"] == []
    assert shown["remaining_epsilon"] == 1.0


def test_datasets_are_accounted_separately(ledger):
    ledger.set_budget("a", epsilon=2.0, delta=DELTA)
    ledger.set_budget("b", epsilon=2.0, delta=DELTA)
    ledger.spend("a", Gaussian(4.0), algorithm="t")
    assert ledger.spent("b") is None
    assert ledger.datasets() == ["a", "b"]


# ----------------------------------------------------------------------------- refusals
def test_a_release_over_budget_is_refused_and_nothing_recorded(ledger):
    g = gaussian_at_epsilon(1.0, DELTA)
    two = best(Composed((g, g)), DELTA).epsilon
    three = best(Composed((g, g, g)), DELTA).epsilon
    ledger.set_budget("adult", epsilon=(two + three) / 2, delta=DELTA)
    first = ledger.spend("adult", g, algorithm="fit")
    second = ledger.spend("adult", g, algorithm="fit")
    with pytest.raises(BudgetExceededError, match="nothing was recorded"):
        ledger.spend("adult", g, algorithm="fit")
    assert [r.id for r in ledger.releases("adult")] == [first.id, second.id]
    assert ledger.spent("adult").epsilon == two
    # a larger budget admits it; the failed attempt left no trace in between
    ledger.set_budget("adult", epsilon=three, delta=DELTA)
    third = ledger.spend("adult", g, algorithm="fit")
    assert third.id > second.id and third.spent_epsilon == three
    assert len(ledger.releases("adult")) == 3


def test_budget_exceeded_is_a_value_error(ledger):
    ledger.set_budget("x", epsilon=0.5, delta=DELTA)
    with pytest.raises(ValueError):
        ledger.spend("x", Gaussian(1.0), algorithm="t")
    assert ledger.releases("x") == []


def test_a_dataset_without_budget_is_refused(ledger):
    with pytest.raises(LedgerError, match="no budget is set for dataset 'unknown'"):
        ledger.spend("unknown", Gaussian(1.0), algorithm="t")
    with pytest.raises(LedgerError, match="set-budget"):
        ledger.show("unknown")
    assert ledger.datasets() == []


def test_an_event_no_accountant_bounds_is_refused(ledger):
    ledger.set_budget("x", epsilon=100.0, delta=DELTA)
    with pytest.raises(UnsupportedEventError):
        ledger.spend("x", NonPrivate("raw export"), algorithm="t")
    assert ledger.releases("x") == []


def test_mixed_neighbouring_relations_are_refused(ledger):
    ledger.set_budget("x", epsilon=100.0, delta=DELTA)
    ledger.spend("x", Gaussian(2.0), algorithm="t")
    with pytest.raises(LedgerError, match="different neighbouring relations"):
        ledger.spend("x", Gaussian(2.0, sensitivity=2.0, relation=Neighbouring.REPLACE_ONE),
                     algorithm="t")
    assert len(ledger.releases("x")) == 1


def test_a_stored_event_that_cannot_be_rebuilt_blocks_further_releases(ledger):
    import sqlalchemy as sa

    from noisygd.ledger.storage import releases

    ledger.set_budget("x", epsilon=100.0, delta=DELTA)
    ledger.spend("x", Gaussian(2.0), algorithm="t")
    with ledger._engine.begin() as conn:  # simulate a release written by a future version
        conn.execute(sa.update(releases).values(
            event=json.dumps({"version": 1, "type": "FutureEvent", "fields": {}})))
    with pytest.raises(LedgerError, match="cannot rebuild"):
        ledger.spend("x", Gaussian(2.0), algorithm="t")
    with pytest.raises(LedgerError):
        ledger.spent("x")
    assert len(ledger.releases("x")) == 1  # still listed: history stays readable


@pytest.mark.parametrize("bad, exc", [
    ({"epsilon": 0.0}, ValueError), ({"epsilon": math.inf}, ValueError),
    ({"epsilon": "1"}, TypeError), ({"delta": 0.0}, ValueError), ({"delta": 1.0}, ValueError),
    ({"dataset": ""}, ValueError), ({"dataset": "a\nb"}, ValueError), ({"dataset": 3}, TypeError),
])
def test_set_budget_checks_its_arguments(sqlite_path, bad, exc):
    args = {"dataset": "x", "epsilon": 1.0, "delta": DELTA, **bad}
    with Ledger(sqlite_path) as ledger:
        with pytest.raises(exc):
            ledger.set_budget(**args)
        assert ledger.datasets() == []


def test_spend_checks_its_arguments(sqlite_path):
    with Ledger(sqlite_path) as ledger:
        ledger.set_budget("x", epsilon=1.0, delta=DELTA)
        with pytest.raises(TypeError, match="DpEvent"):
            ledger.spend("x", 1.0, algorithm="t")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="algorithm"):
            ledger.spend("x", Gaussian(5.0), algorithm="")
        assert ledger.releases("x") == []


# -------------------------------------------------------------------- what is recorded
def test_a_release_records_time_algorithm_parameters_event_and_epsilon(ledger):
    ledger.set_budget("adult", epsilon=5.0, delta=DELTA)
    event = SelfComposed(Gaussian(3.0), 4)
    ledger.spend("adult", event, algorithm="DPLogisticRegression/noisy_gd",
                 parameters={"epsilon": 1.0, "max_iter": 4, "clip": None,
                             "cap": math.inf, "ledger": "postgresql://u:secret@db/x"})
    (release,) = ledger.releases("adult")
    assert release.algorithm == "DPLogisticRegression/noisy_gd"
    assert release.parameters == {"epsilon": 1.0, "max_iter": 4, "clip": None, "cap": "inf",
                                  "ledger": "postgresql://u:***@db/x"}
    assert release.event == event
    assert event_from_dict(release.event_data) == event
    assert release.event_description == event.describe()
    assert release.relation == "add_remove"
    own = best(event, DELTA)
    assert (release.epsilon, release.delta, release.accountant) == (
        own.epsilon, DELTA, own.accountant)
    assert release.theorem == own.theorems[own.accountant]
    assert release.time.endswith("+00:00")


def test_show_lists_budget_spend_and_releases(ledger):
    ledger.set_budget("adult", epsilon=4.0, delta=DELTA)
    events = [Gaussian(2.0), Gaussian(3.0)]
    for e in events:
        ledger.spend("adult", e, algorithm="fit")
    shown = ledger.show("adult")
    assert shown["budget_epsilon"] == 4.0 and shown["budget_delta"] == DELTA
    expected = best(Composed(tuple(events)), DELTA)
    assert shown["spent_epsilon"] == expected.epsilon
    assert shown["spent_accountant"] == expected.accountant
    assert shown["spent_by_accountant"] == expected.by_accountant
    assert shown["remaining_epsilon"] == pytest.approx(4.0 - expected.epsilon)
    assert shown["n_releases"] == 2 and len(shown["releases"]) == 2
    assert [r["event_description"] for r in shown["releases"]] == [e.describe() for e in events]
    assert "parameters" not in shown["releases"][0]
    json.dumps(shown, allow_nan=False)


def test_export_holds_enough_to_re_account(ledger):
    ledger.set_budget("adult", epsilon=4.0, delta=DELTA)
    events = [SelfComposed(PoissonSampled(0.05, Gaussian(1.5)), 20), Gaussian(3.0)]
    for e in events:
        ledger.spend("adult", e, algorithm="fit", parameters={"seed": 1})
    exported = json.loads(json.dumps(ledger.export("adult"), allow_nan=False))
    assert exported["format"] == "noisygd-ledger-export" and exported["version"] == 1
    rebuilt = [event_from_dict(r["event"]) for r in exported["releases"]]
    assert rebuilt == events
    again = best(Composed(tuple(rebuilt)), exported["budget_delta"]).epsilon
    assert again == exported["spent_epsilon"]
    assert exported["releases"][0]["parameters"] == {"seed": 1}


def test_overview_lists_every_dataset(ledger):
    ledger.set_budget("a", epsilon=2.0, delta=DELTA)
    ledger.set_budget("b", epsilon=3.0, delta=1e-6)
    ledger.spend("b", Gaussian(2.0), algorithm="t")
    rows = {r["dataset"]: r for r in ledger.overview()["datasets"]}
    assert rows["a"]["n_releases"] == 0 and rows["a"]["spent_epsilon"] == 0.0
    assert rows["b"]["spent_epsilon"] == best(Composed((Gaussian(2.0),)), 1e-6).epsilon


def test_records_survive_reopening(ledger_url):
    with Ledger(ledger_url) as first:
        first.set_budget("a", epsilon=2.0, delta=DELTA)
        first.spend("a", Gaussian(2.0), algorithm="t")
    with Ledger(ledger_url) as second:
        assert [r.event for r in second.releases("a")] == [Gaussian(2.0)]
        assert second.budget("a").epsilon == 2.0


# ------------------------------------------------------------------ estimator helpers
def test_record_release_accepts_a_path_or_an_open_ledger(sqlite_path):
    with Ledger(sqlite_path) as ledger:
        ledger.set_budget("a", epsilon=3.0, delta=DELTA)
        record_release(ledger, "a", Gaussian(2.0), algorithm="t")
    record_release(sqlite_path, "a", Gaussian(2.0), algorithm="t", parameters={"k": 1})
    with Ledger(sqlite_path) as ledger:
        assert len(ledger.releases("a")) == 2


def test_check_ledger_arguments():
    check_ledger_arguments(None, None)
    check_ledger_arguments("ledger.db", "adult")
    with pytest.raises(ValueError, match="needs dataset"):
        check_ledger_arguments("ledger.db", None)
    with pytest.raises(ValueError, match="needs ledger"):
        check_ledger_arguments(None, "adult")
    with pytest.raises(TypeError):
        check_ledger_arguments(3, "adult")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        check_ledger_arguments("ledger.db", "")


# ---------------------------------------------------------------------- storage targets
def test_sqlite_url_and_path_are_the_same_ledger(tmp_path):
    path = tmp_path / "l.db"
    with Ledger(path) as by_path:
        by_path.set_budget("a", epsilon=1.0, delta=DELTA)
    with Ledger(f"sqlite:///{path}") as by_url:
        assert by_url.datasets() == ["a"]


@pytest.mark.parametrize("target", [":memory:", "sqlite://", "sqlite:///:memory:"])
def test_in_memory_ledgers_are_refused(target):
    with pytest.raises(ValueError, match="in-memory"):
        Ledger(target)


def test_unsupported_backend_is_refused():
    with pytest.raises(ValueError, match="not supported"):
        Ledger("mysql://u@localhost/db")


def test_a_missing_folder_or_a_non_file_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError):
        Ledger(tmp_path / "no" / "such" / "l.db")
    with pytest.raises(ValueError, match="not a regular file"):
        Ledger(tmp_path)


def test_a_ledger_of_another_schema_version_is_refused(sqlite_path):
    import sqlalchemy as sa

    from noisygd.ledger.storage import ledger_meta

    with Ledger(sqlite_path) as ledger, ledger._engine.begin() as conn:
        conn.execute(sa.update(ledger_meta).values(value="99"))
    with pytest.raises(ValueError, match="schema version 99"):
        Ledger(sqlite_path)


def test_url_password_is_hidden(postgres_server):
    url = (f"postgresql://{postgres_server.user}:hunter2@{postgres_server.host}:"
           f"{postgres_server.port}/postgres")
    with Ledger(url) as ledger:  # trust authentication ignores the password
        assert "hunter2" not in ledger.url and "hunter2" not in repr(ledger)
        assert ledger.url.startswith("postgresql+psycopg://")


# ------------------------------------------------------------- reserve, then settle
def test_settle_replaces_a_reservation_by_the_fit_event(ledger):
    ledger.set_budget("adult", epsilon=6.0, delta=DELTA)
    earlier = ledger.spend("adult", Gaussian(5.0), algorithm="earlier")
    mu = 0.8  # the fit's total Gaussian-DP budget
    reservation = ledger.spend("adult", Gaussian(1.0 / mu), algorithm="fit")
    later = ledger.spend("adult", Gaussian(6.0), algorithm="later")
    # the fit: a count at mu_c and a full-batch run of 50 steps at mu_k, mu_c^2 + mu_k^2 <= mu^2
    count = Gaussian(1.0 / (0.1 * mu))
    run = SelfComposed(Gaussian(math.sqrt(50) / (math.sqrt(0.99) * mu)), 50)
    fit_event = Composed((count, run))
    settled = ledger.settle(reservation, fit_event)
    assert settled.id == reservation.id and settled.event == fit_event
    assert event_from_dict(settled.reserved_event_data) == Gaussian(1.0 / mu)
    assert settled.settled_at is not None
    assert settled.epsilon == best(fit_event, DELTA).epsilon
    assert settled.spent_epsilon == best(Composed((Gaussian(5.0), fit_event)), DELTA).epsilon
    events = [Gaussian(5.0), fit_event, Gaussian(6.0)]
    assert [r.event for r in ledger.releases("adult")] == events
    assert ledger.spent("adult").epsilon == best(Composed(tuple(events)), DELTA).epsilon
    # the reservation dominated the fit, so settling never raised the spend
    assert ledger.spent("adult").epsilon <= later.spent_epsilon * (1 + 1e-9)
    assert ledger.releases("adult")[0] == earlier
    with pytest.raises(LedgerError, match="already settled"):
        ledger.settle(reservation.id, fit_event)


def test_settle_over_budget_keeps_the_reservation(ledger):
    ledger.set_budget("adult", epsilon=3.0, delta=DELTA)
    reservation = ledger.spend("adult", Gaussian(2.0), algorithm="fit")
    with pytest.raises(BudgetExceededError, match="reservation stays recorded"):
        ledger.settle(reservation, Gaussian(0.5))
    (kept,) = ledger.releases("adult")
    assert kept == reservation and kept.settled_at is None


def test_settle_checks_its_arguments(ledger):
    with pytest.raises(LedgerError, match="no release with id 99"):
        ledger.settle(99, Gaussian(1.0))
    with pytest.raises(TypeError):
        ledger.settle("1", Gaussian(1.0))  # type: ignore[arg-type]


def test_preview_records_nothing_and_check_refuses_like_spend(ledger):
    ledger.set_budget("adult", epsilon=3.0, delta=DELTA)
    ledger.spend("adult", Gaussian(2.0), algorithm="fit")
    preview = ledger.preview("adult", Gaussian(2.0))
    assert preview.epsilon == best(Composed((Gaussian(2.0), Gaussian(2.0))), DELTA).epsilon
    with pytest.raises(BudgetExceededError, match="already spent"):
        ledger.preview("adult", Gaussian(0.5), check=True)
    assert ledger.preview("adult", Gaussian(0.5)).epsilon > 3.0  # without check: a number
    assert len(ledger.releases("adult")) == 1


def test_opened_ledger_keeps_an_open_ledger_open_and_closes_one_it_opened(tmp_path,
                                                                           monkeypatch):
    from noisygd.ledger import opened_ledger

    closed: list[Ledger] = []
    monkeypatch.setattr(Ledger, "close", lambda self: closed.append(self))
    path = tmp_path / "l.db"
    with Ledger(str(path)) as mine:
        with opened_ledger(mine) as same:
            assert same is mine
        assert closed == []  # the caller's ledger is not closed by the helper
        mine.set_budget("d", epsilon=1.0, delta=DELTA)
    closed.clear()
    with opened_ledger(str(path)) as fresh:
        assert isinstance(fresh, Ledger) and fresh.show("d")["budget_epsilon"] == 1.0
    assert closed == [fresh]
