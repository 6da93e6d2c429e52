"""The noisygd command line."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pandas as pd
import pytest

from noisygd.accounting import best
from noisygd.accounting.events import Gaussian, SelfComposed
from noisygd.cli import main
from noisygd.estimators import CONDITIONING_RELEASES, FEATURE_RANGE_RELEASES
from noisygd.exceptions import PrivacyLeakWarning


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
    # 500 Gaussian steps at z = 4 are one Gaussian of noise 4 / sqrt(500): its exact epsilon
    # by dp_accounting's analytic Gaussian (Balle and Wang 2018), an independent library
    import dp_accounting

    peer = dp_accounting.get_epsilon_gaussian(4.0 / math.sqrt(500), 1e-5)
    assert payload["epsilon"] == pytest.approx(peer, rel=1e-6)


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


def test_fit_says_which_method_ran_and_what_it_released_before_the_run(tmp_path, capsys):
    """The text output names the method (with method='auto', the rule's reason), every
    release before the run in order, and the source of n, each as the fitted model's
    fit_info_ records it; with a schema (declared bounds) nothing is released before the run."""
    from noisygd.cli import fit_summary_lines
    from noisygd.estimators import DPLogisticRegression

    data = tmp_path / "train.csv"
    _write_csv(data, n=1000)
    argv = ["fit", str(data), "--target", "label", "--classes", "0,1", "--seed", "1"]
    code, stdout, err = _run(capsys, [*argv, "--out", str(tmp_path / "m.json")])
    assert code == 0, err
    frame = pd.read_csv(data)
    est = DPLogisticRegression(classes=[0, 1], random_state=1).fit(
        frame[["a", "b", "c"]].to_numpy(), frame["label"].to_numpy())
    names = [r["name"] for r in est.fit_info_["pre_releases"]]
    assert names == [*FEATURE_RANGE_RELEASES, *CONDITIONING_RELEASES, "feature_scale"]
    lines = fit_summary_lines(est)
    assert lines[0] == f"method: {est.fit_info_['method']} (method='auto': " \
                       f"{est.fit_info_['method_choice']['rule']})"
    k = len(names)
    assert [line.split(":")[1].strip() for line in lines[1:1 + k]] == names
    assert lines[1 + k] == f"number of rows: {est.fit_info_['n_samples_source']}"
    assert all(line in stdout.splitlines() for line in lines)
    # the summary comes before the privacy lines, which name the accountant
    assert stdout.index(lines[0]) < stdout.index("gdp: eps =")


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
    code, _, err = _run(capsys, ["fit", str(missing), "--target", "label", "--classes", "0,1",
                                 "--out", str(tmp_path / "m.json")])
    assert code == 2
    assert "nope.csv" in err
    assert not (tmp_path / "m.json").exists()


def test_a_classifier_without_a_schema_needs_classes(tmp_path, capsys):
    """The label set is declared public: without --classes the fit is refused (exit 2) before
    the data is read (here the file does not exist), whatever the target (before: the label
    set was read from the data, and an integer regression target fitted as a many-class
    model whose class list showed the target's minimum and maximum)."""
    missing = tmp_path / "nope.csv"
    out = tmp_path / "m.json"
    for extra in ([], ["--model", "logistic"], ["--classes", ""], ["--classes", " "]):
        code, _, err = _run(capsys, ["fit", str(missing), "--target", "y", *extra,
                                     "--out", str(out)])
        assert code == 2, err
        assert "needs --classes" in err and "--model linear" in err, err
        assert "nope.csv" not in err  # refused before the file is looked at
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 2))
    data = tmp_path / "intreg.csv"
    pd.DataFrame({"a": x[:, 0], "b": x[:, 1],
                  "y": np.round(5 * x[:, 0] - 3 * x[:, 1]).astype(int)}).to_csv(data, index=False)
    code, _, err = _run(capsys, ["fit", str(data), "--target", "y", "--out", str(out)])
    assert code == 2 and "needs --classes" in err, err
    assert not out.exists()
    code, _, err = _run(capsys, ["fit", str(data), "--target", "y", "--model", "linear",
                                 "--target-bound", "20", "--seed", "0", "--out", str(out)])
    assert code == 0, err


def test_classes_are_stripped_and_refused_when_fewer_than_two(tmp_path, capsys):
    data = tmp_path / "t.csv"
    _write_csv(data)
    frame = pd.read_csv(data)
    frame["label"] = np.where(frame["label"] == 1, "yes", "no")
    frame.to_csv(data, index=False)
    out = tmp_path / "m.json"
    code, _, err = _run(capsys, ["fit", str(data), "--target", "label", "--classes",
                                 " no , yes ", "--seed", "0", "--out", str(out)])
    assert code == 0, err
    model = json.loads(out.read_text())
    assert model["classes"] == ["no", "yes"] and model["params"]["classes"] == ["no", "yes"]
    for classes in ("yes", "yes,yes", "no,,yes"):
        code, _, err = _run(capsys, ["fit", str(data), "--target", "label", "--classes",
                                     classes, "--out", str(tmp_path / "m2.json")])
        assert code == 2 and "--classes" in err and "classes=[" not in err, err
    assert not (tmp_path / "m2.json").exists()


def test_a_target_outside_classes_names_the_column_and_the_fix(tmp_path, capsys):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    data = tmp_path / "t.csv"
    secret = 0.123456789
    pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "t": x[:, 0] + secret}).to_csv(data, index=False)
    out = tmp_path / "m.json"
    code, _, err = _run(capsys, ["fit", str(data), "--target", "t", "--classes", "0,1",
                                 "--out", str(out)])
    assert code == 2, err
    assert "'t'" in err and "--model linear" in err and "continuous" in err, err
    assert "0.12345" not in err and not out.exists()
    labels = tmp_path / "l.csv"
    pd.DataFrame({"a": x[:, 0], "b": x[:, 1],
                  "t": rng.choice(["no", "yes", "maybe"], 200)}).to_csv(labels, index=False)
    code, _, err = _run(capsys, ["fit", str(labels), "--target", "t", "--classes", "no,yes",
                                 "--out", str(out)])
    assert code == 2, err
    assert "'t'" in err and "not in --classes no,yes" in err and "maybe" not in err, err


def test_boolean_classes_match_a_true_false_target(tmp_path, capsys):
    """A True/False column is read as booleans: --classes True,False (any case) declares
    them (before: 'not in classes=['False', 'True']')."""
    data = tmp_path / "t.csv"
    _write_csv(data)
    frame = pd.read_csv(data)
    frame["label"] = frame["label"].astype(bool)
    frame.to_csv(data, index=False)
    assert "True" in data.read_text()
    out = tmp_path / "m.json"
    code, _, err = _run(capsys, ["fit", str(data), "--target", "label", "--classes",
                                 "false,True", "--seed", "0", "--out", str(out)])
    assert code == 0, err
    assert json.loads(out.read_text())["classes"] == [False, True]


def test_demo_json(capsys):
    code, out, _ = _run(capsys, ["demo", "--seeds", "2", "--json"])
    assert code == 0
    payload = json.loads(out)
    assert payload["privacy"]["epsilon"] <= 1.0 * (1 + 1e-9)
    assert payload["privacy"]["accountant"]
    assert payload["nonprivate_test_accuracy"] > 0.9
    assert payload["private_test_accuracy_mean"] > 0.8


def test_help_has_examples(capsys):
    for cmd in ("demo", "fit", "predict", "schema", "plan", "account", "reproduce", "ledger"):
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


def test_demo_text_names_the_method_and_the_releases_before_the_run(capsys):
    """The text output shows the last model's method and each release it paid for before the
    run (the same lines as noisygd fit), then its privacy with the accountant named."""
    code, out, _ = _run(capsys, ["demo", "--seeds", "1"])
    assert code == 0
    lines = out.splitlines()
    start = lines.index("the last model:")
    assert lines[start + 1].startswith("method: ")
    released = [s for s in lines[start + 2:] if s.startswith("released before the run: ")]
    assert [s.split(":")[1].strip() for s in released] == [
        *FEATURE_RANGE_RELEASES, *CONDITIONING_RELEASES, "feature_scale"]
    assert any(s.lstrip().startswith("gdp: eps = ") for s in lines[start:])


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
    # each fit: its private feature range, conditioning and per-feature scale (the
    # default without bounds), then its run
    per = [*FEATURE_RANGE_RELEASES, *CONDITIONING_RELEASES, "feature_scale", "noisy_gd"]
    assert [r["algorithm"].split("/")[1] for r in shown["releases"]] == per * 2
    # the spend is the accountants' composition of the stored events, not 1 + 1
    code, out, _ = _ledger(capsys, "export", "--ledger", ledger, "--dataset", "train", "--json")
    events = [event_from_dict(r["event"]) for r in json.loads(out)["releases"]]
    k = len(per)
    per_fit = [best(Composed(tuple(events[i:i + k])), 1e-5).epsilon for i in (0, k)]
    assert per_fit == pytest.approx([1.0, 1.0], rel=1e-6)
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


# --------------------------------------------------------------------------- schema, predict

SCHEMA_TOML = """
row_norm_bound = 1.0

[file]
na_values = ["?"]

[target]
name = "subscribed"
labels = ["no", "yes"]

[columns.age]
kind = "numeric"
bounds = [18, 100]

[columns.job]
kind = "categorical"
levels = ["admin", "tech", "other"]
unknown = "other"
missing = "indicator"

[columns.balance]
kind = "numeric"
bounds = [-1e5, 1e5]
transform = "signed_log1p"
missing = 0

[columns.row_id]
kind = "ignore"
"""

SECRET = "SECRET-CELL-91c2"


def _raw_frame(n=600, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.uniform(15, 110, size=n).round(1)
    job = rng.choice(["admin", "tech", "other", "pilot", "?"], size=n)
    balance = rng.normal(0, 3e4, size=n).round(0)
    score = (age - 55) / 20 + (job == "tech") - 0.5 * (job == "admin")
    y = np.where(score + rng.normal(size=n) > 0, "yes", "no")
    frame = pd.DataFrame({"row_id": np.arange(n), "age": age, "job": job,
                          "balance": balance.astype(object), "subscribed": y})
    frame.loc[::7, "balance"] = "?"
    return frame


def _schema_files(tmp_path, frame=None, schema=SCHEMA_TOML, name="data.csv"):
    data = tmp_path / name
    (frame if frame is not None else _raw_frame()).to_csv(data, index=False)
    sch = tmp_path / "s.toml"
    sch.write_text(schema)
    return data, sch


def _fit_args(data, sch, out, *extra):
    return ["fit", str(data), "--schema", str(sch), "--epsilon", "2", "--delta", "1e-6",
            "--seed", "3", "--out", str(out), *extra]


def test_fit_with_schema_and_predict_round_trip(tmp_path, capsys):
    data, sch = _schema_files(tmp_path)
    model = tmp_path / "model.json"
    code, _, err = _run(capsys, _fit_args(data, sch, model))
    assert code == 0, err
    payload = json.loads(model.read_text())
    assert payload["format"] == "noisygd-model/1"
    assert payload["model"] == "DPLogisticRegression"
    assert payload["labels"] == ["no", "yes"]
    assert payload["schema"]["columns"]["job"]["levels"] == ["admin", "tech", "other"]
    assert payload["feature_names"] == ["age", "job=admin", "job=tech", "job=other",
                                        "job=<missing>", "balance"]
    assert payload["privacy"]["epsilon"] <= 2.0 * (1 + 1e-9)
    assert payload["privacy"]["delta"] == 1e-6
    assert payload["event"]["type"] == "Composed"
    assert payload["report"]["paid_for"]  # the noisy row count
    # the same seed gives the same model
    model2 = tmp_path / "model2.json"
    assert _run(capsys, _fit_args(data, sch, model2))[0] == 0
    assert json.loads(model2.read_text())["coef"] == payload["coef"]

    preds = tmp_path / "pred.csv"
    code, _, err = _run(capsys, ["predict", str(model), str(data), "--out", str(preds)])
    assert code == 0, err
    out = pd.read_csv(preds, keep_default_na=False)
    assert list(out.columns) == ["prediction", "proba_no", "proba_yes"]
    assert len(out) == 600
    np.testing.assert_allclose(out["proba_no"] + out["proba_yes"], 1.0, atol=1e-12)
    expected = np.where(out["proba_yes"] > 0.5, "yes", "no")
    np.testing.assert_array_equal(out["prediction"], expected)
    truth = _raw_frame()["subscribed"].to_numpy()
    assert (out["prediction"].to_numpy() == truth).mean() > 0.6  # the signal is learnt


def test_predict_matches_the_estimator_on_the_transformed_data(tmp_path, capsys):
    from noisygd.estimators import DPLogisticRegression
    from noisygd.schema import SchemaTransformer, load_schema, public_centring

    data, sch = _schema_files(tmp_path)
    model = tmp_path / "m.json"
    assert _run(capsys, _fit_args(data, sch, model))[0] == 0
    schema = load_schema(sch)
    raw = pd.read_csv(data, dtype=str, keep_default_na=False, na_values=["", "?"])
    X = SchemaTransformer(schema).fit_transform(raw.drop(columns=["subscribed"]))
    y = (raw["subscribed"] == "yes").astype(int).to_numpy()
    est = DPLogisticRegression(epsilon=2.0, delta=1e-6, random_state=3, classes=[0, 1],
                               feature_bounds=public_centring(schema)).fit(X, y)
    np.testing.assert_allclose(np.ravel(json.loads(model.read_text())["coef"]),
                               np.ravel(est.coef_), rtol=1e-12)
    preds = tmp_path / "p.csv"
    assert _run(capsys, ["predict", str(model), str(data), "--out", str(preds)])[0] == 0
    np.testing.assert_allclose(pd.read_csv(preds)["proba_yes"], est.predict_proba(X)[:, 1],
                               rtol=1e-9, atol=1e-12)


def test_multiclass_labels_and_parquet_and_gzip(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    frame = _raw_frame(900, seed=1)
    frame["subscribed"] = np.where(frame["age"] > 70, "high",
                                   np.where(frame["age"] > 40, "mid", "low"))
    schema = SCHEMA_TOML.replace('labels = ["no", "yes"]', 'labels = ["low", "mid", "high"]')
    data, sch = _schema_files(tmp_path, frame, schema, name="d.csv.gz")
    frame.to_csv(data, index=False, compression="gzip")
    model = tmp_path / "m.json"
    code, _, err = _run(capsys, _fit_args(data, sch, model))
    assert code == 0, err
    pq = tmp_path / "d.parquet"
    pd.read_csv(data, dtype=str, keep_default_na=False).to_parquet(pq)
    out = tmp_path / "p.parquet"
    code, _, err = _run(capsys, ["predict", str(model), str(pq), "--out", str(out)])
    assert code == 0, err
    preds = pd.read_parquet(out)
    assert list(preds.columns) == ["prediction", "proba_low", "proba_mid", "proba_high"]
    probs = preds[["proba_low", "proba_mid", "proba_high"]].to_numpy()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(preds["prediction"],
                                  np.array(["low", "mid", "high"])[probs.argmax(axis=1)])


def test_regression_target_bounds_select_linear_regression(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 800
    x = rng.uniform(0, 10, size=n)
    t = 25 + 30 * x + rng.normal(0, 5, size=n)  # targets ~ 25..325, far outside [-1, 1]
    frame = pd.DataFrame({"x": x.round(3), "target": t.round(2)})
    schema = ('[target]\nname = "target"\nbounds = [0, 350]\n'
              '[columns.x]\nkind = "numeric"\nbounds = [0, 10]\n')
    data, sch = _schema_files(tmp_path, frame, schema)
    model = tmp_path / "m.json"
    code, _, err = _run(capsys, ["fit", str(data), "--schema", str(sch), "--epsilon", "8",
                                 "--seed", "0", "--n-samples-public", str(n), "--out",
                                 str(model)])
    assert code == 0, err
    payload = json.loads(model.read_text())
    assert payload["model"] == "DPLinearRegression"
    assert payload["params"]["target_range"] == [0.0, 350.0]
    preds = tmp_path / "p.csv"
    assert _run(capsys, ["predict", str(model), str(data), "--out", str(preds)])[0] == 0
    p = pd.read_csv(preds)["prediction"].to_numpy()
    r2 = 1 - np.sum((p - t) ** 2) / np.sum((t - t.mean()) ** 2)
    assert r2 > 0.5  # not the collapse of targets clipped to [-1, 1]


def test_regression_without_schema_or_bound_pays_for_the_target_range(tmp_path, capsys):
    rng = np.random.default_rng(0)
    x = rng.random(3000)
    data = tmp_path / "d.csv"
    pd.DataFrame({"x": x, "t": 600.0 + 300.0 * x + rng.normal(0, 10, x.size)}).to_csv(
        data, index=False)
    out = tmp_path / "m.json"
    code, stdout, err = _run(capsys, ["fit", str(data), "--target", "t", "--model", "linear",
                                      "--seed", "0", "--out", str(out)])
    assert code == 0, err
    payload = json.loads(out.read_text())
    # released: the first histogram's (512, 1024], refined about the targets' private centre
    low, high = payload["target_range_used"]
    t = pd.read_csv(data)["t"].to_numpy()
    q = np.quantile(t, [0.005, 0.995])
    assert low <= q[0] and q[1] <= high and high - low <= 2.0 * (q[1] - q[0])
    assert "released before the run: target_range:" in stdout
    assert "released before the run: target_centre:" in stdout


def test_fit_refuses_a_draft_schema(tmp_path, capsys):
    data, _ = _schema_files(tmp_path)
    draft = tmp_path / "draft.toml"
    with pytest.warns(PrivacyLeakWarning, match="computed from the data"):
        code, _, err = _run(capsys, ["schema", "draft", str(data), "--target", "subscribed",
                                     "--na-values", "?", "--out", str(draft)])
    assert code == 0, err
    text = draft.read_text()
    assert "DATA-DERIVED: confirm or replace" in text and "draft = true" in text
    out = tmp_path / "m.json"
    code, _, err = _run(capsys, _fit_args(data, draft, out))
    assert code == 2
    assert "draft (data-derived) values" in err and "[columns.age]" in err
    assert not out.exists()
    # a second draft does not replace the first without --force
    code, _, err = _run(capsys, ["schema", "draft", str(data), "--out", str(draft)])
    assert code == 2 and "--force" in err
    # confirmed (draft lines deleted): accepted
    draft.write_text("\n".join(x for x in text.splitlines() if not x.startswith("draft =")))
    code, _, err = _run(capsys, _fit_args(data, draft, out))
    assert code == 0, err


def _bad_inputs(tmp_path):
    frame = _raw_frame(50)
    return {
        "invalid schema": (frame, SCHEMA_TOML.replace('bounds = [18, 100]', 'bounds = [100, 18]'),
                           ["[columns.age] bounds", "low < high"]),
        "schema not toml": (frame, SCHEMA_TOML + "\n[columns.age]\n", ["not valid TOML"]),
        "column missing from file": (frame.drop(columns=["age"]), SCHEMA_TOML,
                                     ["'age'", "check the file's header"]),
        "undeclared column": (frame.assign(extra=SECRET), SCHEMA_TOML,
                              ["'extra'", "kind = ", "\"ignore\""]),
        "level not in list": (frame, SCHEMA_TOML.replace('unknown = "other"\n', ""),
                              ["'job'", "add the level to levels", "unknown ="]),
        "malformed value": (frame.assign(age=frame["age"].astype(object).where(
            frame.index != 3, SECRET)), SCHEMA_TOML, ["'age'", "not a finite number"]),
        "label not declared": (frame.assign(subscribed=frame["subscribed"].where(
            frame.index != 5, SECRET)), SCHEMA_TOML, ["'subscribed'", "add it to labels"]),
        "missing label": (frame.assign(subscribed=frame["subscribed"].where(
            frame.index != 5, "?")), SCHEMA_TOML, ["'subscribed'", "missing values"]),
    }


@pytest.mark.parametrize("case", ["invalid schema", "schema not toml", "column missing from file",
                                  "undeclared column", "level not in list", "malformed value",
                                  "label not declared", "missing label"])
def test_bad_input_exit_2_names_the_column_and_fix_and_writes_nothing(tmp_path, capsys, case):
    frame, schema, expected = _bad_inputs(tmp_path)[case]
    data, sch = _schema_files(tmp_path, frame, schema)
    out = tmp_path / "out" / "m.json"
    code, _, err = _run(capsys, _fit_args(data, sch, out))
    assert code == 2, err
    assert err.startswith("noisygd fit: error: ")
    for part in expected:
        assert part in err, (part, err)
    assert SECRET not in err
    assert not out.exists()
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


@pytest.mark.parametrize("content", [b"", "age,job\n1,\xe9\n".encode("latin-1")],
                         ids=["empty", "not utf-8"])
def test_unreadable_files_exit_2(tmp_path, capsys, content):
    data = tmp_path / "d.csv"
    data.write_bytes(content)
    sch = tmp_path / "s.toml"
    sch.write_text(SCHEMA_TOML)
    out = tmp_path / "m.json"
    code, _, err = _run(capsys, _fit_args(data, sch, out))
    assert code == 2
    assert ("empty" in err) if not content else ("encoding = \"latin-1\"" in err)
    assert "0xe9" not in err
    assert not out.exists()


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory"])
def test_out_must_be_a_regular_file(tmp_path, capsys, kind):
    data, sch = _schema_files(tmp_path, _raw_frame(50))
    victim = tmp_path / "victim.json"
    victim.write_text("keep")
    out = tmp_path / "m.json"
    if kind == "fifo":
        os.mkfifo(out)
    elif kind == "symlink":
        out.symlink_to(victim)
    else:
        out.mkdir()
    code, _, err = _run(capsys, _fit_args(data, sch, out))
    assert code == 2
    assert "--out path" in err
    assert victim.read_text() == "keep"
    code, _, err = _run(capsys, ["predict", str(victim), str(data), "--out", str(out)])
    assert code == 2


def test_schema_flags_conflict_with_the_schema(tmp_path, capsys):
    data, sch = _schema_files(tmp_path, _raw_frame(50))
    for flag, value in (("--classes", "no,yes"), ("--row-norm-bound", "2"),
                        ("--target-bound", "3")):
        code, _, err = _run(capsys, _fit_args(data, sch, tmp_path / "m.json", flag, value))
        assert code == 2 and flag in err and "edit the schema" in err
    code, _, err = _run(capsys, _fit_args(data, sch, tmp_path / "m.json", "--model", "linear"))
    assert code == 2 and "--model logistic" in err


def test_predict_needs_a_schema_model(tmp_path, capsys):
    data = tmp_path / "train.csv"
    _write_csv(data)
    model = tmp_path / "m.json"
    assert _run(capsys, ["fit", str(data), "--target", "label", "--classes", "0,1",
                         "--out", str(model)])[0] == 0
    code, _, err = _run(capsys, ["predict", str(model), str(data)])
    assert code == 2 and "--schema" in err
    (tmp_path / "bad.json").write_text("{not json")
    code, _, err = _run(capsys, ["predict", str(tmp_path / "bad.json"), str(data)])
    assert code == 2 and "not a model file" in err


def test_predict_to_stdout(tmp_path, capsys):
    data, sch = _schema_files(tmp_path, _raw_frame(60))
    model = tmp_path / "m.json"
    assert _run(capsys, _fit_args(data, sch, model))[0] == 0
    frame = _raw_frame(60).drop(columns=["subscribed"])  # the target column may be absent
    frame.to_csv(tmp_path / "new.csv", index=False)
    code, out, err = _run(capsys, ["predict", str(model), str(tmp_path / "new.csv")])
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0] == "prediction,proba_no,proba_yes" and len(lines) == 61


def test_header_only_file_exit_2(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("row_id,age,job,balance,subscribed\n")
    sch = tmp_path / "s.toml"
    sch.write_text(SCHEMA_TOML)
    out = tmp_path / "m.json"
    code, _, err = _run(capsys, _fit_args(data, sch, out))
    assert code == 2 and "no data rows" in err
    assert not out.exists()


def test_integer_labels_in_the_file_match_declared_labels(tmp_path, capsys):
    frame = _raw_frame(300)
    frame["subscribed"] = (frame["subscribed"] == "yes").astype(int)
    schema = SCHEMA_TOML.replace('labels = ["no", "yes"]', "labels = [0, 1]")
    data, sch = _schema_files(tmp_path, frame, schema)
    model = tmp_path / "m.json"
    code, _, err = _run(capsys, _fit_args(data, sch, model))
    assert code == 0, err
    preds = tmp_path / "p.csv"
    assert _run(capsys, ["predict", str(model), str(data), "--out", str(preds)])[0] == 0
    out = pd.read_csv(preds)
    assert list(out.columns) == ["prediction", "proba_0", "proba_1"]
    assert set(out["prediction"]) <= {0, 1}


# --------------------------------------------------------------------------- --report


def test_fit_report_writes_page_and_plots_with_the_schema_statements(tmp_path, capsys):
    from html import escape as html_escape

    pytest.importorskip("matplotlib")
    data, sch = _schema_files(tmp_path)
    model, page = tmp_path / "model.json", tmp_path / "rep.html"
    code, out, err = _run(capsys, _fit_args(data, sch, model, "--report", str(page),
                                            "--json"))
    assert code == 0, err
    written = json.loads(out)["report_files"]
    assert written == [str(page), str(tmp_path / "rep.epsilon_delta.png"),
                       str(tmp_path / "rep.epsilon_steps.png")]
    html = page.read_text(encoding="utf-8")
    payload = json.loads(model.read_text())
    for statement in payload["report"]["declared_public"] + payload["report"]["paid_for"]:
        assert html_escape(statement) in html
    assert f"{payload['privacy']['epsilon']:.6g}" in html
    assert SECRET not in html
    for png in written[1:]:
        assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_fit_report_without_schema(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    data = tmp_path / "train.csv"
    _write_csv(data)
    page = tmp_path / "r.html"
    code, _, err = _run(capsys, ["fit", str(data), "--target", "label", "--classes", "0,1",
                                 "--out", str(tmp_path / "m.json"), "--report", str(page)])
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    # the default fit without a schema pays for its conditioning: the report says so
    assert "features without declared bounds" in text
    assert "the private centre and row scale" in text
    assert "features used as given" not in text


def test_fit_report_bad_path_exit_2_before_fitting(tmp_path, capsys):
    data, sch = _schema_files(tmp_path)
    model = tmp_path / "model.json"
    (tmp_path / "target.html").write_text("keep")
    (tmp_path / "rep.html").symlink_to(tmp_path / "target.html")
    code, _, err = _run(capsys, _fit_args(data, sch, model, "--report",
                                          str(tmp_path / "rep.html")))
    assert code == 2
    assert "--report" in err and "symbolic link" in err
    assert not model.exists()
    assert (tmp_path / "target.html").read_text() == "keep"
    # a PNG path beside the page that is a directory is refused too
    (tmp_path / "r2.epsilon_delta.png").mkdir()
    code, _, err = _run(capsys, _fit_args(data, sch, model, "--report",
                                          str(tmp_path / "r2.html")))
    assert code == 2 and "directory" in err
    assert not model.exists() and not (tmp_path / "r2.html").exists()


# --------------------------------------------------------------------------- progress bars


def _stderr_on_a_terminal(argv, cwd):
    """Run ``noisygd ARGV`` with standard error on a pseudo-terminal; return what it drew."""
    import fcntl
    import pty
    import struct
    import subprocess
    import sys
    import termios

    master, slave = pty.openpty()
    # a terminal of 100 columns (a fresh pseudo-terminal has none: tqdm would draw nothing)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    code = "import sys; from noisygd.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, *argv], cwd=cwd, stderr=slave,
                            stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=300) == 0
    return b"".join(chunks).decode("utf-8", "replace")


def test_progress_bars_on_a_terminal_only_and_never_with_quiet(tmp_path, capsys):
    data, sch = _schema_files(tmp_path)
    args = _fit_args(data, sch, tmp_path / "m.json")
    drawn = _stderr_on_a_terminal(args, tmp_path)
    assert "fit: " in drawn and "stages" in drawn and "read" in drawn
    assert "600" not in drawn  # the bar counts stages, never rows (600 rows here)
    assert "stages" not in _stderr_on_a_terminal([*args, "--quiet"], tmp_path)
    demo = _stderr_on_a_terminal(["demo", "--seeds", "2"], tmp_path)
    assert "demo" in demo and "fit" in demo
    assert _stderr_on_a_terminal(["demo", "--seeds", "2", "--quiet"], tmp_path) == ""
    # off a terminal (captured here): no bar
    code, _, err = _run(capsys, [*args])
    assert code == 0 and "stages" not in err


def test_reproduce_quiet_turns_the_reproductions_bar_off(monkeypatch, capsys):
    import importlib

    seen = {}
    module = importlib.import_module("noisygd.reproductions.zhang2017_table3")
    monkeypatch.setattr(module, "main", lambda argv: seen.setdefault("argv", list(argv)) and 0)
    assert main(["reproduce", "zhang2017-table3", "--quick", "--quiet"]) == 0
    assert seen["argv"] == ["--quick", "--no-progress"]


def test_report_command_renders_a_model_file(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    data, sch = _schema_files(tmp_path)
    model = tmp_path / "model.json"
    assert _run(capsys, _fit_args(data, sch, model))[0] == 0
    page = tmp_path / "later.html"
    code, out, err = _run(capsys, ["report", str(model), "--out", str(page), "--json"])
    assert code == 0, err
    assert json.loads(out)["report_files"][0] == str(page)
    html = page.read_text(encoding="utf-8")
    payload = json.loads(model.read_text())
    assert f"{payload['privacy']['epsilon']:.6g}" in html
    assert "job=&lt;missing&gt;" in html  # the model file's feature names
    # a model file without an event (fitted without --schema) is refused, nothing written
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"privacy": payload["privacy"]}))
    code, _, err = _run(capsys, ["report", str(plain), "--out", str(tmp_path / "x.html")])
    assert code == 2 and "no privacy event" in err
    assert not (tmp_path / "x.html").exists()


def test_fit_secure_records_the_discrete_gaussian_event(tmp_path, capsys):
    pytest.importorskip("opendp.prelude", reason="secure mode needs opendp (noisygd[secure])")
    data = tmp_path / "train.csv"
    out = tmp_path / "model.json"
    _write_csv(data)
    code, _, err = _run(
        capsys,
        ["fit", str(data), "--target", "label", "--classes", "0,1", "--out", str(out),
         "--secure", "--json"],
    )
    assert code == 0, err
    model = json.loads(out.read_text())
    assert "DiscreteGaussianNoise" in json.dumps(model["privacy"])
    assert model["privacy"]["epsilon"] <= 1.0 * (1 + 1e-9)
    assert model["privacy"]["accountant"] in ("zcdp", "rdp")


def test_fit_secure_refuses_a_seed_and_writes_nothing(tmp_path, capsys):
    data = tmp_path / "train.csv"
    out = tmp_path / "model.json"
    _write_csv(data)
    code, _, err = _run(capsys, ["fit", str(data), "--target", "label", "--classes", "0,1",
                                 "--out", str(out), "--secure", "--seed", "3"])
    assert code == 2 and "--seed" in err and "--secure" in err
    assert not out.exists()


def test_account_tree_with_random_leaves_is_add_remove_and_a_bound(capsys):
    """--leaves random: DP-FTRL's add/remove tree (Delta = 1), mu = sqrt(floor(log2 T)+1)/z,
    reported as a bound (not exact); --leaves on a Gaussian step is refused."""
    from noisygd.accounting.gdp import gdp_epsilon

    code, out, _ = _run(capsys, ["account", "--mechanism", "tree", "--leaves", "random",
                                 "--noise-multiplier", "5", "--steps", "64", "--delta", "1e-5",
                                 "--json"])
    assert code == 0
    payload = json.loads(out)
    mu = math.sqrt(math.floor(math.log2(64)) + 1) / 5.0
    assert payload["epsilon"] == pytest.approx(gdp_epsilon(mu, 1e-5), rel=1e-9)
    assert payload["exact"] is False
    code, _, err = _run(capsys, ["account", "--leaves", "random", "--noise-multiplier", "5",
                                 "--steps", "64", "--delta", "1e-5"])
    assert code == 2 and "--leaves applies to --mechanism tree" in err


def test_predict_advice_is_for_the_prediction_file(tmp_path, capsys):
    """predict gave the fit's advice ("add a [columns.NAME] table", "set kind = ignore"),
    which edits a schema the model file holds: now it says what to do with the file."""
    data, sch = _schema_files(tmp_path)
    model = tmp_path / "m.json"
    assert _run(capsys, _fit_args(data, sch, model))[0] == 0
    extra, absent = tmp_path / "extra.csv", tmp_path / "absent.csv"
    _raw_frame(50).assign(note="x").to_csv(extra, index=False)
    _raw_frame(50).drop(columns=["age"]).to_csv(absent, index=False)
    code, _, err = _run(capsys, ["predict", str(model), str(extra)])
    assert code == 2 and "'note'" in err and "remove them from the file" in err
    assert "[columns." not in err
    code, _, err = _run(capsys, ["predict", str(model), str(absent)])
    assert code == 2 and "'age'" in err and "the model was fitted with them" in err
    assert "ignore" not in err


def test_a_class_labelled_na_is_a_label_when_declared(tmp_path, capsys):
    """A class "NA" (pandas reads it as missing) was refused as a missing target."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=300)
    data = tmp_path / "d.csv"
    pd.DataFrame({"a": a, "region": np.where(a > 0, "NA", "EU")}).to_csv(data, index=False)
    out = tmp_path / "m.json"
    code, _, err = _run(capsys, ["fit", str(data), "--target", "region", "--classes", "NA,EU",
                                 "--seed", "0", "--out", str(out), "--quiet"])
    assert code == 0, err
    assert sorted(json.loads(out.read_text())["classes"]) == ["EU", "NA"]
    code, _, err = _run(capsys, ["fit", str(data), "--target", "region", "--classes", "EU,AS",
                                 "--seed", "0", "--out", str(out), "--quiet"])
    assert code == 2 and "pandas reads as missing: NA" in err and "--classes" in err


def test_a_blank_header_cell_is_refused_without_a_schema(tmp_path, capsys):
    """A row index saved by to_csv: pandas named it "Unnamed: 0", fitted as a feature."""
    data = tmp_path / "d.csv"
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.normal(size=50), "label": rng.integers(0, 2, 50)}).to_csv(data)
    code, _, err = _run(capsys, ["fit", str(data), "--target", "label", "--classes", "0,1",
                                 "--out", str(tmp_path / "m.json")])
    assert code == 2 and "blank cell" in err and "Unnamed: 0" in err
    assert not (tmp_path / "m.json").exists()


def test_a_paid_target_far_from_0_fits_from_the_command_line(tmp_path, capsys):
    """bounds = "private" on targets 1e4 + N(0, ~0.8): test R^2 -3.8 through the CLI (the
    grid's bounds, 9% of 1e4 wide); now the estimator's refined range, R^2 about 0.6."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 2))
    y = 1e4 + X @ np.array([0.6, -0.4]) + rng.normal(0, 0.5, 6000)
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": y})
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    frame[:4000].to_csv(train, index=False)
    frame[4000:].to_csv(test, index=False)
    sch = tmp_path / "s.toml"
    sch.write_text('[target]\nname = "y"\nbounds = "private"\nrange = [0, 1e5]\n\n'
                   '[columns.a]\nkind = "numeric"\nbounds = [-4, 4]\n\n'
                   '[columns.b]\nkind = "numeric"\nbounds = [-4, 4]\n')
    model, preds = tmp_path / "m.json", tmp_path / "p.csv"
    code, out, err = _run(capsys, ["fit", str(train), "--schema", str(sch), "--epsilon", "1",
                                   "--seed", "0", "--out", str(model), "--quiet"])
    assert code == 0, err
    assert "target 'y': range [" in out and "private target range" in out
    payload = json.loads(model.read_text())
    assert payload["schema"]["target"]["bounds"] == payload["target_range_used"]
    assert payload["paid"]["target_range"]["share"] == pytest.approx(0.1)
    assert _run(capsys, ["predict", str(model), str(test), "--out", str(preds)])[0] == 0
    p, t = pd.read_csv(preds)["prediction"].to_numpy(), frame["y"][4000:].to_numpy()
    assert 1 - np.sum((t - p) ** 2) / np.sum((t - t.mean()) ** 2) > 0.5


def test_a_blank_header_cell_is_named_as_such_with_a_schema(tmp_path, capsys):
    """With a schema the blank cell's column is undeclared: the message says it is blank."""
    data, sch = _schema_files(tmp_path)
    frame = _raw_frame()
    frame.insert(0, "", np.arange(len(frame)))
    frame.to_csv(data, index=False)
    code, _, err = _run(capsys, _fit_args(data, sch, tmp_path / "m.json"))
    assert code == 2 and "a blank header cell is a column without a name" in err
