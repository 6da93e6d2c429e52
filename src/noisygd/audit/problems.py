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
* NoisySGD (:func:`noisy_sgd_problem`): Poisson sampling, the same with the canary in a
  Binomial number of batches, the statistic a known binomial mixture of Gaussians whose
  epsilon is the accountant's to 0.1% (the ``"family"`` bound of
  :mod:`noisygd.audit.bounds`); without replacement, the symmetric mixture; with shuffled
  fixed batches (no amplification claimed, so the permutation may be public) the white-box
  sum over the canary's own steps, exactly the accountant's Gaussian.
* RRPSGD (:func:`rrpsgd_problem`): one round, a linear loss whose gradient is constant (a
  Dirac gradient canary); AdaSSP (:func:`ssp_problem`): the three releases, white-box.
  The estimators' defaults: :mod:`noisygd.audit.estimator_problems`.
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
from collections.abc import Callable, Iterator, Mapping
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
    SampledWithoutReplacement,
    SelfComposed,
)
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.dp_ftrl import dp_ftrl
from noisygd.algorithms.langevin_gd import projected_noisy_gd
from noisygd.algorithms.newton import newton, plan_newton
from noisygd.algorithms.noisy_gd import noisy_gd
from noisygd.algorithms.noisy_sgd import noisy_sgd
from noisygd.algorithms.output_perturbation import output_perturbation_gd
from noisygd.audit.bounds import ShiftFamily
from noisygd.objectives.distance import SquaredDistanceLoss
from noisygd.objectives.glm import LogisticLoss, SquaredLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.oracles.base import GradientOracle
from noisygd.solvers.ridge import RidgedOracle

__all__ = [
    "CANARY_TARGET",
    "METHODS",
    "AuditProblem",
    "LinearLoss",
    "dp_ftrl_problem",
    "langevin_problem",
    "make_problem",
    "newton_multinomial_problem",
    "newton_problem",
    "noisy_gd_problem",
    "noisy_sgd_problem",
    "output_perturbation_problem",
    "rrpsgd_problem",
    "ssp_centred_problem",
    "ssp_problem",
]

#: Target of the canary row for the clipped algorithms: its residual never changes sign.
CANARY_TARGET = 1e6

Runner = Callable[[int, np.random.Generator], FitResult]


@dataclass(frozen=True)
class AuditProblem:
    r"""Two neighbouring datasets, the algorithm run on them and the statistic.

    Attributes
    ----------
    name : str
        The algorithm (a key of :data:`METHODS` for the built-in problems).
    run : callable
        ``run(which, rng) -> FitResult``: one run of the algorithm on ``D`` (``which =
        0``) or ``D'`` (``which = 1``), all randomness from ``rng``.
    direction : ndarray
        Unit vector ``u``; the statistic is :math:`\langle\theta, u\rangle`.
    relation : Neighbouring
        How ``D`` and ``D'`` are neighbours.
    gaussian_output : bool
        Whether the statistic is exactly Gaussian with equal variances on ``D`` and
        ``D'`` (then the GDP bound is a bound on epsilon).
    canary : str
        What the canary is and why it is the worst case.
    settings : dict
        The public parameters of the run (for reports).
    family : ShiftFamily, optional
        The statistic's law up to its signal-to-noise ratio when it is a known mixture of
        Gaussians (subsampled runs): the runner then reports the ``"family"`` bound
        (:mod:`noisygd.audit.bounds`) as the headline.
    score : callable, optional
        ``score(result) -> float``: a white-box statistic read from the run's ``info``
        (``direction`` is then unused); default :math:`\langle\theta, u\rangle`.
    observed : str
        What the statistic observes (``"last iterate"``, ``"every step (white-box)"``...).
    nu : float or None
        The statistic's signal-to-noise ratio (:math:`\mu` of a Gaussian statistic,
        :math:`\nu` of ``family``) when the implementation adds exactly the noise its event
        states: what :mod:`noisygd.audit.power` simulates (None where not known in closed
        form).
    event_varies : bool
        The run's event depends on an earlier release of the same run (the estimators'
        private count sets the plan's steps and noise): each distinct event is accounted
        and the claim is the largest epsilon among them. Otherwise runs whose events differ
        are refused.
    """

    name: str
    run: Runner
    direction: np.ndarray
    relation: Neighbouring
    gaussian_output: bool
    canary: str
    settings: dict[str, Any] = field(default_factory=dict)
    family: ShiftFamily | None = None
    score: Callable[[FitResult], float] | None = None
    observed: str = "released parameters"
    nu: float | None = None
    event_varies: bool = False

    def statistic(self, theta: np.ndarray) -> float:
        r""":math:`\langle\theta, u\rangle`."""
        return float(np.dot(np.asarray(theta, dtype=float), self.direction))

    def observe(self, result: FitResult) -> float:
        """The statistic of one run: ``score(result)`` if set, else :meth:`statistic`."""
        if self.score is not None:
            return float(self.score(result))
        return self.statistic(result.theta)


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


def _gdp_mu(epsilon: float | None, delta: float, mu: float | None) -> float:
    r"""A run's Gaussian-DP ``mu``: the given one, or the exact :math:`\mu(\varepsilon,
    \delta)` of a target ``epsilon`` (:func:`noisygd.accounting.gdp.calibrate_mu`); exactly
    one of the two must be given."""
    if (mu is None) == (epsilon is None):
        raise ValueError("give mu or epsilon (one of them)")
    if mu is None:
        from noisygd.accounting.gdp import calibrate_mu

        mu = calibrate_mu(check_positive("epsilon", epsilon), delta)
    return check_positive("mu", mu)


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
        nu=rel.clipped_sum_sensitivity * math.sqrt(T) / z,
    )


def noisy_sgd_problem(
    *,
    epsilon: float | None = None,
    delta: float = 1e-5,
    noise_multiplier: float | None = None,
    sampling: str = "poisson",
    steps: int = 4,
    sampling_rate: float = 0.8,
    batch_size: int | None = None,
    epochs: int = 2,
    clip: float = 1.0,
    learning_rate: float = 0.1,
    n_ordinary: int | None = None,
) -> AuditProblem:
    r"""NoisySGD (:func:`~noisygd.algorithms.noisy_sgd.noisy_sgd`) on the canary problem.

    ``z`` is calibrated to ``epsilon`` on the run's own event by
    :func:`~noisygd.accounting.calibrate_noise_multiplier` (PLD) when not given.

    ``sampling="poisson"`` (add/remove; ``steps``, ``sampling_rate``; 4 ordinary rows): the
        canary is in a :math:`\mathrm{Bin}(T, \gamma)` number of batches, so the last
        iterate's canary coordinate is :math:`\sum_k \mathrm{Bin}(k; T, \gamma)\,
        \mathcal N(k\nu, 1)` against :math:`\mathcal N(0, 1)` in units of its noise,
        :math:`\nu = 1/(z\sqrt T)` (:meth:`ShiftFamily.poisson_sum`). That pair's epsilon
        is the accountant's to 0.5% at the defaults (1.990 against 2.000): the summed iterate
        loses almost nothing to the release of every iterate that PLD bounds.
    ``sampling="without_replacement"`` (replace-one; ``steps``, ``batch_size``, default 19
        of 20 rows): fresh uniform batches; the canary's row has clipped gradient
        :math:`-Cu` in ``D`` and :math:`+Cu` in ``D'`` in each batch that holds it
        (:meth:`ShiftFamily.symmetric_sum`). The accountant's pair (Zhu, Dong and Wang 2022,
        :mod:`noisygd.accounting.wor_pld`) shifts by the whole :math:`2C` against nothing;
        no pair of rows realises it, and this pair's epsilon approaches it only as
        :math:`\gamma \to 1` (1.974 against 2.000 at :math:`\gamma = 0.95`, ``T = 4``;
        1.247 at :math:`\gamma = 0.5`, ``T = 1``).
    ``sampling="shuffle_fixed"`` (replace-one; ``epochs``, ``batch_size``, default 2 of 5
        rows): the accountant claims no amplification (the permutation is data-independent,
        so it may be public), so the auditor is given it: the statistic sums the canary
        coordinate of the noisy steps whose batch holds the canary (white-box, from the
        iterates), exactly Gaussian with :math:`\mu = 2\sqrt E/z`, the accountant's.
    """
    sampling = check_choice("sampling", sampling, ("poisson", "without_replacement",
                                                   "shuffle_fixed"))
    C = check_positive("clip", clip)
    eta = check_positive("learning_rate", learning_rate)
    if sampling == "poisson":
        return _poisson_sgd_problem(epsilon, delta, noise_multiplier, steps, sampling_rate, C,
                                    eta, 4 if n_ordinary is None else n_ordinary)
    rel = Neighbouring.REPLACE_ONE
    n_ord = check_positive_int("n_ordinary", n_ordinary if n_ordinary is not None else
                               (19 if sampling == "without_replacement" else 4))
    n = n_ord + 1
    m = check_positive_int("batch_size", batch_size if batch_size is not None else
                           (19 if sampling == "without_replacement" else 2))
    if m > n:
        raise ValueError(f"batch_size={m} exceeds the {n} rows")
    inner = Gaussian  # the event's inner Gaussian over the replace-one sensitivity (2)
    if sampling == "without_replacement":
        T = check_positive_int("steps", steps)

        def make_event(s: float) -> DpEvent:
            return SelfComposed(SampledWithoutReplacement(
                m, n, inner(s, sensitivity=rel.clipped_sum_sensitivity, relation=rel)), T)
    else:
        E = check_positive_int("epochs", epochs)
        T = E * math.ceil(n / m)

        def make_event(s: float) -> DpEvent:
            return SelfComposed(inner(s, sensitivity=rel.clipped_sum_sensitivity, relation=rel), E)
    z = _noise_or_calibrate(noise_multiplier, epsilon, delta,
                            lambda e, d: _calibrate(make_event, e, d))
    d0, d1 = _oracles(SquaredLoss(fit_intercept=False), rel, n_ord, 1.0, CANARY_TARGET)
    kwargs = {"noise_multiplier": z, "clip": C, "learning_rate": eta, "n_samples": float(n),
              "sampling": sampling, "batch_size": m}
    settings = {"noise_multiplier": z, "sampling": sampling, "steps": T, "batch_size": m,
                "n_samples": n, "sampling_rate": m / n, "clip": C, "learning_rate": eta,
                "relation": rel.value}
    words = ("first row B e_0 with target +1e6 in D' and -1e6 in D (clipped gradient -C e_0 "
             "or +C e_0 in each batch that holds it), on a coordinate no other row touches; "
             + _relation_words(rel))
    if sampling == "without_replacement":
        def run(which: int, rng: np.random.Generator) -> FitResult:
            return noisy_sgd(d1 if which else d0, steps=T, rng=rng, **kwargs)

        return AuditProblem(
            name="noisy_sgd_wor", run=run, direction=_E0, relation=rel,
            gaussian_output=False, canary=words, family=ShiftFamily.symmetric_sum(T, m / n),
            settings=settings, observed="last iterate", nu=1.0 / (z * math.sqrt(T)))

    def run_shuffle(which: int, rng: np.random.Generator) -> FitResult:
        rec = _BatchRecorder(d1 if which else d0)
        res = noisy_sgd(rec, steps=T, rng=rng, **kwargs)
        res.info["audit_statistic"] = rec.canary_steps_statistic(
            res.info["last_iterate"], eta / (m / n), z * C)
        return res

    return AuditProblem(
        name="noisy_sgd_shuffle", run=run_shuffle, direction=_E0, relation=rel,
        gaussian_output=True, canary=words, settings={**settings, "epochs": E},
        score=_info_statistic, nu=2.0 * math.sqrt(E) / z,
        observed="white-box: the noisy steps whose batch holds the canary (permutation known)")


def _poisson_sgd_problem(epsilon: float | None, delta: float, noise_multiplier: float | None,
                         steps: int, sampling_rate: float, C: float, eta: float,
                         n_ordinary: int) -> AuditProblem:
    T = check_positive_int("steps", steps)
    gamma = check_fraction("sampling_rate", sampling_rate)
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
        settings={"noise_multiplier": z, "sampling": "poisson", "steps": T,
                  "sampling_rate": gamma, "clip": C, "learning_rate": eta,
                  "n_samples": n_public, "relation": rel.value},
        family=ShiftFamily.poisson_sum(T, gamma), observed="last iterate",
        nu=1.0 / (z * math.sqrt(T)),
    )


def _info_statistic(result: FitResult) -> float:
    """The white-box statistic a problem's run left in ``info["audit_statistic"]``."""
    return float(result.info["audit_statistic"])


class _BatchRecorder(RidgedOracle):
    """The wrapped oracle, recording each call's point and whether its batch held row 0
    (the canary's index in both datasets): the white-box view of a run whose batch
    schedule the threat model makes public (``shuffle_fixed``)."""

    def __init__(self, base: GradientOracle) -> None:
        super().__init__(base, 0.0)
        self.points: list[np.ndarray] = []
        self.holds_canary: list[bool] = []

    def clipped_gradient_sum(self, theta: np.ndarray, clip: float | None,
                             rows: np.ndarray | None = None) -> np.ndarray:
        """The wrapped sum; records ``theta`` and whether ``rows`` holds row 0."""
        self.points.append(np.array(theta, dtype=float))
        self.holds_canary.append(rows is None or bool(np.any(np.asarray(rows) == 0)))
        return self.base.clipped_gradient_sum(theta, clip, rows)

    def canary_steps_statistic(self, last: np.ndarray, step: float, noise_sd: float) -> float:
        r""":math:`\sum_t (\theta_{t,0} - \theta_{t+1,0})/(\eta' z C)` over the steps whose
        batch holds the canary, divided by the square root of their number: on the canary
        coordinate (which no other row touches, no ridge, no momentum) a step moves by
        :math:`\eta'` (``step``) times the canary's clipped gradient plus the noise, so the
        sum is :math:`\mathcal N(\pm k C/(zC), k)` given the public schedule."""
        pts = [*self.points, np.asarray(last, dtype=float)]
        moves = [(pts[t][0] - pts[t + 1][0]) / (step * noise_sd)
                 for t in range(len(self.points)) if self.holds_canary[t]]
        return float(np.sum(moves) / math.sqrt(len(moves)))


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
        nu=2.0 * math.sqrt(E * (2 * E - 1)) / z if tree == "honaker" and E <= 2 else None,
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


def _audit_budget(epsilon: float | None, delta: float) -> tuple[float, float]:
    """``(epsilon, delta)`` checked; ``epsilon`` is required (the audit plans its run at it)."""
    if epsilon is None:
        raise ValueError("give epsilon")
    return check_positive("epsilon", epsilon), check_probability("delta", delta)


def _likelihood_ratio_weights(shifts: Any, sds: Any) -> tuple[np.ndarray, float]:
    r"""Weights :math:`w_k = \Delta_k/\sigma_k^2` and :math:`\nu = (\sum_k\Delta_k^2/
    \sigma_k^2)^{1/2}` for independent Gaussian coordinates of sd :math:`\sigma_k` that the
    canary moves by :math:`\Delta_k`: :math:`\sum_k w_ko_k/\nu` is :math:`\mathcal N(m, 1)`
    on D and :math:`\mathcal N(m + \nu, 1)` on D' (the Neyman-Pearson statistic)."""
    shifts = np.asarray(shifts, dtype=np.float64)
    weights = shifts / np.asarray(sds, dtype=np.float64) ** 2
    return weights, float(np.sqrt(np.sum(shifts * weights)))


def ssp_problem(
    *,
    epsilon: float | None = None,
    delta: float = 1e-5,
    n_ordinary: int = 4,
    row_bound: float = 1.0,
    target_bound: float = 1.0,
) -> AuditProblem:
    r"""AdaSSP (:mod:`noisygd.algorithms.ssp`, Wang 2018) planned by
    :class:`~noisygd.solvers.ssp.SSPSolver`, add/remove, audited white-box on its releases.

    The ordinary rows lie on coordinate 1 with :math:`\sum_i x_{i1}^2 \ge B^2`, so
    :math:`A_D = \mathrm{diag}(0, S)`; the canary :math:`x = B e_0` with target :math:`Y`
    moves each release by its whole sensitivity: :math:`\lambda_{\min}` from 0 to
    :math:`B^2` (Weyl's bound attained: :math:`e_0` is the bottom eigenvector and the next
    eigenvalue is at least :math:`B^2`), :math:`A_{00}` by :math:`B^2` (the only entry of
    :math:`xx^\top`) and :math:`b_0` by :math:`BY`. The statistic is the likelihood-ratio
    combination :math:`\sum_k \Delta_k o_k/\sigma_k^2` of the three released coordinates,
    divided by :math:`\mu = (\sum_k \Delta_k^2/\sigma_k^2)^{1/2}`: exactly
    :math:`\mathcal N(m, 1)` against :math:`\mathcal N(m + \mu, 1)`, the accountant's
    :math:`\mu`. The released :math:`\hat\theta` is post-processing of these releases.
    """
    from noisygd.algorithms.ssp import release_statistics, solve_released, sufficient_statistics
    from noisygd.solvers import Budget, PublicFacts
    from noisygd.solvers.ssp import SSPSolver

    eps, dl = _audit_budget(epsilon, delta)
    n_ord = check_positive_int("n_ordinary", n_ordinary)
    B = check_positive("row_bound", row_bound)
    Y = check_positive("target_bound", target_bound)
    rel = Neighbouring.ADD_REMOVE
    obj = SquaredLoss(fit_intercept=False, target_bound=Y)
    X = np.column_stack([np.zeros(n_ord), np.full(n_ord, B)])  # sum of x_1^2 = n B^2 >= B^2
    y = np.zeros(n_ord)
    d0 = ArrayOracle(obj, X, y, row_norm_bound=B)
    d1 = ArrayOracle(obj, *_with_canary(X, y, B, Y), row_norm_bound=B)
    solver = SSPSolver()
    plan = solver.plan(PublicFacts.from_oracle(d1, n_samples=float(n_ord + 1), relation=rel),
                       Budget(eps, dl))
    # the canary's move of each observed coordinate
    weights, mu = _likelihood_ratio_weights([B * B, B * B, B * Y], plan.noise_sds)

    def run(which: int, rng: np.random.Generator) -> FitResult:
        oracle = d1 if which else d0
        A, b = sufficient_statistics(oracle)
        released = release_statistics(A, b, plan, rng)
        theta, lam = solve_released(released, plan)
        observed = np.array([released.lambda_min, released.gram[0, 0], released.moment[0]])
        return FitResult(theta=theta, event=solver.planned_event(plan), n_iter=1,
                         info={"audit_statistic": float(observed @ weights) / mu,
                               "adaptive_ridge": lam})

    return AuditProblem(
        name="ssp", run=run, direction=_E0, relation=rel, gaussian_output=True,
        canary=(f"row B e_0 with target Y (B = {B:g}, Y = {Y:g}): lambda_min, A_00 and b_0 "
                "move by their sensitivities B^2, B^2 and BY; " + _relation_words(rel)),
        settings={"noise_multipliers": list(plan.noise_multipliers), "mu": mu,
                  "row_bound": B, "target_bound": Y, "n_samples": n_ord + 1,
                  "relation": rel.value},
        score=_info_statistic, observed="white-box: the three releases", nu=mu,
    )


def ssp_centred_problem(
    *,
    epsilon: float | None = None,
    delta: float = 1e-5,
    n_ordinary: int = 50,
    row_bound: float = 1.0,
    target_bound: float = 1.0,
) -> AuditProblem:
    r"""Centred AdaSSP (:mod:`noisygd.algorithms.ssp_centred`: an intercept, its statistics
    released apart; what ``DPLinearRegression(method="ssp")`` runs) planned by
    :class:`~noisygd.solvers.ssp.SSPSolver`, add/remove, audited white-box on its six
    releases.

    One feature and the intercept (rows :math:`[x, 1]`, :math:`|x| \le R`). The ordinary
    rows are :math:`x = -R` with target 0, so their centred Gram is 0; the canary
    :math:`x = R` with target :math:`Y` moves :math:`\lambda_{\min}(C)` by
    :math:`\frac{n}{n+1}(2R)^2` (its sensitivity :math:`4R^2` up to :math:`n/(n+1)`),
    :math:`S_{xx}` by :math:`R^2`, :math:`S_x` by :math:`R`, ``n`` by 1, :math:`S_y` by
    :math:`Y` and :math:`S_{xy}` by :math:`RY`: each by its sensitivity. The statistic is
    the likelihood-ratio combination :math:`\sum_k\Delta_ko_k/\sigma_k^2` of the six
    released coordinates over :math:`\nu = (\sum_k\Delta_k^2/\sigma_k^2)^{1/2}`, exactly
    :math:`\mathcal N(m, 1)` against :math:`\mathcal N(m + \nu, 1)` with :math:`\nu`
    within a factor :math:`\sqrt{1 - w_\lambda(1 - (n/(n+1))^2)}` of the plan's :math:`\mu`.
    """
    from noisygd.algorithms.ssp import sufficient_statistics
    from noisygd.algorithms.ssp_centred import (
        CentredSSPPlan,
        centred_statistics,
        release_centred_statistics,
        solve_centred_release,
    )
    from noisygd.solvers import Budget, PublicFacts
    from noisygd.solvers.ssp import SSPSolver

    eps, dl = _audit_budget(epsilon, delta)
    n_ord = check_positive_int("n_ordinary", n_ordinary)
    R = check_positive("row_bound", row_bound)
    Y = check_positive("target_bound", target_bound)
    rel = Neighbouring.ADD_REMOVE
    obj = SquaredLoss(fit_intercept=True, target_bound=Y)
    X, y = np.full((n_ord, 1), -R), np.zeros(n_ord)
    d0 = ArrayOracle(obj, X, y, row_norm_bound=R)
    d1 = ArrayOracle(obj, np.vstack([[R], X]), np.concatenate([[Y], y]), row_norm_bound=R)
    solver = SSPSolver()
    plan = solver.plan(PublicFacts.from_oracle(d1, n_samples=float(n_ord + 1), relation=rel),
                       Budget(eps, dl))
    if not isinstance(plan, CentredSSPPlan):
        raise AssertionError("the intercept's rows must give the centred plan")
    weights, nu = _likelihood_ratio_weights(
        [4.0 * R * R * n_ord / (n_ord + 1), R * R, R, 1.0, Y, R * Y], plan.noise_sds)

    def run(which: int, rng: np.random.Generator) -> FitResult:
        oracle = d1 if which else d0
        A, b = sufficient_statistics(oracle)
        released = release_centred_statistics(centred_statistics(A, b, plan.constant), plan,
                                              rng)
        theta, lam = solve_centred_release(released, plan)
        observed = np.array([released.lambda_min, released.gram[0, 0],
                             released.feature_sum[0], released.count, released.target_sum,
                             released.moment[0]])
        return FitResult(theta=theta, event=solver.planned_event(plan), n_iter=1,
                         info={"audit_statistic": float(observed @ weights) / nu,
                               "adaptive_ridge": lam})

    return AuditProblem(
        name="ssp_centred", run=run, direction=_E0, relation=rel,
        gaussian_output=True,
        canary=(f"row x = R with target Y over rows x = -R with target 0 (R = {R:g}, "
                f"Y = {Y:g}, intercept column 1): the six releases move by their "
                "sensitivities (lambda_min(C) by 4R^2 n/(n+1)); " + _relation_words(rel)),
        settings={"noise_multipliers": list(plan.noise_multipliers), "nu": nu,
                  "row_bound": R, "target_bound": Y, "n_samples": n_ord + 1,
                  "relation": rel.value},
        score=_info_statistic, observed="white-box: the six releases", nu=nu,
    )


class LinearLoss(LogisticLoss):
    r"""The linear loss :math:`\phi(z, y) = 1 - yz`, labels :math:`\pm 1`: every row's
    gradient is the constant :math:`-y\tilde x` (a Dirac gradient canary as a loss).

    :math:`L = \tilde B`; the data term is linear, so any :math:`\beta \ge 0` bounds its
    smoothness and :math:`\tilde B^2/4` (the logistic loss's) is declared, for methods
    whose step rules need a positive one. :math:`F(0) = 1` on every dataset. The data term
    is unbounded below, so without a projection ball no public bound on the optimum's norm
    follows from :math:`F(0)` (:meth:`optimum_norm_bound` is the radius or None). For the
    audits (:mod:`noisygd.audit`), not for fitting: the estimators and ``noisygd fit`` do not
    offer it.
    """

    def loss(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return 1.0 - y * z

    def loss_at_zero_bound(self) -> float:
        """``F(0) = 1`` for every dataset (``1 - y 0``)."""
        return 1.0

    def optimum_norm_bound(self) -> float | None:
        r"""The radius, else None: the logistic loss's :math:`\sqrt{2F_0/\mu}` needs a
        non-negative data term, and :math:`1 - yz` is not."""
        return self.radius

    def residual(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return -np.asarray(y, dtype=float) * np.ones_like(z)

    def compiled_residual(self) -> None:  # type: ignore[override]
        """None: the compiled kernel knows no linear loss."""
        return None


def rrpsgd_problem(
    *,
    epsilon: float | None = None,
    delta: float = 1e-5,
    n_ordinary: int = 1,
) -> AuditProblem:
    r"""RRPSGD (:func:`~noisygd.algorithms.rrpsgd.rrpsgd`, replace-one), one round.

    :class:`LinearLoss` without intercept: the canary :math:`x = e_0` has gradient
    :math:`-y e_0` of norm exactly :math:`L = 1` whatever :math:`\theta` (target
    :math:`y = -1` in ``D``, :math:`+1` in ``D'``); the ordinary rows lie on coordinate 1.
    ``horizon = 1``, so :math:`R = 1` and the event (the tight one,
    ``SampledWithoutReplacement(1, n, Gaussian(sigma_z/L, 2))``) is the same on every run.
    The paper's noise formula is fed the ``epsilon`` argument whose tight event meets
    ``epsilon`` (the paper's own argument, Theorem 4, certifies far more). The released
    iterate's canary coordinate is :meth:`ShiftFamily.symmetric_sum` with ``T = 1`` and
    :math:`\gamma = 1/n`: the accountant's pair is not attained below :math:`\gamma = 1`
    (:func:`noisy_sgd_problem`), so this audit cannot be tight.
    """
    from noisygd.algorithms.rrpsgd import rrpsgd, rrpsgd_tight_event

    eps, dl = _audit_budget(epsilon, delta)
    n = check_positive_int("n_ordinary", n_ordinary) + 1
    rel = Neighbouring.REPLACE_ONE
    z = _calibrate(lambda s: rrpsgd_tight_event(lipschitz=1.0, noise_std=s, n=n, steps=1),
                   eps, dl)
    # the paper's sigma_z = 2 L sqrt(log(3n/delta) log(2/delta)) / epsilon_arg, L = 1
    eps_arg = 2.0 * math.sqrt(math.log(3.0 * n / dl) * math.log(2.0 / dl)) / z
    obj = LinearLoss(fit_intercept=False)
    X = np.column_stack([np.zeros(n - 1), np.full(n - 1, 0.5)])
    y = np.ones(n - 1)
    d0 = ArrayOracle(obj, *_with_canary(X, y, 1.0, -1.0), row_norm_bound=1.0)
    d1 = ArrayOracle(obj, *_with_canary(X, y, 1.0, 1.0), row_norm_bound=1.0)

    def run(which: int, rng: np.random.Generator) -> FitResult:
        return rrpsgd(d1 if which else d0, epsilon=eps_arg, delta=dl, horizon=1,
                      loss_gap_bound=1.0, rng=rng)

    return AuditProblem(
        name="rrpsgd", run=run, direction=_E0, relation=rel, gaussian_output=False,
        canary=("first row e_0 of the linear loss with target +1 in D' and -1 in D: gradient "
                "-e_0 or +e_0 (norm L = 1) at every theta, on a coordinate no other row "
                "touches; " + _relation_words(rel)),
        settings={"noise_multiplier": z, "paper_epsilon_argument": eps_arg, "horizon": 1,
                  "n_samples": n, "sampling_rate": 1.0 / n, "relation": rel.value},
        family=ShiftFamily.symmetric_sum(1, 1.0 / n), observed="released iterate",
        nu=1.0 / z,
    )


def dynamic_problem(
    *,
    epsilon: float | None = None,
    delta: float = 1e-5,
    n_ordinary: int = 4,
    l2: float = 0.1,
    steps: int = 10,
) -> AuditProblem:
    r"""Dynamic budget allocation (``method="dynamic"``, Hong, Wang and Zhou, Algorithm 1),
    planned by its solver, audited white-box.

    The canary problem of :func:`noisy_gd_problem` (squared loss, canary :math:`B e_0` with
    target :math:`10^6`, clipped gradient :math:`-C e_0` at every step) with the ridge
    ``l2`` the planner needs (a Polyak-Lojasiewicz constant) and ``steps`` steps (its
    ``steps`` option: the Lemma 3.1 schedule for that ``T``; on 5 rows the planner's own
    ``T`` would be 1). The auditor sees every iterate, so it recovers each noisy mean gradient
    :math:`(\theta_t - \theta_{t+1})/\eta - \lambda\theta_t` and, knowing ``D``,
    :math:`x_t = \sigma_t C\xi_t` on ``D`` and :math:`c_t + \sigma_t C\xi_t` on ``D'``
    (in sum units). The likelihood-ratio statistic
    :math:`S = \sum_t \langle x_t, c_t\rangle/(\sigma_tC)^2 / (\sum_t\sigma_t^{-2})^{1/2}`
    is exactly :math:`\mathcal N(0, 1)` against :math:`\mathcal N(\mu, 1)`,
    :math:`\mu = (\sum_t\sigma_t^{-2})^{1/2}`: the event's.
    """
    from noisygd.audit.whitebox import StepRecorder, at_clip
    from noisygd.solvers import SOLVERS, Budget, PublicFacts

    eps, dl = _audit_budget(epsilon, delta)
    n_ord = check_positive_int("n_ordinary", n_ordinary)
    rel = Neighbouring.ADD_REMOVE
    d0, d1 = _oracles(SquaredLoss(fit_intercept=False, l2=check_positive("l2", l2)), rel,
                      n_ord, 1.0, CANARY_TARGET)
    n = float(n_ord + 1)
    solver = SOLVERS["dynamic"]()
    plan = solver.plan(PublicFacts.from_oracle(
        d1, n_samples=n, relation=rel, clip=1.0,
        options={"loss_gap": 1.0, "steps": check_positive_int("steps", steps)}),
        Budget(eps, dl))
    canary_x = np.array([[1.0, 0.0]])

    def run(which: int, rng: np.random.Generator) -> FitResult:
        rec = StepRecorder(d1 if which else d0, canary_x, np.array([CANARY_TARGET]),
                            0 if which else None)
        res = solver.run(plan, rec, rng)
        if res.info.get("momentum") is not None:
            raise ValueError("the white-box dynamic audit reads Algorithm 1 (no momentum)")
        eta, C, N = float(res.info["learning_rate"]), float(res.info["clip"]), n
        sig = np.asarray(plan.sigmas, dtype=float)[:len(rec.records)]
        thetas = [r[0] for r in rec.records] + [np.asarray(res.theta, dtype=float)]
        total = 0.0
        for t, (theta, ordinary, c, clip) in enumerate(rec.records):
            at_clip(c, C, clip, t)
            x = N * ((theta - thetas[t + 1]) / eta - d0.l2 * theta) - ordinary
            total += float(x @ c) / (sig[t] * C) ** 2
        res.info["audit_statistic"] = total / math.sqrt(float(np.sum(sig ** -2.0)))
        return res

    sig = np.asarray(plan.sigmas, dtype=float)
    return AuditProblem(
        name="dynamic", run=run, direction=_E0, relation=rel, gaussian_output=True,
        canary=("row B e_0 (target 1e6: clipped gradient -C e_0 at every step), on a "
                "coordinate no other row touches; " + _relation_words(rel)),
        settings={"sigmas": [float(x) for x in sig], "steps": int(sig.size),
                  "learning_rate": float(plan.learning_rate), "l2": l2, "n_samples": n,
                  "relation": rel.value},
        score=_info_statistic, observed="white-box: every noisy step",
        nu=float(np.sqrt(np.sum(sig ** -2.0))),
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
    sharp: float | None = None,
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
    audit is not reproducible. ``sharp`` runs the sharp clip after the first step
    (:attr:`~noisygd.algorithms.newton.NewtonPlan.sharp`): the canary's gradient is clipped
    at whatever clip a step uses, so every release stays at its worst case.

    Returns
    -------
    AuditProblem
    """
    rel = Neighbouring(relation)
    T = check_positive_int("steps", steps)
    C = check_positive("clip", clip)
    secure = check_bool("secure", secure)
    mu = _gdp_mu(epsilon, delta, mu)
    B = 1.0
    n_ordinary = check_positive_int("n_ordinary", n_ordinary)
    d0, d1 = _oracles(SquaredLoss(fit_intercept=False), rel, n_ordinary, B, CANARY_TARGET)
    n_public = float(n_ordinary + 1)
    plan = plan_newton(mu, relation=rel, n_params=2, n_samples=n_public, n_step=n_public,
                       clip=C, curvature_clip=B * B, steps=T, constant_hessian=True,
                       eigenvalue_rule=eigenvalue_rule, secure=secure)
    if sharp is not None:
        plan = replace(plan, sharp=sharp)
    source = None
    if secure:
        from noisygd.mechanisms.secure import SecureRandom

        source = SecureRandom()

    def run(which: int, rng: np.random.Generator) -> FitResult:
        return newton(d1 if which else d0, plan, rng if source is None else source)

    return AuditProblem(
        name="newton" if sharp is None else "newton_sharp", run=run, direction=_E0,
        relation=rel, gaussian_output=False,
        canary=("row B e_0 (squared loss, target 1e6: clipped gradient -C e_0 at every "
                "step; curvature term B^2 e_0 e_0^T at the bound), on a coordinate no other "
                "row touches; " + _relation_words(rel)),
        settings={"mu": mu, "steps": T, "clip": C, "curvature_clip": B * B,
                  "n_samples": n_public, "relation": rel.value,
                  "eigenvalue_rule": eigenvalue_rule, **({"secure": True} if secure else {}),
                  **({"sharp": sharp} if sharp is not None else {})},
    )


def newton_multinomial_problem(
    *,
    epsilon: float | None = None,
    delta: float = 1e-5,
    mu: float | None = None,
    steps: int = 3,
    clip: float = 0.5,
    curvature_clip: float = 0.4,
    relation: Neighbouring | str = Neighbouring.ADD_REMOVE,
    n_ordinary: int = 4,
    n_classes: int = 3,
) -> AuditProblem:
    r"""Private Newton on the multinomial (softmax) loss (docs/newton.md, "Multinomial
    fits"): the softmax curvature sums of :class:`~noisygd.oracles.array.ArrayOracle`.

    :class:`~noisygd.objectives.multinomial.MultinomialLogisticLoss` with ``K`` classes, no
    intercept, two features: the rows of ``D`` lie on coordinate 1 (:func:`_ordinary_rows`,
    classes ``1..K-1``), the canary :math:`x = Be_0` of class 0 on coordinate 0, so only
    the canary touches the column :math:`\Theta_{\cdot 0}` and its margins. At
    :math:`\Theta = 0` its gradient :math:`(\pi - e_0)\otimes x` has norm
    :math:`\sqrt{1 - 1/K}\,B` (0.82 for ``K = 3``), above the clip ``C = 0.5``, and its
    curvature term :math:`(\mathrm{diag}\,\pi - \pi\pi^\top)\otimes xx^\top` has
    Frobenius norm :math:`\sqrt{(K-1)/K^2}\,B^2` (0.47), above ``C_H = 0.4``: both releases
    differ by their sensitivities while :math:`\pi_0` stays below about 0.6 (the noise moves
    it), so this is a soundness check, not the worst case of every step. Under replace-one
    the canary's label is 1 in ``D`` (its curvature is label-free, so the curvature sums are
    equal). The statistic :math:`\Theta_{00}` is not Gaussian (Clopper-Pearson).

    Returns
    -------
    AuditProblem
    """
    from noisygd.objectives.multinomial import MultinomialLogisticLoss

    rel = Neighbouring(relation)
    T = check_positive_int("steps", steps)
    C = check_positive("clip", clip)
    CH = check_positive("curvature_clip", curvature_clip)
    K = check_positive_int("n_classes", n_classes, minimum=3)
    mu = _gdp_mu(epsilon, delta, mu)
    B = 1.0
    n = check_positive_int("n_ordinary", n_ordinary)
    X, _ = _ordinary_rows(n)
    y = 1 + np.arange(n) % (K - 1)
    objective = MultinomialLogisticLoss(K, fit_intercept=False)
    canary = np.vstack([[B, 0.0], X])
    d1 = ArrayOracle(objective, canary, np.concatenate([[0], y]), row_norm_bound=B)
    d0 = (ArrayOracle(objective, X, y, row_norm_bound=B) if rel is Neighbouring.ADD_REMOVE
          else ArrayOracle(objective, canary, np.concatenate([[1], y]), row_norm_bound=B))
    n_public = float(n + 1)
    plan = plan_newton(mu, relation=rel, n_params=d1.n_params, n_samples=n_public,
                       n_step=n_public, clip=C, curvature_clip=CH, steps=T)

    def run(which: int, rng: np.random.Generator) -> FitResult:
        return newton(d1 if which else d0, plan, rng)

    direction = np.zeros(d1.n_params)
    direction[0] = 1.0  # Theta[0, 0]: class 0's weight on the canary's coordinate
    return AuditProblem(
        name="newton_multinomial", run=run, direction=direction, relation=rel,
        gaussian_output=False,
        canary=(f"row B e_0 of class 0 (softmax loss, K = {K}; rows of D on coordinate 1, "
                f"classes 1..{K - 1}): gradient above the clip C and curvature term above "
                "C_H at the start; " + (_relation_words(rel) if rel is Neighbouring.ADD_REMOVE
                                        else "D and D' differ in the canary's class (1, 0)")),
        settings={"mu": mu, "steps": T, "clip": C, "curvature_clip": CH,
                  "n_samples": n_public, "n_classes": K, "relation": rel.value},
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


class _Registered(Mapping[str, Callable[..., AuditProblem]]):
    """Name -> builder of :data:`noisygd.audit.registry.AUDITS` (fixed options applied),
    each builder loaded on first use (the estimator audits' module imports this one)."""

    def __getitem__(self, name: str) -> Callable[..., AuditProblem]:
        from functools import partial

        from noisygd.audit.registry import AUDITS

        entry = AUDITS[name]
        return partial(entry.load(), **entry.options) if entry.options else entry.load()

    def __iter__(self) -> Iterator[str]:
        from noisygd.audit.registry import AUDITS

        return iter(AUDITS)

    def __len__(self) -> int:
        from noisygd.audit.registry import AUDITS

        return len(AUDITS)


#: Method name -> problem builder (the names of ``noisygd audit --method``: the entries of
#: :data:`noisygd.audit.registry.AUDITS`, their fixed options applied).
METHODS: Mapping[str, Callable[..., AuditProblem]] = _Registered()


def make_problem(method: str, *, epsilon: float, delta: float = 1e-5,
                 **options: Any) -> AuditProblem:
    """The built-in problem of ``method`` (a key of :data:`METHODS`) at ``(epsilon, delta)``."""
    method = check_choice("method", method, tuple(METHODS))
    return METHODS[method](epsilon=epsilon, delta=delta, **options)
