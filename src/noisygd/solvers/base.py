r"""The solver interface: one object per training method, ``plan`` then ``run``.

A solver turns a per-problem privacy budget and the *public* facts of a problem into a plan
(noise, steps, step size, ...) and then runs that plan against any
:class:`~noisygd.oracles.base.GradientOracle`, returning the parameters and the privacy event
of the run (:class:`~noisygd.algorithms.base.FitResult`). ``plan`` never sees data; ``run``
sees it only through the oracle.

Adding a method means writing one :class:`Solver` subclass and naming it in
:data:`noisygd.solvers.SOLVERS` (or passing an instance as ``method=``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from noisygd.accounting.events import DpEvent, Neighbouring
from noisygd.algorithms.base import FitResult
from noisygd.objectives.base import ObjectiveConstants
from noisygd.oracles.base import GradientOracle

__all__ = ["Budget", "PublicFacts", "Solver"]


@dataclass(frozen=True)
class Budget:
    """The (epsilon, delta) a solver's run must meet.

    Attributes
    ----------
    epsilon, delta : float
        Target for the solver's own event, or, with ``prior_event``, for
        ``Composed((prior_event, own_event))``.
    prior_event : DpEvent or None
        A release made before the run on the same data (the private row count), for solvers
        that calibrate jointly with it (``Solver.accepts_prior_event``).
    """

    epsilon: float
    delta: float
    prior_event: DpEvent | None = None


@dataclass(frozen=True)
class PublicFacts:
    """Everything a planner may read: public by declaration or paid for.

    Attributes
    ----------
    n_samples : float
        The public row count, or the lower confidence bound of a paid-for noisy count.
    n_params : int
        Length of ``theta``.
    constants : ObjectiveConstants
        The oracle's declared constants (for rows within ``row_norm_bound``).
    row_norm_bound : float
    relation : Neighbouring
    l2 : float
    radius : float or None
    optimum_norm_bound : float or None
    loss_at_zero_bound : float or None
    clip : float or None
        The user's clipping norm, or ``None`` for the solver's choice.
    max_iter : int or None
        The user's cap on the number of noisy steps.
    options : dict
        Method-specific options the user passed (``method_options``).
    """

    n_samples: float
    n_params: int
    constants: ObjectiveConstants
    row_norm_bound: float
    relation: Neighbouring
    l2: float = 0.0
    radius: float | None = None
    optimum_norm_bound: float | None = None
    loss_at_zero_bound: float | None = None
    clip: float | None = None
    max_iter: int | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_oracle(
        cls, oracle: GradientOracle, *, n_samples: float, relation: Neighbouring | str,
        clip: float | None = None, max_iter: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> PublicFacts:
        """The public facts an oracle declares (its constants, never its rows)."""
        return cls(
            n_samples=float(n_samples),
            n_params=oracle.n_params,
            constants=oracle.constants(),
            row_norm_bound=oracle.row_norm_bound,
            relation=Neighbouring(relation),
            l2=oracle.l2,
            radius=oracle.radius,
            optimum_norm_bound=oracle.optimum_norm_bound(),
            loss_at_zero_bound=oracle.loss_at_zero_bound(),
            clip=clip,
            max_iter=max_iter,
            options=dict(options or {}),
        )


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
    """

    name: ClassVar[str]
    description: ClassVar[str] = ""
    relations: ClassVar[tuple[Neighbouring, ...]] = (
        Neighbouring.ADD_REMOVE,
        Neighbouring.REPLACE_ONE,
    )
    gaussian: ClassVar[bool] = False
    accepts_prior_event: ClassVar[bool] = False

    @abstractmethod
    def plan(self, facts: PublicFacts, budget: Budget) -> Any:
        """Choose every setting of the run from public facts only (never from data)."""

    @abstractmethod
    def run(self, plan: Any, oracle: GradientOracle, rng: np.random.Generator) -> FitResult:
        """Run ``plan`` against ``oracle``; return parameters and the event of the run."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
