"""The classifier's released base rate and its start (issue 19, item 4: "the intercept or
base rate from one cheap release"): ``base_rate_from_release``'s closed form, the label sum
riding along with the private conditioning (its event unchanged), the run starting at the
constant predictor of the released rate with the intercept scale ``R sqrt(U_c / d)``, and
NoisyGD's distance from that start."""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.accounting.gdp import gaussian_mu
from noisygd.estimators import (
    CONDITIONING_ROUNDS,
    CONDITIONING_SHARE,
    DPLogisticRegression,
    base_rate_from_release,
)


def test_base_rate_is_laplaces_rule_on_the_clipped_positives_with_a_finite_logit():
    # P = clip((N + T)/2, 0, N); p = (P + 1)/(N + 2); logit = log((P + 1)/(N - P + 1))
    rate, logit = base_rate_from_release(-60.0, 100.0)  # P = 20
    assert rate == pytest.approx(21 / 102)
    assert logit == pytest.approx(math.log(21 / 81))
    assert logit == pytest.approx(math.log(rate / (1 - rate)))
    assert base_rate_from_release(-500.0, 100.0) == pytest.approx((1 / 102, math.log(1 / 101)))
    assert base_rate_from_release(900.0, 100.0) == pytest.approx((101 / 102, math.log(101)))
    rate, logit = base_rate_from_release(1e300, 1e300)  # p rounds to 1: the logit does not
    assert rate == 1.0 and math.isfinite(logit) and logit > 600
    with pytest.raises(ValueError, match="label_sum must be finite"):
        base_rate_from_release(float("nan"), 10.0)
    with pytest.raises(ValueError, match="count"):
        base_rate_from_release(1.0, 0.0)


def _binary(n=4000, d=10, rate=0.15, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)) / np.sqrt(d)
    z = X @ rng.normal(0, 4, d)
    y = (z > np.quantile(z, 1 - rate)).astype(int)
    return X, y


def test_the_label_sum_rides_with_the_conditioning_and_the_run_starts_at_its_rate():
    X, y = _binary()
    d = X.shape[1]
    kw = {"classes": [0, 1], "method": "noisy_gd", "feature_range_share": 0.0,
          "feature_scale_share": 0.0}
    est = DPLogisticRegression(epsilon=1.0, random_state=0, **kw).fit(X, y)
    rel = est.conditioning_["release"]
    # the first round, sqrt(share f_0) mu, whatever it sums (four sums: each at sigma =
    # 2 Delta/mu_c); the later rounds release no label sum
    first = est.privacy_.event.events[0]
    assert gaussian_mu(first) == pytest.approx(math.sqrt(
        CONDITIONING_SHARE * CONDITIONING_ROUNDS[0]) * gaussian_mu(est.privacy_.event), rel=1e-9)
    assert "t the label" in est.fit_info_["pre_releases"][0]["statistic"]
    # its rate: within 4 noise sds of the truth, sd = (2 / mu_c) / (2 N) on the rate
    sd = 1.0 / gaussian_mu(first) / len(y)
    assert abs(rel["base_rate"] - y.mean()) <= 4 * sd + 2 / len(y)
    s = est.conditioning_["intercept_scale"]  # the row scale in units of the radius
    assert s == pytest.approx(rel["radius"] * rel["row_scale"] / math.sqrt(d), rel=1e-12)
    # NoisyGD's distance counts the start: ||theta0|| = |logit(rate)| / s
    plan = est.fit_info_["plans"][0]["plan"]
    start = plan["init_distance_start"]["start_norm"]
    assert start == pytest.approx(abs(math.log(rel["base_rate"] / (1 - rel["base_rate"]))) / s,
                                  rel=1e-6)
    # a near-exact release at a large epsilon: the rate is the training rate
    loud = DPLogisticRegression(epsilon=200.0, random_state=0, **kw).fit(X, y)
    assert loud.conditioning_["release"]["base_rate"] == pytest.approx(y.mean(), abs=2e-3)


def test_no_label_sum_for_one_vs_rest_nor_with_a_declared_box():
    X, y = _binary(n=3000)
    y3 = y + (X[:, 0] > 0.2).astype(int)  # three classes
    ovr = DPLogisticRegression(classes=[0, 1, 2], multiclass="ovr", method="noisy_gd",
                               feature_range_share=0.0, feature_scale_share=0.0,
                               random_state=0).fit(X, y3)
    rel = ovr.conditioning_["release"]
    assert "base_rate" not in rel
    # the row scale in units of the released radius
    assert ovr.conditioning_["intercept_scale"] == pytest.approx(
        rel["radius"] * rel["row_scale"], rel=1e-12)
    assert "t the label" not in ovr.fit_info_["pre_releases"][0]["statistic"]
    d = X.shape[1]
    box = (np.zeros(d), np.full(d, 1 / np.sqrt(d)))
    boxed = DPLogisticRegression(classes=[0, 1], feature_bounds=box, random_state=0).fit(X, y)
    assert "release" not in boxed.conditioning_
    assert boxed.conditioning_["intercept_scale"] == pytest.approx(0.5 / math.sqrt(d))


def test_uncentred_rows_keep_the_row_bound_as_intercept_scale():
    X, y = _binary(n=1000)
    est = DPLogisticRegression(classes=[0, 1], conditioning_share=0, row_norm_bound=2.0,
                               random_state=0).fit(X, y)
    assert est.conditioning_["centre"] is None
    assert est.conditioning_["intercept_scale"] == 2.0


def test_newton_starts_where_its_plan_says():
    X, y = _binary(n=3000, d=5)
    kw = {"classes": [0, 1], "method": "newton", "feature_range_share": 0.0,
          "feature_scale_share": 0.0, "random_state": 0}
    est = DPLogisticRegression(**kw).fit(X, y)
    assert "base_rate" in est.conditioning_["release"]
    # the same fit told to start at 0 (the theta0 it was given wins): another model
    zero = DPLogisticRegression(method_options={"theta0": np.zeros(6)}, **kw).fit(X, y)
    assert not np.allclose(zero.intercept_, est.intercept_)


def test_a_declared_ridge_keeps_the_row_scale_as_intercept_scale():
    """A declared ridge penalises the centred intercept as l2 (b + <c, w>)^2 / (2 s^2): the
    small scale would weigh it d-fold, so with l2 > 0 the scale stays R sqrt(U_c) (plain) and
    R (box); the start at the released base rate stays."""
    X, y = _binary(n=3000)
    d = X.shape[1]
    kw = {"classes": [0, 1], "feature_range_share": 0.0, "random_state": 0}
    ridge = DPLogisticRegression(l2=1e-3, **kw).fit(X, y)
    rel = ridge.conditioning_["release"]
    assert ridge.conditioning_["intercept_scale"] == pytest.approx(
        rel["radius"] * rel["row_scale"], rel=1e-12)
    assert "base_rate" in rel
    none = DPLogisticRegression(l2=0.0, **kw).fit(X, y)  # l2 = 0: no ridge, the small scale
    released = none.conditioning_["release"]
    assert none.conditioning_["intercept_scale"] == pytest.approx(
        released["radius"] * released["row_scale"] / math.sqrt(d), rel=1e-12)
    box = (np.zeros(d), np.full(d, 1 / np.sqrt(d)))
    boxed = DPLogisticRegression(l2=1e-3, feature_bounds=box, **kw).fit(X, y)
    assert boxed.conditioning_["intercept_scale"] == pytest.approx(0.5)
