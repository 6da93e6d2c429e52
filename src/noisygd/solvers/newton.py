r"""Private damped Newton: ``method="newton"`` (:mod:`noisygd.algorithms.newton`).

Plan (public facts only): :func:`noisygd.algorithms.newton.plan_newton` at the budget's
Gaussian-DP :math:`\mu` (``Budget.mu`` when the caller split a GDP budget between a count
and the run, else the exact :math:`\mu(\varepsilon, \delta)`, less a prior Gaussian
release's :math:`\mu` in quadrature), with

* the gradient clip ``C``: the user's ``clip``, else the declared Lipschitz constant;
* the curvature clip :math:`C_H`: ``method_options["curvature_clip"]``, else the declared
  per-example smoothness :math:`\beta` (for a loss of one margin
  :math:`\beta = \sup\phi''\,\tilde B^2`, exactly the Frobenius bound of a row's curvature
  term, so the clip never binds on rows in the declared domain);
* ``n``: the public row count, or the paid-for count's lower bound for the curvature
  budget rule and its upper bound for the sum-form ridge (as NoisyGD);
* a constant Hessian (least squares, ``PublicFacts.quadratic_loss``): one curvature
  release at step 0;
* the curvature released at step 0 and at the last approach step only
  (``hessian_every=0``; a refresh every other approach step is ``hessian_every=2``): two
  curvature passes instead of four in the default 10 steps, and half the curvature's
  :math:`\mu^2` left to the gradients. Measured (test AUC, seed 0, eps 8 unless said):
  bank 0.9049 -> 0.9050, at eps 2 0.8927 -> 0.9034; credit 0.7604 -> 0.7607; adult
  0.8993 -> 0.8991; ``_scale_problems.py``'s dense 1e5 and 1e6 problems at eps 1: the same
  training log loss to 1e-5. The logistic curvature is largest at the start
  (:math:`\phi''` peaks at margin 0), so the stale step-0 release overestimates it along
  the approach: shorter steps, never an overshoot;
* ``hessian``: ``"full"`` when :math:`p \le` :data:`MAX_FULL_PARAMS`, else ``"diagonal"``
  (a private diagonal preconditioner: the ``p x p`` matrix is neither stored nor
  decomposed), or the user's choice. The diagonal form
  (:mod:`noisygd.algorithms.newton`, "The diagonal preconditioner's steps") releases the
  curvature once, at :math:`\theta = 0`, with at most
  :data:`~noisygd.algorithms.newton.DEFAULT_DIAGONAL_MAX_SHARE` = 0.1 of :math:`\mu^2`;
  its step is :math:`1/m` with Nesterov momentum :math:`1 - 1/\sqrt m` over
  :math:`T = \lceil 6\sqrt m\rceil` steps, equal gradient noise and the last half averaged
  (``tail`` = ``ceil(T/2)``). :math:`m` is ``row_nonzeros`` when declared; otherwise, where the
  oracle serves the histogram of its rows' nonzeros (``PublicFacts.row_nonzero_counts``:
  :class:`~noisygd.oracles.array.ArrayOracle`), it is paid for
  (:mod:`noisygd.algorithms.newton`, "The paid row support": 0.01 of :math:`\mu^2`, ``T`` set
  after the release unless ``steps`` or ``max_iter`` fixes it); other oracles need the
  declaration. Measured on ``benchmarks/_scale_problems.py``'s CSR problem (1e6 x 1e4,
  eps 1): training log loss +0.0094 over scikit-learn in 20 steps (the former schedule, 20
  steps at step 1/m without momentum and half the budget on the curvature: +0.030; NoisyGD's
  1000 steps: +0.037), against a noise floor of +0.0083
  (``experiments/sparse_noise_floor.py``);
* the full form's Nesterov momentum (unless ``method_options["momentum"]`` sets it, and
  not for a constant Hessian): :func:`noisygd.planning.newton_momentum` of the plan's public
  noise-to-signal ratio :math:`q = \sqrt p\,z_0/n` (:func:`with_ruled_momentum`; ``z_0``
  the first step's gradient noise multiplier), :data:`~noisygd.planning.NEWTON_MOMENTUM`
  = 0.5 for an optimisation-limited plan down to 0 for a noise-limited one. The approach
  steps use the curvature released at step 0, which overestimates the logistic curvature
  near an optimum far from the start; momentum lengthens those steps at no extra pass and
  no privacy cost. A measured rule (docs/newton.md, "Momentum": on the raw UCI tables
  +0.004 to +0.006 of the non-private AUC gain on average, wine-good at epsilon 8 0.967 ->
  0.981; on the generated families -0.001 to -0.003).

The event is ``Composed`` of one Gaussian per release, exactly :math:`\mu`-GDP (the solver
is ``gaussian``: a count and the run share one budget by
:math:`\mu^2 = \mu_c^2 + \mu_{\rm run}^2`).

Options (``method_options``): ``steps`` (``T``, default
:data:`~noisygd.algorithms.newton.DEFAULT_STEPS`; ``max_iter`` caps it), ``tail``,
``hessian`` (``"auto"``, ``"full"``, ``"diagonal"``), ``eigenvalue_rule`` (``"clip"``,
``"add"``), ``curvature_clip``, ``failure_probability``, ``hessian_ratio``,
``hessian_max_share``, ``tail_share``, ``damping``, ``hessian_every``, ``row_nonzeros``,
``momentum``, ``nnz_share`` (:func:`~noisygd.algorithms.newton.plan_newton`), ``theta0``
(the run's start, :attr:`~noisygd.algorithms.newton.NewtonPlan.start`), NoisyGD's
``optimum_norm_bound`` and
``distance_pilot`` (accepted and unused: Newton's steps do not depend on the initial
distance, :mod:`noisygd.solvers.distance`), NoisyGD's ``horizon`` (accepted and unused:
Newton's steps are its own), and ``l2``: a ridge added to the
objective's for this run, a number or ``"auto"`` (times ``l2_factor``, default 1, as for
NoisyGD), :func:`noisygd.planning.ridge_strength`
at the :math:`\mu` of the tail's gradients (the output's error is
:math:`H_\lambda^{-1}\bar\xi` with :math:`\bar\xi` one release's noise at that
:math:`\mu`, so the excess risk is at most :math:`d\sigma^2/(2\lambda n^2)`: NoisyGD's
balance against the bias :math:`\lambda D_0^2/2`, with the same :math:`D_0`).

Secure mode (``Budget.secure``): discrete Gaussian noise on a rounding grid per release
and ``DiscreteGaussianNoise`` events; the plan is made at the largest :math:`\mu` whose
secure event is at most :math:`\rho`-zCDP (:func:`noisygd.solvers.base.plan_secure_gaussian`).

Losses: one margin with a stated self-concordance constant (logistic, least squares), and
the multinomial logistic loss of ``K`` margins (its curvature sums and constant:
:meth:`noisygd.oracles.array.ArrayOracle.clipped_curvature_sum`; the full form only, the
diagonal form's step rule being one margin's, refused from ``PublicFacts.margins``). Others
(Huber, a custom oracle without curvature sums) are refused before anything is recorded in a
privacy ledger or read (:meth:`NewtonSolver.check_oracle`, and :meth:`NewtonSolver.plan`
from ``PublicFacts.curvature_sums``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np

from noisygd._checks import check_positive, check_positive_int
from noisygd.accounting.events import Composed
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.newton import (
    DAMPINGS,
    DEFAULT_DIAGONAL_MAX_SHARE,
    DEFAULT_STEPS,
    EIGENVALUE_RULES,
    HESSIAN_FORMS,
    NewtonPlan,
    diagonal_steps,
    newton,
    plan_newton,
)
from noisygd.exceptions import AssumptionError
from noisygd.oracles.base import GradientOracle
from noisygd.planning import RIDGE_STATUS, newton_momentum, noise_to_signal_ratio
from noisygd.solvers.base import Budget, PublicFacts, Solver, plan_secure_gaussian
from noisygd.solvers.options import (
    OptionCheck,
    check_choice_option,
    check_count_option,
    check_fraction_option,
    check_horizon_option,
    check_l2_option,
    check_momentum_option,
    check_open_share_option,
    check_pilot_option,
    check_positive_int_option,
    check_positive_option,
    check_probability_option,
    check_sharp_option,
    check_start_option,
    optional,
)
from noisygd.solvers.ridge import planned_ridge
from noisygd.solvers.ssp import SSPSolver

__all__ = ["DEFAULT_DIAGONAL_STEPS", "MAX_FULL_PARAMS", "NewtonSolver", "with_ruled_momentum"]

#: ``hessian="auto"`` releases the full ``p x p`` curvature up to this many parameters.
MAX_FULL_PARAMS = 1000
#: Steps of the diagonal preconditioner by default (its steps are majorisation steps).
DEFAULT_DIAGONAL_STEPS = 20

_NO_CURVATURE = ("method 'newton' needs an oracle with curvature sums and a stated "
                 "self-concordance constant; this loss has none (supported: logistic and "
                 "least squares of one margin, and the multinomial logistic loss)")

_OPTIONS = ("steps", "tail", "hessian", "eigenvalue_rule", "curvature_clip",
            "failure_probability", "hessian_ratio", "hessian_max_share", "tail_share",
            "damping", "hessian_every", "l2", "l2_factor", "row_nonzeros", "horizon",
            "optimum_norm_bound", "distance_pilot", "momentum", "nnz_share", "theta0",
            "sharp_clip")


def with_ruled_momentum(plan: NewtonPlan, n_samples: float) -> NewtonPlan:
    r"""``plan`` with the Nesterov momentum of :func:`noisygd.planning.newton_momentum` at its
    public noise-to-signal ratio :math:`q = \sqrt p\,z_0/n` (:math:`z_0` the first step's
    gradient noise multiplier, ``n_samples`` the planned rows: the paid count's lower bound
    under add/remove), both recorded in ``details``; post-processing of public values only."""
    q = noise_to_signal_ratio(plan.n_params, plan.gradient_noise[0],
                              check_positive("n_samples", n_samples))
    momentum = newton_momentum(q)
    details = {**plan.details, "noise_to_signal": q,
               "momentum_rule": "newton_momentum(q), q = sqrt(p) z_0 / n: "
                                f"{momentum:.3g}"}
    return dataclasses.replace(plan, momentum=momentum, details=details)


class NewtonSolver(Solver):
    """Private damped Newton with exact Gaussian-DP accounting (module doc)."""

    name = "newton"
    description = ("private damped Newton: noisy clipped gradient and noisy curvature sum "
                   "per step, eigenvalue floor from the noise, exact Gaussian-DP accounting")
    gaussian = True
    secure_mode = True
    #: The estimators' ``l2=None`` is the planned ridge (``{"l2": "auto"}``), as for NoisyGD.
    plans_ridge = True
    #: The losses whose sharp clip this solver takes (``method_options["sharp_clip"]``: the
    #: clip after the first step, :mod:`noisygd.algorithms.newton`): the ones it was measured
    #: on (docs/newton.md, "The sharp clip after the first step").
    sharp_clip_losses: ClassVar[tuple[str, ...]] = ("logistic", "squared")
    option_names: ClassVar[frozenset[str] | None] = frozenset(_OPTIONS)
    option_checks: ClassVar[dict[str, OptionCheck]] = {
        "steps": check_positive_int_option, "tail": optional(check_positive_int_option),
        "hessian": check_choice_option("auto", *HESSIAN_FORMS),
        "eigenvalue_rule": check_choice_option(*EIGENVALUE_RULES),
        "curvature_clip": optional(check_positive_option),
        "failure_probability": check_probability_option,
        "hessian_ratio": check_positive_option, "hessian_max_share": check_open_share_option,
        "tail_share": check_fraction_option, "damping": check_choice_option(*DAMPINGS),
        "hessian_every": check_count_option, "l2": optional(check_l2_option),
        "l2_factor": optional(check_positive_option),
        "row_nonzeros": optional(check_positive_int_option), "horizon": check_horizon_option,
        "optimum_norm_bound": optional(check_positive_option),
        "distance_pilot": check_pilot_option, "momentum": check_momentum_option,
        "nnz_share": check_open_share_option, "theta0": check_start_option,
        "sharp_clip": check_sharp_option}

    def plan(self, facts: PublicFacts, budget: Budget) -> NewtonPlan:
        """The releases and their noise from public facts (no data)."""
        self.check_options(facts.options)
        if facts.curvature_sums is False:
            raise TypeError(_NO_CURVATURE)
        opts = dict(facts.options)
        opts.pop("horizon", None)  # NoisyGD's ridge horizon: Newton's steps are its own
        # NoisyGD's distance options (noisygd.solvers.distance): Newton's steps do not
        # depend on the initial distance
        opts.pop("optimum_norm_bound", None)
        opts.pop("distance_pilot", None)
        start = opts.pop("theta0", None)
        # the sharp clip after the first step (module doc); not in secure mode, whose
        # rounding is priced at the planned clip
        sharp = opts.pop("sharp_clip", None)
        if budget.secure:
            sharp = None
        beta = facts.constants.smoothness
        curvature_clip = opts.pop("curvature_clip", None)
        if curvature_clip is None:
            if beta is None or not beta > 0:
                raise AssumptionError("method 'newton' needs the declared per-example "
                                      "smoothness (the curvature terms' bound) or "
                                      "method_options['curvature_clip']")
            curvature_clip = float(beta)
        hessian = opts.pop("hessian", "auto")
        if hessian == "auto":
            hessian = "full" if facts.n_params <= MAX_FULL_PARAMS else "diagonal"
        # the curvature at step 0 and at the last approach step only (module doc)
        opts.setdefault("hessian_every", 0)
        fixed_steps = "steps" in opts or facts.max_iter is not None
        if hessian == "diagonal" and facts.margins > 1:
            raise ValueError(
                f"the diagonal preconditioner's step rule (1/m, m the rows' support) is proven "
                f"for a loss of one margin, not for {facts.margins} margins; with "
                f"{facts.n_params:,} parameters (more than {MAX_FULL_PARAMS:,} for the full "
                "curvature) use method='noisy_gd', or multiclass='ovr' (one binary problem "
                "per class)")
        if hessian == "diagonal":
            m = opts.get("row_nonzeros")
            if m is None and facts.row_nonzero_counts is not True:
                raise ValueError(
                    "the diagonal preconditioner needs method_options['row_nonzeros'] (a "
                    "public bound on the nonzero coordinates per row, intercept column "
                    "included) with this oracle, which serves no row-support histogram for "
                    "the paid bound; without one use method='noisy_gd'")
            default_steps = (DEFAULT_DIAGONAL_STEPS if m is None
                             else diagonal_steps(check_positive_int("row_nonzeros", m)))
        else:
            default_steps = DEFAULT_STEPS
        steps = int(opts.pop("steps", default_steps))
        if facts.max_iter is not None:
            steps = min(steps, int(facts.max_iter))
        if hessian == "diagonal":  # module doc: the diagonal form's defaults
            opts.setdefault("hessian_max_share", DEFAULT_DIAGONAL_MAX_SHARE)
            opts.setdefault("tail", math.ceil(steps / 2))
            opts.setdefault("tail_share", min(1.0, opts["tail"] / steps))
            if opts.get("row_nonzeros") is None:
                opts["adaptive_steps"] = not fixed_steps
        clip = facts.clip_norm()
        l2, l2_factor = opts.pop("l2", None), opts.pop("l2_factor", None)
        constant_hessian = facts.quadratic_loss or facts.quadratic_constant_hessian
        # the momentum rule answers a stale curvature: not for a constant Hessian (module doc)
        ruled_momentum = hessian == "full" and "momentum" not in opts and not constant_hessian

        def plan_at(mu: float) -> NewtonPlan:
            plan = plan_newton(
                mu, relation=facts.relation, n_params=facts.n_params,
                n_samples=facts.n_samples, n_step=facts.n_step(), clip=clip,
                curvature_clip=curvature_clip, steps=steps, hessian=hessian,
                constant_hessian=constant_hessian, secure=budget.secure, **opts)
            if ruled_momentum:  # module doc: the momentum from the plan's noise regime
                plan = with_ruled_momentum(plan, facts.n_samples)
            # NoisyGD's planned ridge (and its l2_factor), at the tail's mu (module doc)
            ridge = planned_ridge(facts, budget, plan.tail_mu(), l2, l2_factor)
            if start is not None:
                plan = dataclasses.replace(plan, start=np.asarray(start, dtype=np.float64))
            if sharp is not None:
                plan = dataclasses.replace(plan, sharp=float(sharp))
            return dataclasses.replace(plan, ridge=ridge) if ridge else plan

        if budget.secure:
            return plan_secure_gaussian(plan_at, self.planned_event, budget.secure_rho())
        return plan_at(self._mu(budget))

    #: The run's :math:`\mu` (``Budget.mu``, else the exact GDP :math:`\mu` less a prior
    #: Gaussian release's in quadrature): AdaSSP's rule, shared.
    _mu = staticmethod(SSPSolver._mu)

    def check_oracle(self, oracle: GradientOracle) -> None:
        """Refuse an oracle without curvature sums and a self-concordance constant (a loss
        this method does not support) before anything is recorded or read."""
        if oracle.self_concordance() is None:
            raise TypeError(_NO_CURVATURE + f" ({type(oracle).__name__})")

    def planned_event(self, plan: NewtonPlan) -> Composed:
        """``plan.event``: one Gaussian per release, fixed by the plan."""
        return plan.event

    def run(self, plan: NewtonPlan, oracle: GradientOracle,
            rng: np.random.Generator) -> FitResult:
        """:func:`~noisygd.algorithms.newton.newton` with the planned releases (a planned
        ridge labelled :data:`~noisygd.planning.RIDGE_STATUS`: a heuristic balance)."""
        result = newton(oracle, plan, rng)
        if plan.ridge:
            result.info["plan"]["l2_planned_status"] = RIDGE_STATUS
        return result
