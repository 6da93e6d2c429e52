"""Tests of noisygd.data.read_table: formats it reads and the errors that name the file."""

from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from noisygd.data import DataFileError, MissingDependencyError, read_table
from noisygd.data import io as data_io

CSV = "a,b,label\n1,2.5,yes\n3,-4,no\n"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("sep", [",", ";", "\t"])
def test_reads_csv_with_sniffed_delimiter(tmp_path: Path, sep: str) -> None:
    p = _write(tmp_path / "t.csv", CSV.replace(",", sep))
    X, y, names = read_table(p, target="label")
    np.testing.assert_array_equal(X, [[1.0, 2.5], [3.0, -4.0]])
    assert X.dtype == np.float64 and X.flags.c_contiguous
    assert names == ["a", "b"]
    assert list(y) == ["yes", "no"]


def test_reads_gzipped_csv_with_bom_and_numeric_target(tmp_path: Path) -> None:
    p = tmp_path / "t.csv.gz"
    with gzip.open(p, "wt", encoding="utf-8-sig") as fh:
        fh.write("x1;x2;t\n0.5;1;10\n2;3;20\n")
    X, y, names = read_table(p, target="t")
    assert names == ["x1", "x2"]
    np.testing.assert_array_equal(X, [[0.5, 1.0], [2.0, 3.0]])
    assert y is not None and y.dtype == np.float64
    np.testing.assert_array_equal(y, [10.0, 20.0])


def test_no_target_gives_all_columns_and_none(tmp_path: Path) -> None:
    p = _write(tmp_path / "t.csv", "a,b\n1,2\n")
    X, y, names = read_table(p)
    assert y is None and names == ["a", "b"] and X.shape == (1, 2)


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="pyarrow not installed")
def test_reads_parquet(tmp_path: Path) -> None:
    p = tmp_path / "t.parquet"
    pd.DataFrame({"a": [1.0, 2.0], "b": [3, 4], "y": [0, 1]}).to_parquet(p)
    X, y, names = read_table(p, target="y")
    np.testing.assert_array_equal(X, [[1.0, 3.0], [2.0, 4.0]])
    np.testing.assert_array_equal(y, [0.0, 1.0])
    assert names == ["a", "b"]


def test_parquet_without_pyarrow_says_how_to_install(tmp_path: Path, monkeypatch) -> None:
    p = tmp_path / "t.parquet"
    p.write_bytes(b"PAR1 whatever")
    real = importlib.util.find_spec

    def find_spec(name: str, *args):
        return None if name == "pyarrow" else real(name, *args)

    monkeypatch.setattr(data_io.importlib.util, "find_spec", find_spec)
    with pytest.raises(MissingDependencyError, match=r"pip install noisygd\[parquet\]") as err:
        read_table(p)
    assert isinstance(err.value, ImportError) and isinstance(err.value, DataFileError)


def test_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "nope.csv"
    with pytest.raises(DataFileError, match="not found") as err:
        read_table(p)
    assert str(p) in str(err.value)


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="is a directory"):
        read_table(tmp_path)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.csv", b"", "empty"),
        ("header_only.csv", b"a,b,label\n", "empty table"),
        ("bad.csv.gz", b"\x1f\x8b\x08\x00garbage-that-is-not-deflate", "corrupt"),
        ("binary.csv", bytes(range(128, 256)) * 4, "corrupt"),
        ("bad.parquet", b"PAR1 this is not a parquet file", "corrupt"),
        ("ragged.csv", b"a,b\n1,2\n1,2,3,4,5\n", "corrupt or malformed"),
    ],
)
def test_unreadable_or_empty_files(tmp_path: Path, name: str, content: bytes, message: str) -> None:
    p = tmp_path / name
    p.write_bytes(content)
    with pytest.raises(DataFileError, match=message) as err:
        read_table(p)
    assert str(p) in str(err.value)


def test_truncated_gzip(tmp_path: Path) -> None:
    p = tmp_path / "t.csv.gz"
    data = gzip.compress(("a,b\n" + "1,2\n" * 5000).encode())
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataFileError, match=r"t\.csv\.gz"):
        read_table(p)


def test_unknown_target_lists_columns(tmp_path: Path) -> None:
    p = _write(tmp_path / "t.csv", CSV)
    with pytest.raises(DataFileError, match=r"'target' not found.*a, b, label"):
        read_table(p, target="target")


def test_non_numeric_feature_columns_are_named(tmp_path: Path) -> None:
    p = _write(tmp_path / "t.csv", "a,colour,b,city,y\n1,red,2,Paris,0\n2,blue,3,Rome,1\n")
    with pytest.raises(DataFileError, match=r"non-numeric feature columns.*colour, city"):
        read_table(p, target="y")


def test_missing_values_are_named(tmp_path: Path) -> None:
    p = _write(tmp_path / "t.csv", "a,b,y\n1,,0\n2,3,1\n")
    with pytest.raises(DataFileError, match=r"missing or non-finite.*: b"):
        read_table(p, target="y")
    q = _write(tmp_path / "u.csv", "a,y\n1,\n2,1\n")
    with pytest.raises(DataFileError, match=r"target column 'y'.*missing"):
        read_table(q, target="y")


def test_a_class_labelled_na_is_read_verbatim_when_declared(tmp_path: Path) -> None:
    # pandas reads NA, N/A, null, ... as missing: a class "NA" was reported as a missing target
    p = _write(tmp_path / "t.csv", "a,label\n1,NA\n2,EU\n3,NA\n")
    with pytest.raises(DataFileError, match=r"'label'.*texts that pandas reads as missing: NA"):
        read_table(p, target="label")
    X, y, _ = read_table(p, target="label", labels=["NA", "EU"])
    assert list(y) == ["NA", "EU", "NA"] and X.shape == (3, 1)
    empty = _write(tmp_path / "e.csv", "a,label\n1,NA\n2,\n")  # an empty cell stays missing
    with pytest.raises(DataFileError, match="missing values"):
        read_table(empty, target="label", labels=["NA", "EU"])


@pytest.mark.parametrize("header", [",a,label", "a,,label", "a, ,label"])
def test_a_blank_header_cell_is_refused(tmp_path: Path, header: str) -> None:
    # pandas named the column "Unnamed: N" and a fit used it as a feature, silently (a row
    # index written by to_csv without index=False)
    p = _write(tmp_path / "t.csv", f"{header}\n0,1.5,yes\n1,2.5,no\n")
    with pytest.raises(DataFileError, match=r"t\.csv has a blank cell \(column\(s\) [12]; "
                                            r"pandas would name it 'Unnamed: [01]'"):
        read_table(p, target="label")


def test_a_feature_named_as_pandas_names_a_blank_cell_warns(tmp_path: Path) -> None:
    p = _write(tmp_path / "t.csv", "Unnamed: 0,a,label\n0,1.5,yes\n1,2.5,no\n")
    with pytest.warns(UserWarning, match=r"'Unnamed: 0' have the name pandas gives a column "
                                         r"whose header cell was blank"):
        _, _, names = read_table(p, target="label")
    assert names == ["Unnamed: 0", "a"]


def test_refuse_blank_header_cells_reads_the_header_as_written(tmp_path: Path) -> None:
    # the check the Dask reader makes on each file (dd.read_csv's options), directly
    from noisygd.data.io import refuse_blank_header_cells

    options = {"compression": None, "encoding": "utf-8", "sep": ",", "comment": None}
    good = _write(tmp_path / "g.csv", "a,b,label\n1,2,yes\n")
    refuse_blank_header_cells(good, options)  # every cell named: nothing raised
    bad = _write(tmp_path / "b.csv", "a,,label\n1,2,yes\n")
    with pytest.raises(DataFileError, match=r"b\.csv has a blank cell \(column\(s\) 2; "):
        refuse_blank_header_cells(bad, options)
