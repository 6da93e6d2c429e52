r"""A run's noise regime on the scale of its public noise-to-signal ratio, and the sharp clip's
factor on it (docs/noisygd.md, "The sharp clip of a noise-limited run").

The planners (:mod:`noisygd.planning`, which re-exports these names) read the regime before a
run; private Newton (:mod:`noisygd.algorithms.newton`) reads it during its run, after its
first step, so the rule sits in the algorithms' layer.
"""

from __future__ import annotations

import math
from typing import Any

from noisygd._checks import check_real

__all__ = ["NOISE_TO_SIGNAL_HIGH", "NOISE_TO_SIGNAL_LOW", "check_sharp_ratio", "noise_regime",
           "sharp_clip_factor"]

#: The public noise-to-signal ratio :math:`\sqrt d\,z/n` of one NoisyGD step (the noise's
#: norm over the largest possible gradient sum, both in units of the clip) below which a run
#: is optimisation-limited and above which it is noise-limited: the momentum's thresholds
#: (:func:`noisygd.planning.auto_momentum`), reused by the sharp clip (:func:`sharp_clip_factor`).
NOISE_TO_SIGNAL_LOW, NOISE_TO_SIGNAL_HIGH = 0.02, 0.2


def noise_regime(noise_to_signal: float) -> float:
    r"""Where a run sits between optimisation-limited (0) and noise-limited (1):

    .. math:: r = \mathrm{clip}\Big(\frac{\log(q/q_{lo})}{\log(q_{hi}/q_{lo})}, 0, 1\Big)

    for the public ratio :math:`q = \sqrt d\,z/n` (``details["noise_to_signal"]`` of the
    accelerated plan) and the thresholds :data:`NOISE_TO_SIGNAL_LOW`,
    :data:`NOISE_TO_SIGNAL_HIGH`; the momentum falls from
    :data:`noisygd.planning.DEFAULT_MOMENTUM` to 0 along the same scale
    (:func:`noisygd.planning.auto_momentum`: :math:`m = 0.95(1 - r)`).

    Parameters
    ----------
    noise_to_signal : float
        :math:`q \ge 0`.

    Returns
    -------
    float
        :math:`r \in [0, 1]`.
    """
    q = check_real("noise_to_signal", noise_to_signal)
    lo, hi = NOISE_TO_SIGNAL_LOW, NOISE_TO_SIGNAL_HIGH
    if q <= lo:
        return 0.0
    if q >= hi:
        return 1.0
    return math.log(q / lo) / math.log(hi / lo)


def sharp_clip_factor(noise_to_signal: float, sharp: float) -> float:
    r"""The factor on a run's base clip for its noise regime (docs/noisygd.md, "The sharp
    clip of a noise-limited run"):

    .. math:: f = 1 - (1 - s)\,r(q),

    1 for an optimisation-limited run (:math:`q \le 0.02`), the sharp ratio :math:`s` for a
    noise-limited one (:math:`q \ge 0.2`), log-linear between (:func:`noise_regime`, the
    momentum's scale). :math:`s` is the loss's bound on the residual of a correctly
    classified row over its bound on every residual (1/2 for the logistic loss:
    :meth:`~noisygd.objectives.glm.LogisticLoss.correct_class_residual_bound`), so that at
    :math:`f = s` the clip still leaves every correctly classified row's gradient (and every
    gradient at :math:`\theta = 0`) as the base clip did at residual 1, and the noise, which
    scales with the clip, is :math:`s` times smaller. A heuristic trade of the clip's bias for
    noise, measured (the docs); public inputs only, so privacy is unchanged.

    Parameters
    ----------
    noise_to_signal : float
        :math:`q` of the plan at the base clip.
    sharp : float
        :math:`s \in (0, 1]`.

    Returns
    -------
    float
        :math:`f \in [s, 1]`.
    """
    return 1.0 - (1.0 - check_sharp_ratio(sharp)) * noise_regime(noise_to_signal)


def check_sharp_ratio(sharp: Any, name: str = "sharp") -> float:
    """``sharp`` as a float in (0, 1] (TypeError for a non-number, ValueError outside)."""
    s = check_real(name, sharp)
    if not 0.0 < s <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], got {s!r}")
    return s
