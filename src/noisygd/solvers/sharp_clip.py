r"""The sharp clip for a solver whose planner reads no noise-to-signal ratio of its own.

DP-FTRL and the dynamic schedules take ``method_options["sharp_clip"] = s`` like NoisyGD
(:mod:`noisygd.solvers.noisy_gd`, "The sharp clip"), with the noise regime of the problem read
from NoisyGD's plan for the same public facts and budget: :math:`q = \sqrt d\,z/n` of that
plan places the problem between optimisation-limited and noise-limited
(:func:`noisygd.planning.noise_regime`), and the solver plans at the base clip times
:func:`noisygd.planning.sharp_clip_factor`. Public inputs only; a heuristic, measured
(docs/noisygd.md, "The sharp clip of a noise-limited run").
"""

from __future__ import annotations

import dataclasses
from typing import Any

from noisygd.exceptions import AssumptionError
from noisygd.planning import check_sharp_ratio, sharp_clip_factor
from noisygd.solvers.base import Budget, PublicFacts

__all__ = ["regime_clip"]


def regime_clip(facts: PublicFacts, budget: Budget, sharp: Any
                ) -> tuple[PublicFacts, dict[str, Any]]:
    """``facts`` with the clip scaled by the problem's noise regime, and the record of it.

    Parameters
    ----------
    facts : PublicFacts
        The solver's facts, without the ``"sharp_clip"`` option.
    budget : Budget
        The solver's budget (NoisyGD's plan for it reads the regime).
    sharp : float
        :math:`s \\in (0, 1]`.

    Returns
    -------
    facts : PublicFacts
        With ``clip`` = base clip times the factor (unchanged when the factor is 1).
    clip_rule : dict
        ``base_clip``, ``sharp``, ``noise_to_signal``, ``factor``, ``clip`` and ``rule``.
    """
    from noisygd.solvers.noisy_gd import NoisyGDSolver

    s = check_sharp_ratio(sharp, "method_options['sharp_clip']")
    base_clip = facts.clip_norm()
    ratio = None
    if facts.radius is None and facts.constants.smoothness is not None:
        try:  # NoisyGD's own plan of these facts (its options do not apply)
            plan, _ = NoisyGDSolver().plan_quietly(dataclasses.replace(facts, options={}),
                                                   dataclasses.replace(budget, secure=False),
                                                   pilot=False)
            ratio = plan.details.get("noise_to_signal")
        except (AssumptionError, ValueError, ArithmeticError):
            ratio = None
    if ratio is None:
        factor = 1.0
        rule = ("not applied: a projection radius, no smoothness constant or no NoisyGD plan "
                "of these facts to read the noise regime from")
    else:
        factor = sharp_clip_factor(ratio, s)
        rule = ("clip = base * (1 - (1 - sharp) r), r in [0, 1] the noise regime of NoisyGD's "
                "plan for the same facts and budget (log-linear in sqrt(d) z / n from 0.02 to "
                "0.2: noisygd.planning.sharp_clip_factor); a heuristic, measured")
    scaled = facts if factor == 1.0 else dataclasses.replace(facts, clip=base_clip * factor)
    return scaled, {"base_clip": base_clip, "sharp": s, "noise_to_signal": ratio,
                    "factor": factor, "clip": base_clip * factor, "rule": rule}
