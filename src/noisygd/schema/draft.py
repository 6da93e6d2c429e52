"""``noisygd schema draft``: a first schema read from a data file, every derived value marked.

A draft is a convenience with a privacy cost: its bounds are the data's minimum and maximum, its
level lists the values that occur, its ``missing`` rules say which columns have gaps. Each such
value is marked ``# DATA-DERIVED: confirm or replace`` and its table ``draft = true``, a
:class:`~noisygd.exceptions.PrivacyLeakWarning` is issued, and ``noisygd fit`` refuses the schema
until every mark is resolved (:meth:`~noisygd.schema.model.TableSchema.check_final`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from noisygd.exceptions import PrivacyLeakWarning
from noisygd.schema.model import INDICATOR, ZEROS, level_key, parse_schema
from noisygd.schema.toml_write import dumps

__all__ = ["DATA_DERIVED", "draft_schema", "draft_toml"]

#: The mark on every value read from the data.
DATA_DERIVED = "DATA-DERIVED: confirm or replace"
#: A text column with more distinct values than this is drafted as ``ignore``.
MAX_LEVELS = 50
#: A numeric target with at most this many distinct values is drafted as classification.
MAX_CLASSES = 10

_HEADER = """DRAFT schema written by `noisygd schema draft` from {source}.
Every value marked DATA-DERIVED was read from the data itself (minima, maxima, the values that
occur, which columns have gaps): using it as if it were public leaks information about the rows.
For each marked table, replace the value by one known without looking at the data (a codebook,
a documented range, a domain limit) or confirm that it is public, then delete its
`draft = true` line; delete the top-level `draft = true` last. `noisygd fit` refuses this file
until then. See docs/schema.md."""


def _number(v: float) -> int | float:
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else float(v)


def _missing(col: pd.Series) -> np.ndarray:
    mask = col.isna().to_numpy()
    if col.dtype == object or pd.api.types.is_string_dtype(col):
        mask = mask | col.astype("string").str.strip().eq("").fillna(False).to_numpy(dtype=bool)
    return mask


def _as_numbers(col: pd.Series, present: np.ndarray) -> np.ndarray | None:
    if pd.api.types.is_bool_dtype(col):
        return None
    if pd.api.types.is_numeric_dtype(col):
        values = col.to_numpy(dtype=np.float64, na_value=np.nan)[present]
    else:
        values = pd.to_numeric(col.astype("string").str.strip()[present], errors="coerce"
                               ).to_numpy(dtype=np.float64, na_value=np.nan)
    return values if values.size and np.all(np.isfinite(values)) else None


#: A column of numbers but for at most this many distinct other texts, each in fewer rows
#: than the numbers, is drafted with a note naming them as likely missing-value markers.
MAX_MARKERS = 3
#: A marker text is quoted in the note only when printable and at most this long.
MAX_SHOWN_MARKER = 20


def _marker_texts(col: pd.Series, present: np.ndarray) -> list[str] | None:
    """The distinct texts of a column that is numbers but for a few texts (``?``, ``-``,
    ``n/a``: missing-value markers that pandas does not read as missing), or None.

    At most :data:`MAX_MARKERS` distinct texts that are not finite numbers, together in fewer
    rows than the numbers. Read from the data, as the rest of the draft.
    """
    if pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        return None
    text = col.astype("string").str.strip()[present]
    numbers = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    other = ~np.isfinite(numbers)
    markers = sorted({str(v) for v in text[other].tolist()})
    if not markers or len(markers) > MAX_MARKERS or 2 * int(other.sum()) >= other.size:
        return None
    return markers


def _marker_note(markers: list[str]) -> str:
    """The draft's reason for a numeric column with marker cells: re-draft with
    ``--na-values`` (quoting the markers when printable and short)."""
    shown = [m for m in markers if m.isprintable() and len(m) <= MAX_SHOWN_MARKER
             and not set(m) & set("'\"\\")]  # quoted as they are in a shell and in TOML
    if len(shown) == len(markers):
        flags = " ".join(f"--na-values '{m}'" for m in markers)
        listed = ", ".join(f'"{m}"' for m in markers)
        what = f"the text(s) {', '.join(map(repr, markers))}"
    else:
        flags, listed, what = "--na-values MARKER", '"MARKER"', "a few texts"
    return (f"numbers but for {what}: missing-value markers? re-draft with {flags} (or "
            f"declare [file] na_values = [{listed}]) and the column is drafted as numeric")


def _levels(col: pd.Series, present: np.ndarray) -> list[Any]:
    values = col[present]
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        return [_level_number(v) for v in sorted(set(values.astype(float).tolist()))]
    # a boolean is written as Python does ("False", "True"): it matches the cells True/False,
    # true/false (any case) and a Parquet bool alike (level_codes)
    return sorted({str(v).strip() for v in values.tolist()})


def _labels(col: pd.Series, present: np.ndarray, numbers: np.ndarray | None) -> list[Any]:
    """A classification target's labels: integers when every label is one (the CSV text
    ``1.0`` and a Parquet ``1`` then draft, and match, the same label), else text."""
    if numbers is not None and np.all(numbers == np.floor(numbers)):
        return [_level_number(v) for v in np.unique(numbers)]
    return _levels(col, present)


def _level_number(v: float) -> int | str:
    """A number as a level or label: an integer, else its text (a level is never a float)."""
    number = _number(v)
    return number if isinstance(number, int) else level_key(float(v))


#: Column names that hold a row number or identifier (compared in lower case).
ROW_NUMBER_NAMES = frozenset({"", "rownames", "row.names", "row_names", "index", "id",
                              "unnamed: 0"})


def _is_row_number(name: str, numbers: np.ndarray) -> bool:
    """Whether a numeric column looks like a row number: an index's name (R's ``rownames``,
    pandas' ``Unnamed: 0``) with integer values, or distinct consecutive integers from 0
    or 1."""
    if not np.all(numbers == np.floor(numbers)) or numbers.size < 3:
        return False
    if name.strip().lower() in ROW_NUMBER_NAMES:
        return True
    distinct = np.unique(numbers)
    return (distinct.size == numbers.size and distinct[0] in (0.0, 1.0)
            and distinct[-1] - distinct[0] == numbers.size - 1)


def _draft_column(col: pd.Series) -> tuple[dict[str, Any], dict[str, str]]:
    """The column's draft table and its comments (keyed by table key, ``""`` the table)."""
    missing = _missing(col)
    present = ~missing
    notes: dict[str, str] = {"draft": "delete this line once every DATA-DERIVED value is "
                                      "confirmed or replaced"}
    numbers = _as_numbers(col, present)
    body: dict[str, Any]
    if numbers is not None and _is_row_number(str(col.name), numbers):
        body = {"kind": "ignore"}
        notes["kind"] = (DATA_DERIVED + " (an index's name, or the integers 0 or 1 to the "
                         "number of rows: a row number, not a feature?)")
    elif numbers is not None and numbers.min() == numbers.max():
        body = {"kind": "ignore"}
        notes["kind"] = (DATA_DERIVED + " (one value in every row: it tells the rows apart "
                         "from nothing; declare public bounds to use it)")
    elif numbers is not None:
        body = {"kind": "numeric",
                "bounds": [_number(numbers.min()), _number(numbers.max())]}
        notes["bounds"] = DATA_DERIVED + " (the data's min and max)"
    else:
        levels = _levels(col, present)
        markers = _marker_texts(col, present)
        if len(levels) > MAX_LEVELS or not levels:
            body = {"kind": "ignore"}
            notes["kind"] = DATA_DERIVED + (
                f" ({_marker_note(markers)})" if markers else
                f" (more than {MAX_LEVELS} distinct values, or none: an identifier or free "
                "text?)")
        else:
            body = {"kind": "categorical", "levels": levels, "unknown": ZEROS}
            notes["levels"] = DATA_DERIVED + (f" (the values that occur; {_marker_note(markers)})"
                                              if markers else " (the values that occur)")
            notes["unknown"] = ("a level not listed (one absent from these rows, e.g. in a "
                                "test split) encodes as all zeros; \"error\" refuses it")
    if missing.any() and body["kind"] != "ignore":
        body["missing"] = INDICATOR
        notes["missing"] = DATA_DERIVED + " (the column has missing cells)"
    body["draft"] = True
    return body, notes


def draft_schema(frame: pd.DataFrame, *, target: str | None = None,
                 file_options: dict[str, Any] | None = None, source: str = "the data",
                 row_norm_bound: float = 1.0) -> tuple[dict[str, Any], dict[str, str]]:
    """A draft schema dict for ``frame`` and its comments (for :func:`~.toml_write.dumps`).

    Issues a :class:`~noisygd.exceptions.PrivacyLeakWarning`: the draft is computed from the
    data. Every derived value is in a table with ``draft = true``.
    """
    cols = [str(c) for c in frame.columns]
    if target is not None and target not in cols:
        raise ValueError(f"--target {target!r} is not a column of {source}; its columns are: "
                         f"{', '.join(cols)}")
    data: dict[str, Any] = {"row_norm_bound": float(row_norm_bound), "draft": True}
    comments: dict[str, str] = {
        "row_norm_bound": "public constant: every encoded row has norm <= this",
        "draft": "delete last, once no table below says draft = true",
    }
    if file_options:
        data["file"] = dict(file_options)
    if target is not None:
        col = frame[target]
        present = ~_missing(col)
        numbers = _as_numbers(col, present)
        distinct = None if numbers is None else np.unique(numbers)
        if distinct is not None and distinct.size > MAX_CLASSES:
            data["target"] = {"name": target,
                              "bounds": [_number(distinct[0]), _number(distinct[-1])],
                              "draft": True}
            comments["target.bounds"] = DATA_DERIVED + " (the data's min and max)"
        else:
            data["target"] = {"name": target, "labels": _labels(col, present, numbers),
                              "draft": True}
            comments["target.labels"] = DATA_DERIVED + " (the values that occur)"
        comments["target.draft"] = "delete this line once the value above is confirmed"
    data["columns"] = {}
    for name in cols:
        if name == target:
            continue
        body, notes = _draft_column(frame[name])
        data["columns"][name] = body
        comments.update({f"columns.{name}.{k}": v for k, v in notes.items()})
    if all(body["kind"] == "ignore" for body in data["columns"].values()):
        if len(frame) < 2:  # every column of one row is constant
            rows = "no data rows" if len(frame) == 0 else "too few data rows to draft from"
            raise ValueError(f"{source} has {rows}: a draft reads bounds and levels from the "
                             "rows; write the schema by hand (docs/schema.md)")
        marked = [name for name in data["columns"]
                  if _marker_texts(frame[name], ~_missing(frame[name]))]
        hint = (f"; column(s) {', '.join(map(repr, marked))} hold numbers but for a few texts "
                "(missing-value markers?): re-draft with --na-values MARKER" if marked else "")
        raise ValueError(f"no column of {source} can be drafted as a feature (each is constant, "
                         "a row number, free text or empty): write the schema by hand "
                         f"(docs/schema.md){hint}")
    parse_schema(data, "the draft")  # the draft itself is a valid (draft) schema
    warnings.warn(
        f"the draft schema for {source} is computed from the data (bounds, levels, gaps): each "
        "value is marked DATA-DERIVED; replace or confirm every one before fitting",
        PrivacyLeakWarning, stacklevel=2)
    return data, comments


def draft_toml(frame: pd.DataFrame, *, target: str | None = None,
               file_options: dict[str, Any] | None = None, source: str = "the data") -> str:
    """The draft as TOML text (header comment, marks), ready to write to a file."""
    data, comments = draft_schema(frame, target=target, file_options=file_options,
                                  source=source)
    return dumps(data, comments=comments, header=_HEADER.format(source=source))
