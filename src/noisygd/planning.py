r"""Planner for NoisyGD: noise multiplier, steps and step size from (epsilon, delta).

Privacy side (exact)
--------------------
``T`` NoisyGD steps with noise multiplier ``z`` and sensitivity ``Delta``
(1 clipping norm for add/remove, 2 for replace-one) compose to exactly
:math:`\sqrt T\,\Delta/z`-GDP (Dong, Roth and Su 2022, Cor. 3.3). With
:math:`\mu^*` the largest ``mu`` meeting ``(epsilon, delta)`` exactly
(:func:`noisygd.accounting.calibration.calibrate_mu`, Cor. 2.13), the smallest
noise for a given ``T`` is

.. math::  z = \sqrt{T}\,\Delta / \mu^*,

and in the zCDP language of Lecture 12 section 12.1.2 the run is
:math:`\rho = \mu^{*2}/2`-zCDP, i.e. :math:`\sigma^2/T = L^2/(2\rho)` with
:math:`\sigma = zC` the per-step noise scale of the *sum* gradient and
:math:`L = \Delta C` its sensitivity. So ``T`` is free: only the utility side
chooses it.

Utility side (Lecture 12, section 12.2)
---------------------------------------
In the sum form of the notes (objective :math:`f = \sum_i \ell_i +
\frac{n\lambda}{2}\lVert\theta\rVert^2`, smoothness :math:`n\beta_F` with
:math:`\beta_F = \beta + \lambda`, gradient noise variance :math:`d\sigma^2`,
:math:`D \ge \lVert x_1 - x^*\rVert`), the bounds are

* 12.2.1 nonconvex smooth, :math:`\eta = \min\{1/(n\beta_F),
  \sqrt{2\Delta_f}/\sqrt{n\beta_F d\sigma^2 T}\}`:
  :math:`\frac1T\sum_t E\lVert\nabla f(x_t)\rVert^2 \le 2\Delta_f/(T\eta) + \eta n\beta_F d\sigma^2`
  (``Delta_f = n * loss_gap`` bounds :math:`f(x_1) - f^*`). The left side is
  :math:`E\lVert\nabla f(x_\tau)\rVert^2` for an iterate :math:`x_\tau` drawn uniformly
  from :math:`x_1, \dots, x_T`, so the plan releases exactly that
  (``averaging="random"``: the algorithm draws :math:`\tau` with its own generator);
* 12.2.2 convex smooth, :math:`\eta = \min\{1/(n\beta_F), D/\sqrt{d\sigma^2T}\}`,
  uniform averaging: :math:`E f(\bar x) - f^* \le D^2/(T\eta) + \eta d\sigma^2`;
* 12.2.3 convex Lipschitz, :math:`\eta = D/\sqrt{T(n^2L^2 + d\sigma^2)}`, uniform
  averaging: :math:`E f(\bar x) - f^* \le D\sqrt{n^2L^2 + d\sigma^2}/\sqrt T`;
* 12.2.4 strongly convex, :math:`\eta_t = 1/(n\lambda(t+1))`, weighted averaging
  :math:`\frac{2}{T(T+1)}\sum_t t x_t`:
  :math:`E f - f^* \le 4(n^2G^2 + d\sigma^2)/(n\lambda(T+1))`, where
  :math:`G = L + \lambda R` bounds the per-example gradient of the regularised
  objective on the ball of radius ``R`` (a projection radius is required: the
  Lipschitz assumption of 12.2.4 fails on all of :math:`\mathbb R^p`).

With :math:`\sigma^2 = TL^2/\mu^{*2}` substituted, each bound is a function of
``T`` alone; the planner evaluates it for every ``T`` in ``1..max_steps`` (above
:data:`EXACT_STEP_GRID` = :math:`10^5`, on a bounded grid: every ``T <= 1024``, 4096
geometrically spaced ``T`` and ``max_steps`` itself, so the memory does not grow with
``max_steps``) and takes the minimiser (the notes' closed forms, e.g.
:math:`T \ge n\beta D\sqrt\rho/(L\sqrt d)` for 12.2.2 and :math:`T \ge n^2\rho/\lambda`
for 12.2.4, are recorded in ``details`` and are where the bound flattens out). Every bound whose
assumptions hold for the declared constants is a candidate (a strongly convex
smooth objective also satisfies those of 12.2.2); the plan uses the candidate
with the smallest value, and reports its section in ``bound_name`` and its value
**divided by n**, i.e. for the mean objective ``F = f/n`` that
:meth:`noisygd.objectives.base.Objective.value` computes (for 12.2.1 the bound
is on the mean squared gradient norm of ``F``).

Why an ``accelerate`` mode (the default)
----------------------------------------
The textbook step :math:`1/(n\beta_F)` uses the worst-case smoothness and plain
gradient descent needs many steps on ill-conditioned data: on Adult
(``l2 = 1e-4``) 100 textbook steps leave an excess risk of about 0.06 without
any noise, and the bounds above say little at practical ``T`` (for 12.2.4 with
a small ``lambda`` they exceed the loss range). With ``accelerate=True`` the plan
takes ``T`` from the bound of the accelerated run below (or ``T = max_steps`` when
the caller fixes it), the matching noise
:math:`z = \sqrt T\Delta/\mu^*`, the textbook step size :math:`1/(n\beta_F)`
and the constant schedule, and adds Nesterov momentum with the last iterate (the
suffix average for a quadratic loss, below). The momentum, unless given, follows
from the public noise-to-signal ratio of one step (:func:`auto_momentum`:
:data:`DEFAULT_MOMENTUM` = 0.95 when the noise is small, 0 when it is large,
log-linear between; the breast-cancer demo of ``noisygd demo`` gets 0). Momentum is post-processing
of the noisy gradients, so privacy is unchanged; but the section-12.2 bounds are
proved for plain NoisyGD, so in this mode ``bound_value`` is the guarantee of
the textbook run with the same ``(z, T)`` -- reported for reference -- and
``details["bound_covers_run"]`` is ``False``. With ``accelerate=False`` the plan
is exactly the textbook one and its bound covers the run, provided the clipping
norm is at least the Lipschitz constant (otherwise the run follows the clipped
gradients, not those of ``F``, and ``bound_covers_run`` is ``False``).

**Averaging in the accelerated plan.** For a quadratic loss with a data-independent Hessian
(least squares, ``quadratic=True``) the iterates are a linear Gaussian process: after the
optimisation transient the last iterate carries the whole stationary noise, which makes
more steps worse and pushed R^2 below 0 on small regression sets. The plan then always
releases the suffix average of the last half of the iterates (``averaging="suffix"``): tail
averaging is the choice with the minimax-optimal noise term for least squares (Jain,
Kakade, Kidambi, Netrapalli and Sidford, "Parallelizing stochastic gradient descent for
least squares regression: mini-batching, averaging, and model misspecification", JMLR
2018; Rakhlin, Shamir and Sridharan, ICML 2012, for alpha-suffix averaging). For other
losses (logistic, Huber) the plan releases the suffix average when its ``T`` comes from the
bound (twice the bound's minimiser, below: the second half is the stationary phase), and
the last iterate when ``T`` is the floor or fixed by the caller (the run is then
optimisation-limited: an average would include iterates that have not converged).
Averaging is post-processing: privacy is unchanged.

**T in the accelerated plan.** A fast gradient method with an inexact oracle accumulates
the oracle's error linearly in ``T`` (Devolder, Glineur and Nesterov, "First-order methods
of smooth convex optimization with inexact oracle", Math. Program. 2014, section 6: the
fast gradient method's error is :math:`O(\beta D^2/T^2) + O(T\delta)`). In the sum form
with the step :math:`1/(n\beta_F)`, the per-step noise :math:`d\sigma^2` of NoisyGD plays
the part of :math:`\delta` through :math:`d\sigma^2/(n\beta_F)`, and with
:math:`\sigma^2 = T C^2\Delta^2/\mu^2` (the privacy side) the error is

.. math::  A(T) = \frac{2n\beta_F D^2}{T^2} + \frac{T\,d\sigma^2}{2n\beta_F}
           = \frac{2n\beta_F D^2}{T^2} + \frac{T^2 d C^2\Delta^2}{2n\beta_F\mu^2},

minimised at

.. math::  T^* = \Big(\frac{4 n^2\beta_F^2 D^2\mu^2}{d\,C^2\Delta^2}\Big)^{1/4}

(recorded in ``details["accelerated_T"]``). It is the accelerated counterpart of the
lecture's own horizon for 12.2.2: with :math:`\rho = \mu^2/2` and :math:`L = C\Delta`, the
notes' closed form :math:`T_{12.2.2} = n\beta_F D\sqrt\rho/(L\sqrt d)` (where the
convex-smooth bound of plain NoisyGD flattens out) satisfies :math:`T^{*2} =
2\sqrt2\,T_{12.2.2}`: acceleration turns the :math:`D^2/(T\eta)` bias of 12.2.2 into
:math:`D^2/(T^2\eta)`, so the horizon is its square root. Every input is public: ``n`` (the
lower confidence bound of a private count), ``d``, :math:`\mu` of the budget, the declared
:math:`\beta_F`, the clipping norm ``C``, the relation's :math:`\Delta` and ``D`` (a public
bound on :math:`\lVert\theta^*\rVert`, e.g. :math:`\sqrt{2F_0/\lambda}` for a ridge
penalty; :class:`noisygd.solvers.NoisyGDSolver` also takes a declared bound or pays for an
estimate, :mod:`noisygd.solvers.distance`, and labels the source).
:math:`T^*` grows like :math:`\sqrt{n\mu}`: more budget or more rows give more
steps. At :math:`T^*` the two terms of :math:`A` are equal: the iterate has reached the
noise floor of the bound, and further iterates only add stationary noise to the last
iterate. The plan therefore runs

.. math::  T = \min\big(T_{\max},\ \max(T_{\min},\ 2\lceil T^*\rceil)\big)

steps and, when :math:`2\lceil T^*\rceil > T_{\min}`, releases the **suffix average of the
last half** (``averaging="suffix"``): the first half is the optimisation phase of the
bound, the second half is averaged, which removes the stationary noise the last iterate
carries (tail averaging: Jain, Kakade, Kidambi, Netrapalli and Sidford, JMLR 2018;
alpha-suffix averaging: Rakhlin, Shamir and Sridharan, ICML 2012). The noise is calibrated
for the whole ``T`` (:math:`z = \sqrt T\Delta/\mu`), so the event is exactly
:math:`\mu`-GDP whatever ``T``; averaging is post-processing. :math:`T_{\min}` =
:data:`MIN_STEPS_ACCELERATED` (100) is the former fixed ``T``, kept as a floor: below it
the bound's optimum lies where its noise term (which charges the *whole* accumulated noise
to the last iterate, and uses the worst-case ``D``) is pessimistic, and the floor run is
optimisation-limited, so it keeps the last iterate (for a quadratic loss the suffix
average, below). It is a compute floor from the previous release, not a theorem's value.
:math:`T_{\max}` = :data:`MAX_STEPS_ACCELERATED` (1000) caps the compute (``max_iter`` /
``max_steps`` fixes ``T`` instead, with the last iterate, or the suffix average for a
quadratic loss). The bound ignores the bias of clipping and the constant momentum
schedule, so ``bound_covers_run`` stays False; the rule is the theorem's shape with its
constants.

**The planned ridge** (:func:`ridge_strength`, used by :class:`noisygd.solvers.NoisyGDSolver`
and :class:`noisygd.solvers.NewtonSolver` with ``method_options={"l2": "auto"}``, i.e.
``DPLogisticRegression(l2=None)`` and ``DPLinearRegression(l2=None)``). The ridge
balances its bias against a comparator of public radius :math:`D_0 = \sqrt{2nF_0}`
(:func:`comparator_radius`: the MAP model under a standard Gaussian prior) with the
stationary noise of NoisyGD at the horizon :math:`\kappa = \beta_F/\lambda` the ridge
gives it: :math:`\lambda^* = \sqrt d\,C\Delta/(\mu n^{3/2}\sqrt{2F_0})`. The plan is then
made for the regularised objective, with :math:`D = \sqrt{2F_0/\lambda^*}`.

**The ridge's horizon** (:func:`ridge_horizon_steps`, ``method_options={"horizon": "ridge"}``
of :class:`noisygd.solvers.NoisyGDSolver`, asked for by multinomial ``DPLogisticRegression``
fits and by ``DPLinearRegression`` with the planned ridge):
:math:`\lambda^*` is derived for a run of :math:`\kappa = \beta_F/\lambda^*` plain steps, so
that plan runs :math:`\min(T_{\max}, \max(T, \lceil(1 - m)\kappa\rceil))` steps at its
momentum ``m`` with the suffix average (digits10 accuracy at epsilon 0.5 / 1 / 2 / 8, with the
multinomial clip of :mod:`noisygd.objectives.multinomial`: 0.584 / 0.784 / 0.847 / 0.884 ->
0.729 / 0.856 / 0.913 / 0.943).

Measured with the planned ridge (``benchmarks/bench_utility.py --methods noisy_gd --no-peers``,
noisygd default only, seeds 0-4, ROC AUC at epsilon 0.5 / 1 / 2 / 8; before = the committed run
with ``l2 = 1e-4``): bank 0.842 / 0.861 / 0.859 / 0.858 -> 0.874 / 0.906 / 0.910 / 0.910,
credit 0.754 / 0.757 / 0.758 / 0.758 -> 0.756 / 0.759 / 0.759 / 0.761, adult 0.895 / 0.897 /
0.898 / 0.898 -> 0.896 / 0.898 / 0.897 / 0.899 (accuracy at epsilon 1: 0.847 -> 0.848),
breast cancer 0.935 / 0.967 / 0.978 / 0.983 -> 0.932 / 0.973 / 0.979 / 0.983, digits
(binary) 0.871 / 0.920 / 0.937 / 0.949 -> 0.861 / 0.919 / 0.937 / 0.949, digits (10 classes,
accuracy) 0.609 / 0.793 / 0.832 / 0.886 -> 0.584 / 0.784 / 0.847 / 0.884.

Measured before the planned ridge (one to three seeds, ``DPLogisticRegression`` /
``DPLinearRegression`` with the data sets' declared ``feature_bounds`` and ``target_range``;
the former plan had ``T = 100`` everywhere): bank ROC AUC at epsilon 1 / 8 0.814 / 0.817 ->
0.860 / 0.859, adult accuracy at epsilon 1 / 8 0.844 / 0.845 -> 0.845 / 0.848, bike R^2 at
epsilon 0.5 / 1 0.320 / 0.493 -> 0.359 / 0.507; the small sets (breast cancer, digits,
diabetes), where :math:`2T^* < 100`, are unchanged at small epsilon. Wine's R^2 fell at
epsilon 0.5 / 1 / 8 (0.071 / 0.116 / 0.193 -> 0.017 / 0.097 / 0.170): its noise-free run
also loses R^2 with more steps (0.198 at ``T = 100``, 0.188 at ``T = 462``), i.e. the ridge
default ``l2 = 1e-3``, not the plan, limits it (``l2 = 1e-5`` gives 0.242 at epsilon 8). On
``benchmarks/bench_adult.py`` (no feature bounds, :math:`T^* = 264`, ``T = 530``, 10 seeds):
accuracy 0.8457 -> 0.8455, mean excess risk 0.0036 -> 0.0034 (with :math:`T^*` steps and the
last iterate instead: 0.0072).

``bound_covers_run`` is true only when the released output is the one the bound
is about; a caller that changes the averaging or momentum of the run must
recompute it (:meth:`NoisyGDPlan.covers`).

The compute budget
------------------
The accelerated rule's ``T`` and the ridge's horizon are capped by a compute budget
:math:`T_{\max}` (``step_budget``; default :data:`MAX_STEPS_ACCELERATED` = 1000 steps, each a
pass over the data; an estimator's ``method_options={"plan": {"step_budget": T}}``). It is a
cost, not a theorem's value, so the plan never hides it: ``details["compute_budget"]``,
``details["unconstrained_steps"]`` (what the rule wanted without it) and
``details["compute_budget_binds"]`` record it, and NoisyGD's solver warns
(:class:`ComputeBudgetWarning`) with the steps wanted whenever it binds. ``max_iter`` fixes
``T`` instead (no budget, no warning).

``max_steps`` (an estimator's ``max_iter``): a cap or the step count
--------------------------------------------------------------------
In the textbook plan it is a **cap**: the largest ``T`` considered (default 100). In the
accelerated plan (the default) it is the **step count**: ``T = max_steps`` exactly (the
rule above only applies when it is None). Either way it is refused above
:data:`MAX_STEPS_LIMIT` = :math:`10^7` (``ValueError``): every NoisyGD step is a full pass
over the data, and a larger value (e.g. ``max_iter=10**9``) is a mistake, not a plan.

Extreme public constants
------------------------
Constants whose bounds leave the floating-point range (a clipping norm near
:math:`10^{300}`: :math:`C^2` overflows; an ``l2`` near :math:`10^{308}`: :math:`n\beta_F`
overflows) are refused with a ``ValueError`` naming them (``clip``, which an estimator
derives from its ``row_norm_bound`` when ``clip`` is not set, and ``l2``, the strong
convexity). A clipping norm so small that :math:`C^2` underflows (:math:`10^{-300}`) is
planned: :math:`T^*` is then computed in the log domain (it is above :math:`T_{\max}`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from noisygd._checks import check_bool, check_positive, check_positive_int, check_real
from noisygd.accounting.base import check_delta, check_epsilon
from noisygd.accounting.events import Neighbouring
from noisygd.algorithms.regime import (
    NOISE_TO_SIGNAL_HIGH,
    NOISE_TO_SIGNAL_LOW,
    check_sharp_ratio,
    noise_regime,
    sharp_clip_factor,
)
from noisygd.exceptions import AssumptionError
from noisygd.objectives.base import ObjectiveConstants, Regime

__all__ = [
    "DEFAULT_MAX_STEPS",
    "DEFAULT_MAX_STEPS_ACCELERATED",
    "DEFAULT_MOMENTUM",
    "EXACT_STEP_GRID",
    "MAX_STEPS_ACCELERATED",
    "MAX_STEPS_LIMIT",
    "MIN_STEPS_ACCELERATED",
    "NEWTON_MOMENTUM",
    "NOISE_TO_SIGNAL_HIGH",
    "NOISE_TO_SIGNAL_LOW",
    "RIDGE_STATUS",
    "ComputeBudgetWarning",
    "NoisyGDPlan",
    "accelerated_steps",
    "accelerated_t_star",
    "auto_momentum",
    "check_sharp_ratio",
    "comparator_radius",
    "newton_momentum",
    "noise_regime",
    "noise_to_signal_ratio",
    "plan_noisy_gd",
    "ridge_horizon_steps",
    "ridge_strength",
    "sharp_clip_factor",
    "unconstrained_steps",
]

DEFAULT_MAX_STEPS = 100
#: Largest ``max_steps`` (an estimator's ``max_iter``) accepted (module doc).
MAX_STEPS_LIMIT = 10**7
#: Up to this ``max_steps`` the textbook bounds are evaluated at every ``T``; above, on a
#: bounded grid (module doc).
EXACT_STEP_GRID = 10**5
#: Floor on the accelerated plan's ``T``: the former fixed ``T`` (module doc, "T in the
#: accelerated plan"; a compute floor, not a theorem's value).
MIN_STEPS_ACCELERATED = 100
#: Compute cap on the accelerated plan's ``T`` (``max_iter`` / ``max_steps`` overrides it).
MAX_STEPS_ACCELERATED = 1000
#: The former fixed ``T`` of the accelerated plan (= :data:`MIN_STEPS_ACCELERATED`; kept for
#: callers that import it).
DEFAULT_MAX_STEPS_ACCELERATED = MIN_STEPS_ACCELERATED
DEFAULT_MOMENTUM = 0.95
DEFAULT_INIT_DISTANCE = 1.0
#: How a fit labels a planned ridge (``info["plan"]["l2_planned_status"]``): the balance of
#: :func:`ridge_strength` assumes a horizon the capped run does not reach.
RIDGE_STATUS = ("heuristic balance (noisygd.planning.ridge_strength): it assumes a run of "
                "beta_F / l2 plain steps, so no theorem covers this run's excess risk")


class ComputeBudgetWarning(UserWarning):
    """A plan ran fewer steps than its rule wanted because the compute budget bound
    (module doc, "The compute budget"); the message names the steps wanted and the option
    that raises the budget."""

_SECTION = {
    Regime.NONCONVEX_SMOOTH: "12.2.1",
    Regime.CONVEX_SMOOTH: "12.2.2",
    Regime.CONVEX_LIPSCHITZ: "12.2.3",
    Regime.STRONGLY_CONVEX: "12.2.4",
}  # the section of each regime's own bound (recorded as details["regime_section"])


@dataclass(frozen=True)
class NoisyGDPlan:
    """A NoisyGD configuration and the section-12.2 bound that chose it.

    Attributes
    ----------
    noise_multiplier : float
        ``z = sqrt(T) * sensitivity / mu``.
    steps : int
        ``T``.
    learning_rate : float or None
        Constant step for the *sum* objective; None for ``schedule="inverse_t"``.
    schedule, averaging : str
        As accepted by :func:`noisygd.algorithms.noisy_gd.noisy_gd`.
    regime : Regime
        The regime the objective's constants declare.
    bound_name : str
        Section of Lecture 12 whose bound chose ``T`` (e.g. ``"12.2.2"``).
    bound_value : float
        That bound at the chosen ``T``, for the mean objective (see module doc).
    mu : float
        Gaussian-DP parameter of the whole run (``sqrt(T) * sensitivity / z``).
    momentum : float
        Nesterov momentum (0 for the textbook plan).
    details : dict
        Everything else: rho, sigma, the candidates' bounds, the notes' closed-form
        ``T``, whether the bound covers the run.
    """

    noise_multiplier: float
    steps: int
    learning_rate: float | None
    schedule: str
    averaging: str
    regime: Regime
    bound_name: str
    bound_value: float
    mu: float
    momentum: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The plan's scalar fields and its public details, for ``FitResult.info["plan"]``."""
        out: dict[str, Any] = {
            "noise_multiplier": self.noise_multiplier, "steps": self.steps,
            "learning_rate": self.learning_rate, "schedule": self.schedule,
            "averaging": self.averaging, "regime": self.regime.value,
            "bound_name": self.bound_name, "bound_value": self.bound_value, "mu": self.mu,
            "momentum": self.momentum,
        }
        for key in ("bound_covers_run", "clip_covers_lipschitz", "init_distance",
                    "init_distance_source", "init_distance_start", "regime_section", "sigma", "rho",
                    "accelerated_T", "steps_rule", "n_signal", "n_step", "compute_budget",
                    "unconstrained_steps", "compute_budget_binds", "noise_to_signal",
                    "clip_rule"):
            if key in self.details:
                out[key] = self.details[key]
        return out

    def covers(self, *, averaging: str, momentum: float) -> bool:
        """Whether ``bound_value`` is a guarantee for a run with this ``averaging``/``momentum``.

        True only for the textbook plan run as planned: the section-12.2 bound is about
        one released output (an average, or for 12.2.1 an iterate drawn uniformly from
        the run), for plain NoisyGD with clipping that never changes a gradient.
        """
        return (bool(self.details.get("bound_covers_run", False))
                and averaging == self.averaging and float(momentum) == self.momentum)

    def noisy_gd_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`~noisygd.algorithms.noisy_gd.noisy_gd` from this plan."""
        return {
            "noise_multiplier": self.noise_multiplier,
            "steps": self.steps,
            "learning_rate": self.learning_rate,
            "schedule": self.schedule,
            "averaging": self.averaging,
            "momentum": self.momentum,
        }




def noise_to_signal_ratio(n_params: float, noise_multiplier: float, n_samples: float) -> float:
    r""":math:`q = \sqrt p\,z/n`: one step's noise norm over the largest possible gradient
    sum, both in units of the clip (``p`` parameters, noise multiplier ``z``, ``n`` rows); the
    input of :func:`noise_regime` for NoisyGD's plan and private Newton's momentum
    (:func:`noisygd.solvers.newton.with_ruled_momentum`). Public."""
    return math.sqrt(n_params) * noise_multiplier / n_samples


def auto_momentum(noise_to_signal: float) -> float:
    """Momentum for a public noise-to-signal ratio (see :func:`plan_noisy_gd`; the scale of
    :func:`noise_regime`)."""
    lo, hi = NOISE_TO_SIGNAL_LOW, NOISE_TO_SIGNAL_HIGH
    if noise_to_signal <= lo:
        return DEFAULT_MOMENTUM
    if noise_to_signal >= hi:
        return 0.0
    frac = math.log(hi / noise_to_signal) / math.log(hi / lo)
    return DEFAULT_MOMENTUM * frac


#: The momentum of private Newton's steps in an optimisation-limited run
#: (:func:`newton_momentum`); measured, not a theorem's (docs/newton.md, "Momentum").
NEWTON_MOMENTUM = 0.5


def newton_momentum(noise_to_signal: float) -> float:
    r"""Nesterov momentum of private Newton's full-curvature steps for the public ratio
    :math:`q = \sqrt p\,z/n` of its plan (:math:`z` the approach steps' gradient noise
    multiplier, ``n`` the planned rows, ``p`` the parameters):

    .. math:: m = m_N\,(1 - r(q)),

    :data:`NEWTON_MOMENTUM` :math:`m_N` for an optimisation-limited run, 0 for a noise-limited
    one, along :func:`noise_regime`'s scale (NoisyGD's momentum rule, :func:`auto_momentum`,
    with Newton's smaller top: a Newton step is already scaled by the curvature). Why: the
    approach steps use the curvature released at step 0, which overestimates the logistic
    curvature near an optimum far from the start, so the steps fall short; momentum
    lengthens them where the noise allows (docs/newton.md, "Momentum", with the
    measurements).

    Parameters
    ----------
    noise_to_signal : float
        :math:`q \ge 0`.

    Returns
    -------
    float
        :math:`m \in [0, m_N]`.
    """
    return NEWTON_MOMENTUM * (1.0 - noise_regime(noise_to_signal))


def accelerated_t_star(*, n: float, smoothness: float, init_distance: float, mu: float,
                       n_params: int, clip: float, sensitivity: float = 1.0) -> float:
    r"""Minimiser of the accelerated bound :math:`A(T)` (module doc, "T in the accelerated plan").

    .. math::  T^* = \Big(\frac{4 n^2\beta_F^2 D^2\mu^2}{d\,C^2\Delta^2}\Big)^{1/4}

    with ``smoothness`` :math:`\beta_F` (of the regularised mean objective), ``init_distance``
    ``D``, ``n_params`` ``d``, ``clip`` ``C`` and ``sensitivity`` :math:`\Delta` (in units of
    ``C``). All public. When a square leaves the float range (e.g. ``clip = 1e-300``:
    :math:`C^2` underflows to 0) the same formula is evaluated in the log domain
    (``inf`` if :math:`T^*` itself overflows).
    """
    try:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
            t = float((4.0 * (n * smoothness * init_distance * mu) ** 2
                       / (n_params * (clip * sensitivity) ** 2)) ** 0.25)
    except (OverflowError, ZeroDivisionError):
        t = math.nan
    if math.isfinite(t) and t > 0.0:
        return t
    x, y = n * smoothness * init_distance * mu, clip * sensitivity
    if not (x > 0.0 and y > 0.0):
        return t if not math.isnan(t) else (math.inf if x > 0.0 else 0.0)
    log_t = 0.25 * (math.log(4.0) + 2.0 * (math.log(n) + math.log(smoothness)
                    + math.log(init_distance) + math.log(mu)) - math.log(n_params)
                    - 2.0 * (math.log(clip) + math.log(sensitivity)))
    return math.exp(log_t) if log_t < 709.0 else math.inf


def comparator_radius(*, n: float, loss_at_zero: float) -> float:
    r"""Public radius :math:`D_0 = \sqrt{2nF_0}` of the comparator of :func:`ridge_strength`.

    The comparator is the minimiser :math:`w_0` of the *sum*-form objective
    :math:`\sum_i\ell_i(w) + \frac12\lVert w\rVert^2`: the MAP model under a standard
    Gaussian prior on the coefficients (scikit-learn's default ``C = 1``), i.e. the mean
    form with ridge :math:`\lambda_0 = 1/n`. Since :math:`F_{\lambda_0}(w_0) \le
    F_{\lambda_0}(0) = F(0) \le F_0` (``loss_at_zero``, a data-independent bound such as
    :math:`\log 2` for the logistic loss), :math:`\frac{\lambda_0}2\lVert w_0\rVert^2 \le F_0`,
    so :math:`\lVert w_0\rVert \le \sqrt{2F_0/\lambda_0} = \sqrt{2nF_0}`. Every input is
    public (``n`` is a public size or the lower confidence bound of a private count).
    """
    return math.sqrt(2.0 * check_positive("n", n) * check_positive("loss_at_zero", loss_at_zero))


def ridge_strength(*, n: float, n_params: int, clip: float, mu: float, loss_at_zero: float,
                   sensitivity: float = 1.0, comparator: float | None = None) -> float:
    r"""The ridge :math:`\lambda^*` a NoisyGD plan adds when the user gives none (``l2="auto"``).

    .. math::  \lambda^* = \frac{\sqrt d\,C\Delta}{n\mu D_0}
               = \frac{\sqrt d\,C\Delta}{\mu\,n^{3/2}\sqrt{2F_0}},
               \qquad D_0 = \sqrt{2nF_0}\ (:func:`comparator_radius`).

    **Derivation** (mean form :math:`F_\lambda = F + \frac\lambda2\lVert\theta\rVert^2`,
    :math:`\beta_F`-smooth and :math:`\lambda`-strongly convex, NoisyGD step
    :math:`\eta = 1/\beta_F`, per-step noise :math:`N(0, \sigma^2 I_d)` on the gradient sum
    with :math:`\sigma^2 = TC^2\Delta^2/\mu^2`, the privacy side of the module doc):

    1. *Stationary noise.* On the quadratic model :math:`\lambda I \preceq H \preceq
       \beta_F I` the iterates' stationary covariance is :math:`\Sigma = \frac{\eta^2
       \sigma^2}{n^2}\sum_k (I - \eta H)^{2k} \preceq \frac{\eta\sigma^2}{n^2}H^{-1}`, so the
       excess risk it causes is :math:`\frac12\mathrm{tr}(H\Sigma) \le
       \frac{d\eta\sigma^2}{2n^2} = \frac{dTC^2\Delta^2}{2\beta_F n^2\mu^2}`.
    2. *Horizon.* The noiseless part contracts by :math:`1 - \eta\lambda = 1 - 1/\kappa`
       per step (:math:`\kappa = \beta_F/\lambda`), so the run forgets its start after
       :math:`T \approx \kappa` steps; there the noise term is
       :math:`dC^2\Delta^2/(2\lambda n^2\mu^2)`. A smaller ridge needs more steps, and each
       step costs noise: this is the trade-off the ridge settles.
    3. *Bias.* For any comparator :math:`w` with :math:`\lVert w\rVert \le D_0`,
       :math:`F(\theta) - F(w) \le [F_\lambda(\theta) - F_\lambda^*] + \frac\lambda2 D_0^2`.

    The sum :math:`\frac\lambda2D_0^2 + \frac{dC^2\Delta^2}{2\lambda n^2\mu^2}` is minimal at
    :math:`\lambda^*` above (the same balance as the strongly convex bound of section 12.2.4,
    :math:`4dC^2\Delta^2/(\lambda n^2\mu^2)`, with the smooth case's constant), and the
    excess risk is then :math:`\sqrt d\,C\Delta D_0/(n\mu)`, the rate of Bassily, Smith and
    Thakurta (FOCS 2014) for the comparator ball. :math:`\lambda^*` grows where noise
    dominates (small ``n``, small :math:`\mu`, large ``d``) and shrinks on large data or a
    large budget: :math:`\lambda^* \propto \sqrt d\,C/(\mu n^{3/2})`.

    **Status: a heuristic balance, not a guarantee.** Step 2 charges the noise of a run of
    :math:`T \approx \kappa = \beta_F/\lambda^*` plain steps, the horizon at which the
    noiseless part has forgotten its start; the planned run is much shorter (at most
    :data:`MAX_STEPS_ACCELERATED` = 1000 steps; on Adult at epsilon 1, add/remove,
    :math:`\kappa \approx 3.6\times10^4`), so its optimisation error, the
    :math:`(1 - 1/\kappa)^T` part that steps 1-3 drop, is not small and is not in the balance.
    The excess risk :math:`\sqrt d\,C\Delta D_0/(n\mu)` above is therefore not a bound on the
    run; ``noisygd plan`` reports the run's own bound (12.2.x of the textbook run, with its
    premises) instead. The choice is kept because it is a function of public quantities with the
    right scaling in ``n``, ``d`` and :math:`\mu`, and it was judged on several data sets
    (module doc), not because a theorem picks it.

    Parameters
    ----------
    n : float
        Public ``n`` (a declared size, or the *lower* confidence bound of a private count:
        the larger, more cautious ridge).
    n_params : int
        ``d``, the number of coordinates the noise has.
    clip : float
        Clipping norm ``C``.
    mu : float
        Gaussian-DP parameter of the NoisyGD run.
    loss_at_zero : float
        :math:`F_0`, a data-independent bound on :math:`F(0)` (:math:`\log 2` for the
        logistic loss, :math:`\log K` for the multinomial one).
    sensitivity : float, default=1.0
        :math:`\Delta` in units of ``C`` (1 add/remove, 2 replace-one).
    comparator : float, optional
        :math:`D_0` from a release made before the run
        (:class:`~noisygd.solvers.base.ReleasedFacts`, e.g. ``DPLinearRegression``'s
        private scales) in place of :func:`comparator_radius`'s public :math:`\sqrt{2nF_0}`;
        the balance above is the same with that :math:`D_0`.

    Returns
    -------
    float
        :math:`\lambda^*` (mean form, the ``l2`` of the estimators).
    """
    n = check_positive("n", n)
    d = check_positive_int("n_params", n_params)
    C = check_positive("clip", clip)
    m = check_positive("mu", mu)
    delta = check_positive("sensitivity", sensitivity)
    d0 = (comparator_radius(n=n, loss_at_zero=loss_at_zero) if comparator is None
          else check_positive("comparator", comparator))
    return math.sqrt(d) * C * delta / (n * m * d0)


def released_ridge_strength(*, n: float, n_params: int, clip: float, mu: float,
                            comparator: float, mean_curvature: float,
                            sensitivity: float = 1.0) -> float:
    r"""The planned ridge when a release made before the run gives the rows' mean curvature
    :math:`\bar h` and a comparator radius :math:`D_0` (``DPLinearRegression``'s private
    scales, :class:`~noisygd.solvers.base.ReleasedFacts`):

    .. math:: \lambda = \frac{2\,d\,C^2\Delta^2}{\mu^2 n^2 D_0^2\,\bar h}.

    **Derivation** (the quadratic model of :func:`ridge_strength`, isotropic: :math:`H = \bar
    hI`, a comparator with :math:`\lVert w\rVert = D_0`, the run converged and its
    averaged iterate's noise that of the whole budget, :math:`N(0, v I)` on the mean gradient
    with :math:`v = C^2\Delta^2/(\mu^2n^2)`). The ridge's bias costs :math:`\frac{\bar h}{2}
    \frac{\lambda^2D_0^2}{(\bar h + \lambda)^2}` and the noise :math:`\frac{d\,\bar h\,v}
    {(\bar h + \lambda)^2}` in excess risk; their sum :math:`\bar h\,(\lambda^2D_0^2/2 +
    dv)/(\bar h + \lambda)^2` is least at :math:`\lambda = 2dv/(D_0^2\bar h)` above (its
    derivative vanishes where :math:`\lambda\bar hD_0^2/2 = dv`): the Bayes ridge of a
    Gaussian prior of variance :math:`D_0^2/d` per coordinate. :func:`ridge_strength`
    is the same balance, up to a factor :math:`\sqrt2`, at the curvature
    :math:`\bar h = \lambda` of its worst direction.
    **Status: a heuristic balance**, like :func:`ridge_strength`: the isotropic model and
    :math:`D_0` are assumptions about the rows, not facts, and no theorem covers the run.
    """
    n = check_positive("n", n)
    d = check_positive_int("n_params", n_params)
    C = check_positive("clip", clip)
    m = check_positive("mu", mu)
    delta = check_positive("sensitivity", sensitivity)
    d0 = check_positive("comparator", comparator)
    h = check_positive("mean_curvature", mean_curvature)
    return 2.0 * d * (C * delta) ** 2 / ((m * n * d0) ** 2 * h)


def ridge_horizon_steps(*, smoothness: float, strong_convexity: float,
                        planned_steps: int, momentum: float = 0.0,
                        step_budget: int | None = MAX_STEPS_ACCELERATED) -> int:
    r"""Steps of a run that reaches the horizon its ridge was planned for (``"horizon": "ridge"``).

    .. math::  T_h = \min\big(T_{\max},\ \max(T_{\rm plan},\
               \lceil(1 - m)\kappa\rceil)\big), \qquad \kappa = \beta_F/\lambda,

    with :math:`\beta_F` the smoothness of the regularised mean objective (``smoothness``,
    the ridge included), :math:`\lambda` its strong convexity (``strong_convexity``),
    :math:`T_{\rm plan}` the accelerated plan's ``T`` (``planned_steps``) and ``m`` the
    plan's momentum.

    **Why.** :func:`ridge_strength` chooses :math:`\lambda^*` by balancing the ridge's
    bias with the stationary noise of *plain* NoisyGD (step :math:`1/\beta_F`, no momentum)
    at the horizon :math:`\kappa = \beta_F/\lambda`, the number of steps after which the
    noiseless part has contracted by :math:`(1 - 1/\kappa)^\kappa \le e^{-1}` (its step 2);
    the noise it charges, :math:`dC^2\Delta^2/(2\lambda n^2\mu^2)`, is that of
    :math:`T = \kappa` steps (:math:`\sigma^2 = TC^2\Delta^2/\mu^2`). A run with the
    planned ridge is therefore the theorem's run only with :math:`T \approx \kappa` plain
    steps; with fewer it stops before forgetting its start (optimisation-limited), which is
    what the accelerated :math:`T^*` (:func:`accelerated_t_star`, proved for a fast gradient
    method) gives when the public noise ratio turns momentum off (:func:`auto_momentum`).
    With a constant momentum ``m`` (heavy ball or Nesterov, step :math:`\eta`) the
    low-curvature directions (:math:`\eta h \ll 1 - m`) contract like plain steps of size
    :math:`\eta/(1 - m)` and their stationary variance is :math:`1/(1 - m)` times plain
    NoisyGD's, so :math:`(1 - m)\kappa` momentum steps carry the same bias and, with
    :math:`\sigma^2 \propto T`, the same noise term as :math:`\kappa` plain ones: the
    theorem's balance holds at :math:`T = (1 - m)\kappa`. The plan with this horizon runs
    :math:`T_h` steps at the plan's momentum and releases the suffix average of the last half
    (tail averaging of the stationary phase, module doc). :math:`T_{\max}` =
    :data:`MAX_STEPS_ACCELERATED` caps the compute as elsewhere.

    Parameters
    ----------
    smoothness : float
        :math:`\beta_F > 0`.
    strong_convexity : float
        :math:`\lambda > 0`.
    planned_steps : int
        :math:`T_{\rm plan} \ge 1`.
    momentum : float, default=0.0
        ``m`` in ``[0, 1)``.
    step_budget : int or None, default=:data:`MAX_STEPS_ACCELERATED`
        :math:`T_{\max}`, the compute budget (module doc, "The compute budget"); None: no
        budget, the horizon the theorem wants (up to :data:`MAX_STEPS_LIMIT`).

    Returns
    -------
    int
    """
    beta = check_positive("smoothness", smoothness)
    lam = check_positive("strong_convexity", strong_convexity)
    t = check_positive_int("planned_steps", planned_steps)
    m = check_real("momentum", momentum)
    if not 0.0 <= m < 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    cap = MAX_STEPS_LIMIT if step_budget is None else check_positive_int("step_budget",
                                                                        step_budget)
    kappa = (1.0 - m) * beta / lam
    t_h = cap if not math.isfinite(kappa) or kappa >= cap else math.ceil(kappa)
    return int(min(cap, max(t, t_h)))


def accelerated_steps(t_star: float, step_budget: int = MAX_STEPS_ACCELERATED
                      ) -> tuple[int, bool]:
    r"""``(T, averaged)`` of the accelerated plan for the bound's minimiser ``t_star``.

    :math:`T = \min(T_{\max}, \max(T_{\min}, 2\lceil T^*\rceil))`, :math:`T_{\max}` the
    compute budget ``step_budget`` (default :data:`MAX_STEPS_ACCELERATED`; module doc,
    "The compute budget"); ``averaged`` is True when the theory's ``T`` is used
    (:math:`2\lceil T^*\rceil > T_{\min}`): the second half of the run is then the
    stationary phase and the plan releases its average (module doc). ``t_star = inf``
    (:func:`accelerated_t_star` beyond the float range) gives :math:`T_{\max}`.
    """
    cap = check_positive_int("step_budget", step_budget)
    if check_real("t_star", t_star) == math.inf:
        return cap, True
    t = check_positive("t_star", t_star)
    twice = 2 * math.ceil(t)
    return (int(min(cap, max(min(MIN_STEPS_ACCELERATED, cap), twice))),
            twice > MIN_STEPS_ACCELERATED)


def unconstrained_steps(t_star: float) -> float:
    r"""The step count the accelerated rule wants before the compute budget:
    :math:`\max(T_{\min}, 2\lceil T^*\rceil)` (``inf`` for an infinite :math:`T^*`)."""
    if check_real("t_star", t_star) == math.inf:
        return math.inf
    return float(max(MIN_STEPS_ACCELERATED, 2 * math.ceil(check_positive("t_star", t_star))))


def _candidates(c: ObjectiveConstants, **public: Any) -> dict[str, dict[str, Any]]:
    """Bounds (sum form) as arrays over ``T`` for every section whose assumptions hold
    (:func:`_candidate_bounds`, keyword arguments as there).

    Out-of-range constants give ``inf`` or ``nan`` entries (no exception, no warning):
    :func:`plan_noisy_gd` keeps the finite ones.
    """
    with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
        return _candidate_bounds(c, **public)


def _sq(x: float) -> float:
    """``x**2``, ``inf`` instead of OverflowError."""
    try:
        return x**2
    except OverflowError:
        return math.inf


def _candidate_bounds(
    c: ObjectiveConstants,
    *,
    n: float,
    d: int,
    sens_l: float,
    mu: float,
    T: np.ndarray,
    D: float,
    radius: float | None,
    loss_gap: float | None,
) -> dict[str, dict[str, Any]]:
    sigma2 = T * _sq(sens_l) / _sq(mu)  # sigma^2 = T L^2 / (2 rho), rho = mu^2 / 2
    lam = c.strong_convexity
    out: dict[str, dict[str, Any]] = {}
    if c.smoothness is not None:
        beta_f = c.smoothness + lam
        if c.convex:
            eta = np.minimum(1.0 / (n * beta_f), D / np.sqrt(d * sigma2 * T))
            out["12.2.2"] = {
                "bound": D**2 / (T * eta) + eta * d * sigma2,
                "eta": eta,
                "schedule": "constant",
                "averaging": "uniform",
                "closed_form_T": n * beta_f * D * (mu / math.sqrt(2)) / (sens_l * math.sqrt(d)),
            }
        elif loss_gap is not None:
            gap = n * loss_gap
            eta = np.minimum(1.0 / (n * beta_f), np.sqrt(2 * gap / (n * beta_f * d * sigma2 * T)))
            out["12.2.1"] = {
                "bound": 2 * gap / (T * eta) + eta * n * beta_f * d * sigma2,
                "eta": eta,
                "schedule": "constant",
                # the bound is on the mean of E||grad f(x_t)||^2 over t = 1..T, i.e. on
                # E||grad f(x_tau)||^2 for tau uniform on 1..T: release that iterate
                "averaging": "random",
                "per_n": n**2,  # ||grad F||^2 = ||grad f||^2 / n^2
            }
    if c.convex and c.lipschitz is not None and lam == 0:
        g2 = _sq(n * c.lipschitz) + d * sigma2
        out["12.2.3"] = {
            "bound": D * np.sqrt(g2) / np.sqrt(T),
            "eta": D / np.sqrt(T * g2),
            "schedule": "constant",
            "averaging": "uniform",
            "closed_form_T": n**2 * (mu**2 / 2) / d,
        }
    if c.convex and lam > 0 and c.lipschitz is not None and radius is not None:
        G = c.lipschitz + lam * radius
        out["12.2.4"] = {
            "bound": 4 * (_sq(n * G) + d * sigma2) / (n * lam * (T + 1)),
            "eta": None,
            "schedule": "inverse_t",
            "averaging": "weighted",
            "closed_form_T": n**2 * (mu**2 / 2) / lam,
        }
    return out


def _steps_grid(max_steps: int) -> np.ndarray:
    """The ``T`` at which the textbook bounds are evaluated (module doc): every ``T`` in
    ``1..max_steps`` up to :data:`EXACT_STEP_GRID`, else every ``T <= 1024``, 4096
    geometrically spaced ``T`` and ``max_steps`` (at most 5121 values)."""
    if max_steps <= EXACT_STEP_GRID:
        return np.arange(1, max_steps + 1, dtype=float)
    grid = np.concatenate([np.arange(1.0, 1025.0),
                           np.round(np.geomspace(1.0, float(max_steps), 4096)),
                           [float(max_steps)]])
    return np.unique(grid)


def _step_n(n_samples: float, n_step: float | None) -> float:
    """The ``n`` of the step size: ``n_step`` (at least ``n_samples``), else ``n_samples``."""
    n = check_positive("n_samples", n_samples)
    n_eta = n if n_step is None else check_positive("n_step", n_step)
    if n_eta < n:
        raise ValueError(f"n_step must be at least n_samples, got {n_step!r} < {n_samples!r}")
    return n_eta


def _checked_max_steps(max_steps: int | None) -> int:
    """``max_steps`` (default :data:`DEFAULT_MAX_STEPS`), at most :data:`MAX_STEPS_LIMIT`."""
    steps = DEFAULT_MAX_STEPS if max_steps is None else check_positive_int("max_steps",
                                                                            max_steps)
    if steps > MAX_STEPS_LIMIT:
        raise ValueError(
            f"max_steps (an estimator's max_iter) must be at most {MAX_STEPS_LIMIT:,}: every "
            f"NoisyGD step is a full pass over the data; got {steps:,}")
    return steps


def _clip_of(clip: float | None, constants: ObjectiveConstants) -> float:
    """The clipping norm: ``clip``, else the declared Lipschitz constant."""
    if clip is None:
        if constants.lipschitz is None:
            raise AssumptionError("the objective states no Lipschitz constant: give clip=")
        clip = constants.lipschitz
    return check_positive("clip", clip)


def _initial_distance(init_distance: float | None, radius: float | None) -> tuple[float, str]:
    r"""``(D, source)``: the planner's :math:`D \ge \lVert x_1 - x^*\rVert` and where it
    comes from: the given ``init_distance``, else the projection ``radius`` (:math:`x_1 = 0`
    lies in the ball), else the nominal :data:`DEFAULT_INIT_DISTANCE` (the bound is then
    conditional on :math:`\lVert x^*\rVert \le 1`)."""
    if init_distance is not None:
        return check_positive("init_distance", init_distance), "given"
    if radius is not None:
        return radius, "radius"
    return DEFAULT_INIT_DISTANCE, "nominal default 1.0 (bound assumes ||x*|| <= 1)"


def _checked_momentum(momentum: float | None) -> float | None:
    """``momentum`` in ``[0, 1)``, or None (chosen by :func:`auto_momentum`)."""
    if momentum is None:
        return None
    m = check_real("momentum", momentum)
    if not 0.0 <= m < 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    return m


def _plan_mu(epsilon: float, delta: float, mu: float | None) -> float:
    """The run's Gaussian-DP :math:`\\mu`: the given one, else ``calibrate_mu(eps, delta)``."""
    if mu is not None:
        return check_positive("mu", mu)
    from noisygd.accounting.calibration import calibrate_mu

    return calibrate_mu(epsilon, delta)


def _best_candidate(cands: dict[str, dict[str, Any]], n: float, T: np.ndarray,
                    constants: ObjectiveConstants, clip: float
                    ) -> tuple[str, int, float, dict[str, dict[str, float]]]:
    """``(section, index of T, bound, summary)``: the textbook candidate with the smallest
    finite bound (per ``n``) over the grid ``T``; ``ValueError`` when none is finite."""
    if not cands:
        raise AssumptionError(
            f"no section-12.2 bound applies to regime {constants.regime.value} with these "
            "constants (need smoothness, or a Lipschitz constant, or loss_gap for nonconvex "
            "losses, or a radius for 12.2.4)")
    best_name, best_t, best_val = None, 0, math.inf
    summary: dict[str, dict[str, float]] = {}
    for name, cand in cands.items():
        vals = np.asarray(cand["bound"] / cand.get("per_n", n))
        vals = np.where(np.isfinite(vals), vals, np.inf)  # out of float range: not a bound
        i = int(np.argmin(vals))
        summary[name] = {"steps": int(T[i]), "bound": float(vals[i])}
        if "closed_form_T" in cand:
            summary[name]["closed_form_T"] = float(cand["closed_form_T"])
        if vals[i] < best_val:
            best_name, best_t, best_val = name, i, float(vals[i])
    if best_name is None:
        raise ValueError(
            "the public constants are out of floating-point range for NoisyGD's planner: no "
            f"section-12.2 bound is finite with clip={clip:.3g} (the clipping norm: an "
            "estimator's clip, or the Lipschitz constant its row_norm_bound gives), "
            f"smoothness={constants.smoothness!r}, strong convexity (the l2 penalty) "
            f"l2={constants.strong_convexity:.3g}; rescale the features and choose "
            "row_norm_bound, clip and l2 within about 1e-100 .. 1e100")
    return best_name, best_t, best_val, summary


def _compute_budget(step_budget: int | None) -> int:
    """The accelerated plan's :math:`T_{\\max}` (module doc, "The compute budget")."""
    budget = (MAX_STEPS_ACCELERATED if step_budget is None
              else check_positive_int("step_budget", step_budget))
    if budget > MAX_STEPS_LIMIT:
        raise ValueError(f"step_budget must be at most {MAX_STEPS_LIMIT:,}, got {budget:,}")
    return budget


def _accelerated_plan(constants: ObjectiveConstants, bounds: dict[str, Any], *, n_eta: float,
                      sens: float, C: float, fixed_steps: int | None,
                      step_budget: int | None, momentum: float | None,
                      quadratic: bool) -> dict[str, Any]:
    """The accelerated run (module doc, "T in the accelerated plan"): its steps, noise,
    step size, momentum, averaging and the ``details`` it records."""
    beta = constants.smoothness
    if beta is None:
        raise AssumptionError("accelerate=True needs a smoothness constant "
                              "(use accelerate=False for Lipschitz-only objectives)")
    beta_f = beta + constants.strong_convexity
    n, d, mu = bounds["n"], bounds["d"], bounds["mu"]
    t_star = accelerated_t_star(n=n, smoothness=beta_f, init_distance=bounds["D"], mu=mu,
                                n_params=d, clip=C, sensitivity=sens)
    budget = _compute_budget(step_budget)
    if fixed_steps is not None:
        steps, averaged = fixed_steps, False
    else:
        steps, averaged = accelerated_steps(t_star, budget)
    z = math.sqrt(steps) * sens / mu
    noise_to_signal = noise_to_signal_ratio(d, z, n)
    if momentum is None:
        momentum = auto_momentum(noise_to_signal)
    details: dict[str, Any] = {"accelerated_T": t_star, "noise_to_signal": noise_to_signal}
    if fixed_steps is None:
        wanted = unconstrained_steps(t_star)
        details.update(compute_budget=budget, unconstrained_steps=wanted,
                       compute_budget_binds=bool(wanted > budget))
    details["steps_rule"] = ("fixed by max_steps" if fixed_steps is not None else
                             "min(T_max, max(T_min, 2 ceil(T*))), suffix average when "
                             "2 ceil(T*) > T_min")
    details["note"] = ("Nesterov momentum is post-processing (privacy unchanged) but the "
                       "12.2 bound is proved for plain NoisyGD: bound_value is that of the "
                       "textbook run with the same noise and T, for reference")
    return {"steps": steps, "z": z, "eta": 1.0 / (n_eta * beta_f), "momentum": float(momentum),
            "averaging": "suffix" if (quadratic or averaged) else "last", "details": details}


def _reference_bound(constants: ObjectiveConstants, bounds: dict[str, Any], name: str,
                     steps: int) -> float:
    """Section ``name``'s bound (per ``n``) for plain NoisyGD with ``steps`` steps."""
    ref = _candidates(constants, T=np.array([float(steps)]), **bounds)[name]
    return float(ref["bound"][0] / ref.get("per_n", bounds["n"]))



def plan_noisy_gd(
    epsilon: float,
    delta: float,
    n_samples: float,
    n_params: int,
    constants: ObjectiveConstants,
    *,
    clip: float | None = None,
    relation: Neighbouring | str = Neighbouring.ADD_REMOVE,
    max_steps: int | None = None,
    init_distance: float | None = None,
    radius: float | None = None,
    loss_gap: float | None = None,
    accelerate: bool = True,
    momentum: float | None = None,
    mu: float | None = None,
    n_step: float | None = None,
    quadratic: bool = False,
    step_budget: int | None = None,
) -> NoisyGDPlan:
    r"""Choose ``(z, T, eta)`` for NoisyGD meeting ``(epsilon, delta)`` (see module doc).

    Parameters
    ----------
    epsilon, delta : float
        Privacy target of the NoisyGD run alone.
    n_samples : float
        Public (or privately estimated) number of rows ``n``.
    n_params : int
        Dimension ``d`` of ``theta`` (the noise has ``d`` coordinates).
    constants : ObjectiveConstants
        From ``objective.constants(B)``; they fix the regime.
    clip : float or None
        Clipping norm ``C``; default the Lipschitz constant ``L``. If
        ``clip < L`` the bounds are for the clipped objective, and
        ``details["clip_covers_lipschitz"]`` is False.
    relation : Neighbouring
        Add/remove (sensitivity ``C``) or replace-one (``2C``):
        :attr:`~noisygd.accounting.events.Neighbouring.clipped_sum_sensitivity`.
    max_steps : int or None, default=None
        Textbook plan: a cap, the largest ``T`` considered (default :data:`DEFAULT_MAX_STEPS`
        = 100; the bounds flatten out beyond the notes' closed-form ``T``). Accelerated
        plan: ``None`` takes :math:`T = \min(T_{\max}, \max(T_{\min}, 2\lceil T^*\rceil))`
        with :math:`T^*` the minimiser of the accelerated bound (:func:`accelerated_steps`,
        module doc); an integer is the step count, ``T = max_steps``. At most
        :data:`MAX_STEPS_LIMIT` (:math:`10^7`).
    init_distance : float or None
        ``D >= ||x_1 - x*||``. Default: ``radius`` if given (``x_1 = 0`` lies in
        the ball), else ``1.0`` -- a nominal public default; the bound is then
        conditional on ``||x*|| <= 1``, recorded in ``details``. For a strongly
        convex GLM pass ``objective.optimum_norm_bound()``.
    radius : float or None
        Projection radius of the objective (needed by 12.2.4).
    loss_gap : float or None
        Public bound on ``F(x_1) - F*`` (needed by 12.2.1 for nonconvex losses).
    accelerate : bool, default=True
        Use Nesterov momentum, ``T`` from the accelerated bound and the last iterate or the
        suffix average (see module doc); the bound then does not cover the run.
    momentum : float or None, default=None
        Momentum used when ``accelerate``. ``None`` chooses it from the public
        noise-to-signal ratio ``r = sqrt(p) z / n`` (noise norm of one step on
        the mean gradient, in units of the clipping norm): :data:`DEFAULT_MOMENTUM`
        when ``r <= 0.02``, none when ``r >= 0.2``, log-linear in between.
        Momentum averages gradients but also accumulates noise, which only
        pays when the signal dominates (large n).
    mu : float or None
        The Gaussian-DP parameter of the run when the caller has it already (a split
        budget, :class:`noisygd.solvers.Budget`); default ``calibrate_mu(epsilon, delta)``.
        ``epsilon`` must then be the GDP epsilon of ``mu`` at ``delta`` (it is recorded).
    n_step : float or None
        The ``n`` the step size is planned with (default ``n_samples``). With a private
        count, ``n_samples`` is its lower confidence bound and ``n_step`` its upper one
        (:func:`noisygd.training.count_confidence_bounds`): the sum-form step
        :math:`1/(n\beta_F)` must respect the curvature :math:`n\beta_F` of the true ``n``,
        so it uses the upper bound, and the run is given ``n_step`` as its ``n_samples``
        (regulariser :math:`n_{\rm step}\lambda`, which keeps the step stable).

    quadratic : bool, default=False
        Whether the loss is quadratic with a data-independent Hessian (least squares).
        The accelerated plan then releases the suffix (tail) average of the iterates
        instead of the last one (module doc).
    step_budget : int or None, default=None
        The accelerated plan's compute budget :math:`T_{\max}`, in steps (each a pass over
        the data); None: :data:`MAX_STEPS_ACCELERATED` = 1000. ``details`` records it, the
        step count the rule wanted without it (``unconstrained_steps``) and whether it binds
        (``compute_budget_binds``; module doc, "The compute budget").

    Returns
    -------
    NoisyGDPlan

    Raises
    ------
    AssumptionError
        If no section-12.2 bound applies (e.g. nonconvex without smoothness or
        ``loss_gap``, or no Lipschitz constant and no ``clip``).
    ValueError
        For ``max_steps`` above :data:`MAX_STEPS_LIMIT`, and when every applicable bound
        leaves the floating-point range (extreme ``clip`` / ``row_norm_bound`` / ``l2``;
        module doc).
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    n = check_positive("n_samples", n_samples)
    n_eta = _step_n(n_samples, n_step)
    d = check_positive_int("n_params", n_params)
    if not isinstance(constants, ObjectiveConstants):
        raise TypeError(f"constants must be ObjectiveConstants, got {type(constants).__name__}")
    fixed_steps = max_steps is not None
    max_steps = _checked_max_steps(max_steps)
    accelerate = check_bool("accelerate", accelerate)
    rel = Neighbouring(relation)
    sens = rel.clipped_sum_sensitivity
    C = _clip_of(clip, constants)
    radius = None if radius is None else check_positive("radius", radius)
    D, d_source = _initial_distance(init_distance, radius)
    momentum = _checked_momentum(momentum)
    loss_gap = None if loss_gap is None else check_positive("loss_gap", loss_gap)
    mu = _plan_mu(eps, dlt, mu)
    T = _steps_grid(max_steps)
    # The bounds are stated for the (clipped) sum gradient with sensitivity L; with
    # clipping at C the per-step sensitivity is sens * C.
    bounds = {"n": n, "d": d, "sens_l": sens * C, "mu": mu, "D": D, "radius": radius,
              "loss_gap": loss_gap}
    cands = _candidates(constants, T=T, **bounds)
    best_name, best_t, best_val, summary = _best_candidate(cands, n, T, constants, C)
    chosen = cands[best_name]
    steps = int(T[best_t])
    z = math.sqrt(steps) * sens / mu
    eta = None if chosen["eta"] is None else float(chosen["eta"][best_t])
    if eta is not None and constants.smoothness is not None:
        # never above the textbook 1/(n beta_F) for the largest plausible n (module doc)
        eta = min(eta, 1.0 / (n_eta * (constants.smoothness + constants.strong_convexity)))
    schedule, averaging, mom = chosen["schedule"], chosen["averaging"], 0.0
    clip_covers = constants.lipschitz is not None and C >= constants.lipschitz
    # The textbook bound covers the run when the run is the textbook one and clipping never
    # changes a gradient (otherwise the run descends the clipped field, not F).
    covers = clip_covers
    details = {
        "epsilon": eps, "delta": dlt, "rho": mu**2 / 2, "sensitivity": sens, "clip": C,
        "sigma": z * C, "n_signal": n, "n_step": n_eta, "init_distance": D,
        "init_distance_source": d_source, "candidates": summary,
        "bound_covers_run": covers, "clip_covers_lipschitz": clip_covers,
        "accelerate": bool(accelerate), "regime_section": _SECTION[constants.regime],
        "textbook": {"steps": steps, "learning_rate": (
            None if chosen["eta"] is None else float(chosen["eta"][best_t])),
            "schedule": schedule, "averaging": averaging},
    }
    if accelerate:
        acc = _accelerated_plan(constants, bounds, n_eta=n_eta, sens=sens, C=C,
                                fixed_steps=max_steps if fixed_steps else None,
                                step_budget=step_budget, momentum=momentum,
                                quadratic=quadratic)
        steps, z, eta, mom = acc["steps"], acc["z"], acc["eta"], acc["momentum"]
        schedule, averaging = "constant", acc["averaging"]
        details.update(acc["details"], bound_covers_run=False, sigma=z * C)
        # the reference bound: plain NoisyGD with the same (z, T) and textbook step
        best_val = _reference_bound(constants, bounds, best_name, steps)
    return NoisyGDPlan(
        noise_multiplier=z, steps=steps, learning_rate=eta, schedule=schedule,
        averaging=averaging, regime=constants.regime, bound_name=best_name,
        bound_value=best_val, mu=math.sqrt(steps) * sens / z, momentum=mom, details=details)
