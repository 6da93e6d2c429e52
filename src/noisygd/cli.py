"""The ``noisygd`` command line: demo, fit, account, reproduce, ledger.

Every command takes ``--json`` for machine-readable output; every epsilon it
prints names the accountant (and theorem) behind it. ``noisygd ledger
show|set-budget|history|export`` manages the privacy ledger
(:mod:`noisygd.ledger.cli`), and ``noisygd fit ... --ledger L --dataset NAME`` records
the fit there as one release (refused, before the data is read, when the budget cannot
admit it). User errors are one line on stderr and exit status 2.
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
#: import the solvers (tests/test_cli.py checks that the two agree).
METHOD_NAMES = ("dp_ftrl", "langevin", "noisy_gd", "noisy_sgd", "output_perturbation", "rrpsgd")
DEFAULT_METHOD = "noisy_gd"

MODELS = {
    "logistic": "DPLogisticRegression",
    "huber": "DPHuberRegressor",
    "linear": "DPLinearRegression",
}


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


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
            relation=Neighbouring.REPLACE_ONE if args.relation is None else relation,
        )
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
    for seed in range(args.seeds):
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
        print("\nprivacy report of the last model:")
        print(model.privacy_)
    return out


# --------------------------------------------------------------------------- fit


def cmd_fit(args: argparse.Namespace) -> dict[str, Any]:
    from noisygd import estimators
    from noisygd.data import read_table

    X, y, names = read_table(args.data, target=args.target)
    if y is None:
        raise CLIError(f"--target {args.target!r} gave no labels")
    cls = getattr(estimators, MODELS[args.model])
    params: dict[str, Any] = {
        "epsilon": args.epsilon,
        "delta": args.delta,
        "method": args.method,
        "row_norm_bound": args.row_norm_bound,
        "neighbouring": args.relation,
        "random_state": args.seed,
    }
    if args.l2 is not None:
        params["l2"] = args.l2
    if args.max_iter is not None:
        params["max_iter"] = args.max_iter
    if args.method_options:
        try:
            options = json.loads(args.method_options)
        except json.JSONDecodeError as exc:
            raise CLIError(f"--method-options is not valid JSON: {exc}") from exc
        if not isinstance(options, dict):
            raise CLIError("--method-options must be a JSON object")
        params["method_options"] = options
    if args.n_samples_public is not None:
        params["n_samples_public"] = args.n_samples_public
    if args.model == "logistic" and args.classes:
        params["classes"] = [_parse_label(c) for c in args.classes.split(",")]
    if args.model != "logistic":
        params["target_bound"] = args.target_bound
    if args.model == "linear" and args.radius is not None:
        params["radius"] = args.radius
    ledger = _fit_ledger(args)
    if ledger is not None:
        params["ledger"] = ledger
        params["dataset"] = args.dataset
    try:
        model = cls(**params).fit(X, y)
    except Exception as exc:
        if ledger is not None and _is_database_error(exc):
            detail = getattr(exc, "orig", None) or exc
            raise CLIError(f"ledger database error: {detail}") from exc
        raise
    payload = {
        "model": MODELS[args.model],
        # the ledger's location is left out (an URL may hold a password)
        "params": {k: v for k, v in model.get_params().items()
                   if k != "ledger" and _jsonable(v)},
        "feature_names": list(names),
        "coef": np.asarray(model.coef_).tolist(),
        "intercept": np.asarray(model.intercept_).tolist(),
        "classes": np.asarray(getattr(model, "classes_", [])).tolist(),
        "privacy": model.privacy_report(),
    }
    if model.ledger_release_ is not None:
        payload["ledger_release"] = {"dataset": model.ledger_release_.dataset,
                                     **model.ledger_release_.to_dict(full=False)}
    out_path = Path(args.out)
    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = out_path.with_suffix(out_path.suffix + ".tmp")
        tmp.write_text(json.dumps(payload, indent=2))
        tmp.replace(out_path)  # atomic: no half-written model on failure
    except OSError as exc:
        raise CLIError(f"cannot write {out_path}: {exc}") from exc
    result = {"out": str(out_path), **payload}
    if not args.json:
        print(f"wrote {out_path}")
        print(model.privacy_)
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


def _parse_label(text: str) -> Any:
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


# --------------------------------------------------------------------------- reproduce


def cmd_reproduce(args: argparse.Namespace, rest: list[str]) -> dict[str, Any]:
    module_name, _ = REPRODUCTIONS[args.name]
    module = importlib.import_module(module_name)
    status = module.main(rest)
    return {"reproduction": args.name, "status": int(status or 0)}


# --------------------------------------------------------------------------- parser


EXAMPLES = {
    "demo": "examples:\n  noisygd demo\n  noisygd demo --epsilon 0.5 --json",
    "fit": (
        "examples:\n"
        "  noisygd fit train.csv --target label --model logistic --epsilon 1 --out model.json\n"
        "  noisygd fit data.parquet --target y --model huber --target-bound 10 --json\n"
        "  noisygd fit train.csv --target label --method dp_ftrl --relation replace_one\n"
        "  noisygd fit train.csv --target label --ledger ledger.db --dataset train\n"
        "features are used as given (scale them by public bounds first); each row is then\n"
        "scaled to norm <= --row-norm-bound, a per-row step that costs no privacy.\n"
        "With --ledger/--dataset the fit is recorded as one release of the dataset in the\n"
        "privacy ledger before the data is read, and refused (exit 2) if the budget set\n"
        "with 'noisygd ledger set-budget' cannot admit it."
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
        "the tree mechanism (DP-FTRL) is accounted under replace-one neighbours; --steps is the\n"
        "total number of leaves over all epochs.\n"
        "--sensitivity is the L2 sensitivity in units of the clipping norm: default 1 under\n"
        "add/remove, 2 under replace-one (the noise std is noise-multiplier x clipping norm)."
    ),
    "reproduce": "examples:\n"
    + "\n".join(f"  noisygd reproduce {k}    # {v[1]}" for k, v in REPRODUCTIONS.items())
    + "\nArguments after the name go to the reproduction (try: noisygd reproduce NAME --help).",
}


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

    p = add("fit", "fit a private linear model to a CSV or Parquet file; write model JSON")
    p.add_argument("data", help="CSV (',' or ';'), CSV.gz or Parquet file")
    p.add_argument("--target", required=True, help="name of the label column")
    p.add_argument("--model", choices=sorted(MODELS), default="logistic")
    p.add_argument("--method", default="auto",
                   help=f"auto ({DEFAULT_METHOD}), or one of {', '.join(METHOD_NAMES)} "
                   "(some need --relation replace_one); the names of noisygd.solvers.SOLVERS")
    p.add_argument("--max-iter", type=int, default=None, help="cap on the number of steps")
    p.add_argument("--method-options", default=None,
                   help='JSON object of extra method arguments, e.g. \'{"epochs": 5}\'')
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--l2", type=float, default=None, help="L2 regularisation")
    p.add_argument("--row-norm-bound", type=float, default=1.0)
    p.add_argument("--target-bound", type=float, default=1.0,
                   help="regression: targets clipped to [-b, b]")
    p.add_argument("--classes", default=None,
                   help="logistic: comma-separated label set, declared public")
    p.add_argument("--relation", choices=["add_remove", "replace_one"], default="add_remove")
    p.add_argument("--n-samples-public", type=int, default=None,
                   help="declare the number of rows public (else a noisy count is paid for)")
    p.add_argument("--radius", type=float, default=None,
                   help="linear: public radius of the parameters (needed by the methods "
                   "that do not clip: output_perturbation, rrpsgd, langevin)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--out", default="model.json", help="output path (default model.json)")
    p.add_argument("--ledger", default=None,
                   help="privacy ledger: SQLite file or SQLAlchemy URL (default "
                   "$NOISYGD_LEDGER when --dataset is given); the fit is recorded there")
    p.add_argument("--dataset", default=None,
                   help="the dataset's name in the ledger (its budget: noisygd ledger "
                   "set-budget)")

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
    p.add_argument("--accountant", action="append",
                   help="restrict to this accountant (repeatable)")

    p = add("reproduce", "reproduce a table or figure of the source documents")
    p.add_argument("name", choices=sorted(REPRODUCTIONS))
    p.add_argument("args", nargs=argparse.REMAINDER,
                   help="passed to the reproduction (see: noisygd reproduce NAME --help)")

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
    try:
        if args.command == "ledger":
            from noisygd.ledger.cli import cmd_ledger

            out = cmd_ledger(args)
        elif args.command == "account":
            out = cmd_account(args)
        elif args.command == "demo":
            out = cmd_demo(args)
        elif args.command == "fit":
            with warnings.catch_warnings():
                warnings.simplefilter("default")
                out = cmd_fit(args)
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
    sub = getattr(args, "ledger_command", None)
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
