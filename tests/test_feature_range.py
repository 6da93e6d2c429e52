"""The private feature range (noisygd.mechanisms.feature_range) and its stage in the
classifier's default fit."""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import chi2, norm

from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.events import Gaussian, Neighbouring
from noisygd.accounting.gdp import gaussian_mu
from noisygd.estimators import CONDITIONING_RELEASES, FEATURE_RANGE_RELEASES, DPLogisticRegression
from noisygd.mechanisms import feature_range
from noisygd.mechanisms.feature_range import (
    EXPONENTS,
    FEATURE_RANGE_ROUNDS,
    FEATURE_RANGE_SHARE,
    HOMOGENEITY_LEVEL,
    feature_range_from_release,
    magnitude_histogram,
    occupancy_threshold,
    pooled_top_bin,
    range_sensitivity,
    range_statistic,
)

K = EXPONENTS[1] - EXPONENTS[0] + 1
#: The histogram's part of the declared share (the rest pays for the column offsets' rounds)
HISTOGRAM_SHARE = FEATURE_RANGE_SHARE * FEATURE_RANGE_ROUNDS[0]


def _brute_histogram(X: np.ndarray) -> np.ndarray:
    """Value by value, with log2 (independent of the frexp path)."""
    out = np.zeros((X.shape[1], 2, K), dtype=np.int64)
    for row in X:
        for j, v in enumerate(row):
            if v != 0:
                k = min(max(math.floor(math.log2(abs(v))), EXPONENTS[0]), EXPONENTS[1])
                out[j, int(v < 0), k - EXPONENTS[0]] += 1
    return out


def _raw_table(n: int = 6000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Columns of scales 1e5, 1, 1e-3 and a one-hot pair: raw, nobody bounded them."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 3))
    level = rng.random(n) < 0.3
    X = np.column_stack([1e5 * (2.0 + z[:, 0]), z[:, 1], 1e-3 * z[:, 2], level, ~level])
    margin = 1.5 * z[:, 0] - 1.0 * z[:, 1] + 1.0 * z[:, 2] + 0.8 * level
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-margin))).astype(int)
    return X.astype(np.float64), y


# ------------------------------------------------------------------ the statistic
def test_histogram_equals_the_value_by_value_count_dense_and_csr():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 6)) * np.array([1e-12, 1e-3, 1.0, 1e3, 1e15, 0.0])
    X[rng.random(X.shape) < 0.3] = 0.0
    expected = _brute_histogram(X)
    assert np.array_equal(magnitude_histogram(X), expected)
    assert np.array_equal(magnitude_histogram(sp.csr_matrix(X)), expected)
    # values beyond the grid fall in its end bins; zeros are not counted
    assert expected.sum() == np.count_nonzero(X)
    assert expected[4, :, -1].sum() == np.count_nonzero(np.abs(X[:, 4]) >= 2.0 ** 40)
    assert expected[0, :, 0].sum() == np.count_nonzero(X[:, 0])  # 1e-12 < 2^-30


def _edge_values(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Values at every edge of the bins: powers of two and their neighbours, both zeros,
    subnormals, the largest float, both ends of the grid, random magnitudes."""
    edges = np.array([0.0, -0.0, 5e-324, -2.2e-308, 2.0 ** -31, 2.0 ** -30,
                      np.nextafter(2.0 ** -30, 0.0), 1.0, np.nextafter(1.0, 2.0),
                      np.nextafter(1.0, 0.0), -1.0, 2.0 ** 40, np.nextafter(2.0 ** 41, 0.0),
                      2.0 ** 41, 1.7976931348623157e308, -1.7976931348623157e308])
    X = np.exp(rng.uniform(-80.0, 80.0, shape)) * rng.choice([-1.0, 1.0], shape)
    mask = rng.random(shape) < 0.4
    X[mask] = rng.choice(edges, int(mask.sum()))
    return X


@pytest.mark.parametrize("compiled", [True, False])
def test_compiled_and_numpy_counts_equal_the_value_by_value_count(compiled):
    if compiled and feature_range._magnitude_counts is None:
        pytest.skip("the compiled kernel is not built (an install without a C compiler)")
    rng = np.random.default_rng(7)
    X = _edge_values(rng, (300, 9))
    expected = _brute_histogram(X).ravel()
    forms = [X, np.asfortranarray(X), X[:, ::-1][:, ::-1], sp.csr_matrix(X),
             sp.csr_array(X).astype(np.float64)]
    wide = sp.csr_matrix(X)
    wide.indices = wide.indices.astype(np.int64)  # int64 column indices
    forms.append(wide)
    for form in forms:
        counts = np.zeros(expected.size)
        feature_range._count_into(form, counts, compiled=compiled)
        assert np.array_equal(counts, expected), type(form)
    # a histogram larger than a block of values (the add.at path) counts the same
    tall = _edge_values(rng, (40, 700))
    counts = np.zeros(700 * 2 * K)
    feature_range._count_into(sp.csr_matrix(tall), counts, compiled=compiled)
    assert np.array_equal(counts, _brute_histogram(tall).ravel())


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_large_dense_matrix_counted_in_parts_gives_the_same_counts(threads, monkeypatch):
    """The compiled counts of a dense X of >= PARALLEL_COUNT_VALUES values run one part per
    thread, each into its own vector: integer counts, so equal to the NumPy path's for every
    thread count; a non-finite value in a later part is refused as in one call."""
    from noisygd.oracles import _parallel

    if feature_range._magnitude_counts is None:
        pytest.skip("the compiled kernel is not built")
    monkeypatch.setattr(_parallel, "default_threads", lambda: threads)
    rng = np.random.default_rng(8)
    X = np.ascontiguousarray(np.repeat(_edge_values(rng, (257, 8)), 520, axis=0))
    assert X.size >= feature_range.PARALLEL_COUNT_VALUES
    expected = np.zeros(8 * 2 * K)
    feature_range._count_into(X, expected, compiled=False)
    counts = np.zeros(expected.size)
    feature_range._count_into(X, counts)
    assert np.array_equal(counts, expected)
    X[-1, 3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        feature_range._count_into(X, np.zeros(expected.size))


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_both_counts_refuse_non_finite_values(compiled, bad):
    if compiled and feature_range._magnitude_counts is None:
        pytest.skip("the compiled kernel is not built")
    X = np.ones((5, 3))
    X[3, 2] = bad
    for form in (X, sp.csr_matrix(X)):
        with pytest.raises(ValueError, match="NaN or infinite"):
            feature_range._count_into(form, np.zeros(3 * 2 * K), compiled=compiled)


def test_compiled_counts_check_their_arguments():
    kernel = feature_range._magnitude_counts
    if kernel is None:
        pytest.skip("the compiled kernel is not built")
    counts = np.zeros(2 * 2 * K)
    with pytest.raises(ValueError, match="outside"):
        kernel(np.ones(3), np.array([0, 1, 2], dtype=np.int32), 0, K, EXPONENTS[0], counts)
    with pytest.raises(ValueError, match="period"):
        kernel(np.ones(6), None, 3, K, EXPONENTS[0], counts)  # 3 columns, counts for 2
    with pytest.raises(ValueError, match="one per value"):
        kernel(np.ones(3), np.zeros(2, dtype=np.int64), 0, K, EXPONENTS[0], counts)
    with pytest.raises(ValueError, match="p \\* 2 \\* K"):
        kernel(np.ones(3), None, 1, K, EXPONENTS[0], np.zeros(5))
    with pytest.raises(TypeError, match="float64"):
        kernel(np.ones(3, dtype=np.float32), None, 1, K, EXPONENTS[0], counts)


def test_csr_duplicates_are_summed_so_a_row_counts_once_per_feature():
    A = sp.csr_matrix((np.array([1.0, 2.0, 5.0]), np.array([0, 0, 1]), np.array([0, 2, 3])),
                      shape=(2, 2))  # row 0 holds two entries of column 0 (3.0 in all)
    h = magnitude_histogram(A)
    assert h.sum() == 2 and h[0, 0, 1 - EXPONENTS[0]] == 1  # 3.0 in [2, 4)


def test_histogram_refuses_non_finite_values():
    X = np.ones((3, 2))
    X[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        magnitude_histogram(X)


def test_one_row_moves_the_statistic_by_at_most_sqrt_p_plus_one():
    # sensitivity by brute force: every added row of a small domain, every dataset
    domain = [np.array(r) for r in itertools.product([0.0, -3.0, 0.5, 1e9], repeat=3)]
    rng = np.random.default_rng(2)
    for _ in range(20):
        D = np.array([domain[i] for i in rng.integers(0, len(domain), 5)])
        base = range_statistic(D)
        for row in domain:
            moved = range_statistic(np.vstack([D, row])) - base
            assert np.linalg.norm(moved) <= math.sqrt(3 + 1) + 1e-12
            # equality for a row with every feature nonzero
            if np.all(row != 0):
                assert np.linalg.norm(moved) == pytest.approx(2.0)


def test_a_replaced_row_moves_the_statistic_by_at_most_sqrt_2p():
    # replace-one by brute force: every pair of rows of a small domain in random datasets;
    # the row count cancels, each feature moves one bin down and one up
    domain = [np.array(r) for r in itertools.product([0.0, -3.0, 0.5, 1e9], repeat=3)]
    rng = np.random.default_rng(3)
    largest = 0.0
    for _ in range(10):
        D = np.array([domain[i] for i in rng.integers(0, len(domain), 5)])
        for old in domain:
            base = range_statistic(np.vstack([D, old]))
            for new in domain:
                moved = np.linalg.norm(range_statistic(np.vstack([D, new])) - base)
                largest = max(largest, moved)
                assert moved <= range_sensitivity(3, replace_one=True) + 1e-12
    assert largest == pytest.approx(math.sqrt(6))  # reached: sqrt(2p), below 2 sqrt(p + 1)
    assert range_sensitivity(3) == math.sqrt(4)
    with pytest.raises(ValueError):
        range_sensitivity(0)


def test_replace_one_fit_draws_the_exact_noise():
    X, y = _raw_table(n=3000)
    mu = calibrate_mu(1.0, 1e-5)
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0,
                                 neighbouring="replace_one",
                                 n_samples_public=len(y)).fit(X, y)
    first = model.privacy_.event.events[0]
    assert first.relation is Neighbouring.REPLACE_ONE
    assert gaussian_mu(first) == pytest.approx(math.sqrt(HISTOGRAM_SHARE) * mu, rel=1e-9)
    # sqrt(2p) / mu_r, not the clipped sums' 2 sqrt(p + 1) / mu_r
    assert model.conditioning_["feature_range_release"]["noise_std"] == pytest.approx(
        math.sqrt(2 * 5) / (math.sqrt(HISTOGRAM_SHARE) * mu), rel=1e-9)


# ------------------------------------------------------------------ post-processing
def test_magnitudes_and_scale_from_an_exact_release():
    X = np.column_stack([np.full(50, 3.0), np.full(50, -0.3), np.zeros(50)])
    noisy = range_statistic(X)
    released = feature_range_from_release(noisy, sigma=1e-3, row_norm_bound=2.0)
    # 3.0 in [2, 4): 4; -0.3 in [0.25, 0.5): 0.5; the zero column: no occupied bin
    assert released.magnitude.tolist() == [4.0, 0.5, 0.0]
    assert released.occupied == 2 and released.row_features == pytest.approx(2.0)
    g = released.scale
    assert g[:2] == pytest.approx([2.0 / (4.0 * math.sqrt(2)), 2.0 / (0.5 * math.sqrt(2))])
    assert g[2] == pytest.approx(g[:2].min())  # the widest column's weight
    assert np.all(np.linalg.norm(X * g, axis=1) <= 2.0 + 1e-12)  # rows in the R-ball


def test_nothing_occupied_leaves_the_rows_as_given():
    released = feature_range_from_release(np.zeros(3 * 2 * K + 1), sigma=1.0)
    assert released.occupied == 0 and np.all(released.scale == 1.0)


def test_release_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError, match="row count"):
        feature_range_from_release(np.zeros(2 * K), sigma=1.0)


def test_false_occupancy_rate_is_at_most_its_level():
    # pure noise (no row): the chance that the release reads any bin of the whole histogram
    # as occupied is at most FALSE_OCCUPANCY (Bonferroni; the pooling of columns sets no
    # magnitude from a bin no column passes); checked on the released feature
    # range itself at the level 0.05 (400 draws, fixed seed: the count of draws with an
    # occupied feature is Binomial(400, <= 0.05), P(> 35) < 1e-3, the false-failure rate of
    # this test) and at the default 1e-3 (4000 draws: Binomial(4000, <= 1e-3), P(> 13) < 1e-3)
    from noisygd.mechanisms.feature_range import FALSE_OCCUPANCY

    rng = np.random.default_rng(3)
    p, sigma = 4, 7.0
    for level, draws, most in ((0.05, 400, 35), (FALSE_OCCUPANCY, 4000, 13)):
        threshold = occupancy_threshold(p, sigma, level)
        assert threshold == pytest.approx(norm.isf(level / (2 * p * K)) * sigma)
        false = 0
        for _ in range(draws):
            noise = rng.normal(0.0, sigma, p * 2 * K)
            released = feature_range_from_release(np.append(noise, 0.0), sigma, failure=level)
            assert released.threshold == threshold
            assert (released.occupied > 0) == bool(np.any(noise >= threshold))
            false += released.occupied > 0
        assert false <= most, (level, false)
    assert FALSE_OCCUPANCY == 1e-3


# ------------------------------------------------------------------ pooled columns
def _noisy_release(X: np.ndarray, sigma: float, seed: int) -> np.ndarray:
    stat = range_statistic(X)
    return stat + np.random.default_rng(seed).normal(0.0, sigma, stat.size)


def test_columns_of_one_distribution_take_one_magnitude():
    # 50 columns uniform on [0, 0.1]: 37.5% of the rows in [1/16, 1/8), 31% in the bin below.
    # At this noise (threshold z sigma ~ 750) the columns read one by one resolve the top bin
    # in some columns, the one below or none in others; pooled, every column gets 1/8
    X = np.random.default_rng(0).random((2000, 50)) * 0.1
    noisy = _noisy_release(X, sigma=140.0, seed=1)
    alone = feature_range_from_release(noisy, 140.0, pool=False)
    assert len(set(alone.magnitude.tolist())) > 1  # the noise split the columns
    pooled = feature_range_from_release(noisy, 140.0)
    assert pooled.pooled and pooled.occupied == 50
    assert np.all(pooled.magnitude == 0.125)
    assert np.all(pooled.scale == pooled.scale[0])
    statistic, df = pooled.homogeneity
    assert df > 0 and statistic <= chi2.isf(HOMOGENEITY_LEVEL, df)
    assert not alone.pooled and math.isnan(alone.homogeneity[0])


def test_columns_of_different_scales_are_read_one_by_one():
    # ten columns of magnitudes 2^0 .. 2^-9: each resolves its own top bin, and the test
    # rejects one common histogram, so the release is the per-column one
    rng = np.random.default_rng(2)
    X = rng.random((2000, 10)) * np.ldexp(1.0, -np.arange(10))
    noisy = _noisy_release(X, sigma=20.0, seed=3)
    released = feature_range_from_release(noisy, 20.0)
    alone = feature_range_from_release(noisy, 20.0, pool=False)
    assert not released.pooled
    assert released.homogeneity[0] > chi2.isf(HOMOGENEITY_LEVEL, released.homogeneity[1])
    assert released.magnitude.tolist() == alone.magnitude.tolist()
    assert released.magnitude.tolist() == np.ldexp(1.0, -np.arange(10)).tolist()


def test_homogeneity_test_holds_its_level():
    # columns with equal counts in three bins plus the release's noise: the statistic is
    # exactly chi-square, so the test rejects at rate HOMOGENEITY_LEVEL. 400 draws, fixed
    # seed: rejections ~ Binomial(400, 0.05); P(< 8) = 6e-4 and P(> 34) = 1.1e-3, so this
    # check fails falsely with probability < 2e-3
    rng = np.random.default_rng(5)
    p, sigma = 20, 30.0
    rejected = 0
    for _ in range(400):
        counts = np.zeros((p, 2, K))
        counts[:, 0, 40:43] = (400.0, 600.0, 1000.0)
        noisy = counts + rng.normal(0.0, sigma, counts.shape)
        top, _, df = pooled_top_bin(noisy, sigma)
        assert df == (p - 1) * 3
        rejected += top is None
        if top is not None:
            assert top == 42
    assert 8 <= rejected <= 34, rejected


def test_pooled_top_bin_checks_its_arguments():
    with pytest.raises(ValueError, match="shape"):
        pooled_top_bin(np.zeros((3, K)), 1.0)
    with pytest.raises(ValueError, match="level"):
        pooled_top_bin(np.zeros((3, 2, K)), 1.0, level=1.0)
    with pytest.raises(ValueError, match="sigma"):
        pooled_top_bin(np.zeros((3, 2, K)), 0.0)
    assert pooled_top_bin(np.full((1, 2, K), 1e6), 1.0)[0] is None  # one column
    top, statistic, df = pooled_top_bin(np.zeros((3, 2, K)), 1.0)  # nothing occupied
    assert top is None and math.isnan(statistic) and df == 0


def test_the_columns_mean_sets_no_magnitude_alone():
    # 400 identical columns whose common bin holds 1.5 sigma each: no column passes z sigma
    # (z ~ 5.5), the mean (noise sigma / 20, threshold ~ 0.22 sigma) does; the mean adds
    # power to the test but reads no bin as occupied, so nothing is pooled and the rows stay
    # as given
    counts = np.zeros((400, 2, K))
    counts[:, 0, 30] = 1.5
    noisy = counts + np.random.default_rng(7).normal(0.0, 1.0, counts.shape)
    assert noisy.max() < occupancy_threshold(400, 1.0)
    assert noisy[:, 0, 30].mean() > 1.0
    top, statistic, df = pooled_top_bin(noisy, 1.0)
    assert top is None and math.isnan(statistic) and df == 0
    released = feature_range_from_release(np.append(noisy.ravel(), 400.0), 1.0)
    assert released.occupied == 0 and np.all(released.scale == 1.0) and not released.pooled


# ------------------------------------------------------------------ the estimator
def test_default_fit_releases_the_range_first_and_composes_it():
    X, y = _raw_table()
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0,
                                 n_samples_public=len(y)).fit(X, y)
    events = model.privacy_.event.events
    mu = calibrate_mu(1.0, 1e-5)
    first = events[0]
    assert isinstance(first, Gaussian) and first.relation is Neighbouring.ADD_REMOVE
    assert gaussian_mu(first) == pytest.approx(math.sqrt(HISTOGRAM_SHARE) * mu, rel=1e-9)
    assert model.privacy_.epsilon <= 1.0 * (1 + 1e-9)
    report = model.conditioning_["feature_range_release"]
    assert report["occupied"] == 5 and report["share"] == FEATURE_RANGE_SHARE
    assert model.fit_info_["feature_range"] == report
    # the noise of each count: sqrt(p + 1) Delta / mu_r
    assert report["noise_std"] == pytest.approx(
        math.sqrt(6) / (math.sqrt(HISTOGRAM_SHARE) * mu), rel=1e-9)


def test_the_range_is_recorded_before_any_row_is_read(tmp_path):
    X, y = _raw_table(n=1500)
    ledger = str(tmp_path / "ledger.db")
    from noisygd.ledger import Ledger

    with Ledger(ledger) as opened:
        opened.set_budget("d", epsilon=4.0, delta=1e-5)
    DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0, ledger=ledger,
                         dataset="d").fit(X, y)
    with Ledger(ledger) as opened:
        names = [r.algorithm.split("/")[1] for r in opened.releases("d")]
    assert names[:-1] == [*FEATURE_RANGE_RELEASES, *CONDITIONING_RELEASES, "feature_scale"]


def test_same_seed_same_model_and_off_turns_it_off():
    X, y = _raw_table(n=2000)
    a = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=5).fit(X, y)
    b = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=5).fit(X, y)
    assert np.array_equal(a.coef_, b.coef_) and a.intercept_ == b.intercept_
    off = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=5,
                               feature_range_share=0.0).fit(X, y)
    assert "feature_range_release" not in off.conditioning_
    assert len(off.privacy_.event.events) == len(a.privacy_.event.events) - len(
        FEATURE_RANGE_RELEASES)


def test_raw_columns_are_learnt_with_the_range_and_crushed_without():
    # the column of scale 1e5 dominates every raw row's norm: without the range the row
    # bound keeps little else (fixed seeds; the margins of the other columns are lost)
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.preprocessing import StandardScaler

    X, y = _raw_table(n=8000, seed=1)
    Xt, yt = _raw_table(n=4000, seed=2)
    scaler = StandardScaler().fit(X)
    ceiling = roc_auc_score(yt, LogisticRegression().fit(scaler.transform(X), y)
                            .decision_function(scaler.transform(Xt)))

    def share(**kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0, **kw)
            auc = roc_auc_score(yt, m.fit(X, y).decision_function(Xt))
        return (auc - 0.5) / (ceiling - 0.5)

    on, off = share(), share(feature_range_share=0.0)
    assert on >= 0.9 and on > off + 0.1


def test_share_is_validated():
    X, y = _raw_table(n=200)
    for bad in (-0.1, 0.6, "most"):
        with pytest.raises(ValueError, match="feature_range_share"):
            DPLogisticRegression(classes=[0, 1], feature_range_share=bad).fit(X, y)


def test_a_stage_whose_event_does_not_cover_its_statistic_is_refused():
    from noisygd.training import PreRelease, _check_stage_event

    rel = Neighbouring.ADD_REMOVE
    rng = np.random.default_rng(0)
    # 5 terms at sigma 1: sqrt(5)-GDP; an event declaring 1-GDP does not cover it
    stage = PreRelease("r", Gaussian(1.0, 1.0, rel), (), 1.0, rng, lambda v: None,
                       statistic=lambda: np.zeros(3), statistic_terms=5)
    with pytest.raises(ValueError, match="must cover"):
        _check_stage_event(stage, rel, False)
    ok = PreRelease("r", Gaussian(1.0 / math.sqrt(5), 1.0, rel), (), 1.0, rng,
                    lambda v: None, statistic=lambda: np.zeros(3), statistic_terms=5)
    _check_stage_event(ok, rel, False)
    # a declared exact sensitivity below sqrt(k) Delta is used; one above it is refused
    exact = PreRelease("r", Gaussian(1.0 / 2.0, 1.0, rel), (), 1.0, rng, lambda v: None,
                       statistic=lambda: np.zeros(3), statistic_terms=5,
                       statistic_sensitivity=2.0)
    _check_stage_event(exact, rel, False)
    with pytest.raises(ValueError, match="must cover"):  # 2-GDP drawn, 1-GDP declared
        _check_stage_event(dataclasses.replace(exact, event=Gaussian(1.0, 1.0, rel)), rel,
                           False)
    with pytest.raises(ValueError, match="exceeds"):
        _check_stage_event(dataclasses.replace(exact, statistic_sensitivity=3.0), rel, False)


def test_regressor_releases_the_range_first_and_learns_raw_columns():
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score

    from noisygd.estimators import DPLinearRegression

    def table(n, seed):
        rng = np.random.default_rng(seed)
        z = rng.standard_normal((n, 3))
        X = np.column_stack([1e5 * (2.0 + z[:, 0]), z[:, 1], 1e-3 * z[:, 2]])
        y = np.clip(5.0 + z[:, 0] - z[:, 1] + z[:, 2] + 0.3 * rng.standard_normal(n), 0, 10)
        return X, y

    X, y = table(8000, 1)
    Xt, yt = table(4000, 2)
    ceiling = r2_score(yt, LinearRegression().fit(X, y).predict(Xt))

    def fit(**kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return DPLinearRegression(epsilon=1.0, target_range=(0.0, 10.0), random_state=0,
                                      target_range_share=0.0, **kw).fit(X, y)

    on, off = fit(), fit(feature_range_share=0.0)
    first = on.privacy_.event.events[0]
    assert gaussian_mu(first) == pytest.approx(
        math.sqrt(HISTOGRAM_SHARE) * calibrate_mu(1.0, 1e-5), rel=1e-9)
    assert on.conditioning_["feature_range_release"]["occupied"] == 3
    share_on = r2_score(yt, on.predict(Xt)) / ceiling
    share_off = r2_score(yt, off.predict(Xt)) / ceiling
    assert share_on >= 0.9 and share_on > share_off + 0.1


def _raw_regression(n: int, seed: int, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Columns of scales 1e5, 1 and 1e-3; targets ``scale * (5 + ...)`` in ``[0, 10 scale]``."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 3))
    X = np.column_stack([1e5 * (2.0 + z[:, 0]), z[:, 1], 1e-3 * z[:, 2]])
    y = np.clip(5.0 + z[:, 0] - z[:, 1] + z[:, 2] + 0.3 * rng.standard_normal(n), 0, 10)
    return X, scale * y


def test_huber_releases_the_range_and_centre_and_learns_raw_columns(tmp_path):
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score

    from noisygd.estimators import DPHuberRegressor
    from noisygd.ledger import Ledger

    X, y = _raw_regression(8000, 1, scale=100.0)  # targets in [0, 1000], like bike rentals
    Xt, yt = _raw_regression(4000, 2, scale=100.0)
    ceiling = r2_score(yt, LinearRegression().fit(X, y).predict(Xt))
    ledger = tmp_path / "l.sqlite"
    with Ledger(ledger) as opened:
        opened.set_budget("d", 1.0, 1e-5)

    def fit(**kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return DPHuberRegressor(epsilon=1.0, target_range=(0.0, 1000.0), random_state=0,
                                    target_range_share=0.0, **kw).fit(X, y)

    on = fit(ledger=str(ledger), dataset="d")
    with Ledger(ledger) as opened:
        names = [r.algorithm for r in opened.releases("d")]
    assert names == [f"DPHuberRegressor/{name}" for name in (
        *FEATURE_RANGE_RELEASES, *CONDITIONING_RELEASES, "feature_scale", on.fit_info_["method"])]
    assert on.privacy_.epsilon <= 1.0 * (1 + 1e-9)
    assert on.conditioning_["feature_range_release"]["occupied"] == 3
    share_on = r2_score(yt, on.predict(Xt)) / ceiling
    # before: no releases and the threshold 1 in the targets' units (a median regression
    # whose bounded steps leave the intercept far from the targets' mean)
    old = fit(threshold=1.0, conditioning_share=0.0)
    share_old = r2_score(yt, old.predict(Xt)) / ceiling
    assert share_on >= 0.9 and share_old < 0.5


def test_huber_threshold_auto_is_the_declared_half_range_and_scale_equivariant():
    from noisygd.estimators import DPHuberRegressor

    assert DPHuberRegressor()._threshold() == 1.0  # target_bound=1 declared by default
    assert DPHuberRegressor(target_bound=3.0)._threshold() == 3.0
    assert DPHuberRegressor(target_range=(0.0, 1000.0))._threshold() == 500.0
    assert DPHuberRegressor(threshold=2.0, target_range=(0.0, 1000.0))._threshold() == 2.0
    with pytest.raises(ValueError):
        DPHuberRegressor(threshold="median")._threshold()
    with pytest.raises(ValueError):
        DPHuberRegressor(threshold=-1.0)._threshold()
    # the fit of c y with a range c times as wide is c times the fit of y (the declared range
    # kept, target_range_share=0: the private target range's histogram puts c y in other
    # bins, with other noise draws)
    X, y = _raw_regression(3000, 3)
    Xt, _ = _raw_regression(500, 4)
    preds = []
    for c in (1.0, 250.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = DPHuberRegressor(epsilon=2.0, target_range=(0.0, 10.0 * c), random_state=5,
                                   target_range_share=0.0).fit(X, c * y)
        preds.append(est.predict(Xt) / c)
    assert np.allclose(preds[0], preds[1], rtol=1e-6, atol=1e-9)


def test_range_statistic_size_is_the_statistics_length():
    from noisygd.mechanisms.feature_range import range_statistic_size

    X = np.ones((4, 3))
    assert range_statistic(X).size == range_statistic_size(3) == 3 * 2 * K + 1


def test_the_fit_reports_whether_the_columns_were_pooled():
    # the default fit on 40 columns of one distribution reads them as one (every magnitude
    # the same), on the raw table's columns of scales 1e5 .. 1e-3 one by one
    rng = np.random.default_rng(6)
    X = rng.random((3000, 40)) * 0.1
    y = (rng.random(3000) < 1.0 / (1.0 + np.exp(-(X - 0.05) @ rng.normal(0, 20, 40)))).astype(int)
    report = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(
        X, y).conditioning_["feature_range_release"]
    assert report["pooled"] is True and len(set(report["magnitude"])) == 1
    assert report["homogeneity"]["df"] > 0 and "chi-square" in report["rule"]
    X, y = _raw_table()
    report = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(
        X, y).conditioning_["feature_range_release"]
    assert report["pooled"] is False and len(set(report["magnitude"])) > 1


def test_an_untested_homogeneity_is_reported_as_null():
    # one column: nothing to pool, no statistic; the report says None (JSON null), not NaN
    rng = np.random.default_rng(8)
    X, y = rng.random((300, 1)), (rng.random(300) < 0.5).astype(int)
    report = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(
        X, y).conditioning_["feature_range_release"]
    assert report["pooled"] is False
    assert report["homogeneity"] == {"statistic": None, "df": 0}


def test_release_counts_splits_the_release_into_counts_and_row_count():
    from noisygd.mechanisms.feature_range import release_counts

    X = np.array([[3.0, -0.5], [1.0, 0.0]])
    counts, rows = release_counts(range_statistic(X))
    assert counts.shape == (2, 2, K) and rows == 2.0
    assert np.array_equal(counts, magnitude_histogram(X))
    with pytest.raises(ValueError, match="counts and the row count"):
        release_counts(np.zeros(2 * K))


def test_columns_at_the_grid_ends_are_read_off_the_magnitudes():
    from noisygd.mechanisms.feature_range import columns_at_the_grid_ends

    rng = np.random.default_rng(9)
    X = np.column_stack([rng.standard_normal(500) * 1e13, rng.standard_normal(500),
                         rng.standard_normal(500) * 1e-18])
    released = feature_range_from_release(range_statistic(X), 1.0)
    assert columns_at_the_grid_ends(released) == ([0], [2])
    X[:, 0] /= 1e13
    X[:, 2] /= 1e-18
    assert columns_at_the_grid_ends(feature_range_from_release(range_statistic(X), 1.0)) == (
        [], [])


@pytest.mark.parametrize("factor,words", [(1e13, "top of its grid"),
                                          (1e-18, "bottom of its grid")])
def test_a_column_beyond_the_grid_warns_at_the_callers_line(factor, words):
    # before: a column near 1e13 was projected and one near 1e-18 shrunk to nothing, silently
    rng = np.random.default_rng(10)
    X = rng.standard_normal((3000, 3))
    y = (X @ np.array([1.0, 2.0, 3.0]) > 0).astype(int)
    X[:, 0] *= factor
    with pytest.warns(UserWarning, match=rf"column\(s\) 0 .*{words}") as record:
        DPLogisticRegression(epsilon=8.0, classes=[0, 1], random_state=0).fit(X, y)
    assert all(w.filename == __file__ for w in record if "grid" in str(w.message))
    with warnings.catch_warnings():  # ordinary columns: no such warning
        warnings.filterwarnings("error", message=".*of its grid.*")
        X[:, 0] /= factor
        DPLogisticRegression(epsilon=8.0, classes=[0, 1], random_state=0).fit(X, y)


def test_bin_edges_are_the_grids_binary_exponents():
    from noisygd.mechanisms.feature_range import (
        GRID_BOTTOM_EDGE,
        GRID_TOP_EDGE,
        bin_upper_edge,
        upper_edges,
    )

    assert bin_upper_edge(0) == GRID_BOTTOM_EDGE == 2.0 ** (EXPONENTS[0] + 1)
    assert bin_upper_edge(K - 1) == GRID_TOP_EDGE == 2.0 ** (EXPONENTS[1] + 1)
    occupied = np.zeros((3, K), dtype=bool)
    occupied[0, [2, 5]] = True
    occupied[1, 0] = True
    assert upper_edges(occupied).tolist() == [bin_upper_edge(5), bin_upper_edge(0), 0.0]


@pytest.mark.parametrize(("occupied", "expected"), [
    # the bulk in (16, 64], 1% at (65536, 131072]: 2^6 .. 2^16, 10 empty octaves
    ([(16.0, 32.0, 500.0), (32.0, 64.0, 490.0), (65536.0, 131072.0, 10.0)],
     ((16.0, 64.0), (65536.0, 131072.0), 10)),
    # mirrored: the next stretch toward 0 is the rest
    ([(-131072.0, -65536.0, 10.0), (-64.0, -16.0, 990.0)],
     ((-64.0, -16.0), (-131072.0, -65536.0), 10)),
    # exactly SEPARATED_OCTAVES empty octaves (64 .. 512) is reported, one fewer is not
    ([(32.0, 64.0, 99.0), (512.0, 1024.0, 1.0)], ((32.0, 64.0), (512.0, 1024.0), 3)),
    ([(32.0, 64.0, 99.0), (256.0, 512.0, 1.0)], None),
    # the top stretch holds more than SEPARATED_SHARE of the count: a population of its own
    ([(32.0, 64.0, 80.0), (512.0, 1024.0, 20.0)], None),
    # values near 0 far below the bulk set nothing
    ([(2.0 ** -9, 2.0 ** -8, 5.0), (0.5, 1.0, 995.0)], None),
    # opposite signs and the zero bin are no gap; adjacent bins merge
    ([(-64.0, -32.0, 5.0), (0.0, 0.0, 900.0), (32.0, 64.0, 5.0)], None),
    ([(1.0, 2.0, 50.0), (2.0, 4.0, 50.0), (4.0, 8.0, 1.0)], None),
    # the gap that counts is the one below the top stretch
    ([(2.0 ** -12, 2.0 ** -11, 50.0), (16.0, 32.0, 940.0), (2.0 ** 20, 2.0 ** 21, 10.0)],
     ((16.0, 32.0), (2.0 ** 20, 2.0 ** 21), 15)),
])
def test_separated_spans_reports_a_few_values_far_beyond_the_rest(occupied, expected):
    from noisygd.mechanisms.feature_range import SEPARATED_OCTAVES, SEPARATED_SHARE, separated_spans

    assert (SEPARATED_OCTAVES, SEPARATED_SHARE) == (3, 0.1)
    assert separated_spans(occupied) == expected


def test_separated_columns_reads_each_column_of_the_release():
    rng = np.random.default_rng(12)
    n = 20_000
    codes = rng.integers(1, 6, n).astype(float)
    codes[rng.random(n) < 0.01] = 999.0  # a "missing" code among 1..5
    halves = np.where(rng.random(n) < 0.5, 1.5, 1500.0)  # two populations, half each
    X = np.column_stack([codes, rng.standard_normal(n), halves, -codes])
    released = feature_range_from_release(range_statistic(X), 1.0)  # noise sd 1
    assert released.separated == ((0, (1.0, 8.0), (512.0, 1024.0), 6),
                                  (3, (-8.0, -1.0), (-1024.0, -512.0), 6))


def test_a_column_with_sentinel_values_warns_at_the_callers_line():
    # 1% of column 0 is 999 among values 1..5: its scale is set by the 999s, the other values
    # are served 200 times smaller (silently before)
    rng = np.random.default_rng(13)
    X = rng.uniform(1.0, 5.0, (20_000, 3))
    y = (X[:, 0] + rng.normal(0.0, 1.0, 20_000) > 3.0).astype(int)
    X[rng.random(20_000) < 0.01, 0] = 999.0
    with pytest.warns(UserWarning, match=r"far apart in 1 column\(s\) \(column 0: \[1, 8\] "
                                         r"and \[512, 1024\], 6 empty") as record:
        model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    assert all(w.filename == __file__ for w in record if "far apart" in str(w.message))
    assert model.fit_info_["feature_range"]["separated_columns"] == [
        {"column": 0, "rest": [1.0, 8.0], "top": [512.0, 1024.0], "empty_octaves": 6}]
    with warnings.catch_warnings():  # without the code: no such warning
        warnings.filterwarnings("error", message=".*far apart.*")
        X[X[:, 0] == 999.0, 0] = 3.0
        DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
