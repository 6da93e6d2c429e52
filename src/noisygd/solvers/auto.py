r"""The default method's choice between NoisyGD and private Newton (``method="auto"``).

:class:`ChoosingSolver` is NoisyGD (:class:`~noisygd.solvers.noisy_gd.NoisyGDSolver`, whose
name, options and planned ridge it keeps) that, after making NoisyGD's plan from the public
facts, runs :class:`~noisygd.solvers.newton.NewtonSolver` instead when the rule of
:func:`choose_method` says so. Both plans are made from public facts only, so the choice
costs no privacy; the event is the chosen plan's, known before any row is read (the ledger
records it). ``fit_info_["method"]`` names the method that ran and
``fit_info_["method_choice"]`` says why (:func:`noisygd.training.fit_private`).
``DPLogisticRegression`` uses it for ``method="auto"`` (binary, one-vs-rest and multinomial
fits, no ``max_iter`` or tuning, no ``method_options`` but the distance's and the sharp
clip's);
``method="noisy_gd"`` always runs NoisyGD.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from noisygd.algorithms.base import FitResult
from noisygd.algorithms.newton import DEFAULT_HESSIAN_RATIO, DEFAULT_STEPS
from noisygd.exceptions import AssumptionError
from noisygd.oracles.base import GradientOracle
from noisygd.planning import NoisyGDPlan
from noisygd.solvers.base import Budget, PublicFacts
from noisygd.solvers.newton import MAX_FULL_PARAMS, NewtonSolver
from noisygd.solvers.noisy_gd import NoisyGDSolver, warn_if_budget_binds

__all__ = ["CHOOSING_OPTIONS", "ChoosingSolver", "SecondOrderPlan", "choose_method",
           "curvature_floor_ratio", "curvature_share", "floor_steps", "gradient_share"]

#: The ``method_options`` with which an estimator's ``method="auto"`` still chooses (the
#: distance's and the sharp clip's); any other option is NoisyGD's, and NoisyGD runs.
CHOOSING_OPTIONS = frozenset({"optimum_norm_bound", "distance_pilot", "sharp_clip"})


@dataclasses.dataclass(frozen=True)
class SecondOrderPlan:
    """The plan of ``method="auto"`` when :func:`choose_method` chose the second-order
    method: its :class:`~noisygd.algorithms.newton.NewtonPlan` and the choice's record."""

    plan: Any
    choice: dict[str, Any]


def curvature_share(newton_plan: Any) -> float:
    r"""The share of the Newton plan's :math:`\mu^2` spent on its preconditioner releases
    (the curvature, and for the diagonal form's paid row support its histogram),
    :math:`\sum_h\mu_h^2/\mu^2` (:meth:`~noisygd.algorithms.newton.NewtonPlan.mu_squares`),
    from the plan alone (public). The Newton planner gives each curvature release the noise
    whose eigenvalue floor is a tenth of the curvature per direction of ``n`` rows at the
    declared bound (``hessian_ratio``), within ``hessian_max_share``; the smaller this
    share, the less gradient budget Newton gives up."""
    g, h = newton_plan.mu_squares()
    return float(math.fsum(h) / (math.fsum(g) + math.fsum(h)))


def gradient_share(newton_plan: Any) -> float:
    r"""The share of the Newton plan's :math:`\mu^2` that its output's noise is the noise of:
    :math:`\mu_{\rm tail}^2/\mu^2` (:meth:`~noisygd.algorithms.newton.NewtonPlan.tail_mu`; the
    output is the :math:`\mu_t^2`-weighted mean of the tail's iterates, whose noise is that
    of one gradient release at :math:`\mu_{\rm tail}`). Public (from the plan alone)."""
    g, h = newton_plan.mu_squares()
    return float(newton_plan.tail_mu() ** 2 / (math.fsum(g) + math.fsum(h)))


def curvature_floor_ratio(newton_plan: Any) -> float:
    r""":math:`r = \tau/(nC_H/p)`: the Newton plan's eigenvalue floor over the mean curvature
    per direction of ``n`` rows at the declared bound (``details["hessian_noise_ratio"]`` of
    :func:`~noisygd.algorithms.newton.plan_newton`, whose target is
    :data:`~noisygd.algorithms.newton.DEFAULT_HESSIAN_RATIO`); 0 for the diagonal form, whose
    steps are majorisation steps of their own rule. Public (from the plan alone)."""
    if newton_plan.hessian != "full":
        return 0.0
    return float(newton_plan.details.get("hessian_noise_ratio", 0.0))


def floor_steps(newton_plan: Any) -> int:
    r"""The steps of a Newton run that :func:`choose_method` chose (full form):

    .. math:: T = \Big\lfloor T_0\,\frac{1 + r}{1 + r_0}\Big\rfloor ,

    :math:`T_0` = :data:`~noisygd.algorithms.newton.DEFAULT_STEPS`, :math:`r`
    (:func:`curvature_floor_ratio`, at most 1 where Newton is chosen) and its target
    :math:`r_0`. Along a direction of the mean curvature :math:`\bar h` a step
    preconditioned by the curvature plus the floor :math:`r\bar h` moves
    :math:`1/(1 + r)` of the Newton step, so :math:`T` keeps the default's total step
    there (:math:`T_0` steps of :math:`1/(1 + r_0)`); ``T_0`` wherever :math:`r \le r_0`
    (every binary problem measured) and at most :math:`2T_0/(1 + r_0)` (19). The curvature
    releases (at step 0 and the last approach step) and the tail's share are the plan's, so
    the output's noise is unchanged. The diagonal form keeps its own steps (its rule:
    :mod:`noisygd.algorithms.newton`, "The diagonal preconditioner's steps"). **A measured
    rule** (docs/newton.md, "Multinomial fits"), from public values only."""
    if newton_plan.hessian != "full":
        return int(newton_plan.steps)
    r = curvature_floor_ratio(newton_plan)
    target = float(newton_plan.details.get("hessian_ratio_target", DEFAULT_HESSIAN_RATIO))
    return max(int(newton_plan.steps),
               math.floor(DEFAULT_STEPS * (1.0 + r) / (1.0 + target)))


def choose_method(plan: NoisyGDPlan, facts: PublicFacts,
                  newton_plan: Any = None) -> tuple[str, str]:
    r"""``(method, why)``: the default's choice between NoisyGD and private Newton
    (``method="auto"``; docs/estimators.md, "The default method"), from public facts only.

    **Rule.** Newton (:mod:`noisygd.solvers.newton`; when
    :math:`p >` :data:`~noisygd.solvers.newton.MAX_FULL_PARAMS`, its private diagonal
    preconditioner: NoisyGD preconditioned by the curvature's diagonal, step :math:`1/m` with
    momentum :math:`1 - 1/\sqrt m`, :math:`m` the rows' support bound, declared or paid for
    where the oracle serves its histogram, :mod:`noisygd.algorithms.newton`, "The paid row
    support") when the objective states its smoothness and has no projection ball,
    NoisyGD's compute budget binds
    (``plan.details["compute_budget_binds"]``: its accelerated rule wants
    :math:`T_{\rm want}` steps, more than the budget :math:`T_{\max}`) and

    .. math:: T_{\max}/T_{\rm want} < \mu_{\rm tail}^2/\mu^2 \quad
              (:func:`gradient_share`);

    NoisyGD otherwise. Each side is the fraction of its ideal run a method keeps, from
    public facts: NoisyGD runs :math:`T_{\max}/T_{\rm want}` of the steps its rule wants (it
    stops before the bound's stationary phase: optimisation-limited); Newton converges in
    its few steps but its output carries the noise of one gradient release at
    :math:`\mu_{\rm tail}`, i.e. it keeps :math:`\mu_{\rm tail}^2/\mu^2` of the budget (the
    rest pays for its curvature and its approach steps). The method that keeps more is
    chosen.

    **Premise.** The rule's Newton converges in its few steps, which needs its curvature
    release to resolve the curvature: for the full form, the eigenvalue floor at most the
    mean curvature per direction of ``n`` rows at the declared bound
    (:func:`curvature_floor_ratio` :math:`\le 1`, public, from the plan); NoisyGD where
    it is larger. (Multinomial fits meet it where ``n`` is large against their ``Kp'``
    parameters; on every binary problem measured the ratio was at most 0.13, docs/newton.md,
    "Multinomial fits".)

    **Status: a measured rule, not a theorem.** The two fractions are not the same unit of
    excess risk; the rule was judged on bench_utility's binary tables and on synthetic
    logistic problems (docs/newton.md, "The default's choice"), and for the diagonal form on
    the CSR scale problem and four synthetic sparse problems (docs/newton.md, "Many
    features": as good or better wherever it is chosen). Both inputs are public (the
    plans are made from public facts), so the choice costs no privacy.
    """
    d = plan.details
    wanted, budget = d.get("unconstrained_steps"), d.get("compute_budget")
    if wanted is None or budget is None:
        return "noisy_gd", "NoisyGD: its plan's steps are fixed (max_iter or options)"
    if newton_plan is None:
        return "noisy_gd", "NoisyGD: Newton needs a declared smoothness and no projection ball"
    floor_ratio = curvature_floor_ratio(newton_plan)
    if floor_ratio > 1.0:
        return "noisy_gd", (f"NoisyGD: Newton's curvature release would not resolve the "
                            f"curvature (its eigenvalue floor is {floor_ratio:.3g} times the "
                            "mean curvature per direction, above 1), so its few steps would "
                            "not converge")
    if not d.get("compute_budget_binds"):
        return "noisy_gd", (f"NoisyGD: its accelerated rule wants {wanted:,.0f} steps, within "
                            f"its compute budget of {budget:,} (noise-limited)")
    kept_gd, kept_newton = budget / wanted, gradient_share(newton_plan)
    if kept_newton <= kept_gd:
        return "noisy_gd", (f"NoisyGD: its compute budget of {budget:,} steps is {kept_gd:.3g} "
                            f"of the {wanted:,.0f} its rule wants, and Newton's output would "
                            f"keep only {kept_newton:.3g} of the budget's mu^2 (the rest pays "
                            "for its curvature and approach steps)")
    return "newton", (f"Newton: NoisyGD's compute budget of {budget:,} steps is only "
                      f"{kept_gd:.3g} of the {wanted:,.0f} its rule wants "
                      f"(optimisation-limited), and Newton's output keeps {kept_newton:.3g} "
                      "of the budget's mu^2")


class ChoosingSolver(NoisyGDSolver):
    """NoisyGD, or private Newton where :func:`choose_method` prefers it (module doc)."""

    name = "auto"
    description = ("NoisyGD, or private Newton when NoisyGD's compute budget binds and the "
                   "curvature is cheap (public rule), exact Gaussian-DP accounting")

    def plan(self, facts: PublicFacts, budget: Budget) -> Any:
        """NoisyGD's plan, or :class:`SecondOrderPlan` when the rule chooses Newton."""
        # the choice is made at the theorem's bound on the distance, the input the rule was
        # measured with (docs/newton.md); a declared or paid distance (noisygd.solvers.distance)
        # only sets NoisyGD's horizon once NoisyGD is chosen (measured: a declared D = 16 on the
        # dense 1e5 x 50 problem would otherwise trade Newton's 10 steps for NoisyGD's 402 at
        # an equal AUC); a start (theta0, e.g. the classifier's released base rate) likewise
        # only moves NoisyGD's distance once NoisyGD is chosen
        theorem_facts = dataclasses.replace(facts, options={
            k: v for k, v in facts.options.items()
            if k not in ("optimum_norm_bound", "distance_pilot", "theta0")})
        plan = self.plan_quietly(theorem_facts, budget, pilot=False)
        newton_plan, refusal, floor_raised = None, None, False
        if (facts.radius is None and facts.constants.smoothness
                and facts.curvature_sums is not False):
            try:  # e.g. the diagonal form without a declared row_nonzeros, extreme constants
                # NoisyGD's ridge options carry over (Newton plans the same ridge, at its
                # tail's mu), the start and the sharp clip (Newton's after its first step);
                # NoisyGD's other options do not apply to Newton
                ridge_options = {k: facts.options[k]
                                 for k in ("l2", "l2_factor", "theta0", "sharp_clip")
                                 if k in facts.options}
                newton_facts = dataclasses.replace(facts, options=ridge_options)
                newton_plan = NewtonSolver().plan(newton_facts, budget)
                steps = floor_steps(newton_plan)
                if steps != newton_plan.steps:  # the same releases, more approach steps
                    newton_plan = NewtonSolver().plan(dataclasses.replace(
                        newton_facts, options={**ridge_options, "steps": steps}), budget)
                    floor_raised = True
            except (AssumptionError, ValueError, ArithmeticError) as exc:
                refusal = str(exc)
        chosen, why = choose_method(plan[0], facts, newton_plan)
        if refusal is not None:
            why = f"NoisyGD: Newton cannot be planned from these public facts ({refusal})"
        if chosen == "newton":
            if newton_plan.hessian == "diagonal":
                source = "paid for" if newton_plan.nnz_noise is not None else "declared"
                why += (f"; p = {facts.n_params:,} > {MAX_FULL_PARAMS:,}: its private diagonal "
                        f"preconditioner, step 1/m with the rows' support bound m {source}")
            if floor_raised:
                why += (f"; {newton_plan.steps} steps for its curvature floor "
                        f"{curvature_floor_ratio(newton_plan):.3g} times the mean curvature "
                        "(floor_steps)")
            return SecondOrderPlan(newton_plan, {"method": "newton", "rule": why})
        choice = {"method": "noisy_gd", "rule": why}
        if len(theorem_facts.options) != len(facts.options):  # a distance option, a start
            plan = self.plan_quietly(facts, budget)
        plan[0].details["method_choice"] = choice
        if "_pilot" not in plan[1]:
            warn_if_budget_binds(plan[0])  # else the run warns, after the pilot
        return plan

    def method_name(self, plan: Any) -> str:
        """The chosen method's name (the ledger's label names the method that ran)."""
        return NewtonSolver.name if isinstance(plan, SecondOrderPlan) else NoisyGDSolver.name

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
