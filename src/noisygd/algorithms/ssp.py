r"""Sufficient statistics perturbation for least squares: AdaSSP (Wang 2018, Algorithm 2).

For the squared loss :math:`\ell(\theta; x, y) = \frac12(\langle\theta, x\rangle - y)^2` the
gradient of the data term at *every* :math:`\theta` is a function of two sums,

.. math::

    \sum_{i=1}^n \nabla\ell(\theta; x_i, y_i) = A\theta - b, \qquad
    A = \sum_i x_i x_i^\top, \quad b = \sum_i y_i x_i ,

so releasing :math:`(A, b)` once with Gaussian noise is a noisy full-gradient oracle at every
:math:`\theta` at the price of one release ("sufficient statistics perturbation", SSP), and
the minimiser of the noisy quadratic is post-processing. Yu-Xiang Wang, "Revisiting
differentially private linear regression: optimal and adaptive prediction & estimation in
unbounded domain", UAI 2018, Algorithm 2 (AdaSSP) makes it robust to an ill-conditioned
:math:`A` by a ridge chosen from a *private* estimate of :math:`\lambda_{\min}(A)`:

.. math::

    \tilde\lambda_{\min} &= \max\big(\lambda_{\min}(A) + \sigma_\lambda Z_0
        - \sigma_\lambda\sqrt{\log(6/\delta)},\ 0\big), \\
    \lambda &= \max\big(0,\ \sigma_A\sqrt{p\log(2p^2/\varrho)} - \tilde\lambda_{\min}\big),\\
    \tilde A &= A + \sigma_A Z, \qquad \tilde b = b + \sigma_b z, \\
    \hat\theta &= (\tilde A + \lambda I)^{-1}\tilde b ,

with :math:`Z` symmetric (its upper triangle, diagonal included, i.i.d.
:math:`\mathcal N(0, 1)`), :math:`z \sim \mathcal N(0, I_p)`, :math:`Z_0 \sim \mathcal N(0, 1)`
and :math:`\varrho` the failure probability of the ridge's guarantee (Wang's experiments:
0.05). In Wang's statement each release is an :math:`(\varepsilon/3, \delta/3)` Gaussian
mechanism with :math:`\sigma = \sqrt{\log(6/\delta)}/(\varepsilon/3)` per unit of
sensitivity; here the three releases are calibrated *exactly* in Gaussian DP (below) and the
two data-independent thresholds keep Wang's form in units of the noise actually drawn:
the shift :math:`\sigma_\lambda\sqrt{\log(6/\delta)}` makes :math:`\tilde\lambda_{\min}
\le \lambda_{\min}(A)` except with probability at most :math:`\sqrt{\delta/6}`, and
:math:`\eta = \sigma_A\sqrt{p\log(2p^2/\varrho)}` bounds the spectral norm of
:math:`\sigma_A Z` with probability :math:`1 - \varrho` (a matrix concentration bound for
Gaussian series, Tropp 2012, as in Wang's analysis), so that :math:`\tilde A + \lambda I` is
positive definite with that probability.

**Theorem** (Wang 2018, Theorem 3, paraphrased). With rows :math:`\lVert x_i\rVert \le B` and
targets :math:`|y_i| \le Y`, AdaSSP is :math:`(\varepsilon, \delta)`-DP and, with probability
:math:`1 - \varrho`, its excess empirical risk :math:`F(\hat\theta) - F(\theta^*)` (with
:math:`F(\theta) = \frac1{2n}\lVert y - X\theta\rVert^2`) is at most a constant times

.. math::

    \min\Big\{\frac{\sqrt{p\log(p^2/\varrho)\log(6/\delta)}\,
        (B^2\lVert\theta^*\rVert^2 + Y^2)}{n\varepsilon},\ \
        \frac{p\log(p^2/\varrho)\log(6/\delta)\,B^2(B^2\lVert\theta^*\rVert^2 + Y^2)}
        {n^2\varepsilon^2\,\lambda_{\min}(A/n)}\Big\}

(up to constants and lower-order terms; see the paper for the exact statement):
the better of the worst-case (convex, Lipschitz) rate and the strongly convex rate of the
instance *without knowing* :math:`\lambda_{\min}`, which is what NoisyGD planned from public
facts cannot do (its planner sees only the declared strong convexity, the ridge).

Privacy (Gaussian DP, Dong, Roth and Su 2022). Rows served by the oracle satisfy
:math:`\lVert x'_i\rVert \le \tilde B` (its declared domain; for the squared loss the
declared smoothness is exactly :math:`\beta = \tilde B^2`) and targets
:math:`|y_i| \le Y` (the declared target bound; the oracle's objective refuses others). One
row changes

* :math:`\lambda_{\min}(A)` by at most :math:`\tilde B^2` (Weyl: adding :math:`xx^\top`
  moves every eigenvalue by at most :math:`\lVert x\rVert^2`);
* the upper triangle of :math:`A` by at most :math:`\lVert xx^\top\rVert_F =
  \lVert x\rVert^2 \le \tilde B^2` in L2;
* :math:`b` by at most :math:`|y|\lVert x\rVert \le \tilde B Y`;

under add/remove neighbours, and by at most twice that under replace-one
(``Neighbouring.clipped_sum_sensitivity`` in units of these per-example bounds). With noise
multipliers :math:`z_k` (noise sd :math:`z_k` times the unit), release ``k`` is
:math:`\Delta/z_k`-GDP and the three compose to :math:`\mu = \Delta\sqrt{\sum_k z_k^{-2}}`
(Corollary 3.3). The plan gives release ``k`` the share :math:`w_k` of :math:`\mu^2`
(:math:`z_k = \Delta/(\mu\sqrt{w_k})`; default :math:`w = (1/3, 1/3, 1/3)`, Wang's equal
split), so the event ``Composed((Gaussian(z_1), Gaussian(z_2), Gaussian(z_3)))`` is exactly
:math:`\mu`-GDP.

A ridge :math:`\frac{\mu_2}2\lVert\theta\rVert^2` of the objective (``l2``) enters in its sum
form :math:`n\mu_2 I` with a public ``n`` (the lower confidence bound of a paid-for count
under add/remove): Wang's rule is applied to :math:`A + n\mu_2 I`, whose smallest eigenvalue
is :math:`\lambda_{\min}(A) + n\mu_2`. A projection ball (``radius``) is applied to
:math:`\hat\theta` (post-processing).

The statistics are read through the oracle interface only: :math:`b = -g(0)` and
:math:`Ae_j = g(e_j) - g(0)` with :math:`g(\theta)` the *unclipped* gradient sum
(:meth:`~noisygd.oracles.base.GradientOracle.clipped_gradient_sum` with ``clip=None``),
``p + 1`` passes over the rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from noisygd._checks import (
    check_bool,
    check_fraction,
    check_generator,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_probability,
)
from noisygd.accounting.events import Composed, DiscreteGaussianNoise, Gaussian, Neighbouring
from noisygd.algorithms.base import FitResult
from noisygd.mechanisms.noise import add_gaussian_noise, is_secure, sensitivity_inflation
from noisygd.mechanisms.secure import SecureRandom
from noisygd.objectives.base import constant_column as objective_constant_column
from noisygd.oracles.base import GradientOracle

__all__ = [
    "DEFAULT_FAILURE_PROBABILITY",
    "DEFAULT_SHARES",
    "GaussianReleasesPlan",
    "SSPPlan",
    "SSPRelease",
    "adaptive_ridge",
    "adassp",
    "check_plan_budget",
    "check_plan_options",
    "check_rng_matches_plan",
    "constant_column",
    "plan_ssp",
    "release_multipliers",
    "release_statistics",
    "released_constant",
    "solve_released",
    "sufficient_statistics",
]

#: Wang's (2018) equal split of the budget between lambda_min, X^T X and X^T y.
DEFAULT_SHARES = (1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0)
#: :math:`\varrho` of the ridge threshold (the value of Wang's experiments).
DEFAULT_FAILURE_PROBABILITY = 0.05


class GaussianReleasesPlan:
    r"""What an SSP plan computes from its noise multipliers and its releases' per-row bounds
    (mixed into :class:`SSPPlan` and :class:`~noisygd.algorithms.ssp_centred.CentredSSPPlan`,
    which give ``relation``, ``noise_multipliers``, ``delta``, ``failure_probability``,
    ``secure``, :meth:`units`, :attr:`dims` and :attr:`gram_dim`).

    Release ``k`` adds Gaussian noise of sd :math:`\sigma_k = z_k u_k` (:attr:`noise_sds`)
    to a statistic of L2 sensitivity :math:`\Delta u_k` (:math:`u_k` its per-row bound,
    :math:`\Delta` the relation's multiplier), so the releases compose to exactly
    :math:`\mu = \Delta\sqrt{\sum_k z_k^{-2}}`-GDP (:attr:`event`). Release 0 is
    :math:`\lambda_{\min}` and release 1 the Gram matrix, whose noise Wang's thresholds
    (:attr:`shift`, :attr:`threshold`) are stated in.
    """

    relation: Neighbouring
    noise_multipliers: tuple[float, ...]
    delta: float
    failure_probability: float
    secure: bool

    def units(self) -> tuple[float, ...]:
        """Per-row bounds of the releases, in order (the plan's own)."""
        raise NotImplementedError

    @property
    def dims(self) -> tuple[int, ...]:
        """Coordinates noised by each release (the plan's own)."""
        raise NotImplementedError

    @property
    def gram_dim(self) -> int:
        """The side of the released Gram matrix (the plan's own)."""
        raise NotImplementedError

    @property
    def sensitivity(self) -> float:
        r""":math:`\Delta` in units of the per-row bounds (1 add/remove, 2 replace-one)."""
        return Neighbouring(self.relation).clipped_sum_sensitivity

    @property
    def noise_sds(self) -> tuple[float, ...]:
        r""":math:`\sigma_k = z_k` times release ``k``'s unit."""
        return tuple(z * u for z, u in zip(self.noise_multipliers, self.units(), strict=True))

    @property
    def shift(self) -> float:
        r""":math:`\sigma_\lambda\sqrt{\log(6/\delta)}`, which puts the released
        :math:`\lambda_{\min}` below the true one except with probability at most
        :math:`\sqrt{\delta/6}` (Wang 2018, Algorithm 2, line 1)."""
        return self.noise_sds[0] * math.sqrt(math.log(6.0 / self.delta))

    @property
    def threshold(self) -> float:
        r""":math:`\eta = \sigma_A\sqrt{d\log(2d^2/\varrho)}`, ``d`` = :attr:`gram_dim`: a
        bound on the spectral norm of the Gram's symmetric Gaussian noise with probability
        :math:`1 - \varrho` (Wang 2018, Algorithm 2, line 2)."""
        d = self.gram_dim
        return self.noise_sds[1] * math.sqrt(d * math.log(2.0 * d * d / self.failure_probability))

    def inflations(self) -> tuple[float, ...]:
        r""":math:`\kappa_k = 1 + \gamma_k\sqrt{d_k}/\Delta_k` of each release in secure mode
        (:func:`~noisygd.mechanisms.noise.sensitivity_inflation`), 1 otherwise: a function of
        the noise sd, the dimension and the sensitivity only (the rounding grid), hence of
        the plan."""
        if not self.secure:
            return (1.0,) * len(self.noise_multipliers)
        rng = SecureRandom()
        return tuple(sensitivity_inflation(rng, sd, dim, self.sensitivity * unit)
                     for sd, dim, unit in zip(self.noise_sds, self.dims, self.units(),
                                              strict=True))

    @property
    def event(self) -> Composed:
        r"""``Composed`` of the Gaussian releases, each with the relation's sensitivity
        (exactly :math:`\mu`-GDP); in secure mode each wrapped in ``DiscreteGaussianNoise``
        (zCDP)."""
        rel = Neighbouring(self.relation)
        gaussians = [Gaussian(z, sensitivity=self.sensitivity, relation=rel)
                     for z in self.noise_multipliers]
        if not self.secure:
            return Composed(tuple(gaussians))
        return Composed(tuple(DiscreteGaussianNoise(g, k)
                              for g, k in zip(gaussians, self.inflations(), strict=True)))


def adaptive_ridge(released_lambda_min: float, shift: float, threshold: float) -> float:
    r"""Wang's ridge :math:`\lambda = \max(0, \eta - \max(\tilde\lambda - \text{shift}, 0))`
    (Algorithm 2, lines 1-2; post-processing of the released :math:`\tilde\lambda`)."""
    return max(0.0, threshold - max(released_lambda_min - shift, 0.0))


@dataclass(frozen=True)
class SSPPlan(GaussianReleasesPlan):
    r"""Everything an AdaSSP run releases and how, fixed before any data is read.

    Attributes
    ----------
    relation : Neighbouring
    noise_multipliers : (float, float, float)
        :math:`(z_\lambda, z_A, z_b)`: noise sd in units of :math:`\tilde B^2`,
        :math:`\tilde B^2` and :math:`\tilde BY`.
    row_bound : float
        :math:`\tilde B`, the bound on the served rows (intercept column included).
    target_bound : float
        :math:`Y`.
    n_params : int
        ``p``.
    delta : float
        The budget's :math:`\delta` (for the shift :math:`\sigma_\lambda\sqrt{\log(6/\delta)}`).
    failure_probability : float
        :math:`\varrho` of the ridge threshold.
    ridge : float
        The objective's ridge in sum form, :math:`n\mu_2` (public ``n``).
    radius : float or None
        Projection ball applied to the solution.
    shares : (float, float, float)
        :math:`(w_\lambda, w_A, w_b)`, the fractions of :math:`\mu^2`.
    secure : bool
        Secure mode (docs/secure_noise.md): the noise is discrete Gaussian on a rounding grid
        (a :class:`~noisygd.mechanisms.secure.SecureRandom`), and the event wraps each
        release in :class:`~noisygd.accounting.events.DiscreteGaussianNoise` with its
        sensitivity inflation :math:`\kappa_k = 1 + \gamma_k\sqrt{d_k}/\Delta_k`
        (:func:`~noisygd.mechanisms.noise.sensitivity_inflation`; :math:`d_k` = 1,
        :math:`p(p+1)/2`, :math:`p`).
    """

    relation: Neighbouring
    noise_multipliers: tuple[float, float, float]
    row_bound: float
    target_bound: float
    n_params: int
    delta: float
    failure_probability: float = DEFAULT_FAILURE_PROBABILITY
    ridge: float = 0.0
    radius: float | None = None
    shares: tuple[float, float, float] = field(default=DEFAULT_SHARES)
    secure: bool = False
    n_samples: float | None = None

    def units(self) -> tuple[float, float, float]:
        r"""Per-row bounds of the three releases: :math:`(\tilde B^2, \tilde B^2, \tilde BY)`
        (module doc), so :attr:`noise_sds` is :math:`(z_\lambda\tilde B^2, z_A\tilde B^2,
        z_b\tilde BY)`."""
        B = self.row_bound
        return B * B, B * B, B * self.target_bound

    @property
    def gram_dim(self) -> int:
        """``p``: the Gram matrix is of every coordinate."""
        return self.n_params

    @property
    def dims(self) -> tuple[int, int, int]:
        """Coordinates noised by each release: 1, :math:`p(p+1)/2` and :math:`p`."""
        p = self.n_params
        return 1, p * (p + 1) // 2, p

    def summary(self) -> dict[str, Any]:
        """Public settings of the plan (for ``FitResult.info``)."""
        return {
            "noise_multipliers": list(self.noise_multipliers),
            "noise_sds": list(self.noise_sds), "shares": list(self.shares),
            "row_bound": self.row_bound, "target_bound": self.target_bound,
            "failure_probability": self.failure_probability, "ridge_sum_form": self.ridge,
            "shift": self.shift, "threshold": self.threshold, "secure": self.secure,
        }


def check_plan_budget(mu: float, delta: float, relation: Neighbouring | str
                      ) -> tuple[float, float, Neighbouring]:
    r"""``(mu, delta, relation)`` of an SSP plan, checked: ``mu > 0``, ``delta`` in (0, 1)
    (Wang's shift is :math:`\sigma_\lambda\sqrt{\log(6/\delta)}`)."""
    mu = check_positive("mu", mu)
    delta = check_probability("delta", delta)
    if not 0.0 < delta < 1.0:
        raise ValueError("delta must be in (0, 1) for AdaSSP (its lambda_min shift is "
                         "sqrt(log(6/delta)))")
    return mu, delta, Neighbouring(relation)


def check_plan_options(failure_probability: float, ridge: float, radius: float | None,
                       shares: tuple[float, ...], releases: tuple[str, ...], form: str = ""
                       ) -> tuple[float, float, float | None, tuple[float, ...]]:
    """``(rho, ridge, radius, shares)`` of an SSP plan, checked: :math:`\varrho` in (0, 1),
    ``ridge >= 0``, ``radius`` positive or None, one positive share per release named in
    ``releases``, summing to 1 (``form`` ends that message)."""
    rho = check_fraction("failure_probability", failure_probability, closed_right=False)
    if rho <= 0.0:
        raise ValueError("failure_probability must be in (0, 1)")
    ridge = check_nonnegative("ridge", ridge)
    if radius is not None:
        radius = check_positive("radius", radius)
    w = tuple(check_positive(f"shares[{k}]", s) for k, s in enumerate(shares))
    if len(w) != len(releases) or not math.isclose(math.fsum(w), 1.0, rel_tol=0.0,
                                                   abs_tol=1e-12):
        words = {3: "three", 6: "six"}.get(len(releases), str(len(releases)))
        raise ValueError(f"shares must be {words} positive numbers summing to 1 ("
                         + ", ".join(releases) + f"){form}")
    return rho, ridge, radius, w


def release_multipliers(mu: float, relation: Neighbouring, shares: tuple[float, ...]
                        ) -> tuple[float, ...]:
    r""":math:`z_k = \Delta/(\mu\sqrt{w_k})`: release ``k`` spends the share :math:`w_k` of
    :math:`\mu^2`, so the releases compose to exactly :math:`\mu`-GDP."""
    sens = relation.clipped_sum_sensitivity
    return tuple(sens / (mu * math.sqrt(wk)) for wk in shares)


def plan_ssp(
    mu: float, delta: float, *, relation: Neighbouring | str, n_params: int,
    row_bound: float, target_bound: float, shares: tuple[float, ...] = DEFAULT_SHARES,
    failure_probability: float = DEFAULT_FAILURE_PROBABILITY, ridge: float = 0.0,
    radius: float | None = None, secure: bool = False, n_samples: float | None = None,
) -> SSPPlan:
    r"""The AdaSSP plan spending exactly :math:`\mu`-GDP (module doc, "Privacy").

    Release ``k`` gets :math:`z_k = \Delta/(\mu\sqrt{w_k})`, so
    :math:`\Delta\sqrt{\sum_k z_k^{-2}} = \mu\sqrt{\sum_k w_k} = \mu`.

    Parameters
    ----------
    mu : float
        Gaussian-DP parameter of the whole run.
    delta : float
        The budget's :math:`\delta`, in (0, 1) (enters the shift of
        :math:`\tilde\lambda_{\min}`, Algorithm 2 line 1).
    relation : Neighbouring or str
    n_params : int
        ``p`` (intercept column included).
    row_bound, target_bound : float
        :math:`\tilde B` and :math:`Y`.
    shares : three positive floats summing to 1
        :math:`(w_\lambda, w_A, w_b)`.
    failure_probability : float
        :math:`\varrho \in (0, 1)`.
    ridge : float
        :math:`n\mu_2 \ge 0`.
    radius : float, optional
        Projection ball for the solution.
    secure : bool, default=False
        Plan secure mode (:class:`SSPPlan`); ``mu`` is then the *continuous* plan's, and the
        event's zCDP is :math:`\sum_k\kappa_k^2\mu_k^2/2` (the solver calibrates ``mu`` so
        that this meets the budget: :func:`noisygd.solvers.base.plan_secure_gaussian`).
    n_samples : float, optional
        The public ``n`` (or the lower confidence bound of a paid count), with which
        :func:`released_constant` reads the targets' mean from :math:`\tilde b` alone.
    """
    mu, delta, relation = check_plan_budget(mu, delta, relation)
    p = check_positive_int("n_params", n_params)
    B = check_positive("row_bound", row_bound)
    Y = check_positive("target_bound", target_bound)
    rho, ridge, radius, w = check_plan_options(
        failure_probability, ridge, radius, shares, ("lambda_min", "X^T X", "X^T y"))
    z = release_multipliers(mu, relation, w)
    return SSPPlan(relation=relation, noise_multipliers=z,  # type: ignore[arg-type]
                   row_bound=B, target_bound=Y, n_params=p, delta=delta,
                   failure_probability=rho, ridge=ridge, radius=radius,
                   shares=w, secure=check_bool("secure", secure),  # type: ignore[arg-type]
                   n_samples=None if n_samples is None else check_positive("n_samples",
                                                                           n_samples))


def sufficient_statistics(oracle: GradientOracle) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`(A, b) = (\sum_i x_ix_i^\top, \sum_i y_ix_i)` of a squared-loss oracle.

    Through the oracle interface only: with :math:`g(\theta)` the unclipped gradient sum of
    the data term, :math:`g(\theta) = A\theta - b`, so :math:`b = -g(0)` and
    :math:`Ae_j = g(e_j) - g(0)` (``p + 1`` calls). :math:`A` is returned symmetrised,
    :math:`(A + A^\top)/2` (it is symmetric up to rounding). **Not private**: the caller
    adds the noise (:func:`release_statistics`).
    """
    p = oracle.n_params
    g0 = np.asarray(oracle.clipped_gradient_sum(np.zeros(p), None), dtype=np.float64)
    A = np.empty((p, p))
    e = np.zeros(p)
    for j in range(p):
        e[j] = 1.0
        A[:, j] = np.asarray(oracle.clipped_gradient_sum(e, None), dtype=np.float64) - g0
        e[j] = 0.0
    return 0.5 * (A + A.T), -g0


@dataclass(frozen=True)
class SSPRelease:
    r"""The three noisy releases of one AdaSSP run (public once drawn).

    Attributes
    ----------
    lambda_min : float
        :math:`\lambda_{\min}(A + n\mu_2 I) + \sigma_\lambda Z_0` (before the shift and the
        clipping at 0 of Algorithm 2, line 1).
    gram : ndarray of shape (p, p)
        :math:`\tilde A`, symmetric.
    moment : ndarray of shape (p,)
        :math:`\tilde b`.
    """

    lambda_min: float
    gram: np.ndarray
    moment: np.ndarray


def check_rng_matches_plan(rng: Any, plan: Any) -> None:
    """Refuse a generator that does not match the plan's ``secure`` flag (a
    :class:`~noisygd.mechanisms.secure.SecureRandom` exactly for a secure plan), so that the
    event is always the one of the noise drawn.

    Raises
    ------
    TypeError
        If ``rng`` is not a generator, or its kind does not match ``plan.secure``.
    """
    check_generator("rng", rng, secure=plan.secure)
    if plan.secure != is_secure(rng):
        raise TypeError("a secure plan needs rng=SecureRandom() and a SecureRandom needs a "
                        "secure plan (the event must be the one of the noise drawn)")


def release_statistics(A: np.ndarray, b: np.ndarray, plan: SSPPlan,
                       rng: np.random.Generator | SecureRandom) -> SSPRelease:
    r"""The Gaussian releases of :math:`\lambda_{\min}(A + n\mu_2I)`, :math:`A`'s upper
    triangle and :math:`b` (module doc), drawn in that order from ``rng``.

    Parameters
    ----------
    A : ndarray of shape (p, p)
        Symmetric :math:`\sum_i x_ix_i^\top` (rows within the plan's ``row_bound``).
    b : ndarray of shape (p,)
        :math:`\sum_i y_ix_i` (targets within the plan's ``target_bound``).
    plan : SSPPlan
    rng : numpy.random.Generator or SecureRandom
        A :class:`~noisygd.mechanisms.secure.SecureRandom` exactly when ``plan.secure``.
    """
    check_rng_matches_plan(rng, plan)
    p = plan.n_params
    A = np.asarray(A, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if A.shape != (p, p) or b.shape != (p,):
        raise ValueError(f"A must have shape ({p}, {p}) and b shape ({p},) for this plan")
    s_l, s_a, s_b = plan.noise_sds
    lam = float(np.linalg.eigvalsh(A)[0]) + plan.ridge
    lam_noisy = float(add_gaussian_noise(lam, s_l, rng))
    iu = np.triu_indices(p)
    upper = add_gaussian_noise(A[iu], s_a, rng)
    gram = np.zeros((p, p))
    gram[iu] = upper
    gram = gram + np.triu(gram, 1).T
    moment = add_gaussian_noise(b, s_b, rng)
    return SSPRelease(lam_noisy, gram, np.asarray(moment, dtype=np.float64))


def released_constant(release: SSPRelease, plan: SSPPlan,
                      constant: tuple[int, float]) -> float:
    r"""The constant predictor read from the releases (post-processing), for a constant
    column :math:`x_{ik} = s` (the intercept's): :math:`b_k = s\sum_iy_i`, so with the plan's
    public ``n`` :math:`m = \tilde b_k/(sn)` is the targets' mean up to the noise
    :math:`\sigma_b/(sn)`; without it :math:`m = s\tilde b_k/\tilde A_{kk}`
    (:math:`A_{kk} = ns^2`), noisier, 0 where :math:`\tilde A_{kk} \le 0`. Clipped to the
    declared target bound."""
    k, scale = constant
    if plan.n_samples is not None:
        m = float(release.moment[k]) / (scale * plan.n_samples)
    else:
        a_kk = float(release.gram[k, k])
        if a_kk <= 0.0:
            return 0.0
        m = scale * float(release.moment[k]) / a_kk
    return float(np.clip(m, -plan.target_bound, plan.target_bound))


def solve_released(release: SSPRelease, plan: SSPPlan,
                   constant: tuple[int, float] | None = None) -> tuple[np.ndarray, float]:
    r""":math:`\hat\theta = (\tilde A + (n\mu_2 + \lambda)I)^{-1}\tilde b` and :math:`\lambda`
    (Algorithm 2, lines 1-2 and 5; post-processing of the releases only).

    :math:`\lambda = \max(0, \eta - \tilde\lambda_{\min})` with
    :math:`\tilde\lambda_{\min} = \max(\text{released} - \text{shift}, 0)`. A singular
    system (probability at most :math:`\varrho` under the theorem) is solved in the
    least-squares sense; a projection ball is applied last.

    With ``constant = (k, s)`` (column ``k`` of every row is the constant ``s``: the
    intercept's) and no projection ball, the ridge is centred at the constant predictor
    :math:`\theta_0 = (m/s)e_k` (:func:`released_constant`) instead of at 0:

    .. math:: \hat\theta = \theta_0 + (\tilde A + (n\mu_2 + \lambda)I)^{-1}
              (\tilde b - \tilde A\theta_0),

    the minimiser of the released quadratic plus :math:`\frac{n\mu_2 + \lambda}2
    \lVert\theta - \theta_0\rVert^2`. Wang's ridge shrinks toward :math:`\theta_0`, the fit
    that predicts the targets' released mean, rather than toward the prediction 0: with
    targets far from 0 (an off-centre range) and a ridge large against the signal (small
    ``n`` or epsilon), shrinking toward 0 predicted the range's midpoint and did far worse
    than the constant predictor (test :math:`R^2` -6.3 on ``bench_conditioning``'s
    ``offcentre`` 2000 x 100 at epsilon 1; docs/ssp.md). Post-processing: the event is
    unchanged.
    """
    lam = adaptive_ridge(release.lambda_min, plan.shift, plan.threshold)
    M = release.gram + (plan.ridge + lam) * np.eye(plan.n_params)
    theta0 = np.zeros(plan.n_params)
    if constant is not None and plan.radius is None:
        theta0[constant[0]] = released_constant(release, plan, constant) / constant[1]
    rhs = release.moment - release.gram @ theta0
    try:
        theta = theta0 + np.linalg.solve(M, rhs)
    except np.linalg.LinAlgError:
        theta = theta0 + np.linalg.lstsq(M, rhs, rcond=None)[0]
    if plan.radius is not None:
        norm = float(np.linalg.norm(theta))
        if norm > plan.radius:
            theta = theta * (plan.radius / norm)
    return theta, lam


def constant_column(oracle: GradientOracle) -> tuple[int, float] | None:
    r"""``(k, s)`` where every row the oracle serves has the constant ``s`` in column ``k``
    (the intercept column: ``s`` = the objective's ``intercept_scale`` for a
    :class:`~noisygd.objectives.centred.CentredGLM`, 1 for a GLM with ``fit_intercept``, the
    last coordinate either way), else None. Public: read from the objective, not the rows
    (:func:`noisygd.objectives.base.constant_column`)."""
    return objective_constant_column(getattr(oracle, "objective", None), oracle.n_params)


def adassp(oracle: GradientOracle, plan: SSPPlan,
           rng: np.random.Generator | SecureRandom) -> FitResult:
    r"""AdaSSP (Wang 2018, Algorithm 2) on a squared-loss oracle (module doc).

    Parameters
    ----------
    oracle : GradientOracle
        Squared loss; rows within ``plan.row_bound``, targets within ``plan.target_bound``
        (the caller, :class:`noisygd.solvers.ssp.SSPSolver`, checks the oracle's declared
        constants against the plan).
    plan : SSPPlan
    rng : numpy.random.Generator or SecureRandom
        A :class:`~noisygd.mechanisms.secure.SecureRandom` exactly when ``plan.secure``.

    Returns
    -------
    FitResult
        ``event`` = ``plan.event``; ``info`` holds the plan and the ridge :math:`\lambda`
        (a function of the released :math:`\tilde\lambda_{\min}` and public values only).
    """
    check_rng_matches_plan(rng, plan)
    if oracle.n_params != plan.n_params:
        raise ValueError(f"the oracle has {oracle.n_params} parameters but the plan was made "
                         f"for {plan.n_params}")
    A, b = sufficient_statistics(oracle)
    released = release_statistics(A, b, plan, rng)
    del A, b
    theta, lam = solve_released(released, plan, constant_column(oracle))
    info = {
        "algorithm": "AdaSSP (Wang 2018, Algorithm 2): sufficient statistics perturbation",
        "plan": {**plan.summary(), "adaptive_ridge": lam},
    }
    return FitResult(theta=theta, event=plan.event, n_iter=1, info=info)
