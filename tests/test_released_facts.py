"""DPLinearRegression's released facts: the planner's smoothness, comparator and ridge from
the private scales (``ReleasedFacts``; ``noisygd.estimators._regression``, "Released
smoothness and comparator")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from noisygd.estimators import (
    RESOLVED_SCALE_RATIO,
    DPLinearRegression,
    residual_scales_from_release,
)
from noisygd.oracles.array import ArrayOracle
from noisygd.planning import released_ridge_strength, ridge_strength
from noisygd.solvers.base import PublicFacts, ReleasedFacts


def _problem(n: int, p: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, p)) / math.sqrt(p)  # uncentred, rows well inside the unit ball
    w = rng.normal(0.0, 4.0, p)
    y = np.clip(0.8 + 0.1 * (X - X.mean(0)) @ w * math.sqrt(p) + rng.normal(0, 0.05, n), 0, 1)
    return X, y


@pytest.mark.parametrize(("h", "d0", "d", "v"), [(1e-3, 4.0, 101, 1e-6), (0.05, 0.5, 6, 1e-4),
                                                 (2.0, 30.0, 20, 1e-2)])
def test_released_ridge_minimises_its_stated_excess_risk(h, d0, d, v):
    # the closed form against a numerical minimiser of h (lam^2 D0^2/2 + d v)/(h + lam)^2,
    # with v = C^2 Delta^2 / (mu n)^2 (planning.released_ridge_strength's derivation)
    C, mu, n = 0.3, 0.7, 1000.0
    v = (C / (mu * n)) ** 2
    lam = released_ridge_strength(n=n, n_params=d, clip=C, mu=mu, comparator=d0,
                                  mean_curvature=h)

    def risk(log_lam: float) -> float:
        x = math.exp(log_lam)
        return h * (x * x * d0 * d0 / 2.0 + d * v) / (h + x) ** 2

    best = minimize_scalar(risk, bounds=(math.log(lam) - 20, math.log(lam) + 20),
                           method="bounded", options={"xatol": 1e-10})
    assert math.exp(best.x) == pytest.approx(lam, rel=1e-3)


def test_ridge_strength_uses_a_given_comparator():
    kw = {"n": 500.0, "n_params": 11, "clip": 0.2, "mu": 0.5, "loss_at_zero": 0.125}
    assert ridge_strength(**kw, comparator=2.0) == pytest.approx(
        math.sqrt(11) * 0.2 / (500.0 * 0.5 * 2.0))
    assert ridge_strength(**kw) == pytest.approx(
        math.sqrt(11) * 0.2 / (500.0 * 0.5 * math.sqrt(2 * 500.0 * 0.125)))


def test_the_upper_bound_of_the_rows_mean_square_covers_it():
    # the released sums (N, S1, S2, Su) with Gaussian noise: U_high >= U in at least
    # 1 - 2 Phi(-2) = 0.954 of draws; 2000 draws, false-failure rate of the 0.93 floor < 1e-4
    rng = np.random.default_rng(7)
    n, u, sigma = 400.0, 0.09, 12.0
    covered = 0
    for _ in range(2000):
        noisy = np.array([n, 10.0, 50.0, n * u]) + rng.normal(0.0, sigma, 4)
        scales = residual_scales_from_release(noisy, sigma)
        assert scales.row_scale_high >= scales.row_scale
        covered += scales.row_scale_high ** 2 >= u
    assert covered / 2000 >= 0.93


def test_released_smoothness_bounds_the_served_rows_curvature():
    X, y = _problem(20000, 30)
    est = DPLinearRegression(target_range=(0.0, 1.0), epsilon=2.0, random_state=0).fit(X, y)
    facts = est.fit_info_["released_facts"]
    cond = est.conditioning_
    centre = np.zeros(30) if cond["centre"] is None else np.asarray(cond["centre"])
    A = X - centre
    scale = cond.get("feature_scale")
    if scale is not None:
        A = A * np.asarray(scale)
    norms = np.linalg.norm(A, axis=1)
    R = float(cond["row_norm_bound"])
    A = A * np.minimum(1.0, R / np.maximum(norms, 1e-300))[:, None]  # rows served in the ball
    Xa = np.hstack([A, np.full((len(A), 1), float(cond["intercept_scale"]))])
    top = float(np.linalg.eigvalsh(Xa.T @ Xa / len(Xa))[-1])
    mean_sq = float(np.mean(np.sum(Xa * Xa, axis=1)))
    assert facts["smoothness"] >= mean_sq * 0.999 >= top  # the trace bound, upper confidence
    assert facts["smoothness"] < R * R + float(cond["intercept_scale"]) ** 2  # below declared
    assert facts["mean_curvature"] == pytest.approx(mean_sq / 31, rel=0.05)


def test_an_unresolved_release_gives_the_smoothness_alone():
    """A tiny table at a small epsilon: the residual scale's release does not resolve the
    rows' scale (U_high > 2 U), so the planner gets its smoothness, an upper confidence
    bound whatever the resolution, and the declared facts for the comparator and the
    ridge's balance; the smoothness is at most the declared bound's."""
    X, y = _problem(60, 5)
    est = DPLinearRegression(target_range=(0.0, 1.0), epsilon=0.2, random_state=0).fit(X, y)
    facts = est.fit_info_["released_facts"]
    assert facts["comparator_radius"] is None and facts["mean_curvature"] is None
    assert "unresolved" in facts["source"]
    _, bound, s = est._conditioning(X.shape[1])
    declared = est._make_objective().data_constants(math.hypot(bound, s))[1]
    assert 0.0 < facts["smoothness"] <= declared
    assert RESOLVED_SCALE_RATIO == 2.0


def test_released_facts_change_neither_the_event_nor_the_releases():
    X, y = _problem(5000, 20)
    est = DPLinearRegression(target_range=(0.0, 1.0), epsilon=1.0, random_state=3).fit(X, y)
    assert "released_facts" in est.fit_info_
    off = DPLinearRegression(target_range=(0.0, 1.0), epsilon=1.0, random_state=3)
    off._released_facts = lambda n_features: None  # the same fit with the declared facts
    off.fit(X, y)
    assert "released_facts" not in off.fit_info_
    assert est.privacy_.epsilon == off.privacy_.epsilon
    assert est.privacy_.event.describe() == off.privacy_.event.describe()
    assert est.target_scale_ == off.target_scale_ and est.row_scale_ == off.row_scale_


def test_public_facts_keep_the_declared_smoothness_when_the_released_one_is_larger():
    rng = np.random.default_rng(0)
    from noisygd.objectives.glm import SquaredLoss

    oracle = ArrayOracle(SquaredLoss(l2=0.0), rng.random((50, 3)) / 2, rng.random(50),
                         row_norm_bound=1.0)
    declared = oracle.constants().smoothness
    for value, expected in ((declared * 10, declared), (declared / 4, declared / 4)):
        facts = PublicFacts.from_oracle(oracle, n_samples=50, relation="add_remove",
                                        released=ReleasedFacts(smoothness=value))
        assert facts.constants.smoothness == pytest.approx(expected)
    with pytest.raises(ValueError):
        ReleasedFacts(comparator_radius=-1.0)
