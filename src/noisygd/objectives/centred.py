r"""A linear model in public centred coordinates: preconditioning that costs no privacy.

For a GLM with intercept the margin is :math:`\langle w, x\rangle + b`. Given a public centre
:math:`c \in \mathbb R^d` and a public intercept scale :math:`s > 0`, write the same model with
parameters :math:`v = [v_w, v_b]` on the centred rows :math:`x' = [x - c, s]`:

.. math::

    \langle v_w, x - c\rangle + s v_b = \langle w, x\rangle + b
    \quad\Longleftrightarrow\quad w = v_w,\quad b = s v_b - \langle c, v_w\rangle .

The map :math:`v \mapsto \theta = (w, b)` is linear and invertible, so without a ridge penalty
:math:`F'(v) = F(\theta(v))` is the same function in other coordinates: the same minimum,
the same excess risk :math:`F'(v) - \min F' = F(\theta(v)) - \min F`.

Why: gradient descent is not invariant under this change. On features that are all
non-negative (one-hot blocks, numeric features mapped onto :math:`[0, b]`) the Hessian
:math:`\tilde X^\top D\tilde X/n` has one large eigenvalue along the mean row, which caps the
step size :math:`1/\beta`, while the directions that matter have small curvature. Centring at
a public centre removes that direction, and the per-example bound falls from
:math:`\sqrt{B^2 + 1}` to :math:`\sqrt{R_c^2 + s^2}` (with
:math:`R_c \ge \lVert x - c\rVert` public): NoisyGD then clips, and adds noise, at a smaller
norm and takes larger steps. On the unregularised ADULT and CreditCard problems of
``noisygd reproduce zhang2017-table3`` this lowers NoisyGD's excess risk by 1.7-3x at the
same privacy (``docs/reproduction_zhang2017.md``).

A ridge penalty is defined in the optimised coordinates. With ``base.l2 = lambda > 0`` the
objective is

.. math::

    F'(v) = \frac1n\sum_i \phi(\langle v, x'_i\rangle, y_i) + \frac\lambda2\lVert v\rVert^2
          = \frac1n\sum_i \ell(\theta(v); x_i, y_i)
            + \frac\lambda2\big(\lVert w\rVert^2 + (b + \langle c, w\rangle)^2/s^2\big),

a ridge regression of the model :math:`\theta(v)` with the penalty on the intercept *of the
centred model* :math:`b + \langle c, w\rangle` (the prediction at the centre), weighted by
:math:`1/s^2`. It is :math:`\lambda`-strongly convex in ``v``, its minimiser satisfies
:math:`\frac\lambda2\lVert v^*\rVert^2 \le F'(0) = \frac1n\sum_i\phi(0, y_i)`, and it is
*not* the same problem as ``base`` with its penalty :math:`\frac\lambda2\lVert\theta\rVert^2`
(which penalises the uncentred intercept ``b``); for small :math:`\lambda` both are close to
the unregularised problem, which the map leaves invariant. This is the objective the
estimators optimise when they condition the problem (docs/estimators.md).

**A per-feature scale** (``feature_scale`` :math:`f > 0`, a diagonal preconditioner): the
rows are :math:`x' = [f\odot(x - c), s]` and

.. math::

    \langle v_w, f\odot(x - c)\rangle + s v_b = \langle w, x\rangle + b
    \quad\Longleftrightarrow\quad w = f\odot v_w,\quad b = s v_b - \langle c, w\rangle,

again a linear invertible map (the same model, the ridge on ``v``). Gradient descent in
``v`` is gradient descent in ``w`` preconditioned by :math:`\mathrm{diag}(f^2)`, with the
noise :math:`f\odot\xi` in ``w``: features of small spread, scaled up, move as fast as the
others, and each feature's share of the noise in the margins is its share of the rows'
spread. The row bound ``R`` and the clip then bound the rescaled rows.

Privacy: ``c``, ``s`` (and ``f``) must be public (e.g. from a schema's public bounds:
:func:`noisygd.data.public_centring`); NoisyGD clips every per-example gradient
:math:`r_i x'_i` at ``C`` in the new coordinates, so its event is unchanged (``clip`` bounds
the sensitivity whatever the rows are). Not for objectives with a projection ball (the
ball is not invariant under the map).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from noisygd._checks import check_positive
from noisygd.objectives.base import (
    MarginModel,
    Objective,
    ObjectiveConstants,
    augmented_row_norms,
    check_centre,
    check_feature_scale,
)
from noisygd.objectives.glm import GLMObjective

__all__ = ["CentredGLM"]


class CentredGLM(Objective):
    r"""``base`` (a GLM with intercept, no penalty) in the coordinates :math:`x' = [x - c, s]`.

    Parameters
    ----------
    base : GLMObjective
        The objective ``F``; needs ``fit_intercept=True`` and no ``radius``. Its ``l2`` is
        the ridge penalty :math:`\frac\lambda2\lVert v\rVert^2` *in the coordinates v*
        (module doc).
    centre : array_like of shape (n_features,)
        Public centre ``c``.
    intercept_scale : float
        Public ``s > 0``: the constant column of the centred rows.
    feature_scale : array_like of shape (n_features,), optional
        Public positive column weights :math:`f` (module doc); None: all ones.

    Notes
    -----
    ``X`` is passed uncentred (dense or scipy.sparse): margins and gradients use
    :math:`X v_w - \langle c, v_w\rangle` and
    :math:`\nabla = [X^\top r - c\sum_i r_i,\ s\sum_i r_i]`, so sparse ``X`` stays sparse.
    Use :meth:`to_base` to map a fitted ``v`` back to ``theta = [w, b]`` of ``base``.

    Behind :class:`~noisygd.oracles.array.ArrayOracle` (through :meth:`margin_model`) the
    declared ``row_norm_bound`` is :math:`R_c`, a bound on the *centred* rows
    :math:`\lVert x - c\rVert`, and the oracle serves every row projected onto that ball:
    :math:`x \mapsto c + \min(1, R_c/\lVert x - c\rVert)(x - c)` (a per-row map with public
    ``c``: free under DP). Rows already inside the ball are served unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from noisygd.objectives import CentredGLM, LogisticLoss
    >>> X = np.array([[0.1, 0.9], [0.8, 0.2], [0.5, 0.5]]); y = np.array([0.0, 1.0, 1.0])
    >>> obj = CentredGLM(LogisticLoss(), centre=[0.5, 0.5], intercept_scale=0.5)
    >>> v = np.array([1.0, -2.0, 0.4])
    >>> bool(np.isclose(obj.value(v, X, y), LogisticLoss().value(obj.to_base(v), X, y)))
    True
    """

    supports_sparse = True

    def __init__(self, base: GLMObjective, centre: ArrayLike, intercept_scale: float,
                 feature_scale: ArrayLike | None = None) -> None:
        if not isinstance(base, GLMObjective):
            raise TypeError(f"base must be a GLMObjective, got {type(base).__name__}")
        if not base.fit_intercept:
            raise ValueError("centring needs an intercept (base.fit_intercept=True): the shift "
                             "by c is absorbed into it")
        if base.radius is not None:
            raise ValueError("centring does not preserve the projection ball (radius is set)")
        c = check_centre(centre)
        s = check_positive("intercept_scale", intercept_scale)
        self.base = base
        self.l2 = float(base.l2)  # the penalty l2/2 ||v||^2, in the optimised coordinates
        self.quadratic_loss = bool(base.quadratic_loss)  # phi is unchanged by the map
        self.centre = c
        self.intercept_scale = s
        self.feature_scale = (None if feature_scale is None
                              else check_feature_scale(feature_scale, c.size))

    # --- the change of coordinates --------------------------------------------
    def _check_v(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=float)
        if v.shape != (self.centre.size + 1,):
            raise ValueError(f"v must have shape ({self.centre.size + 1},), got {v.shape}")
        return v

    def to_base(self, v: ArrayLike) -> np.ndarray:
        r"""``theta = [w, b]`` of ``base``: :math:`w = f\odot v_w`,
        :math:`b = s v_b - \langle c, w\rangle`."""
        v = self._check_v(np.asarray(v))
        w = v[:-1] if self.feature_scale is None else self.feature_scale * v[:-1]
        return np.append(w, self.intercept_scale * v[-1] - float(self.centre @ w))

    def from_base(self, theta: ArrayLike) -> np.ndarray:
        r"""Inverse of :meth:`to_base`: :math:`v = [w/f, (b + \langle c, w\rangle)/s]`."""
        theta = self._check_v(np.asarray(theta))
        w = theta[:-1]
        vw = w if self.feature_scale is None else w / self.feature_scale
        return np.append(vw, (theta[-1] + float(self.centre @ w)) / self.intercept_scale)

    def _check_X(self, X: np.ndarray) -> None:
        if X.shape[1] != self.centre.size:
            raise ValueError(f"X has {X.shape[1]} columns but the centre has {self.centre.size}")

    # --- Objective protocol ---------------------------------------------------
    def n_params(self, n_features: int) -> int:
        """``n_features + 1`` (the centred intercept column)."""
        if int(n_features) != self.centre.size:
            raise ValueError(f"{n_features} features but the centre has {self.centre.size}")
        return int(n_features) + 1

    def check_targets(self, y: np.ndarray) -> np.ndarray:
        """The base loss's target check."""
        return self.base.check_targets(y)

    def per_example_loss(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Per-example loss at ``v = theta`` (equal to ``base``'s at :meth:`to_base`)."""
        self._check_X(X)
        return self.base.per_example_loss(self.to_base(theta), X, y)

    def margin_model(self) -> MarginModel:
        r""":math:`z = \langle v_w, x - c\rangle + s v_b` with the base loss's :math:`\phi`.

        Behind :class:`~noisygd.oracles.array.ArrayOracle` the declared ``row_norm_bound``
        :math:`R_c` bounds the *centred* rows, and the per-row map is the projection onto
        the ball of radius :math:`R_c` around ``c``:
        :math:`x \mapsto c + \min(1, R_c/\lVert x - c\rVert)(x - c)` (public ``c``, so the
        map is free under DP).
        """
        return MarginModel(loss=self.base.loss, residual=self.base.residual,
                           centre=self.centre if np.any(self.centre) else None,
                           intercept_scale=self.intercept_scale,
                           residual_bound=self.base.residual_bound(),
                           compiled_residual=self.base.compiled_residual(),
                           feature_scale=self.feature_scale)

    def loss_at_zero_bound(self) -> float | None:
        """The base loss's bound: ``v = 0`` is ``theta = 0`` (every margin is 0)."""
        return self.base.loss_at_zero_bound()

    def optimum_norm_bound(self) -> float | None:
        r""":math:`\lVert v^*\rVert \le \sqrt{2F_0/\lambda}` when ``l2 > 0`` and
        :math:`F'(0) \le F_0` for every dataset (as :meth:`GLMObjective.optimum_norm_bound`)."""
        f0 = self.loss_at_zero_bound()
        if f0 is None or self.l2 <= 0:
            return None
        return math.sqrt(2.0 * f0 / self.l2)

    def _centred_row_norms(self, X: np.ndarray) -> np.ndarray:
        r""":math:`\lVert x'_i\rVert = (\lVert f\odot(x_i - c)\rVert^2 + s^2)^{1/2}`."""
        return augmented_row_norms(X, self.centre, self.intercept_scale, self.feature_scale)

    def clipped_gradient_sum(
        self, theta: np.ndarray, X: np.ndarray, y: np.ndarray, clip: float | None
    ) -> np.ndarray:
        r"""Clipped gradient sum :math:`\sum_i \mathrm{clip}_C(r_i x'_i)`.

        With :math:`r_i = \phi'(\langle v, x'_i\rangle, y_i)`, clipping scales :math:`r_i`
        to at most :math:`C/\lVert x'_i\rVert` in absolute value, as in
        :meth:`GLMObjective.clipped_gradient_sum`.
        """
        self._check_X(X)
        base = self.base
        r = base.residual(base.margins(self.to_base(theta), X), y)
        if clip is not None:
            bound = clip / self._centred_row_norms(X)
            r = np.clip(r, -bound, bound)
        g = np.asarray(X.T @ r).ravel() if sp.issparse(X) else r @ X
        total = float(r.sum())
        g = g - self.centre * total
        if self.feature_scale is not None:
            g = g * self.feature_scale
        return np.append(g, self.intercept_scale * total)

    def constants(self, row_norm_bound: float) -> ObjectiveConstants:
        r"""Constants for centred rows with :math:`\lVert x - c\rVert \le R_c` = ``row_norm_bound``.

        The centred row :math:`x'` has norm at most :math:`\sqrt{R_c^2 + s^2}`; ``L`` and
        :math:`\beta` are the base loss's for that bound; strong convexity ``l2`` (the
        penalty in ``v``).
        """
        R = check_positive("row_norm_bound", row_norm_bound)
        lipschitz, smoothness = self.base.data_constants(math.hypot(R, self.intercept_scale))
        return ObjectiveConstants(lipschitz=lipschitz, smoothness=smoothness,
                                  strong_convexity=self.l2, convex=True, row_norm_bound=R)

    def __repr__(self) -> str:
        scaled = "" if self.feature_scale is None else ", feature_scale=<given>"
        return (f"CentredGLM({self.base!r}, centre=<{self.centre.size} values>, "
                f"intercept_scale={self.intercept_scale!r}{scaled})")
