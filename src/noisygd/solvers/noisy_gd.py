r"""NoisyGD (Lecture 12, eq. 12.1) planned by section 12.2: ``method="noisy_gd"``.

Plan: :func:`noisygd.planning.plan_noisy_gd` from the public facts (``n``, ``p``, the
declared constants, the clipping norm, the relation, ``max_iter``, a public bound on
:math:`\lVert\theta^*\rVert` as the initial distance ``D``) and the budget's Gaussian-DP
:math:`\mu` (``Budget.mu`` when the caller split a GDP budget, else the exact
:math:`\mu(\varepsilon, \delta)`). Run: :func:`noisygd.algorithms.noisy_gd.noisy_gd`
against the oracle. The event is ``SelfComposed(Gaussian(z, Delta), T)``, exactly
:math:`\sqrt T\Delta/z = \mu`-GDP (Dong, Roth and Su 2022, Cor. 3.3), so the solver is
``gaussian``: a count and several one-vs-rest problems share one budget by
:math:`\mu^2 = \sum_k\mu_k^2`.

Options (``method_options``): ``{"plan": {...}}`` goes to the planner (``accelerate``,
``momentum``, ``init_distance``, ``loss_gap``, ``max_steps``, ``step_budget``: the compute
budget, :mod:`noisygd.planning`, "The compute budget", with a
:class:`~noisygd.planning.ComputeBudgetWarning` when it binds); ``"noise_dimension"`` is the
``d`` the plan counts and ``"horizon": "ridge"`` runs to the planned ridge's horizon (below);
``"optimum_norm_bound"`` declares a public bound on the optimum's norm (the plan's ``D``) and
``"distance_pilot"`` pays for an estimate of it (:mod:`noisygd.solvers.distance`: the plan's
``details["init_distance_source"]`` says which of declared, paid estimate, released estimate
(a regressor's released comparator radius), the theorem's bound :math:`\sqrt{2F_0/\lambda}`,
given or radius it used);
``"sharp_clip"`` (a ratio :math:`s \in (0, 1]`) scales the clip by the run's noise regime
(below); ``"l2"`` adds a ridge to the oracle's own (``"auto"``:
:func:`noisygd.planning.ridge_strength`, below, times ``"l2_factor"`` if given; a number:
that ridge); any other key (``averaging``, ``momentum``, ``schedule``, ``theta0``)
overrides the run; with ``theta0`` the plan's ``D`` is :math:`\lVert\theta_0\rVert` plus
the bound on :math:`\lVert\theta^*\rVert` (the triangle inequality;
``details["init_distance_start"]``). The plan's ``details["bound_covers_run"]`` is
recomputed for the run actually made (:meth:`noisygd.planning.NoisyGDPlan.covers`).

The planned ridge (``"l2": "auto"``, what ``l2=None`` of the estimators asks for)
--------------------------------------------------------------------------------
The ridge is chosen here, after the private count, because the heuristic balance needs the
public ``n``: :math:`\lambda^* = \sqrt d\,C\Delta/(\mu n^{3/2}\sqrt{2F_0})`
(:func:`noisygd.planning.ridge_strength`: the bias :math:`\frac\lambda2D_0^2` against the
comparator of radius :math:`D_0 = \sqrt{2nF_0}` balanced with the stationary noise of the
run at its horizon :math:`\kappa = \beta_F/\lambda`), with ``n`` the count's lower
confidence bound (``PublicFacts.n_samples``), ``d`` the parameters, ``C`` the clipping norm,
:math:`\Delta` the relation's sensitivity, :math:`\mu` the run's Gaussian-DP budget and
:math:`F_0` the oracle's ``loss_at_zero_bound``. The plan is made for the objective with
strong convexity ``oracle.l2 + lambda*`` and :math:`D = \sqrt{2F_0/(\text{l2} +
\lambda^*)}` (the bound on the regularised optimum's norm), and the run descends that
objective (:class:`RidgedOracle`). The ridge is a function of public quantities only, so
privacy is unchanged; it is recorded as ``info["plan"]["l2_planned"]``, with
``info["plan"]["l2_planned_status"]`` = :data:`noisygd.planning.RIDGE_STATUS` (a heuristic
balance: no theorem covers the capped run).

The sharp clip (``"sharp_clip": s``)
-----------------------------------
The plan is first made at the base clip :math:`C` (the facts' clip, else the Lipschitz
constant); its public noise-to-signal ratio :math:`q = \sqrt d\,z/n` places the run between
optimisation-limited and noise-limited (:func:`noisygd.planning.noise_regime`, the scale on
which the momentum falls to 0), and the run is re-planned at
:math:`C\,(1 - (1 - s)\,r(q))` (:func:`noisygd.planning.sharp_clip_factor`): the base clip
when optimisation-limited, :math:`sC` when noise-limited. ``DPLogisticRegression`` passes
:math:`s = 1/2` for a binary fit without ``clip=``: the logistic residual of a correctly
classified row (and of every row at :math:`\theta = 0`) is at most 1/2, so the clip still
never changes those gradients where the base clip covered residuals up to 1, and the noise is
up to half; ``DPLinearRegression`` passes :math:`z_{3/4}/1.345`, which takes Huber's clip to
the median residual of Gaussian errors. A heuristic trade of clipping bias for noise, measured
(``experiments/sharp_clip.py``, docs/noisygd.md); the clip is public, so the event is
unchanged. A projection radius or the textbook plan (``accelerate=False``) keeps the base clip,
which the section-12.2 bounds assume. ``info["plan"]["clip_rule"]`` records both clips, the
ratio and the factor.

The ridge's horizon (``"horizon": "ridge"``)
--------------------------------------------
With the planned ridge, the accelerated plan and no ``max_iter``, ``"horizon": "ridge"`` makes
the run reach the horizon :func:`noisygd.planning.ridge_strength` assumes: the theorem
balances the ridge's bias with the stationary noise of a run of
:math:`\kappa = \beta_F/\lambda` plain steps (for a constant momentum ``m``,
:math:`(1 - m)\kappa` steps), so the plan runs
:math:`T_h = \min(T_{\max}, \max(T_{\rm plan}, \lceil(1 - m)\kappa\rceil))` steps
(:func:`noisygd.planning.ridge_horizon_steps`) at the accelerated plan's momentum, with the noise
calibrated for :math:`T_h` (the event is exactly the budget's :math:`\mu`-GDP, whatever ``T``)
and the suffix average of the last half released (post-processing). Without it the plan's ``T``
is the accelerated bound's, which stops before the horizon when the noise ratio turns momentum
off. ``DPLogisticRegression`` asks for it for multinomial fits (docs/noisygd.md, "The
multinomial problem") and ``DPLinearRegression`` for every fit with the planned ridge
(docs/estimators.md, "Intercept scale"); binary fits do not (a planner-wide switch moved
their benchmark results, so it is left to a measured decision).

The noise dimension (``"noise_dimension"``)
-------------------------------------------
The plan's ``d`` (in :math:`T^*`, the momentum's noise-to-signal ratio, the section-12.2
bounds and :math:`\lambda^*`) counts the coordinates whose noise can change the loss.
It is ``n_params`` unless ``method_options["noise_dimension"]`` names a smaller public
``d_S``: the dimension of a subspace :math:`S` that holds every clipped gradient sum,
is mapped into itself by the ridge (every subspace is), and whose orthogonal complement
leaves the loss and the predictions unchanged (:math:`F(\theta + v) = F(\theta)` for
:math:`v \perp S`). Then :math:`P_S\theta_t` is exactly NoisyGD in ``d_S`` dimensions
with noise :math:`P_S\xi_t` (the Gaussian's projection), and the rest of
:math:`\theta_t` changes no prediction, so every utility bound of the plan holds with
``d_S``. The multinomial loss has :math:`S = \{\Theta: \mathbf 1^\top\Theta = 0\}`,
``d_S = (K - 1) p`` (:meth:`noisygd.objectives.multinomial.MultinomialLogisticLoss.noise_dimension`;
``DPLogisticRegression`` passes it). The run still draws noise in all ``n_params``
coordinates and the event is unchanged: ``d_S`` is a public fact of the objective, used
for planning only (recorded as ``info["plan"]["noise_dimension"]``).

Secure mode (``Budget.secure``): the run draws discrete Gaussian noise
(:mod:`noisygd.mechanisms.secure`) and returns ``DiscreteGaussianNoise(SelfComposed(...),
kappa)`` with :math:`\kappa` = :func:`noisygd.mechanisms.noise.sensitivity_inflation` at the
step's noise :math:`zC`; the plan is made at the largest Gaussian-DP :math:`\mu` for which
that event is at most :math:`\rho`-zCDP, :math:`\rho` = ``Budget.secure_rho()``
(:func:`noisygd.solvers.base.plan_secure_gaussian`).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, ClassVar

import numpy as np

from noisygd._checks import (
    check_choice,
    check_positive,
    check_positive_int,
    user_stacklevel,
)
from noisygd.accounting.events import Gaussian, Neighbouring, SelfComposed
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.noisy_gd import AVERAGINGS, SCHEDULES
from noisygd.exceptions import AssumptionError
from noisygd.objectives.base import ObjectiveConstants
from noisygd.oracles.base import GradientOracle
from noisygd.planning import (
    MAX_STEPS_ACCELERATED,
    RIDGE_STATUS,
    ComputeBudgetWarning,
    NoisyGDPlan,
    check_sharp_ratio,
    plan_noisy_gd,
    ridge_horizon_steps,
)
from noisygd.solvers.base import Budget, PublicFacts, Solver, plan_secure_gaussian
from noisygd.solvers.distance import (
    DECLARED,
    GIVEN,
    PAID,
    PILOT_MIN_DISTANCE,
    PILOT_SAFETY,
    RELEASED,
    THEOREM,
    paid_distance,
    pilot_applies,
    pilot_share,
    piloted_event,
    released_distance,
)
from noisygd.solvers.options import (
    OptionCheck,
    check_bool_option,
    check_choice_option,
    check_horizon_option,
    check_l2_option,
    check_momentum_option,
    check_nonnegative_option,
    check_pilot_option,
    check_positive_int_option,
    check_positive_option,
    check_sharp_option,
    check_start_option,
    optional,
)
from noisygd.solvers.ridge import RidgedOracle, planned_ridge
from noisygd.solvers.sharp_clip import scaled_clip

__all__ = ["NoisyGDSolver", "RidgedOracle", "regime_clip", "warn_if_budget_binds"]


def warn_if_budget_binds(plan: NoisyGDPlan) -> None:
    """:class:`~noisygd.planning.ComputeBudgetWarning` when the plan's compute budget bound
    (:mod:`noisygd.planning`, "The compute budget"), naming the steps its rule wanted."""
    details = plan.details
    if not details.get("compute_budget_binds"):
        return
    wanted = details["unconstrained_steps"]
    shown = f"{wanted:,.0f}" if math.isfinite(wanted) else "more than 10,000,000"
    warnings.warn(
        f"NoisyGD's plan wanted {shown} steps ({details.get('steps_rule', 'accelerated rule')})"
        f"; the compute budget of {details['compute_budget']:,} steps binds and the run makes "
        f"{plan.steps:,}: pass method_options={{'plan': {{'step_budget': T}}}} to allow more "
        "(each step is one pass over the data)", ComputeBudgetWarning,
        stacklevel=user_stacklevel())


class NoisyGDSolver(Solver):
    """NoisyGD with the section-12.2 planner and exact Gaussian-DP accounting."""

    name = "noisy_gd"
    description = "NoisyGD (eq. 12.1), planner of section 12.2, exact Gaussian-DP accounting"
    gaussian = True
    secure_mode = True
    plans_ridge = True
    takes_noise_dimension = True
    #: The losses whose sharp clip this solver takes (``method_options["sharp_clip"]``,
    #: "The sharp clip" above): the ones it was measured on (docs/noisygd.md).
    sharp_clip_losses: ClassVar[tuple[str, ...]] = ("logistic", "squared")
    #: Planning options (ridge, distance, sharp clip, noise dimension, horizon, the planner's
    #: own arguments under ``"plan"``) and the run's settings that leave its event unchanged.
    option_names: ClassVar[frozenset[str] | None] = frozenset({
        "sharp_clip", "optimum_norm_bound", "distance_pilot", "noise_dimension", "horizon",
        "l2", "l2_factor", "plan", "learning_rate", "schedule", "averaging", "momentum",
        "strong_convexity", "theta0"})
    #: :func:`noisygd.planning.plan_noisy_gd`'s arguments a user may set.
    plan_option_names: ClassVar[frozenset[str]] = frozenset({
        "max_steps", "init_distance", "radius", "loss_gap", "accelerate", "momentum",
        "step_budget"})
    option_checks: ClassVar[dict[str, OptionCheck]] = {
        "sharp_clip": check_sharp_option, "optimum_norm_bound": check_positive_option,
        "distance_pilot": check_pilot_option,
        "noise_dimension": optional(check_positive_int_option),
        "horizon": check_horizon_option, "l2": optional(check_l2_option),
        "l2_factor": optional(check_positive_option),
        "learning_rate": optional(check_positive_option),
        "schedule": check_choice_option(*SCHEDULES),
        "averaging": check_choice_option(*AVERAGINGS), "momentum": check_momentum_option,
        "strong_convexity": optional(check_nonnegative_option), "theta0": check_start_option}
    plan_option_checks: ClassVar[dict[str, OptionCheck]] = {
        "max_steps": optional(check_positive_int_option),
        "init_distance": optional(check_positive_option),
        "radius": optional(check_positive_option), "loss_gap": optional(check_positive_option),
        "accelerate": check_bool_option, "momentum": optional(check_momentum_option),
        "step_budget": optional(check_positive_int_option)}

    def plan(self, facts: PublicFacts, budget: Budget) -> tuple[NoisyGDPlan, dict[str, Any]]:
        """The section-12.2 plan and the run's keyword arguments (clip, n, relation,
        overrides); a :class:`~noisygd.planning.ComputeBudgetWarning` when its compute budget
        binds (with the distance pilot, after the pilot: the run warns)."""
        plan = self.plan_quietly(facts, budget)
        if "_pilot" not in plan[1]:
            warn_if_budget_binds(plan[0])
        return plan

    def plan_quietly(self, facts: PublicFacts, budget: Budget, *,
                     pilot: bool = True) -> tuple[NoisyGDPlan, dict[str, Any]]:
        """:meth:`plan` without the warning (for a caller that may not run this plan);
        ``pilot=False``: never the distance pilot (the plan at the public distance)."""
        self.check_options(facts.options)  # also when planned alone (``noisygd plan``)
        if budget.secure:
            return plan_secure_gaussian(
                lambda mu: self._plan(facts, budget, mu, pilot=False), self.planned_event,
                budget.secure_rho())
        return self._plan(facts, budget, budget.mu, pilot=pilot)

    def _plan(self, facts: PublicFacts, budget: Budget, mu: float | None, *,
              pilot: bool = False, distance: tuple[float, str] | None = None
              ) -> tuple[NoisyGDPlan, dict[str, Any]]:
        options = dict(facts.options)
        sharp = options.pop("sharp_clip", None)
        if sharp is not None:
            return self._plan_sharp(dataclasses.replace(facts, options=options), budget, mu,
                                    sharp, pilot=pilot, distance=distance)
        plan_kwargs: dict[str, Any] = {}
        declared = options.pop("optimum_norm_bound", None)
        share = pilot_share(options.pop("distance_pilot", None))
        dim = self._noise_dimension(facts, options.pop("noise_dimension", None))
        horizon = options.pop("horizon", None)
        if horizon is not None:
            check_choice("method_options['horizon']", horizon, ("ridge",))
        ridge = self._ridge(facts, budget, mu, options.pop("l2", None),
                            options.pop("l2_factor", None), dim)
        constants = facts.constants
        source = None  # where init_distance comes from (noisygd.solvers.distance)
        if ridge:
            l2 = facts.l2 + ridge
            constants = dataclasses.replace(constants, strong_convexity=l2)
            if facts.radius is None and facts.loss_at_zero_bound is not None:
                plan_kwargs["init_distance"] = math.sqrt(2.0 * facts.loss_at_zero_bound / l2)
                source = THEOREM
        elif facts.optimum_norm_bound is not None:
            plan_kwargs["init_distance"] = facts.optimum_norm_bound
            source = "radius" if facts.radius is not None else THEOREM
        theorem = plan_kwargs.get("init_distance")
        if declared is not None:  # a public planning fact; the smaller of two valid bounds
            declared = check_positive("method_options['optimum_norm_bound']", declared)
            if theorem is None or declared < theorem:
                plan_kwargs["init_distance"], source = declared, DECLARED
        comparator = None if facts.released is None else facts.released.comparator_radius
        if (comparator is not None and source == THEOREM and declared is None
                and distance is None and released_distance(comparator) < theorem):
            plan_kwargs["init_distance"], source = released_distance(comparator), RELEASED
        start = options.get("theta0")
        start_norm = (0.0 if start is None or "init_distance" not in plan_kwargs
                      or distance is not None else float(np.linalg.norm(start)))
        if start_norm > 0.0:  # ||theta_1 - theta*|| <= ||theta_1|| + ||theta*||
            plan_kwargs["init_distance"] += start_norm
        if distance is not None:  # the paid estimate (run, after the pilot)
            plan_kwargs["init_distance"], source = distance
        if facts.radius is not None:
            plan_kwargs["radius"] = facts.radius
        if facts.max_iter is not None:
            plan_kwargs["max_steps"] = facts.max_iter
        user_plan = dict(options.pop("plan", {}) or {})
        if "init_distance" in user_plan:
            source = GIVEN
        plan_kwargs.update(user_plan)
        clip = facts.clip_norm()
        plan = plan_noisy_gd(
            budget.epsilon, budget.delta, facts.n_samples, dim, constants,
            clip=clip, relation=facts.relation, mu=mu, n_step=facts.n_step(),
            quadratic=facts.quadratic_loss or facts.quadratic_constant_hessian,
            **plan_kwargs,
        )
        if (horizon == "ridge" and ridge and facts.max_iter is None
                and "max_steps" not in plan_kwargs and plan_kwargs.get("accelerate", True)):
            plan = self._to_ridge_horizon(plan, facts, budget, mu, constants, clip, dim,
                                          plan_kwargs)
        # the run's n sets the step's scale (sum form): the upper bound of a private count
        run_kwargs = {**plan.noisy_gd_kwargs(), **options, "clip": clip,
                      "n_samples": facts.n_step(), "relation": facts.relation}
        if dim != facts.n_params:
            plan.details["noise_dimension"] = dim
        if ridge:
            plan.details["l2_planned"] = ridge
            plan.details["l2_planned_status"] = RIDGE_STATUS
            run_kwargs["_ridge"] = ridge  # for run; not passed to noisy_gd
        if source is not None:
            plan.details["init_distance_source"] = source
        if start_norm > 0.0:
            plan.details["init_distance_start"] = {
                "start_norm": start_norm,
                "rule": "the run starts at theta0: init_distance = ||theta0|| + the bound on "
                        "||theta*|| (triangle inequality)"}
        if budget.secure:
            run_kwargs["_secure_dim"] = facts.n_params  # for planned_event; not passed to run
        if pilot and theorem is not None and pilot_applies(
                facts, budget, share=share, source=source, horizon=horizon,
                plan_kwargs=plan_kwargs, theorem_plan=plan):
            piloted = self._with_pilot(facts, budget, mu, share)
            if piloted is not None:
                return piloted
        return plan, run_kwargs

    def _plan_sharp(self, facts: PublicFacts, budget: Budget, mu: float | None,
                    sharp: Any, *, pilot: bool, distance: tuple[float, str] | None
                    ) -> tuple[NoisyGDPlan, dict[str, Any]]:
        """The plan at the clip :func:`noisygd.planning.sharp_clip_factor` sets from the
        noise-to-signal ratio of the plan at the base clip (module doc, "The sharp clip");
        ``details["clip_rule"]`` records both clips, the ratio and the factor."""
        sharp = check_sharp_ratio(sharp, "method_options['sharp_clip']")
        base, _ = self._plan(facts, budget, mu, pilot=False, distance=distance)
        textbook = not (facts.options.get("plan") or {}).get("accelerate", True)
        final, rule = scaled_clip(
            facts, sharp, base.details.get("noise_to_signal"),
            ratio_source="the plan at the base clip (sqrt(d) z / n)",
            # the run a theorem covers keeps the clip the theorem assumes
            not_applied=("a projection radius or the textbook plan keeps the base clip, "
                         "which the section-12.2 bounds assume")
            if facts.radius is not None or textbook else None)
        plan, kwargs = self._plan(final, budget, mu, pilot=pilot, distance=distance)
        plan.details["clip_rule"] = rule
        return plan, kwargs

    def _with_pilot(self, facts: PublicFacts, budget: Budget, mu: float | None,
                    share: float) -> tuple[NoisyGDPlan, dict[str, Any]] | None:
        r"""The plan with the distance pilot (:mod:`noisygd.solvers.distance`): NoisyGD at
        :math:`\mu\sqrt{1 - s}` and the theorem's distance (the preview; the run re-plans
        with the paid estimate), and Newton's pilot at :math:`\mu\sqrt s`; None when the
        pilot cannot be planned from these facts."""
        from noisygd.accounting.gdp import calibrate_mu, gdp_epsilon
        from noisygd.solvers.newton import NewtonSolver

        mu_full = calibrate_mu(budget.epsilon, budget.delta) if mu is None else float(mu)
        mu_rest, mu_pilot = mu_full * math.sqrt(1.0 - share), mu_full * math.sqrt(share)
        plan, kwargs = self._plan(facts, budget, mu_rest)
        ridge = float(kwargs.get("_ridge", 0.0))
        try:  # e.g. extreme constants: then no pilot
            pilot_plan = NewtonSolver().plan(
                dataclasses.replace(facts, options={"l2": ridge} if ridge else {}),
                dataclasses.replace(budget, mu=mu_pilot,
                                    epsilon=gdp_epsilon(mu_pilot, budget.delta)))
        except (AssumptionError, ValueError, TypeError, ArithmeticError):
            return None
        plan.details["distance_pilot"] = {
            "share": share, "mu": mu_pilot, "mu_rest": mu_rest,
            "steps": pilot_plan.steps, "safety": PILOT_SAFETY,
            "theorem_bound": plan.details["init_distance"],
            "rule": "NoisyGD starts at the pilot's release theta_p; init_distance = "
                    "min(||theta_p|| + theorem bound, max(safety * ||theta_p||, "
                    f"{PILOT_MIN_DISTANCE:g})), set by the run after the pilot"}
        kwargs["_pilot"] = {"plan": pilot_plan, "mu_rest": mu_rest, "facts": facts,
                            "budget": budget}
        return plan, kwargs

    @staticmethod
    def _to_ridge_horizon(plan: NoisyGDPlan, facts: PublicFacts, budget: Budget,
                          mu: float | None, constants: ObjectiveConstants, clip: float,
                          dim: int, plan_kwargs: dict[str, Any]) -> NoisyGDPlan:
        """The plan re-made for :func:`noisygd.planning.ridge_horizon_steps` steps (the
        accelerated plan's momentum kept) with the suffix average (module doc, "The ridge's
        horizon"); ``plan`` itself when the horizon adds no step."""
        beta = constants.smoothness
        if beta is None:
            return plan
        budget_steps = plan.details.get("compute_budget", MAX_STEPS_ACCELERATED)
        horizon = {"smoothness": beta + constants.strong_convexity,
                   "strong_convexity": constants.strong_convexity,
                   "planned_steps": plan.steps, "momentum": plan.momentum}
        steps = ridge_horizon_steps(**horizon, step_budget=budget_steps)
        wanted = ridge_horizon_steps(**horizon, step_budget=None)
        if steps <= plan.steps:
            return plan
        fixed = plan_noisy_gd(
            budget.epsilon, budget.delta, facts.n_samples, dim, constants, clip=clip,
            relation=facts.relation, mu=mu, n_step=facts.n_step(),
            quadratic=facts.quadratic_loss or facts.quadratic_constant_hessian,
            **{**{k: v for k, v in plan_kwargs.items() if k != "step_budget"},
               "max_steps": steps, "momentum": plan.momentum})
        details = {**fixed.details, "accelerated_steps": plan.steps,
                   "compute_budget": budget_steps, "unconstrained_steps": float(wanted),
                   "compute_budget_binds": bool(wanted > budget_steps),
                   "steps_rule": "ridge horizon: min(T_max, max(T_plan, ceil((1 - m) beta_F / "
                                 "l2))), the plan's momentum m, suffix average of the last half"}
        return dataclasses.replace(fixed, averaging="suffix", details=details)

    @staticmethod
    def _noise_dimension(facts: PublicFacts, option: Any) -> int:
        """The ``d`` the plan and the ridge count (module doc, "The noise dimension"):
        ``facts.n_params``, or ``method_options["noise_dimension"]`` (an int in
        ``1..n_params``)."""
        if option is None:
            return int(facts.n_params)
        dim = check_positive_int("method_options['noise_dimension']", option)
        if dim > facts.n_params:
            raise ValueError(f"method_options['noise_dimension'] must be at most the "
                             f"{facts.n_params} parameters, got {dim}")
        return dim

    #: The ridge the run adds to ``oracle.l2`` (:func:`noisygd.solvers.ridge.planned_ridge`).
    _ridge = staticmethod(planned_ridge)

    def planned_event(self, plan: tuple[NoisyGDPlan, dict[str, Any]]) -> Any:
        """``SelfComposed(Gaussian(z, Delta, relation), T)`` for the run's ``z`` and ``T``
        (after any override in ``method_options``), ``Delta`` the relation's clipped-sum
        sensitivity: the event :func:`~noisygd.algorithms.noisy_gd.noisy_gd` returns."""
        _, kwargs = plan
        relation = Neighbouring(kwargs["relation"])
        if "_pilot" in kwargs:  # the pilot, then NoisyGD's T steps at mu_rest, T after it
            pilot = kwargs["_pilot"]
            return piloted_event(pilot["plan"].event, pilot["mu_rest"], relation)
        sens = relation.clipped_sum_sensitivity
        event = SelfComposed(
            Gaussian(kwargs["noise_multiplier"], sensitivity=sens, relation=relation),
            kwargs["steps"])
        if "_secure_dim" not in kwargs:
            return event
        from noisygd.mechanisms.noise import secure_event, sensitivity_inflation
        from noisygd.mechanisms.secure import SecureRandom

        rng, sd = SecureRandom(), kwargs["noise_multiplier"] * kwargs["clip"]
        return secure_event(event, rng, sensitivity_inflation(
            rng, sd, kwargs["_secure_dim"], sens * kwargs["clip"]))

    def run(self, plan: tuple[NoisyGDPlan, dict[str, Any]], oracle: GradientOracle,
            rng: np.random.Generator) -> FitResult:
        """:func:`~noisygd.algorithms.noisy_gd.noisy_gd` with the planned settings."""
        from noisygd.algorithms.noisy_gd import noisy_gd

        gd_plan, kwargs = plan
        if "_pilot" in kwargs:
            return self._run_piloted(plan, oracle, rng)
        ridge = float(kwargs.get("_ridge", 0.0))
        kwargs = {k: v for k, v in kwargs.items() if k not in ("_secure_dim", "_ridge")}
        if ridge:
            oracle = RidgedOracle(oracle, ridge)
        result = noisy_gd(oracle, rng=rng, **kwargs)
        summary = gd_plan.summary()
        summary["bound_covers_run"] = gd_plan.covers(
            averaging=kwargs["averaging"], momentum=kwargs["momentum"])
        if "noise_dimension" in gd_plan.details:
            summary["noise_dimension"] = gd_plan.details["noise_dimension"]
        if ridge:
            summary["l2_planned"] = ridge
            summary["l2_planned_status"] = RIDGE_STATUS
            summary["l2"] = oracle.l2
        result.info["plan"] = summary
        if "method_choice" in gd_plan.details:
            result.info["method_choice"] = dict(gd_plan.details["method_choice"])
        return result

    def _run_piloted(self, plan: tuple[NoisyGDPlan, dict[str, Any]], oracle: GradientOracle,
                     rng: np.random.Generator) -> FitResult:
        """The distance pilot, NoisyGD re-planned with the paid estimate (post-processing of
        the pilot's release), and its run; the event is :meth:`planned_event`'s
        (:mod:`noisygd.solvers.distance`)."""
        from noisygd.accounting.gdp import gaussian_mu
        from noisygd.algorithms.newton import newton

        gd_plan, kwargs = plan
        pilot = kwargs["_pilot"]
        released = newton(oracle, pilot["plan"], rng)
        norm = float(np.linalg.norm(released.theta))
        theorem = float(gd_plan.details["distance_pilot"]["theorem_bound"])
        paid = paid_distance(norm, theorem)
        replanned = self._plan(pilot["facts"], pilot["budget"], pilot["mu_rest"],
                               distance=(paid, PAID))
        warn_if_budget_binds(replanned[0])
        replanned[0].details["distance_pilot"] = {
            **gd_plan.details["distance_pilot"], "released_norm": norm,
            "planned_steps_at_theorem_bound": gd_plan.steps}
        if "method_choice" in gd_plan.details:
            replanned[0].details["method_choice"] = gd_plan.details["method_choice"]
        # NoisyGD starts at the pilot's release (post-processing): theta_1 = theta_pilot
        replanned[1]["theta0"] = np.asarray(released.theta, dtype=np.float64).copy()
        result = self.run(replanned, oracle, rng)
        mu_run = gaussian_mu(result.event)
        if not math.isclose(mu_run, pilot["mu_rest"], rel_tol=1e-9):
            raise RuntimeError(f"internal error: NoisyGD after the pilot is {mu_run!r}-GDP, "
                               f"not the planned {pilot['mu_rest']!r}")
        result.event = self.planned_event(plan)
        result.info["plan"]["distance_pilot"] = dict(replanned[0].details["distance_pilot"])
        return result


def regime_clip(facts: PublicFacts, budget: Budget, sharp: Any
                ) -> tuple[PublicFacts, dict[str, Any]]:
    """:func:`~noisygd.solvers.sharp_clip.scaled_clip` with :math:`q` read from NoisyGD's plan
    of the same facts (its options dropped) and budget: for DP-FTRL and the dynamic schedules,
    whose planners read no noise-to-signal ratio of their own.

    Parameters
    ----------
    facts : PublicFacts
        The solver's facts, without the ``"sharp_clip"`` option.
    budget : Budget
        The solver's budget.
    sharp : float
        :math:`s \\in (0, 1]`.

    Returns
    -------
    facts, clip_rule
        As :func:`~noisygd.solvers.sharp_clip.scaled_clip`.
    """
    s = check_sharp_ratio(sharp, "method_options['sharp_clip']")
    ratio = None
    if facts.radius is None and facts.constants.smoothness is not None:
        try:  # NoisyGD's own plan of these facts (its options do not apply)
            plan, _ = NoisyGDSolver().plan_quietly(dataclasses.replace(facts, options={}),
                                                   dataclasses.replace(budget, secure=False),
                                                   pilot=False)
            ratio = plan.details.get("noise_to_signal")
        except (AssumptionError, ValueError, ArithmeticError):
            ratio = None
    return scaled_clip(facts, s, ratio,
                       ratio_source="NoisyGD's plan for the same facts and budget "
                                    "(sqrt(d) z / n)",
                       not_applied=None if ratio is not None else (
                           "a projection radius, no smoothness constant or no NoisyGD plan "
                           "of these facts to read the noise regime from"))
