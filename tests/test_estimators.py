"""Estimator contract, privacy reports and input validation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from noisygd.accounting.events import Composed, Gaussian
from noisygd.estimators import (
    CONDITIONING_RELEASES,
    CONDITIONING_ROUNDS,
    DPHuberRegressor,
    DPLinearRegression,
    DPLogisticRegression,
)
from noisygd.exceptions import PrivacyLeakWarning
from noisygd.mechanisms.feature_range import FEATURE_RANGE_ROUNDS


def _binary(n=600, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    w = rng.normal(size=d)
    y = (X @ w + 0.1 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _regression(n=600, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y = np.clip(X @ rng.normal(size=d) * 0.5, -1, 1)
    return X, y


def test_same_seed_same_model_and_different_seed_differs():
    X, y = _binary()
    a = DPLogisticRegression(classes=[0, 1], random_state=3).fit(X, y)
    b = DPLogisticRegression(classes=[0, 1], random_state=3).fit(X, y)
    c = DPLogisticRegression(classes=[0, 1], random_state=4).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.intercept_ == b.intercept_
    assert not np.array_equal(a.coef_, c.coef_)


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPLinearRegression])
def test_a_random_state_numpy_cannot_seed_is_refused_by_name(cls):
    # NumPy's own "SeedSequence expects int or sequence of ints" named neither the
    # parameter nor the fix; True was taken silently for the seed 1
    X, y = _binary()
    kw = {"classes": [0, 1]} if cls is DPLogisticRegression else {"target_range": (0.0, 1.0)}
    with pytest.raises(TypeError, match=r"random_state.*RandomState.*default_rng"):
        cls(random_state=np.random.RandomState(1), **kw).fit(X, y)
    for bad in (1.5, "a", True, [], [1, -2]):
        with pytest.raises(TypeError, match="random_state must be None, a non-negative int"):
            cls(random_state=bad, **kw).fit(X, y)
    with pytest.raises(ValueError, match="random_state must be a non-negative int"):
        cls(random_state=-1, **kw).fit(X, y)
    # every accepted form fits, and a seed and its SeedSequence give the same model
    a = cls(random_state=5, **kw).fit(X, y)
    b = cls(random_state=np.random.SeedSequence(5), **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    for good in (np.int64(5), [5, 6], np.random.default_rng(5), None):
        assert np.all(np.isfinite(cls(random_state=good, **kw).fit(X, y).coef_))


def test_privacy_report_meets_budget_and_pays_for_the_count():
    X, y = _binary()
    model = DPLogisticRegression(epsilon=0.7, delta=1e-6, classes=[0, 1], random_state=0)
    model.fit(X, y)
    report = model.privacy_
    assert report.epsilon <= 0.7 * (1 + 1e-9)
    assert report.accountant in report.by_accountant
    assert report.by_accountant[report.accountant] == min(report.by_accountant.values())
    # Under add/remove with no public n, the first release is the Gaussian count.
    assert isinstance(report.event, Composed)
    assert isinstance(report.event.events[0], Gaussian)
    assert model.fit_info_["n_samples_source"].startswith("Gaussian count")
    # The budget is used: the exact Gaussian-DP epsilon is close to the target.
    assert report.by_accountant["gdp"] > 0.69


def test_public_n_and_replace_one_release_no_count():
    X, y = _binary()
    m1 = DPLogisticRegression(classes=[0, 1], n_samples_public=len(y), random_state=0).fit(X, y)
    m2 = DPLogisticRegression(classes=[0, 1], neighbouring="replace_one",
                              random_state=0).fit(X, y)
    from noisygd.accounting.calibration import calibrate_mu
    from noisygd.accounting.gdp import gaussian_mu

    mu = calibrate_mu(1.0, 1e-5)
    for m in (m1, m2):
        # the default's private feature range's rounds at sqrt(0.0625 f_r) mu (f_r its
        # declared split), its private conditioning's rounds at sqrt(0.1 f_k) mu (0.1 mu^2 in
        # all), its per-feature scale at sqrt(0.05) mu, then the run: no count
        events = m.privacy_.event.events
        ranges, events = events[:len(FEATURE_RANGE_ROUNDS)], events[len(FEATURE_RANGE_ROUNDS):]
        *conditioning, scale, run = events
        assert len(conditioning) == len(CONDITIONING_ROUNDS)
        assert not isinstance(run, Composed)
        assert all(isinstance(e, Gaussian) for e in conditioning)
        for event, fraction in zip(ranges, FEATURE_RANGE_ROUNDS, strict=True):
            assert gaussian_mu(event) == pytest.approx(np.sqrt(0.0625 * fraction) * mu, rel=1e-9)
        for event, fraction in zip(conditioning, CONDITIONING_ROUNDS, strict=True):
            assert gaussian_mu(event) == pytest.approx(np.sqrt(0.1 * fraction) * mu, rel=1e-9)
        assert gaussian_mu(scale) == pytest.approx(np.sqrt(0.05) * mu, rel=1e-9)
        assert m.privacy_.epsilon <= 1.0 * (1 + 1e-9)
    assert m2.privacy_.event.neighbouring.value == "replace_one"
    for m in (DPLogisticRegression(feature_range_share=0.0, classes=[0, 1], n_samples_public=len(y),
                                   conditioning_share=0, random_state=0).fit(X, y),):
        assert not isinstance(m.privacy_.event, Composed)  # one release: the run


def test_accuracy_well_above_chance_on_easy_data():
    X, y = _binary(n=4000)
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    assert model.score(X, y) > 0.85
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.predict(X), model.classes_[proba.argmax(axis=1)])


def test_multiclass_one_vs_rest_splits_the_budget():
    rng = np.random.default_rng(0)
    centers = np.eye(3) * 2
    X = np.vstack([c + 0.3 * rng.normal(size=(400, 3)) for c in centers]) / 3
    y = np.repeat(["a", "b", "c"], 400)
    model = DPLogisticRegression(
        feature_range_share=0.0, epsilon=1.0, classes=["a", "b", "c"], multiclass="ovr",
                                 random_state=0).fit(X, y)
    assert model.coef_.shape == (3, 3)
    assert model.privacy_.epsilon <= 1.0 * (1 + 1e-9)
    # the private conditioning's rounds and per-feature scale (releases shared by the 3
    # problems) + count + 3 problems
    rounds = len(CONDITIONING_ROUNDS)
    assert len(model.privacy_.event.events) == rounds + 5
    assert (model.conditioning_["feature_scale_release"]["event"]
            == model.privacy_.event.events[rounds].describe())
    assert model.conditioning_["release"]["event"] == model.privacy_.event.events[0].describe()
    assert model.score(X, y) > 0.8


def test_multiclass_default_is_one_multinomial_problem_with_the_whole_budget():
    # Issue 10, item 4: K > 2 is one softmax problem (one clipped gradient of the K x (d+1)
    # matrix), so the event is the private conditioning's releases (issue 19: feature range,
    # centre, per-feature scale), the count and ONE run, spending the whole budget.
    from noisygd.accounting.calibration import calibrate_mu
    from noisygd.accounting.events import SelfComposed
    from noisygd.accounting.gdp import gaussian_mu
    from noisygd.objectives.multinomial import softmax

    rng = np.random.default_rng(0)
    centers = np.eye(3) * 2
    X = np.vstack([c + 0.3 * rng.normal(size=(400, 3)) for c in centers]) / 3
    y = np.repeat(["a", "b", "c"], 400)
    model = DPLogisticRegression(epsilon=1.0, classes=["a", "b", "c"], random_state=0).fit(X, y)
    events = model.privacy_.event.events
    runs = [e for e in events if isinstance(e, SelfComposed)]
    assert len(runs) == 1 and events[-1] is runs[0]  # one problem, run last
    cond = model.conditioning_
    shares = sum(cond[k]["share"] for k in ("release", "feature_scale_release",
                                            "feature_range_release"))
    mu2 = calibrate_mu(1.0, 1e-5) ** 2
    assert gaussian_mu(runs[0]) ** 2 == pytest.approx((0.99 - shares) * mu2, rel=1e-9)
    assert sum(gaussian_mu(e) ** 2 for e in events) == pytest.approx(mu2, rel=1e-9)
    assert cond["centre"] is not None and cond["feature_scale"] is not None
    alone = DPLogisticRegression(epsilon=1.0, classes=["a", "b", "c"], random_state=0,
                                 conditioning_share=0).fit(X, y)
    _count, run = alone.privacy_.event.events  # nothing released first: count + one run
    assert gaussian_mu(run) ** 2 == pytest.approx(0.99 * mu2, rel=1e-9)
    assert model.coef_.shape == (3, 3) and model.intercept_.shape == (3,)
    scores = model.decision_function(X)
    # rows mapped as the run served them: c + s_i (x_i - c), s_i = min(1, R/||f (x_i - c)||)
    from noisygd.oracles.rows import row_scale

    c, f = cond["centre"], cond["feature_scale"]
    s = row_scale(X, cond["row_norm_bound"], centre=c, feature_scale=f)
    assert 0 < np.sum(s < 1.0) < X.shape[0]
    mapped = c + s[:, None] * (X - c)
    np.testing.assert_allclose(scores, mapped @ model.coef_.T + model.intercept_, atol=1e-10)
    np.testing.assert_allclose(model.predict_proba(X), softmax(scores), atol=1e-12)
    assert model.score(X, y) > 0.9
    with pytest.raises(ValueError, match="multiclass"):
        DPLogisticRegression(classes=["a", "b", "c"], multiclass="both").fit(X, y)


def test_label_set_from_data_warns_and_declared_labels_do_not():
    X, y = _binary()
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        DPLogisticRegression(random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)


@pytest.mark.parametrize("cls", [DPHuberRegressor, DPLinearRegression])
def test_regressors_fit_and_report(cls):
    X, y = _regression(n=3000)
    model = cls(epsilon=1.0, random_state=0).fit(X, y)
    assert model.privacy_.epsilon <= 1.0 * (1 + 1e-9)
    assert model.predict(X).shape == (3000,)
    assert model.score(X, y) > 0.3


def test_clone_pipeline_gridsearch():
    X, y = _binary()
    est = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0)
    assert clone(est).get_params() == est.get_params()
    pipe = Pipeline([("id", FunctionTransformer()), ("clf", est)]).fit(X, y)
    assert pipe.score(X, y) > 0.6
    grid = GridSearchCV(est, {"l2": [1e-4, 1e-2]}, cv=2).fit(X, y)
    assert grid.best_params_["l2"] in (1e-4, 1e-2)


@pytest.mark.parametrize(
    ("X", "match"),
    [
        (np.array([[np.nan, 1.0], [0.0, 1.0]] * 10), "NaN"),
        (np.array([[np.inf, 1.0], [0.0, 1.0]] * 10), "infinity"),
    ],
)
def test_non_finite_features_rejected(X, match):
    y = np.array([0, 1] * 10)
    with pytest.raises(ValueError, match=match):
        DPLogisticRegression(classes=[0, 1]).fit(X, y)


def test_wrong_shapes_rejected():
    X, y = _binary()
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        DPLogisticRegression(classes=[0, 1]).fit(X, y[:-1])
    model = DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])


@pytest.mark.parametrize("eps", [0.0, -1.0, np.inf, np.nan])
def test_bad_epsilon(eps):
    X, y = _binary()
    with pytest.raises(ValueError, match="epsilon"):
        DPLogisticRegression(epsilon=eps, classes=[0, 1]).fit(X, y)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-5, 2.0])
def test_bad_delta(delta):
    X, y = _binary()
    with pytest.raises(ValueError, match="delta"):
        DPLogisticRegression(delta=delta, classes=[0, 1]).fit(X, y)


def test_delta_at_least_one_over_n_warns_with_a_public_n_only():
    X, y = _binary(n=200)
    # add/remove, n private: compared with the released noisy count, after the fit
    with pytest.warns(UserWarning, match="1/n for the public n") as rec:
        model = DPLogisticRegression(delta=0.01, classes=[0, 1], random_state=0).fit(X, y)
    assert f"{model.n_samples_used_:g}" in str(rec[0].message)
    # a declared public n is the one compared and printed (not the private row count)
    with pytest.warns(UserWarning, match="public n = 200"):
        DPLogisticRegression(delta=0.01, n_samples_public=200, classes=[0, 1],
                             random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        DPLogisticRegression(delta=1e-4, n_samples_public=200, classes=[0, 1],
                             random_state=0).fit(X, y)


def test_labels_outside_domain():
    X, y = _binary()
    with pytest.raises(ValueError, match="not in classes") as info:
        DPLogisticRegression(classes=[0, 2]).fit(X, y)
    assert "[1]" not in str(info.value)  # a label read from the data is never printed
    with pytest.raises(ValueError, match="at least 2 classes"):
        DPLogisticRegression(classes=[1]).fit(X, np.ones(len(y), dtype=int))
    with pytest.raises(ValueError, match=r"Unknown label type|continuous"):
        DPLogisticRegression(classes=None).fit(X, np.linspace(0, 1, len(y)))
    # with the label set declared, continuous targets are refused by the membership check
    with pytest.raises(ValueError, match="not in classes"):
        DPLogisticRegression(classes=[0, 1]).fit(X, np.linspace(0, 1, len(y)))


def test_binary_targets_reach_the_oracle_as_int8_labels():
    """The fit's one-vs-rest targets are int8 labels in {-1, +1} (one byte a row): the
    oracles hold them as they are, with no float64 copy of y."""
    from noisygd.estimators._common import _signed_labels
    from noisygd.oracles.array import ArrayOracle

    y = np.array(["b", "a", "b", "c"])
    labels = _signed_labels(y, "b")
    assert labels.dtype == np.int8 and labels.tolist() == [1, -1, 1, -1]
    X, y01 = _binary()
    held = []
    real = ArrayOracle.__init__

    def init(self, *args, **kwargs):
        real(self, *args, **kwargs)
        held.append(self._y)

    ArrayOracle.__init__ = init
    try:
        DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y01)
    finally:
        ArrayOracle.__init__ = real
    assert held and all(t.dtype == np.int8 for t in held)
    assert np.array_equal(held[-1], np.where(y01 == 1, 1, -1))


def test_unknown_method_lists_valid_ones():
    X, y = _binary()
    with pytest.raises(ValueError, match="noisy_gd"):
        DPLogisticRegression(method="magic", classes=[0, 1]).fit(X, y)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_input_fits_and_predicts_like_dense(fmt):
    import scipy.sparse as sp

    X, y = _binary(n=1500, d=6)
    X[np.abs(X) < 0.3] = 0.0  # some zeros
    X[:5] *= 10.0  # rows above the bound: scaled by the same factors in fit and predict
    dense = DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)
    sparse = DPLogisticRegression(classes=[0, 1], random_state=0).fit(
        sp.csr_matrix(X).asformat(fmt), y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sparse.decision_function(sp.csr_matrix(X).asformat(fmt)),
                               dense.decision_function(X), rtol=1e-6, atol=1e-9)
    assert sparse.privacy_.epsilon == dense.privacy_.epsilon


def test_predict_scores_rows_scaled_into_the_training_domain():
    X, y = _binary(n=800)
    model = DPLogisticRegression(classes=[0, 1], row_norm_bound=0.5, random_state=0).fit(X, y)
    X2 = X * 3.0
    c = model.conditioning_["centre"]  # the private centre: rows mapped onto its ball
    f = model.conditioning_["feature_scale"]  # measured in the rescaled coordinates
    assert f is not None and f.shape == (X.shape[1],)
    norms = np.linalg.norm((X2 - c) * f, axis=1)
    scaled = c + (X2 - c) * np.minimum(1.0, 0.5 / norms)[:, None]
    expect = scaled @ model.coef_ + model.intercept_
    np.testing.assert_allclose(model.decision_function(X2), expect, rtol=1e-12, atol=1e-12)


def test_fit_does_not_copy_a_float64_X():
    import tracemalloc

    rng = np.random.default_rng(0)
    X = rng.normal(size=(100_000, 20))  # 16 MB, dense: no CSR conversion
    y = (X[:, 0] > 0).astype(int)
    for share, limit in ((0, 0.5), ("auto", 0.75)):
        model = DPLogisticRegression(delta=1e-6, classes=[0, 1], max_iter=5, random_state=0,
                                     conditioning_share=share)
        tracemalloc.start()
        try:
            model.fit(X, y)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        # a copy of X (or of a scaled X) would exceed X.nbytes; with the default private
        # conditioning two oracles' per-row vectors (O(n), the uncentred one its stage read
        # and the centred one) are held while the second is built
        assert peak < limit * X.nbytes


def test_method_accepts_a_solver_instance():
    from noisygd.solvers import NoisyGDSolver

    X, y = _binary()
    a = DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)
    b = DPLogisticRegression(method=NoisyGDSolver(), classes=[0, 1], random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert clone(b).get_params()["method"].name == "noisy_gd"


@pytest.mark.parametrize(("method", "extra"), [
    ("rrpsgd", {"max_iter": 5000}),
    ("output_perturbation", {}),
])
def test_linear_regression_fits_with_methods_that_do_not_clip(method, extra):
    # Regression (issue 12, item 5): the estimator's default clip was forced on methods
    # that refuse clip=, so they could never fit. They use the declared constants: the
    # squared loss is Lipschitz on the ball of the public radius.
    X, y = _regression(n=800)
    model = DPLinearRegression(epsilon=1.0, method=method, neighbouring="replace_one",
                               radius=2.0, random_state=0, **extra).fit(X, y)
    assert model.privacy_.epsilon <= 1.0 * (1 + 1e-9)
    assert model.predict(X).shape == (800,)
    assert np.linalg.norm(np.append(model.coef_, model.intercept_)) <= 2.0 * (1 + 1e-9) \
        or method == "output_perturbation"  # the released w_T + noise is not projected


@pytest.mark.parametrize("method", ["rrpsgd", "output_perturbation", "langevin"])
def test_linear_regression_without_radius_says_what_a_method_that_does_not_clip_needs(method):
    X, y = _regression()
    with pytest.raises(ValueError, match="radius") as info:
        DPLinearRegression(method=method, neighbouring="replace_one").fit(X, y)
    assert "clip=None" not in str(info.value)


def test_a_clip_given_to_a_method_that_does_not_clip_is_still_refused():
    X, y = _regression()
    with pytest.raises(ValueError, match="leave clip=None"):
        DPLinearRegression(method="rrpsgd", neighbouring="replace_one", radius=2.0,
                           clip=1.0).fit(X, y)


# --- issue 10: conditioning, target range, clip from the residual bound ----------------


def _base_clip(model):
    """The clip a fit started from: before the sharp clip of a noise-limited NoisyGD run
    scaled it (``clip_rule``, tests/test_sharp_clip.py), which this checks too."""
    plan = model.fit_info_["plans"][0]
    rule = plan["plan"].get("clip_rule")
    if rule is None:
        return plan["clip"]
    assert plan["clip"] == pytest.approx(rule["base_clip"] * rule["factor"], rel=1e-15)
    return rule["base_clip"]


def test_linear_regression_default_clip_is_huber_s_constant_times_the_target_scale():
    # targets in [0, 1] (h = 1/2), rows [x - c, s] of norm <= sqrt(R^2 + s^2) with R = 1 and
    # the regression's default s = R/sqrt(d): the residual bound is 2 h sqrt(1 + 1/d); the
    # default clip is Huber's 1.345 times the Popoviciu bound sd(y) <= h, times the row
    # bound: 1.345 h sqrt(R^2 + s^2), i.e. 1.345/2 of the residual bound.
    from noisygd.estimators import HUBER_K

    assert HUBER_K == 1.345
    X, y = _regression()
    y = (y - y.min()) / (y.max() - y.min())
    row = np.sqrt(1.0 + 1.0 / X.shape[1])  # sqrt(R^2 + s^2), R = 1, s = 1/sqrt(d)
    # scale_share=0: the public-bound clip (the private residual scale is tested below)
    ranged = DPLinearRegression(target_range=(0.0, 1.0), target_range_share=0.0, random_state=0,
                                scale_share=0.0, conditioning_share=0).fit(X, y)
    assert ranged.conditioning_["intercept_scale"] == pytest.approx(1.0 / np.sqrt(X.shape[1]))
    assert _base_clip(ranged) == pytest.approx(1.345 * 0.5 * row)
    symmetric = DPLinearRegression(target_bound=1.0, target_range_share=0.0, random_state=0,
                                   scale_share=0.0,
                                   conditioning_share=0).fit(X, y)  # h = 1
    assert _base_clip(symmetric) == pytest.approx(1.345 * row)
    box = DPLinearRegression(target_range=(0.0, 1.0), target_range_share=0.0, feature_bounds=(-0.3,
                                                                                              0.3),
                             intercept_scale=0.2, random_state=0, scale_share=0.0).fit(X, y)
    r_c = 0.3 * np.sqrt(X.shape[1])
    assert _base_clip(box) == pytest.approx(1.345 * 0.5 * np.hypot(r_c, 0.2))
    # the former default (the exact residual bound 2 h sqrt(R^2 + s^2)) stays reachable
    exact = DPLinearRegression(target_range=(0.0, 1.0), target_range_share=0.0,
                               clip=float(np.sqrt(2.0)),
                               random_state=0).fit(X, y)
    assert exact.fit_info_["plans"][0]["clip"] == pytest.approx(np.sqrt(2.0))


def test_linear_regression_s_event_is_calibrated_to_the_huber_clip():
    # The clip changes the loss (a Huber objective), not the privacy: the estimator's fit
    # is exactly fit_private on the plain squared loss with clip = 1.345 h sqrt(R^2 + s^2),
    # whose NoisyGD steps add N(0, (z C)^2) to a sum of sensitivity C (add/remove), i.e.
    # the released event is T Gaussians of noise multiplier z and sensitivity 1 in units of
    # C, and its epsilon meets the budget.
    from noisygd.accounting import best
    from noisygd.accounting.events import SelfComposed
    from noisygd.objectives.glm import SquaredLoss
    from noisygd.oracles.array import ArrayOracle
    from noisygd.training import fit_private

    X, y = _regression()
    y = (y - y.min()) / (y.max() - y.min())
    model = DPLinearRegression(target_range=(0.0, 1.0), target_range_share=0.0,
                               n_samples_public=600, l2=1e-3,
                               intercept_scale=1.0, random_state=4, scale_share=0.0,
                               conditioning_share=0).fit(X, y)  # l2, s = 1: c = 0, v = theta
    plan = model.fit_info_["plans"][0]
    clip = 1.345 * 0.5 * np.sqrt(2.0)  # h = 1/2, R = s = 1 (c = 0: unconditioned coords)
    assert _base_clip(model) == pytest.approx(clip)
    event = model.privacy_.event
    assert isinstance(event, SelfComposed) and isinstance(event.event, Gaussian)
    assert event.event.sensitivity == 1.0
    assert event.event.noise_multiplier == pytest.approx(plan["noise_multiplier"])
    assert event.count == plan["plan"]["steps"]
    assert best(event, 1e-5).epsilon <= 1.0 * (1 + 1e-9)
    oracle = ArrayOracle(SquaredLoss(l2=1e-3, target_bound=0.5), X, y - 0.5,
                         row_norm_bound=1.0)
    fit = fit_private([oracle], method="noisy_gd", epsilon=1.0, delta=1e-5,
                      n_samples_public=600, clip=clip, rng=np.random.default_rng(4),
                      options={"sharp_clip": DPLinearRegression._sharp_clip_ratio()})
    np.testing.assert_allclose(np.append(model.coef_, model.intercept_ - 0.5), fit.thetas[0],
                               rtol=1e-10, atol=1e-12)


def test_target_range_centres_the_targets_and_recovers_a_shifted_model():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(4000, 3)) / np.sqrt(3)
    y = 15.0 + X @ np.array([2.0, -1.0, 1.5])  # in [10, 20]
    model = DPLinearRegression(epsilon=50.0, target_range=(10.0, 20.0), n_samples_public=4000,
                               l2=1e-6, random_state=0).fit(X, y)
    assert model.score(X, y) > 0.9
    assert abs(model.intercept_ - 15.0) < 0.5
    with pytest.raises(ValueError, match="target_range"):
        DPLinearRegression(target_range=(1.0, 1.0)).fit(X, y)
    with pytest.raises(TypeError, match="target_range"):
        DPLinearRegression(target_range=3.0).fit(X, y)


# --- private residual scale (scale_share) ------------------------------------------------


def test_private_residual_scales_are_the_closed_form_on_the_same_draws():
    # (N~, S1~, S2~, Su~) = sum_i (1, t_i, t_i^2, u_i) + N(0, sigma^2 I_4), sigma = 2 Delta/mu;
    # V_hat = min(1, max(((S2~)+ + z s)/N- - (((|S1~| - z s)+)/N+)^2, z s/N-)) and
    # U_hat = min(1, max(Su~, s)/max(N~, 1)), recomputed by hand here from the same four
    # normal draws.
    from noisygd.estimators import SCALE_SUMS, private_residual_scales

    assert SCALE_SUMS == 4
    y = np.linspace(-0.2, 0.3, 101)
    u = np.linspace(0.0, 1.4, 101)  # squared row norms over R^2: clipped to 1 above it
    h, mu, z = 0.5, 0.7, 2.0
    out = private_residual_scales(y, u, h, mu=mu, sensitivity=1.0,
                                  rng=np.random.default_rng(5), z=z)
    sigma = 2.0 / mu
    e = np.random.default_rng(5).normal(0.0, sigma, 4)
    t = y / h
    n_t, s1, s2 = 101 + e[0], t.sum() + e[1], (t**2).sum() + e[2]
    s_u = np.minimum(u, 1.0).sum() + e[3]
    n_lo, n_hi = max(n_t - z * sigma, 1.0), max(n_t + z * sigma, 1.0)
    v = min(1.0, max((max(s2, 0.0) + z * sigma) / n_lo
                     - (max(abs(s1) - z * sigma, 0.0) / n_hi) ** 2, z * sigma / n_lo))
    assert out.target_scale == pytest.approx(np.sqrt(v), rel=1e-12)
    assert out.row_scale == pytest.approx(np.sqrt(min(1.0, max(s_u, sigma) / n_t)), rel=1e-12)
    assert out.noise_multiplier == pytest.approx(sigma / 2.0, rel=1e-12)  # = Delta / mu
    # the intercept's start: the plug-in mean S1~ / N~ (in units of h), clipped to [-1, 1]
    assert out.target_mean == pytest.approx(min(1.0, max(-1.0, s1 / n_t)), rel=1e-12)
    # the event Gaussian(nm, Delta) is exactly mu-GDP (independent: gaussian_mu)
    from noisygd.accounting.gdp import gaussian_mu

    assert gaussian_mu(Gaussian(out.noise_multiplier, 1.0)) == pytest.approx(mu, rel=1e-12)
    # replace-one doubles the sensitivity, hence the noise, at the same mu
    out2 = private_residual_scales(y, u, h, mu=mu, sensitivity=2.0,
                                   rng=np.random.default_rng(5))
    assert out2.noise_multiplier == pytest.approx(2.0 * out.noise_multiplier)
    # targets at both ends of the range (variance 1, Popoviciu's worst case) and rows on the
    # ball's sphere: both factors 1
    ends = np.tile([-3.0, 3.0], 2500)  # clipped to -h, +h
    f1 = private_residual_scales(ends, np.full(5000, 2.0), h, mu=50.0, sensitivity=1.0,
                                 rng=np.random.default_rng(0))
    assert f1.target_scale == pytest.approx(1.0, abs=1e-3)
    assert f1.row_scale == pytest.approx(1.0, abs=1e-3)
    with pytest.raises(ValueError, match="row_fractions"):
        private_residual_scales(y, u[:-1], h, mu=mu, sensitivity=1.0,
                                rng=np.random.default_rng(0))


def test_private_residual_scales_bound_the_variance_and_estimate_the_row_moment():
    # V_hat >= V = var(t) unless one of four one-sided bounds fails: probability at most
    # 4 Phi(-2) = 0.091 per draw. 2000 seeded draws: failures >= 11% has probability
    # < 1e-3 under Binomial(2000, 0.091) (false-failure rate of this test).
    # U_hat is a ratio estimate of U = mean(u): at mu = 0.5, n = 400 its noise is about
    # sigma/n = 0.01 against U = 0.3; its median over the draws is within 0.01 of U (the
    # median of 2000 draws moves by about 1.25 sd/sqrt(2000) = 0.0003: failure < 1e-9).
    from noisygd.estimators import private_residual_scales

    y = np.random.default_rng(1).uniform(-0.3, 0.0, 400)  # off-centre: mean far from 0
    u = np.random.default_rng(4).uniform(0.0, 0.6, 400)
    v = float(np.var(y / 0.5))
    rng = np.random.default_rng(2)
    draws = [private_residual_scales(y, u, 0.5, mu=0.5, sensitivity=1.0, rng=rng)
             for _ in range(2000)]
    below = sum(d.target_scale ** 2 < v for d in draws)
    assert below / 2000 < 0.11
    assert np.median([d.row_scale ** 2 for d in draws]) == pytest.approx(u.mean(), abs=0.01)
    # and both are informative when the noise is small: within 0.1% of sd(t) (far below the
    # second moment about the midpoint, which the mean's square would inflate) and of
    # sqrt(mean(u))
    f = private_residual_scales(y, u, 0.5, mu=1e5, sensitivity=1.0,
                                rng=np.random.default_rng(3))
    assert f.target_scale == pytest.approx(np.sqrt(v), rel=1e-3)
    assert f.target_scale < 0.5 * np.sqrt(np.mean((y / 0.5) ** 2))
    assert f.row_scale == pytest.approx(np.sqrt(u.mean()), rel=1e-3)


def test_private_scale_bounds_the_least_squares_residual_scale():
    # The class doc's inequality: mean (y - y_hat)^2 <= var(y) = h^2 V <= h^2 (least squares
    # beats the constant; Popoviciu), with scikit-learn's OLS (independent) for y_hat; and the
    # released scale h^2 V_hat bounds it, V_hat >= V unless one of its one-sided bounds fails.
    # At mu = 1e4 (sigma = 2e-4 on sums over 200 rows) the noise is far below the margins
    # z sigma that V_hat adds, so none fails on these seeded draws.
    from sklearn.linear_model import LinearRegression

    from noisygd.estimators import private_residual_scales

    rng = np.random.default_rng(7)
    for k in range(20):
        X = rng.normal(size=(200, 4))
        y = np.clip(X @ rng.normal(size=4) * 0.1 + rng.uniform(0.1, 0.9), 0.0, 1.0)
        resid = y - LinearRegression().fit(X, y).predict(X)
        assert np.mean(resid**2) <= np.var(y) + 1e-12
        assert np.var(y) <= 0.5**2
        released = private_residual_scales(y - 0.5, np.full(200, 0.5), 0.5, mu=1e4,
                                           sensitivity=1.0, rng=np.random.default_rng(k))
        assert (0.5 * released.target_scale) ** 2 >= np.var(y)
        assert (0.5 * released.target_scale) ** 2 >= np.mean(resid**2)
        assert released.target_scale <= 1.0


def test_linear_regression_private_scale_composes_and_sets_the_clip():
    from noisygd.accounting import best
    from noisygd.accounting.calibration import calibrate_mu
    from noisygd.accounting.gdp import gaussian_mu
    from noisygd.estimators import huber_clip

    X, y = _regression()
    y = 0.5 + 0.1 * y  # targets near the midpoint: M is small
    # conditioning_share=0: the scale in the public coordinates (c = 0, s = R/sqrt(d))
    kw = {"target_range": (0.0, 1.0), "target_range_share": 0.0, "random_state": 3,
          "conditioning_share": 0}
    root_d = np.sqrt(X.shape[1])
    off = DPLinearRegression(scale_share=0.0, **kw).fit(X, y)
    assert off.target_scale_ == 1.0 and off.row_scale_ == 1.0
    assert _base_clip(off) == pytest.approx(huber_clip(0.5, 1.0, 1 / root_d))
    on = DPLinearRegression(scale_share=0.05, **kw).fit(X, y)
    clip = _base_clip(on)
    assert 0.0 < on.target_scale_ < 0.8
    # h = 1/2, R = 1: the row bound's part is R sqrt(U_hat); s = R/sqrt(d) is public
    row = on.row_scale_
    assert 0.0 < row <= 1.0
    assert on.conditioning_["intercept_scale"] == pytest.approx(1 / root_d, rel=1e-12)
    assert clip == pytest.approx(on.target_scale_ * huber_clip(0.5, row, 1 / root_d),
                                 rel=1e-12)
    assert clip <= on.target_scale_ * huber_clip(0.5, 1.0, 1 / root_d)  # never above
    event = on.privacy_.event
    assert isinstance(event, Composed)
    first = event.events[0]  # the scale's release comes first, at sqrt(f) mu
    assert gaussian_mu(first) == pytest.approx(np.sqrt(0.05) * calibrate_mu(1.0, 1e-5),
                                               rel=1e-9)
    assert gaussian_mu(event) == pytest.approx(calibrate_mu(1.0, 1e-5), rel=1e-9)
    assert best(event, 1e-5).epsilon <= 1.0 * (1 + 1e-9)
    again = DPLinearRegression(scale_share=0.05, **kw).fit(X, y)  # reproducible
    np.testing.assert_array_equal(again.coef_, on.coef_)
    assert again.target_scale_ == on.target_scale_
    assert not hasattr(on, "_prior_events")  # no event left behind for a later fit
    # skipped (nothing spent, public clip) with a given clip or another method
    given = DPLinearRegression(scale_share=0.05, clip=0.3, **kw).fit(X, y)
    assert given.target_scale_ == 1.0 and given.fit_info_["plans"][0]["clip"] == 0.3
    # every clipping method that composes with a prior release uses it (issue 19: NoisySGD
    # and DP-FTRL too), and starts the intercept at the released target mean
    from noisygd.accounting.registry import best as best_of

    sgd = DPLinearRegression(scale_share=0.05, method="noisy_sgd", **kw).fit(X, y)
    assert 0.0 < sgd.target_scale_ < 0.8
    assert best_of(sgd.privacy_.event, 1e-5).epsilon <= 1.0 * (1 + 1e-9)
    assert sgd.target_centre_ != 0.5 and abs(sgd.target_centre_ - float(np.mean(y))) < 0.1
    # a method that does not clip does not release it (its sensitivity is the constants')
    op = DPLinearRegression(scale_share=0.05, method="output_perturbation", radius=5.0,
                            neighbouring="replace_one", **kw).fit(X, y)
    assert op.target_scale_ == 1.0 and op.target_centre_ == 0.5


def test_linear_regression_private_scale_keeps_earlier_prior_events():
    from noisygd.accounting.gdp import gaussian_mu

    X, y = _regression()
    est = DPLinearRegression(scale_share=0.05, target_range=(-1.0, 1.0), random_state=0)
    earlier = Gaussian(20.0)
    est._prior_events = (earlier,)  # as noisygd.schema.paid sets it
    est.fit(X, y)
    assert est._prior_events == (earlier,)
    assert est.privacy_.event.events[0] == earlier
    assert gaussian_mu(est.privacy_.event.events[1]) > 0


@pytest.mark.parametrize("bad, exc", [(-0.1, ValueError), (0.6, ValueError), (1.0, ValueError),
                                      ("a", TypeError)])
def test_linear_regression_scale_share_is_checked(bad, exc):
    X, y = _regression()
    with pytest.raises(exc, match="scale_share"):
        DPLinearRegression(scale_share=bad).fit(X, y)


def test_linear_regression_private_scale_is_the_default_and_skipped_when_tuned():
    from noisygd.accounting.calibration import calibrate_mu
    from noisygd.accounting.gdp import gaussian_mu

    X, y = _regression()
    y = 0.5 + 0.1 * y
    assert DPLinearRegression(
        feature_range_share=0.0, ).get_params()["scale_share"] == 0.1  # a declared split
    kw = {"target_range": (0.0, 1.0), "target_range_share": 0.0, "random_state": 3}
    on = DPLinearRegression(feature_range_share=0.0, **kw).fit(X, y)
    # the private centre's releases first (the default without bounds: its rounds), its
    # per-feature scale's, then the residual scale's
    *centre, features, scale, count, _ = on.privacy_.event.events
    mu = calibrate_mu(1.0, 1e-5)
    assert on.conditioning_["release"]["event"] == centre[0].describe()
    assert on.conditioning_["release"]["events"] == [e.describe() for e in centre]
    assert on.conditioning_["feature_scale_release"]["event"] == features.describe()
    assert gaussian_mu(features) == pytest.approx(np.sqrt(0.05) * mu, rel=1e-9)
    assert sum(gaussian_mu(e) ** 2 for e in centre) == pytest.approx(0.1 * mu * mu, rel=1e-9)
    assert gaussian_mu(scale) == pytest.approx(np.sqrt(0.1) * mu, rel=1e-9)
    assert gaussian_mu(count) == pytest.approx(np.sqrt(0.01) * mu, rel=1e-9)  # unchanged
    assert gaussian_mu(on.privacy_.event) == pytest.approx(mu, rel=1e-9)
    assert 0.0 < on.target_scale_ < 1.0
    # a tuned fit is another procedure (a private selection scaling the clip itself): its
    # runs use the public-bound clip, and nothing is released for the scale
    tuned = DPLinearRegression(feature_range_share=0.0, tune=True, **kw).fit(X, y)
    assert tuned.target_scale_ == 1.0


def test_intercept_scale_one_without_bounds_is_the_unconditioned_model():
    # v = theta when c = 0 and s = 1, and the penalty on v is the penalty on theta: the
    # conditioned fit is exactly the plain LogisticLoss fit with the same noise.
    from noisygd.objectives.glm import LogisticLoss
    from noisygd.oracles.array import ArrayOracle
    from noisygd.training import fit_private

    X, y = _binary()
    model = DPLogisticRegression(classes=[0, 1], intercept_scale=1.0, n_samples_public=600,
                                 random_state=4).fit(X, y)
    # l2=None: the planned ridge, i.e. the objective's l2 = 0 plus NoisyGD's "l2": "auto"
    oracle = ArrayOracle(LogisticLoss(l2=0.0), X, np.where(y == 1, 1.0, -1.0),
                         row_norm_bound=1.0)
    fit = fit_private([oracle], method="noisy_gd", epsilon=1.0, delta=1e-5,
                      n_samples_public=600, clip=float(np.sqrt(2.0)),
                      options={"l2": "auto", "sharp_clip": 0.5}, rng=np.random.default_rng(4))
    np.testing.assert_allclose(np.append(model.coef_, model.intercept_), fit.thetas[0],
                               rtol=1e-12, atol=1e-12)


def test_conditioned_model_is_reported_in_the_original_coordinates():
    # With feature_bounds the fit runs in v = [w, (b + <c, w>)/s]; coef_/intercept_ are w, b
    # and predictions on rows inside the box are <w, x> + b.
    X, y = _binary(d=4)
    X = np.clip(X, -0.4, 0.4)
    model = DPLogisticRegression(classes=[0, 1], feature_bounds=([-0.4] * 4, [0.4] * 4),
                                 random_state=0).fit(X, y)
    assert model.conditioning_["centre"] is not None
    assert model.conditioning_["row_norm_bound"] == pytest.approx(0.8)
    np.testing.assert_allclose(model.decision_function(X), X @ model.coef_ + model.intercept_,
                               rtol=1e-12, atol=1e-12)
    assert model.score(X, y) > 0.75
    # a row outside the box is projected onto the ball around c before scoring
    far = np.full((1, 4), 10.0)
    c, r = np.zeros(4), 0.8
    mapped = c + (far - c) * r / np.linalg.norm(far - c)
    assert model.decision_function(far)[0] == pytest.approx(
        float((mapped @ model.coef_)[0] + model.intercept_))


@pytest.mark.parametrize(("bounds", "exc"), [
    ((0.0,), TypeError), ("ab", ValueError), ((1.0, 0.0), ValueError),
    (([0.0, 0.0], [1.0, 1.0]), ValueError), ((0.0, np.inf), ValueError)])
def test_feature_bounds_checked(bounds, exc):
    X, y = _binary(d=5)
    with pytest.raises(exc, match="feature_bounds"):
        DPLogisticRegression(classes=[0, 1], feature_bounds=bounds).fit(X, y)


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPLinearRegression])
def test_a_schema_s_public_centring_is_used_as_declared(cls):
    # noisygd.data.public_centring reads no data: the declaration a user of load_uci gives.
    from noisygd.data import public_centring

    pc = public_centring("bank")
    rng = np.random.default_rng(0)
    d = pc.centre.size
    X = pc.centre + rng.uniform(-1, 1, size=(400, d)) * pc.radius / (2 * np.sqrt(d))
    assert np.all(np.linalg.norm(X - pc.centre, axis=1) <= pc.radius)
    kw = {"classes": [0, 1]} if cls is DPLogisticRegression else {"target_range": (0, 1)}
    y = (X @ rng.normal(size=d) > pc.centre @ rng.normal(size=d)).astype(int)
    model = cls(feature_bounds=pc, random_state=0, **kw).fit(X, y)
    cond = model.conditioning_
    np.testing.assert_array_equal(cond["centre"], pc.centre)
    assert cond["row_norm_bound"] == pc.radius
    assert cond["intercept_scale"] == pc.intercept_scale
    pred = model.decision_function(X) if cls is DPLogisticRegression else model.predict(X)
    linear = X @ model.coef_ + model.intercept_
    if cls is DPLinearRegression:  # projected onto target_range (clip_predictions)
        linear = np.clip(linear, 0.0, 1.0)
    np.testing.assert_allclose(pred, linear, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ HTML reports (issue 11)
@pytest.mark.parametrize("cls", [DPLogisticRegression, DPLinearRegression, DPHuberRegressor])
def test_privacy_is_an_accounting_result_with_an_html_report_of_the_fit(cls):
    import pickle

    from noisygd.accounting import best
    from noisygd.accounting.base import AccountingResult
    from noisygd.report import to_html

    X, y = _binary() if cls is DPLogisticRegression else _regression()
    kw = {"classes": [0, 1]} if cls is DPLogisticRegression else {}
    model = cls(epsilon=1.0, random_state=0, **kw).fit(X, y)
    privacy = model.privacy_
    plain = best(privacy.event, privacy.delta)
    # unchanged as an accounting result: type, equality both ways, dict
    assert isinstance(privacy, AccountingResult)
    assert privacy == plain and plain == privacy
    assert privacy.to_dict() == plain.to_dict() == model.privacy_report()
    # the estimator's page and privacy_'s page are the same page, made by noisygd.report
    page = model.to_html(curves=False)
    assert page == privacy.to_html(curves=False) == to_html(model, curves=False)
    assert page.startswith("<!DOCTYPE html>") or page.lstrip().lower().startswith("<!doctype")
    assert cls.__name__ in page and "data handling" in page.lower()
    # pickling keeps both
    again = pickle.loads(pickle.dumps(model))
    assert again.privacy_ == privacy and again.to_html(curves=False) == page




@pytest.mark.parametrize("cls", [DPLinearRegression, DPHuberRegressor])
def test_predictions_are_projected_onto_the_declared_target_range(cls):
    """clip_predictions (default True): predict is the linear score clipped to the range the
    targets were clipped to (target_range, else [-target_bound, target_bound]); for targets
    inside it the squared error never grows; False gives the linear score; the flag is
    checked at fit."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-1.0, 1.0, (400, 3)) / 2.0
    y = np.clip(0.9 + X @ np.array([1.0, -0.5, 0.3]) + 0.05 * rng.standard_normal(400), 0, 1)
    kw = {"epsilon": 0.3, "random_state": 1, "feature_bounds": (-np.ones(3) / 2,
                                                                 np.ones(3) / 2)}
    clipped = cls(target_range=(0.0, 1.0), **kw).fit(X, y)
    linear = cls(target_range=(0.0, 1.0), clip_predictions=False, **kw).fit(X, y)
    np.testing.assert_array_equal(clipped.coef_, linear.coef_)  # the fit is the same
    raw = linear.predict(X)
    np.testing.assert_allclose(raw, X @ linear.coef_ + linear.intercept_, rtol=1e-12,
                               atol=1e-12)
    assert raw.max() > 1.0  # the targets sit near the top of the range: some scores exceed it
    pred = clipped.predict(X)
    np.testing.assert_array_equal(pred, np.clip(raw, 0.0, 1.0))
    assert np.all(np.abs(pred - y) <= np.abs(raw - y))
    assert clipped.score(X, y) >= linear.score(X, y)
    bounded = cls(target_bound=0.5, **kw).fit(X, y)  # no range: [-target_bound, target_bound]
    assert np.abs(bounded.predict(X)).max() <= 0.5
    with pytest.raises(TypeError, match="clip_predictions"):
        cls(clip_predictions=1, **kw).fit(X, y)

@pytest.mark.parametrize("cls", [DPLogisticRegression, DPLinearRegression, DPHuberRegressor])
def test_a_pickle_naming_the_public_module_loads(cls):
    """``noisygd.estimators`` became a package (docs/architecture.md, item 17): a model pickled
    before, which names ``noisygd.estimators.<Class>``, loads into the same class and predicts
    the same."""
    import pickle

    import noisygd.estimators

    X, y = _binary() if cls is DPLogisticRegression else _regression()
    kw = {"classes": [0, 1]} if cls is DPLogisticRegression else {}
    model = cls(epsilon=1.0, random_state=0, **kw).fit(X, y)
    data = pickle.dumps(model, protocol=2)  # protocol 2: the class's module as plain text
    here = cls.__module__.encode()
    assert here.startswith(b"noisygd.estimators._") and here in data
    again = pickle.loads(data.replace(here, b"noisygd.estimators"))
    assert type(again) is cls is getattr(noisygd.estimators, cls.__name__)
    np.testing.assert_array_equal(again.predict(X), model.predict(X))

def test_privacy_to_html_of_a_refitted_estimator_reports_the_result_alone():
    from noisygd.report import to_html

    X, y = _binary()
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    first = model.privacy_
    model.set_params(epsilon=2.0).fit(X, y)
    page = first.to_html(curves=False)
    # the old result no longer describes the estimator: its page is the accounting alone
    from noisygd.accounting import best

    assert page == to_html(best(first.event, first.delta), curves=False)
    assert "DPLogisticRegression" not in page
    assert model.privacy_.to_html(curves=False) == model.to_html(curves=False)


def test_to_html_before_fit_is_not_fitted_error():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        DPLinearRegression().to_html()


# ------------------------------------------------------------------ the planned ridge (l2=None)


def test_default_l2_is_the_planned_ridge_of_the_public_facts():
    import math

    from noisygd.accounting.calibration import calibrate_mu
    from noisygd.planning import ridge_strength

    X, y = _binary(n=800, d=5)
    model = DPLogisticRegression(
        feature_range_share=0.0, epsilon=1.0, classes=[0, 1], n_samples_public=800,
                                 random_state=0).fit(X, y)
    plan = model.fit_info_["plans"][0]
    # n public: no count, the budget less the private conditioning's share (0.1 of mu^2)
    # and the per-feature scale's (0.05) on the run; d = 5 features + intercept
    share = (model.conditioning_["release"]["share"]
             + model.conditioning_["feature_scale_release"]["share"])
    lam = ridge_strength(n=800.0, n_params=6, clip=plan["clip"],
                         mu=math.sqrt(1.0 - share) * calibrate_mu(1.0, 1e-5),
                         loss_at_zero=math.log(2))
    assert model.l2_ == pytest.approx(lam, rel=1e-9)
    assert plan["plan"]["l2_planned"] == pytest.approx(lam, rel=1e-9)
    # multinomial: F0 = log K and d = (K - 1) (p + 1), the noise dimension
    Xm = np.vstack([X, X[:100] + 0.1])
    ym = np.concatenate([y, np.full(100, 2)])
    multi = DPLogisticRegression(
        feature_range_share=0.0, epsilon=1.0, classes=[0, 1, 2], n_samples_public=900,
                                 random_state=0).fit(Xm, ym)
    mplan = multi.fit_info_["plans"][0]
    mshare = (multi.conditioning_["release"]["share"]
              + multi.conditioning_["feature_scale_release"]["share"])
    assert multi.l2_ == pytest.approx(ridge_strength(
        n=900.0, n_params=12, clip=mplan["clip"], mu=math.sqrt(1.0 - mshare) * calibrate_mu(
            1.0, 1e-5), loss_at_zero=math.log(3)), rel=1e-9)


def test_default_l2_shrinks_with_epsilon_and_with_n():
    X, y = _binary(n=2000, d=5)
    by_eps = [DPLogisticRegression(epsilon=e, classes=[0, 1], n_samples_public=2000,
                                   random_state=0).fit(X, y).l2_ for e in (0.5, 1.0, 4.0)]
    assert by_eps[0] > by_eps[1] > by_eps[2] > 0
    by_n = [DPLogisticRegression(classes=[0, 1], n_samples_public=n, random_state=0)
            .fit(X[:n], y[:n]).l2_ for n in (500, 1000, 2000)]
    assert by_n[0] > by_n[1] > by_n[2] > 0
    # with a private count the ridge is planned from its lower confidence bound: no smaller
    # than the one planned with the true n declared public at the same run budget
    private = DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)
    assert private.fit_info_["plans"][0]["plan"]["n_signal"] < 2000
    assert private.l2_ > by_n[2]


def test_explicit_l2_and_other_methods_keep_their_ridge():
    X, y = _binary(n=600)
    assert DPLogisticRegression(l2=1e-3, classes=[0, 1], random_state=0).fit(X, y).l2_ == 1e-3
    model = DPLogisticRegression(l2=0.0, classes=[0, 1], n_samples_public=600,
                                 random_state=0).fit(X, y)
    assert model.l2_ == 0.0 and "l2_planned" not in model.fit_info_["plans"][0]["plan"]
    other = DPLogisticRegression(method="dynamic", classes=[0, 1], random_state=0).fit(X, y)
    assert other.l2_ == DPLogisticRegression._L2_DEFAULT  # no planned ridge: the constant
    given = DPLogisticRegression(classes=[0, 1], method_options={"l2": 2e-3},
                                 n_samples_public=600, random_state=0).fit(X, y)
    assert given.fit_info_["plans"][0]["plan"]["l2_planned"] == 2e-3
    assert given.l2_ == pytest.approx(DPLogisticRegression._L2_DEFAULT + 2e-3)  # added to it


# --- least squares' own conditioning: intercept scale R/sqrt(d), row moment, horizon -------


def _box_regression(n=400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    half = 0.5 / np.sqrt(d)
    # features spread over a tenth to all of their box: anisotropic, off the box's sphere
    X = half + np.geomspace(0.1, 1.0, d) * rng.uniform(-half, half, size=(n, d))
    y = np.clip(0.4 + (X - half) @ rng.normal(size=d) + 0.1 * rng.normal(size=n), 0.0, 1.0)
    return X, y, (np.zeros(d), np.full(d, 2 * half))


def test_default_intercept_scale_with_a_box_is_r_over_root_d_for_both_models():
    from noisygd.estimators import DPLogisticRegression

    X, y, box = _box_regression()
    d = X.shape[1]
    r = float(np.linalg.norm(box[1] / 2))  # the box's exact radius about its centre: 1/2
    lin = DPLinearRegression(target_range=(0, 1), feature_bounds=box, random_state=0).fit(X, y)
    assert lin.conditioning_["row_norm_bound"] == pytest.approx(r)
    assert lin.conditioning_["intercept_scale"] == pytest.approx(r / np.sqrt(d), rel=1e-12)
    given = DPLinearRegression(target_range=(0, 1), feature_bounds=box, intercept_scale=0.3,
                               random_state=0).fit(X, y)
    assert given.conditioning_["intercept_scale"] == 0.3
    log = DPLogisticRegression(classes=[0, 1], feature_bounds=box, random_state=0).fit(
        X, (y > 0.4).astype(int))
    assert log.conditioning_["intercept_scale"] == pytest.approx(r / np.sqrt(d), rel=1e-12)
    # coef_/intercept_ are in the original coordinates whatever s: b = s v_b - <c, w>
    centre = lin.conditioning_["centre"]
    v_b = (lin.intercept_ - 0.5 + lin.coef_ @ centre) / (r / np.sqrt(d))  # targets centred at 1/2
    assert lin.predict(X[:3]) == pytest.approx(
        (X[:3] - centre) @ lin.coef_ + r / np.sqrt(d) * v_b + 0.5, rel=1e-9)


def test_linear_regression_row_moment_is_of_the_served_rows_dense_and_sparse():
    # u_i = min(||x_i - c||, R)^2 / R^2: the rows the fit serves (projected onto the ball)
    import scipy.sparse as sp

    X, y, box = _box_regression(n=50)
    X[0] = box[1] * 3.0  # far outside the box: projected, u = 1
    est = DPLinearRegression(target_range=(0, 1), feature_bounds=box)
    est.fit(X, y)
    centre, bound = est.conditioning_["centre"], est.conditioning_["row_norm_bound"]
    expected = np.minimum(np.linalg.norm(X - centre, axis=1) / bound, 1.0) ** 2
    assert expected[0] == 1.0
    targets = [np.clip(y, 0.0, 1.0) - 0.5]
    for rows in (X, sp.csr_matrix(X)):  # the sums the scale release reads from the oracle
        sums = est._oracles(rows, targets)[0].bounded_row_sums(0.5)
        assert sums.squared_norms == pytest.approx(expected.sum(), rel=1e-12)


def test_linear_regression_runs_to_the_ridge_horizon_unless_told_otherwise():
    from noisygd.planning import ridge_horizon_steps

    X, y, box = _box_regression()
    kw = {"target_range": (0, 1), "feature_bounds": box, "random_state": 0}
    model = DPLinearRegression(**kw).fit(X, y)
    plan = model.fit_info_["plans"][0]["plan"]
    assert plan["steps_rule"].startswith("ridge horizon")
    accelerated = DPLinearRegression(method_options={"horizon": None}, **kw).fit(X, y)
    t_plan = int(accelerated.n_iter_[0])
    assert accelerated.fit_info_["plans"][0]["plan"]["l2"] == plan["l2"]  # the same ridge
    # R^2 + s^2 declared, or the residual scale's released smoothness (its upper confidence
    # bound, given to the planner also where the release does not resolve the rows' scale)
    released = model.fit_info_.get("released_facts") or {}
    beta = released.get("smoothness") or float(np.linalg.norm(box[1] / 2)) ** 2 * (
        1 + 1 / X.shape[1])
    lam = plan["l2"]
    expected = ridge_horizon_steps(smoothness=beta + lam, strong_convexity=lam,
                                   planned_steps=t_plan, momentum=plan["momentum"])
    assert int(model.n_iter_[0]) == expected > t_plan
    assert model.fit_info_["plans"][0]["averaging"] == "suffix"
    capped = DPLinearRegression(max_iter=50, **kw).fit(X, y)  # a given T is kept
    assert int(capped.n_iter_[0]) == 50
    # the event is the budget's whatever T: the same mu-GDP (its epsilon within the budget)
    for m in (model, accelerated, capped):
        assert m.privacy_.epsilon <= 1.0 * (1 + 1e-9)


def test_the_default_method_is_chosen_by_public_facts_and_says_why():
    # Issue 19, item 2: method="auto" picks NoisyGD or Newton by choose_method's rule (public
    # facts only: NoisyGD's compute budget and Newton's eigenvalue floor), and fit_info_
    # says which and why; method="noisy_gd" is never replaced.
    import warnings as _w

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 10)) / np.sqrt(10)
    y = (rng.random(3000) < 1 / (1 + np.exp(-3 * X[:, 0]))).astype(int)
    small = DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)
    assert small.fit_info_["method"] == "noisy_gd"
    assert small.fit_info_["method_choice"]["rule"].startswith("NoisyGD: its accelerated rule")
    # a large budget on the same rows: NoisyGD's rule wants more than its budget, and the
    # Newton floor is small against n beta / p: Newton, in a few steps, same privacy
    with _w.catch_warnings():
        _w.simplefilter("ignore")
        big = DPLogisticRegression(epsilon=200.0, classes=[0, 1], random_state=0).fit(X, y)
        forced = DPLogisticRegression(epsilon=200.0, method="noisy_gd", classes=[0, 1],
                                      random_state=0).fit(X, y)
    assert big.fit_info_["method"] == "newton", big.fit_info_["method_choice"]
    assert big.n_iter_[0] <= 20 and "optimisation-limited" in big.fit_info_[
        "method_choice"]["rule"]
    assert big.privacy_.epsilon <= 200.0 * (1 + 1e-9)
    assert forced.fit_info_["method"] == "noisy_gd" and "method_choice" not in forced.fit_info_
    assert big.score(X, y) >= forced.score(X, y) - 0.02
    # the rule itself (choose_method on given plans and facts) is checked in
    # tests/solvers/test_newton_solver.py::test_auto_rule_compares_the_fractions_each_method_keeps


def test_private_conditioning_is_the_closed_form_on_the_same_draws():
    # (S_x~, S_u~, N~) = sum_i (x~_i/R, ||x~_i||^2/R^2, 1) + N(0, sigma^2 I), sigma = sqrt3 D/mu;
    # c = R S_x~/N, U_c = min(1, max(S_u~/N - ||c_hat||^2 + 2 p sigma^2/N^2, sigma/N))
    import scipy.sparse as sp_

    from noisygd.accounting.gdp import gaussian_mu
    from noisygd.estimators import private_conditioning

    rng = np.random.default_rng(3)
    X = rng.random((400, 6)) * 0.6
    X[0] *= 10.0  # a row beyond R = 1: projected onto the ball first
    R, mu = 1.0, 0.8
    out = private_conditioning(X, R, mu=mu, sensitivity=1.0, rng=np.random.default_rng(9))
    sigma = np.sqrt(3.0) / mu
    e = np.random.default_rng(9).normal(0.0, sigma, 8)
    norms = np.linalg.norm(X, axis=1)
    Xt = X * np.minimum(1.0, R / norms)[:, None]
    n_t = 400 + e[7]
    c_hat = (Xt.sum(0) + e[:6]) / n_t
    u = ((np.linalg.norm(Xt, axis=1) / R) ** 2).sum() + e[6]
    u_c = min(1.0, max(u / n_t - c_hat @ c_hat + 2 * 6 * sigma**2 / n_t**2, sigma / n_t))
    np.testing.assert_allclose(out.centre, R * c_hat, rtol=1e-10)
    assert out.row_scale == pytest.approx(np.sqrt(u_c), rel=1e-10)
    assert out.intercept_scale == pytest.approx(R * np.sqrt(u_c), rel=1e-10)
    assert out.clip == pytest.approx(R * np.sqrt(2 * u_c), rel=1e-10)
    # the event Gaussian(nm, 1) is exactly mu-GDP; CSR rows give the same release
    assert gaussian_mu(Gaussian(out.noise_multiplier, 1.0)) == pytest.approx(mu, rel=1e-12)
    again = private_conditioning(sp_.csr_matrix(X), R, mu=mu, sensitivity=1.0,
                                 rng=np.random.default_rng(9))
    np.testing.assert_allclose(again.centre, out.centre, rtol=1e-10)


def test_private_conditioning_composes_records_first_and_reports():
    from noisygd.accounting.gdp import gaussian_mu
    from noisygd.accounting.registry import best
    from noisygd.estimators import CONDITIONING_SHARE

    rng = np.random.default_rng(0)
    X = rng.random((3000, 8)) / np.sqrt(8)  # uncentred rows, no bounds declared
    y = (rng.random(3000) < 1 / (1 + np.exp(-(X @ np.full(8, 4.0) - 4.5)))).astype(int)
    kw = {"epsilon": 1.0, "classes": [0, 1], "random_state": 0}
    on = DPLogisticRegression(
        feature_range_share=0.0, conditioning_share=CONDITIONING_SHARE, **kw).fit(X, y)
    off = DPLogisticRegression(feature_range_share=0.0, conditioning_share=0, **kw).fit(X, y)
    assert "release" not in off.conditioning_ and off.conditioning_["centre"] is None
    default = DPLogisticRegression(
        feature_range_share=0.0, **kw).fit(X, y)  # "auto": on, at CONDITIONING_SHARE
    assert default.conditioning_["release"]["share"] == CONDITIONING_SHARE
    np.testing.assert_array_equal(default.coef_, on.coef_)
    rel = on.conditioning_["release"]
    # the releases come first, at sqrt(f f_k) mu (f_k the rounds' split)
    rounds = on.privacy_.event.events[:len(CONDITIONING_ROUNDS)]
    for event, fraction in zip(rounds, CONDITIONING_ROUNDS, strict=True):
        assert gaussian_mu(event) == pytest.approx(
            np.sqrt(0.1 * fraction) * gaussian_mu(on.privacy_.event), rel=1e-9)
    assert best(on.privacy_.event, 1e-5).epsilon <= 1.0 * (1 + 1e-9)
    assert on.conditioning_["centre"] is not None
    plan = on.fit_info_["plans"][0]["plan"]  # the run clips at the released scale, times
    assert plan["clip_rule"]["base_clip"] == pytest.approx(rel["clip"], rel=1e-12)  # the
    clip = rel["clip"] * plan["clip_rule"]["factor"]  # sharp clip's factor (tests/test_sharp_clip)
    assert plan["sigma"] / plan["noise_multiplier"] == pytest.approx(clip, rel=1e-9)
    # one binary problem: the intercept starts at the released base rate, s / sqrt(d) (the
    # row scale in units of the released radius, the rows' bound about the centre)
    assert on.conditioning_["row_norm_bound"] == rel["radius"] <= 1.0
    assert on.conditioning_["intercept_scale"] == pytest.approx(
        rel["radius"] * rel["row_scale"] / np.sqrt(8))
    assert rel["base_rate"] == pytest.approx(y.mean(), abs=0.05)
    # predictions are those of the fitted coordinates (centre and scale mapped back)
    np.testing.assert_allclose(on.decision_function(X), X @ on.coef_ + on.intercept_,
                               rtol=1e-9, atol=1e-12)
    again = DPLogisticRegression(
        feature_range_share=0.0, conditioning_share=CONDITIONING_SHARE, **kw).fit(X, y)
    np.testing.assert_array_equal(again.coef_, on.coef_)  # reproducible


def test_private_conditioning_is_recorded_before_the_rows_are_read(tmp_path):
    from noisygd.estimators import CONDITIONING_SHARE
    from noisygd.ledger import Ledger

    rng = np.random.default_rng(1)
    X = rng.random((500, 4)) / 2
    y = (rng.random(500) < 0.3).astype(int)
    with Ledger(str(tmp_path / "l.db")) as ledger:
        ledger.set_budget("d", 2.0, 1e-5)
        est = DPLogisticRegression(
            feature_range_share=0.0, epsilon=1.0, classes=[0, 1], ledger=ledger, dataset="d",
                                   random_state=0, conditioning_share=CONDITIONING_SHARE)
        est.fit(X, y)
        releases = ledger.releases("d")
        assert [r.algorithm for r in releases] == [
            *(f"DPLogisticRegression/{name}" for name in CONDITIONING_RELEASES),
            "DPLogisticRegression/feature_scale", "DPLogisticRegression/noisy_gd"]
        assert ledger.spent("d").epsilon == pytest.approx(est.privacy_.epsilon, rel=1e-6)


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPLinearRegression])
def test_parameter_validation_changes_nothing(cls):
    """``_check_common_params`` only validates (issue 20, item 5): the estimator's state is
    the same after it; the fit's derived state is set by ``_start_fit`` and the fit."""
    est = cls(l2=0.1)
    est._l2_used = 0.5  # a ridge chosen by an earlier fit
    before = dict(vars(est))
    est._check_common_params()
    assert vars(est) == before
    est._start_fit()
    assert "_l2_used" not in vars(est) and est._l2() == 0.1


def test_an_epsilon_too_small_for_the_scale_release_and_the_fit_is_refused_before_a_read():
    from noisygd.accounting.calibration import calibrate_mu
    from noisygd.accounting.events import Gaussian
    from noisygd.accounting.gdp import gaussian_mu

    est = DPLinearRegression(epsilon=1.0, target_range=(0.0, 1.0))
    est._start_fit()
    # a small release (mu 0.1): the rest pays, covered by what is left of the budget's
    # mu-GDP in quadrature (Dong, Roth and Su 2022, Cor. 3.3), computed from public facts
    # only (_release_rest is given no data)
    rest = est._release_rest(Gaussian(10.0))
    assert gaussian_mu(rest) == pytest.approx(
        np.sqrt(calibrate_mu(1.0, 1e-5) ** 2 - 0.1**2), rel=1e-9)
    with pytest.raises(ValueError, match="too small to pay for the prior releases"):
        est._release_rest(Gaussian(0.1))  # a release worth the whole budget: refused


def test_conditioning_share_auto_pays_only_what_the_budget_admits_and_checks_its_value():
    """``"auto"`` (the default) skips the release where epsilon cannot pay for it and the fit
    (public facts), and the fit then spends its whole budget on the run; a number outside
    [0, 0.5] or another string is refused before any read."""
    rng = np.random.default_rng(3)
    X = rng.random((40, 3)) / 2
    y = (rng.random(40) < 0.5).astype(int)
    kw = {"classes": [0, 1], "n_samples_public": 40, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tiny = DPLogisticRegression(epsilon=1e-9, **kw).fit(X, y)
    assert "release" not in tiny.conditioning_ and tiny.conditioning_["centre"] is None
    assert not isinstance(tiny.privacy_.event, Composed)  # the run alone
    with pytest.raises(ValueError, match="epsilon"):  # a declared share is used as given
        DPLogisticRegression(epsilon=1e-9, conditioning_share=0.1, **kw).fit(X, y)
    for bad, exc in ((0.7, ValueError), (-0.1, ValueError), (float("nan"), ValueError),
                     ("on", ValueError), (True, TypeError)):
        with pytest.raises(exc, match="conditioning_share"):
            DPLogisticRegression(conditioning_share=bad, **kw).fit(X, y)


@pytest.mark.parametrize("seed", [np.random.SeedSequence(5), [1, 2], np.array([3, 4]), 7, None])
def test_release_streams_are_neither_the_fit_stream_nor_each_other(seed):
    """Review C3/U1: for every seed that is not a generator the pre-releases' streams
    (child 0: the scale or the classifier's conditioning; child 1: the regressor's centre)
    are spawned children of the fit's root SeedSequence, never the fit's own stream; the
    same seed gives the same streams, and a given SeedSequence is not advanced."""
    from noisygd.estimators._base import _DPLinearModel

    draws = [_DPLinearModel._release_rng(seed, 0).random(8),
             _DPLinearModel._release_rng(seed, 1).random(8),
             np.random.default_rng(seed).random(8)]
    for i in range(3):
        for j in range(i):
            assert not np.any(draws[i] == draws[j])
    if seed is not None:
        np.testing.assert_array_equal(_DPLinearModel._release_rng(seed, 0).random(8), draws[0])
        np.testing.assert_array_equal(np.random.default_rng(seed).random(8), draws[2])
    if isinstance(seed, np.random.SeedSequence):
        assert seed.n_children_spawned == 0


@pytest.mark.parametrize("seed", [np.random.SeedSequence(5), [1, 2]])
def test_a_regression_draws_its_centre_scale_and_count_noise_from_three_streams(seed,
                                                                               monkeypatch):
    """The noise draws on the oracle's row sums of a default DPLinearRegression fit (the
    centre's first round, per-feature scale, residual scale, count; the centre's later
    releases, statistics of X, are drawn in place on streams of their own) start from four
    different generator states, and the same seed gives the same model."""
    import noisygd.training as training

    real, states = training.add_gaussian_noise, []

    def watching(values, sd, rng):
        states.append(repr(rng.bit_generator.state["state"]))
        return real(values, sd, rng)

    monkeypatch.setattr(training, "add_gaussian_noise", watching)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) / 2 + 0.3
    y = np.clip(0.5 + 0.2 * X[:, 0] + 0.05 * rng.normal(size=300), 0.0, 1.0)
    kw = {"target_range": (0.0, 1.0), "target_range_share": 0.0, "method": "noisy_gd",
          "max_iter": 5}
    first = DPLinearRegression(feature_range_share=0.0, random_state=seed, **kw).fit(X, y)
    assert len(first.privacy_.event.events) == len(CONDITIONING_ROUNDS) + 4  # and the run's
    assert len(states) == len(set(states)) == 4  # centre, feature scale, scale, count
    again = DPLinearRegression(feature_range_share=0.0, random_state=seed, **kw).fit(X, y)
    np.testing.assert_array_equal(first.coef_, again.coef_)


def test_auto_centre_is_skipped_when_the_budget_pays_for_it_but_not_with_the_scale():
    """Review U3: ``"auto"`` decides on the centre, the scale after it and the rest together.
    With prior releases of 0.45 mu^2 and scale_share 0.5, the centre (0.1) and the rest fit
    the budget, the centre, the scale and the rest do not (0.45 + 0.1 + 0.5 + 0.01 > 1): the
    fit skips the centre and spends the scale and the rest, instead of being refused."""
    from noisygd.accounting.calibration import calibrate_mu
    from noisygd.accounting.events import Gaussian

    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3)) / 2 + 0.3
    y = np.clip(0.5 + 0.2 * X[:, 0] + 0.05 * rng.normal(size=400), 0.0, 1.0)
    prior = Gaussian(1.0 / (0.45 ** 0.5 * calibrate_mu(1.0, 1e-5)))
    kw = {"target_range": (0.0, 1.0), "target_range_share": 0.0, "method": "noisy_gd",
          "max_iter": 5, "delta": 1e-5,
          "scale_share": 0.5, "random_state": 0}
    model = DPLinearRegression(**kw).fit(X, y, prior_events=[prior])
    assert "release" not in model.conditioning_
    assert model.privacy_.event.events[0] == prior and len(model.privacy_.event.events) == 4
    with pytest.raises(ValueError, match="too small"):  # a declared share is used as given
        DPLinearRegression(conditioning_share=0.1, **kw).fit(X, y, prior_events=[prior])


def test_targets_at_the_ends_of_a_target_range_are_never_refused_by_rounding():
    """Targets equal to the declared range's ends are inside it: the fit shifts them by the
    public midpoint m and clips to [-h, h] after the shift. Clipping to [m - h, m + h] first
    and shifting after puts |y - m| one rounding above h for this range (checked below), and
    the objective then refused the fit (found on paid [target] bounds)."""
    lo, hi = 0.5510898747006757, 0.600967769754615
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    assert np.max(np.abs(np.clip([lo, hi], mid - half, mid + half) - mid)) > half
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (400, 3))
    y = np.where(rng.random(400) < 0.5, lo, hi)
    est = DPLinearRegression(epsilon=1.0, target_range=(lo, hi), random_state=0).fit(X, y)
    assert np.all(np.isfinite(est.coef_)) and np.isfinite(est.target_centre_)


@pytest.mark.parametrize("make", [
    lambda **kw: DPLogisticRegression(classes=[0, 1], **kw),
    lambda **kw: DPLogisticRegression(classes=[0, 1], method="noisy_sgd", **kw),
    lambda **kw: DPLinearRegression(target_range=(-3.0, 3.0), **kw),
])
def test_a_budget_too_small_for_floating_point_is_refused_by_name(make):
    """epsilon = delta = 1e-300 (mu 2.8e-302, whose square is 0) and 1e-160 once raised
    ZeroDivisionError, OverflowError or a feature_scale error from deep inside the fit; the
    estimators refuse a budget whose Gaussian-DP mu is below MIN_BUDGET_MU up front, naming
    epsilon and delta, and still fit at 1e-60."""
    from noisygd.accounting.calibration import calibrate_mu
    from noisygd.estimators import MIN_BUDGET_MU

    X, y = _binary()  # labels in {0, 1}: the regressor's targets too
    for tiny in (1e-300, 1e-160, 1e-99):
        assert calibrate_mu(tiny, tiny) < MIN_BUDGET_MU
        with pytest.raises(ValueError, match=rf"epsilon={tiny!r} at delta={tiny!r} is too small"):
            make(epsilon=tiny, delta=tiny).fit(X, y)
    assert calibrate_mu(1e-60, 1e-60) > MIN_BUDGET_MU
    model = make(epsilon=1.0, delta=1e-5, random_state=0).fit(X, y)
    assert np.all(np.isfinite(model.coef_))


@pytest.mark.parametrize("method", ["auto", "dp_ftrl", "noisy_sgd", "dynamic"])
def test_public_scales_outside_floating_point_range_are_refused_by_name(method):
    """row_norm_bound=1.1e-165 raised ZeroDivisionError in DP-FTRL's regret bound and in
    NoisySGD's utility bound (a random-seed fuzz of `noisygd fit`); a row_norm_bound or clip
    outside SCALE_RANGE is now refused naming the parameter, for every method, and one
    inside it fits or refuses by name (the dynamic schedule at kappa ~ 1e23, where
    gamma = 1 - 1/kappa rounds to 1, raised ZeroDivisionError too)."""
    from noisygd.estimators import SCALE_RANGE

    X, y = _binary(n=60)
    lo, hi = SCALE_RANGE
    for name, value in (("row_norm_bound", 1.12091800802538e-165), ("row_norm_bound", hi * 10),
                        ("clip", lo / 10), ("clip", hi * 10)):
        with pytest.raises(ValueError, match=rf"{name}=.* is outside"):
            DPLogisticRegression(classes=[0, 1], method=method, **{name: value}).fit(X, y)
    for bound in (lo * 10, 1e10, hi / 10):
        est = DPLogisticRegression(classes=[0, 1], method=method, row_norm_bound=bound,
                                   random_state=0)
        try:
            est.fit(X, y)
        except ValueError as exc:  # a refusal names what to change
            assert "row_norm_bound" in str(exc) or "kappa" in str(exc), str(exc)
        else:
            assert np.all(np.isfinite(est.coef_))


def test_planners_out_of_floating_point_range_refuse_instead_of_raising_or_looping():
    """Inside SCALE_RANGE a planner can still leave floating-point range: Langevin's plan at
    row_norm_bound=1e100 raised OverflowError (beta^2), and output perturbation's theorem at
    1e60 planned 1e8 full passes (it ran for minutes). Both are now ValueErrors saying what
    to change; the defaults at row_norm_bound=1 still fit."""
    X, y = _binary(n=40, d=3)
    kw = {"classes": [0, 1], "neighbouring": "replace_one", "random_state": 0}
    with pytest.raises(ValueError, match="out of floating-point range for method 'langevin'"):
        DPLogisticRegression(method="langevin", row_norm_bound=1e100, **kw).fit(X, y)
    with pytest.raises(ValueError, match="full-gradient steps, above"):
        DPLogisticRegression(method="output_perturbation", row_norm_bound=1e60, **kw).fit(X, y)
    for method in ("langevin", "output_perturbation"):
        model = DPLogisticRegression(method=method, **kw).fit(X, y)
        assert np.all(np.isfinite(model.coef_))
