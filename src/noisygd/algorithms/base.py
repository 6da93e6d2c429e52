"""What every private algorithm returns: parameters plus the event it performed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from noisygd.accounting.events import DpEvent


@dataclass
class FitResult:
    """Output of a private training algorithm.

    Attributes
    ----------
    theta : ndarray
        The released parameters.
    event : DpEvent
        Exactly what the run did, for the accountants. Nothing else about the
        run is private-data-dependent except through ``theta`` and ``info``
        entries derived from released quantities.
    n_iter : int
        Number of noisy steps actually performed.
    info : dict
        Public facts about the run: the planner's choice and the bound it
        minimised, step sizes, timings. Never raw statistics of the data.
    """

    theta: np.ndarray
    event: DpEvent
    n_iter: int
    info: dict[str, Any] = field(default_factory=dict)
