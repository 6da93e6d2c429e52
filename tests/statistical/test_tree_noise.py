"""Slow distributional checks of the tree mechanism (Lecture 14, seed 001)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from noisygd.mechanisms.tree import TreeAggregator, honaker_node_variances

pytestmark = pytest.mark.slow


def _theory_error_matrix(T: int, sigma: float, variant: str) -> np.ndarray:
    """Rows: Z_t as a linear combination of independent N(0, sigma^2) node noises.

    Built from the tree's definition, independently of the streaming code: every
    complete node [lo, lo + 2^h) gets its own noise; the plain estimate of a node is
    its noisy value; Honaker's is w_h (noisy) + (1 - w_h)(left + right estimates).
    """
    nodes: dict[tuple[int, int], int] = {}
    for h in range(T.bit_length()):
        for lo in range(0, T - (1 << h) + 1, 1 << h):
            nodes[(h, lo)] = len(nodes)
    v = honaker_node_variances(T.bit_length(), sigma)
    err: dict[tuple[int, int], np.ndarray] = {}
    for h in range(T.bit_length()):
        for lo in range(0, T - (1 << h) + 1, 1 << h):
            e = np.zeros(len(nodes))
            e[nodes[(h, lo)]] = 1.0
            if variant == "honaker" and h > 0:
                w = 2 * v[h - 1] / (2 * v[h - 1] + sigma**2)
                kids = err[(h - 1, lo)] + err[(h - 1, lo + (1 << (h - 1)))]
                e = w * e + (1 - w) * kids
            err[(h, lo)] = e
    A = np.zeros((T, len(nodes)))
    for t in range(1, T + 1):
        lo = 0
        for h in reversed(range(t.bit_length())):
            if (t >> h) & 1:
                A[t - 1] += err[(h, lo)]
                lo += 1 << h
    return A * sigma


@pytest.mark.parametrize("variant", ["plain", "honaker"])
def test_prefix_error_covariance_matches_theory(variant: str) -> None:
    # 20000 runs, T = 12, d = 1. Each covariance entry is compared with 5 standard errors
    # (SE^2 = (S_ss S_tt + S_st^2) / runs for Gaussian data): per-entry false-failure rate
    # < 6e-7, < 1e-4 over the 78 entries.
    T, sigma, runs = 12, 1.3, 20_000
    rng = np.random.default_rng(2024)
    Z = np.empty((runs, T))
    for r in range(runs):
        agg = TreeAggregator(1, sigma, variant=variant, rng=rng)
        Z[r] = [agg.add(np.zeros(1))[0] for _ in range(T)]
    A = _theory_error_matrix(T, sigma, variant)
    S = A @ A.T
    emp = Z.T @ Z / runs  # the mean is zero
    se = np.sqrt((np.outer(np.diag(S), np.diag(S)) + S**2) / runs)
    assert np.all(np.abs(emp - S) <= 5 * se)
    # diagonal equals the closed form of TreeAggregator.error_variance
    agg = TreeAggregator(1, sigma, variant=variant, rng=rng)
    np.testing.assert_allclose(np.diag(S), [agg.error_variance(t) for t in range(1, T + 1)])


@pytest.mark.parametrize("variant", ["plain", "honaker"])
@pytest.mark.parametrize("beta", [0.05, 0.5])
def test_accuracy_statement_of_the_slides(variant: str, beta: float) -> None:
    # Slides: w.p. >= 1 - beta, (1/T) sum_t ||Z_t|| <= sigma sqrt(d log T ln(1/beta))
    # (log base 2). We count exceedances over 1000 runs and fail only if a Binomial(1000,
    # beta) count would be that large with probability < 1e-3 (false-failure rate 1e-3).
    T, d, sigma, runs = 64, 8, 1.0, 1000
    bound = sigma * math.sqrt(d * math.log2(T) * math.log(1 / beta))
    rng = np.random.default_rng(7)
    exceed = 0
    means = []
    for _ in range(runs):
        agg = TreeAggregator(d, sigma, variant=variant, rng=rng)
        avg = np.mean([np.linalg.norm(agg.add(np.zeros(d))) for _ in range(T)])
        means.append(avg)
        exceed += avg > bound
    assert stats.binom.sf(exceed - 1, runs, beta) >= 1e-3
    # and the mean is at most 5% above sigma sqrt(d * mean popcount) (the plain tree's root
    # mean square, by Jensen an upper bound on its mean norm; Honaker's variances are
    # smaller), which is itself below the bound
    typical = sigma * math.sqrt(d * np.mean([bin(t).count("1") for t in range(1, T + 1)]))
    assert np.mean(means) <= 1.05 * typical < bound
