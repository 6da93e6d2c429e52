"""Reading user tables (CSV, gzipped CSV, Parquet) with clear errors naming the file.

:func:`read_table` is what the CLI uses to load a user's data set. It does no preprocessing:
features must already be numeric (encode categorical columns first, from a public category list),
and scaling is left to :mod:`noisygd.data.preprocessing`.
"""

from __future__ import annotations

import gzip
import importlib.util
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["DataFileError", "MissingDependencyError", "read_csv_file", "read_table"]

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
        raise DataFileError(f"cannot read {path}: corrupt or not a text/CSV file ({exc})") from exc
    return ""


def _sniff_delimiter(line: str) -> str:
    """The candidate delimiter (``,``, ``;`` or tab) occurring most often in the header line."""
    counts = [line.count(d) for d in _DELIMITERS]
    return _DELIMITERS[int(np.argmax(counts))] if max(counts) > 0 else ","


def read_csv_file(path: Path, **kwargs: Any) -> pd.DataFrame:
    """``pandas.read_csv`` with every parser failure turned into a :class:`DataFileError`."""
    check_file(path)
    try:
        return pd.read_csv(path, **kwargs)
    except pd.errors.EmptyDataError as exc:
        raise DataFileError(f"{path} is empty (no header and no data rows)") from exc
    except _READ_ERRORS as exc:
        raise DataFileError(f"cannot read {path}: corrupt or malformed file ({exc})") from exc


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
        raise DataFileError(f"cannot read {path}: corrupt or invalid Parquet file ({exc})") from exc


def _load_frame(path: Path) -> pd.DataFrame:
    head = _head(path)
    if path.suffix.lower() in _PARQUET_SUFFIXES or head == _PARQUET_MAGIC:
        return _read_parquet(path)
    if not head:
        raise DataFileError(f"{path} is empty (0 bytes)")
    compressed = head[:2] == _GZIP_MAGIC
    line = _first_line(path, compressed)
    if not line:
        raise DataFileError(f"{path} is empty (no header and no data rows)")
    return read_csv_file(
        path,
        sep=_sniff_delimiter(line),
        compression="gzip" if compressed else None,
        encoding="utf-8-sig",
        skipinitialspace=True,
    )


def read_table(
    path: str | Path, *, target: str | None = None
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
        lacks the ``target`` column, has non-numeric feature columns (named), or missing values.
    MissingDependencyError
        For a Parquet file when pyarrow is not installed (``pip install noisygd[parquet]``).
    """
    p = check_file(Path(path))
    frame = _load_frame(p)
    frame.columns = [str(c).strip() for c in frame.columns]
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
        rows = np.flatnonzero(col.isna().to_numpy())[:5].tolist()
        raise DataFileError(f"target column {name!r} of {path} has missing values (rows {rows})")
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
