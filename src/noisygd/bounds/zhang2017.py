r"""Zhang, Zheng, Mou and Wang (IJCAI 2017, seed 002), Theorem 6: RRPSGD's high-probability bound.

Theorem 6 states, for Algorithm 2 (RRPSGD) under the conditions of Theorem 5 (``f``
``L``-Lipschitz and :math:`\beta`-smooth) with the step
:math:`\eta = \min\{1/\beta, D_F/(\sigma n)\}`, that with probability at least
:math:`1 - \gamma` over the noise and the sampled rows,
:math:`\mathbb E_R\lVert\nabla F(w_{\rm priv})\rVert^2 \le O(\sqrt{d\log(1/\gamma)
\log(n/\delta)\log(1/\delta)}/(n\varepsilon))`. Its proof (appendix A.6) gives the constants:
summing the smoothness inequality over the ``T`` rounds (inequality (1)),

.. math::

    \sum_{t=1}^T\big(\eta - \tfrac\beta2\eta^2\big)\lVert\nabla F(w_t)\rVert^2
    \le F(w_1) - F^* + \sum_t(X_t + Y_t + R_t) + \tfrac\beta2\sum_t\eta^2\lVert\delta_t\rVert^2,

with (2) :math:`\frac\beta2\sum_t\eta^2\lVert\delta_t\rVert^2 \le 2\beta\eta^2TL^2`, and each
of the following failing with probability at most :math:`\gamma/3`:

* (3) :math:`\sum_tX_t \le (\eta - \beta\eta^2)L^2\sqrt{12T\log(3/\gamma)}` (Lemma 4, the
  martingale :math:`X_t = (\beta\eta^2 - \eta)\nabla F(w_t)^\top\delta_t`,
  :math:`\lvert X_t\rvert \le 2(\eta - \beta\eta^2)L^2`);
* (4) :math:`\sum_tY_t \le (\eta + \beta\eta^2)L\,\alpha\sqrt{6aT\log(3/\gamma)}` with
  :math:`a = (1 - e^{-2/d})^{-1}` and :math:`\alpha` the noise std per coordinate (the
  paper's :math:`\alpha^2 = 4L^2\log(3n/\delta)\log(2/\delta)/\varepsilon^2`; with
  :math:`T = n^2` this is its
  :math:`(\eta + \beta\eta^2)\frac{nL^2}{\varepsilon}\sqrt{24a\log\frac3\gamma\log\frac{3n}\delta
  \log\frac2\delta}`);
* (5) :math:`\sum_tR_t \le \frac\beta2\alpha^2\eta^2(dT + 2\sqrt{dT\log(3/\gamma)} +
  2\log(3/\gamma))` (the chi-square tail of Laurent and Massart, :math:`dT` degrees of
  freedom; :math:`T = n^2` gives the paper's :math:`2n\sqrt{d\log(3/\gamma)}`).

With a constant step, Theorem 5's distribution of ``R`` is uniform on ``1..T``, so the left
side divided by :math:`T(\eta - \frac\beta2\eta^2)` is :math:`\mathbb E_R\lVert\nabla
F(w_R)\rVert^2` given the path. :func:`theorem6_bound` returns that ratio. The paper's ``T`` is
:math:`n^2`; the proof holds for any horizon ``T`` (the noise is calibrated for :math:`n^2`
rounds, so for a shorter run it is the paper's noise or more).
"""

from __future__ import annotations

import math

from noisygd._checks import check_positive, check_positive_int

__all__ = ["theorem6_bound"]


def theorem6_bound(*, lipschitz: float, smoothness: float, loss_gap: float, noise_std: float,
                   n_params: int, steps: int, step_size: float, confidence: float) -> float:
    r"""Theorem 6's bound on :math:`\mathbb E_R\lVert\nabla F(w_R)\rVert^2`, holding with
    probability at least :math:`1 - \gamma` (module doc: inequalities (1)-(5)).

    Parameters
    ----------
    lipschitz, smoothness : float
        ``L`` and :math:`\beta`.
    loss_gap : float
        A public bound on :math:`F(w_1) - F^*`.
    noise_std : float
        :math:`\alpha`, the noise's std per coordinate (Algorithm 2, line 5).
    n_params : int
        ``d``.
    steps : int
        ``T`` (the paper's :math:`n^2`).
    step_size : float
        The constant :math:`\eta < 2/\beta` (Theorem 6: :math:`\min\{1/\beta, D_F/(\sigma n)\}`).
    confidence : float
        :math:`\gamma \in (0, 1)`.
    """
    L = check_positive("lipschitz", lipschitz)
    beta = check_positive("smoothness", smoothness)
    gap = check_positive("loss_gap", loss_gap)
    alpha = check_positive("noise_std", noise_std)
    d = check_positive_int("n_params", n_params)
    T = check_positive_int("steps", steps)
    eta = check_positive("step_size", step_size)
    if not eta * beta < 2.0:
        raise ValueError(f"step_size must be below 2/beta = {2.0 / beta:.6g}, got {step_size!r}")
    g = check_positive("confidence", confidence)
    if not g < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    log3g = math.log(3.0 / g)
    a = 1.0 / -math.expm1(-2.0 / d)
    x = abs(eta - beta * eta * eta) * L * L * math.sqrt(12.0 * T * log3g)  # (3)
    y = (eta + beta * eta * eta) * L * alpha * math.sqrt(6.0 * a * T * log3g)  # (4)
    r = 0.5 * beta * alpha * alpha * eta * eta * (
        d * T + 2.0 * math.sqrt(d * T * log3g) + 2.0 * log3g)  # (5)
    drift = 2.0 * beta * eta * eta * T * L * L  # (2)
    return (gap + x + y + r + drift) / (T * (eta - 0.5 * beta * eta * eta))
