"""``noisygd ledger show|set-budget|history|export``: the ledger on the command line.

Wiring into the ``noisygd`` parser (``noisygd.cli``)::

    from noisygd.ledger.cli import add_ledger_commands, cmd_ledger

    add_ledger_commands(sub)              # sub = parser.add_subparsers(dest="command", ...)
    ...
    elif args.command == "ledger":
        out = cmd_ledger(args)            # prints text unless --json; returns the JSON object

Every subcommand takes ``--ledger`` (a file path or SQLAlchemy URL; default
``$NOISYGD_LEDGER``) and ``--json``. ``python -m noisygd.ledger ...`` runs the same commands
on their own (:func:`main`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import sqlalchemy as sa

from noisygd.ledger.core import Ledger, check_budget

__all__ = ["add_ledger_commands", "cmd_ledger", "main"]

EXAMPLES = """examples:
  noisygd ledger set-budget --ledger ledger.db --dataset adult --epsilon 3 --delta 1e-5
  noisygd ledger show --ledger ledger.db --dataset adult --json
  noisygd ledger history --ledger ledger.db --dataset adult
  noisygd ledger export --ledger ledger.db --dataset adult --out adult-ledger.json
  noisygd ledger show --ledger postgresql+psycopg://user@db.example/ledger
spent_epsilon is the composition of every release at the budget's delta by the tightest
accountant that bounds it (exact Gaussian DP, PLD, RDP, zCDP, ...), never a sum of epsilons."""


def add_ledger_commands(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``ledger`` and its subcommands to an ``add_subparsers()`` object.

    Returns the ``ledger`` parser. Parsed arguments carry ``command="ledger"`` (when the
    parent uses ``dest="command"``), ``ledger_command`` and ``json``.
    """
    parser = subparsers.add_parser("ledger", help=_HELP, description=_HELP, epilog=EXAMPLES,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_subcommands(parser)
    return parser


_HELP = "the privacy ledger: budgets and recorded releases per dataset"


def _add_subcommands(parser: argparse.ArgumentParser) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    sub = parser.add_subparsers(dest="ledger_command", required=True, metavar="SUBCOMMAND")

    def add(name: str, text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=text, description=text, epilog=EXAMPLES,
                           formatter_class=fmt)
        default = os.environ.get("NOISYGD_LEDGER")
        p.add_argument("--ledger", default=default, required=default is None,
                       help="ledger file (SQLite) or SQLAlchemy URL (default $NOISYGD_LEDGER)")
        p.add_argument("--json", action="store_true", help="print one JSON object")
        return p

    p = add("show", "budget, composed spend and releases of a dataset (all datasets without "
                    "--dataset)")
    p.add_argument("--dataset", default=None)

    p = add("set-budget", "set or replace a dataset's budget (epsilon at delta)")
    p.add_argument("--dataset", required=True)
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, required=True)

    p = add("history", "every release of a dataset, oldest first")
    p.add_argument("--dataset", required=True)

    p = add("export", "everything recorded for a dataset as JSON (re-accountable events)")
    p.add_argument("--dataset", required=True)
    p.add_argument("--out", default=None,
                   help="write to this file (a new or regular file) instead of stdout")


def cmd_ledger(args: argparse.Namespace, stdout: TextIO | None = None) -> dict[str, Any]:
    """Run a parsed ``ledger`` subcommand; print text unless ``--json``; return the object.

    With ``--json`` nothing is printed: the caller prints the returned object (as
    ``noisygd.cli`` does for every command). ``export`` without ``--out`` prints its JSON
    in both modes' place: the returned object is the export itself.

    Raises
    ------
    ValueError, TypeError, OSError
        User errors (unknown dataset, bad number, unwritable ``--out``, budget exceeded).
    """
    out_stream = sys.stdout if stdout is None else stdout
    try:
        result, text = _run(args)
    except sa.exc.SQLAlchemyError as exc:
        detail = getattr(exc, "orig", None) or exc
        raise OSError(f"ledger database error: {detail}") from exc
    if not getattr(args, "json", False):
        print(text, file=out_stream)
    return result


def _run(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    if args.ledger_command == "set-budget":  # refused before the ledger is opened (created)
        check_budget(args.dataset, args.epsilon, args.delta)
    with Ledger(args.ledger) as ledger:
        command = args.ledger_command
        if command == "set-budget":
            ledger.set_budget(args.dataset, args.epsilon, args.delta)
            result = ledger.show(args.dataset)
            text = _format_show(result)
        elif command == "show":
            if args.dataset is None:
                result = ledger.overview()
                text = _format_overview(result)
            else:
                result = ledger.show(args.dataset)
                text = _format_show(result)
        elif command == "history":
            report = ledger.show(args.dataset)
            result = {k: report[k] for k in ("ledger", "dataset", "budget_epsilon",
                                             "budget_delta", "releases")}
            text = _format_history(result)
        elif command == "export":
            export = ledger.export(args.dataset)
            text = json.dumps(export, indent=2, allow_nan=False)
            if args.out is None:
                result = export
            else:
                path = write_regular_file(args.out, text + "\n")
                result = {"written": str(path), "dataset": export["dataset"],
                          "n_releases": export["n_releases"]}
                text = f"wrote {path} ({export['n_releases']} releases)"
        else:  # pragma: no cover - argparse restricts the choices
            raise ValueError(f"unknown ledger command {command!r}")
    return result, text


def write_regular_file(target: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``target`` atomically; refuse anything but a new or regular file.

    The text goes to a temporary file beside ``target`` that is fsynced and renamed over
    it; on any failure the temporary file is removed and ``target`` is left as it was.

    Raises
    ------
    ValueError
        If ``target`` exists and is not a regular file (a symlink, FIFO, device, folder).
    OSError
        If the folder does not exist or cannot be written.
    """
    path = Path(target)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise ValueError(f"--out {path} exists and is not a regular file; refusing to replace it")
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


# ---------------------------------------------------------------------- text output
def _format_show(r: dict[str, Any]) -> str:
    lines = [
        f"ledger: {r['ledger']}",
        f"dataset: {r['dataset']}",
        f"budget: epsilon = {r['budget_epsilon']:.6g} at delta = {r['budget_delta']:.3g}",
    ]
    if r["n_releases"]:
        lines.append(
            f"spent: epsilon = {r['spent_epsilon']:.6g} over {r['n_releases']} release(s), "
            f"composed by {r['spent_accountant']} ({r['spent_theorem']})"
        )
    else:
        lines.append("spent: nothing released")
    lines.append(f"remaining: epsilon = {r['remaining_epsilon']:.6g}")
    for rel in r["releases"]:
        lines.append(f"  #{rel['id']} {rel['time']} {rel['algorithm']}: epsilon = "
                     f"{rel['epsilon']:.6g} ({rel['accountant']})")
    return "\n".join(lines)


def _format_overview(r: dict[str, Any]) -> str:
    lines = [f"ledger: {r['ledger']}"]
    if not r["datasets"]:
        lines.append("no datasets (set a budget with: noisygd ledger set-budget ...)")
    for d in r["datasets"]:
        lines.append(
            f"  {d['dataset']}: spent epsilon = {d['spent_epsilon']:.6g} of "
            f"{d['budget_epsilon']:.6g} at delta = {d['budget_delta']:.3g} "
            f"({d['n_releases']} release(s))"
        )
    return "\n".join(lines)


def _format_history(r: dict[str, Any]) -> str:
    lines = [f"dataset: {r['dataset']}  (budget epsilon = {r['budget_epsilon']:.6g} at "
             f"delta = {r['budget_delta']:.3g})"]
    if not r["releases"]:
        lines.append("no releases")
    for rel in r["releases"]:
        lines.append(
            f"#{rel['id']}  {rel['time']}  {rel['algorithm']}\n"
            f"    event: {rel['event_description']}  [{rel['relation']}]\n"
            f"    epsilon = {rel['epsilon']:.6g} ({rel['accountant']}); spent after it: "
            f"{rel['spent_epsilon']:.6g} ({rel['spent_accountant']})"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------ standalone
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m noisygd.ledger SUBCOMMAND ...``: the ledger commands on their own.

    Exit status 0 on success, 2 on a user error (printed as one line to stderr).
    """
    parser = argparse.ArgumentParser(prog="noisygd ledger", description=_HELP, epilog=EXAMPLES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_subcommands(parser)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        out = cmd_ledger(args)
    except (ValueError, TypeError, OSError) as exc:
        print(f"noisygd ledger: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(out, indent=2, allow_nan=False))
    return 0
