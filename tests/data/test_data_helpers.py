"""Small public helpers of the data layer: ``noisygd.data.io.is_parquet``,
``noisygd.data.io.read_csv_file``, ``noisygd.data.output.check_table_suffix`` and
``noisygd.data.uci._common.check_data_dir`` / ``locate`` / ``read_by_schema``."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from noisygd.data.io import DataFileError, is_parquet, read_csv_file, read_raw_table
from noisygd.data.output import TABLE_SUFFIXES, OutputPathError, check_table_suffix
from noisygd.data.uci._common import check_data_dir, locate, read_by_schema
from noisygd.schema import parse_schema

SECRET = "Zürich-SECRET-cell"


# ---------------------------------------------------------------- is_parquet
@pytest.mark.parametrize("name", ["t.parquet", "t.pq", "T.PARQUET", "t.Pq"])
def test_is_parquet_by_suffix_without_reading(tmp_path, name):
    """A ``.parquet``/``.pq`` name (any case) is Parquet, even before the file exists."""
    assert is_parquet(tmp_path / name)


def test_is_parquet_by_magic_bytes_whatever_the_name(tmp_path):
    """A file starting with ``PAR1`` is Parquet under any name; a CSV file is not."""
    magic = tmp_path / "data.bin"
    magic.write_bytes(b"PAR1" + b"\x00" * 8)
    csv = tmp_path / "data.csv"
    csv.write_text("a,b\n1,2\n")
    short = tmp_path / "short.dat"
    short.write_bytes(b"PAR")  # a prefix of the magic is not the magic
    assert is_parquet(magic)
    assert not is_parquet(csv)
    assert not is_parquet(short)


def test_is_parquet_recognises_a_real_parquet_file_without_its_suffix(tmp_path):
    """A file pandas writes as Parquet, renamed ``.dat``, is recognised by its content."""
    pytest.importorskip("pyarrow")
    p = tmp_path / "table.dat"
    pd.DataFrame({"a": [1, 2]}).to_parquet(p, engine="pyarrow")
    assert is_parquet(p)


def test_is_parquet_of_a_missing_non_parquet_name_is_a_data_file_error(tmp_path):
    """Without a Parquet suffix the head is read: a missing file is a DataFileError."""
    with pytest.raises(DataFileError, match="cannot read"):
        is_parquet(tmp_path / "absent.csv")


# ---------------------------------------------------------------- read_csv_file
def test_read_csv_file_round_trips_and_passes_options(tmp_path):
    """A written frame is read back equal; keyword options reach pandas (sep=";")."""
    frame = pd.DataFrame({"x": [1.5, -2.0, 3.25], "name": ["a", "b", "c"]})
    p = tmp_path / "t.csv"
    frame.to_csv(p, index=False, sep=";")
    pd.testing.assert_frame_equal(read_csv_file(p, sep=";"), frame)
    # without the option the line is one field: the option did change the parse
    assert read_csv_file(p).shape == (3, 1)


def test_read_csv_file_reads_gzip_by_option(tmp_path):
    p = tmp_path / "t.csv.gz"
    p.write_bytes(gzip.compress(b"a,b\n1,2\n3,4\n"))
    got = read_csv_file(p, compression="gzip")
    assert got.to_dict("list") == {"a": [1, 3], "b": [2, 4]}


def test_read_csv_file_missing_and_directory(tmp_path):
    with pytest.raises(DataFileError, match="data file not found"):
        read_csv_file(tmp_path / "nope.csv")
    with pytest.raises(DataFileError, match="is a directory, not a file"):
        read_csv_file(tmp_path)


def test_read_csv_file_empty_file(tmp_path):
    p = tmp_path / "empty.csv"
    p.write_bytes(b"")
    with pytest.raises(DataFileError, match="is empty"):
        read_csv_file(p)


def test_read_csv_file_malformed_rows_quote_no_cell(tmp_path):
    """A row with more fields than the header is refused; the message names the file and
    the problem but never a cell."""
    p = tmp_path / "bad.csv"
    p.write_text(f"a,b\n1,2\n3,{SECRET},5,6\n")
    with pytest.raises(DataFileError, match="same number of fields") as info:
        read_csv_file(p)
    assert str(p) in str(info.value)
    assert SECRET not in str(info.value)


def test_read_csv_file_non_utf8_quotes_no_byte(tmp_path):
    p = tmp_path / "latin.csv"
    p.write_bytes(b"a,b\n1," + SECRET.encode("latin-1") + b"\n")
    with pytest.raises(DataFileError, match="not UTF-8 text") as info:
        read_csv_file(p)
    assert "SECRET" not in str(info.value)
    assert isinstance(info.value, ValueError)  # DataFileError is a ValueError


# ---------------------------------------------------------------- check_table_suffix
@pytest.mark.parametrize("suffix", TABLE_SUFFIXES)
def test_check_table_suffix_accepts_every_table_ending(tmp_path, suffix):
    """Each documented ending is accepted, in any case, and the path comes back as a Path."""
    for name in (f"out{suffix}", f"OUT{suffix.upper()}"):
        got = check_table_suffix(str(tmp_path / name))
        assert isinstance(got, Path)
        assert got == tmp_path / name


@pytest.mark.parametrize(("name", "shown"), [("model.json", ".json"), ("table", "no ending"),
                                             ("x.csv.bak", ".bak"), ("x.xlsx", ".xlsx")])
def test_check_table_suffix_refuses_other_endings(name, shown):
    """Another ending is refused, naming the path, the ending and the accepted ones."""
    with pytest.raises(OutputPathError, match="predictions path") as info:
        check_table_suffix(name, "predictions")
    msg = str(info.value)
    assert shown in msg and name in msg
    assert all(s in msg for s in TABLE_SUFFIXES)


# ---------------------------------------------------------------- check_data_dir
def test_check_data_dir_returns_the_directory_as_a_path(tmp_path):
    assert check_data_dir(str(tmp_path)) == tmp_path
    assert isinstance(check_data_dir(str(tmp_path)), Path)


def test_check_data_dir_refuses_absent_and_file(tmp_path):
    with pytest.raises(DataFileError, match="data directory not found"):
        check_data_dir(tmp_path / "absent")
    f = tmp_path / "f.txt"
    f.write_text("x")
    with pytest.raises(DataFileError, match="is not a directory"):
        check_data_dir(f)


# ---------------------------------------------------------------- locate
def test_locate_finds_the_file_or_its_gzip_twin(tmp_path):
    """``relative`` is found as given, else with ``.gz`` added, else with ``.gz`` removed."""
    (tmp_path / "plain.csv").write_text("a\n1\n")
    (tmp_path / "packed.csv.gz").write_bytes(gzip.compress(b"a\n1\n"))
    assert locate(tmp_path, "plain.csv") == tmp_path / "plain.csv"
    assert locate(tmp_path, "packed.csv") == tmp_path / "packed.csv.gz"
    assert locate(tmp_path, "plain.csv.gz") == tmp_path / "plain.csv"


def test_locate_prefers_the_name_as_given(tmp_path):
    (tmp_path / "both.csv").write_text("a\n1\n")
    (tmp_path / "both.csv.gz").write_bytes(gzip.compress(b"a\n1\n"))
    assert locate(tmp_path, "both.csv") == tmp_path / "both.csv"
    assert locate(tmp_path, "both.csv.gz") == tmp_path / "both.csv.gz"


def test_locate_in_a_subfolder(tmp_path):
    (tmp_path / "adult").mkdir()
    (tmp_path / "adult" / "adult.data").write_text("1\n")
    assert locate(tmp_path, "adult/adult.data") == tmp_path / "adult" / "adult.data"


def test_locate_names_the_expected_file_when_neither_exists(tmp_path):
    with pytest.raises(DataFileError, match=r"expected data file .*x\.csv \(or x\.csv\.gz\)"):
        locate(tmp_path, "x.csv")


def test_locate_refuses_a_directory_in_place_of_the_file(tmp_path):
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(DataFileError, match="is a directory"):
        locate(tmp_path, "dir.csv")


# ---------------------------------------------------------------- read_by_schema
def _headerless_schema():
    return parse_schema({
        "file": {"header": False, "names": ["age", "job", "y"], "delimiter": ";",
                 "na_values": ["?"], "comment": "#"},
        "target": {"name": "y", "labels": ["no", "yes"]},
        "columns": {"age": {"kind": "numeric", "bounds": [0, 100]},
                    "job": {"kind": "categorical", "levels": ["a", "b"]}},
    })


def test_read_by_schema_applies_the_file_table(tmp_path):
    """Headerless file: the schema's names, delimiter, missing markers and comment are used;
    cells stay raw strings."""
    p = tmp_path / "t.data"
    p.write_text("# banner\n30;a;yes\n?;b;no\n45; a ;no\n")
    frame = read_by_schema(p, _headerless_schema())
    assert list(frame.columns) == ["age", "job", "y"]
    assert frame.shape == (3, 3)
    assert frame["age"].iloc[0] == "30" and pd.isna(frame["age"].iloc[1])
    assert frame["y"].tolist() == ["yes", "no", "no"]
    assert frame["job"].iloc[2].strip() == "a"


def test_read_by_schema_is_read_raw_table_with_the_schema_options(tmp_path):
    """The same frame as :func:`read_raw_table` called with the ``[file]`` options."""
    p = tmp_path / "t.data.gz"
    p.write_bytes(gzip.compress(b"# c\n1;b;yes\n2;?;no\n"))
    schema = _headerless_schema()
    expected = read_raw_table(p, header=False, names=["age", "job", "y"], delimiter=";",
                              na_values=["?"], comment="#")
    pd.testing.assert_frame_equal(read_by_schema(p, schema), expected)


def test_read_by_schema_default_file_table_reads_a_header(tmp_path):
    schema = parse_schema({"columns": {"a": {"kind": "numeric", "bounds": [0, 1]},
                                       "b": {"kind": "numeric", "bounds": [0, 1]}}})
    p = tmp_path / "t.csv"
    p.write_text("a\tb\n0.5\t0.25\n")  # tab sniffed
    frame = read_by_schema(p, schema)
    assert frame.to_dict("list") == {"a": ["0.5"], "b": ["0.25"]}
    assert np.array_equal(frame.to_numpy(dtype=float), [[0.5, 0.25]])


def test_read_by_schema_wrong_field_count_is_refused(tmp_path):
    p = tmp_path / "t.data"
    p.write_text("1;a\n2;b\n")  # two fields, the schema names three
    with pytest.raises(DataFileError, match="2 fields per row but the schema's"):
        read_by_schema(p, _headerless_schema())


def test_header_name_quotes_only_printable_short_names():
    """``header_name``: a printable name of at most 60 characters is quoted, any other is
    named by its 1-based position (no control byte of a file reaches a message)."""
    from noisygd.data.io import MAX_SHOWN_NAME, header_name

    assert header_name("age", 0) == "'age'"
    assert header_name("x" * MAX_SHOWN_NAME, 4) == repr("x" * MAX_SHOWN_NAME)
    assert header_name("x" * (MAX_SHOWN_NAME + 1), 4) == "column 5 (its name is 61 characters long)"
    assert header_name("\x00", 0) == "column 1 (its name is not printable)"
    assert header_name("a\tb", 2) == "column 3 (its name is not printable)"


def test_a_duplicated_unprintable_header_name_is_named_by_position(tmp_path):
    from noisygd.data.io import DataFileError, read_raw_table

    path = tmp_path / "dup.csv"
    path.write_bytes(b"a,\x01,\x01\n1,2,3\n")
    with pytest.raises(DataFileError, match=r"column 2 \(its name is not printable\)") as info:
        read_raw_table(path)
    assert "\\x" not in str(info.value) and "\x01" not in str(info.value)
