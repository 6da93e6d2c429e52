"""The white-box view of a full-batch run: a recording oracle and the at-the-clip check.

:class:`StepRecorder` delegates every call to the oracle it wraps (a ridge-free
:class:`~noisygd.solvers.ridge.RidgedOracle`) and records, at each clipped-gradient call,
the point, the ordinary rows' clipped sum there and the canary's clipped gradient there (the
canary's row served as the oracle serves rows, projected onto the ball about a centred
objective's centre):
what an auditor who knows ``D`` and the canary computes from the iterates the white-box
threat model grants (:mod:`noisygd.audit.estimator_problems`,
:func:`noisygd.audit.problems.dynamic_problem`).
"""

from __future__ import annotations

import math

import numpy as np

from noisygd.oracles.array import ArrayOracle
from noisygd.solvers.ridge import RidgedOracle

__all__ = ["AT_CLIP_RTOL", "StepRecorder", "at_clip"]

#: Relative tolerance of "at the clip" (rounding of the norm and of the clip factor).
AT_CLIP_RTOL = 1e-9


class StepRecorder(RidgedOracle):
    """Delegates every call to ``base``; records each clipped-sum call's point, the ordinary
    rows' clipped sum there and the canary's clipped gradient there."""

    def __init__(self, base: ArrayOracle, canary_x: np.ndarray, canary_y: np.ndarray,
                 canary_row: int | None) -> None:
        super().__init__(base, 0.0)
        self.objective = base.objective
        self.canary_x = _as_served(base, canary_x)
        self.canary_y = base.objective.check_targets(canary_y)
        self.canary_row = canary_row
        self.records: list[tuple[np.ndarray, np.ndarray, np.ndarray, float]] = []

    def clipped_gradient_sum(self, theta: np.ndarray, clip: float | None,
                             rows: np.ndarray | None = None) -> np.ndarray:
        """The wrapped sum (unchanged); records what the white-box auditor computes."""
        if rows is not None:
            raise ValueError("the white-box NoisyGD audit expects full-batch calls")
        total = self.base.clipped_gradient_sum(theta, clip, rows)
        # the canary's clipped gradient, from the oracle's own objective (as it computes rows)
        c = np.asarray(self.objective.clipped_gradient_sum(
            np.asarray(theta, dtype=float), self.canary_x, self.canary_y, clip), dtype=float)
        # a copy: the caller adds the ridge and the noise to ``total`` in place
        ordinary = total - c if self.canary_row is not None else np.array(total, dtype=float)
        self.records.append((np.array(theta, dtype=float), ordinary,
                             c, float(clip if clip is not None else math.inf)))
        return total


def _as_served(base: ArrayOracle, canary_x: np.ndarray) -> np.ndarray:
    r"""The canary's row as ``base`` serves it: projected onto the ball of radius
    ``base.row_norm_bound`` around its objective's public centre, in the norm of its
    per-feature scale :math:`f` (the :class:`~noisygd.objectives.centred.CentredGLM` map
    :math:`x \mapsto c + \min(1, R_c/\lVert f\odot(x - c)\rVert)(x - c)`; a row inside
    the ball, or an objective without a centre, unchanged bit for bit)."""
    from noisygd.oracles.rows import row_scale

    centre = getattr(base.objective, "centre", None)
    if centre is None:
        return canary_x
    scale = float(row_scale(canary_x, float(base.row_norm_bound), centre=centre,
                            feature_scale=getattr(base.objective, "feature_scale", None))[0])
    return canary_x if scale == 1.0 else centre + scale * (canary_x - centre)


def at_clip(c: np.ndarray, C: float, clip: float, t: int) -> float:
    """``||c||`` after checking it is the clip ``C`` (to :data:`AT_CLIP_RTOL`) at step
    ``t`` and that the step clipped at ``C``; raises otherwise (the canary would not be the
    worst case on this run)."""
    norm = float(np.linalg.norm(c))
    if abs(norm - C) > AT_CLIP_RTOL * C or clip != C:
        raise RuntimeError(f"the canary's clipped gradient has norm {norm:.6g} at step "
                           f"{t + 1}, not the clip {C:.6g}: the canary is not the worst "
                           "case on this run")
    return norm
