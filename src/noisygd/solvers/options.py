r"""Checks of ``method_options`` values that a solver runs before anything is recorded or read.

:meth:`noisygd.solvers.base.Solver.check_options` refuses a key the method does not take; a
solver's ``option_checks`` maps the keys it takes to one of the checks below, each called as
``check(label, value)`` with ``label = "method_options['key']"``. They refuse a value of the
wrong type or outside its domain with the option named (``TypeError`` or ``ValueError``, as
:mod:`noisygd._checks`), where the run would otherwise fail after the private count and the
pre-releases had spent budget, with a message naming an internal variable ("could not convert
string to float", "math domain error", numpy's "Eigenvalues did not converge"), or would
accept it silently (an option the plan does not use in this fit). What depends on the data's
public shape (``theta0``'s length against the number of parameters) is checked where it is
known, by the run.

Checks are plain functions, so that a user's own solver may reuse them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from noisygd._checks import (
    check_bool,
    check_choice,
    check_fraction,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_probability,
    check_real,
)

__all__ = [
    "MAX_OPTION_SCALE",
    "OptionCheck",
    "check_bool_option",
    "check_choice_option",
    "check_count_option",
    "check_fraction_option",
    "check_horizon_option",
    "check_l2_option",
    "check_momentum_option",
    "check_nonnegative_option",
    "check_open_share_option",
    "check_optional_choice",
    "check_pilot_option",
    "check_positive_int_option",
    "check_positive_option",
    "check_probability_option",
    "check_shares_option",
    "check_sharp_option",
    "check_start_option",
    "check_step_rule_option",
    "optional",
]

#: ``check(label, value)``: raises on a bad value (what it returns is not used).
OptionCheck = Callable[[str, Any], object]

#: The checks of :mod:`noisygd._checks` already take ``(name, value)``: used as they are.
check_bool_option = check_bool
check_positive_int_option = check_positive_int
check_fraction_option = check_fraction
check_probability_option = check_probability
#: An integer :math:`\ge 0`.
check_count_option = functools.partial(check_positive_int, minimum=0)
#: A real number in :math:`(0, 1)` (a share of a budget that leaves some for the rest).
check_open_share_option = functools.partial(check_fraction, closed_right=False)

#: Largest ridge, curvature clip or scale factor accepted in ``method_options`` (the
#: estimators' ``SCALE_RANGE`` upper end): the planners square and invert these, and at
#: 1e308 Newton's eigen-decomposition received infinities.
MAX_OPTION_SCALE = 1e100


def _at_most(label: str, value: float) -> None:
    if value > MAX_OPTION_SCALE:
        raise ValueError(f"{label} must be at most {MAX_OPTION_SCALE:g} (the planner squares "
                         f"and inverts it), got {value!r}")


def check_positive_option(label: str, value: Any) -> None:
    """A finite real number in :math:`(0, 10^{100}]`."""
    _at_most(label, check_positive(label, value))


def check_nonnegative_option(label: str, value: Any) -> None:
    """A finite real number in :math:`[0, 10^{100}]`."""
    _at_most(label, check_nonnegative(label, value))


def check_step_rule_option(label: str, value: Any) -> None:
    r"""Langevin's step rule: ``"auto"``, ``"theorem4"`` or a step size :math:`> 0`
    (:func:`noisygd.planning_langevin.plan_langevin`, which checks it against
    :math:`1/\beta`)."""
    from noisygd.planning_langevin import STEP_RULES

    if isinstance(value, str):
        check_choice(label, value, tuple(STEP_RULES))
        return
    check_positive(label, value)


def optional(check: OptionCheck) -> OptionCheck:
    """``check``, with None accepted (the method's default)."""
    def check_or_none(label: str, value: Any) -> None:
        if value is not None:
            check(label, value)
    check_or_none.__doc__ = f"None, or: {check.__doc__}"
    return check_or_none


def check_momentum_option(label: str, value: Any) -> None:
    """A real number in :math:`[0, 1)`."""
    m = check_real(label, value)
    if not 0.0 <= m < 1.0:
        raise ValueError(f"{label} must be in [0, 1), got {value!r}")


def check_choice_option(*choices: str) -> OptionCheck:
    """A check that the value is one of ``choices`` (its docstring says which)."""
    def check(label: str, value: Any) -> None:
        check_choice(label, value, choices)
    check.__doc__ = f"One of {choices!r} (``ValueError`` for another string)."
    return check


def check_optional_choice(*choices: str) -> OptionCheck:
    """A check that the value is None or one of ``choices`` (its docstring says which)."""
    def check(label: str, value: Any) -> None:
        if value is not None:
            check_choice(label, value, choices)
    check.__doc__ = f"None or one of {choices!r} (``ValueError`` for another string)."
    return check


#: NoisyGD's ``"horizon"``: None (the plan's own steps) or ``"ridge"``.
check_horizon_option = check_optional_choice("ridge")


def check_sharp_option(label: str, value: Any) -> None:
    """The sharp clip's ratio: a real number in :math:`(0, 1]`
    (:func:`noisygd.planning.check_sharp_ratio`)."""
    from noisygd.planning import check_sharp_ratio

    check_sharp_ratio(value, label)


def check_pilot_option(label: str, value: Any) -> None:
    r"""The distance pilot: True, False, None or a share of :math:`\mu^2`
    (:func:`noisygd.solvers.distance.pilot_share`, whose messages name the option)."""
    del label
    from noisygd.solvers.distance import pilot_share

    pilot_share(value)


def check_l2_option(label: str, value: Any) -> None:
    """``"auto"`` (the planned ridge) or a number in :math:`[0, 10^{100}]`."""
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f"{label} must be 'auto' or a number >= 0, got {value!r}")
        return
    check_nonnegative_option(label, value)


def check_start_option(label: str, value: Any) -> None:
    """None (zeros) or a starting point: a finite one-dimensional array of real numbers (its
    length is the run's to check, against the number of parameters)."""
    if value is None:
        return
    refusal = f"{label} must be a one-dimensional array of real numbers"
    if isinstance(value, str | bytes):
        raise TypeError(refusal)
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):  # ragged nesting
        raise TypeError(refusal) from None
    if raw.dtype.kind not in "iuf":  # strings, bools, objects, complex
        raise TypeError(refusal)
    arr = raw.astype(np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{label} must be a non-empty one-dimensional array, got "
                         f"shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{label} must be finite")


def check_shares_option(label: str, value: Any, counts: tuple[int, ...] = (3,)) -> None:
    """Positive real numbers summing to 1 (a list, tuple or array), as many as one of
    ``counts`` (default three)."""
    words = " or ".join({3: "three", 6: "six"}.get(c, str(c)) for c in counts)
    if isinstance(value, str | bytes | dict | set | frozenset) or not hasattr(value, "__len__"):
        raise TypeError(f"{label} must be {words} positive numbers summing to 1 (in order: "
                        f"a list, tuple or array), got "
                        f"{type(value).__name__}")
    if len(value) not in counts:
        raise ValueError(f"{label} must hold {words} numbers, got {len(value)}")
    total = math.fsum(check_positive(f"{label}[{k}]", s) for k, s in enumerate(value))
    if not math.isclose(total, 1.0, rel_tol=0.0, abs_tol=1e-12):
        raise ValueError(f"{label} must sum to 1, got {total!r}")
