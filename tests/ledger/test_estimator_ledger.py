"""Estimators and ``fit_private`` spend against the privacy ledger (``ledger=``, ``dataset=``).

Each fit is one release, recorded before the data is read and committed before the model is
returned; a fit the budget cannot admit is refused before the data is read; ``clone``,
``cross_val_score`` and ``GridSearchCV`` spend against the same ledger.

A default ``DPLogisticRegression`` without ``feature_bounds`` first releases its private
conditioning (``conditioning_share="auto"``), recorded as its own release before the fit's:
the tests of that pair say so; the tests of the ledger's mechanics of one fit (reservation,
clone, pickle, meta-estimators) declare ``conditioning_share=0`` (:data:`ONE_RELEASE`), so
that each fit is the one release they are about.
"""

from __future__ import annotations

import math
import os
import pickle
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy import optimize, stats
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from untouchable import Untouchable

from noisygd.accounting import Composed, Gaussian, best
from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.gdp import gaussian_mu
from noisygd.accounting.serialization import event_to_dict
from noisygd.estimators import (
    CONDITIONING_RELEASES,
    DPHuberRegressor,
    DPLinearRegression,
    DPLogisticRegression,
)
from noisygd.exceptions import BudgetExceededError, UnknownOptionError
from noisygd.ledger import Ledger, LedgerError
from noisygd.objectives.glm import LogisticLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.solvers import NoisyGDSolver
from noisygd.training import fit_private

DELTA = 1e-5
#: A classifier fit that makes one release (no private conditioning before its run).
ONE_RELEASE = {"conditioning_share": 0.0}


def _gdp_epsilon(mu, delta):
    """Epsilon of mu-GDP at delta (Dong, Roth and Su 2022, Cor. 2.13), by scipy alone."""
    def gap(eps):
        return (stats.norm.cdf(-eps / mu + mu / 2)
                - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta)

    return optimize.brentq(gap, 0.0, 100.0, xtol=1e-14, rtol=1e-13)


def _data(n=600, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    y = (X @ np.ones(d) + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _budget(url, dataset="d", epsilon=10.0, delta=DELTA):
    with Ledger(url) as ledger:
        ledger.set_budget(dataset, epsilon, delta)


def _releases(url, dataset="d"):
    with Ledger(url) as ledger:
        return ledger.releases(dataset)


# ------------------------------------------------------------------ one fit, one release
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_fit_records_one_release_whose_event_is_the_fit_s(backend, request):
    url = request.getfixturevalue("sqlite_path" if backend == "sqlite" else "postgres_url")
    _budget(url)
    X, y = _data()
    model = DPLogisticRegression(
        feature_range_share=0.0, epsilon=1.0, classes=[0, 1], ledger=url, dataset="d",
                                 random_state=0).fit(X, y)
    # the default without bounds: the private conditioning's releases first, 0.1 mu^2 in
    # all, its per-feature scale at sqrt(0.05) mu, then the fit's release (count + run);
    # together they are the fit's event, and compose to epsilon
    *cond, scale, release = _releases(url)
    mu = calibrate_mu(1.0, DELTA)
    assert [r.algorithm for r in cond] == [f"DPLogisticRegression/{name}"
                                           for name in CONDITIONING_RELEASES]
    assert scale.algorithm == "DPLogisticRegression/feature_scale"
    assert cond[0].id == model.conditioning_["release"]["ledger_release"]
    assert cond[-1].id == model.conditioning_["release"]["conditioning_3_release"]
    assert scale.id == model.conditioning_["feature_scale_release"]["ledger_release"]
    assert math.fsum(gaussian_mu(r.event) ** 2 for r in cond) == pytest.approx(
        0.1 * mu * mu, rel=1e-12)
    assert gaussian_mu(scale.event) == pytest.approx(math.sqrt(0.05) * mu, rel=1e-12)
    cond_events = tuple(r.event for r in cond)
    assert Composed((*cond_events, scale.event, *release.event.events)) == model.privacy_.event
    assert best(Composed((*cond_events, scale.event, release.event)),
                DELTA).epsilon == pytest.approx(1.0, rel=1e-6)
    assert release.id == model.ledger_release_.id == model.fit_info_["ledger_release"]
    assert release.algorithm == "DPLogisticRegression/noisy_gd"
    assert release.parameters["epsilon"] == 1.0 and "ledger" not in release.parameters
    # add/remove with a private count: the rest reserved as the covering Gaussian(1/mu_rest),
    # mu_rest^2 = mu^2 - mu_c^2 - mu_f^2, then settled to the exact composition (count + run)
    assert release.reserved_event_data["type"] == "Gaussian"
    assert release.reserved_event_data["fields"]["noise_multiplier"] == pytest.approx(
        1.0 / math.sqrt(0.85 * mu * mu), rel=1e-12)
    assert release.settled_at is not None
    with Ledger(url) as ledger:
        assert ledger.spent("d").epsilon == pytest.approx(model.privacy_.epsilon, rel=1e-9)


@pytest.mark.parametrize(("cls", "kwargs"), [
    (DPLogisticRegression, {"classes": [0, 1], "n_samples_public": 600, **ONE_RELEASE}),
    (DPLogisticRegression, {"classes": [0, 1], "method": "noisy_sgd", "n_samples_public": 600,
                            "method_options": {"expected_batch_size": 64, "epochs": 2},
                            **ONE_RELEASE}),
    (DPLogisticRegression, {"classes": [0, 1], "method": "dp_ftrl",
                            "neighbouring": "replace_one", **ONE_RELEASE}),
    (DPLogisticRegression, {"classes": [0, 1], "method": "output_perturbation",
                            "neighbouring": "replace_one", "l2": 0.1}),
    (DPLogisticRegression, {"classes": [0, 1], "method": "rrpsgd",
                            "neighbouring": "replace_one", "max_iter": 2000}),
    (DPHuberRegressor, {"neighbouring": "replace_one", "target_bound": 1.0,
                        "target_range_share": 0.0, **ONE_RELEASE}),
    (DPLinearRegression, {"method": "output_perturbation", "neighbouring": "replace_one",
                          "radius": 2.0}),
])
def test_public_n_fits_record_the_planned_event_without_a_reservation(sqlite_path, cls, kwargs):
    _budget(sqlite_path)
    X, y = _data()
    if cls is not DPLogisticRegression:
        y = X[:, 0] * 0.5
    model = cls(epsilon=1.0, ledger=sqlite_path, dataset="d", random_state=0, **kwargs)
    model.fit(X, y)
    (release,) = _releases(sqlite_path)
    assert release.event == model.privacy_.event
    assert release.reserved_event_data is None


def test_noisy_sgd_with_a_private_count_reserves_the_count_then_settles(sqlite_path):
    _budget(sqlite_path)
    X, y = _data()
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], method="noisy_sgd",
                                 method_options={"expected_batch_size": 64, "epochs": 2},
                                 ledger=sqlite_path, dataset="d", random_state=0,
                                 **ONE_RELEASE).fit(X, y)
    (release,) = _releases(sqlite_path)
    count, run = model.privacy_.event.events
    assert release.event == model.privacy_.event
    assert release.reserved_event_data == event_to_dict(count)
    assert type(run).__name__ == "SelfComposed"


def test_one_vs_rest_is_one_release(sqlite_path):
    _budget(sqlite_path)
    _budget(sqlite_path, dataset="d2")
    rng = np.random.default_rng(0)
    X = np.vstack([c + 0.3 * rng.normal(size=(200, 3)) for c in np.eye(3) * 2]) / 3
    y = np.repeat([0, 1, 2], 200)
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1, 2], multiclass="ovr",
                                 ledger=sqlite_path, dataset="d", random_state=0,
                                 **ONE_RELEASE).fit(X, y)
    (release,) = _releases(sqlite_path)
    assert release.event == model.privacy_.event and len(release.event.events) == 4
    assert release.epsilon == pytest.approx(1.0, rel=1e-6)
    multinomial = DPLogisticRegression(epsilon=1.0, classes=[0, 1, 2], ledger=sqlite_path,
                                       dataset="d2", random_state=0, **ONE_RELEASE).fit(X, y)
    (release,) = _releases(sqlite_path, dataset="d2")
    # the default for K > 2: one multinomial problem, so the count and one run
    assert release.event == multinomial.privacy_.event and len(release.event.events) == 2


def test_a_ledger_object_is_accepted(sqlite_path):
    X, y = _data()
    with Ledger(sqlite_path) as ledger:
        ledger.set_budget("d", 3.0, DELTA)
        DPLogisticRegression(classes=[0, 1], ledger=ledger, dataset="d",
                             random_state=0, **ONE_RELEASE).fit(X, y)
        assert len(ledger.releases("d")) == 1


# ------------------------------------------------------------ refused before the data
@pytest.mark.parametrize("kwargs", [
    {},
    {"n_samples_public": 600},
    {"method": "noisy_sgd", "n_samples_public": 600},
    {"method": "output_perturbation", "neighbouring": "replace_one", "l2": 0.1},
    {"method": "dp_ftrl", "neighbouring": "replace_one"},
])
def test_a_fit_over_budget_is_refused_before_the_data_is_read(sqlite_path, kwargs):
    _budget(sqlite_path, epsilon=0.5)
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], ledger=sqlite_path,
                                 dataset="d", **kwargs)
    with pytest.raises(BudgetExceededError, match="nothing was recorded"):
        model.fit(Untouchable((600, 3)), Untouchable((600,)))
    assert _releases(sqlite_path) == []
    assert not hasattr(model, "coef_")


def test_noisy_sgd_with_a_private_count_is_refused_after_the_count_which_stays_recorded(
        sqlite_path):
    # No event dominates a Poisson-subsampled run whose rate depends on the count, so the
    # count is reserved and the whole fit checked when it is settled (docs/ledger.md).
    _budget(sqlite_path, epsilon=0.5)
    X, y = _data()
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], method="noisy_sgd",
                                 ledger=sqlite_path, dataset="d", random_state=0,
                                 **ONE_RELEASE)
    with pytest.raises(BudgetExceededError, match="reservation stays recorded"):
        model.fit(X, y)
    (release,) = _releases(sqlite_path)
    mu_count = math.sqrt(0.01) * calibrate_mu(1.0, DELTA)
    assert release.event == Gaussian(1.0 / mu_count) and release.settled_at is None
    assert not hasattr(model, "coef_")


def test_the_budget_is_composed_and_the_release_that_does_not_fit_is_refused(sqlite_path):
    X, y = _data()
    two = best(Composed((Gaussian(1 / calibrate_mu(1.0, DELTA)),) * 2), DELTA).epsilon
    _budget(sqlite_path, epsilon=two * (1 + 1e-6))  # exactly two fits at epsilon 1
    make = DPLogisticRegression(
        feature_range_share=0.0, epsilon=1.0, classes=[0, 1], ledger=sqlite_path, dataset="d")
    clone(make).set_params(random_state=0).fit(X, y)
    clone(make).set_params(random_state=1).fit(X, y)
    with pytest.raises(BudgetExceededError):
        clone(make).fit(X, y)
    releases = _releases(sqlite_path)  # each fit: its conditioning, feature scale, run
    assert [r.algorithm.split("/")[1] for r in releases] == [
        *CONDITIONING_RELEASES, "feature_scale", "noisy_gd"] * 2
    assert releases[-1].spent_epsilon == pytest.approx(two, rel=1e-9) and two < 2.0


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    ({"ledger": "x.db"}, ValueError, "dataset"),
    ({"dataset": "d"}, ValueError, "ledger"),
    ({"ledger": 3, "dataset": "d"}, TypeError, "ledger"),
    ({"ledger": "x.db", "dataset": ""}, ValueError, "dataset"),
    ({"ledger": "x.db", "dataset": 7}, TypeError, "dataset"),
])
def test_ledger_and_dataset_go_together(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        DPLogisticRegression(classes=[0, 1], **kwargs).fit(Untouchable((10, 2)),
                                                           Untouchable((10,)))


def test_a_dataset_without_a_budget_is_refused(sqlite_path):
    with pytest.raises(LedgerError, match="no budget"):
        DPLogisticRegression(classes=[0, 1], ledger=sqlite_path, dataset="d").fit(
            Untouchable((10, 2)), Untouchable((10,)))


# ------------------------------------------------------- recorded before the data is read
class LedgerWatchingSolver(NoisyGDSolver):
    """NoisyGD whose run first reads the ledger: what is recorded when the data is read."""

    name = "ledger_watching_noisy_gd"

    def __init__(self, url):
        self.url = url
        self.seen = []

    def run(self, plan, oracle, rng):
        with Ledger(self.url) as ledger:
            self.seen.append(ledger.releases("d"))
        return super().run(plan, oracle, rng)


def test_the_exact_event_is_recorded_before_the_run_reads_the_data(sqlite_path):
    _budget(sqlite_path)
    X, y = _data()
    solver = LedgerWatchingSolver(sqlite_path)
    model = DPLogisticRegression(
        feature_range_share=0.0, classes=[0, 1], method=solver, ledger=sqlite_path,
                                 dataset="d", random_state=0).fit(X, y)
    (before,) = solver.seen  # the conditioning, feature scale, fit's exact event: recorded
    *cond, scale, fit = before
    assert len(cond) == len(CONDITIONING_RELEASES)
    assert Composed((*(r.event for r in cond), scale.event,
                     *fit.event.events)) == model.privacy_.event


def test_a_process_killed_during_the_fit_leaves_the_spend_recorded(sqlite_path):
    _budget(sqlite_path)
    script = textwrap.dedent(f"""
        import os, signal
        import numpy as np
        from noisygd.estimators import DPLogisticRegression
        from noisygd.solvers import NoisyGDSolver

        class Killed(NoisyGDSolver):
            name = "killed"
            def run(self, plan, oracle, rng):
                os.kill(os.getpid(), signal.SIGKILL)

        X = np.random.default_rng(0).normal(size=(300, 3)) / 2
        y = (X[:, 0] > 0).astype(int)
        DPLogisticRegression(classes=[0, 1], method=Killed(), ledger={sqlite_path!r},
                             dataset="d", random_state=0, conditioning_share=0.0).fit(X, y)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr
    (release,) = _releases(sqlite_path)
    # settled to the exact event before the run started: count + the planned run
    assert release.settled_at is not None
    assert len(release.event.events) == 2


# -------------------------------------------------- scikit-learn meta-estimators
def test_cross_val_score_records_one_release_per_fold(sqlite_path):
    _budget(sqlite_path)
    X, y = _data()
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], ledger=sqlite_path, dataset="d",
                                 random_state=0, **ONE_RELEASE)
    scores = cross_val_score(model, X, y, cv=5)
    assert scores.shape == (5,)
    releases = _releases(sqlite_path)
    assert len(releases) == 5
    # five releases at epsilon 1 cost their composition (exact GDP), not 5
    events = [r.event for r in releases]
    composed = best(Composed(tuple(events)), DELTA)
    with Ledger(sqlite_path) as ledger:
        spent = ledger.show("d")["spent_epsilon"]
    assert spent == pytest.approx(composed.epsilon, rel=1e-12)
    assert 1.0 < composed.epsilon < 5.0
    # independently: each fold is mu-GDP with epsilon(mu) = 1, and mu-GDP releases compose
    # to sqrt(5) mu (Dong, Roth and Su 2022, Cor. 2.13 and 3.3), solved here with scipy
    mu = optimize.brentq(lambda m: _gdp_epsilon(m, DELTA) - 1.0, 0.01, 10.0, xtol=1e-14)
    assert spent == pytest.approx(_gdp_epsilon(math.sqrt(5) * mu, DELTA), rel=1e-7)


def test_grid_search_records_one_release_per_setting_and_fold(sqlite_path):
    _budget(sqlite_path)
    X, y = _data()
    model = DPLogisticRegression(epsilon=0.5, classes=[0, 1], ledger=sqlite_path,
                                 dataset="d", random_state=0, **ONE_RELEASE)
    search = GridSearchCV(model, {"l2": [1e-3, 1e-2]}, cv=2, refit=False).fit(X, y)
    assert len(search.cv_results_["params"]) == 2
    releases = _releases(sqlite_path)
    assert len(releases) == 4
    assert sorted(r.parameters["l2"] for r in releases) == [1e-3, 1e-3, 1e-2, 1e-2]


def test_clone_and_pickle_keep_the_ledger(sqlite_path):
    _budget(sqlite_path)
    X, y = _data()
    model = DPLogisticRegression(classes=[0, 1], ledger=sqlite_path, dataset="d",
                                 random_state=0, **ONE_RELEASE)
    twin = clone(model)
    assert twin.get_params()["ledger"] == sqlite_path and twin.dataset == "d"
    fitted = pickle.loads(pickle.dumps(twin.fit(X, y)))
    assert fitted.ledger_release_.id == 1
    pickle.loads(pickle.dumps(model)).fit(X, y)
    assert len(_releases(sqlite_path)) == 2


# ------------------------------------------------------------------- fit_private
def test_fit_private_records_with_its_own_parameters(sqlite_path):
    _budget(sqlite_path)
    X, y = _data()
    oracle = ArrayOracle(LogisticLoss(l2=1e-3), X, np.where(y == 1, 1.0, -1.0),
                         row_norm_bound=1.0)
    fit = fit_private([oracle], method="noisy_gd", epsilon=1.0, delta=DELTA,
                      relation="replace_one", rng=np.random.default_rng(0),
                      ledger=sqlite_path, dataset="d", parameters={"note": "x"})
    (release,) = _releases(sqlite_path)
    assert fit.release.id == release.id and release.event == fit.event
    assert release.algorithm == "fit_private/noisy_gd"
    assert release.parameters["relation"] == "replace_one"
    assert release.parameters["note"] == "x"


def test_a_plan_error_after_the_reservation_leaves_only_the_count_recorded(sqlite_path):
    _budget(sqlite_path)
    X, y = _data()
    model = DPLogisticRegression(
        feature_range_share=0.0, classes=[0, 1], ledger=sqlite_path, dataset="d",
                                 method_options={"noise_dimension": 10**6})
    with pytest.raises(ValueError, match=r"noise_dimension.\] must be at most the \d+ param"):
        model.fit(X, y)  # a value only the planner checks, after the private count
    *cond, _, release = _releases(sqlite_path)
    assert [r.algorithm for r in cond] == [  # released before the count
        f"DPLogisticRegression/{name}" for name in CONDITIONING_RELEASES]
    # only the conditioning and the noisy count had touched the data when planning failed
    mu_count = math.sqrt(0.01) * calibrate_mu(1.0, DELTA)
    assert release.event == Gaussian(1.0 / mu_count)


@pytest.mark.parametrize("options", [{"plan": {"no_such_option": 1}}, {"steps": 5000},
                                     {"noise_multiplier": 0.01}, {"clip": 100.0}])
def test_an_unknown_or_plan_set_option_is_refused_before_any_record(sqlite_path, options):
    # refused by Solver.check_options before the ledger is opened: nothing is spent (these
    # keys were refused after the conditioning and the count, caught by the final event
    # check, or silently replaced by the plan's value)
    _budget(sqlite_path)
    X, y = _data()
    model = DPLogisticRegression(classes=[0, 1], ledger=sqlite_path, dataset="d", random_state=0,
                                 method_options=options)
    with pytest.raises(UnknownOptionError, match=r"not an option|unknown method_options"):
        model.fit(X, y)
    assert _releases(sqlite_path) == []


def test_environment_is_not_read_by_the_estimator(sqlite_path, monkeypatch):
    monkeypatch.setenv("NOISYGD_LEDGER", sqlite_path)
    X, y = _data()
    DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)
    assert not os.path.exists(sqlite_path)


def test_clone_of_an_estimator_holding_a_ledger_object_shares_it(sqlite_path):
    from sklearn.base import clone

    _budget(sqlite_path)
    with Ledger(sqlite_path) as ledger:
        model = DPLogisticRegression(classes=[0, 1], ledger=ledger, dataset="d", random_state=0,
                                     **ONE_RELEASE)
        twin = clone(model)
        assert twin.get_params()["ledger"] is ledger
        rng = np.random.default_rng(0)
        X = rng.normal(size=(300, 3)) / 3
        y = (X[:, 0] > 0).astype(int)
        twin.fit(X, y)
        assert len(ledger.releases("d")) == 1


# ------------------------------------- DPLinearRegression's private target scale (a release)
def _regression_data(n=600, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    y = np.clip(0.5 + 0.1 * (X @ np.ones(d)) + 0.05 * rng.normal(size=n), 0.0, 1.0)
    return X, y


def test_the_target_scale_is_recorded_before_the_targets_are_read(sqlite_path, monkeypatch):
    """The private centre's release (the default without bounds) is recorded first, then
    its sums are read on the oracle (``bounded_row_sums``, a training pre-release stage);
    then the scale's release is recorded, then its sums (rows centred at the released
    centre, targets) are read; the fit's own release is recorded before its run reads the
    data; the ledger composes the three to ``privacy_.epsilon``; and the model is the one
    fitted without a ledger (same seed)."""
    _budget(sqlite_path)
    X, y = _regression_data()
    seen = []
    real = ArrayOracle.bounded_row_sums

    def watching(self, *args, **kwargs):  # what the ledger holds when the sums are read
        with Ledger(sqlite_path) as ledger:
            seen.append(ledger.releases("d"))
        return real(self, *args, **kwargs)

    class Watching(LedgerWatchingSolver):
        name = "noisy_gd"  # the private scale is NoisyGD's

    monkeypatch.setattr(ArrayOracle, "bounded_row_sums", watching)
    solver = Watching(sqlite_path)
    kw = {"target_range": (0.0, 1.0), "target_range_share": 0.0, "random_state": 0,
          "scale_share": 0.1}
    model = DPLinearRegression(
        feature_range_share=0.0, method=solver, ledger=sqlite_path, dataset="d", **kw).fit(X, y)
    # the centre's first round reads the oracle's sums (its later releases read X), then the
    # per-feature scale, then the residual scale: each once its release is recorded
    at_centre, at_features, at_scale = seen
    k = len(CONDITIONING_RELEASES)
    centre = [f"DPLinearRegression/{name}" for name in CONDITIONING_RELEASES]
    assert [r.algorithm for r in at_centre] == centre[:1]
    assert [r.algorithm for r in at_features] == [*centre, "DPLinearRegression/feature_scale"]
    assert [r.algorithm for r in at_scale] == [*centre, "DPLinearRegression/feature_scale",
                                               "DPLinearRegression/target_scale"]
    events = model.privacy_.event.events
    assert [r.event for r in at_scale] == list(events[:k + 2])
    assert math.fsum(gaussian_mu(e) ** 2 for e in events[:k]) == pytest.approx(
        0.1 * calibrate_mu(1.0, DELTA) ** 2, rel=1e-9)
    (at_run,) = solver.seen
    assert len(at_run) == k + 3 and at_run[k + 2].event == Composed(events[k + 2:])
    centre_release, *_, scale_release, fit_release = _releases(sqlite_path)
    assert fit_release.id == model.ledger_release_.id
    assert model.conditioning_["release"]["ledger_release"] == centre_release.id
    assert model.fit_info_["target_scale_release"] == scale_release.id
    # the ledger's composed spend is the fit's epsilon (one budget, two releases)
    assert fit_release.spent_epsilon == pytest.approx(model.privacy_.epsilon, rel=1e-9)
    assert model.privacy_.epsilon <= 1.0 * (1 + 1e-9) and model.target_scale_ < 1.0
    # a ledger changes where the spend is recorded, not the model
    plain = DPLinearRegression(feature_range_share=0.0, method=NoisyGDSolver(), **kw).fit(X, y)
    np.testing.assert_array_equal(plain.coef_, model.coef_)
    assert plain.target_scale_ == model.target_scale_
    assert plain.privacy_.event == model.privacy_.event


def test_a_regression_the_budget_cannot_admit_spends_nothing(sqlite_path):
    # the scale alone (mu_s = sqrt(0.1) mu, epsilon ~0.28) fits a budget of 0.5; the whole
    # fit (epsilon 1) does not: refused before X or y is read, nothing recorded
    _budget(sqlite_path, epsilon=0.5)
    model = DPLinearRegression(epsilon=1.0, target_range=(0.0, 1.0), target_range_share=0.0,
                               ledger=sqlite_path,
                               dataset="d", scale_share=0.1)
    mu = calibrate_mu(1.0, DELTA)
    assert best(Gaussian(1.0 / (math.sqrt(0.1) * mu)), DELTA).epsilon < 0.5
    with pytest.raises(BudgetExceededError, match="nothing was recorded"):
        model.fit(Untouchable((600, 3)), Untouchable((600,)))
    assert _releases(sqlite_path) == []
    # the recording step checks the whole fit too (a budget spent between the preview and
    # the record): the scale is not recorded alone, and no row is read
    model._check_common_params()
    X, y = _regression_data()
    stage, oracles = model._pre_release_stage(X, [y - 0.5])

    def unread(*args, **kwargs):
        raise AssertionError("the rows were read")

    for oracle in oracles:
        oracle.bounded_row_sums = unread
    with pytest.raises(BudgetExceededError):
        fit_private(oracles, method="noisy_gd", epsilon=1.0, delta=DELTA,
                    rng=np.random.default_rng(0), ledger=sqlite_path, dataset="d",
                    pre_release=stage)
    assert _releases(sqlite_path) == []
    assert not hasattr(model, "coef_")


def test_two_regressions_compose_in_the_ledger(sqlite_path):
    X, y = _regression_data()
    two = best(Composed((Gaussian(1 / calibrate_mu(1.0, DELTA)),) * 2), DELTA).epsilon
    _budget(sqlite_path, epsilon=two * (1 + 1e-6))  # exactly two fits at epsilon 1
    make = DPLinearRegression(
        feature_range_share=0.0, epsilon=1.0, target_range=(0.0, 1.0), target_range_share=0.0,
            ledger=sqlite_path,
                              dataset="d", scale_share=0.1)
    first = clone(make).set_params(random_state=0).fit(X, y)
    second = clone(make).set_params(random_state=1).fit(X, y)
    with pytest.raises(BudgetExceededError):
        clone(make).fit(X, y)
    releases = _releases(sqlite_path)
    # each fit: its private centre, its scale, its run
    per = [*CONDITIONING_RELEASES, "feature_scale", "target_scale", "noisy_gd"]
    assert [r.algorithm.split("/")[1] for r in releases] == per * 2
    assert releases[len(per) - 1].spent_epsilon == pytest.approx(first.privacy_.epsilon,
                                                                 rel=1e-9)
    assert releases[-1].spent_epsilon == pytest.approx(
        best(Composed((first.privacy_.event, second.privacy_.event)), DELTA).epsilon, rel=1e-9)
