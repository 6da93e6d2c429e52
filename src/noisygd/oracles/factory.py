"""One call that serves rows wherever they are: in memory or on a Dask cluster."""

from __future__ import annotations

from typing import Any

from noisygd.objectives.base import Objective
from noisygd.oracles.base import GradientOracle

__all__ = ["make_oracle"]


def make_oracle(objective: Objective, X: Any, y: Any, *, row_norm_bound: float,
                **options: Any) -> GradientOracle:
    """The gradient oracle for ``X``: a :class:`~noisygd.oracles.dask.DaskOracle` for a Dask
    collection, else an :class:`~noisygd.oracles.array.ArrayOracle`.

    Parameters
    ----------
    objective : Objective
    X : ndarray, scipy.sparse matrix, dask array or dask DataFrame of shape (n, d)
    y : array_like, dask array or dask Series of shape (n,)
    row_norm_bound : float
        The declared row bound ``B``.
    **options
        Passed to the oracle's constructor (e.g. ``sparse`` and ``row_sums`` for in-memory
        data; ``client``, ``persist`` and ``progress`` for Dask). Dask-only options are
        dropped for in-memory data, ``row_sums`` for Dask.

    Returns
    -------
    GradientOracle
    """
    from noisygd.oracles.dask import is_dask_collection

    if is_dask_collection(X):
        from noisygd.oracles.dask import DaskOracle

        options.pop("row_sums", None)  # an in-memory scan's option (its partitions sum)
        return DaskOracle(objective, X, y, row_norm_bound=row_norm_bound, **options)
    from noisygd.oracles.array import ArrayOracle

    local = {k: v for k, v in options.items() if k not in ("client", "persist", "progress")}
    return ArrayOracle(objective, X, y, row_norm_bound=row_norm_bound, **local)
