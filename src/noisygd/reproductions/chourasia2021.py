r"""Figures 1 and 2 of Chourasia, Ye and Shokri (NeurIPS 2021, seed 004) as CSV and PNG.

Figure 1: RDP :math:`\varepsilon` of noisy GD after ``K`` iterations, Corollary 1
(``langevin_last_iterate``) against the composition baseline
(``langevin_composition``), for :math:`\alpha \in \{10, 20, 30\}` at
:math:`\lambda = 1` and :math:`\lambda \in \{2, 4\}` at :math:`\alpha = 10`;
:math:`\beta = 4`, :math:`S_g = 4`, :math:`n = 5000`, :math:`\eta = 0.02`,
:math:`\sigma = 0.02`, ``K = 0..500``. Every value is the RDP the accountants
report for a :class:`~noisygd.accounting.langevin.LastIterateLangevin` event with
those parameters.

Figure 2: on the squared loss :math:`\frac12\lVert\theta - x\rVert^2` (Theorem 3's
construction, :math:`\theta_0 = 0`, :math:`\mathcal C = \mathbb R^d`), Corollary 2's
upper bound (the accountant), Theorem 3's lower bound, the composition baseline,
and the **exact** Rényi divergence of the two Gaussian laws of :math:`\theta_K`
computed from the mean/covariance recursion
(:func:`~noisygd.algorithms.langevin_gd.linear_gaussian_dynamics`), for
:math:`\alpha \in \{10, 20, 30\}`, ``K = 0..300``, same :math:`\sigma, \eta, n, S_g`.

Run: ``noisygd reproduce chourasia2021-figures [--out-dir DIR]`` (default
``experiments/results``). Writes ``chourasia2021_figure1.{csv,png}`` and
``chourasia2021_figure2.{csv,png}``.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from noisygd.accounting.langevin import (
    LangevinCompositionAccountant,
    LastIterateLangevin,
    LastIterateLangevinAccountant,
    theorem3_lower_bound,
)
from noisygd.algorithms.langevin_gd import gaussian_renyi_divergence, linear_gaussian_dynamics

__all__ = ["FIG1", "FIG2", "figure1_rows", "figure2_rows", "main"]

FIG1 = {"beta": 4.0, "sensitivity": 4.0, "n": 5000, "eta": 0.02, "sigma": 0.02, "k_max": 500,
        "curves": [(30, 1.0), (20, 1.0), (10, 1.0), (10, 2.0), (10, 4.0)]}
FIG2 = {"sensitivity": 4.0, "n": 5000, "eta": 0.02, "sigma": 0.02, "k_max": 300,
        "alphas": [10, 20, 30]}


def _fig1_event(lam: float, K: int) -> LastIterateLangevin:
    p = FIG1
    return LastIterateLangevin(
        strong_convexity=lam, smoothness=p["beta"], step_size=p["eta"], sigma=p["sigma"],
        steps=K, n_samples=p["n"], sensitivity=p["sensitivity"], theorem="corollary1",
        constraint="none", start="projected_gaussian",
        start_variance=2.0 * p["sigma"] ** 2 / lam, objective="Figure 1 of seed 004",
    )


def _fig2_event(K: int) -> LastIterateLangevin:
    p = FIG2
    return LastIterateLangevin(
        strong_convexity=1.0, smoothness=1.0, step_size=p["eta"], sigma=p["sigma"], steps=K,
        n_samples=p["n"], sensitivity=p["sensitivity"], theorem="corollary2",
        constraint="none", start="fixed", quadratic_constant_hessian=True,
        objective="0.5 ||theta - x||^2 (Theorem 3 / Corollary 2 of seed 004)",
    )


def figure1_rows() -> list[dict]:
    """One row per (curve, K): ``alpha, lam, K, ours, composition``."""
    ours, comp = LastIterateLangevinAccountant(), LangevinCompositionAccountant()
    rows = []
    for alpha, lam in FIG1["curves"]:
        for K in range(FIG1["k_max"] + 1):
            ev = _fig1_event(lam, K)
            rows.append({"alpha": alpha, "lam": lam, "K": K,
                         "ours": float(ours.rdp(ev, [alpha])[0]),
                         "composition": float(comp.rdp(ev, [alpha])[0])})
    return rows


def exact_divergences(alpha: float, k_max: int) -> np.ndarray:
    r"""Exact :math:`R_\alpha(\theta_K\|\theta'_K)`, ``K = 0..k_max``, for Theorem 3's datasets.

    ``D = (x_1, 0, ..., 0)``, ``D' = (x_1', 0, ..., 0)`` in one dimension with
    :math:`x_1 = S_g/2`, :math:`x_1' = -S_g/2`: the mean objective is
    :math:`\frac12\theta^2 - \bar x\theta`, :math:`\bar x = x_1/n`.
    """
    p = FIG2
    S, n = p["sensitivity"], p["n"]
    laws = [linear_gaussian_dynamics(np.eye(1), np.array([x / n]), step_size=p["eta"],
                                     sigma=p["sigma"], steps=k_max, mean0=np.zeros(1),
                                     cov0=np.zeros((1, 1)))
            for x in (S / 2.0, -S / 2.0)]
    out = np.zeros(k_max + 1)  # K = 0: both laws are the point mass at 0
    for K in range(1, k_max + 1):
        out[K] = gaussian_renyi_divergence(alpha, laws[0][0][K], laws[0][1][K],
                                           laws[1][0][K], laws[1][1][K])
    return out


def figure2_rows() -> list[dict]:
    """One row per (alpha, K): ``upper`` (Cor. 2), ``exact``, ``lower`` (Thm 3), ``composition``."""
    p = FIG2
    ours, comp = LastIterateLangevinAccountant(), LangevinCompositionAccountant()
    rows = []
    for alpha in p["alphas"]:
        exact = exact_divergences(alpha, p["k_max"])
        for K in range(p["k_max"] + 1):
            ev = _fig2_event(K)
            rows.append({
                "alpha": alpha, "K": K,
                "upper": float(ours.rdp(ev, [alpha])[0]),
                "exact": float(exact[K]),
                "lower": float(theorem3_lower_bound(alpha, p["sigma"], p["eta"], K, p["n"],
                                                    p["sensitivity"])),
                "composition": float(comp.rdp(ev, [alpha])[0]),
            })
    return rows


def _write_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()})


def _plot1(path: Path, rows: list[dict]) -> None:
    from matplotlib.figure import Figure  # no pyplot: no global backend state is touched

    fig = Figure(figsize=(6.4, 4.4))
    ax = fig.subplots()
    for i, (alpha, lam) in enumerate(FIG1["curves"]):
        sub = [r for r in rows if r["alpha"] == alpha and r["lam"] == lam]
        K = [r["K"] for r in sub]
        color = f"C{i}"
        ax.plot(K, [r["ours"] for r in sub], color=color, lw=2,
                label=rf"$\alpha={alpha}, \lambda={lam:g}$")
        ax.plot(K, [r["composition"] for r in sub], color=color, ls="--", lw=1)
    ax.set_ylim(0, 0.07)
    ax.set_xlabel("K")
    ax.set_ylabel(r"$\varepsilon$ in $(\alpha, \varepsilon)$-RDP")
    ax.set_title("Figure 1 (seed 004): Corollary 1 (solid) vs composition (dashed)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _plot2(path: Path, rows: list[dict]) -> None:
    from matplotlib.figure import Figure  # no pyplot: no global backend state is touched

    fig = Figure(figsize=(6.4, 4.4))
    ax = fig.subplots()
    for i, alpha in enumerate(FIG2["alphas"]):
        sub = [r for r in rows if r["alpha"] == alpha]
        K = [r["K"] for r in sub]
        c = f"C{i}"
        ax.plot(K, [r["upper"] for r in sub], color=c, lw=2, label=rf"$\alpha={alpha}$ Cor. 2")
        ax.plot(K, [r["exact"] for r in sub], color=c, lw=1, ls=":", label="exact")
        ax.plot(K, [r["lower"] for r in sub], color=c, lw=1, ls="--", label="Thm 3 lower")
        ax.plot(K, [r["composition"] for r in sub], color=c, lw=1, ls="-.", label="composition")
    ax.set_ylim(0, 0.03)
    ax.set_xlabel("K")
    ax.set_ylabel(r"$\varepsilon$ in $(\alpha, \varepsilon)$-RDP")
    ax.set_title("Figure 2 (seed 004): upper, exact, lower, composition")
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    """Write Figures 1 and 2 of seed 004 (CSV + PNG) to ``--out-dir``."""
    parser = argparse.ArgumentParser(prog="noisygd reproduce chourasia2021-figures",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", default="experiments/results", type=Path)
    parser.add_argument("--no-plot", action="store_true", help="write the CSV files only")
    args = parser.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    r1, r2 = figure1_rows(), figure2_rows()
    _write_csv(out / "chourasia2021_figure1.csv", r1)
    _write_csv(out / "chourasia2021_figure2.csv", r2)
    if not args.no_plot:
        _plot1(out / "chourasia2021_figure1.png", r1)
        _plot2(out / "chourasia2021_figure2.png", r2)
    bad = [r for r in r2 if not (r["lower"] <= r["exact"] * (1 + 1e-9) + 1e-15
                                 and r["exact"] <= r["upper"] * (1 + 1e-9) + 1e-15)]
    print(f"wrote Figures 1-2 of Chourasia et al. 2021 to {out}; "
          f"lower <= exact <= upper at {len(r2) - len(bad)}/{len(r2)} points")
    return 0 if not bad else 1
