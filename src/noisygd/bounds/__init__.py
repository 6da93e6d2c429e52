"""Utility bounds of the seeds that the planners report, each with what it assumes.

:class:`Bound` carries a bound's quantity, comparator, guarantee and assumptions (and where
each assumption's value comes from), so that ``noisygd plan`` ranks only comparable bounds
(:func:`comparable`). The modules implement the seeds' bounds the NoisyGD planner does not:
NoisySGD's (Lecture 12, 12.3.3), the strongly convex bound with :math:`\\eta_t = 1/(\\lambda t)`
(12.2.4), the tree mechanism's accuracy (slides 001), online-to-batch (slides 001) and
Theorem 6 of Zhang et al. 2017 (seed 002).
"""

from noisygd.bounds.base import SOURCES, Assumption, Bound, comparable
from noisygd.bounds.lecture12 import (
    noisy_sgd_gradient_variance,
    noisy_sgd_utility_bound,
    strongly_convex_uniform_average_bound,
)
from noisygd.bounds.online_to_batch import online_to_batch_bound, online_to_batch_refusal
from noisygd.bounds.tree import tree_error_bound, tree_nodes_per_prefix
from noisygd.bounds.zhang2017 import theorem6_bound

__all__ = [
    "SOURCES",
    "Assumption",
    "Bound",
    "comparable",
    "noisy_sgd_gradient_variance",
    "noisy_sgd_utility_bound",
    "online_to_batch_bound",
    "online_to_batch_refusal",
    "strongly_convex_uniform_average_bound",
    "theorem6_bound",
    "tree_error_bound",
    "tree_nodes_per_prefix",
]
