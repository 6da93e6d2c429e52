"""Drafts: every data-derived value marked, a PrivacyLeakWarning, refused by fit until resolved."""

from __future__ import annotations

import re
import tomllib
import warnings

import numpy as np
import pandas as pd
import pytest

from noisygd.exceptions import PrivacyLeakWarning
from noisygd.schema import DATA_DERIVED, SchemaError, draft_toml, parse_schema
from noisygd.schema.toml_write import dumps


def _frame():
    rng = np.random.default_rng(0)
    n = 300
    return pd.DataFrame({
        "age": rng.integers(18, 90, size=n).astype(str),
        "pet": rng.choice(["cat", "dog"], size=n),
        "score": np.where(rng.random(n) < 0.1, None, rng.normal(size=n).round(3).astype(str)),
        "id": [f"row{i}" for i in range(n)],
        "y": rng.choice(["no", "yes"], size=n),
    })


def test_draft_marks_every_derived_value_and_warns():
    frame = _frame()
    with pytest.warns(PrivacyLeakWarning, match="computed from the data"):
        text = draft_toml(frame, target="y", source="data.csv")
    data = tomllib.loads(text)
    schema = parse_schema(data)
    assert data["draft"] is True
    # every table with a derived value is a draft table; every derived line carries the mark
    assert schema.draft_tables() == ["top level (draft = true)", "[target]", "[columns.age]",
                                     "[columns.pet]", "[columns.score]", "[columns.id]"]
    for key in ("bounds", "levels", "labels", "missing"):
        for line in text.splitlines():
            if re.match(rf"^{key} = ", line):
                assert DATA_DERIVED in line, line
    assert data["columns"]["age"]["kind"] == "numeric"
    assert data["columns"]["pet"]["levels"] == ["cat", "dog"]
    assert data["columns"]["score"]["missing"] == "indicator"
    assert data["columns"]["id"]["kind"] == "ignore"  # 300 distinct strings
    assert data["target"]["labels"] == ["no", "yes"]
    with pytest.raises(SchemaError, match="draft"):
        schema.check_final()


def test_confirmed_draft_is_accepted():
    with pytest.warns(PrivacyLeakWarning):
        text = draft_toml(_frame(), target="y")
    confirmed = "\n".join(line for line in text.splitlines() if not line.startswith("draft ="))
    parse_schema(tomllib.loads(confirmed)).check_final()


@pytest.mark.parametrize("distinct", [5, 300])
def test_a_numeric_column_with_marker_cells_names_na_values(distinct):
    """Numbers but for a marker ("?", "-"): drafted as levels (few numbers) or ignored (many),
    whose reason named neither the markers nor --na-values; now it says how to re-draft."""
    rng = np.random.default_rng(0)
    n = 300
    cells = rng.integers(0, distinct, size=n).astype(str).astype(object)
    cells[::10], cells[::13] = "?", "-"
    frame = pd.DataFrame({"x": cells, "pet": rng.choice(["cat", "dog"], size=n),
                          "y": rng.choice(["no", "yes"], size=n)})
    with pytest.warns(PrivacyLeakWarning):
        text = draft_toml(frame, target="y")
    table = text.split("[columns.x]")[1].split("[columns.pet]")[0]
    (line,) = [ln for ln in table.splitlines() if ln.startswith(("kind = \"ignore\"", "levels ="))]
    assert "--na-values '-' --na-values '?'" in line and 'na_values = ["-", "?"]' in line
    # a text column with a stray number is not taken for numbers with markers
    words = pd.DataFrame({"x": rng.choice(["cat", "dog", "1"], size=n), "y": frame["y"]})
    with pytest.warns(PrivacyLeakWarning):
        assert "--na-values" not in draft_toml(words, target="y")
    if distinct == 300:  # the only feature column, ignored: the refusal says why
        with pytest.raises(ValueError, match=r"column\(s\) 'x' hold numbers but for a few "
                                             r"texts.*--na-values"):
            draft_toml(frame.drop(columns=["pet"]), target="y")


def test_numeric_target_with_many_values_is_drafted_as_bounds():
    frame = pd.DataFrame({"x": ["1", "2"] * 20, "t": [str(v) for v in range(40)]})
    with pytest.warns(PrivacyLeakWarning):
        data = tomllib.loads(draft_toml(frame, target="t"))
    assert data["target"]["bounds"] == [0, 39]


def test_unknown_target_is_refused():
    # refused before anything is drafted: nothing was read from the data, so no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="not a column"):
            draft_toml(_frame(), target="nope")


@pytest.mark.parametrize("name", ["plain", "with space", 'quo"te', "back\\slash", "tab\there",
                                  "ünïcode", "ctl\x01\x7f", "a.b"])
def test_toml_writer_round_trips(name):
    data = {"row_norm_bound": 1.5, "draft": False,
            "file": {"header": True, "na_values": ["?", "", 'x"y']},
            "target": {"name": name, "labels": [name, 1, "2"]},
            "columns": {name + "_c": {"kind": "numeric", "bounds": [-1e-300, 1e300]},
                        "z": {"kind": "categorical", "levels": [name, "a"]}}}
    text = dumps(data, comments={"columns.z.levels": "note", "target": "above\nthe table"})
    assert tomllib.loads(text) == data
    assert "# above\n# the table\n[target]" in text
