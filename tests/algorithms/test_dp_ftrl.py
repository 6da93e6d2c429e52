"""DP-FTRL (Lecture 14): FTRL update, streaming, causality of the gradients, event."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from noisygd.accounting import best
from noisygd.accounting.tree import TreeAggregation
from noisygd.algorithms.dp_ftrl import array_chunk_oracles, dp_ftrl, dp_ftrl_stream
from noisygd.objectives.glm import LogisticLoss
from noisygd.oracles import ArrayOracle


def _o(obj, X, y):
    return ArrayOracle(obj, X, y, row_norm_bound=1.0)


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    n, d = 3000, 4
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X @ np.array([3.0, -2.0, 1.0, 0.5]) + 0.2 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def test_noise_free_limit_is_ftrl(data) -> None:
    # w_{t+1} = Pi_C(w_1 - s_t / lambda) with s_t the exact clipped-gradient prefix sum
    X, y = data
    X, y = X[:200], y[:200]
    obj = LogisticLoss(radius=2.0)
    lam, b = 50.0, 7
    r = dp_ftrl(_o(obj, X, y), noise_multiplier=1e-12, clip=0.5, l2_ftrl=lam, batch_size=b,
                output="average", tree="plain", rng=np.random.default_rng(0))
    w = np.zeros(5)
    s = np.zeros(5)
    ws = []
    for start in range(0, 200, b):
        ws.append(w)
        sl = slice(start, start + b)
        s = s + obj.clipped_gradient_sum(w, X[sl], y[sl], 0.5)
        w = obj.project(-s / lam)
    np.testing.assert_allclose(r.theta, np.mean(ws, axis=0), atol=1e-9)
    np.testing.assert_allclose(r.info["last_iterate"], w, atol=1e-9)
    assert r.n_iter == len(ws) == 29


def test_event_and_accounting(data) -> None:
    X, y = data
    obj = LogisticLoss()
    r = dp_ftrl(_o(obj, X, y), noise_multiplier=3.0, clip=1.0, l2_ftrl=100.0, batch_size=100,
                epochs=2, rng=np.random.default_rng(0))
    assert r.event == TreeAggregation(3.0, steps=60, epochs=2)
    r2 = dp_ftrl(_o(obj, X, y), noise_multiplier=3.0, clip=1.0, l2_ftrl=100.0, batch_size=100,
                 epochs=2, restart_every_epoch=True, rng=np.random.default_rng(0))
    assert r2.event == TreeAggregation(3.0, steps=60, epochs=2, restart_every=30)
    assert best(r2.event, 1e-5).epsilon < best(r.event, 1e-5).epsilon
    r1 = dp_ftrl(_o(obj, X, y), noise_multiplier=3.0, clip=1.0, l2_ftrl=100.0, batch_size=1,
                 rng=np.random.default_rng(0))
    # batch size 1 as in the slides: mu = 2 sqrt(floor(log2 3000) + 1) / z
    assert r1.event.mu == pytest.approx(2 * np.sqrt(12) / 3.0)


def test_gradient_at_step_t_depends_only_on_past(data) -> None:
    # Changing row j leaves every iterate up to the one that reads row j's batch unchanged:
    # g_t depends only on batch t and earlier outputs (the guarantee's assumption).
    X, y = data
    X2, y2 = X.copy(), y.copy()
    j, b = 1234, 50
    X2[j] = -X2[j]
    y2[j] = -y2[j]
    obj = LogisticLoss()
    kw = dict(noise_multiplier=1.0, clip=1.0, l2_ftrl=30.0, batch_size=b, output="last")
    t_j = j // b  # 0-indexed step whose batch holds row j
    iters = []
    for Xd, yd in [(X, y), (X2, y2)]:
        ws = [dp_ftrl(_o(obj, Xd[: (t + 1) * b], yd[: (t + 1) * b]), rng=np.random.default_rng(5),
                      **kw).theta for t in (t_j - 1, t_j)]
        iters.append(ws)
    np.testing.assert_array_equal(iters[0][0], iters[1][0])  # w after step t_j - 1: same
    assert not np.array_equal(iters[0][1], iters[1][1])  # w after step t_j: differs


def test_streaming_equals_in_memory(data) -> None:
    X, y = data
    obj = LogisticLoss(l2=1e-3)
    kw = dict(noise_multiplier=2.0, clip=1.0, l2_ftrl=80.0, batch_size=64, epochs=2,
              tree="honaker", restart_every_epoch=True)
    a = dp_ftrl(_o(obj, X, y), rng=np.random.default_rng(8), **kw)
    edges = [0, 17, 500, 501, 1999, 3000]

    def chunks():
        for lo, hi in itertools.pairwise(edges):
            yield X[lo:hi], y[lo:hi]

    b = dp_ftrl_stream(array_chunk_oracles(obj, chunks, row_norm_bound=1.0),
                       rng=np.random.default_rng(8), **kw)
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-12, atol=1e-12)
    assert a.event == b.event

    def oracles():  # chunks as oracles directly
        for lo, hi in itertools.pairwise(edges):
            yield _o(obj, X[lo:hi], y[lo:hi])

    c = dp_ftrl_stream(oracles, rng=np.random.default_rng(8), **kw)
    np.testing.assert_allclose(a.theta, c.theta, rtol=1e-12, atol=1e-12)


def test_stream_with_changing_epochs_is_refused(data) -> None:
    X, y = data
    calls = [0]

    def chunks():
        calls[0] += 1
        return [(X[: 1000 * calls[0]], y[: 1000 * calls[0]])]

    with pytest.raises(ValueError, match="same rows in the same order"):
        dp_ftrl_stream(array_chunk_oracles(LogisticLoss(), chunks, row_norm_bound=1.0),
                       noise_multiplier=1.0, clip=1.0, l2_ftrl=10.0, batch_size=100, epochs=2,
                       rng=np.random.default_rng(0))


def test_stream_of_mismatched_oracles_is_refused(data) -> None:
    X, y = data

    def oracles():
        yield _o(LogisticLoss(), X[:100], y[:100])
        yield ArrayOracle(LogisticLoss(), X[100:200], y[100:200], row_norm_bound=2.0)

    with pytest.raises(ValueError, match="same number of parameters"):
        dp_ftrl_stream(oracles, noise_multiplier=1.0, clip=1.0, l2_ftrl=10.0, batch_size=30,
                       rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="oracles must be a callable"):
        dp_ftrl_stream([_o(LogisticLoss(), X, y)], noise_multiplier=1.0, clip=1.0,
                       l2_ftrl=10.0, rng=np.random.default_rng(0))


@pytest.mark.parametrize("tree", ["plain", "honaker"])
def test_learns(data, tree: str) -> None:
    X, y = data
    r = dp_ftrl(_o(LogisticLoss(l2=1e-4), X, y), noise_multiplier=2.0, clip=1.0, l2_ftrl=100.0,
                batch_size=50, epochs=2, tree=tree, rng=np.random.default_rng(1))
    acc = np.mean(np.sign(X @ r.theta[:-1] + r.theta[-1]) == y)
    assert acc > 0.9


def test_reproducible_and_validated(data) -> None:
    X, y = data
    kw = dict(noise_multiplier=1.0, clip=1.0, l2_ftrl=10.0, batch_size=100)
    a = dp_ftrl(_o(LogisticLoss(), X, y), rng=np.random.default_rng(2), **kw)
    b = dp_ftrl(_o(LogisticLoss(), X, y), rng=np.random.default_rng(2), **kw)
    np.testing.assert_array_equal(a.theta, b.theta)
    with pytest.raises(ValueError, match="tree"):
        dp_ftrl(_o(LogisticLoss(), X, y), tree="dense", rng=np.random.default_rng(2), **kw)
    with pytest.raises(ValueError, match="output"):
        dp_ftrl(_o(LogisticLoss(), X, y), output="best", rng=np.random.default_rng(2), **kw)
    with pytest.raises(ValueError, match="l2_ftrl"):
        dp_ftrl(_o(LogisticLoss(), X, y), noise_multiplier=1.0, clip=1.0, l2_ftrl=0.0,
                rng=np.random.default_rng(2))
