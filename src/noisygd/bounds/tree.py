r"""Accuracy of the binary-tree mechanism (seed 001, "Tree Mechanism (Vector Version)").

The slides state: for all :math:`\beta > 0`, with probability at least :math:`1 - \beta`,
:math:`\frac1T\sum_{t=1}^T\lVert Z_t\rVert \le \sigma\sqrt{d\log T\ln(1/\beta)}`, where
:math:`Z_t = V_{u_1} + \dots + V_{u_k}` is the error of the ``t``-th prefix sum, a sum of
:math:`k \approx \log_2T` node noises :math:`V_u \sim \mathcal N(0, \sigma^2I_d)`. That
statement is up to a constant: as :math:`\beta \to 1` its right side tends to 0 while the
average concentrates near its mean (for :math:`\beta = 0.9` it is exceeded almost surely,
``tests/algorithms/test_seed_bounds.py``).
:func:`tree_error_bound` gives it with explicit constants:

* in expectation, :math:`E\frac1T\sum_t\lVert Z_t\rVert \le \sigma\sqrt{kd}` (Jensen:
  :math:`E\lVert Z_t\rVert^2 \le k\sigma^2d`);
* with probability at least :math:`1 - \beta`,

  .. math::  \frac1T\sum_{t=1}^T\lVert Z_t\rVert \le \sigma\sqrt k\big(\sqrt d
             + \sqrt{2\ln(1/\beta)}\big),

  because :math:`V \mapsto \frac1T\sum_t\lVert Z_t\rVert` is a
  :math:`\sigma\sqrt k`-Lipschitz function of the standard Gaussian vector of all node
  noises (each :math:`Z_t = \sigma\sum_u w_{t,u}V_u` with :math:`\sum_u w_{t,u}^2 \le k`), so
  it exceeds its mean by :math:`\sigma\sqrt{2k\ln(1/\beta)}` with probability at most
  :math:`\beta` (Gaussian concentration of Lipschitz functions, Tsirelson-Ibragimov-Sudakov).

Both hold for the plain prefix sums (:math:`w_{t,u} \in \{0, 1\}`, at most ``k`` ones) and for
Honaker's estimator (the minimum-variance linear unbiased combination: :math:`\sum_u
w_{t,u}^2` is at most the plain one's ``k``). For :math:`\ln(1/\beta) \ge 1` and
:math:`d \ge 1` the explicit form is at most :math:`(1 + \sqrt2)\sigma\sqrt{kd\ln(1/\beta)}`:
the slides' rate with :math:`k = \lfloor\log_2T\rfloor + 1`.
"""

from __future__ import annotations

import math

from noisygd._checks import check_positive, check_positive_int

__all__ = ["tree_error_bound", "tree_nodes_per_prefix"]


def tree_nodes_per_prefix(steps: int) -> int:
    r""":math:`k = \lfloor\log_2T\rfloor + 1`: the most nodes a prefix sum of a tree over
    ``T`` leaves adds (the binary digits of ``t``)."""
    T = check_positive_int("steps", steps)
    return T.bit_length()


def tree_error_bound(*, noise_std: float, n_params: int, nodes_per_prefix: int,
                     beta: float | None = None) -> float:
    r"""Bound on the average norm of the tree's prefix-sum errors (module doc).

    Parameters
    ----------
    noise_std : float
        :math:`\sigma`, each node's noise std per coordinate.
    n_params : int
        ``d``.
    nodes_per_prefix : int
        ``k`` (:func:`tree_nodes_per_prefix`, or the sum over restarted trees).
    beta : float or None
        None: the bound on the expectation, :math:`\sigma\sqrt{kd}`; else the bound holding
        with probability at least :math:`1 - \beta`,
        :math:`\sigma\sqrt k(\sqrt d + \sqrt{2\ln(1/\beta)})`.
    """
    s = check_positive("noise_std", noise_std)
    d = check_positive_int("n_params", n_params)
    k = check_positive_int("nodes_per_prefix", nodes_per_prefix)
    if beta is None:
        return s * math.sqrt(k * d)
    b = check_positive("beta", beta)
    if not b < 1.0:
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    return s * math.sqrt(k) * (math.sqrt(d) + math.sqrt(2.0 * math.log(1.0 / b)))
