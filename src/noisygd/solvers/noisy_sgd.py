r"""NoisySGD with Poisson sampling (Lecture 12, eqs. 12.2-12.3): ``method="noisy_sgd"``.

Plan: expected batch ``b``, ``E`` epochs, sampling rate :math:`q = \min(1, b/n)` with the
public ``n``, :math:`T = \max(1, \mathrm{round}(E/q))` steps (capped by ``max_iter``), and
the smallest noise multiplier ``z`` for which ``Composed((prior_event, T x
PoissonSampled(q, Gaussian(z))))`` meets the budget, to a relative 2e-3, under the tightest
general accountant (:func:`noisygd.accounting.calibration.calibrate_noise_multiplier` with
its default certifier: cheap accountants bracket ``z``, PLD refines and certifies it).
Poisson sampling is accounted under add/remove neighbours only. ``accepts_prior_event``: the
private count released before the run is paid for inside the same calibration.

Defaults (:data:`NoisySGDSolver.defaults`): expected batch 512, 10 epochs, step 0.5 on the
mean scale, momentum 0.9; fixed public constants (chosen once on Adult, see
docs/noisy_sgd.md), never tuned on the data being fitted. ``method_options`` override them
and pass any other keyword of :func:`noisygd.algorithms.noisy_sgd.noisy_sgd`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from noisygd._checks import check_positive, check_positive_int
from noisygd.accounting.events import (
    Composed,
    DpEvent,
    Gaussian,
    Neighbouring,
    PoissonSampled,
    SelfComposed,
)
from noisygd.algorithms.base import FitResult
from noisygd.oracles.base import GradientOracle
from noisygd.solvers.base import Budget, PublicFacts, Solver

__all__ = ["NoisySGDPlan", "NoisySGDSolver"]


@dataclass(frozen=True)
class NoisySGDPlan:
    """Noise, sampling rate and steps of one NoisySGD run, and the remaining run settings."""

    noise_multiplier: float
    sampling_rate: float
    steps: int
    clip: float
    n_samples: float
    calibrated_with_prior_event: bool
    settings: dict[str, Any] = field(default_factory=dict)


class NoisySGDSolver(Solver):
    """NoisySGD, Poisson sampling, noise calibrated on the whole release (PLD/RDP)."""

    name = "noisy_sgd"
    description = "NoisySGD with Poisson sampling (eqs. 12.2-12.3), PLD/RDP accounting"
    relations = (Neighbouring.ADD_REMOVE,)
    accepts_prior_event = True
    #: Public defaults (docs/noisy_sgd.md).
    defaults: ClassVar[dict[str, Any]] = {
        "expected_batch_size": 512,
        "epochs": 10,
        "learning_rate": 0.5,
        "momentum": 0.9,
    }

    def plan(self, facts: PublicFacts, budget: Budget) -> NoisySGDPlan:
        """Sampling rate and steps from public ``n``; ``z`` from one joint calibration."""
        from noisygd.accounting.calibration import calibrate_noise_multiplier

        settings = {**self.defaults, **facts.options}
        batch = check_positive_int("expected_batch_size", settings.pop("expected_batch_size"))
        epochs = check_positive("epochs", settings.pop("epochs"))
        rate = min(1.0, batch / facts.n_samples)
        steps = max(1, round(epochs / rate))
        if facts.max_iter is not None:
            steps = min(steps, facts.max_iter)
        prior = budget.prior_event

        def make_event(z: float) -> DpEvent:
            own = SelfComposed(PoissonSampled(rate, Gaussian(z)), steps)
            return own if prior is None else Composed((prior, own))

        z = calibrate_noise_multiplier(make_event, budget.epsilon, budget.delta, rtol=2e-3)
        return NoisySGDPlan(
            noise_multiplier=z, sampling_rate=rate, steps=steps, clip=facts.clip_norm(),
            n_samples=facts.n_samples, calibrated_with_prior_event=prior is not None,
            settings=settings,
        )

    def planned_event(self, plan: NoisySGDPlan) -> SelfComposed:
        """``SelfComposed(PoissonSampled(q, Gaussian(z)), T)``: the run's own event (a prior
        count, if any, is composed with it by the caller)."""
        return SelfComposed(PoissonSampled(plan.sampling_rate, Gaussian(plan.noise_multiplier)),
                            plan.steps)

    def run(self, plan: NoisySGDPlan, oracle: GradientOracle,
            rng: np.random.Generator) -> FitResult:
        """:func:`~noisygd.algorithms.noisy_sgd.noisy_sgd` with Poisson sampling."""
        from noisygd.algorithms.noisy_sgd import noisy_sgd

        result = noisy_sgd(
            oracle, noise_multiplier=plan.noise_multiplier, clip=plan.clip,
            n_samples=plan.n_samples, sampling="poisson", sampling_rate=plan.sampling_rate,
            steps=plan.steps, normalize="expected_batch", rng=rng, **plan.settings,
        )
        result.info["plan"] = {
            "noise_multiplier": plan.noise_multiplier, "sampling_rate": plan.sampling_rate,
            "steps": plan.steps,
            "calibrated_with_prior_event": plan.calibrated_with_prior_event,
        }
        return result
