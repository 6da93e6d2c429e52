"""Public classes of the oracle layer, by their documented behaviour.

Covers :class:`noisygd.oracles._parallel.ComputeContext` (a pool of at least the threads
asked, grown on demand, shut down by ``close``), :class:`noisygd.oracles.base.ObjectiveOracle`
(gradient sums, losses and declared constants against hand-written NumPy and the objective's
own formulas), :class:`noisygd.oracles.base.RowSums` (the bounded sums against NumPy, their
stacking, their addition over disjoint rows and their per-row bound) and
:class:`noisygd.oracles.selection.RowSelection` (``indices`` is ``local(0, n)``, pieces
resolve to the same rows, the rows selected feed the oracle as NumPy's rows, bad
descriptions refused).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import threading

import numpy as np
import pytest

from noisygd.objectives import LogisticLoss, SquaredDistanceLoss, SquaredLoss
from noisygd.objectives.base import ObjectiveConstants
from noisygd.oracles import ArrayOracle
from noisygd.oracles._parallel import ComputeContext, compute_context, run_blocks
from noisygd.oracles.base import ROW_SUMS, GradientOracle, ObjectiveOracle, RowSums
from noisygd.oracles.selection import (
    PoissonRows,
    RandomLeaf,
    RowIndices,
    RowRange,
    RowSelection,
    oracle_rows,
)

# --------------------------------------------------------------------------- helpers


def _tiny(seed: int = 0, n: int = 9, d: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Rows of norms on both sides of 1 and labels +-1."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.exp(rng.uniform(-1.0, 1.0, size=(n, 1)))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return X, y


def _project_rows(X: np.ndarray, B: float) -> np.ndarray:
    """Each row projected onto the ball ``||x|| <= B`` (written out independently)."""
    out = np.array(X, dtype=np.float64)
    for i in range(out.shape[0]):
        norm = math.sqrt(float(np.sum(out[i] ** 2)))
        if norm > B:
            out[i] *= B / norm
    return out


def _logistic_grads(X: np.ndarray, y: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Per-example gradients of log(1 + exp(-y (w.x + b))), intercept last, one row at a time."""
    G = np.empty((X.shape[0], X.shape[1] + 1))
    for i in range(X.shape[0]):
        xa = np.append(X[i], 1.0)
        z = float(xa @ theta)
        G[i] = -y[i] / (1.0 + math.exp(y[i] * z)) * xa
    return G


def _clip_each(G: np.ndarray, C: float | None) -> np.ndarray:
    if C is None:
        return G
    out = G.copy()
    for i in range(G.shape[0]):
        norm = float(np.linalg.norm(G[i]))
        if norm > C:
            out[i] *= C / norm
    return out


# --------------------------------------------------------------------------- ComputeContext


def _threads_running_together(pool, k: int) -> bool:
    """Whether ``k`` tasks submitted to ``pool`` can all be running at once (a barrier of
    ``k`` parties: with fewer threads it breaks after its timeout)."""
    barrier = threading.Barrier(k, timeout=20)

    def task() -> bool:
        try:
            barrier.wait()
            return True
        except threading.BrokenBarrierError:
            return False

    futures = [pool.submit(task) for _ in range(k)]
    return all(f.result(timeout=60) for f in futures)


def test_compute_context_pool_runs_at_least_the_workers_asked_at_once():
    """``pool(w)`` holds at least ``w`` threads: ``w`` tasks meet at one barrier."""
    ctx = ComputeContext()
    try:
        assert _threads_running_together(ctx.pool(3), 3)
    finally:
        ctx.close()


def test_compute_context_pool_threads_are_named_for_the_oracle():
    ctx = ComputeContext()
    try:
        name = ctx.pool(2).submit(lambda: threading.current_thread().name).result(timeout=60)
    finally:
        ctx.close()
    assert name.startswith("noisygd-oracle")


def test_compute_context_reuses_a_large_enough_pool_and_grows_on_demand():
    """A smaller request returns the same pool; a larger one replaces it, after the old
    pool's work is done, and the old pool takes no more work."""
    ctx = ComputeContext()
    try:
        first = ctx.pool(2)
        assert ctx.pool(1) is first and ctx.pool(2) is first
        release = threading.Event()
        started = threading.Event()

        def slow() -> str:
            started.set()
            release.wait(timeout=60)
            return "done"

        pending = first.submit(slow)
        assert started.wait(timeout=60)
        threading.Timer(0.05, release.set).start()
        bigger = ctx.pool(4)  # shuts the old pool down, waiting for its work
        assert bigger is not first
        assert pending.done() and pending.result() == "done"
        with pytest.raises(RuntimeError, match="shutdown"):
            first.submit(lambda: None)
        assert _threads_running_together(bigger, 4)
    finally:
        ctx.close()


def test_compute_context_close_shuts_the_pool_down_and_a_later_call_makes_a_new_one():
    ctx = ComputeContext()
    pool = ctx.pool(2)
    ctx.close()
    with pytest.raises(RuntimeError, match="shutdown"):
        pool.submit(lambda: None)
    ctx.close()  # closing twice is harmless
    again = ctx.pool(2)
    try:
        assert again is not pool
        assert again.submit(lambda: 6 * 7).result(timeout=60) == 42
    finally:
        ctx.close()


def test_compute_context_of_a_fit_serves_run_blocks_and_is_closed_when_left():
    """Inside :func:`compute_context` the blocks run on the context's own pool, in block
    order for every thread count; the pool is shut down when the context is left."""
    names: set[str] = set()
    lock = threading.Lock()
    rng = np.random.default_rng(3)
    parts = [rng.standard_normal(50) for _ in range(7)]

    def block(j: int) -> float:
        with lock:
            names.add(threading.current_thread().name)
        return float(np.sum(parts[j]))

    with compute_context() as ctx:
        assert isinstance(ctx, ComputeContext)
        with compute_context() as inner:
            assert inner is ctx  # a nested entry reuses the outer context
        results = {t: run_blocks(block, len(parts), t) for t in (1, 2, 3, 8)}
        pool = ctx.pool(1)
    expected = [float(np.sum(p)) for p in parts]
    for t, res in results.items():
        assert res == expected, t  # the same floats in block order, whatever the threads
    assert any(n.startswith("noisygd-oracle") for n in names)
    with pytest.raises(RuntimeError, match="shutdown"):
        pool.submit(lambda: None)


def test_compute_contexts_of_concurrent_fits_are_never_shared():
    """Two fits inside their contexts at the same time each hold their own context and pool;
    one leaving does not shut down the other's pool."""
    both_inside = threading.Barrier(2, timeout=30)
    first_left = threading.Event()
    seen: dict[str, object] = {}

    def fit(name: str) -> None:
        with compute_context() as ctx:
            seen[name] = ctx
            seen[name + "_pool"] = ctx.pool(2)
            both_inside.wait()
            if name == "b":
                assert first_left.wait(timeout=30)
                seen["b_after"] = ctx.pool(2).submit(lambda: "alive").result(timeout=30)
        if name == "a":
            first_left.set()

    threads = [threading.Thread(target=fit, args=(k,)) for k in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert seen["a"] is not seen["b"] and seen["a_pool"] is not seen["b_pool"]
    assert seen["b_after"] == "alive"


# --------------------------------------------------------------------------- ObjectiveOracle


@pytest.mark.parametrize("B", [0.7, 5.0])
def test_objective_oracle_gradient_sums_equal_hand_written_logistic_gradients(B):
    """Clipped and unclipped sums over all rows and over a row list equal the per-example
    logistic gradients of the rows projected onto the ball of radius ``B``."""
    X, y = _tiny(1)
    oracle = ArrayOracle(LogisticLoss(l2=0.1), X, y, row_norm_bound=B, n_threads=1)
    assert isinstance(oracle, ObjectiveOracle)
    Xm = _project_rows(X, B)
    rng = np.random.default_rng(2)
    rows = np.array([4, 0, 4, 8, 2])  # repeats allowed, any order
    for _ in range(3):
        theta = rng.standard_normal(4)
        G = _logistic_grads(Xm, y, theta)
        for C in (None, 0.05, 0.4, 100.0):
            Gc = _clip_each(G, C)
            np.testing.assert_allclose(oracle.clipped_gradient_sum(theta, C), Gc.sum(axis=0),
                                       rtol=1e-12, atol=1e-13)
            np.testing.assert_allclose(oracle.clipped_gradient_sum(theta, C, rows=rows),
                                       Gc[rows].sum(axis=0), rtol=1e-12, atol=1e-13)
        loss = np.log1p(np.exp(-y * (Xm @ theta[:-1] + theta[-1])))
        np.testing.assert_allclose(oracle.per_example_loss(theta), loss, rtol=1e-12)
        np.testing.assert_allclose(oracle.per_example_loss(theta, rows=rows), loss[rows],
                                   rtol=1e-12)


def test_objective_oracle_value_and_gradient_are_the_regularised_mean():
    """``value`` is the mean loss plus mu/2 ||theta||^2; ``gradient`` is its derivative
    (checked against the hand gradient and central differences of ``value``)."""
    X, y = _tiny(4)
    mu = 0.3
    oracle = ArrayOracle(LogisticLoss(l2=mu), X, y, row_norm_bound=1.0, n_threads=1)
    Xm = _project_rows(X, 1.0)
    theta = np.array([0.5, -1.0, 0.25, 0.1])
    loss = np.log1p(np.exp(-y * (Xm @ theta[:-1] + theta[-1])))
    assert oracle.value(theta) == pytest.approx(loss.mean() + 0.5 * mu * theta @ theta,
                                                rel=1e-12)
    grad = _logistic_grads(Xm, y, theta).mean(axis=0) + mu * theta
    np.testing.assert_allclose(oracle.gradient(theta), grad, rtol=1e-12, atol=1e-14)
    h = 1e-6
    numeric = np.array([(oracle.value(theta + h * e) - oracle.value(theta - h * e)) / (2 * h)
                        for e in np.eye(4)])
    np.testing.assert_allclose(oracle.gradient(theta), numeric, rtol=0, atol=1e-8)
    np.testing.assert_allclose(oracle.regularizer_gradient(theta), mu * theta)


def test_objective_oracle_minimize_reaches_a_zero_hand_gradient_and_refuses_a_ball():
    X, y = _tiny(5, n=20)
    mu = 0.5
    oracle = ArrayOracle(LogisticLoss(l2=mu), X, y, row_norm_bound=1.0, n_threads=1)
    theta, value = oracle.minimize()
    Xm = _project_rows(X, 1.0)
    grad = _logistic_grads(Xm, y, theta).mean(axis=0) + mu * theta
    assert np.linalg.norm(grad) < 1e-7
    assert value == pytest.approx(oracle.value(theta), rel=1e-12)
    assert value <= oracle.value(np.zeros(4)) == pytest.approx(math.log(2.0))
    # the public bound sqrt(2 F(0) / mu) holds for the optimum
    assert np.linalg.norm(theta) <= oracle.optimum_norm_bound()
    balled = ArrayOracle(LogisticLoss(l2=mu, radius=2.0), X, y, row_norm_bound=1.0)
    with pytest.raises(ValueError, match="unconstrained objectives only"):
        balled.minimize()


def test_objective_oracle_declares_the_objectives_constants_at_its_bound():
    """Logistic: L = sqrt(B^2 + 1), beta = (B^2 + 1)/4, strong convexity mu, F(0) = log 2,
    ||theta*|| <= sqrt(2 log 2 / mu); the sizes p = d + 1, n and d."""
    X, y = _tiny(6, n=11, d=4)
    B, mu = 2.0, 0.2
    obj = LogisticLoss(l2=mu)
    oracle = ArrayOracle(obj, X, y, row_norm_bound=B, n_threads=1)
    c = oracle.constants()
    assert c == obj.constants(B)
    assert c == ObjectiveConstants(lipschitz=pytest.approx(math.sqrt(B * B + 1)),
                                   smoothness=pytest.approx((B * B + 1) / 4),
                                   strong_convexity=mu, convex=True, row_norm_bound=B)
    assert (oracle.n_params, oracle.n_rows, oracle.n_features) == (5, 11, 4)
    assert oracle.row_norm_bound == B and oracle.l2 == mu
    assert oracle.loss_at_zero_bound() == pytest.approx(math.log(2.0))
    assert oracle.optimum_norm_bound() == pytest.approx(math.sqrt(2 * math.log(2.0) / mu))
    assert oracle.total_gradient_sensitivity() is None
    assert oracle.radius is None
    assert not oracle.quadratic_loss and not oracle.quadratic_constant_hessian


def test_objective_oracle_forwards_radius_projection_and_quadratic_flags():
    """Squared loss in a ball R with targets within Y: L = (B~ R + Y) B~, beta = B~^2,
    projection onto the ball, quadratic in the margin; squared distance: S_g = 2B."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((6, 2))
    y = rng.uniform(-1.0, 1.0, 6)
    B, R, Y = 1.5, 3.0, 1.0
    oracle = ArrayOracle(SquaredLoss(radius=R, target_bound=Y), X, y, row_norm_bound=B)
    bt = math.sqrt(B * B + 1)
    c = oracle.constants()
    assert c.lipschitz == pytest.approx((bt * R + Y) * bt)
    assert c.smoothness == pytest.approx(bt * bt)
    assert oracle.radius == R and oracle.optimum_norm_bound() == R
    assert oracle.quadratic_loss and not oracle.quadratic_constant_hessian
    far = np.array([3.0, 4.0, 12.0])  # norm 13
    np.testing.assert_allclose(oracle.project(far), far * R / 13.0)
    near = np.array([0.1, -0.2, 0.3])
    np.testing.assert_array_equal(oracle.project(near), near)
    dist = ArrayOracle(SquaredDistanceLoss(), X, np.zeros(6), row_norm_bound=B)
    assert dist.total_gradient_sensitivity() == pytest.approx(2 * B)
    assert dist.quadratic_constant_hessian


def test_objective_oracle_refuses_theta_of_the_wrong_shape():
    X, y = _tiny(8)
    oracle = ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0)
    with pytest.raises(ValueError, match=r"theta must have shape \(4,\), got \(3,\)"):
        oracle.clipped_gradient_sum(np.zeros(3), None)
    with pytest.raises(ValueError, match="theta must have shape"):
        oracle.per_example_loss(np.zeros((4, 1)))


class _PlainOracle(ObjectiveOracle):
    """The smallest subclass the docstring allows: it sets ``objective``, ``_B``, ``_p``,
    ``_n``, ``_d`` and serves the data term through the objective's array methods."""

    def __init__(self, objective, X, y, B):
        self.objective, self._B = objective, float(B)
        self._X, self._y = _project_rows(X, B), objective.check_targets(y)
        self._n, self._d = X.shape
        self._p = objective.n_params(self._d)

    def per_example_loss(self, theta, rows=None):
        theta = self._check_theta(theta)
        idx = slice(None) if rows is None else rows
        return self.objective.per_example_loss(theta, self._X[idx], self._y[idx])

    def clipped_gradient_sum(self, theta, clip, rows=None):
        theta = self._check_theta(theta)
        idx = slice(None) if rows is None else rows
        return self.objective.clipped_gradient_sum(theta, self._X[idx], self._y[idx], clip)


def test_objective_oracle_subclass_gets_the_objectives_members_by_forwarding():
    """A minimal subclass states the objective's constants at its bound and the gradient
    oracle's references (value, gradient) from its own two methods."""
    X, y = _tiny(9)
    obj = LogisticLoss(l2=0.4, radius=5.0)
    oracle = _PlainOracle(obj, X, y, 0.8)
    assert isinstance(oracle, GradientOracle)
    assert oracle.constants() == obj.constants(0.8)
    assert (oracle.n_params, oracle.n_rows, oracle.n_features) == (4, 9, 3)
    assert oracle.l2 == 0.4 and oracle.radius == 5.0 and oracle.optimum_norm_bound() == 5.0
    theta = np.array([1.0, 2.0, -2.0, 0.5])
    grad = _logistic_grads(_project_rows(X, 0.8), y, theta).mean(axis=0) + 0.4 * theta
    np.testing.assert_allclose(oracle.gradient(theta), grad, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(oracle.project(10 * theta), 10 * theta * 5.0 / np.linalg.norm(
        10 * theta))
    with pytest.raises(ValueError, match="theta must have shape"):
        oracle.gradient(np.zeros(5))
    with pytest.raises(NotImplementedError, match="no bounded row sums"):
        oracle.bounded_row_sums()
    with pytest.raises(NotImplementedError, match="no curvature sums"):
        oracle.clipped_curvature_sum(theta, None)


# --------------------------------------------------------------------------- RowSums


def _numpy_row_sums(X: np.ndarray, y: np.ndarray, B: float, h: float | None) -> dict:
    """The documented sums: a_i = projected x_i / B, t_i = clip(y_i / h, -1, 1)."""
    A = _project_rows(X, B) / B
    t = np.zeros_like(y) if h is None else np.clip(y / h, -1.0, 1.0)
    return {"count": float(X.shape[0]), "rows": A.sum(axis=0),
            "squared_norms": float(np.sum(A * A)), "targets": float(t.sum()),
            "squared_targets": float(np.sum(t * t)), "absolute_rows": np.abs(A).sum(axis=0)}


@pytest.mark.parametrize("h", [None, 0.5, 10.0])
def test_row_sums_equal_numpys_on_the_rows_served(h):
    rng = np.random.default_rng(10)
    X = rng.standard_normal((12, 3)) * 2.0
    y = rng.normal(0.0, 1.0, 12)
    B = 1.3
    oracle = ArrayOracle(SquaredLoss(), X, y, row_norm_bound=B, n_threads=1)
    sums = oracle.bounded_row_sums(h, absolute=True)
    assert isinstance(sums, RowSums)
    want = _numpy_row_sums(X, y, B, h)
    for name in ROW_SUMS:
        np.testing.assert_allclose(getattr(sums, name), want[name], rtol=1e-12, atol=1e-14,
                                   err_msg=name)
    assert oracle.bounded_row_sums(h).absolute_rows is None  # only when asked


def test_clipped_target_sums_taken_block_by_block_equal_numpys(monkeypatch):
    """The clipped target sums are taken TARGET_BLOCK targets at a time (no O(n) float64
    temporary): with blocks of 7 over 50 targets (the last one short) they equal NumPy's sums
    of clip(y / h, -1, 1) over all rows; int8 labels are converted block by block."""
    import noisygd.oracles.array as array_module

    monkeypatch.setattr(array_module, "TARGET_BLOCK", 7)
    rng = np.random.default_rng(11)
    X = rng.standard_normal((50, 3))
    y = rng.normal(0.0, 2.0, 50)
    for h in (0.5, 3.0):
        sums = ArrayOracle(SquaredLoss(), X, y, row_norm_bound=1.0).bounded_row_sums(h)
        t = np.clip(y / h, -1.0, 1.0)
        np.testing.assert_allclose([sums.targets, sums.squared_targets],
                                   [t.sum(), t @ t], rtol=1e-13)
    labels = np.where(rng.random(50) < 0.3, 1.0, -1.0)
    sums = ArrayOracle(LogisticLoss(), X, labels, row_norm_bound=1.0).bounded_row_sums(1.0)
    assert (sums.targets, sums.squared_targets) == (labels.sum(), 50.0)


def test_row_sums_vector_stacks_the_named_sums_in_order_and_refuses_unknown_names():
    s = RowSums(count=3.0, rows=np.array([0.5, -0.25]), squared_norms=1.5, targets=-1.0,
                squared_targets=2.0, absolute_rows=np.array([1.0, 0.75]))
    np.testing.assert_array_equal(s.vector(("targets", "rows", "count")),
                                  [-1.0, 0.5, -0.25, 3.0])
    np.testing.assert_array_equal(s.vector(ROW_SUMS),
                                  [3.0, 0.5, -0.25, 1.5, -1.0, 2.0, 1.0, 0.75])
    with pytest.raises(ValueError, match=r"unknown row sums \['bogus'\]"):
        s.vector(("rows", "bogus"))
    no_abs = dataclasses.replace(s, absolute_rows=None)
    with pytest.raises(ValueError, match="absolute_rows was not summed"):
        no_abs.vector(("count", "absolute_rows"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.count = 4.0  # type: ignore[misc]


def test_row_sums_of_disjoint_rows_add_to_the_sums_of_all_rows():
    rng = np.random.default_rng(11)
    X = rng.standard_normal((10, 3))
    y = rng.normal(size=10)
    whole = ArrayOracle(SquaredLoss(), X, y, row_norm_bound=1.0).bounded_row_sums(
        1.0, absolute=True)
    a = ArrayOracle(SquaredLoss(), X[:4], y[:4], row_norm_bound=1.0).bounded_row_sums(
        1.0, absolute=True)
    b = ArrayOracle(SquaredLoss(), X[4:], y[4:], row_norm_bound=1.0).bounded_row_sums(
        1.0, absolute=True)
    np.testing.assert_allclose((a + b).vector(ROW_SUMS), whole.vector(ROW_SUMS), rtol=1e-12)
    partial = a + dataclasses.replace(b, absolute_rows=None)
    assert partial.absolute_rows is None and partial.count == 10.0


def test_row_sums_move_by_at_most_sqrt_k_when_one_row_is_removed():
    """Every row adds at most 1 in norm to each sum: the stacked vector of all six sums
    moves by at most sqrt(6) when a row is removed (rows far outside the ball included)."""
    rng = np.random.default_rng(12)
    X = rng.standard_normal((8, 3)) * np.array([[0.1], [10.0], [1.0], [3.0], [0.5], [7.0],
                                                [1.0], [2.0]])
    y = rng.normal(0.0, 5.0, 8)

    def vec(keep):
        o = ArrayOracle(SquaredLoss(), X[keep], y[keep], row_norm_bound=1.0)
        return o.bounded_row_sums(2.0, absolute=True).vector(ROW_SUMS)

    full = vec(np.arange(8))
    for i in range(8):
        diff = full - vec(np.delete(np.arange(8), i))
        assert diff[0] == 1.0  # the count
        assert np.linalg.norm(diff) <= math.sqrt(len(ROW_SUMS)) + 1e-12


# --------------------------------------------------------------------------- RowSelection


def _selections() -> list[RowSelection]:
    return [RowIndices(np.array([1, 3, 4, 9, 12, 13])), RowRange(3, 11),
            PoissonRows(0.4, (5, 6), 2), RandomLeaf(3, (7, 8), 1)]


@pytest.mark.parametrize("sel", _selections(), ids=lambda s: type(s).__name__)
def test_row_selection_pieces_resolve_to_the_indices_of_the_whole(sel):
    """``indices(n)`` is ``local(0, n)``; consecutive pieces, shifted by their start, give
    the same rows in the same order."""
    n = 14
    whole = sel.indices(n)
    np.testing.assert_array_equal(whole, sel.local(0, n))
    assert whole.dtype == np.intp
    assert np.all((whole >= 0) & (whole < n))
    for cuts in ([0, 5, 14], [0, 1, 2, 7, 13, 14], [0, 14]):
        pieces = [sel.local(a, b) + a for a, b in itertools.pairwise(cuts)]
        np.testing.assert_array_equal(np.concatenate(pieces), whole)


def test_row_selection_local_equals_numpys_mask_of_the_piece():
    """An explicit list resolves on a piece to its entries inside it, in list order."""
    listed = np.array([9, 2, 6, 2, 0, 7])
    sel = RowIndices(listed)
    for a, b in [(0, 10), (2, 7), (3, 6), (8, 8)]:
        mask = (listed >= a) & (listed < b)
        np.testing.assert_array_equal(sel.local(a, b), listed[mask] - a)
    np.testing.assert_array_equal(sel.indices(10), listed)
    np.testing.assert_array_equal(RowRange(3, 100).indices(7), np.arange(3, 7))
    np.testing.assert_array_equal(RowRange(4, 9).local(6, 20), np.arange(0, 3))


def test_random_leaves_partition_the_rows():
    n, L = 40, 4
    ent = (11, 12)
    leaves = [RandomLeaf(L, ent, t).indices(n) for t in range(L)]
    np.testing.assert_array_equal(np.sort(np.concatenate(leaves)), np.arange(n))
    assignment = RandomLeaf(L, ent, 0).assignment(0, n)
    for t in range(L):
        np.testing.assert_array_equal(leaves[t], np.flatnonzero(assignment == t))


@pytest.mark.parametrize("sel", _selections(), ids=lambda s: type(s).__name__)
def test_row_selection_feeds_the_oracle_the_rows_numpy_selects(sel):
    """The gradient sum over a description equals the hand sum over the selected rows."""
    X, y = _tiny(13, n=14)
    oracle = ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0, n_threads=1)
    rows = oracle_rows(oracle, sel)
    np.testing.assert_array_equal(rows, sel.indices(14))  # global indices for ArrayOracle
    theta = np.array([0.3, -0.7, 1.1, 0.2])
    G = _clip_each(_logistic_grads(_project_rows(X, 1.0), y, theta), 0.3)
    np.testing.assert_allclose(oracle.clipped_gradient_sum(theta, 0.3, rows=rows),
                               G[sel.indices(14)].sum(axis=0), rtol=1e-12, atol=1e-14)


def test_row_selection_base_class_checks_n_rows():
    """A subclass that implements only ``local`` inherits ``indices`` with its check."""

    class Evens(RowSelection):
        def local(self, start, stop):
            first = start + (start % 2)
            return np.arange(first, stop, 2, dtype=np.intp) - start

    np.testing.assert_array_equal(Evens().indices(7), [0, 2, 4, 6])
    assert Evens().indices(0).size == 0
    with pytest.raises(ValueError, match="n_rows must be an integer >= 0"):
        Evens().indices(-1)
    with pytest.raises(TypeError, match="n_rows must be an integer"):
        Evens().indices(3.0)
    with pytest.raises(TypeError, match="abstract"):
        RowSelection()  # type: ignore[abstract]


@pytest.mark.parametrize("make,exc,match", [
    (lambda: RowIndices(np.array([[1, 2]])), ValueError, "1-D array of integer"),
    (lambda: RowIndices(np.array([0.0, 1.0])), ValueError, "1-D array of integer"),
    (lambda: RowRange(5, 3), ValueError, r"stop \(3\) must be at least start \(5\)"),
    (lambda: RowRange(-1, 3), ValueError, "start must be an integer >= 0"),
    (lambda: RowRange(0, 2.5), TypeError, "stop must be an integer"),
    (lambda: PoissonRows(0.0, (1,), 0), ValueError, r"rate must be in \(0, 1\]"),
    (lambda: PoissonRows(0.5, (), 0), ValueError, "entropy must be a non-empty"),
    (lambda: PoissonRows(0.5, (1,), -1), ValueError, "step must be an integer >= 0"),
    (lambda: RandomLeaf(3, (1,), 3), ValueError, r"leaf must be below leaves \(3\)"),
    (lambda: RandomLeaf(0, (1,), 0), ValueError, "leaves must be an integer >= 1"),
    (lambda: RandomLeaf(2, (-1,), 0), ValueError, "non-negative integers"),
])
def test_row_selection_bad_descriptions_are_refused(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


@pytest.mark.parametrize(("rows", "n"), [([5], 3), ([-1, 0], 3), ([0, 3], 3)])
def test_row_indices_outside_the_data_are_refused(rows, n):
    """An explicit list must name rows of the data: ``indices(3)`` of ``[5]`` used to return
    ``[5]`` (and a negative index would count from the end)."""
    from noisygd.oracles.selection import RowIndices

    with pytest.raises(ValueError, match=r"row indices must lie in 0\.\.2"):
        RowIndices(np.array(rows)).indices(n)
    np.testing.assert_array_equal(RowIndices(np.array([2, 0, 2])).indices(3), [2, 0, 2])


def test_row_sums_vector_of_no_names_is_empty():
    """``vector(())`` is the empty vector (it was NumPy's concatenate error)."""
    from noisygd.oracles.base import RowSums

    out = RowSums(1.0, np.zeros(2), 0.0).vector(())
    assert out.shape == (0,) and out.dtype == np.float64
