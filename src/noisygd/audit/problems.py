r"""Audit problems: two neighbouring datasets, a worst-case canary and a statistic per algorithm.

Each builder returns an :class:`AuditProblem`: a function running the library's own
algorithm (its public API, an explicit generator per run) on ``D`` (index 0) or on its
neighbour ``D'`` (index 1), and a unit direction ``u`` whose projection
:math:`s = \langle\theta, u\rangle` of the released parameters is the distinguishing
statistic. The problems are tiny (a handful of rows, two parameters, few steps) so that
thousands of runs take seconds.

The canary (the same idea in every problem). Parameters are :math:`\theta \in \mathbb R^2`;
the ordinary rows have :math:`x_{i,0} = 0` and only ever move :math:`\theta_1`; the canary is
the row :math:`x = B e_0` at the row-norm bound, on the coordinate no other row touches, so
its gradient is orthogonal to all others and the canary alone moves :math:`\theta_0`.
For the clipped algorithms the loss is the squared loss without intercept and the canary's
target is :math:`Y = 10^6` (``CANARY_TARGET``), so its residual :math:`\theta_0 B - Y` keeps
one sign and :math:`|r|B \gg C` along the whole run: its clipped gradient is exactly
:math:`-C e_0` at every step, and the clipped sums on ``D`` and ``D'`` differ by exactly the
sensitivity (``C`` under add/remove, where ``D'`` = ``D`` plus the canary; ``2C`` under
replace-one, where ``D'`` replaces the canary's target by :math:`-Y`). Then
:math:`s = \theta_0` is an affine function of the Gaussian noise:

* NoisyGD (add/remove, ``T`` full-batch steps of rate :math:`\eta`, no ridge):
  :math:`\theta_0 = \eta(T C\,[\text{canary}] + zC\sum_t N_t)`, so
  :math:`s \sim \mathcal N(0, \eta^2 z^2C^2T)` against
  :math:`\mathcal N(\eta TC, \eta^2 z^2C^2T)`: exactly :math:`\sqrt T/z`-GDP, the
  accountant's :math:`\mu` (Lecture 12, 12.1.2). The audit is tight.
* NoisySGD (Poisson rate :math:`\gamma`): the same with the canary in a Binomial number of
  batches; the statistic sums the steps, so it is weaker than the accountant's
  (which bounds every iterate): a soundness check.
* DP-FTRL (replace-one, full batch, ``E`` epochs, ``output="last"``,
  :math:`w_{T+1} = -\tilde s_T/\lambda`): the canary's leaf differs by :math:`2C` in all
  ``T = E`` leaves; with Honaker's estimator and ``T = 2`` the released prefix sum is the
  efficient combination of the three nodes, exactly as distinguishable as the
  accountant's :math:`\mu = 2\sqrt{T(2T-1)}/z` (Kairouz et al. 2021; ``T = 1`` is one node
  and also tight).
* Output perturbation (Zhang et al. 2017, Algorithm 1; replace-one, Gaussian noise,
  contraction sensitivity): squared loss in the ball of radius ``R`` with target bound
  ``Y``, canary targets :math:`\pm Y`; :math:`w_T` differs by
  :math:`2Y(1 - (1-\eta B^2/n)^T)/B` against the bound :math:`2\eta(BR + Y)BT/n`, a ratio
  of about :math:`Y/(BR + Y)` (0.87 at the defaults).
* Projected noisy GD (Chourasia et al. 2021, Algorithm 1; replace-one): the squared
  distance loss :math:`\frac12\lVert\theta - x\rVert^2` with canary :math:`\pm B e_0`, the
  lower-bound construction of their Theorem 3; on :math:`\mathbb R^2` the last iterate is
  Gaussian with the exact divergence of their Appendix E, within :math:`(2 - \eta)/2` in
  :math:`\mu` of the Corollary 2 bound the accountant certifies. In a ball (Corollary 1,
  projected Gaussian start) it is a soundness check.

* Private Newton (:func:`newton_problem`; the squared loss's constant Hessian, one
  curvature release): the same canary; under add/remove its curvature term is also at the
  bound. The statistic divides the gradient noise by the released curvature, so it is not
  Gaussian: a soundness check.

Every problem also states whether its statistic is exactly Gaussian with a common
variance on both datasets (``gaussian_output``), the condition under which the GDP bound
of :mod:`noisygd.audit.bounds` bounds epsilon.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from noisygd._checks import (
    check_bool,
    check_choice,
    check_fraction,
    check_positive,
    check_positive_int,
    check_probability,
)
from noisygd.accounting.events import (
    DpEvent,
    Gaussian,
    Neighbouring,
    PoissonSampled,
    SelfComposed,
)
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.dp_ftrl import dp_ftrl
from noisygd.algorithms.langevin_gd import projected_noisy_gd
from noisygd.algorithms.newton import newton, plan_newton
from noisygd.algorithms.noisy_gd import noisy_gd
from noisygd.algorithms.noisy_sgd import noisy_sgd
from noisygd.algorithms.output_perturbation import output_perturbation_gd
from noisygd.objectives.distance import SquaredDistanceLoss
from noisygd.objectives.glm import SquaredLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.oracles.base import GradientOracle

__all__ = [
    "CANARY_TARGET",
    "METHODS",
    "AuditProblem",
    "dp_ftrl_problem",
    "langevin_problem",
    "make_problem",
    "newton_problem",
    "noisy_gd_problem",
    "noisy_sgd_problem",
    "output_perturbation_problem",
]

#: Target of the canary row for the clipped algorithms: its residual never changes sign.
CANARY_TARGET = 1e6

Runner = Callable[[int, np.random.Generator], FitResult]


@dataclass(frozen=True)
class AuditProblem:
    """Two neighbouring datasets, the algorithm run on them and the statistic.

    Attributes
    ----------
    name : str
        The algorithm (a key of :data:`METHODS` for the built-in problems).
    run : callable
        ``run(which, rng) -> FitResult``: one run of the algorithm on ``D`` (``which =
        0``) or ``D'`` (``which = 1``), all randomness from ``rng``.
    direction : ndarray
        Unit vector ``u``; the statistic is :math:`\\langle\\theta, u\\rangle`.
    relation : Neighbouring
        How ``D`` and ``D'`` are neighbours.
    gaussian_output : bool
        Whether the statistic is exactly Gaussian with equal variances on ``D`` and
        ``D'`` (then the GDP bound is a bound on epsilon).
    canary : str
        What the canary is and why it is the worst case.
    settings : dict
        The public parameters of the run (for reports).
    """

    name: str
    run: Runner
    direction: np.ndarray
    relation: Neighbouring
    gaussian_output: bool
    canary: str
    settings: dict[str, Any] = field(default_factory=dict)

    def statistic(self, theta: np.ndarray) -> float:
        r""":math:`\langle\theta, u\rangle`."""
        return float(np.dot(np.asarray(theta, dtype=float), self.direction))


# ------------------------------------------------------------------ datasets
def _ordinary_rows(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` fixed rows on coordinate 1 only (``x_0 = 0``), norms <= 0.5, small targets."""
    x1 = np.linspace(-0.5, 0.5, n) if n > 1 else np.array([0.25])
    X = np.column_stack([np.zeros(n), x1])
    return X, 0.2 * x1


def _with_canary(X: np.ndarray, y: np.ndarray, B: float, target: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The canary ``x = B e_0`` (target ``target``) as the first row."""
    return np.vstack([[B, 0.0], X]), np.concatenate([[target], y])


def _oracles(objective: Any, relation: Neighbouring, n_ordinary: int, B: float,
             target: float) -> tuple[GradientOracle, GradientOracle]:
    """``(D, D')``: add/remove (``D`` without the canary) or replace-one (target negated)."""
    X, y = _ordinary_rows(n_ordinary)
    if relation is Neighbouring.ADD_REMOVE:
        d0 = ArrayOracle(objective, X, y, row_norm_bound=B)
    else:
        d0 = ArrayOracle(objective, *_with_canary(X, y, B, -target), row_norm_bound=B)
    d1 = ArrayOracle(objective, *_with_canary(X, y, B, target), row_norm_bound=B)
    return d0, d1


_E0 = np.array([1.0, 0.0])


def _calibrate(make_event: Callable[[float], DpEvent], epsilon: float, delta: float,
               accountant: str | None = None) -> float:
    from noisygd.accounting.calibration import calibrate_noise_multiplier

    return calibrate_noise_multiplier(make_event, epsilon, delta, accountant=accountant)


# ------------------------------------------------------------------ builders
def noisy_gd_problem(
    *,
    epsilon: float | None = None,
    delta: float = 1e-5,
    noise_multiplier: float | None = None,
    steps: int = 10,
    clip: float = 1.0,
    learning_rate: float = 0.1,
    relation: Neighbouring | str = Neighbouring.ADD_REMOVE,
    n_ordinary: int = 4,
    noise_scale: float = 1.0,
    secure: bool = False,
) -> AuditProblem:
    r"""NoisyGD (:func:`~noisygd.algorithms.noisy_gd.noisy_gd`) on the canary problem.

    Give ``noise_multiplier`` ``z`` or a target ``epsilon`` at ``delta`` (then ``z`` is
    :func:`~noisygd.accounting.calibrate_gaussian_composition`'s exact value for the
    continuous Gaussian). ``noise_scale`` (default 1) multiplies the noise *actually
    added* while the event still reports ``z``: a deliberately broken mechanism for
    testing the audit (``noise_scale < 1`` under-noises); never use it otherwise.

    ``secure=True`` runs secure mode (:class:`~noisygd.mechanisms.secure.SecureRandom`:
    OS entropy, sums rounded to a grid plus discrete Gaussian noise) and audits its own
    event (``DiscreteGaussianNoise``, read by zCDP/RDP). The runs ignore the generator the
    audit passes (secure mode cannot be seeded, so such an audit is not reproducible),
    and the statistic lives on a lattice: ``gaussian_output`` is False.
    """
    rel = Neighbouring(relation)
    T = check_positive_int("steps", steps)
    C = check_positive("clip", clip)
    eta = check_positive("learning_rate", learning_rate)
    scale = check_positive("noise_scale", noise_scale)
    secure = check_bool("secure", secure)
    if secure and scale != 1.0:
        raise ValueError("noise_scale is for the default sampler only")
    z = _noise_or_calibrate(noise_multiplier, epsilon, delta, lambda e, d: _gaussian_z(
        e, d, T, rel))
    B = 1.0
    d0, d1 = _oracles(SquaredLoss(fit_intercept=False), rel, check_positive_int(
        "n_ordinary", n_ordinary), B, CANARY_TARGET)
    n_public = float(n_ordinary + 1)

    source: Any = None
    if secure:
        from noisygd.mechanisms.secure import SecureRandom

        source = SecureRandom()

    def run(which: int, rng: np.random.Generator) -> FitResult:
        res = noisy_gd(d1 if which else d0, noise_multiplier=z * scale, clip=C, steps=T,
                       learning_rate=eta, n_samples=n_public, relation=rel,
                       rng=rng if source is None else source)
        if scale != 1.0:  # the broken mechanism: report the event of the noise promised
            res = replace(res, event=SelfComposed(
                Gaussian(z, sensitivity=rel.clipped_sum_sensitivity, relation=rel), T))
        return res

    extra: dict[str, Any] = {"noise_scale": scale} if scale != 1.0 else {}
    if secure:
        extra["secure"] = True
    return AuditProblem(
        name="noisy_gd", run=run, direction=_E0, relation=rel, gaussian_output=not secure,
        canary=("row B e_0 (target 1e6: clipped gradient -C e_0 at every step), on a "
                "coordinate no other row touches; " + _relation_words(rel)),
        settings={"noise_multiplier": z, "steps": T, "clip": C, "learning_rate": eta,
                  "n_samples": n_public, "relation": rel.value, **extra},
    )


def noisy_sgd_problem(
    *,
    epsilon: float | None = None,
    delta: float = 1e-5,
    noise_multiplier: float | None = None,
    steps: int = 4,
    sampling_rate: float = 0.5,
    clip: float = 1.0,
    learning_rate: float = 0.1,
    n_ordinary: int = 4,
) -> AuditProblem:
    r"""NoisySGD (:func:`~noisygd.algorithms.noisy_sgd.noisy_sgd`, Poisson, add/remove).

    ``z`` calibrated to ``epsilon`` by
    :func:`~noisygd.accounting.calibrate_noise_multiplier` when not given. The statistic
    is the sum over steps (the last iterate's canary coordinate), a mixture of Gaussians:
    ``gaussian_output`` is False.
    """
    T = check_positive_int("steps", steps)
    gamma = check_fraction("sampling_rate", sampling_rate)
    C = check_positive("clip", clip)
    eta = check_positive("learning_rate", learning_rate)
    z = _noise_or_calibrate(noise_multiplier, epsilon, delta, lambda e, d: _calibrate(
        lambda s: SelfComposed(PoissonSampled(gamma, Gaussian(s)), T), e, d))
    rel = Neighbouring.ADD_REMOVE
    d0, d1 = _oracles(SquaredLoss(fit_intercept=False), rel,
                      check_positive_int("n_ordinary", n_ordinary), 1.0, CANARY_TARGET)
    n_public = float(n_ordinary + 1)

    def run(which: int, rng: np.random.Generator) -> FitResult:
        return noisy_sgd(d1 if which else d0, noise_multiplier=z, clip=C, learning_rate=eta,
                         n_samples=n_public, sampling="poisson", sampling_rate=gamma,
                         steps=T, rng=rng)

    return AuditProblem(
        name="noisy_sgd", run=run, direction=_E0, relation=rel, gaussian_output=False,
        canary=("row B e_0 (target 1e6: clipped gradient -C e_0 whenever sampled), on a "
                "coordinate no other row touches; " + _relation_words(rel)),
        settings={"noise_multiplier": z, "steps": T, "sampling_rate": gamma, "clip": C,
                  "learning_rate": eta, "n_samples": n_public, "relation": rel.value},
    )


def dp_ftrl_problem(
    *,
    epsilon: float | None = None,
    delta: float = 1e-5,
    noise_multiplier: float | None = None,
    epochs: int = 2,
    clip: float = 1.0,
    l2_ftrl: float = 10.0,
    tree: str = "honaker",
    n_ordinary: int = 4,
) -> AuditProblem:
    r"""DP-FTRL (:func:`~noisygd.algorithms.dp_ftrl.dp_ftrl`, replace-one), full batch.

    One batch of all rows per epoch, ``T = epochs`` leaves, ``output="last"``. ``z``
    calibrated by :func:`~noisygd.accounting.calibrate_noise_multiplier` on the
    :class:`~noisygd.accounting.events.TreeAggregation` event when not given.
    """
    from noisygd.accounting.tree import tree_event

    E = check_positive_int("epochs", epochs)
    C = check_positive("clip", clip)
    lam = check_positive("l2_ftrl", l2_ftrl)
    tree = check_choice("tree", tree, ("honaker", "plain"))
    z = _noise_or_calibrate(noise_multiplier, epsilon, delta, lambda e, d: _calibrate(
        lambda s: tree_event(s, 1, E), e, d))
    rel = Neighbouring.REPLACE_ONE
    n_ord = check_positive_int("n_ordinary", n_ordinary)
    d0, d1 = _oracles(SquaredLoss(fit_intercept=False), rel, n_ord, 1.0, CANARY_TARGET)

    def run(which: int, rng: np.random.Generator) -> FitResult:
        return dp_ftrl(d1 if which else d0, noise_multiplier=z, clip=C, l2_ftrl=lam,
                       batch_size=n_ord + 1, epochs=E, tree=tree, output="last", rng=rng)

    # Exactly Gaussian with equal variances whatever T; tight for T <= 2 (module doc).
    return AuditProblem(
        name="dp_ftrl", run=run, direction=_E0, relation=rel, gaussian_output=True,
        canary=("first row B e_0 with target +1e6 in D' and -1e6 in D (clipped gradients "
                "-C e_0 and +C e_0 in every leaf), on a coordinate no other row touches; "
                + _relation_words(rel)),
        settings={"noise_multiplier": z, "epochs": E, "steps": E, "batch_size": n_ord + 1,
                  "clip": C, "l2_ftrl": lam, "tree": tree, "output": "last",
                  "relation": rel.value},
    )


def output_perturbation_problem(
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    steps: int = 10,
    n_ordinary: int | None = None,
    radius: float = 0.1,
    target_bound: float = 1.0,
) -> AuditProblem:
    r"""Output perturbation (Zhang et al. 2017, Algorithm 1) on the canary problem.

    Runs :func:`~noisygd.algorithms.output_perturbation.output_perturbation_gd`.

    Replace-one, analytic Gaussian noise for ``(epsilon, delta)``, the contraction
    sensitivity :math:`2\eta LT/n` with :math:`\eta = 1/\beta = 1`, ``L = (BR + Y)B``,
    ``B = 1``. The canary's targets are :math:`\pm Y` (``target_bound``); ``n_ordinary``
    rows of target 0 leave :math:`\theta_1 = 0`. Needs :math:`YT/n \le R` (no projection);
    ``n_ordinary`` defaults to the larger of 99 and the smallest count that meets it.
    """
    eps = check_positive("epsilon", epsilon)
    dl = check_probability("delta", delta)
    T = check_positive_int("steps", steps)
    R = check_positive("radius", radius)
    Y = check_positive("target_bound", target_bound)
    if n_ordinary is None:
        n_ordinary = max(99, math.ceil(Y * T / R) - 1)
    n_ord = check_positive_int("n_ordinary", n_ordinary)
    n = n_ord + 1
    if Y * T / n > R:
        raise ValueError("output_perturbation_problem needs target_bound * steps / n <= radius "
                         "(the canary's iterate must stay inside the ball)")
    obj = SquaredLoss(fit_intercept=False, radius=R, target_bound=Y)
    X, _ = _ordinary_rows(n_ord)
    y = np.zeros(n_ord)
    d0 = ArrayOracle(obj, *_with_canary(X, y, 1.0, -Y), row_norm_bound=1.0)
    d1 = ArrayOracle(obj, *_with_canary(X, y, 1.0, Y), row_norm_bound=1.0)

    def run(which: int, rng: np.random.Generator) -> FitResult:
        return output_perturbation_gd(d1 if which else d0, epsilon=eps, delta=dl,
                                      noise="analytic", steps=T, learning_rate=1.0,
                                      sensitivity_bound="contraction", rng=rng)

    rel = Neighbouring.REPLACE_ONE
    return AuditProblem(
        name="output_perturbation", run=run, direction=_E0, relation=rel,
        gaussian_output=True,
        canary=(f"first row e_0 with target +{Y:g} in D' and -{Y:g} in D, on a coordinate no "
                "other row touches (the other rows have target 0); " + _relation_words(rel)),
        settings={"epsilon": eps, "delta": dl, "steps": T, "learning_rate": 1.0,
                  "radius": R, "target_bound": Y, "n_samples": n, "noise": "analytic",
                  "sensitivity_bound": "contraction", "relation": rel.value},
    )


def langevin_problem(
    *,
    epsilon: float | None = None,
    delta: float = 1e-5,
    sigma: float | None = None,
    step_size: float = 0.1,
    steps: int = 50,
    n_ordinary: int = 4,
    radius: float | None = None,
) -> AuditProblem:
    r"""Projected noisy GD (:func:`~noisygd.algorithms.langevin_gd.projected_noisy_gd`).

    The squared distance loss, canary :math:`\pm e_0` (``B = 1``, :math:`S_g = 2`),
    ``n_ordinary`` rows on coordinate 1. Without ``radius``: :math:`\mathbb R^2` from the
    fixed start 0 (Corollary 2), a Gaussian last iterate. With ``radius``: the ball of
    that radius and the start :math:`\Pi_{\mathcal C}(\mathcal N(0, 2\sigma^2/\lambda I))`
    (Corollary 1); the projection makes the statistic non-Gaussian (``gaussian_output``
    False). ``sigma`` is calibrated on the run's own event
    (:func:`~noisygd.accounting.calibrate_noise_multiplier` with the last-iterate
    accountant) when not given.
    """
    eta = check_positive("step_size", step_size)
    K = check_positive_int("steps", steps)
    n_ord = check_positive_int("n_ordinary", n_ordinary)
    R = None if radius is None else check_positive("radius", radius)
    obj = SquaredDistanceLoss(radius=R)
    X, y = _ordinary_rows(n_ord)
    d0 = ArrayOracle(obj, *_with_canary(X, y, -1.0, 0.0), row_norm_bound=1.0)
    d1 = ArrayOracle(obj, *_with_canary(X, y, 1.0, 0.0), row_norm_bound=1.0)
    n = n_ord + 1
    theta0 = np.zeros(2) if R is None else None

    def go(oracle: GradientOracle, s: float, rng: np.random.Generator) -> FitResult:
        return projected_noisy_gd(oracle, sigma=s, step_size=eta, steps=K, n_samples=n,
                                  theta0=theta0, rng=rng)

    if sigma is None:
        if epsilon is None:
            raise ValueError("give sigma or epsilon")
        template = go(d0, 1.0, np.random.default_rng(0)).event

        def event_at(s: float) -> DpEvent:  # the event projected_noisy_gd records at sigma s
            if template.start_variance is None:
                return replace(template, sigma=s)
            return replace(template, sigma=s,
                           start_variance=2.0 * s * s / template.strong_convexity)

        # certified by best(), which the last-iterate accountant answers for this event
        sigma = _calibrate(event_at, epsilon, delta, accountant=None)
    elif epsilon is not None:
        raise ValueError("give sigma or epsilon, not both")
    s = check_positive("sigma", sigma)

    def run(which: int, rng: np.random.Generator) -> FitResult:
        return go(d1 if which else d0, s, rng)

    rel = Neighbouring.REPLACE_ONE
    where = ("on R^2 from the fixed start 0 (Corollary 2)" if R is None else
             f"in the ball of radius {R:g} from the projected Gaussian start (Corollary 1)")
    return AuditProblem(
        name="langevin", run=run, direction=_E0, relation=rel, gaussian_output=R is None,
        canary=("first row +e_0 in D' and -e_0 in D (||x - x'|| = S_g = 2B), the lower-bound "
                f"construction of Chourasia et al. 2021, Theorem 3, {where}; "
                + _relation_words(rel)),
        settings={"sigma": s, "step_size": eta, "steps": K, "n_samples": n,
                  "theorem": "corollary2" if R is None else "corollary1", "radius": R,
                  "relation": rel.value},
    )


def newton_problem(
    *,
    epsilon: float | None = None,
    delta: float = 1e-5,
    mu: float | None = None,
    steps: int = 3,
    clip: float = 1.0,
    relation: Neighbouring | str = Neighbouring.ADD_REMOVE,
    n_ordinary: int = 4,
    eigenvalue_rule: str = "clip",
    secure: bool = False,
) -> AuditProblem:
    r"""The private Newton method (:mod:`noisygd.algorithms.newton`) on the canary problem.

    Same canary as NoisyGD's (squared loss, target :math:`10^6`: clipped gradient
    :math:`-Ce_0` at every step). Under add/remove, its curvature term
    :math:`B^2e_0e_0^\top` is also at the bound :math:`C_H = B^2`, so the curvature
    release differs by exactly its sensitivity. Under replace-one the curvature sums are
    equal (:math:`\phi''` does not depend on the target). The statistic
    :math:`\theta_0` divides the gradient noise by the released curvature, so it is not
    Gaussian: ``gaussian_output`` is False (Clopper-Pearson, a soundness check).

    Give the run's Gaussian-DP ``mu``, or a target ``epsilon`` at ``delta`` (then ``mu`` is
    the exact :math:`\mu(\varepsilon, \delta)`, :func:`noisygd.accounting.gdp.calibrate_mu`).
    The plan is :func:`~noisygd.algorithms.newton.plan_newton`'s for ``p = 2``, a public
    ``n`` (the rows of ``D'``), gradient clip ``clip`` and curvature clip :math:`B^2 = 1`,
    with the constant Hessian of least squares (one curvature release) and no ridge.
    ``secure=True`` runs secure mode, as the NoisyGD problem does: OS entropy, so the
    audit is not reproducible.

    Returns
    -------
    AuditProblem
    """
    rel = Neighbouring(relation)
    T = check_positive_int("steps", steps)
    C = check_positive("clip", clip)
    secure = check_bool("secure", secure)
    if (mu is None) == (epsilon is None):
        raise ValueError("give mu or epsilon (one of them)")
    if mu is None:
        from noisygd.accounting.gdp import calibrate_mu

        mu = calibrate_mu(check_positive("epsilon", epsilon), delta)
    mu = check_positive("mu", mu)
    B = 1.0
    n_ordinary = check_positive_int("n_ordinary", n_ordinary)
    d0, d1 = _oracles(SquaredLoss(fit_intercept=False), rel, n_ordinary, B, CANARY_TARGET)
    n_public = float(n_ordinary + 1)
    plan = plan_newton(mu, relation=rel, n_params=2, n_samples=n_public, n_step=n_public,
                       clip=C, curvature_clip=B * B, steps=T, constant_hessian=True,
                       eigenvalue_rule=eigenvalue_rule, secure=secure)
    source = None
    if secure:
        from noisygd.mechanisms.secure import SecureRandom

        source = SecureRandom()

    def run(which: int, rng: np.random.Generator) -> FitResult:
        return newton(d1 if which else d0, plan, rng if source is None else source)

    return AuditProblem(
        name="newton", run=run, direction=_E0, relation=rel, gaussian_output=False,
        canary=("row B e_0 (squared loss, target 1e6: clipped gradient -C e_0 at every "
                "step; curvature term B^2 e_0 e_0^T at the bound), on a coordinate no other "
                "row touches; " + _relation_words(rel)),
        settings={"mu": mu, "steps": T, "clip": C, "curvature_clip": B * B,
                  "n_samples": n_public, "relation": rel.value,
                  "eigenvalue_rule": eigenvalue_rule, **({"secure": True} if secure else {})},
    )


# ------------------------------------------------------------------ helpers
def _relation_words(rel: Neighbouring) -> str:
    if rel is Neighbouring.ADD_REMOVE:
        return "D' = D plus the canary (add/remove)"
    return "D and D' differ in the canary's target (replace-one)"


def _gaussian_z(epsilon: float, delta: float, T: int, rel: Neighbouring) -> float:
    from noisygd.accounting.calibration import calibrate_gaussian_composition

    return calibrate_gaussian_composition(epsilon, delta, T, rel.clipped_sum_sensitivity, rel)


def _noise_or_calibrate(noise: float | None, epsilon: float | None, delta: float,
                        calibrate: Callable[[float, float], float]) -> float:
    if noise is not None:
        if epsilon is not None:
            raise ValueError("give the noise or epsilon, not both")
        return check_positive("noise_multiplier", noise)
    if epsilon is None:
        raise ValueError("give the noise or epsilon")
    return calibrate(check_positive("epsilon", epsilon), check_probability("delta", delta))


#: Method name -> problem builder (the names of ``noisygd audit --method``).
METHODS: dict[str, Callable[..., AuditProblem]] = {
    "noisy_gd": noisy_gd_problem,
    "noisy_sgd": noisy_sgd_problem,
    "dp_ftrl": dp_ftrl_problem,
    "output_perturbation": output_perturbation_problem,
    "langevin": langevin_problem,
    "newton": newton_problem,
}


def make_problem(method: str, *, epsilon: float, delta: float = 1e-5,
                 **options: Any) -> AuditProblem:
    """The built-in problem of ``method`` (a key of :data:`METHODS`) at ``(epsilon, delta)``."""
    method = check_choice("method", method, tuple(METHODS))
    return METHODS[method](epsilon=epsilon, delta=delta, **options)
