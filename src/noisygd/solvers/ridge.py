r"""The ridge a first- or second-order solver adds to the objective (``method_options["l2"]``).

One rule shared by :class:`~noisygd.solvers.noisy_gd.NoisyGDSolver` and
:class:`~noisygd.solvers.newton.NewtonSolver` (its own module so that neither solver imports
the other's module to plan it): no ridge without the option, the number given, or
``"auto"``: :func:`noisygd.planning.ridge_strength`,

.. math:: \lambda = f\,\lambda^*(n, d, C, \mu, \ell_0, \Delta),

times the public factor :math:`f` = ``method_options["l2_factor"]`` (default 1), with
:math:`\Delta` the relation's clipped-sum sensitivity and the comparator radius of a release
made before the run where the facts carry one (``facts.released``,
:class:`~noisygd.solvers.base.ReleasedFacts`); where the release also gives the rows' mean
curvature, :func:`noisygd.planning.released_ridge_strength` instead.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from noisygd._checks import check_nonnegative, check_positive
from noisygd.exceptions import AssumptionError
from noisygd.objectives.base import ObjectiveConstants
from noisygd.oracles.base import GradientOracle
from noisygd.planning import RIDGE_STATUS, released_ridge_strength, ridge_strength
from noisygd.solvers.base import Budget, PublicFacts

__all__ = ["RidgedOracle", "planned_ridge", "ridge_record", "with_ridge"]


def planned_ridge(facts: PublicFacts, budget: Budget, mu: float | None, option: Any,
                  factor: Any = None, dim: int | None = None) -> float:
    """The ridge the run adds to ``oracle.l2`` (module doc).

    Parameters
    ----------
    facts, budget : PublicFacts, Budget
        The public facts and the budget of the plan.
    mu : float or None
        The run's Gaussian-DP :math:`\\mu` (None: calibrated from the budget's epsilon, delta).
    option : None, "auto" or float
        ``method_options["l2"]``.
    factor : float, optional
        ``method_options["l2_factor"]``: a public multiple of the planned ridge (needs
        ``option="auto"``).
    dim : int, optional
        The noise dimension the ridge counts (default ``facts.n_params``).

    Returns
    -------
    float
        0 without the option, the number given, or the planned ridge times ``factor``.

    Raises
    ------
    ValueError
        A bad option, or ``l2_factor`` without ``l2="auto"``.
    AssumptionError
        ``"auto"`` without a loss-at-zero bound, or with a projection radius.
    """
    if factor is not None:
        factor = check_positive("method_options['l2_factor']", factor)
        if option != "auto":
            raise ValueError("method_options['l2_factor'] scales the planned ridge: it needs "
                             "method_options['l2'] = 'auto'")
    if option is None:
        return 0.0
    if isinstance(option, str):
        if option != "auto":
            raise ValueError(f"method_options['l2'] must be 'auto' or a number >= 0, got "
                             f"{option!r}")
        if facts.loss_at_zero_bound is None:
            raise AssumptionError("l2='auto' needs a data-independent bound on the loss "
                                  "at zero (loss_at_zero_bound); give l2= instead")
        if facts.radius is not None:
            raise AssumptionError("l2='auto' is planned for the unconstrained objective; "
                                  "with a projection radius give l2= instead")
        if mu is None:
            from noisygd.accounting.calibration import calibrate_mu

            mu = calibrate_mu(budget.epsilon, budget.delta)
        released = facts.released
        if (released is not None and released.mean_curvature is not None
                and released.comparator_radius is not None):
            return (1.0 if factor is None else factor) * released_ridge_strength(
                n=facts.n_samples, n_params=facts.n_params if dim is None else dim,
                clip=facts.clip_norm(), mu=mu, comparator=released.comparator_radius,
                mean_curvature=released.mean_curvature,
                sensitivity=facts.relation.clipped_sum_sensitivity)
        return (1.0 if factor is None else factor) * ridge_strength(
            n=facts.n_samples, n_params=facts.n_params if dim is None else dim,
            clip=facts.clip_norm(), mu=mu,
            loss_at_zero=facts.loss_at_zero_bound,
            sensitivity=facts.relation.clipped_sum_sensitivity,
            comparator=None if facts.released is None else facts.released.comparator_radius)
    return check_nonnegative("method_options['l2']", option)


def with_ridge(facts: PublicFacts, ridge: float) -> PublicFacts:
    r"""The facts of the objective with ``ridge`` more L2: what :class:`RidgedOracle` of the
    same oracle states.

    .. math:: \lambda' = \lambda + \text{ridge}, \qquad m' = \lambda', \qquad
              \lVert\theta^*\rVert \le \sqrt{2F_0/\lambda'}

    (:math:`F_0` the loss-at-zero bound; the strong convexity :math:`m'` is the total L2; with
    a projection radius or no :math:`F_0` the facts' own bound is kept). Public: a function
    of public facts only. ``ridge = 0`` returns ``facts`` unchanged.
    """
    ridge = check_nonnegative("ridge", ridge)
    if ridge == 0.0:
        return facts
    l2 = float(facts.l2) + ridge
    bound = facts.optimum_norm_bound
    if facts.radius is None and facts.loss_at_zero_bound is not None:
        bound = math.sqrt(2.0 * facts.loss_at_zero_bound / l2)
    return dataclasses.replace(
        facts, l2=l2, optimum_norm_bound=bound,
        constants=dataclasses.replace(facts.constants, strong_convexity=l2))


def ridge_record(ridge: float) -> dict[str, Any]:
    """What a run's ``info["plan"]`` says of its planned ridge: ``l2_planned`` and its status
    (:data:`~noisygd.planning.RIDGE_STATUS`: a heuristic balance); empty without one."""
    return {"l2_planned": ridge, "l2_planned_status": RIDGE_STATUS} if ridge else {}


class RidgedOracle(GradientOracle):
    r"""An oracle whose objective has ``extra`` more ridge: :math:`F + \frac{\rm extra}2
    \lVert\theta\rVert^2` (the planned ridge of the module doc).

    The data term, rows, projection and every declared constant are the wrapped oracle's;
    only ``l2`` (hence the strong convexity and the bound
    :math:`\lVert\theta^*\rVert \le \sqrt{2F_0/\text{l2}}`) change. The ridge is
    data-independent: the clipped gradient sums, and so the privacy event, are unchanged.
    """

    def __init__(self, base: GradientOracle, extra: float) -> None:
        self.base = base
        self.extra = check_nonnegative("extra", extra)

    @property
    def n_params(self) -> int:
        """The wrapped oracle's ``p``."""
        return self.base.n_params

    @property
    def n_rows(self) -> int:
        """The wrapped oracle's rows (private: sampling only)."""
        return self.base.n_rows

    @property
    def row_norm_bound(self) -> float:
        """The wrapped oracle's ``B``."""
        return self.base.row_norm_bound

    def per_example_loss(self, theta: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """The wrapped oracle's data term."""
        return self.base.per_example_loss(theta, rows)

    def clipped_gradient_sum(self, theta: np.ndarray, clip: float | None,
                             rows: np.ndarray | None = None) -> np.ndarray:
        """The wrapped oracle's clipped sum (the ridge needs no noise)."""
        return self.base.clipped_gradient_sum(theta, clip, rows)

    @property
    def l2(self) -> float:
        """``base.l2 + extra``."""
        return self.base.l2 + self.extra

    @property
    def radius(self) -> float | None:
        """The wrapped oracle's projection radius."""
        return self.base.radius

    def project(self, theta: np.ndarray) -> np.ndarray:
        """The wrapped oracle's projection."""
        return self.base.project(theta)

    def constants(self) -> ObjectiveConstants:
        """The wrapped constants with strong convexity :attr:`l2`."""
        return dataclasses.replace(self.base.constants(), strong_convexity=self.l2)

    def optimum_norm_bound(self) -> float | None:
        r"""The radius, else :math:`\sqrt{2F_0/\text{l2}}` (the regularised optimum's bound)."""
        if self.radius is not None:
            return self.radius
        f0 = self.base.loss_at_zero_bound()
        if f0 is None or self.l2 <= 0:
            return self.base.optimum_norm_bound()
        return math.sqrt(2.0 * f0 / self.l2)

    def loss_at_zero_bound(self) -> float | None:
        """The wrapped oracle's bound (the ridge is 0 at 0)."""
        return self.base.loss_at_zero_bound()

    def total_gradient_sensitivity(self) -> float | None:
        """The wrapped oracle's (the ridge's gradient is data-independent)."""
        return self.base.total_gradient_sensitivity()

    @property
    def quadratic_constant_hessian(self) -> bool:
        """The wrapped oracle's (a ridge keeps the Hessian data-independent)."""
        return self.base.quadratic_constant_hessian

    @property
    def quadratic_loss(self) -> bool:
        """The wrapped oracle's (the ridge adds no per-example term)."""
        return self.base.quadratic_loss

    @property
    def resolves_row_selections(self) -> bool:
        """The wrapped oracle's: a sampled batch reaches it in the form it resolves (a Dask
        oracle resolves Poisson descriptions where the rows are)."""
        return self.base.resolves_row_selections
