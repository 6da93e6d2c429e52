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
:math:`\mu = 2\sqrt{\lfloor\log_2 T\rfloor + 1}/z`-GDP.

Multiple epochs: the tree continues (each row sits in ``epochs`` leaves, shared
ancestors counted with multiplicity) or is restarted at each epoch
(``restart_every_epoch=True``), in which case the new tree's prefix sums are
added to the last released prefix sum of the previous one.

Two entry points: :func:`dp_ftrl` for in-memory arrays and
:func:`dp_ftrl_stream` for a source of chunks read from disk, which keeps
:math:`O(d\log T)` state plus one chunk.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from noisygd._checks import check_real_positive as _positive
from noisygd.accounting.tree import TreeAggregation
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.noisy_gd import _validate_data
from noisygd.mechanisms.tree import VARIANTS, TreeAggregator
from noisygd.objectives.base import Objective

__all__ = ["OUTPUTS", "dp_ftrl", "dp_ftrl_stream"]

OUTPUTS = ("average", "last")

Chunk = tuple[np.ndarray, np.ndarray]


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _batches(chunks: Iterable[Chunk], batch_size: int) -> Iterator[Chunk]:
    """Consecutive batches of ``batch_size`` rows (the last may be shorter) from chunks."""
    bx: list[np.ndarray] = []
    by: list[np.ndarray] = []
    held = 0
    for Xc, yc in chunks:
        Xc = np.asarray(Xc)
        yc = np.asarray(yc)
        if Xc.ndim != 2 or yc.shape != (Xc.shape[0],):
            raise ValueError(f"each chunk must be (X of shape (k, d), y of shape (k,)), got "
                             f"{Xc.shape} and {yc.shape}")
        start = 0
        while start < Xc.shape[0]:
            take = min(batch_size - held, Xc.shape[0] - start)
            bx.append(Xc[start:start + take])
            by.append(yc[start:start + take])
            held += take
            start += take
            if held == batch_size:
                yield np.concatenate(bx), np.concatenate(by)
                bx, by, held = [], [], 0
    if held:
        yield np.concatenate(bx), np.concatenate(by)


def _run(
    objective: Objective,
    epoch_source: Callable[[], Iterable[Chunk]],
    n_features: int,
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
    rng: np.random.Generator,
    validate: bool,
) -> FitResult:
    if not isinstance(objective, Objective):
        raise TypeError(f"objective must be an Objective, got {type(objective).__name__}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    z = _positive("noise_multiplier", noise_multiplier)
    C = _positive("clip", clip)
    lam = _positive("l2_ftrl", l2_ftrl)
    b = _count("batch_size", batch_size)
    E = _count("epochs", epochs)
    if tree not in VARIANTS:
        raise ValueError(f"tree must be one of {VARIANTS}, got {tree!r}")
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")

    p = objective.n_params(n_features)
    w1 = np.zeros(p) if theta0 is None else np.array(theta0, dtype=float)
    if w1.shape != (p,) or not np.all(np.isfinite(w1)):
        raise ValueError(f"theta0 must be a finite vector of shape ({p},)")
    w = objective.project(w1.copy())
    mu = objective.l2
    sd = z * C
    agg = TreeAggregator(p, sd, variant=tree, rng=rng)
    offset = np.zeros(p)  # last released prefix sum of the previous trees (restarts)
    last_release = np.zeros(p)
    reg = np.zeros(p)  # public: sum of |B_tau| mu w_tau
    avg = np.zeros(p)
    T = 0
    per_epoch: int | None = None
    has_norms = hasattr(objective, "row_norms")
    for epoch in range(E):
        if restart_every_epoch and epoch > 0:
            offset = last_release
            agg = TreeAggregator(p, sd, variant=tree, rng=rng)
        steps_this_epoch = 0
        for Xb, yb in _batches(epoch_source(), b):
            if validate:
                Xb, yb = _validate_data(objective, Xb, yb)
            else:
                Xb = np.asarray(Xb, dtype=np.float64)
                yb = objective.check_targets(yb)
            if Xb.shape[1] != n_features:
                raise ValueError(f"chunk has {Xb.shape[1]} columns, expected {n_features}")
            avg += w  # w_t
            norms = objective.row_norms(Xb) if has_norms else np.linalg.norm(Xb, axis=1)
            # g_t: rows of batch t only, at w_t (a function of earlier outputs only)
            g = objective.clipped_gradient_sum(w, Xb, yb, C, row_norms=norms)
            if mu:
                reg += Xb.shape[0] * mu * w
            last_release = offset + agg.add(g)
            w = objective.project(w1 - (last_release + reg) / lam)
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
    event = TreeAggregation(
        noise_multiplier=z,
        steps=T,
        epochs=E,
        restart_every=per_epoch if (restart_every_epoch and E > 1) else None,
    )
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
        "mu": event.mu,
    }
    return FitResult(theta=out, event=event, n_iter=T, info=info)


def dp_ftrl(
    objective: Objective,
    X: np.ndarray,
    y: np.ndarray,
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
    rng: np.random.Generator,
) -> FitResult:
    r"""DP-FTRL (Lecture 14) on in-memory data, rows visited in the order given.

    Parameters
    ----------
    objective : Objective
        Loss, its L2 term ``l2`` (linearised, module docstring) and the set
        ``C`` (its ``radius`` ball, or :math:`\mathbb R^p`).
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
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
    rng : numpy.random.Generator

    Returns
    -------
    FitResult
        ``event = TreeAggregation(z, T, epochs, restart_every, REPLACE_ONE)``.
    """
    X, y = _validate_data(objective, X, y)

    def source() -> Iterable[Chunk]:
        return [(X, y)]

    return _run(
        objective, source, X.shape[1],
        noise_multiplier=noise_multiplier, clip=clip, batch_size=batch_size, epochs=epochs,
        l2_ftrl=l2_ftrl, tree=tree, output=output, restart_every_epoch=restart_every_epoch,
        theta0=theta0, rng=rng, validate=False,
    )


def dp_ftrl_stream(
    objective: Objective,
    chunks: Callable[[], Iterable[Chunk]],
    *,
    n_features: int,
    noise_multiplier: float,
    clip: float,
    l2_ftrl: float,
    batch_size: int = 1,
    epochs: int = 1,
    tree: str = "honaker",
    output: str = "average",
    restart_every_epoch: bool = False,
    theta0: np.ndarray | None = None,
    validate: bool = True,
    rng: np.random.Generator,
) -> FitResult:
    """DP-FTRL over data read in chunks (e.g. from disk), :math:`O(d \\log T)` state.

    Parameters
    ----------
    chunks : callable returning an iterable of ``(X_chunk, y_chunk)``
        Called once per epoch; must yield the same rows in the same order each
        time (checked through the number of steps). Chunks need not align with
        batches.
    n_features : int
        Number of columns ``d``.
    validate : bool, default=True
        Check each batch for finite values (costs one pass over it).

    Other parameters are those of :func:`dp_ftrl`.
    """
    if not callable(chunks):
        raise TypeError("chunks must be a callable returning an iterable of (X, y) chunks, "
                        "called once per epoch")
    d = _count("n_features", n_features)
    return _run(
        objective, chunks, d,
        noise_multiplier=noise_multiplier, clip=clip, batch_size=batch_size, epochs=epochs,
        l2_ftrl=l2_ftrl, tree=tree, output=output, restart_every_epoch=restart_every_epoch,
        theta0=theta0, rng=rng, validate=validate,
    )
