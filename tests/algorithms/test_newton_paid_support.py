"""The diagonal preconditioner's paid row support (``method="newton"``, ``hessian="diagonal"``
without a declared ``row_nonzeros``): the histogram against brute force, its sensitivity by
enumerating neighbours under both relations, the fit's event re-accounted independently from
the releases the run made (dp_accounting's PLD), the rule for ``m``, the default's choice on a
wide CSR problem, and same seed, same model."""

from __future__ import annotations

import itertools
import math

import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting.pld import pld_privacy_accountant

from noisygd.accounting import best
from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.events import Neighbouring
from noisygd.algorithms.newton import (
    diagonal_momentum,
    diagonal_steps,
    newton,
    paid_row_nonzeros,
    plan_newton,
    row_nonzero_edges,
)
from noisygd.estimators import DPLogisticRegression
from noisygd.objectives.glm import LogisticLoss
from noisygd.oracles.array import ArrayOracle

ADD, REPLACE = Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE


def _wide_csr(n=4000, d=1500, k=5, seed=0, scale=6.0):
    """Rows with exactly ``k`` positive entries in distinct columns, norm <= 1."""
    rng = np.random.default_rng(seed)
    cols = np.sort(rng.integers(0, d - k + 1, size=(n, k)), axis=1) + np.arange(k)
    vals = rng.random((n, k)) + 0.1
    vals *= (rng.uniform(0.5, 1.0, size=n) / np.linalg.norm(vals, axis=1))[:, None]
    X = sp.csr_array((vals.ravel(), cols.ravel(), np.arange(0, n * k + 1, k)), shape=(n, d))
    w = rng.standard_normal(d) * scale
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ w)))).astype(float)
    return X, y


# ----------------------------------------------------------------- the histogram itself
@pytest.mark.parametrize("storage", ["csr", "dense"])
@pytest.mark.parametrize("intercept", [True, False])
def test_histogram_matches_a_brute_force_count(storage, intercept):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 40)) * (rng.random((300, 40)) < 0.15)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    A = sp.csr_array(X) if storage == "csr" else X
    o = ArrayOracle(LogisticLoss(fit_intercept=intercept), A, (rng.random(300) < 0.5) * 1.0,
                    row_norm_bound=1.0, sparse="never" if storage == "dense" else "always")
    edges = np.array([1, 2, 3, 5, 8, 13])
    k = np.count_nonzero(X, axis=1) + int(intercept)
    expected = [np.sum(k <= 1)] + [np.sum((k > a) & (k <= b))
                                   for a, b in itertools.pairwise(edges)]
    expected.append(np.sum(k > 13))
    np.testing.assert_array_equal(o.row_nonzero_histogram(edges), expected)
    assert o.serves_row_nonzeros


def _histogram(rows, edges):
    X = np.array(rows, dtype=float).reshape(len(rows), 3)
    o = ArrayOracle(LogisticLoss(), X, np.ones(len(rows)), row_norm_bound=1.0,
                    sparse="never")
    return o.row_nonzero_histogram(edges)


CANDIDATES = [[0, 0, 0], [0.5, 0, 0], [0, 0.3, -0.4], [0.2, -0.2, 0.6], [0, 0, 0.9]]
BASE = [[0.1, 0, 0], [0, 0.5, 0.5], [0.3, -0.3, 0.3], [0, 0, 0]]


@pytest.mark.parametrize("relation", [ADD, REPLACE])
def test_histogram_sensitivity_by_enumerating_neighbours(relation):
    """One row moves one count: L2 change 1 (add/remove) or at most sqrt(2) (replace-one),
    the sensitivity the plan's event states for the release (curvature_sensitivity), and
    both are attained."""
    edges = np.array([1, 2, 3])
    base = _histogram(BASE, edges)
    worst = 0.0
    if relation is ADD:
        for c in CANDIDATES:
            worst = max(worst, float(np.linalg.norm(_histogram([*BASE, c], edges) - base)))
        for i in range(len(BASE)):
            rest = BASE[:i] + BASE[i + 1:]
            worst = max(worst, float(np.linalg.norm(_histogram(rest, edges) - base)))
        bound = 1.0
    else:
        for i in range(len(BASE)):
            for c in CANDIDATES:
                other = [*BASE[:i], c, *BASE[i + 1:]]
                worst = max(worst, float(np.linalg.norm(_histogram(other, edges) - base)))
        bound = math.sqrt(2.0)
    assert worst == pytest.approx(bound)
    plan = plan_newton(1.0, relation=relation, n_params=1001, n_samples=1e4, n_step=1e4,
                       clip=1.0, curvature_clip=0.5, hessian="diagonal")
    assert plan.event.events[0].sensitivity == pytest.approx(bound)


# ----------------------------------------------------------------- the rule for m
def test_paid_m_is_the_largest_support_without_noise_and_ignores_a_rare_tail():
    edges = np.asarray(row_nonzero_edges(200))
    assert edges[:32].tolist() == list(range(1, 33)) and edges[-1] == 200
    k = np.full(100_000, 7)
    counts = np.bincount(np.searchsorted(edges, k), minlength=edges.size + 1).astype(float)
    assert paid_row_nonzeros(counts, edges, 1e-9, 1e5) == 7
    # 50 rows (0.05% of n, below the 0.1% allowance) with 40 nonzeros do not raise m
    k[:50] = 40
    counts = np.bincount(np.searchsorted(edges, k), minlength=edges.size + 1).astype(float)
    assert paid_row_nonzeros(counts, edges, 1e-9, 1e5) == 7
    # noise (sd 30 rows) in every bin: m stays 7 (threshold 2 sd sqrt(bins above) + 100 rows;
    # fixed seed)
    rng = np.random.default_rng(0)
    noisy = counts + rng.normal(0.0, 30.0, counts.size)
    assert paid_row_nonzeros(noisy, edges, 30.0, 1e5) == 7
    assert diagonal_momentum(1) == 0.0 and diagonal_momentum(16) == pytest.approx(0.75)
    assert diagonal_steps(11) == 20 and diagonal_steps(1) == 10


# ----------------------------------------------------------------- the event
def _peer_epsilon(sigmas, delta):
    """dp_accounting's PLD epsilon of Gaussian releases of noise sd/sensitivity ``sigmas``."""
    acc = pld_privacy_accountant.PLDAccountant(
        dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
        value_discretization_interval=1e-4)
    for s in sigmas:
        acc.compose(dp_accounting.GaussianDpEvent(s))
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("relation", [ADD, REPLACE])
def test_the_run_releases_exactly_the_planned_budget(relation):
    """The releases the run made (the histogram, one curvature, and T gradients at the
    multiplier the run chose after the histogram), with sensitivities stated here from the
    lemmas, compose to the budget: GDP by hand, and dp_accounting's PLD epsilon."""
    eps, delta = 2.0, 1e-5
    mu = calibrate_mu(eps, delta)
    X, y = _wide_csr()
    o = ArrayOracle(LogisticLoss(l2=1e-4), X, y, row_norm_bound=1.0)
    c = o.constants()
    plan = plan_newton(mu, relation=relation, n_params=o.n_params, n_samples=o.n_rows,
                       n_step=o.n_rows, clip=c.lipschitz, curvature_clip=c.smoothness,
                       hessian="diagonal", steps=20, tail=10, tail_share=0.5,
                       hessian_max_share=0.1, adaptive_steps=True)
    res = newton(o, plan, np.random.default_rng(0))
    info = res.info["plan"]
    assert info["row_nonzeros"]["released"] == 6  # 5 entries and the intercept column
    T = res.n_iter
    assert T == info["steps"] == diagonal_steps(6) != plan.steps
    grad_sens = 1.0 if relation is ADD else 2.0
    curv_sens = 1.0 if relation is ADD else math.sqrt(2.0)
    z_g = info["gradient_noise_multipliers"]
    assert len(z_g) == T and len(set(z_g)) == 1
    sigmas = ([plan.nnz_noise / curv_sens, info["hessian_noise_multipliers"][0] / curv_sens]
              + [z / grad_sens for z in z_g])
    mu_run = math.sqrt(sum(1.0 / s ** 2 for s in sigmas))
    assert mu_run == pytest.approx(mu, rel=1e-12)
    assert _peer_epsilon(sigmas, delta) == pytest.approx(eps, rel=0.01)
    # the event the fit returns is the plan's, and is the budget
    assert res.event == plan.event and best(res.event, delta).epsilon <= eps * (1 + 1e-9)
    assert best(res.event, delta).epsilon == pytest.approx(eps, rel=1e-6)


def test_secure_mode_needs_a_declared_support():
    with pytest.raises(ValueError, match="row_nonzeros"):
        plan_newton(1.0, relation=ADD, n_params=1001, n_samples=1e4, n_step=1e4, clip=1.0,
                    curvature_clip=0.5, hessian="diagonal", secure=True)


# ----------------------------------------------------------------- the default fit
def test_default_on_wide_csr_chooses_the_diagonal_form_same_seed_same_model():
    X, y = _wide_csr(n=60_000, d=1500, k=5, seed=1)
    fits = [DPLogisticRegression(epsilon=8.0, classes=[0.0, 1.0], n_samples_public=60_000,
                                 random_state=7).fit(X, y) for _ in range(2)]
    a, b = fits
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.intercept_ == b.intercept_
    assert a.fit_info_["method"] == "newton"
    rule = a.fit_info_["method_choice"]["rule"]
    assert rule.startswith("Newton") and "diagonal preconditioner" in rule and "paid" in rule
    plan = a.fit_info_["plans"][0]["plan"]
    assert plan["hessian"] == "diagonal" and plan["row_nonzeros"]["released"] == 6
    other = DPLogisticRegression(epsilon=8.0, classes=[0.0, 1.0], n_samples_public=60_000,
                                 random_state=8).fit(X, y)
    assert not np.array_equal(other.coef_, a.coef_)
