r"""Generalised linear model objectives: logistic, Huber and squared loss.

For a linear model with parameters :math:`\theta = [w, b]` (intercept last when
``fit_intercept``) and augmented rows :math:`\tilde x_i = [x_i, 1]`, every loss
here is :math:`\ell(\theta; x_i, y_i) = \phi(\tilde x_i^\top \theta, y_i)`, so the
per-example gradient is

.. math::

    \nabla \ell(\theta; x_i, y_i) = r_i \tilde x_i, \qquad
    r_i = \phi'(\tilde x_i^\top \theta, y_i),

with norm :math:`|r_i| \lVert \tilde x_i \rVert`. Clipping to norm ``C`` is a
rescaling of the scalar :math:`r_i`, i.e. clipping :math:`r_i` to
:math:`[-C/\lVert \tilde x_i\rVert, C/\lVert \tilde x_i\rVert]`, and the clipped
sum of Lecture 12, equation (12.1) is
:math:`\tilde X^\top \mathrm{clip}(r)`: two matrix-vector products, no
``(n, p)`` per-example matrix and no stacked column of ones.

The objective is :math:`F(\theta) = \frac1n\sum_i \ell_i(\theta)
+ \frac{\mu}{2}\lVert\theta\rVert^2` where the regulariser **includes the
intercept**. This is a deliberate choice: it makes ``F`` exactly
``mu``-strongly convex and bounded below in every coordinate, which the
strongly convex bound of section 12.2.4 and the calibration of the planner need.
(scikit-learn's ``LogisticRegression`` leaves the intercept unregularised; with a
small ``mu`` the difference is negligible.)

Constants (``ObjectiveConstants``) for rows with :math:`\lVert x\rVert \le B`,
with :math:`\tilde B = \sqrt{B^2 + 1}` when ``fit_intercept`` (else ``B``):

========  ==========================================  =================
loss      Lipschitz ``L`` (data term)                 smoothness beta
========  ==========================================  =================
logistic  :math:`\tilde B` (since :math:`|r|\le 1`)    :math:`\tilde B^2/4`
Huber     :math:`\delta \tilde B` (:math:`|r|\le\delta`) :math:`\tilde B^2`
squared   :math:`(\tilde B R + Y)\tilde B` if radius   :math:`\tilde B^2`
          ``R`` and target bound ``Y`` given, else
          ``None`` (clipping gives the sensitivity)
========  ==========================================  =================

and strong convexity ``mu`` (= ``l2``).
"""

from __future__ import annotations

import math
from abc import abstractmethod

import numpy as np
import scipy.sparse as sp

from noisygd._checks import check_bool, check_nonnegative, check_positive, check_scale
from noisygd.objectives.base import MarginModel, Objective, ObjectiveConstants

__all__ = ["GLMObjective", "HuberLoss", "LogisticLoss", "SquaredLoss"]


class GLMObjective(Objective):
    r"""Shared machinery of linear-model losses :math:`\phi(\tilde x^\top\theta, y)`.

    Subclasses implement :meth:`loss` (:math:`\phi`) and :meth:`residual`
    (:math:`\phi' = \partial\phi/\partial z`), :meth:`check_targets` and
    :meth:`data_constants`.

    Parameters
    ----------
    l2 : float, default=0.0
        ``mu`` in :math:`\frac{\mu}{2}\lVert\theta\rVert^2` (intercept included).
    fit_intercept : bool, default=True
    radius : float or None, default=None
        If given, :meth:`project` projects onto the L2 ball of this radius.
    """

    supports_sparse = True  # X may be a scipy.sparse matrix (CSR preferred)
    #: Whether :math:`\phi` is quadratic in the margin (least squares).
    quadratic_loss = False

    def __init__(
        self, l2: float = 0.0, fit_intercept: bool = True, radius: float | None = None
    ) -> None:
        self.l2 = check_nonnegative("l2", l2)
        self.fit_intercept = check_bool("fit_intercept", fit_intercept)
        self.radius = None if radius is None else check_positive("radius", radius)

    # --- to implement -------------------------------------------------------
    @abstractmethod
    def loss(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        r""":math:`\phi(z, y)` elementwise, for margins ``z`` and checked targets ``y``."""

    @abstractmethod
    def residual(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        r""":math:`\phi'(z, y) = \partial\phi/\partial z` elementwise."""

    @abstractmethod
    def data_constants(self, bt: float) -> tuple[float | None, float]:
        r"""``(L, beta)`` of the data term for rows whose augmented norm is at most ``bt``.

        ``bt`` bounds :math:`\lVert\tilde x\rVert` (the row with its constant column, as
        the gradient sees it); ``L`` is ``None`` when the loss cannot state it.
        """

    # --- helpers ------------------------------------------------------------
    def n_params(self, n_features: int) -> int:
        """``n_features + 1`` with an intercept, else ``n_features``."""
        return int(n_features) + int(self.fit_intercept)

    def margin_model(self) -> MarginModel:
        """``z = <w, x> + b`` (``intercept_scale`` 1.0, or None without an intercept)."""
        return MarginModel(loss=self.loss, residual=self.residual, centre=None,
                           intercept_scale=1.0 if self.fit_intercept else None,
                           residual_bound=self.residual_bound(),
                           compiled_residual=self.compiled_residual())

    def residual_bound(self) -> float | None:
        """A bound on :math:`|\\phi'|` that holds in floating point (None: unbounded)."""
        return None

    def compiled_residual(self) -> tuple[str, float] | None:
        """This loss's :math:`\\phi'` as the compiled margin kernel names it, or None (see
        :attr:`~noisygd.objectives.base.MarginModel.compiled_residual`)."""
        return None

    def _check_theta(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        theta = np.asarray(theta, dtype=float)
        p = self.n_params(X.shape[1])
        if theta.shape != (p,):
            raise ValueError(f"theta must have shape ({p},) for X with {X.shape[1]} columns, "
                             f"got {theta.shape}")
        return theta

    def margins(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        r""":math:`\tilde X\theta = Xw + b`, without stacking a column of ones."""
        if self.fit_intercept:
            return X @ theta[:-1] + theta[-1]
        return X @ theta

    def _xt_dot(self, X: np.ndarray, r: np.ndarray) -> np.ndarray:
        r""":math:`\tilde X^\top r = [X^\top r, \sum_i r_i]` (dense or scipy.sparse ``X``)."""
        g = np.asarray(X.T @ r).ravel() if sp.issparse(X) else r @ X
        if self.fit_intercept:
            return np.append(g, r.sum())
        return g

    # --- Objective protocol -------------------------------------------------
    def per_example_loss(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Vector of :math:`\\phi(\\tilde x_i^\\top\\theta, y_i)`, shape ``(n,)``."""
        theta = self._check_theta(theta, X)
        return self.loss(self.margins(theta, X), y)

    def residuals(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        r"""Per-example :math:`r_i = \phi'(\tilde x_i^\top\theta, y_i)`."""
        return self.residual(self.margins(theta, X), y)

    def clipped_gradient_sum(
        self, theta: np.ndarray, X: np.ndarray, y: np.ndarray, clip: float | None
    ) -> np.ndarray:
        r""":math:`\sum_i \mathrm{clip}_C(r_i\tilde x_i) = \tilde X^\top
        (r \odot \min(1, C / (|r| \odot \lVert\tilde x\rVert)))`.

        Equivalently ``r`` is clipped entrywise to
        :math:`\pm C/\lVert\tilde x_i\rVert`. ``clip=None`` gives the unclipped
        sum. ``y`` must already be checked (see :meth:`check_targets`).
        """
        r = self.residual(self.margins(theta, X), y)
        if clip is not None:
            if sp.issparse(X):
                sq = np.asarray(X.multiply(X).sum(axis=1), dtype=float).ravel()
            else:
                sq = np.einsum("ij,ij->i", X, X)
            row_norms = np.sqrt(sq + 1.0) if self.fit_intercept else np.sqrt(sq)
            with np.errstate(divide="ignore"):
                bound = clip / row_norms  # +inf for an all-zero row without intercept
            r = np.clip(r, -bound, bound)
        return self._xt_dot(X, r)

    def constants(self, row_norm_bound: float) -> ObjectiveConstants:
        """Constants for rows with ``||x|| <= row_norm_bound`` (table in the module doc)."""
        B = check_positive("row_norm_bound", row_norm_bound)
        bt = math.sqrt(B * B + 1.0) if self.fit_intercept else B
        lipschitz, smoothness = self.data_constants(bt)
        return ObjectiveConstants(
            lipschitz=lipschitz,
            smoothness=smoothness,
            strong_convexity=self.l2,
            convex=True,
            row_norm_bound=B,
        )

    def loss_at_zero_bound(self) -> float | None:
        r"""A data-independent upper bound on :math:`F(0)`, or None.

        With it, :math:`\frac{\mu}{2}\lVert\theta^*\rVert^2 \le F(\theta^*) \le F(0)`
        bounds the optimum's norm publicly (see :meth:`optimum_norm_bound`).
        """
        return None

    def optimum_norm_bound(self) -> float | None:
        r"""Public bound on :math:`\lVert\theta^*\rVert` (the minimiser of ``F``), or None.

        The radius if there is one; else, when ``l2 > 0`` and ``F(0) <= F0``
        for every dataset, :math:`\sqrt{2F_0/\mu}` (from
        :math:`\frac\mu2\lVert\theta^*\rVert^2 \le F(\theta^*) \le F(0)`, the data
        term being non-negative).
        """
        if self.radius is not None:
            return self.radius
        f0 = self.loss_at_zero_bound()
        if f0 is None or self.l2 <= 0:
            return None
        return math.sqrt(2.0 * f0 / self.l2)

    def _check_real_targets(self, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
        if not np.issubdtype(y.dtype, np.number) or np.issubdtype(y.dtype, np.complexfloating):
            raise ValueError(f"y must hold real numbers, got dtype {y.dtype}")
        y = y.astype(float, copy=False)
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite values")
        return y

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(l2={self.l2!r}, fit_intercept={self.fit_intercept!r}, "
                f"radius={self.radius!r})")


class LogisticLoss(GLMObjective):
    r"""Logistic loss :math:`\log(1 + e^{-y z})`, labels :math:`y \in \{-1, +1\}`.

    :math:`\phi'(z, y) = -y\,\sigma(-yz)` with :math:`|\phi'| \le 1` and
    :math:`\phi'' = \sigma(z)(1-\sigma(z)) \le 1/4`, hence
    :math:`L = \tilde B`, :math:`\beta = \tilde B^2/4`.
    Labels in {0, 1} are accepted and mapped to {-1, +1} by :meth:`check_targets`.
    """

    def loss(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.logaddexp(0.0, -y * z)

    def residual(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        # -y * sigmoid(-y z), written with tanh: sigmoid(u) = (1 + tanh(u/2)) / 2
        # (numerically stable for all z, no overflow warnings). One new array, updated in
        # place (the oracle's hot loop): every product by y = +-1 or 0.5 is exact, so this is
        # bit for bit -0.5 * y * (1 - tanh(0.5 * y * z)).
        t = np.multiply(y, z)
        t *= 0.5
        np.tanh(t, out=t)
        np.subtract(1.0, t, out=t)
        t *= y
        t *= -0.5
        return t

    def data_constants(self, bt: float) -> tuple[float | None, float]:
        return bt, bt * bt / 4.0

    def residual_bound(self) -> float:
        """1: ``0.5 * (1 - tanh(.))`` is in [0, 1] exactly in floating point."""
        return 1.0

    @staticmethod
    def correct_class_residual_bound() -> float:
        r""":math:`1/2`: the largest :math:`|\phi'(z, y)| = \sigma(-yz)` over margins that
        classify the row correctly or not at all (:math:`yz \ge 0`, so :math:`\sigma(-yz)
        \le \sigma(0)`), attained at :math:`z = 0`, hence by every row at
        :math:`\theta = 0`. The binary counterpart of
        :func:`noisygd.objectives.multinomial.correct_class_residual_bound` (whose
        :math:`\sqrt{1 - 1/K}` is the residual's norm over the ``K`` margins of the softmax
        parametrisation: for ``K = 2`` the two margins' residuals are
        :math:`\pm\sigma(-yz)`, norm :math:`\sqrt2\,\sigma(-yz)`)."""
        return 0.5

    def compiled_residual(self) -> tuple[str, float]:
        """``("logistic", 0.0)``: the kernel computes :math:`-y/(1 + e^{yz})`, the same
        :math:`-y\\sigma(-yz)` (equal up to rounding; also at most 1 in absolute value)."""
        return ("logistic", 0.0)

    def loss_at_zero_bound(self) -> float:
        """``F(0) = log 2`` for every dataset."""
        return math.log(2.0)

    def check_targets(self, y: np.ndarray) -> np.ndarray:
        """Return labels in {-1, +1}; accepts {-1, +1} or {0, 1} (or bools).

        Labels come back as floats, except ``int8`` labels already in {-1, +1}, which come
        back as they are: one byte a row, the form the oracles' compiled kernel reads (an
        estimator's binary targets are made so; arithmetic with them promotes to float).
        """
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
        if y.dtype == bool:
            return np.where(y, 1.0, -1.0)
        if not np.issubdtype(y.dtype, np.number):
            raise ValueError(f"logistic labels must be numeric in {{-1, +1}} or {{0, 1}}, "
                             f"got dtype {y.dtype}")
        values = set(np.unique(y).tolist())
        if values <= {-1, 1}:
            if y.dtype == np.int8:
                return y  # the oracle keeps it: no copy, an eighth of float64's bytes
            return y.astype(float, copy=False)  # the oracle keeps it: no second copy
        if values <= {0, 1}:
            return np.where(y == 1, 1.0, -1.0)
        raise ValueError("logistic labels must all be in {-1, +1} or all in {0, 1}; "
                         "other values were found")


class HuberLoss(GLMObjective):
    r"""Huber regression loss with threshold :math:`\delta` on :math:`e = z - y`.

    :math:`\phi = e^2/2` for :math:`|e|\le\delta`, else
    :math:`\delta(|e| - \delta/2)`; :math:`\phi' = \mathrm{clip}(e, -\delta, \delta)`,
    :math:`\phi'' \le 1`: :math:`L = \delta\tilde B`, :math:`\beta = \tilde B^2`.

    Parameters
    ----------
    threshold : float, default=1.0
        :math:`\delta > 0`.
    l2, fit_intercept, radius
        See :class:`GLMObjective`.
    """

    def __init__(
        self,
        threshold: float = 1.0,
        l2: float = 0.0,
        fit_intercept: bool = True,
        radius: float | None = None,
    ) -> None:
        super().__init__(l2=l2, fit_intercept=fit_intercept, radius=radius)
        self.threshold = check_positive("threshold", threshold)

    def loss(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        a = np.abs(z - y)
        d = self.threshold
        return np.where(a <= d, 0.5 * a * a, d * (a - 0.5 * d))

    def residual(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.clip(z - y, -self.threshold, self.threshold)

    def residual_bound(self) -> float:
        """The threshold: the residual is clipped to it exactly."""
        return float(self.threshold)

    def compiled_residual(self) -> tuple[str, float]:
        """``("huber", threshold)``: :math:`\\mathrm{clip}(z - y, \\pm\\delta)`."""
        return ("huber", float(self.threshold))

    def data_constants(self, bt: float) -> tuple[float | None, float]:
        return self.threshold * bt, bt * bt

    def check_targets(self, y: np.ndarray) -> np.ndarray:
        """Finite real targets, returned as floats."""
        return self._check_real_targets(y)

    def __repr__(self) -> str:
        return f"HuberLoss(threshold={self.threshold!r}, " + super().__repr__().split("(", 1)[1]


class SquaredLoss(GLMObjective):
    r"""Squared loss :math:`\frac12(z - y)^2`.

    :math:`\phi' = z - y` is unbounded unless the parameters lie in a ball of
    radius ``R`` and :math:`|y|\le Y`; then
    :math:`|\phi'| \le \tilde B R + Y` and :math:`L = (\tilde B R + Y)\tilde B`.
    :math:`\beta = \tilde B^2` always. Without ``radius`` and ``target_bound``
    ``L`` is ``None`` and only clipping bounds the sensitivity.

    Parameters
    ----------
    l2, fit_intercept, radius
        See :class:`GLMObjective`.
    target_bound : float or None, default=None
        Public bound ``Y`` on :math:`|y|`; :meth:`check_targets` enforces it.
    """

    #: The loss is quadratic in the margin (:math:`\phi'' = 1`): the NoisyGD planner releases
    #: a tail average (:mod:`noisygd.planning`).
    quadratic_loss = True

    def __init__(
        self,
        l2: float = 0.0,
        fit_intercept: bool = True,
        radius: float | None = None,
        target_bound: float | None = None,
    ) -> None:
        super().__init__(l2=l2, fit_intercept=fit_intercept, radius=radius)
        self.target_bound = None if target_bound is None else check_scale(
            "target_bound", target_bound)

    def loss(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        e = z - y
        return 0.5 * e * e

    def residual(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return z - y

    def compiled_residual(self) -> tuple[str, float]:
        """``("squared", 0.0)``: :math:`z - y`."""
        return ("squared", 0.0)

    def data_constants(self, bt: float) -> tuple[float | None, float]:
        if self.radius is None or self.target_bound is None:
            return None, bt * bt
        return (bt * self.radius + self.target_bound) * bt, bt * bt

    def loss_at_zero_bound(self) -> float | None:
        """``F(0) <= Y^2/2`` when a target bound ``Y`` is declared."""
        return None if self.target_bound is None else 0.5 * self.target_bound**2

    def check_targets(self, y: np.ndarray) -> np.ndarray:
        """Finite real targets; with ``target_bound`` also ``|y| <= Y``."""
        y = self._check_real_targets(y)
        if self.target_bound is not None and y.size and np.max(np.abs(y)) > self.target_bound:
            raise ValueError(f"|y| exceeds the declared target_bound={self.target_bound}")
        return y

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", target_bound={self.target_bound!r})"
