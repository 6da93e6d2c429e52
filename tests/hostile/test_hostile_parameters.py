"""Estimator parameters at the edges of floating-point range: each refused naming the parameter,
before any data is read (found by probing every parameter of the three estimators with ten
hostile values; each raised under an internal name or a bare OverflowError before)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.accounting.gdp import MAX_BOUNDED_EPSILON, gdp_mu
from noisygd.estimators import (
    SCALE_RANGE,
    DPHuberRegressor,
    DPLinearRegression,
    DPLogisticRegression,
)


def _data() -> tuple[np.ndarray, np.ndarray]:
    X = np.random.default_rng(0).random((120, 4))
    return X, (X[:, 0] > 0.5).astype(int)


def _fit(cls, **params):
    X, y = _data()
    params = {"random_state": 0, **params}
    if cls is DPLogisticRegression:
        return cls(classes=[0, 1], **params).fit(X, y)
    return cls(target_range=(0.0, 1.0), **params).fit(X, 0.5 * X[:, 0])


@pytest.mark.parametrize(("cls", "params", "message"), [
    # was: OverflowError (34, 'Numerical result out of range')
    (DPLogisticRegression, {"conditioning_share": 5e-324}, "conditioning_share=5e-324 is too"),
    # was: "feature_scale must hold 4 finite positive values"
    (DPLogisticRegression, {"feature_scale_share": 5e-324}, "feature_scale_share=5e-324 is"),
    (DPLinearRegression, {"scale_share": 5e-324}, "scale_share=5e-324 is too small"),
    (DPLinearRegression, {"target_range_share": 5e-324}, "target_range_share=5e-324 is too"),
    # was: "init_distance must be positive and finite, got inf" / "got 0.0"
    (DPLogisticRegression, {"l2": 5e-324}, "l2=5e-324 must be 0 or within"),
    (DPLogisticRegression, {"intercept_scale": 1e308}, "intercept_scale=1e"),
    # was: "the public constants are out of floating-point range for NoisyGD's planner"
    (DPHuberRegressor, {"threshold": 1e308}, "threshold=1e"),
    (DPLinearRegression, {"radius": 1e308}, "radius=1e"),
    # was: "intercept_scale must be positive and finite, got inf" (the box's radius)
    (DPLogisticRegression, {"feature_bounds": (np.full(4, -1e200), np.full(4, 1e200))},
     "feature_bounds' radius=inf is outside"),
    # was: "math domain error"
    (DPLogisticRegression, {"epsilon": 1e308}, "mu is unbounded for epsilon=1e"),
])
def test_a_parameter_out_of_floating_point_range_is_refused_by_name(cls, params, message):
    with pytest.raises(ValueError, match=message):
        _fit(cls, **params)


def test_the_edges_themselves_are_accepted():
    lo = SCALE_RANGE[0]
    assert _fit(DPLogisticRegression, l2=lo).l2_ == lo
    assert np.all(np.isfinite(_fit(DPLogisticRegression, l2=0.0).coef_))
    assert np.all(np.isfinite(_fit(DPLogisticRegression, conditioning_share=1e-150).coef_))
    assert np.all(np.isfinite(_fit(DPHuberRegressor, threshold=1e3).coef_))


def test_the_largest_inverted_epsilon_is_where_mu_is_unbounded_anyway():
    # below the limit a finite mu is found; above it the search's end (mu = e^50) already
    # meets every delta, which the "unbounded" answer says. At eps = 1e40, delta(eps; mu) =
    # Phi(mu/2 - eps/mu) - e^eps Phi(-eps/mu - mu/2) (DRS22 Cor. 2.13; the second term is
    # below 1e-20 there) equals 1e-5 at mu/2 - eps/mu = Phi^-1(1e-5) = -4.26, i.e.
    # mu = sqrt(4.26^2 + 2 eps) - 4.26 = sqrt(2e40) (1 - 3e-20): sqrt(2e40) in double precision
    assert gdp_mu(1e40, 1e-5) == pytest.approx(math.sqrt(2e40), rel=1e-12)
    for eps in (MAX_BOUNDED_EPSILON * 2, 1e308):
        with pytest.raises(ValueError, match="unbounded"):
            gdp_mu(eps, 1e-5)


def test_a_pld_whose_loss_grid_would_not_fit_is_refused_and_rdp_answers():
    from noisygd.accounting.events import Gaussian, PoissonSampled, SelfComposed
    from noisygd.accounting.pld import MAX_GRID_POINTS, PLDAccountant, loss_grid_points
    from noisygd.accounting.registry import best
    from noisygd.exceptions import UnsupportedEventError

    # the closed form: (r^2/2 + 10 r) / interval, r = 1/z, the worst Gaussian part
    event = SelfComposed(PoissonSampled(2e-11, Gaussian(0.005)), 5)
    assert loss_grid_points(event, 0.002) == pytest.approx((0.5 * 200**2 + 10 * 200) / 0.002)
    assert loss_grid_points(SelfComposed(Gaussian(1.0), 3), 5e-4) == pytest.approx(21_000)
    # a PrivateTrainer told n_samples_public=1e12 for 200 rows calibrated through these
    # events and took over 20 GB; now the PLD refuses before building and RDP answers
    with pytest.raises(UnsupportedEventError, match="loss grid of about"):
        PLDAccountant(0.002).epsilon(event, 1e-5)
    assert loss_grid_points(event, 0.002) > MAX_GRID_POINTS
    # at its own adaptive interval (from the event's RDP scale) the grid is small: answered
    result = best(event, 1e-5)
    assert np.isfinite(result.epsilon) and result.accountant in ("pld", "rdp")


def test_the_torch_trainer_names_its_refused_parameters():
    torch = pytest.importorskip("torch")
    from torch import nn

    from noisygd.torch import PrivateTrainer

    X = torch.randn(40, 3)
    y = (X[:, 0] > 0).long()

    def fit(**kw):
        net = nn.Linear(3, 2)
        args = {"method": "noisy_sgd", "epsilon": 1.0, "delta": 1e-5, "batch_size": 8,
                "steps": 2, "generator": 0, "n_samples_public": 40, **kw}
        return PrivateTrainer(net, torch.optim.SGD(net.parameters(), lr=0.1),
                              nn.CrossEntropyLoss(reduction="none"), **args).fit(X, y)

    # was: planned at n = 1e12 (a sampling rate of 8e-12), calibrated for minutes in 20 GB
    with pytest.raises(ValueError, match="n_samples_public must be the number of examples"):
        fit(n_samples_public=10**12)
    with pytest.raises(ValueError, match="relation must be one of"):  # was: not a Neighbouring
        fit(relation="x")
    with pytest.raises(TypeError, match="delta must be a real number"):  # was: float('x')
        fit(delta="x")
    assert fit().steps_done_ == 2
