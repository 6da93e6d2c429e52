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
    for cmd in ("demo", "fit", "account", "reproduce"):
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
