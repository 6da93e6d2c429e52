"""TreeAggregator: exact prefix sums without noise, noise structure, state size."""

from __future__ import annotations

import numpy as np
import pytest

from noisygd.mechanisms.tree import (
    TreeAggregator,
    honaker_node_variances,
    prefix_error_variance,
)


@pytest.mark.parametrize("variant", ["plain", "honaker"])
def test_zero_noise_gives_exact_prefix_sums(variant: str) -> None:
    rng = np.random.default_rng(0)
    g = rng.normal(size=(37, 3))
    agg = TreeAggregator(3, 0.0, variant=variant, rng=np.random.default_rng(1))
    out = np.array([agg.add(v) for v in g])
    np.testing.assert_allclose(out, np.cumsum(g, axis=0), atol=1e-12)


def _dense_plain_matrix(T: int) -> np.ndarray:
    """Z_t = sum of the noises of the dyadic nodes of [1, t]: a 0/1 matrix over nodes."""
    nodes = {}
    rows = []
    for t in range(1, T + 1):
        row = {}
        end = 0
        for h in reversed(range(t.bit_length())):
            if (t >> h) & 1:
                key = (h, end)  # node [end+1, end+2^h]
                nodes.setdefault(key, len(nodes))
                row[nodes[key]] = 1.0
                end += 1 << h
        rows.append(row)
    A = np.zeros((T, len(nodes)))
    for t, row in enumerate(rows):
        for j, v in row.items():
            A[t, j] = v
    return A


def _plain_node_keys(T: int) -> list[tuple[int, int]]:
    """``(h, start)`` of the columns of :func:`_dense_plain_matrix`, in its column order."""
    keys: list[tuple[int, int]] = []
    for t in range(1, T + 1):
        end = 0
        for h in reversed(range(t.bit_length())):
            if (t >> h) & 1:
                if (h, end) not in keys:
                    keys.append((h, end))
                end += 1 << h
    return keys


def test_plain_noise_is_sum_of_dyadic_node_noises() -> None:
    # Same rng stream in the same order: replay the node noises and rebuild Z_t exactly.
    T, sigma = 13, 0.7
    agg = TreeAggregator(1, sigma, variant="plain", rng=np.random.default_rng(5))
    z = np.array([agg.add(np.zeros(1))[0] for _ in range(T)])
    draws = sigma * np.random.default_rng(5).standard_normal(T)  # one node completes per step
    # the node completing at step t is the one drawn at step t; Z_t sums the dyadic ones
    expected = []
    for t in range(1, T + 1):
        total, end = 0.0, 0
        for h in reversed(range(t.bit_length())):
            if (t >> h) & 1:
                end += 1 << h
                total += draws[end - 1]  # node ending at time `end` was released then
        expected.append(total)
    np.testing.assert_allclose(z, expected, rtol=1e-12)
    # the same as a linear map: Z = A n, A the 0/1 prefix-by-node matrix (popcount(t) nodes
    # in row t) and n each node's noise, the draw made at the step that completes it
    A = _dense_plain_matrix(T)
    np.testing.assert_array_equal(A.sum(axis=1), [bin(t).count("1") for t in range(1, T + 1)])
    keys = _plain_node_keys(T)
    assert len(keys) == A.shape[1]
    # node [start + 1, start + 2^h] is completed (and drawn) at step start + 2^h
    node_noise = np.array([draws[start + (1 << h) - 1] for h, start in keys])
    np.testing.assert_allclose(A @ node_noise, z, rtol=1e-12)


def test_variances() -> None:
    s = 2.0
    v = honaker_node_variances(4, s)
    assert v[0] == pytest.approx(4.0)
    assert v[1] == pytest.approx(4.0 * 8.0 / (4.0 + 8.0))
    assert np.all(np.diff(v) < 0) and np.all(v > 4.0 / 2)  # decreasing, above sigma^2/2
    assert prefix_error_variance(7, s, "plain") == pytest.approx(3 * 4.0)
    assert prefix_error_variance(7, s, "honaker") == pytest.approx(v[0] + v[1] + v[2])
    assert prefix_error_variance(8, s, "honaker") < prefix_error_variance(8, s, "plain")


def test_state_is_logarithmic() -> None:
    d = 5
    agg = TreeAggregator(d, 1.0, variant="honaker", rng=np.random.default_rng(0))
    for _ in range(1000):
        agg.add(np.ones(d))
    assert agg.state_size() <= 2 * d * (1000).bit_length()
    assert agg.steps == 1000


def test_same_seed_same_output_and_validation() -> None:
    outs = []
    for _ in range(2):
        agg = TreeAggregator(2, 1.0, variant="honaker", rng=np.random.default_rng(3))
        outs.append([agg.add(np.ones(2)) for _ in range(5)])
    np.testing.assert_array_equal(outs[0], outs[1])
    agg = TreeAggregator(2, 1.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="shape"):
        agg.add(np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        agg.add(np.array([np.nan, 0.0]))
    with pytest.raises(ValueError, match="variant"):
        TreeAggregator(2, 1.0, variant="other", rng=np.random.default_rng(0))
    with pytest.raises(TypeError):
        TreeAggregator(2, 1.0, rng=0)  # type: ignore[arg-type]


@pytest.mark.parametrize("variant", ["plain", "honaker"])
def test_error_variance_quick(variant: str) -> None:
    # 4000 runs at T = 16, d = 1: the sample variance of Z_t is within 4 standard errors
    # (chi-square, relative sd sqrt(2/4000) = 2.2%) of the theory: false failure < 1e-4/step.
    T, sigma, runs = 16, 1.0, 4000
    rng = np.random.default_rng(11)
    Z = np.empty((runs, T))
    for r in range(runs):
        agg = TreeAggregator(1, sigma, variant=variant, rng=rng)
        Z[r] = [agg.add(np.zeros(1))[0] for _ in range(T)]
    theory = np.array([prefix_error_variance(t, sigma, variant) for t in range(1, T + 1)])
    emp = Z.var(axis=0)
    assert np.all(np.abs(emp / theory - 1) < 4 * np.sqrt(2 / runs))
