"""``noisygd plan``: what each method would do on a problem, from public facts alone.

For every method in :data:`noisygd.solvers.SOLVERS` and every neighbouring relation it is
accounted under, :func:`plan_table` builds the objective a fit would optimise (the estimator's
documented conditioning: ``CentredGLM`` around the schema's public centre for methods that
clip, docs/estimators.md), its :class:`~noisygd.solvers.PublicFacts` for ``n`` rows declared
public, the budget a fit gives the method (a Gaussian method spends the whole budget as one
Gaussian-DP ``mu``, :func:`noisygd.accounting.gdp.split_gaussian_budget`), and asks the solver
for its plan. It reports the noise, the steps, the step size, the accountant that certifies the
planned event (:func:`noisygd.accounting.best`) and the predicted utility bound the planner
chose by, when it states one; rows are sorted by that bound (methods stating none last). No
data is read.

The bounds are of different kinds (NoisyGD: the excess empirical risk bound of the textbook
run, DP-FTRL: expected average regret, output perturbation: Theorems 2-3's excess risk of the
unregularised objective, Langevin: Lemma 6 when it applies); each row names its bound.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from noisygd._checks import check_fraction, check_real

__all__ = ["PlanRow", "plan_table"]

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

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _estimator_class(model: str) -> Any:
    """The estimator class a ``model`` name plans for (imported here: estimators sit above
    the schema layer)."""
    from noisygd.estimators import DPHuberRegressor, DPLinearRegression, DPLogisticRegression

    return {"logistic": DPLogisticRegression, "huber": DPHuberRegressor,
            "linear": DPLinearRegression}[model]


def _objective(model: str, l2: float, radius: float | None, target_half: float | None):
    from noisygd.objectives.glm import HuberLoss, LogisticLoss, SquaredLoss

    if model == "logistic":
        return LogisticLoss(l2=l2, fit_intercept=True)
    if model == "huber":
        return HuberLoss(threshold=1.0, l2=l2, fit_intercept=True)
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
    if getattr(main, "bound_value", None) is not None:
        out["bound"] = float(main.bound_value)
        out["bound_name"] = (f"excess empirical risk, bound {main.bound_name} of the textbook "
                             "NoisyGD run (docs/noisygd.md)")
    elif getattr(main, "regret_bound", None) is not None:
        out["bound"] = float(main.regret_bound)
        out["bound_name"] = "DP-FTRL expected average regret (slides 001)"
    elif getattr(main, "excess_risk_bound", None) is not None:
        out["bound"] = float(main.excess_risk_bound)
        out["bound_name"] = "Langevin excess risk (Lemma 6)"
    elif getattr(main, "excess_risk_bound_reason", None):
        out["note"] = str(main.excess_risk_bound_reason)
    return out


def plan_table(*, model: str, n_samples: int, n_features: int, epsilon: float, delta: float,
               relations: tuple[str, ...] = ("add_remove", "replace_one"),
               row_norm_bound: float = 1.0, centring: Any = None,
               target_range: tuple[float, float] | None = None, l2: float | None = None,
               max_iter: int | None = None, radius: float | None = None,
               method_options: dict[str, Any] | None = None,
               scale_share: float | None = None) -> list[PlanRow]:
    """Plan every applicable method (module doc); rows sorted by predicted bound.

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
    rows: list[PlanRow] = []
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
                    scale_share=scale_share))
            except (ValueError, TypeError, AssumptionError, UnsupportedEventError) as exc:
                rows.append(PlanRow(method=name, relation=relation, refused=str(exc)))
            except ArithmeticError:  # an overflow or a division by 0 of the planner's formulas
                rows.append(PlanRow(method=name, relation=relation, refused=(
                    "the public constants (row norm bound, l2, radius) are out of "
                    "floating-point range for this method's planner")))
    return sorted(rows, key=lambda r: (r.refused is not None, r.bound is None,
                                       math.inf if r.bound is None else r.bound,
                                       r.method, r.relation))


def _plan_one(solver: Any, relation: str, *, model: str, n: int, d: int, epsilon: float,
              delta: float, B: float, centring: Any, half: float | None, l2: float | None,
              max_iter: int | None, radius: float | None, options: dict[str, Any],
              scale_share: float = 0.0) -> PlanRow:
    """The plan of one solver under one relation (see :func:`plan_table`)."""
    from noisygd.accounting import best
    from noisygd.accounting.gdp import gdp_epsilon, split_gaussian_budget
    from noisygd.objectives.centred import CentredGLM
    from noisygd.planning import DEFAULT_INIT_DISTANCE
    from noisygd.solvers import Budget, PublicFacts
    from noisygd.solvers.output_perturbation import choose_l2

    estimator = _estimator_class(model)  # its public rules: intercept scale, horizon
    note = ""
    l2_used = L2_DEFAULTS[model] if l2 is None else float(l2)
    if (model in ("logistic", "linear") and solver.plans_ridge and l2 is None
            and radius is None and "l2" not in options):
        # as the estimators' l2=None with NoisyGD (``_plans_ridge``): the solver plans the
        # ridge (noisygd.planning.ridge_strength) on an unregularised objective, and
        # DPLinearRegression runs to the ridge's horizon (``_method_options``)
        l2_used, options = 0.0, {**options, "l2": "auto"}
        if estimator._RUNS_TO_RIDGE_HORIZON:
            options.setdefault("horizon", "ridge")
    op_bound = None
    if solver.chooses_l2 and l2 is None:
        base = _objective(model, 0.0, radius, half)
        d0 = radius or options.get("optimum_norm_bound") or DEFAULT_INIT_DISTANCE
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
            s = estimator._default_intercept_scale(B, d)
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
        if (model == "linear" and solver.plans_ridge and clip is not None
                and scale_share > 0):
            # DPLinearRegression's private scales take scale_share of mu^2 first; the fit's
            # clip is at most this one (target_scale_ and row_scale_ are at most 1), and its
            # planned ridge, hence its horizon, follows its clip
            mu_k *= math.sqrt(1.0 - scale_share)
            note = "; ".join(x for x in (note, f"clip <= {clip:.3g} (x target_scale_ and "
                                         f"row_scale_, released at {scale_share:g} of mu^2; "
                                         "steps for this clip)") if x)
        budget = Budget(gdp_epsilon(mu_k, delta), delta, mu=mu_k)
    else:
        budget = Budget(epsilon, delta)
    plan = solver.plan(facts, budget)
    event = solver.planned_event(plan)
    result = best(event, delta)
    described = _describe(solver.name, plan)
    if op_bound is not None and described.get("bound") is None:
        described["bound"] = float(op_bound)
        described["bound_name"] = ("excess risk of the unregularised objective, Theorems 2-3 "
                                   "(Zhang et al. 2017)")
    extra = described.pop("note", "")
    return PlanRow(method=solver.name, relation=relation, epsilon=float(result.epsilon),
                   accountant=result.accountant,
                   theorem=result.theorems.get(result.accountant, ""),
                   note="; ".join(x for x in (note, extra) if x), **described)
