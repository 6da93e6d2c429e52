"""A new method is one Solver subclass: a toy method fitted through the estimator.

The toy method releases one noisy mean-gradient step from 0,
:math:`\\theta = -\\eta\\,(\\sum_i \\mathrm{clip}_C\\nabla\\ell_i(0) + \\mathcal N(0, (zC)^2 I))/n`,
a single Gaussian mechanism with sensitivity :math:`\\Delta C` (``Delta`` from the
neighbouring relation); its event is ``Gaussian(z, Delta)``, exactly :math:`\\Delta/z`-GDP.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.accounting import best
from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.events import Composed, Gaussian
from noisygd.algorithms.base import FitResult
from noisygd.estimators import CONDITIONING_ROUNDS, DPLogisticRegression
from noisygd.solvers import Budget, PublicFacts, Solver


class NoisyMeanStep(Solver):
    """One noisy gradient step from 0 (a Gaussian mechanism)."""

    name = "toy_noisy_mean_step"
    description = "one noisy mean-gradient step from 0, exact Gaussian-DP"
    gaussian = True

    def plan(self, facts: PublicFacts, budget: Budget) -> dict:
        mu = budget.mu if budget.mu is not None else calibrate_mu(budget.epsilon, budget.delta)
        sens = facts.relation.clipped_sum_sensitivity
        clip = facts.constants.lipschitz
        eta = 1.0 / (facts.constants.smoothness + facts.l2)
        return {"z": sens / mu, "sens": sens, "clip": clip, "eta": eta,
                "n": facts.n_samples, "relation": facts.relation}

    def planned_event(self, plan: dict) -> Gaussian:
        return Gaussian(plan["z"], sensitivity=plan["sens"], relation=plan["relation"])

    def run(self, plan: dict, oracle, rng: np.random.Generator) -> FitResult:
        theta0 = np.zeros(oracle.n_params)
        g = oracle.clipped_gradient_sum(theta0, plan["clip"])
        g = g + plan["z"] * plan["clip"] * rng.standard_normal(oracle.n_params)
        theta = -plan["eta"] * g / plan["n"]
        event = Gaussian(plan["z"], sensitivity=plan["sens"], relation=plan["relation"])
        return FitResult(theta=theta, event=event, n_iter=1,
                         info={"plan": {"noise_multiplier": plan["z"]}})


class HalfNoiseStep(NoisyMeanStep):
    """A buggy method: plans (and would record) z but runs with z / 2."""

    name = "toy_half_noise_step"

    def run(self, plan: dict, oracle, rng: np.random.Generator) -> FitResult:
        return super().run({**plan, "z": plan["z"] / 2}, oracle, rng)


def _easy(n=4000, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    y = (X @ np.ones(d) > 0).astype(int)
    return X, y


def test_toy_method_fits_through_the_estimator_with_a_true_privacy_report():
    X, y = _easy()
    model = DPLogisticRegression(
        feature_range_share=0.0, epsilon=1.0, delta=1e-5, method=NoisyMeanStep(),
                                 classes=[0, 1], random_state=0).fit(X, y)
    event = model.privacy_.event
    # The private conditioning and per-feature scale (the default without bounds: a method
    # that clips and is a Gaussian composition), the count (paid for under add/remove) and
    # the toy step, composed.
    assert isinstance(event, Composed)
    *conditioning, scale, count, step = event.events
    assert len(conditioning) == len(CONDITIONING_ROUNDS)
    assert model.conditioning_["feature_scale_release"]["event"] == scale.describe()
    assert model.conditioning_["release"]["events"] == [e.describe() for e in conditioning]
    assert isinstance(count, Gaussian) and isinstance(step, Gaussian)
    # Gaussian-DP composes exactly: the whole budget is spent and not exceeded.
    assert model.privacy_.epsilon <= 1.0 * (1 + 1e-9)
    assert model.privacy_.by_accountant["gdp"] == pytest.approx(1.0, rel=1e-6)
    # Independent re-accounting of the released event gives the reported epsilon.
    assert best(event, 1e-5).epsilon == pytest.approx(model.privacy_.epsilon, rel=1e-12)
    assert model.fit_info_["method"] == "toy_noisy_mean_step"
    assert model.score(X, y) > 0.85


def test_toy_method_under_replace_one_uses_the_doubled_sensitivity():
    X, y = _easy(n=2000)
    model = DPLogisticRegression(feature_range_share=0.0, epsilon=0.5, method=NoisyMeanStep(),
                                 neighbouring="replace_one", classes=[0, 1],
                                 random_state=1).fit(X, y)
    *conditioning, scale, step = model.privacy_.event.events  # the private conditioning first
    assert [e.sensitivity for e in conditioning] == [2.0] * len(CONDITIONING_ROUNDS)  # doubled
    assert scale.sensitivity == 2.0
    assert isinstance(step, Gaussian) and step.sensitivity == 2.0
    assert model.privacy_.by_accountant["gdp"] == pytest.approx(0.5, rel=1e-6)


def test_one_vs_rest_splits_the_toy_budget():
    rng = np.random.default_rng(0)
    X = np.vstack([c + 0.3 * rng.normal(size=(300, 3)) for c in np.eye(3) * 2]) / 3
    y = np.repeat([0, 1, 2], 300)
    model = DPLogisticRegression(
        feature_range_share=0.0, epsilon=1.0, method=NoisyMeanStep(), classes=[0, 1, 2],
                                 multiclass="ovr", random_state=0).fit(X, y)
    # the private conditioning's rounds and per-feature scale (shared) + count + 3 problems
    assert len(model.privacy_.event.events) == len(CONDITIONING_ROUNDS) + 5
    assert model.privacy_.by_accountant["gdp"] == pytest.approx(1.0, rel=1e-6)


def test_a_solver_must_state_its_planned_event():
    class NoPlannedEvent(Solver):
        name = "toy_without_planned_event"

        def plan(self, facts, budget):
            return {}

        def run(self, plan, oracle, rng):
            raise AssertionError("never run")

    with pytest.raises(TypeError, match="planned_event"):
        NoPlannedEvent()


def test_a_run_that_performs_another_event_than_planned_is_withheld():
    X, y = _easy(n=1000)
    model = DPLogisticRegression(epsilon=1.0, method=HalfNoiseStep(), classes=[0, 1],
                                 n_samples_public=1000, random_state=0)
    with pytest.raises(RuntimeError, match=r"internal error.*planned"):
        model.fit(X, y)
    assert not hasattr(model, "coef_")
