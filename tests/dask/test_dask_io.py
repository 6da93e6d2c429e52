"""noisygd.dask without a cluster: reading Parquet directories and CSV globs, argument checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")

from noisygd.dask import DaskSession, read_collection  # noqa: E402
from noisygd.data.io import DataFileError  # noqa: E402


@pytest.fixture
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.normal(size=30), "b": rng.normal(size=30),
                         "label": rng.integers(0, 2, size=30)})


def test_csv_glob_and_parquet_directory(table, tmp_path) -> None:
    for k in range(3):
        table.iloc[10 * k:10 * (k + 1)].to_csv(tmp_path / f"part-{k}.csv", index=False)
    X, y, names = read_collection(str(tmp_path / "part-*.csv"), target="label")
    assert names == ["a", "b"] and X.npartitions == 3
    assert np.array_equal(X.compute().to_numpy(), table[["a", "b"]].to_numpy())
    assert np.array_equal(y.compute().to_numpy(), table["label"].to_numpy())
    dd.from_pandas(table, npartitions=2).to_parquet(tmp_path / "pq")
    X, y, names = read_collection(tmp_path / "pq", target="label")
    assert names == ["a", "b"] and np.array_equal(X.compute().to_numpy(),
                                                  table[["a", "b"]].to_numpy())


def test_reading_errors_name_the_file_not_the_data(table, tmp_path) -> None:
    with pytest.raises(DataFileError, match="no file matches"):
        read_collection(str(tmp_path / "none-*.csv"), target="label")
    with pytest.raises(DataFileError, match="not found"):
        read_collection(tmp_path / "missing.parquet", target="label")
    table.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(DataFileError, match="no column 'y'"):
        read_collection(str(tmp_path / "t.csv"), target="y")
    table.assign(c=["x"] * 30).to_csv(tmp_path / "s.csv", index=False)
    with pytest.raises(DataFileError, match=r"not numeric: \['c'\]"):
        read_collection(str(tmp_path / "s.csv"), target="label")


def test_rows_longer_than_the_header_are_refused_not_shifted(table, tmp_path) -> None:
    # every data row one field longer than the header (a trailing delimiter): pandas and
    # Dask would take the first column for a row index and shift every column silently
    text = table.to_csv(index=False).splitlines()
    (tmp_path / "long-0.csv").write_text("\n".join([text[0], *(f"{r},7" for r in text[1:])]))
    with pytest.raises(DataFileError, match="more fields than its header"):
        read_collection(str(tmp_path / "long-*.csv"), target="label")


@pytest.mark.parametrize("kw", [{}, {"scheduler": "tcp://127.0.0.1:1", "local_workers": 2}])
def test_session_needs_exactly_one_of_scheduler_and_local_workers(kw) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        DaskSession(**kw)
    with pytest.raises((ValueError, TypeError)):
        DaskSession(local_workers=0)


def test_recognising_a_dask_collection_reads_no_attribute_of_other_data() -> None:
    """The estimators ask before their ledger check: only the class is inspected."""
    import dask.array as da

    from noisygd.dask import is_dask_collection

    class Untouchable:
        def __getattr__(self, name: str) -> None:
            raise AssertionError(f"the data was read ({name})")

    assert not is_dask_collection(Untouchable())
    assert not is_dask_collection(np.zeros(3)) and not is_dask_collection(pd.DataFrame())
    assert is_dask_collection(da.zeros(3))
    assert is_dask_collection(dd.from_pandas(pd.DataFrame({"a": [1.0]}), npartitions=1))


def test_progress_lines_hold_no_partition_or_row_count_and_the_cli_gates_them(monkeypatch) -> None:
    # K2, D1: the rows scanned and the partitions touched are private: not printed unless asked,
    # and the CLI prints progress only where it draws its bars (not --quiet, stderr a tty)
    import argparse
    import io

    from noisygd import cli
    from noisygd.dask import print_progress
    from noisygd.oracles.dask import StepProgress

    step = StepProgress(call=2, kind="gradient", partitions=3, rows_scanned=987_654,
                        seconds=0.25)
    out = io.StringIO()
    print_progress(out)(step)
    # no partition or row count: both are data-dependent (finding D1)
    assert out.getvalue() == "dask gradient 2: 0.250 s\n"
    out = io.StringIO()
    print_progress(out, show_rows=True)(step)
    assert out.getvalue() == "dask gradient 2: 3 partitions, 987654 rows, 0.250 s\n"

    args = argparse.Namespace(scheduler=None, local_workers=1, schema=None, quiet=False,
                              json=False)
    monkeypatch.setattr("sys.stderr", io.StringIO())  # not a terminal: no progress
    assert cli._dask_session(args).progress is None
    tty = io.StringIO()
    tty.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr("sys.stderr", tty)
    assert cli._dask_session(args).progress is not None
    assert cli._dask_session(argparse.Namespace(**{**vars(args), "quiet": True})).progress \
        is None


def test_tune_is_refused_on_dask_with_the_reason_and_what_to_do() -> None:
    import dask.array as da

    from noisygd.dask.fit import TUNE_ON_DASK
    from noisygd.estimators import DPLogisticRegression

    X, y = da.zeros((20, 2), chunks=10), da.ones(20, chunks=10)
    with pytest.raises(ValueError) as refused:
        DPLogisticRegression(classes=[0, 1], tune=True).fit(X, y)
    assert str(refused.value) == TUNE_ON_DASK
    assert "tune=False" in TUNE_ON_DASK and "in memory" in TUNE_ON_DASK


def test_a_blank_header_cell_is_refused_on_dask(table, tmp_path) -> None:
    """dd.read_csv names a blank header cell "Unnamed: 0" and fitted it as a feature."""
    table.to_csv(tmp_path / "t.csv")  # the row index, under a blank header cell
    with pytest.raises(DataFileError, match=r"blank cell \(column\(s\) 1; pandas would name "
                                            r"it 'Unnamed: 0'"):
        read_collection(str(tmp_path / "t.csv"), target="label")


def test_declared_labels_are_read_verbatim_on_dask(tmp_path) -> None:
    # a class "NA" (North America) was read as a missing target, as pandas reads "NA"; with
    # the labels declared (--classes), as in memory, the declared ones are read verbatim and
    # every other marker stays missing (an empty cell, "null"; "NA" in a feature column)
    (tmp_path / "p-0.csv").write_text("a,label\n1.5,NA\n2.5,EU\n")
    (tmp_path / "p-1.csv").write_text("a,label\nNA,NA\n3.5,null\n")
    X, y, names = read_collection(str(tmp_path / "p-*.csv"), target="label",
                                  labels=["NA", "EU"])
    assert names == ["a"]
    assert y.compute().tolist()[:3] == ["NA", "EU", "NA"] and pd.isna(y.compute().iloc[3])
    assert X.compute()["a"].isna().tolist() == [False, False, True, False]
    _, y, _ = read_collection(str(tmp_path / "p-*.csv"), target="label")  # undeclared
    assert y.compute().isna().tolist() == [True, False, True, True]
