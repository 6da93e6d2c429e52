"""Held-out judge of ``DPLinearRegression``'s defaults: synthetic data no default was chosen on.

The benchmark sets (``bench_utility.py``) are where the defaults are checked; this judge is where
a change of default is tried before it is adopted, on problems none of them was fitted to
(docs/estimators.md, "Least squares' own conditioning").

Problem: ``x = c + a * U[-1/(2 sqrt d), 1/(2 sqrt d)]^d`` inside the public box ``[0, 1/sqrt d]^d``
(centre ``c``), with feature spreads ``a_j = 1`` (isotropic: the rows fill their box) or
``a_j`` log-spaced from 0.1 to 1 (anisotropic: most features use a small part of their declared
range, as on diabetes); ``y = clip(loc + <w, x - c> + e, 0, 1)`` with signal and noise standard
deviations 0.15 (population R^2 about 0.5), ``w_j ~ N(0, 1)/a_j`` rescaled to that signal,
``loc`` 0.4 (targets near the range's midpoint) or 0.15 (off-centre); ``target_range=(0, 1)`` and
``feature_bounds`` = the box are declared, ``delta = min(1e-5, n^-1.1)``; a test set of 20000 rows
from the same law. Reports the share of the non-private OLS test R^2 (mean over seeds) and the
smallest private R^2.

Writes ``benchmarks/results/judge_regression.{json,md}``. Run:
``.venv/bin/python benchmarks/judge_regression.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, write_results

SIZES = ((500, 5), (500, 20), (2000, 20), (10000, 20))
LOCS = (0.4, 0.15)
EPSILONS = (1.0, 8.0)
TEST_ROWS = 20_000


def make_problem(n: int, d: int, loc: float, anisotropic: bool, seed: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple]:
    """``(X, y, X_test, y_test, box)`` of the module doc's law (seeded)."""
    rng = np.random.default_rng(seed)
    half = 0.5 / math.sqrt(d)
    centre = np.full(d, half)
    spread = np.geomspace(0.1, 1.0, d) if anisotropic else np.ones(d)
    X = centre + spread * rng.uniform(-half, half, size=(n, d))
    X_test = centre + spread * rng.uniform(-half, half, size=(TEST_ROWS, d))
    w = rng.normal(size=d) / spread
    w *= 0.15 / np.std((X_test - centre) @ w)
    y = np.clip(loc + (X - centre) @ w + 0.15 * rng.normal(size=n), 0.0, 1.0)
    y_test = np.clip(loc + (X_test - centre) @ w + 0.15 * rng.normal(size=TEST_ROWS), 0.0, 1.0)
    return X, y, X_test, y_test, (np.zeros(d), np.full(d, 2.0 * half))


def judge_cell(n: int, d: int, loc: float, anisotropic: bool, epsilon: float,
               seeds: range, options: dict[str, Any]) -> dict[str, Any]:
    """One cell: the default ``DPLinearRegression`` (plus ``options``) against OLS."""
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score

    from noisygd.estimators import DPLinearRegression

    private, ceiling = [], []
    for seed in seeds:
        X, y, Xt, yt, box = make_problem(n, d, loc, anisotropic, 100 + seed)
        ceiling.append(r2_score(yt, LinearRegression().fit(X, y).predict(Xt)))
        model = DPLinearRegression(epsilon=epsilon, delta=min(1e-5, n ** -1.1),
                                   target_range=(0.0, 1.0), feature_bounds=box,
                                   random_state=seed, **options).fit(X, y)
        private.append(r2_score(yt, model.predict(Xt)))
    return {"features": "anisotropic" if anisotropic else "isotropic", "loc": loc, "n": n,
            "d": d, "epsilon": epsilon, "ols_r2": float(np.mean(ceiling)),
            "r2": float(np.mean(private)), "share": float(np.mean(private) / np.mean(ceiling)),
            "min_r2": float(np.min(private))}


def main(argv: list[str] | None = None) -> int:
    """Run every cell and write the results (module doc)."""
    import json

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--options", type=json.loads, default={},
                    help='estimator keywords as JSON, e.g. \'{"intercept_scale": 0.5}\'')
    ap.add_argument("--results-dir", type=Path, default=None)
    ap.add_argument("--name", default="judge_regression")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    rows = [judge_cell(n, d, loc, aniso, eps, range(args.seeds), args.options)
            for aniso in (False, True) for loc in LOCS for n, d in SIZES for eps in EPSILONS]
    meta = {"title": "Held-out judge of DPLinearRegression's defaults (synthetic)",
            "description": (f"{args.seeds} seeds per cell; share = mean private test R^2 / mean "
                            f"OLS test R^2; estimator options {args.options or 'none'}; "
                            f"{time.perf_counter() - start:.0f} s."),
            "command": "python benchmarks/judge_regression.py"
                       + (f" --options '{json.dumps(args.options)}'" if args.options else ""),
            "environment": environment()}
    _, mpath = write_results(args.name, rows, meta, results_dir=args.results_dir)
    print(mpath.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
