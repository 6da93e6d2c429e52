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


# ------------------------------------------------ pre-release stages (training module doc, 8)
def _stage(name, mu, seen, relation=None, next_oracles=None, k=2, noise_std=None):
    """A stage releasing (count, rows) at GDP ``mu``; ``seen`` collects the oracle read."""
    from noisygd.accounting.events import Gaussian, Neighbouring
    from noisygd.training import PreparedFit, PreRelease

    rel = relation or Neighbouring.ADD_REMOVE
    delta = rel.clipped_sum_sensitivity
    sigma = math.sqrt(k) * delta / mu if noise_std is None else noise_std

    def then(noisy):
        seen.append((name, noisy.size))
        return PreparedFit(next_oracles, None)

    return PreRelease(name, Gaussian(delta / mu, delta, rel), ("count", "rows")[:k], sigma,
                      np.random.default_rng(len(seen) + 11), then)


def test_pre_release_stages_run_in_order_each_on_the_previous_ones_oracle(tmp_path):
    """A sequence of stages: the second reads the first oracle of the first's
    post-processing; the events compose in order after none, before the count and the run;
    the ledger records the stages in order, then the fit; each was checked with every later
    stage and the rest, so a budget short of the whole refuses before any record or read."""
    from noisygd.ledger import BudgetExceededError, Ledger

    mu = calibrate_mu(1.0, 1e-5)
    first, second = _oracle(), _oracle()
    read = []

    def watch(oracle, label):
        real = oracle.bounded_row_sums

        def watching(*args, **kwargs):
            read.append(label)
            return real(*args, **kwargs)

        oracle.bounded_row_sums = watching

    watch(first, "first")
    watch(second, "second")
    seen = []
    stages = (_stage("a", 0.3 * mu, seen, next_oracles=[second]),
              _stage("b", 0.2 * mu, seen, next_oracles=[second]))
    path = str(tmp_path / "l.db")
    with Ledger(path) as ledger:
        ledger.set_budget("d", 1.0, 1e-5)
    fit = fit_private([first], method="noisy_gd", epsilon=1.0, delta=1e-5,
                      rng=np.random.default_rng(0), pre_release=stages, ledger=path,
                      dataset="d", algorithm="E/noisy_gd")
    assert read == ["first", "second"] and seen == [("a", 4), ("b", 4)]
    assert fit.event.events[:2] == (stages[0].event, stages[1].event)
    assert gaussian_mu(fit.event) == pytest.approx(mu, rel=1e-9)
    with Ledger(path) as ledger:
        releases = ledger.releases("d")
    assert [r.algorithm for r in releases] == ["E/a", "E/b", "E/noisy_gd"]
    assert fit.info["a_release"] == releases[0].id and fit.info["b_release"] == releases[1].id
    # a ledger with room for stage a and the rest (mu^2 - mu_b^2), not for a, b and the
    # rest (mu^2): nothing recorded, nothing read
    from noisygd.accounting.gdp import gdp_epsilon

    path2 = str(tmp_path / "l2.db")
    short = 0.5 * (gdp_epsilon(0.8 * mu, 1e-5) + 1.0)
    with Ledger(path2) as ledger:
        ledger.set_budget("d", short, 1e-5)
    big = (_stage("a", 0.3 * mu, [], next_oracles=[second]),
           _stage("b", 0.6 * mu, [], next_oracles=[second]))
    read.clear()
    with pytest.raises(BudgetExceededError):
        fit_private([first], method="noisy_gd", epsilon=1.0, delta=1e-5,
                    rng=np.random.default_rng(0), pre_release=big, ledger=path2,
                    dataset="d")
    with Ledger(path2) as ledger:
        assert ledger.releases("d") == []
    assert read == []


def test_a_stage_whose_event_does_not_cover_its_noise_is_refused_before_a_read():
    """Review C4: the event recorded and composed must cover the noise drawn (sqrt(k) Delta /
    sigma for k sums); a stage claiming 0.3 mu for almost no noise, a stage under another
    relation and a stage with a SecureRandom in a plain fit are refused before any read."""
    from noisygd.accounting.events import Neighbouring
    from noisygd.mechanisms.secure import SecureRandom

    oracle = _oracle()

    def unread(*args, **kwargs):
        raise AssertionError("the rows were read")

    oracle.bounded_row_sums = unread
    mu = 0.3 * calibrate_mu(1.0, 1e-5)
    cheat = _stage("cheat", mu, [], next_oracles=[oracle], noise_std=1e-9)
    other = _stage("other", mu, [], relation=Neighbouring.REPLACE_ONE, next_oracles=[oracle])
    fine = _stage("fine", mu, [], next_oracles=[oracle])
    secure_rng = type(fine)(**{**fine.__dict__, "rng": SecureRandom()})
    for stage, exc in ((cheat, ValueError), (other, ValueError), (secure_rng, TypeError)):
        with pytest.raises(exc, match=r"pre-release|prior event"):
            fit_private([oracle], method="noisy_gd", epsilon=1.0, delta=1e-5,
                        rng=np.random.default_rng(0), pre_release=stage)
    # the honest stage's event is exactly sqrt(2) Delta / sigma: accepted (and then read)
    with pytest.raises(AssertionError, match="the rows were read"):
        fit_private([oracle], method="noisy_gd", epsilon=1.0, delta=1e-5,
                    rng=np.random.default_rng(0), pre_release=fine)


def test_a_stage_reduce_condenses_its_release_and_frees_it_before_then():
    """PreRelease.reduce: ``then`` receives ``reduce(noisy)``, and the noisy vector is freed
    before ``then`` runs (what lets the feature range's histogram go before the next stage
    builds its oracles); the noise is the stage's own (same draws as without reduce)."""
    import weakref

    from noisygd.accounting.events import Gaussian, Neighbouring
    from noisygd.training import PreparedFit, PreRelease

    rel = Neighbouring.ADD_REMOVE
    delta = rel.clipped_sum_sensitivity
    mu = calibrate_mu(1.0, 1e-5)
    terms = 4
    sigma = math.sqrt(terms) * delta / (0.3 * mu)
    statistic = np.arange(1000.0)
    kept: dict = {}

    def reduce(noisy):
        kept["ref"] = weakref.ref(noisy)
        kept["noisy"] = noisy.copy()
        return float(noisy.sum()), noisy.size

    def then(summary):
        kept["alive"] = kept["ref"]() is not None
        kept["summary"] = summary
        return PreparedFit([_oracle()], None)

    stage = PreRelease("r", Gaussian(delta / (0.3 * mu), delta, rel), (), sigma,
                       np.random.default_rng(5), then, statistic=lambda: statistic.copy(),
                       statistic_terms=terms, reduce=reduce)
    fit_private([_oracle()], method="noisy_gd", epsilon=1.0, delta=1e-5,
                rng=np.random.default_rng(0), pre_release=[stage])
    assert kept["alive"] is False
    assert kept["summary"] == (float(kept["noisy"].sum()), 1000)
    expected = statistic + sigma * np.random.default_rng(5).standard_normal(1000)
    np.testing.assert_allclose(kept["noisy"], expected, rtol=0, atol=1e-9)


def test_a_budget_whose_mu_rounds_to_zero_is_refused_before_any_record():
    """fit_private at epsilon = delta = 1e-300 (the budget's mu squares to 0) raised
    ZeroDivisionError building its covering event; now a ValueError naming the budget."""
    with pytest.raises(ValueError, match=r"epsilon=1e-300 at delta=1e-300 is too small"):
        fit_private([_oracle()], method="noisy_gd", epsilon=1e-300, delta=1e-300,
                    rng=np.random.default_rng(0))


def test_a_stage_start_is_the_runs_theta0_unless_the_caller_gave_one():
    """PreparedFit.start (a post-processing of the release) is where the run starts: NoisyGD
    at a vanishing learning rate returns it (last iterate), and its plan's distance counts
    it; a theta0 in options wins."""
    from noisygd.accounting.events import Gaussian, Neighbouring
    from noisygd.training import PreparedFit, PreRelease

    rel = Neighbouring.ADD_REMOVE
    mu = calibrate_mu(1.0, 1e-5)
    start = np.array([0.3, -0.2, 0.1, 0.05])

    def stage(oracle):
        def then(noisy):
            return PreparedFit([oracle], None, start=start)

        return PreRelease("s", Gaussian(1.0 / (0.3 * mu), 1.0, rel), ("count",),
                          1.0 / (0.3 * mu), np.random.default_rng(3), then)

    def fit(options):
        oracle = _oracle()
        return fit_private([oracle], method="noisy_gd", epsilon=1.0, delta=1e-5, max_iter=2,
                           rng=np.random.default_rng(0), pre_release=stage(oracle),
                           options={"learning_rate": 1e-300, "averaging": "last",
                                    "momentum": 0.0, **options})

    np.testing.assert_allclose(fit({}).thetas[0], start, atol=1e-12)
    mine = np.array([1.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(fit({"theta0": mine}).thetas[0], mine, atol=1e-12)
    plan = fit({}).results[0].info["plan"]
    assert plan["init_distance_start"]["start_norm"] == pytest.approx(np.linalg.norm(start))
