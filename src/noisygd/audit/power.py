r"""The power of an audit before running it: the bound on samples of the statistic's exact law.

For a problem that states its statistic's law for a correct implementation (a Gaussian
statistic with :math:`\mu` = ``problem.nu``, or ``problem.family`` at :math:`\nu` =
``problem.nu``), :func:`simulate_lower_bounds` draws ``runs`` samples per dataset from that
law, ``seeds`` times, and applies the very bound :func:`~noisygd.audit.runner.run_audit`
reports (:func:`~noisygd.audit.bounds.empirical_epsilon`, same ``split``, confidence and
delta). The spread of these lower bounds is the spread the real audit has when the
implementation is correct; the fraction of seeds whose ratio claim / bound exceeds a
tolerance is the false-failure rate of a test asserting that tolerance
(``tests/audit/test_audit_slow.py``).

``python -m noisygd.audit.power --method noisy_gd --epsilon 4 --runs 4000 --seeds 300``
prints that rate, the median and worst ratio.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np

from noisygd.audit.bounds import ShiftFamily, empirical_epsilon
from noisygd.audit.problems import AuditProblem
from noisygd.mechanisms.noise import add_gaussian_noise

__all__ = ["main", "sample_statistic", "simulate_lower_bounds"]


def sample_statistic(family: ShiftFamily, nu: float, runs: int, rng: np.random.Generator
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``runs`` draws of the statistic on ``D`` and on ``D'`` from ``family`` at ``nu``."""
    out = []
    for weights, offsets in ((family.weights_d, family.offsets_d),
                             (family.weights_d_prime, family.offsets_d_prime)):
        w = np.asarray(weights, dtype=float)
        k = rng.choice(w.size, size=runs, p=w / w.sum())
        # the statistic: its shift plus unit Gaussian noise (the mechanisms' one draw site)
        out.append(add_gaussian_noise(np.asarray(offsets, dtype=float)[k] * nu, 1.0, rng))
    return out[0], out[1]


def simulate_lower_bounds(problem: AuditProblem, *, runs: int, seeds: int, delta: float = 1e-5,
                          confidence: float = 0.95, split: float = 0.5, first_seed: int = 0
                          ) -> np.ndarray:
    """The headline lower bound of ``seeds`` simulated audits of ``problem`` (module doc).

    Raises
    ------
    ValueError
        If the problem states no law (``problem.nu`` is None, or its statistic is neither
        Gaussian nor of a family).
    """
    if problem.nu is None or (problem.family is None and not problem.gaussian_output):
        raise ValueError(f"audit {problem.name!r} states no law of its statistic to simulate")
    family = problem.family if problem.family is not None else ShiftFamily.gaussian()
    kind = "family" if problem.family is not None else "gdp"
    out = np.empty(seeds)
    for i in range(seeds):
        s0, s1 = sample_statistic(family, float(problem.nu), runs,
                                  np.random.default_rng(first_seed + i))
        out[i] = empirical_epsilon(s0, s1, delta=delta, confidence=confidence, bound=kind,
                                   split=split,
                                   family=problem.family).epsilon
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Print the simulated power of one audit (module doc); returns the summary."""
    from noisygd.accounting import best
    from noisygd.audit.problems import make_problem
    from noisygd.audit.registry import AUDITS

    p = argparse.ArgumentParser(prog="python -m noisygd.audit.power", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--method", choices=tuple(AUDITS), required=True)
    p.add_argument("--epsilon", type=float, default=4.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--runs", type=int, default=4000)
    p.add_argument("--seeds", type=int, default=100)
    p.add_argument("--split", type=float, default=0.2)
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--tolerance", type=float, default=1.5,
                   help="the ratio claim / lower bound a test asserts (default 1.5)")
    args = p.parse_args(argv)
    problem = make_problem(args.method, epsilon=args.epsilon, delta=args.delta)
    claim = best(problem.run(0, np.random.default_rng(0)).event, args.delta).epsilon
    low = simulate_lower_bounds(problem, runs=args.runs, seeds=args.seeds, delta=args.delta,
                                confidence=args.confidence, split=args.split)
    with np.errstate(divide="ignore"):
        ratio = np.where(low > 0, claim / np.maximum(low, 1e-300), np.inf)
    summary = {"method": args.method, "claim": claim, "runs": args.runs, "seeds": args.seeds,
               "failures": int(np.sum(ratio > args.tolerance)),
               "median_ratio": float(np.median(ratio)), "worst_ratio": float(np.max(ratio))}
    print(f"{args.method}: claim {claim:.3f}, {args.runs} runs per dataset, {args.seeds} "
          f"seeds: claim / lower bound > {args.tolerance} in {summary['failures']} seeds; "
          f"median {summary['median_ratio']:.3f}, worst {summary['worst_ratio']:.3f}")
    return summary


if __name__ == "__main__":  # pragma: no cover
    main()
