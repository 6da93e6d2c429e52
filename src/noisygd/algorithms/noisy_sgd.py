r"""NoisySGD: clipped per-example gradients on random mini-batches plus Gaussian noise.

Lecture 12 (seed 000), section 12.3.2, equations (12.2)-(12.3) (written as
descent on the regularised objective, with projection):

.. math::

    \hat g_t = \frac{1}{\gamma}\Big(\sum_{i \in B_t}\mathrm{clip}_C(\nabla\ell_i(\theta_t))
               + \mathcal N(0, (zC)^2 I)\Big) + n\mu\,\theta_t, \qquad
    \theta_{t+1} = \Pi_C\big(\theta_t - \eta_t(\hat g_t + \beta v_t)\big)

(``normalize="rate"``, an unbiased estimate of the gradient of the *sum*
objective, as in the lecture), or the same divided by the expected batch size
:math:`\gamma n` (``normalize="expected_batch"``, the mean objective, as in
Opacus). ``n`` is the public ``n_samples``; the actual batch size is never used
for scaling (under add/remove it is private).

Sampling and the event each one returns (the sampling performed is the
sampling accounted):

``"poisson"`` (add/remove)
    every row is in :math:`B_t` independently with probability :math:`\gamma`
    (a :class:`~noisygd.oracles.selection.PoissonRows` description: Geometric gaps from
    one stream per fixed block of global rows, keyed by seed material drawn once from
    ``rng`` and the step, resolved where the rows are, identically for every partition
    of them; secure mode draws a Binomial batch size and a uniform subset of that size
    on the client, the same distribution); batches may be empty. Event
    ``SelfComposed(PoissonSampled(gamma, Gaussian(z)), T)``.
``"without_replacement"`` (replace-one)
    :math:`B_t` is a uniform subset of exactly ``m`` rows, fresh each step.
    Event ``SelfComposed(SampledWithoutReplacement(m, n, Gaussian(z, 2,
    REPLACE_ONE)), T)``.
``"shuffle_fixed"`` (replace-one)
    each epoch shuffles the rows and cuts them into consecutive batches of
    ``m``. This is *not* Poisson sampling and is not accounted as such: given
    the (data-independent) permutation, replacing one row changes one batch
    per epoch, so by parallel composition within an epoch and adaptive
    composition across epochs the run is
    ``SelfComposed(Gaussian(z, 2, REPLACE_ONE), epochs touched)``
    (no amplification is claimed). Under add/remove neighbours the batch
    boundaries shift, so this sampler is refused.

Momentum (``momentum = beta``) is heavy-ball on the privatised gradients,
:math:`v_{t+1} = \beta v_t + \hat g_t`, :math:`\theta_{t+1} = \Pi_C(\theta_t - \eta v_{t+1})`:
post-processing, no privacy cost.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from noisygd._checks import (
    check_choice,
    check_fraction,
    check_generator,
    check_positive,
    check_positive_int,
    check_real,
)
from noisygd.accounting.events import (
    DpEvent,
    Gaussian,
    Neighbouring,
    PoissonSampled,
    SampledWithoutReplacement,
    SelfComposed,
)
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.noisy_gd import check_oracle, check_theta0
from noisygd.mechanisms.noise import (
    add_gaussian_noise,
    is_secure,
    secure_event,
    sensitivity_inflation,
)
from noisygd.mechanisms.secure import SecureRandom
from noisygd.oracles.base import GradientOracle
from noisygd.oracles.selection import PoissonRows, RowIndices, RowSelection, oracle_rows

__all__ = ["NORMALIZATIONS", "SAMPLINGS", "noisy_sgd"]

SAMPLINGS = ("poisson", "without_replacement", "shuffle_fixed")
NORMALIZATIONS = ("rate", "expected_batch")


def noisy_sgd(
    oracle: GradientOracle,
    *,
    noise_multiplier: float,
    clip: float,
    learning_rate: float,
    n_samples: float,
    sampling: str = "poisson",
    sampling_rate: float | None = None,
    batch_size: int | None = None,
    epochs: float | None = None,
    steps: int | None = None,
    normalize: str = "rate",
    momentum: float = 0.0,
    averaging: str = "last",
    theta0: np.ndarray | None = None,
    rng: np.random.Generator | SecureRandom,
) -> FitResult:
    r"""Run NoisySGD (Lecture 12, eqs. 12.2-12.3) and return parameters and event.

    Parameters
    ----------
    oracle : GradientOracle
        The private rows; batches are read as ``oracle.clipped_gradient_sum(theta, C,
        rows=batch)`` (the row count ``oracle.n_rows`` is used only to sample).
    noise_multiplier : float
        ``z``: the noise added to each batch sum is :math:`\mathcal N(0, (zC)^2 I)`.
    clip : float
        Per-example clipping norm ``C``.
    learning_rate : float
        :math:`\eta`, for the sum objective (``normalize="rate"``) or the mean
        objective (``"expected_batch"``).
    n_samples : float
        Public number of rows ``n``. For the replace-one samplers it must equal
        ``oracle.n_rows`` (the population size is public there).
    sampling : {"poisson", "without_replacement", "shuffle_fixed"}
    sampling_rate : float, optional
        :math:`\gamma` for Poisson sampling; alternatively give ``batch_size``
        and :math:`\gamma = m / n` is used. Replace-one samplers take ``batch_size``.
    batch_size : int, optional
    epochs : float, optional
        Number of passes; ``T = ceil(epochs / gamma)`` steps (``ceil(epochs *
        ceil(n/m))`` for ``"shuffle_fixed"``). Give exactly one of ``epochs``
        and ``steps``.
    steps : int, optional
    normalize : {"rate", "expected_batch"}
    momentum : float in [0, 1), default 0
    averaging : {"last", "uniform"}
        Last iterate or :math:`\frac1T\sum_{t=1}^T\theta_t`.
    theta0 : ndarray, optional
    rng : numpy.random.Generator or SecureRandom
        Draws the batches and the noise. A :class:`~noisygd.mechanisms.secure.SecureRandom`
        runs secure mode (OS entropy, exact Poisson draws and permutations, each noisy batch
        sum rounded to a grid plus discrete Gaussian noise) and the event becomes
        ``DiscreteGaussianNoise(<event>, kappa)``, :math:`\kappa = 1 + \gamma\sqrt p/\Delta`
        with :math:`\Delta` = ``C`` (Poisson, add/remove) or ``2C`` (``shuffle_fixed``),
        accounted by RDP (Poisson: the general subsampling bound of Zhu and Wang 2019 on the
        discrete Gaussian's curve). Sampling without replacement is accounted by RDP only,
        with the general bound of Wang, Balle and Kasiviswanathan (2019, Theorem 9) on the
        discrete Gaussian's curve.

    Returns
    -------
    FitResult
        ``event`` as in the module docstring; ``info`` has the (public) sampling
        rate, steps and normalisation; realised batch sizes are not reported
        (under add/remove they are private).
    """
    check_oracle(oracle)
    check_generator("rng", rng)
    sampling = check_choice("sampling", sampling, SAMPLINGS)
    normalize = check_choice("normalize", normalize, NORMALIZATIONS)
    averaging = check_choice("averaging", averaging, ("last", "uniform"))
    z = check_positive("noise_multiplier", noise_multiplier)
    C = check_positive("clip", clip)
    eta = check_positive("learning_rate", learning_rate)
    n = check_positive("n_samples", n_samples)
    beta = check_real("momentum", momentum)
    if not (0.0 <= beta < 1.0):
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    if (epochs is None) == (steps is None):
        raise ValueError("give exactly one of epochs and steps")
    n_rows = oracle.n_rows  # private under add/remove: used only to draw the batches

    gamma, m = _batch_rate(sampling, sampling_rate, batch_size, n, n_rows)
    per_epoch = math.ceil(n_rows / m) if sampling == "shuffle_fixed" else None  # type: ignore
    T = _step_count(steps, epochs, gamma, per_epoch)

    p = oracle.n_params
    theta = oracle.project(check_theta0(theta0, p))

    # scale: rate -> sum objective (1/gamma); expected_batch -> mean objective (1/(gamma n))
    scale = 1.0 / gamma if normalize == "rate" else 1.0 / (gamma * n)
    reg = oracle.l2 * (n if normalize == "rate" else 1.0)
    sd = z * C
    velocity = np.zeros(p)
    acc = np.zeros(p)
    perm = None
    # Poisson batches are descriptions resolved where the rows are (oracles.selection): one
    # draw of seed material here; secure mode draws exact samples on the client instead
    entropy = PoissonRows.entropy_from(rng) if sampling == "poisson" and not is_secure(
        rng) else None
    for t in range(T):
        sel, perm = _batch(t, sampling, entropy, gamma, m, per_epoch, n_rows, rng, perm)
        if averaging == "uniform":
            acc += theta
        rows = oracle_rows(oracle, sel)
        empty = isinstance(rows, np.ndarray) and rows.size == 0
        gsum = np.zeros(p) if empty else oracle.clipped_gradient_sum(theta, C, rows=rows)
        ghat = scale * add_gaussian_noise(gsum, sd, rng)
        if reg:
            ghat = ghat + reg * theta
        velocity = beta * velocity + ghat
        theta = oracle.project(theta - eta * velocity)

    event = _sgd_event(sampling, gamma, z, T, m, n_rows, per_epoch)
    # secure mode: rounding adds gamma sqrt(p) to the batch sum's sensitivity (C under
    # add/remove for Poisson, 2C under replace-one for shuffle_fixed)
    event = secure_event(event, rng, sensitivity_inflation(
        rng, sd, p, event.neighbouring.clipped_sum_sensitivity * C))
    out = acc / T if averaging == "uniform" else theta
    info = {
        "algorithm": "noisy_sgd",
        "sampling": sampling,
        "sampling_rate": gamma,
        "batch_size": m,
        "steps": T,
        "epochs": T * gamma if per_epoch is None else T / per_epoch,
        "normalize": normalize,
        "momentum": beta,
        "averaging": averaging,
        "learning_rate": eta,
        "noise_multiplier": z,
        "clip": C,
        "n_samples": n,
        "relation": event.neighbouring.value,
        "last_iterate": theta,
    }
    return FitResult(theta=out, event=event, n_iter=T, info=info)


def _batch_rate(sampling: str, sampling_rate: float | None, batch_size: int | None,
                n: float, n_rows: int) -> tuple[float, int | None]:
    """``(gamma, m)``: the sampling rate and, for the replace-one samplers, the batch size
    (checked; ``n_rows`` is public there and compared with ``n``)."""
    if sampling == "poisson":
        if (sampling_rate is None) == (batch_size is None):
            raise ValueError("Poisson sampling needs exactly one of sampling_rate and batch_size")
        if sampling_rate is not None:
            return check_fraction("sampling_rate", sampling_rate), None
        gamma = check_positive_int("batch_size", batch_size) / n
        if not (0.0 < gamma <= 1.0):
            raise ValueError(f"batch_size / n_samples must be in (0, 1], got {gamma!r}")
        return gamma, None
    if sampling_rate is not None:
        raise ValueError(f"sampling={sampling!r} takes batch_size, not sampling_rate")
    if batch_size is None:
        raise ValueError(f"sampling={sampling!r} needs batch_size")
    m = check_positive_int("batch_size", batch_size)
    if n != n_rows:
        raise ValueError(
            f"n_samples={n} differs from the number of rows held: under replace-one "
            "neighbours the population size is public and must be the true one"
        )
    if m > n_rows:
        raise ValueError(f"batch_size={m} exceeds n_samples")
    return m / n_rows, m


def _step_count(steps: int | None, epochs: float | None, gamma: float,
                per_epoch: int | None) -> int:
    """``T``: ``steps``, or ``ceil(epochs / gamma)`` (``ceil(epochs * per_epoch)`` for
    ``"shuffle_fixed"``)."""
    if steps is not None:
        return check_positive_int("steps", steps)
    e = check_positive("epochs", epochs)
    return math.ceil(e * per_epoch) if per_epoch else math.ceil(e / gamma - 1e-9)


def _batch(t: int, sampling: str, entropy: Any, gamma: float, m: int | None,
           per_epoch: int | None, n_rows: int, rng: Any, perm: np.ndarray | None
           ) -> tuple[RowSelection, np.ndarray | None]:
    """Step ``t``'s batch (a description resolved where the rows are, or indices drawn
    from ``rng``) and the current epoch's permutation (``"shuffle_fixed"``)."""
    if entropy is not None:
        return PoissonRows(gamma, entropy, t), perm
    if sampling == "poisson":
        k = int(rng.binomial(n_rows, gamma))
        return RowIndices(rng.choice(n_rows, size=k, replace=False) if k
                          else np.empty(0, dtype=int)), perm
    if sampling == "without_replacement":
        return RowIndices(rng.choice(n_rows, size=m, replace=False)), perm
    j = t % per_epoch  # type: ignore[operator]
    if j == 0:
        perm = rng.permutation(n_rows)
    return RowIndices(perm[j * m:(j + 1) * m]), perm  # type: ignore[index,operator]


def _sgd_event(sampling: str, gamma: float, z: float, T: int, m: int | None, n_rows: int,
               per_epoch: int | None) -> DpEvent:
    """The run's event before secure mode's wrapping (module doc)."""
    replace = Neighbouring.REPLACE_ONE
    if sampling == "poisson":
        return SelfComposed(PoissonSampled(gamma, Gaussian(z)), T)
    if sampling == "without_replacement":
        return SelfComposed(
            SampledWithoutReplacement(
                m, n_rows, Gaussian(z, sensitivity=replace.clipped_sum_sensitivity,
                                    relation=replace)
            ),
            T,
        )
    epochs_touched = math.ceil(T / per_epoch)  # type: ignore[operator]
    return SelfComposed(
        Gaussian(z, sensitivity=replace.clipped_sum_sensitivity, relation=replace),
        epochs_touched,
    )
