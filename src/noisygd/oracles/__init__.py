"""Gradient oracles: the one interface through which algorithms read private rows.

The names below are imported on first use (PEP 562), so that importing one submodule (e.g.
``noisygd.oracles.base`` for :mod:`noisygd.torch`) does not load the array oracle, its compiled
kernels and every objective.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from noisygd.oracles.array import ArrayOracle
    from noisygd.oracles.base import GradientOracle
    from noisygd.oracles.factory import make_oracle
    from noisygd.oracles.rows import clip_rows, row_norms, row_scale

_WHERE = {"ArrayOracle": "array", "GradientOracle": "base", "make_oracle": "factory",
          "clip_rows": "rows", "row_norms": "rows", "row_scale": "rows"}

__all__ = ["ArrayOracle", "GradientOracle", "clip_rows", "make_oracle", "row_norms", "row_scale"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f"noisygd.oracles.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'noisygd.oracles' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
