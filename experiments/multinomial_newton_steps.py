"""How many steps private Newton needs on a multinomial fit, against its curvature floor
(docs/newton.md, "Multinomial fits": the rule ``floor_steps`` of ``method="auto"``).

``method="newton"`` with ``steps`` 10 (the default), 15, 20, 30 and 40
(``method_options``), everything else the default's, on ``bench_multiclass``'s ``large``
family (``n = 100 000``, ``p = 50``, ``K = 7``, where NoisyGD's compute budget binds) at
epsilon 1, 2 and 8, seeds 0 and 1: the training log loss (mean over the seeds) beside the
plan's ``hessian_noise_ratio`` ``r`` (the eigenvalue floor over the mean curvature per
direction), NoisyGD's 1000 steps and scikit-learn's lbfgs (standardised columns).

What it shows (``experiments/results/multinomial_newton_steps.md``): the steps Newton needs
grow with ``r``; at ``r`` near 1 about 20 (the rule's ``floor(10 (1 + r) / 1.03)`` gives
18), at ``r`` near 0.3 the default's 10 (the rule: 12), while at ``r`` above 1 even 40 steps
only match NoisyGD, which ``method="auto"`` runs there (the rule's premise).

Run: ``python experiments/multinomial_newton_steps.py``; writes
``experiments/results/multinomial_newton_steps.{json,md}``.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))
sys.path.insert(0, str(HERE))

from _common import markdown_table  # noqa: E402
from _experiment import write_lines  # noqa: E402
from bench_multiclass import family_problem, nonprivate_fit  # noqa: E402

STEPS = (10, 15, 20, 30, 40)
EPSILONS = (1.0, 2.0, 8.0)
SEEDS = (0, 1)


def main() -> int:
    from sklearn.metrics import log_loss

    from noisygd.estimators import DPLogisticRegression

    data = [family_problem("large", s) for s in SEEDS]
    K = int(max(int(np.max(d[1])) for d in data)) + 1
    lbfgs = float(np.mean([nonprivate_fit(*d)[2] for d in data]))
    rows: list[dict[str, Any]] = []
    for eps in EPSILONS:
        row: dict[str, Any] = {"epsilon": eps}
        for method, steps in [("newton", T) for T in STEPS] + [("noisy_gd", None)]:
            losses, seconds = [], []
            for seed, (X, y, _, _) in zip(SEEDS, data, strict=True):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t0 = time.perf_counter()
                    model = DPLogisticRegression(
                        epsilon=eps, method=method, classes=list(range(K)), random_state=seed,
                        method_options=None if steps is None else {"steps": steps}).fit(X, y)
                    seconds.append(time.perf_counter() - t0)
                losses.append(float(log_loss(y, model.predict_proba(X), labels=np.arange(K))))
                if method == "newton":
                    row["r"] = model.fit_info_["plans"][0]["plan"]["hessian_noise_ratio"]
            key = "noisy_gd" if steps is None else f"newton_{steps}"
            row[key] = float(np.mean(losses))
            row[f"{key}_s"] = float(np.median(seconds))
            print(eps, key, row[key], flush=True)
        row["lbfgs"] = lbfgs
        rows.append(row)
    columns = ["epsilon", "r", *[f"newton_{T}" for T in STEPS], "noisy_gd", "lbfgs",
               *[f"newton_{T}_s" for T in STEPS], "noisy_gd_s"]
    write_lines("multinomial_newton_steps", rows, [
        "# Private Newton's steps on a multinomial fit, against its curvature floor", "",
        "Training log loss (mean of seeds 0 and 1) of method='newton' with 10-40 steps and of "
        "NoisyGD's 1000, on bench_multiclass's large family (n 100 000, p 50, K 7); r: the "
        "plan's hessian_noise_ratio; lbfgs: scikit-learn, standardised columns; *_s: median "
        "whole-fit seconds, one thread (module doc).", "",
        markdown_table(rows, columns), "",
        "Command: `python experiments/multinomial_newton_steps.py`"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
