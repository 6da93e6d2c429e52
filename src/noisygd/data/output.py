"""Writing output files safely: atomic replacement, regular files only.

Every file the command line writes (models, predictions, schema drafts) goes through
:func:`atomic_write`: the bytes go to a temporary file in the target's folder, which is
flushed and then renamed over the target with :func:`os.replace` (atomic on POSIX), so a
failure leaves either the old file or nothing, never a partial one. A target that exists and
is not a regular file (a symbolic link, a FIFO, a device, a directory) is refused.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import stat
import tempfile
from pathlib import Path

import pandas as pd

from noisygd.data.io import MissingDependencyError

__all__ = ["TABLE_SUFFIXES", "OutputPathError", "atomic_write", "check_output_path",
           "check_table_suffix", "table_bytes"]


class OutputPathError(ValueError):
    """An output path that cannot or must not be written (message names it and the fix)."""


def check_output_path(path: str | Path, what: str = "output", *, overwrite: bool = True) -> Path:
    """``path`` as a Path, refused unless it is absent or an existing regular file.

    Raises
    ------
    OutputPathError
        ``path`` is a symbolic link, a FIFO, a device, a socket or a directory; or it exists
        and ``overwrite`` is false.
    """
    p = Path(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p
    except OSError as exc:
        raise OutputPathError(f"cannot use {what} path {p}: {exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise OutputPathError(f"{what} path {p} is a symbolic link: give the path of a regular "
                              "file (noisygd does not write through links)")
    if stat.S_ISDIR(st.st_mode):
        raise OutputPathError(f"{what} path {p} is a directory: give a file name")
    if not stat.S_ISREG(st.st_mode):
        raise OutputPathError(f"{what} path {p} is not a regular file (a FIFO, device or "
                              "socket): give the path of a regular file")
    if not overwrite:
        raise OutputPathError(f"{what} {p} exists: choose another path, or pass --force to "
                              "replace it")
    return p


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: str | Path, data: bytes, what: str = "output") -> Path:
    """Write ``data`` to ``path`` atomically (temporary file in the same folder + ``os.replace``).

    The folder is created if needed. On any failure the temporary file is removed and the
    target is untouched. Raises :class:`OutputPathError` for a refused target or an OS error.
    """
    p = check_output_path(path, what)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputPathError(f"cannot write {what} {p}: {exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        check_output_path(p, what)  # refuse a link or FIFO created meanwhile
        os.replace(tmp, p)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise OutputPathError(f"cannot write {what} {p}: {exc}") from None
        raise
    return p


#: File name endings a table is written for (:func:`table_bytes`).
TABLE_SUFFIXES = (".csv", ".txt", ".gz", ".parquet", ".pq")


def check_table_suffix(path: str | Path, what: str = "output") -> Path:
    """``path``, refused (:class:`OutputPathError`) unless its ending is one of
    :data:`TABLE_SUFFIXES`: a table is never written in a format its name does not say."""
    p = Path(path)
    if p.suffix.lower() not in TABLE_SUFFIXES:
        raise OutputPathError(
            f"{what} path {p} must end in {', '.join(TABLE_SUFFIXES)} (CSV, gzipped CSV or "
            f"Parquet); {p.suffix or 'no ending'} is not a table format noisygd writes")
    return p


def table_bytes(frame: pd.DataFrame, path: str | Path) -> bytes:
    """``frame`` encoded for ``path``: Parquet (``.parquet``/``.pq``), gzipped CSV (``.gz``),
    CSV (``.csv``, ``.txt``; no index); any other ending is refused
    (:func:`check_table_suffix`)."""
    suffix = check_table_suffix(path).suffix.lower()
    if suffix in (".parquet", ".pq"):
        buf = io.BytesIO()
        try:
            frame.to_parquet(buf, index=False, engine="pyarrow")
        except ImportError as exc:
            raise MissingDependencyError(
                f"writing the Parquet file {path} needs pyarrow ({exc}): pip install "
                "noisygd[parquet], or write CSV") from None
        return buf.getvalue()
    text = frame.to_csv(index=False).encode("utf-8")
    return gzip.compress(text, mtime=0) if suffix == ".gz" else text
