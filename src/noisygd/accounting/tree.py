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

Neighbouring relation. With rows assigned to leaves by their position in the
stream (``leaves="position"``, the default), adding or removing a row would shift
every later leaf: an add/remove guarantee does not follow from this argument and
is refused. Under replace-one neighbours (the number of rows, hence ``T``, is
public) one leaf's clipped sum changes by at most ``2 * clip``, so
:math:`\Delta = 2`. With every row assigned to a leaf of each epoch independently
and uniformly at random (``leaves="random"``: one epoch, or a tree restarted every
epoch), adding or removing a row changes one leaf per epoch by at most ``clip``
(:math:`\Delta = 1`) and the release is :math:`\mu`-GDP under add/remove: the
argument, a mixture over the row's leaf, is in
:class:`~noisygd.accounting.events.TreeAggregation`.

Where it is read. The event :class:`~noisygd.accounting.events.TreeAggregation`
(defined with every other event in :mod:`noisygd.accounting.events`, and
re-exported here) is in the dispatch tables of ``gdp`` (exact by the statement above for
``leaves="position"``; for ``leaves="random"`` an upper bound, the release being a mixture),
``zcdp`` (:math:`\mu^2/2`), ``rdp`` (:math:`\alpha\mu^2/2`) and ``pld`` (a
``GaussianDpEvent`` with the same shift, under ``REPLACE_ONE`` or ``ADD_OR_REMOVE_ONE``, in
:mod:`~noisygd.accounting.dp_accounting_bridge`). This module keeps the
helper :func:`tree_event` that builds the event of a DP-FTRL run.
"""

from __future__ import annotations

from noisygd._checks import check_bool, check_positive_int, check_real
from noisygd.accounting.events import Neighbouring, TreeAggregation, max_squared_node_count

__all__ = ["TreeAggregation", "max_squared_node_count", "tree_event"]


def tree_event(
    noise_multiplier: float,
    steps: int,
    epochs: int = 1,
    *,
    restart_every_epoch: bool = False,
    relation: Neighbouring | str = Neighbouring.REPLACE_ONE,
    leaves: str = "position",
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
        Add/remove only with ``leaves="random"``
        (:class:`~noisygd.accounting.events.TreeAggregation`).
    leaves : {"position", "random"}, default="position"
        Rows assigned to leaves by position, or at random in each epoch.
    """
    s = check_positive_int("steps", steps)
    E = check_positive_int("epochs", epochs)
    restart = check_bool("restart_every_epoch", restart_every_epoch)
    return TreeAggregation(
        noise_multiplier=check_real("noise_multiplier", noise_multiplier),
        steps=s * E,
        epochs=E,
        restart_every=s if (restart and E > 1) else None,
        relation=Neighbouring(relation),
        leaves=leaves,
    )
