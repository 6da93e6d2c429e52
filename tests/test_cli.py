"""The noisygd command line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from noisygd.accounting import best
from noisygd.accounting.events import Gaussian, SelfComposed
from noisygd.cli import main


def _run(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_account_json_schema_and_value(capsys):
    code, out, _ = _run(
        capsys,
        ["account", "--noise-multiplier", "4", "--steps", "500", "--delta", "1e-5", "--json"],
    )
    assert code == 0
    payload = json.loads(out)
    for key in ("epsilon", "delta", "accountant", "by_accountant"):
        assert key in payload
    expected = best(SelfComposed(Gaussian(4.0), 500), 1e-5)
    assert payload["epsilon"] == pytest.approx(expected.epsilon, rel=1e-12)
    assert payload["accountant"] == expected.accountant
    assert payload["epsilon"] == min(payload["by_accountant"].values())
    assert payload["delta"] == 1e-5


def test_account_sensitivity_scales_mu(capsys):
    # Sensitivity 2 with noise 8 is the same Gaussian mechanism as sensitivity 1 with noise 4.
    _, a, _ = _run(capsys, ["account", "--noise-multiplier", "4", "--steps", "10",
                            "--delta", "1e-6", "--json"])
    _, b, _ = _run(capsys, ["account", "--noise-multiplier", "8", "--sensitivity", "2",
                            "--steps", "10", "--delta", "1e-6", "--json"])
    assert json.loads(a)["by_accountant"]["gdp"] == pytest.approx(
        json.loads(b)["by_accountant"]["gdp"], rel=1e-9
    )


def test_account_human_output_names_the_accountant(capsys):
    code, out, _ = _run(capsys, ["account", "--noise-multiplier", "2", "--steps", "50",
                                 "--delta", "1e-5"])
    assert code == 0
    assert "tightest" in out and "gdp" in out


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--noise-multiplier", "-1", "--steps", "5", "--delta", "1e-5"], "noise-multiplier"),
        (["--noise-multiplier", "1", "--steps", "0", "--delta", "1e-5"], "steps"),
        (["--noise-multiplier", "1", "--steps", "5", "--delta", "1.5"], "delta"),
        (["--noise-multiplier", "1", "--steps", "5", "--delta", "1e-5", "--batch-size", "4"],
         "population"),
    ],
)
def test_account_bad_input(capsys, argv, match):
    code, _, err = _run(capsys, ["account", *argv])
    assert code == 2
    assert match in err


def _write_csv(path, n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) / 2
    y = (X[:, 0] - X[:, 1] > 0).astype(int)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["label"] = y
    frame.to_csv(path, index=False)


def test_fit_writes_model_json(tmp_path, capsys):
    data = tmp_path / "train.csv"
    out = tmp_path / "model.json"
    _write_csv(data)
    code, stdout, err = _run(
        capsys,
        ["fit", str(data), "--target", "label", "--classes", "0,1", "--out", str(out),
         "--seed", "1", "--json"],
    )
    assert code == 0, err
    model = json.loads(out.read_text())
    assert model["feature_names"] == ["a", "b", "c"]
    assert len(model["coef"]) == 3
    assert model["privacy"]["epsilon"] <= 1.0 * (1 + 1e-9)
    assert json.loads(stdout)["out"] == str(out)


def test_fit_parquet(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    csv = tmp_path / "t.csv"
    _write_csv(csv)
    pq = tmp_path / "t.parquet"
    pd.read_csv(csv).to_parquet(pq)
    code, _, err = _run(capsys, ["fit", str(pq), "--target", "label", "--classes", "0,1",
                                 "--out", str(tmp_path / "m.json")])
    assert code == 0, err


def test_fit_unreadable_file_names_it(tmp_path, capsys):
    missing = tmp_path / "nope.csv"
    code, _, err = _run(capsys, ["fit", str(missing), "--target", "label",
                                 "--out", str(tmp_path / "m.json")])
    assert code == 2
    assert "nope.csv" in err
    assert not (tmp_path / "m.json").exists()


def test_demo_json(capsys):
    code, out, _ = _run(capsys, ["demo", "--seeds", "2", "--json"])
    assert code == 0
    payload = json.loads(out)
    assert payload["privacy"]["epsilon"] <= 1.0 * (1 + 1e-9)
    assert payload["privacy"]["accountant"]
    assert payload["nonprivate_test_accuracy"] > 0.9
    assert payload["private_test_accuracy_mean"] > 0.8


def test_help_has_examples(capsys):
    for cmd in ("demo", "fit", "account", "reproduce", "ledger"):
        with pytest.raises(SystemExit) as info:
            main([cmd, "--help"])
        assert info.value.code == 0
        assert "examples:" in capsys.readouterr().out


def test_account_sampled_and_tree_match_the_events(capsys):
    from noisygd.accounting.events import (
        Neighbouring,
        PoissonSampled,
        SampledWithoutReplacement,
    )
    from noisygd.accounting.tree import tree_event

    cases = [
        (["--sampling-rate", "0.01"], SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)),
        (
            ["--batch-size", "100", "--population", "10000"],
            SelfComposed(
                SampledWithoutReplacement(
                    100, 10000, Gaussian(1.0, sensitivity=2.0, relation=Neighbouring.REPLACE_ONE)
                ),
                1000,
            ),
        ),
        (["--mechanism", "tree", "--epochs", "2"], tree_event(1.0, 500, 2)),
    ]
    for extra, event in cases:
        code, out, err = _run(capsys, ["account", "--noise-multiplier", "1", "--steps", "1000",
                                       "--delta", "1e-5", "--json", *extra])
        assert code == 0, err
        payload = json.loads(out)
        expected = best(event, 1e-5)
        assert payload["epsilon"] == pytest.approx(expected.epsilon, rel=1e-9)
        assert payload["accountant"] == expected.accountant


def test_reproduce_dispatches(tmp_path, capsys):
    code, _, err = _run(capsys, ["reproduce", "chourasia2021-figures", "--out-dir", str(tmp_path)])
    assert code == 0, err
    assert any(p.suffix == ".csv" for p in tmp_path.iterdir())


@pytest.mark.parametrize(
    ("extra", "event_name"),
    [
        (["--method", "noisy_sgd"], "PoissonSampled"),
        (["--method", "dp_ftrl", "--relation", "replace_one",
          "--method-options", '{"epochs": 2}'], "TreeAggregation"),
        (["--method", "output_perturbation", "--relation", "replace_one", "--l2", "0.1"],
         "OutputPerturbation"),
    ],
)
def test_fit_other_methods(tmp_path, capsys, extra, event_name):
    data = tmp_path / "train.csv"
    _write_csv(data, n=1500)
    out = tmp_path / "m.json"
    code, _, err = _run(capsys, ["fit", str(data), "--target", "label", "--classes", "0,1",
                                 "--out", str(out), "--seed", "0", *extra])
    assert code == 0, err
    privacy = json.loads(out.read_text())["privacy"]
    assert event_name in privacy["event"]
    assert privacy["epsilon"] <= 1.0 + 1e-9


def test_fit_bad_method_options(tmp_path, capsys):
    data = tmp_path / "train.csv"
    _write_csv(data)
    code, _, err = _run(capsys, ["fit", str(data), "--target", "label", "--classes", "0,1",
                                 "--out", str(tmp_path / "m.json"), "--method-options", "{oops"])
    assert code == 2
    assert "method-options" in err


def test_reproduce_passes_help_to_the_reproduction(capsys):
    with pytest.raises(SystemExit) as info:
        main(["reproduce", "zhang2017-table3", "--help"])
    assert info.value.code == 0
    assert "--rounds" in capsys.readouterr().out


def test_fit_unknown_method_lists_the_solvers(tmp_path, capsys):
    data = tmp_path / "train.csv"
    _write_csv(data)
    code, _, err = _run(capsys, ["fit", str(data), "--target", "label", "--classes", "0,1",
                                 "--out", str(tmp_path / "m.json"), "--method", "magic"])
    assert code == 2
    assert "noisy_gd" in err and "rrpsgd" in err


def test_demo_refuses_zero_seeds(capsys):
    code, _, err = _run(capsys, ["demo", "--seeds", "0"])
    assert code == 2 and "--seeds" in err


# ------------------------------------------------------------------------- ledger
def _ledger(capsys, *argv):
    return _run(capsys, ["ledger", *argv])


def test_ledger_set_budget_and_show_json(tmp_path, capsys):
    ledger = str(tmp_path / "ledger.db")
    code, _, err = _ledger(capsys, "set-budget", "--ledger", ledger, "--dataset", "adult",
                           "--epsilon", "3", "--delta", "1e-5")
    assert code == 0, err
    code, out, err = _ledger(capsys, "show", "--ledger", ledger, "--dataset", "adult", "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["budget_epsilon"] == 3.0 and shown["budget_delta"] == 1e-5
    assert shown["spent_epsilon"] == 0.0 and shown["releases"] == []


def test_fit_records_each_release_and_show_composes_them(tmp_path, capsys):
    from noisygd.accounting import Composed
    from noisygd.accounting.serialization import event_from_dict

    data = tmp_path / "train.csv"
    _write_csv(data)
    ledger = str(tmp_path / "ledger.db")
    assert _ledger(capsys, "set-budget", "--ledger", ledger, "--dataset", "train",
                   "--epsilon", "2", "--delta", "1e-5")[0] == 0
    for seed in ("1", "2"):
        out = tmp_path / f"m{seed}.json"
        code, _, err = _run(capsys, ["fit", str(data), "--target", "label", "--classes", "0,1",
                                     "--out", str(out), "--seed", seed, "--ledger", ledger,
                                     "--dataset", "train"])
        assert code == 0, err
        model = json.loads(out.read_text())
        assert model["ledger_release"]["dataset"] == "train"
        assert "ledger" not in model["params"] and model["params"]["dataset"] == "train"
    code, out, err = _ledger(capsys, "show", "--ledger", ledger, "--dataset", "train", "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert len(shown["releases"]) == 2
    assert [r["epsilon"] for r in shown["releases"]] == pytest.approx([1.0, 1.0], rel=1e-9)
    # the spend is the accountants' composition of the stored events, not 1 + 1
    code, out, _ = _ledger(capsys, "export", "--ledger", ledger, "--dataset", "train", "--json")
    events = [event_from_dict(r["event"]) for r in json.loads(out)["releases"]]
    composed = best(Composed(tuple(events)), 1e-5)
    assert shown["spent_epsilon"] == pytest.approx(composed.epsilon, rel=1e-12)
    assert 1.0 < shown["spent_epsilon"] < 1.5
    code, out, _ = _ledger(capsys, "history", "--ledger", ledger, "--dataset", "train")
    assert code == 0 and out.count("DPLogisticRegression/noisy_gd") == 2


def test_fit_over_budget_exits_2_before_reading_and_writes_nothing(tmp_path, capsys):
    data = tmp_path / "train.csv"
    _write_csv(data)
    ledger = str(tmp_path / "ledger.db")
    _ledger(capsys, "set-budget", "--ledger", ledger, "--dataset", "train", "--epsilon", "0.5",
            "--delta", "1e-5")
    out = tmp_path / "m.json"
    code, _, err = _run(capsys, ["fit", str(data), "--target", "label", "--classes", "0,1",
                                 "--out", str(out), "--ledger", ledger, "--dataset", "train"])
    assert code == 2
    assert "budget" in err and "nothing was recorded" in err
    assert not out.exists()
    code, stdout, _ = _ledger(capsys, "show", "--ledger", ledger, "--dataset", "train", "--json")
    assert json.loads(stdout)["releases"] == []


@pytest.mark.parametrize(("argv", "match"), [
    (["--ledger", "L.db"], "--dataset"),
    (["--dataset", "train"], "--ledger"),
])
def test_fit_needs_both_ledger_and_dataset(tmp_path, capsys, monkeypatch, argv, match):
    monkeypatch.delenv("NOISYGD_LEDGER", raising=False)
    data = tmp_path / "train.csv"
    _write_csv(data)
    code, _, err = _run(capsys, ["fit", str(data), "--target", "label", "--classes", "0,1",
                                 "--out", str(tmp_path / "m.json"), *argv])
    assert code == 2 and match in err
    assert not (tmp_path / "m.json").exists()


def test_ledger_errors_exit_2(tmp_path, capsys):
    ledger = str(tmp_path / "ledger.db")
    code, _, err = _ledger(capsys, "show", "--ledger", ledger, "--dataset", "nope", "--json")
    assert code == 2 and "no budget" in err and err.count("\n") == 1
    code, _, err = _ledger(capsys, "set-budget", "--ledger", ledger, "--dataset", "d",
                           "--epsilon", "-1", "--delta", "1e-5")
    assert code == 2 and "epsilon" in err
    code, _, err = _ledger(capsys, "show", "--ledger", "mysql://u@h/db", "--dataset", "d")
    assert code == 2 and "ledger" in err


def test_ledger_export_out_writes_a_regular_file_only(tmp_path, capsys):
    ledger = str(tmp_path / "ledger.db")
    _ledger(capsys, "set-budget", "--ledger", ledger, "--dataset", "d", "--epsilon", "1",
            "--delta", "1e-6")
    target = tmp_path / "export.json"
    code, _, err = _ledger(capsys, "export", "--ledger", ledger, "--dataset", "d", "--out",
                           str(target))
    assert code == 0, err
    assert json.loads(target.read_text())["budget_epsilon"] == 1.0
    link = tmp_path / "link.json"
    link.symlink_to(target)
    code, _, err = _ledger(capsys, "export", "--ledger", ledger, "--dataset", "d", "--out",
                           str(link))
    assert code == 2 and "not a regular file" in err
    assert link.is_symlink()


def test_commands_other_than_ledger_do_not_import_the_ledger():
    import subprocess
    import sys

    code = ("import sys; from noisygd.cli import main; "
            "main(['account', '--noise-multiplier', '4', '--steps', '5', '--delta', '1e-5', "
            "'--json']); print('sqlalchemy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().endswith("False")
