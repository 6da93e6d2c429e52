r"""Lecture 12 (seed 000) bounds the NoisyGD planner does not evaluate: NoisySGD's utility
(section 12.3.3) and the strongly convex bound with :math:`\eta_t = 1/(\lambda t)` (12.2.4).

Both are stated in the notes' *sum* form (objective :math:`f = \sum_i\ell_i +
\frac{n\lambda}{2}\lVert\theta\rVert^2`, gradient noise :math:`\mathcal N(0, \sigma^2 I_d)` on
the sum) and returned for the *mean* objective :math:`F = f/n`, as the planner's
``bound_value`` (:mod:`noisygd.planning`).
"""

from __future__ import annotations

import math

from noisygd._checks import check_positive, check_positive_int

__all__ = ["noisy_sgd_gradient_variance", "noisy_sgd_utility_bound",
           "strongly_convex_uniform_average_bound"]


def noisy_sgd_gradient_variance(*, n: float, d: int, noise_std: float, sampling_rate: float,
                                lipschitz: float) -> float:
    r"""Section 12.3.3: the variance of NoisySGD's gradient estimate (eq. 12.2).

    .. math::  \mathbb E\lVert\hat g - \mathbb E\hat g\rVert^2
               = \frac{d\sigma^2}{\gamma^2} + \frac{nL^2}{\gamma},

    :math:`\hat g = \frac1\gamma(\sum_{i\in B}\nabla\ell_i + \mathcal N(0, \sigma^2 I_d))`
    with Poisson sampling at rate :math:`\gamma`, per-example gradients of norm at most ``L``
    (the clipping norm) and :math:`\sigma` the noise std on the batch's sum.
    """
    N = check_positive("n", n)
    D = check_positive_int("d", d)
    s = check_positive("noise_std", noise_std)
    g = check_positive("sampling_rate", sampling_rate)
    if g > 1.0:
        raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate!r}")
    L = check_positive("lipschitz", lipschitz)
    return D * s * s / (g * g) + N * L * L / g


def noisy_sgd_utility_bound(*, n: float, d: int, noise_std: float, sampling_rate: float,
                            lipschitz: float, smoothness: float, init_distance: float,
                            steps: int) -> tuple[float, float]:
    r"""Section 12.3.3: NoisySGD's bound for a convex, smooth loss (mean form).

    The convex-smooth analysis of 12.2.2 with the variance :math:`d\sigma^2` of NoisyGD's
    gradient replaced by NoisySGD's, :math:`V = d\sigma^2/\gamma^2 + nL^2/\gamma`
    (:func:`noisy_sgd_gradient_variance`): with
    :math:`\eta = \min\{1/(n\beta), D/\sqrt{VT}\}` and the uniform average
    :math:`\bar x = \frac1T\sum_tx_t`,

    .. math::  \mathbb E f(\bar x) - f^* \le \frac{D^2}{T\eta} + \eta V
               \le \frac{n\beta D^2}{T} + 2D\sqrt{\frac VT},

    and the notes' closing form :math:`D(\sqrt{d\sigma^2/(T\gamma^2)} + \sqrt{nL^2/(\gamma T)})`
    of the noise term. ``smoothness`` is :math:`\beta` of the per-example loss (the regulariser
    included), ``init_distance`` is :math:`D \ge \lVert x_1 - x^*\rVert`.

    Returns
    -------
    (bound, eta) : tuple of float
        The bound divided by ``n`` (mean objective) and the sum-form step :math:`\eta`.
    """
    V = noisy_sgd_gradient_variance(n=n, d=d, noise_std=noise_std, sampling_rate=sampling_rate,
                                    lipschitz=lipschitz)
    beta = check_positive("smoothness", smoothness)
    D = check_positive("init_distance", init_distance)
    T = check_positive_int("steps", steps)
    eta = min(1.0 / (n * beta), D / math.sqrt(V * T))
    return (D * D / (T * eta) + eta * V) / n, eta


def strongly_convex_uniform_average_bound(*, n: float, d: int, lipschitz: float,
                                          noise_std: float, strong_convexity: float,
                                          steps: int) -> float:
    r"""Section 12.2.4, the schedule :math:`\eta_t = 1/(\lambda t)` with the uniform average
    (mean form).

    .. math::  \mathbb E f\Big(\frac1T\sum_{t=1}^Tx_t\Big) - f(x^*)
               \le \frac{n^2L^2 + d\sigma^2}{2\lambda T}(1 + \log T),

    in the sum form, :math:`\lambda = n\lambda_{\rm mean}` the sum's strong convexity and ``L``
    the per-example Lipschitz constant of the regularised loss on the domain; divided by ``n``.
    Against the weighted average of :math:`\eta_t = 1/(\lambda(t+1))`,
    :math:`4(n^2L^2 + d\sigma^2)/(\lambda(T+1))` (what :func:`noisygd.planning.plan_noisy_gd`
    evaluates), it is smaller exactly when :math:`(1 + \log T)(T + 1) < 8T`, i.e. for
    :math:`T \le 1088`.

    Parameters
    ----------
    strong_convexity : float
        :math:`\lambda_{\rm mean}` (the ``l2`` of the mean objective).
    """
    N = check_positive("n", n)
    D = check_positive_int("d", d)
    L = check_positive("lipschitz", lipschitz)
    s = check_positive("noise_std", noise_std)
    lam = check_positive("strong_convexity", strong_convexity) * N
    T = check_positive_int("steps", steps)
    return (N * N * L * L + D * s * s) / (2.0 * lam * T) * (1.0 + math.log(T)) / N
