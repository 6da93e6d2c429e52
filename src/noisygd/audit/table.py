"""The table of docs/audit.md: every registered audit, its implied lower bound beside its claim.

``python -m noisygd.audit.table --epsilon 2 --runs 5000 --json results.json`` runs
:func:`~noisygd.audit.runner.run_audit` on :func:`~noisygd.audit.problems.make_problem`
``(method, epsilon, delta)`` for every name of :data:`noisygd.audit.registry.AUDITS` (or
those given with ``--methods``), prints one Markdown row per audit and, with ``--json``,
writes every ``AuditResult.to_dict()``. ``--runs-for NAME=RUNS`` overrides the runs of one
audit (the estimator audits cost a whole fit per run).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from typing import Any

__all__ = ["HEADER", "main", "markdown_row"]

HEADER = (
    "| method | audits | observed | accountant eps (name) | implied lower bound (bound) | "
    "claimed / implied | Clopper-Pearson eps | runs per dataset | seconds |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def markdown_row(out: dict[str, Any], solver: str) -> str:
    """One row of :data:`HEADER` from ``AuditResult.to_dict()``."""
    low, claim = out["epsilon_lower"], out["accountant_epsilon"]
    ratio = claim / low if low > 0 else math.inf
    return (f"| {out['method']} | {solver} | {out['observed']} | {claim:.3f} "
            f"({out['accountant']}) | {low:.3f} ({out['bound']}) | {ratio:.2f} | "
            f"{out['clopper_pearson']['epsilon']:.3f} | {out['runs']} | {out['seconds']:.0f} |")


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Run the audits and print the table (module doc); returns the results."""
    from noisygd.audit.problems import make_problem
    from noisygd.audit.registry import AUDITS
    from noisygd.audit.runner import run_audit

    p = argparse.ArgumentParser(prog="python -m noisygd.audit.table", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epsilon", type=float, default=2.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--runs", type=int, default=5000)
    p.add_argument("--runs-for", action="append", default=[], metavar="NAME=RUNS")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split", type=float, default=0.2,
                   help="fraction of the runs that chooses the test (default 0.2)")
    p.add_argument("--methods", nargs="*", choices=tuple(AUDITS), default=list(AUDITS))
    p.add_argument("--json", default=None, help="write every result to this file")
    args = p.parse_args(argv)
    runs_for = {k: int(v) for k, v in (item.split("=", 1) for item in args.runs_for)}
    results = []
    print(HEADER, flush=True)
    for name in args.methods:
        res = run_audit(make_problem(name, epsilon=args.epsilon, delta=args.delta),
                        runs=runs_for.get(name, args.runs), delta=args.delta,
                        confidence=args.confidence, seed=args.seed, split=args.split)
        out = res.to_dict()
        results.append(out)
        print(markdown_row(out, AUDITS[name].solver or "pre-release"), flush=True)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump(results, fh, indent=1, default=str)
    return results


if __name__ == "__main__":  # pragma: no cover
    main()
