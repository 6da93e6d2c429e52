"""The distance pilot (:mod:`noisygd.solvers.distance`) is part of the fit's own event: composed
and recorded in the ledger before any row is read, and refused with the fit when the budget
cannot admit it."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from untouchable import Untouchable

from noisygd.accounting import Composed, Gaussian
from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.gdp import gaussian_mu
from noisygd.estimators import DPLogisticRegression
from noisygd.exceptions import BudgetExceededError
from noisygd.ledger import Ledger
from noisygd.planning import ComputeBudgetWarning
from noisygd.solvers import NoisyGDSolver

DELTA = 1e-5
PILOT = {"distance_pilot": True}


def _data(n=20000, d=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / math.sqrt(d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w = rng.standard_normal(d)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-X @ (4.0 * w / np.linalg.norm(w))))).astype(int)
    return X, y


def _budget(url, epsilon=10.0):
    with Ledger(url) as ledger:
        ledger.set_budget("d", epsilon, DELTA)


def _releases(url):
    with Ledger(url) as ledger:
        return ledger.releases("d")


class LedgerWatchingSolver(NoisyGDSolver):
    """NoisyGD whose run first reads the ledger (the pilot reads the rows in the run)."""

    name = "ledger_watching_noisy_gd"

    def __init__(self, url):
        self.url = url
        self.seen = []

    def run(self, plan, oracle, rng):
        if not self.seen:  # the first call: before the pilot reads a row
            self.seen.append(_releases(self.url))
        return super().run(plan, oracle, rng)


def test_the_pilot_s_event_is_recorded_before_the_pilot_reads_the_data(sqlite_path):
    _budget(sqlite_path)
    X, y = _data()
    solver = LedgerWatchingSolver(sqlite_path)
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], method=solver,
                                 method_options=PILOT, ledger=sqlite_path, dataset="d",
                                 random_state=0, conditioning_share=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ComputeBudgetWarning)
        model.fit(X, y)
    plan = model.fit_info_["plans"][0]["plan"]
    assert "distance_pilot" in plan
    ((before,),) = solver.seen
    (after,) = _releases(sqlite_path)
    # the private count, then the run's event: the pilot (Newton's releases) composed with
    # NoisyGD at mu_rest, already the exact event when the pilot started
    count, run = before.event.events
    assert before.event == after.event == model.privacy_.event
    pilot_event, rest = run.events
    assert isinstance(pilot_event, Composed)
    assert rest == Gaussian(1.0 / plan["distance_pilot"]["mu_rest"])
    mu = calibrate_mu(1.0, DELTA)
    assert math.hypot(gaussian_mu(count), gaussian_mu(run)) == pytest.approx(mu, rel=1e-9)
    with Ledger(sqlite_path) as ledger:
        assert ledger.spent("d").epsilon == pytest.approx(model.privacy_.epsilon, rel=1e-9)
    assert model.privacy_.epsilon <= 1.0 + 1e-9


def test_a_piloted_fit_over_budget_is_refused_before_the_data_is_read(sqlite_path):
    _budget(sqlite_path, epsilon=0.5)
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], method="noisy_gd",
                                 method_options=PILOT, ledger=sqlite_path, dataset="d",
                                 n_samples_public=20000, conditioning_share=0.0)
    with pytest.raises(BudgetExceededError, match="nothing was recorded"):
        model.fit(Untouchable((20000, 10)), Untouchable((20000,)))
    assert _releases(sqlite_path) == []
