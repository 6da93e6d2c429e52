"""Reading user tables (CSV, gzipped CSV, Parquet) with clear errors naming the file.

:func:`read_table` is what the CLI uses to load a user's data set. It does no preprocessing:
features must already be numeric (encode categorical columns first, from a public category list),
and scaling is left to :mod:`noisygd.data.preprocessing`.
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import re
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "DataFileError",
    "MissingDependencyError",
    "header_name",
    "is_parquet",
    "read_csv_file",
    "read_raw_table",
    "read_table",
]

_GZIP_MAGIC = b"\x1f\x8b"
_PARQUET_MAGIC = b"PAR1"
_PARQUET_SUFFIXES = {".parquet", ".pq"}
_DELIMITERS = (",", ";", "\t")
# Exceptions a parser raises on an unreadable or corrupt file (ParserError, EmptyDataError,
# UnicodeDecodeError and pyarrow's ArrowInvalid are ValueErrors; BadGzipFile is an OSError;
# a truncated gzip stream raises EOFError; a damaged deflate stream zlib.error).
_READ_ERRORS = (OSError, ValueError, EOFError, zlib.error)


class DataFileError(ValueError):
    """A data file is missing, unreadable, corrupt, or does not have the expected content."""


class MissingDependencyError(DataFileError, ImportError):
    """Reading this file needs an optional dependency that is not installed."""


def check_file(path: Path, what: str = "data file") -> Path:
    """Raise :class:`DataFileError` unless ``path`` is an existing regular file."""
    if not path.exists():
        raise DataFileError(f"{what} not found: {path}")
    if path.is_dir():
        raise DataFileError(f"{what} {path} is a directory, not a file")
    return path


def _head(path: Path, n: int = 4) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(n)
    except OSError as exc:
        raise DataFileError(f"cannot read {path}: {exc}") from exc


def _first_line(path: Path, compressed: bool) -> str:
    """First non-empty line of a (possibly gzipped) text file, for delimiter sniffing."""
    opener = gzip.open if compressed else open
    try:
        with opener(path, "rt", encoding="utf-8-sig") as fh:  # type: ignore[operator]
            for _ in range(1000):
                line = fh.readline(1 << 20)
                if not line:
                    return ""
                if line.strip():
                    return line
    except (*_READ_ERRORS, UnicodeDecodeError) as exc:
        raise DataFileError(f"cannot read {path}: {_reason(exc)}") from None
    return ""


def _sniff_delimiter(line: str) -> str:
    """The candidate delimiter (``,``, ``;`` or tab) occurring most often in the header line."""
    counts = [line.count(d) for d in _DELIMITERS]
    return _DELIMITERS[int(np.argmax(counts))] if max(counts) > 0 else ","


def _reason(exc: BaseException) -> str:
    """Why a file could not be read, without the parser's own text: that text can quote the
    data (a byte that is not UTF-8, the first bytes of a file that is not gzip, a cell)."""
    if isinstance(exc, UnicodeDecodeError):
        return ("it is not UTF-8 text (or is corrupt): save it as UTF-8, or read it with a "
                "schema that declares its encoding, e.g. [file] encoding = \"latin-1\"")
    if isinstance(exc, pd.errors.ParserError):
        return ("corrupt or malformed file: its rows do not all have the same number of "
                "fields, or a quote is not closed (check the delimiter and the quoting)")
    if isinstance(exc, OSError) and exc.errno is not None and exc.strerror:
        return exc.strerror  # a file-system error (permission, I/O), not the file's content
    return "corrupt or malformed file"


def read_csv_file(path: Path, **kwargs: Any) -> pd.DataFrame:
    """``pandas.read_csv`` with every parser failure turned into a :class:`DataFileError`
    (whose message never quotes the file's content)."""
    check_file(path)
    try:
        return pd.read_csv(path, **kwargs)
    except pd.errors.EmptyDataError:
        raise DataFileError(f"{path} is empty (no header and no data rows)") from None
    except _READ_ERRORS as exc:
        raise DataFileError(f"cannot read {path}: {_reason(exc)}") from None


def _read_parquet(path: Path) -> pd.DataFrame:
    if importlib.util.find_spec("pyarrow") is None:
        raise MissingDependencyError(
            f"reading the Parquet file {path} needs pyarrow, which is not installed: "
            "pip install noisygd[parquet]"
        )
    try:
        return pd.read_parquet(path, engine="pyarrow")
    except ImportError as exc:
        raise MissingDependencyError(
            f"reading the Parquet file {path} needs pyarrow ({exc}): pip install noisygd[parquet]"
        ) from exc
    except _READ_ERRORS as exc:
        reason = _reason(exc)
        if reason == "corrupt or malformed file":
            reason = "corrupt or invalid Parquet file"
        raise DataFileError(f"cannot read {path}: {reason}") from None


def _load_frame(path: Path, target: str | None = None,
                labels: Sequence[str] = ()) -> pd.DataFrame:
    """The table of :func:`read_table` (pandas' types); ``labels``: texts of the ``target``
    column read verbatim (:func:`_read_labels_verbatim`)."""
    head = _head(path)
    if path.suffix.lower() in _PARQUET_SUFFIXES or head == _PARQUET_MAGIC:
        return _read_parquet(path)
    if not head:
        raise DataFileError(f"{path} is empty (0 bytes)")
    compressed = head[:2] == _GZIP_MAGIC
    line = _first_line(path, compressed)
    if not line:
        raise DataFileError(f"{path} is empty (no header and no data rows)")
    _refuse_blank_header(path, compressed, "utf-8-sig", None)
    options: dict[str, Any] = {
        "sep": _sniff_delimiter(line),
        "compression": "gzip" if compressed else None,
        "encoding": "utf-8-sig",
        "skipinitialspace": True,
    }
    # pandas renames a repeated header name ("label", "label.1") silently, so that a
    # ``--target label`` would train on one column and keep the other as a feature: the
    # header is read as raw cells first and a repeated name is refused.
    header = _raw_header(path, options)
    _refuse_duplicates(header, path)
    _refuse_blank_names(header, path)
    scan = {"comment": None, **options}
    # pandas takes the first column of rows one field longer than the header for a row index
    # (silently shifting every column): such rows are refused, as in read_raw_table
    refuse_long_rows(path, scan)
    frame = _read_numeric_csv(path, options)
    if frame.isna().to_numpy().any():
        _refuse_short_rows(path, frame.shape[1], scan)
        if target is not None and labels:
            _read_labels_verbatim(path, frame, options, target, labels)
    return frame


def _raw_header(path: Path, options: dict[str, Any]) -> list[str]:
    """The CSV file's header cells as written (surrounding spaces dropped; a blank cell is
    ``""``, not pandas' ``Unnamed: N``); ``options`` as :func:`refuse_long_rows`'s."""
    header = read_csv_file(path, header=None, nrows=1, dtype=str, keep_default_na=False,
                           **options)
    return [str(c).strip() for c in header.iloc[0]]


def refuse_blank_header_cells(path: Path, options: dict[str, Any]) -> None:
    """Raise :class:`DataFileError` where the header of the CSV file ``path`` has a blank cell
    (:func:`_refuse_blank_names`; ``options`` as :func:`refuse_long_rows`'s): the no-schema
    readers' check, in memory and on Dask."""
    _refuse_blank_names(_raw_header(path, options), path)


def _refuse_blank_names(cols: Sequence[str], path: Path) -> None:
    """Refuse a header with a blank cell: pandas names its column ``Unnamed: N`` (``N`` its
    position from 0) and a fit without a schema would use it as a feature, silently (a row
    index written by ``to_csv`` without ``index=False``, or R's ``write.csv``)."""
    blank = [i + 1 for i, c in enumerate(cols) if not c]
    if blank:
        where = ", ".join(map(str, blank))
        raise DataFileError(
            f"the header of {path} has a blank cell (column(s) {where}; pandas would name it "
            f"'Unnamed: {blank[0] - 1}' and fit it as a feature): name every column in the "
            "header, or remove the unnamed column (a row index saved by to_csv without "
            "index=False, or by R's write.csv?)")


#: pandas' name for the column of a blank header cell (``Unnamed: 0``).
_UNNAMED = re.compile(r"Unnamed: \d+")


def _warn_unnamed(features: Sequence[str], path: Path) -> None:
    """Warn where a feature column has the name pandas gives a blank header cell: a table
    read by pandas and saved again carries its row index as ``Unnamed: 0``."""
    unnamed = [c for c in features if _UNNAMED.fullmatch(c)]
    if unnamed:
        warnings.warn(
            f"{path}: feature column(s) {', '.join(map(repr, unnamed))} have the name pandas "
            "gives a column whose header cell was blank (a row index saved with to_csv and "
            "read back?): they are fitted as features; remove them, or give them a real "
            "name in the header", UserWarning, stacklevel=3)


def _read_labels_verbatim(path: Path, frame: pd.DataFrame, options: dict[str, Any],
                          target: str, labels: Sequence[str]) -> None:
    """Put back, in place, the ``target`` cells whose text is one of ``labels`` (declared,
    public) but which pandas read as missing: its default missing markers include ``NA``,
    ``N/A``, ``null``, ``NaN`` and ``None``, so a class labelled ``NA`` (North America,
    Namibia) would be reported as a missing target. No statistic is computed."""
    names = [str(c).strip() for c in frame.columns]
    if target not in names:
        return
    j = names.index(target)
    column = frame.iloc[:, j]
    if not column.isna().any():
        return
    raw = read_csv_file(path, usecols=[j], dtype=str, keep_default_na=False, na_values=[""],
                        index_col=False, **options).iloc[:, 0].str.strip()
    keep = column.isna().to_numpy() & raw.isin(set(labels)).to_numpy(dtype=bool)
    if keep.any():
        column = column.astype(object)
        column[keep] = raw[keep].to_numpy(dtype=object)
        frame.isetitem(j, column)


def _read_numeric_csv(path: Path, options: dict[str, Any]) -> pd.DataFrame:
    """The table with pandas' types, never with an implicit row index.

    ``index_col=False``: rows longer than the header are not turned into an index; pandas
    then warns about the lost fields, and the warning is refused as an error (a later row
    longer than the first is a ragged file, which pandas refuses itself).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Length of header",
                                category=pd.errors.ParserWarning)
        try:
            return read_csv_file(path, index_col=False, **options)
        except pd.errors.ParserWarning:
            raise DataFileError(_long_rows(path, schema=False)) from None


def read_table(
    path: str | Path, *, target: str | None = None, labels: Sequence[str] = ()
) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
    """Read a numeric table for fitting: CSV (``,``/``;``/tab sniffed), gzipped CSV, or Parquet.

    The first CSV line is the header. The format is chosen by content (gzip and Parquet magic
    bytes) or by the ``.parquet``/``.pq`` suffix. No statistic of the data is computed.

    Parameters
    ----------
    path : str or Path
        The file.
    target : str, optional
        Name of the label/target column; it is removed from the features. ``None``: all columns
        are features and ``y`` is ``None``.
    labels : sequence of str, optional
        The declared class labels, as text: a target cell holding one of them is read
        verbatim, even where pandas would read it as missing (``NA``, ``N/A``, ``null``,
        ``NaN``, ``None``, ...: a class ``NA`` was reported as a missing target).

    Returns
    -------
    X : numpy.ndarray, shape (n, d)
        Float64, C-contiguous features.
    y : numpy.ndarray or None
        The target column: float64 if numeric, otherwise an object array of the raw values.
    feature_names : list of str
        Column names of ``X`` in order.

    Raises
    ------
    DataFileError
        Naming the file, when it is missing, a directory, unreadable or corrupt, has no data rows,
        names a column twice or has a blank header cell, lacks the ``target`` column, has
        non-numeric feature columns (named), or missing values (the columns are named, never a
        row or a cell).

    Warns
    -----
    UserWarning
        A feature column named as pandas names a blank header cell (``Unnamed: 0``).
    MissingDependencyError
        For a Parquet file when pyarrow is not installed (``pip install noisygd[parquet]``).
    """
    p = check_file(Path(path))
    frame = _load_frame(p, target, labels)
    frame.columns = [str(c).strip() for c in frame.columns]
    _refuse_duplicates(list(frame.columns), p)  # also names equal once spaces are stripped
    _refuse_blank_names(list(frame.columns), p)  # a Parquet file's (a CSV's: in _load_frame)
    if frame.shape[1] == 0 or frame.shape[0] == 0:
        raise DataFileError(f"{p} holds an empty table (no data rows)")
    columns = list(frame.columns)
    y: np.ndarray | None = None
    if target is not None:
        if target not in columns:
            raise DataFileError(
                f"target column {target!r} not found in {p}; its columns are: {', '.join(columns)}"
            )
        y = _target_array(frame[target], p, target)
        frame = frame.drop(columns=[target])
    if frame.shape[1] == 0:
        raise DataFileError(f"{p} has no feature columns besides the target {target!r}")
    features = list(frame.columns)
    _warn_unnamed(features, p)
    non_numeric = [
        c for c in features
        if not (pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c]))
    ]
    if non_numeric:
        raise DataFileError(
            f"non-numeric feature columns in {p}: {', '.join(non_numeric)}; encode them as numbers "
            "first (e.g. one-hot from a public category list)"
        )
    X = frame.to_numpy(dtype=np.float64)
    _check_finite(X, features, p)
    return np.ascontiguousarray(X), y, features


def _target_array(col: pd.Series, path: Path, name: str) -> np.ndarray:
    if col.isna().any():
        # which rows are missing is a fact about private rows: not reported
        raise DataFileError(
            f"target column {name!r} of {path} has missing values (empty cells, or texts that "
            "pandas reads as missing: NA, N/A, null, NaN, None, ...): every row needs a target "
            "(drop those rows, or fill them from a public rule); a class label such as NA is "
            "read verbatim when --classes declares it (or with a schema, which reads only "
            "its [file] na_values as missing)")
    if pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        y = col.to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(y)):
            raise DataFileError(f"target column {name!r} of {path} has infinite values")
        return y
    return col.to_numpy(dtype=object)


def _check_finite(X: np.ndarray, names: Sequence[str], path: Path) -> None:
    bad = ~np.isfinite(X)
    if bad.any():
        cols = [names[j] for j in np.flatnonzero(bad.any(axis=0))]
        raise DataFileError(
            f"missing or non-finite values in feature columns of {path}: {', '.join(cols)}"
        )


def is_parquet(path: Path) -> bool:
    """Whether ``path`` is read as Parquet (``.parquet``/``.pq`` suffix or Parquet magic)."""
    return path.suffix.lower() in _PARQUET_SUFFIXES or _head(path) == _PARQUET_MAGIC


def read_raw_table(
    path: str | Path,
    *,
    header: bool = True,
    names: Sequence[str] | None = None,
    delimiter: str | None = None,
    na_values: Sequence[str] = (),
    comment: str | None = None,
    encoding: str = "utf-8",
) -> pd.DataFrame:
    """A table as raw text cells, for encoding by a schema (:mod:`noisygd.schema`).

    CSV (delimiter sniffed from ``,``/``;``/tab unless given) and gzipped CSV are read with
    every cell as a string (surrounding spaces dropped; an empty cell or one of ``na_values``
    is missing); Parquet keeps its column types. Duplicate header names are refused (pandas
    would rename them silently). No statistic of the data is computed, and no error message
    quotes a cell.

    Raises
    ------
    DataFileError
        The file is missing, empty, not text in ``encoding``, malformed, or has a duplicated
        column name; or ``names`` does not match the number of fields.
    """
    p = check_file(Path(path))
    if is_parquet(p):
        frame = _read_parquet(p)
        cols = [str(c).strip() for c in frame.columns]
        _refuse_duplicates(cols, p)
        frame.columns = cols
        markers = {"", *(str(v).strip() for v in na_values)}
        for c in cols:  # the same missing markers as in a CSV file
            if frame[c].dtype == object or pd.api.types.is_string_dtype(frame[c]):
                text = frame[c].astype("string").str.strip()
                frame[c] = frame[c].astype(object).where(~text.isin(markers).fillna(False),
                                                         None)
        return frame
    head = _head(p)
    if not head:
        raise DataFileError(f"{p} is empty (0 bytes)")
    compressed = head[:2] == _GZIP_MAGIC
    sep = delimiter if delimiter is not None else _sniff_delimiter(
        _first_text_line(p, compressed, encoding, comment))
    if header:
        _refuse_blank_header(p, compressed, encoding, comment)
    options: dict[str, Any] = dict(
        sep=sep, header=None, dtype=str, comment=comment, skipinitialspace=True,
        encoding="utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8")
        else encoding, compression="gzip" if compressed else None, engine="c")
    try:
        frame = pd.read_csv(p, keep_default_na=False, na_values=["", *na_values], **options)
    except UnicodeDecodeError:
        raise DataFileError(_not_text(p, encoding)) from None
    except pd.errors.EmptyDataError:
        raise DataFileError(f"{p} is empty (no header and no data rows)") from None
    except pd.errors.ParserError:
        # the parser's message is not shown: it can name a row of the data
        if header and _first_row_longer(p, options):
            raise DataFileError(_long_rows(p, schema=True)) from None
        raise DataFileError(
            f"cannot parse {p}: its rows do not all have the same number of fields, or a "
            "quote is not closed; check the delimiter (schema [file] delimiter) and the "
            "quoting") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise DataFileError(f"cannot read {p}: {_reason(exc)}") from None
    except ValueError:
        raise DataFileError(f"cannot read {p}: corrupt or malformed CSV file") from None
    if frame.isna().to_numpy().any():
        _refuse_short_rows(p, frame.shape[1], options)
    if header:
        if frame.shape[0] == 0:
            raise DataFileError(f"{p} is empty (no header line)")
        cols = ["" if pd.isna(c) else str(c).strip() for c in frame.iloc[0]]
        frame = frame.iloc[1:].reset_index(drop=True)
    else:
        cols = list(names or [])
        if len(cols) != frame.shape[1]:
            raise DataFileError(
                f"{p} has {frame.shape[1]} fields per row but the schema's [file] names lists "
                f"{len(cols)}: list every column in file order (or check the delimiter)")
    _refuse_duplicates(cols, p)
    frame.columns = cols
    return frame


def _refuse_short_rows(path: Path, width: int, options: dict[str, Any]) -> None:
    """Refuse a CSV row with fewer fields than the widest (pandas pads it with missing cells,
    which would be reported as missing values, or encoded by a ``missing`` rule).

    The file is read again by :mod:`csv` (pandas gives an absent field and an empty one the
    same value); called only when the parsed table holds a missing cell. No row is named.
    """
    opener = gzip.open if options["compression"] == "gzip" else open
    comment = options["comment"]
    with opener(path, "rt", encoding=options["encoding"], newline="") as fh:  # type: ignore[operator]
        lines = (line for line in fh
                 if not (comment and line.lstrip().startswith(comment)))
        short = any(0 < len(row) < width
                    for row in csv.reader(lines, delimiter=options["sep"],
                                          skipinitialspace=True))
    if short:
        raise DataFileError(
            f"{path} has a row with fewer fields than the header: every row must have one "
            "field per column (an empty field is written as two adjacent delimiters); check "
            "the delimiter (schema [file] delimiter) and the quoting")


def _first_row_longer(path: Path, options: dict[str, Any]) -> bool:
    """Whether the first data row of a CSV file has more fields than its header line.

    pandas reads such a file (every row one field longer, or a trailing delimiter on each
    data line) by taking the first column for a row index, shifting every column silently;
    a later row longer than the first is refused by pandas itself. The two rows are read by
    :mod:`csv` (blank and comment lines skipped); no row is named, and a file :mod:`csv`
    cannot read gives ``False`` (pandas then reports it).
    """
    opener = gzip.open if options["compression"] == "gzip" else open
    comment = options["comment"]
    try:
        with opener(path, "rt", encoding=options["encoding"], newline="") as fh:  # type: ignore[operator]
            lines = (line for line in fh
                     if not (comment and line.lstrip().startswith(comment)))
            rows = (row for row in csv.reader(lines, delimiter=options["sep"],
                                              skipinitialspace=True) if row)
            header, first = next(rows, []), next(rows, [])
    except (csv.Error, *_READ_ERRORS):
        return False
    return len(first) > len(header)


def refuse_long_rows(path: Path, options: dict[str, Any]) -> None:
    """Raise :class:`DataFileError` (:func:`_long_rows`) where the first data row of the CSV
    file ``path`` has more fields than its header (:func:`_first_row_longer`; ``options``:
    ``compression``, ``encoding``, ``sep``, ``comment``): the no-schema readers' check, in
    memory and on Dask."""
    if _first_row_longer(path, options):
        raise DataFileError(_long_rows(path, schema=False))


def _long_rows(path: Path, *, schema: bool) -> str:
    """The message refusing a CSV row with more fields than the header (no row is named)."""
    where = "the schema's [file] delimiter" if schema else "the delimiter"
    return (f"{path} has rows with more fields than its header has names (a trailing "
            "delimiter, or a column the header does not name?): every row must have one field "
            f"per column; name every column in the header or remove the extra fields, and "
            f"check {where} and the quoting")


#: Longest header name an error message quotes (a longer one is named by its position).
MAX_SHOWN_NAME = 60


def header_name(name: str, index: int) -> str:
    """A header name as an error message shows it: quoted when it is printable and at most
    :data:`MAX_SHOWN_NAME` characters, else by its position (``column 3 (its name is not
    printable)``), so that no control byte of a file reaches the terminal or a log."""
    if name.isprintable() and len(name) <= MAX_SHOWN_NAME:
        return repr(name)
    why = "not printable" if not name.isprintable() else f"{len(name)} characters long"
    return f"column {index + 1} (its name is {why})"


def _refuse_duplicates(cols: Sequence[str], path: Path) -> None:
    seen: set[str] = set()
    dup = sorted({c for c in cols if c in seen or seen.add(c)})
    if dup:
        shown = ", ".join(header_name(c, list(cols).index(c)) for c in dup)
        raise DataFileError(f"{path} names the column(s) {shown} more than "
                            "once: rename them so that each column name is unique")


def _not_text(path: Path, encoding: str) -> str:
    return (f"{path} is not {encoding} text (or is corrupt): save it as UTF-8, or declare its "
            "encoding in the schema, e.g. [file] encoding = \"latin-1\"")


def _first_text_line(path: Path, compressed: bool, encoding: str, comment: str | None) -> str:
    """First non-empty, non-comment line, for delimiter sniffing (no cell is reported)."""
    opener = gzip.open if compressed else open
    try:
        with opener(path, "rt", encoding=encoding) as fh:  # type: ignore[operator]
            for _ in range(1000):
                line = fh.readline(1 << 20)
                if not line:
                    return ""
                if line.strip() and not (comment and line.lstrip().startswith(comment)):
                    return line
    except UnicodeDecodeError:
        raise DataFileError(_not_text(path, encoding)) from None
    except _READ_ERRORS as exc:
        raise DataFileError(f"cannot read {path}: {_reason(exc)}") from None
    return ""


def _refuse_blank_header(path: Path, compressed: bool, encoding: str, comment: str | None
                         ) -> None:
    """Refuse a file whose header line (the first line that is not a comment) is blank.

    pandas skips blank lines, so the first *data* row would become the header: its cells
    would be taken for column names, which are public and named in messages.
    """
    opener = gzip.open if compressed else open
    blank = False
    try:
        with opener(path, "rt", encoding=encoding) as fh:  # type: ignore[operator]
            for _ in range(1000):
                line = fh.readline(1 << 20)
                if not line or not (comment and line.lstrip().startswith(comment)):
                    blank = bool(line) and not line.strip(" \t\r\n\ufeff")
                    break
    except UnicodeDecodeError:
        raise DataFileError(_not_text(path, encoding)) from None
    except _READ_ERRORS as exc:
        raise DataFileError(f"cannot read {path}: {_reason(exc)}") from None
    if blank:
        raise DataFileError(
            f"the first line of {path} is blank: the first line must be the header (the "
            "column names); remove the blank line")
