r"""Noise calibration: the smallest noise multiplier meeting an (epsilon, delta) target.

The generic search (:func:`calibrate_noise_multiplier`) works for any event
family ``z -> make_event(z)`` whose epsilon is non-increasing in the noise
multiplier ``z`` (true of every accountant here: a larger ``z`` is a
post-processing-dominated mechanism). It bisects on ``log z`` keeping the
invariant that the upper end of the bracket *meets* the target, and returns
that upper end, so the result never overshoots the privacy target even if
the accountant is only approximately monotone (PLD discretisation).

The fast path for a composition of ``T`` identical Gaussian mechanisms
(:func:`calibrate_gaussian_composition`, the NoisyGD of seed 000 Section
12.1.2) uses exact Gaussian DP: the composition is :math:`\mu`-GDP with
:math:`\mu = \sqrt{T}\Delta/z` (Dong, Roth and Su 2022, Cor. 3.3), so
:math:`z = \sqrt{T}\Delta/\mu^*` where :math:`\mu^*` is the largest :math:`\mu`
whose exact curve (Cor. 2.13) meets the target (:func:`calibrate_mu`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from noisygd.accounting.base import (
    Accountant,
    available_accountants,
    best,
    check_delta,
    check_epsilon,
    get_accountant,
)
from noisygd.accounting.events import DpEvent, Gaussian, Neighbouring, SelfComposed
from noisygd.accounting.gdp import gaussian_mu, gdp_epsilon, gdp_mu

__all__ = ["calibrate_gaussian_composition", "calibrate_mu", "calibrate_noise_multiplier"]

_Z_MAX = 1e12


def _resolve(accountant: Accountant | str | None) -> Callable[[DpEvent, float], float]:
    if accountant is None:
        accs = available_accountants()
        return lambda event, delta: best(event, delta, accs).epsilon
    if isinstance(accountant, str):
        accountant = get_accountant(accountant)
    if not isinstance(accountant, Accountant):
        raise TypeError(
            f"accountant must be an Accountant, a registered name or None, got "
            f"{type(accountant).__name__}"
        )
    return accountant.epsilon


def calibrate_noise_multiplier(
    make_event: Callable[[float], DpEvent],
    epsilon: float,
    delta: float,
    *,
    accountant: Accountant | str | None = None,
    lower: float = 1e-3,
    upper: float | None = None,
    rtol: float = 1e-4,
) -> float:
    r"""Smallest noise multiplier ``z >= lower`` whose event meets ``(epsilon, delta)``.

    Parameters
    ----------
    make_event : callable
        ``z -> DpEvent``; its epsilon must be non-increasing in ``z``.
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    accountant : Accountant, str or None
        The accountant that certifies the target; ``None`` uses :func:`best`
        over all registered accountants (the smallest epsilon of those that
        bound the event).
    lower : float, default=1e-3
        Smallest noise considered; returned as is when it already meets the target.
    upper : float, optional
        A noise known to meet the target. By default the bracket grows by a
        factor of 4 from ``lower`` up to 1e12.
    rtol : float, default=1e-4
        Relative width of the final bracket ``[lo, hi]``.

    Returns
    -------
    float
        ``hi``, the upper end of the final bracket: ``epsilon(make_event(hi))
        <= epsilon`` is verified, and ``make_event(hi / (1 + rtol))`` does not
        meet the target (for a monotone accountant), so ``hi`` is within a
        factor ``1 + rtol`` of the smallest noise that does.

    Raises
    ------
    ValueError
        On invalid input or when even the largest noise tried cannot meet the target.
    UnsupportedEventError
        When the accountant cannot bound the events.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if not callable(make_event):
        raise TypeError("make_event must be a callable z -> DpEvent")
    lower = float(lower)
    if not (lower > 0) or math.isinf(lower):
        raise ValueError(f"lower must be positive and finite, got {lower!r}")
    rtol = float(rtol)
    if not (0 < rtol < 1):
        raise ValueError(f"rtol must be in (0, 1), got {rtol!r}")
    eps_of = _resolve(accountant)

    def meets(z: float) -> bool:
        event = make_event(z)
        if not isinstance(event, DpEvent):
            raise TypeError(f"make_event must return a DpEvent, got {type(event).__name__}")
        return eps_of(event, delta) <= epsilon

    if meets(lower):
        return lower
    lo = lower
    if upper is not None:
        hi = float(upper)
        if not (hi > lo) or math.isinf(hi):
            raise ValueError(f"upper must be finite and > lower={lower}, got {upper!r}")
        if not meets(hi):
            raise ValueError(
                f"even noise multiplier upper={hi} does not meet epsilon={epsilon} at delta={delta}"
            )
    else:
        hi = lo * 4.0
        while not meets(hi):
            lo = hi
            hi *= 4.0
            if hi > _Z_MAX:
                raise ValueError(
                    f"no noise multiplier up to {_Z_MAX:g} meets epsilon={epsilon} at "
                    f"delta={delta} (the event may not improve with noise)"
                )
    # Invariant: meets(hi) and not meets(lo).
    while hi > lo * (1.0 + rtol):
        mid = math.sqrt(lo * hi)
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return hi


def calibrate_mu(epsilon: float, delta: float) -> float:
    r"""Largest :math:`\mu` such that :math:`\mu`-GDP meets ``(epsilon, delta)``.

    Exact inversion of Dong, Roth and Su (2022) Corollary 2.13 (see
    :func:`noisygd.accounting.gdp.gdp_mu`), stepped down if needed so that the
    exact epsilon at ``delta`` is also verified to be <= ``epsilon``.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    mu = gdp_mu(epsilon, delta)
    factor = 1.0 - 4 * np.finfo(float).eps
    while gdp_epsilon(mu, delta) > epsilon:
        mu *= factor
        factor = 1.0 - 2.0 * (1.0 - factor)
    return mu


def calibrate_gaussian_composition(
    epsilon: float,
    delta: float,
    steps: int,
    sensitivity: float = 1.0,
    relation: Neighbouring = Neighbouring.ADD_REMOVE,
) -> float:
    r"""Noise multiplier ``z`` making ``SelfComposed(Gaussian(z, sensitivity, relation), steps)``
    meet ``(epsilon, delta)`` exactly (up to rounding, on the safe side).

    :math:`z = \sqrt{T}\,\Delta / \mu^*` with :math:`\mu^*` = :func:`calibrate_mu`
    (Dong, Roth and Su 2022, Corollaries 2.13 and 3.3). The result is checked
    against the exact accountant and nudged up if rounding put it a few ulps
    short. ``sensitivity`` is the L2 sensitivity under ``relation`` (1 for
    adding/removing a clipped example, 2 for replacing one); the result does
    not otherwise depend on the relation.

    Parameters
    ----------
    epsilon, delta : float
        The target.
    steps : int
        Number of Gaussian mechanisms composed, >= 1.
    sensitivity : float, default=1.0
    relation : Neighbouring, default=ADD_REMOVE

    Returns
    -------
    float
        The smallest noise multiplier meeting the target (to ~1e-12 relative).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    steps = int(steps)
    sensitivity = float(sensitivity)
    if not (sensitivity > 0) or math.isinf(sensitivity):
        raise ValueError(f"sensitivity must be positive and finite, got {sensitivity!r}")
    relation = Neighbouring(relation)
    mu = calibrate_mu(epsilon, delta)
    z = math.sqrt(steps) * sensitivity / mu
    factor = 1.0 + 4 * np.finfo(float).eps
    while True:
        event = SelfComposed(Gaussian(z, sensitivity, relation), steps)
        if gdp_epsilon(gaussian_mu(event), delta) <= epsilon:
            return z
        z *= factor
        factor = 1.0 + 2.0 * (factor - 1.0)
