"""Objectives: per-example losses with their constants and clipped gradient sums."""

from noisygd.objectives.base import MarginModel, Objective, ObjectiveConstants, Regime
from noisygd.objectives.centred import CentredGLM
from noisygd.objectives.distance import SquaredDistanceLoss
from noisygd.objectives.glm import GLMObjective, HuberLoss, LogisticLoss, SquaredLoss
from noisygd.objectives.multinomial import MultiMarginModel, MultinomialLogisticLoss

__all__ = [
    "CentredGLM",
    "GLMObjective",
    "HuberLoss",
    "LogisticLoss",
    "MarginModel",
    "MultiMarginModel",
    "MultinomialLogisticLoss",
    "Objective",
    "ObjectiveConstants",
    "Regime",
    "SquaredDistanceLoss",
    "SquaredLoss",
]
