"""``noisygd plan``: each row is the plan the fit itself makes (same noise, steps, step size)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from noisygd.cli import main
from noisygd.schema import SchemaTransformer, parse_schema, public_centring
from noisygd.schema.plans import plan_table

SCHEMA = parse_schema({"columns": {"a": {"kind": "numeric", "bounds": [0, 1]},
                                   "b": {"kind": "categorical", "levels": ["x", "y", "z"]}}})
N = 2000


def _data():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.random(N), "b": rng.choice(list("xyz"), N)})
    return SchemaTransformer(SCHEMA).fit_transform(frame), (frame["a"] > 0.5).astype(int)


def _noise(info):
    for where in (info, info.get("plan", {})):
        for key in ("noise_multiplier", "sigma", "noise_scale"):
            if key in where:
                return where[key]
    raise KeyError("no noise in the fit's info")


@pytest.mark.parametrize(("method", "relation"), [
    ("noisy_gd", "add_remove"), ("noisy_gd", "replace_one"), ("noisy_sgd", "add_remove"),
    ("dp_ftrl", "replace_one"), ("output_perturbation", "replace_one"), ("langevin", "replace_one"),
])
def test_plan_rows_are_the_fits_plans(method, relation):
    from noisygd.estimators import DPLogisticRegression

    X, y = _data()
    est = DPLogisticRegression(epsilon=1.0, delta=1e-5, classes=[0, 1], n_samples_public=N,
                               neighbouring=relation, method=method, random_state=0,
                               feature_bounds=public_centring(SCHEMA)).fit(X, y)
    info = est.fit_info_["plans"][0]
    rows = plan_table(model="logistic", n_samples=N, n_features=X.shape[1], epsilon=1.0,
                      delta=1e-5, relations=(relation,), centring=public_centring(SCHEMA))
    row = next(r for r in rows if r.method == method)
    assert row.refused is None
    assert row.noise == pytest.approx(_noise(info), rel=1e-12)
    assert row.steps == int(np.ravel(est.n_iter_)[0])
    lr = info.get("learning_rate", info.get("plan", {}).get("learning_rate"))
    if lr is not None:
        assert row.step_size == pytest.approx(lr, rel=1e-12)
    assert row.epsilon <= 1.0 * (1 + 1e-9)
    assert row.accountant in est.privacy_.by_accountant


def test_rows_are_sorted_by_bound_and_refusals_explained():
    rows = plan_table(model="logistic", n_samples=10**5, n_features=4, epsilon=1.0,
                      delta=1e-5, centring=public_centring(SCHEMA))
    bounds = [r.bound for r in rows if r.refused is None]
    finite = [b for b in bounds if b is not None]
    assert finite == sorted(finite) and bounds[: len(finite)] == finite
    methods = {(r.method, r.relation) for r in rows}
    assert ("rrpsgd", "replace_one") in methods
    rr = next(r for r in rows if r.method == "rrpsgd")
    # the default horizon is the compute budget 10 n, not n^2 = 1e10 steps (issue 19)
    assert rr.refused is None and rr.steps == 10 * 10**5
    # every method under exactly the relations it is accounted under
    from noisygd.solvers import SOLVERS

    assert methods == {(name, r.value) for name, cls in SOLVERS.items() for r in cls.relations}


def test_cli_plan_json(capsys, tmp_path):
    sch = tmp_path / "s.toml"
    sch.write_text('[target]\nname = "y"\nlabels = ["a", "b"]\n'
                   '[columns.a]\nkind = "numeric"\nbounds = [0, 1]\n')
    code = main(["plan", "--schema", str(sch), "--n-samples", "5000", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["model"] == "logistic" and out["n_features"] == 1
    keys = [(math.inf if p["bound"] is None else p["bound"]) for p in out["plans"]
            if p["refused"] is None]
    assert keys == sorted(keys)
    code = main(["plan", "--features", "3", "--n-samples", "100", "--model", "linear"])
    assert code == 2 and "--target-range" in capsys.readouterr().err
    code = main(["plan", "--features", "3"])
    assert code == 2 and "--n-samples" in capsys.readouterr().err


@pytest.mark.parametrize("method", ["noisy_gd", "noisy_sgd"])
def test_regression_plan_is_the_fits_plan(method):
    from noisygd.estimators import DPLinearRegression

    X, _ = _data()
    t = 25 + 300 * X[:, 0]
    est = DPLinearRegression(epsilon=2.0, delta=1e-5, n_samples_public=N, method=method,
                             target_range=(0, 350), random_state=0, scale_share=0.0,
                             feature_bounds=public_centring(SCHEMA)).fit(X, t)
    info = est.fit_info_["plans"][0]
    row = next(r for r in plan_table(model="linear", n_samples=N, n_features=X.shape[1],
                                     epsilon=2.0, delta=1e-5, relations=("add_remove",),
                                     centring=public_centring(SCHEMA), target_range=(0, 350),
                                     scale_share=0.0)
               if r.method == method)
    assert row.noise == pytest.approx(_noise(info), rel=1e-12)
    assert row.steps == int(np.ravel(est.n_iter_)[0])
    assert row.step_size == pytest.approx(info["learning_rate"], rel=1e-12)


def test_linear_noisy_gd_plan_leaves_the_target_scale_its_share():
    # DPLinearRegression spends scale_share of mu^2 on its private target scale first: the
    # plan's run gets mu sqrt(1 - share), hence a larger noise multiplier at the same steps
    kw = dict(model="linear", n_samples=N, n_features=3, epsilon=2.0, delta=1e-5,
              relations=("add_remove",), target_range=(0, 350), max_iter=200)
    rows = {s: next(r for r in plan_table(**kw, scale_share=s) if r.method == "noisy_gd")
            for s in (0.0, 0.1, 0.5)}
    assert rows[0.1].steps == rows[0.0].steps == 200
    assert rows[0.1].noise == pytest.approx(rows[0.0].noise / math.sqrt(0.9), rel=1e-9)
    assert rows[0.5].noise == pytest.approx(rows[0.0].noise / math.sqrt(0.5), rel=1e-9)
    assert "target_scale_" in rows[0.1].note and "target_scale_" not in rows[0.0].note
    with pytest.raises(ValueError, match="scale_share"):
        plan_table(**kw, scale_share=1.0)
