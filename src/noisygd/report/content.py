"""What a fit report says: :class:`FitReport` and :func:`build_report`.

A report is built from public facts only: the privacy event, the released parameters, the
estimator's parameters, the planner's choices (``fit_info_``), and the data-handling
statements of a schema fit (``noisygd.schema.fitting``'s model file, key ``report``). Nothing
in it is read from the training rows, and nothing is invented: a quantity the fit did not
record (a training curve, a paid-for bound) is stated as absent, with the reason.

Inputs :func:`build_report` accepts: a fitted estimator of :mod:`noisygd.estimators` (any object
with a ``privacy_`` :class:`~noisygd.accounting.base.AccountingResult`), an
:class:`~noisygd.accounting.base.AccountingResult`, the model-file dict written by
``noisygd fit --schema`` (keys ``event``, ``privacy``, ``params``, ``report``), a
:class:`~noisygd.training.PrivateFit`, or a :class:`~noisygd.algorithms.base.FitResult` with
``delta=`` given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from noisygd._checks import check_real
from noisygd.accounting.base import AccountingResult, check_delta, within_budget
from noisygd.accounting.events import (
    Composed,
    DpEvent,
    Gaussian,
    LastIterateLangevin,
    SelfComposed,
)
from noisygd.accounting.serialization import event_from_dict
from noisygd.exceptions import UnsupportedEventError
from noisygd.report.curves import (
    Curve,
    epsilon_delta_curves,
    epsilon_step_curves,
    full_accounting,
    run_steps,
)

__all__ = ["NO_TRAINING_CURVE", "Check", "FitReport", "TrainingCurve", "build_report"]

#: What the page says when the fit recorded no training curve (none of noisygd's methods does).
NO_TRAINING_CURVE = (
    "No training curve was recorded: noisygd's methods keep no per-step loss, because "
    "evaluating the loss on the private rows at every step would be a further release that "
    "the privacy event does not cover. A curve computed on public or held-out data can be "
    "passed as training_curve=(steps, values, label).")

#: Plain-language meaning of the yes/no facts the planners record (``fit_info_["plans"]``).
PLAN_CHECKS = {
    "clip_covers_lipschitz": (
        "The clipping norm is at least the loss's Lipschitz constant: clipping never changes "
        "a per-example gradient, so the run optimises the objective itself."),
    "bound_covers_run": (
        "The planner's predicted utility bound holds for the run actually made (same "
        "averaging and momentum as the textbook run it was proved for)."),
}

#: Facts a last-iterate Langevin event records, which its theorems assume.
LANGEVIN_FACTS = ("theorem", "strong_convexity", "smoothness", "constraint", "radius", "start",
                  "hidden_trajectory", "clipped_gradients", "quadratic_constant_hessian",
                  "sensitivity", "objective")


@dataclass
class Check:
    """One assumption of the fit and what was found.

    Attributes
    ----------
    topic : str
        What it is about (accounting, planning, data handling, ...).
    statement : str
        The assumption, in words.
    status : {"holds", "fails", "recorded"}
        ``holds``/``fails`` for a checked yes/no fact, ``recorded`` for a stated fact.
    detail : str
        The theorem, the reason for a refusal, or the recorded value.
    """

    topic: str
    statement: str
    status: str
    detail: str = ""


@dataclass
class TrainingCurve:
    """A training curve to show: ``values`` against ``steps``, with what it measures."""

    steps: list[float]
    values: list[float]
    label: str


@dataclass
class FitReport:
    """Everything the HTML page shows (built by :func:`build_report`).

    Attributes
    ----------
    title : str
    event : DpEvent
        The fit's privacy event.
    delta : float
    accounting : AccountingResult
        Every accountant asked (``best(..., include_paper=True, exhaustive=True)``).
    budget_epsilon : float or None
        The epsilon the fit was asked for, when known.
    model : str or None
        The estimator's class name.
    parameters : dict
        The estimator's public parameters.
    plans : list of dict
        The scalar entries of each run's plan (one per problem).
    coefficients : dict or None
        ``feature_names``, ``coef`` (rows: outputs), ``intercept``, ``labels``: the released
        parameters.
    checks : list of Check
        Every assumption checked.
    data_handling : dict
        ``declared_public``, ``paid_for``, and other statements (``clipping``, ``encoding``).
    budget_parts : list of dict
        Each part of the event with its own epsilon at ``delta`` and, for Gaussian parts,
        its share of the Gaussian-DP budget ``mu^2``.
    delta_curves, step_curves : list of Curve
    step_curves_note : str or None
        Why there is no epsilon-against-steps plot, when there is none.
    steps : int or None
        The number of steps of the run.
    training_curve : TrainingCurve or None
    training_curve_note : str
    """

    title: str
    event: DpEvent
    delta: float
    accounting: AccountingResult
    budget_epsilon: float | None = None
    model: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    plans: list[dict[str, Any]] = field(default_factory=list)
    coefficients: dict[str, Any] | None = None
    checks: list[Check] = field(default_factory=list)
    data_handling: dict[str, Any] = field(default_factory=dict)
    budget_parts: list[dict[str, Any]] = field(default_factory=list)
    delta_curves: list[Curve] = field(default_factory=list)
    step_curves: list[Curve] = field(default_factory=list)
    step_curves_note: str | None = None
    steps: int | None = None
    training_curve: TrainingCurve | None = None
    training_curve_note: str = NO_TRAINING_CURVE

    @property
    def epsilon(self) -> float:
        """The tightest epsilon at :attr:`delta` (its accountant: ``accounting.accountant``)."""
        return self.accounting.epsilon


# ------------------------------------------------------------------------ helpers
def _scalar(value: Any) -> bool:
    if isinstance(value, np.generic):
        value = value.item()
    return value is None or isinstance(value, str | bool | int | float)


def _clean(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _scalars(d: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``d`` that are single public values (arrays and nested dicts dropped)."""
    return {k: _clean(v) for k, v in d.items() if _scalar(v)}


def _plan_entries(info: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    out = []
    for run in (info or {}).get("plans", []) or []:
        if not isinstance(run, Mapping):
            continue
        entry = _scalars(run)
        plan = run.get("plan")
        if isinstance(plan, Mapping):
            entry.update({f"plan.{k}": v for k, v in _scalars(plan).items()})
        out.append(entry)
    return out


def _leaves(event: DpEvent) -> list[DpEvent]:
    return list(event.events) if isinstance(event, Composed) else [event]


def _gaussian_mu2(event: DpEvent) -> float | None:
    """``mu^2`` of a Gaussian or a repeated Gaussian (Gaussian DP composes in ``mu^2``)."""
    if isinstance(event, Gaussian):
        return event.mu ** 2
    if isinstance(event, SelfComposed) and isinstance(event.event, Gaussian):
        return event.count * event.event.mu ** 2
    return None


def budget_parts(event: DpEvent, delta: float, n_count_paid: bool,
                 prior_labels: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Each top-level part of ``event``: its own epsilon at ``delta`` and its ``mu^2`` share.

    The parts compose (the total is not their sum: see the accountants); for Gaussian parts
    the Gaussian-DP budget adds exactly, ``mu^2 = sum_k mu_k^2`` (Dong, Roth and Su 2022,
    Cor. 3.3), so each part's share of ``mu^2`` is the share of the budget it took.
    ``prior_labels`` name the first parts (releases made before the fit, e.g. schema bounds
    and levels paid for privately); ``n_count_paid`` names the next one as the noisy row
    count.
    """
    from noisygd.accounting.registry import best

    parts = _leaves(event)
    mu2 = [_gaussian_mu2(p) for p in parts]
    total = sum(mu2) if all(m is not None for m in mu2) else None  # type: ignore[misc]
    n_prior = min(len(prior_labels), len(parts))
    count = int(bool(n_count_paid) and len(parts) > n_prior + 1)
    n_runs = len(parts) - count - n_prior
    out = []
    for i, (part, m) in enumerate(zip(parts, mu2, strict=True)):
        if i < n_prior:
            what = str(prior_labels[i])
        elif i < n_prior + count:
            what = "the number of rows (noisy count, paid for)"
        else:
            j = i - count - n_prior
            what = ("the training run" if n_runs == 1
                    else f"training run {j + 1} of {n_runs}")
        row: dict[str, Any] = {"part": what, "event": part.describe()}
        try:
            res = best(part, delta)
            row.update(epsilon=res.epsilon, accountant=res.accountant)
        except UnsupportedEventError as exc:
            row.update(epsilon=None, accountant=None, refused=str(exc))
        row["mu2_share"] = (float(m / total) if (m is not None and total) else None)
        out.append(row)
    return out


def _prior_labels(payload: Mapping[str, Any] | None,
                  info: Mapping[str, Any] | None) -> list[str]:
    """Names of the releases made before the fit (the first parts of its event): the
    schema's paid statistics (a model file's ``paid`` columns) or the prior events given to
    the fit, then the fit's own pre-release stages, named (``fit_info_["pre_releases"]``, or
    a model file's ``pre_releases``: a report of the file alone names them too)."""
    paid = (payload or {}).get("paid") or {}
    # the fit's own pre-release stages come last among them, named (noisygd.training, doc 8)
    stages = ((info or {}).get("pre_releases") or (payload or {}).get("pre_releases")
              or [])
    if paid.get("columns"):
        names = {"clip_counts": "clipped-value counts (noisy, paid)"}
        given = [f"{names.get(c['statistic'], c['statistic'])} of column {c['name']!r} "
                 "(paid for privately)" for c in paid["columns"]]
    else:
        n_given = len((info or {}).get("prior_events") or []) - len(stages)
        given = [f"prior release {i + 1} of {n_given}" for i in range(max(n_given, 0))]
    return given + [f"{PRE_RELEASE_NAMES.get(r['name'], r['name'])} (released before the run)"
                    for r in stages]


def _accounting_checks(result: AccountingResult, budget: float | None) -> list[Check]:
    ev = result.event
    rel = ev.neighbouring
    checks = [Check("neighbouring", f"Neighbouring datasets: {rel.value.replace('_', '/')}",
                    "recorded",
                    f"one clipped row moves a clipped gradient sum by at most "
                    f"{rel.clipped_sum_sensitivity:g} clipping norms")]
    for name, eps in result.by_accountant.items():
        checks.append(Check("accounting", f"{name} bounds the event", "holds",
                            f"eps = {eps:.6g} at delta = {result.delta:.3g}: "
                            f"{result.theorems.get(name, '')}"))
    for name, reason in result.refused.items():
        checks.append(Check("accounting", f"{name}: its theorem's assumptions hold", "fails",
                            reason))
    if budget is not None:
        ok = within_budget(result.epsilon, budget)
        checks.append(Check("budget", f"epsilon spent <= the budget {budget:g}",
                            "holds" if ok else "fails",
                            f"{result.epsilon:.6g} ({result.accountant})"))
    for leaf in _leaves(ev):
        if isinstance(leaf, LastIterateLangevin):
            for key in LANGEVIN_FACTS:
                checks.append(Check("last-iterate Langevin", key, "recorded",
                                    repr(getattr(leaf, key))))
    return checks


def _plan_checks(info: Mapping[str, Any] | None) -> list[Check]:
    out = []
    if info:
        src = info.get("n_samples_source")
        if src:
            out.append(Check("data handling", "Number of rows", "recorded", str(src)))
    plans = _plan_entries(info)
    for i, plan in enumerate(plans):
        where = "planning" if len(plans) == 1 else f"planning (problem {i + 1})"
        for key, value in plan.items():
            base = key.removeprefix("plan.")
            if base in PLAN_CHECKS and isinstance(value, bool):
                out.append(Check(where, PLAN_CHECKS[base], "holds" if value else "fails",
                                 f"{base} = {value}"))
    return out


def _estimator_statements(est: Any, info: Mapping[str, Any] | None) -> dict[str, Any]:
    """Data-handling statements of an estimator fitted on a numeric matrix (no schema)."""
    params = est.get_params() if hasattr(est, "get_params") else {}
    declared = []
    bound = params.get("row_norm_bound")
    if bound is not None:
        declared.append(f"row_norm_bound = {bound:g}: every row is scaled to norm <= it (a "
                        "per-row step with a public constant)")
    if params.get("feature_bounds") is not None:
        declared.append("feature_bounds: the public centring of the features")
    if params.get("classes") is not None:
        declared.append(f"classes = {list(params['classes'])}")
    for key in ("target_range", "target_bound"):
        if params.get(key) is not None:
            declared.append(f"{key} = {params[key]} (targets clipped to it)")
    if params.get("n_samples_public") is not None:
        declared.append(f"n_samples_public = {params['n_samples_public']}")
    paid = []
    src = str((info or {}).get("n_samples_source", ""))
    if "paid" in src:
        paid.append("the number of rows: a noisy count paid for from the budget")
    released = (info or {}).get("pre_releases", ())
    for release in released:  # the releases before the run (noisygd.training, module doc 8)
        paid.append(f"{PRE_RELEASE_NAMES.get(release['name'], release['name'])}: "
                    f"{release['statistic']}, released with {release['event']} before the run")
    conditioned = {r["name"] for r in released} & CONDITIONING_STAGES
    features = ("features without declared bounds (no schema): rescaled and centred in the "
                "coordinates the private releases above chose (docs/estimators.md)"
                if conditioned else
                "features used as given (no schema): their bounds are the user's "
                "responsibility")
    return {"declared_public": declared, "paid_for": paid, "features": features}


#: Plain names of the estimators' pre-release stages (``fit_info_["pre_releases"]``).
PRE_RELEASE_NAMES = {"target_range": "the private target range",
                     "target_centre": "the targets' private centre in their range",
                     "target_range_2": "the targets' distances to their private centre",
                     "target_centre_2": "the targets' private centre, second round",
                     "target_range_3": "the targets' distances to their private centre, "
                                       "second round",
                     "feature_range": "the private feature range",
                     "column_offsets": "the private offsets of the columns far from 0",
                     "column_deviations": "the columns' distances to their private offsets",
                     "conditioning": "the private centre and row scale",
                     "conditioning_radius": "the rows' distances to the private centre",
                     "conditioning_2": "the private centre and row scale, second round",
                     "conditioning_radius_2": "the rows' distances to the private centre, "
                                              "second round",
                     "conditioning_3": "the private centre and row scale, third round",
                     "feature_scale": "the private per-feature scale",
                     "target_scale": "the private target and residual scales"}
#: The stages that change the coordinates of the features (the conditioning's are
#: ``noisygd.estimators.CONDITIONING_RELEASES``; the report sits below the estimators).
CONDITIONING_STAGES = frozenset({"feature_range", "column_offsets", "column_deviations",
                                 "conditioning", "conditioning_radius",
                                 "conditioning_2", "conditioning_radius_2", "conditioning_3",
                                 "feature_scale"})


def _coefficients(coef: Any, intercept: Any, names: Sequence[str] | None,
                  labels: Sequence[Any] | None) -> dict[str, Any]:
    c = np.atleast_2d(np.asarray(coef, dtype=np.float64))
    names = list(names) if names is not None else [f"x{j}" for j in range(c.shape[1])]
    return {"feature_names": [str(n) for n in names], "coef": c.tolist(),
            "intercept": np.atleast_1d(np.asarray(intercept, dtype=np.float64)).tolist(),
            "labels": None if labels is None else [str(v) for v in labels]}


# ------------------------------------------------------------------------- build
def build_report(obj: Any, *, payload: Mapping[str, Any] | None = None,
                 delta: float | None = None,
                 training_curve: tuple[Sequence[float], Sequence[float], str] | None = None,
                 title: str | None = None, curves: bool = True) -> FitReport:
    """The report of a fit (module doc lists the accepted inputs).

    Parameters
    ----------
    obj : estimator, AccountingResult, dict, PrivateFit or FitResult
    payload : mapping, optional
        The model-file dict of ``noisygd fit --schema``, when ``obj`` is the estimator that
        fit wrote it: its data-handling statements, feature names and labels are used.
    delta : float, optional
        Needed for a FitResult (which records no delta); else read from the fit.
    training_curve : (steps, values, label), optional
        A curve computed on public or held-out data, to show; without it the page says why
        there is none (:data:`NO_TRAINING_CURVE`).
    title : str, optional
    curves : bool, default=True
        Compute the privacy curves (False: the tables only).

    Returns
    -------
    FitReport
    """
    info: Mapping[str, Any] | None = None
    est = None
    params: dict[str, Any] = {}
    coefficients = None
    model = None
    budget = None
    statements: dict[str, Any] = {}
    if isinstance(obj, AccountingResult):
        event, d = obj.event, obj.delta
        statements = {"note": "an accounting result alone says nothing about the data "
                              "handling; report the fitted estimator for it"}
    elif isinstance(obj, Mapping):
        payload = obj
        event = event_from_dict(dict(obj["event"]))
        d = float(obj["privacy"]["delta"])
        params = _scalars(obj.get("params") or {})
        model = obj.get("model")
    elif isinstance(getattr(obj, "privacy_", None), AccountingResult):
        est = obj
        event, d = obj.privacy_.event, obj.privacy_.delta
        info = getattr(obj, "fit_info_", None)
        params = _scalars({k: v for k, v in obj.get_params().items()
                           if k not in ("ledger", "feature_bounds")})
        model = type(obj).__name__
        coefficients = _coefficients(obj.coef_, obj.intercept_, None,
                                     getattr(obj, "classes_", None))
    elif isinstance(getattr(obj, "privacy", None), AccountingResult):  # PrivateFit
        event, d = obj.event, obj.privacy.delta
        info = obj.info
    elif isinstance(getattr(obj, "event", None), DpEvent) and hasattr(obj, "theta"):
        if delta is None:
            raise ValueError("a FitResult records no delta: pass delta=")
        event, d = obj.event, delta
        info = {"plans": [obj.info]}
    else:
        raise TypeError("build_report takes a fitted noisygd estimator, an AccountingResult, a "
                        f"model-file dict, a PrivateFit or a FitResult; got {type(obj).__name__}")
    d = check_delta(d if delta is None else delta)
    if payload is not None:
        params = params or _scalars(payload.get("params") or {})
        model = model or payload.get("model")
        statements = dict(payload.get("report") or {})
        if "coef" in payload:
            coefficients = _coefficients(payload["coef"], payload["intercept"],
                                         payload.get("feature_names"), payload.get("labels"))
    elif est is not None:
        statements = _estimator_statements(est, info)
    if "epsilon" in params:
        budget = check_real("epsilon", params["epsilon"])

    accounting = full_accounting(event, d)
    paid_count = "paid" in str((info or {}).get("n_samples_source", "")) or any(
        str(s).startswith("the number of rows") for s in statements.get("paid_for", []))
    report = FitReport(
        title=title or (f"noisygd report: {model}" if model else "noisygd privacy report"),
        event=event, delta=d, accounting=accounting, budget_epsilon=budget, model=model,
        parameters=params, plans=_plan_entries(info), coefficients=coefficients,
        checks=[*_accounting_checks(accounting, budget), *_plan_checks(info)],
        data_handling=statements,
        budget_parts=budget_parts(event, d, paid_count, _prior_labels(payload, info)),
        steps=run_steps(event))
    if training_curve is not None:
        steps, values, label = training_curve
        s = [float(v) for v in steps]
        v = [float(x) for x in values]
        if len(s) != len(v) or not s or not all(math.isfinite(x) for x in s + v):
            raise ValueError("training_curve needs equal-length, finite, non-empty steps and "
                             "values")
        report.training_curve = TrainingCurve(s, v, str(label))
        report.training_curve_note = "Supplied with the report (not recorded by the fit)."
    if curves:
        report.delta_curves = epsilon_delta_curves(event, d, result=accounting)
        try:
            report.step_curves = epsilon_step_curves(event, d, result=accounting)
        except UnsupportedEventError as exc:
            report.step_curves_note = str(exc)
    return report
