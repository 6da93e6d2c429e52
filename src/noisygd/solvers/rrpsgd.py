r"""Random-round private SGD (Zhang et al. 2017, Algorithm 2): ``method="rrpsgd"``.

Plan: the privacy target, the public horizon (``method_options["horizon"]`` or
``max_iter``, refused above :data:`RRPSGD_MAX_DEFAULT_STEPS`; default below) and the
remaining options. Run: :func:`noisygd.algorithms.rrpsgd.rrpsgd` on the oracle.

Default horizon. The paper's horizon is :math:`T = n^2` single-example steps, for which
Theorem 5's bound :math:`\beta d_f\sigma/\sqrt T` is smallest at Algorithm 2's fixed
noise; on 30 000 rows that is :math:`10^9` Python steps. The default is a compute budget
instead: :math:`T = \min(n^2, P n)` with :math:`P` = :data:`RRPSGD_DEFAULT_PASSES` = 10 passes
over the data (a public compute constant, like NoisyGD's step cap); ``max_iter`` or
``method_options={"horizon": T}`` sets another. When it binds the plan records
``steps_rule`` and the horizon the paper's rule wanted (``info["plan"]``), and the noise is
calibrated for the shorter run (below), which the paper's formula would over-noise.

Noise. Algorithm 2 sets :math:`\sigma_z` by Theorem 4 whatever ``T``; the plan instead uses
the smallest noise whose tight worst-case event at the horizon meets the target
(:func:`_noise_epsilon`), stored as the ``noise_epsilon`` at which the paper's formula gives
it. At :math:`T = n^2` and moderate epsilon the two are close; at the default horizon the
tight noise is several times smaller.

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

**Secure mode** (``Budget.secure``; docs/secure_noise.md). The run draws a discrete Gaussian
on a grid :math:`\gamma` (:func:`~noisygd.mechanisms.noise.add_gaussian_noise`) and returns
``DiscreteGaussianNoise(tight event, kappa)`` with :math:`\kappa = 1 + \gamma\sqrt d/(2L)`;
Theorem 4 (continuous noise) does not cover it. Its only accountant is ``rdp``: the discrete
Gaussian's RDP curve :math:`\varepsilon(\alpha) = \alpha\kappa^2(2L)^2/(2\sigma_z^2)`
(Canonne, Kamath and Steinke 2020) through the general bound for sampling without
replacement of Wang, Balle and Kasiviswanathan (2019, Theorem 9), composed over ``T``
steps and converted to :math:`(\varepsilon, \delta)`. The secure plan therefore does not
use the paper's formula for the target: it calibrates :math:`z = \sigma_z/L`
(:func:`~noisygd.accounting.calibration.calibrate_noise_multiplier`, certifier ``rdp``) so
that the worst case over ``R`` (every one of the ``T`` steps released), composed after
``Budget.prior_event`` when there is one, meets ``(epsilon, delta)``; :math:`\kappa` is
recomputed from the grid at each candidate :math:`\sigma_z` (the grid depends on the
noise). The result is stored, as in the default mode, as the ``noise_epsilon`` at which
Algorithm 2's formula gives that :math:`\sigma_z`, and the event the run will perform
(:meth:`RRPSGDSolver.planned_event`, the grid recomputed from that ``noise_epsilon``) is
verified by :func:`~noisygd.accounting.registry.best` before the plan is returned. Theorem
9's terms :math:`2\gamma^j\binom{\alpha}{j}` (:math:`j \ge 3`) do not vanish with the
noise, so at small epsilon (large orders) the bound keeps little of the amplification by
sampling and the secure noise exceeds the paper's (12x at epsilon 0.1, n = 400, T = 3000);
at moderate epsilon it is 5 to 20 times below it (docs/rrpsgd.md).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from noisygd._checks import check_positive_int
from noisygd.accounting.events import (
    Composed,
    DiscreteGaussianNoise,
    DpEvent,
    Neighbouring,
    SelfComposed,
)
from noisygd.algorithms.base import FitResult
from noisygd.exceptions import AssumptionError, UnsupportedEventError
from noisygd.oracles.base import GradientOracle
from noisygd.solvers.base import Budget, PublicFacts, Solver
from noisygd.solvers.options import (
    OptionCheck,
    check_positive_int_option,
    check_positive_option,
    check_start_option,
    optional,
)

__all__ = ["RRPSGD_MAX_DEFAULT_STEPS", "RRPSGDPlan", "RRPSGDSolver"]

#: Largest horizon accepted (``max_iter`` or ``method_options["horizon"]``): every step is
#: one single-example gradient in Python, so a larger one runs for hours.
RRPSGD_MAX_DEFAULT_STEPS = 10_000_000
#: The default compute budget, in passes over the data: ``T = min(n^2, passes * n)``
#: single-example steps (module doc, "Default horizon").
RRPSGD_DEFAULT_PASSES = 10


#: The failure probability :math:`\gamma` of Theorem 6's bound in the plan (reporting only).
BOUND_CONFIDENCE = 0.05


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
    #: Secure mode: the number of noised coordinates ``d`` (None: NumPy noise).
    secure_dim: int | None = None
    #: Theorem 5 (in expectation) and Theorem 6 (with probability >= 1 - BOUND_CONFIDENCE)
    #: bounds on E_R ||grad F(w_R)||^2 for the planned run (:meth:`RRPSGDSolver.bounds`).
    bounds: dict[str, Any] = field(default_factory=dict)
    #: Whether the horizon was given (``max_iter`` or the option) rather than the default.
    horizon_given: bool = True

    @property
    def steps(self) -> int:
        """``T``: the horizon (None: :math:`n^2`, the paper's)."""
        return self.n_samples**2 if self.horizon is None else self.horizon


class RRPSGDSolver(Solver):
    """Zhang et al. 2017 Algorithm 2, tight per-round accounting beside the paper's."""

    name = "rrpsgd"
    description = "random-round private SGD (Zhang et al. 2017, Algorithm 2), tight accounting"
    relations = (Neighbouring.REPLACE_ONE,)
    clips_gradients = False
    secure_mode = True
    #: The horizon, the loss gap of the utility bound and the start.
    option_names: ClassVar[frozenset[str] | None] = frozenset({
        "horizon", "loss_gap_bound", "theta0"})
    option_checks: ClassVar[dict[str, OptionCheck]] = {
        "horizon": optional(check_positive_int_option),
        "loss_gap_bound": check_positive_option, "theta0": check_start_option}

    def plan(self, facts: PublicFacts, budget: Budget) -> RRPSGDPlan:
        """The horizon (public) and the target."""
        facts.refuse_clip("RRPSGD")
        self.check_options(facts.options)
        options = dict(facts.options)
        horizon = options.pop("horizon", facts.max_iter)
        n = facts.exact_n()
        given = horizon is not None
        if horizon is None:
            horizon = min(n * n, RRPSGD_DEFAULT_PASSES * n)
        else:
            horizon = check_positive_int("horizon", horizon)
            if horizon > n * n:
                raise ValueError(f"horizon must be in [1, n^2 = {n * n}], got {horizon!r}")
        if horizon > RRPSGD_MAX_DEFAULT_STEPS:
            raise ValueError(
                f"RRPSGD would run {horizon:,} single-example steps; pass max_iter (a public "
                f"horizon <= {RRPSGD_MAX_DEFAULT_STEPS:,}) to run fewer")
        lipschitz = facts.constants.lipschitz
        if lipschitz is None or facts.constants.smoothness is None:
            raise AssumptionError(
                "RRPSGD (Theorems 4-5) needs Lipschitz and smoothness constants")
        plan = RRPSGDPlan(budget.epsilon, budget.delta, horizon, float(lipschitz), n, options,
                          horizon_given=given)
        if budget.secure:  # calibrated for the discrete event the run returns (module doc)
            plan = replace(plan, secure_dim=facts.n_params)
            plan = replace(plan, noise_epsilon=_secure_noise_epsilon(plan, budget.prior_event))
        else:
            plan = replace(plan, noise_epsilon=_noise_epsilon(plan, budget.prior_event))
        return replace(plan, bounds=self.bounds(plan, facts))

    @staticmethod
    def bounds(plan: RRPSGDPlan, facts: PublicFacts) -> dict[str, Any]:
        r"""Theorems 5 and 6 for the run :func:`~noisygd.algorithms.rrpsgd.rrpsgd` makes of
        ``plan``: its noise :math:`\sigma_z` (at ``noise_epsilon``), :math:`\sigma^2 = 4L^2 +
        d\sigma_z^2`, :math:`\beta` the smoothness with the L2 term, :math:`D_F =
        \sqrt{2F_0/\beta}` with :math:`F_0` the public loss gap (``loss_gap_bound``, else the
        objective's loss at zero), the step :math:`\min\{1/\beta, D_F/(\sigma\sqrt T)\}`
        (:func:`noisygd.algorithms.rrpsgd.theorem5_bound`,
        :func:`noisygd.bounds.theorem6_bound` at :math:`\gamma` =
        :data:`BOUND_CONFIDENCE`). Empty when no public loss gap is known."""
        import math

        from noisygd.algorithms.rrpsgd import rrpsgd_noise_std, theorem5_bound
        from noisygd.bounds import theorem6_bound

        gap = plan.options.get("loss_gap_bound", facts.loss_at_zero_bound)
        if gap is None or "theta0" in plan.options or plan.noise_epsilon is None:
            return {}
        L, p, T = plan.lipschitz, int(facts.n_params), plan.steps
        beta = float(facts.constants.smoothness) + float(facts.l2)
        sigma_z = rrpsgd_noise_std(L, plan.n_samples, plan.noise_epsilon, plan.delta)
        sigma = math.sqrt(4.0 * L * L + p * sigma_z * sigma_z)
        d_f = math.sqrt(2.0 * float(gap) / beta)
        eta = min(1.0 / beta, d_f / (sigma * math.sqrt(T)))
        return {
            "theorem5_bound": theorem5_bound(smoothness=beta, d_f=d_f, sigma=sigma,
                                             step_size=eta, horizon=T),
            "theorem6_bound": theorem6_bound(lipschitz=L, smoothness=beta, loss_gap=float(gap),
                                             noise_std=sigma_z, n_params=p, steps=T,
                                             step_size=eta, confidence=BOUND_CONFIDENCE),
            "confidence": BOUND_CONFIDENCE, "loss_gap": float(gap),
            "loss_gap_source": ("given" if "loss_gap_bound" in plan.options else "declared"),
            "step_size": eta, "sigma_z": sigma_z, "steps": T,
        }

    def planned_event(self, plan: RRPSGDPlan) -> DpEvent:
        r"""The tight event at the horizon ``T`` (the worst case over ``R``; module doc);
        secure mode: wrapped in ``DiscreteGaussianNoise`` with the run's :math:`\kappa`."""
        return _event_at(plan, _alg_epsilon(plan))

    def run(self, plan: RRPSGDPlan, oracle: GradientOracle,
            rng: np.random.Generator) -> FitResult:
        """:func:`~noisygd.algorithms.rrpsgd.rrpsgd`, released with the worst-case event
        over ``R`` (:meth:`planned_event`); the realised event and the paper's account go
        to ``info``."""
        from noisygd.accounting.registry import best
        from noisygd.algorithms.rrpsgd import rrpsgd
        from noisygd.mechanisms.noise import is_secure

        if (plan.secure_dim is not None) != is_secure(rng):
            raise TypeError("a secure RRPSGD plan runs with a SecureRandom, and only a secure "
                            "plan does (plan with Budget(..., secure=True))")
        result = rrpsgd(oracle, epsilon=_alg_epsilon(plan), delta=plan.delta,
                        horizon=plan.horizon,
                        rng=rng, **plan.options)
        planned = self.planned_event(plan)
        if result.info["worst_case_event"] != planned:
            raise RuntimeError("internal error: the RRPSGD run's worst-case event differs from "
                               "the planned one (oracle constants, n or the random source "
                               "differ from the plan's)")
        result.info["realised_event"] = result.event
        result.event = planned
        n2 = plan.n_samples ** 2
        result.info["plan"] = {
            "horizon": plan.steps, "paper_horizon": n2, "noise_epsilon": plan.noise_epsilon,
            "steps_rule": ("given (max_iter or method_options['horizon'])"
                           if plan.horizon_given else
                           f"compute budget min(n^2, {RRPSGD_DEFAULT_PASSES} n)"),
            "compute_budget_binds": bool(not plan.horizon_given and plan.steps < n2)}
        if plan.secure_dim is not None:
            result.info["paper_argument"] = None
            result.info["paper_argument_omitted"] = (
                "secure mode: Theorem 4's argument is for continuous Gaussian noise")
            return result
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


def _event_at(plan: RRPSGDPlan, eps_alg: float) -> DpEvent:
    r"""The worst-case event of a run at Algorithm 2's noise for ``eps_alg``.

    ``SelfComposed(SampledWithoutReplacement(1, n, Gaussian(sigma_z/L, 2)), T)``; secure
    mode: wrapped in ``DiscreteGaussianNoise`` with
    :math:`\kappa` = :func:`~noisygd.mechanisms.noise.sensitivity_inflation` of the grid of
    :math:`\sigma_z` in ``d = secure_dim`` coordinates at sensitivity :math:`2L`, exactly as
    :func:`~noisygd.algorithms.rrpsgd.rrpsgd` computes it.
    """
    from noisygd.algorithms.rrpsgd import rrpsgd_noise_std, rrpsgd_tight_event

    L = plan.lipschitz
    sigma_z = rrpsgd_noise_std(L, plan.n_samples, eps_alg, plan.delta)
    event = rrpsgd_tight_event(lipschitz=L, noise_std=sigma_z, n=plan.n_samples,
                               steps=plan.steps)
    if plan.secure_dim is None:
        return event
    return _secure_wrap(event, sigma_z, plan.secure_dim, L)


def _secure_wrap(event: SelfComposed, sigma_z: float, dim: int,
                 lipschitz: float) -> DiscreteGaussianNoise:
    """``DiscreteGaussianNoise(event, kappa)`` for noise ``sigma_z`` on ``dim`` coordinates
    (the grid of a default :class:`~noisygd.mechanisms.secure.SecureRandom`)."""
    from noisygd.mechanisms.noise import sensitivity_inflation
    from noisygd.mechanisms.secure import SecureRandom

    kappa = sensitivity_inflation(
        SecureRandom(), sigma_z, dim,
        Neighbouring.REPLACE_ONE.clipped_sum_sensitivity * lipschitz)
    return DiscreteGaussianNoise(event, kappa)


def _with_prior(prior: DpEvent | None, own: DpEvent) -> DpEvent:
    """``Composed((prior, own))``, or ``own`` without a prior release."""
    return own if prior is None else Composed((prior, own))


#: Most multiplicative shrinks of the secure ``noise_epsilon`` (each 1e-9) that the final
#: verification may take (floating-point rounding of sigma_z and of the grid: one or two).
_SECURE_VERIFY_ROUNDS = 64


def _secure_noise_epsilon(plan: RRPSGDPlan, prior: DpEvent | None) -> float:
    r"""The ``noise_epsilon`` of a secure plan: the smallest certified noise (module doc).

    :math:`z = \sigma_z/L` is the smallest (to ``rtol = 1e-4``) for which
    ``Composed((prior, DiscreteGaussianNoise(SelfComposed(SampledWithoutReplacement(1, n,
    Gaussian(z, 2)), T), kappa(z L))))`` meets ``(epsilon, delta)`` under the ``rdp``
    accountant (WBK19 Theorem 9 on the discrete Gaussian's curve, CKS20), found by
    :func:`~noisygd.accounting.calibration.calibrate_noise_multiplier`. It is returned as
    the epsilon at which Algorithm 2's formula
    :math:`\sigma_z = 2L\sqrt{\log(3n/\delta)\log(2/\delta)}/\varepsilon` gives
    :math:`zL`, lowered by a factor :math:`1 - 10^{-9}` per round until the event the run
    performs at that epsilon (its grid and :math:`\kappa` recomputed) meets the target by
    :func:`~noisygd.accounting.registry.best` (strictly: ``<= epsilon``).

    Raises
    ------
    RuntimeError
        If the verification does not pass within :data:`_SECURE_VERIFY_ROUNDS` rounds (an
        internal error).
    """
    from noisygd.accounting.calibration import calibrate_noise_multiplier
    from noisygd.accounting.registry import best
    from noisygd.algorithms.rrpsgd import rrpsgd_noise_std, rrpsgd_tight_event

    L, n, T, dim = plan.lipschitz, plan.n_samples, plan.steps, plan.secure_dim
    if dim is None:
        raise RuntimeError("internal error: a secure plan needs secure_dim")

    def by_z(z: float) -> DpEvent:
        sigma_z = z * L
        own = rrpsgd_tight_event(lipschitz=L, noise_std=sigma_z, n=n, steps=T)
        return _with_prior(prior, _secure_wrap(own, sigma_z, dim, L))

    z = calibrate_noise_multiplier(by_z, plan.epsilon, plan.delta, accountant="rdp")
    # Algorithm 2's sigma_z(eps) = c L / eps: the eps at which it equals z L
    eps_alg = rrpsgd_noise_std(1.0, n, 1.0, plan.delta) / z
    for _ in range(_SECURE_VERIFY_ROUNDS):
        if best(_with_prior(prior, _event_at(plan, eps_alg)), plan.delta).epsilon \
                <= plan.epsilon:
            return eps_alg
        eps_alg *= 1.0 - 1e-9
    raise RuntimeError("internal error: no secure RRPSGD noise meets the budget")


def _noise_epsilon(plan: RRPSGDPlan, prior: DpEvent | None = None) -> float:
    r"""The epsilon at which Algorithm 2's noise :math:`\sigma_z(\varepsilon)` meets the target.

    Algorithm 2 sets :math:`\sigma_z = 2L\sqrt{\log(3n/\delta)\log(2/\delta)}/\varepsilon`
    from Theorem 4 for :math:`T = n^2`, whose argument fails when the per-step epsilon
    exceeds 1 (large epsilon: the tight worst-case event at that noise can then exceed the
    target, at epsilon 8, n = 150: 8.001) and which over-noises a shorter run. The plan
    uses the smallest noise the tight account admits at the horizon
    (:func:`~noisygd.accounting.calibration.calibrate_noise_multiplier`), expressed as the
    epsilon at which the paper's formula gives that noise. A ``prior`` release
    (``Budget.prior_event``) is composed before the run's event.

    A pure function of ``(L, n, T, epsilon, delta, prior)``, remembered for the last
    :data:`_REMEMBERED_CALIBRATIONS` of them (each is a search over the PLD accountant, seconds
    long, and ``noisygd plan`` and the solver plan the same run more than once).
    """
    key = (float(plan.lipschitz), int(plan.n_samples), int(plan.steps), float(plan.epsilon),
           float(plan.delta), prior)
    try:
        hash(prior)
    except TypeError:  # a prior event that cannot be a key: calibrated afresh
        return _calibrated_noise_epsilon.__wrapped__(*key)
    return _calibrated_noise_epsilon(*key)


#: How many calibrations :func:`_noise_epsilon` remembers (floats: no memory to speak of).
_REMEMBERED_CALIBRATIONS = 128


@functools.lru_cache(maxsize=_REMEMBERED_CALIBRATIONS)
def _calibrated_noise_epsilon(L: float, n: int, T: int, epsilon: float, delta: float,
                              prior: DpEvent | None) -> float:
    """:func:`_noise_epsilon`'s search, on its hashable arguments."""
    from noisygd.accounting.base import within_budget
    from noisygd.accounting.calibration import calibrate_noise_multiplier
    from noisygd.accounting.registry import best
    from noisygd.algorithms.rrpsgd import rrpsgd_noise_std, rrpsgd_tight_event

    def event(eps_alg: float) -> DpEvent:
        sigma = rrpsgd_noise_std(L, n, eps_alg, delta)
        return _with_prior(prior, rrpsgd_tight_event(lipschitz=L, noise_std=sigma, n=n,
                                                     steps=T))

    eps_alg = epsilon
    sigma_paper = rrpsgd_noise_std(L, n, eps_alg, delta)
    z = calibrate_noise_multiplier(
        lambda z: _with_prior(prior, rrpsgd_tight_event(lipschitz=1.0, noise_std=z, n=n,
                                                        steps=T)),
        epsilon, delta, lower=min(0.5, sigma_paper / L))
    eps_alg = epsilon * sigma_paper / (z * L)
    while not within_budget(best(event(eps_alg), delta).epsilon, epsilon):
        eps_alg *= 1.0 - 1e-6  # floating-point rounding of sigma_z; at most a few steps
    return eps_alg
