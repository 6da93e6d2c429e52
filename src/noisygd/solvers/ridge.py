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

from typing import Any

from noisygd._checks import check_nonnegative, check_positive
from noisygd.exceptions import AssumptionError
from noisygd.planning import released_ridge_strength, ridge_strength
from noisygd.solvers.base import Budget, PublicFacts

__all__ = ["planned_ridge"]


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
