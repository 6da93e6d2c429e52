"""Rows with more fields than the header: refused by every CSV reader, never shifted.

Without ``index_col=False`` pandas takes the first column of such rows for a row index, so
every column moves left by one and the target becomes the unnamed trailing field (a fit then
runs on the wrong columns and exits 0). Every read path refuses them instead, naming the file
and the fix, never a row or a cell.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from noisygd.cli import main
from noisygd.data import DataFileError, read_raw_table, read_table

SECRET = "7.77777"

#: file content -> what it shows: every data row, or only the first, one field longer
LONG = {
    "every row one longer": f"a,b,y\n1,2,0,{SECRET}\n3,4,1,{SECRET}\n5,6,0,{SECRET}\n",
    "every row two longer": f"a,b,y\n1,2,0,{SECRET},9\n3,4,1,{SECRET},9\n",
    "trailing delimiter": "a,b,y\n1,2,0,\n3,4,1,\n5,6,0,\n",
    "first row longer": f"a,b,y\n1,2,0,{SECRET}\n3,4,1\n5,6,0\n",
}


def _check_message(exc: pytest.ExceptionInfo[DataFileError], path: Path) -> None:
    msg = str(exc.value)
    assert "more fields than its header has names" in msg, msg
    assert str(path) in msg
    assert SECRET not in msg and "line" not in msg  # no cell, no row number


@pytest.mark.parametrize("case", sorted(LONG))
def test_read_table_refuses_rows_longer_than_the_header(tmp_path: Path, case: str) -> None:
    p = tmp_path / "t.csv"
    p.write_text(LONG[case])
    with pytest.raises(DataFileError) as info:
        read_table(p, target="y")
    _check_message(info, p)


@pytest.mark.parametrize("case", sorted(LONG))
def test_read_raw_table_refuses_rows_longer_than_the_header(tmp_path: Path, case: str) -> None:
    p = tmp_path / "t.csv"
    p.write_text(LONG[case])
    with pytest.raises(DataFileError) as info:
        read_raw_table(p)
    _check_message(info, p)
    assert "[file] delimiter" in str(info.value)


def test_gzipped_and_semicolon_files_are_checked_too(tmp_path: Path) -> None:
    p = tmp_path / "t.csv.gz"
    p.write_bytes(gzip.compress(LONG["every row one longer"].replace(",", ";").encode()))
    for read in (lambda: read_table(p, target="y"), lambda: read_raw_table(p)):
        with pytest.raises(DataFileError) as info:
            read()
        _check_message(info, p)


def test_a_later_longer_row_is_a_ragged_file(tmp_path: Path) -> None:
    """pandas refuses a row longer than the first data row itself: the message is the
    ragged-file one, as before."""
    p = tmp_path / "t.csv"
    p.write_text(f"a,b,y\n1,2,0\n3,4,1,{SECRET}\n5,6,0\n")
    for read in (lambda: read_table(p, target="y"), lambda: read_raw_table(p)):
        with pytest.raises(DataFileError, match="same number of fields") as info:
            read()
        assert SECRET not in str(info.value) and "line" not in str(info.value)


def test_well_formed_files_read_as_before(tmp_path: Path) -> None:
    """Quoted delimiters, blank lines, a header with a trailing unnamed column, short rows
    keep their behaviour (read, or refused by their own message)."""
    p = tmp_path / "t.csv"
    p.write_text('a,b,y\n1,"2",0\n\n3,4,1\n')
    X, y, names = read_table(p, target="y")
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])
    assert names == ["a", "b"] and y.tolist() == [0, 1]
    assert read_raw_table(p)["b"].tolist() == ["2", "4"]
    p.write_text("a,b,y\n1,2\n3,4,1\n")
    with pytest.raises(DataFileError, match="fewer fields"):
        read_table(p, target="y")
    p.write_text('a,b,y\n1,"2,3\n')
    with pytest.raises(DataFileError, match="quote is not closed"):
        read_table(p, target="y")


def test_headerless_schema_file_keeps_the_ragged_message(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("1,2,0\n3,4,1,5\n")
    with pytest.raises(DataFileError, match="same number of fields"):
        read_raw_table(p, header=False, names=["a", "b", "y"])


def _fit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


def test_fit_and_predict_refuse_a_file_with_an_unnamed_trailing_column(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The report's case: a regression target and an extra trailing field per row. Before,
    the no-schema fit exited 0 on shifted columns (R^2 near 0)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    t = 3 * x[:, 0] - 2 * x[:, 1]
    good = ["x1,x2,y"] + [f"{a:.4f},{b:.4f},{c:.4f}" for (a, b), c in zip(x, t, strict=True)]
    extra = [good[0]] + [f"{line},{v:.3f}" for line, v in zip(good[1:], rng.normal(size=200),
                                                              strict=True)]
    data = tmp_path / "extra.csv"
    data.write_text("\n".join(extra) + "\n")
    out = tmp_path / "m.json"
    code, err = _fit(["fit", str(data), "--target", "y", "--model", "linear", "--epsilon", "8",
                      "--target-bound", "10", "--out", str(out)], capsys)
    assert code == 2 and "more fields than its header has names" in err, err
    assert not out.exists()
    schema = tmp_path / "s.toml"
    schema.write_text("[target]\nname = \"y\"\nbounds = [-10, 10]\n"
                      "[columns.x1]\nkind = \"numeric\"\nbounds = [-4, 4]\n"
                      "[columns.x2]\nkind = \"numeric\"\nbounds = [-4, 4]\n")
    code, err = _fit(["fit", str(data), "--schema", str(schema), "--out", str(out)], capsys)
    assert code == 2 and "more fields than its header has names" in err, err
    clean = tmp_path / "clean.csv"
    clean.write_text("\n".join(good) + "\n")
    code, err = _fit(["fit", str(clean), "--schema", str(schema), "--seed", "0", "--out",
                      str(out), "--quiet"], capsys)
    assert code == 0, err
    code, err = _fit(["predict", str(out), str(data)], capsys)
    assert code == 2 and "more fields than its header has names" in err, err
