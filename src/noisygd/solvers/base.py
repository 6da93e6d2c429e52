r"""The solver interface: one object per training method, ``plan`` then ``run``.

A solver turns a per-problem privacy budget and the *public* facts of a problem into a plan
(noise, steps, step size, ...) and then runs that plan against any
:class:`~noisygd.oracles.base.GradientOracle`, returning the parameters and the privacy event
of the run (:class:`~noisygd.algorithms.base.FitResult`). ``plan`` never sees data; ``run``
sees it only through the oracle. ``planned_event(plan)`` is the event ``run(plan, ...)`` will
return, computed from the plan alone: the privacy ledger (:mod:`noisygd.ledger`) records it
*before* the run reads any data, and :func:`noisygd.training.fit_private` checks after the
run that the run's event equals it (an internal error otherwise).

Adding a method means writing one :class:`Solver` subclass (``plan``, ``planned_event``,
``run``, and the ``method_options`` keys it takes, ``option_names``, which
:meth:`Solver.check_options` enforces before anything is recorded or read) and naming it in
:data:`noisygd.solvers.SOLVERS` (or passing an instance as ``method=``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, TypeVar

import numpy as np

from noisygd._checks import check_positive
from noisygd.accounting.events import DpEvent, Neighbouring
from noisygd.algorithms.base import FitResult
from noisygd.exceptions import AssumptionError, UnknownOptionError
from noisygd.objectives.base import Objective, ObjectiveConstants, constant_column
from noisygd.oracles.base import GradientOracle

__all__ = ["PLANNED_SETTINGS", "Budget", "PublicFacts", "ReleasedFacts", "Solver", "margins_of",
           "plan_secure_gaussian"]

_P = TypeVar("_P")

#: Run settings that a plan sets itself and that no ``method_options`` key may override,
#: with the argument that sets them instead. The event a plan records rests on them (the
#: noise, the steps, the clip, the sampling) or they are the fit's own arguments; passed as
#: an option they were refused late (after the count and the pre-releases had spent budget),
#: refused by the final event check, or silently replaced by the plan's value.
PLANNED_SETTINGS: dict[str, str] = {
    "noise_multiplier": "epsilon and delta (the plan calibrates the noise)",
    "epsilon": "epsilon",
    "delta": "delta",
    "steps": "max_iter (or a method's compute budget, 'step_budget')",
    "clip": "the estimator's clip (fit_private: clip=)",
    "n_samples": "n_samples_public",
    "relation": "neighbouring (fit_private: relation=)",
    "sampling": "the method (noisy_sgd samples by Poisson)",
    "sampling_rate": "the method's options ('expected_batch_size')",
    "normalize": "the method",
    "leaves": "neighbouring (DP-FTRL's leaves follow the relation)",
    "steps_per_epoch": "the method's options ('batch_size')",
    "rng": "random_state (fit_private: rng=)",
    "oracle": "the data",
}


@dataclass(frozen=True)
class Budget:
    r"""The (epsilon, delta) a solver's run must meet.

    Attributes
    ----------
    epsilon, delta : float
        Target for the solver's own event, or, with ``prior_event``, for
        ``Composed((prior_event, own_event))``.
    prior_event : DpEvent or None
        A release made before the run on the same data (the private row count), for solvers
        that calibrate jointly with it (``Solver.accepts_prior_event``).
    mu : float or None
        For a Gaussian solver (``Solver.gaussian``): the Gaussian-DP parameter the run may
        spend, when the caller has already split a GDP budget (:math:`\mu^2 = \sum_k
        \mu_k^2`). ``epsilon`` is then the exact GDP epsilon of ``mu`` at ``delta`` and the
        solver plans from ``mu`` directly, never converting back. In secure mode
        (``secure=True``) ``mu`` is :math:`\sqrt{2\rho}` for the zCDP :math:`\rho` the run
        may spend (a continuous Gaussian run that is ``mu``-GDP is :math:`\mu^2/2`-zCDP).
    secure : bool
        Secure mode (docs/secure_noise.md): the run draws its noise from a
        :class:`~noisygd.mechanisms.secure.SecureRandom` and returns a
        :class:`~noisygd.accounting.events.DiscreteGaussianNoise` event; the plan must be
        calibrated for that event (zCDP, or RDP for Poisson-subsampled runs). Only solvers
        with ``Solver.secure_mode`` accept it.
    """

    epsilon: float
    delta: float
    prior_event: DpEvent | None = None
    mu: float | None = None
    secure: bool = False

    def secure_rho(self) -> float:
        r"""The zCDP :math:`\rho` a secure run may spend: :math:`\mu^2/2` with ``mu``, else
        the largest :math:`\rho` whose zCDP conversion meets ``(epsilon, delta)``
        (:func:`noisygd.mechanisms.noise.zcdp_rho_for`) less the prior event's
        :math:`\rho` (zCDP composes additively, Bun and Steinke 2016, Lemma 2.3)."""
        if self.mu is not None:
            return 0.5 * self.mu * self.mu
        from noisygd.accounting.zcdp import zcdp_rho
        from noisygd.mechanisms.noise import zcdp_rho_for

        rho = zcdp_rho_for(self.epsilon, self.delta)
        if self.prior_event is not None:
            rho -= zcdp_rho(self.prior_event)
        if not rho > 0.0:
            raise ValueError(f"epsilon={self.epsilon!r} is too small to pay for the prior "
                             "release and the run in secure mode: raise epsilon")
        return rho


def plan_secure_gaussian(plan_at: Callable[[float], _P], event_of: Callable[[_P], DpEvent],
                         rho: float, *, max_rounds: int = 64) -> _P:
    r"""The plan of a Gaussian solver whose *secure* event is at most ``rho``-zCDP.

    A continuous Gaussian run planned at Gaussian-DP :math:`\mu` is :math:`\mu^2/2`-zCDP;
    its secure form :class:`~noisygd.accounting.events.DiscreteGaussianNoise` with
    inflation :math:`\kappa` is :math:`\kappa^2\mu^2/2`-zCDP (Canonne, Kamath and Steinke
    2020; :math:`\kappa` depends on the planned noise through the rounding grid). Starting
    from :math:`\mu = \sqrt{2\rho}`, the plan is made again at
    :math:`\mu\sqrt{\rho/\rho(\mu)}(1 - 10^{-9})` until the planned event's zCDP
    :math:`\rho(\mu)` (:func:`noisygd.accounting.zcdp.zcdp_rho`) is at most ``rho``
    (one or two rounds: :math:`\kappa - 1 \le 2^{-30}z/\Delta`).

    Parameters
    ----------
    plan_at : callable
        ``mu -> plan`` (public facts only).
    event_of : callable
        ``plan -> DpEvent``: the secure event the run of ``plan`` returns.
    rho : float
        The run's zCDP allowance.

    Raises
    ------
    RuntimeError
        If no plan meets ``rho`` within ``max_rounds`` rounds (an internal error).
    """
    from noisygd.accounting.zcdp import zcdp_rho

    rho = check_positive("rho", rho)
    mu = math.sqrt(2.0 * rho)
    for _ in range(max_rounds):
        plan = plan_at(mu)
        spent = zcdp_rho(event_of(plan))
        if spent <= rho:
            return plan
        mu *= math.sqrt(rho / spent) * (1.0 - 1e-9)
    raise RuntimeError("internal error: no secure plan meets the zCDP budget")


@dataclass(frozen=True)
class ReleasedFacts:
    r"""Facts of the rows computed from a paid release made before the run (post-processing,
    so public once released), which the planner reads in place of the declared worst case.

    Attributes
    ----------
    smoothness : float or None
        A smoothness :math:`\beta` of the per-example data term in place of the declared one
        (:math:`\beta_{\rm loss}(R)` at the row bound): the loss's curvature bound at the
        rows' *released* mean squared norm. For a GLM the data term's Hessian is
        :math:`\frac1n\sum_i\phi''_i\,x'_ix_i'^\top` with :math:`0 \le \phi'' \le c`, so its
        largest eigenvalue is at most :math:`c\,\mathrm{tr}\,\frac1n\sum_i x'_ix_i'^\top =
        c\,\frac1n\sum_i\lVert x'_i\rVert^2` (clipping a residual only lowers
        :math:`\phi'`'s slope): an upper confidence bound of that mean is a smoothness of the
        objective the run minimises, with the release's confidence.
    comparator_radius : float or None
        The radius :math:`D_0` of the comparator the planned ridge balances its bias against
        (:func:`noisygd.planning.ridge_strength`) in place of :func:`noisygd.planning.
        comparator_radius`'s :math:`\sqrt{2nF_0}`.
    source : str
        What was released and the rule that turned it into these facts (reported in the
        plan).
    mean_curvature : float or None
        The data term's mean curvature per coordinate, :math:`\bar h = c\,\frac1n\sum_i
        \lVert x'_i\rVert^2/d` (plug-in), with which the planned ridge is the balance of
        :func:`noisygd.planning.released_ridge_strength` instead of
        :func:`~noisygd.planning.ridge_strength` (needs ``comparator_radius``).
    """

    smoothness: float | None = None
    comparator_radius: float | None = None
    source: str = ""
    mean_curvature: float | None = None

    def __post_init__(self) -> None:
        for name in ("smoothness", "comparator_radius", "mean_curvature"):
            value = getattr(self, name)
            if value is not None:
                check_positive(name, value)


def margins_of(objective: object) -> int:
    """The number of margins of ``objective``'s loss: ``n_outputs`` of its
    :meth:`~noisygd.objectives.base.Objective.margin_model` when that is a
    :class:`~noisygd.objectives.multinomial.MultiMarginModel` (``K``), else 1. Public: read
    from the objective, never from the rows.

    Examples
    --------
    >>> from noisygd.objectives.multinomial import MultinomialLogisticLoss
    >>> margins_of(MultinomialLogisticLoss(4)), margins_of(None)
    (4, 1)
    """
    from noisygd.objectives.multinomial import MultiMarginModel

    margin_model = getattr(objective, "margin_model", None)
    model = margin_model() if callable(margin_model) else None
    return int(model.n_outputs) if isinstance(model, MultiMarginModel) else 1


@dataclass(frozen=True)
class PublicFacts:
    """Everything a planner may read: public by declaration or paid for.

    Attributes
    ----------
    n_samples : float
        The public row count, or the lower :math:`1-\beta` confidence bound
        :math:`n_{\rm lo}` of a paid-for noisy count
        (:func:`noisygd.training.count_confidence_bounds`): use it where ``n`` measures the
        signal (noise-to-signal ratios, sampling rates, utility bounds).
    n_samples_high : float or None
        The upper :math:`1-\beta` confidence bound :math:`n_{\rm hi}` of a noisy count
        (None: ``n`` is public, equal to ``n_samples``). Use :meth:`n_step` where ``n``
        sets the curvature a step must respect (the sum-form step :math:`1/(n\beta)`, the
        normalisation of a gradient sum).
    n_params : int
        Length of ``theta``.
    constants : ObjectiveConstants
        The oracle's declared constants (for rows within ``row_norm_bound``).
    row_norm_bound : float or None
        None for an oracle that bounds no row (a network: it clips gradients).
    relation : Neighbouring
    l2 : float
    radius : float or None
    optimum_norm_bound : float or None
    loss_at_zero_bound : float or None
    clip : float or None
        The user's clipping norm, or ``None`` for the solver's choice.
    max_iter : int or None
        The user's cap on the number of noisy steps.
    total_gradient_sensitivity : float or None
        The oracle's exact replace-one sensitivity of the unclipped gradient sum, if stated.
    quadratic_constant_hessian : bool
        Whether the loss is quadratic with a data-independent Hessian.
    quadratic_loss : bool
        Whether the per-example loss is quadratic in the margin (least squares: the
        Hessian may depend on the rows). The NoisyGD planner then releases a tail average.
    options : dict
        Method-specific options the user passed (``method_options``).
    curvature_sums : bool or None
        Whether the oracle serves curvature sums with a stated self-concordance constant
        (:meth:`~noisygd.oracles.base.GradientOracle.self_concordance` not None: what
        ``method="newton"`` needs); None when unknown.
    row_nonzero_counts : bool or None
        Whether the oracle serves the histogram of its rows' nonzeros
        (:meth:`~noisygd.oracles.base.GradientOracle.row_nonzero_histogram`: what the
        diagonal preconditioner's paid row support needs); None when unknown. A capability
        of the oracle's class, not a fact of the rows.
    released : ReleasedFacts or None
        Facts of the rows from a paid release before the run (:class:`ReleasedFacts`);
        ``constants.smoothness`` is then already the released one (:meth:`from_oracle`).
    constant_column : (int, float) or None
        ``(k, s)``: column ``k`` of every served row is the constant ``s`` (the intercept's;
        :func:`noisygd.objectives.base.constant_column`, read from the objective), else None.
    margins : int
        The number of margins of the loss (``K`` for the multinomial loss, 1 otherwise:
        :func:`margins_of`); the diagonal preconditioner's step rule is one margin's.
    """

    n_samples: float
    n_params: int
    constants: ObjectiveConstants
    row_norm_bound: float | None
    relation: Neighbouring
    l2: float = 0.0
    radius: float | None = None
    optimum_norm_bound: float | None = None
    loss_at_zero_bound: float | None = None
    clip: float | None = None
    max_iter: int | None = None
    total_gradient_sensitivity: float | None = None
    quadratic_constant_hessian: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    n_samples_high: float | None = None
    quadratic_loss: bool = False
    curvature_sums: bool | None = None
    row_nonzero_counts: bool | None = None
    released: ReleasedFacts | None = None
    constant_column: tuple[int, float] | None = None
    margins: int = 1

    def n_step(self) -> float:
        """The ``n`` a step size is planned with: ``n_samples_high`` if set, else
        ``n_samples`` (a public ``n``)."""
        return self.n_samples if self.n_samples_high is None else float(self.n_samples_high)

    @classmethod
    def from_objective(
        cls, objective: Objective, n_features: int, *, row_norm_bound: float,
        n_samples: float, relation: Neighbouring | str, clip: float | None = None,
        max_iter: int | None = None, options: dict[str, Any] | None = None,
        n_samples_high: float | None = None,
    ) -> PublicFacts:
        """The facts :meth:`from_oracle` gives for an :class:`~noisygd.oracles.array.ArrayOracle`
        of ``objective`` over ``n_features`` columns with ``row_norm_bound``, read from the
        objective alone (no rows): for planning, or for the privacy ledger's check, before
        any data is read."""
        from noisygd.oracles.array import has_self_concordance

        B = check_positive("row_norm_bound", row_norm_bound)
        return cls(
            n_samples=float(n_samples),
            n_params=objective.n_params(int(n_features)),
            constants=objective.constants(B),
            row_norm_bound=B,
            relation=Neighbouring(relation),
            l2=float(objective.l2),
            radius=objective.radius,
            optimum_norm_bound=objective.optimum_norm_bound(),
            loss_at_zero_bound=objective.loss_at_zero_bound(),
            clip=clip,
            max_iter=max_iter,
            total_gradient_sensitivity=objective.total_gradient_sensitivity(B),
            quadratic_constant_hessian=bool(objective.quadratic_constant_hessian),
            quadratic_loss=bool(objective.quadratic_loss),
            options=dict(options or {}),
            n_samples_high=None if n_samples_high is None else float(n_samples_high),
            curvature_sums=has_self_concordance(objective.margin_model()),
            row_nonzero_counts=True,  # ArrayOracle.serves_row_nonzeros
            constant_column=constant_column(objective, objective.n_params(int(n_features))),
            margins=margins_of(objective),
        )

    @classmethod
    def from_oracle(
        cls, oracle: GradientOracle, *, n_samples: float, relation: Neighbouring | str,
        clip: float | None = None, max_iter: int | None = None,
        options: dict[str, Any] | None = None, n_samples_high: float | None = None,
        released: ReleasedFacts | None = None,
    ) -> PublicFacts:
        """The public facts an oracle declares (its constants, never its rows), with the
        smoothness of ``released`` (:class:`ReleasedFacts`) in place of the declared one
        where it gives one and it is smaller."""
        constants = oracle.constants()
        if (released is not None and released.smoothness is not None
                and constants.smoothness is not None
                and released.smoothness < constants.smoothness):
            constants = replace(constants, smoothness=released.smoothness)
        return cls(
            n_samples=float(n_samples),
            n_params=oracle.n_params,
            constants=constants,
            row_norm_bound=oracle.row_norm_bound,
            relation=Neighbouring(relation),
            l2=oracle.l2,
            radius=oracle.radius,
            optimum_norm_bound=oracle.optimum_norm_bound(),
            loss_at_zero_bound=oracle.loss_at_zero_bound(),
            clip=clip,
            max_iter=max_iter,
            total_gradient_sensitivity=oracle.total_gradient_sensitivity(),
            quadratic_constant_hessian=bool(oracle.quadratic_constant_hessian),
            quadratic_loss=bool(oracle.quadratic_loss),
            options=dict(options or {}),
            n_samples_high=None if n_samples_high is None else float(n_samples_high),
            curvature_sums=oracle.self_concordance() is not None,
            row_nonzero_counts=bool(getattr(oracle, "serves_row_nonzeros", False)),
            released=released,
            constant_column=constant_column(getattr(oracle, "objective", None),
                                            oracle.n_params),
            margins=margins_of(getattr(oracle, "objective", None)),
        )

    def clip_norm(self) -> float:
        """The clipping norm: the user's ``clip``, else the declared Lipschitz constant ``L``.

        Raises
        ------
        AssumptionError
            If neither is available (a loss that states no ``L`` needs ``clip=``).
        """
        if self.clip is not None:
            return check_positive("clip", self.clip)
        if self.constants.lipschitz is None:
            raise AssumptionError(
                "the objective states no Lipschitz constant for these settings: give a "
                "clipping norm (clip=...) or a projection radius")
        return float(self.constants.lipschitz)

    def exact_n(self) -> int:
        """``n_samples`` as an integer, for methods that need the exact public size
        (replace-one neighbours, where the size of the data is public)."""
        n = self.n_samples
        if n != int(n) or n < 1:
            raise ValueError(f"this method needs the exact public number of rows, got {n!r}")
        return int(n)

    def refuse_clip(self, method: str) -> None:
        """Methods whose sensitivity lemma is about the unclipped gradient refuse ``clip=``."""
        if self.clip is not None:
            raise ValueError(f"{method} does not clip gradients (its sensitivity bound is for "
                             "the unclipped gradient): leave clip=None")


class Solver(ABC):
    """A private training method: :meth:`plan` from public facts, then :meth:`run`.

    Class attributes
    ----------------
    name : str
        The ``method=`` name.
    description : str
        One line for ``--help`` and reports: the algorithm and its accountant.
    relations : tuple of Neighbouring
        The neighbouring relations its event is accounted under.
    gaussian : bool
        Whether its event is a Gaussian composition, so one budget can be split between a
        count and several problems by :math:`\\mu^2 = \\sum_k \\mu_k^2`.
    accepts_prior_event : bool
        Whether :meth:`plan` calibrates jointly with ``Budget.prior_event``.
    clips_gradients : bool
        Whether the method clips per-example gradients (and so takes ``clip=``). Methods
        whose sensitivity lemma is about the unclipped gradient (output perturbation,
        RRPSGD, last-iterate Langevin, AdaSSP) use the objective's declared constants
        instead, and an estimator's *default* clipping norm is not passed to them.
    secure_mode : bool
        Whether :meth:`plan` honours ``Budget.secure`` (its run accepts a
        :class:`~noisygd.mechanisms.secure.SecureRandom` and its planned event is then the
        secure one). :func:`noisygd.training.fit_private` refuses ``secure=True`` for the
        others before reading any data.
    plans_ridge : bool
        Whether it can plan its own ridge (``method_options={"l2": "auto"}``) when the user
        gives ``l2=None``: the estimators then fit an unregularised objective and the solver
        adds the ridge it plans from public quantities (NoisyGD, Newton, NoisySGD).
    chooses_l2 : bool
        Whether ``l2=None`` is resolved by the method's theorems before planning
        (:func:`noisygd.solvers.output_perturbation.choose_l2`: output perturbation).
    takes_noise_dimension : bool
        Whether it takes ``method_options["noise_dimension"]`` (the number of directions the
        objective varies in, which a multinomial estimator passes: NoisyGD).
    sharp_clip_losses : tuple of str
        The losses (``"logistic"``, ``"squared"``) whose ``method_options["sharp_clip"]`` it
        takes, the clip scaled by the run's noise regime (docs/noisygd.md, "The sharp clip of
        a noise-limited run"); empty: none.
    option_names : frozenset of str or None
        The ``method_options`` keys it takes (:meth:`check_options`); None: not declared, so
        not checked (a user's own solver).
    plan_option_names : frozenset of str
        The keys of a nested ``method_options["plan"]`` dict (NoisyGD's planner arguments);
        empty: ``"plan"`` is not an option of this method.
    option_checks, plan_option_checks : mapping of str to callable
        Checks of the values of some of those keys, ``check(label, value)``
        (:mod:`noisygd.solvers.options`), run by :meth:`check_options`.

    Behaviour that depends on the method is keyed on these attributes, never on ``name``
    (tests/test_architecture.py).
    """

    name: ClassVar[str]
    description: ClassVar[str] = ""
    relations: ClassVar[tuple[Neighbouring, ...]] = (
        Neighbouring.ADD_REMOVE,
        Neighbouring.REPLACE_ONE,
    )
    gaussian: ClassVar[bool] = False
    accepts_prior_event: ClassVar[bool] = False
    clips_gradients: ClassVar[bool] = True
    secure_mode: ClassVar[bool] = False
    plans_ridge: ClassVar[bool] = False
    chooses_l2: ClassVar[bool] = False
    takes_noise_dimension: ClassVar[bool] = False
    sharp_clip_losses: ClassVar[tuple[str, ...]] = ()
    option_names: ClassVar[frozenset[str] | None] = None
    plan_option_names: ClassVar[frozenset[str]] = frozenset()
    option_checks: ClassVar[Mapping[str, Callable[[str, Any], object]]] = {}
    plan_option_checks: ClassVar[Mapping[str, Callable[[str, Any], object]]] = {}

    def check_options(self, options: Mapping[str, Any] | None) -> None:
        """Refuse ``method_options`` keys this method does not take, before anything is
        recorded or read (:func:`noisygd.training.fit_private` calls it first).

        A key of :data:`PLANNED_SETTINGS` is named with the argument that sets it; any other
        unknown key with the keys that are valid. Then the values of the keys that have a
        check in :attr:`option_checks` are checked. ``options["plan"]``, where the method takes
        it, must be a dict of :attr:`plan_option_names` keys.

        Raises
        ------
        UnknownOptionError
            A ``TypeError`` and a ``ValueError``: naming the key, never a value.
        TypeError, ValueError
            A value of the wrong type or outside its domain (:attr:`option_checks`), the
            option named.
        """
        if options is None or self.option_names is None:
            return
        if not isinstance(options, Mapping):
            raise UnknownOptionError(f"method_options must be a dict, got "
                                     f"{type(options).__name__}")
        where = f"method={self.name!r}"
        self._refuse_unknown(options, self.option_names, "method_options", where)
        self._check_values(options, self.option_checks, "method_options")
        if "plan" in options and self.plan_option_names:
            nested = options["plan"]
            if nested is None:
                return
            if not isinstance(nested, Mapping):
                raise UnknownOptionError(f"method_options['plan'] must be a dict, got "
                                         f"{type(nested).__name__}")
            self._refuse_unknown(nested, self.plan_option_names, "method_options['plan']",
                                 where)
            self._check_values(nested, self.plan_option_checks, "method_options['plan']")

    @staticmethod
    def _check_values(options: Mapping[str, Any],
                      checks: Mapping[str, Callable[[str, Any], object]], label: str) -> None:
        """Run the value check of each key present (sorted: the first bad key is reported
        whatever the dict's order)."""
        for key in sorted(k for k in options if k in checks):
            checks[key](f"{label}[{key!r}]", options[key])

    @staticmethod
    def _refuse_unknown(options: Mapping[Any, Any], valid: frozenset[str], label: str,
                        where: str) -> None:
        """Raise :class:`UnknownOptionError` for the first key of ``options`` not in ``valid``
        (sorted, so the message does not depend on the dict's order)."""
        unknown = sorted((k for k in options if k not in valid), key=repr)
        if not unknown:
            return
        key = unknown[0]
        if not isinstance(key, str):
            raise UnknownOptionError(f"{label} keys must be strings ({where})")
        if key in PLANNED_SETTINGS:
            raise UnknownOptionError(
                f"{label}[{key!r}] is not an option of {where}: the plan sets it, and the "
                f"privacy it records rests on it; set it through {PLANNED_SETTINGS[key]}")
        raise UnknownOptionError(f"unknown {label} for {where}: {key!r}; valid: "
                                 f"{', '.join(sorted(valid)) or 'none'}")

    @abstractmethod
    def plan(self, facts: PublicFacts, budget: Budget) -> Any:
        """Choose every setting of the run from public facts only (never from data)."""

    @abstractmethod
    def planned_event(self, plan: Any) -> DpEvent:
        """The event :meth:`run` will return for ``plan``, from the plan alone (no data).

        It must equal (``==``) ``run(plan, oracle, rng).event`` for every oracle the plan
        was made for and every ``rng``: it is what the privacy ledger records before the
        run, and :func:`noisygd.training.fit_private` refuses to return a model whose run
        performed another event. A run whose event depends on randomness drawn during the
        run (RRPSGD's number of rounds) returns the worst case over that randomness.
        """

    @abstractmethod
    def run(self, plan: Any, oracle: GradientOracle, rng: np.random.Generator) -> FitResult:
        """Run ``plan`` against ``oracle``; return parameters and the event of the run."""

    def check_oracle(self, oracle: GradientOracle) -> None:
        """Refuse an oracle this method cannot run on, from its declarations only (no row
        read): :func:`noisygd.training.fit_private` calls it before anything is recorded
        or read. The default accepts every oracle."""
        del oracle

    def method_name(self, plan: Any) -> str:
        """The name of the method ``plan`` runs (:attr:`name`; a solver that chooses between
        methods names the chosen one), recorded with the fit in a privacy ledger."""
        del plan
        return self.name

    def release_label(self, plan: Any, label: str) -> str:
        """The privacy ledger's label of a fit of ``plan`` given the caller's ``label``
        (``"<caller>/<method>"``): unchanged, unless the solver chose the method, whose
        name then replaces :attr:`name` at the end of the label."""
        ran = self.method_name(plan)
        if ran != self.name and label.endswith(f"/{self.name}"):
            return f"{label[:-len(self.name)]}{ran}"
        return label

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
