"""What every private algorithm returns: parameters plus the event it performed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from noisygd.accounting.events import DpEvent
from noisygd.exceptions import AssumptionError


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


def check_row_norm_bound(X: np.ndarray, row_norm_bound: float, consequence: str = "") -> None:
    r"""Raise :class:`~noisygd.exceptions.AssumptionError` unless every
    :math:`\lVert x_i\rVert \le B` (up to a relative 1e-9 for rounding).

    For algorithms whose privacy proof needs the declared bound (no clipping). The message
    names the bound, never a norm of the data: the check is an assumption of the theorem,
    and the value of the largest norm would be an unaccounted release.
    """
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    if norms.size and float(norms.max()) > row_norm_bound * (1.0 + 1e-9):
        raise AssumptionError(f"a row has norm above row_norm_bound={row_norm_bound}{consequence}")
