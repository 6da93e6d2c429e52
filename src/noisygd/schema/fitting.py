"""Fitting a private model from a raw table and a schema, and predicting from its model file.

:func:`fit_table` encodes the table by the schema (no data-dependent step), picks the model
from the target (``labels``: :class:`~noisygd.estimators.DPLogisticRegression`; ``bounds``:
:class:`~noisygd.estimators.DPLinearRegression` with ``target_range=bounds``, or
:class:`~noisygd.estimators.DPHuberRegressor`), and returns the estimator and the model file's
content: the schema, the coefficients, the privacy event and report, and the data-handling
statements. :func:`predict_table` applies a model file to a raw table.

A schema whose bounds or levels are ``"private"`` is paid for first (:mod:`noisygd.schema.paid`):
the statistics are planned, recorded in the ledger (if any) before the data is read,
released, and passed to the estimator as prior events, so the model's event composes them
with the count and the training run; the model file's ``schema`` is the resolved one (public
bounds and levels: releases and declarations), ``schema_declared`` the file as written, and
``paid`` the record of what was paid for. Numeric columns with ``count_clipped = true`` are
paid for the same way (one more statistic each from the same share): their noisy numbers of
values below and above the bounds are in ``paid`` and, rounded and clipped at 0, in the model
file's ``clipped_counts`` (:func:`clipped_counts`); without it nothing is counted.

A regression target with ``bounds = "private"`` is released by the estimator's private
target range instead (:func:`_target_range_by_estimator`): the grid's bins are 9% of their
distance to 0, too coarse for targets far from 0 against their spread, while the estimator's
rounds refine the range about the targets' private centre. It gets the target's share of
``preprocessing_share`` (:func:`_target_share`; the other paid statistics are planned for it),
its releases are rounds of the fit's event and ledger release, and the model file records it
(``paid["target_range"]``, the resolved schema's target bounds, ``target_range_used``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from noisygd.schema.encode import (
    check_columns,
    encode_features,
    encode_labels,
    encode_target_values,
    feature_names,
    public_centring,
)
from noisygd.schema.model import SchemaError, TableSchema, level_key, parse_schema

__all__ = ["MODELS", "MODEL_FORMAT", "clipped_counts", "fit_table", "predict_table",
           "task_model"]

#: ``format`` of the model files written by :func:`fit_table`.
MODEL_FORMAT = "noisygd-model/1"
#: ``--model`` choices and their estimator classes (in :mod:`noisygd.estimators`).
MODELS = {"logistic": "DPLogisticRegression", "linear": "DPLinearRegression",
          "huber": "DPHuberRegressor"}


def task_model(schema: TableSchema, model: str | None) -> str:
    """The ``--model`` for the schema's target: ``labels`` -> logistic, ``bounds`` -> linear.

    An explicit ``model`` must suit the target (logistic for labels; linear or huber for
    bounds); otherwise :class:`SchemaError` says which to change.
    """
    if schema.target is None:
        raise SchemaError("the schema has no [target] table: add name and labels or bounds")
    classification = schema.target.labels is not None
    if model is None:
        return "logistic" if classification else "linear"
    if model not in MODELS:
        raise SchemaError(f"--model must be one of {', '.join(sorted(MODELS))}")
    if classification and model != "logistic":
        raise SchemaError(f"--model {model} is a regression, but [target] declares labels: "
                          "use --model logistic, or declare bounds = [low, high] in [target]")
    if not classification and model == "logistic":
        raise SchemaError("--model logistic is a classifier, but [target] declares bounds: "
                          "use --model linear or huber, or declare labels = [...] in [target]")
    return model


def _statements(schema: TableSchema, n_public: bool, paid: Any = None,
                accountant: str | None = None, target_range: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    """What the fit declared public and what it paid for (no value read from the data, only
    releases: ``paid`` is the :class:`~noisygd.schema.paid.PaidRelease` of a paid schema,
    ``schema`` then the declared one; ``target_range`` the record of a paid target's range
    released by the estimator, :func:`_target_range_record`)."""
    target = schema.target
    assert target is not None
    declared = [f"row_norm_bound = {schema.row_norm_bound:g} (every encoded row has norm <= it)"]
    if target.paid:
        pass  # stated with the paid statistics below
    elif target.labels is not None:
        declared.append(f"target {target.name!r}: labels {list(target.labels)}")
    else:
        declared.append(f"target {target.name!r}: bounds {list(target.bounds or ())} "
                        "(targets clipped to them)")
    paid_names = set(schema.paid_columns)
    counted = schema.clip_count_columns
    for name, col in schema.columns.items():
        kind = col.kind
        if name in paid_names:
            continue
        if kind == "numeric":
            declared.append(f"column {name!r}: numeric, bounds {list(col.bounds)}, transform "
                            f"{col.transform}, missing -> {col.missing}"
                            + ("; clipped values counted (paid for: see below)"
                               if name in counted else ""))
        elif kind == "ignore":
            declared.append(f"column {name!r}: ignored")
        else:
            declared.append(f"column {name!r}: {kind}, {len(col.levels)} declared levels, "
                            f"unknown -> {col.unknown}, missing -> {col.missing}")
    paid_lines = [] if n_public else [
        "the number of rows: a noisy count paid for from the budget (see privacy)"]
    clipping = ("values outside declared bounds are clipped per row; the number of "
                "clipped values is neither computed nor released")
    if paid is not None or target_range is not None:
        from noisygd.schema.paid import CLIP_COUNTS, CLIP_MECHANISM, MECHANISM, paid_spec

        columns = [] if paid is None else paid.columns
        n_clip = sum(c.statistic == CLIP_COUNTS for c in columns)
        n_stat = len(columns) + (target_range is not None)
        what = " and ".join(w for w, k in (("bounds/levels", n_stat - n_clip),
                                           ("clipped-value counts", n_clip)) if k)
        mechanism = "; ".join(m for m, k in ((MECHANISM, len(columns) - n_clip),
                                             (CLIP_MECHANISM, n_clip)) if k)
        if target_range is not None:  # its own mechanism, in the fit's event (below)
            mechanism = "; ".join(m for m in (mechanism, (
                "the target's range by the estimator's private target range (its "
                "rounds are releases of the fit, before its run)")) if m)
        share = schema.preprocessing_share
        parts = [] if paid is None else [f"{paid.mu2_share():.4g}"]
        if target_range is not None:
            parts.append(f"{target_range['share']:.4g} in the target's range")
        drawn = f" (mu^2 share {', '.join(parts)})"
        paid_lines.append(
            f"{what} paid for privately: share {share:g} of the budget{drawn}, {n_stat} "
            f"statistic(s) at an equal share each; mechanism: {mechanism}; composed with the "
            f"fit and accounted by {accountant or 'the fit accountant'}")
        paid_lines.extend(c.describe(paid_spec(schema, c.name)) for c in columns)
        if target_range is not None:
            paid_lines.append(_target_range_statement(target_range))
        if counted:
            each = share / n_stat
            clipping = (
                "values outside the bounds (declared, or released for paid bounds) are "
                "clipped per row; the numbers of clipped values are released for "
                f"column(s) {', '.join(map(repr, counted))} only, as noisy counts (below low, "
                f"above high) paid for from the budget: share {each:.4g} of mu^2 per column "
                f"(total share {share:g} split over {n_stat} paid statistic(s)); for "
                "the other columns they are neither computed nor released")
    paid = paid_lines
    return {
        "declared_public": declared,
        "paid_for": paid,
        "clipping": clipping,
        "encoding": ("numeric/ordinal -> [0, 1], categorical -> one-hot on declared levels, "
                     "each row scaled by row_norm_bound / sqrt(n_blocks); no statistic of the "
                     "data is used (docs/schema.md)"),
    }


def fit_table(schema: TableSchema, frame: Any, *, model: str | None = None,
              params: dict[str, Any] | None = None, source: str = "the data"
              ) -> tuple[Any, dict[str, Any]]:
    """Fit the model the schema's target calls for; return ``(estimator, model_file_dict)``.

    ``params`` are extra estimator parameters (``epsilon``, ``delta``, ``method``, ...).
    The estimator gets ``row_norm_bound`` and ``feature_bounds`` (the schema's public centring)
    from the schema, ``classes = [0, ..., K-1]`` (positions in ``labels``) or
    ``target_range = bounds``; for ``bounds = "private"``, usually ``target_range_share``
    (the module doc) and the targets clipped to the declared ``range``.

    ``frame`` may be a pandas DataFrame or a Dask DataFrame (e.g.
    :func:`noisygd.schema.partitionwise.read_raw_collection`): the encoding then runs partition-wise
    and the fit on the cluster (docs/dask.md); paid statistics are distributed reductions
    whose noise is drawn on the client, so the same seed resolves the same schema
    (:func:`noisygd.schema.partitionwise.resolve_paid_partitionwise`).
    """
    from noisygd import estimators
    from noisygd.accounting.serialization import event_to_dict

    schema.check_final()
    name = task_model(schema, model)
    assert schema.target is not None
    check_columns(schema, frame.columns, source, need_target=True)
    encoders = _encoders(schema, frame)
    kwargs = dict(params or {})
    col = frame[schema.target.name]
    if name == "logistic":  # the target first: its errors come before any paid release
        labels = list(schema.target.labels or [])
        y = encoders["labels"](schema, col, source)
        kwargs["classes"] = list(range(len(labels)))
    else:
        y = encoders["targets"](schema, col, source)
        kwargs.pop("target_bound", None)
    declared, paid, paid_ledger = schema, None, None
    by_estimator = _target_range_by_estimator(schema, name, kwargs)
    if by_estimator:  # the estimator releases the target's range: docs/schema.md
        from noisygd.schema.paid import target_at_range

        kwargs["target_range_share"] = _target_share(schema)
        y = _clip_to_range(y, schema)
        schema = target_at_range(schema)
    if schema.pays:
        schema, paid, paid_ledger = _pay(schema, frame, name, kwargs, source,
                                         released_elsewhere=int(by_estimator))
    assert schema.target is not None
    if name != "logistic" and not by_estimator:  # the declared or the released bounds
        kwargs["target_range"] = tuple(schema.target.bounds or ())  # type: ignore[arg-type]
        if declared.target is not None and declared.target.paid:
            # released by the paid grid (already a private range, and paid for): the
            # estimator keeps it rather than pay again to narrow it
            kwargs["target_range_share"] = 0.0
    X = encoders["features"](schema, frame, source)
    kwargs.update(row_norm_bound=schema.row_norm_bound, feature_bounds=public_centring(schema))
    est = getattr(estimators, MODELS[name])(**kwargs)
    # the paid releases are composed first by fit_private (an argument of this fit only)
    est.fit(X, y, prior_events=None if paid is None else list(paid.events))
    target_range = _target_range_record(est, declared) if by_estimator else None
    if target_range is not None:
        schema = _with_target_bounds(schema, est.target_range_)
    params_out = {k: v for k, v in est.get_params().items()
                  if k not in ("ledger", "feature_bounds") and _jsonable(v)}
    payload: dict[str, Any] = {
        "format": MODEL_FORMAT,
        "model": MODELS[name],
        "task": schema.target.task,
        "params": params_out,
        "schema": schema.to_dict(),
        "target": schema.target.name,
        "labels": list(schema.target.labels) if schema.target.labels is not None else None,
        "feature_names": feature_names(schema),
        "coef": np.asarray(est.coef_).tolist(),
        "intercept": np.asarray(est.intercept_).tolist(),
        "multiclass": getattr(est, "multiclass", None),
        "event": event_to_dict(est.privacy_.event),
        "privacy": est.privacy_report(),
        "report": _statements(declared, kwargs.get("n_samples_public") is not None, paid,
                              est.privacy_.accountant, target_range),
        # the fit's own releases before its run, in order (the event's parts after `paid`)
        "pre_releases": [dict(r) for r in (est.fit_info_ or {}).get("pre_releases", ())],
    }
    if name != "logistic":  # the range the targets were clipped to, predictions projected on
        payload["target_range_used"] = [float(v) for v in est.target_range_]
    if declared.pays:
        payload["schema_declared"] = declared.to_dict()
        payload["paid"] = _paid_record(declared, paid, est, target_range)
    if paid is not None:
        counts = clipped_counts(paid)
        if counts:
            payload["clipped_counts"] = counts
        if paid_ledger is not None:
            payload["paid"]["ledger_release"] = {"dataset": paid_ledger.dataset,
                                                 **paid_ledger.to_dict(full=False)}
    if getattr(est, "ledger_release_", None) is not None:
        payload["ledger_release"] = {"dataset": est.ledger_release_.dataset,
                                     **est.ledger_release_.to_dict(full=False)}
    return est, payload


def _target_share(schema: TableSchema) -> float:
    """A paid regression target's share of :math:`\\mu^2`: ``preprocessing_share / m``, with
    ``m`` every paid statistic of the schema (bounds, levels, clipped-value counts, the
    target's range), as each gets from :func:`~noisygd.schema.paid.plan_paid`."""
    return schema.preprocessing_share / (len(schema.paid_columns)
                                         + len(schema.clip_count_columns))


def _target_range_by_estimator(schema: TableSchema, model: str, kwargs: dict[str, Any]
                               ) -> bool:
    """Whether a paid regression target's range is released by the estimator (its private
    target range, refined about the targets' private centre: docs/estimators.md) rather than
    by the schema's geometric grid (docs/schema.md, "Paying for bounds and levels").

    The estimator's when ``[target]`` says ``bounds = "private"`` without ``quantiles`` or
    ``resolution`` (which only the grid reads), its share :func:`_target_share` is at most
    0.5 (the estimator's limit), and the estimator releases a private target range with
    these parameters (public facts: not secure, not tuned, a method that composes with a
    prior release). Otherwise the grid's, whose bounds are one bin (9%) of their distance
    to 0 wide at best: for targets far from 0 against their spread,
    :func:`~noisygd.schema.paid.resolve_paid` warns.
    """
    target = schema.target
    if (model == "logistic" or target is None or not target.paid
            or target.quantiles is not None or target.resolution is not None):
        return False
    share = _target_share(schema)
    if share > 0.5:
        return False
    from noisygd import estimators

    est = getattr(estimators, MODELS[model])(**{**kwargs, "target_range_share": share})
    return est.releases_target_range()  # the estimator's own rule (public facts)


def _clip_to_range(y: Any, schema: TableSchema) -> Any:
    """The targets clipped to ``[target] range`` (a per-row map with public constants): the
    declared search range bounds what the estimator's target range can release, as the
    grid's end bins do."""
    assert schema.target is not None and schema.target.range is not None
    low, high = schema.target.range
    return y.clip(low, high)


def _with_target_bounds(schema: TableSchema, bounds: Any) -> TableSchema:
    """``schema`` with ``[target] bounds`` set to the range the fit released and used."""
    data = schema.to_dict()
    data["target"]["bounds"] = [float(v) for v in bounds]
    data["target"]["source"] = ("released by the fit's private target range (see the model "
                                "file's 'paid' record, target_range)")
    return parse_schema(data, "the schema resolved by the fit's private target range")


def _target_range_record(est: Any, declared: TableSchema) -> dict[str, Any]:
    """The model file's record of a paid target's range released by the estimator (public:
    the release, its share and events, from ``fit_info_["target_range"]``)."""
    from noisygd.accounting.calibration import calibrate_mu

    target = declared.target
    assert target is not None and target.range is not None
    info = dict(est.fit_info_.get("target_range") or {})
    if not info:
        raise RuntimeError("internal error: the estimator released no private target range")
    share = float(est.target_range_share)
    mu = float(np.sqrt(share) * calibrate_mu(float(est.epsilon), float(est.delta)))
    resolved = bool(info.get("resolved"))
    if not resolved:
        import warnings

        from noisygd._checks import user_stacklevel
        from noisygd.mechanisms.target_range import PrivateTargetRange

        why = PrivateTargetRange.unresolved_reason(bool(info.get("zero_only")))
        warnings.warn(
            f"target {target.name!r}: the private target range resolved no bin ({why}), so "
            "the targets were clipped to "
            f"{[float(v) for v in est.target_range_]}: declare [target] bounds = [low, high] "
            "(a public range of the targets), or raise preprocessing_share", UserWarning,
            stacklevel=user_stacklevel())
    return {"name": target.name, "statistic": "target_range", "model": type(est).__name__,
            "share": share, "mu": mu, "range": [float(v) for v in target.range],
            "released": [float(v) for v in est.target_range_] if resolved else None,
            "used": [float(v) for v in est.target_range_], "resolved": resolved,
            "event": info.get("event"), "rule": info.get("rule"),
            "rounds": _jsonable_copy(info.get("rounds") or []),
            "noise_std": _jsonable_copy(info.get("noise_std")),
            "threshold": _jsonable_copy(info.get("threshold"))}


def _jsonable_copy(value: Any) -> Any:
    """``value`` with NumPy scalars, arrays and tuples as plain JSON values."""
    import json

    return json.loads(json.dumps(value, default=lambda v: np.asarray(v).tolist()))


def _target_range_statement(record: dict[str, Any]) -> str:
    """One line for reports: a paid target's range released by the estimator."""
    low, high = record["used"]
    got = (f"range [{low:.6g}, {high:.6g}]" if record["resolved"] else
           f"no range resolved: targets clipped to [{low:.6g}, {high:.6g}]")
    return (f"target {record['name']!r}: {got} (released by {record['model']}'s private target "
            f"range in {1 + len(record['rounds'])} release(s): the hull of the occupied bins of "
            "a noisy histogram of the targets, refined about their private centre; targets first "
            f"clipped to the declared range {record['range']}; share {record['share']:.4g} of "
            f"mu^2, mu = {record['mu']:.4g}; events: {record['event']})")


def _paid_record(declared: TableSchema, paid: Any, est: Any,
                 target_range: dict[str, Any] | None) -> dict[str, Any]:
    """The model file's ``paid``: :meth:`~noisygd.schema.paid.PaidRelease.to_dict` of the
    statistics the schema released, and ``target_range``, the paid target's range where the
    estimator released it (:func:`_target_range_record`)."""
    accountant = est.privacy_.accountant
    if paid is not None:
        out = paid.to_dict(declared, accountant=accountant)
    else:  # the target's range was the only paid statistic
        from noisygd.accounting.calibration import calibrate_mu

        out = {"share": declared.preprocessing_share,
               "mu_total": float(calibrate_mu(float(est.epsilon), float(est.delta))),
               "relation": str(est.neighbouring),
               "secure": bool(est.secure), "columns": [], "accountant": accountant,
               "statements": []}
    if target_range is not None:
        out["target_range"] = target_range
        out["statements"] = [*out.get("statements", []), _target_range_statement(target_range)]
    return out


def _encoders(schema: TableSchema, frame: Any) -> dict[str, Any]:
    """The encoders of :mod:`noisygd.schema.encode`, or for a Dask DataFrame their
    partition-wise versions (:mod:`noisygd.schema.partitionwise`)."""
    from noisygd.oracles.dask import is_dask_collection

    if not is_dask_collection(frame):
        return {"labels": encode_labels, "targets": encode_target_values,
                "features": encode_features}
    from noisygd.schema import partitionwise as on_dask

    return {"labels": on_dask.encode_labels_partitionwise,
            "targets": on_dask.encode_target_values_partitionwise,
            "features": on_dask.encode_features_partitionwise}


def clipped_counts(paid: Any) -> dict[str, dict[str, Any]]:
    """``{column: {"below", "above", "bounds", "noise_std", "mu", "label"}}``: the released
    clipped-value counts of a :class:`~noisygd.schema.paid.PaidRelease` (noisy, rounded,
    clipped at 0; ``label`` is ``"noisy, paid"``). Empty without ``count_clipped``."""
    from noisygd.schema.paid import CLIP_COUNTS

    return {c.name: {"below": c.released[0], "above": c.released[1],
                     "bounds": list(c.against), "noise_std": c.noise_std, "mu": c.mu,
                     "label": "noisy, paid"}
            for c in paid.columns if c.statistic == CLIP_COUNTS}


def _pay(schema: TableSchema, frame: pd.DataFrame, model: str, kwargs: dict[str, Any],
         source: str, released_elsewhere: int = 0) -> tuple[TableSchema, Any, Any]:
    """Plan, record (ledger), release and resolve the paid statistics (module docstring);
    ``released_elsewhere``: :func:`~noisygd.schema.paid.plan_paid`'s (the target's range,
    released by the estimator)."""
    from noisygd import estimators
    from noisygd.accounting.events import DiscreteGaussianNoise, Gaussian, Neighbouring
    from noisygd.oracles.dask import is_dask_collection
    from noisygd.schema.paid import paid_rng, plan_paid, planning_schema, resolve_paid

    on_dask = is_dask_collection(frame)
    if not on_dask:
        # every cell is checked (malformed values, undeclared missing ones) before anything
        # is recorded or released: the widest public encoding refuses what the resolved one
        # would
        encode_features(planning_schema(schema), frame, source)
    p = getattr(estimators, MODELS[model])(**kwargs).get_params()
    if p.get("tune"):
        raise SchemaError("tune=True cannot be combined with bounds or levels paid for "
                          "privately (the private selection does not compose prior "
                          "releases): declare the bounds and levels, or drop tune")
    secure = bool(p.get("secure", False))
    relation = Neighbouring(p.get("neighbouring", "add_remove"))
    rng = paid_rng(p.get("random_state"), secure)
    plan = plan_paid(schema, epsilon=float(p["epsilon"]), delta=float(p["delta"]),
                     relation=relation, rng=rng, secure=secure,
                     released_elsewhere=released_elsewhere)
    release_record = None
    if p.get("ledger") is not None:  # recorded before the data it pays for is read
        from noisygd.schema.paid import record_prior_events
        rest2 = plan.mu_total ** 2 - plan.mu_events() ** 2
        rest: Any = None
        if rest2 > 0.0:  # the rest of the fit (count and runs) for a Gaussian solver
            rest = Gaussian(1.0 / float(np.sqrt(rest2)), relation=relation)
            rest = DiscreteGaussianNoise(rest, 1.0) if secure else rest
        release_record = record_prior_events(p["ledger"], p["dataset"], plan, rest=rest)
    if on_dask:
        from noisygd.schema.partitionwise import (
            paid_counts_partitionwise,
            resolve_paid_partitionwise,
        )

        try:  # one pass: every cell checked and the exact histograms (no noise yet)
            counts = paid_counts_partitionwise(schema, frame, plan, source)
        except BaseException:  # before the first noise draw: no release exists
            _withdraw(p["ledger"], release_record)
            raise
        resolved, release = resolve_paid_partitionwise(schema, frame, plan, rng=rng,
                                                       source=source, counts=counts)
    else:
        resolved, release = resolve_paid(schema, frame, plan, rng=rng, source=source)
    return resolved, release, release_record


def _withdraw(ledger: Any, release: Any) -> None:
    """Withdraw the paid ``release`` (if recorded) of a fit that failed before its first
    noise draw (docs/ledger.md, "A fit that fails"); a ledger error leaves it recorded."""
    import contextlib

    from noisygd.ledger import opened_ledger

    if release is None:
        return
    with contextlib.suppress(Exception), opened_ledger(ledger) as opened:
        opened.withdraw(release)


def _jsonable(value: Any) -> bool:
    import json

    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def model_arrays(payload: dict[str, Any], n_features: int
                 ) -> tuple[np.ndarray, np.ndarray, list[Any] | None]:
    """``(coef, intercept, labels)`` of a model file, checked: finite numbers of the shapes
    the task needs (``labels`` is ``None`` for a regression).

    A classifier of ``K >= 2`` labels has one row of coefficients (``K = 2``) or ``K``;
    a regression has one. Raises :class:`SchemaError` naming the damaged entry.
    """
    try:
        coef = np.atleast_2d(np.asarray(payload["coef"], dtype=np.float64))
        intercept = np.atleast_1d(np.asarray(payload["intercept"], dtype=np.float64))
    except (KeyError, TypeError, ValueError, OverflowError):
        raise SchemaError("the model file's coef and intercept must be arrays of numbers: "
                          "the model file is damaged") from None
    if coef.ndim != 2 or intercept.ndim != 1 or not (
            np.isfinite(coef).all() and np.isfinite(intercept).all()):
        raise SchemaError("the model file's coef and intercept must be finite numbers (a "
                          "matrix and a vector): the model file is damaged")
    if coef.shape[1] != n_features:
        raise SchemaError(f"the model has {coef.shape[1]} coefficients per output but its "
                          f"schema encodes {n_features} features: the model file is damaged")
    if payload.get("task") == "regression":
        outputs, labels = 1, None
    else:
        labels = payload.get("labels")
        if not isinstance(labels, list) or len(labels) < 2:
            raise SchemaError("the model file's labels must be a list of at least two labels "
                              "(a classifier of one label predicts nothing): the model file "
                              "is damaged")
        outputs = 1 if len(labels) == 2 else len(labels)
        if coef.shape[0] == len(labels) == 2:  # one row per label also scores 2 classes
            outputs = 2
    if coef.shape[0] != outputs or intercept.shape[0] != outputs:
        raise SchemaError(f"the model file has {coef.shape[0]} rows of coefficients and "
                          f"{intercept.shape[0]} intercepts, {outputs} expected: the model file "
                          "is damaged")
    return coef, intercept, labels


def predict_table(payload: dict[str, Any], frame: pd.DataFrame, source: str = "the data"
                  ) -> pd.DataFrame:
    """Predictions of a model file (from :func:`fit_table`) for a raw table.

    One row per input row: ``prediction`` (a label from the schema, or a number: a regressor's
    is projected onto its ``target_range`` unless it was fitted with
    ``clip_predictions=False``, as its ``predict``), and for a classifier ``proba_<label>``
    per label. The target column may be present (it is not read).
    """
    if payload.get("format") != MODEL_FORMAT or "schema" not in payload:
        raise SchemaError("the model file was not written by 'noisygd fit --schema' (it has no "
                          "schema to encode the data with): refit with --schema")
    schema = parse_schema(payload["schema"], "the model's schema")
    check_columns(schema, frame.columns, source, need_target=False, predict=True)
    coef, intercept, labels = model_arrays(payload, len(feature_names(schema)))
    X = encode_features(schema, frame, source, warn_unknown=True)
    scores = X @ coef.T + intercept
    if labels is None:  # a regressor's predict: projected onto its target range
        params = payload.get("params") or {}
        prediction = scores[:, 0]
        bounds = payload.get("target_range_used", params.get("target_range"))
        if params.get("clip_predictions", True) and bounds is not None:
            prediction = np.clip(prediction, float(bounds[0]), float(bounds[1]))
        return pd.DataFrame({"prediction": prediction})
    if scores.shape[1] == 1:
        p = _sigmoid(scores[:, 0])
        proba = np.column_stack([1.0 - p, p])
        idx = (scores[:, 0] > 0).astype(int)
    else:
        if payload.get("multiclass") == "multinomial":
            z = scores - scores.max(axis=1, keepdims=True)
            e = np.exp(z)
            proba = e / e.sum(axis=1, keepdims=True)
        else:
            s = _sigmoid(scores)
            proba = s / np.maximum(s.sum(axis=1, keepdims=True), 1e-300)
        idx = np.argmax(scores, axis=1)
    out = pd.DataFrame({"prediction": pd.Series([labels[i] for i in idx], dtype=object)})
    for j, label in enumerate(labels):
        out[f"proba_{level_key(label)}"] = proba[:, j]
    return out
