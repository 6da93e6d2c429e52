"""A fit that raises before it returns its model: what the ledger and the estimator keep.

The rule (docs/ledger.md, "A fit that fails"; :mod:`noisygd.training`, module doc 9): a
fit's records are withdrawn only if it failed before its first noise draw (the
pre-release's, the count's, or the runs', which start once the fit's own release is
committed, whether ``n`` is public or not), whatever the exception. From the first draw on
they stay, whatever the exception (an interruption and a lost store included), the fit's own
release settled to the events performed: the count alone before the plan is committed, the
planned event after. An estimator whose fit raises is left not fitted, with no value of the
data on it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from noisygd.accounting import Composed, Gaussian
from noisygd.estimators import CONDITIONING_RELEASES, DPLinearRegression, DPLogisticRegression
from noisygd.exceptions import DataAccessError
from noisygd.ledger import Ledger, LedgerError
from noisygd.objectives.glm import LogisticLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.solvers import NoisyGDSolver
from noisygd.training import fit_private

DELTA = 1e-5
#: The failures of the tests: a lost store, the operating system, an interruption, and an
#: error a solver could raise from a noisy value. None is special-cased.
FAILURES = [DataAccessError("store lost"), OSError("disk gone"), KeyboardInterrupt(),
            ValueError("diverged")]


def _data(n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    y = np.where(X @ np.ones(d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _regression_data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 3)) / 2.0
    y = np.clip(0.5 + 0.1 * X.sum(axis=1) + 0.05 * rng.normal(size=500), 0.0, 1.0)
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


class LostAfterRecording(ArrayOracle):
    """An in-memory oracle whose rows cannot be read once ``armed`` (set by the test when
    the ledger records the fit): the count's read of ``n`` raises ``error``."""

    armed = False
    error: BaseException = DataAccessError("store lost")

    @property
    def n_rows(self):
        if self.armed:
            raise self.error
        return super().n_rows


def _releases(path):
    with Ledger(path) as ledger:
        return ledger.releases("d")


def _fitted_state(est):
    """What a fit leaves on an estimator: its fitted attributes and its in-fit values."""
    return sorted(k for k in vars(est) if k in est._FIT_STATE
                  or (k.endswith("_") and not k.startswith("_")))


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


@pytest.mark.parametrize("error", FAILURES, ids=lambda e: type(e).__name__)
def test_a_failure_before_the_first_noise_draw_withdraws_the_reservation(
        path, monkeypatch, error):
    """The reservation is recorded, then the count's read of ``n`` fails: no noise was
    drawn, so the record is withdrawn, whatever the exception."""
    X, y = _data()
    oracle = LostAfterRecording(LogisticLoss(), X, y, row_norm_bound=1.0)
    oracle.error = error
    spend = Ledger.spend

    def spend_then_lose(self, *args, **kwargs):
        release = spend(self, *args, **kwargs)
        oracle.armed = True
        return release

    monkeypatch.setattr(Ledger, "spend", spend_then_lose)
    with pytest.raises(type(error)):
        _fit(oracle, path)
    assert oracle.armed  # the reservation had been recorded
    assert _releases(path) == []


@pytest.mark.parametrize("error", FAILURES, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("public_n", [False, True])
def test_a_failure_during_the_run_keeps_the_planned_release(path, error, public_n):
    """The run started (after two noisy steps, private or public ``n``): the record stays,
    whatever the exception, at the planned event, i.e. the event of the same fit without the
    fault (a run stopped part-way released a prefix of its outputs)."""
    X, y = _data()
    kw = {"n_samples_public": X.shape[0] if public_n else None}
    oracle = FailingOracle(LogisticLoss(), X, y, row_norm_bound=1.0, error=error)
    with pytest.raises(type(error)):
        _fit(oracle, path, **kw)
    assert oracle.calls == 3
    (kept,) = _releases(path)
    whole = _fit(ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0), None, dataset=None,
                 **kw)
    assert kept.event == whole.event
    assert isinstance(kept.event, Composed) == (not public_n)  # (count, run) or the run
    assert (kept.settled_at is not None) == (not public_n)  # reserved, then settled


def test_a_failure_inside_the_counts_noise_draw_keeps_the_count(path, monkeypatch):
    """The count's noise draw itself fails: a draw had begun, so the reservation stays,
    settled to the count's event."""
    import noisygd.training as training

    def broken(*args, **kwargs):
        raise ValueError("no noise today")

    monkeypatch.setattr(training, "add_gaussian_noise", broken)
    X, y = _data()
    with pytest.raises(ValueError, match="no noise"):
        _fit(ArrayOracle(LogisticLoss(), X, y, row_norm_bound=1.0), path)
    (kept,) = _releases(path)
    assert isinstance(kept.event, Gaussian) and kept.settled_at is not None


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


def test_an_interrupted_fit_keeps_its_conditioning_and_its_run(path, monkeypatch):
    """The reviewer's scenario: Ctrl-C at the 5th gradient of a fit that released its private
    conditioning (a noisy centre) and four noisy steps. Both records stay (the fit's own
    settled to its planned event), and the estimator is left not fitted: no coefficients,
    no conditioning, even from its earlier fit."""
    X, y = _data()
    labels = np.where(y > 0, 1, 0)
    est = DPLogisticRegression(
        feature_range_share=0.0, epsilon=1.0, delta=DELTA, method="noisy_gd", classes=[0, 1],
                               conditioning_share=0.1, ledger=path, dataset="d",
                               random_state=0, max_iter=20)
    est.fit(X, labels)  # an earlier, complete fit: three releases
    assert "centre" in est.conditioning_
    real, calls = ArrayOracle.clipped_gradient_sum, []

    def interrupted(self, theta, clip, rows=None):
        calls.append(1)
        if len(calls) >= 5:
            raise KeyboardInterrupt
        return real(self, theta, clip, rows)

    monkeypatch.setattr(ArrayOracle, "clipped_gradient_sum", interrupted)
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, labels)
    releases = _releases(path)
    k = len(CONDITIONING_RELEASES) + 2  # each fit: its conditioning, feature scale, run
    assert [r.algorithm for r in releases[k:]] == [
        *(f"DPLogisticRegression/{name}" for name in CONDITIONING_RELEASES),
        "DPLogisticRegression/feature_scale", "DPLogisticRegression/noisy_gd"]
    assert releases[-1].settled_at is not None and releases[-1].event == releases[k - 1].event
    assert _fitted_state(est) == []
    with pytest.raises(NotFittedError):
        check_is_fitted(est)


def test_a_regression_whose_run_loses_its_data_keeps_its_releases(path, monkeypatch):
    """DPLinearRegression records its private centre's release, its scale's, then its own;
    the store is lost at the third gradient: the released centre and scale and the noisy
    steps exist, so the three records stay, and the estimator holds neither coefficients
    nor the released target shift."""
    X, y = _regression_data()
    real, calls = ArrayOracle.clipped_gradient_sum, []

    def lost(self, theta, clip, rows=None):
        calls.append(1)
        if len(calls) >= 3:
            raise DataAccessError("store lost")
        return real(self, theta, clip, rows)

    monkeypatch.setattr(ArrayOracle, "clipped_gradient_sum", lost)
    est = DPLinearRegression(
        feature_range_share=0.0, target_range=(0.0, 1.0), target_range_share=0.0,
            method="noisy_gd", scale_share=0.1,
                             ledger=path, dataset="d", random_state=0, max_iter=10)
    with pytest.raises(DataAccessError):
        est.fit(X, y)
    assert [r.algorithm for r in _releases(path)] == [
        *(f"DPLinearRegression/{name}" for name in CONDITIONING_RELEASES),
        "DPLinearRegression/feature_scale", "DPLinearRegression/target_scale",
        "DPLinearRegression/noisy_gd"]
    assert _fitted_state(est) == []


def test_a_store_lost_before_the_first_read_withdraws_and_leaves_nothing(path, monkeypatch):
    """The private centre's release is recorded, then the oracle cannot read its sums: no
    noise was drawn, so the record is withdrawn and the estimator holds nothing of the fit
    (its fitted attributes, the target shift and the scales included); the same fit without
    the fault then records its three releases."""
    X, y = _regression_data()
    real = ArrayOracle.bounded_row_sums

    def lost(self, target_half_range=None, **kwargs):
        raise DataAccessError("store lost")

    monkeypatch.setattr(ArrayOracle, "bounded_row_sums", lost)
    est = DPLinearRegression(
        feature_range_share=0.0, target_range=(0.0, 1.0), target_range_share=0.0,
            method="noisy_gd", scale_share=0.1,
                             ledger=path, dataset="d", random_state=0, max_iter=10)
    with pytest.raises(DataAccessError):
        est.fit(X, y)
    assert _releases(path) == []
    assert _fitted_state(est) == []
    monkeypatch.setattr(ArrayOracle, "bounded_row_sums", real)
    est.fit(X, y)
    assert [r.algorithm for r in _releases(path)] == [
        *(f"DPLinearRegression/{name}" for name in CONDITIONING_RELEASES),
        "DPLinearRegression/feature_scale", "DPLinearRegression/target_scale",
        "DPLinearRegression/noisy_gd"]
    assert est.ledger_release_.id == _releases(path)[-1].id


def test_a_store_lost_at_the_second_stage_keeps_both_stages_records(path, monkeypatch):
    """Pre-release stages (the private centre's rounds, then the scale in its
    coordinates): the store is lost when the scale's sums are read, after the centre's
    noise was drawn, so every stage's record stays (the scale's was recorded before its
    read; the centre's releases exist), the fit's own is never recorded, and the estimator
    holds nothing."""
    X, y = _regression_data()
    real, calls = ArrayOracle.bounded_row_sums, []

    def lost(self, target_half_range=None, **kwargs):
        calls.append(target_half_range)
        if target_half_range is not None:  # the scale's sums (with the targets')
            raise DataAccessError("store lost")
        return real(self, target_half_range, **kwargs)

    monkeypatch.setattr(ArrayOracle, "bounded_row_sums", lost)
    est = DPLinearRegression(
        feature_range_share=0.0, target_range=(0.0, 1.0), target_range_share=0.0,
            method="noisy_gd", scale_share=0.1,
                             ledger=path, dataset="d", random_state=0, max_iter=10,
                             feature_scale_share=0)  # two stages: centre, then scale
    with pytest.raises(DataAccessError):
        est.fit(X, y)
    assert calls == [None, 0.5]  # the centre's first round (no targets; the later rounds
    # read X), then the scale's
    assert [r.algorithm for r in _releases(path)] == [
        *(f"DPLinearRegression/{name}" for name in CONDITIONING_RELEASES),
        "DPLinearRegression/target_scale"]
    assert _fitted_state(est) == []


def test_withdraw_refuses_an_unknown_release(path):
    with Ledger(path) as ledger, pytest.raises(LedgerError, match="no release with id 7"):
        ledger.withdraw(7)
