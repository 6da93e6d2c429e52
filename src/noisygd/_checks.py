"""Argument checks shared by every layer: one policy, one module (imports nothing of noisygd).

The policy, the same for every public function of noisygd:

* a value of the wrong **type** raises :class:`TypeError` (``True`` and ``False`` are never
  numbers here, strings are never numbers, a float is never a count);
* a value of the right type but a **bad value** (negative, zero where positive is needed,
  NaN, infinite, out of range) raises :class:`ValueError`.

Messages name the parameter and what was expected, and show the value the caller passed
(a parameter, never a statistic of the data).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = [
    "check_bool",
    "check_choice",
    "check_fraction",
    "check_generator",
    "check_nonnegative",
    "check_positive",
    "check_positive_int",
    "check_probability",
    "check_real",
]


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_real(name: str, value: Any) -> float:
    """``float(value)`` for a real number (``TypeError`` for bools, strings, complex, None)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_show(value)}")
    return float(value)


def check_positive(name: str, value: Any) -> float:
    """A real number ``> 0`` and finite (``ValueError`` otherwise)."""
    v = check_real(name, value)
    if not (v > 0.0) or not math.isfinite(v):
        raise ValueError(f"{name} must be positive and finite, got {_show(value)}")
    return v


def check_nonnegative(name: str, value: Any) -> float:
    """A real number ``>= 0`` and finite."""
    v = check_real(name, value)
    if not (v >= 0.0) or not math.isfinite(v):
        raise ValueError(f"{name} must be finite and >= 0, got {_show(value)}")
    return v


def check_probability(name: str, value: Any) -> float:
    """A real number in the open interval (0, 1) (a delta, a failure probability)."""
    v = check_real(name, value)
    if not (0.0 < v < 1.0):
        raise ValueError(f"{name} must be in the open interval (0, 1), got {_show(value)}")
    return v


def check_fraction(name: str, value: Any, *, closed_right: bool = True) -> float:
    """A real number in (0, 1] (or (0, 1) with ``closed_right=False``): a sampling rate."""
    v = check_real(name, value)
    ok = 0.0 < v <= 1.0 if closed_right else 0.0 < v < 1.0
    if not ok:
        interval = "(0, 1]" if closed_right else "(0, 1)"
        raise ValueError(f"{name} must be in {interval}, got {_show(value)}")
    return v


def check_positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """An integer ``>= minimum`` (``TypeError`` for floats such as 400.7 or 400.0, and bools)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {_show(value)}")
    v = int(value)
    if v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {_show(value)}")
    return v


def check_bool(name: str, value: Any) -> bool:
    """A bool (Python or NumPy); ``TypeError`` for anything else, 0 and 1 included."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {_show(value)}")
    return bool(value)


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (``TypeError`` for a non-string, ``ValueError`` listing the choices)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {choices}, got {_show(value)}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {_show(value)}")
    return value


def check_generator(name: str, value: Any) -> np.random.Generator:
    """A :class:`numpy.random.Generator` (the only source of randomness noisygd accepts)."""
    if not isinstance(value, np.random.Generator):
        raise TypeError(f"{name} must be a numpy.random.Generator, got {type(value).__name__}")
    return value
