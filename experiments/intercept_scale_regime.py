"""The classifiers' intercept scale and start (issue 19, item 4: budget where the signal is):
the measurement behind the rule adopted at its commit (docs/estimators.md, "Intercept scale").

``DPLogisticRegression`` fits in the conditioned coordinates of
:class:`~noisygd.objectives.centred.CentredGLM`: rows ``[x - c, s]``, the intercept's
coordinate ``b/s``. Before the rule its scale was the row bound, ``s = R`` (with the private
conditioning the released RMS row norm ``R sqrt(U_c)``), the choice of the accelerated,
*optimisation-limited* bound. In a *noise-limited* run the bound that matters is the stationary
noise, proportional to ``C^2 tr(H^-1)`` with ``C^2 ~ R^2 + s^2``, minimal near ``s = R/sqrt(d)``
(``DPLinearRegression``'s rule). Every row's clipped gradient carries ``|r_i| s`` in its
intercept coordinate, so with ``s = R`` up to half of each row's clip goes to one coordinate
and the features' signal is clipped away with it; on an imbalanced table the residuals of the
rare class are the largest, and so is the loss. A small ``s`` makes the intercept slow to
move, though: with the private centre's error ``delta`` the residuals' mean, while the
intercept is off the base rate, leaks ``n delta / 2`` into every gradient; the variant
``warm`` starts the intercept at the exact training base rate (for nothing: an upper bound on a
paid release of the label sum).

This script measures ``s = R d^(-a)`` for ``a`` in 0 (the default before the rule), 1/4 and
1/2, each cold and warm, on ``bench_conditioning``'s classification families (n 500, 2000,
10 000; p 5, 20, 100; epsilon 0.5, 1, 2, 8; plain and with the declared box) and the UCI
tables adult, bank and credit. It patches the estimator's intercept scale, so it measures
against the code it runs on: the results in ``experiments/results/intercept_scale_regime.md``
were made at commit 334af09, before the rule. Measured there: with the box, ``a = 1/2`` raised
the mean share by 0.060 (cold) and 0.062 (warm), above by more than 0.02 in 50 of 108 cells,
below in none; plain, ``a = 1/2`` cold lost 0.028 (30 cells below by more than 0.02), warm
gained 0.030 (35 above, none below). Hence the rule: ``s = R/sqrt(d)`` for centred rows, and
without a box ``R sqrt(U_c/d)`` with the intercept started at a released base rate (the label
sum rides with the private conditioning's release).

Run: ``python experiments/intercept_scale_regime.py [--seeds 2] [--sizes 500,2000,10000]
[--data-dir ../shared/data/uci] [--part k/m]``; writes
``experiments/results/intercept_scale_regime.{json,md}`` (with ``--part k/m`` only the part's
JSON, merged by ``--merge m``).
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from _experiment import add_part_arguments, experiment_parser, rows_in_parts, write_experiment

#: ``(a, warm)``: the intercept scale ``s = R d^(-a)`` (0: the default), and the intercept
#: started at the exact training base rate (``warm``; every warm variant follows its cold one).
VARIANTS = ((0.0, False), (0.0, True), (0.25, False), (0.25, True), (0.5, False), (0.5, True))


def _key(a: float, warm: bool) -> str:
    return f"a={a:g}" + (" warm" if warm else "")
FAMILIES = ("onehot", "imbalanced", "scales")
DIMS = (5, 20, 100)
EPSILONS = (0.5, 1.0, 2.0, 8.0)
UCI = ("adult", "bank", "credit")

_FACTOR = {"value": 1.0}


def _patch() -> None:
    """Scale ``DPLogisticRegression``'s intercept scale by ``_FACTOR`` (the experiment's knob)."""
    from noisygd.estimators import DPLogisticRegression

    base = DPLogisticRegression._conditioning

    def scaled(self: Any, n_features: int) -> tuple[Any, float, Any]:
        centre, bound, s = base(self, n_features)
        return centre, bound, None if s is None else s * _FACTOR["value"]

    DPLogisticRegression._conditioning = scaled  # type: ignore[method-assign]


def regime_of(est: Any) -> tuple[float, str]:
    """``(r, method)``: the noise regime of the default fit's plan at its base clip (0 where
    the plan has none, e.g. Newton)."""
    from noisygd.planning import noise_regime

    plan = est.fit_info_["plans"][0]["plan"]
    q = (plan.get("clip_rule") or {}).get("noise_to_signal", plan.get("noise_to_signal"))
    return (0.0 if q is None else noise_regime(float(q))), str(est.fit_info_.get("method"))


def problems(sizes: tuple[int, ...], data_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    from bench_conditioning import named_problems

    return named_problems([(fam, n, p) for fam in FAMILIES for n in sizes for p in DIMS],
                          data_dir, UCI)


def run_cell(name: str, prob: dict[str, Any], declared: str, eps: float, seeds: int
             ) -> dict[str, Any]:
    from bench_conditioning import _share, fit_estimator, nonprivate

    ceiling = nonprivate(prob)
    d = prob["X"].shape[1]
    row: dict[str, Any] = {"problem": name, "n": len(prob["y"]), "d": d,
                           "declared": declared, "epsilon": eps}
    shares: dict[str, list[float]] = {}
    regimes, methods = [], []
    rate = float(np.mean(prob["y"]))
    for seed in range(seeds):
        kappa = None
        for a, warm in VARIANTS:
            _FACTOR["value"] = d ** -a
            extra: dict[str, Any] = {}
            if warm:  # the exact base rate, for nothing: an upper bound on a paid release
                theta0 = np.zeros(d + 1)
                theta0[d] = math.log(rate / (1.0 - rate)) / kappa[a]
                extra["method_options"] = {"theta0": theta0}
            metric, est = fit_estimator(prob, "auto", declared, eps, seed, **extra)
            shares.setdefault(_key(a, warm), []).append(_share(prob["task"], metric, ceiling))
            if not warm:
                kappa = {**(kappa or {}), a: est.conditioning_["intercept_scale"]}
            if a == 0.0 and not warm:
                r, method = regime_of(est)
                regimes.append(r)
                methods.append(method)
    _FACTOR["value"] = 1.0
    for key, vals in shares.items():
        row[f"{key} mean"], row[f"{key} min"] = float(np.mean(vals)), float(np.min(vals))
    row["regime"], row["method"] = float(np.mean(regimes)), "/".join(sorted(set(methods)))
    return row


def table(rows: list[dict[str, Any]]) -> str:
    keys = [_key(a, warm) for a, warm in VARIANTS]
    n2k = [r for r in rows if r["n"] >= 2000]
    lines = [
        "# The classifiers' intercept scale and start",
        "",
        "Share of the non-private AUC gain (mean / min over seeds) of the default fit with the "
        "intercept scale `s = R d^-a` (`a = 0`: the default at 334af09), cold and started at "
        "the exact base rate (`warm`); `regime` is the default plan's noise regime r. "
        + "; ".join(
            f"`{k}`: mean {np.mean([r[k + ' mean'] for r in rows]):.4f}, "
            f"cells below `a=0` by > 0.02: "
            f"{sum(r[k + ' mean'] < r['a=0 mean'] - 0.02 for r in rows)}, above by > 0.02: "
            f"{sum(r[k + ' mean'] > r['a=0 mean'] + 0.02 for r in rows)}, "
            f"eps-1 cells with n >= 2000 at share >= 0.9: "
            f"{sum(r[k + ' mean'] >= 0.9 for r in n2k if r['epsilon'] == 1.0)}"
            f"/{sum(r['epsilon'] == 1.0 for r in n2k)}, "
            f"cells with a seed below the constant: {sum(r[k + ' min'] < 0 for r in rows)}"
            for k in keys) + f". Cells: {len(rows)}.",
        "",
        "| problem | declared | epsilon | method | regime | "
        + " | ".join(keys) + " |",
        "|" + "---|" * (5 + len(keys)),
    ]
    for r in rows:
        lines.append(f"| {r['problem']} | {r['declared']} | {r['epsilon']:g} | {r['method']} | "
                     f"{r['regime']:.2f} | " + " | ".join(
                         f"{r[k + ' mean']:.3f} / {r[k + ' min']:.3f}" for k in keys) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = experiment_parser(__doc__, seeds=2)
    ap.add_argument("--sizes", default="500,2000,10000")
    add_part_arguments(ap)
    ap.add_argument("--name", default="intercept_scale_regime")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")

    def cells() -> list[Any]:
        _patch()
        return [(name, prob, declared, eps)
                for name, prob in problems(tuple(int(v) for v in args.sizes.split(",")),
                                           args.data_dir)
                for declared in ("plain", "box") for eps in EPSILONS]

    rows = rows_in_parts(args.name, cells, args.part, args.merge,
                         lambda cell: [run_cell(*cell, args.seeds)])
    if rows is None:
        return 0
    md = table(rows) + f"\nCommand: `python experiments/{Path(__file__).name} " + " ".join(
        sys.argv[1:] if argv is None else argv) + "`\n"
    write_experiment(args.name, {"command": "python experiments/intercept_scale_regime.py "
                                 + " ".join(sys.argv[1:] if argv is None else argv),
                                 "rows": rows}, md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
