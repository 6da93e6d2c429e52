"""Gradient oracles: the one interface through which algorithms read private rows."""

from noisygd.oracles.array import ArrayOracle
from noisygd.oracles.base import GradientOracle
from noisygd.oracles.factory import make_oracle
from noisygd.oracles.rows import clip_rows, row_norms, row_scale

__all__ = ["ArrayOracle", "GradientOracle", "clip_rows", "make_oracle", "row_norms", "row_scale"]
