"""The training methods available as ``method=`` in estimators and ``noisygd fit``.

Each adapter plans an algorithm for a per-problem budget (epsilon, delta),
runs it and returns its :class:`~noisygd.algorithms.base.FitResult`; the
composition of everything released is accounted in
:func:`noisygd.training.fit_private`. Importing this module registers them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from noisygd.accounting.events import Neighbouring
from noisygd.algorithms.base import FitResult
from noisygd.exceptions import AssumptionError
from noisygd.objectives.base import Objective
from noisygd.training import MethodSpec, register_method


def _clip_norm(objective: Objective, row_norm_bound: float, clip: float | None) -> float:
    """The clipping norm: the user's, else the objective's Lipschitz constant."""
    if clip is not None:
        if not (clip > 0) or not np.isfinite(clip):
            raise ValueError(f"clip must be positive and finite, got {clip!r}")
        return float(clip)
    lipschitz = objective.constants(row_norm_bound).lipschitz
    if lipschitz is None:
        raise AssumptionError(
            f"{type(objective).__name__} states no Lipschitz constant for these settings: "
            "give a clipping norm (clip=...) or a projection radius"
        )
    return float(lipschitz)


def fit_noisy_gd(
    objective: Objective,
    X: np.ndarray,
    y: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    n_samples: float,
    relation: Neighbouring,
    row_norm_bound: float,
    clip: float | None,
    max_iter: int | None,
    rng: np.random.Generator,
    **options: Any,
) -> FitResult:
    """NoisyGD (Lecture 12, eq. 12.1) with sigma, T and eta from the section-12.2 planner."""
    from noisygd.algorithms.noisy_gd import noisy_gd
    from noisygd.planning import plan_noisy_gd

    clip_norm = _clip_norm(objective, row_norm_bound, clip)
    constants = objective.constants(row_norm_bound)
    plan_kwargs: dict[str, Any] = {"clip": clip_norm, "relation": relation}
    init_distance = getattr(objective, "optimum_norm_bound", lambda: None)()
    if init_distance is not None:
        plan_kwargs["init_distance"] = init_distance
    if max_iter is not None:
        plan_kwargs["max_steps"] = int(max_iter)
    plan_kwargs.update(options.pop("plan", {}))
    plan = plan_noisy_gd(
        epsilon,
        delta,
        n_samples,
        objective.n_params(X.shape[1]),
        constants,
        **plan_kwargs,
    )
    run_kwargs = {**plan.noisy_gd_kwargs(), **options}
    result = noisy_gd(
        objective,
        X,
        y,
        clip=clip_norm,
        n_samples=n_samples,
        relation=relation,
        rng=rng,
        **run_kwargs,
    )
    result.info["plan"] = {
        k: (v.value if hasattr(v, "value") else v)
        for k, v in dataclasses.asdict(plan).items()
        if isinstance(v, int | float | str | bool | type(None)) or hasattr(v, "value")
    }
    return result


register_method(
    MethodSpec(
        name="noisy_gd",
        fit=fit_noisy_gd,
        gaussian=True,
        description="NoisyGD (eq. 12.1), planner of section 12.2, exact Gaussian-DP accounting",
    )
)
