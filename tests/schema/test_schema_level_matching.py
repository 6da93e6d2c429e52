"""How cells match declared levels and labels: booleans and numbers written as text.

Regressions of the hostile-input sweep: a Parquet ``bool`` column was drafted as
``levels = ["False", "True"]`` but compared as ``"true"``/``"false"``, so every row was an
unknown level (all zeros under the draft's ``unknown = "zeros"``), and a boolean target was
refused with its own drafted labels; the CSV text ``1.0`` did not match a declared ``1``
although the documentation says ``1``, ``1.0`` and ``"1"`` agree.
"""

from __future__ import annotations

import tomllib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from noisygd.data.io import read_raw_table
from noisygd.schema import (
    SchemaError,
    draft_toml,
    encode_features,
    encode_labels,
    parse_schema,
)
from noisygd.schema.model import level_codes

N = 60


def _bool_frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    flag = rng.random(N) < 0.5
    return pd.DataFrame({"x": rng.uniform(-1, 1, N).round(3), "flag": flag,
                         "y": flag ^ (rng.random(N) < 0.1)})


def _confirmed_draft(frame: pd.DataFrame, target: str = "y") -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = draft_toml(frame, target=target)
    return tomllib.loads("\n".join(line for line in text.splitlines()
                                   if not line.startswith("draft =")))


def _flag_block(schema, frame: pd.DataFrame) -> np.ndarray:
    X = encode_features(schema, frame)
    return X[:, 1:3]  # x, then flag=False, flag=True


@pytest.mark.parametrize("dtype", ["bool", "boolean"])
def test_a_drafted_boolean_column_encodes_its_values(dtype: str) -> None:
    """Parquet bool and pandas' nullable boolean: the drafted levels match every row (before:
    an all-zero block, every row an unknown level)."""
    frame = _bool_frame().astype({"flag": dtype, "y": dtype})
    data = _confirmed_draft(frame)
    assert data["columns"]["flag"]["levels"] == ["False", "True"]
    assert data["target"]["labels"] == ["False", "True"]
    schema = parse_schema(data)
    block = _flag_block(schema, frame)
    assert np.all(block.sum(axis=1) > 0)  # no row is an unknown level
    np.testing.assert_array_equal(block[:, 1] > 0, frame["flag"].to_numpy(dtype=bool))
    codes = encode_labels(schema, frame["y"])  # the drafted labels are accepted
    np.testing.assert_array_equal(codes, frame["y"].to_numpy(dtype=bool).astype(int))


def test_a_nullable_boolean_with_missing_cells_uses_the_missing_rule() -> None:
    frame = _bool_frame().astype({"flag": "boolean"})
    frame.loc[[3, 7], "flag"] = pd.NA
    data = _confirmed_draft(frame)
    assert data["columns"]["flag"]["missing"] == "indicator"
    X = encode_features(parse_schema(data), frame)
    block = X[:, 1:4] > 0  # flag=False, flag=True, flag=<missing>
    assert np.all(block.sum(axis=1) == 1)
    np.testing.assert_array_equal(np.flatnonzero(block[:, 2]), [3, 7])


@pytest.mark.parametrize("declared", [["False", "True"], ["false", "true"], ["FALSE", "TRUE"]])
@pytest.mark.parametrize("written", [("False", "True"), ("false", "true"), ("FALSE", "TRUE"),
                                     (False, True)])
def test_boolean_words_match_in_any_case(declared: list[str], written: tuple) -> None:
    """CSV text True/true/TRUE and a bool cell match a declared boolean word in any case."""
    cells = pd.Series([written[1], written[0], None, written[1]], dtype=object)
    np.testing.assert_array_equal(level_codes(declared, cells), [1, 0, -1, 1])


def test_boolean_words_declared_twice_match_only_exactly() -> None:
    cells = pd.Series(["True", "true", "TRUE", True], dtype=object)
    np.testing.assert_array_equal(level_codes(["True", "true", "no"], cells), [0, 1, -1, 1])


def test_a_bool_is_not_the_integer_1() -> None:
    cells = pd.Series([True, False, "1.0"], dtype=object)
    np.testing.assert_array_equal(level_codes([0, 1], cells), [-1, -1, 1])


@pytest.mark.parametrize("declared", [[1, 2, 3], ["1", "2", "3"]])
def test_numeric_text_matches_a_declared_integer(declared: list) -> None:
    cells = pd.Series(["1.0", " 2 ", "3.00", "1e0", "+2", "4.0", "1.5", "1_0", "nan", None])
    np.testing.assert_array_equal(level_codes(declared, cells),
                                  [0, 1, 2, 0, 1, -1, -1, -1, -1, -1])


def test_text_levels_that_are_not_integers_match_their_own_text_only() -> None:
    cells = pd.Series(["01", "1", "1.5", "1.50", "2.0"])
    np.testing.assert_array_equal(level_codes(["01", "1.5", "2.0"], cells), [0, -1, 1, -1, 2])


SCHEMA = """
row_norm_bound = 1.0
[target]
name = "y"
labels = [0, 1]
[columns.x1]
kind = "numeric"
bounds = [-4, 4]
[columns.edu]
kind = "categorical"
levels = [1, 2, 3]
unknown = "{unknown}"
"""


def _float_frame() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    edu = rng.integers(1, 4, N).astype(float)
    return pd.DataFrame({"x1": rng.normal(size=N).round(3), "edu": edu,
                         "y": (edu + rng.normal(0, 0.5, N) > 2).astype(float)})


@pytest.mark.parametrize("unknown", ["error", "zeros"])
def test_csv_and_parquet_of_the_same_floats_encode_alike(tmp_path: Path, unknown: str) -> None:
    """pandas writes a float column to CSV as 1.0, 2.0: the CSV text and the Parquet numbers
    match the declared integer levels and labels alike (before: CSV refused, or with
    unknown = "zeros" an all-zero edu block)."""
    pytest.importorskip("pyarrow")
    frame = _float_frame()
    csv, pq = tmp_path / "f.csv", tmp_path / "f.parquet"
    frame.to_csv(csv, index=False)
    frame.to_parquet(pq)
    assert "1.0" in csv.read_text()
    schema = parse_schema(tomllib.loads(SCHEMA.format(unknown=unknown)))
    from_csv, from_pq = read_raw_table(csv), read_raw_table(pq)
    X_csv, X_pq = encode_features(schema, from_csv), encode_features(schema, from_pq)
    np.testing.assert_array_equal(X_csv, X_pq)
    assert np.all((X_csv[:, 1:] > 0).sum(axis=1) == 1)  # every row one declared level
    np.testing.assert_array_equal(encode_labels(schema, from_csv["y"]),
                                  encode_labels(schema, from_pq["y"]))
    np.testing.assert_array_equal(encode_labels(schema, from_csv["y"]), frame["y"].astype(int))


def test_csv_and_parquet_of_the_same_booleans_encode_alike(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    frame = _bool_frame()
    csv, pq = tmp_path / "b.csv", tmp_path / "b.parquet"
    frame.to_csv(csv, index=False)
    frame.to_parquet(pq)
    schema = parse_schema(_confirmed_draft(read_raw_table(pq)))
    from_csv, from_pq = read_raw_table(csv), read_raw_table(pq)
    np.testing.assert_array_equal(encode_features(schema, from_csv),
                                  encode_features(schema, from_pq))
    np.testing.assert_array_equal(encode_labels(schema, from_csv["y"]),
                                  encode_labels(schema, from_pq["y"]))
    # the same draft from the CSV copy
    assert _confirmed_draft(from_csv) == _confirmed_draft(from_pq)


def test_an_undeclared_label_is_still_refused() -> None:
    schema = parse_schema(tomllib.loads(SCHEMA.format(unknown="error")))
    with pytest.raises(SchemaError, match="not in \\[target\\] labels"):
        encode_labels(schema, pd.Series(["0.0", "1.0", "2.0"]))
    with pytest.raises(SchemaError, match="not in \\[target\\] labels"):
        encode_labels(schema, pd.Series(["0.0", "0.5"]))


def test_a_csv_float_target_drafts_integer_labels() -> None:
    """The draft of the CSV text 0.0/1.0 is the draft of the Parquet numbers: labels [0, 1]
    (before: ["0.0", "1.0"], which the Parquet copy did not match)."""
    frame = _float_frame()
    as_text = frame.astype(str)
    assert _confirmed_draft(as_text)["target"]["labels"] == [0, 1]
    assert _confirmed_draft(frame)["target"]["labels"] == [0, 1]
    halves = frame.assign(y=frame["y"] + 0.5)
    assert _confirmed_draft(halves)["target"]["labels"] == ["0.5", "1.5"]  # not a float


@pytest.mark.parametrize(("rows", "message"), [(0, "no data rows"), (1, "too few data rows")])
def test_a_draft_of_no_or_one_row_says_so(rows: int, message: str) -> None:
    frame = pd.DataFrame({"a": ["1.5", "2.5"], "b": ["3", "4"]}).iloc[:rows]
    with pytest.raises(ValueError, match=message):
        draft_toml(frame)


def test_cli_fits_a_parquet_boolean_draft_and_predicts_its_csv_copy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``schema draft`` -> confirm -> ``fit --schema`` on a Parquet file with a bool feature
    and a bool target; ``predict`` on the CSV copy gives the same predictions (before: the
    target was refused with its own drafted labels)."""
    pytest.importorskip("pyarrow")
    from noisygd.cli import main

    frame = _bool_frame()
    pq, csv = tmp_path / "b.parquet", tmp_path / "b.csv"
    frame.to_parquet(pq)
    frame.to_csv(csv, index=False)
    draft = tmp_path / "s.toml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["schema", "draft", str(pq), "--target", "y", "--out", str(draft)]) == 0
    draft.write_text("\n".join(line for line in draft.read_text().splitlines()
                               if not line.startswith("draft =")))
    model = tmp_path / "m.json"
    code = main(["fit", str(pq), "--schema", str(draft), "--epsilon", "8", "--seed", "0",
                 "--n-samples-public", str(N), "--quiet", "--out", str(model)])
    assert code == 0, capsys.readouterr().err
    preds = []
    for source in (pq, csv):
        out = tmp_path / f"p_{source.suffix[1:]}.csv"
        assert main(["predict", str(model), str(source), "--out", str(out)]) == 0
        preds.append(pd.read_csv(out))
    pd.testing.assert_frame_equal(preds[0], preds[1])
    assert list(preds[0].columns) == ["prediction", "proba_False", "proba_True"]


def test_the_paid_vocabulary_counts_booleans_as_the_encoder_reads_them() -> None:
    # levels = "private" counted the vocabulary by exact text only: a Parquet bool column
    # with vocabulary ["False", "True"] counted zero rows for both (every level dropped)
    from noisygd.schema.model import CategoricalColumn
    from noisygd.schema.paid import _level_codes

    spec = CategoricalColumn(kind="categorical", levels="private", vocabulary=["False", "True"])
    plain = pd.DataFrame({"c": pd.Series([True, False, True])})
    assert _level_codes(plain, "c", spec).tolist() == [1, 0, 1]
    nullable = pd.DataFrame({"c": pd.Series([True, None, False], dtype="boolean")})
    assert _level_codes(nullable, "c", spec).tolist() == [1, -1, 0]


def test_predict_warns_where_unknown_levels_became_zeros() -> None:
    # predict encoded unseen levels as all zeros silently under the draft's unknown = "zeros"
    # (upper-casing one column cut accuracy from 0.80 to 0.72); the fit stays silent (its
    # rows are the private data), and a declared unknown level is the user's own mapping
    from noisygd.schema.encode import encode_features

    schema = parse_schema({
        "target": {"name": "y", "labels": [0, 1]},
        "columns": {"job": {"kind": "categorical", "levels": ["a", "b"], "unknown": "zeros"},
                    "town": {"kind": "categorical", "levels": ["x", "other"],
                             "unknown": "other"}}})
    frame = pd.DataFrame({"job": ["a", "B"], "town": ["x", "elsewhere"]})
    with pytest.warns(UserWarning, match=r"column 'job': 1 of 2 rows, encoded as all zeros"):
        X = encode_features(schema, frame, "new.csv", warn_unknown=True)
    assert np.all(X[1, :2] == 0.0)  # "B" is not "b": an all-zero block
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encode_features(schema, frame, "train.csv")  # a fit's encoding: nothing said
        encode_features(schema, frame.assign(job=["a", "b"]), "new.csv", warn_unknown=True)


def test_predict_counts_the_rows_with_levels_unseen_at_fit() -> None:
    # predict named the columns of unknown = "zeros" only, without a count, and said nothing
    # where a paid level list's "<other>" took in a level the fit dropped (or one outside the
    # vocabulary): the warning names each column and how many prediction rows
    from noisygd.schema.fitting import fit_table, predict_table

    rng = np.random.default_rng(0)
    n = 3000
    frame = pd.DataFrame({"job": rng.choice(["a", "b"], n), "town": rng.choice(["x", "y"], n)})
    frame["y"] = np.where((frame["job"] == "a") ^ (rng.random(n) < 0.2), "yes", "no")
    schema = parse_schema({
        "target": {"name": "y", "labels": ["no", "yes"]},
        "columns": {"job": {"kind": "categorical", "levels": "private",
                            "vocabulary": ["a", "b", "c"]},
                    "town": {"kind": "categorical", "levels": ["x", "y"], "unknown": "zeros"}}})
    _, payload = fit_table(schema, frame, params={"epsilon": 1.0, "random_state": 0})
    assert payload["schema"]["columns"]["job"]["levels"] == ["a", "b", "<other>"]
    new = pd.DataFrame({"job": ["a", "c", "zz", "b"], "town": ["x", "y", "X", "y"]})
    with pytest.warns(UserWarning) as record:
        predict_table(payload, new, "new.csv")
    (message,) = [str(w.message) for w in record if "levels the model" in str(w.message)]
    assert "column 'job': 2 of 4 rows, encoded as the level '<other>'" in message
    assert "column 'town': 1 of 4 rows, encoded as all zeros" in message
    assert "'c'" not in message and "zz" not in message  # no cell, no dropped level quoted
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        predict_table(payload, new.iloc[[0, 3]], "new.csv")  # every level seen: silent
