"""The diagonal preconditioner (``method="newton"`` above 1000 parameters) against NoisyGD's
default on synthetic sparse problems: the measurement behind its rule (docs/newton.md, "Many
features").

Problems (fixed seeds, 80/20 split): one-hot rows (``fields`` one-hot fields of ``levels``
Zipf-distributed levels, entries ``1/sqrt(fields)``, a 15% base rate) and random sparse rows
(``k`` positive entries in distinct columns, norms uniform in [0.5, 1], as
``benchmarks/_scale_problems.py``'s CSR problem). For each problem, epsilon 1 and 8 and seeds
0 and 1: ``DPLogisticRegression`` with ``method="auto"`` (the default), ``"noisy_gd"`` and
``"newton"`` (the diagonal form, its row support paid for), ``classes`` and ``n`` public;
test ROC AUC and training log loss (means over the seeds), the method the default ran, its
steps and, for the diagonal form, the released ``m``; scikit-learn's non-private lbfgs beside.

Run: ``python experiments/diagonal_preconditioner.py``; writes
``experiments/results/diagonal_preconditioner.{json,md}``.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
METHODS = ("auto", "noisy_gd", "newton")
EPSILONS = (1.0, 8.0)
SEEDS = (0, 1)


def onehot(n: int, fields: int, levels: int, seed: int,
           base: float = 0.15) -> tuple[sp.csr_array, np.ndarray]:
    """One-hot rows with Zipf level frequencies and a logistic model on them."""
    rng = np.random.default_rng(seed)
    pr = 1.0 / np.arange(1, levels + 1)
    pr /= pr.sum()
    cols = np.column_stack([rng.choice(levels, size=n, p=pr) + levels * k
                            for k in range(fields)])
    X = sp.csr_array((np.full(n * fields, 1 / np.sqrt(fields)), cols.ravel(),
                      np.arange(0, n * fields + 1, fields)), shape=(n, fields * levels))
    w = rng.standard_normal(fields * levels) * 1.5
    z = X @ w + np.log(base / (1 - base))
    return X, (rng.random(n) < 1 / (1 + np.exp(-z))).astype(float)


def random_sparse(n: int, d: int, k: int, seed: int) -> tuple[sp.csr_array, np.ndarray]:
    """``k`` positive entries per row in distinct columns, norms in [0.5, 1]."""
    rng = np.random.default_rng(seed)
    cols = np.sort(rng.integers(0, d - k + 1, size=(n, k)), axis=1) + np.arange(k)
    vals = rng.random((n, k)) + 0.1
    vals *= (rng.uniform(0.5, 1.0, size=n) / np.linalg.norm(vals, axis=1))[:, None]
    X = sp.csr_array((vals.ravel(), cols.ravel(), np.arange(0, n * k + 1, k)), shape=(n, d))
    w = rng.standard_normal(d)
    w *= 4 * np.sqrt(d / k) / np.linalg.norm(w)
    return X, (rng.random(n) < 1 / (1 + np.exp(-(X @ w)))).astype(float)


PROBLEMS = {
    "onehot-50000 (20 fields x 100)": lambda: onehot(50_000, 20, 100, 0),
    "onehot-200000 (5 fields x 300)": lambda: onehot(200_000, 5, 300, 0),
    "sparse-200000 (5 of 5000)": lambda: random_sparse(200_000, 5000, 5, 0),
    "sparse-300000 (30 of 3000)": lambda: random_sparse(300_000, 3000, 30, 0),
}


def main() -> int:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss, roc_auc_score

    from noisygd.estimators import DPLogisticRegression

    warnings.simplefilter("ignore")
    rows = []
    for name, make in PROBLEMS.items():
        X, y = make()
        ntr = int(0.8 * X.shape[0])
        Xtr, ytr, Xte, yte = X[:ntr], y[:ntr], X[ntr:], y[ntr:]
        sk = LogisticRegression(max_iter=1000).fit(Xtr, ytr)
        rows.append({"problem": name, "epsilon": None, "method": "sklearn", "ran": "lbfgs",
                     "auc": roc_auc_score(yte, sk.predict_proba(Xte)[:, 1]),
                     "train_log_loss": log_loss(ytr, sk.predict_proba(Xtr)[:, 1])})
        for eps in EPSILONS:
            for method in METHODS:
                res = []
                for seed in SEEDS:
                    t0 = time.perf_counter()
                    est = DPLogisticRegression(epsilon=eps, classes=[0.0, 1.0],
                                               n_samples_public=ntr, random_state=seed,
                                               method=method).fit(Xtr, ytr)
                    res.append((roc_auc_score(yte, est.predict_proba(Xte)[:, 1]),
                                log_loss(ytr, est.predict_proba(Xtr)[:, 1]),
                                time.perf_counter() - t0, est))
                est = res[-1][3]
                plan = est.fit_info_["plans"][0]["plan"]
                paid = plan.get("row_nonzeros") if isinstance(plan, dict) else None
                rows.append({
                    "problem": name, "epsilon": eps, "method": method,
                    "ran": est.fit_info_["method"], "steps": int(np.sum(est.n_iter_)),
                    "m": paid.get("released") if isinstance(paid, dict) else None,
                    "auc": float(np.mean([r[0] for r in res])),
                    "train_log_loss": float(np.mean([r[1] for r in res])),
                    "fit_seconds": float(np.mean([r[2] for r in res]))})
                print(json.dumps(rows[-1]), flush=True)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "diagonal_preconditioner.json").write_text(json.dumps({"rows": rows}, indent=2))
    lines = ["# The diagonal preconditioner against NoisyGD (issue 19)", "",
             "Test ROC AUC and training log loss, means of seeds 0 and 1 "
             "(module doc of `experiments/diagonal_preconditioner.py`); `ran` is the method "
             "that ran (`auto`: the default's choice), `m` the diagonal form's paid row "
             "support.", "",
             "| problem | epsilon | method | ran | steps | m | AUC | train log loss | fit s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        eps = "" if r["epsilon"] is None else f"{r['epsilon']:g}"
        lines.append(f"| {r['problem']} | {eps} | {r['method']} | {r['ran']} | "
                     f"{r.get('steps', '')} | {r.get('m') or ''} | {r['auc']:.4f} | "
                     f"{r['train_log_loss']:.4f} | "
                     f"{'' if 'fit_seconds' not in r else format(r['fit_seconds'], '.2f')} |")
    lines += ["", "Command: `python experiments/diagonal_preconditioner.py`", ""]
    (out / "diagonal_preconditioner.md").write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
