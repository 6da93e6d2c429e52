r"""Multinomial (softmax) logistic regression: one loss over the full ``K x p`` matrix.

For ``K`` classes with labels :math:`y \in \{0, \dots, K-1\}`, parameters
:math:`\Theta \in \mathbb R^{K\times p}` and the augmented row
:math:`\tilde x = [f\odot(x - c),\ \kappa] \in \mathbb R^p` (``p = d + 1``; ``c`` a public
centre, zero by default, :math:`f > 0` a public per-feature scale, all ones by default, and
:math:`\kappa` the public intercept scale, 1 by default; without an intercept
:math:`\tilde x = f\odot x` and ``p = d``), the margins and the loss are

.. math::

    z = \Theta\tilde x \in \mathbb R^K, \qquad
    \ell(\Theta; x, y) = \log\sum_{k=1}^K e^{z_k} - z_y ,

and the objective is :math:`F(\Theta) = \frac1n\sum_i \ell(\Theta; x_i, y_i)
+ \frac\mu2\lVert\Theta\rVert_F^2`, the penalty taken **in these coordinates** (on every
entry, the intercept column included, as :mod:`noisygd.objectives.glm` does). The original
coordinates are ``coef = W diag(f)`` and ``intercept = kappa v - coef c`` for
:math:`\Theta = [W, v]` (:meth:`MultinomialLogisticLoss.coefficients`): the same model, so
without a penalty the same minimum; with one, the penalty is the one written above (on
:math:`W`, i.e. on ``coef / f``: a diagonal preconditioner, as
:class:`~noisygd.objectives.centred.CentredGLM`'s ``feature_scale``).

Parameter layout: ``theta`` is :math:`\Theta` flattened in **row-major (C) order**,
``theta.reshape(K, p)``; row ``k`` is :math:`[w_k, v_k]` (class ``k``'s weights, then its
intercept parameter).

Per-example gradient (with :math:`\pi = \mathrm{softmax}(z)` and :math:`e_y` the ``y``-th
unit vector) and its Frobenius norm:

.. math::

    \nabla_\Theta\ell = (\pi - e_y)\,\tilde x^\top, \qquad
    \lVert\nabla_\Theta\ell\rVert_F = \lVert\pi - e_y\rVert_2\,\lVert\tilde x\rVert_2 ,

a rank-one matrix, so clipping it to norm ``C`` is scaling the residual ``K``-vector
:math:`r = \pi - e_y` by :math:`\min(1, C/(\lVert r\rVert\,\lVert\tilde x\rVert))`, and the
clipped sum of Lecture 12, eq. (12.1) is :math:`R^\top\tilde X` for the ``(n, K)`` matrix
``R`` of clipped residuals: no ``(n, K, p)`` tensor.

Constants, for rows with :math:`\lVert f\odot(x - c)\rVert \le B` and
:math:`\tilde B = \sqrt{B^2 + \kappa^2}` (``B`` without an intercept):

* **Lipschitz** :math:`L = \sqrt2\,\tilde B`. Since :math:`\sum_{k\ne y}\pi_k = 1 - \pi_y`,
  :math:`\lVert\pi - e_y\rVert^2 = (1-\pi_y)^2 + \sum_{k\ne y}\pi_k^2
  \le 2(1-\pi_y)^2 \le 2`; the supremum is approached as :math:`\pi` puts all its mass on
  one wrong class.
* **Smoothness** :math:`\beta = \tilde B^2/2`. The Hessian is
  :math:`\nabla^2\ell = (\mathrm{diag}\,\pi - \pi\pi^\top)\otimes\tilde x\tilde x^\top`, with
  operator norm :math:`\lambda_{\max}(\mathrm{diag}\,\pi - \pi\pi^\top)\lVert\tilde x\rVert^2`.
  For a unit :math:`u`, :math:`u^\top(\mathrm{diag}\,\pi - \pi\pi^\top)u = \mathrm{Var}(U)`
  for :math:`U = u_k` with probability :math:`\pi_k`; a variable with values in
  :math:`[a, b]` has variance at most :math:`(b-a)^2/4` (Popoviciu's inequality), and
  :math:`(u_i - u_j)^2 \le 2(u_i^2 + u_j^2) \le 2`, so the variance is at most ``1/2``. It
  is attained (``K >= 2``): :math:`\pi = (\frac12, \frac12, 0, \dots)`,
  :math:`u = (1, -1, 0, \dots)/\sqrt2`. (For ``K = 2`` this is the redundant two-row
  parametrisation of binary logistic regression, whose one-row form has
  :math:`\tilde B^2/4`.)
* **Strong convexity** ``mu`` (= ``l2``); the data term is convex but not strongly convex
  (adding one vector to every row of :math:`\Theta` leaves it unchanged).
* :math:`F(0) = \log K` for every dataset (:meth:`MultinomialLogisticLoss.loss_at_zero_bound`),
  hence :math:`\lVert\Theta^*\rVert_F \le \sqrt{2\log K/\mu}` when ``mu > 0``.

**The default clipping norm** :math:`C_K = \sqrt{1 - 1/K}\,\tilde B`
(:meth:`MultinomialLogisticLoss.default_clip`, below the Lipschitz constant
:math:`\sqrt2\tilde B`). *Lemma.* If :math:`y` is a most probable class
(:math:`\pi_y = \max_k\pi_k`, the row is classified correctly, ties included), then

.. math::

    \lVert\pi - e_y\rVert_2^2 = 1 - 2\pi_y + \lVert\pi\rVert_2^2
    \le 1 - 2\pi_y + \pi_y\textstyle\sum_k\pi_k = 1 - \pi_y \le 1 - \frac1K ,

using :math:`\lVert\pi\rVert^2 = \sum_k\pi_k^2 \le \max_k\pi_k\sum_k\pi_k` and
:math:`\pi_y \ge 1/K`; equality holds at :math:`\pi = (1/K, \dots, 1/K)`, i.e. at the
start :math:`\Theta = 0` of every run. Hence clipping the per-example gradient at
:math:`C_K` (i) never changes the gradient at :math:`\Theta = 0` nor, anywhere, that of
a row with :math:`\lVert\tilde x\rVert \le \tilde B` that the model classifies
correctly; (ii) otherwise only rescales it along its own direction by
:math:`\min(1, C_K/\lVert\nabla\ell\rVert) \ge \sqrt{1-1/K}/\sqrt2 \ge 1/2`
(the Lipschitz bound), so the clipped sum is :math:`\sum_i w_i\nabla\ell_i` with weights
:math:`w_i \in [\sqrt{(K-1)/(2K)}, 1]`, equal to 1 on the correctly classified rows.
:math:`C_K` is the smallest norm with property (i): the sharp constant of the lemma. It
lowers the sensitivity, hence the noise, by the factor
:math:`\sqrt{(1 - 1/K)/2}` (0.67 for ``K = 10``) relative to the Lipschitz clip, which
covers only the confidently *misclassified* rows in addition
(:math:`\lVert\pi - e_y\rVert \to \sqrt2` needs :math:`\pi` concentrated on a wrong
class). For ``K = 2`` this is the binary logistic loss's own residual bound in the
redundant two-row parametrisation (:math:`\lVert\pi - e_y\rVert = \sqrt2|\pi_1 - [y=1]|`,
and a correctly classified row has :math:`|\pi_1 - [y=1]| \le 1/2`).

:class:`~noisygd.oracles.array.ArrayOracle` evaluates the loss through
:meth:`MultinomialLogisticLoss.margin_model` (a :class:`MultiMarginModel` with ``K``
outputs): margins :math:`Z_b = X_b W^\top` for each block of rows, the residual matrix,
its rows clipped, and :math:`R_b^\top X_b`, one read of ``X`` per call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from noisygd._checks import check_bool, check_nonnegative, check_positive, check_positive_int
from noisygd.objectives.base import (
    MarginModel,
    Objective,
    ObjectiveConstants,
    augmented_row_norms,
    check_centre,
    check_feature_scale,
)

__all__ = [
    "RESIDUAL_NORM_BOUND",
    "MultiMarginModel",
    "MultinomialLogisticLoss",
    "correct_class_residual_bound",
    "softmax",
    "softmax_loss",
    "softmax_residual",
]

#: :math:`\sup\lVert\pi - e_y\rVert_2 = \sqrt2` (module doc): the residual bound behind ``L``.
RESIDUAL_NORM_BOUND = math.sqrt(2.0)


def correct_class_residual_bound(n_classes: int) -> float:
    r""":math:`\sqrt{1 - 1/K}`: the largest :math:`\lVert\pi - e_y\rVert_2` over
    probability vectors :math:`\pi` of which :math:`y` is a most probable class.

    The bound is the lemma of the module doc (:math:`\lVert\pi - e_y\rVert^2 = 1 -
    2\pi_y + \lVert\pi\rVert^2 \le 1 - \pi_y \le 1 - 1/K`), attained at the uniform
    :math:`\pi` (margins :math:`z = 0`).

    Parameters
    ----------
    n_classes : int
        ``K >= 2``.

    Returns
    -------
    float
    """
    K = check_positive_int("n_classes", n_classes)
    if K < 2:
        raise ValueError(f"n_classes must be at least 2, got {K}")
    return math.sqrt(1.0 - 1.0 / K)


@dataclass(frozen=True)
class MultiMarginModel(MarginModel):
    r"""A loss of ``K`` margins :math:`z = W(f\odot(x - c)) + \kappa v \in \mathbb R^K`.

    The ``K``-output form of :class:`~noisygd.objectives.base.MarginModel`: parameters
    :math:`\Theta = [W, v]` (``K`` rows, flattened row-major), per-example gradient
    :math:`r\,[f\odot(x - c), \kappa]^\top` with the residual ``K``-vector
    :math:`r = \partial\phi/\partial z`, so clipping the gradient to Frobenius norm ``C`` is
    scaling ``r`` by :math:`\min(1, C/(\lVert r\rVert\lVert[f\odot(x - c),
    \kappa]\rVert))`, :math:`f` the ``feature_scale`` (all ones when None).
    A consumer that handles scalar margins only must check for this class (it is a
    declared type, not a capability to probe).

    Attributes
    ----------
    loss : callable ``(Z, y) -> ndarray (m,)``
        :math:`\phi(z_i, y_i)` for each row of the ``(m, K)`` margins ``Z``.
    residual : callable ``(Z, y) -> ndarray (m, K)``
        :math:`\partial\phi/\partial z` for each row (a new array the caller may modify).
    centre, intercept_scale
        As in :class:`~noisygd.objectives.base.MarginModel`.
    n_outputs : int
        ``K``, the number of margins (rows of :math:`\Theta`).
    softmax : bool, default=False
        Whether ``loss`` is the softmax cross-entropy (:func:`softmax_loss`): its curvature
        :math:`(\mathrm{diag}\,\pi - \pi\pi^\top)\otimes\tilde x\tilde x^\top` is then
        known, and :class:`~noisygd.oracles.array.ArrayOracle` serves its curvature sums and
        self-concordance constant (what ``method="newton"`` needs).
    """

    n_outputs: int = 2
    softmax: bool = False


def _check_margins(Z: np.ndarray) -> np.ndarray:
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2:
        raise ValueError(f"margins must be a 2-D (rows, classes) array, got shape {Z.shape}")
    return Z


def _shifted_exp(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(M, E, S)``: row max, :math:`e^{Z - M}` and its row sums (no overflow; ``S >= 1``)."""
    M = Z.max(axis=1)
    E = np.exp(Z - M[:, None])
    return M, E, E.sum(axis=1)


def softmax(Z: np.ndarray) -> np.ndarray:
    r"""Row-wise :math:`\mathrm{softmax}(z)_k = e^{z_k}/\sum_j e^{z_j}` (overflow-free).

    Parameters
    ----------
    Z : ndarray of shape (m, K)

    Returns
    -------
    ndarray of shape (m, K)
        Rows of non-negative entries summing to 1.
    """
    _, E, S = _shifted_exp(_check_margins(Z))
    return E / S[:, None]


def softmax_loss(Z: np.ndarray, y: np.ndarray) -> np.ndarray:
    r""":math:`\log\sum_k e^{z_{ik}} - z_{i y_i}` for each row (computed as
    :math:`M_i + \log\sum_k e^{z_{ik} - M_i} - z_{iy_i}`, :math:`M_i = \max_k z_{ik}`)."""
    Z = _check_margins(Z)
    M, _, S = _shifted_exp(Z)
    return (M - Z[np.arange(Z.shape[0]), y]) + np.log(S)


def softmax_residual(Z: np.ndarray, y: np.ndarray) -> np.ndarray:
    r""":math:`r_i = \pi_i - e_{y_i}`, shape ``(m, K)``.

    The true-class entry is formed as :math:`-\sum_{k\ne y_i}\pi_{ik}` (not
    :math:`\pi_{iy_i} - 1`), accurate to relative rounding even when :math:`\pi_{iy_i}`
    is within an ulp of 1; every row sums to 0 up to rounding.
    """
    Z = _check_margins(Z)
    _, E, S = _shifted_exp(Z)
    R = E / S[:, None]
    idx = np.arange(Z.shape[0])
    R[idx, y] = 0.0
    R[idx, y] = -R.sum(axis=1)
    return R


class MultinomialLogisticLoss(Objective):
    r"""Softmax cross-entropy over ``K`` classes (module doc), labels ``0..K-1``.

    Parameters
    ----------
    n_classes : int
        ``K >= 2`` (public: the declared label set's size).
    l2 : float, default=0.0
        ``mu`` in :math:`\frac\mu2\lVert\Theta\rVert_F^2`, every entry of the optimised
        :math:`\Theta` (intercept column included).
    fit_intercept : bool, default=True
    intercept_scale : float, default=1.0
        Public :math:`\kappa > 0`, the constant column of :math:`\tilde x` (with an intercept).
    centre : array_like of shape (n_features,), optional
        Public centre ``c`` (needs ``fit_intercept``, which absorbs the shift). Behind
        :class:`~noisygd.oracles.array.ArrayOracle` the declared ``row_norm_bound`` then
        bounds the *centred* rows :math:`\lVert x - c\rVert`.
    radius : float, optional
        Radius of the Frobenius ball :meth:`project` projects onto.
    feature_scale : array_like of shape (n_features,), optional
        Public positive column weights :math:`f` (a diagonal preconditioner): the rows are
        :math:`[f\odot(x - c), \kappa]` and ``coef = W diag(f)`` (module doc). Behind
        :class:`~noisygd.oracles.array.ArrayOracle` the declared ``row_norm_bound`` then
        bounds :math:`\lVert f\odot(x - c)\rVert`.

    Examples
    --------
    >>> import numpy as np
    >>> from noisygd.objectives import MultinomialLogisticLoss
    >>> obj = MultinomialLogisticLoss(3, l2=0.1)
    >>> X = np.array([[0.5, -0.2], [0.1, 0.3]]); y = np.array([0, 2])
    >>> bool(np.allclose(obj.per_example_loss(np.zeros(9), X, y), np.log(3)))
    True
    >>> k = obj.constants(1.0)  # B = 1, kappa = 1: L = sqrt(2) sqrt(2), beta = 2 / 2
    >>> round(k.lipschitz, 12), round(k.smoothness, 12)
    (2.0, 1.0)
    """

    supports_sparse = True

    def __init__(
        self,
        n_classes: int,
        l2: float = 0.0,
        fit_intercept: bool = True,
        intercept_scale: float = 1.0,
        centre: ArrayLike | None = None,
        radius: float | None = None,
        feature_scale: ArrayLike | None = None,
    ) -> None:
        K = check_positive_int("n_classes", n_classes)
        if K < 2:
            raise ValueError(f"n_classes must be at least 2, got {K}")
        self.n_classes = K
        self.l2 = check_nonnegative("l2", l2)
        self.fit_intercept = check_bool("fit_intercept", fit_intercept)
        self.intercept_scale = check_positive("intercept_scale", intercept_scale)
        if centre is None:
            self.centre: np.ndarray | None = None
        else:
            if not self.fit_intercept:
                raise ValueError("a centre needs an intercept (fit_intercept=True): the shift "
                                 "by c is absorbed into it")
            self.centre = check_centre(centre)
        self.radius = None if radius is None else check_positive("radius", radius)
        self.feature_scale: np.ndarray | None = None if feature_scale is None else (
            check_feature_scale(feature_scale,
                                None if self.centre is None else self.centre.size))

    # ---------------------------------------------------------------- layout
    def n_params(self, n_features: int) -> int:
        """``K * (n_features + 1)`` with an intercept, else ``K * n_features``."""
        d = int(n_features)
        if self.centre is not None and d != self.centre.size:
            raise ValueError(f"{d} features but the centre has {self.centre.size}")
        if self.feature_scale is not None and d != self.feature_scale.size:
            raise ValueError(f"{d} features but the feature scale has "
                             f"{self.feature_scale.size} values")
        return self.n_classes * (d + int(self.fit_intercept))

    def _matrix(self, theta: np.ndarray, n_features: int) -> np.ndarray:
        r""":math:`\Theta` = ``theta.reshape(K, p)`` (a view), after a shape check."""
        theta = np.asarray(theta, dtype=np.float64)
        p = self.n_params(n_features)
        if theta.shape != (p,):
            raise ValueError(f"theta must have shape ({p},) for {n_features} features and "
                             f"{self.n_classes} classes, got {theta.shape}")
        return theta.reshape(self.n_classes, p // self.n_classes)

    def coefficients(self, theta: ArrayLike, n_features: int) -> tuple[np.ndarray, np.ndarray]:
        r"""``(coef, intercept)`` of shapes ``(K, d)`` and ``(K,)`` in the original coordinates.

        Scores ``x @ coef.T + intercept`` equal the margins :math:`\Theta\tilde x`:
        ``coef = W diag(f)`` and ``intercept = kappa v - coef c`` (zeros without an
        intercept).
        """
        T = self._matrix(np.asarray(theta), n_features)
        d = int(n_features)
        W = self._weights(T, d)
        if not self.fit_intercept:
            return W, np.zeros(self.n_classes)
        b = self.intercept_scale * T[:, d]
        if self.centre is not None:
            b = b - W @ self.centre
        return W, b

    def from_coefficients(self, coef: ArrayLike, intercept: ArrayLike | None = None
                          ) -> np.ndarray:
        """``theta`` for ``coef`` (K, d) and ``intercept`` (K,): the inverse of
        :meth:`coefficients`."""
        W = np.asarray(coef, dtype=np.float64)
        if W.ndim != 2 or W.shape[0] != self.n_classes:
            raise ValueError(f"coef must have shape ({self.n_classes}, d), got {W.shape}")
        V = W if self.feature_scale is None else W / self.feature_scale
        if not self.fit_intercept:
            return V.ravel().copy()
        b = np.zeros(self.n_classes) if intercept is None else np.asarray(
            intercept, dtype=np.float64)
        if b.shape != (self.n_classes,):
            raise ValueError(f"intercept must have shape ({self.n_classes},), got {b.shape}")
        if self.centre is not None:
            b = b + W @ self.centre
        return np.hstack([V, (b / self.intercept_scale)[:, None]]).ravel()

    def _weights(self, T: np.ndarray, n_features: int) -> np.ndarray:
        r"""``coef`` :math:`= W\,\mathrm{diag}(f)` of :math:`\Theta` = ``T`` (``(K, p)``),
        shape ``(K, d)``, a new array: the weights on the rows as given."""
        W = T[:, :int(n_features)]
        return W.copy() if self.feature_scale is None else W * self.feature_scale

    # ---------------------------------------------------------------- model
    def margin_model(self) -> MultiMarginModel:
        r""":math:`z = W(f\odot(x - c)) + \kappa v` with :func:`softmax_loss` and
        :func:`softmax_residual` (``K`` outputs)."""
        return MultiMarginModel(
            loss=softmax_loss, residual=softmax_residual, centre=self.centre,
            intercept_scale=self.intercept_scale if self.fit_intercept else None,
            feature_scale=self.feature_scale, n_outputs=self.n_classes, softmax=True)

    def margins(self, theta: np.ndarray, X: np.ndarray | sp.sparray) -> np.ndarray:
        r""":math:`Z = \tilde X\Theta^\top`, shape ``(n, K)``, for rows ``X`` as given."""
        d = X.shape[1]
        T = self._matrix(theta, d)
        W = self._weights(T, d)
        Z = np.asarray(X @ W.T, dtype=np.float64)
        if self.centre is not None:
            Z = Z - W @ self.centre
        if self.fit_intercept:
            Z = Z + self.intercept_scale * T[:, d]
        return Z

    def predict_proba(self, theta: np.ndarray, X: np.ndarray | sp.sparray) -> np.ndarray:
        """Class probabilities :func:`softmax` of :meth:`margins`, shape ``(n, K)``."""
        return softmax(self.margins(theta, X))

    # ---------------------------------------------------------------- Objective protocol
    def check_targets(self, y: np.ndarray) -> np.ndarray:
        """Labels as ``intp`` in ``0..K-1`` (integral floats accepted; never names a label)."""
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
        if y.dtype == bool or not np.issubdtype(y.dtype, np.number) or np.issubdtype(
                y.dtype, np.complexfloating):
            raise ValueError(f"multinomial labels must be integers in 0..{self.n_classes - 1}, "
                             f"got dtype {y.dtype}")
        if np.issubdtype(y.dtype, np.integer):
            out = y.astype(np.intp, copy=False)
        else:
            with np.errstate(invalid="ignore"):
                if not np.all(np.isfinite(y)) or not np.all(y == np.round(y)):
                    raise ValueError("multinomial labels must be integers in "
                                     f"0..{self.n_classes - 1}; other values were found")
            out = y.astype(np.intp)
        if out.size and (int(out.min()) < 0 or int(out.max()) >= self.n_classes):
            raise ValueError(f"multinomial labels must be integers in 0..{self.n_classes - 1}; "
                             "other values were found")
        return out

    def per_example_loss(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Vector of :math:`\\ell(\\Theta; x_i, y_i)`, shape ``(n,)``; ``y`` checked."""
        return softmax_loss(self.margins(theta, X), y)

    def augmented_row_norms(self, X: np.ndarray | sp.sparray) -> np.ndarray:
        r""":math:`\lVert\tilde x_i\rVert = (\lVert f\odot(x_i - c)\rVert^2 +
        \kappa^2)^{1/2}` (:math:`\lVert f\odot x_i\rVert` without an intercept)."""
        return augmented_row_norms(X, self.centre,
                                   self.intercept_scale if self.fit_intercept else None,
                                   self.feature_scale)

    def clipped_gradient_sum(
        self, theta: np.ndarray, X: np.ndarray, y: np.ndarray, clip: float | None
    ) -> np.ndarray:
        r""":math:`\sum_i\mathrm{clip}_C((\pi_i - e_{y_i})\tilde x_i^\top)`, flattened row-major.

        Each residual row is scaled by
        :math:`\min(1, C/(\lVert r_i\rVert\lVert\tilde x_i\rVert))`; ``clip=None`` gives the
        unclipped sum. ``y`` must already be checked (:meth:`check_targets`).
        """
        R = softmax_residual(self.margins(theta, X), y)
        if clip is not None:
            C = check_positive("clip", clip)
            norm = np.linalg.norm(R, axis=1) * self.augmented_row_norms(X)
            with np.errstate(divide="ignore"):
                R *= np.minimum(1.0, C / norm)[:, None]  # C / 0 = inf: factor 1
        G = np.asarray(X.T @ R, dtype=np.float64).T  # (K, d)
        total = R.sum(axis=0)
        if self.centre is not None:
            G = G - np.outer(total, self.centre)
        if self.feature_scale is not None:  # the rows are f (x - c)
            G = G * self.feature_scale
        if not self.fit_intercept:
            return G.ravel()
        return np.hstack([G, (self.intercept_scale * total)[:, None]]).ravel()

    # ---------------------------------------------------------------- constants
    def data_constants(self, bt: float) -> tuple[float, float]:
        r"""``(L, beta) = (sqrt(2) bt, bt^2 / 2)`` for augmented rows of norm at most ``bt``."""
        return RESIDUAL_NORM_BOUND * bt, bt * bt / 2.0

    def augmented_bound(self, row_norm_bound: float) -> float:
        r""":math:`\tilde B = \sqrt{B^2 + \kappa^2}` (``B`` without an intercept)."""
        B = check_positive("row_norm_bound", row_norm_bound)
        return math.hypot(B, self.intercept_scale) if self.fit_intercept else B

    def constants(self, row_norm_bound: float) -> ObjectiveConstants:
        r""":math:`L = \sqrt2\tilde B`, :math:`\beta = \tilde B^2/2`, strong convexity ``mu``
        for rows with :math:`\lVert f\odot(x - c)\rVert \le B` (module doc)."""
        lipschitz, smoothness = self.data_constants(self.augmented_bound(row_norm_bound))
        return ObjectiveConstants(lipschitz=lipschitz, smoothness=smoothness,
                                  strong_convexity=self.l2, convex=True,
                                  row_norm_bound=float(row_norm_bound))

    def noise_dimension(self, n_features: int) -> int:
        r"""``(K - 1) p``: the dimension of :math:`S = \{\Theta: \mathbf 1^\top\Theta = 0\}`,
        the subspace NoisyGD's noise acts on the loss through.

        The softmax is invariant under :math:`\Theta \mapsto \Theta + \mathbf 1v^\top`
        (every margin of a row moves by :math:`v^\top\tilde x`), so the loss and the
        predicted probabilities are constant along :math:`S^\perp = \{\mathbf 1v^\top\}`
        (dimension ``p``); every per-example gradient :math:`(\pi - e_y)\tilde x^\top`,
        clipped or not, lies in :math:`S` (:math:`\mathbf 1^\top(\pi - e_y) = 0`); the
        ridge's gradient :math:`\mu\Theta` keeps :math:`S` and :math:`S^\perp` apart. So
        the :math:`S`-part of a NoisyGD run is NoisyGD in ``(K - 1) p`` dimensions with the
        projected noise, and the :math:`S^\perp`-part changes no prediction: the planner's
        ``d`` (:mod:`noisygd.solvers.noisy_gd`, "The noise dimension") is ``(K - 1) p``,
        not ``K p``. ``DPLogisticRegression`` releases :math:`P_S\Theta` (each column's
        class mean subtracted: post-processing), which has the same probabilities and
        :math:`F_\mu(P_S\Theta) \le F_\mu(\Theta)` (the loss is unchanged and
        :math:`\lVert P_S\Theta\rVert_F \le \lVert\Theta\rVert_F`), so the plan's bounds,
        counted with ``(K - 1) p``, are about the released model.

        Parameters
        ----------
        n_features : int
            ``d`` (``p = d + 1`` with an intercept).

        Returns
        -------
        int
        """
        return self.n_params(n_features) // self.n_classes * (self.n_classes - 1)

    def default_clip(self, row_norm_bound: float) -> float:
        r"""The default clipping norm :math:`C_K = \sqrt{1 - 1/K}\,\tilde B` (module doc).

        The sharp bound on :math:`\lVert\nabla_\Theta\ell\rVert_F =
        \lVert\pi - e_y\rVert\lVert\tilde x\rVert` over rows with
        :math:`\lVert x - c\rVert \le B` that the model classifies correctly
        (:func:`correct_class_residual_bound`), attained at :math:`\Theta = 0`; below the
        Lipschitz constant :math:`\sqrt2\tilde B` by the factor :math:`\sqrt{(1-1/K)/2}`.

        Parameters
        ----------
        row_norm_bound : float
            ``B``, the public bound on :math:`\lVert x - c\rVert`.

        Returns
        -------
        float
        """
        return correct_class_residual_bound(self.n_classes) * self.augmented_bound(
            row_norm_bound)

    def loss_at_zero_bound(self) -> float:
        r""":math:`F(0) = \log K` for every dataset (uniform probabilities)."""
        return math.log(self.n_classes)

    def optimum_norm_bound(self) -> float | None:
        r"""The radius if set; else :math:`\sqrt{2\log K/\mu}` when ``mu > 0``
        (:math:`\frac\mu2\lVert\Theta^*\rVert^2 \le F(\Theta^*) \le F(0) = \log K`); else None."""
        if self.radius is not None:
            return self.radius
        if self.l2 <= 0:
            return None
        return math.sqrt(2.0 * self.loss_at_zero_bound() / self.l2)

    def __repr__(self) -> str:
        centre = None if self.centre is None else f"<{self.centre.size} values>"
        scaled = "" if self.feature_scale is None else ", feature_scale=<given>"
        return (f"MultinomialLogisticLoss(n_classes={self.n_classes!r}, l2={self.l2!r}, "
                f"fit_intercept={self.fit_intercept!r}, "
                f"intercept_scale={self.intercept_scale!r}, centre={centre}, "
                f"radius={self.radius!r}{scaled})")
