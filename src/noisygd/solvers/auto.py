r"""The default method's choice between NoisyGD and private Newton (``method="auto"``).

:class:`ChoosingSolver` is NoisyGD (:class:`~noisygd.solvers.noisy_gd.NoisyGDSolver`, whose
name, options and planned ridge it keeps) that, after making NoisyGD's plan from the public
facts, runs :class:`~noisygd.solvers.newton.NewtonSolver` instead when the rule of
:func:`choose_method` says so. Both plans are made from public facts only, so the choice
costs no privacy; the event is the chosen plan's, known before any row is read (the ledger
records it). ``fit_info_["method"]`` names the method that ran and
``fit_info_["method_choice"]`` says why (:func:`noisygd.training.fit_private`).
``DPLogisticRegression`` uses it for ``method="auto"`` (binary and one-vs-rest fits, no
``max_iter``, ``method_options`` or tuning); ``method="noisy_gd"`` always runs NoisyGD.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from noisygd.algorithms.base import FitResult
from noisygd.exceptions import AssumptionError
from noisygd.oracles.base import GradientOracle
from noisygd.planning import NoisyGDPlan
from noisygd.solvers.base import Budget, PublicFacts
from noisygd.solvers.newton import NewtonSolver
from noisygd.solvers.noisy_gd import NoisyGDSolver, warn_if_budget_binds

__all__ = ["NEWTON_CURVATURE_SHARE", "ChoosingSolver", "SecondOrderPlan", "choose_method",
           "curvature_share"]


@dataclasses.dataclass(frozen=True)
class SecondOrderPlan:
    """The plan of ``method="auto"`` when :func:`choose_method` chose the second-order
    method: its :class:`~noisygd.algorithms.newton.NewtonPlan` and the choice's record."""

    plan: Any
    choice: dict[str, Any]


#: ``method="auto"`` chooses Newton only when its curvature releases, at the Newton
#: planner's own precision, cost at most this share of the run's Gaussian-DP budget
#: :math:`\mu^2` (:func:`choose_method`).
NEWTON_CURVATURE_SHARE = 0.05


def curvature_share(newton_plan: Any) -> float:
    r"""The share of the Newton plan's :math:`\mu^2` spent on its curvature releases,
    :math:`\sum_h(\Delta_H/z_h)^2/\sum_k(\Delta_k/z_k)^2`, from the plan alone (public).
    The Newton planner gives each release the noise whose eigenvalue floor is a tenth of the
    curvature per direction of ``n`` rows at the declared bound (``hessian_ratio``), within
    half the budget; the smaller this share, the less gradient budget Newton gives up."""
    from noisygd.algorithms.newton import curvature_sensitivity

    sens_h = curvature_sensitivity(newton_plan.relation)
    sens_g = newton_plan.relation.clipped_sum_sensitivity
    mu2_h = sum((sens_h / z) ** 2 for z in newton_plan.hessian_noise)
    mu2_g = sum((sens_g / z) ** 2 for z in newton_plan.gradient_noise)
    return float(mu2_h / (mu2_h + mu2_g))


def choose_method(plan: NoisyGDPlan, facts: PublicFacts,
                  newton_plan: Any = None) -> tuple[str, str]:
    r"""``(method, why)``: the default's choice between NoisyGD and private Newton
    (``method="auto"``; docs/estimators.md, "The default method"), from public facts only.

    **Rule.** Newton (:mod:`noisygd.solvers.newton`; its diagonal preconditioner when
    :math:`p >` :data:`~noisygd.solvers.newton.MAX_FULL_PARAMS`) when (1) NoisyGD's
    accelerated rule wants more steps than its compute budget
    (``plan.details["compute_budget_binds"]``, before any ridge horizon), (2) Newton's
    curvature releases at its planner's precision take at most
    :data:`NEWTON_CURVATURE_SHARE` = 5% of the budget (:func:`curvature_share`), and the
    objective states its smoothness and has no projection ball; NoisyGD otherwise.

    **Why.** :math:`T^* \propto (neta_F D\mu/(\sqrt d\,C))^{1/2}` grows with the signal
    against one step's noise: a plan whose :math:`2T^*` exceeds the budget is
    optimisation-limited (it stops before the bound's stationary phase, and every extra pass
    costs a read of the data), which is where a method converging in a few steps wins: its
    10 steps reach the optimisation accuracy of lbfgs. Newton pays for its curvature from
    the same budget: when that share is small (many rows against :math:`p^{3/2}`), its
    gradients are nearly as precise as NoisyGD's; when it is large, the curvature's noise
    costs more than the saved steps gain (measured on bench_utility's bank at epsilon 2 and 8,
    shares 0.5 and 0.12: Newton's test AUC 0.888 and 0.901 against NoisyGD's 0.909 and
    0.910; the 5% is a stated public constant, not a fitted one). A plan within its budget
    is noise-limited, where NoisyGD's averaged run spends the budget
    on many small steps (on 3 000 to 4 000 rows, noisy Newton matched but did not beat
    NoisyGD: issue 19). Both inputs are public (the plan is made from public facts), so the
    choice costs no privacy.
    """
    d = plan.details
    wanted, budget = d.get("unconstrained_steps"), d.get("compute_budget")
    if wanted is None or budget is None:
        return "noisy_gd", "NoisyGD: its plan's steps are fixed (max_iter or options)"
    if newton_plan is None:
        return "noisy_gd", "NoisyGD: Newton needs a declared smoothness and no projection ball"
    share = curvature_share(newton_plan)
    if not d.get("compute_budget_binds"):
        return "noisy_gd", (f"NoisyGD: its accelerated rule wants {wanted:,.0f} steps, within "
                            f"its compute budget of {budget:,} (noise-limited)")
    if share > NEWTON_CURVATURE_SHARE:
        return "noisy_gd", (f"NoisyGD: Newton's curvature releases would take {share:.3g} of "
                            f"the budget, above {NEWTON_CURVATURE_SHARE:g} (the gradient noise "
                            "it gives up outweighs the steps it saves)")
    return "newton", (f"Newton: NoisyGD's accelerated rule wants {wanted:,.0f} steps, more "
                      f"than its compute budget of {budget:,} (optimisation-limited), and "
                      f"Newton's curvature releases take {share:.3g} <= "
                      f"{NEWTON_CURVATURE_SHARE:g} of the budget")


class ChoosingSolver(NoisyGDSolver):
    """NoisyGD, or private Newton where :func:`choose_method` prefers it (module doc)."""

    name = "auto"
    description = ("NoisyGD, or private Newton when NoisyGD's compute budget binds and the "
                   "curvature is cheap (public rule), exact Gaussian-DP accounting")

    def plan(self, facts: PublicFacts, budget: Budget) -> Any:
        """NoisyGD's plan, or :class:`SecondOrderPlan` when the rule chooses Newton."""
        plan = self.plan_quietly(facts, budget)
        newton_plan, refusal = None, None
        if facts.radius is None and facts.constants.smoothness:
            try:  # e.g. the diagonal form without a declared row_nonzeros, extreme constants
                # NoisyGD's ridge options carry over (Newton plans the same ridge, at its
                # tail's mu); NoisyGD's other options do not apply to Newton
                ridge_options = {k: facts.options[k] for k in ("l2", "l2_factor")
                                 if k in facts.options}
                newton_plan = NewtonSolver().plan(
                    dataclasses.replace(facts, options=ridge_options), budget)
            except (AssumptionError, ValueError, ArithmeticError) as exc:
                refusal = str(exc)
        chosen, why = choose_method(plan[0], facts, newton_plan)
        if refusal is not None:
            why = f"NoisyGD: Newton cannot be planned from these public facts ({refusal})"
        if chosen == "newton":
            return SecondOrderPlan(newton_plan, {"method": "newton", "rule": why})
        plan[0].details["method_choice"] = {"method": "noisy_gd", "rule": why}
        warn_if_budget_binds(plan[0])
        return plan

    def planned_event(self, plan: Any) -> Any:
        """The chosen plan's event."""
        if isinstance(plan, SecondOrderPlan):
            return NewtonSolver().planned_event(plan.plan)
        return super().planned_event(plan)

    def run(self, plan: Any, oracle: GradientOracle, rng: np.random.Generator) -> FitResult:
        """The chosen method's run; ``info["method_choice"]`` says which and why."""
        if isinstance(plan, SecondOrderPlan):
            result = NewtonSolver().run(plan.plan, oracle, rng)
            result.info["method_choice"] = dict(plan.choice)
            return result
        return super().run(plan, oracle, rng)
