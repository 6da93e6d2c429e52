r"""Random-round private SGD (RRPSGD): Algorithm 2 of Zhang, Zheng, Mou & Wang (IJCAI 2017).

For a smooth, possibly nonconvex loss (:math:`L`-Lipschitz, :math:`\beta`-smooth):

1. draw :math:`R \in \{1, \dots, T\}` with
   :math:`\Pr(R = k+1) \propto 2\eta_k - \beta\eta_k^2` (Theorem 5; the paper
   takes :math:`T = n^2`);
2. for :math:`t < R`: sample one example :math:`\xi` uniformly, draw
   :math:`z_t \sim \mathcal N(0, \sigma_z^2 I)` with
   :math:`\sigma_z^2 = 4L^2\log(3n/\delta)\log(2/\delta)/\varepsilon^2` (the
   density :math:`\exp(-\varepsilon^2\lVert z\rVert^2/(8L^2\log(3n/\delta)\log(2/\delta)))`
   of line 5), and step :math:`w_{t+1} = w_t - \eta_t(\nabla f(w_t,\xi) + z_t)`;
3. release :math:`w_R`.

Step sizes (Theorem 5): :math:`\eta_k = \min\{1/\beta, D_F/(\sigma\sqrt T)\}`
(:math:`\sqrt T = n` for :math:`T = n^2`), with
:math:`\sigma^2 = 4L^2 + d\sigma_z^2` and
:math:`D_F = \sqrt{2(F(w_0) - F^*)/\beta}`; since :math:`F^* \ge 0` we use the
*public* bound :math:`F(w_0) - F^* \le F(w_0)`, known without data when
:math:`w_0 = 0` (e.g. :math:`F(0) = 1/2` for the sigmoid loss). The step sizes
are constant, so ``R`` is uniform on :math:`\{1, \dots, T\}`. Theorem 5's bound
(Ghadimi & Lan 2013, Theorem 2.1):

.. math::

    \mathbb E\lVert\nabla F(w_R)\rVert^2 \le
    \frac{\beta[D_F^2 + \sigma^2\sum_k\eta_k^2]}{\sum_k (2\eta_k - \beta\eta_k^2)}.

A regulariser :math:`\frac\mu2\lVert w\rVert^2` is applied exactly (its gradient
is data-independent), so the noise covers only the data term, and the smoothness
used is :math:`\beta_\ell + \mu`.

**Privacy** (replace-one neighbours, ``n`` public). Two descriptions of the same run:

* the paper's argument (Theorem 4): ``RRPSGDPaperArgument(2L/sigma_z, n, T)``,
  read by the ``zhang2017_thm4`` accountant (per-step Gaussian, Lemma 9
  amplification, Lemma 10 strong composition over ``T`` steps);
* the tight description: ``R`` is drawn independently of the data, so
  conditioned on ``R`` the run is an adaptive composition of ``R`` steps, each
  a Gaussian mechanism (sensitivity :math:`2L`, std :math:`\sigma_z`) applied to
  one uniformly sampled row, i.e.
  ``SelfComposed(SampledWithoutReplacement(1, n, Gaussian(sigma_z/L, 2)), R)``.
  Its epsilon is for the *realised* ``R`` (publishing ``R`` is harmless: it is
  data-independent); the worst case over ``R`` is the same event with ``T``.

**Secure mode** (``rng`` a :class:`~noisygd.mechanisms.secure.SecureRandom`,
docs/secure_noise.md): ``R`` and the rows come from OS entropy (exact integer draws) and each
noisy gradient is :func:`~noisygd.mechanisms.noise.add_gaussian_noise`'s discrete Gaussian on
a grid, :math:`\gamma(\lfloor\nabla f(w_t,\xi)/\gamma\rceil + Y)`; the update is
post-processing of that release. The event is
``DiscreteGaussianNoise(tight event, kappa)`` with
:math:`\kappa = 1 + \gamma\sqrt d/(2L)` (rounding adds :math:`\gamma\sqrt d` to the
replace-one sensitivity :math:`2L`), bounded only by the ``rdp`` accountant: the discrete
Gaussian's RDP :math:`\alpha\kappa^2(2L)^2/(2\sigma_z^2)` (Canonne, Kamath and Steinke 2020)
through the general without-replacement bound of Wang, Balle and Kasiviswanathan (2019,
Theorem 9; :func:`noisygd.accounting.rdp.rdp_sampled_without_replacement_general`). The paper's
argument (Theorem 4, continuous Gaussian) does not cover it: ``info["paper_event"]`` is None.
"""

from __future__ import annotations

import math
import time

import numpy as np

from noisygd._checks import check_generator, check_positive, check_positive_int, check_probability
from noisygd.accounting.events import (
    Gaussian,
    Neighbouring,
    SampledWithoutReplacement,
    SelfComposed,
)
from noisygd.accounting.output_perturbation import RRPSGDPaperArgument
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.noisy_gd import check_oracle, check_theta0
from noisygd.exceptions import AssumptionError
from noisygd.mechanisms.noise import (
    add_gaussian_noise,
    is_secure,
    secure_event,
    sensitivity_inflation,
)
from noisygd.oracles.base import GradientOracle

#: The relation of these algorithms (n public); its sensitivity rule lives in
#: :attr:`Neighbouring.clipped_sum_sensitivity` (2 per clipped term).
_REPLACE_ONE = Neighbouring.REPLACE_ONE

__all__ = [
    "RRPSGDPaperArgument",
    "round_distribution",
    "rrpsgd",
    "rrpsgd_noise_std",
    "rrpsgd_tight_event",
    "theorem5_bound",
]


def rrpsgd_noise_std(lipschitz: float, n: int, epsilon: float, delta: float) -> float:
    r"""Noise std of Algorithm 2, line 5.

    :math:`\sigma_z = 2L\sqrt{\log(3n/\delta)\log(2/\delta)}/\varepsilon`.
    """
    L = check_positive("lipschitz", lipschitz)
    eps = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    return (_REPLACE_ONE.clipped_sum_sensitivity * L
            * math.sqrt(math.log(3.0 * n / delta) * math.log(2.0 / delta)) / eps)


def round_distribution(step_sizes: np.ndarray, smoothness: float) -> np.ndarray:
    r"""Theorem 5: :math:`\Pr(R = k+1) \propto 2\eta_k - \beta\eta_k^2`.

    Needs :math:`0 < \eta_k < 2/\beta`.
    """
    eta = np.asarray(step_sizes, dtype=float)
    beta = check_positive("smoothness", smoothness)
    if eta.ndim != 1 or eta.size == 0 or np.any(eta <= 0) or np.any(eta >= 2.0 / beta):
        raise AssumptionError("Theorem 5 needs step sizes in (0, 2/beta)")
    w = 2.0 * eta - beta * eta * eta
    return w / w.sum()


def theorem5_bound(
    *, smoothness: float, d_f: float, sigma: float, step_size: float, horizon: int
) -> float:
    r"""Theorem 5's bound on :math:`\mathbb E\lVert\nabla F(w_R)\rVert^2` for a constant step."""
    beta = check_positive("smoothness", smoothness)
    eta = check_positive("step_size", step_size)
    T = int(horizon)
    return beta * (d_f**2 + sigma**2 * T * eta * eta) / (T * (2.0 * eta - beta * eta * eta))


def rrpsgd_tight_event(*, lipschitz: float, noise_std: float, n: int, steps: int) -> SelfComposed:
    """The tight event.

    ``SelfComposed(SampledWithoutReplacement(1, n, Gaussian(sigma_z/L, 2, REPLACE_ONE)), steps)``.
    """
    z = check_positive("noise_std", noise_std) / check_positive("lipschitz", lipschitz)
    inner = Gaussian(noise_multiplier=z, sensitivity=_REPLACE_ONE.clipped_sum_sensitivity,
                     relation=_REPLACE_ONE)
    return SelfComposed(SampledWithoutReplacement(1, int(n), inner), int(steps))


def rrpsgd(
    oracle: GradientOracle,
    *,
    epsilon: float,
    delta: float,
    horizon: int | None = None,
    loss_gap_bound: float | None = None,
    theta0: np.ndarray | None = None,
    rng: np.random.Generator,
) -> FitResult:
    r"""Algorithm 2 of Zhang et al. 2017 (module docstring).

    Parameters
    ----------
    oracle : GradientOracle
        Must state ``L`` and :math:`\beta` (``oracle.constants()``) for the rows it
        serves (all inside ``oracle.row_norm_bound``; convexity not needed). Single rows
        are read with ``clipped_gradient_sum(theta, None, rows=[i])``.
    epsilon, delta : float
        The target the paper's noise is calibrated for.
    horizon : int, optional
        ``T`` (default :math:`n^2`, the paper's; at most :math:`n^2`).
    loss_gap_bound : float, optional
        Public bound on :math:`F(w_0) - F^*`. Default: ``oracle.loss_at_zero_bound()``
        when ``theta0`` is None (losses are >= 0).
    theta0 : ndarray, optional
        Public start (default 0).
    rng : numpy.random.Generator or SecureRandom
        A :class:`~noisygd.mechanisms.secure.SecureRandom` runs secure mode (module
        docstring): discrete Gaussian noise, the event wrapped in
        :class:`~noisygd.accounting.events.DiscreteGaussianNoise` (``rdp`` only).

    Returns
    -------
    FitResult
        ``event``: the tight event for the realised ``R``; ``info`` holds
        ``paper_event`` (:class:`RRPSGDPaperArgument`; None in secure mode),
        ``worst_case_event`` (the tight event at ``T``), ``R``, the step size,
        ``sigma_z``, ``sensitivity_inflation`` (1 outside secure mode) and Theorem 5's bound.
    """
    check_oracle(oracle)
    check_generator("rng", rng)
    n = oracle.n_rows  # public: replace-one neighbours
    if n < 2:
        raise ValueError("RRPSGD needs at least 2 rows")
    const = oracle.constants()
    if const.lipschitz is None or const.smoothness is None:
        raise AssumptionError("RRPSGD (Theorems 4-5) needs Lipschitz and smoothness constants")
    L = float(const.lipschitz)
    mu = float(oracle.l2)
    beta = float(const.smoothness) + mu
    T = n * n if horizon is None else check_positive_int("horizon", horizon)
    if T > n * n:
        raise ValueError(f"horizon must be in [1, n^2], got {horizon!r}")
    p = oracle.n_params
    if loss_gap_bound is None:
        f0 = oracle.loss_at_zero_bound()
        if theta0 is not None or f0 is None:
            raise AssumptionError(
                "Theorem 5's step size needs a public bound on F(w0) - F*: pass loss_gap_bound"
            )
        loss_gap_bound = float(f0)
    gap = check_positive("loss_gap_bound", loss_gap_bound)
    sigma_z = rrpsgd_noise_std(L, n, epsilon, delta)
    sigma = math.sqrt(4.0 * L * L + p * sigma_z * sigma_z)
    d_f = math.sqrt(2.0 * gap / beta)
    eta = min(1.0 / beta, d_f / (sigma * math.sqrt(T)))
    # Constant steps: Pr(R = k) is uniform on {1, ..., T} (round_distribution).
    R = int(rng.integers(1, T + 1))
    theta = check_theta0(theta0, p)
    secure = is_secure(rng)
    # secure mode: rounding adds gamma sqrt(p) to the replace-one sensitivity 2L
    kappa = sensitivity_inflation(rng, sigma_z, p, _REPLACE_ONE.clipped_sum_sensitivity * L)
    t0 = time.perf_counter()
    chunk = 4096
    done = 0
    while done < R:
        k = min(chunk, R - done)
        rows = rng.integers(0, n, size=k)
        for j in range(k):  # one noise site for both modes (mechanisms.noise)
            g = oracle.clipped_gradient_sum(theta, None, rows=rows[j : j + 1])
            theta = oracle.project(
                theta - eta * (add_gaussian_noise(g, sigma_z, rng) + mu * theta))
        done += k
    tight = secure_event(rrpsgd_tight_event(lipschitz=L, noise_std=sigma_z, n=n, steps=R),
                         rng, kappa)
    info = {
        "algorithm": "RRPSGD (Zhang et al. 2017, Algorithm 2)",
        "R": R,
        "horizon": T,
        "step_size": eta,
        "sigma_z": sigma_z,
        "sigma": sigma,
        "D_F": d_f,
        "theorem5_bound": theorem5_bound(
            smoothness=beta, d_f=d_f, sigma=sigma, step_size=eta, horizon=T
        ),
        "paper_event": None if secure else RRPSGDPaperArgument(
            step_mu=_REPLACE_ONE.clipped_sum_sensitivity * L / sigma_z, population_size=n,
            horizon=T),
        "worst_case_event": secure_event(
            rrpsgd_tight_event(lipschitz=L, noise_std=sigma_z, n=n, steps=T), rng, kappa),
        "sensitivity_inflation": kappa,
        "seconds": time.perf_counter() - t0,
    }
    return FitResult(theta=theta, event=tight, n_iter=R, info=info)
