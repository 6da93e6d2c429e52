"""Argument checks shared by every layer (this module imports nothing of noisygd)."""

from __future__ import annotations

import math
import numbers


def check_positive(name: str, value: float) -> float:
    """``float(value)`` if it is positive and finite, else ``ValueError`` naming ``name``."""
    v = float(value)
    if not (v > 0.0) or not math.isfinite(v):
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return v


def check_real_positive(name: str, value: float) -> float:
    """As :func:`check_positive`, but ``TypeError`` for a bool or a non-real ``value``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    return check_positive(name, value)
