r"""The gradient oracle: the only interface through which an algorithm touches private data.

A fit is three objects meeting once: a **gradient oracle** (the private rows, their loss and
everything a theorem needs to know about them), a **solver** (plan from public facts, then run
against any oracle) and the **accountants** (which read the event the run returns). An
algorithm never sees ``X`` or ``y``; it calls the methods below. NumPy dense and SciPy sparse
data are served by :class:`noisygd.oracles.array.ArrayOracle`; a Dask collection or a torch
model supplies the same methods, and no algorithm changes.

The oracle holds rows :math:`x_i` already mapped (by a per-row map, free under DP) into the
declared domain :math:`\lVert x_i\rVert \le B` (``row_norm_bound``), and an objective

.. math::

    F(\theta) = \frac1n \sum_{i=1}^n \ell(\theta; x_i, y_i)
                + \frac{\mu}{2}\lVert\theta\rVert^2, \qquad \theta \in C.

Hot path: :meth:`GradientOracle.clipped_gradient_sum`, Lecture 12 eq. (12.1)'s

.. math::

    \sum_{i \in S} \mathrm{clip}_C\big(\nabla \ell(\theta; x_i, y_i)\big), \qquad
    \mathrm{clip}_C(g) = g \min\big(1, C / \lVert g\rVert\big),

over all rows or a subset ``S = rows``.

Declared constants and capabilities
-----------------------------------
Every constant and capability is a method or attribute of this interface with a documented
default; no algorithm probes with ``hasattr``. An oracle that cannot state a constant returns
``None`` (the default); an algorithm whose proof needs it raises
:class:`~noisygd.exceptions.AssumptionError` naming it.

Privacy of the row count
------------------------
:attr:`n_rows` is the number of rows held. Under add/remove neighbours it is private: an
algorithm may use it only to *sample* rows (Poisson or uniform subsets, which the event
accounts for), never as a step size, a scale or a printed value. Public sizes come from the
solver (``n_samples``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from noisygd.objectives.base import Objective, ObjectiveConstants

__all__ = ["ROW_SUMS", "GradientOracle", "ObjectiveOracle", "RowSums"]


#: The names of the sums in :class:`RowSums` (each row adds at most 1 to each, in norm).
ROW_SUMS = ("count", "rows", "squared_norms", "targets", "squared_targets", "absolute_rows")


@dataclass(frozen=True)
class RowSums:
    r"""Bounded sums over the rows served (:meth:`GradientOracle.bounded_row_sums`).

    With :math:`a_i = (\tilde x_i - c)/B` the served row about the public centre in units of
    the row bound (:math:`\lVert a_i\rVert \le 1`) and :math:`t_i = \mathrm{clip}(y_i/h,
    -1, 1)` for a public half-range :math:`h`, every row adds at most 1 in norm to each sum,
    so any :math:`k` of them, stacked, change by a vector of norm at most :math:`\sqrt k`
    when one row is added or removed. **Not private**: the caller adds the noise (one
    Gaussian draw per released sum, :mod:`noisygd.training`'s pre-release stages).

    Attributes
    ----------
    count : float
        :math:`n`.
    rows : ndarray of shape (d,)
        :math:`\sum_i a_i`.
    squared_norms : float
        :math:`\sum_i \lVert a_i\rVert^2`.
    targets, squared_targets : float
        :math:`\sum_i t_i` and :math:`\sum_i t_i^2` (0 when no half-range was given).
    absolute_rows : ndarray of shape (d,) or None
        :math:`\sum_i |a_i|` (entrywise), the per-feature sums of absolute values (when
        asked: ``bounded_row_sums(absolute=True)``). A row adds :math:`|a_i|`, of norm
        :math:`\lVert a_i\rVert \le 1`.
    """

    count: float
    rows: np.ndarray
    squared_norms: float
    targets: float = 0.0
    squared_targets: float = 0.0
    absolute_rows: np.ndarray | None = None

    def vector(self, names: tuple[str, ...]) -> np.ndarray:
        """The sums ``names`` (from :data:`ROW_SUMS`), stacked in that order."""
        unknown = sorted(set(names) - set(ROW_SUMS))
        if unknown:
            raise ValueError(f"unknown row sums {unknown}; known: {list(ROW_SUMS)}")
        if "absolute_rows" in names and self.absolute_rows is None:
            raise ValueError("absolute_rows was not summed (bounded_row_sums(absolute=True))")
        if not names:
            return np.zeros(0)
        return np.concatenate([np.atleast_1d(np.asarray(getattr(self, k), dtype=np.float64))
                               for k in names])

    def __add__(self, other: RowSums) -> RowSums:
        """The sums of two disjoint sets of rows (e.g. two partitions, added in order)."""
        sq = (None if self.absolute_rows is None or other.absolute_rows is None
              else self.absolute_rows + other.absolute_rows)
        return RowSums(self.count + other.count, self.rows + other.rows,
                       self.squared_norms + other.squared_norms,
                       self.targets + other.targets,
                       self.squared_targets + other.squared_targets, sq)


class GradientOracle(ABC):
    """Private rows plus their loss, behind one interface (see the module doc).

    Subclasses implement the abstract members. The concrete members have documented
    defaults: an oracle overrides them when it can state more.
    """

    # ---------------------------------------------------------------- shape and domain
    @property
    @abstractmethod
    def n_params(self) -> int:
        """Length ``p`` of the parameter vector ``theta``."""

    @property
    @abstractmethod
    def n_rows(self) -> int:
        """Number of rows held. Private under add/remove: only for sampling rows (module doc)."""

    @property
    @abstractmethod
    def row_norm_bound(self) -> float | None:
        r"""The declared bound ``B``: every row served satisfies :math:`\lVert x_i\rVert \le B`.

        ``None`` for an oracle that bounds no row (a network clips gradients, not rows:
        :class:`noisygd.torch.TorchOracle`); a method whose theorem needs ``B`` refuses it.
        """

    # ---------------------------------------------------------------- the data term
    @abstractmethod
    def per_example_loss(self, theta: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        r"""Vector of :math:`\ell(\theta; x_i, y_i)` over all rows (or ``rows``), shape ``(k,)``."""

    @abstractmethod
    def clipped_gradient_sum(
        self, theta: np.ndarray, clip: float | None, rows: np.ndarray | None = None
    ) -> np.ndarray:
        r""":math:`\sum_{i\in S}\mathrm{clip}_C(\nabla\ell(\theta; x_i, y_i))`, shape ``(p,)``.

        Parameters
        ----------
        theta : ndarray of shape (p,)
        clip : float or None
            The clipping norm ``C``; ``None`` for the unclipped sum (algorithms whose proof
            bounds the sensitivity by the declared constants, not by clipping).
        rows : ndarray of int, optional
            Indices of the rows to sum over (a sampled batch); all rows when omitted.
        """

    @property
    def resolves_row_selections(self) -> bool:
        """Whether ``rows`` may be a :class:`~noisygd.oracles.selection.RowSelection`
        description, resolved where the rows are (default False: algorithms pass the
        description's global indices, :func:`~noisygd.oracles.selection.oracle_rows`)."""
        return False

    def bounded_row_sums(self, target_half_range: float | None = None, *,
                         absolute: bool = False) -> RowSums:
        r"""The :class:`RowSums` of all rows served (:math:`n`, :math:`\sum_i a_i`,
        :math:`\sum_i\lVert a_i\rVert^2` and, with ``target_half_range`` :math:`h`,
        :math:`\sum_i t_i`, :math:`\sum_i t_i^2`; with ``absolute``,
        :math:`\sum_i |a_i|`): the reduction of a pre-release stage
        (:mod:`noisygd.training`). **Not private**: the caller adds the noise.

        Raises
        ------
        NotImplementedError
            By default: an oracle that serves no bounded rows (a network's examples).
        """
        raise NotImplementedError(
            f"{type(self).__name__} provides no bounded row sums (the private scale and "
            "conditioning releases need rows of a declared bound)")

    # ---------------------------------------------------------------- the objective's terms
    @property
    def l2(self) -> float:
        r"""Ridge strength :math:`\mu` of :math:`\frac{\mu}{2}\lVert\theta\rVert^2` (default 0)."""
        return 0.0

    @property
    def radius(self) -> float | None:
        """Radius of the constraint ball ``C`` (default ``None``: unconstrained)."""
        return None

    def project(self, theta: np.ndarray) -> np.ndarray:
        r"""Euclidean projection onto ``C`` (identity when :attr:`radius` is ``None``)."""
        if self.radius is None:
            return theta
        norm = float(np.linalg.norm(theta))
        return theta if norm <= self.radius else theta * (self.radius / norm)

    def regularizer_gradient(self, theta: np.ndarray) -> np.ndarray:
        r""":math:`\mu\theta`, the gradient of the data-independent ridge term (needs no noise)."""
        return self.l2 * theta

    # ---------------------------------------------------------------- declared constants
    @abstractmethod
    def constants(self) -> ObjectiveConstants:
        r"""``L``, :math:`\beta`, strong convexity and convexity for rows within the bound.

        ``lipschitz`` or ``smoothness`` is ``None`` where the loss cannot state it.
        """

    def optimum_norm_bound(self) -> float | None:
        r"""A public bound on :math:`\lVert\theta^*\rVert` (default ``None``: none known)."""
        return None

    def loss_at_zero_bound(self) -> float | None:
        r"""A data-independent bound on :math:`F(0)` (default ``None``: none known)."""
        return None

    def total_gradient_sensitivity(self) -> float | None:
        r"""Exact replace-one sensitivity :math:`S_g = \sup\lVert\sum_i\nabla\ell_i(\theta; D) -
        \sum_i\nabla\ell_i(\theta; D')\rVert` of the unclipped gradient sum, if the loss states it.

        Default ``None``: algorithms fall back to :math:`2L` from :meth:`constants`.
        """
        return None

    @property
    def quadratic_constant_hessian(self) -> bool:
        """Whether the loss is quadratic with a data-independent Hessian (default False)."""
        return False

    @property
    def quadratic_loss(self) -> bool:
        """Whether the per-example loss is quadratic in the margin (least squares; the Hessian
        may depend on the rows). Default False."""
        return False
    # ---------------------------------------------------------------- curvature (second order)
    def clipped_curvature_sum(
        self, theta: np.ndarray, clip: float | None, rows: np.ndarray | None = None
    ) -> np.ndarray:
        r""":math:`\sum_{i\in S}\mathrm{clip}_{C_H}(\nabla^2\ell(\theta; x_i, y_i))`, shape
        ``(p, p)``, symmetric positive semi-definite (the ridge is not included).

        For a loss of one margin, :math:`\ell = \phi(\langle a_i, \theta\rangle, y_i)` with the
        served augmented row :math:`a_i`, the per-example Hessian is the rank-one
        :math:`\phi''(z_i)\,a_ia_i^\top`, of Frobenius norm :math:`\phi''(z_i)\lVert
        a_i\rVert^2`; clipping it to Frobenius norm :math:`C_H` is clipping the scalar weight:

        .. math::

            H_S(\theta) = \sum_{i\in S} \min\big(\phi''(z_i),\ C_H/\lVert a_i\rVert^2\big)
                \,a_ia_i^\top .

        Every term is positive semi-definite with Frobenius norm at most :math:`C_H`, so one
        row changes the sum by at most :math:`C_H` in Frobenius norm under add/remove, and by
        at most :math:`\sqrt2\,C_H` under replace-one (:math:`\lVert A - B\rVert_F^2 =
        \lVert A\rVert_F^2 + \lVert B\rVert_F^2 - 2\operatorname{tr}(AB)` with
        :math:`\operatorname{tr}(AB) \ge 0` for PSD :math:`A, B`). **Not private**: the caller
        adds the noise (:mod:`noisygd.algorithms.newton`).

        Parameters
        ----------
        theta : ndarray of shape (p,)
        clip : float or None
            :math:`C_H`; None for the unclipped sum.
        rows : ndarray of int, optional
            Indices of the rows to sum over; all rows when omitted.

        Raises
        ------
        NotImplementedError
            By default: an oracle that cannot form per-row curvature terms (a loss without a
            single margin, such as the multinomial loss) refuses.
        """
        raise NotImplementedError(
            f"{type(self).__name__} provides no curvature sums (second-order methods such as "
            "method='newton' need a loss of one margin: logistic or least squares)")

    def clipped_curvature_diagonal(
        self, theta: np.ndarray, clip: float | None, rows: np.ndarray | None = None
    ) -> np.ndarray:
        r"""The diagonal of :meth:`clipped_curvature_sum`, shape ``(p,)``, without the
        ``p x p`` matrix.

        Row ``i`` contributes :math:`w_i\,(a_i \odot a_i)`, :math:`w_i = \min(\phi''(z_i),
        C_H/\lVert a_i\rVert^2)`: a nonnegative vector of L2 norm at most
        :math:`w_i\lVert a_i\rVert^2 \le C_H`, so the sensitivity is :math:`C_H` under
        add/remove and :math:`\sqrt2\,C_H` under replace-one (two nonnegative vectors have a
        nonnegative inner product). **Not private**.

        Raises
        ------
        NotImplementedError
            By default (as :meth:`clipped_curvature_sum`).
        """
        raise NotImplementedError(
            f"{type(self).__name__} provides no curvature sums (second-order methods such as "
            "method='newton' need a loss of one margin: logistic or least squares)")

    #: Whether :meth:`row_nonzero_histogram` is served (a public capability of the oracle's
    #: class, never a fact of its rows).
    serves_row_nonzeros: bool = False

    def row_nonzero_histogram(self, edges: np.ndarray) -> np.ndarray:
        r"""Counts of the served rows by their number of nonzero coordinates, shape
        ``(len(edges) + 1,)``: bin 0 holds the rows with :math:`k_i \le e_0`, bin ``j`` those
        with :math:`e_{j-1} < k_i \le e_j`, the last bin those with :math:`k_i > e_{-1}`.

        :math:`k_i` is the support of the stored row plus the intercept column when the
        model has one (:meth:`noisygd.oracles.array.ArrayOracle.row_nonzero_histogram`). One
        row adds 1 to one bin: the L2 sensitivity is 1 under add/remove and :math:`\sqrt2`
        under replace-one (or 0 when both rows fall in the same bin). **Not private**: the
        caller adds the noise (:mod:`noisygd.algorithms.newton`, the paid ``row_nonzeros``).

        Raises
        ------
        NotImplementedError
            By default (:attr:`serves_row_nonzeros` is False).
        """
        raise NotImplementedError(
            f"{type(self).__name__} serves no row-support histogram: declare "
            "method_options['row_nonzeros'] for the diagonal preconditioner")

    def self_concordance(self) -> float | None:
        r"""A public :math:`M` with :math:`|\tfrac{d^3}{ds^3}\ell_i(\theta + s\Delta)| \le
        M\lVert\Delta\rVert\,\tfrac{d^2}{ds^2}\ell_i(\theta + s\Delta)` for every served row,
        every :math:`\theta` and direction :math:`\Delta` (generalised self-concordance,
        Bach 2010), or None (the default: the oracle states none, or has no curvature sums).

        For a margin loss, :math:`M = \sup|\phi'''/\phi''|\cdot\sup_i\lVert a_i\rVert`: the
        logistic loss has :math:`|\phi'''| \le \phi''`, least squares :math:`\phi''' = 0`
        (:math:`M = 0`). The damped Newton step is planned from it
        (:mod:`noisygd.algorithms.newton`).
        """
        return None

    # ---------------------------------------------------------------- non-private references
    def value(self, theta: np.ndarray) -> float:
        r""":math:`F(\theta)` over all rows. **Not private**: for baselines, tests and reports."""
        data = float(np.mean(self.per_example_loss(theta)))
        return data + 0.5 * self.l2 * float(theta @ theta)

    def gradient(self, theta: np.ndarray) -> np.ndarray:
        r""":math:`\nabla F(\theta)`, unclipped. **Not private** unless its caller adds noise
        calibrated to a sensitivity the theorem bounds."""
        return self.clipped_gradient_sum(theta, None) / self.n_rows + self.l2 * theta

    def minimize(self, *, gtol: float = 1e-11, maxiter: int = 20000) -> tuple[np.ndarray, float]:
        r"""The exact minimiser of :math:`F` and its value. **Not private**: for references
        such as the excess risk :math:`F(\theta_{priv}) - \min F` in benchmarks and tests.

        Unconstrained L-BFGS-B from 0 on :meth:`value` and :meth:`gradient`.

        Raises
        ------
        ValueError
            If the oracle has a projection radius.
        RuntimeError
            If the final gradient norm exceeds 1e-7 (the message shows no data value).
        """
        from scipy.optimize import minimize

        if self.radius is not None:
            raise ValueError("minimize() handles unconstrained objectives only (radius is set)")
        res = minimize(
            lambda t: (self.value(t), self.gradient(t)),
            np.zeros(self.n_params),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": maxiter, "gtol": gtol, "ftol": 1e-15, "maxcor": 30},
        )
        if float(np.linalg.norm(self.gradient(res.x))) > 1e-7:
            raise RuntimeError("the reference optimisation did not reach ||grad|| <= 1e-7")
        return res.x, float(res.fun)


class ObjectiveOracle(GradientOracle):
    r"""A :class:`GradientOracle` whose loss is one :class:`~noisygd.objectives.base.Objective`
    over rows bounded by ``row_norm_bound``: the objective's terms and declared constants are
    forwarded from ``self.objective`` at the bound ``self._B`` (one home for the
    members that :class:`~noisygd.oracles.array.ArrayOracle` and
    :class:`~noisygd.oracles.dask.DaskOracle` share). Subclasses set ``objective``, ``_B``
    and the sizes ``_p`` (parameters), ``_n`` (rows) and ``_d`` (columns)."""

    objective: Objective
    _B: float
    _p: int
    _n: int
    _d: int

    @property
    def n_params(self) -> int:
        """``p``: ``objective.n_params(d)``."""
        return self._p

    @property
    def n_rows(self) -> int:
        """``n`` (private under add/remove: for sampling only)."""
        return self._n

    @property
    def n_features(self) -> int:
        """``d``, the number of columns of the rows (public)."""
        return self._d

    @property
    def row_norm_bound(self) -> float:
        """The declared ``B``."""
        return self._B

    def _check_theta(self, theta: np.ndarray) -> np.ndarray:
        """``theta`` as float64, refused unless of shape ``(p,)``."""
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self._p,):
            raise ValueError(f"theta must have shape ({self._p},), got {theta.shape}")
        return theta

    @property
    def l2(self) -> float:
        """The objective's ridge ``mu``."""
        return float(self.objective.l2)

    @property
    def radius(self) -> float | None:
        """The objective's ball radius (None: unconstrained)."""
        return self.objective.radius

    def project(self, theta: np.ndarray) -> np.ndarray:
        """The objective's projection onto its ball."""
        return self.objective.project(theta)

    def constants(self) -> ObjectiveConstants:
        """``objective.constants(row_norm_bound)``."""
        return self.objective.constants(self._B)

    def optimum_norm_bound(self) -> float | None:
        """Forwarded from the objective."""
        return self.objective.optimum_norm_bound()

    def loss_at_zero_bound(self) -> float | None:
        """Forwarded from the objective."""
        return self.objective.loss_at_zero_bound()

    def total_gradient_sensitivity(self) -> float | None:
        """``objective.total_gradient_sensitivity(row_norm_bound)``."""
        return self.objective.total_gradient_sensitivity(self._B)

    @property
    def quadratic_constant_hessian(self) -> bool:
        """Forwarded from the objective."""
        return bool(self.objective.quadratic_constant_hessian)

    @property
    def quadratic_loss(self) -> bool:
        """Forwarded from the objective (the plan's averaging and Newton's constant Hessian
        read it)."""
        return bool(self.objective.quadratic_loss)
