"""Public helpers of ``noisygd.schema``, tested directly:

- ``encode.block_scale``, ``encode.check_columns``;
- ``fitting.task_model``;
- ``paid.clip_bounds``, ``paid.paid_spec``, ``paid.preprocessing_mu``,
  ``paid.record_prior_events``, ``paid.resolve_paid_counts``;
- ``partitionwise.encode_labels_partitionwise``,
  ``partitionwise.encode_target_values_partitionwise``;
- ``plans.plan_bounds``, ``plans.rank_rows``;
- ``toml_write.toml_key``, ``toml_write.toml_value``;
- ``transformer.as_schema``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import tomllib

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from noisygd.accounting.events import Gaussian
from noisygd.bounds import Assumption, Bound
from noisygd.schema import SchemaError, TableSchema, encode_features, parse_schema
from noisygd.schema.encode import block_scale, check_columns, encode_labels, encode_target_values
from noisygd.schema.fitting import MODELS, task_model
from noisygd.schema.model import CategoricalColumn, NumericColumn
from noisygd.schema.paid import (
    CLIP_COUNTS,
    clip_bounds,
    paid_histogram_counts,
    paid_spec,
    plan_paid,
    preprocessing_mu,
    record_prior_events,
    resolve_paid,
    resolve_paid_counts,
)
from noisygd.schema.partitionwise import (
    encode_labels_partitionwise,
    encode_target_values_partitionwise,
)
from noisygd.schema.plans import PlanRow, plan_bounds, rank_rows
from noisygd.schema.toml_write import dumps, toml_key, toml_value
from noisygd.schema.transformer import as_schema

EPS, DELTA = 1.0, 1e-5


def _gdp_delta(mu: float, eps: float) -> float:
    """Dong, Roth and Su (2022), Cor. 2.13: delta(eps) of mu-GDP, written out here."""
    return float(stats.norm.cdf(-eps / mu + mu / 2.0)
                 - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2.0))


def _gdp_mu(eps: float, delta: float) -> float:
    """The mu whose mu-GDP curve passes through (eps, delta) (root of the closed form)."""
    return float(optimize.brentq(lambda m: _gdp_delta(m, eps) - delta, 1e-3, 50.0,
                                 xtol=1e-14, rtol=1e-14))


def _gdp_epsilon(mu: float, delta: float) -> float:
    return float(optimize.brentq(lambda e: _gdp_delta(mu, e) - delta, 0.0, 100.0,
                                 xtol=1e-14, rtol=1e-14))


# ---------------------------------------------------------------- block_scale
@pytest.mark.parametrize(("bound", "n_numeric", "n_cat"), [(1.0, 1, 0), (2.0, 3, 1), (0.5, 2, 2)])
def test_block_scale_is_bound_over_root_of_feature_blocks(bound, n_numeric, n_cat):
    """``b = B / sqrt(number of feature columns)``; ignored columns and the target do not
    count, and a row with every block of norm 1 is encoded at norm exactly ``B``."""
    columns = {f"n{i}": {"kind": "numeric", "bounds": [0, 10]} for i in range(n_numeric)}
    columns |= {f"c{i}": {"kind": "categorical", "levels": ["u", "v", "w"]}
                for i in range(n_cat)}
    columns["skip"] = {"kind": "ignore"}
    schema = parse_schema({"row_norm_bound": bound, "target": {"name": "y", "labels": [0, 1]},
                           "columns": columns})
    b = block_scale(schema)
    assert b == pytest.approx(bound / math.sqrt(n_numeric + n_cat), rel=1e-15)
    row = {f"n{i}": [10.0] for i in range(n_numeric)} | {f"c{i}": ["v"] for i in range(n_cat)}
    X = encode_features(schema, pd.DataFrame(row))
    assert np.max(X) == pytest.approx(b, rel=1e-12)  # every non-zero entry is b * 1
    assert np.linalg.norm(X[0]) == pytest.approx(bound, rel=1e-12)


# ---------------------------------------------------------------- check_columns
def _schema() -> TableSchema:
    return parse_schema({
        "target": {"name": "y", "labels": ["no", "yes"]},
        "columns": {"age": {"kind": "numeric", "bounds": [0, 100]},
                    "job": {"kind": "categorical", "levels": ["a", "b"]},
                    "id": {"kind": "ignore"}},
    })


@pytest.mark.parametrize("columns", [["age", "job", "id", "y"], ["job", "age"],
                                     ["y", "age", "job"], ("age", "job", "id")])
def test_check_columns_accepts_any_order_and_optional_ignored_columns(columns):
    check_columns(_schema(), columns, "t.csv", need_target=False)


def test_check_columns_needs_the_target_only_when_asked():
    check_columns(_schema(), ["age", "job", "y"], "t.csv", need_target=True)
    check_columns(_schema(), ["age", "job"], "t.csv", need_target=False)
    with pytest.raises(SchemaError, match=r"t\.csv lacks the target column 'y'"):
        check_columns(_schema(), ["age", "job"], "t.csv", need_target=True)


def test_check_columns_refuses_duplicates_undeclared_and_absent():
    with pytest.raises(SchemaError, match=r"t\.csv has the column name\(s\) 'age' more than"):
        check_columns(_schema(), ["age", "job", "age"], "t.csv", need_target=False)
    with pytest.raises(SchemaError, match="columns the schema does not declare: 'zip'"):
        check_columns(_schema(), ["age", "job", "zip"], "t.csv", need_target=False)
    with pytest.raises(SchemaError, match=r"lacks the column\(s\) 'job' declared"):
        check_columns(_schema(), ["age", "id"], "t.csv", need_target=False)


def test_check_columns_lists_ten_undeclared_names_and_counts_the_rest():
    extra = [f"x{i:02d}" for i in range(13)]
    with pytest.raises(SchemaError, match=r"'x09' and 3 more;") as info:
        check_columns(_schema(), ["age", "job", *extra], "t.csv", need_target=False)
    assert "'x10'" not in str(info.value)


def test_check_columns_compares_names_as_strings():
    """Integer header names are compared by their text (a schema keys columns by string)."""
    schema = parse_schema({"columns": {"0": {"kind": "numeric", "bounds": [0, 1]}}})
    check_columns(schema, [0], "t", need_target=False)
    with pytest.raises(SchemaError, match="'1'"):
        check_columns(schema, [0, 1], "t", need_target=False)


# ---------------------------------------------------------------- task_model
def _regression() -> TableSchema:
    return parse_schema({"target": {"name": "y", "bounds": [0, 10]},
                         "columns": {"a": {"kind": "numeric", "bounds": [0, 1]}}})


def test_task_model_defaults_follow_the_target():
    assert task_model(_schema(), None) == "logistic"
    assert task_model(_regression(), None) == "linear"


def test_task_model_accepts_the_models_that_suit_the_target():
    assert task_model(_schema(), "logistic") == "logistic"
    for model in ("linear", "huber"):
        assert task_model(_regression(), model) == model
    assert set(MODELS) == {"logistic", "linear", "huber"}


def test_task_model_refusals_say_what_to_change():
    with pytest.raises(SchemaError, match="no \\[target\\] table"):
        task_model(parse_schema({"columns": {"a": {"kind": "numeric", "bounds": [0, 1]}}}),
                   None)
    with pytest.raises(SchemaError, match="--model must be one of huber, linear, logistic"):
        task_model(_schema(), "svm")
    with pytest.raises(SchemaError, match="--model huber is a regression, but \\[target\\] "
                                          "declares labels"):
        task_model(_schema(), "huber")
    with pytest.raises(SchemaError, match="--model logistic is a classifier, but \\[target\\] "
                                          "declares bounds"):
        task_model(_regression(), "logistic")


# ---------------------------------------------------------------- preprocessing_mu
@pytest.mark.parametrize(("eps", "delta", "share"), [(1.0, 1e-5, 0.1), (0.3, 1e-6, 0.5),
                                                     (4.0, 1e-3, 0.99)])
def test_preprocessing_mu_is_the_gdp_budget_and_its_root_share(eps, delta, share):
    """mu solves delta(eps; mu) = delta for mu-GDP (closed form, solved here by scipy) and
    mu_paid = sqrt(share) mu, so the paid part spends share * mu^2."""
    mu_total, mu_paid = preprocessing_mu(eps, delta, share)
    assert mu_total == pytest.approx(_gdp_mu(eps, delta), rel=1e-7)
    assert _gdp_delta(mu_total, eps) <= delta * (1 + 1e-9)  # never over the budget
    assert mu_paid == pytest.approx(math.sqrt(share) * mu_total, rel=1e-15)
    assert mu_paid ** 2 / mu_total ** 2 == pytest.approx(share, rel=1e-12)


def test_preprocessing_mu_grows_with_epsilon_and_ignores_share_for_the_total():
    totals = [preprocessing_mu(e, DELTA, 0.1)[0] for e in (0.1, 0.5, 1.0, 2.0, 8.0)]
    assert all(a < b for a, b in itertools.pairwise(totals))
    assert preprocessing_mu(EPS, DELTA, 0.1)[0] == preprocessing_mu(EPS, DELTA, 0.7)[0]


def test_preprocessing_mu_secure_is_the_zcdp_conversion():
    """Secure mode: mu = sqrt(2 rho) with rho the zCDP budget meeting (eps, delta); a
    conversion bound, so below exact GDP's mu and above the classical rho's."""
    from noisygd.accounting.zcdp import zcdp_epsilon

    mu_total, mu_paid = preprocessing_mu(EPS, DELTA, 0.25, secure=True)
    rho = mu_total ** 2 / 2.0
    assert zcdp_epsilon(rho, DELTA) == pytest.approx(EPS, rel=1e-9)
    assert zcdp_epsilon(rho, DELTA) <= EPS
    # Bun-Steinke: eps = rho + 2 sqrt(rho log(1/delta)) -> sqrt(rho) = sqrt(L + eps) - sqrt(L)
    L = math.log(1.0 / DELTA)
    rho_classical = (math.sqrt(L + EPS) - math.sqrt(L)) ** 2
    assert math.sqrt(2 * rho_classical) <= mu_total < preprocessing_mu(EPS, DELTA, 0.25)[0]
    assert mu_paid == pytest.approx(0.5 * mu_total, rel=1e-15)


@pytest.mark.parametrize(("args", "exc", "match"), [
    ((0.0, DELTA, 0.1), ValueError, "epsilon must be positive"),
    ((math.inf, DELTA, 0.1), ValueError, "epsilon must be positive and finite"),
    ((EPS, 1.0, 0.1), ValueError, "delta"),
    ((EPS, DELTA, 1.0), ValueError, r"preprocessing_share must be in \(0, 1\)"),
    ((EPS, DELTA, 0.0), ValueError, r"preprocessing_share must be in \(0, 1\)"),
    ((EPS, DELTA, "a"), TypeError, "preprocessing_share"),
])
def test_preprocessing_mu_refuses_bad_arguments(args, exc, match):
    with pytest.raises(exc, match=match):
        preprocessing_mu(*args)


# ---------------------------------------------------------------- paid_spec, clip_bounds
def _paid_schema(share: float = 0.2) -> TableSchema:
    """age: private bounds on [1, 2] (9 public bins) and counted; job: private levels;
    hours: declared bounds, counted; id: ignored."""
    return parse_schema({
        "privacy": {"preprocessing_share": share},
        "target": {"name": "y", "labels": ["no", "yes"]},
        "columns": {
            "age": {"kind": "numeric", "bounds": "private", "range": [1, 2],
                    "count_clipped": True, "missing": 1.9},
            "job": {"kind": "categorical", "levels": "private", "vocabulary": ["a", "b", "c"]},
            "hours": {"kind": "numeric", "bounds": [0, 60], "count_clipped": True},
            "id": {"kind": "ignore"},
        },
    })


def test_paid_spec_returns_the_column_table_or_the_target():
    schema = _paid_schema()
    assert paid_spec(schema, "age") is schema.columns["age"]
    assert isinstance(paid_spec(schema, "age"), NumericColumn)
    assert isinstance(paid_spec(schema, "job"), CategoricalColumn)
    regression = parse_schema({"target": {"name": "y", "bounds": "private", "range": [0, 10]},
                               "columns": {"a": {"kind": "numeric", "bounds": [0, 1]}}})
    assert paid_spec(regression, "y") is regression.target
    # every paid entry of the plan resolves to the table it was planned from
    plan = plan_paid(regression, epsilon=EPS, delta=DELTA)
    assert [paid_spec(regression, c.name) for c in plan.columns] == [regression.target]


def test_clip_bounds_are_the_counted_columns_bounds_in_plan_order():
    schema = parse_schema({
        "privacy": {"preprocessing_share": 0.1},
        "columns": {"hours": {"kind": "numeric", "bounds": [0, 60], "count_clipped": True},
                    "job": {"kind": "categorical", "levels": "private",
                            "vocabulary": ["a", "b"]},
                    "age": {"kind": "numeric", "bounds": [18, 90.5], "count_clipped": True},
                    "w": {"kind": "numeric", "bounds": [-1, 1]}},
    })
    plan = plan_paid(schema, epsilon=EPS, delta=DELTA)
    got = clip_bounds(schema, plan)
    assert got == [(0.0, 60.0), (18.0, 90.5)]
    assert all(isinstance(v, float) for pair in got for v in pair)
    counted = [c.name for c in plan.columns if c.statistic == CLIP_COUNTS]
    assert counted == ["hours", "age"]


def test_clip_bounds_is_empty_without_counted_columns():
    schema = parse_schema({"columns": {"job": {"kind": "categorical", "levels": "private",
                                               "vocabulary": ["a", "b"]}}})
    assert clip_bounds(schema, plan_paid(schema, epsilon=EPS, delta=DELTA)) == []


# ---------------------------------------------------------------- resolve_paid_counts
def _counts(plan):
    """Exact counts: every age in bin 4 of its grid; job a/b frequent, c absent."""
    age = np.zeros(plan.columns[0].n_bins, dtype=np.int64)
    age[4] = 100_000
    return [age, np.array([50_000, 30_000, 0])]


def _grid():
    from noisygd.mechanisms.private_statistics import DEFAULT_GRID_RATIO, geometric_grid

    return geometric_grid(1.0, 2.0, ratio=DEFAULT_GRID_RATIO)


def test_resolve_paid_counts_releases_with_the_planned_noise_and_resolves_the_schema():
    """Noise sd = Delta / mu_j with mu_j = sqrt(share) mu / sqrt(m) (m = 4 paid statistics),
    events are the planned ones, sum_j mu_j^2 = share mu^2; bounds come from the mass bin,
    dropped levels go to '<other>', the missing constant is clipped into the released bounds,
    and the clipped counts are counted against the resolved bounds.

    The seed is fixed; with another seed, level 'c' (count 0) would survive its 3-sd
    threshold with probability Phi(-3) = 0.13%, and the bounds could move only if noise of
    sd ~5 moved 1% of 100 000 rows (probability ~0)."""
    schema = _paid_schema(share=0.2)
    plan = plan_paid(schema, epsilon=4.0, delta=DELTA)
    mu = preprocessing_mu(4.0, DELTA, 0.2)[0]
    mu_j = math.sqrt(0.2) * mu / math.sqrt(4)
    seen = []

    def clipped(bounds):
        seen.append(bounds)
        return [np.array([500, 0]), np.array([0, 2000])]

    resolved, release = resolve_paid_counts(schema, plan, _counts(plan), clipped,
                                            rng=np.random.default_rng(0))
    edges = _grid()
    age = resolved.columns["age"]
    assert tuple(age.bounds) == (edges[4], edges[5])
    assert age.missing == edges[5]  # 1.9 clipped into the released bounds
    assert resolved.columns["job"].levels == ["a", "b", "<other>"]
    assert resolved.columns["job"].unknown == "<other>"
    assert tuple(resolved.columns["hours"].bounds) == (0.0, 60.0)
    assert resolved.paid_columns == [] and resolved.clip_count_columns == []
    assert resolved.privacy is None
    # the callback is called once, with the resolved schema's counted bounds
    assert seen == [clip_bounds(resolved, plan)] == [[(edges[4], edges[5]), (0.0, 60.0)]]
    # the release follows the plan, with the closed-form noise and events
    assert [(c.name, c.statistic) for c in release.columns] == [
        (c.name, c.statistic) for c in plan.columns]
    for got, planned in zip(release.columns, plan.columns, strict=True):
        assert got.event == planned.event
        assert got.noise_std == pytest.approx(1.0 / mu_j, rel=1e-12)
    assert release.mu2_share() == pytest.approx(0.2, rel=1e-9)
    (below, above), (below_h, above_h) = release.columns[2].released, release.columns[3].released
    sd = 1.0 / mu_j
    assert abs(below - 500) <= 6 * sd + 0.5 and above >= 0
    assert abs(above_h - 2000) <= 6 * sd + 0.5 and below_h >= 0
    assert release.columns[3].against == (0.0, 60.0)


def test_resolve_paid_counts_replace_one_uses_sensitivity_root_two():
    schema = _paid_schema()
    plan = plan_paid(schema, epsilon=EPS, delta=DELTA, relation="replace_one")
    _, release = resolve_paid_counts(
        schema, plan, _counts(plan), lambda b: [np.array([0, 0])] * 2,
        rng=np.random.default_rng(1))
    mu_j = plan.mu_paid / 2.0
    assert [c.noise_std for c in release.columns] == pytest.approx([math.sqrt(2) / mu_j] * 4,
                                                                   rel=1e-12)


def test_resolve_paid_counts_falls_back_to_the_range_when_nothing_passes():
    """No count at all: no noisy bin passes the threshold (seeded; 9 bins, each passing with
    probability 0.13%), so the declared range is used and the release says so."""
    schema = parse_schema({"columns": {"age": {"kind": "numeric", "bounds": "private",
                                               "range": [1, 2]}}})
    plan = plan_paid(schema, epsilon=EPS, delta=DELTA)
    resolved, release = resolve_paid_counts(schema, plan, [np.zeros(9, dtype=np.int64)],
                                            lambda b: [], rng=np.random.default_rng(2))
    assert tuple(resolved.columns["age"].bounds) == (1.0, 2.0)
    assert release.columns[0].fallback is True


def test_resolve_paid_counts_is_resolve_paid_of_the_same_counts():
    """resolve_paid(frame) is resolve_paid_counts of the frame's exact histograms: same
    seed, same resolved schema and release."""
    rng = np.random.default_rng(0)
    n = 3000
    frame = pd.DataFrame({"age": rng.uniform(1.2, 1.7, n), "job": rng.choice(["a", "b"], n),
                          "hours": rng.uniform(-10, 70, n), "id": np.arange(n),
                          "y": rng.choice(["no", "yes"], n)})
    schema = _paid_schema()
    plan = plan_paid(schema, epsilon=2.0, delta=DELTA)
    a_schema, a_release = resolve_paid(schema, frame, plan, rng=np.random.default_rng(5))
    counts = paid_histogram_counts(schema, frame, plan)
    assert [int(c.sum()) for c in counts] == [n, n]
    from noisygd.schema.paid import paid_clip_counts

    b_schema, b_release = resolve_paid_counts(
        schema, plan, counts, lambda bounds: paid_clip_counts(schema, frame, plan, bounds),
        rng=np.random.default_rng(5))
    assert a_schema.to_dict() == b_schema.to_dict()
    assert a_release.to_dict(schema) == b_release.to_dict(schema)


def test_resolve_paid_counts_refuses_counts_that_do_not_match_the_plan():
    schema = _paid_schema()
    plan = plan_paid(schema, epsilon=EPS, delta=DELTA)
    counts = _counts(plan)
    two = [np.array([1, 0]), np.array([0, 1])]
    with pytest.raises(ValueError, match="2 histograms planned, 1 given"):
        resolve_paid_counts(schema, plan, counts[:1], lambda b: two,
                            rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="counts of column 'age' must have the planned 9 bins"):
        resolve_paid_counts(schema, plan, [np.zeros(8), counts[1]], lambda b: two,
                            rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="2 pairs of clipped-value counts planned"):
        resolve_paid_counts(schema, plan, counts, lambda b: two[:1],
                            rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="2 pairs of clipped-value counts planned"):
        resolve_paid_counts(schema, plan, counts, lambda b: [np.zeros(3), np.zeros(2)],
                            rng=np.random.default_rng(0))


# ---------------------------------------------------------------- record_prior_events
def test_record_prior_events_records_one_release_of_the_paid_event(tmp_path):
    """One ledger release, algorithm schema/private_statistics, whose event is the plan's
    and whose epsilon is that of mu_paid-GDP (sum of the columns' mu_j^2)."""
    pytest.importorskip("sqlalchemy")
    from noisygd.ledger import Ledger

    path = tmp_path / "ledger.db"
    with Ledger(path) as ledger:
        ledger.set_budget("d", 2.0, DELTA)
    plan = plan_paid(_paid_schema(), epsilon=EPS, delta=DELTA)
    release = record_prior_events(str(path), "d", plan, parameters={"seed": 3})
    assert release.algorithm == "schema/private_statistics"
    assert release.parameters == {"columns": ["age", "job", "age", "hours"],
                                  "statistics": ["bounds", "levels", CLIP_COUNTS, CLIP_COUNTS],
                                  "preprocessing_share": 0.2, "seed": 3}
    assert release.event == plan.event
    assert release.epsilon == pytest.approx(_gdp_epsilon(plan.mu_paid, DELTA), rel=1e-8)
    with Ledger(path) as ledger:  # an open Ledger is accepted too, and stays open
        assert [r.id for r in ledger.releases("d")] == [release.id]
        record_prior_events(ledger, "d", plan)
        assert len(ledger.releases("d")) == 2


def test_record_prior_events_checks_the_rest_of_the_fit_first(tmp_path):
    """With ``rest``, a composition the budget cannot admit spends nothing; one it admits
    records the paid event alone."""
    pytest.importorskip("sqlalchemy")
    from noisygd.exceptions import BudgetExceededError
    from noisygd.ledger import Ledger

    path = tmp_path / "ledger.db"
    with Ledger(path) as ledger:
        ledger.set_budget("d", EPS, DELTA)
    plan = plan_paid(_paid_schema(share=0.2), epsilon=EPS, delta=DELTA)
    too_much = Gaussian(noise_multiplier=1.0 / (0.95 * plan.mu_total))  # 0.9 mu^2 + 0.2 mu^2
    with pytest.raises(BudgetExceededError):
        record_prior_events(str(path), "d", plan, rest=too_much)
    with Ledger(path) as ledger:
        assert ledger.releases("d") == []
    fits = Gaussian(noise_multiplier=1.0 / (0.85 * plan.mu_total))  # 0.7225 + 0.2 < 1
    release = record_prior_events(str(path), "d", plan, rest=fits)
    assert release.event == plan.event


# ---------------------------------------------------------------- partitionwise
def _dask_series(values, npartitions=3):
    dd = pytest.importorskip("dask.dataframe")
    return dd.from_pandas(pd.Series(values, name="y"), npartitions=npartitions)


def test_encode_labels_partitionwise_equals_the_in_memory_codes():
    schema = _schema()
    values = ["yes", "no", "no", "yes", "yes", "no", "yes"]
    dseries = _dask_series(values)
    got = encode_labels_partitionwise(schema, dseries).compute(scheduler="sync")
    assert got.dtype == np.int64
    assert got.tolist() == encode_labels(schema, pd.Series(values)).tolist()
    assert got.tolist() == [1, 0, 0, 1, 1, 0, 1]  # positions in [target] labels
    assert got.index.tolist() == list(range(len(values)))


def test_encode_labels_partitionwise_refuses_an_undeclared_label_when_computed():
    lazy = encode_labels_partitionwise(_schema(), _dask_series(["yes", "no", "maybe", "no"]))
    with pytest.raises(SchemaError, match="is not in \\[target\\] labels"):
        lazy.compute(scheduler="sync")


def test_encode_target_values_partitionwise_equals_the_in_memory_values():
    schema = _regression()
    values = [" 1.5", "2", "-3e2", "11", "0"]
    got = encode_target_values_partitionwise(schema, _dask_series(values, 2)).compute(
        scheduler="sync")
    assert got.dtype == np.float64
    expected = encode_target_values(schema, pd.Series(values))
    assert np.array_equal(got.to_numpy(), expected)
    assert np.array_equal(expected, [1.5, 2.0, -300.0, 11.0, 0.0])  # not clipped here


def test_encode_target_values_partitionwise_refuses_missing_and_text_when_computed():
    schema = _regression()
    with pytest.raises(SchemaError, match="has missing values"):
        encode_target_values_partitionwise(schema, _dask_series(["1", None, "2"])).compute(
            scheduler="sync")
    with pytest.raises(SchemaError, match="not a finite number"):
        encode_target_values_partitionwise(schema, _dask_series(["1", "x", "2"])).compute(
            scheduler="sync")


# ---------------------------------------------------------------- plan_bounds
@pytest.fixture(scope="module")
def plan_calls():
    """Every ``plan_bounds`` call ``plan_table`` makes on a small logistic problem, with the
    real plans and contexts, and the rows it returns."""
    import noisygd.schema.plans as plans

    calls = {}
    original = plans.plan_bounds

    def spy(method, plan, ctx):
        out = original(method, plan, ctx)
        calls[method] = (plan, ctx, out)
        return out

    mp = pytest.MonkeyPatch()
    mp.setattr(plans, "plan_bounds", spy)
    try:
        rows = plans.plan_table(model="logistic", n_samples=2000, n_features=3, epsilon=EPS,
                                delta=DELTA, relations=("replace_one",))
    finally:
        mp.undo()
    return calls, rows


def test_plan_bounds_is_the_rows_bound(plan_calls):
    """Each planned row reports the value of plan_bounds' primary bound (or none)."""
    calls, rows = plan_calls
    for row in rows:
        if row.method not in calls:
            continue
        primary = calls[row.method][2][0]
        assert row.bound == (None if primary is None else primary.value)


def test_plan_bounds_noisy_gd_states_its_reference_norm(plan_calls):
    plan, _ctx, (primary, _others, reason) = plan_calls[0]["noisy_gd"]
    det = plan[0].details
    assert primary.value == float(plan[0].bound_value)
    assert primary.covers_run == bool(det.get("bound_covers_run", False))
    first = primary.assumptions[0]
    assert first.name == "D >= ||theta_1 - theta*||"
    assert first.value == float(det["init_distance"])
    assert reason is None


def test_plan_bounds_rrpsgd_theorems_5_and_6(plan_calls):
    plan, _ctx, (primary, others, reason) = plan_calls[0]["rrpsgd"]
    assert primary.value == plan.bounds["theorem5_bound"]
    assert primary.reference.startswith("Theorem 5")
    assert [b.value for b in others] == [plan.bounds["theorem6_bound"]]
    assert others[0].guarantee == f"with probability >= {1.0 - plan.bounds['confidence']:g}"
    assert reason is None


def test_plan_bounds_output_perturbation_is_the_contexts_bound(plan_calls):
    plan, ctx, (primary, others, _reason) = plan_calls[0]["output_perturbation"]
    assert primary.value == float(ctx.op_bound)
    assert primary.assumptions[0].value == ctx.op_reference
    assert primary.assumptions[0].source == ctx.op_reference_source
    assert others == []
    assert plan_bounds("output_perturbation", plan, dataclasses.replace(ctx, op_bound=None)) \
        == (None, [], None)


def test_plan_bounds_without_a_bound_says_why_or_nothing(plan_calls):
    calls = plan_calls[0]
    plan, ctx, out = calls["langevin"]
    assert out == (None, [], plan.excess_risk_bound_reason)
    assert "radius" in out[2]
    assert calls["newton"][2] == (None, [], None)
    assert plan_bounds("not_a_method", plan, ctx) == (None, [], None)


def test_plan_bounds_dp_ftrl_regret_and_its_high_probability_form(plan_calls):
    plan, _ctx, (primary, others, _reason) = plan_calls[0]["dp_ftrl"]
    assert primary.value == plan.regret_bound
    assert primary.comparator == f"any w with ||w|| <= D = {plan.distance:.4g}"
    # replace-one streams the rows in order (leaves of at most b rows): the plan has the
    # high-probability form (solvers.dp_ftrl.BOUND_CONFIDENCE = 0.05), listed first
    assert plan.regret_bound_high_probability is not None
    assert others[0].value == plan.regret_bound_high_probability
    assert others[0].value >= primary.value  # a high-probability bound is the larger
    assert others[0].guarantee == "with probability >= 0.95"


# ---------------------------------------------------------------- rank_rows
def _bound(value, quantity="Q", source="declared"):
    return Bound(value, quantity, "w*", "in expectation", "ref",
                 (Assumption("D", 1.0, source, ""),))


def _row(method, relation, bound=None, refused=None):
    return PlanRow(method=method, relation=relation,
                   bound=None if bound is None else bound.value, refused=refused)


def _rows():
    a1, a2 = _bound(3.0), _bound(1.0)           # group of "Q, declared"
    n1 = _bound(0.5, source="nominal")         # same numbers, nominal premise: another group
    q1, q2 = _bound(9.0, "R"), _bound(2.0, "R")  # another quantity
    return [
        (_row("zeta", "add_remove", a2), a2), (_row("alpha", "add_remove", a1), a1),
        (_row("beta", "replace_one", n1), n1), (_row("gamma", "add_remove", q1), q1),
        (_row("delta", "add_remove", q2), q2),
        (_row("eta", "add_remove"), None),
        (_row("omega", "add_remove", refused="no"), None), (_row("aaa", "x", refused="no"), None),
    ]


def test_rank_rows_groups_comparable_bounds_and_ranks_within_them():
    out = rank_rows(_rows())
    summary = [(r.method, r.group, r.rank, r.group_size) for r in out]
    assert summary == [
        ("zeta", "G1", 1, 2), ("alpha", "G1", 2, 2),    # group of alpha: sorted by bound
        ("beta", "G2", 1, 1),                          # nominal: never ranked with alpha
        ("delta", "G3", 1, 2), ("gamma", "G3", 2, 2),
        ("eta", None, None, None),                     # no bound
        ("aaa", None, None, None), ("omega", None, None, None),  # refused, last
    ]


def test_rank_rows_does_not_depend_on_the_input_order():
    expected = rank_rows(_rows())
    for seed in range(5):
        shuffled = _rows()
        random.Random(seed).shuffle(shuffled)
        assert rank_rows(shuffled) == expected


def test_rank_rows_keeps_every_row_and_changes_only_the_ranking_fields():
    rows = _rows()
    out = rank_rows(rows)
    assert len(out) == len(rows)
    strip = {"group": None, "rank": None, "group_size": None}
    assert sorted(dataclasses.replace(r, **strip).method for r in out) == sorted(
        r.method for r, _ in rows)
    for r in out:
        original = next(o for o, _ in rows if o.method == r.method)
        assert dataclasses.replace(r, **strip) == original
    assert rank_rows([]) == []


# ---------------------------------------------------------------- toml_key, toml_value
@pytest.mark.parametrize("key", ["age", "A_b-9", "0", "a b", "a.b", "", "é", 'quo"te',
                                 "back\\slash", "tab\tkey", "new\nline", "\x01bell", "del\x7f",
                                 "[x]", "k=v", "#c"])
def test_toml_key_round_trips_through_tomllib(key):
    """Any key reads back as itself; bare exactly when TOML's bare-key syntax allows."""
    text = toml_key(key)
    assert tomllib.loads(f"{text} = 1") == {key: 1}
    bare = bool(key) and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    assert (text == key) == bare


@pytest.mark.parametrize("value", [
    0, -7, 2 ** 62, True, False, 0.1, -2.5, 1e300, 5e-324, 1e16, -0.0, 123456789.125,
    "", "plain", 'with "quotes"', "back\\slash", "tab\t nl\n cr\r bs\b ff\f", "\x00\x1f\x7f",
    "ünïcødé ✓", [], [1, 2.5, "x", True], (1, 2), [[1, 2], ["a", [True]]], [math.inf],
])
def test_toml_value_round_trips_through_tomllib(value):
    got = tomllib.loads(f"v = {toml_value(value)}")["v"]
    expected = list(value) if isinstance(value, tuple) else value
    assert got == expected
    assert type(got) is type(expected)
    if isinstance(value, float):
        assert math.copysign(1.0, got) == math.copysign(1.0, value)


def test_toml_value_spells_special_floats_as_toml_does():
    assert toml_value(math.inf) == "inf"
    assert toml_value(-math.inf) == "-inf"
    assert toml_value(math.nan) == "nan"
    assert math.isnan(tomllib.loads(f"v = {toml_value(math.nan)}")["v"])
    assert tomllib.loads(f"v = {toml_value(-math.inf)}")["v"] == -math.inf
    assert toml_value(True) == "true"  # a bool, not the int 1
    assert toml_value(1.0) == "1.0"  # a float stays a float


def test_toml_value_writes_a_numpy_float_as_a_toml_float():
    assert tomllib.loads(f"v = {toml_value(np.float64(1.5))}") == {"v": 1.5}


@pytest.mark.parametrize(("value", "name"), [(None, "NoneType"), ({"a": 1}, "dict"),
                                             (b"x", "bytes"), ([1, None], "NoneType")])
def test_toml_value_refuses_what_a_schema_never_holds(value, name):
    with pytest.raises(TypeError, match=f"cannot write a {name} as a TOML value"):
        toml_value(value)


# ---------------------------------------------------------------- as_schema
_DICT = {"row_norm_bound": 2.0, "target": {"name": "y", "labels": [0, 1]},
         "columns": {"a b": {"kind": "numeric", "bounds": [0, 1]},
                     "pet": {"kind": "categorical", "levels": ["cat", "dog"]}}}


def test_as_schema_passes_a_schema_through():
    schema = parse_schema(_DICT)
    assert as_schema(schema) is schema


def test_as_schema_from_a_dict_and_from_a_file_are_the_same_schema(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(dumps(_DICT))
    from_dict = as_schema(_DICT)
    assert isinstance(from_dict, TableSchema)
    assert from_dict.row_norm_bound == 2.0 and list(from_dict.columns) == ["a b", "pet"]
    assert as_schema(p) == from_dict
    assert as_schema(str(p)) == from_dict


def test_as_schema_refusals():
    with pytest.raises(TypeError, match="schema must be a TableSchema, a dict or the path of a "
                                        "TOML schema file; got list"):
        as_schema([_DICT])
    with pytest.raises(TypeError, match="got int"):
        as_schema(3)
    with pytest.raises(SchemaError, match="not a valid schema"):
        as_schema({"columns": {}})
    with pytest.raises(SchemaError, match="schema file not found"):
        as_schema("/nonexistent/schema.toml")



def test_paid_spec_refuses_a_name_that_is_neither_a_column_nor_the_target():
    """An unknown name raises KeyError (it was an assert: under python -O it returned the
    target's table)."""
    schema = _paid_schema()
    with pytest.raises(KeyError, match="neither a column nor the target"):
        paid_spec(schema, "nonexistent")


@pytest.mark.parametrize(("name", "shown"), [
    ("\x00", "column 3 (its name is not printable)"),
    ("a\x1b[31mb", "column 3 (its name is not printable)"),
    ("x" * 61, "column 3 (its name is 61 characters long)"),
    ("extra", "'extra'"),
])
def test_check_columns_never_quotes_a_control_byte_of_the_header(name, shown):
    """An undeclared header name is quoted only when printable and short (found by the
    hostile CLI fuzz: a file holding the byte 0 put '\\x00' in the error)."""
    schema = _paid_schema()
    with pytest.raises(SchemaError) as info:
        check_columns(schema, ["age", "job", name, "hours", "y"], "data.csv", need_target=True)
    message = str(info.value)
    assert shown in message
    assert "\\x" not in message and "\x00" not in message and "\x1b" not in message
