"""MultinomialLogisticLoss: closed forms, finite differences, the declared constants (bounds
that hold everywhere and are attained), scikit-learn's multinomial LogisticRegression as an
independent reference, and one private NoisyGD fit on digits with the whole budget."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from noisygd.accounting.calibration import calibrate_gaussian_composition
from noisygd.accounting.events import Gaussian, SelfComposed
from noisygd.accounting.gdp import gaussian_mu, gdp_epsilon
from noisygd.algorithms.noisy_gd import noisy_gd
from noisygd.objectives import LogisticLoss, MultinomialLogisticLoss
from noisygd.objectives.multinomial import softmax, softmax_loss, softmax_residual
from noisygd.oracles import ArrayOracle


def _rows_in_ball(rng, n, d, B):
    """Rows with norms spread over (0, B], a quarter exactly on the sphere."""
    X = rng.standard_normal((n, d))
    X *= (B * rng.uniform(0.05, 1.0, size=(n, 1))) / np.linalg.norm(X, axis=1, keepdims=True)
    X[: n // 4] *= B / np.linalg.norm(X[: n // 4], axis=1, keepdims=True)
    return X


def _augmented(obj, X):
    D = X - (0.0 if obj.centre is None else obj.centre)
    if obj.fit_intercept:
        D = np.hstack([D, np.full((X.shape[0], 1), obj.intercept_scale)])
    return D


# --------------------------------------------------------------------------- closed forms
def test_loss_at_zero_is_log_k_and_two_classes_are_binary_logistic():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    y = rng.integers(0, 5, size=50)
    obj = MultinomialLogisticLoss(5, l2=0.3)
    assert obj.value(np.zeros(obj.n_params(3)), X, y) == pytest.approx(math.log(5), rel=1e-15)
    assert obj.loss_at_zero_bound() == math.log(5)
    # K = 2 with Theta = [-theta/2; theta/2] is log(1 + exp(-y z)), labels 0 -> -1, 1 -> +1
    two = MultinomialLogisticLoss(2, intercept_scale=1.0)
    theta = rng.standard_normal(4)
    yb = rng.integers(0, 2, size=50)
    T = np.vstack([-theta / 2, theta / 2]).ravel()
    np.testing.assert_allclose(two.per_example_loss(T, X, yb),
                               LogisticLoss().per_example_loss(theta, X, 2.0 * yb - 1.0),
                               rtol=1e-13)


def test_softmax_helpers_are_stable_and_exact():
    Z = np.array([[1000.0, 0.0, -1000.0], [0.0, 0.0, 0.0], [-5.0, 40.0, 3.0]])
    y = np.array([0, 2, 0])
    P = softmax(Z)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-15)
    assert P[0, 0] == 1.0 and P[1, 1] == pytest.approx(1 / 3)
    np.testing.assert_allclose(softmax_loss(Z, y), [0.0, math.log(3), 45.0], rtol=1e-12)
    R = softmax_residual(Z, y)
    np.testing.assert_allclose(R.sum(axis=1), 0.0, atol=1e-15)
    # the true-class entry keeps relative accuracy when pi_y is within an ulp of 1
    Z2 = np.array([[40.0, 0.0, 0.0]])
    r = softmax_residual(Z2, np.array([0]))
    assert r[0, 0] == pytest.approx(-2.0 * math.exp(-40.0), rel=1e-12)


def test_coefficients_round_trip_and_score_the_same_margins():
    rng = np.random.default_rng(1)
    d = 4
    X = rng.standard_normal((30, d))
    for obj in (MultinomialLogisticLoss(3, intercept_scale=0.3, centre=rng.standard_normal(d)),
                MultinomialLogisticLoss(3), MultinomialLogisticLoss(3, fit_intercept=False)):
        theta = rng.standard_normal(obj.n_params(d))
        coef, intercept = obj.coefficients(theta, d)
        assert coef.shape == (3, d) and intercept.shape == (3,)
        np.testing.assert_allclose(X @ coef.T + intercept, obj.margins(theta, X), rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(obj.from_coefficients(coef, intercept), theta, rtol=1e-12,
                                   atol=1e-12)
        # layout: theta is the (K, p) matrix flattened row-major, row k = [w_k, v_k]
        np.testing.assert_array_equal(coef, theta.reshape(3, -1)[:, :d])


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(2)
    d = 5
    X = rng.standard_normal((40, d))
    y = rng.integers(0, 4, size=40)
    for obj in (MultinomialLogisticLoss(4, l2=0.2, intercept_scale=0.7,
                                        centre=rng.standard_normal(d)),
                MultinomialLogisticLoss(4, fit_intercept=False)):
        theta = rng.standard_normal(obj.n_params(d))
        g = obj.gradient(theta, X, y)
        h = 1e-6
        fd = np.array([(obj.value(theta + h * e, X, y) - obj.value(theta - h * e, X, y)) / (2 * h)
                       for e in np.eye(theta.size)])
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
        oracle = ArrayOracle(obj, X, y, row_norm_bound=100.0)  # no row is mapped
        np.testing.assert_allclose(oracle.gradient(theta), g, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(oracle.gradient(theta), obj.gradient(theta, sp.csr_array(X), y),
                                   rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- constants
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_lipschitz_and_smoothness_bounds_hold_on_random_points(fit_intercept):
    rng = np.random.default_rng(3)
    K, d, B = 6, 4, 2.0
    obj = MultinomialLogisticLoss(K, l2=0.1, fit_intercept=fit_intercept,
                                  intercept_scale=0.5 if fit_intercept else 1.0)
    k = obj.constants(B)
    bt = math.hypot(B, 0.5) if fit_intercept else B
    assert k.lipschitz == pytest.approx(math.sqrt(2) * bt) and k.smoothness == bt**2 / 2
    assert k.strong_convexity == 0.1 and k.convex
    X = _rows_in_ball(rng, 400, d, B)
    Xa = _augmented(obj, X)
    y = rng.integers(0, K, size=400)
    worst_grad = worst_hess = 0.0
    for scale in (0.1, 1.0, 10.0, 100.0):
        theta = scale * rng.standard_normal(obj.n_params(d))
        P = softmax(obj.margins(theta, X))
        R = softmax_residual(obj.margins(theta, X), y)
        G = R[:, :, None] * Xa[:, None, :]  # per-example gradients (n, K, p)
        worst_grad = max(worst_grad, float(np.sqrt((G * G).sum(axis=(1, 2))).max()))
        # per-example Hessian (diag pi - pi pi^T) (x) x~ x~^T: operator norm = product
        A = np.einsum("ik,kl->ikl", P, np.eye(K)) - P[:, :, None] * P[:, None, :]
        lam = np.linalg.eigvalsh(A)[:, -1]
        worst_hess = max(worst_hess, float((lam * (Xa * Xa).sum(axis=1)).max()))
    assert worst_grad <= k.lipschitz * (1 + 1e-12)
    assert worst_hess <= k.smoothness * (1 + 1e-12)


def test_lipschitz_and_smoothness_bounds_are_attained():
    """Worst cases: pi = (1/2, 1/2, 0, ...) along u = (1, -1, 0, ...)/sqrt 2 gives curvature
    beta; pi on one wrong class gives gradient norm -> L. Checked on the loss itself (finite
    differences), not on the formulas of the bound."""
    K, d, B, kappa = 5, 3, 1.5, 0.8
    obj = MultinomialLogisticLoss(K, intercept_scale=kappa)
    k = obj.constants(B)
    x = np.array([[B, 0.0, 0.0]])
    xa = np.array([B, 0.0, 0.0, kappa])
    nx = float(np.linalg.norm(xa))
    T = np.zeros((K, d + 1))
    T[2:, 0] = -30.0  # classes 2.. far below: pi = (1/2, 1/2, ~0, ...)
    theta = T.ravel()
    U = np.zeros((K, d + 1))
    U[0], U[1] = xa / nx / math.sqrt(2), -xa / nx / math.sqrt(2)  # unit in Frobenius norm
    h = 1e-4
    f = lambda t: float(obj.per_example_loss(t, x, np.array([0]))[0])  # noqa: E731
    curv = (f(theta + h * U.ravel()) - 2 * f(theta) + f(theta - h * U.ravel())) / h**2
    assert k.smoothness / 2 <= curv <= k.smoothness * (1 + 1e-6)
    assert curv == pytest.approx(k.smoothness, rel=1e-5)  # attained, not just within 2x
    T2 = np.zeros((K, d + 1))
    T2[1, 0] = 30.0  # all mass on class 1, label 0
    g = obj.clipped_gradient_sum(T2.ravel(), x, np.array([0]), None)
    assert k.lipschitz / 2 <= np.linalg.norm(g) <= k.lipschitz
    assert np.linalg.norm(g) == pytest.approx(k.lipschitz, rel=1e-9)


@pytest.mark.parametrize("K", [2, 3, 10])
def test_correct_class_residual_bound_holds_and_is_attained(K):
    """Lemma of the module doc, checked on probability vectors from the softmax itself (no
    formula of the bound): ||pi - e_y|| <= sqrt(1 - 1/K) whenever y is a most probable
    class, with equality at z = 0; a row with y not most probable can exceed it (up to
    sqrt 2), and clipping rescales its gradient by at least 1/2 along its own direction."""
    from noisygd.objectives.multinomial import correct_class_residual_bound

    rng = np.random.default_rng(11)
    bound = correct_class_residual_bound(K)
    assert bound == pytest.approx(math.sqrt((K - 1) / K), rel=1e-15)
    worst = 0.0
    for scale in (0.01, 0.3, 1.0, 3.0, 30.0):
        Z = scale * rng.standard_normal((5000, K))
        Z[:500, 1:] = Z[:500, :1]  # exact ties with class 0
        P = softmax(Z)
        y = P.argmax(axis=1)  # a most probable class (argmax takes the first of ties)
        worst = max(worst, float(np.linalg.norm(softmax_residual(Z, y), axis=1).max()))
    assert worst <= bound * (1 + 1e-12)
    r0 = softmax_residual(np.zeros((1, K)), np.array([K - 1]))  # Theta = 0: uniform pi
    assert float(np.linalg.norm(r0)) == pytest.approx(bound, rel=1e-12)
    # misclassified with confidence: beyond the bound, never beyond sqrt(2)
    Zw = np.zeros((1, K))
    Zw[0, 1] = 8.0
    rw = float(np.linalg.norm(softmax_residual(Zw, np.array([0]))))
    assert bound < rw <= math.sqrt(2)
    assert min(1.0, bound / rw) >= 0.5


def test_default_clip_is_sharp_on_correct_rows_and_leaves_them_unclipped():
    """default_clip = sqrt(1 - 1/K) * sqrt(B^2 + kappa^2); on random data and parameters,
    the clipped gradient sum at that clip equals the unclipped one over the correctly
    classified rows (and at Theta = 0 over all rows), and is a positive rescaling of each
    misclassified row's gradient by at least 1/2."""
    rng = np.random.default_rng(12)
    K, d, B, kappa = 7, 5, 1.3, 0.6
    obj = MultinomialLogisticLoss(K, intercept_scale=kappa)
    C = obj.default_clip(B)
    assert C == pytest.approx(math.sqrt(1 - 1 / K) * math.hypot(B, kappa), rel=1e-15)
    assert C < obj.constants(B).lipschitz
    X = _rows_in_ball(rng, 300, d, B)
    y = rng.integers(0, K, size=300)
    zero = np.zeros(obj.n_params(d))
    np.testing.assert_allclose(obj.clipped_gradient_sum(zero, X, y, C),
                               obj.clipped_gradient_sum(zero, X, y, None), rtol=1e-13,
                               atol=1e-13)
    for scale in (0.5, 5.0):
        theta = scale * rng.standard_normal(obj.n_params(d))
        pred = obj.margins(theta, X).argmax(axis=1)
        ok = pred == y
        assert 0 < ok.sum() < ok.size
        np.testing.assert_allclose(obj.clipped_gradient_sum(theta, X[ok], y[ok], C),
                                   obj.clipped_gradient_sum(theta, X[ok], y[ok], None),
                                   rtol=1e-12, atol=1e-13)
        for i in np.flatnonzero(~ok)[:20]:
            g = obj.clipped_gradient_sum(theta, X[i:i + 1], y[i:i + 1], None)
            gc = obj.clipped_gradient_sum(theta, X[i:i + 1], y[i:i + 1], C)
            w = float(gc @ g / (g @ g))
            assert 0.5 <= w <= 1.0 + 1e-12
            np.testing.assert_allclose(gc, w * g, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_noise_dimension_is_the_subspace_the_loss_depends_on(fit_intercept):
    """noise_dimension = (K - 1) p: the loss and probabilities are unchanged by
    Theta + 1 v^T (any v), every clipped gradient sum has class-sum zero (lies in S), and
    the loss's Hessian (finite differences of the gradient) has rank (K - 1) p at most."""
    rng = np.random.default_rng(14)
    K, d = 4, 3
    obj = MultinomialLogisticLoss(K, fit_intercept=fit_intercept, intercept_scale=0.7)
    p = d + int(fit_intercept)
    assert obj.noise_dimension(d) == (K - 1) * p
    X = _rows_in_ball(rng, 50, d, 1.0)
    y = rng.integers(0, K, size=50)
    theta = rng.standard_normal(obj.n_params(d))
    shift = np.tile(rng.standard_normal(p), K)  # 1 v^T, row-major
    np.testing.assert_allclose(obj.per_example_loss(theta + shift, X, y),
                               obj.per_example_loss(theta, X, y), rtol=1e-12, atol=1e-12)
    for clip in (None, 0.2):
        g = obj.clipped_gradient_sum(theta, X, y, clip).reshape(K, p)
        np.testing.assert_allclose(g.sum(axis=0), 0.0, atol=1e-12)
    h = 1e-6
    grad = lambda t: obj.clipped_gradient_sum(t, X, y, None)  # noqa: E731
    H = np.array([(grad(theta + h * e) - grad(theta - h * e)) / (2 * h)
                  for e in np.eye(obj.n_params(d))])
    sv = np.linalg.svd((H + H.T) / 2, compute_uv=False)
    assert int(np.sum(sv > 1e-6 * sv[0])) == (K - 1) * p


def test_estimator_passes_the_noise_dimension_and_horizon_to_noisy_gd():
    from noisygd.estimators import DPLogisticRegression

    rng = np.random.default_rng(15)
    X = rng.uniform(0, 0.5, size=(300, 4))
    y = rng.integers(0, 3, size=300)
    m = DPLogisticRegression(classes=[0, 1, 2], epsilon=2.0, n_samples_public=300,
                             random_state=0).fit(X, y)
    plan = m.fit_info_["plans"][0]["plan"]
    assert plan["noise_dimension"] == 2 * 5
    # the release is P_S Theta: class sums of every coefficient and of the intercepts are 0
    np.testing.assert_allclose(m.coef_.sum(axis=0), 0.0, atol=1e-12)
    assert abs(float(m.intercept_.sum())) <= 1e-12
    np.testing.assert_allclose(m.predict_proba(X), softmax(m.decision_function(X)), atol=1e-12)
    # the planned ridge's horizon: T = max(T_plan, ceil((1 - m) beta_F / l2)) <= 1000
    from noisygd.planning import MAX_STEPS_ACCELERATED

    # B~^2 / 2 with B the released row bound and kappa the intercept scale (the private
    # conditioning: rows about the released centre)
    cond = m.conditioning_
    assert cond["centre"] is not None and "release" in cond
    beta_f = plan["l2"] + 0.5 * (cond["row_norm_bound"] ** 2 + cond["intercept_scale"] ** 2)
    horizon = math.ceil((1 - plan["momentum"]) * beta_f / plan["l2"])
    assert plan["steps"] == min(MAX_STEPS_ACCELERATED, max(horizon, 100))
    assert plan["averaging"] == "suffix" and plan["steps_rule"].startswith("ridge horizon")
    mb = DPLogisticRegression(classes=[0, 1], epsilon=2.0, n_samples_public=300,
                              random_state=0).fit(X, (y > 0).astype(int))
    assert "noise_dimension" not in mb.fit_info_["plans"][0]["plan"]
    assert not mb.fit_info_["plans"][0]["plan"]["steps_rule"].startswith("ridge horizon")


def test_estimator_default_clip_multinomial_and_binary():
    """DPLogisticRegression: a multinomial fit runs at default_clip of its conditioned
    objective; a user clip wins; a binary fit starts from the Lipschitz clip, scaled by its
    noise regime (the sharp clip of NoisyGD: tests/test_sharp_clip.py)."""
    from noisygd.estimators import DPLogisticRegression

    rng = np.random.default_rng(13)
    X = rng.uniform(0, 0.5, size=(400, 4))
    y = rng.integers(0, 3, size=400)
    bounds = (np.zeros(4), np.full(4, 0.5))
    common = dict(epsilon=2.0, delta=1e-5, n_samples_public=400, random_state=0,
                  feature_bounds=bounds, row_norm_bound=1.0)
    m = DPLogisticRegression(classes=[0, 1, 2], **common).fit(X, y)
    R = float(np.linalg.norm(np.full(4, 0.25)))  # the box's radius
    expect = math.sqrt(2 / 3) * math.hypot(R, m.conditioning_["intercept_scale"])
    assert m.fit_info_["plans"][0]["clip"] == pytest.approx(expect, rel=1e-12)
    m2 = DPLogisticRegression(classes=[0, 1, 2], clip=0.3, **common).fit(X, y)
    assert m2.fit_info_["plans"][0]["clip"] == 0.3
    yb = (y > 0).astype(int)
    mb = DPLogisticRegression(classes=[0, 1], **common).fit(X, yb)
    s = mb.conditioning_["intercept_scale"]
    rule = mb.fit_info_["plans"][0]["plan"]["clip_rule"]
    assert rule["base_clip"] == pytest.approx(math.hypot(R, s), rel=1e-12)
    assert mb.fit_info_["plans"][0]["clip"] == pytest.approx(rule["base_clip"] * rule["factor"],
                                                             rel=1e-15)


def test_optimum_norm_bound_holds_at_the_minimiser():
    rng = np.random.default_rng(4)
    X = _rows_in_ball(rng, 300, 4, 1.0)
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.3)
    obj = MultinomialLogisticLoss(3, l2=0.05)
    theta, value = ArrayOracle(obj, X, y, row_norm_bound=1.0).minimize()
    assert np.linalg.norm(theta) <= obj.optimum_norm_bound()
    assert value <= obj.loss_at_zero_bound()
    assert obj.optimum_norm_bound() == pytest.approx(math.sqrt(2 * math.log(3) / 0.05))
    assert MultinomialLogisticLoss(3).optimum_norm_bound() is None
    assert MultinomialLogisticLoss(3, radius=2.0).optimum_norm_bound() == 2.0


# --------------------------------------------------------------------------- checks
def test_label_and_argument_checks():
    obj = MultinomialLogisticLoss(3)
    np.testing.assert_array_equal(obj.check_targets(np.array([0.0, 2.0, 1.0])), [0, 2, 1])
    assert obj.check_targets(np.array([0, 2])).dtype == np.intp
    for bad in (np.array([0, 3]), np.array([-1, 0]), np.array([0.5, 1.0]),
                np.array([0.0, np.nan]), np.array(["a", "b"]), np.array([True, False]),
                np.zeros((2, 2), dtype=int)):
        with pytest.raises(ValueError) as err:
            obj.check_targets(bad)
        assert "0.5" not in str(err.value) and "-1" not in str(err.value)  # no label named
    with pytest.raises(ValueError):
        MultinomialLogisticLoss(1)
    with pytest.raises(TypeError):
        MultinomialLogisticLoss(2.5)
    with pytest.raises(ValueError):
        MultinomialLogisticLoss(3, l2=-1.0)
    with pytest.raises(ValueError):
        MultinomialLogisticLoss(3, intercept_scale=0.0)
    with pytest.raises(ValueError):
        MultinomialLogisticLoss(3, fit_intercept=False, centre=[0.0, 1.0])
    with pytest.raises(ValueError):
        MultinomialLogisticLoss(3, centre=[0.0, 1.0]).n_params(3)
    with pytest.raises(ValueError):
        MultinomialLogisticLoss(3).per_example_loss(np.zeros(5), np.zeros((2, 2)), np.zeros(2))


# --------------------------------------------------------------------------- references
def _digits():
    X, y = load_digits(return_X_y=True)
    return X / 16.0, y  # public bound: every pixel is in [0, 16]


def test_minimiser_recovers_sklearn_multinomial_on_digits():
    """sklearn minimises C sum(loss) + 1/2 ||W||^2 on [x - c, kappa] without an intercept,
    the same problem as ours with l2 = 1/(n C) (our penalty covers the intercept column)."""
    X, y = _digits()
    n, d = X.shape
    c, kappa, C = np.full(d, 0.5), 1.0, 0.5
    obj = MultinomialLogisticLoss(10, l2=1.0 / (n * C), intercept_scale=kappa, centre=c)
    oracle = ArrayOracle(obj, X, y, row_norm_bound=4.0)  # ||x - c|| <= 4 for every pixel row
    theta, _ = oracle.minimize(gtol=1e-10)
    Xa = np.hstack([X - c, np.full((n, 1), kappa)])
    with threadpool_limits(1):  # multi-threaded BLAS on a loaded machine is 100x slower here
        ref = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=20_000).fit(Xa, y)
    np.testing.assert_allclose(theta.reshape(10, d + 1), ref.coef_, rtol=0, atol=1e-4)
    np.testing.assert_allclose(obj.predict_proba(theta, X), ref.predict_proba(Xa), rtol=0,
                               atol=1e-4)
    coef, intercept = obj.coefficients(theta, d)
    np.testing.assert_allclose(X @ coef.T + intercept, Xa @ ref.coef_.T, rtol=0, atol=1e-3)


def test_minimiser_recovers_sklearn_without_intercept_on_iris():
    X, y = load_iris(return_X_y=True)
    X = X / 10.0  # public bound: measurements below 10 cm
    n = X.shape[0]
    obj = MultinomialLogisticLoss(3, l2=1.0 / (n * 2.0), fit_intercept=False)
    theta, _ = ArrayOracle(obj, sp.csr_array(X), y, row_norm_bound=2.0,
                           sparse="always").minimize(gtol=1e-10)
    with threadpool_limits(1):
        ref = LogisticRegression(C=2.0, fit_intercept=False, tol=1e-12, max_iter=20_000).fit(X, y)
    np.testing.assert_allclose(theta.reshape(3, 4), ref.coef_, rtol=0, atol=1e-4)
    np.testing.assert_allclose(obj.predict_proba(theta, X), ref.predict_proba(X), rtol=0,
                               atol=1e-4)


def test_private_noisy_gd_on_digits_reaches_near_non_private_accuracy():
    """One NoisyGD fit of the full 10 x 65 matrix at (8, 1e-5)-DP (add/remove, n declared
    public for this test), every step one Gaussian mechanism on the clipped sum.

    Measured (seeds 0, 1, 2): 0.933, 0.931, 0.920; non-private 0.967 (the issue's one-vs-rest
    default: 0.812). The threshold 0.88 is conservative for the fixed seed 0."""
    X, y = _digits()
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    n, d = Xtr.shape
    obj = MultinomialLogisticLoss(10, l2=1e-3, centre=np.full(d, 0.5))
    oracle = ArrayOracle(obj, Xtr, ytr, row_norm_bound=4.0)
    k = oracle.constants()
    theta_np, _ = oracle.minimize(gtol=1e-8)
    acc_np = float(np.mean(obj.predict_proba(theta_np, Xte).argmax(axis=1) == yte))
    steps, eps, delta = 300, 8.0, 1e-5
    z = calibrate_gaussian_composition(eps, delta, steps)
    res = noisy_gd(oracle, noise_multiplier=z, clip=k.lipschitz, steps=steps,
                   learning_rate=1.0 / (n * k.smoothness), n_samples=n, averaging="suffix",
                   momentum=0.9, rng=np.random.default_rng(0))
    assert res.event == SelfComposed(Gaussian(z, 1.0), steps)
    assert gdp_epsilon(gaussian_mu(res.event), delta) <= eps
    acc = float(np.mean(obj.predict_proba(res.theta, Xte).argmax(axis=1) == yte))
    assert acc_np >= 0.95
    assert acc >= 0.88, (acc, acc_np)


@pytest.mark.parametrize("declared", [True, False], ids=["declared_box", "private"])
def test_multinomial_fit_predicts_in_the_coordinates_it_ran_in(declared):
    # the multinomial run's coordinates: rows f (x - c) projected onto the ball of radius R,
    # intercept scale s (a declared box's centre, radius and per-feature scale, or the private
    # conditioning's releases). predict maps rows as the run did, and the fitted model's
    # loss on the training rows through an oracle in the recorded coordinates is the log loss
    # of predict_proba (a model stored in other coordinates than it ran in fails this)
    from noisygd.estimators import DPLogisticRegression
    from noisygd.estimators._common import box_feature_scale
    from noisygd.oracles.rows import row_scale

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 1, 600), rng.uniform(0, 1, 600),
                         rng.uniform(0, 1000, 600)])
    y = np.digitize(X[:, 0] + X[:, 1] + X[:, 2] / 1000, [1.0, 2.0])
    box = ([0.0, 0.0, 0.0], [1.0, 1.0, 1000.0]) if declared else None
    model = DPLogisticRegression(epsilon=8.0, random_state=0, classes=[0, 1, 2],
                                 feature_bounds=box).fit(X, y)
    cond = model.conditioning_
    f, c, R = cond["feature_scale"], cond["centre"], cond["row_norm_bound"]
    assert f is not None and c is not None
    if declared:
        np.testing.assert_array_equal(f, box_feature_scale(box, 3))
    else:
        assert {"release", "feature_scale_release", "feature_range_release"} <= set(cond)
    objective = MultinomialLogisticLoss(3, centre=c, intercept_scale=cond["intercept_scale"],
                                        feature_scale=f)
    theta = objective.from_coefficients(model.coef_, model.intercept_)
    loss = ArrayOracle(objective, X, y, row_norm_bound=R).per_example_loss(theta)
    P = model.predict_proba(X)
    np.testing.assert_allclose(loss, -np.log(P[np.arange(y.size), y]), rtol=1e-9, atol=1e-12)
    # a row outside the scaled ball is mapped to c + s (x - c), s = R / ||f (x - c)||
    rows = np.array([[5.0, 5.0, 500.0], [-4.0, 6.0, 100.0], c])
    s = np.minimum(1.0, R / np.linalg.norm(f * (rows - c), axis=1).clip(1e-300))
    np.testing.assert_allclose(s, row_scale(rows, R, centre=c, feature_scale=f), rtol=1e-12)
    assert s[0] < 1.0 and s[2] == 1.0
    mapped = c + s[:, None] * (rows - c)
    np.testing.assert_allclose(model.decision_function(rows),
                               mapped @ model.coef_.T + model.intercept_, rtol=1e-9, atol=1e-9)


def test_feature_scale_is_the_unscaled_loss_on_rescaled_rows_and_the_same_model():
    # rows [f (x - c), kappa]: the loss and clipped gradient of theta are the unscaled
    # objective's on the rows f x about f c; coef = W diag(f) predicts the same margins on the
    # rows as given, and from_coefficients inverts coefficients
    rng = np.random.default_rng(3)
    K, d = 4, 5
    X = rng.normal(size=(60, d)) * np.geomspace(0.01, 100.0, d)
    y = rng.integers(0, K, size=60)
    f, c = np.geomspace(50.0, 0.02, d), rng.normal(size=d)
    scaled = MultinomialLogisticLoss(K, intercept_scale=0.3, centre=c, feature_scale=f)
    plain = MultinomialLogisticLoss(K, intercept_scale=0.3, centre=f * c)
    theta = rng.normal(size=scaled.n_params(d))
    np.testing.assert_allclose(scaled.per_example_loss(theta, X, y),
                               plain.per_example_loss(theta, X * f, y), rtol=1e-12)
    for clip in (None, 0.5):
        np.testing.assert_allclose(scaled.clipped_gradient_sum(theta, X, y, clip),
                                   plain.clipped_gradient_sum(theta, X * f, y, clip),
                                   rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(scaled.augmented_row_norms(X),
                               plain.augmented_row_norms(X * f), rtol=1e-12)
    coef, intercept = scaled.coefficients(theta, d)
    np.testing.assert_allclose(X @ coef.T + intercept, scaled.margins(theta, X), rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(scaled.from_coefficients(coef, intercept), theta, rtol=1e-12,
                               atol=1e-12)
    bare = MultinomialLogisticLoss(K, fit_intercept=False, feature_scale=f)
    t0 = rng.normal(size=bare.n_params(d))
    np.testing.assert_allclose(bare.coefficients(t0, d)[0], t0.reshape(K, d) * f)
    for bad in (np.zeros(d), -f, f[:-1], np.full(d, np.nan)):
        with pytest.raises(ValueError, match="feature_scale"):
            MultinomialLogisticLoss(K, centre=c, feature_scale=bad)
    with pytest.raises(ValueError, match="feature scale"):
        MultinomialLogisticLoss(K, feature_scale=f).n_params(d + 1)
