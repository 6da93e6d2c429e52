r"""Rows selected by a description, resolved where the rows are.

An algorithm that reads a subset of the rows (a NoisySGD batch, a DP-FTRL step) describes
the subset instead of listing it. Each description resolves to the same row indices on
any partition of the rows into consecutive pieces: a piece holding global rows
``start:stop`` computes its own local indices, with no global list, shuffle or round trip
(:meth:`RowSelection.local`); an in-memory oracle resolves the whole range at once
(:meth:`RowSelection.indices`), and the two agree exactly.

:class:`RowIndices`
    An explicit list (uniform subsets drawn on the client, shuffled epochs, secure mode).
:class:`RowRange`
    Consecutive rows ``start:stop`` (DP-FTRL streams its batches in row order).
:class:`PoissonRows`
    Every row independently with probability :math:`\gamma`, drawn from streams derived
    from a seed, one stream per fixed block of :data:`POISSON_BLOCK` global rows.
:class:`RandomLeaf`
    The rows of one leaf of an epoch in which every row goes to one of ``L`` leaves
    independently and uniformly at random (DP-FTRL's ``leaves="random"``), from the same
    per-block streams: row ``i``'s leaf is a function of ``(entropy, i)`` only.

Why :class:`PoissonRows` is exactly Poisson sampling
-----------------------------------------------------
Global rows are cut into blocks :math:`\{jK, \dots, (j+1)K - 1\}`, ``K`` =
:data:`POISSON_BLOCK`, a constant: the blocks depend neither on ``n`` nor on how the data
are partitioned. Block ``j`` at step ``t`` reads its own generator, seeded by
``SeedSequence(entropy, spawn_key=(t, j))`` (NumPy's construction of independent streams).
In its block, the rows sampled are the renewal process with
:math:`\mathrm{Geometric}(\gamma)` gaps: :math:`i_1 = jK + G_1 - 1`,
:math:`i_{k+1} = i_k + G_{k+1}`, :math:`G_k \ge 1`. A Geometric gap is the number of
Bernoulli(:math:`\gamma`) trials up to and including the first success, so the included
positions of a sequence of independent Bernoulli(:math:`\gamma`) trials, one per row, have
exactly this law (the memorylessness of the trials): every row of the block is in the
sample independently with probability :math:`\gamma`. Blocks use independent streams,
so every row of the data set is included independently with probability :math:`\gamma`:
the Poisson sampling of ``PoissonSampled(gamma, ...)``. Positions come out increasing, so
stopping the draws at the end of the data (or of a partition) leaves the draws before it
unchanged: a row's inclusion does not depend on ``n``, on the partition or on which
worker resolves it, and the batch is a function of ``(entropy, t)`` only.

Like the Binomial size and uniform subset it replaces, the Geometric sampler is NumPy's
floating-point algorithm; secure mode (:class:`~noisygd.mechanisms.secure.SecureRandom`)
draws exact samples on the client and passes them as :class:`RowIndices`.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from noisygd._checks import check_fraction, check_positive_int

if TYPE_CHECKING:
    from noisygd.oracles.base import GradientOracle

__all__ = [
    "POISSON_BLOCK",
    "PoissonRows",
    "RandomLeaf",
    "RowIndices",
    "RowRange",
    "RowSelection",
    "oracle_rows",
]

#: Global rows per Poisson stream (a constant: it fixes which stream decides each row).
POISSON_BLOCK = 1 << 16
#: Geometric gaps drawn per generator call while resolving a block (a constant for the same
#: reason: the draws must not depend on where resolution stops).
_GAP_CHUNK = 4096


class RowSelection(ABC):
    """A subset of the global rows ``0..n-1``, resolvable by any consecutive piece of them."""

    @abstractmethod
    def local(self, start: int, stop: int) -> np.ndarray:
        """Indices, relative to ``start``, of the selected rows among global rows ``start:stop``.

        Parameters
        ----------
        start, stop : int
            The global rows held by one piece (a Dask partition), ``0 <= start <= stop``.

        Returns
        -------
        ndarray of intp
            In the order :meth:`indices` lists them.
        """

    def indices(self, n_rows: int) -> np.ndarray:
        """Global indices of the selected rows among ``0..n_rows-1`` (``local(0, n_rows)``)."""
        return self.local(0, check_positive_int("n_rows", n_rows, minimum=0))


@dataclass(frozen=True)
class RowIndices(RowSelection):
    """An explicit list of global row indices (kept in its order)."""

    rows: np.ndarray = field(repr=False)

    def __post_init__(self) -> None:
        idx = np.asarray(self.rows)
        if idx.ndim != 1 or not (idx.dtype.kind in "iu" or idx.size == 0):
            raise ValueError("rows must be a 1-D array of integer row indices")
        object.__setattr__(self, "rows", idx.astype(np.intp, copy=False))

    def local(self, start: int, stop: int) -> np.ndarray:
        """The listed rows inside ``start:stop``, in list order, relative to ``start``."""
        r = self.rows
        return r[(r >= start) & (r < stop)] - start

    def indices(self, n_rows: int) -> np.ndarray:
        """The list itself (as the algorithm drew it, repeats and order kept).

        Raises
        ------
        ValueError
            If a listed row is outside ``0..n_rows-1`` (it would select a row the data does
            not have, or, negative, one counted from the end).
        """
        n_rows = check_positive_int("n_rows", n_rows, minimum=0)
        r = self.rows
        if r.size and (int(r.min()) < 0 or int(r.max()) >= n_rows):
            raise ValueError(f"row indices must lie in 0..{n_rows - 1}, got "
                             f"{int(r.min())}..{int(r.max())}")
        return r


@dataclass(frozen=True)
class RowRange(RowSelection):
    """Consecutive global rows ``start:stop``."""

    start: int
    stop: int

    def __post_init__(self) -> None:
        a = check_positive_int("start", self.start, minimum=0)
        b = check_positive_int("stop", self.stop, minimum=0)
        if b < a:
            raise ValueError(f"stop ({b}) must be at least start ({a})")
        object.__setattr__(self, "start", a)
        object.__setattr__(self, "stop", b)

    def local(self, start: int, stop: int) -> np.ndarray:
        """``arange(max(start, a), min(stop, b)) - start``."""
        lo, hi = max(start, self.start), min(stop, self.stop)
        return np.arange(lo, max(lo, hi), dtype=np.intp) - start

    def indices(self, n_rows: int) -> np.ndarray:
        """``arange(start, min(stop, n_rows))``."""
        return np.arange(self.start, min(self.stop, n_rows), dtype=np.intp)


@dataclass(frozen=True)
class PoissonRows(RowSelection):
    r"""Each row independently with probability ``rate``, from streams keyed by ``(step, block)``.

    The module doc shows that the selection is exactly Poisson sampling and does not depend
    on the partition of the rows.

    Parameters
    ----------
    rate : float in (0, 1]
        :math:`\gamma`.
    entropy : tuple of int
        The fit's seed material (drawn once from the fit's generator).
    step : int
        The step ``t``: each step draws from its own streams.
    """

    rate: float
    entropy: tuple[int, ...]
    step: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "rate", check_fraction("rate", self.rate))
        object.__setattr__(self, "step", check_positive_int("step", self.step, minimum=0))
        ent = tuple(int(e) for e in self.entropy)
        if not ent or any(e < 0 for e in ent):
            raise ValueError("entropy must be a non-empty sequence of non-negative integers")
        object.__setattr__(self, "entropy", ent)

    @classmethod
    def entropy_from(cls, rng: np.random.Generator) -> tuple[int, ...]:
        """128 bits of seed material drawn from ``rng`` (once per fit)."""
        return tuple(int(v) for v in rng.integers(0, 2**63, size=2))

    def _block(self, j: int, limit: int) -> np.ndarray:
        """Positions (within block ``j``) below ``limit`` of the block's sampled rows."""
        if self.rate == 1.0:
            return np.arange(limit, dtype=np.intp)
        seq = np.random.SeedSequence(self.entropy, spawn_key=(self.step, j))
        gen = np.random.Generator(np.random.PCG64(seq))
        found: list[np.ndarray] = []
        last = -1
        while last < limit - 1:
            pos = last + np.cumsum(_geometric_gaps(gen, self.rate))
            found.append(pos)
            last = int(pos[-1])
        out = np.concatenate(found)
        return out[: np.searchsorted(out, limit)].astype(np.intp, copy=False)

    def local(self, start: int, stop: int) -> np.ndarray:
        """The sampled rows of ``start:stop``, increasing, relative to ``start``."""
        K = POISSON_BLOCK
        parts = []
        for j in range(start // K, -(-stop // K)):
            base = j * K
            pos = self._block(j, min(K, stop - base)) + base
            parts.append(pos[pos >= start] - start)
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.intp)


@dataclass(frozen=True)
class RandomLeaf(RowSelection):
    r"""The rows of leaf ``leaf`` when every row is assigned to one of ``leaves`` leaves
    independently and uniformly at random (DP-FTRL's ``leaves="random"``).

    Row ``i`` of block ``j = i // K`` (``K`` = :data:`POISSON_BLOCK`) has the leaf
    ``U_{i - jK}``, the ``(i - jK)``-th of the ``K`` draws
    ``Generator(PCG64(SeedSequence(entropy, spawn_key=(j,)))).integers(0, leaves, K)``:
    independent uniform leaves (independent streams per block), a function of
    ``(entropy, i)`` only. So every piece of the rows resolves its own rows, the leaves of
    rows ``0..n-1`` do not change when a row is appended (``D`` and ``D + {x}`` differ in
    ``x``'s leaf only, for the same entropy), and the leaves of one epoch partition the rows.

    Parameters
    ----------
    leaves : int
        :math:`L`, the number of leaves of the epoch (public).
    entropy : tuple of int
        The epoch's seed material (:meth:`PoissonRows.entropy_from`, drawn from the fit's
        generator once per epoch).
    leaf : int
        The leaf, ``0 <= leaf < leaves``.
    """

    leaves: int
    entropy: tuple[int, ...]
    leaf: int

    def __post_init__(self) -> None:
        L = check_positive_int("leaves", self.leaves)
        t = check_positive_int("leaf", self.leaf, minimum=0)
        if t >= L:
            raise ValueError(f"leaf must be below leaves ({L}), got {t}")
        ent = tuple(int(e) for e in self.entropy)
        if not ent or any(e < 0 for e in ent):
            raise ValueError("entropy must be a non-empty sequence of non-negative integers")
        object.__setattr__(self, "leaves", L)
        object.__setattr__(self, "leaf", t)
        object.__setattr__(self, "entropy", ent)

    def assignment(self, start: int, stop: int) -> np.ndarray:
        """The leaf of each global row ``start:stop`` (shape ``(stop - start,)``)."""
        K = POISSON_BLOCK
        parts = [_leaf_block(self.entropy, self.leaves, j)[max(start - j * K, 0):
                                                           min(stop - j * K, K)]
                 for j in range(start // K, -(-stop // K))]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def local(self, start: int, stop: int) -> np.ndarray:
        """The rows of ``start:stop`` in this leaf, increasing, relative to ``start``."""
        return np.flatnonzero(self.assignment(start, stop) == self.leaf).astype(np.intp)


@functools.lru_cache(maxsize=16)
def _leaf_block(entropy: tuple[int, ...], leaves: int, j: int) -> np.ndarray:
    """The leaves of the ``K`` global rows of block ``j`` (:class:`RandomLeaf`): always all
    ``K`` draws, so a row's leaf does not depend on where resolution stops. Cached (read
    only): the ``leaves`` leaf descriptions of an epoch resolve the same blocks."""
    seq = np.random.SeedSequence(entropy, spawn_key=(j,))
    out = np.random.Generator(np.random.PCG64(seq)).integers(0, leaves, size=POISSON_BLOCK)
    out.setflags(write=False)
    return out


def _geometric_gaps(gen: np.random.Generator, rate: float) -> np.ndarray:
    """:data:`_GAP_CHUNK` Geometric(``rate``) gaps, each in ``1..K + 1``.

    NumPy's inversion sampler returns ``ceil(E / -log1p(-rate))`` with ``E`` a standard
    exponential, which is 0 (a gap of 0: the same row twice) when ``E`` is 0, with
    probability about :math:`2^{-53}` per draw: such a gap is raised to 1, the law's least
    value (a change of that probability, no duplicated row). A gap above ``K + 1`` leaves the
    block either way: capping it changes no position inside the block, and keeps the sums
    far from int64 overflow for tiny rates."""
    gaps = gen.geometric(rate, size=_GAP_CHUNK)
    return np.clip(gaps, 1, POISSON_BLOCK + 1)


def oracle_rows(oracle: GradientOracle, selection: RowSelection) -> RowSelection | np.ndarray:
    """What an algorithm passes as ``rows=``: the description itself to an oracle that
    resolves descriptions (``oracle.resolves_row_selections``), else its global indices."""
    if oracle.resolves_row_selections:
        return selection
    return selection.indices(oracle.n_rows)
