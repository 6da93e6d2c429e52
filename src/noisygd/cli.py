"""The ``noisygd`` command line: demo, fit, predict, report, schema, plan, account, reproduce,
ledger.

``noisygd fit DATA --schema s.toml`` fits a raw table (CSV, CSV.gz, Parquet; categorical
columns, missing values, string labels) encoded by a schema of public bounds
(:mod:`noisygd.schema`, docs/schema.md); ``noisygd predict MODEL DATA`` applies the model file;
``noisygd schema draft DATA`` writes a draft schema with every data-derived value marked;
``noisygd plan`` shows every method's plan and predicted bound before any data is read;
``noisygd fit ... --report r.html`` and ``noisygd report MODEL`` write the HTML report
(:mod:`noisygd.report`). Progress bars (tqdm, standard error) only on a terminal, never with
``--quiet``. Output files are written atomically (temporary file + ``os.replace``), regular
files only.

Every command takes ``--json`` for machine-readable output; every epsilon it
prints names the accountant (and theorem) behind it. ``noisygd ledger
show|set-budget|history|export`` manages the privacy ledger
(:mod:`noisygd.ledger.cli`), and ``noisygd fit ... --ledger L --dataset NAME`` records
the fit there: its run as one release, and each private release made before the run
(paid schema statistics, the private conditioning, ...) as one more (refused, before the data
is read, when the budget cannot admit them). User errors are one line on stderr and exit
status 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPRODUCTIONS: dict[str, tuple[str, str]] = {
    "zhang2017-table3": (
        "noisygd.reproductions.zhang2017_table3",
        "Table 3 of Zhang et al. (IJCAI 2017) on the UCI data",
    ),
    "chourasia2021-figures": (
        "noisygd.reproductions.chourasia2021",
        "Figures 1 and 2 of Chourasia, Ye, Shokri (NeurIPS 2021)",
    ),
    "rrpsgd-theorem5": (
        "noisygd.reproductions.rrpsgd_theorem5",
        "RRPSGD's measured E||grad F||^2 vs Theorem 5 of Zhang et al. (2017) on UCI data",
    ),
    "hong-dynamic": (
        "noisygd.reproductions.hong_dynamic",
        "uniform vs dynamic privacy-budget schedules (Hong, Wang, Zhou)",
    ),
}

#: The names of :data:`noisygd.solvers.SOLVERS`, written out so that ``--help`` does not
#: import the solvers (tests/solvers/test_registry.py checks that the two agree).
METHOD_NAMES = ("dp_ftrl", "dynamic", "langevin", "newton", "noisy_gd", "noisy_sgd",
                "output_perturbation",
                "rrpsgd", "ssp")
DEFAULT_METHOD = "noisy_gd"

MODELS = {
    "logistic": "DPLogisticRegression",
    "huber": "DPHuberRegressor",
    "linear": "DPLinearRegression",
}


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


#: Largest ``--n-samples`` of ``noisygd plan``: counts above 2**53 are not exact as floats.
MAX_N_SAMPLES = 2**53
#: Largest ``--features`` of ``noisygd plan``: a plan (like a fit) holds vectors of D floats;
#: 2**24 of them take 128 MiB each.
MAX_FEATURES = 2**24
#: Largest ``noisygd audit --runs`` and ``--steps`` (each run takes ``steps`` steps, twice).
MAX_AUDIT_RUNS = 10**6
MAX_AUDIT_STEPS = 10**6


def _check_arguments(args: argparse.Namespace) -> None:
    """Refuse, naming the option, a value no command could use (before any work is done)."""
    command = args.command
    seed = getattr(args, "seed", None)
    if command in ("fit", "audit") and seed is not None and seed < 0:
        raise CLIError(f"--seed must be an integer >= 0, got {seed}")
    epsilon = getattr(args, "epsilon", None)
    if command in ("fit", "plan", "demo", "audit") and epsilon is not None and not (
            math.isfinite(epsilon) and epsilon > 0):
        raise CLIError(f"--epsilon must be a positive finite number, got {epsilon:g}")
    delta = getattr(args, "delta", None)
    if command in ("fit", "plan", "demo", "audit", "account") and delta is not None and not (
            0.0 <= delta < 1.0):
        raise CLIError(f"--delta must be in [0, 1), got {delta:g}")
    limits = {"plan": (("n_samples", "--n-samples", MAX_N_SAMPLES),
                       ("features", "--features", MAX_FEATURES)),
              "audit": (("runs", "--runs", MAX_AUDIT_RUNS),
                        ("steps", "--steps", MAX_AUDIT_STEPS))}
    from noisygd._checks import MAX_SCALE

    for attr, flag in (("l2", "--l2"), ("radius", "--radius"),
                       ("row_norm_bound", "--row-norm-bound"), ("target_bound", "--target-bound")):
        value = getattr(args, attr, None) if command in ("fit", "plan") else None
        if value is not None and not (0.0 <= value <= MAX_SCALE):  # NaN fails both
            raise CLIError(f"{flag} must be a number in [0, {MAX_SCALE:g}], got {value:g}")
    for attr, flag, most in limits.get(command, ()):
        value = getattr(args, attr, None)
        if value is not None and not 1 <= value <= most:
            raise CLIError(f"{flag} must be an integer in [1, {most}], got {value}")


# --------------------------------------------------------------------------- progress


def progress_enabled(args: argparse.Namespace) -> bool:
    """Whether to draw progress bars: not ``--quiet``, and standard error is a terminal."""
    if getattr(args, "quiet", False):
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stream
        return False


def progress_bar(args: argparse.Namespace, **kwargs: Any) -> Any:
    """A tqdm bar on standard error, disabled by :func:`progress_enabled`.

    The bars count public units only (fits of the demo, stages of a fit), never rows: the
    number of rows of a private table is itself private.
    """
    from tqdm import tqdm

    return tqdm(file=sys.stderr, disable=not progress_enabled(args), leave=False,
                dynamic_ncols=True, **kwargs)


#: Stages of ``noisygd fit`` shown by its progress bar (the estimator has no per-step hook).
FIT_STAGES = ("read", "fit", "report", "write")


class _Stages:
    """A progress bar over named stages: ``next(name)`` closes the current one."""

    def __init__(self, args: argparse.Namespace, stages: Sequence[str], desc: str) -> None:
        self._bar = progress_bar(args, total=len(stages), desc=desc, unit="stage",
                                 bar_format="{desc}: {n_fmt}/{total_fmt} stages{postfix} "
                                 "[{elapsed}]")
        self._started = False

    def next(self, name: str) -> None:
        if self._started:
            self._bar.update(1)
        self._started = True
        self._bar.set_postfix_str(name)

    def close(self) -> None:
        if self._started:
            self._bar.update(1)
        self._bar.close()


# --------------------------------------------------------------------------- account


def build_account_event(args: argparse.Namespace):
    """The privacy event described by ``noisygd account``'s arguments."""
    from noisygd.accounting.events import (
        Gaussian,
        Neighbouring,
        PoissonSampled,
        SampledWithoutReplacement,
        SelfComposed,
    )

    if args.noise_multiplier is None or not (args.noise_multiplier > 0):
        raise CLIError("--noise-multiplier must be given and positive")
    if args.steps is None or args.steps < 1:
        raise CLIError("--steps must be a positive integer")
    sampled_wor = args.batch_size is not None or args.population is not None
    if sampled_wor and (args.batch_size is None or args.population is None):
        raise CLIError("--batch-size and --population go together")
    if sampled_wor and args.sampling_rate is not None:
        raise CLIError("choose one of --sampling-rate (Poisson) or --batch-size/--population")

    if args.relation is not None:
        relation = Neighbouring(args.relation)
    else:
        relation = Neighbouring.REPLACE_ONE if sampled_wor else Neighbouring.ADD_REMOVE
    sensitivity = args.sensitivity
    if sensitivity is None:
        sensitivity = relation.clipped_sum_sensitivity

    if args.mechanism == "tree":
        if args.sampling_rate is not None or sampled_wor:
            raise CLIError("the tree mechanism is not combined with sampling here")
        if args.sensitivity is not None:
            raise CLIError("the tree mechanism's sensitivity follows from --steps and --epochs")
        if args.epochs < 1:
            raise CLIError("--epochs must be a positive integer")
        from noisygd.accounting.tree import tree_event

        steps_per_epoch = -(-args.steps // args.epochs)
        if steps_per_epoch * args.epochs != args.steps:
            raise CLIError("--steps (total leaves) must be a multiple of --epochs")
        return tree_event(
            noise_multiplier=args.noise_multiplier,
            steps=steps_per_epoch,
            epochs=args.epochs,
            restart_every_epoch=args.restart_every_epoch,
            relation=((Neighbouring.ADD_REMOVE if args.leaves == "random"
                       else Neighbouring.REPLACE_ONE) if args.relation is None else relation),
            leaves=args.leaves,
        )
    if args.leaves != "position":
        raise CLIError("--leaves applies to --mechanism tree")
    if args.epochs != 1:
        raise CLIError("--epochs applies to --mechanism tree; for Gaussian steps give --steps")

    base = Gaussian(args.noise_multiplier, sensitivity=sensitivity, relation=relation)
    if args.sampling_rate is not None:
        if not 0 < args.sampling_rate <= 1:
            raise CLIError("--sampling-rate must be in (0, 1]")
        step = PoissonSampled(args.sampling_rate, base)
    elif sampled_wor:
        step = SampledWithoutReplacement(args.batch_size, args.population, base)
    else:
        step = base
    return step if args.steps == 1 else SelfComposed(step, args.steps)


def cmd_account(args: argparse.Namespace) -> dict[str, Any]:
    from noisygd.accounting import best, get_accountant

    event = build_account_event(args)
    accountants = None
    if args.accountant:
        accountants = [get_accountant(name) for name in args.accountant]
    t0 = time.perf_counter()
    result = best(event, args.delta, accountants)
    out = result.to_dict()
    out["seconds"] = time.perf_counter() - t0
    if not args.json:
        print(result)
        print(
            f"\nepsilon = {result.epsilon:.6g} at delta = {result.delta:g} "
            f"({result.accountant}: {result.theorems.get(result.accountant, '')})"
        )
    return out


# --------------------------------------------------------------------------- demo


def _breast_cancer_public_bounds(descr: str, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Min/max of each feature as printed in the dataset's documentation (DESCR).

    The ranges are published with the dataset; the demo declares them public.
    """
    rows = re.findall(r"^([A-Za-z ()]+?):\s+([-\d.]+)\s+([-\d.]+)\s*$", descr, flags=re.M)
    lows = np.array([float(lo) for _, lo, _ in rows])
    highs = np.array([float(hi) for _, _, hi in rows])
    if lows.size != n_features:
        raise RuntimeError(
            f"could not read {n_features} feature ranges from the dataset description "
            f"(found {lows.size})"
        )
    return lows, highs


def cmd_demo(args: argparse.Namespace) -> dict[str, Any]:
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    from noisygd.estimators import DPLogisticRegression

    if args.seeds < 1:
        raise CLIError("--seeds must be a positive integer")
    data = load_breast_cancer()
    X, y = data.data, data.target
    lows, highs = _breast_cancer_public_bounds(data.DESCR, X.shape[1])
    # Scale by the published ranges (declared public) into [-1, 1], then the
    # estimator scales rows to norm <= 1: no statistic of the data is used.
    Xs = 2.0 * (np.clip(X, lows, highs) - lows) / (highs - lows) - 1.0
    Xs /= math.sqrt(X.shape[1])
    X_tr, X_te, y_tr, y_te = train_test_split(Xs, y, test_size=0.3, random_state=0, stratify=y)

    baseline = LogisticRegression(max_iter=1000).fit(X_tr, y_tr)
    accs = []
    model = None
    for seed in progress_bar(args, iterable=range(args.seeds), desc="demo", unit="fit"):
        model = DPLogisticRegression(
            epsilon=args.epsilon,
            delta=args.delta,
            classes=[0, 1],
            random_state=seed,
        ).fit(X_tr, y_tr)
        accs.append(model.score(X_te, y_te))
    assert model is not None
    out = {
        "dataset": "scikit-learn breast cancer (569 rows, 30 features), 70/30 split",
        "preprocessing": "features scaled by the ranges published in the dataset description "
        "(declared public), rows scaled to norm <= 1",
        "epsilon_target": args.epsilon,
        "delta": args.delta,
        "seeds": args.seeds,
        "private_test_accuracy_mean": float(np.mean(accs)),
        "private_test_accuracy_std": float(np.std(accs)),
        "nonprivate_test_accuracy": float(baseline.score(X_te, y_te)),
        "privacy": model.privacy_report(),
        "plan": model.fit_info_.get("plans", [{}])[0].get("plan"),
    }
    if not args.json:
        print(f"noisygd demo: {out['dataset']}")
        print(f"  preprocessing: {out['preprocessing']}")
        print(
            f"  non-private LogisticRegression      test accuracy: "
            f"{out['nonprivate_test_accuracy']:.4f}"
        )
        print(
            f"  DPLogisticRegression (eps={args.epsilon:g}) test accuracy: "
            f"{out['private_test_accuracy_mean']:.4f} +- {out['private_test_accuracy_std']:.4f} "
            f"over {args.seeds} seeds"
        )
        print("\nthe last model:")
        print("\n".join(fit_summary_lines(model)))
        print(model.privacy_)
    return out


# --------------------------------------------------------------------------- fit


def _estimator_params(args: argparse.Namespace) -> dict[str, Any]:
    """Estimator parameters common to both ``fit`` paths (schema and numeric table)."""
    params: dict[str, Any] = {
        "epsilon": args.epsilon,
        "delta": args.delta,
        "method": args.method,
        "neighbouring": args.relation,
        "random_state": args.seed,
    }
    if getattr(args, "secure", False):
        if args.seed is not None:
            raise CLIError("--seed cannot seed --secure (its noise comes from OS entropy): "
                           "drop --seed")
        params["secure"] = True
    if args.l2 is not None:
        params["l2"] = args.l2
    if args.max_iter is not None:
        params["max_iter"] = args.max_iter
    if args.method_options:
        params["method_options"] = _parse_method_options(args.method_options)
    if args.n_samples_public is not None:
        params["n_samples_public"] = args.n_samples_public
    return params


def _write_json(path: Path, payload: dict[str, Any], what: str) -> None:
    from noisygd.data.output import atomic_write

    data = json.dumps(payload, indent=2, default=_json_default).encode("utf-8")
    atomic_write(path, data, what)


def _report_path(args: argparse.Namespace) -> Path | None:
    """``--report PATH`` checked before any data is read (and matplotlib present); with
    ``fit``, none of the report's files may be the model file (``--out``)."""
    if args.report is None:
        return None
    from noisygd.report import check_report_path
    from noisygd.report.html import PLOT_NAMES, png_paths

    try:
        page = check_report_path(args.report)
    except ImportError as exc:
        raise CLIError(str(exc)) from None
    out = getattr(args, "out", None)
    if args.command == "fit" and out is not None:
        targets = [page, *png_paths(page, tuple(PLOT_NAMES)).values()]
        if any(_same_path(out, t) for t in targets):
            raise CLIError(f"--report {args.report} would overwrite the model file --out "
                           f"{out}: give the report another name")
    return page


def _same_path(a: str | Path, b: str | Path) -> bool:
    """Whether two output paths name the same file (resolved; neither need exist)."""
    return os.path.realpath(a) == os.path.realpath(b)


def _fit_stages(report_path: Path | None) -> tuple[str, ...]:
    return FIT_STAGES if report_path is not None else tuple(
        st for st in FIT_STAGES if st != "report")


def _report_files(path: Path | None, est: Any, payload: dict[str, Any] | None,
                  stages: _Stages) -> dict[Path, bytes]:
    """The report's page and PNGs, rendered before any output file is written."""
    if path is None:
        return {}
    from noisygd.report import report_files

    stages.next("report")
    return report_files(est, path, payload=payload)


def _write_report(files: dict[Path, bytes]) -> list[str]:
    if not files:
        return []
    from noisygd.report import write_files

    return [str(p) for p in write_files(files)]


def _print_report(written: list[str]) -> None:
    if written:
        print(f"wrote the report {written[0]} (plots: {', '.join(written[1:])})")


def fit_summary_lines(est: Any) -> list[str]:
    """What ``noisygd fit`` prints about the fit before its privacy: the method that ran
    (with ``method="auto"``, the public rule's reason, ``fit_info_["method_choice"]``), the
    releases the fit made before its run, in order (``fit_info_["pre_releases"]``: a
    regressor's private target range, the private feature range, centre, per-feature scale, a
    regressor's residual scale; none with declared bounds), and where ``n`` came from
    (``fit_info_["n_samples_source"]``)."""
    info = getattr(est, "fit_info_", None) or {}
    lines = []
    method = info.get("method")
    if method is not None:
        choice = info.get("method_choice")
        why = f" (method='auto': {choice['rule']})" if choice else ""
        lines.append(f"method: {method}{why}")
    for release in info.get("pre_releases", ()):
        lines.append(f"released before the run: {release['name']}: {release['statistic']}; "
                     f"{release['event']}")
    if info.get("n_samples_source"):
        lines.append(f"number of rows: {info['n_samples_source']}")
    return lines


def cmd_fit_schema(args: argparse.Namespace, dask_session: Any = None) -> dict[str, Any]:
    """``noisygd fit DATA --schema FILE``: encode by the schema, fit, write the model file;
    with a Dask session (``--scheduler``/``--local-workers``), DATA is read and encoded
    partition-wise on the cluster (:mod:`noisygd.schema.partitionwise`)."""
    from noisygd.data.io import read_raw_table
    from noisygd.data.output import check_output_path
    from noisygd.schema import load_schema
    from noisygd.schema.fitting import fit_table, task_model

    for flag, value in (("--classes", args.classes), ("--row-norm-bound", args.row_norm_bound),
                        ("--target-bound", args.target_bound)):
        if value is not None:
            where = {"--classes": "[target] labels", "--row-norm-bound": "row_norm_bound",
                     "--target-bound": "[target] bounds"}[flag]
            raise CLIError(f"{flag} conflicts with --schema: the schema declares it "
                           f"({where}); edit the schema instead")
    schema = load_schema(args.schema)
    schema.check_final(f"schema {args.schema}")
    assert schema.target is not None
    if args.target is not None and args.target != schema.target.name:
        raise CLIError(f"--target {args.target!r} differs from the schema's [target] name "
                       f"{schema.target.name!r}: drop --target or fix the schema")
    model = task_model(schema, args.model)
    params = _estimator_params(args)
    if model == "linear" and args.radius is not None:
        params["radius"] = args.radius
    ledger = _fit_ledger(args)
    if ledger is not None:
        params["ledger"] = ledger
        params["dataset"] = args.dataset
    out_path = check_output_path(args.out, "--out")
    report_path = _report_path(args)
    stages = _Stages(args, _fit_stages(report_path), "fit")
    try:
        stages.next("read")
        if dask_session is None:
            frame = read_raw_table(args.data, **schema.file.model_dump())
            if frame.shape[0] == 0:
                raise CLIError(f"{args.data} has no data rows")
        else:  # nothing read on the client but the first file's header and types
            from noisygd.schema.partitionwise import read_raw_collection

            dask_session.open()
            frame = read_raw_collection(args.data, **schema.file.model_dump())
        stages.next("fit")
        try:
            est, payload = fit_table(schema, frame, model=model, params=params,
                                     source=str(args.data))
        except Exception as exc:
            if ledger is not None and _is_database_error(exc):
                detail = getattr(exc, "orig", None) or exc
                raise CLIError(f"ledger database error: {detail}") from exc
            if _is_dask_failure(exc):  # the cluster failed: one line, not a traceback
                raise CLIError(str(exc)) from None
            raise
        files = _report_files(report_path, est, payload, stages)
        stages.next("write")
        _write_json(out_path, payload, "model file")
        written = _write_report(files)
    finally:
        stages.close()
        if dask_session is not None:
            dask_session.close()
    if not args.json:
        print(f"wrote {out_path}")
        for line in (payload["report"].get("paid_for", []) if "paid" in payload else []):
            if not line.startswith("the number of rows"):
                print(line)
        print("\n".join(fit_summary_lines(est)))
        print(est.privacy_)
        _print_report(written)
    return {"out": str(out_path), **payload, **({"report_files": written} if written else {})}


def _dask_session(args: argparse.Namespace) -> Any:
    """The Dask session of ``--scheduler``/``--local-workers`` (not yet opened), or None."""
    if getattr(args, "scheduler", None) is None and getattr(args, "local_workers", None) is None:
        return None
    from noisygd.dask import DaskSession, print_progress

    try:
        return DaskSession(scheduler=args.scheduler, local_workers=args.local_workers,
                           progress=print_progress() if progress_enabled(args)
                           and not args.json else None)
    except ValueError as exc:
        raise CLIError(f"--scheduler/--local-workers: {exc}") from None


def cmd_fit(args: argparse.Namespace) -> dict[str, Any]:
    dask_session = _dask_session(args)
    if args.schema is not None:
        return cmd_fit_schema(args, dask_session)
    from noisygd import estimators
    from noisygd.data import read_table
    from noisygd.data.output import check_output_path

    model_name = args.model or "logistic"
    if args.target is None:
        raise CLIError("give --schema FILE (a schema of public bounds, see 'noisygd schema "
                       "draft'), or --target COLUMN for a table of numeric features")
    # the label set is declared public before any data is read: read from the rows, it
    # would be a data-dependent release the privacy report does not account for
    classes = _parse_classes(args.classes) if model_name == "logistic" else None
    check_output_path(args.out, "--out")
    report_path = _report_path(args)
    cls = getattr(estimators, MODELS[model_name])
    params = _estimator_params(args)
    params["row_norm_bound"] = 1.0 if args.row_norm_bound is None else args.row_norm_bound
    if classes is not None:
        params["classes"] = classes
    if model_name != "logistic":
        params["target_bound"] = args.target_bound
    if model_name == "linear" and args.radius is not None:
        params["radius"] = args.radius
    ledger = _fit_ledger(args)
    if ledger is not None:
        params["ledger"] = ledger
        params["dataset"] = args.dataset
    stages = _Stages(args, _fit_stages(report_path), "fit")
    try:
        stages.next("read")
        if dask_session is None:  # declared labels are read verbatim ("NA" is a label)
            X, y, names = read_table(args.data, target=args.target,
                                     labels=[str(c) for c in classes or ()])
        else:
            X, y, names = dask_session.open().read(args.data, args.target,
                                                   labels=[str(c) for c in classes or ()])
        if y is None:
            raise CLIError(f"--target {args.target!r} gave no labels")
        if classes is not None and isinstance(y, np.ndarray):
            _check_labels(y, classes, args.target, args.data)
        stages.next("fit")
        try:
            model = (cls(**params).fit(X, y) if dask_session is None
                     else dask_session.fit(cls(**params), X, y))
        except Exception as exc:
            if ledger is not None and _is_database_error(exc):
                detail = getattr(exc, "orig", None) or exc
                raise CLIError(f"ledger database error: {detail}") from exc
            if _is_dask_failure(exc):  # the cluster failed: one line, not a traceback
                raise CLIError(str(exc)) from None
            raise
        payload = {
            "model": MODELS[model_name],
            # the ledger's location is left out (an URL may hold a password)
            "params": {k: v for k, v in model.get_params().items()
                       if k != "ledger" and _jsonable(v)},
            "feature_names": list(names),
            "coef": np.asarray(model.coef_).tolist(),
            "intercept": np.asarray(model.intercept_).tolist(),
            "classes": np.asarray(getattr(model, "classes_", [])).tolist(),
            "privacy": model.privacy_report(),
        }
        if model_name != "logistic":  # declared, or released (the private target range)
            payload["target_range_used"] = [float(v) for v in model.target_range_]
        if model.ledger_release_ is not None:
            payload["ledger_release"] = {"dataset": model.ledger_release_.dataset,
                                         **model.ledger_release_.to_dict(full=False)}
        files = _report_files(report_path, model, None, stages)
        stages.next("write")
        out_path = Path(args.out)
        _write_json(out_path, payload, "model file")  # atomic: no half-written model
        written = _write_report(files)
    finally:
        stages.close()
        if dask_session is not None:
            dask_session.close()
    result = {"out": str(out_path), **payload}
    if not args.json:
        print(f"wrote {out_path}")
        print("\n".join(fit_summary_lines(model)))
        print(model.privacy_)
        _print_report(written)
    if written:
        result["report_files"] = written
    return result


def _fit_ledger(args: argparse.Namespace) -> str | None:
    """``--ledger`` (default ``$NOISYGD_LEDGER`` when ``--dataset`` is given), checked."""
    ledger = args.ledger
    if ledger is None and args.dataset is not None:
        ledger = os.environ.get("NOISYGD_LEDGER") or None
    if ledger is None and args.dataset is not None:
        raise CLIError("--dataset needs --ledger (a file path or an SQLAlchemy URL; or set "
                       "NOISYGD_LEDGER)")
    if ledger is not None and args.dataset is None:
        raise CLIError("--ledger needs --dataset (the name the budget was set for with "
                       "'noisygd ledger set-budget')")
    return ledger


def _is_database_error(exc: BaseException) -> bool:
    try:
        import sqlalchemy as sa
    except ImportError:  # pragma: no cover - the ledger needs SQLAlchemy
        return False
    return isinstance(exc, sa.exc.SQLAlchemyError)


def _is_dask_failure(exc: BaseException) -> bool:
    """A :class:`~noisygd.oracles.dask.DaskFitError` (without importing Dask when unused)."""
    dask_oracle = sys.modules.get("noisygd.oracles.dask")
    return dask_oracle is not None and isinstance(exc, dask_oracle.DaskFitError)


def _parse_classes(text: str | None) -> list[Any]:
    """``--classes``: the public label set, comma-separated (spaces around a label dropped).

    Raises :class:`CLIError` when it is absent (a logistic model without a schema would read
    its label set from the data), has an empty label, or fewer than two distinct labels.
    """
    if text is None or not text.strip():
        raise CLIError("--model logistic (the default) needs --classes, the public label set, "
                       "e.g. --classes 0,1 or --classes no,yes (read from the data, it would "
                       "leak which labels occur); for a numeric target use --model linear "
                       "(or huber)")
    labels = [item.strip() for item in text.split(",")]
    if any(not label for label in labels):
        raise CLIError("--classes has an empty label: list the labels separated by commas, "
                       "e.g. --classes no,yes")
    classes = [_parse_label(label) for label in labels]
    if len(set(classes)) < 2:
        raise CLIError("--classes must list at least two distinct labels (the public label "
                       "set, e.g. --classes 0,1); for a numeric target use --model linear")
    return classes


def _check_labels(y: np.ndarray, classes: list[Any], target: str, data: str) -> None:
    """Refuse a target column holding a value outside ``--classes``, naming the column and the
    declared labels (public), never a value read from the data."""
    if np.all(np.isin(y, np.unique(np.asarray(classes)))):  # the estimator's own test
        return
    declared = ",".join(str(c) for c in classes)
    if y.dtype.kind == "f" and not np.all(y == np.floor(y)):
        raise CLIError(f"target column {target!r} of {data} holds numbers that are not labels "
                       "(a continuous target?): use --model linear (or huber) for a numeric "
                       f"target; --model logistic needs every value to be one of --classes "
                       f"{declared}")
    raise CLIError(f"target column {target!r} of {data} holds labels that are not in --classes "
                   f"{declared}: list every label (the public label set) in --classes, or use "
                   "--model linear for a numeric target")


def _parse_label(text: str) -> Any:
    """A ``--classes`` label: an integer, a number, a boolean (``true``/``false``, any case,
    as the table reader reads such a column), or text."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except TypeError:
        return False
    return True


# --------------------------------------------------------------------------- predict


def _load_model_file(path: str) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise CLIError(f"model file not found: {p} (write one with 'noisygd fit ... --out')")
    try:
        payload = json.loads(p.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CLIError(f"{p} is not a model file written by 'noisygd fit' (not JSON: "
                       f"{exc})") from None
    except (ValueError, RecursionError) as exc:  # NaN, an over-long integer, deep nesting
        why = ("nests arrays or objects too deeply" if isinstance(exc, RecursionError)
               else str(exc) if isinstance(exc, _NonFiniteInModel)
               else "holds an integer of thousands of digits")
        raise CLIError(f"{p} is not a model file written by 'noisygd fit' (it {why})"
                       ) from None
    if not isinstance(payload, dict):
        raise CLIError(f"{p} is not a model file written by 'noisygd fit'")
    return payload


class _NonFiniteInModel(ValueError):
    """A ``NaN`` or ``Infinity`` in a model file (noisygd never writes one)."""


def _no_constant(name: str) -> None:
    """``json.loads``' ``parse_constant``: a model file holds no ``NaN`` or ``Infinity``."""
    raise _NonFiniteInModel(f"holds {name}, a non-finite number")


def cmd_predict(args: argparse.Namespace) -> dict[str, Any]:
    """``noisygd predict MODEL DATA [--out PATH]``: predictions (and probabilities)."""
    from noisygd.data.io import read_raw_table
    from noisygd.data.output import (
        atomic_write,
        check_output_path,
        check_table_suffix,
        table_bytes,
    )
    from noisygd.schema import parse_schema
    from noisygd.schema.fitting import predict_table

    payload = _load_model_file(args.model)
    if "schema" not in payload:
        raise CLIError(f"model file {args.model} has no schema (it was fitted without "
                       "--schema): refit with 'noisygd fit DATA --schema FILE'")
    schema = parse_schema(payload["schema"], f"the schema in model file {args.model}")
    if args.out is None and args.json:
        raise CLIError("--json needs --out (the predictions would be mixed with the JSON)")
    out = None if args.out is None else check_output_path(args.out, "--out")
    if out is not None:
        check_table_suffix(out, "--out")
    frame = read_raw_table(args.data, **schema.file.model_dump())
    preds = predict_table(payload, frame, str(args.data))
    if out is None:
        sys.stdout.write(preds.to_csv(index=False))
        return {"columns": list(preds.columns)}
    atomic_write(out, table_bytes(preds, out), "--out")
    if not args.json:
        print(f"wrote {out}")
    return {"out": str(out), "columns": list(preds.columns)}


# --------------------------------------------------------------------------- report


def cmd_report(args: argparse.Namespace) -> dict[str, Any]:
    """``noisygd report MODEL --out HTML``: the report of a model file, without refitting."""
    from noisygd.report import report_files, write_files

    payload = _load_model_file(args.model)
    if "event" not in payload or "privacy" not in payload:
        raise CLIError(f"model file {args.model} records no privacy event (it was written by "
                       "an older noisygd, or without --schema): refit with 'noisygd fit DATA "
                       "--schema FILE --report HTML'")
    out = _report_path(args)
    assert out is not None
    written = [str(p) for p in write_files(report_files(payload, out))]
    if not args.json:
        _print_report(written)
    return {"report_files": written}


# --------------------------------------------------------------------------- schema


def cmd_schema(args: argparse.Namespace) -> dict[str, Any]:
    """``noisygd schema draft DATA``: a draft schema, every data-derived value marked."""
    from noisygd.data.io import read_raw_table
    from noisygd.data.output import atomic_write, check_output_path
    from noisygd.schema import draft_toml

    names = [n.strip() for n in args.names.split(",")] if args.names else None
    options: dict[str, Any] = {}
    if names:
        options.update(header=False, names=names)
    if args.delimiter:
        options["delimiter"] = args.delimiter
    if args.na_values:
        options["na_values"] = list(args.na_values)
    if args.comment:
        options["comment"] = args.comment
    if args.encoding:
        options["encoding"] = args.encoding
    out = None if args.out is None else check_output_path(args.out, "--out",
                                                          overwrite=args.force)
    frame = read_raw_table(args.data, **options)
    text = draft_toml(frame, target=args.target, file_options=options or None,
                      source=Path(args.data).name)
    if out is None:
        sys.stdout.write(text)
        return {}
    atomic_write(out, text.encode("utf-8"), "--out")
    if not args.json:
        print(f"wrote the draft schema {out}: replace or confirm every DATA-DERIVED value, "
              "then delete the draft = true lines")
    return {"out": str(out), "draft": True}


# --------------------------------------------------------------------------- plan


def _parse_method_options(text: str) -> dict[str, Any]:
    """``--method-options``: a JSON object (:class:`CLIError` otherwise)."""
    try:
        options = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CLIError(f"--method-options is not valid JSON: {exc}") from exc
    if not isinstance(options, dict):
        raise CLIError("--method-options must be a JSON object")
    return options


def _parse_range(text: str) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        raise CLIError(f"--target-range must be LOW,HIGH (two numbers), got {text!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise CLIError("--target-range must be finite with LOW < HIGH")
    return lo, hi


def _plan_problem(args: argparse.Namespace) -> tuple[str, int, float, Any,
                                                    tuple[float, float] | None, float | None]:
    """``(model, n_features, row_norm_bound, centring, target_range, paid_share)`` of
    ``noisygd plan``: from ``--schema`` (its encoded width, bounds and paid share), else from
    ``--features`` and ``--row-norm-bound``."""
    if args.schema is None:
        if args.features is None or args.features < 1:
            raise CLIError("give --schema FILE, or --features D (the number of encoded columns)")
        bound = 1.0 if args.row_norm_bound is None else args.row_norm_bound
        return args.model or "logistic", args.features, bound, None, None, None
    from noisygd.schema import feature_names, load_schema, public_centring
    from noisygd.schema.fitting import task_model

    if args.features is not None or args.row_norm_bound is not None:
        raise CLIError("--features and --row-norm-bound conflict with --schema (the "
                       "schema declares them)")
    schema = load_schema(args.schema)
    if schema.draft_tables():
        print(f"noisygd plan: note: schema {args.schema} still holds draft "
              "(data-derived) values; 'noisygd fit' will refuse it", file=sys.stderr)
    if schema.target is None:
        raise CLIError(f"schema {args.schema} has no [target] table")
    model = task_model(schema, args.model)
    labels = schema.target.labels
    if model == "logistic" and labels is not None and len(labels) > 2:
        # the planner's logistic loss is one binary problem; 'noisygd fit' trains these labels
        # as one multinomial problem (another loss, clip and noise): its plan is not this one
        raise CLIError(
            f"schema {args.schema} has {len(labels)} labels, which 'noisygd fit' trains as one "
            "multinomial problem; 'noisygd plan' plans binary logistic fits only, and a "
            "binary plan would not be the fit's. Fit it and read the plan the fit ran in "
            "'noisygd report' (fit_info: method, steps, noise)")
    paid_share = None
    if schema.pays:
        from noisygd.schema.paid import planning_schema

        paid_share = schema.preprocessing_share
        schema = planning_schema(schema)
    return (model, len(feature_names(schema)), schema.row_norm_bound, public_centring(schema),
            schema.target.bounds, paid_share)


def cmd_plan(args: argparse.Namespace) -> dict[str, Any]:
    """``noisygd plan``: every applicable method's plan from public facts, ranked by bound among
    comparable bounds only (:func:`noisygd.schema.plans.plan_table`)."""
    from noisygd.schema.plans import plan_table

    if args.n_samples is None or args.n_samples < 1:
        raise CLIError("--n-samples N (a public number of rows) is required and must be >= 1")
    model, n_features, row_norm_bound, centring, target_range, paid_share = _plan_problem(args)
    if args.target_range is not None:
        if target_range is not None:
            raise CLIError("--target-range conflicts with the schema's [target] bounds")
        target_range = _parse_range(args.target_range)
    if model != "logistic" and target_range is None:
        raise CLIError(f"--model {model} needs the targets' public range: --target-range "
                       "LOW,HIGH (or a schema with [target] bounds)")
    options = _parse_method_options(args.method_options) if args.method_options else None
    relations = ("add_remove", "replace_one") if args.relation is None else (args.relation,)
    epsilon_fit = args.epsilon
    if paid_share is not None:
        # the training's part: (1 - s) mu^2 of the Gaussian-DP budget (docs/schema.md)
        from noisygd.accounting.gdp import gdp_epsilon
        from noisygd.schema.paid import preprocessing_mu

        mu_total, mu_paid = preprocessing_mu(args.epsilon, args.delta, paid_share)
        epsilon_fit = gdp_epsilon(float(np.sqrt(mu_total**2 - mu_paid**2)), args.delta)
    rows = plan_table(model=model, n_samples=args.n_samples, n_features=n_features,
                      epsilon=epsilon_fit, delta=args.delta, relations=relations,
                      row_norm_bound=row_norm_bound, centring=centring,
                      target_range=target_range, l2=args.l2, max_iter=args.max_iter,
                      radius=args.radius, method_options=options)
    if all(r.refused is not None for r in rows):
        reasons = sorted({f"{r.method} ({r.relation}): {r.refused}" for r in rows})
        raise CLIError("no method applies to these arguments: " + "; ".join(reasons))
    out = {"model": model, "n_samples": args.n_samples, "n_features": n_features,
           "epsilon": args.epsilon, "delta": args.delta,
           "plans": [r.to_dict() for r in rows]}
    if centring is None:
        out["note"] = PLAN_WITHOUT_BOUNDS_NOTE
    if paid_share is not None:
        out["paid"] = {"preprocessing_share": paid_share, "epsilon_training": epsilon_fit,
                       "note": ("paid statistics (bounds, levels, clipped-value counts) take "
                                "this share of the Gaussian-DP budget mu^2; the plans are for "
                                "the rest (epsilon_training at delta), with every vocabulary level "
                                "and the whole search range assumed")}
    if not args.json:
        print(f"plans for {MODELS[model]}: n = {args.n_samples} (declared public), "
              f"{n_features} features, epsilon = {args.epsilon:g}, delta = {args.delta:g}; "
              "ranked by predicted bound within groups of comparable bounds")
        if paid_share is not None:
            print(f"bounds/levels paid for privately: share {paid_share:g} of the budget "
                  f"(mu^2); the plans below are for the rest, epsilon = {epsilon_fit:.4g} at "
                  f"delta = {args.delta:g} (at most {n_features} features: every vocabulary "
                  "level kept)")
        if centring is None:
            print(f"note: {PLAN_WITHOUT_BOUNDS_NOTE}")
        from noisygd.schema.plans import format_plan_rows

        print("\n".join(format_plan_rows(rows)))
    return out


#: What ``noisygd plan --features`` (no schema, no declared bounds) does not plan: the
#: estimators' paid conditioning before the run (docs/estimators.md).
PLAN_WITHOUT_BOUNDS_NOTE = (
    "no bounds declared (--features): these plans give the run the whole budget, rows within "
    "--row-norm-bound around 0; an estimator fitted without feature_bounds first pays for its "
    "private conditioning (feature range, centre, per-feature scale: conditioning_share, "
    "feature_scale_share, feature_range_share, docs/estimators.md) from the same budget, so its "
    "run gets less of it and works in the released coordinates; declare the bounds (--schema) "
    "to plan the fit exactly")


# --------------------------------------------------------------------------- reproduce


#: The flag that turns a reproduction's own progress bar off, for those that draw one.
REPRODUCTION_QUIET_FLAGS = {"zhang2017-table3": "--no-progress"}


def cmd_reproduce(args: argparse.Namespace, rest: list[str]) -> dict[str, Any]:
    module_name, _ = REPRODUCTIONS[args.name]
    if "--quiet" in rest:  # given after the name: ours, not the reproduction's
        rest = [a for a in rest if a != "--quiet"]
        args.quiet = True
    flag = REPRODUCTION_QUIET_FLAGS.get(args.name)
    if flag is not None and not progress_enabled(args) and flag not in rest:
        rest = [*rest, flag]
    module = importlib.import_module(module_name)
    status = module.main(rest)
    return {"reproduction": args.name, "status": int(status or 0)}


# --------------------------------------------------------------------------- parser


EXAMPLES = {
    "demo": "examples:\n  noisygd demo\n  noisygd demo --epsilon 0.5 --json",
    "fit": (
        "examples:\n"
        "  noisygd fit bank.csv --schema bank.toml --epsilon 1 --delta 1e-6 --seed 0 "
        "--out model.json\n"
        "  noisygd fit bank.csv --schema bank.toml --out model.json --report report.html\n"
        "  noisygd fit train.csv --target label --classes 0,1 --model logistic --epsilon 1 "
        "--out model.json\n"
        "  noisygd fit data.parquet --target y --model huber --target-bound 10 --json\n"
        "  noisygd fit train.csv --target label --classes no,yes --method dp_ftrl "
        "--relation replace_one\n"
        "  noisygd fit train.csv --target label --classes 0,1 --ledger ledger.db "
        "--dataset train\n"
        "With --schema (docs/schema.md) the raw table is encoded by the schema's public\n"
        "bounds and levels (categorical columns, missing values and string labels allowed);\n"
        "the target's labels select logistic regression, its bounds linear regression.\n"
        "Without --schema, features must be numeric and have no declared bounds, and a\n"
        "classifier needs --classes (the public label set; it is never read from the data).\n"
        "The fit first pays, from its budget, for a private feature range, centre and\n"
        "per-feature scale (docs/estimators.md), and rows are scaled to norm <=\n"
        "--row-norm-bound (a per-row step that costs no privacy). Regression without\n"
        "--target-bound pays for a private target range too (8% of the budget). The output\n"
        "names the method that ran and every release made before the run.\n"
        "Exit status 2 on bad input (message names the column or option and the fix); the\n"
        "model file is written atomically, never partially.\n"
        "With --ledger/--dataset the fit's run is recorded as one release of the dataset in\n"
        "the privacy ledger, and each release made before the run as one more\n"
        "(docs/ledger.md); the fit is refused (exit 2) before the data is read if the\n"
        "budget set with 'noisygd ledger set-budget' cannot admit it."
    ),
    "account": (
        "examples:\n"
        "  noisygd account --noise-multiplier 4 --steps 500 --delta 1e-5\n"
        "  noisygd account --noise-multiplier 1.1 --steps 14063 --sampling-rate 0.004267 "
        "--delta 1e-5 --json\n"
        "  noisygd account --noise-multiplier 1.0 --steps 1000 --batch-size 100 "
        "--population 60000 --delta 1e-5\n"
        "  noisygd account --mechanism tree --noise-multiplier 5 --steps 1024 --epochs 2 "
        "--delta 1e-5\n"
        "  noisygd account --mechanism tree --leaves random --noise-multiplier 5 --steps 64 "
        "--delta 1e-5\n"
        "the tree mechanism (DP-FTRL) with rows in stream order (--leaves position) is\n"
        "accounted under replace-one neighbours only; with rows assigned to leaves at random\n"
        "in each epoch (--leaves random: one epoch or --restart-every-epoch) under add/remove,\n"
        "where mu only bounds it; --steps is the total number of leaves over all epochs.\n"
        "--sensitivity is the L2 sensitivity in units of the clipping norm: default 1 under\n"
        "add/remove, 2 under replace-one (the noise std is noise-multiplier x clipping norm)."
    ),
    "predict": (
        "examples:\n"
        "  noisygd predict model.json test.csv --out predictions.csv\n"
        "  noisygd predict model.json test.parquet --out predictions.parquet\n"
        "  noisygd predict model.json test.csv > predictions.csv\n"
        "one row per input row: 'prediction' (a label of the schema, or a number) and, for a\n"
        "classifier, 'proba_<label>' per label. The target column may be present (not read)."
    ),
    "report": (
        "examples:\n"
        "  noisygd report bank.json --out bank.html\n"
        "the report of a fit (privacy curves under every accountant, parameters, assumptions,\n"
        "data handling; docs/report.md) from its model file, without the data. The planner's\n"
        "choices are not in a model file: 'noisygd fit --report' shows them too."
    ),
    "schema": (
        "examples:\n"
        "  noisygd schema draft bank.csv --target y --out bank.toml\n"
        "  noisygd schema draft adult.data --names age,workclass,...,income --na-values '?' "
        "--target income\n"
        "A draft reads the data: every value it derives (bounds, levels, missing rules) is\n"
        "marked '# DATA-DERIVED: confirm or replace' in a table with 'draft = true', and a\n"
        "PrivacyLeakWarning is shown. 'noisygd fit' refuses the file until every mark is\n"
        "resolved (replace each value by a public one, then delete the draft lines)."
    ),
    "plan": (
        "examples:\n"
        "  noisygd plan --schema examples/schemas/adult.toml --n-samples 32561 --epsilon 1\n"
        "  noisygd plan --features 20 --n-samples 10000 --relation replace_one --json\n"
        "  noisygd plan --features 5 --model linear --target-range 0,350 --n-samples 5000\n"
        "For each method and neighbouring relation it is accounted under: the noise, steps\n"
        "and step size the planner picks, the accountant certifying the planned event and\n"
        "the predicted utility bound (its kind named), ranked by that bound among comparable\n"
        "bounds only (same quantity, comparator, guarantee and premises). Reads no data;\n"
        "n is taken as public (a fit without --n-samples-public pays for a noisy count)."
    ),
    "reproduce": "examples:\n"
    + "\n".join(f"  noisygd reproduce {k}    # {v[1]}" for k, v in REPRODUCTIONS.items())
    + "\nArguments after the name go to the reproduction (try: noisygd reproduce NAME --help).",
}


#: Help of ``--quiet``.
QUIET_HELP = "no progress bar (there is none either when standard error is not a terminal)"

#: Help line of ``noisygd ledger`` (as :mod:`noisygd.ledger.cli` words it).
LEDGER_HELP = "the privacy ledger: budgets and recorded releases per dataset"


def build_parser(*, with_ledger: bool = True) -> argparse.ArgumentParser:
    """The argument parser of ``noisygd``.

    ``with_ledger=False`` lists ``ledger`` without building its subcommands, so that the
    other commands do not import the ledger (and SQLAlchemy); :func:`main` builds them
    when the command is ``ledger``.
    """
    from noisygd import __version__

    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="noisygd",
        description="Differentially private ERM by noisy gradient methods, with exact accounting.",
        epilog="Run 'noisygd COMMAND --help' for a command's options and examples.",
        formatter_class=fmt,
    )
    parser.add_argument("--version", action="version", version=f"noisygd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_, epilog=EXAMPLES[name],
                           formatter_class=fmt)
        p.add_argument("--json", action="store_true", help="print one JSON object")
        return p

    p = add("demo", "private logistic regression on scikit-learn's breast-cancer data")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--seeds", type=int, default=10, help="private fits to average (default 10)")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)

    p = add("fit", "fit a private linear model to a CSV or Parquet file; write model JSON")
    p.add_argument("data", help="CSV (',' or ';'), CSV.gz or Parquet file")
    p.add_argument("--schema", default=None,
                   help="TOML schema of public bounds and levels (docs/schema.md); the target "
                   "and the model type come from it")
    p.add_argument("--target", default=None,
                   help="name of the label column (without --schema)")
    p.add_argument("--model", choices=sorted(MODELS), default=None,
                   help="default: logistic (with --schema: from the target, labels -> "
                   "logistic, bounds -> linear)")
    p.add_argument("--method", default="auto",
                   help=f"auto ({DEFAULT_METHOD}; a binary or one-vs-rest classifier: "
                   "NoisyGD or private Newton by a public rule, docs/estimators.md), or one of "
                   f"{', '.join(METHOD_NAMES)} "
                   "(some need --relation replace_one); the names of noisygd.solvers.SOLVERS")
    p.add_argument("--max-iter", type=int, default=None,
                   help="number of steps: NoisyGD runs exactly this many (at most 10**7); "
                   "the other methods take it as a cap")
    p.add_argument("--method-options", default=None,
                   help='JSON object of extra method arguments, e.g. \'{"epochs": 5}\'')
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--l2", type=float, default=None, help="L2 regularisation")
    p.add_argument("--row-norm-bound", type=float, default=None,
                   help="without --schema: rows scaled to norm <= this (default 1)")
    p.add_argument("--target-bound", type=float, default=None,
                   help="regression without --schema: targets clipped to [-b, b] "
                   "(without it: a private target range, paid for from the budget)")
    p.add_argument("--classes", default=None,
                   help="logistic without --schema (required): the comma-separated label "
                   "set, declared public, e.g. 0,1 or no,yes")
    p.add_argument("--relation", choices=["add_remove", "replace_one"], default="add_remove")
    p.add_argument("--n-samples-public", type=int, default=None,
                   help="declare the number of rows public (else a noisy count is paid for)")
    p.add_argument("--radius", type=float, default=None,
                   help="linear: public radius of the parameters (needed by the methods "
                   "that do not clip: output_perturbation, rrpsgd, langevin)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--secure", action="store_true",
                   help="draw all noise from OS entropy through OpenDP's discrete Gaussian "
                   "(needs pip install noisygd[secure]; not seedable; accounted by zCDP/RDP, "
                   "docs/secure_noise.md)")
    p.add_argument("--out", default="model.json", help="output path (default model.json)")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    p.add_argument("--report", default=None, metavar="HTML",
                   help="also write a self-contained HTML report (privacy curves, parameters, "
                   "assumptions, data handling) and its plots as HTML-stem.PLOT.png "
                   "(needs matplotlib: pip install noisygd[plot])")
    p.add_argument("--ledger", default=None,
                   help="privacy ledger: SQLite file or SQLAlchemy URL (default "
                   "$NOISYGD_LEDGER when --dataset is given); the fit is recorded there")
    p.add_argument("--dataset", default=None,
                   help="the dataset's name in the ledger (its budget: noisygd ledger "
                   "set-budget)")
    # Dask (issue 22, docs/dask.md): DATA is then a Parquet directory or a CSV glob
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="fit on the Dask cluster at ADDRESS; DATA may be a Parquet directory "
                   "or a CSV glob (needs pip install noisygd[dask])")
    p.add_argument("--local-workers", type=int, default=None, metavar="N",
                   help="fit on a local Dask cluster of N worker processes (as --scheduler)")

    p = add("predict", "predict with a model file from 'noisygd fit --schema'")
    p.add_argument("model", help="model file (JSON) written by 'noisygd fit --schema'")
    p.add_argument("data", help="CSV, CSV.gz or Parquet file with the schema's columns")
    p.add_argument("--out", default=None,
                   help="CSV (.csv), gzipped CSV (.gz) or Parquet (.parquet); default: CSV "
                   "on standard output")

    p = add("report", "write the HTML report of a model file from 'noisygd fit --schema'")
    p.add_argument("model", help="model file (JSON) written by 'noisygd fit --schema'")
    p.add_argument("--out", dest="report", default="report.html", metavar="HTML",
                   help="the page (default report.html); its plots go beside it as "
                   "HTML-stem.PLOT.png")

    p = add("schema", "write a draft schema from a data file (every derived value marked)")
    schema_sub = p.add_subparsers(dest="schema_command", required=True, metavar="SUBCOMMAND")
    d = schema_sub.add_parser("draft", help="draft a schema from DATA's header and values",
                              description="draft a schema from DATA's header and values",
                              epilog=EXAMPLES["schema"], formatter_class=fmt)
    d.add_argument("--json", action="store_true", help="print one JSON object")
    d.add_argument("data", help="CSV, CSV.gz or Parquet file")
    d.add_argument("--target", default=None, help="the target column (else no [target])")
    d.add_argument("--out", default=None, help="schema file to write (default: stdout)")
    d.add_argument("--force", action="store_true", help="replace an existing --out file")
    d.add_argument("--names", default=None,
                   help="comma-separated column names, for a file without a header line")
    d.add_argument("--delimiter", default=None, help="field separator (default: sniffed)")
    d.add_argument("--na-values", action="append", default=None,
                   help="a cell text meaning missing, e.g. '?' (repeatable)")
    d.add_argument("--comment", default=None, help="comment character, e.g. '|'")
    d.add_argument("--encoding", default=None, help="text encoding (default utf-8)")

    p = add("plan", "what each method would do on a problem, from public facts (no data)")
    p.add_argument("--schema", default=None, help="TOML schema (features, bounds, target)")
    p.add_argument("--features", type=int, default=None,
                   help="without --schema: the number of encoded columns")
    p.add_argument("--n-samples", type=int, default=None, help="public number of rows")
    p.add_argument("--model", choices=sorted(MODELS), default=None)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--relation", choices=["add_remove", "replace_one"], default=None,
                   help="default: both")
    p.add_argument("--row-norm-bound", type=float, default=None,
                   help="without --schema (default 1)")
    p.add_argument("--target-range", default=None,
                   help="regression without a schema: LOW,HIGH of the targets")
    p.add_argument("--l2", type=float, default=None)
    p.add_argument("--max-iter", type=int, default=None)
    p.add_argument("--radius", type=float, default=None)
    p.add_argument("--method-options", default=None, help="JSON object of method options")

    p = add("account", "epsilon of a described mechanism under each accountant")
    p.add_argument("--noise-multiplier", type=float, required=True,
                   help="noise std in units of the clipping norm")
    p.add_argument("--steps", type=int, required=True, help="number of compositions")
    p.add_argument("--delta", type=float, required=True)
    p.add_argument("--sensitivity", type=float, default=None)
    p.add_argument("--relation", choices=["add_remove", "replace_one"], default=None)
    p.add_argument("--sampling-rate", type=float, default=None, help="Poisson sampling rate")
    p.add_argument("--batch-size", type=int, default=None, help="sampling without replacement")
    p.add_argument("--population", type=int, default=None, help="sampling without replacement")
    p.add_argument("--mechanism", choices=["gaussian", "tree"], default="gaussian")
    p.add_argument("--epochs", type=int, default=1,
                   help="tree: passes over the data (--steps counts all leaves)")
    p.add_argument("--restart-every-epoch", action="store_true",
                   help="tree: a fresh tree for each epoch")
    p.add_argument("--leaves", choices=["position", "random"], default="position",
                   help="tree: rows assigned to leaves by their position in the stream "
                   "(replace-one, the default) or at random in each epoch (add/remove, the "
                   "default relation then; one epoch or --restart-every-epoch)")
    p.add_argument("--accountant", action="append",
                   help="restrict to this accountant (repeatable)")

    p = add("reproduce", "reproduce a table or figure of the source documents")
    p.add_argument("name", choices=sorted(REPRODUCTIONS))
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP + " (passed on to the "
                   "reproductions that draw one)")
    p.add_argument("args", nargs=argparse.REMAINDER,
                   help="passed to the reproduction (see: noisygd reproduce NAME --help)")

    from noisygd.audit.cli import add_audit_parser  # light: argparse only (package is lazy)

    add_audit_parser(sub)

    if with_ledger:
        from noisygd.ledger.cli import add_ledger_commands

        add_ledger_commands(sub)
    else:  # the same entry in the command list, without importing the ledger (SQLAlchemy)
        sub.add_parser("ledger", help=LEDGER_HELP, add_help=False).add_argument(
            "rest", nargs=argparse.REMAINDER)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``noisygd`` command."""
    try:
        return _main(argv)
    except BrokenPipeError:  # output piped into a command that stopped reading
        sys.stdout = open(os.devnull, "w")
        return 0


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(with_ledger=bool(argv) and argv[0] == "ledger")
    args = parser.parse_args(argv)
    original = warnings.formatwarning
    warnings.formatwarning = _warning_format(_command_name(args))  # one line, no source line
    try:
        return _dispatch(args)
    finally:
        warnings.formatwarning = original


def _warning_format(command: str) -> Any:
    """A :func:`warnings.formatwarning` that writes ``noisygd CMD: warning: Category: text``
    (no file name, no source line: the user runs a command, not our code)."""

    def format_warning(message: Warning | str, category: type[Warning], filename: str,
                       lineno: int, line: str | None = None) -> str:
        return f"noisygd {command}: warning: {category.__name__}: {message}\n"

    return format_warning


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command of ``args``; a user error is one line on stderr and status 2."""
    try:
        _check_arguments(args)
        if args.command == "ledger":
            from noisygd.ledger.cli import cmd_ledger

            out = cmd_ledger(args)
        elif args.command == "account":
            out = cmd_account(args)
        elif args.command == "demo":
            out = cmd_demo(args)
        elif args.command in ("fit", "predict", "schema", "plan", "report"):
            handler = {"fit": cmd_fit, "predict": cmd_predict, "schema": cmd_schema,
                       "plan": cmd_plan, "report": cmd_report}
            with warnings.catch_warnings():
                warnings.simplefilter("default")
                out = handler[args.command](args)
        elif args.command == "audit":
            from noisygd.audit.cli import cmd_audit

            out = cmd_audit(args)
        else:
            out = cmd_reproduce(args, list(args.args))
    except CLIError as exc:
        print(f"noisygd {_command_name(args)}: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, KeyError, OSError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"noisygd {_command_name(args)}: error: {msg}", file=sys.stderr)
        return 2
    if getattr(args, "json", False):
        print(json.dumps(out, indent=2, default=_json_default))
    return int(out.get("status", 0)) if isinstance(out, dict) else 0


def _command_name(args: argparse.Namespace) -> str:
    sub = getattr(args, "ledger_command", None) or getattr(args, "schema_command", None)
    return args.command if sub is None else f"{args.command} {sub}"


def _json_default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "__dict__"):
        return {k: v for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
