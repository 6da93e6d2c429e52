"""A fit that raises before it returns its model: the ledger holds exactly the releases made.

The rule (docs/ledger.md, "A fit that fails"; :mod:`noisygd.training`, module doc 9): a record
is withdrawn when nothing of the data left the process, i.e. the fit failed before any noisy
value was computed, or for a reason no noisy value decided (a
:class:`~noisygd.exceptions.DataAccessError` such as a lost Dask worker, an ``OSError``, an
interruption); a failure decided after noisy values exist (a plan refused after the count, a
run's own error) is a post-processing of them, and their events stay recorded.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.accounting import Composed, Gaussian
from noisygd.estimators import DPLinearRegression
from noisygd.exceptions import DataAccessError
from noisygd.ledger import Ledger, LedgerError
from noisygd.objectives.glm import LogisticLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.solvers import NoisyGDSolver
from noisygd.training import fit_private

DELTA = 1e-5


def _data(n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    y = np.where(X @ np.ones(d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


class FailingOracle(ArrayOracle):
    """An in-memory oracle whose ``fail_at``-th gradient sum raises ``error``."""

    def __init__(self, *args, error=None, fail_at=3, **kwargs):
        super().__init__(*args, **kwargs)
        self.error = DataAccessError("store lost") if error is None else error
        self.fail_at, self.calls = fail_at, 0

    def clipped_gradient_sum(self, theta, clip, rows=None):
        self.calls += 1
        if self.calls >= self.fail_at:
            raise self.error
        return super().clipped_gradient_sum(theta, clip, rows)


def _releases(path):
    with Ledger(path) as ledger:
        return ledger.releases("d")


@pytest.fixture
def path(tmp_path):
    url = str(tmp_path / "ledger.db")
    with Ledger(url) as ledger:
        ledger.set_budget("d", 10.0, DELTA)
    return url


def _fit(oracle, path, **kw):
    args = {"method": "noisy_gd", "epsilon": 1.0, "delta": DELTA, "max_iter": 10,
            "rng": np.random.default_rng(0), "ledger": path, "dataset": "d", **kw}
    return fit_private([oracle], **args)


@pytest.mark.parametrize("error", [DataAccessError("store lost"), OSError("disk gone"),
                                   KeyboardInterrupt()])
@pytest.mark.parametrize("public_n", [False, True])
def test_a_data_access_failure_during_the_run_leaves_no_release(path, error, public_n):
    X, y = _data()
    oracle = FailingOracle(LogisticLoss(), X, y, row_norm_bound=1.0, error=error)
    with pytest.raises(type(error)):
        _fit(oracle, path, n_samples_public=X.shape[0] if public_n else None)
    assert oracle.calls == 3  # the run had started: the release had been recorded
    assert _releases(path) == []
    # and the ledger still works: the same fit without the fault is one release
    fit = _fit(ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0), path)
    assert [r.id for r in _releases(path)] == [fit.release.id]


def test_a_failure_decided_after_the_count_keeps_what_was_computed(path):
    """A run's own error (not a data-access failure) after the noisy count and steps: the
    exception may depend on the noisy values, so the settled release stays."""
    X, y = _data()
    oracle = FailingOracle(LogisticLoss(), X, y, row_norm_bound=1.0,
                           error=ValueError("diverged"))
    with pytest.raises(ValueError, match="diverged"):
        _fit(oracle, path)
    (kept,) = _releases(path)
    assert kept.settled_at is not None
    assert isinstance(kept.event, Composed) and len(kept.event.events) == 2  # count, run


def test_a_plan_refused_after_the_count_keeps_the_count_only(path):
    class Refusing(NoisyGDSolver):
        name = "refusing_noisy_gd"

        def plan(self, facts, budget):
            raise ValueError("no plan for these facts")

    X, y = _data()
    with pytest.raises(ValueError, match="no plan"):
        _fit(ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0), path, method=Refusing())
    (kept,) = _releases(path)
    assert isinstance(kept.event, Gaussian) and kept.settled_at is not None  # the count


def test_a_failure_before_any_noisy_value_leaves_no_release(path, monkeypatch):
    """The reservation is recorded, then the count's noise cannot be drawn: nothing noisy
    exists, so the reservation is withdrawn whatever the exception."""
    import noisygd.training as training

    def broken(*args, **kwargs):
        raise ValueError("no noise today")

    monkeypatch.setattr(training, "add_gaussian_noise", broken)
    X, y = _data()
    with pytest.raises(ValueError, match="no noise"):
        _fit(ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0), path)
    assert _releases(path) == []


def test_a_regression_whose_run_loses_its_data_withdraws_both_releases(path, monkeypatch):
    """DPLinearRegression records its scale release, then its own; a data-access failure in
    the run withdraws both (the released scale never left the process either)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 3)) / 2.0
    y = np.clip(0.5 + 0.1 * X.sum(axis=1) + 0.05 * rng.normal(size=500), 0.0, 1.0)
    real = ArrayOracle.clipped_gradient_sum
    calls = []

    def lost(self, theta, clip, rows=None):
        calls.append(1)
        if len(calls) >= 3:
            raise DataAccessError("store lost")
        return real(self, theta, clip, rows)

    monkeypatch.setattr(ArrayOracle, "clipped_gradient_sum", lost)
    est = DPLinearRegression(target_range=(0.0, 1.0), method="noisy_gd", scale_share=0.1,
                             ledger=path, dataset="d", random_state=0, max_iter=10)
    with pytest.raises(DataAccessError):
        est.fit(X, y)
    assert _releases(path) == [] and not hasattr(est, "coef_")
    monkeypatch.setattr(ArrayOracle, "clipped_gradient_sum", real)
    est.fit(X, y)
    assert [r.algorithm for r in _releases(path)] == ["DPLinearRegression/target_scale",
                                                      "DPLinearRegression/noisy_gd"]


def test_withdraw_refuses_an_unknown_release(path):
    with Ledger(path) as ledger, pytest.raises(LedgerError, match="no release with id 7"):
        ledger.withdraw(7)
