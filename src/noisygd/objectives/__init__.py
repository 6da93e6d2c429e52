"""Objectives: per-example losses with their constants and clipped gradient sums."""

from noisygd.objectives.base import Objective, ObjectiveConstants, Regime
from noisygd.objectives.centred import CentredGLM
from noisygd.objectives.glm import GLMObjective, HuberLoss, LogisticLoss, SquaredLoss, row_norms

__all__ = [
    "CentredGLM",
    "GLMObjective",
    "HuberLoss",
    "LogisticLoss",
    "Objective",
    "ObjectiveConstants",
    "Regime",
    "SquaredLoss",
    "row_norms",
]
