r"""Planner for last-iterate projected noisy GD (seed 004, Theorem 4) and ``langevin_fit``.

Theorem 4 of Chourasia, Ye and Shokri (NeurIPS 2021), for an ``L``-Lipschitz,
:math:`\lambda`-strongly convex, :math:`\beta`-smooth loss: with
:math:`\eta = \lambda/(2\beta^2)` and the Gaussian start, Algorithm 1 is
:math:`(\alpha, \varepsilon')`-RDP with

.. math::

    \sigma^2 = \frac{4\alpha L^2}{\lambda\varepsilon' n^2}, \qquad
    K^* = \frac{2\beta^2}{\lambda^2}\log\frac{n^2\varepsilon'}{\alpha d}
        = \frac{1}{\lambda\eta}\log\frac{n^2\varepsilon'}{\alpha d},

and excess empirical risk :math:`O(\alpha\beta d L^2/(\varepsilon'\lambda^2 n^2))`
(Lemma 6: :math:`\frac{2\beta L^2}{\lambda^2}e^{-\lambda\eta K} +
\frac{2\beta d\sigma^2}{\lambda}`).

This planner uses the same choices with two refinements that can only make the
guarantee tighter, never weaker, and are re-checked by the accountant:

* :math:`4L^2` is replaced by :math:`S_g^2` (:math:`S_g \le 2L`, exact where the
  objective states it), and the finite-``K`` factor of Corollary 1 is kept:
  :math:`\sigma^2 = \frac{S_g^2}{\lambda n^2\rho}(1 - e^{-\lambda\eta K/2})` with
  :math:`\rho = \varepsilon'/\alpha`;
* for an :math:`(\varepsilon, \delta)` target, :math:`\rho` is the largest value
  whose :math:`\rho`-zCDP conversion (the accountant's: Bun-Steinke Prop. 1.3 /
  CKS20 Prop. 12 optimised over :math:`\alpha`) meets :math:`(\varepsilon,
  \delta)`, instead of Theorem 4's :math:`\alpha = 1 + 2\log(1/\delta)/\varepsilon`,
  :math:`\varepsilon' = \varepsilon/2`.

``step_rule="theorem4"`` uses :math:`\eta = \lambda/(2\beta^2)` exactly. The
default ``"auto"`` keeps it unless :math:`K^*` would exceed ``max_steps``, in which
case it raises :math:`\eta` (never beyond :math:`0.9/\beta < 1/\beta`, which
Corollary 1 requires) so that :math:`K^*(\eta) \le` ``max_steps``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from noisygd.accounting.base import check_delta, check_epsilon
from noisygd.accounting.events import Neighbouring
from noisygd.accounting.langevin import LastIterateLangevinAccountant
from noisygd.accounting.zcdp import zcdp_epsilon
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.langevin_gd import langevin_facts, projected_noisy_gd
from noisygd.exceptions import AssumptionError
from noisygd.objectives.base import Objective

__all__ = ["LangevinPlan", "langevin_fit", "plan_langevin", "rho_for_epsilon_delta"]

STEP_RULES = ("auto", "theorem4")
_FAST = 0.9  # eta <= 0.9 / beta keeps Corollary 1's eta < 1/beta strict


def rho_for_epsilon_delta(epsilon: float, delta: float) -> float:
    r"""Largest :math:`\rho` such that :math:`\rho`-zCDP (RDP :math:`\rho\alpha`) is (eps, delta)-DP

    Bisection on :math:`\log\rho` of :func:`noisygd.accounting.zcdp.zcdp_epsilon`
    (increasing in :math:`\rho`); the value returned satisfies the target.
    """
    eps = check_epsilon(epsilon)
    delta = check_delta(delta)
    lo, hi = 1e-12, 1.0
    while zcdp_epsilon(hi, delta) <= eps:
        lo, hi = hi, hi * 4.0
    if zcdp_epsilon(lo, delta) > eps:  # pragma: no cover - needs eps below 1e-5
        raise ValueError(f"epsilon={eps} is too small to plan for delta={delta}")
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if zcdp_epsilon(mid, delta) <= eps:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1 + 1e-12:
            break
    return lo


@dataclass(frozen=True)
class LangevinPlan:
    """Choice of (sigma, eta, K) for Algorithm 1 of seed 004 and what it was derived from."""

    sigma: float
    step_size: float
    steps: int
    rho: float
    strong_convexity: float
    smoothness: float
    sensitivity: float
    n_samples: int
    n_params: int
    step_rule: str
    k_star: float
    excess_risk_bound: float | None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def noise_variance(self) -> float:
        r""":math:`\sigma^2`."""
        return self.sigma**2


def plan_langevin(
    objective: Objective,
    n_samples: int,
    n_features: int,
    row_norm_bound: float,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    rdp_order: float | None = None,
    rdp_epsilon: float | None = None,
    step_rule: str | float = "auto",
    max_steps: int = 20000,
) -> LangevinPlan:
    r"""Theorem 4 of seed 004: :math:`\eta`, :math:`\sigma^2` and :math:`K^*` for a privacy target.

    Give either ``(epsilon, delta)`` or ``(rdp_order, rdp_epsilon)`` =
    :math:`(\alpha, \varepsilon')`.

    Parameters
    ----------
    objective : Objective
        Must declare strong convexity > 0, smoothness and a finite :math:`S_g`.
    n_samples : int
        Public ``n``.
    n_features : int
        Columns of ``X`` (the dimension ``d`` is ``objective.n_params``).
    row_norm_bound : float
    epsilon, delta, rdp_order, rdp_epsilon : float
    step_rule : {"auto", "theorem4"} or float
        :math:`\eta = \lambda/(2\beta^2)` (``"theorem4"``), that raised towards
        :math:`0.9/\beta` only as needed to keep :math:`K^* \le` ``max_steps``
        (``"auto"``), or an explicit :math:`\eta < 1/\beta`.
    max_steps : int
        Cap on ``K``; any ``K`` is private since :math:`\sigma` is set for the ``K`` used.

    Returns
    -------
    LangevinPlan

    Raises
    ------
    AssumptionError
        If the objective does not declare what Corollary 1 needs.
    """
    facts = langevin_facts(objective, row_norm_bound)
    lam, beta, S = facts["strong_convexity"], facts["smoothness"], facts["sensitivity"]
    if lam <= 0:
        raise AssumptionError("the last-iterate planner needs a strongly convex objective "
                              "(l2 > 0)")
    if beta is None:
        raise AssumptionError(f"{objective!r} declares no smoothness constant")
    if not math.isfinite(S):
        raise AssumptionError(f"{objective!r} declares no Lipschitz constant, so the total-"
                              "gradient sensitivity is unbounded (give a radius)")
    n = int(n_samples)
    if n < 1 or n != n_samples:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
    if isinstance(max_steps, bool) or int(max_steps) < 1:
        raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
    d = objective.n_params(int(n_features))
    if epsilon is not None or delta is not None:
        if rdp_order is not None or rdp_epsilon is not None:
            raise ValueError("give either (epsilon, delta) or (rdp_order, rdp_epsilon), not both")
        if epsilon is None or delta is None:
            raise ValueError("an (epsilon, delta) target needs both")
        rho = rho_for_epsilon_delta(epsilon, delta)
        target = {"epsilon": float(epsilon), "delta": float(delta)}
    else:
        if rdp_order is None or rdp_epsilon is None:
            raise ValueError("give (epsilon, delta) or (rdp_order, rdp_epsilon)")
        if not rdp_order > 1:
            raise ValueError(f"rdp_order must be > 1, got {rdp_order!r}")
        rho = check_epsilon(rdp_epsilon) / float(rdp_order)
        target = {"rdp_order": float(rdp_order), "rdp_epsilon": float(rdp_epsilon)}

    log_term = math.log(n * n * rho / d)  # log(n^2 eps' / (alpha d))
    eta4 = lam / (2.0 * beta**2)
    if step_rule == "theorem4":
        eta = eta4
    elif step_rule == "auto":
        eta = eta4
        if log_term > 0 and log_term / (lam * eta4) > max_steps:
            eta = min(_FAST / beta, log_term / (lam * max_steps))
    elif isinstance(step_rule, int | float) and not isinstance(step_rule, bool):
        eta = float(step_rule)
        if not (0 < eta < 1.0 / beta):
            raise AssumptionError(f"step size {eta} must be in (0, 1/beta = {1.0 / beta:.6g})")
    else:
        raise ValueError(f"step_rule must be one of {STEP_RULES} or a float, got {step_rule!r}")
    k_star = max(log_term, 0.0) / (lam * eta)
    steps = int(min(max(1, math.ceil(k_star)), max_steps))
    sigma2 = S * S / (lam * n * n * rho) * -math.expm1(-lam * eta * steps / 2.0)
    sigma = math.sqrt(sigma2)
    c = facts["constants"]
    bound = None
    if c.lipschitz is not None and objective.radius is not None:
        L = float(c.lipschitz) + float(objective.l2) * float(objective.radius)
        bound = (2.0 * beta * L * L / lam**2 * math.exp(-lam * eta * steps)
                 + 2.0 * beta * d * sigma2 / lam)
    return LangevinPlan(
        sigma=sigma, step_size=eta, steps=steps, rho=rho, strong_convexity=lam,
        smoothness=beta, sensitivity=S, n_samples=n, n_params=d,
        step_rule=str(step_rule), k_star=k_star, excess_risk_bound=bound,
        info={"target": target, "theorem": "Chourasia-Ye-Shokri 2021 Thm 4 / Cor. 1"},
    )


def langevin_fit(
    objective: Objective,
    X: np.ndarray,
    y: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    n_samples: float,
    row_norm_bound: float,
    rng: np.random.Generator,
    relation: Neighbouring | str = Neighbouring.REPLACE_ONE,
    clip: float | None = None,
    max_iter: int | None = None,
    step_rule: str | float = "auto",
    **options: Any,
) -> FitResult:
    r"""Plan by Theorem 4 and run Algorithm 1 of seed 004 for an (epsilon, delta) target.

    Parameters
    ----------
    objective : Objective
        Strongly convex (``l2 > 0``), smooth, with a finite Lipschitz constant.
    X, y : ndarray
        Private data; ``len(X)`` must equal ``n_samples``.
    epsilon, delta : float
        Target; the returned event is verified to meet it under the
        ``langevin_last_iterate`` accountant.
    n_samples : float
        Public ``n`` (replace-one: the size is public by definition).
    row_norm_bound : float
    rng : numpy.random.Generator
    relation : Neighbouring
        Must be replace-one (the theorem's neighbours).
    clip : float or None
        Must be None or at least the Lipschitz constant (a no-op): clipping
        breaks the gradient-field assumptions.
    max_iter : int or None
        Cap on ``K`` (default 5000).
    step_rule : see :func:`plan_langevin`

    Returns
    -------
    FitResult
        ``event`` is a :class:`~noisygd.accounting.langevin.LastIterateLangevin`;
        ``info["plan"]`` holds the plan.
    """
    if options:
        raise TypeError(f"unexpected options for langevin_fit: {', '.join(sorted(options))}")
    eps = check_epsilon(epsilon)
    delta = check_delta(delta)
    if Neighbouring(relation) is not Neighbouring.REPLACE_ONE:
        raise ValueError("the last-iterate Langevin guarantee (seed 004) is for replace-one "
                         "neighbours (datasets of equal, public size); use relation='replace_one'")
    if clip is not None:
        lip = objective.constants(row_norm_bound).lipschitz
        if lip is None or clip < lip:
            raise AssumptionError(
                "langevin uses unclipped gradients: clipping below the Lipschitz constant "
                "breaks the gradient-field assumptions of Chourasia et al. Lemma 5 "
                "(leave clip=None)")
    X = np.asarray(X, dtype=float)
    plan = plan_langevin(objective, n_samples, X.shape[1], row_norm_bound, epsilon=eps,
                         delta=delta, step_rule=step_rule,
                         max_steps=5000 if max_iter is None else int(max_iter))
    result = projected_noisy_gd(
        objective, X, y, sigma=plan.sigma, step_size=plan.step_size, steps=plan.steps,
        n_samples=n_samples, row_norm_bound=row_norm_bound, theorem="corollary1", rng=rng,
    )
    spent = LastIterateLangevinAccountant().epsilon(result.event, delta)
    if spent > eps * (1.0 + 1e-9):  # pragma: no cover - the plan is built to meet it
        raise RuntimeError(f"internal error: planned run spends epsilon={spent:.6g} > {eps:.6g}")
    result.info["plan"] = {
        "sigma": plan.sigma, "step_size": plan.step_size, "steps": plan.steps, "rho": plan.rho,
        "k_star": plan.k_star, "step_rule": plan.step_rule,
        "excess_risk_bound": plan.excess_risk_bound, "epsilon": spent, "delta": delta,
    }
    return result
