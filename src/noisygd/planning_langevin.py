r"""Planner for last-iterate projected noisy GD (seed 004, Theorem 4).

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
default ``"auto"`` keeps it unless :math:`K^*` would exceed ``horizon`` (default
``max_steps``), in which case it raises :math:`\eta` (never beyond
:math:`0.9/\beta < 1/\beta`, which Corollary 1 requires) so that
:math:`K^*(\eta) \le` ``horizon``.

Lemma 6's excess-risk bound is reported (``excess_risk_bound``) only where the lemma
holds: a Lipschitz constant over a bounded ball :math:`\mathcal C` (the regularised
loss is Lipschitz there with :math:`L + \mu R`) and the step-size condition
:math:`\eta \le \lambda/(2\beta^2)`. Otherwise it is ``None`` and
``excess_risk_bound_reason`` says why (for instance when ``"auto"`` raised
:math:`\eta` above :math:`\lambda/(2\beta^2)`). The lemma also assumes the minimiser
lies in the relative interior of :math:`\mathcal C`; that is recorded as a condition
of the bound, not checked (it is a property of the data).

The solver that plans with this module and runs Algorithm 1 is
:class:`noisygd.solvers.LangevinSolver` (``method="langevin"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from noisygd._checks import check_positive, check_positive_int, check_real
from noisygd.accounting.base import check_delta, check_epsilon
from noisygd.accounting.events import Neighbouring
from noisygd.accounting.zcdp import zcdp_epsilon
from noisygd.exceptions import AssumptionError

if TYPE_CHECKING:
    from noisygd.solvers.base import PublicFacts

__all__ = ["LangevinPlan", "langevin_constants", "plan_langevin", "plan_langevin_secure",
           "rho_for_epsilon_delta", "secure_langevin_inflation"]

STEP_RULES = ("auto", "theorem4")
_FAST = 0.9  # eta <= 0.9 / beta keeps Corollary 1's eta < 1/beta strict
#: Relative slack when comparing eta with lambda / (2 beta^2) (rounding of the same formula).
_ETA_RTOL = 1e-12


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


def langevin_constants(facts: PublicFacts) -> tuple[float, float | None, float]:
    r"""``(lambda, beta, S_g)`` of the loss :math:`\ell + \frac\mu2\lVert\theta\rVert^2`.

    :math:`\lambda` is the strong convexity of ``F`` (0 for a nonconvex loss),
    :math:`\beta` the data-term smoothness plus ``l2`` (``None`` if not stated) and
    :math:`S_g` the oracle's exact replace-one sensitivity of the unclipped gradient sum,
    else :math:`2L` (the regulariser cancels in :math:`g(\theta; D) - g(\theta; D')`),
    else ``inf``.
    """
    c = facts.constants
    lam = float(c.strong_convexity) if c.convex else 0.0
    beta = None if c.smoothness is None else float(c.smoothness) + float(facts.l2)
    if facts.total_gradient_sensitivity is not None:
        sens = float(facts.total_gradient_sensitivity)
    elif c.lipschitz is not None:
        sens = Neighbouring.REPLACE_ONE.clipped_sum_sensitivity * float(c.lipschitz)
    else:
        sens = math.inf
    return lam, beta, sens


@dataclass(frozen=True)
class LangevinPlan:
    """Choice of (sigma, eta, K) for Algorithm 1 of seed 004 and what it was derived from.

    ``excess_risk_bound`` is Lemma 6's bound where the lemma holds, else ``None`` with
    ``excess_risk_bound_reason`` saying why (module doc).
    """

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
    excess_risk_bound_reason: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def noise_variance(self) -> float:
        r""":math:`\sigma^2`."""
        return self.sigma**2

    def to_dict(self) -> dict[str, Any]:
        """The plan's public fields (for ``FitResult.info["plan"]``)."""
        return {
            "sigma": self.sigma, "step_size": self.step_size, "steps": self.steps,
            "rho": self.rho, "k_star": self.k_star, "step_rule": self.step_rule,
            "excess_risk_bound": self.excess_risk_bound,
            "excess_risk_bound_reason": self.excess_risk_bound_reason,
            **self.info,
        }


def _lemma6(facts: PublicFacts, lam: float, beta: float, eta: float, steps: int,
            d: int, sigma2: float) -> tuple[float | None, str | None]:
    """Lemma 6's bound, or ``None`` and the hypothesis that fails."""
    c = facts.constants
    if c.lipschitz is None:
        return None, "Lemma 6 needs a Lipschitz constant, which the objective does not state"
    if facts.radius is None:
        return None, ("Lemma 6 needs a bounded constraint set (the regularised loss is not "
                      "Lipschitz on all of R^d): give the objective a radius")
    eta_max = lam / (2.0 * beta**2)
    if eta > eta_max * (1.0 + _ETA_RTOL):
        return None, (f"Lemma 6 needs eta <= lambda/(2 beta^2) = {eta_max:.6g}; the plan's "
                      f"step {eta:.6g} is larger (step_rule raised it to fit max_steps)")
    L = float(c.lipschitz) + float(facts.l2) * float(facts.radius)
    bound = (2.0 * beta * L * L / lam**2 * math.exp(-lam * eta * steps)
             + 2.0 * beta * d * sigma2 / lam)
    return bound, None


def plan_langevin(
    facts: PublicFacts,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    rdp_order: float | None = None,
    rdp_epsilon: float | None = None,
    step_rule: str | float = "auto",
    max_steps: int = 20000,
    horizon: int | None = None,
) -> LangevinPlan:
    r"""Theorem 4 of seed 004: :math:`\eta`, :math:`\sigma^2` and :math:`K^*` for a privacy target.

    Give either ``(epsilon, delta)`` or ``(rdp_order, rdp_epsilon)`` =
    :math:`(\alpha, \varepsilon')`.

    Parameters
    ----------
    facts : PublicFacts
        Public facts of the problem: ``n_samples`` (public ``n``, replace-one), ``n_params``
        (``d``), the constants (strong convexity > 0, smoothness, and a Lipschitz constant or
        an exact :math:`S_g`), ``l2`` and ``radius``.
    epsilon, delta, rdp_order, rdp_epsilon : float
    step_rule : {"auto", "theorem4"} or float
        :math:`\eta = \lambda/(2\beta^2)` (``"theorem4"``), that raised towards
        :math:`0.9/\beta` only as needed to keep :math:`K^* \le` ``horizon``
        (``"auto"``), or an explicit :math:`\eta < 1/\beta`.
    max_steps : int
        Cap on ``K``; any ``K`` is private since :math:`\sigma` is set for the ``K`` used.
    horizon : int, optional
        The number of steps ``"auto"`` raises :math:`\eta` to fit :math:`K^*` in (default
        ``max_steps``; capped by it). A cap far above it is then a cap, not a target.

    Returns
    -------
    LangevinPlan

    Raises
    ------
    AssumptionError
        If the objective does not declare what Corollary 1 needs.
    """
    lam, beta, S = langevin_constants(facts)
    if lam <= 0:
        raise AssumptionError("the last-iterate planner needs a strongly convex objective "
                              "(l2 > 0)")
    if beta is None:
        raise AssumptionError("the objective declares no smoothness constant")
    if not math.isfinite(S):
        raise AssumptionError("the objective declares no Lipschitz constant, so the total-"
                              "gradient sensitivity is unbounded (give a radius)")
    n_real = check_positive("n_samples", facts.n_samples)
    if n_real != int(n_real):
        raise ValueError(f"n_samples must be a whole number (public n), got {facts.n_samples!r}")
    n = int(n_real)
    max_steps = check_positive_int("max_steps", max_steps)
    horizon = max_steps if horizon is None else min(
        check_positive_int("horizon", horizon), max_steps)
    d = check_positive_int("n_params", facts.n_params)
    if epsilon is not None or delta is not None:
        if rdp_order is not None or rdp_epsilon is not None:
            raise ValueError("give either (epsilon, delta) or (rdp_order, rdp_epsilon), not both")
        if epsilon is None or delta is None:
            raise ValueError("an (epsilon, delta) target needs both")
        rho = rho_for_epsilon_delta(epsilon, delta)
        target: dict[str, float] = {"epsilon": float(epsilon), "delta": float(delta)}
    else:
        if rdp_order is None or rdp_epsilon is None:
            raise ValueError("give (epsilon, delta) or (rdp_order, rdp_epsilon)")
        alpha = check_real("rdp_order", rdp_order)
        if not alpha > 1:
            raise ValueError(f"rdp_order must be > 1, got {rdp_order!r}")
        rho = check_epsilon(rdp_epsilon) / alpha
        target = {"rdp_order": alpha, "rdp_epsilon": float(rdp_epsilon)}

    log_term = math.log(n * n * rho / d)  # log(n^2 eps' / (alpha d))
    eta4 = lam / (2.0 * beta**2)
    if isinstance(step_rule, str):
        if step_rule not in STEP_RULES:
            raise ValueError(f"step_rule must be one of {STEP_RULES} or a float, "
                             f"got {step_rule!r}")
        eta = eta4
        if step_rule == "auto" and log_term > 0 and log_term / (lam * eta4) > horizon:
            eta = min(_FAST / beta, log_term / (lam * horizon))
    else:
        eta = check_positive("step_rule", step_rule)
        if not eta < 1.0 / beta:
            raise AssumptionError(f"step size {eta} must be in (0, 1/beta = {1.0 / beta:.6g})")
    k_star = max(log_term, 0.0) / (lam * eta)
    steps = int(min(max(1, math.ceil(k_star)), max_steps))
    sigma2 = S * S / (lam * n * n * rho) * -math.expm1(-lam * eta * steps / 2.0)
    bound, reason = _lemma6(facts, lam, beta, eta, steps, d, sigma2)
    info: dict[str, Any] = {"target": target,
                            "theorem": "Chourasia-Ye-Shokri 2021 Thm 4 / Cor. 1"}
    if bound is not None:
        info["excess_risk_bound_theorem"] = (
            "Chourasia-Ye-Shokri 2021 Lemma 6 (assumes the minimiser lies in the relative "
            "interior of the constraint ball)")
    return LangevinPlan(
        sigma=math.sqrt(sigma2), step_size=eta, steps=steps, rho=rho, strong_convexity=lam,
        smoothness=beta, sensitivity=S, n_samples=n, n_params=d,
        step_rule=str(step_rule), k_star=k_star, excess_risk_bound=bound,
        excess_risk_bound_reason=reason, info=info,
    )


# ------------------------------------------------------------------ secure mode
def secure_langevin_inflation(plan: LangevinPlan, *, grid_bits: int | None = None) -> float:
    r""":math:`\kappa` of the secure run of ``plan``: rounding :math:`\theta_k - \eta\nabla
    \mathcal L_D(\theta_k)` to the grid of the noise :math:`\sqrt{2\eta}\sigma` in dimension
    ``d`` adds :math:`\gamma\sqrt d` to its replace-one sensitivity :math:`\eta S_g/n`
    (:func:`noisygd.mechanisms.noise.sensitivity_inflation`; public)."""
    from noisygd.mechanisms.noise import sensitivity_inflation
    from noisygd.mechanisms.secure import DEFAULT_GRID_BITS, SecureRandom

    rng = SecureRandom(grid_bits=DEFAULT_GRID_BITS if grid_bits is None else grid_bits)
    return sensitivity_inflation(rng, math.sqrt(2.0 * plan.step_size) * plan.sigma,
                                 plan.n_params, plan.step_size * plan.sensitivity / plan.n_samples)


def plan_langevin_secure(
    facts: PublicFacts,
    *,
    rho: float,
    target: dict[str, float] | None = None,
    step_rule: str | float = "auto",
    max_steps: int = 20000,
    horizon: int | None = None,
) -> LangevinPlan:
    r"""Plan for the *secure* run of Algorithm 1, accounted by composition (zCDP ``rho``).

    Secure mode (:mod:`noisygd.algorithms.langevin_gd`) cannot use the last-iterate bound
    (its proof needs continuous Gaussian noise); its event is the composition of ``K``
    discrete Gaussian steps, :math:`\rho_{\rm run} = K\kappa^2\eta S_g^2/(4n^2\sigma^2)`-zCDP
    (Canonne, Kamath and Steinke 2020; Bun and Steinke 2016, Lemma 2.3). The step size and
    ``K`` are :func:`plan_langevin`'s: with :math:`t = \eta K` and :math:`\sigma^2 =
    t S_g^2\kappa^2/(4n^2\rho)`, Lemma 6's bound :math:`\frac{2\beta L^2}{\lambda^2}e^{-\lambda t}
    + \frac{2\beta d\sigma^2}{\lambda}` (with :math:`S_g = 2L`) is smallest at
    :math:`\lambda t = \log(n^2\rho/d)`, Theorem 4's :math:`\lambda\eta K^*`. Then
    :math:`\sigma = \sqrt{K\eta}\,S_g\kappa/(2n\sqrt\rho)`, enlarged by factors
    :math:`1 + 10^{-12}` until the planned event's zCDP (with the :math:`\kappa` of the
    planned :math:`\sigma`, :func:`secure_langevin_inflation`) is at most ``rho``.

    Parameters
    ----------
    facts : PublicFacts
        As for :func:`plan_langevin`.
    rho : float
        The zCDP budget of the run.
    target : dict, optional
        Recorded in ``info["target"]`` (default ``{"zcdp_rho": rho}``).
    step_rule, max_steps, horizon
        As for :func:`plan_langevin`.

    Returns
    -------
    LangevinPlan
        ``rho`` is the budget; ``info["secure"]`` is True, ``info["sensitivity_inflation"]``
        the planned :math:`\kappa` and ``info["zcdp_rho_run"]`` the run's zCDP.
    """
    import dataclasses

    rho = check_positive("rho", rho)
    base = plan_langevin(facts, rdp_order=2.0, rdp_epsilon=2.0 * rho, step_rule=step_rule,
                         max_steps=max_steps, horizon=horizon)
    K, eta, S, n = base.steps, base.step_size, base.sensitivity, base.n_samples

    def spent(plan: LangevinPlan) -> float:
        kappa = secure_langevin_inflation(plan)
        return K * kappa * kappa * eta * S * S / (4.0 * n * n * plan.sigma**2)

    sigma = math.sqrt(K * eta) * S / (2.0 * n * math.sqrt(rho))
    plan = dataclasses.replace(base, sigma=sigma)
    plan = dataclasses.replace(plan, sigma=sigma * secure_langevin_inflation(plan)
                               * (1.0 + 1e-12))
    while spent(plan) > rho:
        plan = dataclasses.replace(plan, sigma=plan.sigma * (1.0 + 1e-12))
    bound, reason = _lemma6(facts, base.strong_convexity, base.smoothness, eta, K,
                            base.n_params, plan.sigma**2)
    info: dict[str, Any] = {
        "target": dict(target) if target is not None else {"zcdp_rho": rho},
        "theorem": ("secure mode: composition of K discrete Gaussian steps (CKS20; "
                    "Bun-Steinke 2016 Lemma 2.3); K and eta of Chourasia-Ye-Shokri 2021 Thm 4"),
        "secure": True,
        "sensitivity_inflation": secure_langevin_inflation(plan),
        "zcdp_rho_run": spent(plan),
    }
    if bound is not None:
        info["excess_risk_bound_theorem"] = (
            "Chourasia-Ye-Shokri 2021 Lemma 6 (assumes the minimiser lies in the relative "
            "interior of the constraint ball)")
    return dataclasses.replace(plan, rho=rho, excess_risk_bound=bound,
                               excess_risk_bound_reason=reason, info=info)
