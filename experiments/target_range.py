"""The private target range: a regressor with nothing declared about its targets.

``DPLinearRegression``'s default with its targets' range declared (``target_range``, what
``bench_conditioning`` and ``bench_utility`` declare), with nothing declared (the private
target range released: ``noisygd.mechanisms.target_range``), and with nothing declared and no
release (``target_range_share=0``: the targets clipped to ``[-1, 1]``, what every undeclared
fit did before), on

* ``bench_conditioning``'s off-centre family (n 500, 2000, 10 000; p 5, 20, 100), its
  targets in [0, 1] as generated (declared ``(0, 1)``) and in other units, ``5000 + 1000 y``
  (declared ``(5000, 6000)``);
* scikit-learn's diabetes set (its raw target, a disease score from 25 to 346; declared
  ``(0, 400)``; an 80/20 split, seed 0) and, where the data is present,
  ``bench_raw_tables``' three raw regression tables (wine quality, hourly bike rentals, a
  credit bill, in their units, with its declared ranges);

plain (no ``feature_bounds``), at epsilon 0.5, 1, 2 and 8 and seeds 0 and 1 (``--seeds``).
Metric: share of the non-private R^2 (scikit-learn's ``LinearRegression``; the constant
predictor as 0).

``--rules`` compares post-processing rules of the release instead, each emulated as a
declared ``target_range`` computed from a noisy histogram drawn here (a release at the
share's mu, noise of its own seed) and a fit at the budget less that share (mu^2 times
0.95): ``anchored`` (octave bins, per sign the highest occupied bin's upper end and 0 as the
other end: the first version), ``hull`` (the adopted rule without its windows, which came
after: upper-closed octave bins, a zero bin, the hull of the occupied bins), ``quarter
hull`` (the same on quarter-octave bins) and ``eighth refine`` (octaves and eighth-octaves
released together at sensitivity sqrt(2), the octave hull's end bins narrowed to the
occupied eighth-octave bins inside them). Writes
``experiments/results/target_range_rules.{json,md}``.

Run: ``python experiments/target_range.py --part k/2`` for k = 0, 1, then ``--merge 2``;
writes ``experiments/results/target_range.{json,md}``.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
from _experiment import (
    EPSILONS,
    add_part_arguments,
    change_summary,
    experiment_parser,
    rows_in_parts,
    write_experiment,
)

NAME = "target_range"
RULES_NAME = "target_range_rules"
RULES = ("anchored", "hull", "quarter hull", "eighth refine")
CELLS = tuple(("offcentre", n, p) for n in (500, 2000, 10_000) for p in (5, 20, 100))
#: The off-centre targets in other units: ``a + b y``, declared ``(a, a + b)``.
UNITS = ((0.0, 1.0), (5000.0, 1000.0))
VARIANTS = (("declared", {}), ("released", {"undeclared": True}),
            ("fallback", {"undeclared": True, "target_range_share": 0.0}))


def items(data_dir: Any) -> list[tuple[str, Any]]:
    """``(name, problem)``: the off-centre cells in both units, diabetes, the raw tables."""
    from bench_conditioning import family_problem

    out = []
    for fam, n, p in CELLS:
        base = family_problem(fam, n, p, 0)
        for a, b in UNITS:
            prob = {**base, "y": a + b * base["y"], "yt": a + b * base["yt"],
                    "range": (a, a + b)}
            out.append((f"{fam}-{n}x{p}" + ("" if (a, b) == (0.0, 1.0) else f" {a:g}+{b:g}y"),
                        prob))
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    cut = int(0.8 * len(y))
    out.append(("diabetes (raw target)", {"X": X[order[:cut]], "y": y[order[:cut]],
                                          "Xt": X[order[cut:]], "yt": y[order[cut:]],
                                          "range": (0.0, 400.0)}))
    if data_dir is not None and Path(data_dir).is_dir():
        from bench_raw_tables import TARGET_RANGES, tables

        raw = tables(Path(data_dir))
        for name, bounds in TARGET_RANGES.items():
            X, y, Xt, yt = raw[name]
            out.append((name, {"X": X, "y": y, "Xt": Xt, "yt": yt, "range": bounds}))
    return out


def run_item(item: tuple[str, dict[str, Any]], seeds: int) -> list[dict[str, Any]]:
    """Rows of one problem: per epsilon, each variant's mean share and the released range."""
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score

    from noisygd.estimators import DPLinearRegression

    name, prob = item
    ceiling = r2_score(prob["yt"], LinearRegression().fit(prob["X"], prob["y"]).predict(
        prob["Xt"]))
    out = []
    for eps in EPSILONS:
        row: dict[str, Any] = {"problem": name, "n": int(prob["X"].shape[0]),
                               "p": int(prob["X"].shape[1]), "epsilon": eps}
        for label, kw in VARIANTS:
            kw = dict(kw)
            if not kw.pop("undeclared", False):
                kw["target_range"] = prob["range"]
            shares, ranges = [], []
            for seed in range(seeds):
                est = DPLinearRegression(epsilon=eps, delta=min(1e-5, len(prob["y"]) ** -1.1),
                                         random_state=seed, **kw).fit(prob["X"], prob["y"])
                shares.append(r2_score(prob["yt"], est.predict(prob["Xt"])) / ceiling)
                ranges.append(est.target_range_)
            row[label] = float(np.mean(shares))
            row[f"{label} min"] = float(min(shares))
            if label == "released":
                row["range"] = f"[{ranges[0][0]:g}, {ranges[0][1]:g}]"
        row["declared range"] = f"[{prob['range'][0]:g}, {prob['range'][1]:g}]"
        row["change"] = row["released"] - row["declared"]
        out.append(row)
    return out


def _histogram(y: np.ndarray, per_octave: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Counts of the positive and negative targets in upper-closed bins of ``1/per_octave``
    octave on the release's exponent grid, and the number of zeros."""
    from noisygd.mechanisms.feature_range import EXPONENTS

    lo, hi = EXPONENTS[0] * per_octave, (EXPONENTS[1] + 1) * per_octave
    nonzero = y[y != 0]
    index = np.clip(np.ceil(np.log2(np.abs(nonzero)) * per_octave) - 1, lo, hi - 1)
    index = index.astype(np.int64) - lo
    return (np.bincount(index[nonzero > 0], minlength=hi - lo),
            np.bincount(index[nonzero < 0], minlength=hi - lo), int(np.sum(y == 0)))


def _occupied(noisy: tuple[np.ndarray, np.ndarray, float], per_octave: int, threshold: float,
              zero_bin: bool) -> list[tuple[float, float]]:
    """The intervals of the occupied bins (module doc, ``--rules``)."""
    from noisygd.mechanisms.feature_range import EXPONENTS

    pos, neg, zeros = noisy
    base = EXPONENTS[0] * per_octave

    def ends(i: int) -> tuple[float, float]:
        return 2.0 ** ((i + base) / per_octave), 2.0 ** ((i + 1 + base) / per_octave)

    out = [ends(int(i)) for i in np.flatnonzero(pos >= threshold)]
    out += [(-ends(int(i))[1], -ends(int(i))[0]) for i in np.flatnonzero(neg >= threshold)]
    if zero_bin and zeros >= threshold:
        out.append((0.0, 0.0))
    return out


def emulated_range(rule: str, y: np.ndarray, mu_share: float, rng: np.random.Generator
                   ) -> tuple[float, float] | None:
    """The range ``rule`` releases from ``y`` at Gaussian-DP ``mu_share`` (None: nothing
    resolved), module doc ``--rules``."""
    from scipy.stats import norm

    from noisygd.mechanisms.feature_range import FALSE_OCCUPANCY

    levels = {"anchored": (1,), "hull": (1,), "quarter hull": (4,),
              "eighth refine": (1, 8)}[rule]
    sigma = np.sqrt(len(levels)) / mu_share
    counts = [_histogram(y, s) for s in levels]
    bins = sum(2 * c[0].size + 1 for c in counts)
    threshold = float(norm.isf(FALSE_OCCUPANCY / bins)) * sigma
    noisy = [(c[0] + rng.normal(0, sigma, c[0].size), c[1] + rng.normal(0, sigma, c[1].size),
              c[2] + rng.normal(0, sigma)) for c in counts]
    coarse = _occupied(noisy[0], levels[0], threshold, rule != "anchored")
    if rule == "anchored":  # per sign the highest bin's upper end, 0 the other end
        high = max([b for a, b in coarse if a > 0], default=0.0)
        low = min([a for a, b in coarse if b < 0], default=0.0)
        return (low, high) if high > low else None
    if not coarse:
        return None
    low, high = min(a for a, _ in coarse), max(b for _, b in coarse)
    if rule == "eighth refine":
        fine = _occupied(noisy[1], levels[1], threshold, False)
        top = next((a, b) for a, b in coarse if b == high)
        bottom = next((a, b) for a, b in coarse if a == low)
        high = max([b for a, b in fine if a >= top[0] and b <= top[1]], default=high)
        low = min([a for a, b in fine if a >= bottom[0] and b <= bottom[1]], default=low)
    return (low, high) if high > low else None


def run_rules(item: tuple[str, dict[str, Any]], seeds: int) -> list[dict[str, Any]]:
    """Rows of one problem for ``--rules``: per epsilon, each rule's mean share."""
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score

    from noisygd.accounting.calibration import calibrate_mu
    from noisygd.accounting.gdp import gdp_epsilon
    from noisygd.estimators import DPLinearRegression
    from noisygd.mechanisms.target_range import TARGET_RANGE_SHARE

    name, prob = item
    ceiling = r2_score(prob["yt"], LinearRegression().fit(prob["X"], prob["y"]).predict(
        prob["Xt"]))
    delta = min(1e-5, len(prob["y"]) ** -1.1)
    out = []
    for eps in EPSILONS:
        mu = calibrate_mu(eps, delta)
        eps_fit = gdp_epsilon(np.sqrt(1.0 - TARGET_RANGE_SHARE) * mu, delta)
        row: dict[str, Any] = {"problem": name, "n": int(prob["X"].shape[0]), "epsilon": eps}
        for rule in (*RULES, "declared"):
            shares = []
            for seed in range(seeds):
                if rule == "declared":
                    bounds, e = prob["range"], eps
                else:
                    bounds = emulated_range(rule, prob["y"], np.sqrt(TARGET_RANGE_SHARE) * mu,
                                            np.random.default_rng([seed, 99])) or (-1.0, 1.0)
                    e = eps_fit
                est = DPLinearRegression(epsilon=e, delta=delta, random_state=seed,
                                         target_range=bounds).fit(prob["X"], prob["y"])
                shares.append(r2_score(prob["yt"], est.predict(prob["Xt"])) / ceiling)
            row[rule] = float(np.mean(shares))
        out.append(row)
    return out


def write_rules(rows: list[dict[str, Any]]) -> None:
    """``experiments/results/target_range_rules.{json,md}``."""
    summary = []
    for rule in (*RULES, "declared"):
        values = np.array([r[rule] for r in rows])
        gap = values - np.array([r["declared"] for r in rows])
        summary.append(f"| {rule} | {values.mean():.3f} | {gap.mean():+.3f} | "
                       f"{int(np.sum(values < 0))} | {int(np.sum(gap < -0.05))} | "
                       f"{values.min():.2f} |")
    lines = [
        "# The private target range: post-processing rules compared (emulated)",
        "",
        f"Module doc of `experiments/{NAME}.py` (`--rules`): share of the non-private R^2 of "
        "`DPLinearRegression`'s plain default on the experiment's problems, with each rule's "
        "range (emulated release) or the declared range; means over seeds.",
        "",
        "| rule | mean share | mean gap to declared | cells below 0 | cells below declared "
        "by > 0.05 | worst |",
        "|---|---|---|---|---|---|",
        *summary,
        "",
        "| problem | n | epsilon | " + " | ".join((*RULES, "declared")) + " |",
        "|---|---|---|" + "---|" * (len(RULES) + 1),
        *(f"| {r['problem']} | {r['n']} | {r['epsilon']:g} | "
          + " | ".join(f"{r[k]:.4f}" for k in (*RULES, "declared")) + " |" for r in rows),
        "",
        f"Command: `python experiments/{NAME}.py --rules --part k/2` for k = 0, 1, then "
        "`--rules --merge 2`.",
    ]
    write_experiment(RULES_NAME, rows, "\n".join(lines) + "\n")
    print("\n".join(lines[:9]))


def main(argv: list[str] | None = None) -> int:
    ap = experiment_parser(__doc__, seeds=2)
    add_part_arguments(ap)
    ap.add_argument("--rules", action="store_true",
                    help="compare the release's post-processing rules (module doc)")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    if args.rules:
        rows = rows_in_parts(RULES_NAME, lambda: items(args.data_dir), args.part, args.merge,
                             lambda item: run_rules(item, args.seeds))
        if rows is not None:
            write_rules(rows)
        return 0
    rows = rows_in_parts(NAME, lambda: items(args.data_dir), args.part, args.merge,
                         lambda item: run_item(item, args.seeds))
    if rows is None:
        return 0
    below = sum(r["released min"] < 0.0 for r in rows)
    lines = [
        "# The private target range: a regressor with nothing declared about its targets",
        "",
        "`DPLinearRegression`'s plain default (no `feature_bounds`) with the targets' range "
        "declared, with nothing declared (the private target range released) and with "
        "nothing declared and no release (`target_range_share=0`: targets clipped to "
        "[-1, 1]); share of the non-private R^2, means over seeds "
        f"0..{args.seeds - 1} (module doc of `experiments/{NAME}.py`). Released against "
        "declared: " + change_summary("all cells", [r["change"] for r in rows])
        + f"; released below the constant predictor in {below} of {len(rows)} cells "
        f"(the fallback in {sum(r['fallback min'] < 0.0 for r in rows)}).",
        "",
        "| problem | n | p | epsilon | declared range | released range (seed 0) | declared | "
        "released | fallback | released - declared |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(f"| {r['problem']} | {r['n']} | {r['p']} | {r['epsilon']:g} | "
          f"{r['declared range']} | {r['range']} | {r['declared']:.4f} | "
          f"{r['released']:.4f} | {r['fallback']:.4f} | {r['change']:+.4f} |" for r in rows),
        "",
        f"Command: `python experiments/{NAME}.py --part k/2` for k = 0, 1, then `--merge 2`.",
    ]
    write_experiment(NAME, rows, "\n".join(lines) + "\n")
    print("\n".join(lines[:3]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
