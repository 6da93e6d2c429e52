r"""Accounting of the binary-tree mechanism (DP-FTRL): the ``TreeAggregation`` event.

Lecture 14 (seed 001): each node of the binary tree over the ``T`` time steps
releases the sum of its leaves plus :math:`\mathcal N(0, \sigma^2 I_d)`; a
leaf is the (batch-summed) clipped gradient of one step. Privacy, per the
slides: if :math:`g_t` depends only on :math:`x_t` and the earlier outputs,
the release is a Gaussian mechanism (adaptivity is fine because each node is an
adaptive Gaussian query whose inputs depend only on earlier releases).

Exact statement used here. Fix neighbouring datasets differing in one
example. Conditioned on all earlier releases, a node's value changes by at
most :math:`m_u \Delta` in L2 norm, where :math:`m_u` is the number of the
example's leaves under node ``u`` and :math:`\Delta` its per-leaf
sensitivity, and the nodes are released in time order. By adaptive composition
of Gaussian mechanisms in Gaussian DP (Dong, Roth and Su 2022, Corollary 3.3)
the whole tree, and any post-processing of it (plain or Honaker prefix sums,
FTRL iterates, their average), is :math:`\mu`-GDP with

.. math::

    \mu = \frac{\Delta}{z} \sqrt{\max_{p} \sum_{u\ \mathrm{complete}} m_u(p)^2},

``z`` the noise multiplier (node noise ``z * clip``) and the maximum over the
example's position ``p`` in the (fixed, public) stream order. Only complete
nodes are released by :class:`noisygd.mechanisms.tree.TreeAggregator`. For a
single pass with no restart each example is in one leaf, which lies in at most
:math:`\lfloor\log_2 T\rfloor + 1 = \lceil\log_2(T+1)\rceil` complete nodes
(the count of dp_accounting's ``SingleEpochTreeAggregationDpEvent``,
Kairouz et al. 2021, Appendix D). With ``epochs`` passes over the data in the
same order, an example sits in leaves ``p, p + s, p + 2s, ...`` (``s`` steps
per epoch) and shared ancestors count with multiplicity; restarting the tree
every ``restart_every`` steps makes the trees disjoint.

Neighbouring relation. The stream is processed in the order given, so adding
or removing a row would shift every later leaf: an add/remove guarantee does
not follow from this argument and is refused. Under replace-one neighbours (the
number of rows, hence ``T``, is public) one leaf's clipped sum changes by at
most ``2 * clip``, so :math:`\Delta = 2`.

Registered hooks: ``gaussian_mu`` (exact, by the statement above),
``zcdp_rho`` (:math:`\mu^2/2`), ``rdp_curve`` (:math:`\alpha\mu^2/2`) and
``to_dp_accounting`` (a ``GaussianDpEvent`` with the same shift, under
``REPLACE_ONE``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import dp_accounting
import numpy as np

from noisygd.accounting.events import DpEvent, Neighbouring
from noisygd.accounting.gdp import gaussian_mu
from noisygd.accounting.pld import to_dp_accounting
from noisygd.accounting.rdp import rdp_curve
from noisygd.accounting.zcdp import zcdp_rho

__all__ = ["TreeAggregation", "max_squared_node_count", "tree_event"]

#: L2 change of one leaf's clipped sum, in clipping norms, when one example is replaced.
REPLACE_ONE_SENSITIVITY = 2.0


def _positive_int(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def max_squared_node_count(steps: int, epochs: int = 1, restart_every: int | None = None) -> int:
    r""":math:`\max_p \sum_u m_u(p)^2` over the complete nodes of the released trees.

    Parameters
    ----------
    steps : int
        Total number of leaves ``T`` (all epochs); must be a multiple of ``epochs``.
    epochs : int
        Passes over the data; an example at position ``p`` of an epoch of
        ``s = T / epochs`` steps is in leaves ``p + k s``, ``k < epochs``.
    restart_every : int or None
        A new tree is started every ``restart_every`` leaves (``None``: one tree).

    Returns
    -------
    int
        The squared sensitivity in units of the per-leaf sensitivity.

    Notes
    -----
    Vectorised over ``p``; ``O(T log T)`` time. Leaves are 0-indexed here; the
    node of height ``h`` containing local leaf ``l`` of a tree of ``L`` leaves
    is ``l >> h``, complete iff ``((l >> h) + 1) << h <= L``.
    """
    T = _positive_int("steps", steps)
    E = _positive_int("epochs", epochs)
    if T % E:
        raise ValueError(f"steps={T} must be a multiple of epochs={E} (s steps per epoch)")
    R = T if restart_every is None else _positive_int("restart_every", restart_every)
    s = T // E
    p = np.arange(s, dtype=np.int64)
    leaves = p[:, None] + s * np.arange(E, dtype=np.int64)[None, :]  # (s, E), increasing in k
    tree = leaves // R
    local = leaves % R
    tree_len = np.minimum(R, T - tree * R)
    total = np.zeros(s, dtype=np.int64)
    for h in range(min(R, T).bit_length() + 1):
        node = local >> h
        complete = ((node + 1) << h) <= tree_len
        # run-length counting along k: node ids are non-decreasing within a tree
        run = np.ones(s, dtype=np.int64)
        for k in range(E):
            if k > 0:
                same = (tree[:, k] == tree[:, k - 1]) & (node[:, k] == node[:, k - 1])
                run = np.where(same, run + 1, 1)
            # sum over a run of length m of (2c - 1), c = 1..m, is m^2
            total += np.where(complete[:, k], 2 * run - 1, 0)
    return int(total.max())


@dataclass(frozen=True)
class TreeAggregation(DpEvent):
    r"""Release of every complete node of binary trees over a stream of clipped sums.

    Parameters
    ----------
    noise_multiplier : float
        ``z``: each node gets :math:`\mathcal N(0, (z C)^2 I)`, ``C`` the clip norm.
    steps : int
        Total number of leaves ``T`` (time steps, all epochs together).
    epochs : int, default=1
        Passes over the data in the same order; each example is in ``epochs``
        leaves, ``T / epochs`` apart.
    restart_every : int or None, default=None
        Leaves per tree when the tree is restarted (``T / epochs`` restarts at
        every epoch); ``None`` for a single tree.
    relation : Neighbouring, default=REPLACE_ONE
        Only replace-one is accepted (module docstring).

    Notes
    -----
    :math:`\mu = 2\sqrt{\max_p\sum_u m_u(p)^2}/z`-GDP (module docstring).
    """

    noise_multiplier: float
    steps: int
    epochs: int = 1
    restart_every: int | None = None
    relation: Neighbouring = Neighbouring.REPLACE_ONE

    def __post_init__(self) -> None:
        z = self.noise_multiplier
        if isinstance(z, bool) or not isinstance(z, int | float) or math.isnan(z) or z <= 0:
            raise ValueError(f"noise_multiplier must be positive, got {z!r}")
        _positive_int("steps", self.steps)
        _positive_int("epochs", self.epochs)
        if self.steps % self.epochs:
            raise ValueError(
                f"steps={self.steps} must be a multiple of epochs={self.epochs}: every epoch "
                "streams the same rows in the same order"
            )
        if self.restart_every is not None:
            _positive_int("restart_every", self.restart_every)
        rel = Neighbouring(self.relation)
        if rel is not Neighbouring.REPLACE_ONE:
            raise ValueError(
                "TreeAggregation is accounted under replace-one neighbours only: the stream is "
                "processed in order, so adding or removing a row shifts every later leaf"
            )
        object.__setattr__(self, "relation", rel)

    @property
    def neighbouring(self) -> Neighbouring:
        return self.relation

    @property
    def squared_node_count(self) -> int:
        r""":math:`\max_p \sum_u m_u(p)^2` (see :func:`max_squared_node_count`)."""
        return _cached_count(self.steps, self.epochs, self.restart_every)

    @property
    def mu(self) -> float:
        """Exact Gaussian-DP parameter of the release."""
        if math.isinf(self.noise_multiplier):
            return 0.0
        return REPLACE_ONE_SENSITIVITY * math.sqrt(self.squared_node_count) / self.noise_multiplier


_COUNT_CACHE: dict[tuple[int, int, int | None], int] = {}


def _cached_count(steps: int, epochs: int, restart_every: int | None) -> int:
    key = (steps, epochs, restart_every)
    if key not in _COUNT_CACHE:
        if epochs == 1 and (restart_every is None or restart_every >= steps):
            _COUNT_CACHE[key] = int(steps).bit_length()  # floor(log2 T) + 1, leaf 0
        else:
            _COUNT_CACHE[key] = max_squared_node_count(steps, epochs, restart_every)
    return _COUNT_CACHE[key]


def tree_event(
    noise_multiplier: float,
    steps: int,
    epochs: int = 1,
    *,
    restart_every_epoch: bool = False,
    relation: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> TreeAggregation:
    """The event of a DP-FTRL run (for ``noisygd account --mechanism tree``).

    Parameters
    ----------
    noise_multiplier : float
    steps : int
        Steps per epoch (leaves of one pass over the data).
    epochs : int, default=1
    restart_every_epoch : bool, default=False
        Whether the tree is restarted at each epoch.
    relation : default=REPLACE_ONE
        Anything else is refused.
    """
    s = _positive_int("steps", steps)
    E = _positive_int("epochs", epochs)
    return TreeAggregation(
        noise_multiplier=float(noise_multiplier),
        steps=s * E,
        epochs=E,
        restart_every=s if (restart_every_epoch and E > 1) else None,
        relation=Neighbouring(relation),
    )


# ---------------------------------------------------------------- hooks
@gaussian_mu.register
def _(event: TreeAggregation) -> float:
    # adaptive composition of Gaussians (Dong-Roth-Su 2022, Cor. 3.3), module docstring
    return event.mu


@zcdp_rho.register
def _(event: TreeAggregation) -> float:
    # mu-GDP Gaussian composition is (mu^2/2)-zCDP (Bun-Steinke 2016, Prop. 1.6, Lemma 1.7)
    return event.mu**2 / 2.0


@rdp_curve.register
def _(event: TreeAggregation, orders: np.ndarray) -> np.ndarray:
    # Mironov (2017) Prop. 7 and composition: alpha mu^2 / 2
    return np.asarray(orders, dtype=float) * (event.mu**2 / 2.0)


@to_dp_accounting.register
def _(event: TreeAggregation) -> dp_accounting.DpEvent:
    mu = event.mu
    if mu == 0.0:
        return dp_accounting.NoOpDpEvent()
    # dp_accounting's REPLACE_ONE Gaussian(z') has shift 2/z' (see noisygd.accounting.pld)
    return dp_accounting.GaussianDpEvent(noise_multiplier=2.0 / mu)
