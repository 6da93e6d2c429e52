"""RRPSGD (Zhang et al. 2017, Algorithm 2; Theorems 4-5) on the nonconvex sigmoid loss."""

import math

import numpy as np
import pytest

from noisygd.accounting import best, get_accountant
from noisygd.accounting.base import UnsupportedEventError
from noisygd.accounting.output_perturbation import RRPSGDPaperArgument, rrpsgd_paper_epsilon
from noisygd.algorithms.rrpsgd import (
    round_distribution,
    rrpsgd,
    rrpsgd_noise_std,
    theorem5_bound,
)
from noisygd.exceptions import AssumptionError
from noisygd.objectives.nonconvex import SigmoidLoss
from noisygd.oracles import ArrayOracle


def _o(obj, X, y):
    return ArrayOracle(obj, X, y, row_norm_bound=1.0)


def _data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.where(X @ np.array([1.0, -1.0, 0.5]) + 0.2 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def test_sigmoid_constants_bound_numerical_derivatives():
    obj = SigmoidLoss(fit_intercept=False)
    z = np.linspace(-20, 20, 200001)
    r = obj.residual(z, np.ones_like(z))
    assert np.max(np.abs(r)) <= 0.25 + 1e-12
    second = np.gradient(r, z)
    assert np.max(np.abs(second)) <= 1 / (6 * math.sqrt(3)) + 1e-6
    assert obj.constants(1.0).convex is False


def test_round_distribution():
    p = round_distribution(np.full(5, 0.1), 1.0)
    np.testing.assert_allclose(p, 0.2)
    eta = np.array([0.1, 0.5, 1.0])
    w = 2 * eta - eta**2
    np.testing.assert_allclose(round_distribution(eta, 1.0), w / w.sum())
    with pytest.raises(AssumptionError):
        round_distribution(np.array([2.5]), 1.0)


def test_paper_argument_accountant_chain():
    # Theorem 4's chain with the exact per-step epsilon, computed by hand.
    from noisygd.accounting.gdp import gdp_epsilon

    n, delta, mu0 = 50, 1e-3, 0.2
    T = n * n
    eps0 = gdp_epsilon(mu0, delta / (2 * n))
    eps1 = 2 * eps0 / n
    want = math.sqrt(2 * T * math.log(2 / delta)) * eps1 + T * eps1 * math.expm1(eps1)
    assert rrpsgd_paper_epsilon(mu0, n, T, delta) == pytest.approx(want, rel=1e-12)
    with pytest.raises(UnsupportedEventError, match="Lemma 9"):
        get_accountant("zhang2017_thm4").epsilon(RRPSGDPaperArgument(5.0, n, T), delta)


def test_run_events_and_theorem5():
    X, y = _data()
    obj = SigmoidLoss()
    yy = obj.check_targets(y)
    sq = []
    for s in range(30):
        res = rrpsgd(_o(obj, X, y), epsilon=1.0, delta=1e-3, rng=np.random.default_rng(s))
        g = obj.gradient(res.theta, X, yy)
        sq.append(float(g @ g))
    info = res.info
    assert info["horizon"] == 3600 and 1 <= info["R"] <= 3600
    assert info["sigma_z"] == pytest.approx(rrpsgd_noise_std(0.25 * math.sqrt(2), 60, 1.0, 1e-3))
    # Measured E||grad F(w_R)||^2 is below Theorem 5's bound (printed with -s).
    bound = theorem5_bound(smoothness=obj.constants(1.0).smoothness + obj.l2,
                           d_f=info["D_F"], sigma=info["sigma"], step_size=info["step_size"],
                           horizon=info["horizon"])
    print(f"E||grad F||^2 = {np.mean(sq):.4g} vs Theorem 5 bound {bound:.4g}")
    assert bound == pytest.approx(info["theorem5_bound"])
    assert np.mean(sq) < bound
    # Both privacy descriptions: the tight one (sampled Gaussian composed R times)
    # and the paper's argument; the tight worst case (T steps) certifies the target.
    tight = best(info["worst_case_event"], 1e-3).epsilon
    paper = best(info["paper_event"], 1e-3, include_paper=True).epsilon
    assert tight < 1.0 < paper
    assert best(res.event, 1e-3).epsilon <= tight + 1e-9


def test_determinism_and_validation():
    X, y = _data()
    a = rrpsgd(_o(SigmoidLoss(), X, y), epsilon=1.0, delta=1e-3, rng=np.random.default_rng(4))
    b = rrpsgd(_o(SigmoidLoss(), X, y), epsilon=1.0, delta=1e-3, rng=np.random.default_rng(4))
    np.testing.assert_array_equal(a.theta, b.theta)
    with pytest.raises(ValueError, match="horizon"):
        rrpsgd(_o(SigmoidLoss(), X, y), epsilon=1.0, delta=1e-3, horizon=10**9,
               rng=np.random.default_rng(0))
    with pytest.raises(AssumptionError, match="loss_gap_bound"):
        rrpsgd(_o(SigmoidLoss(), X, y), epsilon=1.0, delta=1e-3, theta0=np.ones(4),
               rng=np.random.default_rng(0))
