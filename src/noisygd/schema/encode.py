"""Encoding a table by a :class:`~noisygd.schema.model.TableSchema`: one row at a time.

Every constant used (bounds, levels, transforms, the row-norm bound) comes from the schema, so
the encoding of row ``i`` depends on row ``i`` alone and costs no privacy. Blocks, in the
schema's column order:

- numeric: ``z = (t(clip(x, lo, hi)) - t(lo)) / (t(hi) - t(lo))`` in ``[0, 1]`` (one column;
  with ``missing = "indicator"`` a second 0/1 column, and ``z = 0`` for a missing value);
- ordinal: level ``i`` of ``k`` as ``i / (k - 1)`` in ``[0, 1]`` (plus the indicator column);
- categorical: one-hot against the declared levels (plus ``NAME=<missing>``).

Each block has norm at most 1, so a row has norm at most ``sqrt(n_blocks)``; the matrix is
multiplied by the public constant ``b = B / sqrt(n_blocks)`` (``B`` = ``row_norm_bound``), so
``||x_i|| <= B`` by construction, and :func:`~noisygd.data.preprocessing.clip_rows` guards
against rounding. Errors name the column and the fix, never a value read from the data.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from noisygd.data.io import header_name
from noisygd.data.preprocessing import clip_rows, signed_log1p
from noisygd.data.schema import PublicCentring
from noisygd.schema.model import (
    ERROR,
    INDICATOR,
    MISSING_LEVEL,
    OTHER_LEVEL,
    ZEROS,
    CategoricalColumn,
    NumericColumn,
    OrdinalColumn,
    SchemaError,
    TableSchema,
    level_codes,
    level_key,
)

__all__ = [
    "block_scale",
    "check_columns",
    "encode_features",
    "encode_labels",
    "encode_target_values",
    "feature_names",
    "public_centring",
]


def _transform(x: np.ndarray, kind: str) -> np.ndarray:
    if kind == "log1p":
        return np.log1p(x)
    if kind == "signed_log1p":
        return signed_log1p(x)
    return x


def feature_names(schema: TableSchema) -> list[str]:
    """Names of the encoded columns: ``age``, ``job=admin.``, ``job=<missing>``, ..."""
    schema.check_public("encoding")
    names: list[str] = []
    for name, col in schema.features.items():
        if isinstance(col, CategoricalColumn):
            names.extend(f"{name}={level_key(v)}" for v in col.levels)
        else:
            names.append(name)
        if level_key(col.missing) == INDICATOR:
            names.append(f"{name}={MISSING_LEVEL}")
    return names


def block_scale(schema: TableSchema) -> float:
    """``b = row_norm_bound / sqrt(n_blocks)``: the per-block scale (a schema constant)."""
    return float(schema.row_norm_bound / np.sqrt(len(schema.features)))


def check_columns(schema: TableSchema, columns: Iterable[Any], source: str, *,
                  need_target: bool, predict: bool = False) -> None:
    """Refuse a table whose header does not match the schema.

    Raises :class:`SchemaError` for a duplicated column name, a column the schema does not
    declare, a declared feature column absent from the table, or (``need_target``) an absent
    target column. Column names come from the header, not from the rows. With ``predict``
    (the schema is a model file's, which the user does not edit), the advice is for the
    prediction file (:func:`_undeclared_advice`).
    """
    cols = [str(c) for c in columns]
    dup = sorted({c for c in cols if cols.count(c) > 1})
    if dup:
        shown = ", ".join(header_name(c, cols.index(c)) for c in dup)
        raise SchemaError(f"{source} has the column name(s) {shown} more "
                          "than once: rename the columns so that each name is unique")
    target = schema.target.name if schema.target is not None else None
    undeclared = [c for c in cols if c not in schema.columns and c != target]
    if undeclared:
        shown = ", ".join(header_name(c, cols.index(c)) for c in undeclared[:10])
        more = f" and {len(undeclared) - 10} more" if len(undeclared) > 10 else ""
        raise SchemaError(f"{source} has columns the {_whose(predict)} does not declare: "
                          f"{shown}{more}; {_undeclared_advice(undeclared, predict)}")
    present = set(cols)
    absent = [c for c in schema.features if c not in present]
    if absent:
        fix = ("the model was fitted with them and needs every one: check the file's header "
               "(the model's schema reads it with its [file] options), or refit without them"
               if predict else "check the file's header (or [file] names), or set their kind "
               "= \"ignore\"")
        raise SchemaError(f"{source} lacks the column(s) {', '.join(map(repr, absent))} "
                          f"declared in the {_whose(predict)}: {fix}")
    if need_target and target is not None and target not in present:
        raise SchemaError(f"{source} lacks the target column {target!r} named in [target]: "
                          "check the file's header or the [target] name")


def _whose(predict: bool) -> str:
    return "model's schema" if predict else "schema"


def _undeclared_advice(undeclared: list[str], predict: bool) -> str:
    """What to do with columns a schema does not declare: at fit, declare them; at predict
    (the model file's schema), drop them from the file or refit. A blank header cell
    (``""``) is said to be one."""
    blank = ("; a blank header cell is a column without a name (a row index written by "
             "to_csv or write.csv?): name it in the header, or remove the column"
             if "" in undeclared else "")
    if predict:
        return ("the model was fitted without them and cannot use them: remove them from the "
                "file, or refit with a schema that declares them" + blank)
    return ("add a [columns.NAME] table for each (kind = \"numeric\", \"categorical\", "
            "\"ordinal\", or \"ignore\" to skip it)" + blank)


def _missing_mask(col: pd.Series) -> np.ndarray:
    mask = col.isna().to_numpy()
    if col.dtype == object or pd.api.types.is_string_dtype(col):
        blank = col.astype("string").str.strip().eq("").fillna(False).to_numpy(dtype=bool)
        mask = mask | blank
    return mask


def _numeric_values(col: pd.Series, name: str, spec: NumericColumn, source: str,
                    missing: np.ndarray) -> np.ndarray:
    if pd.api.types.is_complex_dtype(col):
        # NumPy would drop the imaginary parts (with a warning): refuse the column instead
        raise SchemaError(
            f"column {name!r} of {source} holds complex numbers, but [columns.{name}] declares "
            "kind = \"numeric\" (a real number): convert the column to real numbers, or "
            "declare it \"ignore\"")
    if pd.api.types.is_bool_dtype(col):
        values = col.astype(float).to_numpy(dtype=np.float64)
    elif pd.api.types.is_numeric_dtype(col):
        values = col.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        text = col.astype("string").str.strip()
        values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64,
                                                               na_value=np.nan)
    bad = ~missing & ~np.isfinite(values)
    if bad.any():
        raise SchemaError(
            f"column {name!r} of {source} holds a value that is not a finite number, but "
            f"[columns.{name}] declares kind = \"numeric\": fix the file (or declare missing "
            "markers in [file] na_values), or declare the column \"categorical\" or \"ignore\"")
    return values


def _encode_numeric(col: pd.Series, name: str, spec: NumericColumn, source: str) -> np.ndarray:
    missing = _missing_mask(col)
    values = _numeric_values(col, name, spec, source, missing)
    lo, hi = spec.bounds
    rule = spec.missing
    if missing.any():
        if rule == ERROR:
            raise SchemaError(
                f"column {name!r} of {source} has missing values and [columns.{name}] does not "
                "say what they become: set missing = <a public constant within bounds> or "
                "missing = \"indicator\"")
        # a public constant, or (indicator) any in-bounds value: z is set to 0 below
        values = np.where(missing, rule if isinstance(rule, float) else lo, values)
    t_lo, t_hi = _transform(np.array([lo, hi]), spec.transform)
    z = (_transform(np.clip(values, lo, hi), spec.transform) - t_lo) / (t_hi - t_lo)
    z = np.clip(z, 0.0, 1.0)
    if rule == INDICATOR:
        return np.column_stack([np.where(missing, 0.0, z), missing.astype(np.float64)])
    return z[:, None]


def _level_codes(col: pd.Series, name: str, spec: CategoricalColumn | OrdinalColumn,
                 source: str, unknown_seen: dict[str, tuple[int, str]] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Level index per row (``-1`` for missing) and the missing mask; ``unknown_seen[name]``
    (when given) is ``(rows, unknown)``: the number of rows whose cell is not a declared
    level and that no level of the user's own choosing takes in (:func:`_warned_unknown`),
    and what they became (``"zeros"`` or ``"<other>"``)."""
    missing = _missing_mask(col)
    codes = level_codes(spec.levels, col)
    unknown = (codes < 0) & ~missing
    if unknown.any():
        if unknown_seen is not None and _warned_unknown(spec):
            unknown_seen[name] = (int(unknown.sum()), level_key(spec.unknown))
        if level_key(spec.unknown) == ERROR:
            raise SchemaError(
                f"column {name!r} of {source} holds a value that is not one of the levels of "
                f"[columns.{name}]: add the level to levels, or set unknown = \"LEVEL\" (a "
                "declared level) to map unlisted values there, or declare missing markers in "
                "[file] na_values")
        if level_key(spec.unknown) != ZEROS:  # "zeros": stays -1, an all-zero block
            codes = np.where(unknown, spec.level_index(spec.unknown), codes)
    rule = level_key(spec.missing)
    if missing.any():
        if rule == ERROR:
            raise SchemaError(
                f"column {name!r} of {source} has missing values and [columns.{name}] does not "
                "say what they become: set missing = \"indicator\" or missing = \"LEVEL\" (a "
                "declared level)")
        if rule not in (INDICATOR, ZEROS):
            codes = np.where(missing, spec.level_index(spec.missing), codes)
    return codes, missing


def _warned_unknown(spec: CategoricalColumn | OrdinalColumn) -> bool:
    """Whether a cell outside the declared levels is encoded without a level the user chose:
    ``unknown = "zeros"`` (an all-zero block: no level) or the reserved ``"<other>"`` that a
    fit paying for the levels adds (the vocabulary levels it dropped, values outside it)."""
    return level_key(spec.unknown) in (ZEROS, OTHER_LEVEL)


def _unknown_warning(source: str, unknown_seen: dict[str, tuple[int, str]],
                     n_rows: int) -> str:
    """The prediction-time warning of :func:`encode_features` (``warn_unknown``): per column,
    the number of rows with a cell that is not one of the model's levels and what it became
    (the rows are the prediction data, not the private training data; no cell is quoted)."""
    became = {ZEROS: "encoded as all zeros, no level (unknown = \"zeros\")",
              OTHER_LEVEL: f"encoded as the level {OTHER_LEVEL!r} (the levels a paid release "
                           "dropped and values outside its vocabulary)"}
    parts = [f"column {name!r}: {count} of {n_rows} rows, {became[how]}"
             for name, (count, how) in unknown_seen.items()]
    return (f"{source} holds values that are not among the levels the model was fitted with "
            f"({'; '.join(parts)}), as such cells were at fit time: the model learnt nothing "
            "of these values. Check their spelling and case; to use a new level, refit with "
            "a schema that declares it")


def _encode_levels(col: pd.Series, name: str, spec: CategoricalColumn | OrdinalColumn,
                   source: str, unknown_seen: dict[str, tuple[int, str]] | None = None
                   ) -> np.ndarray:
    codes, missing = _level_codes(col, name, spec, source, unknown_seen)
    indicator = level_key(spec.missing) == INDICATOR
    n = codes.shape[0]
    if isinstance(spec, CategoricalColumn):
        k = len(spec.levels) + (1 if indicator else 0)
        block = np.zeros((n, k))
        known = np.flatnonzero(codes >= 0)  # < 0: missing ("indicator"/"zeros") or "zeros"
        block[known, codes[known]] = 1.0
        if indicator:
            block[missing, len(spec.levels)] = 1.0
        return block
    z = np.where(codes < 0, 0.0, codes / (len(spec.levels) - 1.0))
    if indicator:
        return np.column_stack([z, missing.astype(np.float64)])
    return z[:, None]


def encode_features(schema: TableSchema, frame: pd.DataFrame, source: str = "the data",
                    warn_unknown: bool = False) -> np.ndarray:
    """The bounded design matrix of ``frame`` (rows of norm ``<= schema.row_norm_bound``).

    ``frame`` must hold every feature column of the schema (see :func:`check_columns`); the
    target and ignored columns are not read. A schema with ``"private"`` bounds or levels
    is refused (:meth:`~noisygd.schema.TableSchema.check_public`): the fit resolves them.
    ``warn_unknown`` (prediction only: the rows are not the training data) warns, naming the
    columns and how many rows of each, where cells that are not declared levels were encoded
    as an all-zero block (``unknown = "zeros"``, the draft's default) or as the level
    ``"<other>"`` a paid level list adds; a declared ``unknown`` level is the user's own
    mapping and stays silent. A fit says nothing of its rows.
    """
    schema.check_public("encoding")
    blocks, problems = [], []
    unknown_seen: dict[str, tuple[int, str]] | None = {} if warn_unknown else None
    for name, spec in schema.features.items():
        col = frame[name]
        try:  # every column is checked: one run names every column to fix
            if isinstance(spec, NumericColumn):
                blocks.append(_encode_numeric(col, name, spec, source))
            else:
                blocks.append(_encode_levels(col, name, spec, source, unknown_seen))
        except SchemaError as exc:
            problems.append(str(exc))
    if problems:
        raise SchemaError(problems[0] if len(problems) == 1 else
                          f"{len(problems)} columns cannot be encoded: " + "; ".join(problems))
    if unknown_seen:
        warnings.warn(_unknown_warning(source, unknown_seen, len(frame)), UserWarning,
                      stacklevel=2)
    X = np.hstack(blocks) if blocks else np.zeros((len(frame), 0))
    X *= block_scale(schema)
    return np.ascontiguousarray(clip_rows(X, schema.row_norm_bound))


def _refuse_missing_targets(col: pd.Series, name: str, source: str, what: str) -> None:
    """:class:`SchemaError` if the target column has a missing cell (names no row or value)."""
    if _missing_mask(col).any():
        raise SchemaError(f"the target column {name!r} of {source} has missing values: drop "
                          f"those rows before fitting (a row without {what} cannot be used)")


def encode_labels(schema: TableSchema, col: pd.Series, source: str = "the data") -> np.ndarray:
    """Class codes ``0..K-1`` (positions in ``[target] labels``) of a label column."""
    target = schema.target
    if target is None or target.labels is None:
        raise SchemaError("the schema's [target] declares no labels")
    _refuse_missing_targets(col, target.name, source, "a label")
    codes = level_codes(target.labels, col)
    if (codes < 0).any():
        raise SchemaError(f"the target column {target.name!r} of {source} holds a value that "
                          "is not in [target] labels: add it to labels (every class must be "
                          "declared)")
    return codes.astype(np.int64)


def encode_target_values(schema: TableSchema, col: pd.Series, source: str = "the data"
                         ) -> np.ndarray:
    """A regression target column as finite float64 (clipping to ``bounds`` is the fit's)."""
    target = schema.target
    if target is None or target.bounds is None:
        raise SchemaError("the schema's [target] declares no bounds")
    _refuse_missing_targets(col, target.name, source, "a target")
    values = pd.to_numeric(col.astype("string").str.strip() if not
                           pd.api.types.is_numeric_dtype(col) else col,
                           errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    if not np.all(np.isfinite(values)):
        raise SchemaError(f"the target column {target.name!r} of {source} holds a value that is "
                          "not a finite number, but [target] declares bounds (regression): fix "
                          "the file, or declare labels = [...] for classification")
    return values


def public_centring(schema: TableSchema) -> PublicCentring:
    r"""A centre of the encoded domain and its exact radius, from the schema alone (no data).

    With ``b`` the block scale: a numeric or ordinal block ``b z``, ``z in [0, 1]``, is
    centred at ``b/2`` (radius :math:`b/2`); with an indicator column its values lie in the
    triangle ``(0,0), (b,0), (0,b)``, centred at ``(b/2, b/2)`` (radius :math:`b/\sqrt2`,
    the triangle's circumradius). A one-hot block of ``m`` columns (the levels, plus
    ``<missing>``) is always exactly one vertex :math:`b e_j` (an unknown level maps to a
    declared one), centred at :math:`(b/m)\mathbf 1` (radius :math:`b\sqrt{1 - 1/m}`; with
    ``"zeros"`` the block may also be 0, radius :math:`b\sqrt{\max(1 - 1/m, 1/m)}`). The
    total radius is :math:`\sqrt{\sum R_{block}^2}`; the intercept scale is ``b``.
    """
    schema.check_public("the public centring")
    b = block_scale(schema)
    centre: list[np.ndarray] = []
    r2 = 0.0
    for spec in schema.features.values():
        indicator = level_key(spec.missing) == INDICATOR
        if isinstance(spec, CategoricalColumn):
            m = len(spec.levels) + (1 if indicator else 0)
            centre.append(np.full(m, b / m))
            # "zeros" adds the vertex 0, at distance b/sqrt(m) from the centre (b/m)1
            zero = ZEROS in (level_key(spec.missing), level_key(spec.unknown))
            r2 += b * b * (max(1.0 - 1.0 / m, 1.0 / m) if zero else (1.0 - 1.0 / m))
        elif indicator:
            centre.append(np.array([b / 2.0, b / 2.0]))
            r2 += b * b / 2.0
        else:
            centre.append(np.array([b / 2.0]))
            r2 += b * b / 4.0
    radius = float(np.sqrt(r2))
    return PublicCentring(centre=np.concatenate(centre), radius=max(radius, 1e-300),
                          intercept_scale=b)
