"""Private training algorithms. Each returns a FitResult carrying its privacy event."""

from noisygd.algorithms.base import FitResult
from noisygd.algorithms.noisy_gd import noisy_gd

__all__ = ["FitResult", "noisy_gd"]
