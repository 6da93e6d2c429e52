"""The regressors' residual bound, Huber clip and private target and residual scales
(:func:`private_residual_scales`, :func:`target_scale_noise`)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from noisygd._checks import check_positive
from noisygd.mechanisms.noise import add_gaussian_noise, is_secure, secure_noise_scale

#: Huber's tuning constant for 95% asymptotic efficiency at the normal model (Huber 1964):
#: ``DPLinearRegression``'s default clip is ``HUBER_K * h * sqrt(R^2 + s^2)``, the Huber
#: threshold ``HUBER_K`` times the public Popoviciu bound ``sd(y) <= h`` (class doc).
HUBER_K = 1.345


def residual_bound(half_range: float, row_norm_bound: float, intercept_scale: float | None
                   ) -> float:
    r""":math:`2h\sqrt{R^2 + s^2}`: the squared loss's exact per-example gradient bound for
    predictions and targets inside a range of half-width :math:`h` (rows of norm :math:`\le R`,
    intercept column :math:`s`, none when None)."""
    return 2.0 * half_range * float(np.hypot(row_norm_bound, intercept_scale or 0.0))


#: ``DPLinearRegression`` plans with its private scales' facts (smoothness, comparator,
#: curvature: :class:`~noisygd.solvers.base.ReleasedFacts`) only where the upper confidence
#: bound of the rows' mean squared norm is within this factor of the plug-in estimate (the
#: release resolves the scale to a factor of 2); else with the declared worst case.
RESOLVED_SCALE_RATIO = 2.0


#: Number of sums :func:`private_residual_scales` releases, :math:`\sum_i(1, t_i, t_i^2, u_i)`.
SCALE_SUMS = 4


@dataclasses.dataclass(frozen=True)
class ResidualScales:
    r"""What :func:`private_residual_scales` computes from its release (post-processing).

    Attributes
    ----------
    target_scale : float
        :math:`\sqrt{\hat V} \in (0, 1]`, the upper confidence bound of the targets' standard
        deviation in units of the half-range ``h``.
    row_scale : float
        :math:`\sqrt{\hat U} \in (0, 1]`, the estimate of the rows' root-mean-square norm
        :math:`\sqrt{\frac1n\sum_i\lVert x_i - c\rVert^2}` in units of the row bound ``R``.
    noise_multiplier : float
        :math:`\sigma/2 = \Delta/\mu`: the release is the event
        ``Gaussian(noise_multiplier, Delta)``.
    """

    target_scale: float
    row_scale: float
    noise_multiplier: float
    #: :math:`\bar t = \mathrm{clip}(\tilde S_1/\max(\tilde N, 1), -1, 1)`, the plug-in mean
    #: of the targets in units of ``h`` (the fit's intercept start; class doc).
    target_mean: float = 0.0
    #: :math:`\sqrt{\hat U_+} \in (0, 1]`, the upper confidence bound of the rows'
    #: root-mean-square norm (units of ``R``): :math:`\hat U_+ = \min(1, (\max(\tilde S_u,
    #: 0) + z\sigma)/\max(\tilde N - z\sigma, 1))`, at least :math:`U` with probability at
    #: least :math:`1 - 2\Phi(-z)` (0.954 at :math:`z = 2`): the released smoothness'
    #: factor (class doc, "Released smoothness and comparator").
    row_scale_high: float = 1.0


def private_residual_scales(targets: np.ndarray, row_fractions: np.ndarray, half_range: float,
                            *, mu: float, sensitivity: float, rng: Any, z: float = 2.0
                            ) -> ResidualScales:
    r""":class:`DPLinearRegression`'s private scales of its default clip (class doc, "Private
    residual scale"): a bound on the targets' standard deviation and an estimate of the rows'
    root-mean-square norm, from one Gaussian release.

    With :math:`t_i = \mathrm{clip}(y_i/h, -1, 1)` (``targets`` centred at the range's
    midpoint, :math:`h` = ``half_range``) and :math:`u_i = \mathrm{clip}(\lVert x_i - c
    \rVert^2/R^2, 0, 1)` (``row_fractions``: the squared norms of the centred rows the fit
    serves, in units of the row bound), releases

    .. math:: (\tilde N, \tilde S_1, \tilde S_2, \tilde S_u) = \sum_i (1, t_i, t_i^2, u_i)
        + \mathcal N(0, \sigma^2 I_4), \qquad \sigma = 2\Delta/\mu:

    each row adds a vector of norm at most :math:`\sqrt{1 + 1 + 1 + 1} = 2`
    (:math:`\Delta` = ``sensitivity``, the relation's ``clipped_sum_sensitivity``), so it is
    exactly :math:`\mu`-GDP (Dong, Roth and Su 2022, Thm. 2.7), the event
    ``Gaussian(noise_multiplier, sensitivity)`` with ``noise_multiplier`` = :math:`\sigma/2`.
    With :math:`N_\pm = \max(\tilde N \pm z\sigma, 1)`,

    .. math:: \hat V = \min\Big(1,\ \max\Big(\frac{(\tilde S_2)_+ + z\sigma}{N_-}
        - \Big(\frac{(|\tilde S_1| - z\sigma)_+}{N_+}\Big)^2,\ \frac{z\sigma}{N_-}\Big)\Big),
        \qquad
        \hat U = \min\Big(1,\ \frac{\max(\tilde S_u, \sigma)}{\max(\tilde N, 1)}\Big).

    :math:`\hat V` is an upper confidence bound of the variance :math:`V = \frac1n\sum_i
    t_i^2 - (\frac1n\sum_i t_i)^2 \le 1` (Popoviciu): when the four one-sided bounds
    :math:`\tilde N - z\sigma \le n \le \tilde N + z\sigma`, :math:`\tilde S_2 + z\sigma \ge
    S_2`, :math:`|\tilde S_1| - z\sigma \le |S_1|` hold (probability :math:`\ge 1 - 4\Phi(-z)
    = 0.909` for :math:`z = 2`), :math:`\hat V \ge V`. :math:`\hat U` is the plug-in (ratio)
    estimate of :math:`U = \frac1n\sum_i u_i`, floored at the release's resolution
    :math:`\sigma/\tilde N`: a scale, not a bound (class doc: the clip treats it as the
    typical row's norm, and a row above it is clipped at a lower residual). Both are
    post-processing of the release.

    The noise goes through :func:`noisygd.mechanisms.noise.add_gaussian_noise`: with a
    :class:`numpy.random.Generator` the four draws ``sigma * rng.standard_normal(4)``; with a
    :class:`~noisygd.mechanisms.secure.SecureRandom` (secure mode) the sums rounded to the grid
    :math:`\gamma` plus discrete Gaussian noise, with :math:`\sigma` from
    :func:`target_scale_noise` (its event is
    :class:`~noisygd.accounting.events.DiscreteGaussianNoise`, at most :math:`\mu^2/2`-zCDP).
    The confidence statement then holds up to the grid: the rounding moves each sum by at
    most :math:`\gamma/2 \le 2^{-b-1}\sigma/2` (``b`` = ``grid_bits``), and the discrete
    Gaussian's tails on a grid that fine are the continuous ones to that precision (utility
    only; the privacy is the event's).

    Parameters
    ----------
    targets : ndarray of shape (n,)
        Targets centred at the declared range's midpoint.
    row_fractions : ndarray of shape (n,)
        :math:`\lVert x_i - c\rVert^2/R^2` (clipped to [0, 1] here).
    half_range : float
        :math:`h > 0`.
    mu, sensitivity : float
        Gaussian-DP share of the release and the relation's :math:`\Delta`.
    rng : numpy.random.Generator or SecureRandom
    z : float, default=2.0
        Confidence multiplier of :math:`\hat V`.

    Returns
    -------
    ResidualScales
    """
    h = check_positive("half_range", half_range)
    sigma, _ = target_scale_noise(mu=mu, sensitivity=sensitivity, rng=rng)
    t = np.clip(np.asarray(targets, dtype=np.float64) / h, -1.0, 1.0)
    u = np.clip(np.asarray(row_fractions, dtype=np.float64), 0.0, 1.0)
    if u.shape != t.shape:
        raise ValueError(f"row_fractions must have the targets' shape {t.shape}, got {u.shape}")
    noisy = add_gaussian_noise(
        np.array([float(t.size), float(t.sum()), float(np.dot(t, t)), float(u.sum())]),
        sigma, rng)
    return residual_scales_from_release(noisy, sigma, z)


#: What the residual-scale release sums (:class:`~noisygd.oracles.base.RowSums`), in order:
#: :math:`\sum_i(1, t_i, t_i^2, u_i)`.
SCALE_SUM_NAMES = ("count", "targets", "squared_targets", "squared_norms")


def residual_scales_from_release(noisy: np.ndarray, sigma: float, z: float = 2.0
                                 ) -> ResidualScales:
    r"""The post-processing of :func:`private_residual_scales`: :math:`\hat V`,
    :math:`\hat U` and :math:`\bar t` from the released :math:`(\tilde N, \tilde S_1,
    \tilde S_2, \tilde S_u)` (``noisy``) and its noise :math:`\sigma` (formulas there).
    Public: a function of the release only."""
    sigma = check_positive("sigma", sigma)
    zz = check_positive("z", z)
    n_t, s1, s2, s_u = (float(v) for v in np.asarray(noisy, dtype=np.float64))
    n_lo, n_hi = max(n_t - zz * sigma, 1.0), max(n_t + zz * sigma, 1.0)
    second = (max(s2, 0.0) + zz * sigma) / n_lo
    first = max(abs(s1) - zz * sigma, 0.0) / n_hi
    v_hat = min(1.0, max(second - first * first, zz * sigma / n_lo))
    u_hat = min(1.0, max(s_u, sigma) / max(n_t, 1.0))
    u_high = min(1.0, (max(s_u, 0.0) + zz * sigma) / n_lo)
    t_bar = min(1.0, max(-1.0, s1 / max(n_t, 1.0)))
    return ResidualScales(math.sqrt(v_hat), math.sqrt(u_hat), sigma / SCALE_SUMS ** 0.5,
                          t_bar, math.sqrt(max(u_high, u_hat)))


def target_scale_noise(*, mu: float, sensitivity: float, rng: Any) -> tuple[float, float]:
    r"""``(sigma, inflation)`` of :func:`private_residual_scales`'s release at Gaussian-DP
    ``mu``, known before any data is read (``mu``, the sensitivity and the grid are public).

    The released vector :math:`\sum_i (1, t_i, t_i^2, u_i)` has L2 sensitivity
    :math:`2\Delta` (each row adds a vector of norm at most 2; :math:`\Delta` =
    ``sensitivity``, the relation's ``clipped_sum_sensitivity``), so
    :math:`\sigma = 2\Delta/\mu` and ``inflation`` = 1: the event
    ``Gaussian(sigma/2, Delta)`` is exactly :math:`\mu`-GDP. Secure mode (``rng`` a
    :class:`~noisygd.mechanisms.secure.SecureRandom`): rounding to the grid :math:`\gamma`
    enlarges the sensitivity to :math:`2\kappa\Delta` with :math:`\kappa` =
    :func:`~noisygd.mechanisms.noise.sensitivity_inflation` ``(rng, sigma, 4, 2 Delta)``,
    and the discrete Gaussian is :math:`(2\kappa\Delta/\sigma)^2/2`-zCDP (Canonne,
    Kamath and Steinke 2020); ``sigma`` is then the smallest (to :math:`10^{-12}` relative)
    with :math:`2\kappa\Delta/\sigma \le \mu`, so the event
    ``DiscreteGaussianNoise(Gaussian(sigma/2, Delta), kappa)`` is at most
    :math:`\mu^2/2`-zCDP, the share it was given.
    """
    sens = SCALE_SUMS ** 0.5 * check_positive("sensitivity", sensitivity)
    mu = check_positive("mu", mu)
    sigma = sens / mu
    if not is_secure(rng):
        return sigma, 1.0
    return secure_noise_scale(rng, sigma, SCALE_SUMS, sens, mu)


def huber_clip(half_range: float, row_norm_bound: float, intercept_scale: float | None
               ) -> float:
    r""":class:`DPLinearRegression`'s default clip :math:`k\,h\sqrt{R^2 + s^2}`,
    :math:`k` = :data:`HUBER_K` (``HUBER_K / 2`` of :func:`residual_bound`)."""
    return HUBER_K / 2.0 * residual_bound(half_range, row_norm_bound, intercept_scale)
