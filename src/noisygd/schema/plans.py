r"""``noisygd plan``: what each method would do on a problem, from public facts alone.

For every method in :data:`noisygd.solvers.SOLVERS` and every neighbouring relation it is
accounted under, :func:`plan_table` builds the objective a fit would optimise (the estimator's
documented conditioning: ``CentredGLM`` around the schema's public centre for methods that
clip, docs/estimators.md), its :class:`~noisygd.solvers.PublicFacts` for ``n`` rows declared
public, the budget a fit gives the method (a Gaussian method spends the whole budget as one
Gaussian-DP ``mu``, :func:`noisygd.accounting.gdp.split_gaussian_budget`), and asks the solver
for its plan. It reports the noise, the steps, the step size, the accountant that certifies the
planned event (:func:`noisygd.accounting.best`) and the predicted utility bound the planner
chose by, when it states one. No data is read.

**Bounds that say what they assume.** Each row's bound is a :class:`noisygd.bounds.Bound`:
the quantity it bounds (an excess empirical risk, a mean squared gradient norm, an average
regret), the comparator (the minimiser of the objective the method runs, with its ridge, or any
model in a ball of radius ``D``), the guarantee (in expectation or with probability
:math:`1 - \beta`), the theorem, and every premise with its value and its source: declared (a
public constant of the problem), derived (proved from declared facts, e.g.
:math:`\lVert\theta^*\rVert \le \sqrt{2F_0/\lambda}`), given (``method_options``), paid
(a private estimate from the budget, e.g. NoisyGD's distance pilot) or nominal (a
placeholder nothing proves, the planner's ``DEFAULT_INIT_DISTANCE = 1.0``). Rows
are **ranked only against comparable rows** (:func:`noisygd.bounds.comparable`: same
quantity, comparator, guarantee and premises, so a nominal premise is never ranked against a
derived one): rows with equal :meth:`~noisygd.bounds.Bound.comparison_key` form a group
(``PlanRow.group``) and ``PlanRow.rank`` is the position within it. Groups are listed in the
order of their first method's name, never by their values. A row's further bounds (a
high-probability form, online-to-batch, an alternative schedule) are listed in
``PlanRow.other_bounds`` and not ranked.

**What the default runs.** The estimators' ``method="auto"`` is NoisyGD for the regressors;
a classifier's (binary or one-vs-rest, no ``max_iter``, ``method_options`` at most the
distance's and the sharp clip's) runs NoisyGD or private Newton by the public rule of
:func:`noisygd.solvers.auto.choose_method`. The ``noisy_gd`` rows carry that choice
(``PlanRow.default_choice``: the method and the rule's reason, as the fit's
``fit_info_["method_choice"]``), made on the same public facts as the row's own plan.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from noisygd._checks import check_fraction, check_real

__all__ = ["PlanRow", "format_plan_rows", "plan_bounds", "plan_table", "rank_rows"]

#: The ridge strength a fit uses when ``l2`` is not given (estimators' public defaults).
L2_DEFAULTS = {"logistic": 1e-4, "huber": 1e-4, "linear": 1e-3}


@dataclasses.dataclass(frozen=True)
class PlanRow:
    """One method under one relation: its plan, or why it does not apply."""

    method: str
    relation: str
    noise: float | None = None
    noise_name: str = ""
    steps: int | None = None
    step_size: float | None = None
    epsilon: float | None = None
    accountant: str | None = None
    theorem: str = ""
    bound: float | None = None
    bound_name: str = ""
    note: str = ""
    refused: str | None = None
    #: What the bound bounds, against what, how (module doc), and each premise as text.
    quantity: str = ""
    comparator: str = ""
    guarantee: str = ""
    assumptions: tuple[str, ...] = ()
    bound_covers_run: bool | None = None
    nominal: bool = False
    #: The comparability group (rows ranked against each other) and the rank within it.
    group: str | None = None
    rank: int | None = None
    group_size: int | None = None
    #: Further bounds of the same plan (dicts of :meth:`noisygd.bounds.Bound.to_dict`).
    other_bounds: tuple[dict[str, Any], ...] = ()
    #: On the ``noisy_gd`` rows of a classifier: what the estimators' default
    #: ``method="auto"`` runs under this relation and why (``{"method", "rule"}``, the
    #: ``fit_info_["method_choice"]`` of the fit with the same settings; module doc).
    default_choice: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON)."""
        out = dataclasses.asdict(self)
        out["assumptions"] = list(self.assumptions)
        out["other_bounds"] = list(self.other_bounds)
        return out


def _estimator_class(model: str) -> Any:
    """The estimator class a ``model`` name plans for (imported here: estimators sit above
    the schema layer)."""
    from noisygd.estimators import DPHuberRegressor, DPLinearRegression, DPLogisticRegression

    return {"logistic": DPLogisticRegression, "huber": DPHuberRegressor,
            "linear": DPLinearRegression}[model]


def _objective(model: str, l2: float, radius: float | None, target_half: float | None):
    from noisygd.objectives.glm import HuberLoss, LogisticLoss, SquaredLoss

    if model == "logistic":
        return LogisticLoss(l2=l2, fit_intercept=True, radius=radius)
    if model == "huber":
        # DPHuberRegressor's threshold="auto": the declared half-range (1.0 without one)
        return HuberLoss(threshold=1.0 if target_half is None else target_half, l2=l2,
                         fit_intercept=True, radius=radius)
    return SquaredLoss(l2=l2, fit_intercept=True, radius=radius, target_bound=target_half)


def _first(obj: Any, *names: str) -> Any:
    for name in names:
        value = getattr(obj, name, None)
        if value is None and isinstance(obj, dict):
            value = obj.get(name)
        if value is not None:
            return value
    return None


def _describe(name: str, plan: Any) -> dict[str, Any]:
    """Noise, steps, step size and bound of a solver's plan (each plan type names them)."""
    parts = plan if isinstance(plan, tuple) else (plan,)
    main = parts[0]
    settings = getattr(main, "settings", None) or {}
    out: dict[str, Any] = {}
    noise = _first(main, "noise_multiplier")
    if noise is not None:
        out["noise"], out["noise_name"] = float(noise), "noise multiplier (std / clip)"
    elif _first(main, "sigma") is not None:
        out["noise"], out["noise_name"] = float(main.sigma), "Langevin noise sigma"
    elif _first(main, "scale") is not None:
        out["noise"], out["noise_name"] = float(main.scale), "output noise scale"
    elif getattr(main, "sigmas", None) is not None:
        out["noise"] = float(main.sigmas[-1])
        out["noise_name"] = "noise multiplier of the last step (the schedule decreases)"
    elif _first(main, "noise_epsilon") is not None:
        out["noise"], out["noise_name"] = float(main.noise_epsilon), "RRPSGD noise epsilon"
    steps = _first(main, "steps")
    if steps is None and getattr(main, "steps_per_epoch", None) is not None:
        steps = int(main.steps_per_epoch) * int(settings.get("epochs", 1))
    out["steps"] = None if steps is None else int(steps)
    step = _first(main, "learning_rate", "step_size")
    if step is None:
        step = settings.get("learning_rate")
    out["step_size"] = None if step is None else float(step)
    return out


def plan_table(*, model: str, n_samples: int, n_features: int, epsilon: float, delta: float,
               relations: tuple[str, ...] = ("add_remove", "replace_one"),
               row_norm_bound: float = 1.0, centring: Any = None,
               target_range: tuple[float, float] | None = None, l2: float | None = None,
               max_iter: int | None = None, radius: float | None = None,
               method_options: dict[str, Any] | None = None,
               scale_share: float | None = None,
               target_range_share: float | str = "auto") -> list[PlanRow]:
    """Plan every applicable method (module doc); rows ranked by predicted bound within
    groups of comparable bounds (:func:`rank_rows`).

    Parameters
    ----------
    model : {"logistic", "linear", "huber"}
    n_samples : int
        The number of rows, declared public (as with ``n_samples_public``).
    n_features : int
        Encoded columns.
    centring : PublicCentring, optional
        The schema's public centre (:func:`noisygd.schema.public_centring`); without it the
        rows are bounded by ``row_norm_bound`` around 0.
    target_range : (low, high), optional
        Regression: the targets' public range.
    scale_share : float, optional
        ``model="linear"`` with NoisyGD: the share of ``mu^2`` the fit spends on its private
        target scale first (``DPLinearRegression(scale_share=...)``; default its default,
        :data:`noisygd.estimators.DEFAULT_SCALE_SHARE`). The run is planned for the rest; its
        clip is then an upper bound on the fit's (the fit's uses ``target_scale_`` and
        ``row_scale_``, both at most 1; its planned ridge and horizon follow its clip).
    target_range_share : float or "auto", default="auto"
        Regression: the estimator's ``target_range_share``. Where a fit with these public
        facts releases the private target range within ``target_range``
        (:meth:`~noisygd.estimators.DPLinearRegression.releases_target_range`), a Gaussian
        composition (NoisyGD, Newton, SSP) is planned for the rest of ``mu^2`` and the
        declared half-range (the fit's, narrowed, is at most it); the other methods' rows
        say that their plan leaves it out.
    """
    if scale_share is None:
        from noisygd.estimators import DEFAULT_SCALE_SHARE

        scale_share = DEFAULT_SCALE_SHARE
    if check_real("scale_share", scale_share) != 0.0:  # 0: no scale release
        scale_share = check_fraction("scale_share", scale_share, closed_right=False)
    from noisygd.exceptions import AssumptionError, UnsupportedEventError
    from noisygd.solvers import SOLVERS

    half = None
    if model != "logistic":
        if target_range is None:
            raise ValueError("a regression plan needs the targets' public range")
        half = (target_range[1] - target_range[0]) / 2.0
    options = dict(method_options or {})
    rows: list[tuple[PlanRow, Any]] = []
    for name in sorted(SOLVERS):
        solver = SOLVERS[name]()
        for relation in relations:
            if relation not in {r.value for r in solver.relations}:
                continue
            try:
                rows.append(_plan_one(
                    solver, relation, model=model, n=n_samples, d=n_features, epsilon=epsilon,
                    delta=delta, B=row_norm_bound, centring=centring, half=half, l2=l2,
                    max_iter=max_iter, radius=radius, options=options,
                    scale_share=scale_share,
                    target_share=_target_range_share(
                        model, name, relation, epsilon, delta, n_samples, target_range,
                        target_range_share)))
            except (ValueError, TypeError, AssumptionError, UnsupportedEventError) as exc:
                rows.append((PlanRow(method=name, relation=relation, refused=str(exc)), None))
            except ArithmeticError:  # an overflow or a division by 0 of the planner's formulas
                rows.append((PlanRow(method=name, relation=relation, refused=(
                    "the public constants (row norm bound, l2, radius) are out of "
                    "floating-point range for this method's planner")), None))
    return rank_rows(rows)


def rank_rows(rows: list[tuple[PlanRow, Any]]) -> list[PlanRow]:
    """Group the rows by their bound's comparison key and rank within each group (module doc).

    ``rows`` pairs each :class:`PlanRow` with its primary :class:`noisygd.bounds.Bound` (or
    None). Returned order: the groups in the order of their first member's ``(method,
    relation)``, each sorted by its bound; then the rows without a bound; then the refused ones.
    Rows of different groups are never ordered by their values.
    """
    groups: dict[Any, list[PlanRow]] = {}
    rest, refused = [], []
    for row, bound in sorted(rows, key=lambda rb: (rb[0].method, rb[0].relation)):
        if row.refused is not None:
            refused.append(row)
        elif bound is None:
            rest.append(row)
        else:
            groups.setdefault(bound.comparison_key(), []).append(row)
    out: list[PlanRow] = []
    for i, members in enumerate(groups.values(), start=1):
        members.sort(key=lambda r: (r.bound, r.method, r.relation))
        out += [dataclasses.replace(r, group=f"G{i}", rank=k, group_size=len(members))
                for k, r in enumerate(members, start=1)]
    return out + rest + refused


def _target_range_share(model: str, method: str, relation: str, epsilon: float,
                        delta: float, n: int, target_range: tuple[float, float] | None,
                        share: float | str) -> float:
    """The share of ``mu^2`` a regression fit with these public facts spends on the private
    target range within the declared one (0 where it releases none): the estimator's own
    rule (``releases_target_range``), asked of an estimator with these parameters."""
    if model == "logistic" or target_range is None:
        return 0.0
    est = _estimator_class(model)(epsilon=epsilon, delta=delta, method=method,
                                  neighbouring=relation, target_range=target_range,
                                  target_range_share=share, n_samples_public=n,
                                  conditioning_share=0.0)
    if not est.releases_target_range():
        return 0.0
    return float(est._share_of_target_range())


def _plan_one(solver: Any, relation: str, *, model: str, n: int, d: int, epsilon: float,
              delta: float, B: float, centring: Any, half: float | None, l2: float | None,
              max_iter: int | None, radius: float | None, options: dict[str, Any],
              scale_share: float = 0.0, target_share: float = 0.0) -> tuple[PlanRow, Any]:
    """The plan of one solver under one relation (see :func:`plan_table`)."""
    from noisygd.accounting import best
    from noisygd.accounting.gdp import gdp_epsilon, split_gaussian_budget
    from noisygd.objectives.centred import CentredGLM
    from noisygd.planning import DEFAULT_INIT_DISTANCE
    from noisygd.solvers import DEFAULT_SOLVER, SOLVERS, Budget, PublicFacts
    from noisygd.solvers.output_perturbation import choose_l2

    estimator = _estimator_class(model)  # its public rules: intercept scale, horizon
    user = dict(options)  # the caller's method_options, before the estimator's own
    note = ""
    l2_used = L2_DEFAULTS[model] if l2 is None else float(l2)
    if (model in ("logistic", "linear") and solver.plans_ridge and l2 is None
            and radius is None and "l2" not in options):
        # as the estimators' l2=None with a solver that plans it (``_plans_ridge``: NoisyGD,
        # Newton, DP-FTRL, NoisySGD): the ridge (noisygd.planning.ridge_strength) on an
        # unregularised objective, and DPLinearRegression runs to the ridge's horizon where
        # the solver takes one (``_method_options``)
        l2_used, options = 0.0, {**options, "l2": "auto"}
        if estimator._RUNS_TO_RIDGE_HORIZON and (solver.option_names is None
                                                 or "horizon" in solver.option_names):
            options.setdefault("horizon", "ridge")
    sharp = estimator._sharp_clip_ratio()
    if (sharp is not None and estimator._SHARP_CLIP_LOSS in solver.sharp_clip_losses
            and "sharp_clip" not in options):
        # as the estimators' _sharp_clip_option: NoisyGD scales its clip by the noise
        # regime of its plan (noisygd.planning.sharp_clip_factor)
        options = {**options, "sharp_clip": sharp}
    op_bound, d0, d0_source = None, None, None
    if solver.chooses_l2 and l2 is None:
        base = _objective(model, 0.0, radius, half)
        d0 = radius or options.get("optimum_norm_bound") or DEFAULT_INIT_DISTANCE
        d0_source = ("declared" if radius else "given" if options.get("optimum_norm_bound")
                     else "nominal")
        l2_used, op_bound = choose_l2(
            base.constants(B), n=n, dim=base.n_params(d), epsilon=epsilon, delta=delta,
            reference_norm=float(d0),
            **{k: v for k, v in options.items() if k in ("noise", "sensitivity_bound")})
        note = f"l2 = {l2_used:.3g} chosen by Theorems 2-3"
    base = _objective(model, l2_used, radius, half)
    conditioned = solver.clips_gradients and radius is None
    if conditioned:
        if centring is not None:
            centre = np.asarray(centring.centre, dtype=float)
            bound, s = float(centring.radius), float(centring.intercept_scale)
        else:  # the estimator's own default intercept scale
            centre, bound = np.zeros(d), B
            s = estimator._uncentred_intercept_scale(B, d)
        objective = CentredGLM(base, centre, s)
    else:
        objective, bound, s = base, B, None
    clip = None
    if model == "linear" and solver.clips_gradients:
        from noisygd.estimators import huber_clip  # DPLinearRegression's default clip

        clip = huber_clip(half or 0.0, bound, s)
    facts = PublicFacts.from_objective(
        objective, d, row_norm_bound=bound, n_samples=float(n), relation=relation, clip=clip,
        max_iter=max_iter, options=options)
    if solver.gaussian:
        _, _, mu_k = split_gaussian_budget(epsilon, delta, 1, 0.0)
        spent = target_share
        if target_share > 0:
            note = "; ".join(x for x in (note, (
                f"the private target range narrows the declared one first, at "
                f"{target_share:g} of mu^2 (planned at the declared half-range, an upper "
                "bound)")) if x)
        if (model == "linear" and solver.plans_ridge and clip is not None
                and scale_share > 0):
            # DPLinearRegression's private scales take scale_share of mu^2 first; the fit's
            # clip is at most this one (target_scale_ and row_scale_ are at most 1), and its
            # planned ridge, hence its horizon, follows its clip
            spent += scale_share
            note = "; ".join(x for x in (note, f"clip <= {clip:.3g} (x target_scale_ and "
                                         f"row_scale_, released at {scale_share:g} of mu^2; "
                                         "steps for this clip)") if x)
        mu_k *= math.sqrt(1.0 - spent)
        budget = Budget(gdp_epsilon(mu_k, delta), delta, mu=mu_k)
    else:
        budget = Budget(epsilon, delta)
        if target_share > 0:
            note = "; ".join(x for x in (note, (
                f"the fit also releases the private target range first, at {target_share:g} "
                "of mu^2: not in this plan, which is for the whole budget")) if x)
    plan = solver.plan(facts, budget)
    event = solver.planned_event(plan)
    choice = None
    if type(solver) is SOLVERS[DEFAULT_SOLVER]:  # the solver method="auto" falls back to
        choice = (_default_choice(facts, budget)
                  if estimator._settings_choose_method(max_iter, user)
                  else {"method": DEFAULT_SOLVER, "rule": (
                      "NoisyGD: max_iter or method_options fix NoisyGD's run"
                      if estimator._CHOOSES_METHOD
                      else f"NoisyGD: {estimator.__name__}'s method='auto'")})
    result = best(event, delta)
    described = _describe(solver.name, plan)
    context = _Context(facts=facts, l2=l2_used, centred=conditioned, model=model,
                       op_bound=op_bound, op_reference=d0, op_reference_source=d0_source)
    primary, others, reason = plan_bounds(solver.name, plan, context)
    if primary is not None:
        described.update(
            bound=float(primary.value), bound_name=primary.reference, quantity=primary.quantity,
            comparator=primary.comparator, guarantee=primary.guarantee,
            assumptions=tuple(a.text() for a in primary.assumptions),
            bound_covers_run=primary.covers_run, nominal=primary.nominal)
    described["other_bounds"] = tuple(b.to_dict() for b in others)
    extra = "; ".join(x for x in (reason or "", _ridge_status(plan)) if x)
    row = PlanRow(method=solver.name, relation=relation, epsilon=float(result.epsilon),
                  accountant=result.accountant,
                  theorem=result.theorems.get(result.accountant, ""),
                  note="; ".join(x for x in (note, extra) if x), default_choice=choice,
                  **described)
    return row, primary


def _default_choice(facts: Any, budget: Any) -> dict[str, str]:
    """``{"method", "rule"}``: what :class:`noisygd.solvers.auto.ChoosingSolver` runs on
    these public facts and budget, and why (its plan is NoisyGD's, whose budget warning the
    ``noisy_gd`` row's own plan has already given)."""
    import warnings

    from noisygd.solvers.auto import ChoosingSolver, SecondOrderPlan

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = ChoosingSolver().plan(facts, budget)
    choice = (plan.choice if isinstance(plan, SecondOrderPlan)
              else plan[0].details["method_choice"])
    return {"method": str(choice["method"]), "rule": str(choice["rule"])}


def _ridge_status(plan: Any) -> str:
    """The planned ridge of a NoisyGD or Newton plan and its status
    (:data:`noisygd.planning.RIDGE_STATUS`: a heuristic balance), or ``""`` without one."""
    from noisygd.planning import RIDGE_STATUS, NoisyGDPlan

    if isinstance(plan, tuple) and plan and isinstance(plan[0], NoisyGDPlan):
        ridge = plan[0].details.get("l2_planned")
    else:
        ridge = getattr(plan, "ridge", None)
    return f"l2 = {ridge:.3g} planned: {RIDGE_STATUS}" if ridge else ""


# ------------------------------------------------------------------ bounds and their premises
EXCESS_RISK = "excess empirical risk E F(output) - F(comparator), mean objective"
GRADIENT_NORM = "E ||grad F(w)||^2 at the iterate the algorithm releases, mean objective"
REGRET = "expected average regret per row (the run's linearised losses)"
IN_EXPECTATION = "in expectation"


def _with_probability(beta: float) -> str:
    return f"with probability >= {1.0 - beta:g}"


@dataclasses.dataclass(frozen=True)
class _Context:
    """What :func:`plan_bounds` needs beyond the plan: the facts the plan was made from, the
    ridge of the objective, whether it is the centred one, and output perturbation's bound."""

    facts: Any
    l2: float
    centred: bool
    model: str
    op_bound: float | None = None
    op_reference: float | None = None
    op_reference_source: str | None = None


def _comparator_of(ctx: _Context, l2: float) -> str:
    centred = "centred " if ctx.centred else ""
    return f"argmin of the {centred}{ctx.model} objective with l2 = {l2:.4g}"


def _declared(ctx: _Context, *names: str) -> list[Any]:
    """The declared constants the bound uses, as premises."""
    from noisygd.bounds import Assumption

    c = ctx.facts.constants
    out = []
    if "L" in names and c.lipschitz is not None:
        out.append(Assumption("L (per-example Lipschitz constant)", float(c.lipschitz),
                              "declared", f"the loss for rows of norm <= "
                                          f"{ctx.facts.row_norm_bound:.4g}"))
    if "beta" in names and c.smoothness is not None:
        out.append(Assumption("beta (smoothness of the data term)", float(c.smoothness),
                              "declared", "the loss"))
    return out


def _clip_premise(clip: float | None, lipschitz: float | None) -> Any:
    from noisygd.bounds import Assumption

    holds = lipschitz is not None and clip is not None and clip >= lipschitz
    # a failed premise names its clip in its value: rows whose runs clip differently (the
    # sharp clip's factor follows each plan's noise regime) are not ranked together
    value = "holds" if holds or clip is None else f"fails at C = {clip:.4g}"
    return Assumption("clip C >= L (no gradient is clipped)",
                      "fails" if clip is None and not holds else value,
                      "declared", "" if clip is None else f"C = {clip:.4g}")


def _f0_origin(facts: Any) -> str:
    """Where a derived bound on the optimum's norm comes from."""
    f0 = facts.loss_at_zero_bound
    if f0 is None:
        return "the objective's optimum_norm_bound"
    return f"sqrt(2 F0 / l2) with F0 = {f0:.4g} (the loss at zero)"


def _reference_norm(name: str, value: float, source: str, origin: str) -> Any:
    from noisygd.bounds import Assumption

    return Assumption(name, float(value), source, origin)


def _interior_premise(facts: Any) -> Any:
    r"""Lemma 6's premise that the minimiser lies in the interior of the ball, from public
    facts: :math:`\frac\lambda2\lVert\theta^*\rVert^2 \le F(\theta^*) \le F(0) \le F_0` bounds
    the unconstrained minimiser by :math:`\sqrt{2F_0/\lambda}`; below the radius it is in the
    open ball (and is the constrained minimiser). Source "derived" when that proves it, else
    "nominal" (nothing public proves it; the bound then does not cover the run)."""
    from noisygd.bounds import Assumption

    name = "||theta*|| < R (minimiser in the interior of the ball)"
    f0, l2, radius = facts.loss_at_zero_bound, float(facts.l2), facts.radius
    if f0 is None or not l2 > 0.0:
        return Assumption(name, None, "nominal", "no public bound on ||theta*|| (needs l2 > 0 "
                                                 "and a bound on the loss at zero)")
    norm = math.sqrt(2.0 * float(f0) / l2)
    if radius is not None and norm < float(radius):
        return Assumption(name, norm, "derived", f"||theta*|| <= {_f0_origin(facts)} < R")
    return Assumption(name, None, "nominal", f"not shown: {_f0_origin(facts)} = {norm:.4g} "
                                             f">= R")


def plan_bounds(method: str, plan: Any, ctx: _Context) -> tuple[Any, list[Any], str | None]:
    """The primary bound of a solver's plan, its further bounds, and why there is none.

    Returns
    -------
    (Bound or None, list of Bound, str or None)
    """
    from noisygd.bounds import Assumption, Bound

    facts, c = ctx.facts, ctx.facts.constants
    if method == "noisy_gd":
        p = plan[0]
        det = p.details
        l2_run = float(facts.l2) + float(det.get("l2_planned", 0.0))
        from noisygd.solvers.distance import DECLARED, GIVEN, PAID, RELEASED

        given = "init_distance" in (facts.options.get("plan") or {})
        src = str(det.get("init_distance_source", ""))
        if given or src == GIVEN:
            source, origin = "given", "method_options['plan']['init_distance']"
        elif src == DECLARED:
            source, origin = "declared", ("method_options['optimum_norm_bound'] (a public "
                                          "bound on ||theta*|| the user declares)")
        elif src == PAID:
            source, origin = "paid", ("the distance pilot's private estimate (noisygd.solvers."
                                      "distance): the bound holds if the estimate does")
        elif src == RELEASED:
            source, origin = "paid", ("4 times the comparator radius the private scales "
                                      "released: the bound holds if the estimate does")
        elif src.startswith("nominal"):
            source, origin = "nominal", "the planner's DEFAULT_INIT_DISTANCE"
        elif src == "radius" or (facts.radius is not None and det["init_distance"] == facts.radius):
            source, origin = "declared", "the projection radius"
        else:
            source, origin = "derived", _f0_origin(facts)
        if "distance_pilot" in det and source == "derived":
            origin += ("; a fit replaces it by the distance pilot's paid estimate "
                       f"(share {det['distance_pilot']['share']:g} of mu^2), whose run's bound "
                       "then assumes that estimate")
        premises = [_reference_norm("D >= ||theta_1 - theta*||", det["init_distance"], source,
                                    origin), _clip_premise(det.get("clip"), c.lipschitz),
                    *_declared(ctx, "L", "beta")]
        covers = bool(det.get("bound_covers_run", False))
        reference = f"Lecture 12, section {p.bound_name}" + (
            "" if covers else " (the textbook NoisyGD run with this plan's noise and T; the "
                              "run adds momentum and averaging: not covered)")
        primary = Bound(float(p.bound_value),
                        GRADIENT_NORM if p.bound_name == "12.2.1" else EXCESS_RISK,
                        _comparator_of(ctx, l2_run), IN_EXPECTATION, reference, tuple(premises),
                        covers)
        others = []
        if "12.2.4" in det.get("candidates", {}) and facts.radius is not None:
            from noisygd.bounds import strongly_convex_uniform_average_bound

            G = float(c.lipschitz) + l2_run * float(facts.radius)
            value = strongly_convex_uniform_average_bound(
                n=det["n_signal"], d=int(facts.n_params), lipschitz=G, noise_std=det["sigma"],
                strong_convexity=l2_run, steps=p.steps)
            others.append(Bound(value, EXCESS_RISK, _comparator_of(ctx, l2_run), IN_EXPECTATION,
                                "Lecture 12, 12.2.4 with eta_t = 1/(lambda t) and the uniform "
                                "average, (1 + log T) factor (another schedule, not the run's)",
                                (Assumption("G = L + l2 R (Lipschitz on the ball)", G,
                                            "derived", "declared L and radius"),), False))
        return primary, others, None
    if method == "noisy_sgd":
        if plan.bound_value is None:
            return None, [], plan.bound_details.get("bound_reason")
        bd = plan.bound_details
        origin = {"derived": _f0_origin(facts),
                  "declared": "the projection radius",
                  "nominal": "the planner's DEFAULT_INIT_DISTANCE"}[bd["init_distance_source"]]
        premises = (_reference_norm("D >= ||theta_1 - theta*||", bd["init_distance"],
                                    bd["init_distance_source"], origin),
                    _clip_premise(plan.clip, c.lipschitz), *_declared(ctx, "beta"))
        l2_run = float(facts.l2) + float(plan.ridge)  # with the planned ridge, if any
        return Bound(float(plan.bound_value), EXCESS_RISK, _comparator_of(ctx, l2_run),
                     IN_EXPECTATION, bd["bound_name"] + " (the textbook NoisySGD run with this "
                     "plan's noise, rate and T; the run adds momentum: not covered)", premises,
                     False), [], None
    if method == "dynamic":
        det = plan.details
        gap_source = "given" if det["loss_gap_source"].startswith("method_options") \
            else "declared"
        radius = det.get("projection_radius")
        premises = (Assumption("PL constant mu = l2 (strong convexity)", det["pl_constant"],
                               "declared", "the objective's ridge"),
                    Assumption("M = beta + l2 (smoothness of the regularised objective)",
                               det["smoothness_M"], "derived",
                               "the loss's declared beta plus the ridge"),
                    Assumption("F0 >= f(theta_1) - f*", det["loss_gap"], gap_source,
                               det["loss_gap_source"]),
                    _clip_premise(plan.clip, c.lipschitz),
                    Assumption("no projection (Theorems 3.2-3.4: unconstrained GD under PL)",
                               "holds" if radius is None else "fails", "declared",
                               "no radius" if radius is None else f"radius = {radius:.4g}"),
                    Assumption("N public (the run divides by the N the bound uses)",
                               "holds" if det.get("n_public", False) else "fails", "declared",
                               "the row count"))
        return Bound(plan.bound_value, EXCESS_RISK, _comparator_of(ctx, float(facts.l2)),
                     IN_EXPECTATION, plan.bound_name, premises, plan.bound_covers_run), [], None
    if method == "dp_ftrl":
        if plan.regret_bound is None:
            return None, [], None
        comparator = f"any w with ||w|| <= D = {plan.distance:.4g}"
        from noisygd.solvers.dp_ftrl import PLANNED_RIDGE_DISTANCE

        origin = {"derived": "the objective's bound on ||w*|| (sqrt(2 F0 / l2))",
                  "declared": "the projection radius",
                  "given": "method_options['optimum_norm_bound']",
                  PLANNED_RIDGE_DISTANCE: "the planned ridge's bound sqrt(2 F0 / lambda_r) "
                  "(lambda_r NoisyGD's planned ridge, a heuristic balance: the comparators "
                  "the bound is for, not a premise)"}[plan.distance_source]
        source = ("derived" if plan.distance_source == PLANNED_RIDGE_DISTANCE
                  else plan.distance_source)
        random_leaves = (getattr(plan, "settings", None) or {}).get("leaves",
                                                                    "position") == "random"
        leaf_law = Assumption(
            "leaf sizes |B_t|", "Binomial(n, 1/T_e), E|B_t|^2 = m^2 + m (1 - 1/T_e), m = n/T_e"
            if random_leaves else f"<= b = {int(plan.settings['batch_size'])} (rows in order)",
            "declared", "rows assigned to leaves at random (add/remove)" if random_leaves
            else "the batch size")
        premises = (_reference_norm("D (comparator norm)", plan.distance, source, origin),
                    _clip_premise(plan.clip, c.lipschitz), leaf_law)
        primary = Bound(plan.regret_bound, REGRET, comparator, IN_EXPECTATION,
                        "slides 001, DP-FTRL regret bound with the tree's expected error",
                        premises, plan.bound_covers_run)
        from noisygd.solvers.dp_ftrl import BOUND_CONFIDENCE

        others = [] if plan.regret_bound_high_probability is None else [
            Bound(plan.regret_bound_high_probability, REGRET, comparator,
                  _with_probability(BOUND_CONFIDENCE),
                  "slides 001, regret bound with the tree mechanism's accuracy bound",
                  premises, plan.bound_covers_run)]
        if plan.population_risk_bound is not None:
            others.append(Bound(plan.population_risk_bound,
                                "expected excess population risk E L_P(w_bar) - L_P(w)",
                                comparator, IN_EXPECTATION,
                                "slides 001, online-to-batch conversion (one pass, averaged "
                                "output)", (*premises, Assumption(
                                    "rows i.i.d. from P, in the order processed", None,
                                    "nominal", "a property of the data, not checked")),
                                plan.bound_covers_run))
        reason = (None if plan.online_to_batch_reason is None
                  else f"online-to-batch does not apply: {plan.online_to_batch_reason}")
        return primary, others, reason
    if method == "output_perturbation":
        if ctx.op_bound is None:
            return None, [], None
        origin = {"declared": "the projection radius", "given":
                  "method_options['optimum_norm_bound']",
                  "nominal": "the planner's DEFAULT_INIT_DISTANCE"}[ctx.op_reference_source]
        premises = (_reference_norm("D0 >= ||w_hat_0|| (minimiser of the unregularised "
                                    "objective)", ctx.op_reference, ctx.op_reference_source,
                                    origin), *_declared(ctx, "L", "beta"))
        return Bound(float(ctx.op_bound), "excess empirical risk F_0(output) - F_0(w) of the "
                     "unregularised objective", "w_hat_0 = argmin F_0, ||w_hat_0|| <= D0",
                     IN_EXPECTATION, "Theorems 2-3 (Zhang et al. 2017), l2 chosen by them",
                     premises, True), [], None
    if method == "langevin":
        if getattr(plan, "excess_risk_bound", None) is None:
            return None, [], getattr(plan, "excess_risk_bound_reason", None)
        interior = _interior_premise(facts)
        premises = (Assumption("radius R of the constraint ball", facts.radius, "declared",
                               "the objective"), interior, *_declared(ctx, "L", "beta"))
        return Bound(float(plan.excess_risk_bound), EXCESS_RISK,
                     _comparator_of(ctx, float(facts.l2)), IN_EXPECTATION,
                     "Chourasia-Ye-Shokri 2021, Lemma 6", premises,
                     interior.source == "derived"), [], None
    if method == "rrpsgd":
        b = plan.bounds
        if not b:
            return None, [], "no public bound on F(w_0) - F* (Theorem 5)"
        premises = (Assumption("F0 >= F(w_0) - F*", b["loss_gap"], b["loss_gap_source"],
                               "the loss at zero" if b["loss_gap_source"] == "declared"
                               else "method_options['loss_gap_bound']"),
                    *_declared(ctx, "L", "beta"))
        stationarity = "none (a stationary point: no comparator)"
        primary = Bound(b["theorem5_bound"], GRADIENT_NORM, stationarity, IN_EXPECTATION,
                        "Theorem 5 (Zhang et al. 2017)", premises, True)
        return primary, [Bound(b["theorem6_bound"], GRADIENT_NORM, stationarity,
                               _with_probability(b["confidence"]),
                               "Theorem 6 (Zhang et al. 2017), constants of its proof",
                               premises, True)], None
    return None, [], None


def format_plan_rows(rows: list[PlanRow]) -> list[str]:
    """The text ``noisygd plan`` prints: the table, then each row's bound with what it bounds,
    against what, and every assumption with its source, then the refused methods."""
    head = (f"{'method':<20} {'relation':<12} {'noise':>10} {'steps':>7} "
            f"{'step size':>10} {'epsilon':>8} {'accountant':<22} {'bound':>10} {'rank':>9}")
    lines = [head]
    for r in rows:
        if r.refused is not None:
            continue
        rank = "" if r.group is None else f"{r.rank}/{r.group_size} {r.group}"
        lines.append(f"{r.method:<20} {r.relation:<12} {_g(r.noise):>10} {_g(r.steps):>7} "
                     f"{_g(r.step_size):>10} {_g(r.epsilon):>8} {r.accountant or '':<22} "
                     f"{_g(r.bound):>10} {rank:>9}")
    lines.append("rank k/m Gi: position among the m rows of group Gi, the rows whose bounds have "
                 "the same quantity, comparator, guarantee and assumptions; rows of different "
                 "groups are not ranked against each other")
    for r in rows:
        if r.refused is None and r.default_choice is not None:
            lines.append(f"default (method='auto', {r.relation}): runs "
                         f"{r.default_choice['method']}: {r.default_choice['rule']}")
    for r in rows:
        if r.refused is not None:
            continue
        if r.bound is None:
            if r.note:
                lines.append(f"  {r.method} ({r.relation}): no bound; {r.note}")
            continue
        covers = "" if r.bound_covers_run else " [not a guarantee for this run]"
        lines.append(f"  {r.method} ({r.relation}) [{r.group}] bound {r.bound:.4g}: "
                     f"{r.quantity}; comparator: {r.comparator}; {r.guarantee}; "
                     f"{r.bound_name}{covers}")
        for a in r.assumptions:
            lines.append(f"      assumes {a}")
        for b in r.other_bounds:
            lines.append(f"      also {b['value']:.4g}: {b['quantity']}; {b['guarantee']}; "
                         f"{b['reference']}")
        if r.note:
            lines.append(f"      note: {r.note}")
    for r in rows:
        if r.refused is not None:
            lines.append(f"  not applicable: {r.method} ({r.relation}): {r.refused}")
    return lines


def _g(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return str(value)
    return f"{value:.4g}"
