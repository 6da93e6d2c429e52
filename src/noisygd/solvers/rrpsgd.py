r"""Random-round private SGD (Zhang et al. 2017, Algorithm 2): ``method="rrpsgd"``.

Plan: the privacy target, the public horizon (``method_options["horizon"]`` or
``max_iter``; default :math:`n^2` single-example steps, refused above
:data:`RRPSGD_MAX_DEFAULT_STEPS`) and the remaining options. Run:
:func:`noisygd.algorithms.rrpsgd.rrpsgd` on the oracle.

The solver's event is the tight description at the horizon ``T``,
``SelfComposed(SampledWithoutReplacement(1, n, Gaussian(sigma_z/L, 2)), T)``: the worst
case over the number of rounds ``R <= T``, which the algorithm draws during the run. It is
known from the plan alone, so it is what the privacy ledger records before the run reads
any data (:meth:`RRPSGDSolver.planned_event`). The tight event for the realised ``R`` (a
data-independent draw, so conditioning on it is sound) is kept in
``info["realised_event"]``, and ``info["paper_argument"]`` keeps the epsilon of the paper's
own argument (``info["paper_event"]``), which is looser than both; where that argument
cannot bound the event (at large epsilon the per-step epsilon exceeds 1 and Lemma 9 does
not apply) the entry is None and ``info["paper_argument_omitted"]`` says why: an
informational account is never fatal to a fit the tight account admits. Where Algorithm 2's
noise (calibrated by that same Theorem 4) does not meet the target under the tight account
(large epsilon), the plan raises it to the smallest noise that does (``noise_epsilon``: the
epsilon at which the paper's formula gives that noise). No clipping: Theorem 4
bounds the unclipped gradient by ``L``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from noisygd._checks import check_positive_int
from noisygd.accounting.events import Neighbouring, SelfComposed
from noisygd.algorithms.base import FitResult
from noisygd.exceptions import AssumptionError, UnsupportedEventError
from noisygd.oracles.base import GradientOracle
from noisygd.solvers.base import Budget, PublicFacts, Solver

__all__ = ["RRPSGD_MAX_DEFAULT_STEPS", "RRPSGDPlan", "RRPSGDSolver"]

#: RRPSGD runs up to n^2 single-example steps; above this many the solver asks for an
#: explicit horizon rather than running for hours.
RRPSGD_MAX_DEFAULT_STEPS = 10_000_000


@dataclass(frozen=True)
class RRPSGDPlan:
    """Target, horizon and options of one RRPSGD run."""

    epsilon: float
    delta: float
    horizon: int | None
    lipschitz: float
    n_samples: int
    options: dict[str, Any] = field(default_factory=dict)
    noise_epsilon: float | None = None

    @property
    def steps(self) -> int:
        """``T``: the horizon, default :math:`n^2` (the paper's)."""
        return self.n_samples**2 if self.horizon is None else self.horizon


class RRPSGDSolver(Solver):
    """Zhang et al. 2017 Algorithm 2, tight per-round accounting beside the paper's."""

    name = "rrpsgd"
    description = "random-round private SGD (Zhang et al. 2017, Algorithm 2), tight accounting"
    relations = (Neighbouring.REPLACE_ONE,)
    clips_gradients = False

    def plan(self, facts: PublicFacts, budget: Budget) -> RRPSGDPlan:
        """The horizon (public) and the target."""
        facts.refuse_clip("RRPSGD")
        options = dict(facts.options)
        horizon = options.pop("horizon", facts.max_iter)
        n = facts.exact_n()
        if horizon is None and n * n > RRPSGD_MAX_DEFAULT_STEPS:
            raise ValueError(
                f"RRPSGD runs up to n^2 = {n * n:,} steps here; pass max_iter (a public "
                f"horizon <= {RRPSGD_MAX_DEFAULT_STEPS:,}) to run fewer")
        if horizon is not None:
            horizon = check_positive_int("horizon", horizon)
            if horizon > n * n:
                raise ValueError(f"horizon must be in [1, n^2 = {n * n}], got {horizon!r}")
        lipschitz = facts.constants.lipschitz
        if lipschitz is None or facts.constants.smoothness is None:
            raise AssumptionError(
                "RRPSGD (Theorems 4-5) needs Lipschitz and smoothness constants")
        plan = RRPSGDPlan(budget.epsilon, budget.delta, horizon, float(lipschitz), n, options)
        return RRPSGDPlan(budget.epsilon, budget.delta, horizon, float(lipschitz), n, options,
                          noise_epsilon=_noise_epsilon(plan))

    def planned_event(self, plan: RRPSGDPlan) -> SelfComposed:
        """The tight event at the horizon ``T`` (the worst case over ``R``; module doc)."""
        from noisygd.algorithms.rrpsgd import rrpsgd_noise_std, rrpsgd_tight_event

        sigma_z = rrpsgd_noise_std(plan.lipschitz, plan.n_samples, _alg_epsilon(plan),
                                   plan.delta)
        return rrpsgd_tight_event(lipschitz=plan.lipschitz, noise_std=sigma_z,
                                  n=plan.n_samples, steps=plan.steps)

    def run(self, plan: RRPSGDPlan, oracle: GradientOracle,
            rng: np.random.Generator) -> FitResult:
        """:func:`~noisygd.algorithms.rrpsgd.rrpsgd`, released with the worst-case event
        over ``R`` (:meth:`planned_event`); the realised event and the paper's account go
        to ``info``."""
        from noisygd.accounting.registry import best
        from noisygd.algorithms.rrpsgd import rrpsgd

        result = rrpsgd(oracle, epsilon=_alg_epsilon(plan), delta=plan.delta,
                        horizon=plan.horizon,
                        rng=rng, **plan.options)
        planned = self.planned_event(plan)
        if result.info["worst_case_event"] != planned:
            raise RuntimeError("internal error: the RRPSGD run's worst-case event differs from "
                               "the planned one (oracle constants or n differ from the plan's)")
        result.info["realised_event"] = result.event
        result.event = planned
        # Informational only: the paper's argument is not what the release is accounted
        # by, so an event it cannot bound (Lemma 9 needs a per-step epsilon <= 1, which
        # fails at large epsilon) is omitted from the report, never fatal.
        try:
            paper = best(result.info["paper_event"], plan.delta, include_paper=True)
        except UnsupportedEventError as exc:
            result.info["paper_argument"] = None
            result.info["paper_argument_omitted"] = str(exc)
        else:
            result.info["paper_argument"] = {"epsilon": paper.epsilon,
                                             "accountant": paper.accountant}
        return result


def _alg_epsilon(plan: RRPSGDPlan) -> float:
    """The epsilon Algorithm 2's noise formula is evaluated at (module doc)."""
    return plan.epsilon if plan.noise_epsilon is None else plan.noise_epsilon


def _noise_epsilon(plan: RRPSGDPlan) -> float:
    r"""The epsilon at which Algorithm 2's noise :math:`\sigma_z(\varepsilon)` meets the target.

    Algorithm 2 sets :math:`\sigma_z = 2L\sqrt{\log(3n/\delta)\log(2/\delta)}/\varepsilon`
    from Theorem 4, whose argument fails when the per-step epsilon exceeds 1 (large
    epsilon): the tight worst-case event at that noise can then exceed the target (at
    epsilon 8, n = 150: 8.001). The plan keeps the paper's noise when the tight account
    admits it, and otherwise raises it to the smallest noise the tight account admits
    (:func:`~noisygd.accounting.calibration.calibrate_noise_multiplier`), expressed as the
    smaller epsilon at which the paper's formula gives that noise.
    """
    from noisygd.accounting.base import within_budget
    from noisygd.accounting.calibration import calibrate_noise_multiplier
    from noisygd.accounting.registry import best
    from noisygd.algorithms.rrpsgd import rrpsgd_noise_std, rrpsgd_tight_event

    L, n, T = plan.lipschitz, plan.n_samples, plan.steps

    def event(eps_alg: float) -> SelfComposed:
        sigma = rrpsgd_noise_std(L, n, eps_alg, plan.delta)
        return rrpsgd_tight_event(lipschitz=L, noise_std=sigma, n=n, steps=T)

    eps_alg = plan.epsilon
    if within_budget(best(event(eps_alg), plan.delta).epsilon, plan.epsilon):
        return eps_alg
    sigma_paper = rrpsgd_noise_std(L, n, eps_alg, plan.delta)
    z = calibrate_noise_multiplier(
        lambda z: rrpsgd_tight_event(lipschitz=1.0, noise_std=z, n=n, steps=T),
        plan.epsilon, plan.delta, lower=sigma_paper / L)
    eps_alg = plan.epsilon * sigma_paper / (z * L)
    while not within_budget(best(event(eps_alg), plan.delta).epsilon, plan.epsilon):
        eps_alg *= 1.0 - 1e-6  # floating-point rounding of sigma_z; at most a few steps
    return eps_alg
