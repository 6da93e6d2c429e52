"""Gradient oracles: the one interface through which algorithms read private rows."""

from noisygd.oracles.array import ArrayOracle
from noisygd.oracles.base import GradientOracle
from noisygd.oracles.rows import clip_rows, row_norms, row_scale

__all__ = ["ArrayOracle", "GradientOracle", "clip_rows", "row_norms", "row_scale"]
