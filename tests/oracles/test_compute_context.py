"""The compute context (issue 20 item 6): entered once per fit, no per-call global state.

``noisygd.oracles._parallel.compute_context`` limits BLAS to one thread for its duration
(reference-counted across concurrent fits) and owns the fit's thread pool; inside it
``run_blocks`` neither sets nor restores any global state.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from noisygd.estimators import DPLogisticRegression
from noisygd.oracles import _parallel
from noisygd.oracles._parallel import compute_context, run_blocks


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def blas_two_threads():
    """BLAS at 2 threads (where a BLAS is loaded), so that a limit to 1 shows."""
    from threadpoolctl import threadpool_limits

    if not _blas_threads():
        pytest.skip("no BLAS library seen by threadpoolctl")
    limiter = threadpool_limits(limits=2, user_api="blas")
    try:
        yield
    finally:
        limiter.restore_original_limits()


def test_the_context_limits_blas_once_and_restores_it(blas_two_threads):
    before = _blas_threads()
    with compute_context():
        assert set(_blas_threads()) == {1}
        with compute_context():  # nested: the same context
            assert set(_blas_threads()) == {1}
        assert set(_blas_threads()) == {1}
    assert _blas_threads() == before


def test_concurrent_contexts_do_not_restore_under_each_other(blas_two_threads):
    """Two fits in two threads: the one that leaves first does not lift the other's limit."""
    before = _blas_threads()
    entered, release_first = threading.Event(), threading.Event()
    seen: dict[str, list[int]] = {}

    def first() -> None:
        with compute_context():
            seen["first"] = _blas_threads()
            entered.set()
            release_first.wait(timeout=60)

    t = threading.Thread(target=first)
    with compute_context():
        t.start()
        assert entered.wait(timeout=60)
        release_first.set()
        t.join(timeout=60)  # the first context has left; this one is still inside
        seen["second"] = _blas_threads()
    assert set(seen["second"]) == {1}
    assert _blas_threads() == before


def test_run_blocks_inside_a_context_sets_no_global_state(monkeypatch):
    def refuse(self):  # the per-call limit of calls made outside a context
        raise AssertionError("per-call BLAS limit used inside a compute context")

    monkeypatch.setattr(_parallel._OneBlasThread, "__enter__", refuse)
    with compute_context() as context:
        names = run_blocks(lambda j: threading.current_thread().name, 8, 4)
        assert run_blocks(lambda j: j * j, 5, 3) == [0, 1, 4, 9, 16]
        assert context._pool is not None
    assert any(n.startswith("noisygd-oracle") for n in names)
    assert context._pool is None  # the fit's pool is shut down with its context


def test_a_fit_enters_one_context_and_is_deterministic(monkeypatch):
    """The estimator's fit enters the context once, before anything is read (the
    pre-releases' scans and statistics included); fit_private's entry reuses it."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (400, 4)) / 2.0
    y = (X[:, 0] > 0).astype(int)
    entered = []
    original = _parallel.compute_context

    def counting():
        entered.append(_parallel._ACTIVE.get() is None)  # True: a new context
        return original()

    import noisygd.training as training

    monkeypatch.setattr(training, "compute_context", counting)
    monkeypatch.setattr(_parallel, "compute_context", counting)
    in_context = []
    run_pre_release = training._run_pre_release

    def watched(*args, **kwargs):
        in_context.append(_parallel._ACTIVE.get() is not None)
        return run_pre_release(*args, **kwargs)

    monkeypatch.setattr(training, "_run_pre_release", watched)

    def refuse(self):
        raise AssertionError("per-call BLAS limit used during a fit")

    monkeypatch.setattr(_parallel._OneBlasThread, "__enter__", refuse)
    a = DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y).coef_
    b = DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y).coef_
    assert sum(entered) == 2 and entered[0]  # one new context per fit, the fit's first
    assert in_context and all(in_context)  # the pre-releases run in it
    np.testing.assert_array_equal(a, b)
