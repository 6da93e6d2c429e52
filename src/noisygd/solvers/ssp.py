r"""AdaSSP, sufficient statistics perturbation for least squares: ``method="ssp"``.

Plan (public facts only): :func:`noisygd.algorithms.ssp.plan_ssp` at the budget's
Gaussian-DP :math:`\mu` (``Budget.mu`` when the caller split a GDP budget between a count
and the run, else the exact :math:`\mu(\varepsilon, \delta)`, less a prior Gaussian
release's :math:`\mu` in quadrature), with the bounds the oracle declares:

* :math:`\tilde B = \sqrt\beta`: for the squared loss :math:`\phi'' = 1`, so the declared
  smoothness is exactly :math:`\beta = \tilde B^2`, the squared bound of the served rows
  (intercept column included; :class:`~noisygd.objectives.glm.SquaredLoss`,
  :class:`~noisygd.objectives.centred.CentredGLM`);
* :math:`Y = \sqrt{2F_0}` with :math:`F_0` the declared bound on :math:`F(0)`, which for the
  squared loss with ``target_bound`` :math:`Y` is exactly :math:`Y^2/2` (the objective
  refuses targets outside :math:`[-Y, Y]`).

Run: :func:`noisygd.algorithms.ssp.adassp` (Wang 2018, Algorithm 2). The event is
``Composed((Gaussian(z_lambda), Gaussian(z_A), Gaussian(z_b)))`` with the relation's
sensitivity, exactly :math:`\mu`-GDP, so the solver is ``gaussian`` (a count and the run
share one budget by :math:`\mu^2 = \mu_c^2 + \mu_{\rm run}^2`).

Only for the squared loss (``PublicFacts.quadratic_loss``); other objectives are refused.
No clipping (the sensitivity is the declared row and target bounds'), no steps (``max_iter``
is refused).

Secure mode (``Budget.secure``): discrete Gaussian noise on a rounding grid and the event
``Composed`` of ``DiscreteGaussianNoise(Gaussian(z_k), kappa_k)``; the plan is made at the
largest Gaussian-DP :math:`\mu` whose secure event is at most :math:`\rho`-zCDP,
:math:`\rho` = ``Budget.secure_rho()`` (:func:`noisygd.solvers.base.plan_secure_gaussian`).

**With an intercept** (``PublicFacts.constant_column``: every served row ends in the public
constant ``s``, as the estimators' rows do) the plan is the centred form,
:func:`noisygd.algorithms.ssp_centred.plan_centred_ssp`: the intercept's statistics
(:math:`\sum_i x_i`, :math:`\sum_i y_i`) are released apart from :math:`\sum_i x_ix_i^\top`
and :math:`\sum_i y_ix_i`, and ``n`` with them; six releases, exactly :math:`\mu`-GDP.
Wang's single matrix carried the intercept column's noise into the fit multiplied by the
intercept's coefficient :math:`\bar y/s`, which put the fit below the constant predictor on
off-centre targets (docs/ssp.md). Without one, Wang's three releases as published.

Options (``method_options``): ``shares`` (the fractions of :math:`\mu^2`, positive and
summing to 1: three for Wang's form, :math:`\lambda_{\min}`, :math:`X^\top X`,
:math:`X^\top y`, default Wang's equal split; six for the centred form, default
:data:`~noisygd.algorithms.ssp_centred.DEFAULT_CENTRED_SHARES`) and ``failure_probability``
(:math:`\varrho`, default 0.05).
"""

from __future__ import annotations

import functools
import math
from typing import ClassVar

import numpy as np

from noisygd.accounting.events import Composed
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.ssp import (
    DEFAULT_FAILURE_PROBABILITY,
    DEFAULT_SHARES,
    SSPPlan,
    adassp,
    constant_column,
    plan_ssp,
)
from noisygd.algorithms.ssp_centred import (
    DEFAULT_CENTRED_SHARES,
    CentredSSPPlan,
    centred_adassp,
    plan_centred_ssp,
)
from noisygd.exceptions import AssumptionError
from noisygd.oracles.base import GradientOracle
from noisygd.solvers.base import Budget, PublicFacts, Solver, plan_secure_gaussian
from noisygd.solvers.options import (
    OptionCheck,
    check_probability_option,
    check_shares_option,
)

__all__ = ["SSPSolver", "ssp_bounds"]

_OPTIONS = ("shares", "failure_probability")


def ssp_bounds(smoothness: float | None, loss_at_zero_bound: float | None
               ) -> tuple[float, float]:
    r""":math:`(\tilde B, Y) = (\sqrt\beta, \sqrt{2F_0})` of a squared-loss objective
    (module doc), from its declared constants.

    Raises
    ------
    AssumptionError
        If the objective declares no smoothness or no bound on :math:`F(0)` (the squared
        loss without ``target_bound``: SSP's sensitivity needs a public bound on
        :math:`|y|`).
    """
    if smoothness is None or not smoothness > 0:
        raise AssumptionError("ssp needs the declared smoothness of the squared loss (the "
                              "squared row bound)")
    if loss_at_zero_bound is None or not loss_at_zero_bound > 0:
        raise AssumptionError("ssp needs a public bound on |y| (the squared loss's "
                              "target_bound): its sensitivity is row bound x target bound")
    return math.sqrt(float(smoothness)), math.sqrt(2.0 * float(loss_at_zero_bound))


class SSPSolver(Solver):
    """AdaSSP (Wang 2018, Algorithm 2) with exact Gaussian-DP accounting; squared loss only."""

    name = "ssp"
    description = ("AdaSSP sufficient statistics perturbation for least squares (Wang 2018, "
                   "Algorithm 2), exact Gaussian-DP accounting")
    gaussian = True
    clips_gradients = False
    secure_mode = True
    option_names: ClassVar[frozenset[str] | None] = frozenset(_OPTIONS)
    option_checks: ClassVar[dict[str, OptionCheck]] = {
        "shares": functools.partial(check_shares_option, counts=(3, 6)),
        "failure_probability": check_probability_option}

    def plan(self, facts: PublicFacts, budget: Budget) -> SSPPlan | CentredSSPPlan:
        """The releases' noise scales and Wang's thresholds from public facts (no data): the
        centred form's six where the rows carry an intercept column, else Wang's three."""
        if not facts.quadratic_loss:
            raise ValueError("method 'ssp' (sufficient statistics perturbation) applies only "
                             "to the squared loss (DPLinearRegression); use another method "
                             "for this objective")
        if facts.clip is not None:
            raise ValueError("method 'ssp' does not clip gradients (its sensitivity is the "
                             "declared row and target bounds'): leave clip=None")
        if facts.max_iter is not None:
            raise ValueError("method 'ssp' takes no steps (one release of the sufficient "
                             "statistics): leave max_iter=None")
        self.check_options(facts.options)
        B, Y = ssp_bounds(facts.constants.smoothness, facts.loss_at_zero_bound)

        constant = facts.constant_column
        shares = facts.options.get("shares")
        rho = facts.options.get("failure_probability", DEFAULT_FAILURE_PROBABILITY)

        def plan_at(mu: float) -> SSPPlan | CentredSSPPlan:
            if constant is not None:
                return plan_centred_ssp(
                    mu, budget.delta, relation=facts.relation, n_params=facts.n_params,
                    row_bound=B, target_bound=Y, constant=constant,
                    shares=tuple(DEFAULT_CENTRED_SHARES if shares is None else shares),
                    failure_probability=rho, ridge=facts.l2 * facts.n_samples,
                    radius=facts.radius, secure=budget.secure)
            return plan_ssp(
                mu, budget.delta, relation=facts.relation, n_params=facts.n_params,
                row_bound=B, target_bound=Y,
                shares=tuple(DEFAULT_SHARES if shares is None else shares),
                failure_probability=rho,
                ridge=facts.l2 * facts.n_samples, radius=facts.radius, secure=budget.secure,
                n_samples=facts.n_samples)

        if budget.secure:
            return plan_secure_gaussian(plan_at, self.planned_event, budget.secure_rho())
        return plan_at(self._mu(budget))

    @staticmethod
    def _mu(budget: Budget) -> float:
        r"""The run's :math:`\mu`: ``Budget.mu``, else :math:`\mu(\varepsilon, \delta)` less
        a prior Gaussian release's in quadrature (Dong, Roth and Su 2022, Cor. 3.3)."""
        if budget.mu is not None:
            return float(budget.mu)
        from noisygd.accounting.gdp import calibrate_mu, gaussian_mu

        mu = calibrate_mu(budget.epsilon, budget.delta)
        if budget.prior_event is None:
            return mu
        rest = mu * mu - gaussian_mu(budget.prior_event) ** 2
        if not rest > 0:
            raise ValueError(f"epsilon={budget.epsilon!r} is too small to pay for the prior "
                             "release and the run: raise epsilon")
        return math.sqrt(rest)

    def planned_event(self, plan: SSPPlan | CentredSSPPlan) -> Composed:
        """``plan.event``: the Gaussian releases (fixed by the plan)."""
        return plan.event

    def run(self, plan: SSPPlan | CentredSSPPlan, oracle: GradientOracle,
            rng: np.random.Generator) -> FitResult:
        """:func:`~noisygd.algorithms.ssp_centred.centred_adassp` for a centred plan, else
        :func:`~noisygd.algorithms.ssp.adassp`, after checking that the oracle declares the
        bounds (and the intercept column) the plan was made for (public constants only)."""
        B, Y = ssp_bounds(oracle.constants().smoothness, oracle.loss_at_zero_bound())
        if not (math.isclose(B, plan.row_bound, rel_tol=1e-12)
                and math.isclose(Y, plan.target_bound, rel_tol=1e-12)):
            raise ValueError("the oracle declares other row or target bounds than the plan "
                             "was made for")
        if oracle.n_params != plan.n_params:
            raise ValueError(f"the oracle has {oracle.n_params} parameters but the plan was "
                             f"made for {plan.n_params}")
        if isinstance(plan, CentredSSPPlan):
            if constant_column(oracle) != plan.constant:
                raise ValueError("the oracle's rows do not end in the constant column the "
                                 "plan was made for")
            return centred_adassp(oracle, plan, rng)
        return adassp(oracle, plan, rng)
