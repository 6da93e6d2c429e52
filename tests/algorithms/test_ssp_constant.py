"""AdaSSP's ridge centred at the released constant predictor (``solve_released(...,
constant=...)``, ``released_constant``; docs/ssp.md)."""

from __future__ import annotations

import numpy as np
import pytest

from noisygd.algorithms.ssp import (
    SSPRelease,
    constant_column,
    plan_ssp,
    released_constant,
    solve_released,
)
from noisygd.estimators import DPLinearRegression
from noisygd.objectives.glm import SquaredLoss
from noisygd.oracles.array import ArrayOracle


def _exact_release(n: int = 400, s: float = 0.3, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = np.hstack([rng.uniform(-0.5, 0.5, (n, 3)), np.full((n, 1), s)])  # last column s
    y = 0.7 + X[:, :3] @ np.array([0.2, -0.1, 0.3]) + rng.normal(0, 0.01, n)
    A, b = X.T @ X, X.T @ y
    return X, y, SSPRelease(float(np.linalg.eigvalsh(A)[0]), A, b)


@pytest.mark.parametrize("n_public", [None, 400.0])
def test_the_released_constant_is_the_targets_mean_without_noise(n_public):
    _, y, release = _exact_release()
    plan = plan_ssp(1.0, 1e-5, relation="add_remove", n_params=4, row_bound=1.0,
                    target_bound=1.0, n_samples=n_public)
    assert released_constant(release, plan, (3, 0.3)) == pytest.approx(y.mean(), rel=1e-12)


def test_a_large_ridge_shrinks_to_the_constant_predictor_not_to_zero():
    X, y, release = _exact_release()
    plan = plan_ssp(1.0, 1e-5, relation="add_remove", n_params=4, row_bound=1.0,
                    target_bound=1.0, ridge=1e9, n_samples=400.0)
    centred, _ = solve_released(release, plan, (3, 0.3))
    at_zero, _ = solve_released(release, plan, None)
    assert np.allclose(X @ centred, y.mean(), atol=1e-5)  # the constant predictor
    assert np.allclose(X @ at_zero, 0.0, atol=1e-5)  # Wang's ridge as published: 0
    # without a ridge (mu so large that Wang's lambda is 0) the centring changes nothing:
    # the least-squares solution either way
    lam_free = plan_ssp(1e6, 1e-5, relation="add_remove", n_params=4, row_bound=1.0,
                        target_bound=1.0, n_samples=400.0)
    exact = np.linalg.solve(release.gram, release.moment)
    assert solve_released(release, lam_free, (3, 0.3))[1] == 0.0
    assert np.allclose(solve_released(release, lam_free, (3, 0.3))[0], exact, atol=1e-9)


def test_the_constant_column_is_read_from_the_objective():
    rng = np.random.default_rng(0)
    X, y = rng.random((20, 2)) / 2, rng.random(20)
    with_b = ArrayOracle(SquaredLoss(l2=0.0, fit_intercept=True), X, y, row_norm_bound=1.0)
    without = ArrayOracle(SquaredLoss(l2=0.0, fit_intercept=False), X, y, row_norm_bound=1.0)
    assert constant_column(with_b) == (2, 1.0)
    assert constant_column(without) is None


def test_ssp_on_off_centre_targets_predicts_near_their_mean():
    # targets in [0, 1] around 0.8: the ridge used to shrink the intercept to the range's
    # midpoint 0.5 (test R^2 about -6 on bench_conditioning's offcentre 2000 x 100)
    rng = np.random.default_rng(3)
    X = rng.random((2000, 50)) / np.sqrt(50)
    y = np.clip(0.8 + (X - X.mean(0)) @ rng.normal(0, 1, 50) + rng.normal(0, 0.05, 2000), 0, 1)
    est = DPLinearRegression(method="ssp", target_range=(0.0, 1.0), epsilon=1.0,
                             random_state=0).fit(X, y)
    assert abs(float(np.mean(est.predict(X))) - float(y.mean())) < 0.05
