"""Direct tests of :class:`noisygd.audit.bounds.EpsilonLowerBound` and
:class:`noisygd.audit.problems.LinearLoss`.

``EpsilonLowerBound``: the record is frozen and its ``to_dict`` is a JSON-ready round trip;
every field of a record returned by :func:`~noisygd.audit.bounds.empirical_epsilon` is
recomputed here from the two samples (the counts of the recorded test on the evaluation
split, their one-sided Clopper-Pearson upper bounds as ``scipy.stats.beta`` quantiles at level
``(1 - confidence) / (2 candidates)``, the DP test inequality or the Gaussian-DP trade-off
written out, and the exact Gaussian privacy profile of Balle and Wang 2018).

``LinearLoss``: :math:`\\phi(z, y) = 1 - yz` and :math:`\\phi'(z, y) = -y` as the docstring
states them, the per-example gradients :math:`-y\\tilde x` (clipped and unclipped) they
give, and the constants declared (:math:`L = \\tilde B`, :math:`\\beta = \\tilde B^2/4`).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest
from scipy import optimize, stats

from noisygd.audit.bounds import EpsilonLowerBound, empirical_epsilon
from noisygd.audit.problems import LinearLoss
from noisygd.objectives.glm import LogisticLoss


# ------------------------------------------------------------------ independent helpers
def cp_upper(k: int, m: int, alpha: float) -> float:
    """One-sided Clopper-Pearson upper bound Beta^-1(1 - alpha; k + 1, m - k), 1 at k = m."""
    return 1.0 if k == m else float(stats.beta.ppf(1 - alpha, k + 1, m - k))


def dp_inequality_epsilon(fpr: float, fnr: float, delta: float) -> float:
    """max{0, log((1 - delta - FNR)/FPR), log((1 - delta - FPR)/FNR)} (Kairouz et al. 2015)."""
    out = 0.0
    for a, b in ((fpr, fnr), (fnr, fpr)):
        if 1 - delta - b > 0:
            out = max(out, math.inf if a == 0 else math.log((1 - delta - b) / a))
    return out


def bw_delta(mu: float, eps: float) -> float:
    """Exact delta of mu-GDP at eps (Balle & Wang 2018, Theorem 8)."""
    return float(stats.norm.cdf(-eps / mu + mu / 2)
                 - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2))


def bw_epsilon(mu: float, delta: float) -> float:
    if mu <= 0 or bw_delta(mu, 0.0) <= delta:
        return 0.0
    return float(optimize.brentq(lambda e: bw_delta(mu, e) - delta, 0.0, 100.0, xtol=1e-14,
                                 rtol=1e-13))


def gaussian_samples(shift: float, runs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``runs`` draws of N(0, 1) (on D) and of N(shift, 1) (on D'): an exactly shift-GDP pair."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(runs), shift + rng.standard_normal(runs)


def recount(res: EpsilonLowerBound, s0: np.ndarray, s1: np.ndarray) -> tuple[int, int]:
    """False positives and negatives of the recorded test on the evaluation split."""
    e0 = res.orientation * s0[res.n_selection:]
    e1 = res.orientation * s1[res.n_selection:]
    return int(np.sum(e0 > res.threshold)), int(np.sum(e1 <= res.threshold))


# --------------------------------------------------------------------- EpsilonLowerBound
def _record() -> EpsilonLowerBound:
    return EpsilonLowerBound(
        epsilon=1.25, mu=None, bound="clopper_pearson", confidence=0.95, delta=1e-5,
        threshold=0.5, orientation=-1, false_positives=3, false_negatives=40, fpr_upper=0.02,
        fnr_upper=0.3, n_selection=500, n_evaluation=500, candidates=2)


def test_record_is_frozen_and_to_dict_is_a_json_round_trip() -> None:
    """to_dict holds every field by name; it survives JSON and rebuilds an equal record."""
    rec = _record()
    d = rec.to_dict()
    assert list(d) == [f.name for f in dataclasses.fields(EpsilonLowerBound)]
    assert all(d[k] == getattr(rec, k) for k in d)
    assert EpsilonLowerBound(**json.loads(json.dumps(d))) == rec
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.epsilon = 2.0  # type: ignore[misc]


def test_to_dict_is_a_copy() -> None:
    """Editing the dictionary leaves the record unchanged."""
    rec = _record()
    d = rec.to_dict()
    d["epsilon"] = -1.0
    assert rec.epsilon == 1.25


@pytest.mark.parametrize(("runs", "split", "confidence", "candidates", "delta"), [
    (400, 0.5, 0.95, 1, 1e-5),
    (301, 0.3, 0.99, 4, 0.0),
    (1000, 0.7, 0.9, 2, 1e-3),
])
def test_clopper_pearson_record_is_recomputable_from_the_samples(
        runs, split, confidence, candidates, delta) -> None:
    """Splits, counts, Beta-quantile rate bounds and the DP-inequality epsilon all agree
    with a recomputation from the samples and the recorded test."""
    s0, s1 = gaussian_samples(2.0, runs, seed=runs)
    res = empirical_epsilon(s0, s1, delta=delta, confidence=confidence, split=split,
                            candidates=candidates)
    assert res.bound == "clopper_pearson" and res.mu is None
    assert (res.confidence, res.delta, res.candidates) == (confidence, delta, candidates)
    assert res.n_selection == math.floor(split * runs)
    assert res.n_selection + res.n_evaluation == runs
    assert res.orientation in (1, -1)
    assert (res.false_positives, res.false_negatives) == recount(res, s0, s1)
    alpha = (1 - confidence) / (2 * candidates)  # union bound over two rates and k tests
    m = res.n_evaluation
    assert res.fpr_upper == pytest.approx(cp_upper(res.false_positives, m, alpha), rel=1e-12)
    assert res.fnr_upper == pytest.approx(cp_upper(res.false_negatives, m, alpha), rel=1e-12)
    assert res.epsilon == pytest.approx(
        dp_inequality_epsilon(res.fpr_upper, res.fnr_upper, delta), rel=1e-12, abs=1e-15)
    # the canary raises the statistic here: the test says "D'" above the threshold
    assert res.orientation == 1


def test_gdp_record_is_recomputable_and_below_the_true_gaussian_values() -> None:
    """bound="gdp": mu = Phi^-1(1 - FPR_ub) - Phi^-1(FNR_ub), epsilon its GDP epsilon rounded
    down; both below the pair's true mu = 1.5 and its epsilon."""
    # the bound holds with probability >= confidence = 0.999 over the runs: this seeded check
    # would fail for at most 0.1% of seeds
    mu_true, delta = 1.5, 1e-5
    s0, s1 = gaussian_samples(mu_true, 2000, seed=11)
    res = empirical_epsilon(s0, s1, delta=delta, confidence=0.999, bound="gdp")
    assert (res.false_positives, res.false_negatives) == recount(res, s0, s1)
    alpha = 0.001 / 2
    m = res.n_evaluation
    assert res.fpr_upper == pytest.approx(cp_upper(res.false_positives, m, alpha), rel=1e-12)
    assert res.fnr_upper == pytest.approx(cp_upper(res.false_negatives, m, alpha), rel=1e-12)
    mu = stats.norm.isf(res.fpr_upper) - stats.norm.ppf(res.fnr_upper)
    assert res.mu == pytest.approx(max(mu, 0.0), rel=1e-12)
    exact = bw_epsilon(res.mu, delta)
    assert res.epsilon <= exact
    assert res.epsilon == pytest.approx(exact, rel=1e-7)
    assert 0 < res.mu <= mu_true
    assert res.epsilon <= bw_epsilon(mu_true, delta)


def test_clopper_pearson_epsilon_is_a_lower_bound_with_evidence() -> None:
    """On an exactly 2-GDP pair the bound is positive and below the pair's true epsilon."""
    # holds with probability >= confidence = 0.999 over the runs (false failure <= 0.1% of
    # seeds); 2000 runs of a mu = 2 pair give evidence (epsilon > 0) for all but a negligible
    # fraction of seeds
    delta = 1e-5
    s0, s1 = gaussian_samples(2.0, 2000, seed=5)
    res = empirical_epsilon(s0, s1, delta=delta, confidence=0.999)
    assert 0 < res.epsilon <= bw_epsilon(2.0, delta)


def test_identical_samples_give_epsilon_zero() -> None:
    """The same law on D and D' (true epsilon 0): the lower bound is 0."""
    # a positive bound here is a false discovery, of probability <= 1 - confidence = 0.1%
    rng = np.random.default_rng(3)
    s0, s1 = rng.standard_normal(1000), rng.standard_normal(1000)
    for bound in ("clopper_pearson", "gdp"):
        res = empirical_epsilon(s0, s1, delta=1e-5, confidence=0.999, bound=bound)
        assert res.epsilon == 0.0
        assert res.fpr_upper + res.fnr_upper >= 1 - 1e-5  # the DP inequality is not violated


def test_record_is_non_increasing_in_confidence_with_the_same_test() -> None:
    """The test (threshold, orientation, counts) does not depend on the confidence; the rate
    bounds grow and epsilon shrinks as it rises."""
    s0, s1 = gaussian_samples(1.0, 600, seed=2)
    recs = [empirical_epsilon(s0, s1, delta=1e-5, confidence=c) for c in (0.8, 0.95, 0.999)]
    assert len({(r.threshold, r.orientation, r.false_positives, r.false_negatives)
                for r in recs}) == 1
    for a, b in itertools.pairwise(recs):
        assert b.fpr_upper >= a.fpr_upper and b.fnr_upper >= a.fnr_upper
        assert b.epsilon <= a.epsilon


def test_orientation_minus_one_when_the_canary_lowers_the_statistic() -> None:
    """A statistic lowered on D' is tested as -s > tau; the recount agrees with that test."""
    s0, s1 = gaussian_samples(-2.0, 400, seed=9)
    res = empirical_epsilon(s0, s1, delta=1e-5)
    assert res.orientation == -1
    assert (res.false_positives, res.false_negatives) == recount(res, s0, s1)


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    ({"bound": "wald"}, ValueError, "bound must be one of"),
    ({"delta": 1.0}, ValueError, r"delta must be in \[0, 1\)"),
    ({"confidence": 1.0}, ValueError, r"confidence must be in the open interval \(0, 1\)"),
    ({"split": 0.001}, ValueError, "need at least one run in each split"),
    ({"candidates": 0}, ValueError, "candidates"),
])
def test_bad_arguments_give_no_record(kwargs, exc, match) -> None:
    """Arguments outside their ranges are refused before any record is built."""
    s0, s1 = gaussian_samples(1.0, 20, seed=0)
    args = {"delta": 1e-5} | kwargs
    with pytest.raises(exc, match=match):
        empirical_epsilon(s0, s1, **args)


# ---------------------------------------------------------------------------- LinearLoss
def test_linear_loss_and_residual_are_the_documented_formulas() -> None:
    """phi(z, y) = 1 - y z and phi'(z, y) = -y, whatever z, for labels +-1."""
    rng = np.random.default_rng(0)
    z = rng.normal(scale=3.0, size=50)
    y = rng.choice([-1.0, 1.0], size=50)
    obj = LinearLoss()
    np.testing.assert_array_equal(obj.loss(z, y), 1.0 - y * z)
    r = obj.residual(z, y)
    assert r.dtype == np.float64 and r.shape == z.shape
    np.testing.assert_array_equal(r, -y)
    np.testing.assert_array_equal(obj.residual(100 * z, y), r)  # independent of the margin
    # int labels (e.g. int8 from check_targets) give float residuals
    np.testing.assert_array_equal(obj.residual(z, y.astype(np.int8)), -y)


def test_linear_residual_is_the_derivative_of_the_loss() -> None:
    """A central difference of phi (exact for a linear function, up to rounding) is phi'."""
    rng = np.random.default_rng(1)
    z = rng.normal(size=20)
    y = rng.choice([-1.0, 1.0], size=20)
    obj = LinearLoss()
    h = 1e-3
    fd = (obj.loss(z + h, y) - obj.loss(z - h, y)) / (2 * h)
    np.testing.assert_allclose(fd, obj.residual(z, y), rtol=0, atol=1e-10)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_linear_gradients_are_minus_y_times_the_augmented_row(fit_intercept) -> None:
    """The per-example gradient is -y x~ (x~ = [x, 1] with an intercept) at every theta;
    clipping to C rescales it to norm min(||x~||, C)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(6, 3))
    y = rng.choice([-1.0, 1.0], size=6)
    obj = LinearLoss(fit_intercept=fit_intercept)
    Xt = np.column_stack([X, np.ones(6)]) if fit_intercept else X
    per_row = -y[:, None] * Xt
    for theta in (np.zeros(obj.n_params(3)), rng.normal(size=obj.n_params(3))):
        np.testing.assert_allclose(obj.clipped_gradient_sum(theta, X, y, None),
                                   per_row.sum(axis=0), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(obj.per_example_loss(theta, X, y), 1.0 - y * (Xt @ theta),
                                   rtol=1e-13, atol=1e-13)
        norms = np.linalg.norm(Xt, axis=1)
        clip = float(np.median(norms))
        clipped = per_row * np.minimum(1.0, clip / norms)[:, None]
        np.testing.assert_allclose(obj.clipped_gradient_sum(theta, X, y, clip),
                                   clipped.sum(axis=0), rtol=1e-12, atol=1e-13)


def test_linear_value_and_gradient_with_ridge() -> None:
    """F = mean(1 - y x~.theta) + l2/2 ||theta||^2 and grad F = -mean(y x~) + l2 theta."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(5, 2))
    y = rng.choice([-1.0, 1.0], size=5)
    obj = LinearLoss(l2=0.3)
    theta = rng.normal(size=3)
    Xt = np.column_stack([X, np.ones(5)])
    assert obj.value(theta, X, y) == pytest.approx(
        np.mean(1 - y * (Xt @ theta)) + 0.15 * theta @ theta, rel=1e-13)
    np.testing.assert_allclose(obj.gradient(theta, X, y),
                               -(y[:, None] * Xt).mean(axis=0) + 0.3 * theta, rtol=1e-13)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("B", [0.5, 1.0, 3.0])
def test_linear_constants_and_lipschitz_constant_is_attained(fit_intercept, B) -> None:
    """L = B~ (sqrt(B^2 + 1) with an intercept, else B), beta = B~^2/4, mu = l2, convex; a row
    of norm B has a gradient of norm exactly L."""
    obj = LinearLoss(l2=0.25, fit_intercept=fit_intercept)
    bt = math.sqrt(B * B + 1) if fit_intercept else B
    c = obj.constants(B)
    assert c.lipschitz == pytest.approx(bt, rel=1e-15)
    assert c.smoothness == pytest.approx(bt * bt / 4, rel=1e-15)
    assert (c.strong_convexity, c.convex, c.row_norm_bound) == (0.25, True, B)
    X = np.array([[0.6 * B, 0.8 * B]])
    g = LinearLoss(fit_intercept=fit_intercept).gradient(
        np.zeros(obj.n_params(2)), X, np.array([-1.0]))
    assert float(np.linalg.norm(g)) == pytest.approx(bt, rel=1e-14)


def test_linear_margin_model_has_no_compiled_kernel() -> None:
    """compiled_residual is None (no compiled linear loss); |phi'| <= 1 is declared."""
    obj = LinearLoss(fit_intercept=False)
    assert obj.compiled_residual() is None
    mm = obj.margin_model()
    assert mm.compiled_residual is None
    assert mm.residual_bound == 1.0
    assert mm.intercept_scale is None
    assert LinearLoss().margin_model().intercept_scale == 1.0
    z = np.linspace(-50, 50, 11)
    for label in (-1.0, 1.0):
        assert np.all(np.abs(obj.residual(z, np.full_like(z, label))) <= mm.residual_bound)
    assert isinstance(obj, LogisticLoss)


def test_linear_loss_reads_logistic_labels() -> None:
    """Labels in {0, 1} map to {-1, +1}; any other value is refused."""
    obj = LinearLoss()
    np.testing.assert_array_equal(obj.check_targets(np.array([0, 1, 1, 0])), [-1, 1, 1, -1])
    with pytest.raises(ValueError, match=r"logistic labels must all be in \{-1, \+1\}"):
        obj.check_targets(np.array([0.5, 1.0]))


def test_linear_loss_at_zero_bound_is_the_loss_at_zero_on_every_dataset() -> None:
    """loss_at_zero_bound is the data-independent F(0) = 1 - y 0 = 1, attained on any data
    (an upper bound that is exact)."""
    obj = LinearLoss()
    assert obj.loss_at_zero_bound() == 1.0
    rng = np.random.default_rng(6)
    for n in (1, 2, 17):
        X = rng.normal(size=(n, 2))
        y = rng.choice([-1.0, 1.0], size=n)
        assert obj.value(np.zeros(3), X, y) == obj.loss_at_zero_bound()


def test_linear_optimum_norm_bound_is_the_radius_or_none() -> None:
    """theta* = mean(y x~)/l2 in closed form (the gradient -mean(y x) + l2 theta = 0); the
    logistic loss's sqrt(2 F0 / l2), which LinearLoss would inherit, is below its norm here
    (the data term 1 - yz is not non-negative), so without a projection ball no bound is
    stated (None, as the method's docstring says); with one, the radius."""
    l2 = 0.01
    obj = LinearLoss(l2=l2, fit_intercept=False)
    X, y = np.array([[1.0]]), np.array([1.0])
    theta_star = (y[:, None] * X).mean(axis=0) / l2
    np.testing.assert_allclose(obj.gradient(theta_star, X, y), 0.0, atol=1e-12)
    # the formula a non-negative data term would give is below this optimum's norm (100)
    assert math.sqrt(2 * obj.loss_at_zero_bound() / l2) < float(np.linalg.norm(theta_star))
    assert obj.optimum_norm_bound() is None
    assert LinearLoss(l2=l2, fit_intercept=False, radius=3.0).optimum_norm_bound() == 3.0
