r"""A bound and what it assumes: the quantity, the comparator, the guarantee, each premise.

A utility bound is a number only together with (i) the **quantity** it bounds (an excess
empirical risk, a mean squared gradient norm, an average regret, a population risk), (ii) the
**comparator** it is measured against (the minimiser of the objective the run descends, or any
model in a ball of radius ``D``), (iii) the **guarantee** (in expectation, or with probability
at least :math:`1 - \beta`) and (iv) its **assumptions** (a reference norm ``D``, a loss gap
:math:`F_0`, a Lipschitz constant...), each with where its value comes from:

* ``"declared"``: a public constant of the problem (the loss's Lipschitz constant for rows
  of declared norm, a projection radius);
* ``"derived"``: proved from declared facts (:math:`\lVert\theta^*\rVert \le
  \sqrt{2F_0/\lambda}` for a ridge :math:`\lambda`);
* ``"given"``: passed by the user (``method_options``);
* ``"paid"``: a private estimate paid from the budget (a recorded release, e.g. NoisyGD's
  distance pilot, :mod:`noisygd.solvers.distance`): nothing proves it, so the bound holds
  only if the estimate does (privacy never depends on it);
* ``"nominal"``: a placeholder value that nothing proves (the planner's
  ``DEFAULT_INIT_DISTANCE = 1.0``): the bound is then conditional on it holding.

Two bounds are **comparable** (:func:`comparable`) only when all four agree: the same
quantity, the same comparator, the same guarantee and the same assumptions (names, values and
sources). A nominal premise is never compared with a derived one, whatever the numbers.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["SOURCES", "Assumption", "Bound", "comparable"]

#: Where an assumption's value comes from (module doc).
SOURCES = ("declared", "derived", "given", "paid", "nominal")


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.6g}")
    return value


@dataclasses.dataclass(frozen=True)
class Assumption:
    """One premise of a bound: ``name`` (e.g. ``"D >= ||theta_1 - theta*||"``), its value,
    its source (:data:`SOURCES`) and where it comes from (``origin``)."""

    name: str
    value: float | str | None
    source: str
    origin: str = ""

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {self.source!r}")

    def text(self) -> str:
        """``name = value [source: origin]``."""
        value = "" if self.value is None else (
            f" = {self.value:.4g}" if isinstance(self.value, float) else f" = {self.value}")
        origin = f": {self.origin}" if self.origin else ""
        return f"{self.name}{value} [{self.source}{origin}]"

    def key(self) -> tuple[str, Any, str]:
        """What must agree for two bounds to share this premise."""
        return (self.name, _rounded(self.value), self.source)


@dataclasses.dataclass(frozen=True)
class Bound:
    """A utility bound with its quantity, comparator, guarantee, reference and assumptions.

    Attributes
    ----------
    value : float
    quantity : str
        What is bounded, e.g. ``"E F(theta_out) - F(theta*)"``.
    comparator : str
        What it is measured against.
    guarantee : str
        ``"in expectation"`` or ``"with probability >= 1 - beta (beta = 0.05)"``.
    reference : str
        The theorem or equation.
    assumptions : tuple of Assumption
    covers_run : bool
        Whether it is a guarantee for the run the plan makes (else: for the textbook run with
        the same noise and steps, reported for reference).
    note : str
    """

    value: float
    quantity: str
    comparator: str
    guarantee: str
    reference: str
    assumptions: tuple[Assumption, ...] = ()
    covers_run: bool = False
    note: str = ""

    @property
    def nominal(self) -> bool:
        """Whether any premise is nominal (nothing proves its value)."""
        return any(a.source == "nominal" for a in self.assumptions)

    def comparison_key(self) -> tuple[Any, ...]:
        """Equal for exactly the bounds :func:`comparable` ranks against each other."""
        return (self.quantity, self.comparator, self.guarantee,
                tuple(sorted(a.key() for a in self.assumptions)))

    def to_dict(self) -> dict[str, Any]:
        """Plain types (JSON)."""
        out = dataclasses.asdict(self)
        out["assumptions"] = [dataclasses.asdict(a) for a in self.assumptions]
        out["nominal"] = self.nominal
        return out


def comparable(a: Bound, b: Bound) -> bool:
    """Whether ``a`` and ``b`` bound the same quantity against the same comparator with the
    same guarantee under the same assumptions (module doc)."""
    return a.comparison_key() == b.comparison_key()
