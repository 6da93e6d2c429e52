r"""A smooth nonconvex objective: the sigmoid-loss linear classifier.

:math:`\ell(\theta; x, y) = \phi(\tilde x^\top\theta, y)` with
:math:`\phi(z, y) = s(-yz) = 1/(1 + e^{yz})` (:math:`s` the logistic
function), labels :math:`y\in\{-1,+1\}`: a smooth surrogate of the 0-1 loss,
bounded in :math:`[0, 1]` and not convex. With :math:`u = -yz`,

.. math::

    \phi' = -y\,s(u)(1-s(u)), \quad |\phi'| \le \tfrac14, \qquad
    \phi'' = s(u)(1-s(u))(1-2s(u)), \quad |\phi''| \le \tfrac{1}{6\sqrt3},

(the maximum of :math:`|s'(u)(1-2s(u))|` is attained at
:math:`s = \frac12 \pm \frac{1}{2\sqrt3}`), so for augmented rows of norm at most
:math:`\tilde B`: :math:`L = \tilde B/4`, :math:`\beta = \tilde B^2/(6\sqrt3)`.
Used by RRPSGD (Algorithm 2 of Zhang et al. 2017, Theorem 5: nonconvex,
:math:`L`-Lipschitz, :math:`\beta`-smooth).
"""

from __future__ import annotations

import math

import numpy as np

from noisygd.objectives.base import ObjectiveConstants
from noisygd.objectives.glm import GLMObjective, LogisticLoss

__all__ = ["SigmoidLoss"]

_PHI2_MAX = 1.0 / (6.0 * math.sqrt(3.0))


class SigmoidLoss(GLMObjective):
    r"""Sigmoid loss :math:`1/(1 + e^{y z})`, labels in {-1, +1} (or {0, 1}, mapped).

    Parameters
    ----------
    l2, fit_intercept, radius
        See :class:`~noisygd.objectives.glm.GLMObjective`.
    """

    def loss(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        # s(-y z) = (1 - tanh(y z / 2)) / 2, stable for all z.
        return 0.5 * (1.0 - np.tanh(0.5 * y * z))

    def residual(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        s = 0.5 * (1.0 - np.tanh(0.5 * y * z))  # s(-y z)
        return -y * s * (1.0 - s)

    def data_constants(self, bt: float) -> tuple[float | None, float]:
        return bt / 4.0, bt * bt * _PHI2_MAX

    def constants(self, row_norm_bound: float) -> ObjectiveConstants:
        """As :meth:`GLMObjective.constants` but ``convex=False``."""
        c = super().constants(row_norm_bound)
        return ObjectiveConstants(
            lipschitz=c.lipschitz, smoothness=c.smoothness, strong_convexity=0.0,
            convex=False, row_norm_bound=c.row_norm_bound,
        )

    def loss_at_zero_bound(self) -> float:
        """``F(0) = 1/2`` for every dataset (the loss at margin 0)."""
        return 0.5

    def check_targets(self, y: np.ndarray) -> np.ndarray:
        """Labels in {-1, +1} (int8 ones kept as int8); accepts {-1, +1}, {0, 1} or bools."""
        return LogisticLoss.check_targets(self, y)  # same label rules
