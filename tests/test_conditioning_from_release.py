"""``noisygd.estimators.conditioning_from_release``: the post-processing of the private
conditioning's release (centre ``R c_hat`` and row scale ``sqrt(U_c)``), checked against its
docstring's formulas written out here, and against ``private_conditioning``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.estimators import conditioning_from_release, private_conditioning


def _expected(noisy, R, sigma):
    """The docstring of ``private_conditioning``, independently: N = max(N~, 1),
    c = S_x / N, U = min(1, max(S_u / N - ||c||^2 + 2 p sigma^2 / N^2, sigma / N))."""
    noisy = [float(v) for v in noisy]
    p = len(noisy) - 2
    N = max(noisy[-1], 1.0)
    c = [v / N for v in noisy[:p]]
    U = noisy[p] / N - sum(v * v for v in c) + 2.0 * p * sigma * sigma / N / N
    U = min(1.0, max(U, sigma / N))
    return {"centre": [R * v for v in c], "row_scale": math.sqrt(U),
            "intercept_scale": R * math.sqrt(U), "clip": R * math.sqrt(2.0 * U),
            "noise_multiplier": sigma / math.sqrt(3.0), "count": N}


def _check(got, expected):
    assert np.allclose(got.centre, expected["centre"], rtol=1e-13, atol=0.0)
    for key in ("row_scale", "intercept_scale", "clip", "noise_multiplier", "count"):
        assert getattr(got, key) == pytest.approx(expected[key], rel=1e-13), key


def test_hand_made_release_gives_the_documented_centre_and_scale():
    """p = 2, R = 2, sigma = 0.5, release (30, -10, 40, 100): c = (0.3, -0.1),
    U = 0.4 - 0.1 + 2*2*0.25/100^2 = 0.3001."""
    got = conditioning_from_release(np.array([30.0, -10.0, 40.0, 100.0]), 2.0, 0.5)
    assert np.allclose(got.centre, [0.6, -0.2], rtol=1e-15)
    assert got.row_scale ** 2 == pytest.approx(0.3001, rel=1e-13)
    assert got.intercept_scale == pytest.approx(2.0 * math.sqrt(0.3001), rel=1e-13)
    assert got.clip == pytest.approx(2.0 * math.sqrt(0.6002), rel=1e-13)
    assert got.noise_multiplier == pytest.approx(0.5 / math.sqrt(3.0), rel=1e-15)
    assert got.count == 100.0


@pytest.mark.parametrize(("noisy", "R", "sigma"), [
    ([50.0, 0.0, 25.0, 100.0], 1.0, 1.0),        # U below the floor: sigma / N = 0.01
    ([0.0, 500.0, 100.0], 3.0, 0.1),             # U = 5 capped at 1
    ([2.0, -1.0, 0.5, -5.0], 1.5, 0.2),          # N~ < 1: N = 1
    ([1.0, 2.0, 3.0, 50.0, 1e6], 10.0, 30.0),    # p = 3, tiny spread
    ([7.0, 12.0], 1.0, 2.0),                     # p = 0: an intercept-only release
])
def test_release_post_processing_matches_the_formula(noisy, R, sigma):
    _check(conditioning_from_release(np.array(noisy), R, sigma), _expected(noisy, R, sigma))


def test_floor_cap_and_count_floor_are_active_where_expected():
    floored = conditioning_from_release(np.array([50.0, 0.0, 25.0, 100.0]), 1.0, 1.0)
    assert floored.row_scale == pytest.approx(math.sqrt(1.0 / 100.0), rel=1e-13)
    capped = conditioning_from_release(np.array([0.0, 500.0, 100.0]), 3.0, 0.1)
    assert capped.row_scale == 1.0 and capped.clip == pytest.approx(3.0 * math.sqrt(2.0))
    unit = conditioning_from_release(np.array([2.0, -1.0, 0.5, -5.0]), 1.5, 0.2)
    assert unit.count == 1.0
    assert np.allclose(unit.centre, [3.0, -1.5])  # R * S_x / 1


def test_row_scale_is_in_zero_one_and_relations_hold_on_random_releases():
    """On arbitrary releases: 0 < row_scale <= 1, intercept_scale = R row_scale and
    clip = sqrt(2) intercept_scale; the centre scales linearly with R."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        p = int(rng.integers(0, 6))
        noisy = rng.normal(0.0, 50.0, p + 2)
        R, sigma = float(rng.uniform(0.1, 10.0)), float(rng.uniform(0.01, 20.0))
        got = conditioning_from_release(noisy, R, sigma)
        assert 0.0 < got.row_scale <= 1.0
        assert got.intercept_scale == pytest.approx(R * got.row_scale, rel=1e-14)
        assert got.clip == pytest.approx(math.sqrt(2.0) * got.intercept_scale, rel=1e-14)
        doubled = conditioning_from_release(noisy, 2.0 * R, sigma)
        assert np.allclose(doubled.centre, 2.0 * got.centre, rtol=1e-14)
        assert doubled.row_scale == got.row_scale
        _check(got, _expected(noisy, R, sigma))


def test_an_exact_release_gives_the_rows_mean_and_rms_spread():
    """With sigma negligible and the exact sums, the centre is the rows' mean and the row
    scale their root-mean-square distance to it, in units of R."""
    rng = np.random.default_rng(1)
    R = 2.0
    X = rng.normal(size=(400, 3))
    X *= np.minimum(1.0, R / np.linalg.norm(X, axis=1))[:, None]  # rows of norm <= R
    sums = np.concatenate([X.sum(axis=0) / R, [np.sum(np.linalg.norm(X, axis=1) ** 2) / R**2,
                                                 float(X.shape[0])]])
    got = conditioning_from_release(sums, R, 1e-12)
    mean = X.mean(axis=0)
    assert np.allclose(got.centre, mean, rtol=1e-12, atol=1e-14)
    spread = np.mean(np.sum((X / R - mean / R) ** 2, axis=1))
    assert got.row_scale == pytest.approx(math.sqrt(spread), rel=1e-9)


def test_it_is_the_post_processing_of_private_conditioning():
    """private_conditioning = conditioning_from_release of (exact sums + the same noise)."""
    rng = np.random.default_rng(2)
    X = rng.normal(0.3, 1.0, size=(60, 4))
    R, mu, sens = 1.5, 0.7, 1.0
    released = private_conditioning(X, R, mu=mu, sensitivity=sens,
                                    rng=np.random.default_rng(11))
    sigma = math.sqrt(3.0) * sens / mu
    norms = np.linalg.norm(X, axis=1)
    clipped = X * np.minimum(1.0, R / norms)[:, None]
    exact = np.concatenate([clipped.sum(axis=0) / R,
                            [np.sum(np.minimum(norms / R, 1.0) ** 2), float(X.shape[0])]])
    noisy = exact + sigma * np.random.default_rng(11).standard_normal(exact.shape)
    again = conditioning_from_release(noisy, R, sigma)
    assert np.allclose(released.centre, again.centre, rtol=1e-12, atol=1e-14)
    for key in ("row_scale", "intercept_scale", "clip", "noise_multiplier", "count"):
        assert getattr(released, key) == pytest.approx(getattr(again, key), rel=1e-12)
    assert released.noise_multiplier == pytest.approx(sens / mu, rel=1e-15)


def test_the_input_release_is_not_modified():
    noisy = np.array([3.0, 4.0, 2.0, 10.0])
    copy = noisy.copy()
    conditioning_from_release(noisy, 1.0, 0.5)
    assert np.array_equal(noisy, copy)


@pytest.mark.parametrize(("R", "sigma", "match"), [
    (0.0, 1.0, "row_norm_bound must be positive and finite"),
    (-1.0, 1.0, "row_norm_bound must be positive and finite"),
    (math.inf, 1.0, "row_norm_bound must be positive and finite"),
    (1.0, 0.0, "sigma must be positive and finite"),
    (1.0, math.nan, "sigma must be positive and finite"),
])
def test_bad_constants_are_refused(R, sigma, match):
    with pytest.raises(ValueError, match=match):
        conditioning_from_release(np.array([1.0, 1.0, 10.0]), R, sigma)


@pytest.mark.parametrize("noisy", [[5.0], [], [[1.0, 2.0, 3.0]], [1.0, np.nan, 3.0],
                                   [1.0, 2.0, np.inf]])
def test_a_release_of_the_wrong_shape_or_not_finite_is_refused(noisy):
    """A length-1 release used to give p = -1 and a made-up result; NaN a silent row scale."""
    with pytest.raises(ValueError, match="p \\+ 2 >= 2 finite numbers"):
        conditioning_from_release(np.asarray(noisy, dtype=float), 1.0, 1.0)
