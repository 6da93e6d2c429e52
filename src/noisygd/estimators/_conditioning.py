"""The private conditioning's post-processing: the released centre and row scale
(:func:`private_conditioning`, :func:`conditioning_from_release`) and the private per-feature
scale (:func:`feature_scale_from_release`)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from noisygd._checks import check_positive
from noisygd.mechanisms.noise import add_gaussian_noise

#: The per-feature scale's resolution floor, in standard deviations of its release
#: (:func:`feature_scale_from_release`).
FEATURE_SCALE_Z = 2.0
#: The largest weight the per-feature scale gives a column against the root-mean-square
#: column (:func:`feature_scale_from_release`): a declared cap (docs/estimators.md).
FEATURE_SCALE_CAP = 10.0


@dataclasses.dataclass(frozen=True)
class PrivateConditioning:
    r"""What :func:`private_conditioning` computes from its release (post-processing).

    Attributes
    ----------
    centre : ndarray
        :math:`c = R\hat c`, the rows' released mean (feature units).
    row_scale : float
        :math:`\sqrt{\hat U_c} \in (0, 1]`: the rows' root-mean-square distance to
        :math:`c`, in units of ``R``.
    intercept_scale : float
        :math:`s = R\sqrt{\hat U_c}`.
    clip : float
        :math:`R\sqrt{2\hat U_c}`, the root-mean-square norm of the rows :math:`[x - c, s]`.
    noise_multiplier : float
        :math:`\sigma/\sqrt3 = \Delta/\mu`: the release is ``Gaussian(noise_multiplier,
        Delta)``.
    count : float
        :math:`N = \max(\tilde N, 1)`, the released count (the per-feature scale's
        post-processing divides by it).
    centre_shrinkage : float
        The James-Stein factor :math:`B \in [0, 1]` that pulled the released mean toward
        its grand mean (:func:`shrunk_centre`); 0 where the centre was not shrunk.
    """

    centre: np.ndarray
    row_scale: float
    intercept_scale: float
    clip: float
    noise_multiplier: float
    count: float = 1.0
    centre_shrinkage: float = 0.0


def shrunk_centre(c_hat: np.ndarray, tau: float) -> tuple[np.ndarray, float, float]:
    r"""The released mean shrunk toward its grand mean (Efron and Morris 1973), its factor
    and the estimate of its squared error (post-processing of the release).

    Given the released count :math:`N`, the released mean is :math:`\hat c = S_x/N +
    \varepsilon`, :math:`\varepsilon \sim \mathcal N(0, \tau^2 I_p)` with :math:`\tau =
    \sigma/N` public (:math:`S_x/N` is the rows' mean :math:`\bar x` up to the count's noise,
    a relative error of order :math:`\sigma/n`). The positive-part
    James-Stein estimator toward the grand mean :math:`\bar m = \frac1p\sum_j\hat c_j`,

    .. math:: c = \bar m\mathbf 1 + (1 - B)(\hat c - \bar m\mathbf 1), \qquad
        B = \min\Big(1, \frac{(p - 3)\tau^2}{S}\Big), \quad
        S = \lVert\hat c - \bar m\mathbf 1\rVert^2,

    has a smaller expected squared error :math:`E\lVert c - \bar x\rVert^2` than
    :math:`\hat c` (whose error is :math:`p\tau^2`) for every :math:`\bar x` when
    :math:`p \ge 4` (Efron and Morris 1973, JASA 68, 117-130; the positive part only
    lowers it further: Baranchik 1964); for :math:`p \le 3`, :math:`c = \hat c`. The
    error estimate is Stein's unbiased risk estimate of the James-Stein rule where
    :math:`B < 1`, :math:`p\tau^2 - (p - 3)^2\tau^4/S`, and the grand mean's own
    variance :math:`\tau^2` where :math:`B = 1` (every coordinate pulled to
    :math:`\bar m`), never below :math:`\tau^2`.

    Parameters
    ----------
    c_hat : ndarray of shape (p,)
        The released mean :math:`\hat c`.
    tau : float
        :math:`\tau > 0`, the noise's standard deviation in each coordinate of
        :math:`\hat c`.

    Returns
    -------
    centre : ndarray of shape (p,)
        :math:`c`.
    shrinkage : float
        :math:`B` (0 for :math:`p \le 3`).
    error : float
        The estimate of :math:`E\lVert c - \bar x\rVert^2` (:math:`p\tau^2` for
        :math:`p \le 3`).

    Raises
    ------
    ValueError
        If ``c_hat`` is not a one-dimensional array of finite numbers, or ``tau`` is not
        positive and finite.
    """
    c_hat = np.asarray(c_hat, dtype=np.float64)
    if c_hat.ndim != 1 or not np.all(np.isfinite(c_hat)):
        finite = "" if np.all(np.isfinite(c_hat)) else " with non-finite values"
        raise ValueError("c_hat must be a one-dimensional array of finite numbers, got shape "
                         f"{c_hat.shape}{finite}")
    tau2 = check_positive("tau", tau) ** 2
    p = c_hat.size
    if p <= 3:
        return c_hat, 0.0, p * tau2
    grand = float(c_hat.mean())
    spread = float(np.sum((c_hat - grand) ** 2))
    shrinkage = 1.0 if spread <= (p - 3) * tau2 else (p - 3) * tau2 / spread
    if shrinkage >= 1.0:
        return np.full(p, grand), 1.0, tau2
    error = max(tau2, p * tau2 - (p - 3) ** 2 * tau2 * tau2 / spread)
    return grand + (1.0 - shrinkage) * (c_hat - grand), shrinkage, error


def private_conditioning(X: Any, row_norm_bound: float, *, mu: float, sensitivity: float,
                         rng: np.random.Generator, shrink_centre: bool = False
                         ) -> PrivateConditioning:
    r""":class:`DPLogisticRegression`'s private conditioning (class doc): a centre and a row
    scale from one Gaussian release.

    With :math:`\tilde x_i = x_i\min(1, R/\lVert x_i\rVert)` and :math:`u_i = \lVert\tilde
    x_i\rVert^2/R^2`, releases

    .. math:: (\tilde S_x, \tilde S_u, \tilde N) = \sum_i (\tilde x_i/R,\ u_i,\ 1)
        + \mathcal N(0, \sigma^2 I_{p+2}), \qquad \sigma = \sqrt3\,\Delta/\mu:

    each row adds a vector of norm at most :math:`\sqrt3`, so it is exactly
    :math:`\mu`-GDP (Dong, Roth and Su 2022, Thm. 2.7). With :math:`N = \max(\tilde N, 1)`,
    :math:`\hat c = \tilde S_x/N` and

    .. math:: \hat U_c = \min\Big(1,\ \max\Big(\frac{\tilde S_u}N - \lVert\hat c\rVert^2
        + \frac{2p\sigma^2}{N^2},\ \frac\sigma N\Big)\Big),

    the plug-in estimate of :math:`\frac1n\sum_i\lVert\tilde x_i/R - \hat c\rVert^2 =
    (\overline{u} - \lVert\bar x\rVert^2) + \lVert\bar x - \hat c\rVert^2` (``\lVert\hat
    c\rVert^2`` overestimates :math:`\lVert\bar x\rVert^2` by :math:`p\sigma^2/N^2` in
    expectation, and :math:`\hat c` misses :math:`\bar x` by as much), floored at the
    release's resolution. Both are post-processing of the release.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, p)
    row_norm_bound : float
        :math:`R`.
    mu, sensitivity : float
        Gaussian-DP share of the release and the relation's :math:`\Delta`.
    rng : numpy.random.Generator
    shrink_centre : bool, default False
        Shrink the released mean toward its grand mean (:func:`shrunk_centre`;
        :func:`conditioning_from_release`), as :class:`DPLogisticRegression` does.

    Returns
    -------
    PrivateConditioning
    """
    from noisygd.oracles.rows import row_norms

    R = check_positive("row_norm_bound", row_norm_bound)
    sigma = math.sqrt(3.0) * check_positive("sensitivity", sensitivity) / check_positive(
        "mu", mu)
    norms = row_norms(X)
    factor = np.minimum(1.0, R / np.maximum(norms, np.finfo(float).tiny))
    weights = factor / R
    s_x = np.asarray(X.T @ weights if sp.issparse(X) else weights @ X, dtype=np.float64)
    s_x = np.ravel(s_x)
    u = np.minimum(norms / R, 1.0) ** 2  # ||x~||^2/R^2 (1 for a row whose norm overflows)
    noisy = add_gaussian_noise(np.concatenate([s_x, [float(u.sum()), float(X.shape[0])]]),
                               sigma, rng)
    return conditioning_from_release(noisy, R, sigma, shrink_centre=shrink_centre)


def conditioning_from_release(noisy: np.ndarray, row_norm_bound: float, sigma: float,
                              n_sums: int = 3, *, shrink_centre: bool = False
                              ) -> PrivateConditioning:
    r"""The post-processing of :func:`private_conditioning`: from the released
    :math:`(\tilde S_x, \tilde S_u, \tilde N)` (``noisy``, length :math:`p + 2`) and its
    noise :math:`\sigma`, the centre :math:`R\hat c` and the row scale
    :math:`\sqrt{\hat U_c}` (formulas there). Public: a function of the release only.
    ``n_sums``: the number of sums released together (3 here; 4 when the classifier's label
    sum rides along, :func:`base_rate_from_release`), so that ``noise_multiplier`` is
    :math:`\sigma/\sqrt{k} = \Delta/\mu`.

    With ``shrink_centre`` the centre is :func:`shrunk_centre`'s James-Stein estimate
    :math:`c` (``tau`` :math:`= \sigma/N`) and the row scale counts that centre's
    estimated error :math:`e` in place of :math:`\hat c`'s :math:`p\sigma^2/N^2`:

    .. math:: \hat U_c = \min\Big(1,\ \max\Big(\frac{\tilde S_u}N - \lVert\hat
        c\rVert^2 + \frac{p\sigma^2}{N^2} + e,\ \frac\sigma N\Big)\Big)

    (the first three terms estimate the rows' spread about their mean,
    :math:`\overline u - \lVert\bar x\rVert^2`; the last, the squared distance from that
    mean to the centre).

    Raises
    ------
    ValueError
        If ``noisy`` is not a one-dimensional array of at least two finite numbers (a
        release of :math:`p \ge 0` features), or ``row_norm_bound`` or ``sigma`` is not
        positive and finite.
    """
    R = check_positive("row_norm_bound", row_norm_bound)
    sigma = check_positive("sigma", sigma)
    noisy = np.asarray(noisy, dtype=np.float64)
    if noisy.ndim != 1 or noisy.size < 2 or not np.all(np.isfinite(noisy)):
        raise ValueError("the release must be p + 2 >= 2 finite numbers (S_x, S_u, N), got "
                         f"{noisy.size} of shape {noisy.shape}, or not all finite")
    p = noisy.size - 2
    n_t = max(float(noisy[-1]), 1.0)
    c_hat = noisy[:p] / n_t
    tau2 = sigma * sigma / n_t**2
    centre, shrinkage, error = (shrunk_centre(c_hat, sigma / n_t) if shrink_centre
                                else (c_hat, 0.0, p * tau2))
    u_hat = float(noisy[p]) / n_t - float(c_hat @ c_hat) + p * tau2 + error
    u_hat = min(1.0, max(u_hat, sigma / n_t))
    root = math.sqrt(u_hat)
    return PrivateConditioning(R * centre, root, R * root, R * math.sqrt(2.0 * u_hat),
                               sigma / math.sqrt(n_sums), n_t, shrinkage)


def base_rate_from_release(label_sum: float, count: float) -> tuple[float, float]:
    r"""The released base rate of a binary classifier's positive class and its logit
    (post-processing).

    From the noisy sum of the labels in :math:`\{-1, +1\}`, :math:`\tilde T = n_+ - n_-
    + \mathcal N(0, \sigma^2)`, and the released count :math:`N` (both from the private
    conditioning's one release), the released positives :math:`P = \mathrm{clip}((N +
    \tilde T)/2, 0, N)` and Laplace's rule of succession:

    .. math:: \hat p = \frac{P + 1}{N + 2}, \qquad
              \operatorname{logit}\hat p = \log\frac{P + 1}{N - P + 1},

    inside :math:`(0, 1)` whatever the noise, the logit computed from the counts so that it
    stays finite where :math:`\hat p` rounds to 0 or 1.

    Parameters
    ----------
    label_sum : float
        :math:`\tilde T`.
    count : float
        :math:`N \ge 1` (:attr:`PrivateConditioning.count`).

    Returns
    -------
    (float, float)
        :math:`\hat p` and its logit.
    """
    n = check_positive("count", count)
    t = float(label_sum)
    if not math.isfinite(t):
        raise ValueError(f"label_sum must be finite, got {label_sum!r}")
    positives = min(max(0.5 * (n + t), 0.0), n)
    return ((positives + 1.0) / (n + 2.0),
            math.log(positives + 1.0) - math.log(n - positives + 1.0))


@dataclasses.dataclass(frozen=True)
class PrivateFeatureScale:
    r"""What :func:`feature_scale_from_release` computes (post-processing of the release).

    Attributes
    ----------
    scale : ndarray of shape (d,)
        :math:`f_j = \bar m/m_j`: the column weights of the fit's rows
        :math:`[f\odot(x - c), s]` (:class:`~noisygd.objectives.centred.CentredGLM`).
    resolution : float
        :math:`\lambda = z\sigma/N`, the floor added to every :math:`m_j` (units of
        :math:`R`).
    spread : float
        :math:`\max_j f_j/\min_j f_j` (1: the release could not tell the features apart).
    noise_std : float
        :math:`\sigma`, the noise of each released sum (:math:`\Delta/\mu_f`).
    shrinkage : float
        :math:`B \in [0, 1]`, how far the release's per-feature spreads were pulled to their
        mean (1: all the way, ``scale`` all ones).
    """

    scale: np.ndarray
    resolution: float
    spread: float
    noise_std: float
    shrinkage: float = 0.0


def feature_scale_from_release(noisy: np.ndarray, count: float, sigma: float,
                               z: float = FEATURE_SCALE_Z,
                               cap: float = FEATURE_SCALE_CAP) -> PrivateFeatureScale:
    r"""The private per-feature scale from its release (post-processing; docs/estimators.md,
    "Private per-feature scale").

    ``noisy`` is :math:`\tilde Q = \sum_i |a_i| + \mathcal N(0, \sigma^2 I_d)`
    (:math:`a_i` the served rows about the released centre, in units of ``R``; entrywise
    absolute values) and ``count`` the conditioning's released :math:`N`. The per-feature
    means :math:`q_j = \tilde Q_j/N` carry noise of sd :math:`\tau = \sigma/N`. They are
    shrunk toward their mean :math:`\bar q` by the positive-part James-Stein factor with a
    doubled constant (a significance gate: noise alone, :math:`E\,S = (d - 1)\tau^2`,
    shrinks them all the way),

    .. math:: q'_j = \bar q + (1 - B)(q_j - \bar q), \qquad
        B = \min\Big(1, \frac{2d\tau^2}{S}\Big), \quad S = \sum_j(q_j - \bar q)^2,

    floored at the resolution :math:`\lambda = z\tau`, raised to at least :math:`1/\kappa`
    of their root-mean-square (``cap`` :math:`\kappa`, :data:`FEATURE_SCALE_CAP`: no column
    is scaled up more than :math:`\kappa` times, so a rare one-hot level does not become a
    row's whole norm), and turned into weights that give every rescaled feature the same
    spread :math:`\bar m`:

    .. math:: m_j = \max\big(\max(q'_j, 0) + \lambda,\ \bar m_0/\kappa\big), \qquad
        f_j = \bar m/m_j, \quad \bar m = \Big(\frac1d\sum_j m_j^2\Big)^{1/2}

    (:math:`\bar m_0` the root-mean-square before the cap; the rescaled rows'
    :math:`\sum_j (f_jm_j)^2 = \sum_j m_j^2`, that of the rows). Where the release cannot
    tell the features apart, :math:`f = 1` exactly (:math:`B = 1`) or nearly: the fit is the
    unscaled one. Always :math:`f_j \le \min(\bar m/\lambda, \kappa\bar m/\bar m_0)`.
    """
    noisy = np.asarray(noisy, dtype=np.float64)
    n = max(float(count), 1.0)
    tau = check_positive("sigma", sigma) / n
    lam = check_positive("z", z) * tau
    q = noisy / n
    spread = float(np.sum((q - q.mean()) ** 2))
    shrink = 1.0 if spread <= 0.0 else min(1.0, 2.0 * q.size * tau * tau / spread)
    q = q.mean() + (1.0 - shrink) * (q - q.mean())
    m = np.maximum(q, 0.0) + lam
    m = np.maximum(m, math.sqrt(float(np.mean(m * m))) / check_positive("cap", cap))
    f = math.sqrt(float(np.mean(m * m))) / m
    return PrivateFeatureScale(f, lam, float(f.max() / f.min()), float(sigma), shrink)
