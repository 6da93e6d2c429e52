r"""Projected noisy GD released at its last iterate (seed 004): ``method="langevin"``.

Plan: :func:`noisygd.planning_langevin.plan_langevin` (Theorem 4 of Chourasia, Ye and
Shokri 2021 with the refinements documented there) from the public facts and the
(epsilon, delta) target. Run: Algorithm 1
(:func:`noisygd.algorithms.langevin_gd.projected_noisy_gd`, Gaussian start, only
:math:`\theta_K` released) on the oracle; the event is a
:class:`~noisygd.accounting.langevin.LastIterateLangevin` under replace-one neighbours, and
the run is checked against the ``langevin_last_iterate`` accountant before it is returned.

Options (``method_options``): ``step_rule`` (see :func:`plan_langevin`). ``max_iter`` caps
``K`` (default :data:`DEFAULT_MAX_STEPS`); ``step_rule="auto"`` raises the step size to fit
:math:`K^*` in at most :data:`DEFAULT_MAX_STEPS` steps whatever the cap, so that a large
cap is not run to the end (``"theorem4"`` or a float step size use the whole cap if
:math:`K^*` needs it). Clipping is refused below the Lipschitz constant:
it would break the gradient-field assumptions of Lemma 5.

**Secure mode** (``Budget.secure``; docs/secure_noise.md). The last-iterate bound needs
continuous Gaussian noise, so a secure run is planned and accounted as the composition of its
``K`` discrete Gaussian steps:
:func:`~noisygd.planning_langevin.plan_langevin_secure` at the budget's zCDP
:math:`\rho` (``Budget.secure_rho``), planned event
``DiscreteGaussianNoise(LastIterateLangevin(...).as_composition(), kappa)``, read by the
``zcdp`` and ``rdp`` accountants; the run is checked to return exactly that event and to be at
most :math:`\rho`-zCDP.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from noisygd.accounting.events import (
    DiscreteGaussianNoise,
    DpEvent,
    LastIterateLangevin,
    Neighbouring,
)
from noisygd.algorithms.base import FitResult
from noisygd.exceptions import AssumptionError
from noisygd.oracles.base import GradientOracle
from noisygd.planning_langevin import (
    LangevinPlan,
    plan_langevin,
    plan_langevin_secure,
    secure_langevin_inflation,
)
from noisygd.solvers.base import Budget, PublicFacts, Solver
from noisygd.solvers.options import OptionCheck, check_step_rule_option

__all__ = ["DEFAULT_MAX_STEPS", "LangevinSolver", "LangevinSolverPlan"]

#: Default cap on ``K`` (full gradients).
DEFAULT_MAX_STEPS = 5000

#: The theorem the solver's runs are recorded under (Algorithm 1, Gaussian start).
THEOREM = "corollary1"


@dataclass(frozen=True)
class LangevinSolverPlan(LangevinPlan):
    """A :class:`~noisygd.planning_langevin.LangevinPlan` plus the public facts the run's
    event records (the constraint set and the objective's declared structure)."""

    constraint: str = "none"
    radius: float | None = None
    quadratic_constant_hessian: bool = False
    row_norm_bound: float = 1.0
    secure: bool = False


class LangevinSolver(Solver):
    """Last-iterate projected noisy GD, Chourasia-Ye-Shokri 2021 accountant."""

    name = "langevin"
    description = "projected noisy GD, last iterate only, Chourasia-Ye-Shokri 2021 accountant"
    relations = (Neighbouring.REPLACE_ONE,)
    clips_gradients = False
    secure_mode = True
    option_names: ClassVar[frozenset[str] | None] = frozenset({"step_rule"})
    option_checks: ClassVar[dict[str, OptionCheck]] = {"step_rule": check_step_rule_option}

    def plan(self, facts: PublicFacts, budget: Budget) -> LangevinSolverPlan:
        """Theorem 4's (sigma, eta, K) for the target, with the facts the event records."""
        self.check_options(facts.options)
        step_rule = facts.options.get("step_rule", "auto")
        if facts.clip is not None:
            lip = facts.constants.lipschitz
            if lip is None or facts.clip < lip:
                raise AssumptionError(
                    "langevin uses unclipped gradients: clipping below the Lipschitz constant "
                    "breaks the gradient-field assumptions of Chourasia et al. Lemma 5 "
                    "(leave clip=None)")
        # max_iter is a cap: "auto" fits K* in the default horizon, never in the cap itself
        max_steps = DEFAULT_MAX_STEPS if facts.max_iter is None else facts.max_iter
        horizon = min(max_steps, DEFAULT_MAX_STEPS)
        if budget.secure:  # composition of discrete Gaussian steps, at the zCDP budget
            base = plan_langevin_secure(
                facts, rho=budget.secure_rho(), step_rule=step_rule, max_steps=max_steps,
                horizon=horizon,
                target={"epsilon": float(budget.epsilon), "delta": float(budget.delta)})
        else:
            base = plan_langevin(
                facts, epsilon=budget.epsilon, delta=budget.delta, step_rule=step_rule,
                max_steps=max_steps, horizon=horizon)
        return LangevinSolverPlan(
            **{f.name: getattr(base, f.name) for f in dataclasses.fields(LangevinPlan)},
            constraint="none" if facts.radius is None else "ball",
            radius=None if facts.radius is None else float(facts.radius),
            quadratic_constant_hessian=facts.quadratic_constant_hessian,
            row_norm_bound=facts.row_norm_bound,
            secure=bool(budget.secure),
        )

    def planned_event(self, plan: LangevinSolverPlan) -> DpEvent:
        r"""The :class:`~noisygd.accounting.events.LastIterateLangevin` event of Algorithm 1
        run with the plan (Gaussian start :math:`N(0, 2\sigma^2/\lambda I)`, hidden
        trajectory, unclipped gradients, Corollary 1). Its ``objective`` is described
        by the plan's declared constants; :meth:`run` checks every other field against the
        event :func:`~noisygd.algorithms.langevin_gd.projected_noisy_gd` returns. A secure plan's
        event is ``DiscreteGaussianNoise(that.as_composition(), kappa)`` (module docstring)."""
        if not isinstance(plan, LangevinSolverPlan):
            raise TypeError("planned_event needs the plan LangevinSolver.plan returned")
        lam = plan.strong_convexity
        event = LastIterateLangevin(
            strong_convexity=lam, smoothness=plan.smoothness, step_size=plan.step_size,
            sigma=plan.sigma, steps=plan.steps, n_samples=plan.n_samples,
            sensitivity=plan.sensitivity, theorem=THEOREM, lsi_constant=None,
            constraint=plan.constraint, radius=plan.radius, start="projected_gaussian",
            start_variance=2.0 * plan.sigma**2 / lam, hidden_trajectory=True,
            clipped_gradients=False,
            quadratic_constant_hessian=plan.quadratic_constant_hessian,
            objective=(f"declared objective (lambda={lam:g}, beta={plan.smoothness:g}, "
                       f"S_g={plan.sensitivity:g}) with rows ||x|| <= "
                       f"{plan.row_norm_bound:g}"),
        )
        if plan.secure:
            return DiscreteGaussianNoise(event.as_composition(), secure_langevin_inflation(plan))
        return event

    def run(self, plan: LangevinSolverPlan, oracle: GradientOracle,
            rng: np.random.Generator) -> FitResult:
        """Algorithm 1 with the plan; the event is checked against the plan and the target."""
        from noisygd.accounting.base import within_budget
        from noisygd.accounting.langevin import LastIterateLangevinAccountant
        from noisygd.algorithms.langevin_gd import projected_noisy_gd

        planned = self.planned_event(plan)
        result = projected_noisy_gd(
            oracle, sigma=plan.sigma, step_size=plan.step_size, steps=plan.steps,
            n_samples=plan.n_samples, theorem=THEOREM, rng=rng,
        )
        if plan.secure:
            return self._check_secure_run(plan, planned, result)
        if dataclasses.replace(result.event, objective=planned.objective) != planned:
            raise RuntimeError("internal error: the run's event differs from the planned one "
                               "(the oracle's constants differ from the plan's facts)")
        result.event = planned
        target = plan.info["target"]
        spent = LastIterateLangevinAccountant().epsilon(result.event, target["delta"])
        if not within_budget(spent, target["epsilon"]):  # pragma: no cover - planned to meet
            raise RuntimeError(f"internal error: the planned run spends epsilon={spent:.6g} "
                               f"> {target['epsilon']:.6g}")
        result.info["plan"] = {**plan.to_dict(), "epsilon": spent}
        return result

    @staticmethod
    def _check_secure_run(plan: LangevinSolverPlan, planned: DpEvent,
                          result: FitResult) -> FitResult:
        """The secure run's event must be the planned one and at most the plan's zCDP rho."""
        from noisygd.accounting.zcdp import zcdp_rho

        if result.event != planned:
            raise RuntimeError("internal error: the secure run's event differs from the planned "
                               "one (the oracle's constants, or the SecureRandom's grid_bits, "
                               "differ from the plan's)")
        spent = zcdp_rho(result.event)
        if spent > plan.rho:  # pragma: no cover - planned to meet
            raise RuntimeError(f"internal error: the planned secure run spends rho={spent:.6g} "
                               f"> {plan.rho:.6g}")
        result.info["plan"] = {**plan.to_dict(), "zcdp_rho": spent}
        return result
