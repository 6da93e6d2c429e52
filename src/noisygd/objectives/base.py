r"""The objective protocol every algorithm touches data through.

An objective is the regularised empirical risk

.. math::

    F(\theta; D) = \frac1n \sum_{i=1}^n \ell(\theta; x_i, y_i)
                   + \frac{\mu}{2} \lVert \theta \rVert^2, \qquad \theta \in C,

with ``C`` either :math:`\mathbb R^p` or an L2 ball of radius ``R``.
Algorithms never call these methods on raw arrays: they read data through a
:class:`~noisygd.oracles.base.GradientOracle`, which maps rows into the declared
domain and evaluates the objective (for linear models through its
:class:`MarginModel`, fused over row blocks).

Given a declared bound ``B`` on row norms (rows are scaled to norm <= B before
training, a per-row operation that costs no privacy), an objective states its
constants through :meth:`Objective.constants`: per-example Lipschitz constant
``L`` of the data term, per-example smoothness ``beta`` of the data term, and
the strong-convexity constant of ``F``. An objective that cannot state them
(a neural network) returns ``None`` for those entries, and algorithms whose
proofs need them refuse.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import scipy.sparse as sp


class Regime(StrEnum):
    """Which utility bound of Lecture 12, section 12.2, applies to an objective."""

    NONCONVEX_SMOOTH = "nonconvex_smooth"  # 12.2.1
    CONVEX_SMOOTH = "convex_smooth"  # 12.2.2
    CONVEX_LIPSCHITZ = "convex_lipschitz"  # 12.2.3
    STRONGLY_CONVEX = "strongly_convex"  # 12.2.4


@dataclass(frozen=True)
class ObjectiveConstants:
    """Constants an objective can state for rows with ``||x|| <= row_norm_bound``.

    Attributes
    ----------
    lipschitz : float or None
        ``L``: :math:`\\sup \\lVert \\nabla \\ell(\\theta; x, y) \\rVert` over the
        domain (per example, data term only). ``None`` if unbounded (e.g. the
        squared loss without a projection radius): clipping then provides the
        sensitivity.
    smoothness : float or None
        ``beta``: per-example smoothness of the data term ``ell``.
    strong_convexity : float
        Strong-convexity constant of ``F`` (``mu`` for a convex loss plus
        ``mu/2 ||theta||^2``); 0 when merely convex.
    convex : bool
        Whether ``ell`` is convex in ``theta``.
    row_norm_bound : float
        The bound ``B`` the constants were computed for.
    """

    lipschitz: float | None
    smoothness: float | None
    strong_convexity: float
    convex: bool
    row_norm_bound: float

    @property
    def regime(self) -> Regime:
        """The section-12.2 regime these constants put the problem in."""
        if not self.convex:
            return Regime.NONCONVEX_SMOOTH
        if self.strong_convexity > 0:
            return Regime.STRONGLY_CONVEX
        if self.smoothness is not None:
            return Regime.CONVEX_SMOOTH
        return Regime.CONVEX_LIPSCHITZ


@dataclass(frozen=True)
class MarginModel:
    r"""The linear structure of a loss :math:`\ell(\theta; x, y) = \phi(z, y)` with a margin ``z``.

    For parameters :math:`\theta = [w, v]` (``v`` present iff ``intercept_scale`` is not
    None), a public centre ``c`` (zero when ``centre`` is None) and the constant column
    :math:`\kappa` = ``intercept_scale``, the margin and the per-example gradient are

    .. math::

        z = \langle w, x - c\rangle + \kappa v, \qquad
        \nabla\ell = \phi'(z, y)\,[x - c,\ \kappa],

    so a clipped gradient sum is two matrix-vector products over the rows
    (:class:`noisygd.oracles.array.ArrayOracle` fuses them over row blocks) and clipping
    the per-example gradient to norm ``C`` is clipping the scalar :math:`\phi'` to
    :math:`\pm C / \lVert[x - c, \kappa]\rVert`.

    Attributes
    ----------
    loss : callable ``(z, y) -> ndarray``
        :math:`\phi(z, y)`, elementwise.
    residual : callable ``(z, y) -> ndarray``
        :math:`\phi'(z, y) = \partial\phi/\partial z`, elementwise.
    centre : ndarray of shape (d,) or None
        Public centre ``c`` (None: the origin).
    intercept_scale : float or None
        :math:`\kappa` (1.0 for a plain intercept); None: no intercept parameter.
    residual_bound : float or None
        A bound :math:`\sup|\phi'|` that ``residual`` never exceeds in floating point
        (logistic: 1; Huber: its threshold), or None (unbounded, e.g. squared loss). With
        it, a clip :math:`C \ge \sup|\phi'|\,\max_i\lVert[x_i - c, \kappa]\rVert` is
        known to change no gradient, and the oracle skips it (the result is bit-identical).
    compiled_residual : tuple of (str, float) or None, default=None
        The same :math:`\phi'` as one that the compiled margin kernel implements
        (:mod:`noisygd.oracles.array`): ``("logistic", 0.0)`` for
        :math:`-y\,\sigma(-yz)`, ``("squared", 0.0)`` for :math:`z - y`, ``("huber", t)``
        for :math:`\mathrm{clip}(z - y, \pm t)`; None (the default) when ``residual`` is
        none of them, and the oracle then evaluates ``residual`` itself.
    feature_scale : ndarray of shape (d,) or None, default=None
        Public positive column weights :math:`f` (a diagonal preconditioner,
        :class:`~noisygd.objectives.centred.CentredGLM`): the rows are
        :math:`[f\odot(x - c),\ \kappa]`, so :math:`z = \langle f\odot w, x - c\rangle +
        \kappa v` and :math:`\nabla\ell = \phi'(z, y)[f\odot(x - c),\ \kappa]`; None: all ones.
    """

    loss: Callable[[np.ndarray, np.ndarray], np.ndarray]
    residual: Callable[[np.ndarray, np.ndarray], np.ndarray]
    centre: np.ndarray | None
    intercept_scale: float | None
    residual_bound: float | None = None
    compiled_residual: tuple[str, float] | None = None
    feature_scale: np.ndarray | None = None


def check_centre(centre: object) -> np.ndarray:
    """A public centre ``c`` as a finite non-empty 1-D float64 vector (message: shape only)."""
    c = np.asarray(centre, dtype=np.float64)
    if c.ndim != 1 or c.size == 0 or not np.all(np.isfinite(c)):
        raise ValueError(f"centre must be a finite non-empty 1-D vector, got shape {c.shape}")
    return c


def check_feature_scale(feature_scale: object, size: int | None = None) -> np.ndarray:
    """A public per-feature scale :math:`f` as a non-empty 1-D float64 vector of finite
    positive values, of ``size`` entries when given (message: the shape asked for only)."""
    f = np.asarray(feature_scale, dtype=np.float64)
    ok = (f.ndim == 1 and f.size > 0 and (size is None or f.size == size)
          and bool(np.all(np.isfinite(f))) and not bool(np.any(f <= 0)))
    if not ok:
        raise ValueError("feature_scale must be a 1-D vector of finite positive values"
                         if size is None else
                         f"feature_scale must hold {size} finite positive values")
    return f


def augmented_row_norms(
    X: np.ndarray | sp.sparray, centre: np.ndarray | None, intercept_scale: float | None,
    feature_scale: np.ndarray | None = None,
) -> np.ndarray:
    r""":math:`\lVert[f\odot(x_i - c),\ \kappa]\rVert = (\lVert f\odot(x_i - c)\rVert^2 +
    \kappa^2)^{1/2}` for rows as given (``c`` zero when None; no :math:`\kappa` term when
    None; :math:`f` = ``feature_scale``, all ones when None).

    Sparse ``X`` stays sparse: :math:`\lVert x\rVert^2 - 2\langle x, c\rangle + \lVert c\rVert^2`.
    """
    if feature_scale is not None:
        f = np.asarray(feature_scale, dtype=np.float64)
        X = sp.csr_array(X) @ sp.diags_array(f) if sp.issparse(X) else np.asarray(
            X, dtype=np.float64) * f
        centre = None if centre is None else centre * f
    if sp.issparse(X):
        sq = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
        if centre is not None:
            sq = np.maximum(sq - 2.0 * np.asarray(X @ centre).ravel() + float(centre @ centre),
                            0.0)
    else:
        D = np.asarray(X, dtype=np.float64)
        if centre is not None:
            D = D - centre
        sq = np.einsum("ij,ij->i", D, D)
    return np.sqrt(sq) if intercept_scale is None else np.sqrt(sq + intercept_scale**2)


def constant_column(objective: object, n_params: int) -> tuple[int, float] | None:
    r"""``(k, s)`` where every row an oracle of ``objective`` serves has the constant ``s``
    in column ``k`` (the intercept column: ``s`` = the objective's ``intercept_scale`` for a
    :class:`~noisygd.objectives.centred.CentredGLM`, 1 for a GLM with ``fit_intercept``; the
    last of the ``n_params`` coordinates either way), else None. Public: read from the
    objective, never from the rows.

    Examples
    --------
    >>> from noisygd.objectives.glm import SquaredLoss
    >>> constant_column(SquaredLoss(fit_intercept=True), 3)
    (2, 1.0)
    >>> constant_column(SquaredLoss(fit_intercept=False), 3) is None
    True
    """
    scale = getattr(objective, "intercept_scale", None)
    base = getattr(objective, "base", objective)
    if not getattr(base, "fit_intercept", False):
        return None
    value = 1.0 if scale is None else float(scale)
    return (int(n_params) - 1, value) if value > 0.0 else None


class Objective(ABC):
    """Per-example loss plus L2 regularisation, optionally constrained to a ball.

    Parameters are flat vectors ``theta`` of length :meth:`n_params`. For the
    linear models of :mod:`noisygd.objectives.glm` the last entry is the
    intercept when ``fit_intercept`` is true.

    The array-level methods (:meth:`per_example_loss`, :meth:`clipped_gradient_sum`,
    :meth:`value`, :meth:`gradient`, :meth:`minimize`) take rows as given. Algorithms
    never call them: they read data through a
    :class:`~noisygd.oracles.base.GradientOracle`, which maps every row into the declared
    domain first.

    Declared capabilities (concrete, with documented defaults; never probed with
    ``hasattr``): :attr:`supports_sparse`, :attr:`quadratic_constant_hessian`,
    :meth:`optimum_norm_bound`, :meth:`loss_at_zero_bound`,
    :meth:`total_gradient_sensitivity`, :meth:`margin_model`.
    """

    l2: float = 0.0
    radius: float | None = None
    #: Whether the array-level methods accept a ``scipy.sparse`` CSR ``X`` (default False:
    #: an oracle densifies row blocks for them).
    supports_sparse: bool = False
    #: Whether the loss is quadratic with a data-independent Hessian (default False).
    quadratic_constant_hessian: bool = False
    #: Whether the per-example loss is quadratic in the margin (least squares; default False).
    quadratic_loss: bool = False

    @abstractmethod
    def n_params(self, n_features: int) -> int:
        """Length of ``theta`` for data with ``n_features`` columns."""

    @abstractmethod
    def per_example_loss(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Vector of ``ell(theta; x_i, y_i)``, shape ``(n,)``."""

    @abstractmethod
    def clipped_gradient_sum(
        self, theta: np.ndarray, X: np.ndarray, y: np.ndarray, clip: float | None
    ) -> np.ndarray:
        r""":math:`\sum_i \mathrm{clip}_C(\nabla \ell(\theta; x_i, y_i))` (data term only).

        ``clip=None`` means no clipping. Must not build an (n, p) per-example matrix for
        GLMs.
        """

    @abstractmethod
    def constants(self, row_norm_bound: float) -> ObjectiveConstants:
        """Constants for rows with ``||x|| <= row_norm_bound`` (see module doc)."""

    @abstractmethod
    def check_targets(self, y: np.ndarray) -> np.ndarray:
        """Validate labels for this loss (``ValueError`` naming the problem, never a label)."""

    # Declared capabilities (defaults) ------------------------------------------

    def optimum_norm_bound(self) -> float | None:
        r"""A public bound on :math:`\lVert\theta^*\rVert` (default ``None``: none known)."""
        return None

    def loss_at_zero_bound(self) -> float | None:
        r"""A data-independent upper bound on :math:`F(0)` (default ``None``: none known)."""
        return None

    def total_gradient_sensitivity(self, row_norm_bound: float) -> float | None:
        r"""Exact replace-one sensitivity :math:`S_g` of the unclipped gradient sum for rows
        with :math:`\lVert x\rVert \le B` (Definition B.10 of seed 004), if the loss states it.

        Default ``None``: algorithms fall back to :math:`2L` of :meth:`constants`.
        """
        return None

    def margin_model(self) -> MarginModel | None:
        """The loss's linear structure (:class:`MarginModel`), or ``None`` (the default).

        ``None`` means the loss is not a function of one margin: an oracle then evaluates
        :meth:`per_example_loss` and :meth:`clipped_gradient_sum` on blocks of rows.
        """
        return None

    # Concrete helpers -------------------------------------------------------

    def value(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
        """``F(theta; D)``: mean loss plus ``l2/2 ||theta||^2``."""
        data = float(np.mean(self.per_example_loss(theta, X, y)))
        return data + 0.5 * self.l2 * float(theta @ theta)

    def gradient(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Exact gradient of ``F`` (non-private; for baselines and tests)."""
        n = X.shape[0]
        return self.clipped_gradient_sum(theta, X, y, None) / n + self.l2 * theta

    def minimize(
        self, X: np.ndarray, y: np.ndarray, *, gtol: float = 1e-11, maxiter: int = 20000
    ) -> tuple[np.ndarray, float]:
        """Exact non-private minimiser of ``F`` and its value (for baselines and excess risk).

        Unconstrained L-BFGS-B from 0 at high precision. Not private: use it
        only for references such as ``F(w_priv) - min F``.

        Raises
        ------
        ValueError
            If the objective has a projection radius (not supported here).
        RuntimeError
            If the final gradient norm exceeds 1e-7.
        """
        from scipy.optimize import minimize

        if self.radius is not None:
            raise ValueError("minimize() handles unconstrained objectives only (radius is set)")
        res = minimize(
            lambda t: (self.value(t, X, y), self.gradient(t, X, y)),
            np.zeros(self.n_params(X.shape[1])),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": maxiter, "gtol": gtol, "ftol": 1e-15, "maxcor": 30},
        )
        grad_norm = float(np.linalg.norm(self.gradient(res.x, X, y)))
        if grad_norm > 1e-7:
            raise RuntimeError(
                f"the reference optimisation did not converge: ||grad|| = {grad_norm:.2e}"
            )
        return res.x, float(res.fun)

    def project(self, theta: np.ndarray) -> np.ndarray:
        """Euclidean projection onto ``C`` (identity when ``radius`` is None)."""
        if self.radius is None:
            return theta
        norm = float(np.linalg.norm(theta))
        return theta if norm <= self.radius else theta * (self.radius / norm)
