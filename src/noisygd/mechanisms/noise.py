r"""One entry point for the Gaussian noise of every release: seedable NumPy or secure mode.

Every Gaussian noise site of the algorithms calls :func:`add_gaussian_noise`:

* with a :class:`numpy.random.Generator` it returns ``values + sd * rng.standard_normal(shape)``,
  the expression the algorithms always used: the same draws in the same order and the same
  floating-point operations, so seeded results are bit-for-bit those of before;
* with a :class:`~noisygd.mechanisms.secure.SecureRandom` it returns ``values`` rounded to a
  power-of-two grid plus exact discrete Gaussian noise drawn by OpenDP
  (:meth:`~noisygd.mechanisms.secure.SecureRandom.gaussian_on_grid`). The rounding enlarges
  the L2 sensitivity :math:`\Delta` of the noised query to at most
  :math:`\Delta + \gamma\sqrt d`; :func:`sensitivity_inflation` returns the factor
  :math:`1 + \gamma\sqrt d/\Delta` and :func:`secure_event` wraps the algorithm's event in
  :class:`~noisygd.accounting.events.DiscreteGaussianNoise`, which the zCDP and RDP
  accountants bound (Canonne, Kamath and Steinke 2020) and the Gaussian-specific ones
  (exact GDP, PLD) refuse.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from noisygd._checks import check_positive, check_positive_int, check_probability
from noisygd.accounting.events import DiscreteGaussianNoise, DpEvent
from noisygd.accounting.zcdp import zcdp_epsilon
from noisygd.mechanisms.secure import DEFAULT_GRID_BITS, SecureRandom

__all__ = [
    "add_gaussian_noise",
    "add_gaussian_noise_in_place",
    "is_secure",
    "secure_event",
    "secure_gaussian_sigma",
    "secure_noise_scale",
    "sensitivity_inflation",
    "zcdp_rho_for",
]


def is_secure(rng: Any) -> bool:
    """True when ``rng`` is a :class:`~noisygd.mechanisms.secure.SecureRandom`."""
    return isinstance(rng, SecureRandom)


def add_gaussian_noise(values: Any, sd: float, rng: Any) -> np.ndarray:
    r"""``values`` plus :math:`\mathcal N(0, \mathrm{sd}^2 I)` noise (NumPy) or its secure form.

    Parameters
    ----------
    values : ndarray (or scalar)
        The private query answer.
    sd : float
        Noise standard deviation :math:`\sigma` (> 0 for the secure form).
    rng : numpy.random.Generator or SecureRandom

    Returns
    -------
    ndarray
        NumPy: ``values + sd * rng.standard_normal(np.shape(values))`` (a new array; the same
        draws and arithmetic as the in-place ``values += sd * rng.standard_normal(p)``).
        Secure: :math:`\gamma(\lfloor x/\gamma\rceil + Y)` with
        :math:`Y \sim \mathcal N_{\mathbb Z}(0, (\sigma/\gamma)^2 I)` (module docstring).
    """
    if isinstance(rng, SecureRandom):
        return rng.gaussian_on_grid(np.asarray(values, dtype=float), check_positive("sd", sd))
    noise = rng.standard_normal(np.shape(values))
    noise *= sd
    noise += values  # one temporary of the answer's size: the same sum as values + sd * z
    return noise


#: Draws per block of :func:`add_gaussian_noise_in_place` (a block-sized temporary).
_NOISE_BLOCK = 1 << 16


def add_gaussian_noise_in_place(values: np.ndarray, sd: float, rng: Any) -> np.ndarray:
    r""":func:`add_gaussian_noise` written into ``values`` (a float64 array the caller owns):
    the same draws and the same sums, with one temporary of :data:`_NOISE_BLOCK` draws
    instead of two of the answer's size (a release of millions of counts).

    NumPy's ``Generator.standard_normal`` draws the same stream in blocks as in one call, so
    ``values[a:b] += sd * z[a:b]`` block by block equals ``values + sd * z``. The secure form
    draws on its grid in one call and copies the result back.

    Parameters
    ----------
    values : ndarray of float64
        The private query answer; overwritten with the noisy answer.
    sd : float
        Noise standard deviation :math:`\sigma`.
    rng : numpy.random.Generator or SecureRandom

    Returns
    -------
    ndarray
        ``values``, now :math:`x + \mathcal N(0, \mathrm{sd}^2 I)`.
    """
    if not isinstance(values, np.ndarray) or values.dtype != np.float64:
        raise TypeError("values must be a float64 ndarray (it is overwritten)")
    if isinstance(rng, SecureRandom):
        values[...] = add_gaussian_noise(values, sd, rng)
        return values
    flat = values.reshape(-1)  # a view: values is written through it
    if not np.shares_memory(flat, values):
        raise ValueError("values must be contiguous (it is overwritten through a flat view)")
    for a in range(0, flat.size, _NOISE_BLOCK):
        noise = rng.standard_normal(min(_NOISE_BLOCK, flat.size - a))
        noise *= sd
        noise += flat[a:a + _NOISE_BLOCK]
        flat[a:a + _NOISE_BLOCK] = noise
    return values


def sensitivity_inflation(rng: Any, sd: float, dim: int, sensitivity: float) -> float:
    r"""Factor :math:`1 + \gamma\sqrt d/\Delta` by which rounding enlarges an L2 sensitivity.

    Parameters
    ----------
    rng : numpy.random.Generator or SecureRandom
        For a NumPy generator the factor is 1 (no rounding).
    sd : float
        The noise scale passed to :func:`add_gaussian_noise` (fixes the grid).
    dim : int
        Number of coordinates noised in one call.
    sensitivity : float
        :math:`\Delta`, the L2 sensitivity of the noised values in the same units as ``sd``
        (e.g. ``relation.clipped_sum_sensitivity * clip``).

    Returns
    -------
    float
        Rounded up, so that :math:`(1 + \gamma\sqrt d/\Delta)\Delta \ge \Delta + \gamma\sqrt d`.
    """
    if not isinstance(rng, SecureRandom):
        return 1.0
    delta = check_positive("sensitivity", sensitivity)
    r = rng.rounding_distance(check_positive("sd", sd), check_positive_int("dim", dim))
    return math.nextafter(1.0 + math.nextafter(r / delta, math.inf), math.inf)


def secure_event(event: DpEvent, rng: Any, inflation: float) -> DpEvent:
    """``event`` itself (NumPy ``rng``) or ``DiscreteGaussianNoise(event, inflation)`` (secure)."""
    if not isinstance(rng, SecureRandom):
        return event
    return DiscreteGaussianNoise(event, inflation)


def secure_noise_scale(rng: Any, sigma: float, dim: int, sensitivity: float, mu: float,
                       *, max_rounds: int = 64) -> tuple[float, float]:
    r"""``(sigma, kappa)``: the noise scale of a release of L2 sensitivity :math:`\Delta` in
    ``dim`` coordinates whose (secure) event spends at most Gaussian-DP ``mu``.

    The one home of the secure fixed point: rounding to the grid of :math:`\sigma` enlarges
    the sensitivity by :math:`\kappa(\sigma)` (:func:`sensitivity_inflation`), and the
    discrete Gaussian is :math:`(\kappa\Delta/\sigma)^2/2`-zCDP (Canonne, Kamath and
    Steinke 2020). Starting from ``sigma``, :math:`\sigma \leftarrow
    \kappa(\sigma)\Delta/\mu\,(1 + 10^{-12})` until :math:`\kappa\Delta/\sigma \le \mu`
    (one or two rounds). A NumPy generator has :math:`\kappa = 1` and keeps ``sigma`` when
    :math:`\Delta/\sigma \le \mu`.

    Raises
    ------
    RuntimeError
        If no scale meets ``mu`` within ``max_rounds`` rounds: with ``b`` grid bits the
        rounding adds at least :math:`2^{-b}\sigma/2` to the sensitivity, so no scale exists
        once ``mu`` is below about :math:`2^{-b}` (the message says so and names
        ``grid_bits``).
    ValueError
        If ``sigma``, ``sensitivity`` or ``mu`` is not positive and finite, or ``dim`` is not
        a positive integer (for either generator).
    """
    sigma = check_positive("sigma", sigma)
    check_positive_int("dim", dim)
    sensitivity = check_positive("sensitivity", sensitivity)
    mu = check_positive("mu", mu)
    for _ in range(max_rounds):
        kappa = sensitivity_inflation(rng, sigma, dim, sensitivity)
        if kappa * sensitivity / sigma <= mu:
            return sigma, kappa
        sigma = kappa * sensitivity / mu * (1.0 + 1e-12)
    bits = getattr(rng, "grid_bits", None)
    if bits is not None:
        raise RuntimeError(f"no secure noise scale meets mu={mu!r} on the rounding grid of "
                           f"grid_bits={bits}: the rounding alone costs about 2^-{bits}; "
                           "raise grid_bits or the budget")
    raise RuntimeError("internal error: no secure noise scale meets its share of the budget")


def zcdp_rho_for(epsilon: float, delta: float) -> float:
    r"""The largest :math:`\rho` (to 1e-12 relative) whose zCDP conversion gives at most
    ``epsilon`` at ``delta`` (:func:`noisygd.accounting.zcdp.zcdp_epsilon`, increasing in
    :math:`\rho`; bisection, returning a point checked to satisfy the bound)."""
    eps = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    lo, hi = 0.0, 1.0
    while zcdp_epsilon(hi, delta) <= eps:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if zcdp_epsilon(mid, delta) <= eps:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    if not lo > 0.0:
        raise ValueError(f"no positive rho reaches epsilon={epsilon!r} at delta={delta!r}")
    return lo


def secure_gaussian_sigma(sensitivity: float, epsilon: float, delta: float, dim: int,
                          *, grid_bits: int = DEFAULT_GRID_BITS) -> float:
    r"""Smallest-to-rounding :math:`\sigma` of one secure Gaussian release meeting
    :math:`(\varepsilon, \delta)` by zCDP.

    The release :math:`\gamma(\lfloor x/\gamma\rceil + Y)` of a query with L2 sensitivity
    :math:`\Delta` in dimension ``dim`` is :math:`(\kappa\Delta)^2/(2\sigma^2)`-zCDP with
    :math:`\kappa\Delta \le \Delta + 2^{-b}\sigma` (the grid rule of
    :meth:`~noisygd.mechanisms.secure.SecureRandom.grid_exponent`). With :math:`\rho^*` =
    :func:`zcdp_rho_for` ``(epsilon, delta)``, :math:`\sigma = \Delta/(\sqrt{2\rho^*} - 2^{-b})`
    makes that at most :math:`\rho^*`; the returned value is checked with the actual grid
    (and enlarged by factors :math:`1 + 10^{-12}` until it passes).
    """
    sens = check_positive("sensitivity", sensitivity)
    d = check_positive_int("dim", dim)
    rho = zcdp_rho_for(epsilon, delta)
    rng = SecureRandom(grid_bits=grid_bits)
    c = 2.0 ** -rng.grid_bits
    root = math.sqrt(2.0 * rho)
    if not root > c:
        raise ValueError("epsilon too small for the rounding grid: raise grid_bits")
    sigma, _ = secure_noise_scale(rng, sens / (root - c) * (1.0 + 1e-12), d, sens, root)
    return sigma
