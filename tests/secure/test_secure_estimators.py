"""Secure mode end to end: ``secure=True`` on the estimators and ``fit_private``.

Every estimator fits with ``secure=True``; its released event is a composition of
:class:`~noisygd.accounting.events.DiscreteGaussianNoise` events (the count's included),
read only by the zCDP and RDP accountants, and ``best(event, delta)`` is within the requested
epsilon. Methods without a secure form, a seed, and ``tune=True`` are refused before the data
is read. The planned event of each secure solver equals the event its run returns, and a
ledger fit records the secure event. (The default ``secure=False`` is checked bit for bit by
the unchanged tests of tests/test_estimators.py and tests/solvers.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.accounting import best, get_accountant
from noisygd.accounting.base import BUDGET_RTOL
from noisygd.accounting.events import (
    Composed,
    DiscreteGaussianNoise,
    DpEvent,
    Gaussian,
    Neighbouring,
    SelfComposed,
)
from noisygd.estimators import DPHuberRegressor, DPLinearRegression, DPLogisticRegression
from noisygd.exceptions import UnsupportedEventError
from noisygd.mechanisms.secure import SecureRandom
from noisygd.objectives import LogisticLoss
from noisygd.oracles import ArrayOracle
from noisygd.solvers import Budget, NoisyGDSolver, PublicFacts, get_solver
from noisygd.training import fit_private

pytest.importorskip("opendp.prelude", reason="secure noise needs the optional opendp package "
                    "(pip install 'noisygd[secure]')")

DELTA = 1e-5
EPS = 1.0


def _data(n: int = 300, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    w = np.array([1.0, -0.5, 0.25])[:d]
    y = (X @ w + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y, X @ w


def _noise_events(event: DpEvent) -> list[DpEvent]:
    """The top-level parts of a fit's event (one per release: count, runs)."""
    return list(event.events) if isinstance(event, Composed) else [event]


class Untouchable:
    """Array-like whose values must not be read (refusals come before the data)."""

    shape = (300, 3)

    def __array__(self, *args, **kwargs):
        raise AssertionError("the data was read")


CASES = [
    ("logistic-noisy_gd-private-n", DPLogisticRegression, {"classes": [0, 1]}),
    ("linear-noisy_gd-private-n", DPLinearRegression, {}),
    ("huber-noisy_gd-public-n", DPHuberRegressor, {"n_samples_public": 300}),
    ("logistic-ovr-3", DPLogisticRegression, {"classes": [0, 1, 2], "multiclass": "ovr"}),
    ("logistic-multinomial-3", DPLogisticRegression, {"classes": [0, 1, 2]}),
    ("logistic-noisy_sgd-private-n", DPLogisticRegression,
     {"classes": [0, 1], "method": "noisy_sgd"}),
    ("linear-noisy_sgd-public-n", DPLinearRegression,
     {"method": "noisy_sgd", "n_samples_public": 300}),
    ("logistic-dp_ftrl", DPLogisticRegression,
     {"classes": [0, 1], "method": "dp_ftrl", "neighbouring": "replace_one"}),
    ("logistic-output_perturbation", DPLogisticRegression,
     {"classes": [0, 1], "method": "output_perturbation", "neighbouring": "replace_one"}),
    ("huber-output_perturbation", DPHuberRegressor,
     {"method": "output_perturbation", "neighbouring": "replace_one"}),
]


@pytest.mark.parametrize(("cls", "kwargs"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_every_estimator_fits_in_secure_mode_within_the_budget(cls, kwargs):
    X, y, t = _data()
    if kwargs.get("classes") == [0, 1, 2]:
        y = y + (X[:, 1] > 0)
    target = y if cls is DPLogisticRegression else t
    model = cls(epsilon=EPS, delta=DELTA, secure=True, **kwargs).fit(X, target)
    event = model.privacy_.event
    parts = _noise_events(event)
    # every release (the private count, each problem's run) is a discrete Gaussian one
    assert parts and all(isinstance(p, DiscreteGaussianNoise) for p in parts)
    assert all(p.sensitivity_inflation >= 1.0 for p in parts)
    private_n = (kwargs.get("n_samples_public") is None
                 and kwargs.get("neighbouring", "add_remove") == "add_remove")
    if private_n:  # the count: a discrete Gaussian of sensitivity 1
        assert isinstance(parts[0].event, Gaussian) and parts[0].event.sensitivity == 1.0
    privacy = best(event, DELTA)
    assert privacy.accountant in ("zcdp", "rdp")
    assert privacy.epsilon <= EPS * (1.0 + BUDGET_RTOL)
    assert model.privacy_.epsilon == privacy.epsilon
    # the accountants specific to the continuous Gaussian refuse the discrete event
    for name in ("gdp", "pld"):
        with pytest.raises(UnsupportedEventError):
            get_accountant(name).epsilon(event, DELTA)
    assert np.all(np.isfinite(model.predict(X)))


def test_secure_noisy_gd_spends_its_zcdp_share_exactly_up_to_the_rounding_margin():
    """zCDP composes additively: the count and the run spend rho(epsilon, delta), to within
    the planner's 1e-9 safety factor, and never more."""
    from noisygd.accounting.zcdp import zcdp_rho
    from noisygd.mechanisms.noise import zcdp_rho_for

    X, y, _ = _data()
    model = DPLogisticRegression(epsilon=EPS, delta=DELTA, classes=[0, 1], secure=True).fit(X, y)
    rho = zcdp_rho(model.privacy_.event)
    target = zcdp_rho_for(EPS, DELTA)
    assert rho <= target
    assert rho >= target * (1.0 - 1e-6)


class _NoSecureSolver(NoisyGDSolver):
    """A solver without a secure mode (every built-in solver has one)."""

    name = "no_secure"
    secure_mode = False


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPLinearRegression, DPHuberRegressor])
def test_methods_without_a_secure_mode_are_refused_before_the_data_is_read(cls):
    kwargs = {"classes": [0, 1]} if cls is DPLogisticRegression else {}
    model = cls(secure=True, method=_NoSecureSolver(), n_samples_public=300, **kwargs)
    with pytest.raises(ValueError, match=r"method='no_secure'.*secure"):
        model.fit(Untouchable(), np.zeros(300))


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPLinearRegression, DPHuberRegressor])
def test_a_seed_in_secure_mode_is_refused_naming_random_state(cls):
    with pytest.raises(ValueError, match="random_state"):
        cls(secure=True, random_state=0).fit(Untouchable(), np.zeros(300))


def test_secure_must_be_a_bool():
    with pytest.raises(TypeError, match="secure"):
        DPLinearRegression(secure="yes").fit(Untouchable(), np.zeros(300))


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPLinearRegression])
def test_secure_tuning_is_one_selection_of_secure_runs_within_the_budget(cls):
    from noisygd.accounting.events import RandomStoppingSelection

    X, y, t = _data(n=400)
    kw = {"classes": [0, 1]} if cls is DPLogisticRegression else {}
    model = cls(epsilon=EPS, delta=DELTA, secure=True, tune=True, n_samples_public=400,
                **kw).fit(X, y if cls is DPLogisticRegression else t)
    event = model.privacy_.event
    assert isinstance(event, RandomStoppingSelection)
    # each planned run: (training dominated by a Gaussian, discrete Gaussian score)
    runs = event.event if isinstance(event.event, tuple) else (event.event,)
    for run in runs:
        assert isinstance(run, Composed)
        assert isinstance(run.events[1], DiscreteGaussianNoise)
    assert model.privacy_.accountant == "rdp"
    assert model.privacy_.epsilon <= EPS * (1.0 + BUDGET_RTOL)
    # K runs (drawn from the stopping law; K = 0 is possible), spread over the candidates;
    # a run was released exactly when there was one
    tuning = model.tuning_
    assert sum(tuning["runs_per_candidate"]) == tuning["n_runs"]
    assert (tuning["chosen"] is None) == (tuning["n_runs"] == 0)


def test_secure_is_a_parameter_of_every_estimator():
    for cls in (DPLogisticRegression, DPLinearRegression, DPHuberRegressor):
        assert cls().get_params()["secure"] is False
        assert cls(secure=True).get_params()["secure"] is True


def _oracle(n: int = 200, flip: bool = False) -> ArrayOracle:
    X, y, _ = _data(n=n)
    X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    labels = np.where(y == 1, 1.0, -1.0)
    return ArrayOracle(LogisticLoss(l2=0.01), X, -labels if flip else labels,
                       row_norm_bound=1.0)


@pytest.mark.parametrize(("method", "relation"), [
    ("noisy_gd", "add_remove"), ("noisy_gd", "replace_one"), ("noisy_sgd", "add_remove"),
    ("dp_ftrl", "replace_one"), ("output_perturbation", "replace_one"),
    ("langevin", "replace_one"),
])
def test_each_secure_solver_runs_exactly_its_planned_event(method, relation):
    oracle = _oracle()
    solver = get_solver(method)
    facts = PublicFacts.from_oracle(oracle, n_samples=oracle.n_rows, relation=relation)
    plan = solver.plan(facts, Budget(EPS, DELTA, secure=True))
    planned = solver.planned_event(plan)
    assert isinstance(planned, DiscreteGaussianNoise)
    assert best(planned, DELTA).epsilon <= EPS * (1.0 + BUDGET_RTOL)
    result = solver.run(plan, oracle, SecureRandom())
    assert result.event == planned
    # the same plan without secure mode is the continuous event (no rounding accounted)
    plain = solver.planned_event(solver.plan(facts, Budget(EPS, DELTA)))
    assert not isinstance(plain, DiscreteGaussianNoise)


def test_fit_private_needs_the_secure_source_exactly_in_secure_mode():
    oracle = _oracle()
    with pytest.raises(TypeError, match="SecureRandom"):
        fit_private([oracle], method="noisy_gd", epsilon=EPS, delta=DELTA,
                    rng=np.random.default_rng(0), secure=True, n_samples_public=200)
    with pytest.raises(TypeError, match="secure=True"):
        fit_private([oracle], method="noisy_gd", epsilon=EPS, delta=DELTA,
                    rng=SecureRandom(), n_samples_public=200)
    with pytest.raises(ValueError, match=r"method='no_secure'.*secure"):
        fit_private([oracle], method=_NoSecureSolver(), epsilon=EPS, delta=DELTA,
                    rng=SecureRandom(), secure=True, n_samples_public=200)


def test_fit_private_secure_count_and_two_problems_compose_in_zcdp():
    from noisygd.accounting.zcdp import zcdp_rho
    from noisygd.mechanisms.noise import zcdp_rho_for

    oracle = _oracle()
    fit = fit_private([oracle, _oracle(flip=True)], method="noisy_gd",
                      epsilon=EPS, delta=DELTA, rng=SecureRandom(), secure=True,
                      count_budget_fraction=0.25)
    count, *runs = fit.event.events
    assert len(runs) == 2 and isinstance(count, DiscreteGaussianNoise)
    rho = zcdp_rho_for(EPS, DELTA)
    # shares: rho_count <= f rho, each run <= (1 - f) rho / 2
    assert zcdp_rho(count) <= 0.25 * rho
    assert all(zcdp_rho(r) <= 0.375 * rho for r in runs)
    assert 1.0 <= fit.n_samples <= fit.results[0].info["n_samples"]


def test_a_secure_ledger_fit_records_the_secure_event(tmp_path):
    from noisygd.ledger import Ledger

    url = str(tmp_path / "ledger.db")
    with Ledger(url) as ledger:
        ledger.set_budget("d", 3.0, DELTA)
    X, y, _ = _data()
    model = DPLogisticRegression(epsilon=EPS, delta=DELTA, classes=[0, 1], secure=True,
                                 ledger=url, dataset="d").fit(X, y)
    public = DPLogisticRegression(epsilon=EPS, delta=DELTA, classes=[0, 1], secure=True,
                                  n_samples_public=300, ledger=url, dataset="d").fit(X, y)
    with Ledger(url) as ledger:
        first, second = ledger.releases("d")
    assert first.event == model.privacy_.event and second.event == public.privacy_.event
    assert all(isinstance(p, DiscreteGaussianNoise) for p in _noise_events(first.event))
    # the reservation (private n) was the covering discrete event, exactly rho-zCDP
    assert first.reserved_event_data is not None
    assert first.parameters.get("secure") is True


def test_secure_events_are_not_the_continuous_ones():
    """Sanity of the wrapping: the same run with continuous noise is a different event."""
    inner = SelfComposed(Gaussian(2.0, relation=Neighbouring.ADD_REMOVE), 10)
    assert DiscreteGaussianNoise(inner, 1.0000001) != inner


def test_preview_prices_the_secure_reservation_and_refuses_before_the_data(tmp_path):
    from noisygd.accounting.zcdp import zcdp_rho
    from noisygd.exceptions import BudgetExceededError
    from noisygd.ledger import Ledger
    from noisygd.mechanisms.noise import zcdp_rho_for
    from noisygd.training import preview_private_fit

    previewed = preview_private_fit(None, None, method="noisy_gd", epsilon=EPS, delta=DELTA,
                                    secure=True)
    assert isinstance(previewed.event, DiscreteGaussianNoise)
    assert previewed.event.sensitivity_inflation == 1.0
    # exactly the whole zCDP budget: it dominates every secure fit of this budget
    assert zcdp_rho(previewed.event) == pytest.approx(zcdp_rho_for(EPS, DELTA), rel=1e-12)
    with pytest.raises(ValueError, match=r"method='no_secure'.*secure"):
        preview_private_fit(None, None, method=_NoSecureSolver(), epsilon=EPS, delta=DELTA,
                            n_samples_public=10, secure=True)
    url = str(tmp_path / "ledger.db")
    with Ledger(url) as ledger:
        ledger.set_budget("d", 0.5, DELTA)
    with pytest.raises(BudgetExceededError):
        DPLinearRegression(epsilon=EPS, delta=DELTA, secure=True, ledger=url,
                           dataset="d").fit(Untouchable(), np.zeros(300))
    with Ledger(url) as ledger:
        assert ledger.releases("d") == []


# ------------------------------------------ DPLinearRegression's private target scale, secure
@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_secure_target_scale_is_a_discrete_gaussian_within_its_zcdp_share(relation):
    """The scale's release is the first part of a secure fit: a DiscreteGaussianNoise of
    sensitivity Delta at most f rho-zCDP (its share), and the whole fit within rho."""
    from noisygd.accounting.zcdp import zcdp_rho
    from noisygd.estimators import huber_clip, target_scale_noise
    from noisygd.mechanisms.noise import zcdp_rho_for

    X, _, t = _data()
    model = DPLinearRegression(epsilon=EPS, delta=DELTA, secure=True, scale_share=0.1,
                               neighbouring=relation, target_range=(-2.0, 2.0)).fit(X, t)
    parts = _noise_events(model.privacy_.event)
    scale = parts[0]
    delta_s = Neighbouring(relation).clipped_sum_sensitivity
    assert isinstance(scale, DiscreteGaussianNoise) and isinstance(scale.event, Gaussian)
    assert scale.event.sensitivity == delta_s and scale.sensitivity_inflation > 1.0
    rho = zcdp_rho_for(EPS, DELTA)
    mu_s = math.sqrt(0.1 * 2.0 * rho)
    sigma, kappa = target_scale_noise(mu=mu_s, sensitivity=delta_s, rng=SecureRandom())
    assert scale.event.noise_multiplier == pytest.approx(sigma / 2.0, rel=1e-12)  # 4 sums
    assert scale.sensitivity_inflation == kappa
    # its share, met from below to the 1e-12 search and the grid's rounding margin
    assert 0.1 * rho * (1.0 - 1e-6) <= zcdp_rho(scale) <= 0.1 * rho
    assert zcdp_rho(model.privacy_.event) <= rho
    privacy = best(model.privacy_.event, DELTA)
    assert privacy.accountant in ("zcdp", "rdp") and privacy.epsilon <= EPS * (1 + BUDGET_RTOL)
    for name in ("gdp", "pld"):
        with pytest.raises(UnsupportedEventError):
            get_accountant(name).epsilon(model.privacy_.event, DELTA)
    # the release sets the clip; V_hat is capped at 1 (Popoviciu), which a noisy release can
    # reach: the cap holds always, and below it only where the noise makes that sure.
    # With |t| <= 1 in a range of half-width 2 (S_2 ~ 33 of n = 300), V_hat = 1 needs
    # (33 + e_2 + 2 sigma) / (300 + e_0 - 2 sigma) >= 1, i.e. e_2 - e_0 >= 267 - 4 sigma = 165
    # for the release's noise e ~ N(0, sigma^2), sigma = 2 Delta / mu_s = 25.6 under
    # add/remove (e_2 - e_0 has sd 36.2: 4.5 sd, false-failure rate < 3e-6); under
    # replace-one sigma = 51.2 and the cap is reached in a few percent of fits, so it is not
    # asserted there.
    assert 0.0 < model.target_scale_ <= 1.0
    if relation == "add_remove":
        assert model.target_scale_ < 1.0
    # and the row moment: R sqrt(U_hat) in the clip (s = R/sqrt(d), public)
    bound, s = model.conditioning_["row_norm_bound"], model.conditioning_["intercept_scale"]
    assert 0.0 < model.row_scale_ <= 1.0
    assert s == pytest.approx(bound / math.sqrt(X.shape[1]), rel=1e-12)
    plan = model.fit_info_["plans"][0]  # the base clip, before the sharp clip's factor
    rule = plan["plan"]["clip_rule"]  # (tests/test_sharp_clip.py)
    assert rule["base_clip"] == pytest.approx(
        model.target_scale_ * huber_clip(2.0, bound * model.row_scale_, s), rel=1e-12)
    assert plan["clip"] == pytest.approx(rule["base_clip"] * rule["factor"], rel=1e-15)


def test_secure_target_scale_noise_meets_its_share_and_estimates_the_scale():
    from noisygd.estimators import private_residual_scales, target_scale_noise

    rng = SecureRandom()
    for mu in (0.05, 0.7, 30.0):
        sigma, kappa = target_scale_noise(mu=mu, sensitivity=1.0, rng=rng)
        # the rounded query's sensitivity kappa 2 Delta (four sums) over sigma is at most mu
        assert kappa * 2.0 / sigma <= mu
        assert kappa * 2.0 / sigma >= mu * (1.0 - 1e-9)
        assert kappa >= 1.0 + rng.rounding_distance(sigma, 4) / 2.0
    y = np.random.default_rng(1).uniform(-0.3, 0.0, 400)
    u = np.random.default_rng(2).uniform(0.0, 0.5, 400)
    v = float(np.var(y / 0.5))
    out = private_residual_scales(y, u, 0.5, mu=1e5, sensitivity=1.0, rng=SecureRandom())
    assert out.target_scale == pytest.approx(math.sqrt(v), rel=1e-3)
    assert out.row_scale == pytest.approx(math.sqrt(u.mean()), rel=1e-3)


def test_a_secure_ledger_regression_records_the_discrete_target_scale_first(tmp_path):
    from noisygd.ledger import Ledger

    url = str(tmp_path / "ledger.db")
    with Ledger(url) as ledger:
        ledger.set_budget("d", 3.0, DELTA)
    X, _, t = _data()
    model = DPLinearRegression(epsilon=EPS, delta=DELTA, secure=True, scale_share=0.1,
                               target_range=(-2.0, 2.0), ledger=url, dataset="d").fit(X, t)
    with Ledger(url) as ledger:
        scale, fit = ledger.releases("d")
    parts = _noise_events(model.privacy_.event)
    assert scale.event == parts[0] and isinstance(scale.event, DiscreteGaussianNoise)
    assert fit.event == Composed(tuple(parts[1:])) and fit.parameters.get("secure") is True
    assert fit.spent_epsilon == pytest.approx(model.privacy_.epsilon, rel=1e-9)
