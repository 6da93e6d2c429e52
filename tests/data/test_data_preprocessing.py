"""Tests of noisygd.data.preprocessing: closed forms, bounds, and the privacy-leak warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from noisygd.data import (
    clip_rows,
    minmax_scale,
    one_hot,
    scale_by_bounds,
    signed_log1p,
    standardize,
)
from noisygd.exceptions import PrivacyLeakWarning


def _rows(seed: int = 0, n: int = 2000, d: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # Row norms spread over many orders of magnitude, so that both branches are exercised.
    return rng.standard_normal((n, d)) * np.exp(rng.uniform(-5, 5, size=(n, 1)))


@pytest.mark.parametrize("bound", [1.0, 0.3, 7.0, 1e-3])
def test_clip_rows_bounds_every_row_in_floating_point(bound: float) -> None:
    X = _rows()
    out = clip_rows(X, bound)
    assert out.dtype == np.float64 and out.flags.c_contiguous
    assert np.all(np.linalg.norm(out, axis=1) <= bound)


def test_clip_rows_is_the_projection_onto_the_ball() -> None:
    X = _rows(seed=1)
    bound = 1.0
    out = clip_rows(X, bound)
    norms = np.linalg.norm(X, axis=1)
    inside = norms <= bound
    assert inside.any() and (~inside).any()
    # Rows inside the ball are untouched, bit for bit.
    np.testing.assert_array_equal(out[inside], X[inside])
    # Longer rows keep their direction and land on the sphere: x * B / ||x||.
    np.testing.assert_allclose(out[~inside], X[~inside] * (bound / norms[~inside])[:, None],
                               rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(out[~inside], axis=1), bound, rtol=1e-12)
    # Idempotent, and the input is not modified.
    np.testing.assert_array_equal(clip_rows(out, bound), out)
    np.testing.assert_array_equal(X, _rows(seed=1))


@pytest.mark.parametrize(
    ("bound", "error"),
    [(0.0, ValueError), (-1.0, ValueError), (np.nan, ValueError), (np.inf, ValueError),
     ("a", TypeError), (None, TypeError), (True, TypeError)],
)
def test_clip_rows_rejects_bad_bound(bound: object, error: type) -> None:
    """One policy (noisygd._checks): wrong type -> TypeError, bad value -> ValueError."""
    with pytest.raises(error, match="bound"):
        clip_rows(np.ones((2, 2)), bound)  # type: ignore[arg-type]


def test_clip_rows_is_the_oracles_row_clipping() -> None:
    """One home of row clipping: the same map as noisygd.oracles.rows, dense and CSR."""
    import scipy.sparse as sp

    from noisygd.oracles import rows

    X = _rows(seed=5, n=300, d=6)
    np.testing.assert_array_equal(clip_rows(X, 0.7), rows.clip_rows(X, 0.7))
    X[np.abs(X) < np.median(np.abs(X))] = 0.0
    out = clip_rows(sp.csr_array(X), 0.7)
    assert sp.issparse(out)
    np.testing.assert_allclose(out.toarray(), clip_rows(X, 0.7), rtol=1e-14, atol=0)


def test_clip_rows_rejects_bad_matrix() -> None:
    with pytest.raises(ValueError, match="2-D"):
        clip_rows(np.ones(3), 1.0)
    with pytest.raises(ValueError, match="NaN"):
        clip_rows(np.array([[1.0, np.nan]]), 1.0)


def test_scale_by_bounds_closed_form_and_clipping() -> None:
    X = np.array([[17.0, -5.0], [53.5, 0.0], [90.0, 5.0], [120.0, 10.0], [0.0, -10.0]])
    out = scale_by_bounds(X, [17.0, -5.0], [90.0, 5.0])
    expected = np.array([[0.0, 0.0], [0.5, 0.5], [1.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-15)
    # Scalar bounds broadcast to every column.
    np.testing.assert_allclose(scale_by_bounds(X[:, 1:], -5.0, 5.0), expected[:, 1:])


def test_scale_by_bounds_errors() -> None:
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="strictly below"):
        scale_by_bounds(X, [0.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="shape"):
        scale_by_bounds(X, [0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="finite"):
        scale_by_bounds(X, 0.0, np.inf)


def test_standardize_warns_and_has_mean_zero_sd_one() -> None:
    X = _rows(seed=2, n=50, d=3)
    X = np.hstack([X, np.full((50, 1), 4.0)])  # a constant column is only centred
    with pytest.warns(PrivacyLeakWarning, match="standardize"):
        Z = standardize(X)
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Z[:, :3].std(axis=0), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(Z[:, 3], 0.0)


def test_minmax_scale_warns_and_spans_unit_interval() -> None:
    X = _rows(seed=3, n=40, d=4)
    with pytest.warns(PrivacyLeakWarning, match="minmax_scale"):
        Z = minmax_scale(X)
    np.testing.assert_allclose(Z.min(axis=0), 0.0, atol=0)
    np.testing.assert_allclose(Z.max(axis=0), 1.0, rtol=1e-15)
    j = 2
    np.testing.assert_allclose(
        Z[:, j], (X[:, j] - X[:, j].min()) / (X[:, j].max() - X[:, j].min()), rtol=1e-15
    )


@pytest.mark.parametrize("fn", [standardize, minmax_scale])
def test_declared_public_statistics_do_not_warn(fn) -> None:
    X = _rows(seed=4, n=20, d=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn(X, declare_public=True)


def test_one_hot_unknown_is_all_zero_block() -> None:
    out = one_hot(np.array([0, 2, -1, 1]), 3)
    np.testing.assert_array_equal(
        out, [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 1, 0]]
    )
    with pytest.raises(ValueError, match="below n_categories"):
        one_hot(np.array([3]), 3)
    with pytest.raises(TypeError, match="integer"):
        one_hot(np.array([0.5]), 3)
    with pytest.raises(ValueError, match="1-D"):
        one_hot(np.zeros((2, 2), dtype=int), 3)
    with pytest.raises(TypeError, match="n_categories"):
        one_hot(np.array([0]), 3.0)
    with pytest.raises(ValueError, match="n_categories"):
        one_hot(np.array([0]), 0)


def test_signed_log1p_is_odd_and_matches_log1p() -> None:
    x = np.array([-1e6, -3.0, 0.0, 2.0, 1e6])
    out = signed_log1p(x)
    np.testing.assert_allclose(out, np.sign(x) * np.log1p(np.abs(x)))
    np.testing.assert_allclose(out, -signed_log1p(-x))
    assert np.all(np.diff(out) > 0)
