r"""Gaussian noise for output perturbation and its two calibrations.

For a vector with L2 sensitivity :math:`\Delta`, the release
:math:`a + \mathcal N(0, \sigma^2 I_d)` is a Gaussian mechanism with
Gaussian-DP parameter :math:`\mu = \Delta/\sigma` (Dong, Roth & Su 2022,
Theorem 2.7). Two ways of choosing :math:`\sigma` for a target
:math:`(\varepsilon, \delta)`:

* **paper** (Zhang, Zheng, Mou & Wang, IJCAI 2017, Algorithm 1, line 8): density
  :math:`\propto \exp(-\varepsilon^2\lVert z\rVert^2 / (4\log(2/\delta)\Delta^2))`,
  i.e. :math:`\sigma = \Delta\sqrt{2\log(2/\delta)}/\varepsilon`.
  Since :math:`2\log(2/\delta) > 2\log(1.25/\delta)` this satisfies the classical
  Gaussian-mechanism theorem (Dwork & Roth 2014, Theorem A.1) **when**
  :math:`\varepsilon < 1`; for larger :math:`\varepsilon` that theorem says
  nothing, and only an exact accountant certifies the release.
* **analytic** (Balle & Wang 2018, Theorem 8, equivalently Dong, Roth & Su 2022,
  Corollary 2.13): the smallest :math:`\sigma = \Delta/\mu^*` where
  :math:`\mu^*` is the largest :math:`\mu` with
  :math:`\Phi(-\varepsilon/\mu + \mu/2) - e^\varepsilon\Phi(-\varepsilon/\mu - \mu/2)
  \le \delta` (:func:`noisygd.accounting.gdp.gdp_mu`). Exact, valid for every
  :math:`\varepsilon > 0`, and never larger than the paper's :math:`\sigma`.
"""

from __future__ import annotations

import math

import numpy as np

from noisygd._checks import check_positive
from noisygd.accounting.base import check_delta, check_epsilon
from noisygd.accounting.gdp import gdp_mu

__all__ = [
    "analytic_gaussian_sigma",
    "gaussian_noise",
    "paper_gaussian_sigma",
]


def _check_sensitivity(sensitivity: float) -> float:
    """A positive finite real (``TypeError`` for ``True`` or ``"2"``: :func:`check_positive`)."""
    return check_positive("sensitivity", sensitivity)


def paper_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    r"""The paper's sigma (Zhang et al. 2017, Algorithm 1, line 8).

    :math:`\sigma = \Delta\sqrt{2\log(2/\delta)}/\varepsilon`.

    The density :math:`\exp(-\varepsilon^2\lVert z\rVert^2/(4\log(2/\delta)\Delta^2))`
    equals :math:`\exp(-\lVert z\rVert^2/(2\sigma^2))` for this :math:`\sigma`.
    """
    sens = _check_sensitivity(sensitivity)
    eps = check_epsilon(epsilon)
    d = check_delta(delta)
    return sens * math.sqrt(2.0 * math.log(2.0 / d)) / eps


def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    r"""Smallest sigma such that :math:`\Delta/\sigma`-GDP implies :math:`(\varepsilon,\delta)`-DP.

    :math:`\sigma = \Delta/\mu^*(\varepsilon, \delta)` with :math:`\mu^*` from
    :func:`noisygd.accounting.gdp.gdp_mu` (Balle & Wang 2018, Theorem 8; Dong,
    Roth & Su 2022, Corollary 2.13). Exact: a smaller :math:`\sigma` fails the
    target for some pair of neighbours at distance :math:`\Delta`.
    """
    sens = _check_sensitivity(sensitivity)
    mu = gdp_mu(check_epsilon(epsilon), check_delta(delta))
    return sens / mu


def gaussian_noise(
    dim: int, sigma: float, rng: np.random.Generator, size: int | None = None
) -> np.ndarray:
    r"""Draws of :math:`\mathcal N(0, \sigma^2 I_{d})`; shape ``(dim,)`` or ``(size, dim)``."""
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")
    s = float(sigma)
    if not (s >= 0.0) or not math.isfinite(s):
        raise ValueError(f"sigma must be finite and >= 0, got {sigma!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    shape = (int(dim),) if size is None else (int(size), int(dim))
    return s * rng.standard_normal(shape)
