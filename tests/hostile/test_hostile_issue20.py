"""Regression tests for the hostile-input list of issue 20 ("Hostile input: what still goes
wrong"), one test (or one parametrised test) per case, in the issue's order.

Each asserts what a user would expect: a one-line error naming the argument (exit status 2,
no traceback, no output file), or a documented result (docs/hostile_input.md).
"""

from __future__ import annotations

import json
import math
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from noisygd.cli import main
from noisygd.estimators import DPLinearRegression, DPLogisticRegression

LABELS_SCHEMA = """\
row_norm_bound = 1.0

[target]
name = "label"
labels = ["0", "1"]

[columns.rownames]
kind = "ignore"

[columns.a]
kind = "numeric"
bounds = [-1, 1]

[columns.b]
kind = "numeric"
bounds = [-1, 1]

[columns.c]
kind = "categorical"
levels = ["x", "y", "z"]

[columns.y]
kind = "numeric"
bounds = [-2, 2]
"""


def _run(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _refused(capsys, argv, *named: str) -> str:
    """Run ``argv``: exit status 2, one error line naming each of ``named``, no traceback."""
    code, _, err = _run(capsys, argv)
    assert code == 2, err
    assert "Traceback" not in err
    assert "error:" in err
    for name in named:
        assert name in err, err
    return err


def _table(path: Path, n: int = 60, seed: int = 0, levels=("x", "y", "z")) -> Path:
    rng = np.random.default_rng(seed)
    rows = ["rownames,a,b,c,label,y"]
    for i in range(n):
        a, b = rng.uniform(-1, 1, 2)
        rows.append(f"{i + 1},{a:.4f},{b:.4f},{levels[i % len(levels)]},{i % 2},{a + b:.4f}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture
def fitted(tmp_path, capsys):
    """A data file, its schema and a model file fitted on them."""
    data = _table(tmp_path / "d.csv")
    schema = tmp_path / "s.toml"
    schema.write_text(LABELS_SCHEMA)
    model = tmp_path / "m.json"
    code, _, err = _run(capsys, ["fit", str(data), "--schema", str(schema), "--seed", "0",
                                 "--out", str(model), "--quiet"])
    assert code == 0, err
    return data, schema, model


# ------------------------------------------------------------------ silently wrong

def test_report_over_the_model_file_is_refused(fitted, capsys):
    pytest.importorskip("matplotlib")
    data, schema, model = fitted
    before = model.read_bytes()
    plot = model.with_name("m.epsilon_delta.png")  # a plot of the report m.html
    for out, page in ((model, model), (plot, model.with_name("m.html"))):
        _refused(capsys, ["fit", str(data), "--schema", str(schema), "--seed", "0",
                          "--out", str(out), "--report", str(page), "--quiet"],
                 "--report", "--out")
    assert model.read_bytes() == before and not plot.exists()


def _damaged(model: Path, tmp_path: Path, change) -> Path:
    payload = json.loads(model.read_text())
    change(payload)
    out = tmp_path / "damaged.json"
    out.write_text(json.dumps(payload))  # json.dumps writes NaN as the bare word NaN
    return out


@pytest.mark.parametrize("entry", ["coef", "intercept"])
def test_predict_refuses_non_finite_coefficients(fitted, tmp_path, capsys, entry):
    data, _, model = fitted

    def change(p):
        if isinstance(p[entry], list):
            p[entry][0] = math.nan
        else:
            p[entry] = math.nan

    bad = _damaged(model, tmp_path, change)
    _refused(capsys, ["predict", str(bad), str(data)], "NaN")


def test_model_arrays_refuse_non_finite_values_from_the_api(fitted):
    from noisygd.schema import SchemaError
    from noisygd.schema.fitting import model_arrays

    payload = json.loads(fitted[2].read_text())
    payload["coef"] = [math.inf] * len(payload["coef"])
    with pytest.raises(SchemaError, match="finite"):
        model_arrays(payload, len(payload["coef"]))


@pytest.mark.parametrize("n_public", [5, 10**12])
def test_noisy_gd_refuses_a_declared_count_far_from_the_rows(n_public):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 3))
    y = (X[:, 0] > 0).astype(int)
    est = DPLogisticRegression(n_samples_public=n_public, classes=[0, 1], random_state=0)
    with pytest.raises(ValueError, match="n_samples_public") as info:
        est.fit(X, y)
    assert "300" not in str(info.value)  # the number of rows is not shown


def test_predict_out_with_an_unknown_ending_is_refused(fitted, tmp_path, capsys):
    data, _, model = fitted
    out = tmp_path / "p.xlsx"
    _refused(capsys, ["predict", str(model), str(data), "--out", str(out)], "--out", ".csv")
    assert not out.exists()


# ------------------------------------------------------------------ crashes

def test_private_bounds_with_a_tiny_resolution_fit(tmp_path, capsys):
    from noisygd.mechanisms.private_statistics import geometric_grid

    for low, high, resolution in ((0.0, 1e300, 1e-300), (-1e308, 1e308, 5e-324)):
        edges = geometric_grid(low, high, resolution=resolution)
        assert np.isfinite(edges).all() and np.all(np.diff(edges) > 0)
        assert edges[0] == low and edges[-1] == high
    data = _table(tmp_path / "d.csv")
    schema = tmp_path / "s.toml"
    schema.write_text(LABELS_SCHEMA.replace(
        'bounds = [-1, 1]\n\n[columns.b]',
        'bounds = "private"\nrange = [-1e300, 1e300]\nresolution = 1e-300\n\n[columns.b]'
    ).replace("row_norm_bound = 1.0", "row_norm_bound = 1.0\n[privacy]\n"
              "preprocessing_share = 0.1\n"))
    code, _, err = _run(capsys, ["fit", str(data), "--schema", str(schema), "--seed", "0",
                                 "--out", str(tmp_path / "m.json"), "--quiet"])
    assert code == 0, err


def _regression_schema(bounds: str) -> str:
    return (LABELS_SCHEMA.replace('name = "label"\nlabels = ["0", "1"]',
                                  f'name = "y"\n{bounds}')
            .replace('[columns.y]\nkind = "numeric"\nbounds = [-2, 2]',
                     '[columns.label]\nkind = "numeric"\nbounds = [0, 1]'))


@pytest.mark.parametrize("bounds", ['bounds = [-1e300, 1e300]',
                                    'bounds = "private"\nrange = [-1e300, 1e300]'])
def test_a_huge_target_bound_is_refused_naming_it(tmp_path, capsys, bounds):
    data = _table(tmp_path / "d.csv")
    schema = tmp_path / "s.toml"
    schema.write_text(_regression_schema(bounds).replace(
        "row_norm_bound = 1.0", "row_norm_bound = 1.0\n[privacy]\npreprocessing_share = 0.1\n"))
    _refused(capsys, ["fit", str(data), "--schema", str(schema), "--seed", "0",
                      "--out", str(tmp_path / "m.json")], "[target]", "1e+150")


@pytest.mark.parametrize("kw", [{"target_bound": 1e300}, {"target_range": (-1e300, 1e300)}])
def test_dplinearregression_names_a_huge_target_bound(kw):
    X = np.random.default_rng(0).uniform(-1, 1, (50, 2))
    with pytest.raises(ValueError, match="target_bound must be at most"):
        DPLinearRegression(random_state=0, **kw).fit(X, X[:, 0])


def test_a_model_with_one_label_is_refused(fitted, tmp_path, capsys):
    data, _, model = fitted
    bad = _damaged(model, tmp_path, lambda p: p.update(labels=["0"]))
    _refused(capsys, ["predict", str(bad), str(data)], "labels")


@pytest.mark.parametrize("text, why", [
    ("[" * 100_000 + "]" * 100_000, "nests"),
    ('{"coef": [' + "9" * 5000 + "]}", "digits"),
    ('{"coef": [NaN]}', "NaN"),
])
def test_hostile_model_file_text_is_refused(fitted, tmp_path, capsys, text, why):
    data = fitted[0]
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    err = _refused(capsys, ["predict", str(bad), str(data)], why, "not a model file")
    assert "set_int_max_str_digits" not in err


@pytest.mark.parametrize("argv, flag", [
    (["--features", "1000000000", "--n-samples", "300"], "--features"),
    (["--features", "10", "--n-samples", "1000000000000000000"], "--n-samples"),
])
def test_plan_refuses_sizes_it_cannot_hold(capsys, argv, flag):
    _refused(capsys, ["plan", *argv], flag)


def test_the_tree_count_refuses_what_it_cannot_hold():
    from noisygd.accounting.events import MAX_COUNTED_LEAVES, max_squared_node_count
    from noisygd.exceptions import UnsupportedEventError

    with pytest.raises(UnsupportedEventError, match="leaves"):
        max_squared_node_count(4 * MAX_COUNTED_LEAVES, epochs=4)
    assert max_squared_node_count(8, epochs=2) > 0  # small trees are still counted


# ------------------------------------------------------------------ hangs

@pytest.mark.parametrize("argv, flag", [
    (["--runs", "1000000000000"], "--runs"),
    (["--steps", "1000000000"], "--steps"),
])
def test_audit_sizes_are_limited(capsys, argv, flag):
    _refused(capsys, ["audit", "--method", "noisy_gd", *argv], flag)


def test_langevin_max_iter_is_a_cap_not_a_target():
    from noisygd.solvers.langevin import DEFAULT_MAX_STEPS

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (200, 3))
    y = (X[:, 0] > 0).astype(int)

    def steps(max_iter):
        est = DPLogisticRegression(method="langevin", max_iter=max_iter, classes=[0, 1],
                                   neighbouring="replace_one", random_state=0).fit(X, y)
        return est.privacy_.event.steps

    capped = steps(10**9)
    assert capped < 10**9
    # the cap only bounds: a cap above the default horizon plans as the default does, and
    # a cap below it is honoured
    assert capped == steps(10**7)
    assert steps(50) <= 50 < DEFAULT_MAX_STEPS


# ------------------------------------------------------------------ unhelpful messages

def test_a_damaged_ledger_event_names_the_ledger_and_release(fitted, tmp_path, capsys):
    pytest.importorskip("sqlalchemy")
    from noisygd.ledger import Ledger
    from noisygd.ledger.core import LedgerError

    data, schema, _ = fitted
    ledger = tmp_path / "L.db"
    assert _run(capsys, ["ledger", "set-budget", "--ledger", str(ledger), "--dataset", "d",
                         "--epsilon", "5", "--delta", "1e-5"])[0] == 0
    code, _, err = _run(capsys, ["fit", str(data), "--schema", str(schema), "--seed", "0",
                                 "--out", str(tmp_path / "m2.json"), "--ledger", str(ledger),
                                 "--dataset", "d", "--quiet"])
    assert code == 0, err
    with sqlite3.connect(ledger) as conn:
        conn.execute("UPDATE noisygd_releases SET event = '{garbage'")
    with Ledger(ledger) as opened, pytest.raises(LedgerError) as info:
        opened.show("d")
    message = str(info.value)
    assert str(ledger) in message and "release 1" in message and "event" in message
    assert "Expecting" not in message and "garbage" not in message  # no decoder text
    _refused(capsys, ["ledger", "show", "--ledger", str(ledger), "--dataset", "d"],
             "release 1", str(ledger))


@pytest.mark.parametrize("schema", [True, False])
def test_a_short_row_is_named_as_such(fitted, tmp_path, capsys, schema):
    data, schema_file, _ = fitted
    lines = data.read_text().splitlines()
    lines[5] = "6,0.1,0.2"
    short = tmp_path / "short.csv"
    short.write_text("\n".join(lines) + "\n")
    argv = (["--schema", str(schema_file)] if schema
            else ["--target", "label", "--classes", "0,1"])
    err = _refused(capsys, ["fit", str(short), *argv, "--seed", "0",
                            "--out", str(tmp_path / "m.json")], "fewer fields")
    assert "missing" not in err


def test_an_empty_cell_is_still_a_missing_value(tmp_path):
    from noisygd.data.io import read_raw_table

    path = tmp_path / "e.csv"
    path.write_text("a,b,label\n1,,0\n2,3,1\n")
    frame = read_raw_table(path)
    assert frame["b"].isna().tolist() == [True, False]


def test_a_negative_seed_names_seed(fitted, tmp_path, capsys):
    data, schema, _ = fitted
    _refused(capsys, ["fit", str(data), "--schema", str(schema), "--seed", "-1",
                      "--out", str(tmp_path / "m2.json")], "--seed")


def test_a_huge_row_norm_bound_is_named(fitted, tmp_path, capsys):
    data, schema, _ = fitted
    schema.write_text(LABELS_SCHEMA.replace("row_norm_bound = 1.0", "row_norm_bound = 1e300"))
    err = _refused(capsys, ["fit", str(data), "--schema", str(schema), "--seed", "0",
                            "--out", str(tmp_path / "m2.json")], "row_norm_bound")
    assert "feature_bounds" not in err and "radius" not in err


def test_a_schema_that_is_a_directory(fitted, tmp_path, capsys):
    data = fitted[0]
    err = _refused(capsys, ["fit", str(data), "--schema", str(tmp_path), "--seed", "0",
                            "--out", str(tmp_path / "m2.json")], "directory")
    assert "not found" not in err


@pytest.mark.parametrize("argv, flag", [
    (["--epsilon", "0"], "--epsilon"),
    (["--epsilon", "nan"], "--epsilon"),
    (["--delta", "1"], "--delta"),
])
def test_plan_refuses_a_budget_no_method_can_use(capsys, argv, flag):
    _refused(capsys, ["plan", "--features", "10", "--n-samples", "300", *argv], flag)


def _draft(tmp_path, capsys, text: str) -> tuple[int, str, str]:
    data = tmp_path / "raw.csv"
    data.write_text(text)
    return _run(capsys, ["schema", "draft", str(data), "--target", "label"])


def test_draft_keeps_a_file_with_a_constant_column(tmp_path, capsys):
    from noisygd.schema import parse_schema

    code, out, err = _draft(tmp_path, capsys, "a,k,label\n5,1.5,0\n5,2.5,1\n5,0.5,0\n")
    assert code == 0, err
    import tomllib

    data = tomllib.loads(out)
    assert data["columns"]["a"]["kind"] == "ignore"
    assert data["columns"]["k"]["kind"] == "numeric"
    parse_schema(data)


@pytest.mark.parametrize("header, values", [
    ("rownames", (3, 7, 9, 12)),  # an index's name
    ("serial", (1, 2, 3, 4)),     # 1..n: a row number
])
def test_draft_does_not_make_a_row_number_a_feature(tmp_path, capsys, header, values):
    import tomllib

    rows = [f"{header},a,label"] + [f"{v},{0.1 * v:.2f},{v % 2}" for v in values]
    code, out, err = _draft(tmp_path, capsys, "\n".join(rows) + "\n")
    assert code == 0, err
    assert tomllib.loads(out)["columns"][header]["kind"] == "ignore"


def test_draft_suggests_unknown_and_predict_meets_unseen_levels(tmp_path, capsys):
    """A test split with levels the training split lacks: the draft's ``unknown = "zeros"``
    lets ``predict`` run; with ``unknown = "error"`` one run names every such column."""
    import tomllib

    train = _table(tmp_path / "train.csv", levels=("x", "y"))
    code, out, err = _run(capsys, ["schema", "draft", str(train), "--target", "label"])
    assert code == 0, err
    draft = tomllib.loads(out)
    assert draft["columns"]["c"]["unknown"] == "zeros"
    text = "\n".join(line for line in out.splitlines()
                     if not line.startswith("draft = true"))
    schema = tmp_path / "s.toml"
    schema.write_text(text)
    model = tmp_path / "m.json"
    code, _, err = _run(capsys, ["fit", str(train), "--schema", str(schema), "--seed", "0",
                                 "--out", str(model), "--quiet"])
    assert code == 0, err
    test = _table(tmp_path / "test.csv", seed=1, levels=("x", "y", "w"))
    code, out, err = _run(capsys, ["predict", str(model), str(test)])
    assert code == 0, err
    # unknown = "error" in two columns: one message names both
    two = tmp_path / "two.csv"
    two.write_text(textwrap.dedent("""\
        p,q,label
        u,u,0
        v,v,1
        """))
    strict = tmp_path / "strict.toml"
    strict.write_text(textwrap.dedent("""\
        [target]
        name = "label"
        labels = ["0", "1"]
        [columns.p]
        kind = "categorical"
        levels = ["u"]
        [columns.q]
        kind = "categorical"
        levels = ["u"]
        """))
    _refused(capsys, ["fit", str(two), "--schema", str(strict), "--seed", "0",
                      "--out", str(tmp_path / "m3.json")], "'p'", "'q'")


def test_a_refused_set_budget_creates_no_ledger(tmp_path, capsys):
    pytest.importorskip("sqlalchemy")
    ledger = tmp_path / "L.db"
    for argv in (["--epsilon", "-1", "--delta", "1e-5"], ["--epsilon", "1", "--delta", "2"]):
        _refused(capsys, ["ledger", "set-budget", "--ledger", str(ledger), "--dataset", "d",
                          *argv], "epsilon" if "-1" in argv else "delta")
        assert not ledger.exists()


def test_set_budget_leaves_another_applications_database_alone(tmp_path, capsys):
    pytest.importorskip("sqlalchemy")
    other = tmp_path / "app.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE customers (name TEXT)")
    _refused(capsys, ["ledger", "set-budget", "--ledger", str(other), "--dataset", "d",
                      "--epsilon", "1", "--delta", "1e-5"], "another application")
    with sqlite3.connect(other) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
    assert names == ["customers"]


def test_warnings_are_one_line_without_source(tmp_path):
    """A command prints a warning as one line, without our file name or source line (run in
    a subprocess: pytest records warnings in-process instead of printing them)."""
    data = tmp_path / "raw.csv"
    data.write_text("a,label\n0.5,0\n1.5,1\n2.5,0\n")
    res = subprocess.run([sys.executable, "-m", "noisygd.cli", "schema", "draft", str(data),
                          "--target", "label"], capture_output=True, text=True, timeout=300,
                         check=False)
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines and all(line.startswith("noisygd schema draft: warning: ") for line in lines)
    assert "PrivacyLeakWarning" in res.stderr
    assert ".py:" not in res.stderr and "draft_schema(" not in res.stderr
