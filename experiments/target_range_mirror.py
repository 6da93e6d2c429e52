"""The private target range's reading by sign: each sign alone, and the mirror test.

Before, the first histogram of the private target range (``noisygd.mechanisms.target_range``)
was read bin by bin for both signs, and in windows of adjacent bins only where no bin of
either sign was occupied. Targets about 0 at small ``n`` split their count between the two
signs, and near the threshold one sign alone passed: a one-signed range such as ``[1, 4]``,
which the refined rounds (intersected with it) kept, and every target of the other sign
clipped to its end (the session-28 sweep's "small-n one-sided first target range").

Now (``after``) each sign is read alone (its bins, else its narrowest occupied windows), and
where the occupied bins are of one sign and the zero bin is empty, the other sign's bins
mirroring them join the range when their noisy sum passes ``z_m sigma sqrt(w)`` (level
``MIRROR_LEVEL`` = 0.05) and holds at least ``MIRROR_SHARE`` = 0.25 of this sign's count there.

This script fits the default ``DPLinearRegression`` (nothing declared) before (the previous
``target_range_from_release``, kept here verbatim) and after, on generated families: targets
about 0 (``centred``: ``x.w + N(0, 0.8^2)``), mostly positive near 0 (``shifted``:
``0.3 + 0.1 x.w + N(0, 0.1^2)``), positive and skewed (``lognormal``), counts with zeros
(``poisson``) and proportions (``proportion``, in (0, 1)), n 300, 1000, 5000, epsilon 0.5, 1,
8, seeds 0-9; test R^2 (mean, min) and the fits whose range excludes 0 while the targets'
training mean is within one standard deviation of 0 (``one_signed``).

Run: ``python experiments/target_range_mirror.py --part 0/2`` and ``--part 1/2``, then
``--merge 2``; writes ``experiments/results/target_range_mirror.{json,md}``.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _experiment import add_part_arguments, experiment_parser, rows_in_parts, write_lines

NAME = "target_range_mirror"
FAMILIES = ("centred", "shifted", "lognormal", "poisson", "proportion")
SIZES = (300, 1000, 5000)
EPSILONS = (0.5, 1.0, 8.0)
SEEDS = range(10)
W = np.array([0.5, -0.3, 0.2, 0.1, 0.0])


def before_release(noisy: np.ndarray, sigma: float, failure: float | None = None) -> Any:
    """``target_range_from_release`` before this change (both signs' bins, then windows of
    both signs only where no bin passed; no mirror test)."""
    from noisygd.mechanisms import target_range as tr

    failure = tr.FALSE_OCCUPANCY if failure is None else failure
    K = tr._bins()
    counts = np.asarray(noisy, dtype=np.float64).reshape(-1)
    threshold = tr.target_occupancy_threshold(sigma, failure)
    signed = counts[1:].reshape(2, K)
    zero = [(0.0, 0.0)] if counts[0] >= threshold else []
    for width in range(1, tr.MAX_WINDOW + 1):
        if width == 1:
            passing = signed >= threshold
        else:
            sums = np.stack([np.convolve(row, np.ones(width), mode="valid") for row in signed])
            passing = sums >= tr.window_threshold(sigma, width, failure)
        ends = [tr._span(sign, int(j), int(j) + width - 1)
                for sign in (0, 1) for j in np.flatnonzero(passing[sign])]
        if ends:
            break
    ends += zero
    if not ends:
        return tr.PrivateTargetRange(0.0, 0.0, False, threshold, float(sigma), 0)
    low, high = min(a for a, _ in ends), max(b for _, b in ends)
    return tr.PrivateTargetRange(low, high, high > low, threshold, float(sigma),
                                 width if high > low else 0)


def problem(family: str, n: int, seed: int) -> tuple[np.ndarray, ...]:
    """``(X, y, Xt, yt)``: ``n`` training rows and 2000 test rows of ``family``."""
    rng = np.random.default_rng([seed, n, FAMILIES.index(family)])
    X = rng.normal(size=(n + 2000, 5))
    s = X @ W
    if family == "centred":
        y = s + rng.normal(0.0, 0.8, s.size)
    elif family == "shifted":
        y = 0.3 + 0.1 * s + rng.normal(0.0, 0.1, s.size)
    elif family == "lognormal":
        y = np.exp(1.0 + 0.5 * s + rng.normal(0.0, 0.5, s.size))
    elif family == "poisson":
        y = rng.poisson(np.exp(0.5 + 0.5 * s)).astype(float)
    else:
        y = 1.0 / (1.0 + np.exp(-(s + rng.normal(0.0, 0.5, s.size))))
    return X[:n], y[:n], X[n:], y[n:]


def items() -> list[tuple[str, int, float]]:
    return [(f, n, e) for f in FAMILIES for n in SIZES for e in EPSILONS]


def run(item: tuple[str, int, float]) -> dict[str, Any]:
    from sklearn.metrics import r2_score

    from noisygd.estimators import DPLinearRegression
    from noisygd.mechanisms import target_range as tr

    family, n, eps = item
    after = tr.target_range_from_release
    row: dict[str, Any] = {"family": family, "n": n, "epsilon": eps}
    try:
        for label, reader in (("before", before_release), ("after", after)):
            tr.target_range_from_release = reader
            r2, one_signed = [], 0
            for seed in SEEDS:
                X, y, Xt, yt = problem(family, n, seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = DPLinearRegression(epsilon=eps, random_state=seed).fit(X, y)
                r2.append(float(r2_score(yt, model.predict(Xt))))
                low, high = model.target_range_
                one_signed += bool(abs(y.mean()) < y.std() and (low > 0.0 or high < 0.0))
            row[f"{label}_mean"], row[f"{label}_min"] = float(np.mean(r2)), float(min(r2))
            row[f"{label}_one_signed"] = one_signed
    finally:
        tr.target_range_from_release = after
    return row


def main(argv: list[str] | None = None) -> int:
    ap = experiment_parser(__doc__, len(SEEDS))
    add_part_arguments(ap)
    args = ap.parse_args(argv)
    rows = rows_in_parts(NAME, items, args.part, args.merge, lambda item: [run(item)])
    if rows is None:
        return 0
    rows.sort(key=lambda r: (FAMILIES.index(r["family"]), r["n"], r["epsilon"]))
    lines = ["# The private target range read by sign, before and after the mirror test", "",
             "Test R^2 of the default DPLinearRegression (nothing declared), mean and min over "
             f"seeds 0-{len(SEEDS) - 1}; one-signed: fits whose range excludes 0 while the "
             "targets' mean is within one standard deviation of 0. Command: `python "
             "experiments/target_range_mirror.py --part k/2`, then `--merge 2`.", "",
             "| family | n | epsilon | before mean | before min | before one-signed | "
             "after mean | after min | after one-signed |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['family']} | {r['n']} | {r['epsilon']:g} | {r['before_mean']:.3f} | "
              f"{r['before_min']:.3f} | {r['before_one_signed']} | {r['after_mean']:.3f} | "
              f"{r['after_min']:.3f} | {r['after_one_signed']} |" for r in rows]
    write_lines(NAME, rows, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
