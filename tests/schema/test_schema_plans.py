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
    # the fit's step size (Langevin calls it step_size); DP-FTRL has none (its l2_ftrl)
    lr = next((where[key] for where in (info, info.get("plan", {}))
               for key in ("learning_rate", "step_size") if key in where), None)
    if method == "dp_ftrl":
        assert lr is None and row.step_size is None
    else:
        assert row.step_size == pytest.approx(lr, rel=1e-12)
    assert row.epsilon <= 1.0 * (1 + 1e-9)
    assert row.accountant in est.privacy_.by_accountant


def _check_ranked_within_groups(rows):
    """Rows with a bound first, grouped, each group sorted by bound and ranked 1..m; rows
    without a bound next; refused last."""
    kinds = [0 if r.group is not None else 1 if r.refused is None else 2 for r in rows]
    assert kinds == sorted(kinds)
    groups = {}
    for r in rows:
        if r.group is not None:
            groups.setdefault(r.group, []).append(r)
    for members in groups.values():
        assert [m.bound for m in members] == sorted(m.bound for m in members)
        assert [m.rank for m in members] == list(range(1, len(members) + 1))
        assert {m.group_size for m in members} == {len(members)}
        # one group: one quantity, comparator, guarantee and set of premises
        assert len({(m.quantity, m.comparator, m.guarantee, frozenset(m.assumptions))
                    for m in members}) == 1
    # every grouped row prints its assumptions, each with its source
    for r in rows:
        if r.group is not None:
            assert r.assumptions and all(
                any(f"[{src}" in a for src in ("declared", "derived", "given", "nominal"))
                for a in r.assumptions)


def test_rows_are_ranked_within_comparable_groups_and_refusals_explained():
    rows = plan_table(model="logistic", n_samples=10**5, n_features=4, epsilon=1.0,
                      delta=1e-5, centring=public_centring(SCHEMA))
    _check_ranked_within_groups(rows)
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
    for group in {p["group"] for p in out["plans"] if p["group"] is not None}:
        members = [p for p in out["plans"] if p["group"] == group]
        assert [p["bound"] for p in members] == sorted(p["bound"] for p in members)
        assert len({p["comparator"] for p in members}) == 1
    assert all(p["assumptions"] for p in out["plans"] if p["bound"] is not None)
    assert not any(math.isinf(p["bound"]) for p in out["plans"] if p["bound"] is not None)
    code = main(["plan", "--features", "3", "--n-samples", "100", "--model", "linear"])
    assert code == 2 and "--target-range" in capsys.readouterr().err
    code = main(["plan", "--features", "3"])
    assert code == 2 and "--n-samples" in capsys.readouterr().err


@pytest.mark.parametrize(("method", "share"), [("noisy_gd", "auto"), ("noisy_gd", 0.0),
                                               ("noisy_sgd", 0.0)])
def test_regression_plan_is_the_fits_plan(method, share):
    """The plan of a Gaussian composition takes the private target range's share first, as
    the fit does (share "auto": the range narrowed within the declared one; the plan is at
    the declared half-range, an upper bound on the fit's)."""
    from noisygd.estimators import DPLinearRegression

    X, _ = _data()
    t = 25 + 300 * X[:, 0]
    est = DPLinearRegression(epsilon=2.0, delta=1e-5, n_samples_public=N, method=method,
                             target_range=(0, 350), random_state=0, scale_share=0.0,
                             target_range_share=share,
                             feature_bounds=public_centring(SCHEMA)).fit(X, t)
    assert ("target_range" in est.fit_info_) == (share == "auto")
    info = est.fit_info_["plans"][0]
    row = next(r for r in plan_table(model="linear", n_samples=N, n_features=X.shape[1],
                                     epsilon=2.0, delta=1e-5, relations=("add_remove",),
                                     centring=public_centring(SCHEMA), target_range=(0, 350),
                                     scale_share=0.0, target_range_share=share)
               if r.method == method)
    assert row.noise == pytest.approx(_noise(info), rel=1e-12)
    assert row.steps == int(np.ravel(est.n_iter_)[0])
    assert row.step_size == pytest.approx(info["learning_rate"], rel=1e-12)


def test_linear_noisy_gd_plan_leaves_the_target_scale_its_share():
    # DPLinearRegression spends scale_share of mu^2 on its private target scale first: the
    # plan's run gets mu sqrt(1 - share), hence a larger noise multiplier at the same steps
    # (the declared target range kept: target_range_share=0)
    from noisygd.mechanisms.target_range import TARGET_RANGE_SHARE

    kw = dict(model="linear", n_samples=N, n_features=3, epsilon=2.0, delta=1e-5,
              relations=("add_remove",), target_range=(0, 350), max_iter=200)
    rows = {s: next(r for r in plan_table(**kw, scale_share=s, target_range_share=0.0)
                    if r.method == "noisy_gd") for s in (0.0, 0.1, 0.5)}
    assert rows[0.1].steps == rows[0.0].steps == 200
    assert rows[0.1].noise == pytest.approx(rows[0.0].noise / math.sqrt(0.9), rel=1e-9)
    assert rows[0.5].noise == pytest.approx(rows[0.0].noise / math.sqrt(0.5), rel=1e-9)
    assert "target_scale_" in rows[0.1].note and "target_scale_" not in rows[0.0].note
    assert "target range" not in rows[0.1].note
    # the default: the private target range narrowing the declared one takes its share too
    ranged = next(r for r in plan_table(**kw, scale_share=0.1) if r.method == "noisy_gd")
    assert ranged.noise == pytest.approx(
        rows[0.0].noise / math.sqrt(0.9 - TARGET_RANGE_SHARE), rel=1e-9)
    assert "private target range narrows the declared one" in ranged.note
    with pytest.raises(ValueError, match="scale_share"):
        plan_table(**kw, scale_share=1.0)


def test_a_nominal_reference_norm_is_never_ranked_against_a_derived_one():
    # issue 23: output perturbation's bound rests on the nominal D0 = 1
    # (DEFAULT_INIT_DISTANCE), noisy_gd's on a derived D = sqrt(2 F0 / l2)
    from noisygd.schema.plans import format_plan_rows

    rows = plan_table(model="logistic", n_samples=30000, n_features=4, epsilon=1.0,
                      delta=1e-5, centring=public_centring(SCHEMA))
    op = next(r for r in rows if r.method == "output_perturbation")
    gd = [r for r in rows if r.method == "noisy_gd"]
    assert op.nominal and any("[nominal" in a for a in op.assumptions)
    assert all(not r.nominal and any("[derived" in a for a in r.assumptions) for r in gd)
    assert all(op.group != r.group for r in gd)
    text = "\n".join(format_plan_rows(rows))
    for r in rows:
        for a in r.assumptions:
            assert f"assumes {a}" in text
    # the dynamic rows share a group (same quantity, comparator, premises) and are ranked
    dyn = [r for r in rows if r.method == "dynamic"]
    assert len(dyn) == 2 and dyn[0].group == dyn[1].group and {r.rank for r in dyn} == {1, 2}


def test_dynamic_plan_row_is_the_fits_plan():
    from noisygd.estimators import DPLogisticRegression

    X, y = _data()
    est = DPLogisticRegression(epsilon=1.0, delta=1e-5, classes=[0, 1], n_samples_public=N,
                               method="dynamic", random_state=0,
                               feature_bounds=public_centring(SCHEMA)).fit(X, y)
    plan = est.fit_info_["plans"][0]["plan"]
    row = next(r for r in plan_table(model="logistic", n_samples=N, n_features=X.shape[1],
                                     epsilon=1.0, delta=1e-5, relations=("add_remove",),
                                     centring=public_centring(SCHEMA))
               if r.method == "dynamic")
    assert row.steps == plan["steps"] == int(np.ravel(est.n_iter_)[0])
    assert row.noise == pytest.approx(plan["sigma_last"], rel=1e-12)
    assert row.bound == pytest.approx(plan["bound_value"], rel=1e-12)


@pytest.mark.data
@pytest.mark.parametrize("name", ["adult", "bank", "credit", "wine", "bike"])
def test_plan_on_the_uci_five_prints_every_assumption_and_ranks_only_comparable_rows(
        name, uci_file, capsys):
    from noisygd.data import load_uci
    from noisygd.data.uci import schema_file

    X, _, _, _ = load_uci(name, uci_file("README.md").parent)
    code = main(["plan", "--schema", str(schema_file(name)), "--n-samples", str(len(X)),
                 "--epsilon", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    plans = out["plans"]
    assert any(p["group"] for p in plans)
    for p in plans:
        if p["bound"] is not None:
            assert p["assumptions"] and p["comparator"] and p["quantity"] and p["guarantee"]
    for a in plans:
        for b in plans:
            if a["group"] is not None and a["group"] == b["group"]:
                assert (a["comparator"], a["quantity"], a["guarantee"], sorted(a["assumptions"])) \
                    == (b["comparator"], b["quantity"], b["guarantee"], sorted(b["assumptions"]))
    code = main(["plan", "--schema", str(schema_file(name)), "--n-samples", str(len(X)),
                 "--epsilon", "1"])
    text = capsys.readouterr().out
    assert code == 0
    for p in plans:
        for a in p["assumptions"]:
            assert f"assumes {a}" in text


def test_strongly_convex_plan_lists_the_1_over_lambda_t_variant_unranked():
    # with a radius, NoisyGD's 12.2.4 candidate applies; the plan also reports the notes'
    # other schedule, eta_t = 1/(lambda t) with the uniform average and its (1 + log T) factor
    from noisygd.bounds import strongly_convex_uniform_average_bound

    rows = plan_table(model="logistic", n_samples=5000, n_features=3, epsilon=1.0, delta=1e-5,
                      relations=("add_remove",), radius=5.0, l2=0.01, max_iter=200)
    gd = next(r for r in rows if r.method == "noisy_gd")
    (other,) = [b for b in gd.other_bounds if "1/(lambda t)" in b["reference"]]
    assert other["covers_run"] is False and other["comparator"] == gd.comparator
    from noisygd.objectives.glm import LogisticLoss

    c = LogisticLoss(l2=0.01, fit_intercept=True, radius=5.0).constants(1.0)
    want = strongly_convex_uniform_average_bound(
        n=5000, d=4, lipschitz=c.lipschitz + 0.01 * 5.0, noise_std=gd.noise * 1.0 * c.lipschitz,
        strong_convexity=0.01, steps=gd.steps)
    assert other["value"] == pytest.approx(want, rel=1e-9)


def test_langevin_bound_covers_the_run_only_where_public_facts_put_the_minimiser_inside():
    # Lemma 6 assumes the minimiser in the interior of the ball: derived from
    # (l2/2)||theta*||^2 <= F(0) <= log 2, i.e. ||theta*|| <= sqrt(2 log 2 / l2) = 3.72 here
    bound = math.sqrt(2 * math.log(2) / 0.1)
    kw = dict(model="logistic", n_samples=5000, n_features=10, epsilon=1.0, delta=1e-5,
              relations=("replace_one",), l2=0.1)
    inside = next(r for r in plan_table(**kw, radius=5.0) if r.method == "langevin")
    outside = next(r for r in plan_table(**kw, radius=1.0) if r.method == "langevin")
    (premise,) = [a for a in inside.assumptions if "interior" in a]
    assert inside.bound_covers_run and f"= {bound:.4g} [derived" in premise
    assert not inside.nominal
    (premise,) = [a for a in outside.assumptions if "interior" in a]
    assert not outside.bound_covers_run and "[nominal: not shown" in premise
    assert outside.nominal


def test_dynamic_row_names_projection_and_public_n_and_a_derived_m():
    kw = dict(model="logistic", n_samples=5000, n_features=10, epsilon=1.0, delta=1e-5,
              relations=("add_remove",), l2=0.1)
    projected = next(r for r in plan_table(**kw, radius=1.0) if r.method == "dynamic")
    free = next(r for r in plan_table(**{**kw, "n_features": 4},
                                      centring=public_centring(SCHEMA))
                if r.method == "dynamic")
    assert projected.refused is None and free.refused is None
    for row in (projected, free):
        assert any(a.startswith("M = beta + l2") and "[derived" in a for a in row.assumptions)
        assert any(a.startswith("N public") and "= holds" in a for a in row.assumptions)
    assert any(a.startswith("no projection") and "= fails" in a
               for a in projected.assumptions)
    assert not projected.bound_covers_run
    assert any(a.startswith("no projection") and "= holds" in a for a in free.assumptions)
    clip_holds = any(a.startswith("clip C >= L") and "= holds" in a for a in free.assumptions)
    assert free.bound_covers_run == clip_holds


def test_dp_ftrl_rows_state_their_leaf_size_law():
    rows = plan_table(model="logistic", n_samples=5000, n_features=10, epsilon=1.0,
                      delta=1e-5, relations=("replace_one", "add_remove"), radius=2.0, l2=0.0)
    ftrl = [r for r in rows if r.method == "dp_ftrl" and r.refused is None]
    assert ftrl
    for row in ftrl:
        (law,) = [a for a in row.assumptions if a.startswith("leaf sizes")]
        if row.relation == "replace_one":  # streamed in order: at most b rows per leaf
            assert "<= b = 256" in law and len(row.other_bounds) == 1
        else:  # assigned at random: the Binomial law, and no high-probability form
            assert "Binomial(n, 1/T_e)" in law and row.other_bounds == ()


@pytest.mark.parametrize(("n", "relation", "method"), [
    (2000, "add_remove", "noisy_gd"), (20000, "add_remove", "newton"),
    (20000, "replace_one", "noisy_gd"),
])
def test_plan_says_what_the_default_runs_as_the_fit_does(n, relation, method):
    """The noisy_gd row's default_choice is the fit's own method_choice (same public facts),
    word for word: NoisyGD at n = 2000, Newton at n = 20 000 under add/remove (NoisyGD's
    compute budget binds), NoisyGD under replace-one (sensitivity 2: noise-limited)."""
    from noisygd.estimators import DPLogisticRegression

    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.random(n), "b": rng.choice(list("xyz"), n)})
    X, y = SchemaTransformer(SCHEMA).fit_transform(frame), (frame["a"] > 0.5).astype(int)
    est = DPLogisticRegression(epsilon=1.0, delta=1e-5, classes=[0, 1], n_samples_public=n,
                               neighbouring=relation, random_state=0,
                               feature_bounds=public_centring(SCHEMA)).fit(X, y)
    rows = plan_table(model="logistic", n_samples=n, n_features=X.shape[1], epsilon=1.0,
                      delta=1e-5, relations=(relation,), centring=public_centring(SCHEMA))
    row = next(r for r in rows if r.method == "noisy_gd")
    assert row.default_choice == {k: est.fit_info_["method_choice"][k] for k in ("method", "rule")}
    assert row.default_choice["method"] == method
    assert est.fit_info_["method"] == row.default_choice["method"]
    # only the noisy_gd row carries it, and the text output prints it
    assert all(r.default_choice is None for r in rows if r.method != "noisy_gd")
    from noisygd.schema.plans import format_plan_rows

    line = f"default (method='auto', {relation}): runs {row.default_choice['method']}: "
    assert any(s.startswith(line) for s in format_plan_rows(rows))


def test_plan_default_is_noisy_gd_where_auto_does_not_choose():
    """A regressor's method='auto' is NoisyGD; so is a classifier's with max_iter (its steps
    fixed) or NoisyGD's own method_options."""
    kw = {"n_samples": 20000, "n_features": 4, "epsilon": 1.0, "delta": 1e-5,
          "relations": ("add_remove",), "centring": public_centring(SCHEMA)}
    for extra in ({"model": "linear", "target_range": (0.0, 1.0)},
                  {"model": "logistic", "max_iter": 50},
                  {"model": "logistic", "method_options": {"momentum": 0.5}}):
        rows = plan_table(**kw, **extra)
        row = next(r for r in rows if r.method == "noisy_gd")
        assert row.default_choice["method"] == "noisy_gd", extra
        assert "NoisyGD: " in row.default_choice["rule"]


def test_cli_plan_without_declared_bounds_says_the_fit_pays_for_its_conditioning(
        capsys, tmp_path):
    """--features (no bounds) carries the note on the estimators' paid conditioning; a schema
    (public bounds: no conditioning release) does not; the JSON rows carry default_choice."""
    from noisygd.cli import PLAN_WITHOUT_BOUNDS_NOTE

    assert main(["plan", "--features", "3", "--n-samples", "5000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["note"] == PLAN_WITHOUT_BOUNDS_NOTE
    gd = [p for p in out["plans"] if p["method"] == "noisy_gd"]
    assert gd and all(p["default_choice"]["method"] in ("noisy_gd", "newton") for p in gd)
    assert main(["plan", "--features", "3", "--n-samples", "5000"]) == 0
    assert f"note: {PLAN_WITHOUT_BOUNDS_NOTE}" in capsys.readouterr().out
    sch = tmp_path / "s.toml"
    sch.write_text('[target]\nname = "y"\nlabels = ["a", "b"]\n'
                   '[columns.a]\nkind = "numeric"\nbounds = [0, 1]\n')
    assert main(["plan", "--schema", str(sch), "--n-samples", "5000", "--json"]) == 0
    assert "note" not in json.loads(capsys.readouterr().out)


def test_cli_plan_refuses_a_multiclass_schema_rather_than_plan_a_binary_fit(capsys, tmp_path):
    """K > 2 labels: 'noisygd fit' trains one multinomial problem (its own loss, clip and
    noise), so the binary plan would describe another fit: refused, saying why (exit 2)."""
    sch = tmp_path / "s.toml"
    sch.write_text('[target]\nname = "y"\nlabels = ["a", "b", "c"]\n'
                   '[columns.a]\nkind = "numeric"\nbounds = [0, 1]\n')
    assert main(["plan", "--schema", str(sch), "--n-samples", "5000"]) == 2
    err = capsys.readouterr().err
    assert "3 labels" in err and "multinomial" in err and "noisygd report" in err
    sch.write_text('[target]\nname = "y"\nlabels = ["a", "b"]\n'
                   '[columns.a]\nkind = "numeric"\nbounds = [0, 1]\n')
    assert main(["plan", "--schema", str(sch), "--n-samples", "5000"]) == 0
