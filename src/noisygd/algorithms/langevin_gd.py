r"""Projected noisy gradient descent with a hidden trajectory (seed 004, Algorithm 1).

Chourasia, Ye and Shokri (NeurIPS 2021), Algorithm 1: for :math:`k = 0..K-1`

.. math::

    \theta_{k+1} = \Pi_{\mathcal C}\Bigl(\theta_k - \eta\nabla\mathcal L_D(\theta_k)
                   + \sqrt{2\eta}\,\mathcal N(0, \sigma^2\mathbb I_d)\Bigr),
    \qquad \theta_0 \sim \Pi_{\mathcal C}\bigl(\mathcal N(0, \tfrac{2\sigma^2}{\lambda}
    \mathbb I_d)\bigr),

where :math:`\mathcal L_D = \frac1n\sum_i \ell(\theta; x_i)` and the per-example
loss includes the L2 regulariser of the objective (so
:math:`\nabla\mathcal L_D(\theta) = \frac1n g(\theta; D) + \mu\theta`). Only
:math:`\theta_K` is returned: this module keeps no history, logs no iterate
and never clips gradients (clipping would break the gradient-field
assumptions of Lemma 5). The run is described by a
:class:`~noisygd.accounting.langevin.LastIterateLangevin` event that records
the objective's declared constants; the accountants decide what it certifies.

Also here, for the tightness analysis of Section 4 (Theorem 3, Corollary 2):

* the loss :math:`\ell(\theta; x) = \frac12\lVert\theta - x\rVert^2` of the paper's
  lower-bound construction is :class:`~noisygd.objectives.distance.SquaredDistanceLoss`
  (re-exported here);
* :func:`linear_gaussian_dynamics`, the exact mean and covariance of the
  iterates of Algorithm 1 on a quadratic objective over :math:`\mathbb R^d`
  (a linear Gaussian recursion, so every iterate is Gaussian);
* :func:`gaussian_renyi_divergence`, the exact Rényi divergence of two
  Gaussians, and :func:`squared_loss_exact_divergence`, the closed form of
  Appendix E.

**Secure mode** (``rng`` a :class:`~noisygd.mechanisms.secure.SecureRandom`,
docs/secure_noise.md). The last-iterate bound does not apply: its proof (Section 3, the
coupled tracing diffusions of Definition 3.1, Lemmas 2-5) interpolates each step by a Langevin
diffusion driven by a Wiener process, i.e. it needs the continuous Gaussian
:math:`\sqrt{2\eta}\mathcal N(0, \sigma^2 I)` and the log-Sobolev inequality of its
smoothed laws; a discrete Gaussian on a grid has neither. Secure mode therefore runs the same
Algorithm 1 with step :math:`k` released as
:math:`\gamma(\lfloor\theta_k - \eta\nabla\mathcal L_D(\theta_k)\rceil_\gamma + Y_k)`,
:math:`Y_k \sim \mathcal N_{\mathbb Z}(0, (\sqrt{2\eta}\sigma/\gamma)^2 I)` (then
projected: post-processing) and accounts it as if *every* iterate were released: the
adaptive composition of :math:`K` discrete Gaussian mechanisms of replace-one sensitivity
:math:`\eta S_g/n`, i.e.
``DiscreteGaussianNoise(LastIterateLangevin(...).as_composition(), kappa)`` with
:math:`\kappa = 1 + \gamma\sqrt d\,n/(\eta S_g)`: :math:`K\kappa^2\eta S_g^2/(4n^2\sigma^2)`-zCDP
(Canonne, Kamath and Steinke 2020, discrete Gaussian; Bun and Steinke 2016, Lemma 2.3,
adaptive composition), read by the ``zcdp`` and ``rdp`` accountants. This is the
"composition baseline" of the paper's Figure 1, looser than the last-iterate bound, and sound
for any start and without convexity or smoothness (only :math:`S_g < \infty` is needed). The
random start :math:`\Pi_{\mathcal C}(\mathcal N(0, 2\sigma^2/\lambda))` is data-independent;
in secure mode it is drawn as a discrete Gaussian with that scale.
"""

from __future__ import annotations

import math

import numpy as np

from noisygd._checks import (
    check_bool,
    check_choice,
    check_generator,
    check_positive,
    check_positive_int,
    check_real,
)
from noisygd.accounting.base import UnsupportedEventError
from noisygd.accounting.events import Neighbouring
from noisygd.accounting.langevin import (
    LastIterateLangevin,
    last_iterate_rho,
    verified_lsi_constant,
)
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.noisy_gd import check_oracle
from noisygd.exceptions import AssumptionError
from noisygd.mechanisms.noise import (
    add_gaussian_noise,
    is_secure,
    secure_event,
    sensitivity_inflation,
)
from noisygd.objectives.distance import SquaredDistanceLoss
from noisygd.oracles.base import GradientOracle

__all__ = [
    "SquaredDistanceLoss",
    "gaussian_renyi_divergence",
    "langevin_facts",
    "linear_gaussian_dynamics",
    "projected_noisy_gd",
    "squared_loss_exact_divergence",
    "total_gradient_sensitivity",
]

THEOREMS = ("auto", "corollary1", "corollary2", "theorem2")


# ------------------------------------------------------------------ facts and checks
def total_gradient_sensitivity(oracle: GradientOracle) -> float:
    r""":math:`S_g` of Definition B.10 for replace-one neighbours.

    The exact value when the oracle states one (``oracle.total_gradient_sensitivity()``),
    else :math:`2L` with ``L`` the declared per-example Lipschitz constant of the data
    term over the domain (the regulariser cancels in :math:`g(\theta; D) -
    g(\theta; D')`); ``inf`` if no ``L`` is declared.
    """
    exact = oracle.total_gradient_sensitivity()
    if exact is not None:
        return float(exact)
    lipschitz = oracle.constants().lipschitz
    if lipschitz is None:
        return math.inf
    return Neighbouring.REPLACE_ONE.clipped_sum_sensitivity * float(lipschitz)


def langevin_facts(oracle: GradientOracle) -> dict:
    r"""The constants of the per-example loss :math:`\ell + \frac{\mu}{2}\lVert\theta\rVert^2`.

    Returns ``strong_convexity`` (:math:`\lambda`, as the objective declares it
    for ``F``), ``smoothness`` (:math:`\beta` = data-term smoothness + ``l2``,
    or None), ``sensitivity`` (:math:`S_g`), ``constraint``/``radius`` and
    ``quadratic_constant_hessian``, all for the rows the oracle serves (inside
    ``oracle.row_norm_bound``).
    """
    check_oracle(oracle)
    c = oracle.constants()
    lam = float(c.strong_convexity) if c.convex else 0.0
    beta = None if c.smoothness is None else float(c.smoothness) + float(oracle.l2)
    return {
        "strong_convexity": lam,
        "smoothness": beta,
        "sensitivity": total_gradient_sensitivity(oracle),
        "constraint": "none" if oracle.radius is None else "ball",
        "radius": None if oracle.radius is None else float(oracle.radius),
        "quadratic_constant_hessian": bool(oracle.quadratic_constant_hessian),
        "constants": c,
    }


# ------------------------------------------------------------------------- Algorithm 1
def projected_noisy_gd(
    oracle: GradientOracle,
    *,
    sigma: float,
    step_size: float,
    steps: int,
    n_samples: int,
    theta0: np.ndarray | None = None,
    theorem: str = "auto",
    lsi_constant: float | None = None,
    strict: bool = True,
    rng: np.random.Generator,
) -> FitResult:
    r"""Algorithm 1 of seed 004; only :math:`\theta_K` is released.

    Parameters
    ----------
    oracle : GradientOracle
        Private rows (served inside ``oracle.row_norm_bound``, so the declared constants
        hold) and the loss; its ``l2`` is part of the per-example loss and its
        ``radius`` (if any) is the L2 ball :math:`\mathcal C` (else
        :math:`\mathcal C = \mathbb R^d`). Read through the unclipped
        ``clipped_gradient_sum(theta, None)`` (sparse storage included).
    sigma : float
        :math:`\sigma`: the noise added is :math:`\sqrt{2\eta}\mathcal N(0,\sigma^2 I)`.
    step_size : float
        :math:`\eta` (on the mean objective).
    steps : int
        :math:`K \ge 1`.
    n_samples : int
        The public dataset size ``n`` (replace-one neighbours); must equal
        ``oracle.n_rows``.
    theta0 : ndarray or None
        None (default): :math:`\theta_0 \sim \Pi_{\mathcal C}(\mathcal N(0,
        2\sigma^2/\lambda\,I))` as Lemma 5 / Corollary 1 require. An array: a
        fixed, data-independent start (projected), as in Theorem 3 /
        Corollary 2.
    theorem : {"auto", "corollary1", "corollary2", "theorem2"}
        Recorded on the event; ``"auto"`` picks Corollary 2 when its facts hold
        (quadratic loss with a constant Hessian, :math:`\mathcal C = \mathbb R^d`,
        fixed start), else Corollary 1.
    lsi_constant : float or None
        The LSI constant claimed with ``theorem="theorem2"``.
    strict : bool, default=True
        Raise :class:`~noisygd.exceptions.AssumptionError` before touching the
        data if the last-iterate accountant would refuse the run. With
        ``strict=False`` the run proceeds and only the composition accountant
        (``langevin_composition``) will bound it. Not used in secure mode, whose
        composition accounting needs only a finite :math:`S_g` (always checked there).
    rng : numpy.random.Generator or SecureRandom
        A :class:`~noisygd.mechanisms.secure.SecureRandom` runs secure mode (module
        docstring): discrete Gaussian noise and the composition event.

    Returns
    -------
    FitResult
        ``theta`` = :math:`\theta_K`, ``event`` a
        :class:`~noisygd.accounting.langevin.LastIterateLangevin` (secure mode:
        ``DiscreteGaussianNoise(SelfComposed(Gaussian(sqrt(2 eta) sigma n / eta, S_g,
        replace_one), K), kappa)``), ``n_iter = K``, ``info`` with the public parameters.

    Raises
    ------
    AssumptionError
        (``strict``) strong convexity, smoothness, :math:`\eta < 1/\beta`, the
        start distribution or a finite :math:`S_g` is missing.
    """
    check_oracle(oracle)
    check_generator("rng", rng)
    secure = is_secure(rng)
    sigma = check_positive("sigma", sigma)
    eta = check_positive("step_size", step_size)
    K = check_positive_int("steps", steps)
    theorem = check_choice("theorem", theorem, THEOREMS)
    strict = check_bool("strict", strict)
    if check_real("n_samples", n_samples) != oracle.n_rows:
        raise ValueError(
            f"n_samples={n_samples!r} must equal the number of rows held: under "
            "replace-one neighbours the dataset size is public and fixed")
    n = int(oracle.n_rows)
    B = oracle.row_norm_bound

    facts = langevin_facts(oracle)
    lam = facts["strong_convexity"]
    p = oracle.n_params
    if theta0 is None:
        start = "projected_gaussian"
        start_variance = 2.0 * sigma**2 / lam if lam > 0 else None
    else:
        start, start_variance = "fixed", None
        theta0 = np.array(theta0, dtype=float)
        if theta0.shape != (p,) or not np.all(np.isfinite(theta0)):
            raise ValueError(f"theta0 must be a finite vector of shape ({p},), "
                             f"got shape {theta0.shape}")
    if theorem == "auto":
        theorem = ("corollary2" if facts["quadratic_constant_hessian"]
                   and facts["constraint"] == "none" and start == "fixed" else "corollary1")
    event = LastIterateLangevin(
        strong_convexity=lam,
        smoothness=facts["smoothness"],
        step_size=eta,
        sigma=sigma,
        steps=K,
        n_samples=n,
        sensitivity=facts["sensitivity"],
        theorem=theorem,
        lsi_constant=lsi_constant,
        constraint=facts["constraint"],
        radius=facts["radius"],
        start=start,
        start_variance=start_variance,
        hidden_trajectory=True,
        clipped_gradients=False,
        quadratic_constant_hessian=facts["quadratic_constant_hessian"],
        objective=f"{oracle!r} with rows ||x|| <= {B:g}",
    )
    lsi = None
    noise_sd = math.sqrt(2.0 * eta) * sigma
    kappa = 1.0
    if secure:  # composition of K discrete Gaussian steps: needs only a finite S_g
        if not math.isfinite(facts["sensitivity"]):
            raise AssumptionError(
                "secure mode accounts projected noisy GD by composition of its steps, which "
                "needs a finite total-gradient sensitivity S_g (declare a Lipschitz constant)")
        kappa = sensitivity_inflation(rng, noise_sd, p, eta * facts["sensitivity"] / n)
        event = secure_event(event.as_composition(), rng, kappa)
    else:
        try:
            lsi = verified_lsi_constant(event)
            last_iterate_rho(event)
        except UnsupportedEventError as exc:
            if strict:
                raise AssumptionError(str(exc)) from None
    if start == "projected_gaussian" and start_variance is None:
        raise AssumptionError("the Gaussian start N(0, 2 sigma^2 / lambda I) needs lambda > 0; "
                              "pass a fixed theta0 (strict=False) to run without it")

    if theta0 is None:  # data-independent start (secure: a discrete Gaussian of that scale)
        theta = add_gaussian_noise(np.zeros(p), math.sqrt(start_variance), rng)
    else:
        theta = theta0
    theta = oracle.project(theta)
    l2 = float(oracle.l2)
    for _ in range(K):
        grad = oracle.clipped_gradient_sum(theta, None) / n + l2 * theta
        theta = oracle.project(add_gaussian_noise(theta - eta * grad, noise_sd, rng))
    info = {
        "algorithm": "projected noisy GD (Chourasia-Ye-Shokri 2021, Algorithm 1)",
        "sigma": sigma,
        "step_size": eta,
        "steps": K,
        "theorem": theorem,
        "lsi_constant": lsi,
        "start": start,
        "start_variance": start_variance,
        "sensitivity": facts["sensitivity"],
        "strong_convexity": lam,
        "smoothness": facts["smoothness"],
        "sensitivity_inflation": kappa,
    }
    if secure:
        info["accounting"] = ("composition of K discrete Gaussian steps (every iterate "
                              "released): the last-iterate bound needs continuous noise")
    return FitResult(theta=theta, event=event, n_iter=K, info=info)


# ---------------------------------------------------------- exact Gaussian dynamics
def linear_gaussian_dynamics(
    hessian: np.ndarray,
    linear: np.ndarray,
    *,
    step_size: float,
    sigma: float,
    steps: int,
    mean0: np.ndarray,
    cov0: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Exact law of the iterates of Algorithm 1 on a quadratic objective over R^d.

    For :math:`\mathcal L_D(\theta) = \frac12\theta^\top A\theta - b^\top\theta`
    the update :math:`\theta_{k+1} = (I - \eta A)\theta_k + \eta b +
    \sqrt{2\eta}\sigma Z_k` maps :math:`\mathcal N(m_k, \Sigma_k)` to
    :math:`\mathcal N(m_{k+1}, \Sigma_{k+1})` with

    .. math::

        m_{k+1} = (I - \eta A)m_k + \eta b, \qquad
        \Sigma_{k+1} = (I - \eta A)\Sigma_k(I - \eta A)^\top + 2\eta\sigma^2 I

    (the recursion in the proof of Theorem 3, Appendix E).

    Parameters
    ----------
    hessian : ndarray (d, d)
        ``A``, symmetric.
    linear : ndarray (d,)
        ``b``.
    step_size, sigma : float
    steps : int
        ``K >= 0``.
    mean0 : ndarray (d,)
    cov0 : ndarray (d, d)
        Law of :math:`\theta_0` (zeros for a fixed start).

    Returns
    -------
    means : ndarray (K+1, d)
    covs : ndarray (K+1, d, d)
        The law of every :math:`\theta_k`, ``k = 0..K`` (analysis only: the
        algorithm itself never exposes iterates).
    """
    A = np.asarray(hessian, dtype=float)
    b = np.asarray(linear, dtype=float)
    d = b.shape[0]
    M = np.eye(d) - step_size * A
    means = np.empty((steps + 1, d))
    covs = np.empty((steps + 1, d, d))
    means[0] = np.asarray(mean0, dtype=float)
    covs[0] = np.asarray(cov0, dtype=float)
    noise = 2.0 * step_size * sigma**2 * np.eye(d)
    for k in range(steps):
        means[k + 1] = M @ means[k] + step_size * b
        covs[k + 1] = M @ covs[k] @ M.T + noise
    return means, covs


def gaussian_renyi_divergence(
    alpha: float, mean1: np.ndarray, cov1: np.ndarray, mean2: np.ndarray, cov2: np.ndarray
) -> float:
    r"""Exact Rényi divergence of two Gaussians, order :math:`\alpha > 1`.

    :math:`R_\alpha(\mathcal N(m_1, \Sigma_1) \,\|\, \mathcal N(m_2, \Sigma_2))`:

    .. math::

        R_\alpha = \frac\alpha2 (m_1 - m_2)^\top \Sigma_\alpha^{-1}(m_1 - m_2)
        - \frac{1}{2(\alpha-1)}\log\frac{\det\Sigma_\alpha}
          {\det\Sigma_1^{1-\alpha}\det\Sigma_2^{\alpha}},
        \qquad \Sigma_\alpha = \alpha\Sigma_2 + (1-\alpha)\Sigma_1

    (Gil, Alajaji and Linder 2013, Table 2); ``inf`` if :math:`\Sigma_\alpha` is
    not positive definite. For equal covariances :math:`\sigma^2 I` it is
    :math:`\alpha\lVert m_1 - m_2\rVert^2/(2\sigma^2)` (Mironov 2017, Prop. 7).
    """
    if not alpha > 1:
        raise ValueError(f"alpha must be > 1, got {alpha!r}")
    m = np.asarray(mean1, dtype=float) - np.asarray(mean2, dtype=float)
    S1 = np.atleast_2d(np.asarray(cov1, dtype=float))
    S2 = np.atleast_2d(np.asarray(cov2, dtype=float))
    Sa = alpha * S2 + (1.0 - alpha) * S1
    sign_a, logdet_a = np.linalg.slogdet(Sa)
    if sign_a <= 0 or np.min(np.linalg.eigvalsh(Sa)) <= 0:
        return math.inf
    _, logdet_1 = np.linalg.slogdet(S1)
    _, logdet_2 = np.linalg.slogdet(S2)
    quad = float(m @ np.linalg.solve(Sa, m))
    return 0.5 * alpha * quad - (logdet_a - (1.0 - alpha) * logdet_1 - alpha * logdet_2) / (
        2.0 * (alpha - 1.0))


def squared_loss_exact_divergence(alpha, sigma, eta, steps, n, sensitivity):
    r"""Closed form of the exact divergence in the proof of Theorem 3 (Appendix E).

    For :math:`\ell = \frac12\lVert\theta - x\rVert^2`, :math:`\theta_0 = 0`,
    :math:`D = (x_1, 0, \dots, 0)`, :math:`D' = (x_1', 0, \dots, 0)` with
    :math:`\lVert x_1 - x_1'\rVert = S_g`:

    .. math::

        R_\alpha(\Theta_{\eta K}\|\Theta'_{\eta K}) = \frac{\alpha S_g^2}{4\sigma^2 n^2}
        \cdot\frac{2-\eta}{1 + (1-\eta)^K}\bigl(1 - (1-\eta)^K\bigr).
    """
    alpha, sigma, eta, steps = (np.asarray(a, dtype=float) for a in (alpha, sigma, eta, steps))
    q = (1.0 - eta) ** steps
    return alpha * sensitivity**2 / (4.0 * sigma**2 * n**2) * (2.0 - eta) / (1.0 + q) * (1.0 - q)
