r"""The sharp clip of a noise-limited run: the one place that scales a solver's clip.

A solver that takes ``method_options["sharp_clip"] = s`` (``Solver.sharp_clip_losses``) plans
at the base clip times :func:`noisygd.planning.sharp_clip_factor` of a public noise-to-signal
ratio :math:`q` (docs/noisygd.md, "The sharp clip of a noise-limited run"; a heuristic,
measured). :func:`scaled_clip` makes that step and its record for every solver: NoisyGD and
NoisySGD read :math:`q` from their own plan at the base clip (:math:`\sqrt d\,z/n`,
:math:`\sqrt d\,z/b`); DP-FTRL and the dynamic schedules, whose planners read no such ratio,
from NoisyGD's plan of the same public facts and budget
(:func:`noisygd.solvers.noisy_gd.regime_clip`). Public inputs
only, so the privacy event is unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from noisygd.planning import sharp_clip_factor
from noisygd.solvers.base import PublicFacts

__all__ = ["scaled_clip"]


def scaled_clip(facts: PublicFacts, sharp: float, ratio: float | None, *, ratio_source: str,
                not_applied: str | None = None) -> tuple[PublicFacts, dict[str, Any]]:
    """``facts`` at the base clip times the sharp clip's factor, and the record of it.

    Parameters
    ----------
    facts : PublicFacts
        The solver's facts (their clip, else the Lipschitz constant, is the base clip).
    sharp : float
        :math:`s \\in (0, 1]`, already checked (:func:`noisygd.planning.check_sharp_ratio`).
    ratio : float or None
        The public noise-to-signal ratio :math:`q`; None: the rule does not apply.
    ratio_source : str
        Where :math:`q` was read (recorded in the rule).
    not_applied : str, optional
        Why the rule does not apply here (the factor is then 1).

    Returns
    -------
    facts : PublicFacts
        With ``clip`` = base clip times the factor (the same object when the factor is 1).
    clip_rule : dict
        ``base_clip``, ``sharp``, ``noise_to_signal``, ``factor``, ``clip`` and ``rule``.
    """
    base_clip = facts.clip_norm()
    if not_applied is not None or ratio is None:
        factor = 1.0
        rule = f"not applied: {not_applied or 'no noise-to-signal ratio to read'}"
    else:
        factor = sharp_clip_factor(ratio, sharp)
        rule = (f"clip = base * (1 - (1 - sharp) r), r in [0, 1] the noise regime of "
                f"{ratio_source} (log-linear from 0.02 to 0.2: "
                "noisygd.planning.sharp_clip_factor); a heuristic, measured")
    scaled = facts if factor == 1.0 else dataclasses.replace(facts, clip=base_clip * factor)
    return scaled, {"base_clip": base_clip, "sharp": sharp, "noise_to_signal": ratio,
                    "factor": factor, "clip": base_clip * factor, "rule": rule}
