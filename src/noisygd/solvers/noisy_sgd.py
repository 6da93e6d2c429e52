r"""NoisySGD with Poisson sampling (Lecture 12, eqs. 12.2-12.3): ``method="noisy_sgd"``.

Plan: expected batch ``b``, ``E`` epochs, sampling rate :math:`q = \min(1, b/n)` with the
public ``n``, :math:`T = \max(1, \mathrm{round}(E/q))` steps (capped by ``max_iter``), and
the smallest noise multiplier ``z`` for which ``Composed((prior_event, T x
PoissonSampled(q, Gaussian(z))))`` meets the budget, to a relative 1e-2
(:data:`CALIBRATION_RTOL`), under the tightest
general accountant (:func:`noisygd.accounting.calibration.calibrate_noise_multiplier` with
its default certifier: cheap accountants bracket ``z``, PLD refines and certifies it).
Poisson sampling is accounted under add/remove neighbours only. ``accepts_prior_event``: the
private count released before the run is paid for inside the same calibration.

Defaults: planned from public facts (:func:`plan_batch_and_steps`), not constants. In the
central-limit regime a run of ``T`` steps at rate ``q`` and noise ``z`` is about
:math:`\mu \approx q\sqrt T/z`-GDP (Bu, Dong, Long and Su 2020, Thm 5), so the privacy noise on
the *mean* gradient of one step, :math:`zC/(qn) \approx C\sqrt T/(n\mu)` per coordinate, is
that of NoisyGD with ``T`` steps whatever the batch: the batch only sets the *sampling*
noise, of variance at most :math:`C^2/b` per step. Hence

* ``T`` = the accelerated NoisyGD plan's :math:`T^*` (:mod:`noisygd.planning`: the minimiser of
  the accelerated bound with error accumulation) for the same ``n``, ``d``, ``mu``, ``D``, ``C``,
  rounded up and kept between the NoisyGD plan's floor and cap, :math:`T = \min(T_{\max},
  \max(T_{\min}, \lceil T^*\rceil))` (100 and 1000; ``max_iter`` caps it instead). The run
  releases its last iterate (:func:`noisygd.algorithms.noisy_sgd.noisy_sgd` offers no suffix
  average, so ``T`` is not doubled as in the NoisyGD plan). Measured with declared feature
  bounds (2 seeds, ROC AUC at epsilon 1 / 8, former cap ``T <= 100`` -> this rule): bank 0.817 /
  0.817 -> 0.843 / 0.859, adult 0.890 / 0.891 -> 0.894 / 0.898, breast cancer 0.964 / 0.983 ->
  0.971 / 0.983, digits (binary) 0.895 / 0.946 -> 0.885 / 0.943, bike R^2 0.428 / 0.563 -> 0.435 /
  0.626;
* the expected batch is the smallest for which the sampling noise does not exceed the privacy
  noise, :math:`C^2/b \le dC^2T/(n^2\mu^2)`, i.e. :math:`b_1 = n^2\mu^2/(dT)`, and at least
  :math:`b_2 = n\mu/\sqrt T` so that :math:`z \approx q\sqrt T/\mu \ge 1` (below it the
  sampled Gaussian loses the amplification the approximation assumes); :math:`b = \min(n,
  \lceil\max(b_1, b_2)\rceil)`, and the epochs follow, :math:`E = Tb/n`;
* the step is the smooth step :math:`1/\beta_F` on the mean gradient (normalised by the
  expected batch :math:`q n_{\rm hi}`, the upper confidence bound of a private ``n``), with
  the momentum of :func:`noisygd.planning.auto_momentum` of the noise-to-signal ratio
  :math:`\sqrt d\,z/b`, as NoisyGD.

The planned ridge (``method_options={"l2": "auto"}``, what the estimators' ``l2=None`` asks
for, as for NoisyGD; or a number): :func:`noisygd.solvers.ridge.planned_ridge` of the same facts
at the run's :math:`\mu`, added to the objective (:class:`~noisygd.solvers.ridge.RidgedOracle`,
``info["plan"]["l2_planned"]``, labelled a heuristic balance) before ``T``, the step and the
bound are planned for the regularised objective (:func:`~noisygd.solvers.ridge.with_ridge`). The
balance is NoisyGD's: in the central-limit regime above the privacy noise on the mean gradient is
NoisyGD's at the same ``T``. It has no data term, so the event is that of the plan's ``(z, q,
T)``. Measured (``bench_conditioning`` families, n 500-10 000, 2 seeds, plain and box, against
the former constant 1e-4 / 1e-3): mean share +0.03 where ``n >= 2000``, no cell of ``n >= 2000``
lower by more than 0.04; off-centre regression 500 x 100 at epsilon 0.5, plain, worst seed from
-0.17 to -0.026 (``benchmarks/results/bench_conditioning_first_order.md``).

``mu`` here is the exact Gaussian-DP parameter of the budget (after the count's share); the
noise itself is then calibrated exactly (PLD/RDP), so the approximation only chooses ``b`` and
``T``, never the privacy. ``method_options`` override (``expected_batch_size``, ``epochs``,
``learning_rate``, ``momentum``), set the compute budget (``step_budget``) and pass
``averaging`` and ``theta0`` to :func:`noisygd.algorithms.noisy_sgd.noisy_sgd` (no other
key is accepted); without a smoothness constant the former public
defaults (batch 512, 10 epochs, step 0.5, momentum 0.9) are used. ``"sharp_clip": s``
scales the clip by the same ratio's noise regime, as NoisyGD's (:mod:`noisygd.solvers.noisy_gd`,
"The sharp clip"; :meth:`NoisySGDSolver._plan_sharp`): the estimators pass their loss's ratio.

Secure mode (``Budget.secure``): the run's noise is a discrete Gaussian on a grid and its
event is ``DiscreteGaussianNoise(SelfComposed(PoissonSampled(q, Gaussian(z)), T), kappa)``
(:func:`noisygd.algorithms.noisy_sgd.noisy_sgd`, ``kappa`` from
:func:`noisygd.mechanisms.noise.sensitivity_inflation` at the noise :math:`zC`); ``z`` is
calibrated for that event (composed with the prior count) by the ``rdp`` accountant, which
bounds the Poisson-subsampled discrete Gaussian by Zhu and Wang (2019, Thm 6); PLD and exact
GDP do not read it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
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
from noisygd.planning import ComputeBudgetWarning, check_sharp_ratio
from noisygd.solvers.base import Budget, PublicFacts, Solver
from noisygd.solvers.options import (
    OptionCheck,
    check_choice_option,
    check_l2_option,
    check_momentum_option,
    check_positive_int_option,
    check_positive_option,
    check_sharp_option,
    check_start_option,
    optional,
)
from noisygd.solvers.ridge import RidgedOracle, planned_ridge, ridge_record, with_ridge

__all__ = ["NoisySGDPlan", "NoisySGDSolver", "plan_batch_and_steps"]


def plan_batch_and_steps(*, n: float, d: int, mu: float, clip: float, smoothness: float,
                         init_distance: float, max_steps: int | None = None,
                         step_budget: int | None = None) -> tuple[int, int]:
    r"""``(expected batch, steps)`` of the module doc's rule (public inputs only).

    ``T = min(T_max, max(T_min, ceil(T*)))`` with :math:`T^*` of
    :func:`noisygd.planning.accelerated_t_star` (add/remove: :math:`\Delta = 1`), the
    NoisyGD plan's floor and its compute budget ``T_max`` (``step_budget``, default
    :data:`~noisygd.planning.MAX_STEPS_ACCELERATED`; the plan records the ``T`` wanted
    without it as ``unconstrained_steps``); with ``max_steps``,
    ``T = min(max(1, round(T*)), max_steps)``.
    """
    from noisygd.planning import (
        MAX_STEPS_ACCELERATED,
        MIN_STEPS_ACCELERATED,
        accelerated_t_star,
    )

    t_star = accelerated_t_star(n=n, smoothness=smoothness, init_distance=init_distance, mu=mu,
                                n_params=d, clip=clip)
    cap = MAX_STEPS_ACCELERATED if step_budget is None else check_positive_int(
        "step_budget", step_budget)
    if max_steps is None:
        steps = int(min(cap, max(MIN_STEPS_ACCELERATED, math.ceil(min(t_star, 1e15)))))
    else:
        steps = min(max(1, round(t_star)), max_steps)
    b1 = n * n * mu * mu / (d * steps)
    b2 = n * mu / steps**0.5
    batch = int(min(max(1.0, n), np.ceil(max(b1, b2, 1.0))))
    return batch, steps


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
    #: Secure mode: the number of noised coordinates (None: NumPy noise).
    secure_dim: int | None = None
    #: Lecture 12, section 12.3.3: the bound of the textbook NoisySGD run with this plan's
    #: ``(z, q, T)`` on the mean objective (:func:`noisygd.bounds.noisy_sgd_utility_bound`;
    #: None without a smoothness constant or for a nonconvex loss), and its premises.
    bound_value: float | None = None
    bound_details: dict[str, Any] = field(default_factory=dict)
    #: The compute budget's record (``compute_budget``, ``unconstrained_steps``,
    #: ``compute_budget_binds``) when the steps are planned, else empty.
    budget_info: dict[str, Any] = field(default_factory=dict, compare=False)
    #: The planned ridge the run adds to the objective (:mod:`noisygd.solvers.ridge`), or 0.
    ridge: float = 0.0


#: Relative tolerance of the noise calibration (the noise is at most this much above the
#: smallest the accountant certifies; the guarantee itself is never loosened).
CALIBRATION_RTOL = 1e-2


class NoisySGDSolver(Solver):
    """NoisySGD, Poisson sampling, noise calibrated on the whole release (PLD/RDP)."""

    name = "noisy_sgd"
    description = "NoisySGD with Poisson sampling (eqs. 12.2-12.3), PLD/RDP accounting"
    relations = (Neighbouring.ADD_REMOVE,)
    accepts_prior_event = True
    secure_mode = True
    #: The estimators' ``l2=None`` is the planned ridge (``{"l2": "auto"}``), as for NoisyGD
    #: (module doc, "The planned ridge").
    plans_ridge = True
    #: Former public defaults, used only without a smoothness constant (module doc).
    defaults: ClassVar[dict[str, Any]] = {
        "expected_batch_size": 512,
        "epochs": 10,
        "learning_rate": 0.5,
        "momentum": 0.9,
    }

    #: The losses whose sharp clip this solver takes (``method_options["sharp_clip"]``,
    #: :meth:`_plan_sharp`): the ones it was measured on (docs/noisygd.md).
    sharp_clip_losses: ClassVar[tuple[str, ...]] = ("logistic", "squared")
    #: The batch and epochs the plan would choose, the compute budget, the sharp clip, and
    #: the run's settings that leave its event unchanged.
    option_names: ClassVar[frozenset[str] | None] = frozenset({
        "sharp_clip", "step_budget", "l2", "l2_factor", "expected_batch_size", "epochs",
        "learning_rate", "momentum", "averaging", "theta0"})
    option_checks: ClassVar[dict[str, OptionCheck]] = {
        "sharp_clip": check_sharp_option, "step_budget": optional(check_positive_int_option),
        "l2": optional(check_l2_option), "l2_factor": optional(check_positive_option),
        "expected_batch_size": check_positive_int_option, "epochs": check_positive_option,
        "learning_rate": check_positive_option, "momentum": check_momentum_option,
        "averaging": check_choice_option("last", "uniform"), "theta0": check_start_option}

    def plan(self, facts: PublicFacts, budget: Budget) -> NoisySGDPlan:
        """Sampling rate and steps from public ``n``; ``z`` from one joint calibration."""
        from noisygd.accounting.calibration import calibrate_noise_multiplier

        self.check_options(facts.options)  # also when planned alone (``noisygd plan``)

        if "sharp_clip" in facts.options:
            options = dict(facts.options)
            sharp = options.pop("sharp_clip")
            return self._plan_sharp(replace(facts, options=options), budget, sharp)
        clip = facts.clip_norm()
        options = dict(facts.options)
        step_budget = options.pop("step_budget", None)
        if step_budget is not None:
            step_budget = check_positive_int("method_options['step_budget']", step_budget)
        l2 = options.pop("l2", None)
        ridge = planned_ridge(facts, budget, self._run_mu(budget) if l2 == "auto" else None,
                              l2, options.pop("l2_factor", None))
        facts = with_ridge(replace(facts, options=options), ridge)
        c = facts.constants
        budget_info: dict[str, Any] = {}
        if c.smoothness is None or {"expected_batch_size", "epochs"} <= set(facts.options):
            settings = {**self.defaults, **facts.options}
        else:
            from noisygd.planning import DEFAULT_INIT_DISTANCE, auto_momentum

            mu = self._run_mu(budget)
            beta_f = c.smoothness + c.strong_convexity
            D = (facts.optimum_norm_bound if facts.optimum_norm_bound is not None
                 else DEFAULT_INIT_DISTANCE)
            b, t = plan_batch_and_steps(n=facts.n_samples, d=facts.n_params, mu=mu, clip=clip,
                                        smoothness=beta_f, init_distance=D,
                                        max_steps=facts.max_iter, step_budget=step_budget)
            if facts.max_iter is None:
                from noisygd.planning import (
                    MAX_STEPS_ACCELERATED,
                    MIN_STEPS_ACCELERATED,
                    accelerated_t_star,
                )

                t_star = accelerated_t_star(n=facts.n_samples, smoothness=beta_f,
                                            init_distance=D, mu=mu, n_params=facts.n_params,
                                            clip=clip)
                cap = MAX_STEPS_ACCELERATED if step_budget is None else int(step_budget)
                wanted = float(max(MIN_STEPS_ACCELERATED, math.ceil(min(t_star, 1e15))))
                budget_info = {"compute_budget": cap, "unconstrained_steps": wanted,
                               "compute_budget_binds": bool(wanted > cap)}
                if wanted > cap:
                    warnings.warn(
                        f"NoisySGD's plan wanted {wanted:,.0f} steps; the compute budget of "
                        f"{cap:,} steps binds: pass method_options={{'step_budget': T}} to "
                        "allow more", ComputeBudgetWarning, stacklevel=2)
            z_approx = max(1.0, (b / facts.n_samples) * t**0.5 / mu)
            planned = {"expected_batch_size": b, "epochs": t * b / facts.n_samples,
                       "learning_rate": 1.0 / beta_f,
                       "momentum": auto_momentum(facts.n_params**0.5 * z_approx / b)}
            settings = {**planned, **facts.options}
        batch = check_positive_int("expected_batch_size", settings.pop("expected_batch_size"))
        epochs = check_positive("epochs", settings.pop("epochs"))
        rate = min(1.0, batch / facts.n_samples)
        steps = max(1, round(epochs / rate))
        if facts.max_iter is not None:
            steps = min(steps, facts.max_iter)
        prior = budget.prior_event
        secure_dim = facts.n_params if budget.secure else None

        def make_event(z: float) -> DpEvent:
            own = self._event(z, rate, steps, clip, secure_dim)
            return own if prior is None else Composed((prior, own))

        # The noise is certified by the tightest accountant (PLD) and is within 1% of the
        # smallest it certifies (measured on Adult: 0.09% above the rtol=2e-3 answer, at
        # half the calibration time; every PLD build costs about 0.1 s). Secure mode: RDP,
        # the accountant that reads a Poisson-subsampled discrete Gaussian.
        z = calibrate_noise_multiplier(make_event, budget.epsilon, budget.delta,
                                       rtol=CALIBRATION_RTOL,
                                       accountant="rdp" if budget.secure else None)
        bound, details = self._bound(facts, z, rate, steps, clip)
        return NoisySGDPlan(
            noise_multiplier=z, sampling_rate=rate, steps=steps, clip=clip,
            n_samples=facts.n_step(), calibrated_with_prior_event=prior is not None,
            settings=settings, secure_dim=secure_dim, bound_value=bound, bound_details=details,
            budget_info=budget_info, ridge=ridge,
        )

    def _run_mu(self, budget: Budget) -> float:
        r"""The run's Gaussian-DP :math:`\mu` the plan's rules read: the budget's, less a prior
        release's in quadrature (the count's share, as ``fit_private`` splits it)."""
        from noisygd.accounting.calibration import calibrate_mu

        mu = calibrate_mu(budget.epsilon, budget.delta)
        if budget.prior_event is not None:
            prior_mu = self._prior_mu(budget)
            mu = float(np.sqrt(max(mu**2 - prior_mu**2, 1e-12 * mu**2)))
        return mu

    def _plan_sharp(self, facts: PublicFacts, budget: Budget, sharp: Any) -> NoisySGDPlan:
        r"""The plan at the base clip times :func:`noisygd.planning.sharp_clip_factor` of its
        public noise-to-signal ratio :math:`\sqrt d\,z/b` (``b`` the expected batch: the
        ratio its momentum reads), as NoisyGD's (:mod:`noisygd.solvers.noisy_gd`, "The sharp
        clip"); the base clip kept with a projection radius or without a smoothness constant
        (the former fixed settings). ``info["plan"]["clip_rule"]`` records it."""
        from noisygd.solvers.sharp_clip import scaled_clip

        sharp = check_sharp_ratio(sharp, "method_options['sharp_clip']")
        with warnings.catch_warnings():  # the plan that runs warns, not this one
            warnings.simplefilter("ignore", ComputeBudgetWarning)
            base = self.plan(facts, budget)
        ratio = math.sqrt(facts.n_params) * base.noise_multiplier / (
            base.sampling_rate * facts.n_samples)
        final, rule = scaled_clip(
            facts, sharp, ratio, ratio_source="the plan at the base clip (sqrt(d) z / b)",
            not_applied="a projection radius or no smoothness constant"
            if facts.radius is not None or facts.constants.smoothness is None else None)
        plan = base if final is facts else self.plan(final, budget)
        return replace(plan, budget_info={**plan.budget_info, "clip_rule": rule})

    @staticmethod
    def _bound(facts: PublicFacts, z: float, rate: float, steps: int,
               clip: float) -> tuple[float | None, dict[str, Any]]:
        r"""Section 12.3.3's bound for this plan (:func:`noisygd.bounds.noisy_sgd_utility_bound`):
        the convex-smooth bound with NoisySGD's gradient variance, for the *textbook* run
        (step :math:`\min\{1/(n\beta), D/\sqrt{VT}\}`, no momentum, uniform average) with
        the plan's noise :math:`\sigma = zC`, rate ``q`` and ``T``, per-example gradients of
        norm at most ``C``, :math:`D` the objective's bound on :math:`\lVert\theta^*\rVert`
        (else the planner's nominal 1.0). It does not cover the run (momentum, last iterate);
        reported for reference and for ``noisygd plan``."""
        from noisygd.bounds import noisy_sgd_utility_bound

        c = facts.constants
        if c.smoothness is None or not c.convex:
            return None, {"bound_reason": "section 12.3.3 needs a convex loss with a "
                                          "smoothness constant"}
        if facts.optimum_norm_bound is not None:
            D, source = float(facts.optimum_norm_bound), "derived"
        elif facts.radius is not None:
            D, source = float(facts.radius), "declared"
        else:
            from noisygd.planning import DEFAULT_INIT_DISTANCE

            D, source = DEFAULT_INIT_DISTANCE, "nominal"
        beta = float(c.smoothness + c.strong_convexity)
        value, eta = noisy_sgd_utility_bound(
            n=facts.n_samples, d=facts.n_params, noise_std=z * clip, sampling_rate=rate,
            lipschitz=clip, smoothness=beta, init_distance=D, steps=steps)
        return value, {
            "bound_name": "Lecture 12, section 12.3.3 (NoisySGD, convex smooth)",
            "init_distance": D, "init_distance_source": source, "smoothness": beta,
            "textbook_learning_rate": eta, "bound_covers_run": False,
            "clip_covers_lipschitz": c.lipschitz is not None and clip >= c.lipschitz}

    @staticmethod
    def _prior_mu(budget: Budget) -> float:
        r"""The prior event's Gaussian-DP mu (secure: :math:`\sqrt{2\rho}` of its zCDP)."""
        if budget.secure:
            from noisygd.accounting.zcdp import zcdp_rho

            return float(np.sqrt(2.0 * zcdp_rho(budget.prior_event)))  # type: ignore[arg-type]
        from noisygd.accounting.gdp import gaussian_mu

        return float(gaussian_mu(budget.prior_event))  # type: ignore[arg-type]

    @staticmethod
    def _event(z: float, rate: float, steps: int, clip: float,
               secure_dim: int | None) -> DpEvent:
        """The run's own event; secure: wrapped as
        :func:`~noisygd.algorithms.noisy_sgd.noisy_sgd` wraps it (add/remove, sensitivity C)."""
        event = SelfComposed(PoissonSampled(rate, Gaussian(z)), steps)
        if secure_dim is None:
            return event
        from noisygd.mechanisms.noise import secure_event, sensitivity_inflation
        from noisygd.mechanisms.secure import SecureRandom

        rng = SecureRandom()
        return secure_event(event, rng, sensitivity_inflation(
            rng, z * clip, secure_dim, event.neighbouring.clipped_sum_sensitivity * clip))

    def planned_event(self, plan: NoisySGDPlan) -> DpEvent:
        """``SelfComposed(PoissonSampled(q, Gaussian(z)), T)`` (secure mode: wrapped in
        ``DiscreteGaussianNoise``): the run's own event (a prior count, if any, is composed
        with it by the caller)."""
        return self._event(plan.noise_multiplier, plan.sampling_rate, plan.steps, plan.clip,
                           plan.secure_dim)

    def run(self, plan: NoisySGDPlan, oracle: GradientOracle,
            rng: np.random.Generator) -> FitResult:
        """:func:`~noisygd.algorithms.noisy_sgd.noisy_sgd` with Poisson sampling."""
        from noisygd.algorithms.noisy_sgd import noisy_sgd

        if plan.ridge:
            oracle = RidgedOracle(oracle, plan.ridge)
        result = noisy_sgd(
            oracle, noise_multiplier=plan.noise_multiplier, clip=plan.clip,
            n_samples=plan.n_samples, sampling="poisson", sampling_rate=plan.sampling_rate,
            steps=plan.steps, normalize="expected_batch", rng=rng, **plan.settings,
        )
        result.info["plan"] = {
            "noise_multiplier": plan.noise_multiplier, "sampling_rate": plan.sampling_rate,
            "steps": plan.steps,
            "calibrated_with_prior_event": plan.calibrated_with_prior_event,
            "bound_value": plan.bound_value, **plan.bound_details,
            **plan.budget_info, "l2": oracle.l2, **ridge_record(plan.ridge),
        }
        return result
