r"""The gradient oracle over a Dask collection: the same private fits on a cluster.

:class:`DaskOracle` serves the :class:`~noisygd.oracles.base.GradientOracle` interface over
rows held by ``dask.distributed`` workers (a ``dask.array`` or ``dask.dataframe``, e.g. read
from Parquet or CSV): the algorithms run unchanged on the client, and every call that reads
rows is **one distributed reduction** over the partitions.

Partitions
    The rows are cut into consecutive partitions (the collection's row chunks; global rows
    ``start_k:stop_k`` for partition ``k``). Each partition is served on its worker by an
    :class:`~noisygd.oracles.array.ArrayOracle` over its rows, built once (``persist=True``:
    kept in the workers' memory) or at every call (``persist=False``: the rows are re-read
    from their source, e.g. Parquet, and only the partitions in flight are in memory). The
    map into the domain :math:`\lVert x_i - c\rVert \le B` acts on each row alone, so it is
    the same map as in memory.

One reduction per step, in a fixed order
    :meth:`DaskOracle.clipped_gradient_sum` computes, for every partition the rows touch,
    its partial sum
    :math:`g_k = \sum_{i \in S \cap P_k}\mathrm{clip}_C(\nabla\ell(\theta; \tilde x_i, y_i))`,
    which the client gathers (one round trip) and adds **in partition order**,
    :math:`((g_1 + g_2) + g_3) + \dots`. Persisted partitions are built wherever Dask
    schedules them (no worker restriction) and a call submits **one task per worker**
    holding them, which returns the partial sums of that worker's partitions; re-read
    partitions (``persist=False``) run one task each. Either way the sums are added on the
    client in partition order:
    the result does not depend on which worker ran what, or when. It equals the in-memory
    sum up to floating-point rounding (the in-memory oracle adds row blocks of its own
    size): same seed, same data, the fits agree to about :math:`10^{-13}` relative.

Row selections
    ``rows`` may be NumPy indices or a :class:`~noisygd.oracles.selection.RowSelection`.
    A :class:`~noisygd.oracles.selection.PoissonRows` batch (or a
    :class:`~noisygd.oracles.selection.RandomLeaf` leaf) is resolved on each partition
    from its global position (no list of rows crosses the network, no shuffle); indices and
    ranges are split on the client and only the partitions they touch run a task (DP-FTRL's
    consecutive batches stream the partitions in order).

Noise and faults
    The oracle returns exact sums; every noise draw is made by the algorithm on the client,
    once, from the fit's generator. A task lost with its worker is recomputed by Dask (from
    the collection's lineage) and returns the same partial sum, so a retried step adds the
    same noise to the same sum: the fit equals the fit without the fault. If Dask gives up
    (a task's worker died ``distributed.scheduler.allowed-failures`` times, or the
    scheduler is gone), the call raises :class:`DaskFitError` and the fit returns no model.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from noisygd._checks import check_bool, check_choice, check_positive
from noisygd.exceptions import DataAccessError
from noisygd.objectives.base import Objective
from noisygd.oracles.array import SPARSE_MODES, ArrayOracle
from noisygd.oracles.base import ObjectiveOracle, RowSums
from noisygd.oracles.selection import (
    PoissonRows,
    RandomLeaf,
    RowIndices,
    RowRange,
    RowSelection,
)

__all__ = ["DaskFitError", "DaskOracle", "StepProgress", "is_dask_collection",
           "oracle_defaults", "partition_sum"]

#: Options a DaskOracle takes when its constructor is not given them (``client``,
#: ``persist``, ``progress``): set by :func:`oracle_defaults` for oracles built by code that
#: does not know about Dask (an estimator's :func:`~noisygd.oracles.make_oracle` call).
_DEFAULTS: contextvars.ContextVar[tuple[tuple[str, Any], ...]] = contextvars.ContextVar(
    "noisygd_dask_oracle_defaults", default=())


@contextlib.contextmanager
def oracle_defaults(**options: Any) -> Iterator[None]:
    """Within the ``with`` block, DaskOracles built without ``client``, ``persist`` or
    ``progress`` take these (e.g. the CLI's client and progress printer)."""
    bad = sorted(set(options) - {"client", "persist", "progress"})
    if bad:
        raise TypeError(f"oracle_defaults takes client, persist and progress, not {bad}")
    token = _DEFAULTS.set(tuple({**dict(_DEFAULTS.get()), **options}.items()))
    try:
        yield
    finally:
        _DEFAULTS.reset(token)


class DaskFitError(DataAccessError):
    """A distributed computation failed for a reason outside the data (a worker or the
    scheduler lost beyond Dask's retries): the fit stops and releases no model."""


@dataclass(frozen=True)
class StepProgress:
    """One distributed call, for progress display (``DaskOracle(progress=...)``).

    Attributes
    ----------
    call : int
        Calls made so far by this oracle (1 for the first).
    kind : str
        ``"gradient"``, ``"loss"`` or ``"build"``.
    partitions : int
        Partitions that ran a task. **Private** (for an index selection it says which
        partitions hold the selected rows, e.g. whether a record alone in its partition is
        in a Poisson batch; a full pass's count changes with a row in its own file): for the
        operator's own view, never printed by the CLI nor part of a released result.
    rows_scanned : int
        Rows held by those partitions. **Private** (it reveals partition sizes and ``n``):
        for the operator's own view, never part of a released result.
    seconds : float
        Wall time of the call.
    """

    call: int
    kind: str
    partitions: int
    rows_scanned: int
    seconds: float


def is_dask_collection(value: Any) -> bool:
    """Whether ``value`` is a Dask collection (array, dataframe, series), without importing
    Dask when it is not loaded and without reading any attribute of ``value`` itself (only
    its class is inspected: data that must not be read before a ledger check stays unread)."""
    import sys

    if "dask" not in sys.modules or not hasattr(type(value), "__dask_graph__"):
        return False
    from dask import is_dask_collection as _is

    return bool(_is(value))


# ---------------------------------------------------------------- tasks run on the workers
def _build_part(X: Any, y: Any, objective: Objective, bound: float, sparse: str) -> ArrayOracle:
    """The partition's in-memory oracle (float64 rows, one thread: partitions are the
    parallelism)."""
    import scipy.sparse as sp

    if hasattr(X, "to_numpy"):  # a pandas partition
        X = X.to_numpy()
    if hasattr(y, "to_numpy"):
        y = y.to_numpy()
    if not sp.issparse(X):
        X = np.ascontiguousarray(X, dtype=np.float64)
    return ArrayOracle(objective, X, np.asarray(y), row_norm_bound=bound, sparse=sparse,
                       n_threads=1)


#: The partition sums a DaskOracle reduces: method name -> shape of a sum (in ``p``).
_SUMS = {
    "clipped_gradient_sum": lambda p: (p,),
    "clipped_curvature_sum": lambda p: (p, p),
    "clipped_curvature_diagonal": lambda p: (p,),
}


def _part_sum(part: ArrayOracle, rows: np.ndarray | RowSelection | None, start: int,
              stop: int, *, method: str, theta: np.ndarray, clip: float | None) -> np.ndarray:
    """The partition's partial sum (``part.<method>``) over its selected rows."""
    if isinstance(rows, RowSelection):
        rows = rows.local(start, stop)
    if rows is not None and rows.size == 0:
        return np.zeros(_SUMS[method](part.n_params))
    return getattr(part, method)(theta, clip, rows=rows)


def _self_concordance(part: ArrayOracle) -> float | None:
    return part.self_concordance()


def _part_loss(part: ArrayOracle, rows: np.ndarray | RowSelection | None, start: int,
               stop: int, *, theta: np.ndarray) -> np.ndarray:
    """Per-example losses of the partition's selected rows."""
    if isinstance(rows, RowSelection):
        rows = rows.local(start, stop)
    return part.per_example_loss(theta, rows=rows)


def _part_loss_sum(part: ArrayOracle, rows: np.ndarray | RowSelection | None, start: int,
                   stop: int, *, theta: np.ndarray) -> np.ndarray:
    """The partition's sum of per-example losses, as a length-1 vector."""
    return np.array([float(np.sum(_part_loss(part, rows, start, stop, theta=theta)))])


def _part_row_sums(part: ArrayOracle, rows: None, start: int, stop: int, *,
                   target_half_range: float | None, absolute: bool = False) -> RowSums:
    """The partition's :class:`~noisygd.oracles.base.RowSums` (all its rows)."""
    return part.bounded_row_sums(target_half_range, absolute=absolute)


def _ordered_row_sums(parts: Sequence[RowSums]) -> RowSums:
    """``((s_1 + s_2) + s_3) + ...`` in partition order."""
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def _count_rows(part: ArrayOracle) -> int:
    """The partition's row count (a task on the partition's own worker: no rows move)."""
    return part.n_rows


def _ordered_sum(parts: Sequence[np.ndarray]) -> np.ndarray:
    """``((g_1 + g_2) + g_3) + ...`` in the order given (partition order)."""
    total = np.array(parts[0], dtype=np.float64, copy=True)
    for g in parts[1:]:
        total += g
    return total


def _ordered_concat(parts: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.empty(0)


# ---------------------------------------------------------------- collections
def _row_blocks(X: Any, y: Any) -> tuple[list[Any], list[Any], tuple[int, ...]]:
    """Delayed row partitions of ``X`` and ``y`` (aligned) and their lengths."""
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(X, dd.DataFrame):
        X = X.to_dask_array()
    if isinstance(y, dd.Series | dd.DataFrame):
        y = y.to_dask_array()
    if not isinstance(X, da.Array) or X.ndim != 2:
        raise TypeError(f"X must be a 2-D dask array or a dask DataFrame, got "
                        f"{type(X).__name__}")
    if isinstance(y, np.ndarray):
        y = da.from_array(y, chunks=(X.chunks[0],))
    if not isinstance(y, da.Array) or y.ndim != 1:
        raise TypeError(f"y must be a 1-D dask array, a dask Series or a NumPy array, got "
                        f"{type(y).__name__}")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if any(np.isnan(c) for c in y.chunks[0]):
        y = y.compute_chunk_sizes()
    if np.isnan(X.shape[1]):
        raise ValueError("X must have a known number of columns")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must have at least one row and one column, got shape {X.shape}")
    if len(X.chunks[1]) != 1:
        X = X.rechunk({1: X.shape[1]})
    if y.chunks[0] != X.chunks[0]:
        y = y.rechunk((X.chunks[0],))
    xs = list(X.to_delayed().ravel())
    ys = list(y.to_delayed().ravel())
    return xs, ys, tuple(int(c) for c in X.chunks[0])


class DaskOracle(ObjectiveOracle):
    r"""Private rows on a Dask cluster behind the oracle interface (module doc).

    Parameters
    ----------
    objective : Objective
        The loss, its ridge, ball and constants (shipped to the workers).
    X : dask.array.Array of shape (n, d) or dask.dataframe.DataFrame
        Private rows, partitioned by rows (a chunking of the columns is merged). Partitions
        of unknown length are counted once, at construction.
    y : dask.array.Array, dask Series or ndarray of shape (n,)
        Private targets, re-partitioned like ``X`` if needed.
    row_norm_bound : float
        The declared bound ``B`` (as :class:`~noisygd.oracles.array.ArrayOracle`).
    client : distributed.Client, optional
        Default: the current client (``distributed.get_client()``).
    persist : bool, optional
        Keep each partition's oracle in its worker's memory (one read of the source); else
        re-read the partitions at every call (memory of the partitions in flight only).
        Default: :func:`oracle_defaults`'s, else True (``client`` and ``progress`` too).
    sparse : {"auto", "always", "never"}, default="auto"
        Storage of each partition (as :class:`~noisygd.oracles.array.ArrayOracle`).
    progress : callable, optional
        Called with a :class:`StepProgress` after every distributed call.

    Raises
    ------
    DaskFitError
        If there is no client, or the cluster fails while building the partitions.
    """

    def __init__(
        self,
        objective: Objective,
        X: Any,
        y: Any,
        *,
        row_norm_bound: float,
        client: Any = None,
        persist: bool | None = None,
        sparse: str = "auto",
        progress: Callable[[StepProgress], None] | None = None,
    ) -> None:
        defaults = dict(_DEFAULTS.get())
        client = defaults.get("client") if client is None else client
        persist = defaults.get("persist", True) if persist is None else persist
        progress = defaults.get("progress") if progress is None else progress
        if not isinstance(objective, Objective):
            raise TypeError(f"objective must be an Objective, got {type(objective).__name__}")
        self._B = check_positive("row_norm_bound", row_norm_bound)
        self._persist = check_bool("persist", persist)
        sparse = check_choice("sparse", sparse, SPARSE_MODES)
        if progress is not None and not callable(progress):
            raise TypeError("progress must be callable")
        self.objective = objective
        self._client = _client(client)
        self._progress = progress
        self._calls = 0
        self._concordance: float | None = None
        self._concordance_known = False
        xs, ys, lengths = _row_blocks(X, y)
        self._lengths = lengths
        self._starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self._n = int(self._starts[-1])
        self._d = int(X.shape[1])
        self._p = objective.n_params(self._d)
        self._blocks = list(zip(xs, ys, strict=True))
        self._sparse = sparse
        self._targets: list[Any] | None = None  # other targets' blocks (with_targets)
        self._parts: list[Any] | None = None
        self._where: list[Any] = []  # a worker holding each persisted partition (_locate)
        if self._persist:
            began = time.perf_counter()
            self._parts = self._place([self._part_graph(k, pure=True)
                                       for k in range(len(lengths))])
            held = self._wait(_Gathered(self._client, self._client.map(
                _count_rows, self._parts, pure=False)), "build", len(lengths), self._n, began)
            if held != list(lengths):  # pragma: no cover (a collection whose chunks lie)
                raise ValueError("the partitions hold other row counts than their chunks "
                                 "declare")
            self._locate()

    # ------------------------------------------------------------------ interface
    @property
    def n_partitions(self) -> int:
        """Number of row partitions (the summation order is theirs)."""
        return len(self._lengths)

    @property
    def resolves_row_selections(self) -> bool:
        """True: each partition resolves a :class:`~noisygd.oracles.selection.RowSelection`."""
        return True


    def clipped_gradient_sum(
        self, theta: np.ndarray, clip: float | None,
        rows: np.ndarray | RowSelection | None = None,
    ) -> np.ndarray:
        r""":math:`\sum_{i\in S}\mathrm{clip}_C(\nabla\ell(\theta; \tilde x_i, y_i))`: one
        distributed reduction, partial sums added in partition order (module doc)."""
        return self._sum("clipped_gradient_sum", theta, clip, rows, "gradient")

    def clipped_curvature_sum(
        self, theta: np.ndarray, clip: float | None,
        rows: np.ndarray | RowSelection | None = None,
    ) -> np.ndarray:
        r""":math:`\sum_{i\in S}\min(\phi''(z_i), C_H/\lVert a_i\rVert^2)\,a_ia_i^\top`,
        shape ``(p, p)`` (:meth:`GradientOracle.clipped_curvature_sum`): one distributed
        reduction, partial sums added in partition order."""
        return self._sum("clipped_curvature_sum", theta, clip, rows, "curvature")

    def clipped_curvature_diagonal(
        self, theta: np.ndarray, clip: float | None,
        rows: np.ndarray | RowSelection | None = None,
    ) -> np.ndarray:
        """The diagonal of :meth:`clipped_curvature_sum`, shape ``(p,)``, one reduction."""
        return self._sum("clipped_curvature_diagonal", theta, clip, rows, "curvature")

    def self_concordance(self) -> float | None:
        """The partitions' (public, data-independent) constant
        (:meth:`GradientOracle.self_concordance`), asked of the first partition once."""
        if not self._concordance_known:
            part = self._handles([0])[0]
            self._concordance_known = True
            self._concordance = self._wait(self._client.submit(_self_concordance, part,
                                                               pure=False),
                                           "constants", 1, self._lengths[0],
                                           time.perf_counter())
        return self._concordance

    def per_example_loss(self, theta: np.ndarray,
                         rows: np.ndarray | RowSelection | None = None) -> np.ndarray:
        r""":math:`\ell(\theta; \tilde x_i, y_i)` for all rows (or ``rows``), in global row
        order for a description and in the given order within each partition for indices.
        **Not private**: returns one value per row to the client (tests, references)."""
        theta = self._check_theta(theta)
        tasks = self._tasks(rows)
        if not tasks:
            return np.empty(0)
        out = self._reduce(_part_loss, {"theta": theta}, tasks, _ordered_concat, "loss")
        if rows is None or isinstance(rows, PoissonRows | RandomLeaf | RowRange):
            return out
        # indices: partition order back to the order given
        idx = rows.rows if isinstance(rows, RowIndices) else RowIndices(rows).rows
        part = np.searchsorted(self._starts, idx, side="right") - 1
        ordered = np.empty_like(out)
        ordered[np.argsort(part, kind="stable")] = out
        return ordered

    def value(self, theta: np.ndarray) -> float:
        r""":math:`F(\theta)` over all rows as one reduction (the loss sums of the partitions
        added in order; no per-row vector reaches the client). **Not private**: for
        baselines, tests and reports."""
        theta = self._check_theta(theta)
        total = self._reduce(_part_loss_sum, {"theta": theta}, self._tasks(None), _ordered_sum,
                             "loss")
        return float(total[0]) / self._n + 0.5 * self.l2 * float(theta @ theta)

    def bounded_row_sums(self, target_half_range: float | None = None, *,
                         absolute: bool = False) -> RowSums:
        """:class:`~noisygd.oracles.base.RowSums` of all rows: one distributed reduction,
        each partition's sums (:meth:`ArrayOracle.bounded_row_sums`) added on the client in
        partition order; no row reaches the client. **Not private**."""
        h = None if target_half_range is None else check_positive("target_half_range",
                                                                   target_half_range)
        return self._reduce(_part_row_sums, {"target_half_range": h, "absolute": bool(absolute)},
                            self._tasks(None), _ordered_row_sums, "row sums")

    def with_targets(self, y: Any) -> DaskOracle:
        """The same rows (same partitions and scale factors: no new pass over ``X``) with
        other targets ``y`` (a dask array or series, or a NumPy array, of length ``n``),
        checked by the objective on each partition."""
        import dask.array as da
        import dask.dataframe as dd

        if isinstance(y, dd.Series):
            y = y.to_dask_array()
        if isinstance(y, np.ndarray):
            y = da.from_array(y, chunks=(self._lengths,))
        if not isinstance(y, da.Array) or y.ndim != 1:
            raise TypeError(f"y must be a 1-D dask array, a dask Series or a NumPy array, got "
                            f"{type(y).__name__}")
        if any(np.isnan(c) for c in y.chunks[0]):
            y = y.compute_chunk_sizes()
        if y.shape[0] != self._n:
            raise ValueError(f"X has {self._n} rows but y has {y.shape[0]} entries")
        if y.chunks[0] != self._lengths:
            y = y.rechunk((self._lengths,))
        other = copy.copy(self)
        other._calls = 0
        other._targets = list(y.to_delayed().ravel())
        if self._parts is not None:
            began = time.perf_counter()
            targets = self._client.compute(other._targets)
            other._parts = self._client.map(_with_targets, self._parts, targets, pure=False)
            other._wait(_Gathered(self._client, self._client.map(
                _count_rows, other._parts, pure=False)), "build", self.n_partitions, self._n,
                began)
        return other

    def gather(self) -> tuple[np.ndarray, np.ndarray]:
        """All mapped rows and targets on the client. **Not private**, and ``O(n d)``
        memory: for tests and small references only."""
        parts = self._handles()
        out = self._client.gather(self._client.map(_take_all, parts))
        return (np.concatenate([x for x, _ in out]), np.concatenate([t for _, t in out]))

    def close(self) -> None:
        """Release the partitions held by the workers."""
        if self._parts is not None:
            self._client.cancel(self._parts)
            self._parts = None

    def __repr__(self) -> str:
        return (f"DaskOracle({self.objective!r}, <{self._d} columns, {self.n_partitions} "
                f"partitions>, row_norm_bound={self._B!r})")

    # ------------------------------------------------------------------ internals
    def _tasks(self, rows: np.ndarray | RowSelection | None
               ) -> list[tuple[int, np.ndarray | RowSelection | None]]:
        """``(partition, its rows)`` for every partition the selection touches, in order."""
        starts, P = self._starts, self.n_partitions
        if rows is None:
            return [(k, None) for k in range(P)]
        if isinstance(rows, PoissonRows | RandomLeaf):  # resolved on every partition
            return [(k, rows) for k in range(P)]
        if isinstance(rows, RowRange):
            a, b = rows.start, min(rows.stop, self._n)
            if b <= a:
                return []
            first = int(np.searchsorted(starts, a, side="right")) - 1
            last = int(np.searchsorted(starts, b, side="left")) - 1
            return [(k, rows.local(int(starts[k]), int(starts[k + 1])))
                    for k in range(first, last + 1)]
        idx = rows.rows if isinstance(rows, RowIndices) else RowIndices(rows).rows
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= self._n):
            raise ValueError("rows holds an index outside the rows held")
        part = np.searchsorted(starts, idx, side="right") - 1
        out = []
        for k in np.unique(part):
            sel = part == k
            out.append((int(k), idx[sel] - starts[k]))
        return out

    def _sum(self, method: str, theta: np.ndarray, clip: float | None,
             rows: np.ndarray | RowSelection | None, kind: str) -> np.ndarray:
        theta = self._check_theta(theta)
        C = None if clip is None else check_positive("clip", clip)
        tasks = self._tasks(rows)
        if not tasks:
            return np.zeros(_SUMS[method](self._p))
        return self._reduce(_part_sum, {"method": method, "theta": theta, "clip": C}, tasks,
                            _ordered_sum, kind)

    def _place(self, delayed: Sequence[Any]) -> list[Any]:
        """Build the partitions' oracles (their reads too) wherever Dask schedules them.

        No worker restriction, not even a loose one: the scheduler keeps a task restricted to
        a worker that has left in ``no-worker`` when a new worker joins (distributed's
        ``valid_workers`` ignores ``allow_other_workers`` there), so a fit started while its
        cluster replaced every worker would wait forever. Where each partition lies is read
        back once built (:meth:`_locate`)."""
        return self._client.compute(list(delayed))

    def _locate(self) -> None:
        """``self._where[k]``: a worker holding persisted partition ``k`` (the first by
        address), read from the scheduler once the partitions are built. It only groups a
        call's partitions into one task per worker (:meth:`_reduce`); those tasks carry no
        restriction, so a partition that has moved since is fetched, never lost."""
        held = self._client.who_has(self._parts)
        self._where = [min(held.get(part.key, ()) or (None,), key=str) for part in self._parts]

    def _part_graph(self, k: int, *, pure: bool) -> Any:
        """The delayed oracle of partition ``k``: its rows read and mapped
        (:func:`_build_part`), with other targets where :meth:`with_targets` gave them.

        ``pure=False`` gives the tasks keys of their own, new at every call: a re-read
        partition must be read again, and the same keys could instead bind to the previous
        call's result, still held while the client releases its futures (it does so
        asynchronously, on its event loop)."""
        from dask import delayed

        xb, yb = self._blocks[k]
        part = delayed(_build_part, pure=pure)(xb, yb, self.objective, self._B, self._sparse)
        if self._targets is not None:
            part = delayed(_with_targets, pure=pure)(part, self._targets[k])
        return part

    def _handles(self, ks: Sequence[int] | None = None) -> list[Any]:
        """Futures of the oracles of partitions ``ks`` (all by default), built now (under
        fresh keys: :meth:`_part_graph`) when not persisted."""
        ks = range(self.n_partitions) if ks is None else ks
        if self._parts is not None:
            return [self._parts[k] for k in ks]
        return self._client.compute([self._part_graph(k, pure=False) for k in ks])

    def _reduce(self, fn: Callable, kwargs: dict[str, Any], tasks: list, combine: Callable,
                kind: str) -> np.ndarray:
        """``fn(partition, its rows, start, stop, **kwargs)`` on every partition of
        ``tasks`` (one batch of tasks), the results combined in partition order.

        Persisted partitions run as **one task per worker** (:func:`_run_group`: the
        partitions held on it, :meth:`_locate`, each evaluated in partition order, their
        results returned as a list): Dask's fixed cost per task is then paid once per
        worker, not once per partition. Re-read partitions run one task each, wherever Dask
        builds them."""
        began = time.perf_counter()
        ks = [k for k, _ in tasks]
        starts = self._starts
        handles = self._handles(ks)
        args = [(h, sel, int(starts[k]), int(starts[k + 1]))
                for h, (k, sel) in zip(handles, tasks, strict=True)]
        if self._parts is not None:
            groups: dict[Any, list[int]] = {}
            for i, k in enumerate(ks):
                groups.setdefault(self._where[k], []).append(i)
            order = list(groups.values())
            futures = [self._client.submit(_run_group, fn, [args[i] for i in group], kwargs,
                                           pure=False) for group in order]
        else:
            order = None
            futures = self._client.map(fn, *zip(*args, strict=True), pure=False, **kwargs)
        rows = int(sum(self._lengths[k] for k in ks))
        return combine(self._wait(_Gathered(self._client, futures, order), kind, len(tasks),
                                  rows, began))

    def _wait(self, future: Any, kind: str, partitions: int, rows: int, began: float) -> Any:
        """:func:`_result` of the call, counted and reported to ``progress``."""
        self._calls += 1
        out = _result(future, f"distributed call {self._calls} ({kind})")
        if self._progress is not None:
            self._progress(StepProgress(self._calls, kind, partitions, rows,
                                        time.perf_counter() - began))
        return out


def _result(future: Any, what: str) -> Any:
    """``future.result()``; a lost worker or scheduler becomes :class:`DaskFitError`, the
    data's own errors (``ValueError``, ``TypeError``, a missing file) pass as raised."""
    from distributed import TimeoutError as DaskTimeout
    from distributed.client import FutureCancelledError
    from distributed.comm.core import CommClosedError
    from distributed.scheduler import KilledWorker

    lost = (KilledWorker, FutureCancelledError, DaskTimeout, CommClosedError,
            ConnectionError, EOFError)  # not a data file's OSError: that one passes
    try:
        return future.result()
    except lost as exc:
        raise DaskFitError(
            f"the Dask cluster failed during {what}: {type(exc).__name__}; the fit stops "
            "and releases no model") from None


def _with_targets(part: ArrayOracle, y: Any) -> ArrayOracle:
    return part.with_targets(np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y))


def partition_sum(X: Any, statistic: Callable[[Any], np.ndarray], size: int, *,
                  client: Any = None) -> np.ndarray:
    r"""The sum over the row partitions of a Dask collection of ``statistic(partition)``, a
    float64 vector of ``size`` entries: :math:`\sum_k s(X_{P_k})`, a tree reduction on the
    workers (a statistic additive over rows, such as
    :func:`~noisygd.mechanisms.feature_range.range_statistic`'s counts, equals the in-memory
    statistic of all rows; integer counts below :math:`2^{53}` exactly, in any order).

    Parameters
    ----------
    X : dask.array.Array of shape (n, d) or dask.dataframe.DataFrame
        Private rows (a chunking of the columns is merged first).
    statistic : callable
        ``statistic(block) -> ndarray`` of ``size`` float64 entries, on a NumPy (or SciPy)
        block of rows; shipped to the workers.
    size : int
        Its length.
    client : distributed.Client, optional
        Default: :func:`oracle_defaults`'s, else the current client.

    Returns
    -------
    ndarray of shape (size,)
        **Not private** (the caller adds its noise).

    Raises
    ------
    DaskFitError
        If there is no client, or the cluster fails during the reduction.
    """
    import dask.array as da
    import dask.dataframe as dd

    client = _client(dict(_DEFAULTS.get()).get("client") if client is None else client)
    if isinstance(X, dd.DataFrame):
        X = X.to_dask_array()
    if not isinstance(X, da.Array) or X.ndim != 2 or np.isnan(X.shape[1]):
        raise TypeError("X must be a 2-D dask array (or DataFrame) with known columns")
    if len(X.chunks[1]) != 1:
        X = X.rechunk({1: X.shape[1]})
    size = int(size)

    def block_statistic(block: Any) -> np.ndarray:
        out = np.asarray(statistic(block), dtype=np.float64).reshape(1, -1)
        if out.shape[1] != size:
            raise ValueError(f"the statistic gave {out.shape[1]} entries, not {size}")
        return out

    parts = X.map_blocks(block_statistic, dtype=np.float64,
                         chunks=((1,) * X.numblocks[0], (size,)))
    total = _result(client.compute(parts.sum(axis=0)), "a sum over the partitions")
    return np.asarray(total, dtype=np.float64).reshape(size)


def _run_group(fn: Callable, group: list[tuple[Any, Any, int, int]],
               kwargs: dict[str, Any]) -> list[Any]:
    """``[fn(part, rows, start, stop, **kwargs) for each partition of the group]``, one task
    (the partitions of one worker, in partition order)."""
    return [fn(part, rows, start, stop, **kwargs) for part, rows, start, stop in group]


class _Gathered:
    """The results of ``futures`` in their order, fetched by :meth:`result` (one gather);
    with ``order`` (future ``j`` returns the list of results of the tasks at positions
    ``order[j]``), those results put back at their positions."""

    def __init__(self, client: Any, futures: list[Any],
                 order: list[list[int]] | None = None) -> None:
        self.client, self.futures, self.order = client, futures, order

    def result(self) -> list[Any]:
        out = self.client.gather(self.futures)
        if self.order is None:
            return out
        placed: list[Any] = [None] * sum(len(group) for group in self.order)
        for group, results in zip(self.order, out, strict=True):
            for i, value in zip(group, results, strict=True):
                placed[i] = value
        return placed


def _take_all(part: ArrayOracle) -> tuple[np.ndarray, np.ndarray]:
    return part.take(np.arange(part.n_rows))


def _client(client: Any) -> Any:
    """The client given, else the current one; a clear error without one."""
    if client is None:
        try:
            from distributed import get_client

            client = get_client()
        except (ImportError, ValueError) as exc:
            raise DaskFitError("DaskOracle needs a dask.distributed Client: start one (e.g. "
                               "Client(LocalCluster(n_workers=2))) or pass client=") from exc
    if getattr(client, "status", None) != "running":
        raise DaskFitError(f"the dask.distributed Client is not running (status "
                           f"{getattr(client, 'status', None)!r}): connect it to a scheduler")
    return client
