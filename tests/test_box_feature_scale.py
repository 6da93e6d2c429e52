"""The public per-feature scale of a declared box (``box_feature_scale``; docs/estimators.md,
"Per-feature scale of a declared box")."""

from __future__ import annotations

import numpy as np
import pytest

from noisygd.data import PublicCentring
from noisygd.estimators import DPLinearRegression, DPLogisticRegression, box_feature_scale


def test_equal_widths_or_a_centring_give_no_scale():
    assert box_feature_scale((0.0, 1.0), 4) is None
    assert box_feature_scale((np.zeros(3), np.full(3, 2.0)), 3) is None
    centring = PublicCentring(centre=np.zeros(3), radius=1.0, intercept_scale=1.0)
    assert box_feature_scale(centring, 3) is None
    with pytest.raises(ValueError, match="low < high"):  # no positive width: refused
        box_feature_scale((np.ones(3), np.ones(3)), 3)


def test_scale_equalises_the_half_widths_and_keeps_the_radius():
    low, high = np.array([-1.0, 0.0, 5.0, 2.0]), np.array([1.0, 100.0, 5.0, 2.5])
    f = box_feature_scale((low, high), 4)
    half = (high - low) / 2
    scaled = f * half
    positive = half > 0
    assert np.allclose(scaled[positive], scaled[positive][0])  # one half-width for all
    assert np.linalg.norm(scaled) == pytest.approx(np.linalg.norm(half))  # same radius
    assert f[2] == 1.0  # a constant feature keeps its scale


def test_a_bad_box_is_refused_by_name():
    with pytest.raises(ValueError, match="feature_bounds"):
        box_feature_scale((np.array([0.0, 2.0]), np.array([1.0, 1.0])), 2)


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = np.array([0.01, 0.1, 1.0, 0.05])
    lo, hi = -s, 3 * s
    X = lo + (hi - lo) * rng.random((n, 4))
    z = (X - (lo + hi) / 2) / (hi - lo)
    y = (z @ np.array([3.0, -2.0, 1.0, 2.5]) + rng.logistic(size=n) * 0.3 > 0).astype(int)
    return X, y, lo, hi


@pytest.mark.parametrize("estimator", ["classifier", "regressor"])
def test_the_fit_is_the_fit_on_the_explicitly_rescaled_rows(estimator):
    # the declared box's scale is a public change of coordinates: fitting X with the box
    # (lo, hi) is fitting Z = f (X - c) with the equal-width box of the same radius, draw for
    # draw (same seed), so the two models predict the same on every row
    X, y, lo, hi = _data(3000)
    c, f = (lo + hi) / 2, box_feature_scale((lo, hi), 4)
    Z = f * (X - c)
    w_bar = float(f[0] * (hi[0] - lo[0]) / 2)
    kw = {"epsilon": 1.0, "random_state": 5}
    if estimator == "classifier":
        a = DPLogisticRegression(classes=[0, 1], feature_bounds=(lo, hi), **kw).fit(X, y)
        b = DPLogisticRegression(classes=[0, 1], feature_bounds=(-w_bar, w_bar), **kw).fit(Z, y)
        pa, pb = a.decision_function(X), b.decision_function(Z)
    else:
        t = y.astype(float)
        a = DPLinearRegression(target_range=(0, 1), feature_bounds=(lo, hi), **kw).fit(X, t)
        b = DPLinearRegression(target_range=(0, 1), feature_bounds=(-w_bar, w_bar),
                               **kw).fit(Z, t)
        pa, pb = a.predict(X), b.predict(Z)
    assert np.allclose(a.conditioning_["feature_scale"], f)
    assert b.conditioning_["feature_scale"] is None
    assert np.allclose(pa, pb, rtol=1e-9, atol=1e-9)
    assert a.privacy_.epsilon == b.privacy_.epsilon
    # coef_ is reported in the user's coordinates: the scores are X @ coef_ + intercept_
    # (a regressor's predictions projected onto its target range, clip_predictions)
    if estimator == "classifier":
        scores = X @ np.ravel(a.coef_) + np.ravel(a.intercept_)[0]
        assert np.allclose(pa, scores, rtol=1e-9, atol=1e-9)
    else:
        assert np.allclose(pa, np.clip(X @ a.coef_ + a.intercept_, 0.0, 1.0), rtol=1e-9,
                           atol=1e-9)


def test_the_scale_lifts_a_box_whose_features_span_100x():
    # a property of the equalised coordinates: features of small range are no longer drowned
    rng = np.random.default_rng(1)
    s = np.geomspace(1.0, 100.0, 10) / np.sqrt(10) / 100
    X = s * rng.uniform(-1, 1, (4000, 10))
    y = (X / s @ rng.normal(0, 1, 10) > 0).astype(int)
    from sklearn.metrics import roc_auc_score

    Xt = s * rng.uniform(-1, 1, (4000, 10))
    w = np.linalg.lstsq(X / s, y - 0.5, rcond=None)[0]
    yt = (Xt / s @ w > 0).astype(int)
    aucs = []
    for scaled in (True, False):
        est = DPLogisticRegression(classes=[0, 1], feature_bounds=(-s, s), epsilon=1.0,
                                   random_state=0)
        if not scaled:  # the same fit with the old coordinates (no per-feature scale)
            est._feature_scale_used = lambda n_features: None
        est.fit(X, y)
        aucs.append(roc_auc_score(yt, est.decision_function(Xt)))
    assert aucs[0] > aucs[1] + 0.02
