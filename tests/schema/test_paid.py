"""Schema bounds and levels paid for privately (noisygd.schema.paid): syntax, composition,
ledger, unknown level, CLI (fit, predict, report, plan)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from noisygd.accounting.events import Composed, Gaussian
from noisygd.accounting.gdp import calibrate_mu, gaussian_mu
from noisygd.schema import SchemaError, encode_features, load_schema, parse_schema
from noisygd.schema.fitting import fit_table, predict_table
from noisygd.schema.paid import paid_rng, plan_paid, planning_schema

EPS, DELTA = 1.0, 1e-5


def _frame(n: int = 4000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.normal(45.0, 12.0, n)
    job = rng.choice(["a", "b", "zz"], n, p=[0.6, 0.399, 0.001])  # "zz": not in vocabulary
    y = np.where(age + 8.0 * (job == "a") + rng.normal(0, 6, n) > 50, "yes", "no")
    return pd.DataFrame({"age": age, "job": job, "y": y})


def _schema(**privacy) -> dict:
    data = {
        "target": {"name": "y", "labels": ["no", "yes"]},
        "columns": {
            "age": {"kind": "numeric", "bounds": "private", "range": [0, 1000]},
            "job": {"kind": "categorical", "levels": "private",
                    "vocabulary": ["a", "b", "c"]},  # "c" absent from the data
        },
    }
    if privacy:
        data["privacy"] = privacy
    return data


# ---------------------------------------------------------------- syntax
@pytest.mark.parametrize(("column", "match"), [
    ({"kind": "numeric", "bounds": "private"}, "needs range"),
    ({"kind": "numeric", "bounds": [0, 1], "range": [0, 2]}, "apply only to bounds"),
    ({"kind": "numeric", "bounds": "private", "range": [0, 9], "quantiles": [0.9, 0.1]},
     "quantiles"),
    ({"kind": "numeric", "bounds": "private", "range": [-5, 9], "transform": "log1p"},
     "range with low > -1"),
    ({"kind": "numeric", "bounds": "privat"}, "or \"private\""),
    ({"kind": "categorical", "levels": "private"}, "needs vocabulary"),
    ({"kind": "categorical", "levels": ["a"], "vocabulary": ["a"]}, "apply only to levels"),
    ({"kind": "categorical", "levels": "private", "vocabulary": ["a"], "unknown": "b"},
     "unknown must be"),
    ({"kind": "categorical", "levels": "private", "vocabulary": ["a", "<other>"]},
     "reserved level"),
])
def test_schema_errors_name_the_column(column, match):
    with pytest.raises(SchemaError, match=match) as info:
        parse_schema({"target": {"name": "y", "labels": [0, 1]},
                      "columns": {"income_col": column}})
    assert "[columns.income_col]" in str(info.value)


def test_privacy_table_checks():
    with pytest.raises(SchemaError, match=r"preprocessing_share must be in \(0, 1\)"):
        parse_schema(_schema(preprocessing_share=1.0))
    with pytest.raises(SchemaError, match="no column is paid for"):
        parse_schema({"privacy": {"preprocessing_share": 0.2},
                      "target": {"name": "y", "labels": [0, 1]},
                      "columns": {"a": {"kind": "numeric", "bounds": [0, 1]}}})
    assert parse_schema(_schema()).preprocessing_share == 0.1
    assert parse_schema(_schema(preprocessing_share=0.25)).preprocessing_share == 0.25


def test_old_schemas_are_unchanged():
    for name in ("adult", "bank"):
        schema = load_schema(f"examples/schemas/{name}.toml")
        assert schema.paid_columns == [] and schema.privacy is None
        assert planning_schema(schema) is schema


def test_encoding_refuses_an_unresolved_paid_schema():
    schema = parse_schema(_schema())
    with pytest.raises(SchemaError, match="'age', 'job'"):
        encode_features(schema, _frame(10))


# ---------------------------------------------------------------- composition
def test_fit_composes_the_paid_events_exactly_into_the_budget():
    """The model's event is Composed((paid_age, paid_job, count, run)); Gaussian DP adds
    mu^2, so mu(event) = calibrate_mu(eps, delta) exactly, the paid parts hold share s of
    mu^2 (closed form, from the noise scales), and the count keeps its 1%."""
    s = 0.2
    schema = parse_schema(_schema(preprocessing_share=s))
    est, payload = fit_table(schema, _frame(), params={"epsilon": EPS, "delta": DELTA,
                                                        "random_state": 0})
    event = est.privacy_.event
    assert isinstance(event, Composed)
    parts = event.events
    mu = calibrate_mu(EPS, DELTA)
    paid_mu2 = sum((p.sensitivity / p.noise_multiplier) ** 2 for p in parts[:2])
    assert paid_mu2 == pytest.approx(s * mu * mu, rel=1e-12)
    count = parts[2]
    assert isinstance(count, Gaussian)
    assert count.mu ** 2 == pytest.approx(0.01 * mu * mu, rel=1e-9)
    assert gaussian_mu(event) == pytest.approx(mu, rel=1e-9)
    assert est.privacy_.epsilon <= EPS * (1 + 1e-9)
    assert payload["paid"]["share"] == s
    assert payload["paid"]["mu2_share"] == pytest.approx(s, rel=1e-12)
    assert [c["name"] for c in payload["paid"]["columns"]] == ["age", "job"]
    assert payload["schema_declared"]["columns"]["age"]["bounds"] == "private"


def test_released_bounds_levels_and_the_unknown_level():
    """At this budget (noise sd ~ 25 counts) the absent level "c" is dropped (kept w.p.
    Phi(-3 - 0) = 0.13%, fixed seed) and "a" (2400 rows), "b" (1600) kept; "zz" (not in the
    vocabulary) and "c" encode as the explicit level "<other>"."""
    schema = parse_schema(_schema())
    _, payload = fit_table(schema, _frame(), params={"epsilon": EPS, "delta": DELTA,
                                                      "random_state": 0})
    resolved = payload["schema"]["columns"]
    assert resolved["job"]["levels"] == ["a", "b", "<other>"]
    assert resolved["job"]["unknown"] == "<other>"
    lo, hi = resolved["age"]["bounds"]
    # noise sd ~ 20 counts and tail bins under 3 sd are zeroed (post-processing), which moves
    # the 1%/99% bounds inward by the zeroed tail mass: within the 5%/95% quantiles here
    q1, q5, q95, q99 = np.quantile(_frame()["age"], [0.01, 0.05, 0.95, 0.99])
    assert 0.5 * q1 <= lo <= q5 and q95 <= hi <= 1.5 * q99
    assert payload["feature_names"] == ["age", "job=a", "job=b", "job=<other>"]
    new = pd.DataFrame({"age": [30.0, 60.0], "job": ["c", "unseen"]})
    out = predict_table(payload, new)
    assert len(out) == 2
    X = encode_features(parse_schema(payload["schema"]), new)
    assert np.all(X[:, 3] > 0) and np.all(X[:, 1:3] == 0)


def test_seeded_and_independent_of_the_training_stream():
    schema = parse_schema(_schema())
    runs = [fit_table(schema, _frame(), params={"epsilon": EPS, "delta": DELTA,
                                                 "random_state": 3})[1] for _ in range(2)]
    assert runs[0]["paid"]["columns"] == runs[1]["paid"]["columns"]
    assert runs[0]["coef"] == runs[1]["coef"]
    a = paid_rng(3, False).standard_normal(8)
    b = np.random.default_rng(3).standard_normal(8)
    assert not np.any(np.isclose(a, b))


def test_replace_one_uses_sensitivity_sqrt2():
    schema = parse_schema(_schema())
    plan = plan_paid(schema, epsilon=EPS, delta=DELTA, relation="replace_one")
    for c in plan.columns:
        assert c.event.sensitivity == pytest.approx(math.sqrt(2.0))
        assert c.event.mu == pytest.approx(math.sqrt(0.1 / 2) * calibrate_mu(EPS, DELTA))


def test_tune_is_refused():
    with pytest.raises(SchemaError, match="tune"):
        fit_table(parse_schema(_schema()), _frame(), params={"tune": True})


def test_non_gaussian_method_without_prior_support_is_refused():
    with pytest.raises(ValueError, match="prior releases"):
        fit_table(parse_schema(_schema()), _frame(),
                  params={"epsilon": EPS, "delta": DELTA, "method": "langevin",
                          "neighbouring": "replace_one"})


def test_noisy_sgd_calibrates_jointly_with_the_paid_events():
    est, _ = fit_table(parse_schema(_schema()), _frame(),
                       params={"epsilon": EPS, "delta": DELTA, "method": "noisy_sgd",
                               "random_state": 0})
    assert est.privacy_.epsilon <= EPS * (1 + 2e-3)
    assert len(est.privacy_.event.events) == 4  # age, job, count, run


# ---------------------------------------------------------------- ledger
def test_ledger_records_the_paid_release_first(tmp_path):
    pytest.importorskip("sqlalchemy")
    from noisygd.ledger import Ledger

    path = tmp_path / "ledger.db"
    with Ledger(path) as ledger:
        ledger.set_budget("d", 2.0, DELTA)
    est, payload = fit_table(parse_schema(_schema()), _frame(),
                             params={"epsilon": EPS, "delta": DELTA, "random_state": 0,
                                     "ledger": str(path), "dataset": "d"})
    with Ledger(path) as ledger:
        releases = ledger.releases("d")
        spent = ledger.spent("d")
    assert releases[0].algorithm == "schema/private_statistics"
    assert len(releases) == 2
    # the two releases compose to the fit's own event: exactly epsilon = 1 (GDP)
    assert spent.epsilon == pytest.approx(est.privacy_.epsilon, rel=1e-6)
    assert payload["paid"]["ledger_release"]["dataset"] == "d"


def test_ledger_refuses_before_anything_is_spent(tmp_path):
    pytest.importorskip("sqlalchemy")
    from noisygd.exceptions import BudgetExceededError
    from noisygd.ledger import Ledger

    path = tmp_path / "ledger.db"
    with Ledger(path) as ledger:
        ledger.set_budget("d", 0.5, DELTA)
    with pytest.raises(BudgetExceededError):
        fit_table(parse_schema(_schema()), _frame(),
                  params={"epsilon": EPS, "delta": DELTA, "ledger": str(path), "dataset": "d"})
    with Ledger(path) as ledger:
        assert ledger.releases("d") == []


# ---------------------------------------------------------------- CLI and report
def test_cli_fit_predict_report_and_plan(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from noisygd.cli import main

    data, schema = tmp_path / "d.csv", tmp_path / "s.toml"
    _frame().to_csv(data, index=False)
    schema.write_text(
        '[privacy]\npreprocessing_share = 0.15\n[target]\nname = "y"\nlabels = ["no", "yes"]\n'
        '[columns.age]\nkind = "numeric"\nbounds = "private"\nrange = [0, 1000]\n'
        '[columns.job]\nkind = "categorical"\nlevels = "private"\n'
        'vocabulary = ["a", "b", "c"]\n', encoding="utf-8")
    model, page, preds = tmp_path / "m.json", tmp_path / "r.html", tmp_path / "p.csv"
    assert main(["fit", str(data), "--schema", str(schema), "--epsilon", "1", "--seed", "0",
                 "--out", str(model), "--report", str(page)]) == 0
    out = capsys.readouterr().out
    assert "bounds/levels paid for privately: share 0.15 of the budget" in out
    payload = json.loads(model.read_text())
    html = page.read_text(encoding="utf-8")
    assert "bounds/levels paid for privately: share 0.15 of the budget (mu^2 share" in html
    assert "bounds of column &#x27;age&#x27; (paid for privately)" in html
    assert "column &#x27;job&#x27;: 2 of 3 vocabulary levels kept" in html
    assert main(["predict", str(model), str(data), "--out", str(preds)]) == 0
    assert len(pd.read_csv(preds)) == 4000
    page2 = tmp_path / "r2.html"
    assert main(["report", str(model), "--out", str(page2)]) == 0
    assert "mu^2 share" in page2.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["plan", "--schema", str(schema), "--n-samples", "4000", "--epsilon", "1",
                 "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["paid"]["preprocessing_share"] == 0.15
    assert plan["n_features"] == 5  # age, a, b, c, <other>: every vocabulary level assumed
    from noisygd.accounting.gdp import gdp_epsilon

    mu = calibrate_mu(1.0, 1e-5)
    assert plan["paid"]["epsilon_training"] == pytest.approx(
        gdp_epsilon(math.sqrt(0.85) * mu, 1e-5), rel=1e-9)
    assert payload["paid"]["accountant"] == payload["privacy"]["accountant"]


def test_secure_mode_composes_discrete_events_within_the_budget():
    pytest.importorskip("opendp")
    from noisygd.accounting.events import DiscreteGaussianNoise

    est, payload = fit_table(parse_schema(_schema()), _frame(),
                             params={"epsilon": EPS, "delta": DELTA, "secure": True})
    parts = est.privacy_.event.events
    assert all(isinstance(p, DiscreteGaussianNoise) for p in parts)
    assert est.privacy_.epsilon <= EPS * (1 + 1e-9)
    assert payload["paid"]["secure"] is True


def test_transformer_refuses_and_report_labels_with_a_public_count():
    from noisygd.report import build_report
    from noisygd.schema import SchemaTransformer

    with pytest.raises(SchemaError, match="private"):
        SchemaTransformer(parse_schema(_schema())).fit(_frame(10).drop(columns=["y"]))
    _, payload = fit_table(parse_schema(_schema()), _frame(),
                           params={"epsilon": EPS, "delta": DELTA, "random_state": 0,
                                   "n_samples_public": 4000})
    report = build_report(payload, payload=payload, curves=False)
    labels = [p["part"] for p in report.budget_parts]
    assert labels == ["bounds of column 'age' (paid for privately)",
                      "levels of column 'job' (paid for privately)", "the training run"]
    shares = [p["mu2_share"] for p in report.budget_parts]
    assert shares[0] + shares[1] == pytest.approx(0.1, rel=1e-9)


def test_a_malformed_cell_is_refused_before_anything_is_recorded(tmp_path):
    pytest.importorskip("sqlalchemy")
    from noisygd.ledger import Ledger

    path = tmp_path / "ledger.db"
    with Ledger(path) as ledger:
        ledger.set_budget("d", 5.0, DELTA)
    frame = _frame(50)
    frame["age"] = frame["age"].astype(object)
    frame.loc[3, "age"] = "forty"
    with pytest.raises(SchemaError, match="column 'age'") as info:
        fit_table(parse_schema(_schema()), frame,
                  params={"epsilon": EPS, "delta": DELTA, "ledger": str(path), "dataset": "d"})
    assert "forty" not in str(info.value)  # no cell of the data in a message
    with Ledger(path) as ledger:
        assert ledger.releases("d") == []


@pytest.mark.parametrize("name", ["adult", "bank"])
def test_paid_examples_are_the_declared_ones_with_paid_entries(name):
    """examples/schemas/NAME_paid.toml differs from NAME.toml only where it pays: a search
    range holding the declared bounds, the declared levels as vocabulary."""
    declared = load_schema(f"examples/schemas/{name}.toml")
    paid = load_schema(f"examples/schemas/{name}_paid.toml")
    assert paid.file == declared.file and paid.target.labels == declared.target.labels
    assert list(paid.columns) == list(declared.columns)
    assert paid.paid_columns and paid.preprocessing_share == 0.1
    for col, spec in paid.columns.items():
        old = declared.columns[col]
        if col not in paid.paid_columns:
            assert spec == old, col
        elif spec.kind == "numeric":
            lo, hi = spec.range
            assert lo <= old.bounds[0] and old.bounds[1] <= hi, col
            assert spec.transform == old.transform, col
        else:
            assert spec.vocabulary == old.levels and spec.missing == old.missing, col


def test_regression_target_bounds_paid_for():
    """[target] bounds = "private": the estimator releases the target's range (its private
    target range, at the target's share of preprocessing_share), the targets are clipped to
    it, and the model file's schema, target_range_used and paid record say so."""
    rng = np.random.default_rng(2)
    n = 5000
    x = rng.uniform(0, 10, n)
    frame = pd.DataFrame({"x": x, "t": 100.0 + 20.0 * x + rng.normal(0, 5, n)})
    schema = parse_schema({
        "target": {"name": "t", "bounds": "private", "range": [-1e5, 1e5]},
        "columns": {"x": {"kind": "numeric", "bounds": [0, 10]}}})
    assert schema.paid_columns == ["t"]
    est, payload = fit_table(schema, frame, params={"epsilon": EPS, "delta": DELTA,
                                                     "random_state": 0})
    lo, hi = payload["schema"]["target"]["bounds"]
    assert est.target_range is None and est.target_range_ == (lo, hi)
    assert payload["target_range_used"] == [lo, hi]
    assert est.target_range_share == pytest.approx(0.1)  # the only paid statistic
    q5, q95 = np.quantile(frame["t"], [0.05, 0.95])
    assert 0.5 * frame["t"].min() <= lo <= q5 and q95 <= hi <= 1.5 * frame["t"].max()
    assert payload["paid"]["columns"] == []
    record = payload["paid"]["target_range"]
    assert record["statistic"] == "target_range" and record["released"] == [lo, hi]
    assert record["share"] == pytest.approx(0.1)
    assert any(s.startswith("target 't': range [") for s in payload["report"]["paid_for"])
    assert gaussian_mu(est.privacy_.event) == pytest.approx(calibrate_mu(EPS, DELTA), rel=1e-9)
    with pytest.raises(SchemaError, match=r"\[target\]: bounds = \"private\" needs range"):
        parse_schema({"target": {"name": "t", "bounds": "private"},
                      "columns": {"x": {"kind": "numeric", "bounds": [0, 10]}}})


def _off_centre(n: int, offset: float, seed: int = 0) -> pd.DataFrame:
    """``y = offset + x w + noise`` (spread about 0.8), three features in [-4, 4]."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = offset + X @ np.array([0.5, -0.3, 0.2]) + rng.normal(0, 0.5, n)
    return pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y})


def _off_centre_schema(low: float, high: float, **target) -> dict:
    columns = {k: {"kind": "numeric", "bounds": [-4, 4]} for k in "abc"}
    return {"target": {"name": "y", "bounds": "private", "range": [low, high], **target},
            "columns": columns}


def _r2(payload: dict, test: pd.DataFrame) -> float:
    pred = predict_table(payload, test)["prediction"].to_numpy()
    y = test["y"].to_numpy()
    return float(1.0 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2))


@pytest.mark.parametrize(("offset", "low", "high"), [(1e4, 0.0, 1e5), (0.0, -100.0, 100.0)])
def test_a_paid_target_far_from_0_is_fitted_in_units_of_its_spread(offset, low, high):
    """A hostile-input sweep: y = 1e4 + N(0, ~0.8), bounds = "private" on [0, 1e5], epsilon 1:
    the grid's bounds were 9% of 1e4 wide ([9268, 10107]) and test R^2 -3.8 (seeds 0 and 2;
    -43 in the sweep), silently. The estimator's refined target range gives a range of the
    order of the spread (R^2 0.60, the non-private fit's), with no regression near 0."""
    train, test = _off_centre(4000, offset), _off_centre(4000, offset, seed=1)
    schema = parse_schema(_off_centre_schema(low, high))
    est, payload = fit_table(schema, train, params={"epsilon": 1.0, "delta": DELTA,
                                                     "random_state": 0})
    assert _r2(payload, test) > 0.55
    lo, hi = payload["target_range_used"]
    assert hi - lo < 20.0 and lo <= offset <= hi
    pred = predict_table(payload, test.assign(a=100.0))["prediction"]  # projected on the range
    assert pred.between(lo, hi).all()
    assert gaussian_mu(est.privacy_.event) == pytest.approx(calibrate_mu(1.0, DELTA), rel=1e-9)


def test_a_paid_target_shares_preprocessing_share_with_the_paid_columns():
    """With m paid statistics each gets s/m of mu^2: the target's range (the estimator's
    target_range_share) and a column's bounds (its histogram, planned for m = 2)."""
    frame = _off_centre(3000, 50.0)
    data = _off_centre_schema(-1e3, 1e3)
    data["privacy"] = {"preprocessing_share": 0.2}
    data["columns"]["a"] = {"kind": "numeric", "bounds": "private", "range": [-100, 100]}
    est, payload = fit_table(parse_schema(data), frame, params={"epsilon": EPS, "delta": DELTA,
                                                                 "random_state": 0})
    mu = calibrate_mu(EPS, DELTA)
    assert est.target_range_share == pytest.approx(0.1)
    (column,) = payload["paid"]["columns"]
    assert column["name"] == "a" and column["mu"] == pytest.approx(mu * np.sqrt(0.1))
    assert payload["paid"]["mu2_share"] == pytest.approx(0.1)
    assert payload["paid"]["target_range"]["mu"] == pytest.approx(mu * np.sqrt(0.1))
    assert gaussian_mu(est.privacy_.event) == pytest.approx(mu, rel=1e-9)
    assert payload["report"]["paid_for"][1].startswith(
        "bounds/levels paid for privately: share 0.2 of the budget (mu^2 share 0.1, 0.1 in "
        "the target's range), 2 statistic(s)")


def test_coarse_grid_bounds_of_a_paid_target_warn():
    """Where the grid releases the target's bounds (quantiles declared; also --secure) and
    they are one or two bins far from 0, a warning names the target and the fix."""
    from noisygd.schema.paid import coarse_bounds

    assert coarse_bounds((9268.19, 10107.0)) and coarse_bounds((-10107.0, -9268.19))
    assert not coarse_bounds((-1.6, 1.8)) and not coarse_bounds((17.0, 90.0))
    schema = parse_schema(_off_centre_schema(0.0, 1e5, quantiles=[0.01, 0.99]))
    with pytest.warns(UserWarning, match=r"target 'y': the released bounds \[.*one or two "
                                         r"bins.*declare \[target\] bounds"):
        est, payload = fit_table(schema, _off_centre(4000, 1e4),
                                 params={"epsilon": 1.0, "delta": DELTA, "random_state": 0})
    assert payload["paid"]["columns"][0]["statistic"] == "bounds"  # the grid's release
    assert est.target_range == tuple(payload["target_range_used"])


def test_a_model_files_report_names_the_fits_own_releases():
    """The budget parts of a report made from the model file alone: the paid statistics,
    then the fit's releases before its run (the target range's, the target scale), then the
    count. The target scale was labelled the number of rows, and the count a training run."""
    from noisygd.report.content import build_report

    _, payload = fit_table(parse_schema(_off_centre_schema(-1e3, 1e3)), _off_centre(2000, 5.0),
                           params={"epsilon": EPS, "delta": DELTA, "random_state": 0})
    parts = [p["part"] for p in build_report(payload, curves=False).budget_parts]
    assert parts[0] == "the private target range (released before the run)"
    assert parts[-2:] == ["the number of rows (noisy count, paid for)", "the training run"]
    assert "the private target and residual scales (released before the run)" in parts


def test_a_regressors_table_predictions_follow_its_predict():
    """predict_table projects a regressor's scores onto its target range, as the estimator's
    predict does (clip_predictions); with clip_predictions=False it gives the linear scores."""
    rng = np.random.default_rng(2)
    a = rng.uniform(0.0, 1.0, 3000)
    frame = pd.DataFrame({"a": a, "y": np.clip(9.5 + 2.0 * a + rng.normal(0, 0.3, 3000),
                                               0, 10)})
    schema = parse_schema({"target": {"name": "y", "bounds": [0, 10]},
                           "columns": {"a": {"kind": "numeric", "bounds": [0, 1]}}})
    new = pd.DataFrame({"a": np.linspace(0.0, 1.0, 11)})
    outs = {}
    for clip in (True, False):
        est, payload = fit_table(schema, frame, params={"epsilon": 2.0, "random_state": 0,
                                                        "clip_predictions": clip})
        assert payload["params"]["clip_predictions"] is clip
        out = predict_table(payload, new)["prediction"].to_numpy()
        X = encode_features(parse_schema(payload["schema"]), new)
        np.testing.assert_allclose(out, est.predict(X), rtol=1e-12, atol=1e-12)
        outs[clip] = out
    assert outs[False].max() > 10.0  # the targets sit at the top of the range
    assert np.all((outs[True] >= 0.0) & (outs[True] <= 10.0))


def test_target_at_range_sets_a_paid_targets_bounds_to_its_declared_range():
    from noisygd.schema.paid import target_at_range

    data = _off_centre_schema(-1e3, 1e3)
    data["privacy"] = {"preprocessing_share": 0.2}
    resolved = target_at_range(parse_schema(data))
    assert list(resolved.target.bounds) == [-1e3, 1e3] and not resolved.target.paid
    assert not resolved.pays  # the target was the only paid entry: [privacy] dropped
    data["columns"]["a"] = {"kind": "numeric", "bounds": "private", "range": [-100, 100]}
    assert target_at_range(parse_schema(data)).paid_columns == ["a"]  # the column still pays
    public = _off_centre_schema(-1e3, 1e3)
    public["target"] = {"name": "y", "bounds": [-1e3, 1e3]}
    with pytest.raises(SchemaError, match=r"does not pay for its bounds"):
        target_at_range(parse_schema(public))
