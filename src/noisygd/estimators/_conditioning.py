"""The private conditioning's post-processing: the released centre and row scale
(:func:`private_conditioning`, :func:`conditioning_from_release`), refined in rounds, each
about the centre before it within a released radius (:func:`distance_histogram`,
:func:`radius_from_release`, :func:`round_sums`, :func:`refined_conditioning`), and the
private per-feature
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
#: Rows per block of :func:`distance_histogram` (its temporaries are a block's, not ``n``'s).
DISTANCE_BLOCK_ROWS = 1 << 14
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
    row_bound : float or None
        The radius :math:`\rho` the row scale is in units of, and the bound of the fit's
        rows about the centre: ``R`` for one release (:func:`conditioning_from_release`),
        the released radius for the refined one (:func:`refined_conditioning`); None: ``R``.
    radius : PrivateTargetRange or None
        The refined release's post-processed distance histogram (:func:`radius_from_release`),
        None for one release.
    """

    centre: np.ndarray
    row_scale: float
    intercept_scale: float
    clip: float
    noise_multiplier: float
    count: float = 1.0
    centre_shrinkage: float = 0.0
    row_bound: float | None = None
    radius: Any = None


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
                               sigma / math.sqrt(n_sums), n_t, shrinkage, R)


def distance_histogram(X: Any, centre: np.ndarray,
                       feature_scale: np.ndarray | None = None, unit: float = 1.0
                       ) -> np.ndarray:
    r"""The counts of the rows' distances to ``centre`` in units of ``unit`` (the row bound
    ``R``), :math:`\delta_i = \lVert f\odot x_i - c\rVert/R` (:math:`f` the public
    ``feature_scale``, ones when None; the centre in the rescaled coordinates
    :math:`f\odot x`), in a zero bin and by binary exponent
    :math:`(2^k, 2^{k+1}]` (:func:`~noisygd.mechanisms.target_range.target_histogram`'s
    layout: a row adds one count, sensitivity 1 under add/remove, :math:`\sqrt2` under
    replace-one). **Not private**: the refined conditioning's second release
    (:func:`refined_conditioning`) adds the noise.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)
    centre : ndarray of shape (d,)
        :math:`c`, in the coordinates of :math:`f\odot x`.
    feature_scale : ndarray of shape (d,), optional
        :math:`f`.
    unit : float, default 1.0
        :math:`R`.

    Returns
    -------
    ndarray of shape (2K + 1,)
    """
    from noisygd.mechanisms.target_range import target_histogram, target_histogram_size
    from noisygd.oracles.rows import row_norms

    f = None if feature_scale is None else np.asarray(feature_scale, dtype=np.float64)
    c = np.asarray(centre, dtype=np.float64)
    at = c if f is None else c / f
    unit = check_positive("unit", unit)
    top = np.finfo(np.float64).max
    counts = np.zeros(target_histogram_size())
    for a in range(0, X.shape[0], DISTANCE_BLOCK_ROWS):  # O(block) temporaries, not O(n)
        norms = row_norms(X[a:a + DISTANCE_BLOCK_ROWS], centre=at, feature_scale=f) / unit
        # a distance beyond floating-point range (a row of 1e308 about a centre of the
        # opposite sign) is in the top bin, as every distance above 2^497 is: one count a row
        counts += target_histogram(np.nan_to_num(norms, nan=top, posinf=top))
    return counts


def round_sums(X: Any, centre: np.ndarray, feature_scale: np.ndarray | None,
               radius: float) -> np.ndarray:
    r"""What a later round of the refined conditioning releases (:func:`refined_conditioning`),
    read from ``X`` a block of rows at a time (no oracle is built): with
    :math:`d_i = \lVert f\odot x_i - a\rVert` (the centre ``a`` in the coordinates of
    :math:`f\odot x`) and :math:`s_i = \min(1, \rho/d_i)`,

    .. math:: \Big(\sum_i b_i,\ \sum_i\lVert b_i\rVert^2,\ n\Big), \qquad
        b_i = s_i(f\odot x_i - a)/\rho, \quad \lVert b_i\rVert^2 = \min(d_i/\rho, 1)^2,

    the sums ``ArrayOracle.bounded_row_sums`` gives for the rows about ``a`` within
    :math:`\rho` (``rows``, ``squared_norms``, ``count``): each row adds a vector of norm at
    most :math:`\sqrt3`. CSR rows are never densified: :math:`\sum_i s_i(f\odot x_i - a)
    = f\odot X^\top s - a\sum_i s_i`. **Not private**: the caller adds the noise.

    Returns
    -------
    ndarray of shape (p + 2,)
    """
    import scipy.sparse as sp_

    from noisygd.oracles.rows import row_norms

    f = None if feature_scale is None else np.asarray(feature_scale, dtype=np.float64)
    a = np.asarray(centre, dtype=np.float64)
    at = a if f is None else a / f
    rho = check_positive("radius", radius)
    total = np.zeros(a.size)
    squares, weights = 0.0, 0.0
    for start in range(0, X.shape[0], DISTANCE_BLOCK_ROWS):
        block = X[start:start + DISTANCE_BLOCK_ROWS]
        d = row_norms(block, centre=at, feature_scale=f)
        d = np.nan_to_num(d, nan=np.inf)
        s = np.ones_like(d)
        far = d > rho
        s[far] = rho / d[far]
        column = np.ravel(np.asarray(block.T @ s if sp_.issparse(block) else s @ block,
                                     dtype=np.float64))
        total += (column if f is None else f * column) - a * float(s.sum())
        squares += float(np.sum(np.minimum(d / rho, 1.0) ** 2))
        weights += float(block.shape[0])
    return np.concatenate([total / rho, [squares, weights]])


def radius_from_release(noisy: np.ndarray, sigma: float, row_norm_bound: float,
                        previous: float | None = None) -> tuple[float, Any]:
    r"""The next round's radius :math:`\rho` from the noisy distance histogram
    (:func:`distance_histogram` plus Gaussian noise of standard deviation ``sigma``;
    post-processing): with :math:`2^{k+1}` the upper edge of the occupied bins' hull, edges
    included (:func:`~noisygd.mechanisms.target_range.target_range_from_release` at
    :data:`~noisygd.mechanisms.target_range.EDGE_LEVEL`: a bin is occupied when its noisy
    count reaches :math:`z\sigma`, at most a 0.001 chance that any empty one does, and the
    bins above the occupied ones join them while each passes the edge test, at most a 0.05
    chance for an empty one),

    .. math:: \rho = \min(2^{k+1} R,\ \rho_{\rm prev})

    (the histogram's distances in units of ``R``), never above the ``previous`` round's
    radius :math:`\rho_{\rm prev}` (default ``R``: the rows the first round read lie in that
    ball, and a row beyond the previous radius was already projected there), which it keeps
    where no bin is occupied. Returns :math:`\rho` and the released hull (in units of ``R``).

    Before 2026-11-30, :math:`\rho = 2 \cdot 2^{k+1} R` without the edge test: one binary
    exponent above the occupied bins as a margin for rows in bins too few to be resolved.
    The edge test reads that bin instead (it joins where it holds a quarter of the occupied
    rows' count, :data:`~noisygd.mechanisms.target_range.EDGE_SHARE`), and the margin
    doubled the radius, hence the fit's clip and noise, on rows whose distances all lie in one
    octave (uniform columns: every distance near :math:`\sqrt{p/12}` times their width);
    docs/estimators.md, "Private centre: refined rounds"."""
    from noisygd.mechanisms.target_range import EDGE_LEVEL, target_range_from_release

    R = check_positive("row_norm_bound", row_norm_bound)
    before = R if previous is None else check_positive("previous", previous)
    released = target_range_from_release(noisy, sigma, edge_level=EDGE_LEVEL)
    if not released.high > 0.0:
        return before, released
    return min(released.high * R, before), released


@dataclasses.dataclass(frozen=True)
class ConditioningRound:
    r"""One release of the private conditioning (:func:`refined_conditioning`).

    Attributes
    ----------
    noisy : ndarray of shape (p + 2,)
        :math:`(\tilde S_b, \tilde S_u, \tilde N) = \sum_i (b_i,\ \lVert b_i\rVert^2,\ 1)
        + \mathcal N(0, \sigma^2 I)`, :math:`b_i = \pi_\rho(x_i - a)/\rho` (the first round:
        :math:`a = 0`, :math:`\rho = R`, :func:`private_conditioning`'s release).
    about : ndarray of shape (p,)
        :math:`a`, the centre the rows were taken about.
    radius : float
        :math:`\rho`.
    sigma : float
        :math:`\sigma`.
    """

    noisy: np.ndarray
    about: np.ndarray
    radius: float
    sigma: float


def refined_conditioning(rounds: list[ConditioningRound], *, n_sums: int = 3,
                         shrink_centre: bool = False, released_radius: Any = None
                         ) -> PrivateConditioning:
    r"""The private conditioning from rounds of releases, each about the centre the
    earlier ones gave and within a released radius (CoinPress's iterative mean estimation:
    Biswas, Dong, Kamath and Ullman, NeurIPS 2020; docs/estimators.md, "Private
    conditioning"). Post-processing of the releases: public.

    Round :math:`k` (:class:`ConditioningRound`) releases the sums of the rows about
    :math:`a_k` projected onto the ball of radius :math:`\rho_k`, over :math:`\rho_k`:
    the first :func:`private_conditioning`'s (:math:`\rho_1 = R`, :math:`a_1 = 0`, or the
    released column offsets :math:`g\odot o`, :mod:`noisygd.mechanisms.column_offsets`), each
    later one about the centre of the rounds before it, within the radius its distance
    histogram gave (:func:`radius_from_release`). With :math:`N_k = \max(\tilde N_k, 1)`
    and :math:`\hat b_k = \tilde S_{b,k}/N_k`, round :math:`k`'s centre
    :math:`c_k = a_k + \rho_k\hat b_k` misses the rows' mean by noise of standard
    deviation :math:`\tau_k = \rho_k\sigma_k/N_k` in each coordinate, independent of the
    other rounds' where no row is projected; the centre is their inverse-variance mean

    .. math:: \hat c = \frac{\sum_k c_k/\tau_k^2}{\sum_k 1/\tau_k^2}, \qquad
        \tau^2 = \Big(\sum_k \frac1{\tau_k^2}\Big)^{-1},

    shrunk as :func:`shrunk_centre` says with ``shrink_centre``, toward the first round's
    centre :math:`a_1` (error :math:`e`; else :math:`e = p\tau^2`). Each round also
    estimates the rows' spread about their mean,
    :math:`V = \frac1n\sum_i\lVert x_i - \bar x\rVert^2`, as
    :func:`conditioning_from_release` reads its own release,

    .. math:: \hat V_k = \rho_k^2\Big(\frac{\tilde S_{u,k}}{N_k} - \lVert\hat
        b_k\rVert^2 + p t_k\Big), \qquad
        \operatorname{Var}\hat V_k \approx v_k = \rho_k^4\big(t_k(1 + 4\beta_k)
        + 2p t_k^2\big), \quad t_k = \frac{\sigma_k^2}{N_k^2},\
        \beta_k = \max(\lVert\hat b_k\rVert^2 - p t_k, 0)

    (the variances of :math:`\tilde S_{u,k}/N_k`, of :math:`\lVert\hat b_k\rVert^2`'s
    linear term and of its square term, a scaled chi-square with :math:`p` degrees of
    freedom, which dominates where :math:`p` is large against :math:`N_k/\sigma_k`); their
    inverse-variance mean :math:`\hat V` (weights :math:`1/v_k`, standard
    error :math:`s_V`) gives the rows' mean squared distance to :math:`\hat c`, in units of
    the last radius :math:`\rho`,

    .. math:: \hat U = \min\Big(1,\ \max\Big(\frac{\hat V + e}{\rho^2},\
        \frac{s_V}{\rho^2}\Big)\Big),

    which for one round is :func:`conditioning_from_release`'s (floor :math:`\sigma/N`).

    The fit then runs on the rows about :math:`\hat c` within :math:`\rho` (``row_bound``),
    with the clip :math:`\rho\sqrt{2\hat U}` and the row scale :math:`\sqrt{\hat U}` in
    units of :math:`\rho`: where the rows lie far from the origin (a column of years, of
    latitudes), :math:`\rho \ll R` and the later rounds resolve the centre and the
    spread, which the first, at :math:`R`, cannot. The count is the rounds' counts'
    inverse-variance mean.

    Raises
    ------
    ValueError
        If there is no round, a release is not a one-dimensional array of ``p + 2`` finite
        numbers (the same ``p`` in all), a centre ``about`` not ``p`` finite numbers, or a
        scale not positive and finite.
    """
    if not rounds:
        raise ValueError("refined_conditioning needs at least one round")
    p = None
    weights, centres, counts, count_weights, spreads, spread_weights = [], [], [], [], [], []
    unit = check_positive("radius", rounds[0].radius)  # the arithmetic in units of R
    for k, rnd in enumerate(rounds):
        noisy = np.asarray(rnd.noisy, dtype=np.float64)
        if noisy.ndim != 1 or noisy.size < 2 or not np.all(np.isfinite(noisy)):
            raise ValueError(f"round {k}'s release must be p + 2 >= 2 finite numbers (S_b, "
                             f"S_u, N), got shape {noisy.shape}, or not all finite")
        if p is None:
            p = noisy.size - 2
        elif noisy.size != p + 2:
            raise ValueError(f"round {k}'s release holds {noisy.size} numbers, not p + 2 = "
                             f"{p + 2}")
        about = np.asarray(rnd.about, dtype=np.float64)
        if about.shape != (p,) or not np.all(np.isfinite(about)):
            raise ValueError(f"round {k}'s centre must be {p} finite numbers, got shape "
                             f"{about.shape}")
        r = check_positive("radius", rnd.radius) / unit
        sigma = check_positive("sigma", rnd.sigma)
        n_k = max(float(noisy[-1]), 1.0)
        b_k = noisy[:p] / n_k
        bb = float(b_k @ b_k)
        t2 = (sigma / n_k) ** 2  # the noise variance of each released mean
        spreads.append(r * r * (float(noisy[p]) / n_k - bb + p * t2))
        # Var of S_u / N, of 2 b.e and of ||e||^2 (e the mean's noise), at |b| estimated
        spread_weights.append(1.0 / (r**4 * (t2 * (1.0 + 4.0 * max(bb - p * t2, 0.0))
                                             + 2.0 * p * t2 * t2)))
        centres.append(about / unit + r * b_k)
        weights.append((n_k / (r * sigma)) ** 2)  # 1/tau_k^2
        counts.append(n_k)
        count_weights.append(1.0 / sigma**2)
    assert p is not None
    total = math.fsum(weights)
    c_hat = sum(w * c for w, c in zip(weights, centres, strict=True)) / total
    tau2 = 1.0 / total
    origin = np.asarray(rounds[0].about, dtype=np.float64) / unit  # shrunk toward it
    centre, shrinkage, error = (shrunk_centre(c_hat - origin, math.sqrt(tau2))
                                if shrink_centre else (c_hat - origin, 0.0, p * tau2))
    centre = centre + origin
    last = rounds[-1]
    r, sigma = float(last.radius) / unit, float(last.sigma)
    if len(rounds) == 1:  # conditioning_from_release's arithmetic
        noisy, n_t = np.asarray(last.noisy, dtype=np.float64), counts[-1]
        b_hat = noisy[:p] / n_t
        u_hat = (float(noisy[p]) / n_t - float(b_hat @ b_hat) + p * (sigma / n_t) ** 2
                 + error)
        floor = sigma / n_t
    else:
        weight = math.fsum(spread_weights)
        spread = math.fsum(w * v for w, v in zip(spread_weights, spreads, strict=True)) / weight
        u_hat = (spread + error) / (r * r)
        floor = 1.0 / (math.sqrt(weight) * r * r)
    u_hat = min(1.0, max(u_hat, floor))
    root = math.sqrt(u_hat)
    rho = float(last.radius)
    count = math.fsum(w * n for w, n in zip(count_weights, counts, strict=True)) / math.fsum(
        count_weights)
    return PrivateConditioning(unit * np.asarray(centre, dtype=np.float64), root, rho * root,
                               rho * math.sqrt(2.0 * u_hat), sigma / math.sqrt(n_sums),
                               count, shrinkage, rho, released_radius)


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
