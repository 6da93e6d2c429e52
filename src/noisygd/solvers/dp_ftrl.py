r"""DP-FTRL with the binary-tree mechanism (slides 001): ``method="dp_ftrl"``.

Privacy. The run is a tree release (:class:`~noisygd.accounting.tree.TreeAggregation`),
a Gaussian mechanism whose Gaussian-DP parameter scales as :math:`1/z`, so the noise
multiplier meeting the budget's :math:`\mu` is :math:`z = \mu(z{=}1)/\mu` (exact). The
solver is ``gaussian``. Under replace-one neighbours rows are streamed in their order
(``n`` public, :math:`\Delta = 2` per leaf). Under add/remove neighbours (the default of the
estimators) every row is assigned to one of the ``T_e = ceil(n / b)`` leaves of each epoch
independently and uniformly at random (``n`` the public count's lower bound): adding a row
changes one leaf per epoch by at most ``C`` and, by the mixture argument of
:class:`~noisygd.accounting.events.TreeAggregation` (the adaptive tree mechanism of Kairouz
et al. 2021, Appendix D, and the joint convexity of the hockey-stick divergence), the tree is
:math:`\mu`-GDP with :math:`\Delta = 1`. The tree is restarted every epoch (the default);
the objective's L2 term is linearised with the public expected leaf size ``n / T_e``.

The FTRL strength :math:`\lambda` (``l2_ftrl``) follows from the regret bound of the
slides ("Analyzing convergence via regret" and its proof), written for this run:
``T_e = ceil(n / b)`` steps per epoch, ``E`` epochs, ``T = E T_e`` steps, linear losses
:math:`g_t = \sum_{x\in B_t}\mathrm{clip}_C\nabla\ell(w_t; x)` with
:math:`\lVert g_t\rVert \le bG`, :math:`G = C` (plus :math:`\mu R` for the objective's
linearised L2 term on a ball of radius ``R``), and :math:`D \ge \lVert w^* - w_1\rVert`.
The potential argument of the slides gives
:math:`\sum_t\langle g_t, w'_t - w^*\rangle \le \frac\lambda2 D^2 + \frac{1}{2\lambda}
\sum_t\lVert g_t\rVert^2` for the noiseless iterates :math:`w'_t`, and the noise term
:math:`\sum_t\langle g_t, w_t - w'_t\rangle \le \sum_t\lVert g_t\rVert\lVert Z_t\rVert/\lambda`
(the projection is 1-Lipschitz), with :math:`Z_t` the tree's error in the prefix sum. Each
prefix sum adds at most ``k`` nodes of :math:`\mathcal N(0, (zC)^2 I_p)`:
:math:`k = \lfloor\log_2 T\rfloor + 1` for one tree, :math:`k = E(\lfloor\log_2 T_e\rfloor + 1)`
with a restart per epoch (the previous trees' last releases are carried); the Honaker
estimator has no larger variance, so :math:`E\lVert Z_t\rVert \le \bar Z = zC\sqrt{pk}`.
Per gradient term (divide by the ``E n`` terms; with :math:`|B_t| \le b`,
:math:`\sum_t\lVert g_t\rVert^2 \le bEnG^2` and :math:`\sum_t\lVert g_t\rVert\lVert Z_t\rVert
\le bG\sum_t\lVert Z_t\rVert`, and ``T b`` exceeds ``E n`` when ``b`` does not divide ``n``),
the expected average regret is at most

.. math::

    R(\lambda) = \frac{D^2}{2En}\,\lambda + \Big(\frac{bG^2}{2}
    + \frac{Tb}{En}G\bar Z\Big)\frac1\lambda,
    \qquad \lambda^* = \sqrt{B/A},\qquad R(\lambda^*) = 2\sqrt{AB}

with :math:`A` and :math:`B` the coefficients of :math:`\lambda` and :math:`1/\lambda`.

Every quantity is public: ``n``, ``b``, ``E``, ``p``, ``C``, ``z`` (from the budget) and
``D``: ``method_options={"optimum_norm_bound": D}`` when given, else the smaller of the
objective's ``optimum_norm_bound()`` (e.g. :math:`\sqrt{2F(0)/\mu}` for a regularised GLM, else
its radius) and the planned ridge's radius :math:`\sqrt{2F_0/\lambda_r}`
(:func:`ridge_distance`, ``distance_source`` ``"planned ridge"``; not with a radius or without
:math:`F_0`).

The planned ridge's radius. The bound holds against every comparator of norm at most ``D``,
whatever ``D``; the choice of ``D`` only says which comparators the run competes with, and sets
:math:`\lambda^*`. With the objective's own :math:`\sqrt{2F(0)/\mu}` at the estimators' public
constant :math:`\mu` (1e-3 for least squares), ``D`` is 10-1000 times the fitted norm and
:math:`\lambda^*` lets the tree's noise through: on off-centre regression of 500 rows and 100
features at epsilon 0.5 the model fell to an R^2 share of -2.6 (``bench_conditioning``).
:math:`\lambda_r` is NoisyGD's planned ridge for the same facts
(:func:`noisygd.solvers.ridge.planned_ridge`, a heuristic balance of its bias against NoisyGD's
noise): the ridge-regularised optimum has norm at most :math:`\sqrt{2F_0/\lambda_r}` and costs
at most the ridge's bias against :math:`w^*`. The objective itself is not changed: its L2 term
is linearised in the run, and a planned ridge added there fed back through the iterates
(measured: off-centre regression at 10 000 rows and epsilon 8 fell from a share of 0.99 to -70).
The plan reports ``regret_bound`` (the value above) and ``bound_covers_run``: true when the
bound is a guarantee for this run's iterates (convex loss, clipping at or above ``L``, and
no L2 term or a radius); with one epoch and the averaged output it also bounds the excess
population risk of the output for i.i.d. data (online-to-batch, ``online_to_batch``).
An explicit ``l2_ftrl`` in ``method_options`` overrides :math:`\lambda^*`.

Random leaves. The terms above assume fixed leaf sizes :math:`|B_t| \le b` (rows streamed in
order, ``settings["leaves"] == "position"``: replace-one). When every row is assigned to one
of the :math:`T_e` leaves of an epoch uniformly at random (``settings["leaves"] ==
"random"``: add/remove), :math:`|B_t| \sim \mathrm{Binomial}(n, 1/T_e)` with mean
:math:`m = n/T_e` and :math:`E|B_t|^2 = m^2 + m(1 - 1/T_e)`, which exceeds :math:`bm`. Per
row of the :math:`En` the run processes, :math:`\lVert g_t\rVert \le |B_t|G` (the L2 term
linearised with the public :math:`n_{lo}/T_e \le m` stays within it) and the tree's noise
independent of the assignment give the expected average regret
:math:`\frac{D^2}{2En}\lambda + \big(\frac{G^2}{2}(m + 1 - \frac1{T_e}) + G\bar Z\big)
\frac1\lambda`, evaluated at :math:`n_{lo}` in the first term and :math:`n_{hi}` in
:math:`m` (a private count's confidence bounds; equal for a public ``n``). With random
leaves only this expectation is bounded: ``regret_bound_high_probability`` is None.

The tree's accuracy (slides 001, "Tree Mechanism (Vector Version)",
:func:`noisygd.bounds.tree_error_bound`) gives :math:`\bar Z` above (the expectation,
:math:`\sigma\sqrt{pk}`) and, with probability at least :math:`1 - \beta`, the average
:math:`\frac1T\sum_t\lVert Z_t\rVert \le \bar Z_\beta = zC\sqrt k(\sqrt p +
\sqrt{2\ln(1/\beta)})`; the plan reports the regret bound that holds with that probability,
``regret_bound_high_probability`` :math:`= A\lambda + (bG^2/2 + G\bar Z_\beta)/\lambda` at
the planned :math:`\lambda` (:data:`BOUND_CONFIDENCE` :math:`\beta = 0.05`, a reporting
level). Online-to-batch (slides 001, :func:`noisygd.bounds.online_to_batch_bound`): for a
one-pass run with the averaged output whose regret bound covers the run, the expected average
regret also bounds the expected excess *population* risk of the output for i.i.d. rows,
``population_risk_bound``; otherwise ``online_to_batch_reason`` says why not.

Secure mode (``Budget.secure``): every tree node's noise is a discrete Gaussian and the
event is ``DiscreteGaussianNoise(tree, kappa)`` (:func:`noisygd.algorithms.dp_ftrl.dp_ftrl`);
``z`` is planned at the largest :math:`\mu` for which that event is at most
``Budget.secure_rho()``-zCDP (:func:`noisygd.solvers.base.plan_secure_gaussian`).

Defaults (:data:`DPFTRLSolver.defaults`): batch 256, 4 epochs with a tree restart per
epoch, Honaker estimator, averaged output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from noisygd._checks import check_bool, check_positive, check_positive_int
from noisygd.accounting.events import DpEvent, Neighbouring
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.dp_ftrl import OUTPUTS
from noisygd.exceptions import AssumptionError
from noisygd.mechanisms.tree import VARIANTS
from noisygd.oracles.base import GradientOracle
from noisygd.solvers.base import Budget, PublicFacts, Solver, plan_secure_gaussian
from noisygd.solvers.options import (
    OptionCheck,
    check_bool_option,
    check_choice_option,
    check_positive_int_option,
    check_positive_option,
    check_sharp_option,
    check_start_option,
    optional,
)
from noisygd.solvers.ridge import planned_ridge

__all__ = ["BOUND_CONFIDENCE", "PLANNED_RIDGE_DISTANCE", "DPFTRLPlan", "DPFTRLSolver",
           "ftrl_regret_terms", "ridge_distance"]

#: The failure probability :math:`\beta` of the high-probability regret bound the plan reports
#: (a reporting level: it changes no setting of the run).
BOUND_CONFIDENCE = 0.05
#: ``distance_source`` of a comparator radius set by the planned ridge (:func:`ridge_distance`).
PLANNED_RIDGE_DISTANCE = "planned ridge"


def ridge_distance(facts: PublicFacts, budget: Budget, mu: float) -> float | None:
    r"""The comparator radius of NoisyGD's planned ridge, :math:`D_\lambda =
    \sqrt{2F_0/\lambda_r}` (:math:`\lambda_r` = :func:`~noisygd.solvers.ridge.planned_ridge`
    of the same facts at the run's :math:`\mu`), or None where no ridge is planned (a
    projection radius, no loss-at-zero bound :math:`F_0`).

    The regret bound holds against every comparator :math:`w` with :math:`\lVert w
Vert \le D`
    whatever ``D``; with :math:`D_\lambda` it covers the ridge-regularised optimum
    :math:`w_\lambda` (:math:`\lVert w_\lambda
Vert \le D_\lambda`), which costs at most the
    ridge's bias :math:`rac{\lambda_r}2\lVert w^*
Vert^2` against :math:`w^*`: the balance
    NoisyGD's planned ridge strikes with its noise (a heuristic, :data:`noisygd.planning.
    RIDGE_STATUS`). Only the comparator is chosen: the objective is not changed (the ridge,
    linearised in the FTRL run, would feed back through the iterates; measured: a planned ridge
    added to the objective ran away on off-centre regression at large ``n`` and epsilon 8).
    """
    if facts.radius is not None or facts.loss_at_zero_bound is None:
        return None
    ridge = planned_ridge(facts, budget, mu, "auto")
    return math.sqrt(2.0 * facts.loss_at_zero_bound / ridge) if ridge > 0 else None


def ftrl_regret_terms(*, n_samples: float, batch_size: int, epochs: int,
                      restart_every_epoch: bool, n_params: int, clip: float,
                      gradient_bound: float, noise_multiplier: float,
                      distance: float, confidence: float | None = None,
                      leaves: str = "position",
                      n_samples_high: float | None = None) -> tuple[float, float, dict[str, float]]:
    r"""``(A, B, terms)`` with :math:`R(\lambda) = A\lambda + B/\lambda` (module doc).

    ``gradient_bound`` is the per-example :math:`G` (``clip``, plus :math:`\mu R` with an
    L2 term on a ball); ``distance`` is :math:`D`. Then :math:`\lambda^* = \sqrt{B/A}` and
    :math:`R(\lambda^*) = 2\sqrt{AB}`. :math:`\bar Z` is the tree's accuracy
    (:func:`noisygd.bounds.tree_error_bound`): its expectation bound, or with ``confidence``
    :math:`\beta` the bound holding with probability at least :math:`1 - \beta` (``B`` is then
    that of the high-probability regret bound).

    ``leaves``: ``"position"`` (rows streamed in order, every leaf at most ``b`` rows: the
    terms above) or ``"random"`` (every row assigned to one of the ``T_e`` leaves of an epoch
    uniformly at random: :math:`|B_t| \sim \mathrm{Binomial}(n, 1/T_e)`); then, per row of the
    ``E n`` the run processes, :math:`A = D^2/(2En_{lo})` and
    :math:`B = \frac{G^2}{2}\big(\frac{n_{hi}}{T_e} + 1 - \frac1{T_e}\big) + G\bar Z`
    (module doc, "Random leaves"), with ``n_samples`` :math:`= n_{lo}` and ``n_samples_high``
    :math:`= n_{hi}` (default ``n_samples``: a public ``n``). Only the expectation: with
    ``confidence`` and random leaves it raises (:math:`\sum_t|B_t|^2` is random).
    """
    from noisygd.bounds import tree_error_bound

    if leaves not in ("position", "random"):
        raise ValueError(f"leaves must be 'position' or 'random', got {leaves!r}")
    if leaves == "random" and confidence is not None:
        raise ValueError("the high-probability regret bound assumes fixed leaf sizes b; with "
                         "random leaves only the expected regret is bounded")

    b = check_positive_int("batch_size", batch_size)
    E = check_positive_int("epochs", epochs)
    C = check_positive("clip", clip)
    G = check_positive("gradient_bound", gradient_bound)
    D = check_positive("distance", distance)
    z = check_positive("noise_multiplier", noise_multiplier)
    p = check_positive_int("n_params", n_params)
    per_epoch = math.ceil(check_positive("n_samples", n_samples) / b)
    T = E * per_epoch
    if restart_every_epoch and E > 1:
        k = E * (math.floor(math.log2(per_epoch)) + 1)
    else:
        k = math.floor(math.log2(T)) + 1
    z_bar = tree_error_bound(noise_std=z * C, n_params=p, nodes_per_prefix=k, beta=confidence)
    terms = {"steps": T, "steps_per_epoch": per_epoch, "tree_nodes_per_prefix": k,
             "noise_norm_bound": z_bar}
    if leaves == "random":
        n_lo = float(n_samples)
        n_hi = n_lo if n_samples_high is None else check_positive("n_samples_high",
                                                                   n_samples_high)
        if n_hi < n_lo:
            raise ValueError(f"n_samples_high ({n_hi}) is below n_samples ({n_lo})")
        # E|B_t|^2 / E|B_t| = n / T_e + 1 - 1/T_e (Binomial(n, 1/T_e)), at most at n = n_hi
        size_ratio = n_hi / per_epoch + 1.0 - 1.0 / per_epoch
        terms["leaf_size_second_moment_ratio"] = size_ratio
        return D * D / (2.0 * E * n_lo), size_ratio * G * G / 2.0 + G * z_bar, terms
    n = float(n_samples)  # E n gradient terms; T b >= E n (the last leaf may be short)
    return D * D / (2.0 * E * n), b * G * G / 2.0 + T * b / (E * n) * G * z_bar, terms


@dataclass(frozen=True)
class DPFTRLPlan:
    """Noise, FTRL strength and the regret bound that chose it, plus the run settings."""

    noise_multiplier: float
    l2_ftrl: float
    clip: float
    steps_per_epoch: int
    regret_bound: float | None
    bound_covers_run: bool
    online_to_batch: bool
    l2_ftrl_source: str
    settings: dict[str, Any] = field(default_factory=dict)
    #: Secure mode: the number of noised coordinates (None: NumPy noise).
    secure_dim: int | None = None
    #: The regret bound holding with probability >= 1 - BOUND_CONFIDENCE (tree accuracy).
    regret_bound_high_probability: float | None = None
    #: Online-to-batch: the bound on the expected excess population risk, or why none.
    population_risk_bound: float | None = None
    online_to_batch_reason: str | None = None
    #: ``D`` of the regret bound and where it comes from (declared, derived, given).
    distance: float | None = None
    distance_source: str | None = None
    #: The public ``n`` the leaves were planned for (random leaves: the expected leaf size).
    n_samples: float | None = None
    #: The sharp clip's record (:func:`noisygd.solvers.noisy_gd.regime_clip`), or empty.
    clip_rule: dict[str, Any] = field(default_factory=dict, compare=False)


class DPFTRLSolver(Solver):
    """DP-FTRL, binary tree (Honaker), exact Gaussian-DP; lambda from the slides' regret bound."""

    name = "dp_ftrl"
    description = "DP-FTRL with the binary-tree mechanism (Honaker), exact Gaussian-DP"
    relations = (Neighbouring.REPLACE_ONE, Neighbouring.ADD_REMOVE)
    gaussian = True
    secure_mode = True
    #: Public defaults; ``l2_ftrl`` follows from the regret bound (module doc).
    defaults: ClassVar[dict[str, Any]] = {
        "batch_size": 256,
        "epochs": 4,
        "restart_every_epoch": True,
        "tree": "honaker",
        "output": "average",
    }

    #: The losses whose sharp clip this solver takes (``method_options["sharp_clip"]``,
    #: :mod:`noisygd.solvers.sharp_clip`): the ones it was measured on (docs/noisygd.md).
    sharp_clip_losses: ClassVar[tuple[str, ...]] = ("logistic",)
    #: The public defaults above, the regret bound's inputs and the start.
    option_names: ClassVar[frozenset[str] | None] = frozenset({
        "sharp_clip", "optimum_norm_bound", "l2_ftrl", "batch_size", "epochs",
        "restart_every_epoch", "tree", "output", "theta0"})
    option_checks: ClassVar[dict[str, OptionCheck]] = {
        "sharp_clip": check_sharp_option,
        "optimum_norm_bound": optional(check_positive_option),
        "l2_ftrl": check_positive_option, "batch_size": check_positive_int_option,
        "epochs": check_positive_int_option, "restart_every_epoch": check_bool_option,
        "tree": check_choice_option(*VARIANTS), "output": check_choice_option(*OUTPUTS),
        "theta0": check_start_option}

    def plan(self, facts: PublicFacts, budget: Budget) -> DPFTRLPlan:
        """``z`` from the budget's mu; ``lambda`` minimising the regret bound; with
        ``"sharp_clip"``, at the clip of the problem's noise regime
        (:func:`noisygd.solvers.noisy_gd.regime_clip`)."""
        import dataclasses

        self.check_options(facts.options)  # also when planned alone (``noisygd plan``)
        if facts.max_iter is not None:  # a cap it would not honour is refused, not ignored
            raise ValueError(
                "method 'dp_ftrl' plans its steps from the batch size and the epochs "
                "(ceil(n / batch_size) leaves per epoch): leave max_iter=None and set "
                "method_options={'batch_size': b, 'epochs': E}")

        if "sharp_clip" in facts.options:
            from noisygd.solvers.noisy_gd import regime_clip

            options = dict(facts.options)
            sharp = options.pop("sharp_clip")
            scaled, rule = regime_clip(dataclasses.replace(facts, options=options), budget,
                                       sharp)
            return dataclasses.replace(self.plan(scaled, budget), clip_rule=rule)
        if budget.secure:
            import dataclasses

            return plan_secure_gaussian(
                lambda mu: dataclasses.replace(self._plan(facts, budget, mu),
                                               secure_dim=facts.n_params),
                self.planned_event, budget.secure_rho())
        return self._plan(facts, budget, budget.mu)

    def _plan(self, facts: PublicFacts, budget: Budget, mu: float | None) -> DPFTRLPlan:
        from noisygd.accounting.gdp import gaussian_mu
        from noisygd.accounting.tree import tree_event

        settings = {**self.defaults, **facts.options}
        distance = settings.pop("optimum_norm_bound", None)
        batch = check_positive_int("batch_size", settings["batch_size"])
        epochs = check_positive_int("epochs", settings["epochs"])
        restart = check_bool("restart_every_epoch", settings["restart_every_epoch"])
        clip = facts.clip_norm()
        per_epoch = math.ceil(facts.n_samples / batch)
        leaves = "position" if facts.relation is Neighbouring.REPLACE_ONE else "random"
        if leaves == "random" and epochs > 1 and not restart:
            raise ValueError(
                "DP-FTRL under add/remove neighbours assigns rows to leaves at random and needs "
                "a tree restarted every epoch: leave method_options['restart_every_epoch'] "
                "True, or pass neighbouring='replace_one'")
        settings["leaves"] = leaves
        unit = tree_event(1.0, per_epoch, epochs, restart_every_epoch=restart,
                          relation=facts.relation, leaves=leaves)
        if mu is None:
            from noisygd.accounting.calibration import calibrate_mu

            mu = calibrate_mu(budget.epsilon, budget.delta)
        z = float(gaussian_mu(unit) / mu)
        c = facts.constants
        radius = facts.radius
        G = clip + (facts.l2 * radius if (facts.l2 and radius is not None) else 0.0)
        distance_source = "given" if distance is not None else None
        if distance is None:
            distance = facts.optimum_norm_bound if facts.optimum_norm_bound is not None \
                else radius
            distance_source = (None if distance is None else "declared"
                               if radius is not None and distance == radius else "derived")
            ridged = None if "l2_ftrl" in settings else ridge_distance(facts, budget, mu)
            if ridged is not None and (distance is None or ridged < distance):
                distance, distance_source = ridged, PLANNED_RIDGE_DISTANCE
        covers = (c.convex and c.lipschitz is not None and clip >= c.lipschitz
                  and (facts.l2 == 0 or radius is not None))
        if distance is None and "l2_ftrl" not in settings:
            raise AssumptionError(
                "DP-FTRL chooses lambda from its regret bound, which needs a public bound "
                "D >= ||w*||: the objective states none (l2 = 0 and no radius); pass "
                "method_options={'optimum_norm_bound': D} or {'l2_ftrl': lambda}")
        bound = None
        a = bb = None
        leaves = settings.get("leaves", "position")  # "random": add/remove leaves (module doc)
        if distance is not None:
            a, bb, _ = ftrl_regret_terms(
                n_samples=facts.n_samples, batch_size=batch, epochs=epochs,
                restart_every_epoch=restart, n_params=facts.n_params, clip=clip,
                gradient_bound=G, noise_multiplier=z, distance=distance,
                leaves=leaves, n_samples_high=facts.n_step())
        if "l2_ftrl" in settings:
            lam = check_positive("l2_ftrl", settings.pop("l2_ftrl"))
            source = "given"
        else:
            lam = math.sqrt(bb / a)
            source = "regret bound of slides 001 (lambda*)"
        bound_hp = None
        if a is not None:
            bound = a * lam + bb / lam
        if a is not None and leaves == "position":  # random leaves: expectation only
            _, bb_hp, _ = ftrl_regret_terms(
                n_samples=facts.n_samples, batch_size=batch, epochs=epochs,
                restart_every_epoch=restart, n_params=facts.n_params, clip=clip,
                gradient_bound=G, noise_multiplier=z, distance=distance,
                confidence=BOUND_CONFIDENCE)
            bound_hp = a * lam + bb_hp / lam
        from noisygd.bounds import online_to_batch_bound, online_to_batch_refusal

        covers_run = bool(covers and bound is not None)
        reason = online_to_batch_refusal(epochs=epochs, output=settings["output"],
                                         regret_covers_run=covers_run)
        population = None if reason is not None else online_to_batch_bound(
            average_regret=bound, epochs=epochs, output=settings["output"],
            regret_covers_run=covers_run)
        return DPFTRLPlan(
            noise_multiplier=z, l2_ftrl=lam, clip=clip, steps_per_epoch=per_epoch,
            regret_bound=bound, bound_covers_run=covers_run,
            online_to_batch=reason is None,
            l2_ftrl_source=source, settings=settings,
            regret_bound_high_probability=bound_hp, population_risk_bound=population,
            online_to_batch_reason=reason, distance=distance, distance_source=distance_source,
            n_samples=facts.n_samples,
        )

    def planned_event(self, plan: DPFTRLPlan) -> DpEvent:
        """The tree release of ``E`` epochs of ``ceil(n / b)`` steps at noise ``z``
        (:func:`~noisygd.accounting.tree.tree_event`), as
        :func:`~noisygd.algorithms.dp_ftrl.dp_ftrl` returns it."""
        from noisygd.accounting.tree import tree_event

        leaves = plan.settings.get("leaves", "position")
        event = tree_event(plan.noise_multiplier, plan.steps_per_epoch,
                           plan.settings["epochs"],
                           restart_every_epoch=plan.settings["restart_every_epoch"],
                           relation=(Neighbouring.REPLACE_ONE if leaves == "position"
                                     else Neighbouring.ADD_REMOVE), leaves=leaves)
        if plan.secure_dim is None:
            return event
        from noisygd.mechanisms.noise import secure_event, sensitivity_inflation
        from noisygd.mechanisms.secure import SecureRandom

        rng = SecureRandom()
        return secure_event(event, rng, sensitivity_inflation(
            rng, plan.noise_multiplier * plan.clip, plan.secure_dim,
            event.relation.clipped_sum_sensitivity * plan.clip))

    def run(self, plan: DPFTRLPlan, oracle: GradientOracle,
            rng: np.random.Generator) -> FitResult:
        """:func:`~noisygd.algorithms.dp_ftrl.dp_ftrl` with the planned noise and lambda."""
        from noisygd.algorithms.dp_ftrl import dp_ftrl

        extra = ({} if plan.settings.get("leaves", "position") == "position" else
                 {"steps_per_epoch": plan.steps_per_epoch, "n_samples": plan.n_samples})
        result = dp_ftrl(oracle, noise_multiplier=plan.noise_multiplier, clip=plan.clip,
                         l2_ftrl=plan.l2_ftrl, rng=rng, **plan.settings, **extra)
        result.info["plan"] = {
            "noise_multiplier": plan.noise_multiplier, "l2_ftrl": plan.l2_ftrl,
            "l2_ftrl_source": plan.l2_ftrl_source, "regret_bound": plan.regret_bound,
            "bound_name": "slides 001, DP-FTRL regret bound (expected average regret)",
            "bound_covers_run": plan.bound_covers_run, "online_to_batch": plan.online_to_batch,
            "regret_bound_high_probability": plan.regret_bound_high_probability,
            "regret_bound_confidence": BOUND_CONFIDENCE,
            "population_risk_bound": plan.population_risk_bound,
            "online_to_batch_reason": plan.online_to_batch_reason,
            "steps_per_epoch": plan.steps_per_epoch,
            **{k: v for k, v in plan.settings.items() if not isinstance(v, dict | np.ndarray)},
            **({"clip_rule": dict(plan.clip_rule)} if plan.clip_rule else {}),
            "distance": plan.distance, "distance_source": plan.distance_source,
        }
        return result
