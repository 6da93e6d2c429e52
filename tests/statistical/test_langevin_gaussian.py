"""Slow: the law of theta_K produced by the code is the closed-form Gaussian (seed 004, Thm 3).

On the squared loss 0.5 ||theta - x||^2 over R^d, Algorithm 1 is a linear Gaussian recursion, so
theta_K ~ N(m_K, v_K I) with m_K, v_K from `linear_gaussian_dynamics`. Here the *implementation*
(`projected_noisy_gd`) is run many times and its empirical mean and variance are tested against
that law; hence the exact Rényi divergence computed from (m_K, v_K) is the divergence of the code
that runs. Both starts are tested: fixed theta_0 = 0 (Theorem 3 / Corollary 2) and the Gaussian
start N(0, 2 sigma^2 / lambda I) (Corollary 1).

False-failure rate: every check is two-sided at level 1e-6 (z-tests on means, chi-square on
variances); with 2 starts x (d means + 1 pooled variance) = 12 checks the total is < 2e-5.
Seeds are fixed, so the test is deterministic.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from noisygd.algorithms.langevin_gd import linear_gaussian_dynamics, projected_noisy_gd
from noisygd.objectives import SquaredDistanceLoss
from noisygd.oracles import ArrayOracle

pytestmark = pytest.mark.slow

LEVEL = 1e-6


@pytest.mark.parametrize("start", ["fixed", "gaussian"])
def test_theta_k_law_matches_closed_form(start):
    rng = np.random.default_rng(2021)
    n, d, K, eta, sigma, runs = 10, 5, 30, 0.2, 0.3, 4000
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.zeros(n)
    obj = SquaredDistanceLoss()
    theta0 = np.zeros(d) if start == "fixed" else None
    oracle = ArrayOracle(obj, X, y, row_norm_bound=1.0)
    samples = np.array([
        projected_noisy_gd(oracle, sigma=sigma, step_size=eta, steps=K, n_samples=n,
                           theta0=theta0,
                           rng=np.random.default_rng(10_000 + r)).theta
        for r in range(runs)
    ])
    v0 = 0.0 if start == "fixed" else 2 * sigma**2 / 1.0
    means, covs = linear_gaussian_dynamics(np.eye(d), X.mean(axis=0), step_size=eta,
                                           sigma=sigma, steps=K, mean0=np.zeros(d),
                                           cov0=v0 * np.eye(d))
    m, C = means[K], covs[K]
    np.testing.assert_allclose(C, C[0, 0] * np.eye(d), atol=1e-15)  # isotropic
    v = C[0, 0]
    z_crit = stats.norm.isf(LEVEL / 2)
    z = (samples.mean(axis=0) - m) / np.sqrt(v / runs)
    assert np.all(np.abs(z) < z_crit), z
    # Pooled variance across coordinates (independent, equal variance): chi-square with
    # d (runs - 1) degrees of freedom.
    dof = d * (runs - 1)
    stat = np.sum((samples - samples.mean(axis=0)) ** 2) / v
    assert stats.chi2.ppf(LEVEL / 2, dof) < stat < stats.chi2.isf(LEVEL / 2, dof)
