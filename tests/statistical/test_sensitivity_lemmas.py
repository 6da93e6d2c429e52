"""Lemmas 2 and 3 of Zhang et al. 2017 (and the contraction bound) hold empirically.

200 random replace-one neighbouring pairs (S, S') of logistic-regression data (rows of
norm <= 1, the replaced row adversarially far: opposite label and direction); full-batch
GD from 0 with the lemma's step size; ||w_T - w_T'|| must never exceed the bound. This
is a deterministic check (no false failures): a single violation refutes the bound.
"""

import numpy as np
import pytest

from noisygd.algorithms.output_perturbation import (
    contraction_sensitivity,
    full_gradient_descent,
    lemma2_sensitivity,
    lemma3_sensitivity,
)
from noisygd.objectives.glm import HuberLoss, LogisticLoss
from noisygd.oracles import ArrayOracle


def _pair(rng, n, d):
    X = rng.standard_normal((n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    w = rng.standard_normal(d)
    y = np.where(X @ w > 0, 1.0, -1.0)
    X2, y2 = X.copy(), y.copy()
    X2[0] = -X[0] / max(np.linalg.norm(X[0]), 1e-12)
    y2[0] = -y[0]
    return X, y, X2, y2


@pytest.mark.parametrize("mu", [0.0, 0.05, 0.5])
@pytest.mark.parametrize("loss", ["logistic", "huber"])
def test_sensitivity_bounds_hold(mu, loss):
    rng = np.random.default_rng(int(100 * mu) + (0 if loss == "logistic" else 7))
    n, d, T = 20, 3, 40
    obj = LogisticLoss(l2=mu) if loss == "logistic" else HuberLoss(threshold=0.5, l2=mu)
    c = obj.constants(1.0)
    L, beta = c.lipschitz, c.smoothness + mu
    eta = 1.0 / (beta + mu) if mu > 0 else 1.0 / beta
    bound = lemma3_sensitivity(L, beta, mu, n, eta) if mu > 0 else lemma2_sensitivity(
        L, beta, n, T, eta)
    tight = contraction_sensitivity(L, beta, mu, n, T, eta)
    worst = 0.0
    for _ in range(200):
        X, y, X2, y2 = _pair(rng, n, d)
        if loss == "huber":
            y, y2 = 3 * y, 3 * y2  # residuals beyond the threshold: |phi'| = threshold
        w = full_gradient_descent(ArrayOracle(obj, X, y, row_norm_bound=1.0), steps=T,
                                  learning_rate=eta)
        w2 = full_gradient_descent(ArrayOracle(obj, X2, y2, row_norm_bound=1.0), steps=T,
                                   learning_rate=eta)
        worst = max(worst, float(np.linalg.norm(w - w2)))
    assert 0.0 < worst <= tight <= bound
