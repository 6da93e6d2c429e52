r"""AdaSSP with the intercept's statistics released apart: the centred form of ``method="ssp"``.

With an intercept, every row the oracle serves is :math:`a_i = [x_i, s]` (column ``k`` the
public constant ``s``; :func:`noisygd.objectives.base.constant_column`), so Wang's statistics
:math:`A = \sum_i a_ia_i^\top` and :math:`b = \sum_i y_ia_i` (:mod:`noisygd.algorithms.ssp`)
are made of five blocks,

.. math::

    S_{xx} = \sum_i x_ix_i^\top, \quad S_x = \sum_i x_i, \quad n, \quad
    S_y = \sum_i y_i, \quad S_{xy} = \sum_i y_ix_i ,

with :math:`A_{kk} = s^2n`. Released as one matrix (Wang's form), the intercept's column
:math:`sS_x` carries the noise of every entry of :math:`A`, and the least-squares solution
multiplies it by the intercept's coefficient :math:`\bar y/s`: with targets off the range's
midpoint and a small ``s`` that noise dominated the fit (test :math:`R^2` below the constant
predictor's on ``bench_conditioning``'s ``offcentre`` family at ``n`` = 2000, docs/ssp.md).
Here each block is its own Gaussian release, with its own sensitivity, ``n`` included (the
intercept's equation needs ``n`` itself: the lower confidence bound of a cheap paid count,
what the planner sees under add/remove, was 40% below ``n`` at ``n`` = 500 and epsilon 0.5
and inflated the intercept by as much):

* :math:`\lambda_{\min}(C) + r`, sensitivity :math:`4R^2`: adding :math:`x` adds
  :math:`\frac{n}{n+1}(x - \bar x)(x - \bar x)^\top` to :math:`C`, a positive
  semidefinite matrix of norm at most :math:`(2R)^2`, so every eigenvalue moves up by at most
  that (Weyl);
* :math:`S_{xx}` (its upper triangle), sensitivity :math:`R^2`:
  :math:`\lVert xx^\top\rVert_F = \lVert x\rVert^2`;
* :math:`S_x`, sensitivity :math:`R`;
* :math:`n`, sensitivity 1;
* :math:`S_y`, sensitivity :math:`Y`;
* :math:`S_{xy}`, sensitivity :math:`RY` (:math:`|y|\lVert x\rVert`),

under add/remove (twice each under replace-one: a replacement is a removal and an addition),
where :math:`C = S_{xx} - S_xS_x^\top/n` is the centred Gram matrix (exact, inside the
mechanism), :math:`r = n\mu_2` the objective's ridge in sum form, :math:`R = \sqrt{\tilde B^2
- s^2}` the bound on the features (the served rows' bound :math:`\tilde B` less the constant)
and :math:`Y` the target bound. Release ``k`` gets the share :math:`w_k` of :math:`\mu^2`
(:math:`z_k = \Delta/(\mu\sqrt{w_k})`), so the six compose to exactly :math:`\mu`-GDP
(Dong, Roth and Su 2022, Cor. 3.3); the default is the equal split
(:data:`DEFAULT_CENTRED_SHARES`), Wang's equal split over his releases carried to six.

The solution (post-processing) is Wang's Algorithm 2 on the centred system: with
:math:`\tilde\lambda_{\min} = \max(\text{released} - \sigma_\lambda\sqrt{\log(6/\delta)}, 0)`
and :math:`\eta = \sigma_{xx}\sqrt{q\log(2q^2/\varrho)}` (``q`` features),
:math:`\lambda = \max(0, \eta - \tilde\lambda_{\min})` on the features' block and

.. math::

    \hat\theta = \begin{pmatrix} \tilde S_{xx} + (r + \lambda)I & s\tilde S_x \\
        s\tilde S_x^\top & s^2\tilde n + r \end{pmatrix}^{-1}
        \begin{pmatrix} \tilde S_{xy} \\ s\tilde S_y \end{pmatrix}

(the intercept in coordinate ``k``), the ridge :math:`r` on the intercept centred at the
released constant predictor: the last entry of the right-hand side gains
:math:`r\,\tilde m/s` with :math:`\tilde m = \tilde S_y/\tilde n` (as Wang's form centres it,
:func:`noisygd.algorithms.ssp.solve_released`; a large ridge then predicts the targets' mean,
not the range's midpoint). Eliminating the intercept leaves
:math:`(\tilde C + (r+\lambda)I)\hat\theta_x = \tilde S_{xy} - \tilde S_x\tilde S_y/\tilde n`
(for :math:`r = 0`): the intercept's noise enters through :math:`\tilde S_x\tilde S_y/n`, not
through a coefficient of size :math:`\bar y/s`. :math:`\eta` bounds the spectral norm of
the Gram's noise :math:`\sigma_{xx}Z` with probability :math:`1 - \varrho` (as in Wang's
analysis); the centring adds the noise of :math:`\tilde S_x` (a rank-two term of norm about
:math:`2\sigma_x\sqrt q\lVert\bar x\rVert` and :math:`-\sigma_x^2\lVert\xi\rVert^2/\tilde n`) which
it does not bound: the guarantee that the system is positive definite is Wang's up to that
term; a singular system is solved in the least-squares sense. A projection ball
(``radius``) is applied last.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from noisygd._checks import (
    check_bool,
    check_positive,
    check_positive_int,
)
from noisygd.accounting.events import Neighbouring
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.ssp import (
    GaussianReleasesPlan,
    adaptive_ridge,
    check_plan_budget,
    check_plan_options,
    check_rng_matches_plan,
    release_multipliers,
    sufficient_statistics,
)
from noisygd.mechanisms.noise import add_gaussian_noise
from noisygd.mechanisms.secure import SecureRandom
from noisygd.oracles.base import GradientOracle

__all__ = [
    "DEFAULT_CENTRED_SHARES",
    "CentredSSPPlan",
    "CentredSSPRelease",
    "CentredStatistics",
    "centred_adassp",
    "centred_statistics",
    "plan_centred_ssp",
    "release_centred_statistics",
    "solve_centred_release",
]

#: Equal split of :math:`\mu^2` over the six releases (:data:`RELEASES`): Wang's (2018) equal
#: split carried to six.
DEFAULT_CENTRED_SHARES = (1 / 6,) * 6
#: The releases' names, in order (the plan's summary and the error messages use them).
RELEASES = ("lambda_min", "S_xx", "S_x", "n", "S_y", "S_xy")


@dataclass(frozen=True)
class CentredSSPPlan(GaussianReleasesPlan):
    r"""Everything a centred AdaSSP run releases and how, fixed before any data is read.

    Attributes
    ----------
    relation : Neighbouring
    noise_multipliers : tuple of six floats
        :math:`z_k`: the noise sd of release ``k`` in units of its per-row bound
        (:meth:`units`).
    row_bound : float
        :math:`\tilde B`, the bound on the served rows (the constant column included).
    target_bound : float
        :math:`Y`.
    n_params : int
        ``p``: the ``q = p - 1`` features and the intercept.
    delta : float
    constant : (int, float)
        ``(k, s)``: the intercept's column and constant.
    failure_probability : float
        :math:`\varrho` of the ridge threshold.
    ridge : float
        :math:`r = n\mu_2`, the objective's ridge in sum form.
    radius : float or None
    shares : tuple of six floats
        Fractions of :math:`\mu^2`, in the order of :data:`RELEASES`.
    secure : bool
        Discrete Gaussian noise on a rounding grid (docs/secure_noise.md).
    """

    relation: Neighbouring
    noise_multipliers: tuple[float, ...]
    row_bound: float
    target_bound: float
    n_params: int
    delta: float
    constant: tuple[int, float]
    failure_probability: float = 0.05
    ridge: float = 0.0
    radius: float | None = None
    shares: tuple[float, ...] = field(default=DEFAULT_CENTRED_SHARES)
    secure: bool = False

    @property
    def feature_bound(self) -> float:
        r""":math:`R = \sqrt{\tilde B^2 - s^2}`, the bound on a row's features."""
        s = self.constant[1]
        return math.sqrt(max(self.row_bound * self.row_bound - s * s, 0.0))

    def units(self) -> tuple[float, ...]:
        r"""Per-row bounds of the six releases: :math:`(4R^2, R^2, R, 1, Y, RY)` (module
        doc)."""
        R, Y = self.feature_bound, self.target_bound
        return 4.0 * R * R, R * R, R, 1.0, Y, R * Y

    @property
    def n_features(self) -> int:
        """``q = p - 1``."""
        return self.n_params - 1

    @property
    def gram_dim(self) -> int:
        """``q``: the Gram matrix is of the features only (:math:`S_{xx}`)."""
        return self.n_features

    @property
    def dims(self) -> tuple[int, ...]:
        """Coordinates noised by each release: 1, ``q(q+1)/2``, ``q``, 1, 1, ``q``."""
        q = self.n_features
        return 1, q * (q + 1) // 2, q, 1, 1, q

    def summary(self) -> dict[str, Any]:
        """Public settings of the plan (for ``FitResult.info``)."""
        return {
            "form": "centred: the intercept's statistics released apart",
            "releases": list(RELEASES), "noise_multipliers": list(self.noise_multipliers),
            "noise_sds": list(self.noise_sds), "shares": list(self.shares),
            "row_bound": self.row_bound, "feature_bound": self.feature_bound,
            "target_bound": self.target_bound, "intercept_scale": self.constant[1],
            "failure_probability": self.failure_probability,
            "ridge_sum_form": self.ridge, "shift": self.shift, "threshold": self.threshold,
            "secure": self.secure,
        }


def plan_centred_ssp(
    mu: float, delta: float, *, relation: Neighbouring | str, n_params: int,
    row_bound: float, target_bound: float, constant: tuple[int, float],
    shares: tuple[float, ...] = DEFAULT_CENTRED_SHARES, failure_probability: float = 0.05,
    ridge: float = 0.0, radius: float | None = None, secure: bool = False,
) -> CentredSSPPlan:
    r"""The centred AdaSSP plan spending exactly :math:`\mu`-GDP (module doc).

    Release ``k`` gets :math:`z_k = \Delta/(\mu\sqrt{w_k})`, so
    :math:`\Delta\sqrt{\sum_k z_k^{-2}} = \mu\sqrt{\sum_k w_k} = \mu`.

    Parameters
    ----------
    mu : float
        Gaussian-DP parameter of the run.
    delta : float
        In (0, 1): the shift of :math:`\tilde\lambda_{\min}`.
    relation : Neighbouring or str
    n_params : int
        ``p`` >= 2 (at least one feature and the intercept).
    row_bound, target_bound : float
        :math:`\tilde B` (served rows, constant included) and :math:`Y`.
    constant : (int, float)
        ``(k, s)`` with ``k = p - 1`` and ``0 < s < row_bound``.
    shares : six positive floats summing to 1
        In the order :data:`RELEASES`.
    failure_probability : float
        :math:`\varrho \in (0, 1)`.
    ridge : float
        :math:`r = n\mu_2 \ge 0`.
    radius : float, optional
    secure : bool, default=False
    """
    mu, delta, relation = check_plan_budget(mu, delta, relation)
    p = check_positive_int("n_params", n_params)
    if p < 2:
        raise ValueError("the centred form needs at least one feature besides the intercept "
                         f"(n_params >= 2), got {p}")
    B = check_positive("row_bound", row_bound)
    Y = check_positive("target_bound", target_bound)
    k, s = int(constant[0]), check_positive("constant scale", constant[1])
    if k != p - 1:
        raise ValueError(f"the constant column must be the last one ({p - 1}), got {k}")
    if not s < B:
        raise ValueError(f"the constant {s!r} must be below the row bound {B!r} (the rows' "
                         "features are bounded by sqrt(row_bound^2 - s^2))")
    rho, ridge, radius, w = check_plan_options(
        failure_probability, ridge, radius, shares, RELEASES,
        " for the centred form (with an intercept)")
    z = release_multipliers(mu, relation, w)
    return CentredSSPPlan(relation=relation, noise_multipliers=z, row_bound=B, target_bound=Y,
                          n_params=p, delta=delta, constant=(k, s),
                          failure_probability=rho, ridge=ridge, radius=radius, shares=w,
                          secure=check_bool("secure", secure))


@dataclass(frozen=True)
class CentredStatistics:
    r"""The five exact blocks of Wang's :math:`(A, b)` (module doc). **Not private.**

    Attributes
    ----------
    gram : ndarray of shape (q, q)
        :math:`S_{xx}`.
    feature_sum : ndarray of shape (q,)
        :math:`S_x`.
    count : float
        :math:`n = A_{kk}/s^2`.
    target_sum : float
        :math:`S_y`.
    moment : ndarray of shape (q,)
        :math:`S_{xy}`.
    """

    gram: np.ndarray
    feature_sum: np.ndarray
    count: float
    target_sum: float
    moment: np.ndarray

    def centred_gram(self) -> np.ndarray:
        r""":math:`C = S_{xx} - S_xS_x^\top/n` (0 for an empty dataset)."""
        if self.count <= 0.0:
            return np.zeros_like(self.gram)
        return self.gram - np.outer(self.feature_sum, self.feature_sum) / self.count


def centred_statistics(A: np.ndarray, b: np.ndarray,
                       constant: tuple[int, float]) -> CentredStatistics:
    r"""The blocks of :math:`A = \sum_i a_ia_i^\top`, :math:`b = \sum_i y_ia_i` for rows
    :math:`a_i` whose column ``k`` is the constant ``s``: :math:`S_{xx} = A_{rr}`,
    :math:`S_x = A_{rk}/s`, :math:`n = A_{kk}/s^2`, :math:`S_y = b_k/s`,
    :math:`S_{xy} = b_r` (``r`` the other columns). **Not private.**"""
    A = np.asarray(A, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    k, s = constant
    rest = np.delete(np.arange(A.shape[0]), k)
    return CentredStatistics(
        gram=A[np.ix_(rest, rest)], feature_sum=A[rest, k] / s, count=float(A[k, k]) / (s * s),
        target_sum=float(b[k]) / s, moment=b[rest])


@dataclass(frozen=True)
class CentredSSPRelease:
    """The six noisy releases (public once drawn), in the order of :data:`RELEASES`:
    ``lambda_min`` (of :math:`C + rI`), ``gram`` (symmetric), ``feature_sum``, ``count``,
    ``target_sum``, ``moment``."""

    lambda_min: float
    gram: np.ndarray
    feature_sum: np.ndarray
    count: float
    target_sum: float
    moment: np.ndarray


def release_centred_statistics(stats: CentredStatistics, plan: CentredSSPPlan,
                               rng: np.random.Generator | SecureRandom) -> CentredSSPRelease:
    r"""The six Gaussian releases of the plan (module doc), drawn in the order of
    :data:`RELEASES` from ``rng``: :math:`\lambda_{\min}(C) + r`, :math:`S_{xx}`'s upper
    triangle, :math:`S_x`, :math:`n`, :math:`S_y` and :math:`S_{xy}`.

    Parameters
    ----------
    stats : CentredStatistics
        Exact blocks of rows within the plan's bounds (:func:`centred_statistics`).
    plan : CentredSSPPlan
    rng : numpy.random.Generator or SecureRandom
        A :class:`~noisygd.mechanisms.secure.SecureRandom` exactly when ``plan.secure``.
    """
    check_rng_matches_plan(rng, plan)
    q = plan.n_features
    if stats.gram.shape != (q, q) or stats.feature_sum.shape != (q,) \
            or stats.moment.shape != (q,):
        raise ValueError(f"the statistics must be of {q} features for this plan")
    s_l, s_xx, s_x, s_n, s_y, s_xy = plan.noise_sds
    lam = float(np.linalg.eigvalsh(stats.centred_gram())[0]) + plan.ridge
    lam_noisy = float(add_gaussian_noise(lam, s_l, rng))
    iu = np.triu_indices(q)
    upper = add_gaussian_noise(stats.gram[iu], s_xx, rng)
    gram = np.zeros((q, q))
    gram[iu] = upper
    gram = gram + np.triu(gram, 1).T
    feature_sum = np.asarray(add_gaussian_noise(stats.feature_sum, s_x, rng), dtype=np.float64)
    count = float(add_gaussian_noise(stats.count, s_n, rng))
    target_sum = float(add_gaussian_noise(stats.target_sum, s_y, rng))
    moment = np.asarray(add_gaussian_noise(stats.moment, s_xy, rng), dtype=np.float64)
    return CentredSSPRelease(lam_noisy, gram, feature_sum, count, target_sum, moment)


def solve_centred_release(release: CentredSSPRelease,
                          plan: CentredSSPPlan) -> tuple[np.ndarray, float]:
    r""":math:`\hat\theta` of the module doc and Wang's ridge :math:`\lambda` (post-processing
    of the releases and public values only); the intercept in the plan's constant column.
    The released count is floored at 1 (a count below 1 is noise)."""
    lam = adaptive_ridge(release.lambda_min, plan.shift, plan.threshold)
    k, s = plan.constant
    q = plan.n_features
    M = np.empty((q + 1, q + 1))
    M[:q, :q] = release.gram + (plan.ridge + lam) * np.eye(q)
    M[:q, q] = M[q, :q] = s * release.feature_sum
    n = max(release.count, 1.0)
    M[q, q] = s * s * n + plan.ridge
    # the objective's ridge on the intercept is centred at the released mean m = S_y / n
    # (the constant predictor), as Wang's form does (noisygd.algorithms.ssp.solve_released)
    mean = release.target_sum / n
    rhs = np.append(release.moment, s * release.target_sum + plan.ridge * mean / s)
    try:
        solved = np.linalg.solve(M, rhs)
    except np.linalg.LinAlgError:
        solved = np.linalg.lstsq(M, rhs, rcond=None)[0]
    theta = np.insert(solved[:q], k, solved[q])  # k = p - 1: the intercept last
    if plan.radius is not None:
        norm = float(np.linalg.norm(theta))
        if norm > plan.radius:
            theta = theta * (plan.radius / norm)
    return theta, lam


def centred_adassp(oracle: GradientOracle, plan: CentredSSPPlan,
                   rng: np.random.Generator | SecureRandom) -> FitResult:
    r"""Centred AdaSSP on a squared-loss oracle whose rows carry the plan's constant column
    (module doc). Reads :math:`(A, b)` through the oracle
    (:func:`noisygd.algorithms.ssp.sufficient_statistics`), releases the six statistics and
    solves.

    Returns
    -------
    FitResult
        ``event`` = ``plan.event``; ``info`` holds the plan and the ridge :math:`\lambda`.
    """
    check_rng_matches_plan(rng, plan)
    if oracle.n_params != plan.n_params:
        raise ValueError(f"the oracle has {oracle.n_params} parameters but the plan was made "
                         f"for {plan.n_params}")
    A, b = sufficient_statistics(oracle)
    released = release_centred_statistics(centred_statistics(A, b, plan.constant), plan, rng)
    del A, b
    theta, lam = solve_centred_release(released, plan)
    info = {
        "algorithm": "AdaSSP (Wang 2018, Algorithm 2), centred: sufficient statistics "
                     "perturbation with the intercept's statistics released apart",
        "plan": {**plan.summary(), "adaptive_ridge": lam},
    }
    return FitResult(theta=theta, event=plan.event, n_iter=1, info=info)
