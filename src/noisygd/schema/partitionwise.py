r"""A schema's encoding on Dask: raw tables read and encoded partition by partition.

The encoding of :mod:`noisygd.schema.encode` maps each row by its own cells and the
schema's public constants (bounds and clipping, declared levels, ``unknown`` and ``missing``
rules, transforms, the row scaling :math:`\lVert x_i\rVert \le B`): no statistic of the data
enters it. It is therefore applied to each partition on its worker, by the same functions
(:func:`~noisygd.schema.encode.encode_features`,
:func:`~noisygd.schema.encode.encode_labels`,
:func:`~noisygd.schema.encode.encode_target_values`) through ``map_partitions``: a row is
encoded the same way in memory and on Dask, whatever partition holds it, an undeclared level
maps where the schema's ``unknown`` says (or raises, naming no cell) on the worker that meets
it, and nothing of the data is computed on the client.

:func:`read_raw_collection` reads a Parquet directory or a CSV glob as raw cells, one
partition per file, each file read on a worker by
:func:`~noisygd.data.io.read_raw_table` (the in-memory reader: the same cells).

Not on Dask: bounds, levels or clipped-value counts paid for privately (``"private"``,
``count_clipped``) need a noisy statistic resolved before the encoding is known; the
encoders refuse such a schema (declare the bounds and levels, or fit in memory).
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from noisygd.schema.encode import (
    check_columns,
    encode_features,
    encode_labels,
    encode_target_values,
    feature_names,
)
from noisygd.schema.model import SchemaError, TableSchema

__all__ = ["collection_files", "encode_features_partitionwise", "encode_labels_partitionwise",
           "encode_target_values_partitionwise", "read_raw_collection", "refuse_paid"]

_PARQUET = (".parquet", ".pq")


def refuse_paid(schema: TableSchema) -> None:
    """Raise :class:`~noisygd.schema.SchemaError` if the schema pays for a statistic
    (``"private"`` bounds or levels, ``count_clipped``): not supported on Dask."""
    if schema.pays:
        paid = schema.paid_columns + [c for c in schema.clip_count_columns
                                      if c not in schema.paid_columns]
        raise SchemaError(
            f"the schema pays for statistics of column(s) {', '.join(map(repr, paid))} "
            "(\"private\" bounds or levels, or count_clipped): this is not supported on Dask "
            "(the paid release would need a pass over the data before the encoding is known); "
            "declare those bounds and levels public in the schema, or fit in memory")


def collection_files(path: str | Path) -> list[Path]:
    """The files of a Parquet directory (its ``*.parquet``/``*.pq`` files, in any
    subdirectory), a glob, or one file, in natural order (``part.2`` before ``part.10``):
    the order of the partitions, and of the rows.

    Raises
    ------
    noisygd.data.io.DataFileError
        No file matches.
    """
    from dask.utils import natural_sort_key

    from noisygd.data.io import DataFileError

    text = str(path)
    p = Path(text)
    if p.is_dir():
        found = [f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in _PARQUET]
        if not found:
            raise DataFileError(f"the directory {p} holds no .parquet or .pq file")
    elif p.is_file():
        found = [p]
    else:
        found = [Path(f) for f in glob.glob(text) if Path(f).is_file()]
        if not found:
            raise DataFileError(f"no file matches {text}")
    return sorted(found, key=lambda f: natural_sort_key(str(f)))


def read_raw_collection(path: str | Path, **file_options: Any) -> Any:
    """A table of raw cells as a Dask DataFrame: one partition per file of
    :func:`collection_files`, each read on a worker by
    :func:`~noisygd.data.io.read_raw_table` with ``file_options`` (a schema's ``[file]``
    table), so that its cells are those of the in-memory reader (Dask's own conversion of
    text columns is off).

    Only the first file's columns and types (an empty frame, computed on the cluster: Dask's
    ``meta``) reach the client; every file is checked against the schema's columns as it is
    encoded.
    """
    import dask.dataframe as dd

    import dask
    from noisygd.data.io import read_raw_table

    files = [str(f) for f in collection_files(path)]
    meta = dask.delayed(_empty_part, pure=True)(files[0], file_options).compute()
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_map(read_raw_table, files, **file_options, meta=meta,
                           enforce_metadata=False)


def _empty_part(path: str, file_options: dict[str, Any]) -> pd.DataFrame:
    """The file's columns and types, without its rows (read on a worker)."""
    from noisygd.data.io import read_raw_table

    return read_raw_table(path, **file_options).iloc[:0]


def _meta_frame(names: list[str]) -> pd.DataFrame:
    return pd.DataFrame(np.empty((0, len(names))), columns=pd.Index(names, dtype=object))


def _encode_part(part: pd.DataFrame, schema: TableSchema, source: str,
                 names: list[str]) -> pd.DataFrame:
    """One partition's design matrix (the in-memory encoder), as a DataFrame."""
    check_columns(schema, part.columns, source, need_target=False)  # each file's header
    return pd.DataFrame(encode_features(schema, part, source), index=part.index,
                        columns=pd.Index(names, dtype=object))


def encode_features_partitionwise(schema: TableSchema, frame: Any,
                                  source: str = "the data") -> Any:
    """:func:`~noisygd.schema.encode.encode_features` on every partition of a Dask
    DataFrame: a Dask DataFrame of float64 columns named by
    :func:`~noisygd.schema.encode.feature_names`, rows of norm ``<= row_norm_bound``.

    Raises
    ------
    SchemaError
        At once: a paid-for schema, or a header without the schema's columns. When the
        partitions are computed: a cell the schema refuses (as in memory).
    """
    refuse_paid(schema)
    schema.check_public("encoding")
    check_columns(schema, frame.columns, source, need_target=False)
    names = feature_names(schema)
    return frame.map_partitions(_encode_part, schema, source, names, meta=_meta_frame(names))


def _labels_part(col: pd.Series, schema: TableSchema, source: str) -> pd.Series:
    return pd.Series(encode_labels(schema, col, source), index=col.index, name=col.name)


def _targets_part(col: pd.Series, schema: TableSchema, source: str) -> pd.Series:
    return pd.Series(encode_target_values(schema, col, source), index=col.index,
                     name=col.name)


def encode_labels_partitionwise(schema: TableSchema, col: Any, source: str = "the data") -> Any:
    """:func:`~noisygd.schema.encode.encode_labels` (class codes ``0..K-1``) on every
    partition of a Dask Series."""
    refuse_paid(schema)
    return col.map_partitions(_labels_part, schema, source,
                              meta=pd.Series(dtype=np.int64, name=col.name))


def encode_target_values_partitionwise(schema: TableSchema, col: Any,
                                       source: str = "the data") -> Any:
    """:func:`~noisygd.schema.encode.encode_target_values` (finite float64) on every
    partition of a Dask Series."""
    refuse_paid(schema)
    return col.map_partitions(_targets_part, schema, source,
                              meta=pd.Series(dtype=np.float64, name=col.name))
