"""The measurements behind docs/newton.md's choice of the eigenvalue rule and the ridge.

Five synthetic logistic problems (rows in the unit ball, labels from a logistic model) and two
seeds each: the excess training log loss over scikit-learn's (nearly unregularised, C = 1e4)
optimum of ``DPLogisticRegression(method="newton")`` under four settings, beside the default
NoisyGD fit. Prints one Markdown table (mean over the seeds). About two minutes on one core.

    python experiments/newton_rules.py
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from noisygd.estimators import DPLogisticRegression

#: (n, d, ||w||, feature shift, label offset, epsilon)
PROBLEMS = [(20000, 20, 16, 0.0, 0.0, 1.0), (20000, 20, 40, 0.0, 0.0, 1.0),
            (3000, 85, 4, 0.05, 2.0, 8.0), (50000, 50, 8, 0.1, 3.0, 1.0),
            (2000, 10, 4, 0.0, 0.0, 0.5)]
SETTINGS = {
    "add": ({"eigenvalue_rule": "add"}, None),
    "clip": ({"eigenvalue_rule": "clip"}, None),
    "add, l2 auto": ({"eigenvalue_rule": "add", "l2": "auto"}, 0.0),
    "clip, l2 auto": ({"eigenvalue_rule": "clip", "l2": "auto"}, 0.0),
}


def problem(n, d, wnorm, shift, offset, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(d) + shift
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w = rng.standard_normal(d)
    w *= wnorm / np.linalg.norm(w)
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ w - offset)))).astype(int)
    return X, y


def main() -> None:
    warnings.simplefilter("ignore")
    print("| n | d | ‖w‖ | eps | " + " | ".join(SETTINGS) + " | noisy_gd | curvature noise ratio |")
    print("|" + "---|" * (6 + len(SETTINGS)))
    for n, d, wnorm, shift, offset, eps in PROBLEMS:
        X, y = problem(n, d, wnorm, shift, offset)
        best = log_loss(y, LogisticRegression(C=1e4, max_iter=5000).fit(X, y)
                        .predict_proba(X)[:, 1])
        cells, ratio = [], None
        for options, l2 in SETTINGS.values():
            excess = []
            for seed in range(2):
                m = DPLogisticRegression(epsilon=eps, method="newton", l2=l2, classes=[0, 1],
                                         method_options=options, random_state=seed).fit(X, y)
                excess.append(log_loss(y, m.predict_proba(X)[:, 1]) - best)
                ratio = m.fit_info_["plans"][0]["plan"]["hessian_noise_ratio"]
            cells.append(f"{np.mean(excess):.4f}")
        gd = DPLogisticRegression(epsilon=eps, classes=[0, 1], random_state=0).fit(X, y)
        cells.append(f"{log_loss(y, gd.predict_proba(X)[:, 1]) - best:.4f}")
        print(f"| {n} | {d} | {wnorm} | {eps} | " + " | ".join(cells) + f" | {ratio:.3g} |")


if __name__ == "__main__":
    main()
