"""The schema file: TOML read by tomllib, validated by pydantic, errors naming table and key."""

from __future__ import annotations

import copy

import pytest

from noisygd.schema import SchemaError, TableSchema, load_schema, parse_schema
from noisygd.schema.model import level_key

BASE = {
    "row_norm_bound": 2.0,
    "target": {"name": "y", "labels": ["no", "yes"]},
    "columns": {
        "age": {"kind": "numeric", "bounds": [18, 100]},
        "job": {"kind": "categorical", "levels": ["a", "b"], "missing": "indicator"},
        "size": {"kind": "ordinal", "levels": ["S", "M", "L"]},
        "id": {"kind": "ignore"},
    },
}


def _with(path: str, value, base=BASE):
    data = copy.deepcopy(base)
    node = data
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[k]
    if value is _DELETE:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return data


_DELETE = object()


def test_valid_schema_keeps_column_order_and_features():
    s = parse_schema(BASE)
    assert isinstance(s, TableSchema)
    assert list(s.columns) == ["age", "job", "size", "id"]
    assert list(s.features) == ["age", "job", "size"]
    assert s.target.task == "classification"
    assert s.row_norm_bound == 2.0
    assert s.draft_tables() == []
    s.check_final()


@pytest.mark.parametrize(
    ("path", "value", "where", "hint"),
    [
        ("columns.age.bounds", [100, 18], "[columns.age] bounds", "low < high"),
        ("columns.age.bounds", [0, float("inf")], "[columns.age] bounds", "finite"),
        ("columns.age.kind", "numerical", "[columns.age]", "kind must be one of"),
        ("columns.age.bound", [0, 1], "[columns.age]", "unknown key"),
        ("columns.age.missing", 500, "[columns.age]", "within bounds"),
        ("columns.age.transform", "log", "[columns.age] transform",
         "'identity', 'log1p' or 'signed_log1p'"),
        ("columns.job.levels", ["a", "a"], "[columns.job] levels", "distinct"),
        ("columns.job.levels", [], "[columns.job] levels", "at least one"),
        ("columns.job.missing", "c", "[columns.job]", "declared levels"),
        ("columns.job.unknown", "indicator", "[columns.job]", "declared levels"),
        ("columns.size.levels", ["S"], "[columns.size] levels", "two levels"),
        ("target.bounds", [0, 1], "[target]", "exactly one of labels"),
        ("target.labels", ["only"], "[target]", "at least two"),
        ("target.name", "age", "top level", "also has a [columns.age]"),
        ("row_norm_bound", -1.0, "row_norm_bound", "positive"),
        ("columns", {"id": {"kind": "ignore"}}, "top level", "at least one feature"),
        ("file", {"header": False}, "[file]", "names"),
        ("file", {"header": False, "names": ["y", "age", "job", "size"]}, "top level",
         "add id to [file] names"),
        ("file", {"delimiter": ";;"}, "[file]", "one character"),
        ("file", {"encoding": "no-such-codec"}, "[file]", "encoding"),
    ],
)
def test_invalid_schemas_name_the_table_key_and_fix(path, value, where, hint):
    with pytest.raises(SchemaError) as info:
        parse_schema(_with(path, value), "schema s.toml")
    msg = str(info.value)
    assert msg.startswith("schema s.toml is not a valid schema")
    assert where in msg
    assert hint in msg


def test_log1p_needs_bounds_above_minus_one():
    data = _with("columns.age", {"kind": "numeric", "bounds": [-1, 5], "transform": "log1p"})
    with pytest.raises(SchemaError, match="low > -1"):
        parse_schema(data)


def test_regression_target():
    s = parse_schema(_with("target", {"name": "y", "bounds": [25, 346]}))
    assert s.target.task == "regression"
    assert s.target.bounds == (25.0, 346.0)


def test_load_schema_reads_toml_and_refuses_duplicates(tmp_path):
    good = tmp_path / "s.toml"
    good.write_text('row_norm_bound = 1.0\n[target]\nname = "y"\nlabels = [0, 1]\n'
                    '[columns.a]\nkind = "numeric"\nbounds = [0, 1]\n'
                    '[columns."odd name"]\nkind = "categorical"\nlevels = ["x", 2]\n')
    s = load_schema(good)
    assert list(s.columns) == ["a", "odd name"]
    dup = tmp_path / "dup.toml"
    dup.write_text('[columns.a]\nkind = "numeric"\nbounds = [0, 1]\n'
                   '[columns.a]\nkind = "ignore"\n')
    with pytest.raises(SchemaError, match="not valid TOML"):
        load_schema(dup)
    with pytest.raises(SchemaError, match="not found"):
        load_schema(tmp_path / "absent.toml")


def test_draft_tables_are_refused_by_check_final():
    data = _with("columns.age.draft", True)
    data["target"]["draft"] = True
    data["draft"] = True
    s = parse_schema(data)
    assert s.draft_tables() == ["top level (draft = true)", "[target]", "[columns.age]"]
    with pytest.raises(SchemaError, match=r"draft \(data-derived\) values in .*\[columns.age\]"):
        s.check_final("schema s.toml")


def test_check_final_needs_a_target():
    s = parse_schema(_with("target", _DELETE))
    with pytest.raises(SchemaError, match=r"no \[target\]"):
        s.check_final()


@pytest.mark.parametrize(("a", "b"), [(1, "1"), (1.0, "1"), (" x ", "x"), (True, "true")])
def test_level_key_compares_as_text(a, b):
    assert level_key(a) == level_key(b)


def test_levels_clash_when_equal_as_text():
    with pytest.raises(SchemaError, match="distinct"):
        parse_schema(_with("columns.job.levels", [1, "1"]))


def test_a_label_that_is_also_a_missing_marker_is_refused():
    """[file] na_values = ["NA"] with a label "NA": its cells were read as missing and the
    fit refused them as missing targets; the schema now names the clash."""
    with pytest.raises(SchemaError, match=r"\[target\] labels \['NA'\] are also in \[file\] "
                                          r"na_values"):
        parse_schema({"file": {"na_values": ["NA", "?"]},
                      "target": {"name": "y", "labels": ["NA", "EU"]},
                      "columns": {"a": {"kind": "numeric", "bounds": [0, 1]}}})
