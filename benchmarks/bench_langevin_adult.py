"""Last-iterate (seed 004) vs composition accounting of projected noisy GD on Adult.

For L2-regularised logistic regression on (subsamples of) Adult, rows scaled to ||x|| <= 1, at a
target (eps, delta):

1. **Noise variance.** For Algorithm 1 of seed 004 with eta = 0.9 / beta and K steps, the sigma^2
   the last-iterate accountant (Corollary 1 + zCDP conversion) needs, against the sigma^2 the
   exact composition accountant (K Gaussian steps, exact GDP) needs, as a function of
   lambda * eta * K (the contraction exponent: the initial error shrinks as exp(-lambda eta K)).
2. **Excess risk.** Over a grid of n, mu (= lambda) and eps: the excess empirical risk
   F(theta) - F* (mean of `--reps` runs) of
   * `langevin`: Algorithm 1 planned by Theorem 4 (`noisygd.solvers.LangevinSolver`),
     last-iterate accountant;
   * `langevin+composition`: the same algorithm, eta and K with sigma calibrated by the
     composition accountant;
   * `noisy_gd`: the foundation's NoisyGD (`noisygd.solvers.NoisyGDSolver`, its own planner,
     replace-one neighbours, accounted by its tightest accountant).

Writes benchmarks/results/langevin_adult.json and .md. Runtime about 3-4 minutes on 2 cores.
Data: NOISYGD_DATA_DIR or ../shared/data/uci.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from noisygd.accounting import best
from noisygd.accounting.gdp import gdp_mu
from noisygd.algorithms.langevin_gd import langevin_facts, projected_noisy_gd
from noisygd.data.uci import load_uci, uci_data_dir
from noisygd.objectives.glm import LogisticLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.planning_langevin import rho_for_epsilon_delta
from noisygd.solvers import Budget, LangevinSolver, NoisyGDSolver, PublicFacts

HERE = Path(__file__).resolve().parent
DELTA = 1e-5


def sigma2_last_iterate(eps, delta, lam, eta, K, n, S):
    """Corollary 1: sigma^2 = S^2 (1 - exp(-lam eta K / 2)) / (lam n^2 rho(eps, delta))."""
    return S**2 * -math.expm1(-lam * eta * K / 2) / (lam * n**2 * rho_for_epsilon_delta(eps, delta))


def sigma2_composition(eps, delta, eta, K, n, S):
    """Exact GDP of K steps: mu = sqrt(K) S sqrt(eta / 2) / (sigma n) = gdp_mu(eps, delta)."""
    mu = gdp_mu(eps, delta)
    return K * S**2 * eta / (2 * n**2 * mu**2)


def variance_table(eps: float, lam: float, n: int, S: float, beta: float) -> list[dict]:
    eta = 0.9 / beta
    rows = []
    for x in (1, 2, 5, 10, 15, 20, 30):  # lambda eta K
        K = max(1, round(x / (lam * eta)))
        a = sigma2_last_iterate(eps, DELTA, lam, eta, K, n, S)
        b = sigma2_composition(eps, DELTA, eta, K, n, S)
        rows.append({"lambda_eta_K": x, "K": K, "sigma2_last_iterate": a,
                     "sigma2_composition": b, "ratio": b / a,
                     # noise-free projected GD contracts ||theta_K - theta*|| by at least
                     # (1 - eta lambda)^K for eta <= 1/beta (strongly convex, smooth)
                     "contraction": (1.0 - eta * lam) ** K})
    return rows


def f_star(obj, X, y) -> float:
    return obj.minimize(X, y)[1]


def _solve(solver, oracle, n, eps, max_iter, rng):
    """``solver.plan`` (public n, replace-one neighbours, target (eps, DELTA)), then ``run``."""
    facts = PublicFacts.from_oracle(oracle, n_samples=n, relation="replace_one",
                                    max_iter=max_iter)
    return solver.run(solver.plan(facts, Budget(eps, DELTA)), oracle, rng)


def run_grid(X_all, y_all, ns, mus, epss, reps, max_steps) -> list[dict]:
    rows = []
    for n in ns:
        idx = np.random.default_rng(0).permutation(X_all.shape[0])[:n]
        X = X_all[idx]
        y = LogisticLoss().check_targets(y_all[idx])  # {0, 1} -> {-1, +1}
        for mu in mus:
            obj = LogisticLoss(l2=mu)
            fs = f_star(obj, X, y)
            oracle = ArrayOracle(obj, X, y, row_norm_bound=1.0)
            facts = langevin_facts(oracle)
            for eps in epss:
                row = {"n": n, "mu": mu, "epsilon": eps}
                risks = {"langevin": [], "langevin+composition": [], "noisy_gd": []}
                for r in range(reps):
                    rng = np.random.default_rng(100 * r + 1)
                    res = _solve(LangevinSolver(), oracle, n, eps, max_steps, rng)
                    risks["langevin"].append(obj.value(res.theta, X, y) - fs)
                    p = res.info["plan"]
                    s2c = sigma2_composition(eps, DELTA, p["step_size"], p["steps"], n,
                                             facts["sensitivity"])
                    rc = projected_noisy_gd(oracle, sigma=math.sqrt(s2c),
                                            step_size=p["step_size"], steps=p["steps"],
                                            n_samples=n, rng=rng)
                    acc_c = best(rc.event, DELTA, include_paper=True)
                    assert acc_c.by_accountant["langevin_composition"] <= eps * (1 + 1e-6)
                    risks["langevin+composition"].append(obj.value(rc.theta, X, y) - fs)
                    rn = _solve(NoisyGDSolver(), oracle, n, eps, None, rng)
                    acc_n = best(rn.event, DELTA)
                    assert acc_n.epsilon <= eps * (1 + 1e-6)
                    risks["noisy_gd"].append(obj.value(rn.theta, X, y) - fs)
                row.update({
                    "steps": p["steps"], "step_size": p["step_size"],
                    "lambda_eta_K": mu * p["step_size"] * p["steps"],
                    "sigma2_last_iterate": p["sigma"] ** 2, "sigma2_composition": s2c,
                    "variance_ratio": s2c / p["sigma"] ** 2,
                    "noisy_gd_accountant": acc_n.accountant, "noisy_gd_steps": rn.n_iter,
                })
                for k, v in risks.items():
                    row[f"risk_{k}"] = float(np.mean(v))
                    row[f"se_{k}"] = (float(np.std(v, ddof=1) / math.sqrt(len(v)))
                                      if len(v) > 1 else float("nan"))
                row["winner"] = min(risks, key=lambda k: row[f"risk_{k}"])
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def markdown(var_rows, grid, meta) -> str:
    out = ["# Last-iterate (Chourasia et al. 2021) vs composition accounting on Adult", "",
           f"Logistic regression, rows ||x|| <= 1 (+ intercept), delta = {DELTA:g}. "
           f"Command: `{meta['command']}`; {meta['seconds']:.0f} s.", "",
           f"## Noise variance at eps = 1 (n = {meta['var_n']}, mu = {meta['var_mu']}, "
           "eta = 0.9/beta)", "",
           "| lambda eta K | K | (1 - eta lambda)^K | sigma^2 last-iterate | sigma^2 composition "
           "| ratio |",
           "|---|---|---|---|---|---|"]
    for r in var_rows:
        out.append(f"| {r['lambda_eta_K']} | {r['K']} | {r['contraction']:.1e} | "
                   f"{r['sigma2_last_iterate']:.3e} | {r['sigma2_composition']:.3e} | "
                   f"{r['ratio']:.2f} |")
    first3 = next((r for r in var_rows if r["ratio"] >= 3), None)
    if first3 is not None:
        later_ok = all(r["ratio"] >= 3 for r in var_rows if r["K"] >= first3["K"])
        out += ["", f"The last-iterate accountant needs at least 3x less noise variance than "
                f"composition (exact Gaussian DP, its tightest accountant) from lambda eta K = "
                f"{first3['lambda_eta_K']} (K = {first3['K']}) on, where noise-free GD has "
                f"contracted the distance to the optimum by {first3['contraction']:.1e}; the "
                f"ratio grows linearly in K beyond: "
                f"{'pass' if later_ok else 'FAIL'}. Below that K the ratio is smaller: "
                "composition charges K steps, the last-iterate bound saturates."]
    out += ["", "## Excess empirical risk (mean ± s.e. over reps)", "",
            "| n | mu | eps | K | lambda eta K | var. ratio | langevin | langevin+composition "
            "| noisy_gd | best |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in grid:
        out.append(
            f"| {r['n']} | {r['mu']:g} | {r['epsilon']:g} | {r['steps']} | "
            f"{r['lambda_eta_K']:.1f} | {r['variance_ratio']:.2f} | "
            f"{r['risk_langevin']:.2e} ± {r['se_langevin']:.0e} | "
            f"{r['risk_langevin+composition']:.2e} ± {r['se_langevin+composition']:.0e} | "
            f"{r['risk_noisy_gd']:.2e} ± {r['se_noisy_gd']:.0e} | {r['winner']} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ns", type=int, nargs="+", default=[2000, 10000])
    ap.add_argument("--mus", type=float, nargs="+", default=[0.01, 0.1])
    ap.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 4.0])
    ap.add_argument("--max-steps", type=int, default=1500)
    ap.add_argument("--out-dir", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    ddir = uci_data_dir()
    if not (ddir / "adult").exists():
        print(f"Adult data not found under {ddir}; set NOISYGD_DATA_DIR", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    X_all, y_all, _, _ = load_uci("adult", ddir, row_norm_bound=1.0)
    obj = LogisticLoss(l2=0.1)
    facts = langevin_facts(ArrayOracle(obj, X_all, obj.check_targets(y_all), row_norm_bound=1.0))
    var_rows = variance_table(1.0, 0.1, 10000, facts["sensitivity"],
                              facts["constants"].smoothness + 0.1)
    grid = run_grid(X_all, y_all, args.ns, args.mus, args.eps, args.reps, args.max_steps)
    meta = {"command": "python benchmarks/bench_langevin_adult.py " + " ".join(argv or []),
            "seconds": time.perf_counter() - t0, "var_n": 10000, "var_mu": 0.1,
            "delta": DELTA}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "langevin_adult.json").write_text(
        json.dumps({"meta": meta, "variance": var_rows, "grid": grid}, indent=2) + "\n")
    (args.out_dir / "langevin_adult.md").write_text(markdown(var_rows, grid, meta))
    print(markdown(var_rows, grid, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
