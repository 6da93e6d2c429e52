r"""Dynamic privacy-budget allocation (seed 003, Hong, Wang and Zhou): ``method="dynamic"``.

The run is :func:`noisygd.algorithms.schedules.dynamic_noisy_gd`: Algorithm 1 (full-batch
noisy GD whose step ``t`` requests :math:`\rho_t = 1/\sigma_t^2` of a budget ``R`` and
terminates when the request no longer fits) or, with ``method_options={"momentum": m}``,
Algorithm 2 (debiased momentum :math:`v_{t+1} = m v_t + (1 - m)g_t`,
:math:`\hat v_{t+1} = v_{t+1}/(1 - m^t)`).

Privacy. Step ``t`` is a Gaussian mechanism with noise multiplier :math:`\sigma_t` and
sensitivity :math:`\Delta` clipping norms (1 add/remove, 2 replace-one), i.e.
:math:`\Delta/\sigma_t`-GDP; the run is exactly
:math:`\Delta\sqrt{\sum_t\sigma_t^{-2}}`-GDP (Dong, Roth and Su 2022, Cor. 3.3), so the
budget's Gaussian-DP :math:`\mu` gives :math:`R = (\mu/\Delta)^2` in the slides' units
(:math:`R = \sum_t\sigma_t^{-2}`; the run is :math:`\Delta^2R/2`-zCDP). The solver is
``gaussian``. The event is ``Composed((Gaussian(sigma_1, Delta), ..., Gaussian(sigma_T,
Delta)))``; the schedule spends at most ``R`` (:func:`~noisygd.algorithms.schedules.noise_schedule`
keeps a relative :math:`10^{-12}` margin), so every planned step runs and the planned event is
the run's.

Plan (public facts only). With :math:`M = \beta + \lambda` the smoothness of the regularised
mean objective, :math:`\mu_{PL} = \lambda` its strong convexity (so the Polyak-Lojasiewicz
constant; an ``l2 > 0`` is required), :math:`\kappa = M/\mu_{PL}`,
:math:`\gamma = 1 - 1/\kappa`, step :math:`\eta = 1/M` (Theorem 3.2), ``D`` the number of
parameters, ``C`` the clipping norm, ``N`` the public row count (the lower confidence bound of a
private count) and :math:`f(\theta_1) - f^* \le F_0` (``loss_at_zero_bound``, or
``method_options["loss_gap"]``; :math:`\theta_1 = 0` and the losses are non-negative):

* **Algorithm 1** (default): :math:`\alpha` of Eq. (5)
  (:func:`~noisygd.algorithms.schedules.utility_alpha`), ``T`` of Lemma 3.2, Eq. (11)
  (:func:`~noisygd.algorithms.schedules.dynamic_optimal_steps`), the schedule of Lemma 3.1,
  Eq. (10) with :math:`q_t = \gamma^{T-t}\alpha` (Eq. (7)), and the bound of Theorem 3.2,
  Eq. (6): :math:`E f(\theta_{T+1}) - f^* \le (\gamma^T + R\sum_tq_t\sigma_t^2)F_0`
  (:func:`~noisygd.algorithms.schedules.eer_bound`).
* **Algorithm 2** (``momentum`` :math:`\beta`): :math:`\gamma = 1 - \eta\mu_{PL}`, the weights
  :math:`q_t` of Theorem 3.4, Eq. (17)
  (:func:`~noisygd.algorithms.schedules.momentum_weights`) in the Lemma 3.1 schedule, and
  ``T`` minimising Eq. (16)'s terms that do not depend on the data,

  .. math::  B(T) = \gamma^TF_0 + \frac{2\eta D C^2}{N^2}\sum_{t=1}^Tq_t\sigma_t^2
             = \gamma^TF_0 + \frac{2\eta DC^2}{N^2R}\Big(\sum_{k=1}^T\sqrt{q_k}\Big)^2,

  (Lemma 3.1 gives the second form) over :math:`1 \le T \le T_{\max}`. Eq. (16)'s third term
  :math:`\eta\zeta\sum_t\gamma^{T-t}\lVert v_{t+1}\rVert^2` is :math:`\le 0` iff
  :math:`\zeta \le 0` (Eq. (17); ``details["zeta"]``); then :math:`B(T)` is a bound on the
  run, otherwise it is reported for reference (``bound_covers_run`` false). With
  :math:`\gamma = 1 - \eta\lambda`, :math:`\zeta` is :math:`-1` at :math:`\eta = 0` and
  increases with :math:`\eta` while :math:`\gamma > \beta`, so there :math:`\zeta \le 0`
  exactly up to its root (:func:`momentum_zeta_step`, ``details["zeta_step"]``). The paper's
  step :math:`\eta \le \frac{\beta(1-\beta)^3}{8M}[\sqrt{1/4 + 16/(\beta(1-\beta)^3)} - 1]`
  (:func:`momentum_step_limit`, ``details["noise_dominates_step"]``) is another condition:
  below it "the noise variance dominates the bound", :math:`EER =
  O(\frac{2\eta D}{N^2}\sum_tq_t(C\sigma_t)^2)`, an order statement without constants. It
  does **not** give :math:`\zeta \le 0` (at that step :math:`\zeta` is 0.38 for
  :math:`\beta = 0.5`, 6.9 for 0.7, 107 for 0.9, with :math:`M = \lambda = 1`) and the
  coverage flag does not use it.

``T`` is capped at :data:`MAX_STEPS` (1000, the NoisyGD planner's compute cap) or at
``max_iter`` when given (a cap: the theorem's ``T`` is a minimiser, and fewer steps with the
Lemma 3.1 schedule for that ``T`` is still that ``T``'s optimal schedule). The bound covers the
run when the clipping norm is at least the declared Lipschitz constant ``G`` (Theorems 3.2
and 3.4 assume no clipping), the objective has **no projection radius** (the theorems are for
unconstrained GD under PL; a projected run stays in the ball while the comparator, the
minimiser of the regularised mean objective, need not), the row count is **public** (with a
private count the run divides by its upper confidence bound :math:`N_{hi}` and so descends
:math:`\frac{n}{N_{hi}}F_{data} + \frac\lambda2\lVert\theta\rVert^2`, not the regularised mean
objective) and, with momentum, :math:`\zeta \le 0`. ``details`` names each premise
(``projection_radius``, ``n_public``).

``method_options``: ``momentum`` (:math:`\beta \in [0, 1)`, Algorithm 2), ``learning_rate``
(:math:`\eta`, default :math:`1/M`), ``loss_gap`` (a public :math:`F_0`), ``steps`` (a fixed
``T``), ``theta0``, ``sharp_clip`` (the clip scaled by NoisyGD's noise regime of the same
facts: :func:`noisygd.solvers.noisy_gd.regime_clip`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from noisygd._checks import check_positive, check_positive_int, check_real
from noisygd.accounting.events import Composed, Gaussian, Neighbouring
from noisygd.algorithms.base import FitResult
from noisygd.exceptions import AssumptionError
from noisygd.oracles.base import GradientOracle
from noisygd.solvers.base import Budget, PublicFacts, Solver
from noisygd.solvers.options import (
    OptionCheck,
    check_momentum_option,
    check_positive_int_option,
    check_positive_option,
    check_sharp_option,
    check_start_option,
    optional,
)

__all__ = ["MAX_STEPS", "DynamicPlan", "DynamicSolver", "momentum_eer_bound",
           "momentum_step_limit", "momentum_zeta", "momentum_zeta_step"]

#: Compute cap on ``T`` when ``max_iter`` is not given (every step is a full pass).
MAX_STEPS = 1000

_OPTIONS = ("momentum", "learning_rate", "loss_gap", "steps", "theta0")


def momentum_zeta(*, momentum: float, gamma: float, smoothness: float,
                  learning_rate: float) -> float:
    r""":math:`\zeta` of Theorem 3.4, Eq. (17).

    .. math::  \zeta = \frac{4M^2\beta\gamma}{(\gamma - \beta)^2(1 - \beta)^3}\eta_0^2
               + \frac12M\eta_0 - 1.

    The third term of Eq. (16), :math:`\eta_0\zeta\sum_t\gamma^{T-t}\lVert v_{t+1}\rVert^2`,
    is non-positive iff :math:`\zeta \le 0`.
    """
    b = check_real("momentum", momentum)
    if not 0.0 <= b < 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    g = check_real("gamma", gamma)
    if not 0.0 <= g < 1.0 or g == b:
        raise ValueError(f"gamma must be in [0, 1) and differ from momentum, got {gamma!r}")
    M = check_positive("smoothness", smoothness)
    eta = check_positive("learning_rate", learning_rate)
    return 4.0 * M * M * b * g / ((g - b) ** 2 * (1.0 - b) ** 3) * eta * eta + 0.5 * M * eta - 1.0


def momentum_step_limit(*, momentum: float, smoothness: float) -> float:
    r"""Theorem 3.4's "noise dominates" step: for :math:`\eta_0` at most

    .. math::  \frac{\beta(1-\beta)^3}{8M}\Big[\sqrt{\frac14 + \frac{16}{\beta(1-\beta)^3}}
               - 1\Big]

    the paper states :math:`EER = O(\frac{2\eta_0D}{N^2}\sum_tq_t(C_t\sigma_t)^2)`, the noise
    variance dominating Eq. (16) up to constants it does not give (``inf`` for
    :math:`\beta = 0`). This is **not** the condition :math:`\zeta \le 0` under which Eq. (16)
    without its third term bounds the run: at this step :math:`\zeta > 0` for
    :math:`M = \mu = 1` and :math:`\beta \in \{0.5, 0.7, 0.9\}`; that condition is
    :func:`momentum_zeta_step`.
    """
    b = check_real("momentum", momentum)
    if not 0.0 <= b < 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    M = check_positive("smoothness", smoothness)
    if b == 0.0:
        return math.inf
    c = b * (1.0 - b) ** 3
    return c / (8.0 * M) * (math.sqrt(0.25 + 16.0 / c) - 1.0)


def momentum_zeta_step(*, momentum: float, smoothness: float, pl_constant: float) -> float:
    r"""The step :math:`\eta^\star` with :math:`\zeta(\eta) \le 0` exactly for
    :math:`0 < \eta \le \eta^\star` among steps with :math:`\gamma = 1 - \eta\mu > \beta`.

    With :math:`\gamma = 1 - \eta\mu` (Eq. (17)), :math:`\zeta(0) = -1` and on
    :math:`0 < \eta < (1 - \beta)/\mu` (where :math:`\gamma > \beta`) :math:`\zeta` is
    increasing: :math:`\gamma/(\gamma - \beta)^2` has derivative
    :math:`-(\gamma + \beta)/(\gamma - \beta)^3 < 0` in :math:`\gamma`, and :math:`\gamma`
    decreases with :math:`\eta`. It tends to :math:`+\infty` as :math:`\gamma \downarrow \beta`
    (:math:`\beta > 0`), so :math:`\eta^\star` is its unique root there (Brent's method);
    for :math:`\beta = 0`, :math:`\zeta = M\eta/2 - 1` and
    :math:`\eta^\star = \min(2/M, 1/\mu)`.
    """
    from scipy.optimize import brentq

    b = check_real("momentum", momentum)
    if not 0.0 <= b < 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    M = check_positive("smoothness", smoothness)
    mu = check_positive("pl_constant", pl_constant)
    if b == 0.0:
        return min(2.0 / M, 1.0 / mu)
    top = (1.0 - b) / mu

    def zeta(eta: float) -> float:
        g = 1.0 - eta * mu
        return 4.0 * M * M * b * g / ((g - b) ** 2 * (1.0 - b) ** 3) * eta * eta \
            + 0.5 * M * eta - 1.0

    hi = top * (1.0 - 1e-12)
    if not zeta(hi) > 0.0:  # (gamma - beta)^2 = ((1 - beta) 1e-12)^2: only for beta ~ 0
        return hi
    return float(brentq(zeta, 0.0, hi, xtol=1e-15 * top, rtol=1e-14))


def momentum_eer_bound(sigmas: np.ndarray, *, q: np.ndarray, gamma: float, loss_gap: float,
                       learning_rate: float, n_params: int, clip: float,
                       n_samples: float) -> float:
    r"""Eq. (16) without its third term: :math:`\gamma^TF_0 + \frac{2\eta_0D}{N^2}
    \sum_tq_t(C\sigma_t)^2` (Theorem 3.4; a bound on the run when :math:`\zeta \le 0`)."""
    s = np.asarray(sigmas, dtype=float)
    q = np.asarray(q, dtype=float)
    if s.shape != q.shape or s.ndim != 1:
        raise ValueError("sigmas and q must be vectors of the same length")
    C, N = check_positive("clip", clip), check_positive("n_samples", n_samples)
    eta = check_positive("learning_rate", learning_rate)
    D = check_positive_int("n_params", n_params)
    return (gamma**s.size * check_positive("loss_gap", loss_gap)
            + 2.0 * eta * D / (N * N) * float(np.sum(q * (C * s) ** 2)))


def _momentum_steps(*, momentum: float, gamma: float, budget: float, loss_gap: float,
                    learning_rate: float, n_params: int, clip: float, n_samples: float,
                    max_steps: int) -> int:
    r"""``T`` in ``1..max_steps`` minimising :math:`B(T)` (module doc): with the Lemma 3.1
    schedule :math:`\sum_tq_t\sigma_t^2 = (\sum_t\sqrt{q_t})^2/R` and, by Eq. (17),
    :math:`q_t` depends on ``T`` only through :math:`k = T - t + 1`, so
    :math:`\sum_t\sqrt{q_t}` is a cumulative sum over ``k``."""
    b2 = momentum * momentum
    k = np.arange(1, max_steps + 1, dtype=float)
    sq = np.sqrt((b2**k - gamma**k) / (b2 - gamma))
    c = 2.0 * learning_rate * n_params * clip * clip / (n_samples * n_samples * budget)
    bound = gamma**k * loss_gap + c * np.cumsum(sq) ** 2
    return int(np.argmin(bound)) + 1


@dataclass(frozen=True)
class DynamicPlan:
    """Noise schedule, step, momentum and the seed-003 bound that chose ``T``.

    Attributes
    ----------
    sigmas : ndarray (T,)
        Noise multipliers :math:`\\sigma_t` (Lemma 3.1, Eq. (10)).
    budget : float
        ``R`` (slides' units, :math:`\\sum_t\\sigma_t^{-2}`).
    clip, learning_rate, n_samples : float
        ``C``, :math:`\\eta`, the ``n`` the run normalises by (the upper confidence bound of a
        private count).
    relation : Neighbouring
    momentum : float or None
        Algorithm 2's :math:`\\beta` (None: Algorithm 1).
    bound_name : str
    bound_value : float
        The bound on :math:`E f(\\theta_{T+1}) - f^*` for the regularised mean objective.
    bound_covers_run : bool
    details : dict
        :math:`\\kappa, \\gamma, \\alpha`, the loss gap, the rules, the momentum weights' source.
    """

    sigmas: np.ndarray
    budget: float
    clip: float
    learning_rate: float
    n_samples: float
    relation: Neighbouring
    momentum: float | None
    bound_name: str
    bound_value: float
    bound_covers_run: bool
    settings: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        """``T``."""
        return int(self.sigmas.size)

    def summary(self) -> dict[str, Any]:
        """Scalars for ``FitResult.info["plan"]``."""
        return {"steps": self.steps, "budget": self.budget, "clip": self.clip,
                "learning_rate": self.learning_rate, "momentum": self.momentum,
                "bound_name": self.bound_name, "bound_value": self.bound_value,
                "bound_covers_run": self.bound_covers_run,
                "sigma_first": float(self.sigmas[0]), "sigma_last": float(self.sigmas[-1]),
                **self.details}


class DynamicSolver(Solver):
    """Hong-Wang-Zhou dynamic budget allocation (Algorithms 1-2), exact Gaussian-DP."""

    name = "dynamic"
    description = ("dynamic privacy-budget allocation (Hong, Wang and Zhou, Algorithms 1-2, "
                   "Lemma 3.1 schedule), exact Gaussian-DP accounting")
    gaussian = True
    #: The losses whose sharp clip this solver takes (``method_options["sharp_clip"]``,
    #: :mod:`noisygd.solvers.sharp_clip`): the ones it was measured on (docs/noisygd.md).
    sharp_clip_losses: ClassVar[tuple[str, ...]] = ("logistic",)
    option_names: ClassVar[frozenset[str] | None] = frozenset({*_OPTIONS, "sharp_clip"})
    option_checks: ClassVar[dict[str, OptionCheck]] = {
        "momentum": optional(check_momentum_option),
        "learning_rate": check_positive_option, "loss_gap": check_positive_option,
        "steps": check_positive_int_option, "theta0": check_start_option,
        "sharp_clip": check_sharp_option}

    def plan(self, facts: PublicFacts, budget: Budget) -> DynamicPlan:
        """The Lemma 3.1 schedule for the budget's ``R`` and ``T`` of Lemma 3.2 (Algorithm 1)
        or of Eq. (16) (Algorithm 2); module doc."""
        from noisygd.algorithms.schedules import (
            dynamic_optimal_steps,
            eer_bound,
            momentum_weights,
            noise_schedule,
            noise_weights,
        )

        if "sharp_clip" in facts.options:
            from noisygd.solvers.noisy_gd import regime_clip

            options = dict(facts.options)
            sharp = options.pop("sharp_clip")
            scaled, rule = regime_clip(replace(facts, options=options), budget, sharp)
            plan = self.plan(scaled, budget)
            return replace(plan, details={**plan.details, "clip_rule": rule})
        self.check_options(facts.options)
        options = dict(facts.options)
        c = facts.constants
        if c.smoothness is None:
            raise AssumptionError("method='dynamic' needs a smoothness constant (Theorem 3.2: "
                                  "M-smooth loss)")
        lam = float(c.strong_convexity)
        if not lam > 0.0:
            raise AssumptionError(
                "method='dynamic' needs a strongly convex objective (the Polyak-Lojasiewicz "
                "condition of Theorems 3.2-3.4): give l2 > 0")
        M = float(c.smoothness) + lam
        kappa = M / lam
        mu = budget.mu
        if mu is None:
            from noisygd.accounting.calibration import calibrate_mu

            mu = calibrate_mu(budget.epsilon, budget.delta)
        rel = facts.relation
        sens = rel.clipped_sum_sensitivity
        R = (check_positive("mu", mu) / sens) ** 2
        C = facts.clip_norm()
        N = float(facts.n_samples)
        D = int(facts.n_params)
        gap_source = "method_options['loss_gap']"
        gap = options.pop("loss_gap", None)
        if gap is None:
            if facts.loss_at_zero_bound is None:
                raise AssumptionError(
                    "method='dynamic' plans T from a public bound on f(theta_1) - f*: the "
                    "objective states no loss_at_zero_bound; pass method_options={'loss_gap': "
                    "F0}")
            gap, gap_source = float(facts.loss_at_zero_bound), "loss at zero (declared bound)"
        gap = check_positive("loss_gap", gap)
        eta = check_positive("learning_rate", options.pop("learning_rate", 1.0 / M))
        momentum = options.pop("momentum", None)
        cap = MAX_STEPS if facts.max_iter is None else int(facts.max_iter)
        fixed = options.pop("steps", None)
        lipschitz = c.lipschitz
        clip_covers = lipschitz is not None and C >= float(lipschitz)
        # Theorems 3.2-3.4 are for unconstrained GD on the objective the run descends: no
        # projection, and n public (a private count's N_hi scales the data term by n / N_hi)
        radius = facts.radius
        n_public = facts.n_step() == float(facts.n_samples)  # n_hi = n_lo: a public n
        premises_hold = clip_covers and radius is None and n_public
        details: dict[str, Any] = {"kappa": kappa, "smoothness_M": M, "pl_constant": lam,
                                   "loss_gap": gap, "loss_gap_source": gap_source,
                                   "zcdp_rho": sens * sens * R / 2.0, "gdp_mu": mu,
                                   "clip_covers_lipschitz": clip_covers, "steps_cap": cap,
                                   "projection_radius": radius, "n_public": n_public}
        if momentum is None:
            gamma = 1.0 - 1.0 / kappa  # Eq. (5)
            if not gamma > 0.0:
                raise AssumptionError("method='dynamic' needs kappa = M / l2 > 1")
            if not gamma < 1.0:  # 1 - 1/kappa rounds to 1: no finite horizon (Eq. (11))
                raise ValueError(
                    f"method='dynamic': kappa = M / l2 = {kappa:.3g} is too large for "
                    "floating point (gamma = 1 - 1/kappa rounds to 1); raise l2 or choose a "
                    "smaller row_norm_bound")
            # Eq. (5): alpha = M D (eta C / N)^2 / (2 R (f(theta_1) - f*))
            alpha = M * D * (eta * C / N) ** 2 / (2.0 * R * gap)
            t_star = dynamic_optimal_steps(kappa, alpha)
            steps = (check_positive_int("method_options['steps']", fixed) if fixed is not None
                     else int(min(cap, max(1, t_star))))
            sigmas = noise_schedule("dynamic", R, steps, q=noise_weights(steps, gamma, alpha))
            value = gap * eer_bound(sigmas, R, kappa, alpha)
            covers = premises_hold and eta == 1.0 / M
            name = "Theorem 3.2, Eq. (6) (Hong, Wang and Zhou), dynamic schedule of Lemma 3.1"
            details.update(alpha=alpha, gamma=gamma, lemma_3_2_T=t_star,
                           steps_rule=("fixed by method_options['steps']" if fixed is not None
                                       else "min(T_cap, T* of Lemma 3.2, Eq. (11))"),
                           schedule_weights="q_t = gamma^(T-t) alpha (Eq. (7))")
        else:
            momentum = check_real("momentum", momentum)
            if not 0.0 <= momentum < 1.0:
                raise ValueError(f"method_options['momentum'] must be in [0, 1), got {momentum!r}")
            gamma = 1.0 - eta * lam  # Eq. (17)
            if not 0.0 <= gamma < 1.0:
                raise ValueError(f"learning_rate must be in (0, 1/l2], got {eta!r}")
            if abs(momentum**2 - gamma) < 1e-12 or momentum == gamma:
                raise ValueError("Eq. (17) needs momentum**2 != 1 - learning_rate * l2 and "
                                 "momentum != gamma: change momentum")
            steps = (check_positive_int("method_options['steps']", fixed) if fixed is not None
                     else _momentum_steps(momentum=momentum, gamma=gamma, budget=R,
                                          loss_gap=gap, learning_rate=eta, n_params=D, clip=C,
                                          n_samples=N, max_steps=cap))
            q = momentum_weights(steps, momentum, gamma)
            sigmas = noise_schedule("dynamic", R, steps, q=q)
            value = momentum_eer_bound(sigmas, q=q, gamma=gamma, loss_gap=gap,
                                       learning_rate=eta, n_params=D, clip=C, n_samples=N)
            zeta = momentum_zeta(momentum=momentum, gamma=gamma, smoothness=M,
                                 learning_rate=eta)
            covers = premises_hold and zeta <= 0.0
            name = ("Theorem 3.4, Eq. (16) without its zeta term (Hong, Wang and Zhou), "
                    "momentum weights of Eq. (17) in the Lemma 3.1 schedule")
            details.update(gamma=gamma, zeta=zeta,
                           zeta_step=momentum_zeta_step(momentum=momentum, smoothness=M,
                                                        pl_constant=lam),
                           noise_dominates_step=momentum_step_limit(momentum=momentum,
                                                                    smoothness=M),
                           steps_rule=("fixed by method_options['steps']" if fixed is not None
                                       else "argmin over 1..T_cap of Eq. (16)'s data-free "
                                            "terms"),
                           schedule_weights="q_t of Theorem 3.4, Eq. (17)")
        return DynamicPlan(
            sigmas=np.asarray(sigmas, dtype=float), budget=R, clip=C, learning_rate=eta,
            n_samples=facts.n_step(), relation=rel, momentum=momentum, bound_name=name,
            bound_value=float(value), bound_covers_run=bool(covers), settings=options,
            details=details)

    def planned_event(self, plan: DynamicPlan) -> Composed:
        """``Composed((Gaussian(sigma_t, Delta, relation) for t in 1..T))``: every planned
        step fits in ``R`` (checked by :meth:`run`'s algorithm), so the run's event."""
        sens = plan.relation.clipped_sum_sensitivity
        return Composed(tuple(Gaussian(noise_multiplier=float(s), sensitivity=sens,
                                       relation=plan.relation) for s in plan.sigmas))

    def run(self, plan: DynamicPlan, oracle: GradientOracle,
            rng: np.random.Generator) -> FitResult:
        """:func:`~noisygd.algorithms.schedules.dynamic_noisy_gd` with the planned schedule."""
        from noisygd.algorithms.schedules import dynamic_noisy_gd

        result = dynamic_noisy_gd(
            oracle, sigmas=plan.sigmas, budget=plan.budget, clip=plan.clip,
            learning_rate=plan.learning_rate, n_samples=plan.n_samples,
            relation=plan.relation, momentum=plan.momentum, rng=rng, **plan.settings)
        result.info["plan"] = plan.summary()
        return result
