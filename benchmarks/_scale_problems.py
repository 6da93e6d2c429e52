"""Synthetic problems and one-fit workers for ``bench_scale.py`` (NumPy and SciPy only).

This file runs under two interpreters: the project's ``.venv`` (noisygd and scikit-learn) and
the peers' ``.venv-peers`` (diffprivlib 0.6.6 with the scikit-learn it imports with), so it
imports neither noisygd nor the benchmark helpers at module level. ``bench_scale.py`` runs it as

    python benchmarks/_scale_problems.py PROBLEM CONTENDER

once per (problem, contender), each in a fresh process so that peak resident memory
(``ru_maxrss``) belongs to that fit alone; the worker prints one line ``RESULT {json}``.

Problems (fixed seed, generated in row blocks into preallocated arrays so that generation
never holds a second copy of ``X``; every row has Euclidean norm <= 1):

* ``dense-N``: ``X`` float64 C-contiguous ``(N, 50)``, rows ``z / sqrt(50)`` with standard
  normal ``z``, rows outside the unit ball scaled onto it; labels ``y ~ Bernoulli(sigmoid(x.w))``
  with ``||w|| = 4``.
* ``sparse``: CSR ``(10**6, 10**4)``, 10 nonzeros per row (density 0.1%) in distinct columns,
  positive values scaled to a row norm uniform in [0.5, 1]; labels as above.
"""

from __future__ import annotations

import json
import math
import resource
import statistics
import sys
import time
from typing import Any

import numpy as np
import scipy.sparse as sp

SEED = 20240913
DENSE_D = 50
SPARSE_SHAPE = (1_000_000, 10_000)
SPARSE_NNZ_PER_ROW = 10
BLOCK_ROWS = 1 << 16
EPSILON, DELTA = 1.0, 1e-5


# --------------------------------------------------------------------------- problems
def _sigmoid_labels(rng: np.random.Generator, margin: np.ndarray) -> np.ndarray:
    p = 0.5 * (1.0 + np.tanh(0.5 * margin))
    return (rng.random(margin.shape[0]) < p).astype(np.float64)


def dense_problem(n: int, d: int = DENSE_D, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: ``n x d`` float64 C-contiguous rows in the unit ball, labels in {0, 1}."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    w *= 4.0 / np.linalg.norm(w)
    X = np.empty((n, d), dtype=np.float64)
    y = np.empty(n, dtype=np.float64)
    inv = 1.0 / math.sqrt(d)
    for start in range(0, n, BLOCK_ROWS):
        block = X[start:start + BLOCK_ROWS]
        rng.standard_normal(out=block)
        block *= inv
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))
        block *= np.minimum(1.0, (1.0 - 1e-12) / np.maximum(norms, 1e-300))[:, None]
        y[start:start + block.shape[0]] = _sigmoid_labels(rng, block @ w)
    return X, y


def sparse_problem(seed: int = SEED) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(X, y)``: CSR ``10**6 x 10**4`` with 10 nonzeros per row, rows in the unit ball."""
    n, d = SPARSE_SHAPE
    k = SPARSE_NNZ_PER_ROW
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    w *= 4.0 * math.sqrt(d / k) / np.linalg.norm(w)  # margins of order 4 with 10 nonzeros
    data = np.empty(n * k, dtype=np.float64)
    indices = np.empty(n * k, dtype=np.int32)
    y = np.empty(n, dtype=np.float64)
    offsets = np.arange(k, dtype=np.int64)
    for start in range(0, n, BLOCK_ROWS):
        b = min(BLOCK_ROWS, n - start)
        # sorted draws from [0, d - k] plus 0..k-1: k distinct increasing columns in [0, d)
        cols = np.sort(rng.integers(0, d - k + 1, size=(b, k)), axis=1) + offsets
        vals = rng.random((b, k)) + 0.1
        vals *= (rng.uniform(0.5, 1.0, size=b) * (1.0 - 1e-12)
                 / np.linalg.norm(vals, axis=1))[:, None]
        data[start * k:(start + b) * k] = vals.ravel()
        indices[start * k:(start + b) * k] = cols.ravel()
        y[start:start + b] = _sigmoid_labels(rng, np.einsum("ij,ij->i", vals, w[cols]))
    indptr = np.arange(0, n * k + 1, k, dtype=np.int32)
    return sp.csr_matrix((data, indices, indptr), shape=(n, d)), y


def make_problem(name: str) -> tuple[Any, np.ndarray]:
    """``dense-<n>`` (``n`` an integer, e.g. ``dense-1000000``) or ``sparse``."""
    if name == "sparse":
        return sparse_problem()
    if name.startswith("dense-"):
        return dense_problem(int(float(name.split("-", 1)[1])))
    raise ValueError(f"unknown problem {name!r}")


def nbytes(X: Any) -> int:
    """Bytes of ``X``'s arrays (dense: ``X.nbytes``; CSR: data + indices + indptr)."""
    if sp.issparse(X):
        return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
    return int(X.nbytes)


def one_read_seconds(X: Any, repeats: int) -> dict[str, float]:
    """Median time of ``X.sum()`` and the time of one read of all of ``X`` at its bandwidth.

    Dense ``X.sum()`` reads ``X.nbytes``; SciPy's CSR ``X.sum()`` reads ``X.data`` only, so one
    read of the whole matrix (data, indices, indptr) at that bandwidth takes
    ``t_sum * nbytes(X) / X.data.nbytes``.
    """
    times = []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        X.sum()
        times.append(time.perf_counter() - t0)
    t_sum = statistics.median(times[1:])
    read_bytes = X.data.nbytes if sp.issparse(X) else X.nbytes
    return {"sum_seconds": t_sum, "bandwidth_gb_s": read_bytes / t_sum / 1e9,
            "one_read_seconds": t_sum * nbytes(X) / read_bytes}


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (Linux ``ru_maxrss`` is in KiB)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def current_rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize()


# --------------------------------------------------------------------------- contenders
STEP_METHODS = ("clipped_gradient_sum", "gradient")
READ_METHODS = (*STEP_METHODS, "per_example_loss", "value")


class OracleProbe:
    """Counts what noisygd's array oracles read during a fit (their diagnostics, nothing private
    leaves the benchmark process but these counters).

    Wraps ``ArrayOracle.__init__`` (to find the instances) and the data-reading methods (to count
    calls and to time the step phase: from the start of the first gradient call,
    ``clipped_gradient_sum`` or ``gradient``, to the end of the last one). ``rows_read`` when the
    first gradient call starts separates setup reads from step reads (the row scan made when
    an oracle is built is not a loss or gradient call, so ``rows_read`` does not count it).
    ``setup_seconds`` runs from entering the context to the first gradient call: validation,
    the oracle's row scan, planning and calibration. Use as a context manager.
    """

    def __init__(self) -> None:
        from noisygd.oracles.array import ArrayOracle

        self.cls = ArrayOracle
        self.instances: list[Any] = []
        self.first_start: float | None = None
        self.last_end: float | None = None
        self.rows_before_steps = 0
        self.calls: dict[str, int] = {}
        self._saved: dict[str, Any] = {}
        self.entered = 0.0

    def __enter__(self) -> OracleProbe:
        cls = self.cls
        probe = self
        init = cls.__init__

        def wrapped_init(oracle, *args, **kwargs):
            init(oracle, *args, **kwargs)
            probe.instances.append(oracle)

        self._saved["__init__"] = init
        cls.__init__ = wrapped_init
        self.entered = time.perf_counter()
        for name in READ_METHODS:
            if name in self._saved or not hasattr(cls, name):
                continue
            self._saved[name] = getattr(cls, name)
            setattr(cls, name, self._wrap(name, self._saved[name]))
        return self

    def _wrap(self, name: str, fn: Any) -> Any:
        probe = self
        step = name in STEP_METHODS

        def wrapped(oracle, *args, **kwargs):
            if step and probe.first_start is None:
                probe.rows_before_steps = probe.rows_read()
                probe.first_start = time.perf_counter()
            out = fn(oracle, *args, **kwargs)
            if step:
                probe.last_end = time.perf_counter()
            probe.calls[name] = probe.calls.get(name, 0) + 1
            return out

        return wrapped

    def __exit__(self, *exc: object) -> None:
        for name, fn in self._saved.items():
            setattr(self.cls, name, fn)

    def rows_read(self) -> int:
        return int(sum(int(o.rows_read) for o in self.instances))

    def summary(self, n: int, steps: int) -> dict[str, Any]:
        """Passes over ``X`` (setup and per step), step-phase time, storage of each oracle."""
        total = self.rows_read()
        phase = (self.last_end - self.first_start) if self.first_start is not None else None
        return {
            "steps": steps, "oracle_calls": dict(self.calls), "rows_read": total,
            "setup_passes": self.rows_before_steps / n,
            "passes_per_step": (total - self.rows_before_steps) / n / steps if steps else None,
            "step_phase_seconds": phase,
            "setup_seconds": (self.first_start - self.entered
                              if self.first_start is not None else None),
            "seconds_per_step": phase / steps if (phase is not None and steps) else None,
            "oracle_storage": ["csr" if o.is_sparse else "dense" for o in self.instances],
        }


def fit_noisygd(X: Any, y: np.ndarray) -> dict[str, Any]:
    """The default ``DPLogisticRegression`` fit: epsilon 1, delta 1e-5, public classes and n."""
    from noisygd.estimators import DPLogisticRegression

    est = DPLogisticRegression(epsilon=EPSILON, delta=DELTA, classes=[0.0, 1.0],
                               n_samples_public=X.shape[0], random_state=0)
    with OracleProbe() as probe:
        t0 = time.perf_counter()
        est.fit(X, y)
        wall = time.perf_counter() - t0
    peak = peak_rss_bytes()  # the fit's peak, before the quality columns' own arrays
    out = probe.summary(X.shape[0], int(np.sum(est.n_iter_)))
    out["fit_seconds"] = wall
    out["peak_rss_fit"] = peak
    out["passes"] = probe.rows_read() / X.shape[0]
    out["method"] = est.fit_info_.get("method")
    out["log_loss"] = training_log_loss(est, X, y)
    return out


def fit_sklearn(X: Any, y: np.ndarray) -> dict[str, Any]:
    """scikit-learn ``LogisticRegression(solver="lbfgs")`` at its defaults (non-private)."""
    import sklearn
    from sklearn.linear_model import LogisticRegression

    return _timed_fit(LogisticRegression(solver="lbfgs"), X, y, sklearn.__version__)


def fit_diffprivlib(X: Any, y: np.ndarray) -> dict[str, Any]:
    """diffprivlib 0.6.6 ``LogisticRegression`` at epsilon 1, ``data_norm=1`` (declared)."""
    import diffprivlib
    from diffprivlib.models import LogisticRegression

    est = LogisticRegression(epsilon=EPSILON, data_norm=1.0, random_state=0)
    return _timed_fit(est, X, y, diffprivlib.__version__)


def _timed_fit(est: Any, X: Any, y: np.ndarray, version: str) -> dict[str, Any]:
    """Fit a peer's estimator; its wall time, steps (``max(n_iter_)``) and version."""
    t0 = time.perf_counter()
    est.fit(X, y)
    wall = time.perf_counter() - t0
    steps = int(np.max(est.n_iter_))
    return {"fit_seconds": wall, "steps": steps, "seconds_per_step": wall / max(steps, 1),
            "version": version}


def training_log_loss(est: Any, X: Any, y: np.ndarray) -> float:
    """Mean training log loss of a fitted binary classifier (``predict_proba`` column 1)."""
    p = np.clip(np.asarray(est.predict_proba(X))[:, 1], 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1.0 - y) * np.log1p(-p)))


#: Whole fits per contender in the interleaved worker (median of these).
WHOLE_REPEATS = 3
#: Seconds of rest before each timed fit of the interleaved worker's main pair. OpenBLAS's
#: worker threads spin for a while after a multi-threaded call before they sleep (its
#: ``THREAD_TIMEOUT``, about 0.1 s here), so a fit started right after the other library's
#: shares the cores with them: on 2 cores at 1e5 x 50, noisygd right after lbfgs took
#: 0.133 s and 0.091 s after 0.2 s of rest (lbfgs 0.090 s right after noisygd, 0.106 s
#: rested). Each timed pair is also run back to back (``*_back_to_back_s``), reported beside.
PAUSE_S = 0.5


def fit_interleaved(X: Any, y: np.ndarray) -> dict[str, Any]:
    """Whole fits, interleaved on the same ``X`` in this process (issue 19): noisygd's default
    ``DPLogisticRegression`` (as :func:`fit_noisygd`) and scikit-learn lbfgs, alternately
    :data:`WHOLE_REPEATS` times each after one untimed fit of each (``*_first_s``: a
    process's first fit, which also pays one-off costs), each timed fit after
    :data:`PAUSE_S` of rest, and as many again back to back (``*_back_to_back_s``,
    ``ratio_back_to_back``); the median wall times, their ratio,
    both training log losses, noisygd's steps, passes over ``X`` (rows read over ``n``, setup
    included) and the method its default chose (``fit_info_["method_choice"]``)."""
    from sklearn.linear_model import LogisticRegression

    from noisygd.estimators import DPLogisticRegression

    times: dict[str, list[float]] = {"noisygd": [], "sklearn": []}
    noisy = sk = None
    passes = steps = None
    # one untimed fit of each first: a process's first fit also pays one-off costs (lazy
    # imports, the compiled kernels' first load, BLAS start-up), once per process, not per fit
    first: dict[str, float] = {}
    t0 = time.perf_counter()
    DPLogisticRegression(epsilon=EPSILON, delta=DELTA, classes=[0.0, 1.0],
                         n_samples_public=X.shape[0], random_state=0).fit(X, y)
    first["noisygd"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    LogisticRegression(solver="lbfgs").fit(X, y)
    first["sklearn"] = time.perf_counter() - t0
    back: dict[str, list[float]] = {"noisygd": [], "sklearn": []}
    for _ in range(WHOLE_REPEATS):
        for pause, into in ((PAUSE_S, times), (0.0, back)):
            time.sleep(pause)
            est = DPLogisticRegression(epsilon=EPSILON, delta=DELTA, classes=[0.0, 1.0],
                                       n_samples_public=X.shape[0], random_state=0)
            with OracleProbe() as probe:
                t0 = time.perf_counter()
                est.fit(X, y)
                into["noisygd"].append(time.perf_counter() - t0)
            passes, steps, noisy = probe.rows_read() / X.shape[0], int(np.sum(est.n_iter_)), est
            time.sleep(pause)
            lr = LogisticRegression(solver="lbfgs")
            t0 = time.perf_counter()
            lr.fit(X, y)
            into["sklearn"].append(time.perf_counter() - t0)
            sk = lr
    med = {k: statistics.median(v) for k, v in times.items()}
    med_back = {k: statistics.median(v) for k, v in back.items()}
    choice = noisy.fit_info_.get("method_choice", {})  # type: ignore[union-attr]
    return {
        "noisygd_seconds": times["noisygd"], "sklearn_seconds": times["sklearn"],
        "noisygd_first_s": first["noisygd"], "sklearn_first_s": first["sklearn"],
        "noisygd_median_s": med["noisygd"], "sklearn_median_s": med["sklearn"],
        "ratio": med["noisygd"] / med["sklearn"],
        "noisygd_back_to_back_s": med_back["noisygd"],
        "sklearn_back_to_back_s": med_back["sklearn"],
        "ratio_back_to_back": med_back["noisygd"] / med_back["sklearn"],
        "noisygd_log_loss": training_log_loss(noisy, X, y),
        "sklearn_log_loss": training_log_loss(sk, X, y),
        "sklearn_iterations": int(np.max(sk.n_iter_)),  # type: ignore[union-attr]
        "steps": steps, "passes": passes,
        "method": noisy.fit_info_.get("method"),  # type: ignore[union-attr]
        "method_rule": choice.get("rule"),
    }


CONTENDERS = {"noisygd": fit_noisygd, "sklearn": fit_sklearn, "diffprivlib": fit_diffprivlib,
              "interleaved": fit_interleaved}
#: Modules each contender's fit imports, loaded before the data so that the fit's share of the
#: peak resident memory does not include import costs.
IMPORTS = {
    "noisygd": ("noisygd.estimators", "noisygd.oracles.array", "noisygd.accounting"),
    "sklearn": ("sklearn.linear_model",),
    "diffprivlib": ("diffprivlib.models",),
    "interleaved": ("noisygd.estimators", "noisygd.oracles.array", "noisygd.accounting",
                    "sklearn.linear_model"),
}


def worker(problem: str, contender: str) -> dict[str, Any]:
    """Generate ``problem``, time ``X.sum()``, run one fit, report time and memory."""
    import importlib

    fit = CONTENDERS[contender]
    for module in IMPORTS[contender]:
        importlib.import_module(module)
    rss_imports = current_rss_bytes()
    t0 = time.perf_counter()
    X, y = make_problem(problem)
    gen = time.perf_counter() - t0
    size = nbytes(X)
    read = one_read_seconds(X, repeats=3 if size > 1e9 else 7)
    rss_before = current_rss_bytes()
    peak_before = peak_rss_bytes()
    out = fit(X, y)
    # the fit's own peak when the contender measured it before computing its quality columns
    # (noisygd's training log loss allocates n x 2 probabilities after the fit)
    peak = out.pop("peak_rss_fit", None) or peak_rss_bytes()
    out.update(read)
    out.update({
        "problem": problem, "contender": contender, "n": X.shape[0], "d": X.shape[1],
        "sparse": bool(sp.issparse(X)), "x_bytes": size, "generate_seconds": gen,
        "rss_after_imports": rss_imports, "rss_before_fit": rss_before,
        "peak_rss_before_fit": peak_before, "peak_rss": peak,
        "fit_extra_rss": peak - rss_before,
        "python": sys.executable, "numpy": np.__version__,
    })
    return out


if __name__ == "__main__":
    result = worker(sys.argv[1], sys.argv[2])
    print("RESULT " + json.dumps(result), flush=True)
