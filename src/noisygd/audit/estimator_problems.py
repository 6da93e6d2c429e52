r"""Audits of the estimators' defaults, white-box: every noisy step of the run is observed.

``DPLinearRegression()``, binary ``DPLogisticRegression()`` and
``DPLogisticRegression(multiclass="multinomial")`` are run end to end (their own
conditioning, private centre where the default releases one, private count, private
residual scale, planned ridge, horizon, momentum and averaging), with ``method=`` an instance of
:class:`WhiteBoxNoisyGD`: the library's :class:`~noisygd.solvers.noisy_gd.NoisyGDSolver`
whose run reads the rows through a recording oracle (a ridge-free
:class:`~noisygd.solvers.ridge.RidgedOracle`, every call delegated unchanged). The
recorder gives the auditor what the white-box threat model grants: every point
:math:`p_t` at which a noisy gradient is taken, and with the released last iterate the
noisy gradient itself, :math:`\tilde g_t = (p_t - \theta_{t+1})/\eta`
(:math:`\theta_{t+1} = (p_{t+1} + m\theta_t)/(1 + m)` under Nesterov momentum ``m``). The
auditor knows ``D`` and the canary, so it subtracts the ridge and the ordinary rows' clipped
sum, :math:`x_t = \tilde g_t - G_D(p_t) - n\lambda p_t`, which is :math:`N_t` on ``D`` and
:math:`c_t + N_t` on ``D'``, :math:`c_t` the canary's clipped gradient at :math:`p_t`,
:math:`N_t \sim \mathcal N(0, (zC)^2 I)`. The statistic

.. math:: S = \frac1{\sqrt T}\sum_{t=1}^T \frac{\langle x_t, c_t\rangle}{zC\,\lVert c_t\rVert}

is a sum of martingale increments of conditional law :math:`\mathcal N(0, 1)` on ``D`` and
:math:`\mathcal N(\lVert c_t\rVert/(zC), 1)` on ``D'``; when the canary is at the clip at
every step, :math:`\lVert c_t\rVert = C`, it is exactly :math:`\mathcal N(0, 1)` against
:math:`\mathcal N(\sqrt T/z, 1)`: the run's :math:`\mu`, whatever the trajectory (ridge,
momentum, averaging and the plan's dependence on the earlier releases included). A run where
the canary falls below the clip at some step raises (the construction would no longer be the
worst case), so every audited run is exact.

What is observed, and what is not: the run (the dominant part of the budget) is observed
white-box; the private count (under add/remove without ``n_samples_public``, 1% of
:math:`\mu^2`) and, for least squares, the residual-scale release (10% of :math:`\mu^2`) are
not, nor is the private centre (10%, :func:`logistic_problem`,
:func:`centred_linear_regression_problem`), so the best this audit can show is the
epsilon of the run's :math:`\mu` alone, below the accountant's epsilon of the whole fit
(about 0.94 of it at epsilon 2 for least squares without the centre, 0.85 with it and the
feature range's 5%). The
canary is a row of D': its count, centre and scale-sum contributions are at their bounds,
unobserved.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from noisygd._checks import check_positive, check_positive_int, check_probability
from noisygd.accounting.events import Neighbouring
from noisygd.algorithms.base import FitResult
from noisygd.audit.problems import AuditProblem, _info_statistic
from noisygd.audit.whitebox import AT_CLIP_RTOL, StepRecorder, at_clip
from noisygd.mechanisms.feature_range import FEATURE_RANGE_SHARE
from noisygd.oracles.array import ArrayOracle
from noisygd.oracles.base import GradientOracle
from noisygd.solvers.noisy_gd import NoisyGDSolver

__all__ = ["AT_CLIP_RTOL", "WhiteBoxNoisyGD", "centred_linear_regression_problem",
           "linear_regression_problem", "logistic_problem", "multinomial_problem", "run_mu"]

class WhiteBoxNoisyGD(NoisyGDSolver):
    """:class:`~noisygd.solvers.noisy_gd.NoisyGDSolver` whose run is observed (module doc).

    Plans and events are the parent's; :meth:`run` wraps the oracle in a recorder and,
    after the parent's run, stores the white-box statistic ``S`` in
    ``result.info["audit_statistic"]``.

    Parameters
    ----------
    canary_x : ndarray of shape (d,)
        The canary's row, as given to the estimator.
    canary_target : float
        Its target as the oracle holds it (after the estimator's clipping and centring;
        for a classifier, its class index).
    in_data : bool
        Whether the canary is a row of the fitted data (``D'``; then it is row 0).
    """

    def __init__(self, canary_x: np.ndarray, canary_target: float, in_data: bool) -> None:
        self.canary_x = np.asarray(canary_x, dtype=float).reshape(1, -1)
        self.canary_target = canary_target
        self.in_data = bool(in_data)
        self.last_statistic: float | None = None
        #: :math:`\sqrt T/z` of the last run: the shift of ``S`` between ``D`` and ``D'``.
        self.last_mu: float | None = None

    def run(self, plan: Any, oracle: GradientOracle, rng: np.random.Generator) -> FitResult:
        """The parent's run on a recording oracle; then the statistic (module doc)."""
        if not isinstance(oracle, ArrayOracle):
            raise TypeError("the white-box audit reads an ArrayOracle")
        f = getattr(oracle.objective, "feature_scale", None)  # the range's g, composed
        # about a centre the recorder serves the canary projected as the oracle serves its
        # rows (whitebox._as_served); without one the oracle would project it, the recorder not
        if getattr(oracle.objective, "centre", None) is None and float(np.linalg.norm(
                self.canary_x if f is None else f * self.canary_x)) > (
                oracle.row_norm_bound * (1 + 1e-12)):
            raise ValueError("the canary must lie within the oracle's row bound (in the "
                             "fit's coordinates)")
        rec = StepRecorder(oracle, self.canary_x, np.asarray([self.canary_target]),
                            0 if self.in_data else None)
        result = super().run(plan, rec, rng)
        l2 = float((result.info.get("plan") or {}).get("l2", oracle.l2))
        self.last_statistic = _white_box_statistic(rec.records, result.info, l2)
        self.last_mu = math.sqrt(len(rec.records)) / float(result.info["noise_multiplier"])
        result.info["audit_statistic"] = self.last_statistic
        return result


def _white_box_statistic(records: list[tuple[np.ndarray, np.ndarray, np.ndarray, float]],
                         info: dict[str, Any], l2: float) -> float:
    """``S`` of the module doc from the recorded points and the run's public ``info``."""
    if info.get("schedule") != "constant":
        raise ValueError("the white-box audit needs the constant step size")
    eta = float(info["learning_rate"])
    m = float(info.get("momentum", 0.0))
    C = float(info["clip"])
    sd = float(info["noise_multiplier"]) * C
    reg = float(info["n_samples"]) * l2
    points = [r[0] for r in records]
    T = len(points)
    thetas = [points[0]]  # theta_1 = p_1 (no velocity yet)
    for t in range(1, T):
        thetas.append((points[t] + m * thetas[t - 1]) / (1.0 + m))
    thetas.append(np.asarray(info["last_iterate"], dtype=float))
    total = 0.0
    for t, (p, ordinary, c, clip) in enumerate(records):
        norm = at_clip(c, C, clip, t)
        x = (p - thetas[t + 1]) / eta - ordinary - reg * p
        total += float(x @ c) / (sd * norm)
    return total / math.sqrt(T)


def run_mu(epsilon: float, delta: float, scale_share: float = 0.0,
           conditioning_share: float = 0.0, range_share: float = 0.0) -> float:
    r"""The run's :math:`\mu` in a default fit: :math:`\mu\sqrt{1 - f - f_k - f_c - f_r}`,
    with :math:`\mu` the budget's Gaussian-DP parameter, :math:`f` the residual scale's
    share, :math:`f_k` the private conditioning's (the centre release), :math:`f_c` the
    private count's (``fit_private``'s ``count_budget_fraction``) and :math:`f_r` the private
    feature range's."""
    import inspect

    from noisygd.accounting.calibration import calibrate_mu
    from noisygd.training import fit_private

    f_c = inspect.signature(fit_private).parameters["count_budget_fraction"].default
    return calibrate_mu(epsilon, delta) * math.sqrt(
        1.0 - scale_share - conditioning_share - f_c - range_share)


def _estimator_problem(name: str, make: Any, X: np.ndarray, y: np.ndarray,
                       canary_x: np.ndarray, canary_y: Any, canary_target: float,
                       words: str, settings: dict[str, Any], nu: float,
                       unobserved: str) -> AuditProblem:
    """The two datasets (``D`` the rows, ``D'`` the canary first then the rows), add/remove."""
    X1 = np.vstack([canary_x[None, :], X])
    y1 = np.concatenate([[canary_y], y])

    def run(which: int, rng: np.random.Generator) -> FitResult:
        solver = WhiteBoxNoisyGD(canary_x, canary_target, bool(which))
        est = make(solver, rng).fit(X1 if which else X, y1 if which else y)
        coef = np.concatenate([np.ravel(est.coef_), np.ravel(est.intercept_)])
        return FitResult(theta=coef, event=est.privacy_.event, n_iter=int(np.max(est.n_iter_)),
                         info={"audit_statistic": solver.last_statistic,
                               "mu_run": solver.last_mu,
                               "centre": est.conditioning_.get("centre"),
                               "row_norm_bound": est.conditioning_.get("row_norm_bound"),
                               "feature_scale": est.conditioning_.get("feature_scale")})

    return AuditProblem(
        name=name, run=run, direction=np.zeros(1), relation=Neighbouring.ADD_REMOVE,
        gaussian_output=True, canary=words, settings=settings, score=_info_statistic,
        event_varies=True, nu=nu,
        observed=f"white-box: every noisy step of the run ({unobserved} unobserved)")


def linear_regression_problem(*, epsilon: float, delta: float = 1e-5, n_ordinary: int = 2000
                              ) -> AuditProblem:
    r"""``DPLinearRegression(epsilon, delta)`` with every default but the private centre
    (``conditioning_share=0``) and the target range (``target_bound=1`` declared and kept
    as it is, ``target_range_share=0``: the canary's target sits at its end; the private
    target range, which would narrow it, a Gaussian histogram of
    sensitivity 1 tested by brute force in ``tests/test_target_range.py``, is not audited
    here), one feature.

    ``D``: ``n_ordinary`` rows :math:`x = R = 1`, :math:`y = 0` (the range's midpoint: their
    targets' variance is 0, so the released residual scale makes the clip small,
    :math:`C \approx k h\sqrt{\hat V}\lVert x'\rVert`). ``D'``: the canary, the same
    :math:`x` with :math:`y = h = 1`, first. The ordinary rows hold the prediction at that
    :math:`x` near 0, so the canary's residual stays near :math:`h`, far above
    :math:`k h\sqrt{\hat V}`: its clipped gradient is at the clip at every step (checked on
    every run, module doc; the white-box statistic needs no orthogonality).
    """
    from noisygd.estimators import DEFAULT_SCALE_SHARE, DPLinearRegression

    eps = check_positive("epsilon", epsilon)
    dl = check_probability("delta", delta)
    n = check_positive_int("n_ordinary", n_ordinary)

    def make(solver: WhiteBoxNoisyGD, rng: np.random.Generator) -> Any:
        # conditioning_share=0: every row sits at x = R, so a centre released at their mean
        # would put the canary at the centre (no worst case); the centre's release (a
        # Gaussian composed like the scale's) is not audited by this problem
        return DPLinearRegression(eps, dl, method=solver, random_state=rng,
                                  conditioning_share=0, target_bound=1.0,
                                  target_range_share=0)

    return _estimator_problem(
        "linear_regression", make, np.ones((n, 1)), np.zeros(n), np.array([1.0]), 1.0, 1.0,
        "row x = R = 1 with target h = 1 (rows of D: the same x, y = 0); its clipped gradient is "
        "at the clip at every step; D' = D plus the canary (add/remove)",
        {"estimator": "DPLinearRegression()", "n_samples": n, "n_features": 1,
         "relation": "add_remove"},
        run_mu(eps, dl, DEFAULT_SCALE_SHARE),
        "count and scale releases")


def multinomial_problem(*, epsilon: float, delta: float = 1e-5, n_ordinary: int = 1000,
                        n_classes: int = 3) -> AuditProblem:
    r"""``DPLogisticRegression(epsilon, delta, multiclass="multinomial")`` with every
    default, the private conditioning included (``conditioning_share="auto"``), one feature.

    The design of :func:`logistic_problem` with ``K`` classes. ``D``: ``n_ordinary`` rows
    spread evenly over the classes ``1..K-1``, 80% at :math:`x = -R = -1` and 20% at
    :math:`x = +R`; ``D'``: the canary :math:`x = +R` of class 0, first. The released centre
    is about :math:`-0.6R` and the oracle serves the canary at the edge of the ball of the
    released radius about it, with the row scale :math:`\sqrt{\hat U_c}` about 0.57, so the
    clip :math:`C = \sqrt{1 - 1/K}\,R\sqrt{2\hat U_c}` is below the canary's gradient norm
    :math:`\lVert\pi - e_0\rVert\lVert\tilde x\rVert` already at :math:`\Theta = 0`
    (:math:`\sqrt{1 - 1/K}\sqrt{R^2 + s^2}`); the rows of ``D`` at its point then move
    :math:`\pi` there toward the classes ``1..K-1``, which only raises
    :math:`\lVert\pi - e_0\rVert` (class 0 has no row of ``D``, and one canary cannot
    pull :math:`\pi_0` back up). So the canary's clipped gradient, a ``K x p`` matrix, is
    at the clip at every step (checked on every run). The feature range, the conditioning
    and the count are released unobserved: the statistic sees the run only.
    """
    from noisygd.estimators import CONDITIONING_SHARE, DPLogisticRegression

    eps = check_positive("epsilon", epsilon)
    dl = check_probability("delta", delta)
    n = check_positive_int("n_ordinary", n_ordinary, minimum=100)
    K = check_positive_int("n_classes", n_classes, minimum=3)
    v = CENTRED_ROW  # served at +-(1 - 2^-21) R by the released range (above)
    X = -v * np.ones((n, 1))
    X[: n // 5] = v  # 20% of D at the canary's point (docstring)
    y = 1 + np.arange(n) % (K - 1)

    def make(solver: WhiteBoxNoisyGD, rng: np.random.Generator) -> Any:
        return DPLogisticRegression(eps, dl, multiclass="multinomial", method=solver,
                                    classes=list(range(K)), random_state=rng)

    return _estimator_problem(
        "multinomial", make, X, y, np.array([v]), 0, 0.0,
        f"{_CENTRED_CANARY}; class 0 (rows of D: classes 1..{K - 1}, 20% of them at +R, "
        "which move the canary's prediction away from class 0); its K x p clipped gradient "
        "is at the clip at every step; D' = D plus the canary (add/remove)",
        {"estimator": "DPLogisticRegression(multiclass='multinomial')", "n_samples": n,
         "n_classes": K, "n_features": 1, "relation": "add_remove",
         "conditioning": "private feature range, centre and scale (default)"},
        run_mu(eps, dl, 0.0, CONDITIONING_SHARE, FEATURE_RANGE_SHARE),
        "feature range, conditioning and count releases")


#: The centred audits' rows and canary sit at :math:`\pm v`, :math:`v = 2^{41}(1 - 2^{-21})`,
#: in the top bin :math:`[2^{40}, 2^{41})` of the private feature range's grid
#: (:data:`~noisygd.mechanisms.feature_range.EXPONENTS`): the default's release
#: (:mod:`noisygd.mechanisms.feature_range`) finds it occupied by the rows of D and, no bin
#: lying above it, releases the magnitude :math:`m = 2^{41}` on every run (a bin the noise
#: occupies falsely, at most 5% of releases, lies below and changes nothing); with one
#: nonzero feature per row the scale is :math:`g = R/m`, so the fit serves the rows at
#: :math:`\pm g v = \pm(1 - 2^{-21})R`: the geometry of the design at :math:`\pm R`, with
#: every default release made. (Rows just below 2, in the bin :math:`[1, 2)`, failed the
#: at-the-clip check on the runs where a higher bin passed the threshold.)
CENTRED_ROW = 2.0 ** 41 * (1.0 - 2.0 ** -21)

#: What the centred audits' canary and rows make of the private centre (their docstrings).
_CENTRED_CANARY = (
    "row x = +R = 1, most rows of D at x = -R: the private centre c is released from D' with "
    "the canary in it; the canary, projected onto the ball of the released radius about c, "
    "sits at its edge, its clipped gradient at the clip at every step")


_CENTRED_CANARY_BOTH = (
    "row x = +R = 1, y = +1; rows of D half at x = -R (y = 0), half at x = +R (y = -1): the "
    "private centre c (about 0) is released from D' with the canary in it; the canary sits "
    "at distance R from it, where the fit predicts about -1, so its residual stays near 2 "
    "and its clipped gradient at the clip at every step, however far the run converges")


def centred_linear_regression_problem(*, epsilon: float, delta: float = 1e-5,
                                      n_ordinary: int = 2000) -> AuditProblem:
    r"""``DPLinearRegression(epsilon, delta)`` with every default, the private centre
    included (``conditioning_share="auto"``), but the target range (``target_bound=1``
    declared and kept, ``target_range_share=0``, as in :func:`linear_regression_problem`),
    one feature.

    ``D``: ``n_ordinary`` rows, half at :math:`x = -R = -1` with :math:`y = 0`, half at
    :math:`x = +R` with :math:`y = -h = -1`; ``D'``: the canary :math:`x = +R` with
    :math:`y = h = 1`, first. The centre released before the fit is about 0, every row at
    distance :math:`R` from it. The rows of ``D`` at :math:`+R` hold the prediction there
    near :math:`-h`, so the canary's residual stays near :math:`2h`, far above the
    residual-scale clip, however far the run converges (the earlier design, every row of
    ``D`` at :math:`-R`, relied on a run too slow to fit the canary: with the regressor's
    released smoothness the run fits it, and its gradient left the clip): its clipped
    gradient is at the clip at every step (checked on every run). The centre, the residual scale and
    the count are released unobserved: the statistic sees the run only.
    """
    from noisygd.estimators import (
        CONDITIONING_SHARE,
        DEFAULT_SCALE_SHARE,
        DPLinearRegression,
    )

    eps = check_positive("epsilon", epsilon)
    dl = check_probability("delta", delta)
    n = check_positive_int("n_ordinary", n_ordinary)

    def make(solver: WhiteBoxNoisyGD, rng: np.random.Generator) -> Any:
        return DPLinearRegression(eps, dl, method=solver, random_state=rng, target_bound=1.0,
                                  target_range_share=0)

    half = n // 2
    v = CENTRED_ROW  # served at +-(1 - 2^-21) R by the released range (above)
    X = np.concatenate([-v * np.ones(n - half), v * np.ones(half)])[:, None]
    y = np.concatenate([np.zeros(n - half), -np.ones(half)])
    return _estimator_problem(
        "linear_regression_centre", make, X, y, np.array([v]), 1.0,
        1.0, f"{_CENTRED_CANARY_BOTH}; target h = 1 (rows of D: y = 0 at -R, y = -1 at +R); "
        "D' = D plus the canary (add/remove)",
        {"estimator": "DPLinearRegression()", "n_samples": n, "n_features": 1,
         "relation": "add_remove",
         "conditioning": "private feature range and centre (default)"},
        run_mu(eps, dl, DEFAULT_SCALE_SHARE, CONDITIONING_SHARE, FEATURE_RANGE_SHARE),
        "feature range, centre, count and scale releases")


def logistic_problem(*, epsilon: float, delta: float = 1e-5, n_ordinary: int = 2000
                     ) -> AuditProblem:
    r"""``DPLogisticRegression(epsilon, delta)``, binary, with every default, the private
    conditioning included (``conditioning_share="auto"``), one feature.

    ``D``: ``n_ordinary`` rows of class 1, 80% at :math:`x = -R = -1` and 20% at
    :math:`x = +R`; ``D'``: the canary :math:`x = +R` of class 0, first. The released
    centre is about :math:`-0.6R`, so the oracle serves the canary, and the rows of ``D`` at
    :math:`+R`, projected onto the ball of the released radius about it (the refined
    conditioning's: every row within :math:`1.6R` of the centre, so the ball of radius
    :math:`R`); the released row scale :math:`\sqrt{\hat U_c}` is about 0.57, so the clip
    :math:`C = R\sqrt{2\hat U_c}` asks for a predicted probability of class 1 above about
    0.7 at the canary. The rows of ``D`` at the canary's point hold that probability near 1
    (with every row of ``D`` at :math:`-R` the weight is free and the canary, pulling it
    alone, fits itself: its gradient fell below the clip in 4 of 50 runs at epsilon 2; with
    1% at :math:`+R` the refined conditioning's radius, read off the 99% near the centre,
    served the canary at a small distance with a row scale near 0.5, and the canary fell
    below the clip in 1 of 30 runs at epsilon 8 with 1 000 rows; with 20%, 0 of 120 at
    epsilon 0.5 with 4 000 rows, 1 and 2 000, 2 and 500, and 0 of 200 at 2 and 8 with
    1 000). So the canary's clipped gradient, opposite to those rows', is at the clip at
    every step
    (checked on every run). The conditioning and the count are released unobserved: the
    statistic sees the run only.
    """
    from noisygd.estimators import (
        CONDITIONING_SHARE,
        DPLogisticRegression,
    )

    eps = check_positive("epsilon", epsilon)
    dl = check_probability("delta", delta)
    n = check_positive_int("n_ordinary", n_ordinary, minimum=100)
    v = CENTRED_ROW  # served at +-(1 - 2^-21) R by the released range (above)
    X = -v * np.ones((n, 1))
    X[: n // 5] = v  # 20% of D at the canary's point (docstring)

    def make(solver: WhiteBoxNoisyGD, rng: np.random.Generator) -> Any:
        return DPLogisticRegression(eps, dl, method=solver, classes=[0, 1], random_state=rng)

    return _estimator_problem(
        "logistic", make, X, np.ones(n, dtype=int), np.array([v]), 0, 0.0,
        f"{_CENTRED_CANARY}; class 0 (rows of D: class 1, 20% of them at +R, which pin "
        "the canary's prediction); D' = D plus the canary (add/remove)",
        {"estimator": "DPLogisticRegression()", "n_samples": n, "n_features": 1,
         "relation": "add_remove",
         "conditioning": "private feature range, centre and scale (default)"},
        run_mu(eps, dl, 0.0, CONDITIONING_SHARE, FEATURE_RANGE_SHARE),
        "feature range, conditioning and count releases")


