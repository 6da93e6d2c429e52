"""``noisygd ledger show|set-budget|history|export`` (called in-process through ``main``)."""

from __future__ import annotations

import argparse
import json
import math
import os

import pytest
from scipy import optimize, stats

from noisygd.accounting import Composed, Gaussian, best
from noisygd.accounting.serialization import event_from_dict
from noisygd.ledger import Ledger
from noisygd.ledger.cli import add_ledger_commands, cmd_ledger, main

DELTA = 1e-5


def gdp_epsilon_closed_form(mu: float, delta: float) -> float:
    """Epsilon of mu-GDP at delta (Dong, Roth and Su 2022, Cor. 2.13), by scipy alone."""
    def gap(eps: float) -> float:
        return (stats.norm.cdf(-eps / mu + mu / 2)
                - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta)

    return optimize.brentq(gap, 0.0, 100.0, xtol=1e-14, rtol=1e-13)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_set_budget_then_show_json(capsys, ledger_url):
    code, out, _ = run(capsys, "set-budget", "--ledger", ledger_url, "--dataset", "adult",
                       "--epsilon", "3", "--delta", "1e-5", "--json")
    assert code == 0 and json.loads(out)["budget_epsilon"] == 3.0
    with Ledger(ledger_url) as ledger:
        for z in (2.0, 3.0):
            ledger.spend("adult", Gaussian(z), algorithm="fit")
    code, out, _ = run(capsys, "show", "--ledger", ledger_url, "--dataset", "adult", "--json")
    assert code == 0
    shown = json.loads(out)
    assert shown["budget_epsilon"] == 3.0 and shown["budget_delta"] == DELTA
    assert shown["spent_epsilon"] == best(Composed((Gaussian(2.0), Gaussian(3.0))),
                                          DELTA).epsilon
    # Gaussian(z) is (1/z)-GDP; mu^2 adds (DRS22 Cor. 3.3): mu = sqrt(1/4 + 1/9)
    assert shown["spent_epsilon"] == pytest.approx(
        gdp_epsilon_closed_form(math.sqrt(1 / 4 + 1 / 9), DELTA), rel=1e-7)
    assert [r["algorithm"] for r in shown["releases"]] == ["fit", "fit"]


def test_show_text_names_the_accountant(capsys, sqlite_path):
    run(capsys, "set-budget", "--ledger", sqlite_path, "--dataset", "d", "--epsilon", "2",
        "--delta", "1e-6")
    with Ledger(sqlite_path) as ledger:
        ledger.spend("d", Gaussian(4.0), algorithm="fit")
    code, out, _ = run(capsys, "show", "--ledger", sqlite_path, "--dataset", "d")
    assert code == 0
    assert "budget: epsilon = 2 at delta = 1e-06" in out
    assert "composed by gdp" in out and "#1" in out


def test_show_without_dataset_lists_all(capsys, sqlite_path):
    for name in ("a", "b"):
        run(capsys, "set-budget", "--ledger", sqlite_path, "--dataset", name, "--epsilon", "1",
            "--delta", "1e-5")
    code, out, _ = run(capsys, "show", "--ledger", sqlite_path, "--json")
    assert code == 0
    assert [d["dataset"] for d in json.loads(out)["datasets"]] == ["a", "b"]


def test_history_lists_releases_oldest_first(capsys, sqlite_path):
    run(capsys, "set-budget", "--ledger", sqlite_path, "--dataset", "d", "--epsilon", "5",
        "--delta", "1e-5")
    with Ledger(sqlite_path) as ledger:
        ledger.spend("d", Gaussian(3.0), algorithm="first")
        ledger.spend("d", Gaussian(4.0), algorithm="second")
    code, out, _ = run(capsys, "history", "--ledger", sqlite_path, "--dataset", "d")
    assert code == 0 and out.index("first") < out.index("second")
    assert "Gaussian(noise_multiplier=3" in out
    code, out, _ = run(capsys, "history", "--ledger", sqlite_path, "--dataset", "d", "--json")
    releases = json.loads(out)["releases"]
    assert [r["algorithm"] for r in releases] == ["first", "second"]
    assert releases[1]["spent_epsilon"] == best(Composed((Gaussian(3.0), Gaussian(4.0))),
                                                DELTA).epsilon
    # mu = sqrt(1/9 + 1/16) = 5/12 (DRS22 Cor. 3.3); the first release alone: mu = 1/3
    assert releases[1]["spent_epsilon"] == pytest.approx(
        gdp_epsilon_closed_form(5 / 12, DELTA), rel=1e-7)
    assert releases[0]["spent_epsilon"] == pytest.approx(
        gdp_epsilon_closed_form(1 / 3, DELTA), rel=1e-7)


def test_export_to_stdout_and_to_a_file(capsys, tmp_path, sqlite_path):
    run(capsys, "set-budget", "--ledger", sqlite_path, "--dataset", "d", "--epsilon", "5",
        "--delta", "1e-5")
    with Ledger(sqlite_path) as ledger:
        ledger.spend("d", Gaussian(3.0), algorithm="fit", parameters={"seed": 7})
    code, out, _ = run(capsys, "export", "--ledger", sqlite_path, "--dataset", "d")
    assert code == 0
    exported = json.loads(out)
    assert event_from_dict(exported["releases"][0]["event"]) == Gaussian(3.0)
    target = tmp_path / "export.json"
    code, out, _ = run(capsys, "export", "--ledger", sqlite_path, "--dataset", "d", "--out",
                       str(target), "--json")
    assert code == 0 and json.loads(out)["written"] == str(target)
    written = json.loads(target.read_text())
    assert written["releases"] == exported["releases"]
    assert sorted(os.listdir(tmp_path)) == ["export.json", "ledger.db"]  # no temporary left


@pytest.mark.parametrize("kind", ["symlink", "fifo", "folder"])
def test_export_refuses_to_replace_anything_but_a_regular_file(capsys, tmp_path, sqlite_path,
                                                               kind):
    run(capsys, "set-budget", "--ledger", sqlite_path, "--dataset", "d", "--epsilon", "5",
        "--delta", "1e-5")
    target = tmp_path / "out"
    if kind == "symlink":
        (tmp_path / "real").write_text("keep")
        target.symlink_to(tmp_path / "real")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    before = sorted(os.listdir(tmp_path))
    code, _, err = run(capsys, "export", "--ledger", sqlite_path, "--dataset", "d", "--out",
                       str(target))
    assert code == 2 and "not a regular file" in err
    assert sorted(os.listdir(tmp_path)) == before
    if kind == "symlink":
        assert target.is_symlink() and (tmp_path / "real").read_text() == "keep"


def test_errors_are_one_line_and_exit_2(capsys, sqlite_path):
    code, out, err = run(capsys, "show", "--ledger", sqlite_path, "--dataset", "nope")
    assert code == 2 and out == ""
    assert err.startswith("noisygd ledger: error: no budget is set for dataset 'nope'")
    code, _, err = run(capsys, "set-budget", "--ledger", sqlite_path, "--dataset", "d",
                       "--epsilon", "-1", "--delta", "1e-5")
    assert code == 2 and "epsilon" in err


def test_ledger_defaults_to_the_environment(capsys, monkeypatch, sqlite_path):
    monkeypatch.setenv("NOISYGD_LEDGER", sqlite_path)
    code, _, _ = run(capsys, "set-budget", "--dataset", "d", "--epsilon", "1", "--delta", "1e-5")
    assert code == 0
    with Ledger(sqlite_path) as ledger:
        assert ledger.datasets() == ["d"]


def test_add_ledger_commands_wires_into_a_parent_parser(capsys, sqlite_path):
    parser = argparse.ArgumentParser(prog="noisygd")
    sub = parser.add_subparsers(dest="command", required=True)
    add_ledger_commands(sub)
    args = parser.parse_args(["ledger", "set-budget", "--ledger", sqlite_path, "--dataset", "d",
                              "--epsilon", "2", "--delta", "1e-5", "--json"])
    assert args.command == "ledger" and args.ledger_command == "set-budget"
    out = cmd_ledger(args)
    assert capsys.readouterr().out == ""  # with --json the caller prints the object
    assert out["budget_epsilon"] == 2.0 and out["spent_epsilon"] == 0.0
    args = parser.parse_args(["ledger", "show", "--ledger", sqlite_path, "--dataset", "d"])
    cmd_ledger(args)
    assert "budget: epsilon = 2" in capsys.readouterr().out


def test_an_unreachable_database_is_an_os_error(capsys):
    pytest.importorskip("psycopg", reason="psycopg 3 is not installed")
    code, _, err = run(capsys, "show", "--ledger",
                       "postgresql+psycopg://nobody@127.0.0.1:1/none")
    assert code == 2 and "ledger database error" in err
