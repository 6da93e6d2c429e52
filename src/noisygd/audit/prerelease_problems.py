r"""Audits of the estimators' pre-releases, white-box: the first histogram's noisy counts.

Before its run, a default ``DPLinearRegression(epsilon, delta)`` (no ``target_range`` nor
``target_bound`` declared) releases the **private target range**
(:mod:`noisygd.mechanisms.target_range`), and the estimators release the **private feature
range** (:mod:`noisygd.mechanisms.feature_range`); both open with a Gaussian histogram, run
by :func:`noisygd.training.fit_private` as a :class:`~noisygd.training.PreRelease` stage
(``"target_range"``, ``"feature_range"``). The audits here fit the estimator itself, with
every default, and observe that histogram's noisy vector through
:func:`noisygd.training.observe_pre_releases`: a copy handed to the auditor after the noise
is drawn and before the post-processing, which the fit never reads back (the audited fit
is the default fit, bit for bit: tested).

**Statistic.** The histogram ``h(D)`` plus :math:`\mathcal N(0, \sigma^2 I)` noise, ``sigma``
the stage's ``noise_std``. The canary row adds a known 0/1 vector ``d`` to it (its bins; for
the feature range, the row count too): :math:`h(D') = h(D) + d`. The auditor knows ``D``, so

.. math:: S = \frac{\langle \tilde h - h(D), d\rangle}{\sigma\lVert d\rVert}

is exactly :math:`\mathcal N(0, 1)` on ``D`` and :math:`\mathcal N(\lVert d\rVert/\sigma, 1)`
on ``D'`` (the likelihood-ratio statistic of the pair). The canary's bins are empty in
``D`` (checked), so :math:`h(D)` is 0 there and ``n`` in the row count; ``d`` is read off
the release's public layout (:func:`~noisygd.mechanisms.target_range.target_bin_index`,
:func:`~noisygd.mechanisms.feature_range.range_statistic` of the canary's row alone).

**Claim.** The release's own event (the stage's ``event``, what the ledger records for it
and ``fit_info_["pre_releases"]`` reports: checked on every run), not the whole fit's: its
Gaussian-DP :math:`\mu = \Delta/(z\Delta) = 1/z` is :math:`\sqrt{r_0 f}\,\mu_{\rm fit}`
(the first round's fraction :math:`r_0` of the declared share :math:`f`). With the
sensitivity reached, :math:`\lVert d\rVert/\sigma` equals it, so the audit is tight: a
correct implementation's lower bound approaches the claim with the runs, and one that adds
less noise than its event states is caught (``tests/audit/test_audit_prereleases.py``).

**Worst case.** Each release is the Gaussian mechanism on a vector a row moves by at most
its L2 sensitivity (1 for the target histogram, :math:`\sqrt{p + 1}` for the feature
histogram and its row count under add/remove); every pair whose difference has that norm has
the same trade-off curve :math:`G_{1/z}`, the event's. The canary reaches it: a target is
counted in exactly one bin, a row with every feature nonzero adds one count per feature and
one row. Its bins lie far from ``D``'s (a target of 1 000 against 0.75, a feature of
:math:`2^{20}` against 1) only so that ``D``'s counts there are known to be 0.

**Not observed.** The later rounds: the target range's refined rounds (a mean and a
histogram about it, twice: 0.4 of its share) and the feature range's column-offset rounds
(0.2 of its share), nor anything else of the fit (the conditioning, the count, the run,
audited by :mod:`noisygd.audit.estimator_problems`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from noisygd._checks import check_positive, check_positive_int, check_probability
from noisygd.accounting.events import Neighbouring
from noisygd.algorithms.base import FitResult
from noisygd.audit.problems import AuditProblem, _info_statistic

__all__ = ["feature_range_problem", "observed_release", "target_range_problem"]


def observed_release(fit: Callable[[], Any], name: str) -> tuple[Any, Any, np.ndarray]:
    """``(estimator, stage, noisy)``: ``fit()`` (an estimator's fit) run under
    :func:`~noisygd.training.observe_pre_releases`, with the first :class:`~noisygd.training.
    PreRelease` named ``name`` and its noisy vector. Raises ``RuntimeError`` where the fit
    made no such release, or reports another event for it (``fit_info_["pre_releases"]``)."""
    from noisygd.training import observe_pre_releases

    seen: list[tuple[Any, np.ndarray]] = []

    def observer(stage: Any, noisy: np.ndarray) -> None:
        if stage.name == name and not seen:
            seen.append((stage, noisy))

    with observe_pre_releases(observer):
        est = fit()
    if not seen:
        raise RuntimeError(f"the fit made no {name!r} release (the default releases it: "
                           "is the budget too small to pay for it?)")
    stage, noisy = seen[0]
    reported = {r["name"]: r["event"] for r in est.fit_info_.get("pre_releases", ())}
    if reported.get(name) != stage.event.describe():
        raise RuntimeError(f"the {name!r} release reports {reported.get(name)!r}, but its "
                           f"stage's event is {stage.event.describe()!r}")
    return est, stage, noisy


def _release_problem(name: str, make: Callable[[np.random.Generator], Any], X: np.ndarray,
                     y: np.ndarray, canary_x: np.ndarray, canary_y: Any, d: np.ndarray,
                     base: np.ndarray, nu: float, canary: str, settings: dict[str, Any],
                     unobserved: str) -> AuditProblem:
    """``D``: ``(X, y)``; ``D'``: the canary first, then ``D`` (add/remove). ``d``: what the
    canary adds to the release's statistic; ``base``: that statistic on ``D`` where ``d`` is
    nonzero (module doc)."""
    X1 = np.vstack([canary_x[None, :], X])
    y1 = np.concatenate([[canary_y], y])
    support = np.flatnonzero(d)
    weights = d[support] / float(np.linalg.norm(d))

    def run(which: int, rng: np.random.Generator) -> FitResult:
        est, stage, noisy = observed_release(
            lambda: make(rng).fit(X1 if which else X, y1 if which else y), name)
        sigma = float(stage.noise_std)
        statistic = float((noisy[support] - base) @ weights) / sigma
        coef = np.concatenate([np.ravel(est.coef_), np.ravel(est.intercept_)])
        return FitResult(theta=coef, event=stage.event, n_iter=int(np.max(est.n_iter_)),
                         info={"audit_statistic": statistic, "noise_std": sigma,
                               "shift": float(np.linalg.norm(d)) / sigma})

    return AuditProblem(
        name=name, run=run, direction=np.zeros(1), relation=Neighbouring.ADD_REMOVE,
        gaussian_output=True, canary=canary, settings=settings, score=_info_statistic,
        nu=nu, observed=f"white-box: the first histogram's noisy counts ({unobserved} "
                        "unobserved); claim: that release's own event")


def _release_mu(epsilon: float, delta: float, share: float, fraction: float) -> float:
    r""":math:`\sqrt{f r_0}\,\mu`: the first round's Gaussian-DP parameter (module doc)."""
    from noisygd.accounting.calibration import calibrate_mu

    return math.sqrt(share * fraction) * calibrate_mu(epsilon, delta)


def target_range_problem(*, epsilon: float, delta: float = 1e-5, n_ordinary: int = 200,
                         canary_target: float = 1000.0) -> AuditProblem:
    r"""``DPLinearRegression(epsilon, delta)`` with every default (no ``target_range`` nor
    ``target_bound``: the private target range is released), one feature; the audited
    release is its first histogram (``"target_range"``; module doc).

    ``D``: ``n_ordinary`` rows :math:`x = 1`, :math:`y = 0.75` (every target in the bin
    :math:`(0.5, 1]`); ``D'``: the canary :math:`x = 1`, :math:`y` = ``canary_target``
    (default 1 000, the bin :math:`(512, 1024]`), first. The statistic is the canary bin's
    noisy count over :math:`\sigma`: :math:`\mathcal N(0, 1)` against
    :math:`\mathcal N(1/\sigma, 1)`, :math:`1/\sigma = \sqrt{0.6 \cdot 0.08}\,\mu` the
    release's own :math:`\mu` (:data:`~noisygd.mechanisms.target_range.TARGET_RANGE_SHARE`,
    the first of :data:`~noisygd.mechanisms.target_range.TARGET_RANGE_ROUNDS`).
    """
    from noisygd.estimators import DPLinearRegression
    from noisygd.mechanisms.target_range import (
        TARGET_RANGE_ROUNDS,
        TARGET_RANGE_SHARE,
        target_bin_index,
        target_histogram,
        target_histogram_size,
    )

    eps = check_positive("epsilon", epsilon)
    dl = check_probability("delta", delta)
    n = check_positive_int("n_ordinary", n_ordinary)
    X, y = np.ones((n, 1)), np.full(n, 0.75)
    bin_ = int(target_bin_index(np.array([float(canary_target)]))[0])
    if bin_ == 0 or target_histogram(y)[bin_] != 0.0:
        raise ValueError("the canary's target must be nonzero and in a bin no row of D "
                         "occupies")
    d = np.zeros(target_histogram_size())
    d[bin_] = 1.0  # a target is counted once, in its bin (independent of the function)

    def make(rng: np.random.Generator) -> Any:
        return DPLinearRegression(eps, dl, random_state=rng)

    return _release_problem(
        "target_range", make, X, y, np.array([1.0]), float(canary_target), d, np.zeros(1),
        _release_mu(eps, dl, TARGET_RANGE_SHARE, TARGET_RANGE_ROUNDS[0]),
        f"row x = 1 with target {float(canary_target):g} (bin {bin_} of the target "
        "histogram), rows of D: x = 1, y = 0.75 (another bin); it moves one count by 1, the "
        "histogram's whole sensitivity; D' = D plus the canary (add/remove)",
        {"estimator": "DPLinearRegression()", "release": "target_range (first histogram)",
         "n_samples": n, "n_features": 1, "relation": "add_remove",
         "canary_target": float(canary_target), "canary_bin": bin_},
        "refined rounds, feature range, conditioning, count, scale and run")


def feature_range_problem(*, epsilon: float, delta: float = 1e-5, n_ordinary: int = 200,
                          canary_value: float = 2.0 ** 20) -> AuditProblem:
    r"""``DPLogisticRegression(epsilon, delta, classes=[0, 1])``, binary, with every default
    (the private feature range released first), one feature; the audited release is the
    feature range's histogram and row count (``"feature_range"``; module doc).

    ``D``: ``n_ordinary`` rows :math:`x = 1` (the bin :math:`[1, 2)`), classes 0 and 1 in
    turn; ``D'``: the canary :math:`x` = ``canary_value`` (default :math:`2^{20}`, the bin
    :math:`[2^{20}, 2^{21})`) of class 0, first. It adds 1 to its bin and 1 to the row
    count: the statistic is their noisy counts less ``D``'s (0 and ``n``), summed, over
    :math:`\sigma\sqrt2`, :math:`\mathcal N(0, 1)` against :math:`\mathcal N(\sqrt2/\sigma,
    1)`, :math:`\sqrt2/\sigma = \sqrt{0.8 \cdot 0.0625}\,\mu` the release's own :math:`\mu`
    (:data:`~noisygd.mechanisms.feature_range.FEATURE_RANGE_SHARE`, the first of
    :data:`~noisygd.mechanisms.feature_range.FEATURE_RANGE_ROUNDS`). (The canary's bin
    alone, over :math:`\sigma`, would see :math:`1/\sqrt2` of it.)
    """
    from noisygd.estimators import DPLogisticRegression
    from noisygd.mechanisms.feature_range import (
        FEATURE_RANGE_ROUNDS,
        FEATURE_RANGE_SHARE,
        range_statistic,
    )

    eps = check_positive("epsilon", epsilon)
    dl = check_probability("delta", delta)
    n = check_positive_int("n_ordinary", n_ordinary)
    value = check_positive("canary_value", canary_value)
    X, y = np.ones((n, 1)), np.arange(n) % 2
    d = range_statistic(np.array([[value]]))  # the canary's row alone: its bin, one row
    if d.sum() != 2.0 or d[-1] != 1.0 or range_statistic(X)[np.flatnonzero(d)[0]] != 0.0:
        raise ValueError("the canary's value must lie in a bin no row of D occupies")

    def make(rng: np.random.Generator) -> Any:
        return DPLogisticRegression(eps, dl, classes=[0, 1], random_state=rng)

    return _release_problem(
        "feature_range", make, X, y, np.array([value]), 0, d, np.array([0.0, float(n)]),
        _release_mu(eps, dl, FEATURE_RANGE_SHARE, FEATURE_RANGE_ROUNDS[0]),
        f"row x = {value:g} of class 0 (bin {int(np.flatnonzero(d)[0])} of the feature "
        "histogram), rows of D: x = 1 (another bin); it adds 1 to its bin and 1 to the row "
        "count, the release's whole sensitivity sqrt(p + 1); D' = D plus the canary "
        "(add/remove)",
        {"estimator": "DPLogisticRegression(classes=[0, 1])",
         "release": "feature_range (histogram and row count)", "n_samples": n,
         "n_features": 1, "relation": "add_remove", "canary_value": value},
        "column-offset rounds, conditioning, count and run")
