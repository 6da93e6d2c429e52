"""Algorithm 1 of Zhang et al. 2017: sensitivities, assumptions, events, determinism."""

import math

import numpy as np
import pytest

from noisygd.accounting import best, get_accountant
from noisygd.accounting.base import UnsupportedEventError
from noisygd.accounting.output_perturbation import OutputNoise, OutputPerturbation
from noisygd.algorithms.output_perturbation import (
    contraction_sensitivity,
    lemma2_sensitivity,
    lemma3_sensitivity,
    output_perturbation_gd,
    plan_output_perturbation,
)
from noisygd.exceptions import AssumptionError
from noisygd.objectives.glm import LogisticLoss
from noisygd.objectives.nonconvex import SigmoidLoss
from noisygd.oracles import ArrayOracle, clip_rows


def _o(obj, X, y, bound=1.0):
    return ArrayOracle(obj, X, y, row_norm_bound=bound)


def _data(n=200, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.where(X @ np.ones(d) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def test_lemma_closed_forms():
    assert lemma2_sensitivity(2.0, 4.0, 100, 10, 0.25) == pytest.approx(3 * 2 * 10 * 0.25 / 100)
    assert lemma3_sensitivity(2.0, 4.0, 0.5, 100, 1 / 4.5) == pytest.approx(
        5 * 2 * 4.5 / (100 * 0.5 * 4.0))
    # contraction: mu = 0 gives 2 L T eta / n; large T at eta = 1/(mu+beta) gives
    # at most 2L(mu+beta)/(n mu beta)
    assert contraction_sensitivity(2.0, 4.0, 0.0, 100, 10, 0.5) == pytest.approx(
        2 * 2 * 10 * 0.5 / 100)
    c = contraction_sensitivity(2.0, 4.0, 0.5, 100, 10**6, 1 / 4.5)
    assert c <= 2 * 2.0 * 4.5 / (100 * 0.5 * 4.0) * (1 + 1e-12)
    assert c < lemma3_sensitivity(2.0, 4.0, 0.5, 100, 1 / 4.5)


def test_step_size_conditions_are_enforced():
    with pytest.raises(AssumptionError, match="1/beta"):
        lemma2_sensitivity(1.0, 4.0, 10, 5, 0.3)
    with pytest.raises(AssumptionError, match="beta \\+ mu"):
        lemma3_sensitivity(1.0, 4.0, 1.0, 10, 0.21)
    with pytest.raises(AssumptionError, match="mu > 0"):
        lemma3_sensitivity(1.0, 4.0, 0.0, 10, 0.1)
    with pytest.raises(AssumptionError, match="2/\\(mu \\+ beta\\)"):
        contraction_sensitivity(1.0, 4.0, 1.0, 10, 5, 0.5)


def test_refuses_nonconvex_and_bad_rows():
    X, y = _data()
    with pytest.raises(AssumptionError, match="convex"):
        output_perturbation_gd(_o(SigmoidLoss(), X, y), epsilon=1.0, delta=1e-3, steps=5,
                               rng=np.random.default_rng(0))
    with pytest.raises(AssumptionError, match="learning_rate"):
        output_perturbation_gd(_o(LogisticLoss(l2=0.1), X, y), epsilon=1.0, delta=1e-3,
                               learning_rate=10.0, rng=np.random.default_rng(0))
    with pytest.raises(AssumptionError, match="D >="):
        output_perturbation_gd(_o(LogisticLoss(), X, y), epsilon=1.0, delta=1e-3,
                               rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_samples"):
        output_perturbation_gd(_o(LogisticLoss(l2=0.1), X, y), epsilon=1.0, delta=1e-3,
                               n_samples=10, rng=np.random.default_rng(0))


def test_rows_outside_the_bound_are_served_mapped_onto_it():
    """The oracle maps rows into ||x|| <= B (Lemmas 2-3 then hold): the run on 3X equals
    the run on clip_rows(3X, B), no check of the data (and no message about it) needed."""
    X, y = _data()
    obj = LogisticLoss(l2=0.1)
    kw = dict(epsilon=1.0, delta=1e-3, steps=40)
    a = output_perturbation_gd(_o(obj, 3 * X, y), rng=np.random.default_rng(0), **kw)
    b = output_perturbation_gd(_o(obj, clip_rows(3 * X, 1.0), y), rng=np.random.default_rng(0),
                               **kw)
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-10, atol=1e-12)
    assert a.event == b.event


def test_sparse_rows_take_the_same_path():
    import scipy.sparse as sp

    X, y = _data()
    X[np.abs(X) < 0.5] = 0.0  # mostly zeros
    obj = LogisticLoss(l2=0.1)
    kw = dict(epsilon=1.0, delta=1e-3, steps=30)
    dense = ArrayOracle(obj, X, y, row_norm_bound=1.0, sparse="never")
    auto = ArrayOracle(obj, sp.csr_array(X), y, row_norm_bound=1.0)
    assert auto.is_sparse and not dense.is_sparse
    a = output_perturbation_gd(dense, rng=np.random.default_rng(0), **kw)
    b = output_perturbation_gd(auto, rng=np.random.default_rng(0), **kw)
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-10, atol=1e-12)


def test_constants_used_are_data_term_plus_mu():
    obj = LogisticLoss(l2=0.2)
    c = obj.constants(1.0)
    plan = plan_output_perturbation(c, n=500, dim=5, epsilon=1.0, delta=1e-3)
    beta = c.smoothness + 0.2
    assert plan.learning_rate == pytest.approx(1.0 / (beta + 0.2))
    assert plan.sensitivity == pytest.approx(5 * c.lipschitz * (0.2 + beta) / (500 * 0.2 * beta))
    assert plan.event.noise is OutputNoise.GAUSSIAN_ANALYTIC


def test_events_and_accountants():
    X, y = _data()
    obj = LogisticLoss(l2=0.1)
    pure = output_perturbation_gd(_o(obj, X, y), epsilon=0.7, rng=np.random.default_rng(0))
    assert pure.event.noise is OutputNoise.L2_LAPLACE
    assert get_accountant("pure_dp").epsilon(pure.event, 1e-5) == pytest.approx(0.7)
    paper = output_perturbation_gd(_o(obj, X, y), epsilon=0.5, delta=1e-3, noise="paper",
                                   rng=np.random.default_rng(0))
    res = best(paper.event, 1e-3, include_paper=True, exhaustive=True)
    assert res.by_accountant["paper_thm"] == pytest.approx(0.5)
    assert res.by_accountant["gdp"] < 0.5  # the paper's noise is more than needed
    exact = output_perturbation_gd(_o(obj, X, y), epsilon=2.0, delta=1e-3,
                                   rng=np.random.default_rng(0))
    assert best(exact.event, 1e-3).by_accountant["gdp"] == pytest.approx(2.0, rel=1e-6)
    # paper_thm refuses eps >= 1 (Dwork-Roth Thm A.1 hypothesis) and smaller deltas.
    big = plan_output_perturbation(obj.constants(1.0), n=200, dim=5, epsilon=2.0, delta=1e-3,
                                   noise="paper").event
    with pytest.raises(UnsupportedEventError, match="epsilon < 1"):
        get_accountant("paper_thm").epsilon(big, 1e-3)
    with pytest.raises(UnsupportedEventError, match="delta"):
        get_accountant("paper_thm").epsilon(paper.event, 1e-4)


def test_event_validation():
    with pytest.raises(ValueError, match="replace-one"):
        OutputPerturbation(OutputNoise.GAUSSIAN_ANALYTIC, 1.0, 1.0, 1.0, 1e-3,
                           relation="add_remove")
    with pytest.raises(ValueError, match="pure"):
        OutputPerturbation(OutputNoise.L2_LAPLACE, 1.0, 1.0, 1.0, 1e-3)


def test_deterministic_and_converges_without_noise_budget():
    X, y = _data()
    obj = LogisticLoss(l2=0.1)
    a = output_perturbation_gd(_o(obj, X, y), epsilon=1.0, delta=1e-3, rng=np.random.default_rng(3))
    b = output_perturbation_gd(_o(obj, X, y), epsilon=1.0, delta=1e-3, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(a.theta, b.theta)
    # Huge epsilon: the noise vanishes and w_T is the GD iterate near the optimum.
    c = output_perturbation_gd(_o(obj, X, y), epsilon=1e6, delta=1e-3, steps=300,
                               rng=np.random.default_rng(3))
    g = obj.gradient(c.theta, X, obj.check_targets(y))
    np.testing.assert_allclose(_o(obj, X, y).gradient(c.theta), g, rtol=1e-10, atol=1e-13)
    assert np.linalg.norm(g) < 1e-3
    assert math.isfinite(c.info["expected_sq_noise_norm"])
