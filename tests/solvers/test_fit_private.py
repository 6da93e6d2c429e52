"""fit_private: one budget split, one account, argument checks by the _checks policy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.gdp import gaussian_mu
from noisygd.estimators import DPLogisticRegression
from noisygd.objectives.glm import LogisticLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.training import fit_private


def _data(n=600, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    y = np.where(X @ np.ones(d) > 0, 1.0, -1.0)
    return X, y


def _oracle(n=600):
    X, y = _data(n)
    return ArrayOracle(LogisticLoss(l2=1e-3), X, y, row_norm_bound=1.0)


def test_gaussian_budget_is_split_once_and_composes_to_the_total():
    oracles = [_oracle(), _oracle()]
    fit = fit_private(oracles, method="noisy_gd", epsilon=1.0, delta=1e-5,
                      rng=np.random.default_rng(0))
    # count + two problems: mu^2 adds up to the total GDP budget exactly.
    assert len(fit.event.events) == 3
    assert gaussian_mu(fit.event) == pytest.approx(calibrate_mu(1.0, 1e-5), rel=1e-9)
    count_mu = gaussian_mu(fit.event.events[0])
    assert count_mu**2 == pytest.approx(0.01 * calibrate_mu(1.0, 1e-5) ** 2, rel=1e-9)


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    ({"n_samples_public": 400.7}, TypeError, "n_samples_public"),
    ({"n_samples_public": 0}, ValueError, "n_samples_public"),
    ({"count_budget_fraction": 1.0}, ValueError, "count_budget_fraction"),
    ({"max_iter": 0}, ValueError, "max_iter"),
    ({"max_iter": 10.0}, TypeError, "max_iter"),
    ({"clip": "big"}, TypeError, "clip"),
    ({"method": "magic"}, ValueError, "noisy_gd"),
])
def test_argument_checks(kwargs, exc, match):
    args = {"method": "noisy_gd", "epsilon": 1.0, "delta": 1e-5,
            "rng": np.random.default_rng(0), **kwargs}
    with pytest.raises(exc, match=match):
        fit_private([_oracle()], **args)


def test_estimator_rejects_fractional_public_n_and_zero_epochs():
    X, y = _data()
    with pytest.raises(TypeError, match="n_samples_public"):
        DPLogisticRegression(n_samples_public=400.7, classes=[-1, 1]).fit(X, y)
    with pytest.raises(ValueError, match="epochs"):
        DPLogisticRegression(method="noisy_sgd", n_samples_public=600, classes=[-1, 1],
                             method_options={"epochs": 0}).fit(X, y)


def test_non_gaussian_method_refuses_a_split_it_cannot_account():
    with pytest.raises(ValueError, match="single"):
        fit_private([_oracle(), _oracle()], method="noisy_sgd", epsilon=1.0, delta=1e-5,
                    rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="add_remove"):
        fit_private([_oracle()], method="langevin", epsilon=1.0, delta=1e-5,
                    rng=np.random.default_rng(0))


def test_noisy_gd_reports_a_bound_as_covering_only_the_run_it_is_about():
    X, y = _data(n=2000)

    def plan_of(options):
        model = DPLogisticRegression(n_samples_public=2000, classes=[-1, 1], random_state=0,
                                     method_options=options, conditioning_share=0).fit(X, y)
        return model.fit_info_["plans"][0]["plan"]

    textbook = plan_of({"plan": {"accelerate": False}})
    assert textbook["bound_name"] == "12.2.2" and textbook["averaging"] == "uniform"
    assert textbook["bound_covers_run"] is True
    # the same plan released at the last iterate: the 12.2.2 bound is about the average
    last = plan_of({"plan": {"accelerate": False}, "averaging": "last"})
    assert last["bound_covers_run"] is False
    assert plan_of(None)["bound_covers_run"] is False  # accelerated default (momentum)
