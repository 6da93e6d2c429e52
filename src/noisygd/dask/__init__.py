"""noisygd on Dask for users: estimators on Dask collections, tables read from Parquet
directories and CSV globs, and the cluster of ``noisygd fit --scheduler/--local-workers``
(docs/dask.md). The oracle itself is :class:`noisygd.oracles.dask.DaskOracle`."""

from noisygd.dask.fit import DaskSession, fit_estimator, print_progress, read_collection
from noisygd.oracles.dask import is_dask_collection

__all__ = ["DaskSession", "fit_estimator", "is_dask_collection", "print_progress",
           "read_collection"]
