r"""Estimators and the command line on Dask collections.

:func:`fit_estimator` fits a noisygd estimator (:class:`~noisygd.estimators.DPLogisticRegression`,
:class:`~noisygd.estimators.DPLinearRegression`, ...) on a Dask array or DataFrame: the
per-row maps of the in-memory ``fit`` (label encoding against the *declared* classes, target
clipping to the declared range) run partition-wise, and the fit itself is the estimator's own
(its objective, conditioning, solver, privacy accounting and ledger) over a
:class:`~noisygd.oracles.dask.DaskOracle`. :func:`read_collection` reads a Parquet directory
or a CSV glob, and :class:`DaskSession` connects to a scheduler (``--scheduler``) or starts a
local cluster (``--local-workers``) for ``noisygd fit``.
"""

from __future__ import annotations

import glob
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from noisygd._checks import check_choice, check_positive_int
from noisygd.oracles.dask import StepProgress, oracle_defaults

__all__ = ["DaskSession", "fit_estimator", "print_progress", "read_collection"]

#: Why ``tune=True`` is refused on Dask collections, and what to do instead.
TUNE_ON_DASK = (
    "tune=True is not supported on Dask collections: the private selection (docs/tuning.md) "
    "splits the rows by per-row coins into a training and a validation part, fits every run "
    "on an in-memory copy of the training part and scores it with predictions over the "
    "validation part, none of which is a reduction of the DaskOracle; fit with fixed "
    "hyperparameters (tune=False), or run tune=True in memory on data that fits in one "
    "process")


def _verbatim_labels(first: str, target: str, labels: Sequence[str]) -> dict[str, Any]:
    """``dd.read_csv`` options that read the declared ``labels`` verbatim in the ``target``
    column of CSV files whose header is ``first``'s, every other cell as pandas' defaults
    read it (a class ``NA`` is a label, not a missing target: as the in-memory reader,
    :func:`noisygd.data.io.read_table`); no options where the header lacks the target."""
    import pandas as pd

    try:
        from pandas._libs.parsers import STR_NA_VALUES as defaults
    except ImportError:  # pragma: no cover - pandas' documented default markers
        defaults = {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                    "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                    "nan", "null"}
    header = [str(c) for c in pd.read_csv(first, nrows=0).columns]
    if target not in header:
        return {}
    keep = {str(v) for v in labels}
    markers = sorted(defaults)
    return {"keep_default_na": False,
            "na_values": {c: [v for v in markers if v not in keep] if c == target else markers
                          for c in header}}


def read_collection(path: str | Path, *, target: str, labels: Sequence[str] = ()
                    ) -> tuple[Any, Any, list[str]]:
    """Features and target of a Parquet directory (or file) or a CSV glob, as a Dask
    DataFrame and Series (nothing is read but the schema and the CSV header).

    Parameters
    ----------
    path : str or Path
        A Parquet directory or file (``.parquet``/``.pq``), or a CSV file or glob (``*.csv``).
    target : str
        The target column; every other column is a feature and must be numeric.
    labels : sequence of str, optional
        The declared class labels, as text: in CSV files a target cell holding one of them is
        read verbatim, even where pandas would read it as missing (``NA``, ``N/A``, ``null``,
        ...), as :func:`noisygd.data.io.read_table` does.

    Returns
    -------
    X : dask.dataframe.DataFrame
    y : dask.dataframe.Series
    feature_names : list of str

    Raises
    ------
    noisygd.data.io.DataFileError
        No file matches, the target column is missing, or a feature column is not numeric
        (named; no value is shown).
    """
    import dask.dataframe as dd

    from noisygd.data.io import DataFileError

    text = str(path)
    p = Path(text)
    try:
        if p.is_dir() or p.suffix in (".parquet", ".pq"):
            if not p.exists():
                raise DataFileError(f"data file not found: {p}")
            with warnings.catch_warnings():  # dask's own use of a deprecated pandas keyword
                warnings.filterwarnings("ignore", message=".*inplace keyword.*")
                frame = dd.read_parquet(text)
        else:
            files = sorted(glob.glob(text))
            if not files:
                raise DataFileError(f"no file matches {text}")
            _refuse_long_rows(files)
            frame = dd.read_csv(text, **(_verbatim_labels(files[0], target, labels)
                                         if labels else {}))
    except (OSError, ValueError) as exc:
        if isinstance(exc, DataFileError):
            raise
        raise DataFileError(f"cannot read {text}: {type(exc).__name__}") from None
    columns = [str(c) for c in frame.columns]
    if target not in columns:
        raise DataFileError(f"{text} has no column {target!r} (--target)")
    names = [c for c in columns if c != target]
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    bad = [c for c in names
           if not is_numeric_dtype(frame[c].dtype) or is_bool_dtype(frame[c].dtype)]
    if bad:
        raise DataFileError(f"{text}: feature columns must be numeric; not numeric: {bad}")
    return frame[names], frame[target], names


def fit_estimator(estimator: Any, X: Any, y: Any) -> Any:
    """Fit ``estimator`` (a noisygd linear estimator) on Dask collections; returns it.

    Parameters
    ----------
    estimator : DPLogisticRegression, DPLinearRegression, DPHuberRegressor
        Classifiers need their label set declared (``classes=[...]``): it is not read from
        the data. ``tune=True`` is not supported here.
    X : dask array of shape (n, d) or dask DataFrame
        Numeric features (checked on each partition: finite, real).
    y : dask array or dask Series of shape (n,)

    Returns
    -------
    The fitted estimator (``coef_``, ``intercept_``, ``privacy_``, ... as in memory).

    Raises
    ------
    ValueError
        ``classes`` not declared, ``y`` holds a label outside them (the labels are not
        shown), or ``tune=True`` (:data:`TUNE_ON_DASK` says why).
    """
    import dask.array as da
    import dask.dataframe as dd
    from sklearn.base import is_classifier

    est = estimator
    est._start_fit()
    if is_classifier(est):
        check_choice("multiclass", est.multiclass, ("multinomial", "ovr"))
    if est.tune:
        raise ValueError(TUNE_ON_DASK)
    if isinstance(X, dd.DataFrame):
        est.feature_names_in_ = np.asarray([str(c) for c in X.columns], dtype=object)
        X = X.to_dask_array()
    if isinstance(y, dd.Series):
        with warnings.catch_warnings():  # string labels become objects: as read_table does
            warnings.filterwarnings("ignore", message=".*extension dtypes to arrays")
            y = y.to_dask_array()
    if not isinstance(X, da.Array) or X.ndim != 2 or not isinstance(y, da.Array) or y.ndim != 1:
        raise TypeError("X must be a 2-D dask array or DataFrame and y a 1-D dask array or "
                        "Series")
    # chunk sizes from the arrays' own graphs (a column projection of a DataFrame may fuse
    # partitions: to_dask_array(lengths=True) can disagree with the array it returns)
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if any(np.isnan(c) for c in y.chunks[0]):
        y = y.compute_chunk_sizes()
    est.n_features_in_ = int(X.shape[1])
    previewed = est._preview_ledger(X)
    if is_classifier(est):
        targets = _class_targets(est, y)
        est._store(est._fit_targets(X, targets, previewed))
        return est
    # the range's clip and centring (declared, or the private target range): per-row maps,
    # the estimator's own (as in memory)
    return est._fit_clipped_targets(X, y.astype(np.float64), previewed, da.clip)


def _class_targets(est: Any, y: Any) -> list[Any]:
    """The in-memory fit's targets from the declared classes, partition-wise."""
    import dask.array as da

    if est.classes is None:
        raise ValueError("on Dask collections the label set must be declared public "
                         "(classes=[...]); it is not read from the data")
    classes = np.unique(np.asarray(est.classes))
    if classes.size < 2:
        raise ValueError(f"{type(est).__name__} needs at least 2 classes; got "
                         f"{classes.size} class: {classes.tolist()}")
    if int((~da.isin(y, classes)).sum().compute()):
        raise ValueError(f"y holds labels that are not in classes={classes.tolist()}")
    est.classes_ = classes
    est._n_classes = int(classes.size)
    if classes.size == 2:
        return [da.where(y == classes[1], 1.0, -1.0)]
    if est._multinomial():
        return [y.map_blocks(_class_index, classes, dtype=np.float64)]
    return [da.where(y == c, 1.0, -1.0) for c in classes]


def _class_index(block: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Each label's index in the sorted declared classes (the multinomial targets)."""
    return np.searchsorted(classes, block).astype(np.float64)


def print_progress(stream: Any = None, *, show_rows: bool = False
                   ) -> Callable[[StepProgress], None]:
    """A progress printer for :class:`~noisygd.oracles.dask.DaskOracle`: one line per
    distributed call (call number, kind, seconds) on ``stream`` (default stderr).

    The partitions a call touched and the rows they hold are private (with an index
    selection, e.g. a Poisson batch drawn on the client, the touched partitions say whether
    a record alone in its partition was sampled; a full pass's count changes when an added
    row has its own file; the rows reveal ``n`` and partition sizes): they are printed only
    with ``show_rows=True``, the operator's own view, never a release (the CLI never sets
    it)."""
    def show(step: StepProgress) -> None:
        private = (f"{step.partitions} partitions, {step.rows_scanned} rows, " if show_rows
                   else "")
        print(f"dask {step.kind} {step.call}: {private}{step.seconds:.3f} s",
              file=sys.stderr if stream is None else stream, flush=True)

    return show


class DaskSession:
    """A ``dask.distributed`` client for a fit: an existing scheduler's, or a local cluster
    of ``local_workers`` worker processes (loopback), closed on exit; DaskOracles built
    within take its client and ``progress``.

    Parameters
    ----------
    scheduler : str, optional
        The scheduler's address (``tcp://host:8786``).
    local_workers : int, optional
        Start a ``LocalCluster`` of this many single-threaded worker processes instead.
    progress : callable, optional
        Passed to every DaskOracle built in the session.
    """

    def __init__(self, *, scheduler: str | None = None, local_workers: int | None = None,
                 progress: Callable[[StepProgress], None] | None = None) -> None:
        if (scheduler is None) == (local_workers is None):
            raise ValueError("give exactly one of scheduler and local_workers")
        self.scheduler = scheduler
        self.local_workers = (None if local_workers is None
                              else check_positive_int("local_workers", local_workers))
        self.progress = progress
        self.client: Any = None
        self._cluster: Any = None
        self._defaults: Any = None

    def read(self, path: str | Path, target: str, labels: Sequence[str] = ()
             ) -> tuple[Any, Any, list[str]]:
        """:func:`read_collection`."""
        return read_collection(path, target=target, labels=labels)

    def fit(self, estimator: Any, X: Any, y: Any) -> Any:
        """:func:`fit_estimator` on this session's client."""
        return fit_estimator(estimator, X, y)

    def open(self) -> DaskSession:
        """Connect (or start the local cluster); :meth:`close` ends it."""
        return self.__enter__()

    def close(self) -> None:
        """Close the client (and the local cluster, if this session started one)."""
        self.__exit__(None, None, None)

    def __enter__(self) -> DaskSession:
        from distributed import Client, LocalCluster

        if self.scheduler is not None:
            self.client = Client(self.scheduler, timeout="30s")
        else:
            self._cluster = LocalCluster(n_workers=self.local_workers, threads_per_worker=1,
                                         processes=True, host="127.0.0.1",
                                         dashboard_address=None)
            self.client = Client(self._cluster)
        self._defaults = oracle_defaults(client=self.client, progress=self.progress)
        self._defaults.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._defaults is not None:
            self._defaults.__exit__(kind, exc, tb)
            self._defaults = None
        if self.client is not None:
            self.client.close()
            self.client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


def _refuse_long_rows(files: list[str]) -> None:
    """Refuse CSV files whose first data row has more fields than the header: pandas (and
    Dask, which cannot take ``index_col=False``) would read the first column as a row index
    and shift every column silently (:func:`noisygd.data.io.refuse_long_rows`, the check the
    in-memory reader makes, with ``dd.read_csv``'s defaults); and files whose header has a
    blank cell (:func:`noisygd.data.io.refuse_blank_header_cells`)."""
    from noisygd.data.io import refuse_blank_header_cells, refuse_long_rows

    for name in files:
        options = {"compression": "gzip" if name.endswith(".gz") else None,
                   "encoding": "utf-8", "sep": ",", "comment": None}
        refuse_long_rows(Path(name), options)
        # a blank header cell: Dask names its column "Unnamed: N" and fits it as a feature
        refuse_blank_header_cells(Path(name), options)
