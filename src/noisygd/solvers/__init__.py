"""Solvers: one class per training method (plan from public facts, then run on an oracle).

:data:`SOLVERS` is the one place a method is named: ``method="noisy_gd"`` in the estimators
and ``noisygd fit --method`` resolve through :func:`get_solver`, which also accepts a
:class:`Solver` instance (a method defined outside noisygd is one subclass, passed as
``method=MySolver()``). Nothing registers itself on import.
"""

from __future__ import annotations

from noisygd.solvers.base import Budget, PublicFacts, Solver
from noisygd.solvers.dp_ftrl import DPFTRLSolver
from noisygd.solvers.langevin import LangevinSolver
from noisygd.solvers.newton import NewtonSolver
from noisygd.solvers.noisy_gd import NoisyGDSolver
from noisygd.solvers.noisy_sgd import NoisySGDSolver
from noisygd.solvers.output_perturbation import OutputPerturbationSolver
from noisygd.solvers.rrpsgd import RRPSGDSolver
from noisygd.solvers.ssp import SSPSolver

__all__ = [
    "DEFAULT_SOLVER",
    "SOLVERS",
    "Budget",
    "DPFTRLSolver",
    "LangevinSolver",
    "NewtonSolver",
    "NoisyGDSolver",
    "NoisySGDSolver",
    "OutputPerturbationSolver",
    "PublicFacts",
    "RRPSGDSolver",
    "SSPSolver",
    "Solver",
    "get_solver",
]

#: Every built-in method, by its ``method=`` name.
SOLVERS: dict[str, type[Solver]] = {
    cls.name: cls
    for cls in (NoisyGDSolver, NoisySGDSolver, DPFTRLSolver, LangevinSolver,
                OutputPerturbationSolver, RRPSGDSolver, SSPSolver, NewtonSolver)
}

#: The method ``method="auto"`` means.
DEFAULT_SOLVER = "noisy_gd"


def get_solver(method: str | Solver) -> Solver:
    """The solver for ``method``: a name in :data:`SOLVERS` (or ``"auto"``), or an instance.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the valid ones).
    TypeError
        For anything that is neither a string nor a :class:`Solver`.
    """
    if isinstance(method, Solver):
        return method
    if isinstance(method, type) and issubclass(method, Solver):
        raise TypeError(f"method must be a Solver instance, not the class {method.__name__} "
                        f"(pass {method.__name__}())")
    if not isinstance(method, str):
        raise TypeError(f"method must be a method name or a Solver instance, "
                        f"got {type(method).__name__}")
    name = DEFAULT_SOLVER if method == "auto" else method
    if name not in SOLVERS:
        raise ValueError(f"unknown method {method!r}; choose 'auto' or one of: "
                         f"{', '.join(sorted(SOLVERS))}")
    return SOLVERS[name]()
