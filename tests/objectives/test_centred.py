"""CentredGLM: the same objective in public centred coordinates, and the schema's centring."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from noisygd.algorithms.noisy_gd import noisy_gd
from noisygd.data import load_uci, public_centring, uci_data_dir
from noisygd.objectives import CentredGLM, HuberLoss, LogisticLoss
from noisygd.oracles import ArrayOracle
from noisygd.schema import encode_features, parse_schema
from noisygd.schema import public_centring as schema_public_centring


def _data(seed=0, n=60, d=4, labels=True):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 0.5, size=(n, d))
    y = np.where(rng.random(n) < 0.4, 1.0, 0.0) if labels else rng.uniform(0, 1, n)
    return X, y


def _explicit(obj: CentredGLM, X):
    """The centred rows [x - c, s] built explicitly (the reference)."""
    return np.hstack([X - obj.centre, np.full((X.shape[0], 1), obj.intercept_scale)])


@pytest.mark.parametrize("base", [LogisticLoss(), HuberLoss(threshold=0.5)])
@pytest.mark.parametrize("sparse", [False, True])
def test_same_function_and_clipped_gradients_as_explicit_centred_rows(base, sparse):
    X, y = _data(labels=isinstance(base, LogisticLoss))
    c = np.array([0.25, 0.1, 0.3, 0.2])
    obj = CentredGLM(base, c, 0.4)
    y = obj.check_targets(y)
    Xin = sp.csr_array(X) if sparse else X
    Xp = _explicit(obj, X)
    no_icpt = type(base)(fit_intercept=False) if isinstance(base, LogisticLoss) else \
        HuberLoss(threshold=0.5, fit_intercept=False)
    rng = np.random.default_rng(3)
    for _ in range(5):
        v = rng.normal(size=5) * 3
        # value: equal to base at to_base(v) and to the no-intercept GLM on [x - c, s]
        assert obj.value(v, Xin, y) == pytest.approx(base.value(obj.to_base(v), X, y), rel=1e-12)
        assert obj.value(v, Xin, y) == pytest.approx(no_icpt.value(v, Xp, y), rel=1e-12)
        np.testing.assert_allclose(obj._centred_row_norms(Xin), np.linalg.norm(Xp, axis=1),
                                   rtol=1e-12)
        for clip in (None, 0.05, 0.3):
            np.testing.assert_allclose(obj.clipped_gradient_sum(v, Xin, y, clip),
                                       no_icpt.clipped_gradient_sum(v, Xp, y, clip),
                                       rtol=1e-10, atol=1e-13)
        # chain rule: grad_v = M^T grad_theta with theta = M v
        g = base.gradient(obj.to_base(v), X, y)
        np.testing.assert_allclose(obj.gradient(v, Xin, y),
                                   np.append(g[:-1] - c * g[-1], 0.4 * g[-1]),
                                   rtol=1e-10, atol=1e-13)


def test_to_base_and_from_base_are_inverse_and_minima_agree():
    X, y = _data(1)
    base = LogisticLoss()
    obj = CentredGLM(base, np.full(4, 0.25), 0.3)
    v = np.array([1.0, -2.0, 0.5, 0.0, 3.0])
    np.testing.assert_allclose(obj.from_base(obj.to_base(v)), v, rtol=1e-14)
    _, f_base = base.minimize(X, y)
    _, f_centred = obj.minimize(X, y)
    assert f_centred == pytest.approx(f_base, abs=1e-10)


def test_constants_use_the_centred_bound():
    obj = CentredGLM(LogisticLoss(), np.zeros(3), 0.5)
    k = obj.constants(1.2)
    assert k.lipschitz == pytest.approx(math.hypot(1.2, 0.5))  # logistic: |phi'| <= 1
    assert k.smoothness == pytest.approx((1.2**2 + 0.25) / 4)
    assert k.strong_convexity == 0.0 and k.convex


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(base=LogisticLoss(radius=2.0)), ValueError, "projection ball"),
    (dict(base=LogisticLoss(fit_intercept=False)), ValueError, "intercept"),
    (dict(base="logistic"), TypeError, "GLMObjective"),
    (dict(centre=[np.nan, 0.0]), ValueError, "centre"),
    (dict(centre=[]), ValueError, "centre"),
    (dict(intercept_scale=0.0), ValueError, "intercept_scale"),
])
def test_refuses_what_it_cannot_preserve(kwargs, err, match):
    args = dict(base=LogisticLoss(), centre=[0.1, 0.2], intercept_scale=1.0) | kwargs
    with pytest.raises(err, match=match):
        CentredGLM(**args)


def test_refuses_mismatched_widths():
    obj = CentredGLM(LogisticLoss(), [0.1, 0.2], 1.0)
    X, y = _data(d=3)
    with pytest.raises(ValueError, match="columns"):
        obj.value(np.zeros(3), X, y)
    with pytest.raises(ValueError, match="shape"):
        obj.to_base(np.zeros(4))


def _domain_radius(columns: dict, extremes: dict, bound: float):
    """Encode every combination of the per-column extreme raw values (each block's encoded
    values are a finite set or, numeric, a segment whose distance to the centre is convex, so
    the maximum over the domain is attained on these combinations) and return the centring
    and the distances of the encoded rows to its centre."""
    schema = parse_schema({"row_norm_bound": bound, "columns": columns})
    cen = schema_public_centring(schema)
    frame = pd.DataFrame(list(itertools.product(*extremes.values())), columns=list(extremes),
                         dtype=object)
    X = encode_features(schema, frame)
    return cen, np.linalg.norm(X - cen.centre, axis=1)


_ZEROS = {"unknown": "zeros", "missing": "zeros"}


def test_schema_radius_is_the_exact_maximum_over_the_public_domain():
    # the loaders' encoding: a numeric column and one-hot blocks in which an unknown or
    # missing value is the all-zero block (bundled UCI schemas: unknown = missing = "zeros")
    columns = {"a": {"kind": "numeric", "bounds": [0, 10]},
               "b": {"kind": "categorical", "levels": ["x", "y", "z"], **_ZEROS},
               "c": {"kind": "categorical", "levels": ["u", "v"], **_ZEROS}}
    # every point of the encoded domain: numeric at 0 or 10 (extremes), each block a level,
    # an unknown value or a missing one (all-zero)
    extremes = {"a": [0.0, 10.0], "b": ["x", "y", "z", "?", None], "c": ["u", "v", "?", None]}
    cen, dist = _domain_radius(columns, extremes, 2.0)
    b = 2.0 / math.sqrt(3)
    assert cen.intercept_scale == pytest.approx(b)
    assert dist.max() == pytest.approx(cen.radius, rel=1e-12)
    # R_c^2 = b^2 (1/4 + max(1 - 1/3, 1/3) + max(1 - 1/2, 1/2))
    assert cen.radius == pytest.approx(b * math.sqrt(0.25 + 2 / 3 + 0.5), rel=1e-12)
    np.testing.assert_allclose(cen.centre, [b / 2, b / 3, b / 3, b / 3, b / 2, b / 2])


@pytest.mark.parametrize(("columns", "extremes"), [
    # one level with "zeros": the zero vertex is the farthest (max(1 - 1/m, 1/m) = 1/m)
    ({"s": {"kind": "categorical", "levels": ["only"], **_ZEROS}}, {"s": ["only", "?"]}),
    # indicator columns: numeric (triangle (0,0), (b,0), (0,b)), categorical (one more level)
    # and ordinal; and a categorical whose unknown value maps to a declared level
    ({"n": {"kind": "numeric", "bounds": [-1, 3], "transform": "signed_log1p",
            "missing": "indicator"},
      "k": {"kind": "categorical", "levels": [1, 2, 3, 4], "missing": "indicator",
            "unknown": 4},
      "o": {"kind": "ordinal", "levels": ["lo", "mid", "hi"], "missing": "indicator"}},
     {"n": [-1.0, 3.0, None], "k": [1, 2, 3, 4, 9, None], "o": ["lo", "hi", None]}),
])
def test_schema_radius_is_exact_for_every_missing_and_unknown_rule(columns, extremes):
    cen, dist = _domain_radius(columns, extremes, 1.5)
    assert dist.max() == pytest.approx(cen.radius, rel=1e-12)
    assert cen.intercept_scale == pytest.approx(1.5 / math.sqrt(len(columns)))


@pytest.mark.data
@pytest.mark.parametrize("name", ["wine", "credit"])
def test_real_rows_lie_in_the_public_ball(name):
    X, _, X_te, _ = load_uci(name, uci_data_dir())
    cen = public_centring(name)
    for A in (X, X_te):
        assert np.linalg.norm(A - cen.centre, axis=1).max() <= cen.radius * (1 + 1e-12)


def test_centred_noisy_gd_tracks_base_optimum_with_tiny_noise():
    X, y = _data(2, n=200)
    base = LogisticLoss()
    obj = CentredGLM(base, np.full(4, 0.25), 0.25)
    y = obj.check_targets(y)
    _, f_star = base.minimize(X, y)
    C = obj.constants(0.5).lipschitz
    beta = obj.constants(0.5).smoothness
    oracle = ArrayOracle(obj, X, y, row_norm_bound=0.5)
    res = noisy_gd(oracle, noise_multiplier=1e-9, clip=C, steps=3000,
                   learning_rate=1.0 / (200 * beta), n_samples=200, momentum=0.9,
                   rng=np.random.default_rng(0))
    assert base.value(obj.to_base(res.theta), X, y) - f_star < 1e-6


@pytest.mark.parametrize("sparse", [False, True])
def test_array_oracle_maps_rows_into_the_centred_ball(sparse):
    """Behind ArrayOracle the bound R_c is on the centred rows and the map is the projection
    onto the ball around c: x -> c + min(1, R_c/||x - c||)(x - c). The oracle's clipped sum
    equals the objective's on those explicitly mapped rows."""
    rng = np.random.default_rng(5)
    X = rng.uniform(0.0, 2.0, size=(300, 4))
    y = np.where(rng.random(300) < 0.5, 1.0, 0.0)
    c = np.array([0.25, 0.1, 0.3, 0.2])
    obj = CentredGLM(LogisticLoss(), c, 0.4)
    R = 1.2
    dist = np.linalg.norm(X - c, axis=1)
    assert (dist > R).any() and (dist < R).any()
    Xm = c + np.minimum(1.0, R / dist)[:, None] * (X - c)
    oracle = ArrayOracle(obj, sp.csr_array(X) if sparse else X, y, row_norm_bound=R,
                         sparse="always" if sparse else "never")
    yy = obj.check_targets(y)
    for _ in range(3):
        v = rng.normal(size=5)
        for clip in (None, 0.1):
            np.testing.assert_allclose(oracle.clipped_gradient_sum(v, clip),
                                       obj.clipped_gradient_sum(v, Xm, yy, clip),
                                       rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(oracle.per_example_loss(v), obj.per_example_loss(v, Xm, yy),
                                   rtol=1e-12)
    assert oracle.constants() == obj.constants(R)


def test_ridge_penalty_is_defined_in_the_optimised_coordinates():
    # F'(v) = mean loss at theta(v) + l2/2 ||v||^2: check value and gradient against that
    # definition (finite differences) and the strong convexity and optimum bound it implies.
    base = LogisticLoss(l2=0.05)
    c = np.array([0.2, -0.1, 0.3, 0.0])
    obj = CentredGLM(base, c, 0.3)
    X, y = _data(d=4)
    y = obj.check_targets(y)
    v = np.array([0.3, -0.7, 0.2, 1.1, -0.4])
    unpenalised = LogisticLoss().value(obj.to_base(v), X, y)
    assert obj.value(v, X, y) == pytest.approx(unpenalised + 0.025 * float(v @ v), rel=1e-12)
    h = 1e-6
    fd = np.array([(obj.value(v + h * e, X, y) - obj.value(v - h * e, X, y)) / (2 * h)
                   for e in np.eye(5)])
    np.testing.assert_allclose(obj.gradient(v, X, y), fd, rtol=1e-6, atol=1e-8)
    assert obj.constants(1.0).strong_convexity == 0.05
    v_star, _ = obj.minimize(X, y)
    assert np.linalg.norm(v_star) <= obj.optimum_norm_bound() == pytest.approx(
        math.sqrt(2 * math.log(2) / 0.05))


def test_check_feature_scale_takes_finite_positive_vectors_of_the_size_asked():
    from noisygd.objectives.base import check_feature_scale

    f = check_feature_scale([0.5, 2, 3], 3)
    assert f.dtype == np.float64 and f.tolist() == [0.5, 2.0, 3.0]
    assert check_feature_scale([1.0, 4.0]).tolist() == [1.0, 4.0]  # any size when None
    for bad in ([1.0, 0.0, 2.0], [1.0, -1.0, 2.0], [1.0, np.inf, 2.0], [1.0, np.nan, 2.0],
                [1.0, 2.0], [[1.0, 2.0, 3.0]]):
        with pytest.raises(ValueError, match="feature_scale must hold 3 finite positive"):
            check_feature_scale(bad, 3)
    for bad in ([], [[1.0]], [0.0]):
        with pytest.raises(ValueError, match="feature_scale must be a 1-D vector"):
            check_feature_scale(bad)
