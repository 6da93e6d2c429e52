"""Threads over a fixed partition of row blocks, inside a compute context entered once per fit.

NumPy's BLAS calls and ufunc loops release the GIL, so threads over row blocks use every
core. The partition (which rows form block ``j``) is fixed by the caller, and results are
returned in block order: a sum of partial results added in that order is the same for
every number of threads. BLAS is limited to one thread while blocks are computed, with one
worker too: the pool is the parallelism (nested BLAS threads would compete for the same
cores), and a BLAS matrix product's rounding can depend on its own thread count (OpenBLAS
``gemm`` does), which would make the result depend on ``n_threads``.

**The compute context** (:func:`compute_context`, entered once per fit by
:func:`noisygd.training.fit_private`): it owns the fit's thread pool and limits BLAS to one
thread for its duration, through threadpoolctl, which inspects the libraries loaded *when the
context is entered* (so a library loaded after ``noisygd`` was imported, such as torch's MKL,
is limited too), and restores the setting it found when it is left. Each fit's context sets
and restores only in its own thread (threadpoolctl acts for the calling thread; with OpenMP
and recent OpenBLAS builds the count is per thread), and a nested entry reuses the outer
context. Each context has its own pool, so one fit
never shuts down another's workers. Outside a
context (an oracle used directly), :func:`run_blocks` uses a persistent default pool, one call
at a time, with BLAS limited for that call (the behaviour before the context existed).
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["ComputeContext", "compute_context", "default_threads", "run_blocks"]

T = TypeVar("T")

_DEFAULT_LOCK = threading.Lock()
_ACTIVE: contextvars.ContextVar[ComputeContext | None] = contextvars.ContextVar(
    "noisygd_compute_context", default=None)


def default_threads() -> int:
    """Cores this process may run on (at most 8)."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (not Linux)
        n = os.cpu_count() or 1
    return max(1, min(8, n))


def _limit_blas() -> Any:
    """Limit every BLAS library loaded now to one thread, for the calling thread; returns the
    limiter whose ``restore_original_limits`` undoes it."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


class ComputeContext:
    """The compute resources of one fit: its thread pool (grown on demand, shut down when the
    context is left). Made by :func:`compute_context`; never shared between fits."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._size = 0

    def pool(self, workers: int) -> ThreadPoolExecutor:
        """A pool of at least ``workers`` threads (the calls of one fit are sequential, so a
        smaller pool is shut down, after its work, before a larger one replaces it)."""
        if self._pool is None or self._size < workers:
            self.close()
            self._pool = ThreadPoolExecutor(max_workers=workers,
                                            thread_name_prefix="noisygd-oracle")
            self._size = workers
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool, self._size = None, 0


class _OneBlasThread:
    """Outside a compute context: BLAS limited to one thread for one call, restored after.

    Sets each BLAS library's thread count directly through threadpoolctl's library
    controllers found at the first call (two C calls per library) instead of
    ``threadpool_limits``, which re-inspects every library on each call (about 70
    microseconds, 3% of a gradient step at n = 1e5, d = 50).
    """

    _libraries: list[Any] | None = None

    def __enter__(self) -> None:
        if _OneBlasThread._libraries is None:
            from threadpoolctl import ThreadpoolController

            _OneBlasThread._libraries = ThreadpoolController().select(
                user_api="blas").lib_controllers
        self.saved = []
        for lib in _OneBlasThread._libraries:
            n = lib.num_threads
            if n != 1:
                lib.set_num_threads(1)
                self.saved.append((lib, n))

    def __exit__(self, *exc: object) -> None:
        for lib, n in self.saved:
            lib.set_num_threads(n)


#: The context of calls made outside a fit (its pool persists; module docstring).
_DEFAULT = ComputeContext()


@contextlib.contextmanager
def _call_context(blas: bool = True) -> Iterator[ComputeContext]:
    """The active :func:`compute_context`, or, outside one, the persistent default pool with
    BLAS limited for this call only (an oracle used directly, e.g. by an algorithm called
    without :func:`noisygd.training.fit_private`); ``blas=False``: blocks that call no BLAS
    routine, so no limit is set."""
    active = _ACTIVE.get()
    if active is not None:
        yield active
        return
    with _DEFAULT_LOCK, (_OneBlasThread() if blas else contextlib.nullcontext()):
        yield _DEFAULT  # the default pool serves one call at a time


@contextlib.contextmanager
def compute_context() -> Iterator[ComputeContext]:
    """Enter the compute context of a fit (module docstring); nested entries reuse it."""
    active = _ACTIVE.get()
    if active is not None:
        yield active
        return
    context = ComputeContext()
    limiter = _limit_blas()
    token = _ACTIVE.set(context)
    try:
        yield context
    finally:
        _ACTIVE.reset(token)
        context.close()
        limiter.restore_original_limits()


def run_blocks(fn: Callable[[int], T], n_blocks: int, n_threads: int, *,
               blas: bool = True) -> list[T]:
    """``[fn(0), ..., fn(n_blocks - 1)]``, computed by up to ``n_threads`` threads.

    Threads take the next unclaimed block index until none is left (so a thread slowed
    by other load does less); results are stored by block index, so the list, and any
    sum of it taken in order, does not depend on ``n_threads``. Runs in the active
    :func:`compute_context` (outside one: module docstring; ``blas=False`` declares that
    ``fn`` calls no BLAS routine, so outside a context no BLAS limit is set for the call).
    """
    with _call_context(blas) as context:
        workers = min(n_threads, n_blocks)
        if workers <= 1:
            return [fn(j) for j in range(n_blocks)]
        out: list[Any] = [None] * n_blocks
        claims = itertools.count()  # next() is atomic under the GIL

        def work() -> None:
            while True:
                j = next(claims)
                if j >= n_blocks:
                    return
                out[j] = fn(j)

        futures = [context.pool(workers - 1).submit(work) for _ in range(workers - 1)]
        try:
            work()
        finally:
            for f in futures:
                f.result()
        return out
