r"""The squared-distance loss of Chourasia, Ye and Shokri (seed 004, eq. (71)).

:math:`\ell(\theta; x) = \frac12\lVert\theta - x\rVert^2`: mean estimation, the loss of the
lower-bound construction of Theorem 3 and Corollary 2. The rows of ``X`` are the records
:math:`x_i \in \mathbb R^d`; ``y`` is ignored (any vector of length ``n``).
"""

from __future__ import annotations

import numpy as np

from noisygd._checks import check_nonnegative, check_positive
from noisygd.objectives.base import Objective, ObjectiveConstants

__all__ = ["SquaredDistanceLoss"]


class SquaredDistanceLoss(Objective):
    r""":math:`\ell(\theta; x) = \frac12\lVert\theta - x\rVert^2` (seed 004, eq. (71)).

    With ``l2 = mu`` the per-example loss is :math:`(1+\mu)`-strongly convex and
    :math:`(1+\mu)`-smooth, quadratic with the data-independent Hessian :math:`(1+\mu)I`
    (:attr:`quadratic_constant_hessian`), and the total-gradient difference
    :math:`g(\theta; D) - g(\theta; D') = x' - x` does not depend on :math:`\theta`, so
    :math:`S_g = 2B` exactly for rows with :math:`\lVert x\rVert \le B` (Definition B.10).

    Parameters
    ----------
    l2 : float, default=0.0
    radius : float or None, default=None
        The constraint ball (Lipschitz constant ``radius + B`` over it).
    """

    quadratic_constant_hessian = True

    def __init__(self, l2: float = 0.0, radius: float | None = None) -> None:
        self.l2 = check_nonnegative("l2", l2)
        self.radius = None if radius is None else check_positive("radius", radius)

    def n_params(self, n_features: int) -> int:
        """``d``: the parameter is a point of the data space."""
        return int(n_features)

    def per_example_loss(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        r""":math:`\frac12\lVert\theta - x_i\rVert^2` per row."""
        diff = np.asarray(X, dtype=float) - np.asarray(theta, dtype=float)
        return 0.5 * np.einsum("ij,ij->i", diff, diff)

    def clipped_gradient_sum(
        self, theta: np.ndarray, X: np.ndarray, y: np.ndarray, clip: float | None
    ) -> np.ndarray:
        r""":math:`\sum_i \mathrm{clip}_C(\theta - x_i)`; unclipped :math:`n\theta - \sum_i x_i`."""
        X = np.asarray(X, dtype=float)
        theta = np.asarray(theta, dtype=float)
        if clip is None:
            return X.shape[0] * theta - X.sum(axis=0)
        grads = theta[None, :] - X  # (k, d) for one block of rows: the clipped (non-Langevin) path
        norms = np.linalg.norm(grads, axis=1)
        scale = np.minimum(1.0, clip / np.maximum(norms, np.finfo(float).tiny))
        return (grads * scale[:, None]).sum(axis=0)

    def constants(self, row_norm_bound: float) -> ObjectiveConstants:
        """``L = radius + B`` (None without a radius), ``beta = 1``, strong convexity ``1 + l2``."""
        B = check_positive("row_norm_bound", row_norm_bound)
        lipschitz = None if self.radius is None else self.radius + B
        return ObjectiveConstants(lipschitz=lipschitz, smoothness=1.0,
                                  strong_convexity=1.0 + self.l2, convex=True,
                                  row_norm_bound=B)

    def total_gradient_sensitivity(self, row_norm_bound: float) -> float:
        r"""Exact :math:`S_g = \max\lVert x - x'\rVert = 2B`."""
        return 2.0 * check_positive("row_norm_bound", row_norm_bound)

    def check_targets(self, y: np.ndarray) -> np.ndarray:
        """Any one-dimensional vector (ignored by the loss)."""
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
        return y

    def __repr__(self) -> str:
        return f"SquaredDistanceLoss(l2={self.l2!r}, radius={self.radius!r})"
