"""``noisygd audit``: an empirical lower bound on epsilon beside the accountant's epsilon.

:func:`add_audit_parser` adds the subcommand to the ``noisygd`` parser's subparsers and
:func:`cmd_audit` runs it (returning the JSON object that ``--json`` prints, after printing
the text report otherwise). Building the parser imports nothing heavy; the algorithms,
SciPy and the accountants are loaded by :func:`cmd_audit`.

Exit status (through ``noisygd.cli``'s ``status`` convention): 0 when the lower bound does
not exceed the accountant's epsilon, 1 when it does (evidence, at the stated confidence,
that the accountant under-reports epsilon), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from noisygd.audit.registry import AUDITS

__all__ = ["METHOD_NAMES", "add_audit_parser", "cmd_audit"]

#: The ``--method`` choices (the keys of :data:`noisygd.audit.registry.AUDITS`).
METHOD_NAMES = tuple(AUDITS)

HELP = "empirical privacy audit: a lower bound on epsilon beside the accountant's"

EXAMPLES = (
    "examples:\n"
    "  noisygd audit --method noisy_gd --epsilon 1 --runs 2000 --confidence 0.95\n"
    "  noisygd audit --method dp_ftrl --epsilon 2 --runs 10000 --json\n"
    "  noisygd audit --method langevin --epsilon 2 --runs 5000 --quiet\n"
    "Runs the algorithm --runs times on each of two neighbouring datasets that differ in a\n"
    "worst-case canary (noise calibrated to --epsilon at --delta), and reports a lower bound\n"
    "on epsilon that holds with probability --confidence: Clopper-Pearson rates in the DP\n"
    "test inequality, and the Gaussian-DP trade-off bound (the headline for the methods whose\n"
    "statistic is exactly Gaussian; for a sampled run whose statistic is a known mixture of\n"
    "Gaussians, that family's trade-off bound). Exit status 1 when the lower bound exceeds the\n"
    "accountant's epsilon. Method and measured results: docs/audit.md."
)



def add_audit_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``audit`` to an ``add_subparsers()`` object; returns its parser.

    Parsed arguments carry ``command="audit"`` (when the parent uses ``dest="command"``).
    """
    p = subparsers.add_parser("audit", help=HELP, description=HELP, epilog=EXAMPLES,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--method", choices=METHOD_NAMES, required=True,
                   help="; ".join(f"{k}: {e.summary}" for k, e in AUDITS.items()))
    p.add_argument("--epsilon", type=float, default=1.0,
                   help="epsilon the noise is calibrated to (default 1)")
    p.add_argument("--delta", type=float, default=1e-5, help="delta (default 1e-5)")
    p.add_argument("--runs", type=int, default=2000,
                   help="runs on each of the two datasets (default 2000)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="probability that the lower bound holds (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="root seed of the runs (default 0)")
    p.add_argument("--steps", type=int, default=None,
                   help="steps of the algorithm (epochs for dp_ftrl and noisy_sgd_shuffle; "
                   "not for rrpsgd, ssp, the estimators and their pre-releases); default: "
                   "the problem's (docs/audit.md)")
    p.add_argument("--split", type=float, default=0.5,
                   help="fraction of the runs used to choose the test (default 0.5)")
    p.add_argument("--candidates", type=int, default=1,
                   help="tests carried to the evaluation split, Bonferroni (default 1)")
    p.add_argument("--secure", action="store_true",
                   help="noisy_gd only: audit secure mode (OS entropy, discrete Gaussian; "
                   "not reproducible from --seed)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def cmd_audit(args: argparse.Namespace) -> dict[str, Any]:
    """Run the audit described by ``args``; print the text report unless ``args.json``.

    Returns the result as a dict (``AuditResult.to_dict()``) with ``status`` 0 (no
    violation) or 1 (lower bound above the accountant's epsilon).
    """
    from noisygd.audit.problems import make_problem
    from noisygd.audit.runner import run_audit

    options: dict[str, Any] = {}
    if args.steps is not None:
        name = AUDITS[args.method].steps_option
        if name is None:
            raise ValueError(f"--steps is not an option of --method {args.method}")
        options[name] = args.steps
    if args.secure:
        if args.method != "noisy_gd":
            raise ValueError(f"--secure is available for --method noisy_gd only, not "
                             f"{args.method}")
        options["secure"] = True
    problem = make_problem(args.method, epsilon=args.epsilon, delta=args.delta, **options)
    show = not args.quiet and sys.stderr.isatty()
    result = run_audit(problem, runs=args.runs, delta=args.delta, confidence=args.confidence,
                       seed=args.seed, split=args.split, candidates=args.candidates,
                       progress=show)
    out = result.to_dict()
    out["status"] = 0 if result.sound else 1
    if not args.json:
        print(report(out))
    return out


def _num(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.4g}"


def report(out: dict[str, Any]) -> str:
    """The text report of one audit (``AuditResult.to_dict()``)."""
    c = out["confidence"]
    cp, gdp = out["clopper_pearson"], out["gdp"]
    head = {"gdp": "Gaussian-DP f-curve", "family": "statistic-family f-curve"}.get(
        out["bound"], "Clopper-Pearson")
    verdict = ("no violation" if out["sound"] else
               "VIOLATION: the lower bound exceeds the accountant's epsilon")
    stat = out["statistic"]
    lines = [
        f"audit of {out['method']}: {out['runs']} runs on each of D and D' "
        f"(seed {out['seed']}, {out['seconds']:.1f} s)",
        f"  canary: {out['canary']}",
        f"  event: {out['event']}",
        f"  accountant: epsilon = {_num(out['accountant_epsilon'])} at delta = "
        f"{out['delta']:g} ({out['accountant']})",
        f"  lower bound, Clopper-Pearson ({c:.0%} confidence): epsilon >= "
        f"{_num(cp['epsilon'])}",
        f"  lower bound, Gaussian-DP ({c:.0%} confidence): mu >= {_num(gdp['mu'])}, "
        f"epsilon >= {_num(gdp['epsilon'])}"
        + ("" if out["bound"] == "gdp" else " (not a bound on epsilon here: the statistic "
                                            "is not Gaussian)"),
        *([f"  lower bound, statistic family ({c:.0%} confidence): nu >= "
           f"{_num(out['family']['mu'])}, epsilon >= {_num(out['family']['epsilon'])}"]
          if out.get("family") else []),
        f"  observed: {out.get('observed', '')}",
        f"  statistic: mean {stat['mean_d']:.4g} on D, {stat['mean_d_prime']:.4g} on D'; "
        f"plug-in mu {stat['mu_hat']:.3g}",
        f"  {head}: {_num(out['epsilon_lower'])} <= {_num(out['accountant_epsilon'])}: "
        f"{verdict} (ratio {out['ratio']:.2f})" if out["sound"] else
        f"  {head}: {_num(out['epsilon_lower'])} > {_num(out['accountant_epsilon'])}: "
        f"{verdict}",
    ]
    return "\n".join(lines)
