r"""DP-FTRL: follow-the-regularised-leader on tree-mechanism prefix sums of clipped gradients.

Lecture 14 (seed 001), "DP-FTRL for continuous optimization": with
:math:`w_1` the starting point (default 0),

.. math::

    g_t = \sum_{x \in B_t}\mathrm{clip}_C(\nabla\ell(w_t; x)), \qquad
    \tilde s_t = \mathrm{TreeMechanism}(g_1, \dots, g_t), \\
    w_{t+1} = \arg\min_{w \in C}\ \langle \tilde s_t + r_t, w\rangle
              + \frac{\lambda}{2}\lVert w - w_1\rVert^2
            = \Pi_C\big(w_1 - (\tilde s_t + r_t)/\lambda\big),

with batch size 1 as in the slides or mini-batches :math:`B_t` of ``batch_size``
consecutive rows, and output :math:`\bar w = \frac1T\sum_{t=1}^T w_t`
(``output="average"``) or :math:`w_{T+1}` (``"last"``). :math:`r_t = \sum_{\tau\le t}
|B_\tau|\,\mu\, w_\tau` linearises the objective's own L2 term
:math:`\frac\mu2\lVert w\rVert^2` (data-independent, so it needs no noise).

The privacy guarantee needs :math:`g_t` to depend only on the rows of batch
``t`` and on earlier outputs :math:`\tilde s_1, \dots, \tilde s_{t-1}`. The code
keeps this true: :math:`w_t` is computed from :math:`\tilde s_{t-1}` and public
values only, and the gradient of batch ``t`` is evaluated at :math:`w_t` and
nowhere else; rows are streamed in the order given (no shuffling is needed or
done), each epoch in the same order. The released object is then a
post-processing of the tree, accounted by
:class:`noisygd.accounting.tree.TreeAggregation` under replace-one neighbours
(the stream length is public): with one epoch,
:math:`\mu = 2\sqrt{\lfloor\log_2 T\rfloor + 1}/z`-GDP. With ``leaves="random"``
(:func:`dp_ftrl` only) each epoch assigns every row to one of its leaves independently
and uniformly at random instead, so that adding or removing a row changes one leaf per
epoch: the same tree is then accounted under add/remove neighbours with
:math:`\Delta = 1`, :math:`\mu = \sqrt{\lfloor\log_2 T\rfloor + 1}/z` for one epoch
(the estimators' default relation; the argument is in
:class:`~noisygd.accounting.events.TreeAggregation`).

Multiple epochs: the tree continues (each row sits in ``epochs`` leaves, shared
ancestors counted with multiplicity) or is restarted at each epoch
(``restart_every_epoch=True``), in which case the new tree's prefix sums are
added to the last released prefix sum of the previous one.

Two entry points: :func:`dp_ftrl` for one oracle (rows visited in their order) and
:func:`dp_ftrl_stream` for data read in chunks (e.g. from disk), which keeps
:math:`O(d\log T)` state plus one chunk. **A stream is a sequence of oracles**: the source
is a callable returning, once per epoch, an iterable of
:class:`~noisygd.oracles.base.GradientOracle` (one per chunk, same loss and row bound);
batches of ``batch_size`` consecutive rows may span chunk boundaries (a batch's clipped
sum is the sum of the clipped sums of its pieces). :func:`array_chunk_oracles` wraps a
source of ``(X, y)`` array chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

from noisygd._checks import (
    check_bool,
    check_choice,
    check_generator,
    check_positive,
    check_positive_int,
)
from noisygd.accounting.events import Neighbouring
from noisygd.accounting.tree import TreeAggregation
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.noisy_gd import check_oracle, check_theta0
from noisygd.mechanisms.noise import is_secure, secure_event, sensitivity_inflation
from noisygd.mechanisms.secure import SecureRandom
from noisygd.mechanisms.tree import VARIANTS, TreeAggregator
from noisygd.objectives.base import Objective
from noisygd.oracles.array import ArrayOracle
from noisygd.oracles.base import GradientOracle
from noisygd.oracles.selection import (
    PoissonRows,
    RandomLeaf,
    RowIndices,
    RowRange,
    RowSelection,
    oracle_rows,
)

__all__ = ["OUTPUTS", "array_chunk_oracles", "dp_ftrl", "dp_ftrl_stream"]

OUTPUTS = ("average", "last")

OracleSource = Callable[[], Iterable[GradientOracle]]


def array_chunk_oracles(
    objective: Objective,
    chunks: Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]],
    *,
    row_norm_bound: float,
    sparse: str = "auto",
) -> OracleSource:
    """A stream of :class:`~noisygd.oracles.array.ArrayOracle`, one per ``(X, y)`` chunk.

    ``chunks`` is called once per epoch; each chunk is checked by its oracle (2-D, finite,
    targets valid) and mapped into ``row_norm_bound`` (one pass over the chunk).
    """
    if not callable(chunks):
        raise TypeError("chunks must be a callable returning an iterable of (X, y) chunks, "
                        "called once per epoch")
    B = check_positive("row_norm_bound", row_norm_bound)

    def source() -> Iterator[GradientOracle]:
        for Xc, yc in chunks():
            yield ArrayOracle(objective, Xc, yc, row_norm_bound=B, sparse=sparse)

    return source


def _batches(oracles: Iterable[GradientOracle], batch_size: int
             ) -> Iterator[list[tuple[GradientOracle, RowRange]]]:
    """Consecutive batches of ``batch_size`` rows (the last may be shorter), as pieces
    ``(oracle, row range)`` that may span chunk boundaries (an oracle that resolves row
    descriptions, such as a Dask oracle, reads only the partitions the range covers)."""
    pieces: list[tuple[GradientOracle, RowRange]] = []
    held = 0
    for oracle in oracles:
        check_oracle(oracle)
        k = oracle.n_rows
        start = 0
        while start < k:
            take = min(batch_size - held, k - start)
            pieces.append((oracle, RowRange(start, start + take)))
            held += take
            start += take
            if held == batch_size:
                yield pieces
                pieces, held = [], 0
    if held:
        yield pieces


def _random_leaves(oracle: GradientOracle, steps: int, rng: np.random.Generator
                   ) -> Iterator[list[tuple[GradientOracle, RowSelection]]]:
    """One epoch of ``steps`` leaves, every row assigned to one of them independently and
    uniformly at random (``leaves="random"``, :func:`dp_ftrl`); a leaf may be empty. Each
    leaf is a :class:`~noisygd.oracles.selection.RandomLeaf` description (the epoch's seed
    material drawn from ``rng``): an oracle that resolves descriptions (Dask) reads it where
    the rows are; an in-memory oracle gets the same rows, listed once per epoch."""
    check_oracle(oracle)
    entropy = PoissonRows.entropy_from(rng)
    if oracle.resolves_row_selections:
        for t in range(steps):
            yield [(oracle, RandomLeaf(steps, entropy, t))]
        return
    leaf = RandomLeaf(steps, entropy, 0).assignment(0, oracle.n_rows)
    order = np.argsort(leaf, kind="stable")
    bounds = np.searchsorted(leaf[order], np.arange(steps + 1))
    for t in range(steps):
        yield [(oracle, RowIndices(order[bounds[t]:bounds[t + 1]]))]


def _run(
    epoch_source: OracleSource,
    *,
    noise_multiplier: float,
    clip: float,
    batch_size: int,
    epochs: int,
    l2_ftrl: float,
    tree: str,
    output: str,
    restart_every_epoch: bool,
    theta0: np.ndarray | None,
    rng: np.random.Generator | SecureRandom,
    random_leaves: tuple[int, float] | None = None,
    relation: Neighbouring = Neighbouring.REPLACE_ONE,
) -> FitResult:
    check_generator("rng", rng)
    z = check_positive("noise_multiplier", noise_multiplier)
    C = check_positive("clip", clip)
    lam = check_positive("l2_ftrl", l2_ftrl)
    b = check_positive_int("batch_size", batch_size)
    E = check_positive_int("epochs", epochs)
    tree = check_choice("tree", tree, VARIANTS)
    output = check_choice("output", output, OUTPUTS)
    restart_every_epoch = check_bool("restart_every_epoch", restart_every_epoch)

    shape: tuple[int, float, float, float | None] | None = None  # (p, l2, B, radius)
    w1 = w = avg = reg = offset = last_release = np.zeros(0)
    agg: TreeAggregator | None = None
    proj: GradientOracle | None = None
    T = 0
    per_epoch: int | None = None
    for epoch in range(E):
        steps_this_epoch = 0
        if random_leaves is None:
            batches = _batches(epoch_source(), b)
        else:  # the assignment is not released: a generator of its own (OS entropy if secure)
            leaf_rng = (np.random.default_rng() if is_secure(rng)
                        else rng)  # type: ignore[assignment]
            (single,) = tuple(epoch_source())
            batches = _random_leaves(single, random_leaves[0], leaf_rng)
        for pieces in batches:
            first = pieces[0][0]
            here = (first.n_params, first.l2, first.row_norm_bound, first.radius)
            if shape is None:  # the first oracle fixes p, mu, B and the ball
                shape = here
                p = first.n_params
                w1 = check_theta0(theta0, p)
                proj = first
                w = first.project(w1.copy())
                agg = TreeAggregator(p, z * C, variant=tree, rng=rng)
                offset = np.zeros(p)  # last released prefix sum of the previous trees
                last_release = np.zeros(p)
                reg = np.zeros(p)  # public: sum of |B_tau| mu w_tau
                avg = np.zeros(p)
            for oracle, _ in pieces:
                if (oracle.n_params, oracle.l2, oracle.row_norm_bound, oracle.radius) != shape:
                    raise ValueError("every chunk oracle must have the same number of "
                                     "parameters, l2, row_norm_bound and radius")
            if restart_every_epoch and epoch > 0 and steps_this_epoch == 0:
                offset = last_release
                agg = TreeAggregator(p, z * C, variant=tree, rng=rng)
            avg += w  # w_t
            # g_t: rows of batch t only, at w_t (a function of earlier outputs only)
            g = np.zeros(p)
            rows = 0
            for oracle, span in pieces:
                g += oracle.clipped_gradient_sum(w, C, rows=oracle_rows(oracle, span))
                if random_leaves is None:  # a RowRange (random leaves: rows not counted)
                    rows += span.stop - span.start  # type: ignore[attr-defined]
            mu = shape[1]
            if mu:  # random leaves: the public expected leaf size, not the private one
                reg += (rows if random_leaves is None else random_leaves[1]) * mu * w
            last_release = offset + agg.add(g)  # type: ignore[union-attr]
            w = proj.project(w1 - (last_release + reg) / lam)  # type: ignore[union-attr]
            T += 1
            steps_this_epoch += 1
        if steps_this_epoch == 0:
            raise ValueError("the data source yielded no rows")
        if per_epoch is None:
            per_epoch = steps_this_epoch
        elif steps_this_epoch != per_epoch:
            raise ValueError(
                f"epoch {epoch + 1} had {steps_this_epoch} steps, the first had {per_epoch}: "
                "every epoch must stream the same rows in the same order"
            )
    assert per_epoch is not None
    tree_event = TreeAggregation(
        noise_multiplier=z,
        steps=T,
        epochs=E,
        restart_every=per_epoch if (restart_every_epoch and E > 1) else None,
        relation=relation,
        leaves="position" if random_leaves is None else "random",
    )
    # secure mode: a node holding m_u >= 1 leaves of an example moves by at most
    # m_u Delta C + gamma sqrt(p) <= m_u kappa Delta C after rounding (DiscreteGaussianNoise),
    # Delta = relation.clipped_sum_sensitivity: 2 under replace-one, 1 under add/remove
    kappa = sensitivity_inflation(rng, z * C, p, tree_event.relation.clipped_sum_sensitivity * C)
    event = secure_event(tree_event, rng, kappa)
    out = avg / T if output == "average" else w
    info = {
        "algorithm": "dp_ftrl",
        "tree": tree,
        "output": output,
        "batch_size": b,
        "epochs": E,
        "steps": T,
        "steps_per_epoch": per_epoch,
        "restart_every_epoch": bool(restart_every_epoch),
        "l2_ftrl": lam,
        "noise_multiplier": z,
        "clip": C,
        "relation": event.neighbouring.value,
        "last_iterate": w,
        "mu": None if is_secure(rng) else tree_event.mu,
    }
    if is_secure(rng):
        info["sensitivity_inflation"] = kappa
    return FitResult(theta=out, event=event, n_iter=T, info=info)


def dp_ftrl(
    oracle: GradientOracle,
    *,
    noise_multiplier: float,
    clip: float,
    l2_ftrl: float,
    batch_size: int = 1,
    epochs: int = 1,
    tree: str = "honaker",
    output: str = "average",
    restart_every_epoch: bool = False,
    theta0: np.ndarray | None = None,
    rng: np.random.Generator | SecureRandom,
    leaves: str = "position",
    steps_per_epoch: int | None = None,
    n_samples: float | None = None,
) -> FitResult:
    r"""DP-FTRL (Lecture 14) on one oracle, rows visited in their order or at random.

    Parameters
    ----------
    oracle : GradientOracle
        Rows, loss, its L2 term ``l2`` (linearised, module docstring) and the set
        ``C`` (its ``radius`` ball, or :math:`\mathbb R^p`).
    noise_multiplier : float
        ``z``: each tree node gets :math:`\mathcal N(0, (zC)^2 I)`.
    clip : float
        Per-example clipping norm ``C``.
    l2_ftrl : float
        :math:`\lambda`, the FTRL regularisation strength.
    batch_size : int, default=1
        Rows per step (consecutive); ``T = ceil(n / batch_size) * epochs``.
    epochs : int, default=1
    tree : {"honaker", "plain"}
        Prefix-sum estimator (:mod:`noisygd.mechanisms.tree`).
    output : {"average", "last"}
    restart_every_epoch : bool, default=False
    theta0 : ndarray, optional
        :math:`w_1` (default 0), the centre of the FTRL regulariser.
    rng : numpy.random.Generator or SecureRandom
        A :class:`~noisygd.mechanisms.secure.SecureRandom` runs secure mode: every tree
        node's exact sum is rounded to a grid and gets discrete Gaussian noise.
    leaves : {"position", "random"}, default="position"
        ``"position"``: batches of ``batch_size`` consecutive rows, replace-one neighbours.
        ``"random"``: each epoch assigns every row to one of ``steps_per_epoch`` leaves
        independently and uniformly at random, so that adding or removing a row changes one
        leaf per epoch (add/remove neighbours, :math:`\Delta = 1`;
        :class:`~noisygd.accounting.events.TreeAggregation`); needs one epoch or
        ``restart_every_epoch=True``. The linearised L2 term then uses the public expected
        leaf size ``n_samples / steps_per_epoch``, not the leaf's private size.
    steps_per_epoch, n_samples : int, float
        With ``leaves="random"``: the public number of leaves per epoch and the public ``n``
        (a declared size or a private count's bound).

    Returns
    -------
    FitResult
        ``event = TreeAggregation(z, T, epochs, restart_every, REPLACE_ONE)`` (random leaves:
        ``ADD_REMOVE``, ``leaves="random"``); in secure
        mode ``DiscreteGaussianNoise(<that>, kappa)`` with :math:`\kappa = 1 +
        \gamma\sqrt p/(\Delta C)`, :math:`\Delta` the relation's clipped-sum sensitivity
        (2 under replace-one, positional leaves; 1 under add/remove, random leaves)
        (``info["sensitivity_inflation"]``, ``info["mu"] = None``).
    """
    check_oracle(oracle)
    leaves = check_choice("leaves", leaves, ("position", "random"))
    random_leaves = None
    if leaves == "random":
        if steps_per_epoch is None or n_samples is None:
            raise ValueError("leaves='random' needs the public steps_per_epoch and n_samples")
        random_leaves = (check_positive_int("steps_per_epoch", steps_per_epoch),
                         check_positive("n_samples", n_samples) / steps_per_epoch)
    return _run(
        lambda: (oracle,),
        noise_multiplier=noise_multiplier, clip=clip, batch_size=batch_size, epochs=epochs,
        l2_ftrl=l2_ftrl, tree=tree, output=output, restart_every_epoch=restart_every_epoch,
        theta0=theta0, rng=rng, random_leaves=random_leaves,
        relation=Neighbouring.ADD_REMOVE if random_leaves else Neighbouring.REPLACE_ONE,
    )


def dp_ftrl_stream(
    oracles: OracleSource,
    *,
    noise_multiplier: float,
    clip: float,
    l2_ftrl: float,
    batch_size: int = 1,
    epochs: int = 1,
    tree: str = "honaker",
    output: str = "average",
    restart_every_epoch: bool = False,
    theta0: np.ndarray | None = None,
    rng: np.random.Generator | SecureRandom,
) -> FitResult:
    r"""DP-FTRL over a stream of chunk oracles (e.g. read from disk), :math:`O(d \log T)` state.

    Parameters
    ----------
    oracles : callable returning an iterable of GradientOracle
        Called once per epoch; must yield the same rows in the same order each time
        (checked through the number of steps). Chunks need not align with batches.
        :func:`array_chunk_oracles` builds one from ``(X, y)`` chunks.

    Other parameters are those of :func:`dp_ftrl`.
    """
    if not callable(oracles):
        raise TypeError("oracles must be a callable returning an iterable of GradientOracle "
                        "(one per chunk), called once per epoch")
    return _run(
        oracles,
        noise_multiplier=noise_multiplier, clip=clip, batch_size=batch_size, epochs=epochs,
        l2_ftrl=l2_ftrl, tree=tree, output=output, restart_every_epoch=restart_every_epoch,
        theta0=theta0, rng=rng,
    )
