"""Rows selected by a description (noisygd.oracles.selection): partition-free resolution and
the law of the Poisson description. NumPy only (no Dask needed)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from noisygd.objectives.glm import LogisticLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.oracles.selection import (
    POISSON_BLOCK,
    PoissonRows,
    RowIndices,
    RowRange,
    oracle_rows,
)

#: Per-check false-failure rate of the statistical checks below (fixed seeds: a failure
#: reproduces; with correct sampling each check fails with at most this probability).
FALSE_FAILURE = 1e-6


def _pieces(n: int, cuts: list[int]) -> list[tuple[int, int]]:
    edges = [0, *sorted(cuts), n]
    return list(itertools.pairwise(edges))


@pytest.mark.parametrize("cuts", [[], [1], [POISSON_BLOCK - 1, POISSON_BLOCK + 1],
                                  [5, 70_000, 131_072, 190_000]])
def test_poisson_rows_resolve_identically_on_any_partition(cuts: list[int]) -> None:
    n = 3 * POISSON_BLOCK + 17  # four blocks, the last partial
    sel = PoissonRows(0.01, (123, 456), 7)
    whole = sel.indices(n)
    pieces = [sel.local(a, b) + a for a, b in _pieces(n, cuts)]
    assert np.array_equal(np.concatenate(pieces), whole)
    assert np.all(np.diff(whole) > 0) and whole[0] >= 0 and whole[-1] < n


def test_poisson_rows_do_not_depend_on_n_or_on_other_steps() -> None:
    sel = PoissonRows(0.2, (1, 2), 0)
    long, short = sel.indices(100_000), sel.indices(70_000)
    assert np.array_equal(long[long < 70_000], short)
    other = PoissonRows(0.2, (1, 2), 1).indices(70_000)
    assert not np.array_equal(other, short)
    assert np.array_equal(PoissonRows(0.2, (1, 2), 0).indices(70_000), short)  # reproducible


def test_poisson_tiny_rate_ends() -> None:
    """Gaps of about 1e18 rows: the block is left at once, with no int64 overflow."""
    assert PoissonRows(1e-18, (7,), 0).indices(3 * POISSON_BLOCK).size == 0


def test_poisson_rate_one_selects_every_row() -> None:
    assert np.array_equal(PoissonRows(1.0, (3,), 4).indices(10), np.arange(10))


def test_poisson_rows_inclusion_is_bernoulli_and_independent() -> None:
    """Every row, every step: in the sample with probability gamma, independently of the
    rows beside it (also across a stream-block boundary)."""
    gamma, n, T = 0.3, 400, 2000
    base = POISSON_BLOCK - n // 2  # the rows straddle the boundary between blocks 0 and 1
    hits = np.zeros((T, n), dtype=bool)
    for t in range(T):
        hits[t, PoissonRows(gamma, (99, 5), t).local(base, base + n)] = True
    total = int(hits.sum())
    lo, hi = stats.binom.ppf([FALSE_FAILURE / 2, 1 - FALSE_FAILURE / 2], n * T, gamma)
    assert lo <= total <= hi
    # each row on its own: chi-square of the per-row counts against Binomial(T, gamma)
    counts = hits.sum(axis=0)
    chi2 = float(np.sum((counts - T * gamma) ** 2 / (T * gamma * (1 - gamma))))
    assert chi2 <= stats.chi2.ppf(1 - FALSE_FAILURE, n)
    # neighbours (including the pair across the block boundary): P(both) = gamma^2
    both = int(np.sum(hits[:, :-1] & hits[:, 1:]))
    lo, hi = stats.binom.ppf([FALSE_FAILURE / 2, 1 - FALSE_FAILURE / 2], (n - 1) * T,
                             gamma**2)
    assert lo <= both <= hi
    edge = int(np.sum(hits[:, n // 2 - 1] & hits[:, n // 2]))  # rows 2^16 - 1 and 2^16
    lo, hi = stats.binom.ppf([FALSE_FAILURE / 2, 1 - FALSE_FAILURE / 2], T, gamma**2)
    assert lo <= edge <= hi


def test_range_and_indices_resolve_locally() -> None:
    r = RowRange(3, 9)
    assert np.array_equal(r.indices(100), np.arange(3, 9))
    assert np.array_equal(r.indices(5), np.arange(3, 5))
    assert np.array_equal(r.local(5, 20), np.arange(0, 4))
    assert r.local(10, 20).size == 0
    idx = RowIndices(np.array([8, 1, 5, 2]))
    assert np.array_equal(idx.indices(10), [8, 1, 5, 2])
    assert np.array_equal(idx.local(2, 6), [3, 0])  # rows 5 and 2, in list order


@pytest.mark.parametrize("bad", [
    lambda: RowRange(5, 2), lambda: RowRange(-1, 2), lambda: PoissonRows(0.0, (1,), 0),
    lambda: PoissonRows(1.5, (1,), 0), lambda: PoissonRows(0.5, (), 0),
    lambda: PoissonRows(0.5, (1,), -1), lambda: RowIndices(np.array([0.5])),
])
def test_bad_descriptions_are_refused(bad) -> None:
    with pytest.raises((ValueError, TypeError)):
        bad()


def test_in_memory_oracle_gets_the_global_indices() -> None:
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(50, 3)), np.sign(rng.normal(size=50))
    o = ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0)
    assert not o.resolves_row_selections
    sel = PoissonRows(0.5, (4, 4), 2)
    rows = oracle_rows(o, sel)
    assert isinstance(rows, np.ndarray) and np.array_equal(rows, sel.indices(50))


def test_a_zero_geometric_gap_never_repeats_a_row():
    # NumPy's inversion sampler can return a gap of 0 (probability ~2^-53 per draw): it is
    # raised to 1, so the positions stay strictly increasing (K1); a huge gap is capped
    from noisygd.oracles.selection import _GAP_CHUNK, POISSON_BLOCK, _geometric_gaps

    class ZeroGaps:
        def geometric(self, p, size):
            out = np.full(size, 3, dtype=np.int64)
            out[::7] = 0
            out[5] = 10**12
            return out

    gaps = _geometric_gaps(ZeroGaps(), 0.5)
    assert gaps.shape == (_GAP_CHUNK,) and gaps.min() == 1
    assert gaps[5] == POISSON_BLOCK + 1 and np.all(gaps[1:5] == 3)
    assert np.all(np.diff(np.cumsum(gaps)) >= 1)
