"""The private conditioning refined in rounds (``noisygd.estimators._conditioning``:
``distance_histogram``, ``radius_from_release``, ``refined_conditioning``; docs/estimators.md,
"Rows far from the origin: the refined centre"): the post-processing against its docstring's
formulas written out here, the histogram's counts and sensitivity by brute force, the
centre's variance by simulation, and the estimators' fits on rows far from the origin."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from noisygd.estimators import conditioning_from_release
from noisygd.estimators._common import CONDITIONING_ROUNDS, CONDITIONING_SHARE
from noisygd.estimators._conditioning import (
    ConditioningRound,
    distance_histogram,
    radius_from_release,
    refined_conditioning,
)
from noisygd.mechanisms.feature_range import EXPONENTS
from noisygd.mechanisms.target_range import target_histogram_size


def _bin(distance: float) -> int:
    """The positive bin of ``distance`` > 0: k with 2^k < d <= 2^(k+1), written out."""
    k = math.ceil(math.log2(distance)) - 1
    return 1 + k - EXPONENTS[0]


def test_distance_histogram_counts_each_row_once_in_its_bin():
    """Rows at distances 0, 0.3, 0.5 (an exact power of two: bin (0.25, 0.5]), 3 and 3 from
    the centre (1, 1), with a feature scale: one count per row, in the bin of its distance."""
    centre = np.array([2.0, 4.0])  # in the coordinates of f * x, f = (2, 4)
    f = np.array([2.0, 4.0])
    offsets = np.array([[0.0, 0.0], [0.3, 0.0], [0.0, 0.5], [3.0, 0.0], [0.0, -3.0]])
    X = (centre + offsets) / f
    counts = distance_histogram(X, centre, f)
    assert counts.shape == (target_histogram_size(),)
    expected = np.zeros(target_histogram_size())
    expected[0] += 1
    for d in (0.3, 0.5, 3.0, 3.0):
        expected[_bin(d)] += 1
    assert np.array_equal(counts, expected)


def test_distance_histogram_is_the_same_on_csr_rows():
    rng = np.random.default_rng(0)
    X = sp.random(300, 40, density=0.1, random_state=1, format="csr")
    centre, f = rng.random(40) * 0.1, rng.uniform(0.5, 2.0, 40)
    assert np.array_equal(distance_histogram(X, centre, f),
                          distance_histogram(X.toarray(), centre, f))


@pytest.mark.parametrize("replace_one", [False, True])
def test_distance_histogram_sensitivity_by_brute_force(replace_one):
    """Adding or removing any row moves the counts by exactly 1 in L2; replacing one moves
    them by at most sqrt(2) (the stage's declared sensitivity,
    ``target_range_sensitivity``), reached."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3)) * [1.0, 10.0, 0.1]
    centre = np.array([0.5, -2.0, 0.0])
    base = distance_histogram(X, centre)
    worst = 0.0
    for i in range(X.shape[0]):
        if replace_one:
            for row in rng.normal(size=(5, 3)) * 100.0:
                other = X.copy()
                other[i] = row
                worst = max(worst, float(np.linalg.norm(distance_histogram(other, centre)
                                                        - base)))
        else:
            other = np.delete(X, i, axis=0)
            worst = max(worst, float(np.linalg.norm(distance_histogram(other, centre) - base)))
    assert worst == pytest.approx(math.sqrt(2.0) if replace_one else 1.0, rel=1e-12)


def test_radius_is_the_occupied_hull_with_its_edges_capped_and_the_previous_where_unresolved():
    sigma = 1.0
    counts = np.zeros(target_histogram_size())
    counts[_bin(0.1)] = 1000.0  # (1/16, 1/8]: upper edge 1/8
    rho, released = radius_from_release(counts, sigma, row_norm_bound=1.0)
    assert released.high == 0.125 and rho == 0.125
    assert radius_from_release(counts, sigma, row_norm_bound=1.0, previous=0.1)[0] == 0.1
    counts[_bin(3.0)] = 1000.0  # (2, 4]: beyond R = 1, the previous radius
    assert radius_from_release(counts, sigma, row_norm_bound=1.0)[0] == 1.0
    counts[_bin(3.0)] = 1.0  # below z sigma: not occupied, the hull ends at 1/8
    assert radius_from_release(counts, sigma, row_norm_bound=1.0)[0] == 0.125
    # at sigma 100 (a bin needs about 440): the bin above the hull joins where it passes the
    # edge test, z_e sigma (164.5) and a quarter of the occupied count (EDGE_SHARE, 250):
    # 300 does, 200 does not
    counts[_bin(3.0)] = 0.0
    counts[_bin(0.2)] = 300.0  # (1/8, 1/4]
    assert radius_from_release(counts, 100.0, row_norm_bound=1.0)[0] == 0.25
    counts[_bin(0.2)] = 200.0
    assert radius_from_release(counts, 100.0, row_norm_bound=1.0)[0] == 0.125
    empty = np.zeros(target_histogram_size())
    assert radius_from_release(empty, sigma, row_norm_bound=1.0)[0] == 1.0
    assert radius_from_release(empty, sigma, row_norm_bound=1.0, previous=0.3)[0] == 0.3


def test_one_round_is_the_single_release():
    """refined_conditioning of the first round alone is conditioning_from_release."""
    noisy = np.array([30.0, -10.0, 5.0, 40.0, 100.0])
    for shrink in (False, True):
        one = conditioning_from_release(noisy, 2.0, 0.5, shrink_centre=shrink)
        got = refined_conditioning([ConditioningRound(noisy, np.zeros(3), 2.0, 0.5)],
                                   shrink_centre=shrink)
        assert np.allclose(got.centre, one.centre, rtol=1e-13, atol=1e-15)
        for key in ("row_scale", "intercept_scale", "clip", "noise_multiplier", "count",
                    "centre_shrinkage", "row_bound"):
            assert getattr(got, key) == pytest.approx(getattr(one, key), rel=1e-13), key


def test_two_rounds_follow_the_documented_formulas():
    """p = 2: round 1 at R = 4 (sigma 2), round 2 about a = (1, 1) within rho = 0.5
    (sigma 3); the centre and the spread the inverse-variance means, U in units of rho^2
    with the centre's error."""
    first = np.array([100.0, 60.0, 30.0, 100.0])  # c1 = 4 (1.0, 0.6) = (4, 2.4)
    second = np.array([20.0, -10.0, 30.0, 200.0])  # b = (0.1, -0.05): c2 = (1.05, 0.975)
    a = np.array([1.0, 1.0])
    got = refined_conditioning([ConditioningRound(first, np.zeros(2), 4.0, 2.0),
                                ConditioningRound(second, a, 0.5, 3.0)])
    w1, w2 = (100.0 / (4.0 * 2.0)) ** 2, (200.0 / (0.5 * 3.0)) ** 2
    c1, c2 = np.array([4.0, 2.4]), a + 0.5 * np.array([0.1, -0.05])
    centre = (w1 * c1 + w2 * c2) / (w1 + w2)
    error = 2.0 / (w1 + w2)
    # each round's spread about the mean and its variance, then their weighted mean
    v1 = 16.0 * (30.0 / 100.0 - (1.0 + 0.36) + 2.0 * (2.0 / 100.0) ** 2)
    v2 = 0.25 * (30.0 / 200.0 - (0.1**2 + 0.05**2) + 2.0 * (3.0 / 200.0) ** 2)
    t1, t2 = (2.0 / 100.0) ** 2, (3.0 / 200.0) ** 2  # each round's noise variance of a mean
    q1 = 1.0 / (4.0**4 * (t1 * (1.0 + 4.0 * (1.36 - 2.0 * t1)) + 4.0 * t1 * t1))
    q2 = 1.0 / (0.5**4 * (t2 * (1.0 + 4.0 * (0.0125 - 2.0 * t2)) + 4.0 * t2 * t2))
    u = ((q1 * v1 + q2 * v2) / (q1 + q2) + error) / 0.25
    assert np.allclose(got.centre, centre, rtol=1e-13)
    assert got.row_scale == pytest.approx(math.sqrt(u), rel=1e-12)
    assert got.clip == pytest.approx(0.5 * math.sqrt(2.0 * u), rel=1e-12)
    assert got.intercept_scale == pytest.approx(0.5 * math.sqrt(u), rel=1e-12)
    assert got.row_bound == 0.5
    count = (100.0 / 4.0 + 200.0 / 9.0) / (1.0 / 4.0 + 1.0 / 9.0)
    assert got.count == pytest.approx(count, rel=1e-13)


def test_refined_centre_has_the_stated_variance():
    """Rows far from the origin (mean 50 in each of 4 coordinates, spread 1), R = 200:
    over 2000 simulated pairs of releases (exact sums plus their Gaussian noise), the
    refined centre's squared error has mean p tau^2 with tau^2 = 1 / sum_k 1/tau_k^2.
    The statistic's standard error is sqrt(2/2000) of its mean: a 5-sigma band fails with
    probability below 1e-6 (fixed seed)."""
    rng = np.random.default_rng(11)
    n, p, R = 1000, 4, 200.0
    X = 50.0 + rng.uniform(-1.0, 1.0, (n, p))
    mean = X.mean(axis=0)
    s1, s2, rho = 40.0, 40.0, 8.0
    a = mean + np.array([1.0, -1.0, 0.5, 0.0])  # a first centre 1.5 away: no row projected
    assert np.all(np.linalg.norm(X - a, axis=1) <= rho)
    exact1 = np.concatenate([X.sum(axis=0) / R, [np.sum(np.sum(X * X, axis=1)) / R**2, n]])
    B = (X - a) / rho
    exact2 = np.concatenate([B.sum(axis=0), [np.sum(B * B), n]])
    errors = []
    for _ in range(2000):
        got = refined_conditioning([
            ConditioningRound(exact1 + rng.normal(0.0, s1, p + 2), np.zeros(p), R, s1),
            ConditioningRound(exact2 + rng.normal(0.0, s2, p + 2), a, rho, s2)])
        errors.append(float(np.sum((got.centre - mean) ** 2)))
    tau1, tau2 = R * s1 / n, rho * s2 / n  # the count's noise moves these by < 0.2%
    expected = p / (1.0 / tau1**2 + 1.0 / tau2**2)
    assert abs(np.mean(errors) - expected) < 5.0 * math.sqrt(2.0 / 2000) * expected


def test_refined_conditioning_refuses_malformed_rounds():
    good = ConditioningRound(np.array([1.0, 2.0, 3.0, 10.0]), np.zeros(2), 1.0, 1.0)
    with pytest.raises(ValueError, match="at least one round"):
        refined_conditioning([])
    with pytest.raises(ValueError, match="p \\+ 2"):
        refined_conditioning([good, ConditioningRound(np.ones(5), np.zeros(3), 1.0, 1.0)])
    with pytest.raises(ValueError, match="finite"):
        refined_conditioning([ConditioningRound(np.array([np.nan, 1.0, 2.0, 3.0]),
                                                np.zeros(2), 1.0, 1.0)])
    with pytest.raises(ValueError, match="centre"):
        refined_conditioning([good, ConditioningRound(good.noisy, np.zeros(3), 1.0, 1.0)])
    with pytest.raises(ValueError, match="radius"):
        refined_conditioning([ConditioningRound(good.noisy, np.zeros(2), 0.0, 1.0)])


def _far_problem(task: str, n: int = 2000, p: int = 20, offset: float = 30.0, seed: int = 0):
    """Uniform [0, 1] features shifted by ``offset`` times their spread (different in each
    column: a table of years or latitudes), logistic labels (30% positive) or linear targets
    with noise; train and test rows."""
    rng = np.random.default_rng([seed, n, p])
    total = n + 4000
    Z = rng.random((total, p))
    w = rng.normal(0.0, 4.0, p) / math.sqrt(p)
    signal = (Z - 0.5) @ w
    if task == "binary":
        y = (rng.random(total) < 1.0 / (1.0 + np.exp(-3.0 * (signal - np.quantile(signal, 0.7))))
             ).astype(int)
    else:
        y = np.clip(0.5 + 0.1 * signal + rng.normal(0.0, 0.05, total), 0.0, 1.0)
    X = Z + offset * rng.uniform(0.5, 1.5, p)
    return X[:n], y[:n], X[n:], y[n:]


def test_default_classifier_learns_rows_far_from_the_origin():
    """Features 30 spreads from the origin (n 2000, p 20, epsilon 1, seeds 0 and 1): the
    default keeps at least 0.8 of the non-private AUC gain (0.89 and 0.90 measured), and
    reports the refined rounds; with the single release it replaced, 0.67 and 0.55."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    from noisygd.estimators import DPLogisticRegression

    X, y, Xt, yt = _far_problem("binary")
    auc_np = roc_auc_score(yt, LogisticRegression(max_iter=10_000).fit(X, y)
                           .decision_function(Xt))
    for seed in (0, 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=seed).fit(X, y)
        share = (roc_auc_score(yt, est.decision_function(Xt)) - 0.5) / (auc_np - 0.5)
        assert share >= 0.8, (seed, share)
        release = est.conditioning_["release"]
        assert release["rounds"] == list(CONDITIONING_ROUNDS)
        # the column offsets centre and rescale every column first (one sign, within a
        # factor 4 of themselves), so the rounds no longer need a radius far below R
        assert est.fit_info_["feature_range"]["offset_columns"] == list(range(X.shape[1]))
        names = [r["name"] for r in est.fit_info_["pre_releases"]]
        assert names[names.index("conditioning"):names.index("conditioning") + 5] == [
            "conditioning", "conditioning_radius", "conditioning_2",
            "conditioning_radius_2", "conditioning_3"]


def test_rounds_resolve_rows_far_from_the_origin_without_the_column_offsets(monkeypatch):
    """With the feature range in one release (no column offsets), the rounds alone find
    the rows' centre and their own spread: the released radius falls far below ``R`` and the
    default keeps at least 0.8 of the non-private AUC gain (0.88 at seed 0)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    from noisygd.estimators import DPLogisticRegression
    from noisygd.mechanisms import feature_range

    monkeypatch.setattr(feature_range, "FEATURE_RANGE_ROUNDS", (1.0,))
    X, y, Xt, yt = _far_problem("binary")
    auc_np = roc_auc_score(yt, LogisticRegression(max_iter=10_000).fit(X, y)
                           .decision_function(Xt))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    assert (roc_auc_score(yt, est.decision_function(Xt)) - 0.5) / (auc_np - 0.5) >= 0.8
    assert est.conditioning_["release"]["radius"] < 0.1 * est.row_norm_bound
    assert est.fit_info_["feature_range"]["offset_columns"] == []


def test_default_regressor_learns_rows_far_from_the_origin():
    """The same rows with linear targets (epsilon 1, seeds 0 and 1): at least 0.8 of the
    non-private R^2 (0.86 and 0.99 measured; with the single release it replaced, 0.002)."""
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score

    from noisygd.estimators import DPLinearRegression

    X, y, Xt, yt = _far_problem("regression")
    r2_np = r2_score(yt, LinearRegression().fit(X, y).predict(Xt))
    for seed in (0, 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = DPLinearRegression(epsilon=1.0, random_state=seed).fit(X, y)
        assert r2_score(yt, est.predict(Xt)) >= 0.8 * r2_np, seed


def test_the_rounds_compose_to_the_declared_share():
    """The conditioning's five events compose (GDP: mu^2 adds) to the declared share of the
    budget, as the single release did: the split changes no other release's share."""
    from noisygd.accounting.calibration import calibrate_mu
    from noisygd.estimators import DPLogisticRegression

    est = DPLogisticRegression(epsilon=1.0, delta=1e-5)
    mu = calibrate_mu(1.0, 1e-5)
    events = est._conditioning_release_events()
    assert len(events) == len(CONDITIONING_ROUNDS) == 5
    total = sum((e.sensitivity / (e.noise_multiplier * e.sensitivity)) ** 2 for e in events)
    assert total == pytest.approx(CONDITIONING_SHARE * mu * mu, rel=1e-12)


def test_the_report_names_every_conditioning_release():
    """The report's plain names and conditioning stages cover the estimators' releases
    (the report sits below the estimators and keeps its own list)."""
    from noisygd.estimators import CONDITIONING_RELEASES
    from noisygd.report.content import CONDITIONING_STAGES, PRE_RELEASE_NAMES

    assert set(CONDITIONING_RELEASES) <= CONDITIONING_STAGES
    assert set(CONDITIONING_RELEASES) <= set(PRE_RELEASE_NAMES)


def test_distance_histogram_by_blocks_is_the_whole_histogram(monkeypatch):
    """Counted a block of rows at a time (bounded temporaries), the histogram is the one of
    all rows at once."""
    import noisygd.estimators._conditioning as conditioning
    from noisygd.mechanisms.target_range import target_histogram
    from noisygd.oracles.rows import row_norms

    rng = np.random.default_rng(5)
    X = rng.normal(size=(1000, 4)) * 3.0 + 10.0
    centre, f = np.full(4, 5.0), np.array([0.5, 1.0, 2.0, 1.0])
    whole = target_histogram(row_norms(X, centre=centre / f, feature_scale=f) / 2.0)
    monkeypatch.setattr(conditioning, "DISTANCE_BLOCK_ROWS", 64)
    assert np.array_equal(distance_histogram(X, centre, f, unit=2.0), whole)


def test_round_sums_are_the_oracle_s_bounded_row_sums():
    """What a later round releases, read from X (dense and CSR), equals the row sums of the
    oracle of the rows about the centre within the radius (the centred objective's)."""
    from noisygd.estimators._conditioning import round_sums
    from noisygd.objectives import CentredGLM, LogisticLoss
    from noisygd.oracles import make_oracle

    rng = np.random.default_rng(8)
    X = sp.random(500, 12, density=0.3, random_state=2, format="csr") * 3.0
    f, a, rho = rng.uniform(0.5, 2.0, 12), rng.random(12) * 0.5, 0.8
    oracle = make_oracle(CentredGLM(LogisticLoss(), a / f, 1.0, feature_scale=f), X,
                         rng.integers(0, 2, 500), row_norm_bound=rho)
    expected = oracle.bounded_row_sums().vector(("rows", "squared_norms", "count"))
    for rows in (X, X.toarray()):
        np.testing.assert_allclose(round_sums(rows, a, f, rho), expected, rtol=1e-10,
                                   atol=1e-10)
