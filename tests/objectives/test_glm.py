"""Tests of the GLM objectives: gradients, clipping, constants, projection, labels."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

from noisygd.objectives import HuberLoss, LogisticLoss, Regime, SquaredLoss


def _data(rng, n=40, d=5, scale=1.0, kind="logistic"):
    X = rng.normal(size=(n, d))
    X *= scale / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    if kind == "logistic":
        y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    else:
        y = rng.normal(scale=2.0, size=n)
    return X, y


OBJECTIVES = [
    ("logistic", lambda **k: LogisticLoss(**k)),
    ("huber", lambda **k: HuberLoss(threshold=0.7, **k)),
    ("squared", lambda **k: SquaredLoss(**k)),
]


def _fd_grad(f, theta, h=1e-6):
    g = np.zeros_like(theta)
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = h
        g[j] = (f(theta + e) - f(theta - e)) / (2 * h)
    return g


@pytest.mark.parametrize("name,make", OBJECTIVES)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("l2", [0.0, 0.3])
def test_gradient_matches_finite_differences(name, make, fit_intercept, l2):
    rng = np.random.default_rng(1)
    X, y = _data(rng, kind="logistic" if name == "logistic" else "reg", scale=3.0)
    obj = make(l2=l2, fit_intercept=fit_intercept)
    theta = rng.normal(size=obj.n_params(X.shape[1]))
    g = obj.gradient(theta, X, y)
    fd = _fd_grad(lambda t: obj.value(t, X, y), theta)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,make", OBJECTIVES)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("clip", [0.05, 0.5, 5.0, None])
def test_clipped_gradient_sum_equals_naive_loop(name, make, fit_intercept, clip):
    rng = np.random.default_rng(2)
    X, y = _data(rng, kind="logistic" if name == "logistic" else "reg", scale=3.0)
    obj = make(fit_intercept=fit_intercept)
    theta = rng.normal(size=obj.n_params(X.shape[1]))
    expected = np.zeros_like(theta)
    for i in range(X.shape[0]):
        xi = np.append(X[i], 1.0) if fit_intercept else X[i]
        gi = _fd_grad(lambda t, i=i: float(obj.per_example_loss(t, X[i:i + 1], y[i:i + 1])[0]),
                      theta)
        np.testing.assert_allclose(gi, obj.residuals(theta, X[i:i + 1], y[i:i + 1])[0] * xi,
                                   rtol=1e-5, atol=1e-7)
        norm = np.linalg.norm(gi)
        if clip is not None and norm > clip:
            gi = gi * (clip / norm)
        expected += gi
    got = obj.clipped_gradient_sum(theta, X, y, clip)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_clipping_actually_binds():
    rng = np.random.default_rng(3)
    X, y = _data(rng, n=30, scale=1.0)
    obj = LogisticLoss()
    theta = np.zeros(obj.n_params(X.shape[1]))
    # at theta = 0 every |r_i| = 1/2, so with clip = 1e-3 every term has norm exactly 1e-3
    g = obj.clipped_gradient_sum(theta, X, y, 1e-3)
    assert np.linalg.norm(g) <= 30 * 1e-3 + 1e-12
    r = obj.residuals(theta, X, y)
    xt = np.hstack([X, np.ones((30, 1))])
    per = r[:, None] * xt
    per *= 1e-3 / np.linalg.norm(per, axis=1, keepdims=True)
    np.testing.assert_allclose(g, per.sum(0), rtol=1e-12, atol=1e-15)


def test_a_zero_row_adds_nothing_and_warns_nothing():
    X = np.array([[3.0, 4.0], [0.0, 0.0]])
    # a zero row without intercept is handled (no division warning, gradient 0): the sum is
    # the first row's gradient (z - y) x = (7 - 1) [3, 4], of norm 30, clipped to norm 1
    obj = SquaredLoss(fit_intercept=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = obj.clipped_gradient_sum(np.ones(2), X, np.array([1.0, 2.0]), 1.0)
        zero = obj.clipped_gradient_sum(np.ones(2), X[1:], np.array([2.0]), 1.0)
    np.testing.assert_allclose(g, [0.6, 0.8], rtol=1e-15)
    np.testing.assert_array_equal(zero, [0.0, 0.0])


def _random_rows(rng, n, d, B):
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X * (B * rng.random((n, 1)) ** 0.2)


@pytest.mark.parametrize("B", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_constants_are_true_bounds_and_nearly_tight(B, fit_intercept):
    rng = np.random.default_rng(4)
    d, n = 4, 4000
    R, Y = 2.0, 1.5
    objs = [
        (LogisticLoss(l2=0.1, fit_intercept=fit_intercept), "logistic"),
        (HuberLoss(threshold=0.4, fit_intercept=fit_intercept), "reg"),
        (SquaredLoss(fit_intercept=fit_intercept, radius=R, target_bound=Y), "reg"),
    ]
    for obj, kind in objs:
        c = obj.constants(B)
        assert c.convex and c.row_norm_bound == B
        assert c.strong_convexity == obj.l2
        X = _random_rows(rng, n, d, B)
        if kind == "logistic":
            y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
        else:
            y = rng.uniform(-Y, Y, size=n)
        p = obj.n_params(d)
        thetas = rng.normal(size=(30, p)) * 5
        if obj.radius is not None:
            thetas = np.array([obj.project(t) for t in thetas])
        xt = np.hstack([X, np.ones((n, 1))]) if fit_intercept else X
        nrm = np.linalg.norm(xt, axis=1)
        max_grad = 0.0
        for t in thetas:
            gn = np.abs(obj.residuals(t, X, y)) * nrm
            max_grad = max(max_grad, gn.max())
        assert max_grad <= c.lipschitz * (1 + 1e-12)
        # smoothness: ||grad_a - grad_b|| = |r_i(a) - r_i(b)| ||x~_i|| <= beta ||a - b||
        ratios = []
        for a, b in itertools.pairwise(thetas):
            a2 = b + (a - b) * 1e-2  # nearby points probe the curvature
            diff = (obj.residuals(a2, X, y) - obj.residuals(b, X, y)) * nrm
            ratios.append(np.max(np.abs(diff) / np.linalg.norm(a2 - b)))
        assert max(ratios) <= c.smoothness * (1 + 1e-9)
    # near-tightness of L for logistic: a row of norm B, theta along it, large margin
    obj = LogisticLoss(fit_intercept=fit_intercept)
    x = np.zeros((1, d))
    x[0, 0] = B
    theta = np.zeros(obj.n_params(d))
    theta[0] = -50.0
    if fit_intercept:
        theta[-1] = -50.0
    g = obj.clipped_gradient_sum(theta, x, np.array([1.0]), None)
    assert np.linalg.norm(g) >= 0.999 * obj.constants(B).lipschitz


def test_squared_loss_without_radius_states_no_lipschitz():
    c = SquaredLoss().constants(1.0)
    assert c.lipschitz is None and c.smoothness == pytest.approx(2.0)
    assert c.regime is Regime.CONVEX_SMOOTH
    assert SquaredLoss(l2=0.1).constants(1.0).regime is Regime.STRONGLY_CONVEX


def test_regimes_and_constant_values():
    c = LogisticLoss().constants(1.0)
    assert (c.lipschitz, c.smoothness) == pytest.approx((math.sqrt(2), 0.5))
    c = HuberLoss(threshold=2.0).constants(1.0)
    assert (c.lipschitz, c.smoothness) == pytest.approx((2 * math.sqrt(2), 2.0))
    c = SquaredLoss(radius=3.0, target_bound=2.0, fit_intercept=False).constants(1.0)
    assert (c.lipschitz, c.smoothness) == pytest.approx((5.0, 1.0))


def test_projection():
    obj = LogisticLoss(radius=2.0)
    t = np.array([3.0, 4.0])
    np.testing.assert_allclose(obj.project(t), [1.2, 1.6])
    np.testing.assert_array_equal(obj.project(np.array([0.3, 0.4])), [0.3, 0.4])
    assert LogisticLoss().project(t) is t


def test_optimum_norm_bound_holds():
    rng = np.random.default_rng(5)
    X, y = _data(rng, n=200, d=3)
    obj = LogisticLoss(l2=0.05)
    bound = obj.optimum_norm_bound()
    assert bound == pytest.approx(math.sqrt(2 * math.log(2) / 0.05))
    # optimum by Newton-free gradient descent (smooth, strongly convex)
    theta = np.zeros(4)
    for _ in range(3000):
        theta -= 1.0 * obj.gradient(theta, X, y)
    assert np.linalg.norm(obj.gradient(theta, X, y)) < 1e-8
    assert np.linalg.norm(theta) <= bound
    assert LogisticLoss(radius=3.0).optimum_norm_bound() == 3.0
    assert LogisticLoss().optimum_norm_bound() is None
    # capabilities are declared (concrete defaults), never probed
    assert LogisticLoss().supports_sparse and not LogisticLoss().quadratic_constant_hessian
    assert LogisticLoss().total_gradient_sensitivity(1.0) is None
    mm = LogisticLoss(fit_intercept=False).margin_model()
    assert mm.centre is None and mm.intercept_scale is None
    z, yy = np.array([-1.0, 0.0, 2.0]), np.array([1.0, -1.0, 1.0])
    np.testing.assert_array_equal(mm.residual(z, yy), LogisticLoss().residual(z, yy))
    np.testing.assert_array_equal(mm.loss(z, yy), LogisticLoss().loss(z, yy))


def test_logistic_labels():
    obj = LogisticLoss()
    np.testing.assert_array_equal(obj.check_targets(np.array([0, 1, 1])), [-1.0, 1.0, 1.0])
    np.testing.assert_array_equal(obj.check_targets(np.array([-1, 1])), [-1.0, 1.0])
    np.testing.assert_array_equal(obj.check_targets(np.array([True, False])), [1.0, -1.0])
    with pytest.raises(ValueError, match="labels must all be in") as err:
        obj.check_targets(np.array([0, 1, 2, 17]))
    assert "17" not in str(err.value) and "2" not in str(err.value)  # no label value echoed
    with pytest.raises(ValueError, match="labels must be numeric"):
        obj.check_targets(np.array(["a", "b"]))
    with pytest.raises(ValueError, match="one-dimensional"):
        obj.check_targets(np.zeros((2, 2)))


def test_regression_targets():
    with pytest.raises(ValueError, match="NaN or infinite"):
        HuberLoss().check_targets(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="target_bound") as err:
        SquaredLoss(target_bound=1.0).check_targets(np.array([0.5, -2.345]))
    assert "2.345" not in str(err.value)
    np.testing.assert_array_equal(SquaredLoss().check_targets(np.array([1, 2])), [1.0, 2.0])


@pytest.mark.parametrize("kwargs,match", [
    ({"l2": -1.0}, "l2 must be finite and >= 0"),
    ({"radius": 0.0}, "radius must be positive"),
    ({"l2": float("nan")}, "l2 must be finite"),
])
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LogisticLoss(**kwargs)
    with pytest.raises(ValueError, match="threshold must be positive"):
        HuberLoss(threshold=0.0)
    with pytest.raises(ValueError, match="row_norm_bound"):
        LogisticLoss().constants(-1.0)


def test_theta_shape_checked():
    X = np.zeros((3, 2))
    with pytest.raises(ValueError, match="theta must have shape"):
        LogisticLoss().per_example_loss(np.zeros(2), X, np.ones(3))


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_sparse_matrices_match_dense(fit_intercept):
    import scipy.sparse as sp

    rng = np.random.default_rng(9)
    X, y = _data(rng, n=60, d=6, scale=2.0)
    X[np.abs(X) < 0.3] = 0.0
    S = sp.csr_array(X)
    obj = LogisticLoss(l2=0.1, fit_intercept=fit_intercept)
    theta = rng.normal(size=obj.n_params(6))
    for clip in (None, 0.2):
        np.testing.assert_allclose(obj.clipped_gradient_sum(theta, S, y, clip),
                                   obj.clipped_gradient_sum(theta, X, y, clip), rtol=1e-12)
    assert obj.value(theta, S, y) == pytest.approx(obj.value(theta, X, y), rel=1e-14)


def test_minimize_finds_the_stationary_point_and_refuses_a_radius():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 4)) / 2
    y = np.where(X @ np.array([1.0, -1.0, 0.5, 0.0]) + 0.3 * rng.normal(size=300) > 0, 1, -1)
    obj = LogisticLoss(l2=1e-2)
    theta, value = obj.minimize(X, y)
    assert np.linalg.norm(obj.gradient(theta, X, y)) <= 1e-7
    assert value == pytest.approx(obj.value(theta, X, y), rel=1e-14)
    for _ in range(5):  # strongly convex: any other point is worse
        assert obj.value(theta + 0.1 * rng.normal(size=theta.size), X, y) > value
    with pytest.raises(ValueError, match="radius"):
        LogisticLoss(l2=1e-2, radius=1.0).minimize(X, y)
