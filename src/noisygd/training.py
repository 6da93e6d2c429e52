r"""Private training of a linear model under a total (epsilon, delta) budget.

This is the layer between the estimators / CLI and the algorithms. It owns the
three things every private fit needs besides the algorithm itself:

1. **The dataset size.** Under add/remove neighbours the number of rows ``n``
   is private. Unless the user declares it public (``n_samples_public=n``),
   it is estimated by the Gaussian mechanism on the count (sensitivity 1) and
   that release is paid for from the budget: it costs a fraction
   ``count_budget_fraction`` (default 1%) of the Gaussian-DP budget
   :math:`\mu^2`. Under replace-one neighbours ``n`` is public by definition.
2. **The budget split.** A total budget (epsilon, delta) is the exact
   Gaussian-DP budget :math:`\mu(\varepsilon, \delta)`; Gaussian-DP composes
   as :math:`\mu^2 = \sum_k \mu_k^2`, so a count and ``K`` one-vs-rest
   problems receive :math:`\mu_c^2 = f\mu^2` and
   :math:`\mu_k^2 = (1 - f)\mu^2 / K`.
3. **The final account.** The released model's event is the composition of
   everything that touched the data; :func:`noisygd.accounting.best` reports
   it under every accountant, and a fit whose event exceeds the budget is
   refused before anything is returned.

Methods register a :class:`MethodSpec`. Methods whose event is a Gaussian
composition (``gaussian=True``) support the count and one-vs-rest splits;
the others need a public ``n`` and a single problem.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from noisygd.accounting.base import AccountingResult, best, check_delta, check_epsilon
from noisygd.accounting.events import Composed, DpEvent, Gaussian, Neighbouring
from noisygd.algorithms.base import FitResult
from noisygd.objectives.base import Objective

MethodFit = Callable[..., FitResult]


@dataclass(frozen=True)
class MethodSpec:
    """A private training method as the estimators see it.

    ``fit(objective, X, y, *, epsilon, delta, n_samples, relation,
    row_norm_bound, clip, max_iter, rng, **options) -> FitResult`` must return
    a result whose event meets (epsilon, delta) on its own. A method with
    ``accepts_prior_event`` also takes ``prior_event`` (a release made before
    it, such as the private count) and calibrates so that
    ``Composed((prior_event, own_event))`` meets (epsilon, delta); this lets a
    non-Gaussian method (NoisySGD) pay for the count exactly.
    """

    name: str
    fit: MethodFit
    gaussian: bool
    relations: tuple[Neighbouring, ...] = (Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE)
    description: str = ""
    accepts_prior_event: bool = False


METHODS: dict[str, MethodSpec] = {}


def register_method(spec: MethodSpec) -> MethodSpec:
    """Make ``spec`` available as ``method=spec.name`` in estimators and the CLI."""
    METHODS[spec.name] = spec
    return spec


def get_method(name: str) -> MethodSpec:
    """The registered method called ``name`` (``ValueError`` listing the valid ones)."""
    _load_builtin_methods()
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; choose one of: {', '.join(sorted(METHODS))}")
    return METHODS[name]


def available_methods() -> list[str]:
    """Names of every registered method."""
    _load_builtin_methods()
    return sorted(METHODS)


@dataclass
class PrivateFit:
    """What :func:`fit_private` returns.

    Attributes
    ----------
    thetas : list of ndarray
        One parameter vector per problem (one for binary or regression, one
        per class for one-vs-rest).
    event : DpEvent
        The composition of every release that touched the data.
    privacy : AccountingResult
        ``best(event, delta)``: epsilon under every accountant, tightest named.
    n_samples : float
        The public or privately estimated number of rows the algorithms used.
    results : list of FitResult
    info : dict
    """

    thetas: list[np.ndarray]
    event: DpEvent
    privacy: AccountingResult
    n_samples: float
    results: list[FitResult] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


def gaussian_budget_split(
    epsilon: float, delta: float, n_problems: int, count_fraction: float
) -> tuple[float, float, list[float]]:
    r"""Split a Gaussian-DP budget between a count and ``n_problems`` runs.

    Returns ``(mu_total, mu_count, [eps_k ...])`` with
    :math:`\mu_c = \sqrt f \mu` and each run's target epsilon the exact GDP
    epsilon at ``delta`` of :math:`\mu_k = \mu \sqrt{(1-f)/K}`.
    """
    from noisygd.accounting.calibration import calibrate_mu
    from noisygd.accounting.gdp import GaussianAccountant

    mu = calibrate_mu(epsilon, delta)
    mu_count = math.sqrt(count_fraction) * mu
    mu_k = mu * math.sqrt((1.0 - count_fraction) / n_problems)
    eps_k = GaussianAccountant().epsilon(Gaussian(noise_multiplier=1.0 / mu_k), delta)
    return mu, mu_count, [eps_k] * n_problems


def fit_private(
    objective: Objective,
    X: np.ndarray,
    targets: list[np.ndarray],
    *,
    method: str,
    epsilon: float,
    delta: float,
    relation: Neighbouring | str = Neighbouring.ADD_REMOVE,
    n_samples_public: int | None = None,
    count_budget_fraction: float = 0.01,
    row_norm_bound: float = 1.0,
    clip: float | None = None,
    max_iter: int | None = None,
    rng: np.random.Generator,
    options: dict[str, Any] | None = None,
) -> PrivateFit:
    """Fit one model per target vector under a total (epsilon, delta) budget.

    Parameters
    ----------
    objective : Objective
    X : ndarray of shape (n, d)
        Rows already scaled to norm <= ``row_norm_bound``.
    targets : list of ndarray
        One label vector per problem (one-vs-rest passes one per class).
    method : str
        A registered method name (see :func:`available_methods`).
    epsilon, delta : float
        The total budget.
    relation : {"add_remove", "replace_one"}
    n_samples_public : int, optional
        Declares the number of rows public. Under add/remove, without it, a
        noisy count is released and paid for.
    count_budget_fraction : float
        Fraction of the Gaussian-DP budget ``mu^2`` spent on the count.
    row_norm_bound, clip, max_iter, options
        Passed to the method.
    rng : numpy.random.Generator

    Returns
    -------
    PrivateFit

    Raises
    ------
    ValueError
        If the method cannot honour the request, or the final event exceeds
        the budget (nothing is returned in that case).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    relation = Neighbouring(relation)
    spec = get_method(method)
    if relation not in spec.relations:
        raise ValueError(
            f"method {method!r} is accounted under "
            f"{', '.join(r.value for r in spec.relations)} neighbours, not {relation.value}"
        )
    if not 0.0 < count_budget_fraction < 1.0:
        raise ValueError(f"count_budget_fraction must be in (0, 1), got {count_budget_fraction!r}")
    n_problems = len(targets)
    need_count = relation is Neighbouring.ADD_REMOVE and n_samples_public is None
    events: list[DpEvent] = []
    info: dict[str, Any] = {"method": method, "relation": relation.value}

    if spec.gaussian:
        frac = count_budget_fraction if need_count else 1e-12
        _, mu_count, eps_runs = gaussian_budget_split(epsilon, delta, n_problems, frac)
        delta_runs = [delta] * n_problems
    else:
        if (need_count and not spec.accepts_prior_event) or n_problems > 1:
            raise ValueError(
                f"method {method!r} is not a Gaussian composition: it needs a public number of "
                "rows (pass n_samples_public, or use relation='replace_one') and a single "
                "binary or regression problem"
            )
        eps_runs, delta_runs = [epsilon], [delta]
        if need_count:
            from noisygd.accounting.calibration import calibrate_mu

            mu_count = math.sqrt(count_budget_fraction) * calibrate_mu(epsilon, delta)

    if need_count:
        count_event = Gaussian(noise_multiplier=1.0 / mu_count, sensitivity=1.0)
        noisy = X.shape[0] + rng.normal(0.0, count_event.noise_multiplier)
        n_samples = float(max(1.0, round(noisy)))
        events.append(count_event)
        info["n_samples_source"] = "Gaussian count (paid for)"
    else:
        n_samples = float(X.shape[0] if n_samples_public is None else n_samples_public)
        info["n_samples_source"] = (
            "replace-one: public by definition"
            if n_samples_public is None
            else "declared public by the user"
        )

    results = []
    extra: dict[str, Any] = dict(options or {})
    if spec.accepts_prior_event and not spec.gaussian:
        extra["prior_event"] = events[0] if events else None
    for y_k, eps_k, delta_k in zip(targets, eps_runs, delta_runs, strict=True):
        res = spec.fit(
            objective,
            X,
            y_k,
            epsilon=eps_k,
            delta=delta_k,
            n_samples=n_samples,
            relation=relation,
            row_norm_bound=row_norm_bound,
            clip=clip,
            max_iter=max_iter,
            rng=rng,
            **extra,
        )
        results.append(res)
        events.append(res.event)

    event = events[0] if len(events) == 1 else Composed(tuple(events))
    privacy = best(event, delta)
    if privacy.epsilon > epsilon * (1 + 1e-9):
        raise ValueError(
            f"internal error: the fitted event spends epsilon = {privacy.epsilon:.6g} "
            f"> budget {epsilon:.6g} ({privacy.accountant}); the model is withheld"
        )
    info["plans"] = [r.info for r in results]
    return PrivateFit([r.theta for r in results], event, privacy, n_samples, results, info)


_BUILTINS_LOADED = False


def _load_builtin_methods() -> None:
    """Register the methods shipped with noisygd (imported lazily)."""
    global _BUILTINS_LOADED
    if _BUILTINS_LOADED:
        return
    _BUILTINS_LOADED = True
    from noisygd import methods  # noqa: F401  (registers on import)
