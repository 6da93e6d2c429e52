r"""Baseline of Zhang et al. (2017), Table 3: Bassily-Smith-Thakurta (2014) noisy SGD, mini-batch.

BST14 (FOCS 2014), Algorithm 1 ("A_noise-GD"), on the *sum* objective
:math:`\mathcal L(\theta) = \sum_i \ell(\theta; d_i)`: :math:`n^2` steps of
:math:`\theta_{t+1} = \Pi_C(\theta_t - \eta_t[n\nabla\ell(\theta_t; d) + b_t])` with
one example :math:`d` drawn uniformly and
:math:`b_t \sim \mathcal N(0, \sigma^2 I_p)`,
:math:`\sigma^2 = 32L^2n^2\log(n/\delta)\log(1/\delta)/\varepsilon^2`; output the
last iterate. Step sizes: :math:`\eta_t = \lVert C\rVert/\sqrt{t(n^2L^2 + p\sigma^2)}`
(convex, :math:`\lVert C\rVert` the diameter of ``C``) or
:math:`\eta_t = 1/(\Delta t)` for a :math:`\Delta`-strongly convex
:math:`\mathcal L`.

Zhang et al. (2017, Section 4) ran it "in a mini-batch version with batch size
:math:`m = 50`", justified by the amplification lemma (their Lemma 9). We read
that as the conversion that keeps every factor of BST14's privacy proof: a
uniformly random batch of ``m`` rows (without replacement) per step, the batch
gradient with the same noise-to-sensitivity ratio as one example, and
:math:`T = \lceil n^2/m^2\rceil` steps (amplification by ``m/n`` instead of
``1/n``, so ``(n/m)^2`` steps compose to the same bound). On the mean objective
:math:`F = \mathcal L/n` (noisygd's convention, with
:math:`\mu = \Delta/n`) this is

.. math::

    \theta_{t+1} = \Pi_C\Big(\theta_t - \eta_t\big[\tfrac1m\textstyle\sum_{j\in B_t}
    \nabla\ell(\theta_t; d_j) + \mu\theta_t + b_t\big]\Big),\quad
    b_t \sim \mathcal N(0, s_m^2 I),\quad
    s_m = \frac{4\sqrt2\,L\sqrt{\log(n/\delta)\log(1/\delta)}}{m\,\varepsilon},

with :math:`\eta_t = 1/(\mu t)` if :math:`\mu > 0` and
:math:`\eta_t = \lVert C\rVert/\sqrt{t(L^2 + p s_m^2)}` otherwise.

Privacy is *not* taken from BST14's theorem (which is for ``m = 1``): the run is
described exactly as ``SelfComposed(SampledWithoutReplacement(m, n,
Gaussian(...)), T)`` under replace-one neighbours, and the accountants give its
epsilon (far below the target: BST14's constants are loose).

**Secure mode** (``rng`` a :class:`~noisygd.mechanisms.secure.SecureRandom`,
docs/secure_noise.md): the batches come from OS entropy (exact integer draws, rejection of
repeats) and each noisy batch gradient is
:func:`~noisygd.mechanisms.noise.add_gaussian_noise`'s discrete Gaussian on a grid (one call
per run and configuration, dimension ``p``). The event is
``DiscreteGaussianNoise(SelfComposed(SampledWithoutReplacement(m, n, Gaussian(s_m m/L, 2)), T),
kappa)`` with :math:`\kappa = 1 + \gamma\sqrt p\,m/(2L)` (rounding adds
:math:`\gamma\sqrt p` to the replace-one sensitivity :math:`2L/m`), bounded by the ``rdp``
accountant only: the discrete Gaussian's RDP (Canonne, Kamath and Steinke 2020) through the
general without-replacement bound of Wang, Balle and Kasiviswanathan (2019, Theorem 9).
"""

from __future__ import annotations

import math
import time

import numpy as np

from noisygd._checks import check_generator, check_positive, check_positive_int, check_probability
from noisygd.accounting.events import (
    DpEvent,
    Gaussian,
    Neighbouring,
    SampledWithoutReplacement,
    SelfComposed,
)
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.noisy_gd import check_oracle
from noisygd.exceptions import AssumptionError
from noisygd.mechanisms.noise import (
    add_gaussian_noise,
    secure_event,
    sensitivity_inflation,
)
from noisygd.objectives.glm import GLMObjective
from noisygd.oracles.array import ArrayOracle
from noisygd.oracles.base import GradientOracle

#: The relation of these algorithms (n public); its sensitivity rule lives in
#: :attr:`Neighbouring.clipped_sum_sensitivity` (2 per clipped term).
_REPLACE_ONE = Neighbouring.REPLACE_ONE

__all__ = [
    "bassily_event",
    "bassily_noise_std",
    "bassily_sgd",
    "bassily_sgd_glm_batch",
    "bassily_steps",
    "sample_without_replacement",
]


def bassily_noise_std(
    lipschitz: float, n: int, epsilon: float, delta: float, batch_size: int = 1
) -> float:
    r"""Per-coordinate noise std :math:`s_m` on the mean-scale batch gradient (module docstring).

    :math:`s_1 = \sigma/n` with BST14's
    :math:`\sigma^2 = 32L^2n^2\log(n/\delta)\log(1/\delta)/\varepsilon^2`, and
    :math:`s_m = s_1/m`.
    """
    L = check_positive("lipschitz", lipschitz)
    eps = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    if n < 2 or batch_size < 1 or batch_size > n:
        raise ValueError(f"need n >= 2 and 1 <= batch_size <= n, got n={n}, m={batch_size}")
    s1 = 4.0 * math.sqrt(2.0) * L * math.sqrt(math.log(n / delta) * math.log(1.0 / delta)) / eps
    return s1 / batch_size


def bassily_steps(n: int, batch_size: int) -> int:
    r""":math:`T = \lceil n^2/m^2\rceil` (BST14's :math:`n^2` for ``m = 1``)."""
    return max(1, math.ceil((n / batch_size) ** 2))


def bassily_event(
    *, lipschitz: float, noise_std: float, n: int, batch_size: int, steps: int
) -> SelfComposed:
    r"""``SelfComposed(SampledWithoutReplacement(m, n, Gaussian(s_m m / L, sensitivity=2)), T)``.

    The batch-mean gradient has replace-one sensitivity :math:`2L/m`; in units
    of :math:`L/m` the noise multiplier is :math:`s_m m/L` and the sensitivity 2.
    """
    L = check_positive("lipschitz", lipschitz)
    m = check_positive_int("batch_size", batch_size)
    n = check_positive_int("n", n)
    steps = check_positive_int("steps", steps, minimum=0)
    z = check_positive("noise_std", noise_std) * m / L
    inner = Gaussian(noise_multiplier=z, sensitivity=_REPLACE_ONE.clipped_sum_sensitivity,
                     relation=_REPLACE_ONE)
    return SelfComposed(SampledWithoutReplacement(m, n, inner), steps)


def sample_without_replacement(
    rng: np.random.Generator, n: int, m: int, shape: tuple[int, ...]
) -> np.ndarray:
    """Uniform ``m``-subsets of ``range(n)``, one per leading index: shape ``shape + (m,)``.

    Draws ``m`` i.i.d. uniform indices and redraws every subset with a repeat
    (rejection sampling: conditioned on being distinct, the ordered tuple is
    uniform, hence so is the subset).
    """
    if m > n:
        raise ValueError(f"cannot sample {m} of {n} without replacement")
    idx = rng.integers(0, n, size=(*shape, m))
    if m == 1:
        return idx
    flat = idx.reshape(-1, m)
    while True:
        s = np.sort(flat, axis=1)
        bad = np.nonzero(np.any(s[:, 1:] == s[:, :-1], axis=1))[0]
        if bad.size == 0:
            return flat.reshape(*shape, m)
        flat[bad] = rng.integers(0, n, size=(bad.size, m))


def bassily_sgd_glm_batch(
    oracle: ArrayOracle,
    *,
    lipschitz: float,
    l2: np.ndarray,
    epsilon: np.ndarray,
    delta: float,
    radius: np.ndarray,
    batch_size: int = 50,
    steps: int | None = None,
    rounds: int = 1,
    rng: np.random.Generator,
    chunk: int = 256,
) -> tuple[np.ndarray, list[DpEvent], dict]:
    r"""``rounds`` independent runs of the baseline for each of ``C`` configurations at once.

    Configurations ``c`` differ in ``l2[c]`` (:math:`\mu`), ``epsilon[c]`` and
    ``radius[c]`` and share, within a round, the sequence of batches (common
    random numbers across configurations; rounds are independent). Only the
    data term of the oracle's GLM objective is used (its ``l2`` is ignored). The batched
    kernel evaluates many parameter vectors per batch, so it reads the sampled rows
    (mapped into the oracle's bound) with :meth:`ArrayOracle.take
    <noisygd.oracles.array.ArrayOracle.take>`: an :class:`ArrayOracle` over a
    :class:`~noisygd.objectives.glm.GLMObjective` is required.

    Returns
    -------
    theta : ndarray of shape (rounds, C, p)
        Last iterates.
    events : list of SelfComposed (DiscreteGaussianNoise in secure mode)
        One per configuration.
    info : dict
        ``steps``, ``noise_std`` and ``sensitivity_inflation`` per configuration, seconds.

    ``rng`` may be a :class:`~noisygd.mechanisms.secure.SecureRandom` (secure mode, module
    docstring).
    """
    if not isinstance(oracle, ArrayOracle) or not isinstance(oracle.objective, GLMObjective):
        raise TypeError("bassily_sgd_glm_batch needs an ArrayOracle over a GLMObjective")
    check_generator("rng", rng)
    objective = oracle.objective
    n, d = oracle.n_rows, oracle.n_features  # n public: replace-one neighbours
    p = oracle.n_params
    l2 = np.atleast_1d(np.asarray(l2, dtype=float))
    eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
    radius = np.atleast_1d(np.asarray(radius, dtype=float))
    C = l2.size
    if eps.size != C or radius.size != C:
        raise ValueError("l2, epsilon and radius must have the same length")
    if np.any(l2 < 0) or np.any(radius <= 0) or np.any(eps <= 0):
        raise ValueError("need l2 >= 0, radius > 0 and epsilon > 0")
    m = check_positive_int("batch_size", batch_size)
    T = bassily_steps(n, m) if steps is None else check_positive_int("steps", steps)
    L = check_positive("lipschitz", lipschitz)
    s = np.array([bassily_noise_std(L, n, e, delta, m) for e in eps])
    diam = 2.0 * radius
    G = np.sqrt(L * L + p * s * s)
    # secure mode: rounding adds gamma sqrt(p) to the batch mean's sensitivity 2L/m
    kappas = [sensitivity_inflation(rng, float(sc), p,
                                    _REPLACE_ONE.clipped_sum_sensitivity * L / m) for sc in s]
    events = [
        secure_event(bassily_event(lipschitz=L, noise_std=float(sc), n=n, batch_size=m, steps=T),
                     rng, kappa)
        for sc, kappa in zip(s, kappas, strict=True)
    ]
    R = int(rounds)
    theta = np.zeros((R, C, p))
    strongly = l2 > 0
    fit_b = objective.fit_intercept
    t0 = time.perf_counter()
    t = 0
    while t < T:
        k = min(chunk, T - t)
        idx = sample_without_replacement(rng, n, m, (k, R))
        for j in range(k):
            t += 1
            ib = idx[j]  # (R, m)
            Xf, yf = oracle.take(ib.ravel())
            Xb = Xf.reshape(R, m, d)
            yb = yf.reshape(R, m)
            z = np.matmul(theta[:, :, :d], Xb.transpose(0, 2, 1))  # (R, C, m)
            if fit_b:
                z += theta[:, :, d:]
            r = objective.residual(z, yb[:, None, :])  # (R, C, m)
            g = np.empty_like(theta)
            g[:, :, :d] = np.matmul(r, Xb) / m
            if fit_b:
                g[:, :, d] = r.sum(axis=2) / m
            eta = np.where(strongly, 1.0 / (np.where(strongly, l2, 1.0) * t),
                           diam / (G * math.sqrt(t)))
            # noise on the data term's batch mean, block by block (one call per block: the
            # secure mode's grid is per block; NumPy draws in the same (round, class) order)
            for r_i in range(R):
                for c_i in range(C):
                    g[r_i, c_i] = add_gaussian_noise(g[r_i, c_i], float(s[c_i]), rng)
            g += l2[None, :, None] * theta
            theta -= eta[None, :, None] * g
            norms = np.linalg.norm(theta, axis=2, keepdims=True)
            theta *= np.minimum(1.0, radius[None, :, None] / np.maximum(norms, 1e-300))
    info = {"steps": T, "batch_size": m, "noise_std": s.tolist(),
            "sensitivity_inflation": kappas, "seconds": time.perf_counter() - t0}
    return theta, events, info


def bassily_sgd(
    oracle: GradientOracle,
    *,
    epsilon: float,
    delta: float,
    radius: float,
    batch_size: int = 50,
    steps: int | None = None,
    rng: np.random.Generator,
) -> FitResult:
    r"""One run of the mini-batch BST14 baseline on a GLM objective (module docstring).

    Parameters
    ----------
    oracle : ArrayOracle
        Over a convex :class:`~noisygd.objectives.glm.GLMObjective` with a Lipschitz
        constant for its rows (all inside ``oracle.row_norm_bound``); its ``l2`` is
        :math:`\mu`.
    epsilon, delta : float
        The target BST14's noise formula is evaluated at.
    radius : float
        ``C`` is the L2 ball of this radius (BST14 needs a bounded ``C``).
    batch_size : int, default=50
    steps : int, optional
        Default :math:`\lceil n^2/m^2\rceil`.
    rng : numpy.random.Generator or SecureRandom
        A :class:`~noisygd.mechanisms.secure.SecureRandom` runs secure mode (module docstring).

    Returns
    -------
    FitResult
        ``event``: ``SelfComposed(SampledWithoutReplacement(m, n, Gaussian), T)``, wrapped in
        :class:`~noisygd.accounting.events.DiscreteGaussianNoise` in secure mode.
    """
    check_oracle(oracle)
    if not isinstance(oracle, ArrayOracle) or not isinstance(oracle.objective, GLMObjective):
        raise TypeError("bassily_sgd runs on an ArrayOracle over a GLM objective "
                        "(noisygd.objectives.glm)")
    const = oracle.constants()
    if const.lipschitz is None or not const.convex:
        raise AssumptionError("the BST14 baseline needs a convex loss with a Lipschitz constant")
    theta, events, info = bassily_sgd_glm_batch(
        oracle, lipschitz=const.lipschitz, l2=np.array([oracle.l2]),
        epsilon=np.array([check_positive("epsilon", epsilon)]), delta=delta,
        radius=np.array([check_positive("radius", radius)]),
        batch_size=batch_size, steps=steps, rounds=1, rng=rng,
    )
    info["algorithm"] = "BST14 noisy SGD, mini-batch (Zhang et al. 2017, Section 4 baseline)"
    return FitResult(theta=theta[0, 0], event=events[0], n_iter=info["steps"], info=info)
