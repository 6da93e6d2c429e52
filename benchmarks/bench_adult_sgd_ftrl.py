"""Adult benchmark: NoisySGD (Poisson) and DP-FTRL (tree) at eps = 1, delta = 1e-5.

Same data, objective and excess-risk reference as ``bench_adult.py`` (NoisyGD), and the
same row format, so the rows can sit beside NoisyGD's in one table:
``benchmarks/results/adult_sgd_ftrl.{json,md}``.

* NoisySGD: Poisson sampling at rate 512/n, 10 epochs (T = ceil(10 n / 512)), noise
  multiplier calibrated with ``calibrate_noise_multiplier`` (best accountant, i.e. PLD) to
  eps = 1; expected-batch normalisation, momentum 0.9, learning rate 0.5, last iterate.
* DP-FTRL: batch 256, rows in file order, tree restarted every epoch, noise from the exact
  GDP mu of ``TreeAggregation`` (mu = 2 sqrt(sum m_u^2) / z = gdp_mu(1, 1e-5)); lambda = 30,
  Honaker estimator; 1 and 4 epochs, last iterate and average.

Hyper-parameters (learning rate, momentum, lambda) were chosen by a handful of runs on the
training data and are *not* privately selected: the eps reported covers one training run only.

Run: ``.venv/bin/python benchmarks/bench_adult_sgd_ftrl.py [--data-dir ...] [--seeds 5]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from _common import UTILITY_COLUMNS, data_dir, environment, write_results
from bench_adult import nonprivate_optimum

from noisygd.accounting import (
    Gaussian,
    PoissonSampled,
    SelfComposed,
    best,
    calibrate_noise_multiplier,
)
from noisygd.accounting.gdp import gdp_mu
from noisygd.accounting.tree import tree_event
from noisygd.algorithms.dp_ftrl import dp_ftrl
from noisygd.algorithms.noisy_sgd import noisy_sgd
from noisygd.objectives import LogisticLoss
from noisygd.oracles.array import ArrayOracle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--l2", type=float, default=1e-4)
    parser.add_argument("--name", default="adult_sgd_ftrl")
    args = parser.parse_args(argv)

    from noisygd.data.uci import load_uci

    root = data_dir(args.data_dir)
    if not (root / "adult").is_dir():
        print(f"Adult data not found under {root}: skipping", file=sys.stderr)
        return 0
    X, y01, Xt, yt01 = load_uci("adult", root)
    n, d = X.shape
    obj = LogisticLoss(l2=args.l2)
    y = obj.check_targets(y01)
    _, f_star = nonprivate_optimum(obj, X, y)
    eps, delta = args.epsilon, args.delta
    oracle = ArrayOracle(obj, X, y, row_norm_bound=1.0)

    def evaluate(theta: np.ndarray) -> tuple[float, float]:
        acc = float(np.mean((obj.margins(theta, Xt) > 0) == (yt01 == 1)))
        return acc, obj.value(theta, X, y) - f_star

    rows = []
    # ---- NoisySGD, Poisson
    q, epochs = 512 / n, 10
    T = int(np.ceil(epochs / q))
    t0 = time.perf_counter()
    z = calibrate_noise_multiplier(
        lambda z: SelfComposed(PoissonSampled(q, Gaussian(z)), T), eps, delta,
        lower=0.5, upper=50.0, rtol=1e-3)
    calib_s = time.perf_counter() - t0
    accs, exc, times = [], [], []
    res = None
    for seed in range(args.seeds):
        t0 = time.perf_counter()
        r = noisy_sgd(oracle, noise_multiplier=z, clip=1.0, learning_rate=0.5, n_samples=n,
                      sampling="poisson", sampling_rate=q, steps=T, normalize="expected_batch",
                      momentum=0.9, rng=np.random.default_rng(seed))
        times.append(time.perf_counter() - t0)
        a, e = evaluate(r.theta)
        accs.append(a)
        exc.append(e)
        res = best(r.event, delta)
    assert res is not None
    fit = float(np.median(times))
    rows.append({
        "method": "noisy_sgd (Poisson q=512/n, 10 epochs, momentum 0.9)",
        "epsilon": res.epsilon, "delta": delta,
        "accuracy_mean": float(np.mean(accs)), "accuracy_std": float(np.std(accs)),
        "excess_risk_mean": float(np.mean(exc)), "fit_seconds": fit,
        "seconds_per_epoch": fit / epochs, "accountant": res.accountant,
        "notes": f"z={z:.4f} (calibrated in {calib_s:.1f} s), T={T}, rdp eps="
                 f"{res.by_accountant.get('rdp', float('nan')):.4f}; {args.seeds} seeds",
    })
    # ---- DP-FTRL
    mu_target = gdp_mu(eps, delta)
    b, lam = 256, 30.0
    s = int(np.ceil(n / b))
    for E in (1, 4):
        ev = tree_event(1.0, s, E, restart_every_epoch=True)
        zt = ev.mu / mu_target * (1 + 1e-9)  # mu scales as 1/z
        for output in ("last", "average"):
            accs, exc, times = [], [], []
            for seed in range(args.seeds):
                t0 = time.perf_counter()
                r = dp_ftrl(oracle, noise_multiplier=zt, clip=1.0, l2_ftrl=lam,
                            batch_size=b, epochs=E, tree="honaker", output=output,
                            restart_every_epoch=True, rng=np.random.default_rng(seed))
                times.append(time.perf_counter() - t0)
                a, e = evaluate(r.theta)
                accs.append(a)
                exc.append(e)
                res = best(r.event, delta)
            fit = float(np.median(times))
            rows.append({
                "method": f"dp_ftrl (honaker, batch {b}, {E} epoch(s), {output})",
                "epsilon": res.epsilon, "delta": delta,
                "accuracy_mean": float(np.mean(accs)), "accuracy_std": float(np.std(accs)),
                "excess_risk_mean": float(np.mean(exc)), "fit_seconds": fit,
                "seconds_per_epoch": fit / E, "accountant": res.accountant,
                "notes": f"z={zt:.3f}, lambda={lam}, mu={r.event.mu:.4f}, T={r.n_iter}, "
                         f"restart every epoch; {args.seeds} seeds",
            })
    meta = {"title": "Adult: NoisySGD and DP-FTRL at eps = 1",
            "command": "python " + " ".join(["benchmarks/bench_adult_sgd_ftrl.py", *sys.argv[1:]]),
            "environment": environment(), "n_train": n, "n_features": d, "l2": args.l2,
            "reference_objective": f_star, "seeds": args.seeds,
            "hyperparameters_note": "chosen non-privately on the training data (see docstring)"}
    _, mpath = write_results(args.name, rows, meta, columns=UTILITY_COLUMNS,
                             extra_markdown=f"Reference optimum F* = {f_star:.6f}. "
                             "Hyper-parameters not privately selected.")
    print(mpath.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
