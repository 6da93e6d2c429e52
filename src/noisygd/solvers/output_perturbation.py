r"""Output-perturbation GD (Zhang et al. 2017, Algorithm 1): ``method="output_perturbation"``.

Plan: :func:`noisygd.algorithms.output_perturbation.plan_output_perturbation` from the
declared constants (convex, ``L``, :math:`\beta`), the public ``n`` (replace-one
neighbours: the size is public), ``p`` and the target; it fixes ``T``, :math:`\eta`, the
sensitivity :math:`\Delta_T` of :math:`w_T` and the noise scale, so the event is known
before any data is read. Run: ``T`` steps of full-batch GD on the oracle
(:meth:`OutputPerturbationSolver.descend`, lines 2-4), then one noise draw
(:meth:`OutputPerturbationSolver.release`, lines 5-10). The two halves are public so that
a study drawing many noisy releases of the same :math:`w_T` (the Table 3 reproduction)
runs the same code as ``method=``.

Defaults: the exact analytic-Gaussian calibration and the contraction sensitivity bound
(docs/output_perturbation.md); ``method_options={"noise": "paper", "sensitivity_bound":
"zhang2017"}`` gives the paper's own choices. ``optimum_norm_bound`` (``D`` for Theorem 3's
``T``) defaults to the objective's; ``steps`` to ``max_iter`` or Theorem 2/3. No clipping:
the sensitivity lemmas are about the unclipped gradient.

Secure mode (``Budget.secure``): ``plan_output_perturbation(..., secure=True)`` (Gaussian
noise only, ``delta > 0``): the scale from
:func:`noisygd.mechanisms.noise.secure_gaussian_sigma` (zCDP) and the event
``DiscreteGaussianNoise(OutputPerturbation(...), kappa)``; the release then needs a
:class:`~noisygd.mechanisms.secure.SecureRandom`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from noisygd.accounting.events import DpEvent, Neighbouring
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.output_perturbation import OutputPerturbationPlan
from noisygd.oracles.base import GradientOracle
from noisygd.planning import MAX_STEPS_LIMIT
from noisygd.solvers.base import Budget, PublicFacts, Solver
from noisygd.solvers.options import (
    OptionCheck,
    check_choice_option,
    check_positive_int_option,
    check_positive_option,
    check_start_option,
    optional,
)

__all__ = ["OutputPerturbationSolver", "choose_l2"]

#: The grid of ridge strengths :func:`choose_l2` evaluates, relative to the smoothness beta.
L2_GRID = tuple(10.0 ** (k / 8.0) for k in range(-64, 1))


def choose_l2(
    constants: Any, *, n: int, dim: int, epsilon: float, delta: float,
    reference_norm: float, noise: str = "analytic", sensitivity_bound: str = "contraction",
) -> tuple[float, float]:
    r"""The ridge strength :math:`\lambda` of output perturbation from Theorems 2-3.

    Zhang et al. 2017 (seed 002), proof of Theorem 2: for a :math:`\lambda`-strongly convex,
    :math:`\beta`-smooth objective, Algorithm 1 with ``T`` from Theorem 2 has
    :math:`\mathbb E F_\lambda(w_{\rm priv}) - F_\lambda(\hat w_\lambda) \le
    \frac\beta2 e^{-2\lambda\beta T/(\lambda+\beta)^2}D^2 + \frac\beta2\mathbb E\lVert
    z\rVert^2`, whose first term the plan's ``T`` makes negligible. For the unregularised
    objective :math:`F_0` (what the user wants small),
    :math:`F_0(w) - F_0(\hat w_0) \le F_\lambda(w) - F_\lambda(\hat w_\lambda)
    + \frac\lambda2\lVert\hat w_0\rVert^2`, so the plan minimises over :math:`\lambda`

    .. math::  B(\lambda) = \frac\lambda2 D_0^2 + \frac\beta2\mathbb E\lVert z_\lambda
               \rVert^2,

    with :math:`\mathbb E\lVert z_\lambda\rVert^2` the exact noise of the plan made at
    :math:`\lambda` (sensitivity and calibration as the solver runs them) and
    :math:`D_0 \ge \lVert\hat w_0\rVert` a public reference norm. Small :math:`\lambda`
    makes the sensitivity :math:`\propto 1/(n\lambda)` and the noise swamp the model (the former
    default ``l2 = 1e-4``); large :math:`\lambda` biases it. :math:`\lambda` is searched on
    the public grid :data:`L2_GRID` times :math:`\beta`.

    Parameters
    ----------
    constants : ObjectiveConstants
        The data term's constants (``strong_convexity`` is replaced by each candidate).
    n, dim, epsilon, delta
        As for :func:`~noisygd.algorithms.output_perturbation.plan_output_perturbation`.
    reference_norm : float
        :math:`D_0`.
    noise, sensitivity_bound : str
        The solver's choices (defaults as the solver's).

    Returns
    -------
    (lambda, B(lambda)) : tuple of float
    """
    import dataclasses

    from noisygd._checks import check_positive
    from noisygd.algorithms.output_perturbation import plan_output_perturbation

    D0 = check_positive("reference_norm", reference_norm)
    beta = constants.smoothness
    if beta is None:
        from noisygd.exceptions import AssumptionError

        raise AssumptionError("output perturbation's ridge choice needs a smoothness constant")
    best = (math.inf, math.inf)
    for rel in L2_GRID:
        lam = rel * beta
        plan = plan_output_perturbation(
            dataclasses.replace(constants, strong_convexity=lam), n=n, dim=dim,
            epsilon=epsilon, delta=delta, noise=noise, sensitivity_bound=sensitivity_bound)
        value = 0.5 * lam * D0 * D0 + 0.5 * beta * plan.expected_sq_noise_norm
        if value < best[1]:
            best = (lam, value)
    return best

_OPTIONS = ("noise", "sensitivity_bound", "steps", "learning_rate", "optimum_norm_bound",
            "theta0")


class OutputPerturbationSolver(Solver):
    """Full-batch GD then one Gaussian (or L2-Laplace) draw, Zhang et al. 2017 Algorithm 1."""

    name = "output_perturbation"
    description = "full-batch GD then one Gaussian draw (Zhang et al. 2017, Algorithm 1)"
    relations = (Neighbouring.REPLACE_ONE,)
    clips_gradients = False
    secure_mode = True
    chooses_l2 = True
    option_names: ClassVar[frozenset[str] | None] = frozenset(_OPTIONS)
    option_checks: ClassVar[dict[str, OptionCheck]] = {
        "noise": optional(check_choice_option("l2_laplace", "paper", "analytic")),
        "sensitivity_bound": check_choice_option("zhang2017", "contraction"),
        "steps": optional(check_positive_int_option),
        "learning_rate": optional(check_positive_option),
        "optimum_norm_bound": optional(check_positive_option), "theta0": check_start_option}

    def plan(self, facts: PublicFacts, budget: Budget) -> tuple[OutputPerturbationPlan,
                                                                 dict[str, Any]]:
        """``T``, eta, sensitivity and noise scale from public facts (Theorems 2-3)."""
        from noisygd.algorithms.output_perturbation import plan_output_perturbation

        facts.refuse_clip("output perturbation")
        self.check_options(facts.options)
        settings: dict[str, Any] = {"noise": "analytic", "sensitivity_bound": "contraction",
                                    "optimum_norm_bound": facts.optimum_norm_bound}
        if facts.max_iter is not None:
            settings["steps"] = facts.max_iter
        settings.update(facts.options)
        theta0 = settings.pop("theta0", None)
        plan = plan_output_perturbation(
            facts.constants, n=facts.exact_n(), dim=facts.n_params,
            epsilon=budget.epsilon, delta=budget.delta, secure=budget.secure, **settings)
        if "steps" not in settings and plan.steps > MAX_STEPS_LIMIT:
            # every step reads every row: refuse the theorem's T, never run for ever (an
            # ill-conditioned problem, row_norm_bound=1e60 with a small ridge, asked ~1e124)
            raise ValueError(
                f"output perturbation's theorem asks for T = {float(plan.steps):.3g} "
                f"full-gradient steps, above {MAX_STEPS_LIMIT:.0e}: pass max_iter, raise l2, "
                "or choose a smaller row_norm_bound (rescale the features)")
        return plan, {"theta0": theta0, "n_samples": facts.exact_n()}

    def planned_event(self, plan: tuple[OutputPerturbationPlan, dict[str, Any]]) -> DpEvent:
        """The plan's event (Theorems 2-3: sensitivity and noise are fixed by the plan)."""
        return plan[0].event

    def descend(self, plan: tuple[OutputPerturbationPlan, dict[str, Any]],
                oracle: GradientOracle) -> np.ndarray:
        """Algorithm 1, lines 2-4: :math:`w_T` (not private on its own)."""
        from noisygd.algorithms.output_perturbation import full_gradient_descent

        op_plan, extra = plan
        if oracle.n_rows != extra["n_samples"]:
            raise ValueError("the oracle holds a different number of rows than the public n "
                             "the plan was made for (replace-one neighbours: n is public)")
        return full_gradient_descent(oracle, steps=op_plan.steps,
                                     learning_rate=op_plan.learning_rate,
                                     theta0=extra["theta0"])

    def release(self, plan: tuple[OutputPerturbationPlan, dict[str, Any]], w_T: np.ndarray,
                rng: np.random.Generator) -> FitResult:
        """Algorithm 1, lines 5-10: :math:`w_T + z` and the plan's event."""
        from noisygd.algorithms.output_perturbation import perturb

        op_plan, _ = plan
        info = {
            "algorithm": "output_perturbation_gd (Zhang et al. 2017, Algorithm 1)",
            "plan": {
                "steps": op_plan.steps, "learning_rate": op_plan.learning_rate,
                "sensitivity": op_plan.sensitivity,
                "sensitivity_theorem": op_plan.sensitivity_theorem,
                "noise": op_plan.noise.value, "noise_scale": op_plan.scale,
                "expected_sq_noise_norm": op_plan.expected_sq_noise_norm,
            },
        }
        return FitResult(theta=perturb(w_T, op_plan, rng), event=op_plan.event,
                         n_iter=op_plan.steps, info=info)

    def run(self, plan: tuple[OutputPerturbationPlan, dict[str, Any]], oracle: GradientOracle,
            rng: np.random.Generator) -> FitResult:
        """:meth:`descend` then :meth:`release`."""
        return self.release(plan, self.descend(plan, oracle), rng)
