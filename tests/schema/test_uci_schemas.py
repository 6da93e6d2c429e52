"""The example schemas on the raw UCI files, through the command line (fit, predict).

``examples/schemas/{adult,bank}.toml`` are written from ``adult.names`` and ``bank-names.txt``
alone. On Adult the CLI path's test accuracy at epsilon 1 is within 0.5 points of the loader
path's (``noisygd.data.load_uci("adult")`` + ``DPLogisticRegression``, same seed, same public
centring of its schema).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from noisygd.cli import main
from noisygd.data import uci_data_dir

SCHEMAS = Path(__file__).resolve().parents[2] / "examples" / "schemas"


def _cli(argv: list[str]) -> None:
    code = main(argv)
    assert code == 0, argv


@pytest.mark.data
def test_adult_cli_matches_the_loader_path(tmp_path, capsys, uci_file):
    from noisygd.data import load_uci, public_centring
    from noisygd.estimators import DPLogisticRegression

    train, test = uci_file("adult/adult.data"), uci_file("adult/adult.test")
    model, preds = tmp_path / "adult.json", tmp_path / "pred.csv"
    _cli(["fit", str(train), "--schema", str(SCHEMAS / "adult.toml"), "--epsilon", "1",
          "--delta", "1e-5", "--seed", "0", "--out", str(model)])
    _cli(["predict", str(model), str(test), "--out", str(preds)])
    capsys.readouterr()
    out = pd.read_csv(preds, keep_default_na=False)
    assert list(out.columns) == ["prediction", "proba_<=50K", "proba_>50K"]
    truth = pd.read_csv(test, header=None, comment="|", skipinitialspace=True)[14]
    assert len(out) == len(truth) == 16281
    acc_cli = float(np.mean(out["prediction"].to_numpy() == truth.str.rstrip(".").to_numpy()))

    X, y, Xt, yt = load_uci("adult", uci_data_dir())
    est = DPLogisticRegression(epsilon=1.0, delta=1e-5, classes=[0, 1], random_state=0,
                               feature_bounds=public_centring("adult")).fit(X, y)
    acc_loader = float(est.score(Xt, yt))
    assert abs(acc_cli - acc_loader) <= 0.005, (acc_cli, acc_loader)
    payload = json.loads(model.read_text())
    assert payload["privacy"]["epsilon"] <= 1.0 * (1 + 1e-9)
    assert payload["schema"]["file"]["na_values"] == ["?"]


@pytest.mark.data
def test_bank_cli_fit_and_predict(tmp_path, capsys, uci_file):
    data = uci_file("bank_marketing/bank-full.csv")
    model, preds = tmp_path / "bank.json", tmp_path / "pred.csv.gz"
    _cli(["fit", str(data), "--schema", str(SCHEMAS / "bank.toml"), "--epsilon", "1",
          "--delta", "1e-6", "--seed", "0", "--out", str(model)])
    _cli(["predict", str(model), str(data), "--out", str(preds)])
    capsys.readouterr()
    out = pd.read_csv(preds, keep_default_na=False)
    truth = pd.read_csv(data, sep=";")["y"].to_numpy()
    assert len(out) == len(truth) == 45211
    np.testing.assert_allclose(out["proba_no"] + out["proba_yes"], 1.0, atol=1e-12)
    # the private model beats the constant prediction "no" (the majority class)
    assert np.mean(out["prediction"].to_numpy() == truth) > np.mean(truth == "no")
