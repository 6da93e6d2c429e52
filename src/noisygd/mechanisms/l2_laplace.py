r"""The "L2-Laplace" (K-norm) mechanism: density proportional to exp(-eps ||z||_2 / Delta).

This is the noise of Algorithm 1, line 6 of Zhang, Zheng, Mou & Wang (IJCAI 2017)
("Efficient Private ERM for Smooth Objectives", seed ``002``) for pure
:math:`\varepsilon`-DP output perturbation. Writing :math:`b = \Delta/\varepsilon`
for the *scale*, the density

.. math::

    p(z) \propto \exp(-\lVert z\rVert_2 / b), \qquad z \in \mathbb R^d,

is spherically symmetric, so :math:`z = r\,u` with the direction :math:`u`
uniform on the unit sphere :math:`S^{d-1}` and the radius independent of it with
density :math:`\propto r^{d-1} e^{-r/b}` on :math:`r > 0`, i.e.

.. math::

    \lVert z\rVert_2 \sim \mathrm{Gamma}(\text{shape}=d, \text{scale}=b).

Sampling is therefore exact: one Gamma draw for the norm and one normalised
standard Gaussian vector for the direction. Lemma 6 of the paper,
:math:`\mathbb E\lVert z\rVert^2 = d(d+1)b^2`, is the second moment of that Gamma
law.

Privacy: for two inputs with :math:`\lVert a - a'\rVert_2 \le \Delta`, the
triangle inequality gives
:math:`p(x - a)/p(x - a') = \exp((\lVert x-a'\rVert - \lVert x-a\rVert)/b) \le
\exp(\Delta/b) = e^{\varepsilon}`: the release :math:`a + z` is
:math:`\varepsilon`-DP (Theorem 1 of the paper with Lemma 1's argument).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from noisygd._checks import check_positive

__all__ = [
    "l2_laplace_expected_sq_norm",
    "l2_laplace_norm_distribution",
    "l2_laplace_scale",
    "sample_l2_laplace",
    "sample_unit_sphere",
]


def _check_rng(rng: np.random.Generator) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _check_dim(dim: int) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")
    return int(dim)


def _check_scale(scale: float) -> float:
    """A positive finite real (``TypeError`` for ``True`` or ``"2"``: :func:`check_positive`)."""
    return check_positive("scale", scale)


def l2_laplace_scale(sensitivity: float, epsilon: float) -> float:
    r"""Scale :math:`b = \Delta/\varepsilon` making :math:`a + z` :math:`\varepsilon`-DP.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity :math:`\Delta > 0` of the released vector.
    epsilon : float
        Target :math:`\varepsilon > 0`.
    """
    sens = float(sensitivity)
    eps = float(epsilon)
    if not (sens > 0.0) or not math.isfinite(sens):
        raise ValueError(f"sensitivity must be positive and finite, got {sensitivity!r}")
    if not (eps > 0.0) or not math.isfinite(eps):
        raise ValueError(f"epsilon must be positive and finite, got {epsilon!r}")
    return sens / eps


def sample_unit_sphere(
    dim: int, rng: np.random.Generator, size: int | None = None
) -> np.ndarray:
    """Uniform draws on the unit sphere :math:`S^{d-1}` (normalised standard Gaussians).

    Returns shape ``(dim,)`` if ``size`` is None, else ``(size, dim)``.
    """
    dim = _check_dim(dim)
    rng = _check_rng(rng)
    shape = (dim,) if size is None else (int(size), dim)
    g = rng.standard_normal(shape)
    norms = np.linalg.norm(g, axis=-1, keepdims=True)
    # A standard Gaussian vector is 0 with probability 0; redraw defensively.
    while np.any(norms == 0.0):  # pragma: no cover - probability zero
        bad = (norms == 0.0).ravel()
        g.reshape(-1, dim)[bad] = rng.standard_normal((int(bad.sum()), dim))
        norms = np.linalg.norm(g, axis=-1, keepdims=True)
    return g / norms


def sample_l2_laplace(
    dim: int, scale: float, rng: np.random.Generator, size: int | None = None
) -> np.ndarray:
    r"""Exact draws from the density :math:`\propto\exp(-\lVert z\rVert_2/b)` on R^d.

    Norm :math:`\sim \mathrm{Gamma}(d, b)`, direction uniform on the sphere,
    independent (module docstring).

    Parameters
    ----------
    dim : int
        Dimension ``d``.
    scale : float
        :math:`b = \Delta/\varepsilon` (see :func:`l2_laplace_scale`).
    rng : numpy.random.Generator
    size : int or None
        Number of independent draws; ``None`` for a single vector.

    Returns
    -------
    ndarray of shape ``(dim,)`` or ``(size, dim)``
    """
    dim = _check_dim(dim)
    b = _check_scale(scale)
    rng = _check_rng(rng)
    radius = rng.gamma(shape=float(dim), scale=b, size=None if size is None else int(size))
    direction = sample_unit_sphere(dim, rng, size)
    if size is None:
        return float(radius) * direction
    return np.asarray(radius)[:, None] * direction


def l2_laplace_norm_distribution(dim: int, scale: float) -> stats.rv_continuous:
    r"""The exact law of :math:`\lVert z\rVert_2`: ``scipy.stats.gamma(a=dim, scale=scale)``."""
    return stats.gamma(a=float(_check_dim(dim)), scale=_check_scale(scale))


def l2_laplace_expected_sq_norm(dim: int, scale: float) -> float:
    r""":math:`\mathbb E\lVert z\rVert_2^2 = d(d+1)b^2` (Lemma 6 of Zhang et al. 2017)."""
    d = _check_dim(dim)
    b = _check_scale(scale)
    return d * (d + 1) * b * b
