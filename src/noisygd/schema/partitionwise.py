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

Paid statistics (``"private"`` bounds or levels, ``count_clipped``;
:mod:`noisygd.schema.paid`) are distributed reductions: each partition computes, on its
worker and by the in-memory functions, the exact histograms of its rows
(:func:`~noisygd.schema.paid.paid_histogram_counts`, after checking every cell against the
widest public encoding, as in memory) and later its clipped-value counts against the
resolved bounds (:func:`~noisygd.schema.paid.paid_clip_counts`); the client adds them up in
partition order (integers: exactly the counts of all the rows) and draws the noise once, from
the generator and by the functions the in-memory fit uses
(:func:`~noisygd.schema.paid.resolve_paid_counts`). With the same seed the resolved schema,
the release and its events are those of the in-memory fit, whatever the partitioning
(:func:`resolve_paid_partitionwise`).
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
from noisygd.schema.model import TableSchema
from noisygd.schema.paid import (
    PaidPlan,
    PaidRelease,
    paid_clip_counts,
    paid_histogram_counts,
    planning_schema,
    resolve_paid_counts,
)

__all__ = ["collection_files", "encode_features_partitionwise", "encode_labels_partitionwise",
           "encode_target_values_partitionwise", "paid_counts_partitionwise",
           "read_raw_collection", "resolve_paid_partitionwise"]

_PARQUET = (".parquet", ".pq")


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
        At once: a paid-for schema (resolve it first: :func:`resolve_paid_partitionwise`),
        or a header without the schema's columns. When the partitions are computed: a cell
        the schema refuses (as in memory).
    """
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
    return col.map_partitions(_labels_part, schema, source,
                              meta=pd.Series(dtype=np.int64, name=col.name))


def encode_target_values_partitionwise(schema: TableSchema, col: Any,
                                       source: str = "the data") -> Any:
    """:func:`~noisygd.schema.encode.encode_target_values` (finite float64) on every
    partition of a Dask Series."""
    return col.map_partitions(_targets_part, schema, source,
                              meta=pd.Series(dtype=np.float64, name=col.name))


def _paid_part(part: pd.DataFrame, schema: TableSchema, plan: PaidPlan,
               source: str) -> list[np.ndarray]:
    """One partition's exact paid histograms, after checking its every cell (as in memory:
    the widest public encoding refuses what the resolved one would)."""
    check_columns(schema, part.columns, source, need_target=True)
    encode_features(planning_schema(schema), part, source)
    return paid_histogram_counts(schema, part, plan, source)


def _clip_part(part: pd.DataFrame, schema: TableSchema, plan: PaidPlan,
               bounds: list[tuple[float, float]], source: str) -> list[np.ndarray]:
    return paid_clip_counts(schema, part, plan, bounds, source)


def _summed(parts: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Per statistic, the sum of the partitions' exact counts, in partition order."""
    total = [np.zeros_like(c) for c in parts[0]]
    for part in parts:
        for k, counts in enumerate(part):
            total[k] = total[k] + counts
    return total


def _reduce_parts(frame: Any, what: str, func: Any, *args: Any) -> list[np.ndarray]:
    """``func(partition, *args)`` on every partition of ``frame`` (one task each, on the
    client of :func:`noisygd.oracles.dask.oracle_defaults` or the current one), gathered and
    added in partition order. A lost worker or scheduler becomes a
    :class:`~noisygd.oracles.dask.DaskFitError`; the data's own errors pass as raised."""
    from distributed import TimeoutError as DaskTimeout
    from distributed.client import FutureCancelledError
    from distributed.comm.core import CommClosedError
    from distributed.scheduler import KilledWorker

    import dask
    from noisygd.oracles.dask import _DEFAULTS, DaskFitError, _client

    client = _client(dict(_DEFAULTS.get()).get("client"))
    tasks = [dask.delayed(func, pure=False)(part, *args) for part in frame.to_delayed()]
    lost = (KilledWorker, FutureCancelledError, DaskTimeout, CommClosedError,
            ConnectionError, EOFError)
    try:
        parts = client.gather(client.compute(tasks))
    except lost as exc:
        raise DaskFitError(f"the Dask cluster failed while counting {what}: "
                           f"{type(exc).__name__}; the fit stops and releases no "
                           "model") from None
    return _summed(parts)


def paid_counts_partitionwise(schema: TableSchema, frame: Any, plan: PaidPlan,
                              source: str = "the data") -> list[np.ndarray]:
    """:func:`~noisygd.schema.paid.paid_histogram_counts` of a Dask DataFrame: each
    partition's exact histograms (its cells checked first, as in memory), added in partition
    order. Nothing is released (no noise is drawn).

    Raises
    ------
    SchemaError
        A header without the schema's columns, or a cell the schema refuses (on the worker
        that meets it, as in memory).
    """
    check_columns(schema, frame.columns, source, need_target=True)
    return _reduce_parts(frame, "the paid statistics", _paid_part, schema, plan, source)


def resolve_paid_partitionwise(schema: TableSchema, frame: Any, plan: PaidPlan, *, rng: Any,
                               source: str = "the data",
                               counts: list[np.ndarray] | None = None
                               ) -> tuple[TableSchema, PaidRelease]:
    """:func:`~noisygd.schema.paid.resolve_paid` of a Dask DataFrame: the same resolved
    schema and :class:`~noisygd.schema.paid.PaidRelease` as in memory with the same ``rng``
    (module docstring).

    ``counts`` are :func:`paid_counts_partitionwise` when already computed (the fit
    records the release in a ledger, then counts, then draws); the clipped-value counts are
    a second pass, against the resolved bounds.
    """
    if counts is None:
        counts = paid_counts_partitionwise(schema, frame, plan, source)
    return resolve_paid_counts(
        schema, plan, counts,
        lambda bounds: _reduce_parts(frame, "the clipped values", _clip_part, schema, plan,
                                     bounds, source), rng=rng)
