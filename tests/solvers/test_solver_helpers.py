"""Direct tests of the solvers' public helpers: :func:`noisygd.solvers.auto.curvature_share`,
:func:`noisygd.solvers.base.plan_secure_gaussian`, :func:`noisygd.solvers.distance.pilot_applies`,
:func:`noisygd.solvers.distance.piloted_event`,
:func:`noisygd.solvers.noisy_gd.warn_if_budget_binds`, :func:`noisygd.solvers.ridge.planned_ridge`,
:func:`noisygd.solvers.sharp_clip.scaled_clip` and :func:`noisygd.solvers.ssp.ssp_bounds`.

Each expected value is the closed form of the function's docstring, written out here."""

from __future__ import annotations

import dataclasses
import math
import warnings

import pytest
from scipy import optimize, stats

from noisygd.accounting.events import (
    Composed,
    DiscreteGaussianNoise,
    EpsilonDelta,
    Gaussian,
    Neighbouring,
    SelfComposed,
)
from noisygd.accounting.zcdp import zcdp_rho
from noisygd.algorithms.newton import NewtonPlan
from noisygd.exceptions import AssumptionError
from noisygd.mechanisms.noise import sensitivity_inflation
from noisygd.mechanisms.secure import SecureRandom
from noisygd.objectives.base import Regime
from noisygd.objectives.glm import LogisticLoss, SquaredLoss
from noisygd.planning import ComputeBudgetWarning, NoisyGDPlan, plan_noisy_gd
from noisygd.solvers.auto import curvature_share
from noisygd.solvers.base import Budget, PublicFacts, ReleasedFacts, plan_secure_gaussian
from noisygd.solvers.distance import (
    DECLARED,
    PILOT_MIN_STEPS,
    THEOREM,
    pilot_applies,
    piloted_event,
)
from noisygd.solvers.noisy_gd import warn_if_budget_binds
from noisygd.solvers.ridge import planned_ridge
from noisygd.solvers.sharp_clip import scaled_clip
from noisygd.solvers.ssp import ssp_bounds

ADD, REPLACE = Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE


def _facts(relation=ADD, n=1000.0, d=5, **changes) -> PublicFacts:
    """Public facts of a logistic regression on ``d`` features in the unit ball."""
    facts = PublicFacts.from_objective(LogisticLoss(), d, row_norm_bound=1.0, n_samples=n,
                                       relation=relation)
    return dataclasses.replace(facts, **changes) if changes else facts


def _gdp_mu(epsilon: float, delta: float) -> float:
    """The mu of the mu-GDP Gaussian that is exactly (epsilon, delta)-DP (Dong, Roth, Su 2022,
    Cor. 2.13: delta = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)), by root finding."""
    def excess(mu: float) -> float:
        return (stats.norm.cdf(-epsilon / mu + mu / 2)
                - math.exp(epsilon) * stats.norm.cdf(-epsilon / mu - mu / 2) - delta)
    return optimize.brentq(excess, 1e-4, 50.0, xtol=1e-15, rtol=1e-14)


# --------------------------------------------------------------------------- curvature_share
def _newton_plan(relation=ADD, gradient_noise=(2.0, 4.0, 4.0), hessian_steps=(0, 2),
                 hessian_noise=(3.0, 5.0), **kwargs) -> NewtonPlan:
    return NewtonPlan(relation=relation, n_params=3, n_samples=100.0, clip=1.0,
                      curvature_clip=1.0, gradient_noise=gradient_noise,
                      hessian_steps=hessian_steps, hessian_noise=hessian_noise, tail=1, **kwargs)


@pytest.mark.parametrize("relation, sg, sh", [(ADD, 1.0, 1.0), (REPLACE, 2.0, math.sqrt(2.0))])
def test_curvature_share_closed_form(relation, sg, sh):
    """sum_h mu_h^2 / mu^2 with mu_t = Delta_g / z_t and mu_h = Delta_H / z_h (Delta_H = 1 under
    add/remove, sqrt 2 under replace-one)."""
    plan = _newton_plan(relation)
    g = [(sg / z) ** 2 for z in (2.0, 4.0, 4.0)]
    h = [(sh / z) ** 2 for z in (3.0, 5.0)]
    assert curvature_share(plan) == pytest.approx(sum(h) / (sum(g) + sum(h)), rel=1e-14)


def test_curvature_share_counts_the_paid_row_support():
    """The diagonal form's histogram release (nnz_noise) is a preconditioner release too."""
    plan = _newton_plan(gradient_noise=(2.0, 2.0), hessian_steps=(0,), hessian_noise=(3.0,),
                        hessian="diagonal", nnz_noise=6.0, nnz_edges=(1, 2, 4))
    g = 2 * (1 / 2.0) ** 2
    h = (1 / 6.0) ** 2 + (1 / 3.0) ** 2
    assert curvature_share(plan) == pytest.approx(h / (g + h), rel=1e-14)


def test_curvature_share_is_scale_free_and_monotone():
    """Scaling every noise by one factor leaves the share unchanged; more curvature noise
    (a smaller curvature mu) lowers it; the share lies in (0, 1)."""
    base = curvature_share(_newton_plan())
    scaled = curvature_share(_newton_plan(gradient_noise=(6.0, 12.0, 12.0),
                                          hessian_noise=(9.0, 15.0)))
    noisier = curvature_share(_newton_plan(hessian_noise=(30.0, 50.0)))
    assert 0.0 < noisier < base < 1.0
    assert scaled == pytest.approx(base, rel=1e-13)


# ---------------------------------------------------------------------- plan_secure_gaussian
@pytest.mark.parametrize("kappa", [1.0, 1.001, 1.3])
def test_plan_secure_gaussian_largest_mu_at_fixed_inflation(kappa):
    """The plan's secure event (kappa^2 mu^2 / 2-zCDP) meets rho; a mu 1e-8 larger breaks it."""
    rho = 0.3
    calls = []

    def plan_at(mu):
        calls.append(mu)
        return mu

    def event_of(mu):
        return DiscreteGaussianNoise(Gaussian(1.0 / mu), kappa)

    mu = plan_secure_gaussian(plan_at, event_of, rho)
    assert kappa**2 * mu**2 / 2 <= rho
    assert zcdp_rho(event_of(mu)) <= rho
    assert zcdp_rho(event_of(mu * (1 + 1e-8))) > rho
    assert calls[0] == pytest.approx(math.sqrt(2 * rho), rel=1e-15)  # starts at sqrt(2 rho)
    assert len(calls) <= 2  # "one or two rounds" (kappa = 1: only float rounding can cost one)


def test_plan_secure_gaussian_real_rounding_grid():
    """With the inflation of a real secure grid (which depends on the planned noise), the
    plan meets rho and is the largest to 1e-8: one Gaussian of sensitivity 2 in 7
    coordinates (grid_bits 10: a visible inflation)."""
    rng, sens, dim, rho = SecureRandom(grid_bits=10), 2.0, 7, 0.05

    def event_of(z):
        return DiscreteGaussianNoise(Gaussian(z, sens, relation=REPLACE),
                                     sensitivity_inflation(rng, z, dim, sens))

    z = plan_secure_gaussian(lambda mu: sens / mu, event_of, rho)
    assert event_of(z).sensitivity_inflation > 1.0
    assert zcdp_rho(event_of(z)) <= rho
    assert zcdp_rho(event_of(z / (1 + 1e-8))) > rho  # less noise: a larger mu


def test_plan_secure_gaussian_errors():
    """rho must be positive; a budget no plan can meet is an internal RuntimeError."""
    with pytest.raises(ValueError, match="rho must be positive"):
        plan_secure_gaussian(lambda mu: mu, lambda mu: Gaussian(1.0 / mu), 0.0)
    with pytest.raises(RuntimeError, match="no secure plan meets the zCDP budget"):
        plan_secure_gaussian(lambda mu: mu, lambda mu: EpsilonDelta(1.0), 0.1, max_rounds=3)


# ----------------------------------------------------------------------------- pilot_applies
def _theorem_plan(unconstrained_steps: float | None) -> NoisyGDPlan:
    details = {} if unconstrained_steps is None else {"unconstrained_steps": unconstrained_steps}
    return NoisyGDPlan(noise_multiplier=10.0, steps=100, learning_rate=0.1, schedule="constant",
                       averaging="suffix", regime=Regime.CONVEX_SMOOTH, bound_name="12.2.2",
                       bound_value=0.1, mu=1.0, details=details)


def _pilot_args(**changes):
    args = {"facts": _facts(), "budget": Budget(1.0, 1e-5), "share": 0.1, "source": THEOREM,
            "horizon": None, "plan_kwargs": {}, "theorem_plan": _theorem_plan(1000.0)}
    args.update(changes)
    return args


def test_pilot_applies_when_every_condition_holds():
    """All of the docstring's conditions met (accelerate left to its default, True)."""
    assert pilot_applies(**_pilot_args()) is True
    assert pilot_applies(**_pilot_args(plan_kwargs={"accelerate": True})) is True
    assert pilot_applies(**_pilot_args(theorem_plan=_theorem_plan(PILOT_MIN_STEPS))) is True


@pytest.mark.parametrize("change", [
    {"share": 0.0},
    {"source": DECLARED},
    {"budget": Budget(1.0, 1e-5, secure=True)},
    {"facts": _facts(curvature_sums=False)},
    {"facts": _facts(curvature_sums=None)},
    {"facts": _facts(radius=3.0)},
    {"facts": _facts(max_iter=50)},
    {"horizon": "ridge"},
    {"plan_kwargs": {"max_steps": 500}},
    {"plan_kwargs": {"accelerate": False}},
    {"theorem_plan": _theorem_plan(PILOT_MIN_STEPS - 1)},
    {"theorem_plan": _theorem_plan(None)},
], ids=["no-share", "declared", "secure", "no-curvature", "unknown-curvature", "radius",
        "max-iter", "horizon", "max-steps", "textbook", "short-horizon", "no-horizon"])
def test_pilot_applies_each_condition_is_necessary(change):
    """Breaking any single condition of the docstring turns the pilot off."""
    assert pilot_applies(**_pilot_args(**change)) is False


def test_pilot_applies_needs_a_smoothness():
    """A loss that states no smoothness (constants.smoothness None) gets no pilot."""
    facts = _facts()
    facts = dataclasses.replace(facts, constants=dataclasses.replace(facts.constants,
                                                                     smoothness=None))
    assert pilot_applies(**_pilot_args(facts=facts)) is False


# ----------------------------------------------------------------------------- piloted_event
@pytest.mark.parametrize("relation", [ADD, REPLACE])
def test_piloted_event_structure_and_rho(relation):
    """Composed((pilot, Gaussian(Delta / mu_rest, Delta))): the second part is exactly
    mu_rest-GDP, and zCDP adds up to (mu_p^2 + mu_rest^2) / 2."""
    delta_sens = relation.clipped_sum_sensitivity
    mu_p, mu_rest = 0.3, 0.9
    pilot = SelfComposed(Gaussian(delta_sens * math.sqrt(4) / mu_p, delta_sens,
                                  relation=relation), 4)
    ev = piloted_event(pilot, mu_rest, relation)
    assert isinstance(ev, Composed) and ev.events[0] is pilot
    rest = ev.events[1]
    assert rest == Gaussian(delta_sens / mu_rest, sensitivity=delta_sens, relation=relation)
    assert rest.mu == pytest.approx(mu_rest, rel=1e-15)
    assert ev.neighbouring is relation
    assert zcdp_rho(ev) == pytest.approx((mu_p**2 + mu_rest**2) / 2, rel=1e-13)


@pytest.mark.parametrize("steps", [1, 7, 250])
def test_piloted_event_equals_any_number_of_steps(steps):
    """The stand-in Gaussian has the privacy curve of T NoisyGD steps at z = sqrt(T) Delta /
    mu_rest, whatever T: dp_accounting's PLD epsilons agree."""
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    mu_rest, delta = 0.8, 1e-6
    ev = piloted_event(Gaussian(10.0), mu_rest, ADD).events[1]

    def eps(event):
        acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
        acc.compose(event)
        return acc.get_epsilon(delta)

    stand_in = eps(dp_accounting.GaussianDpEvent(ev.noise_multiplier / ev.sensitivity))
    z = math.sqrt(steps) / mu_rest
    run = eps(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), steps))
    assert stand_in == pytest.approx(run, rel=2e-3)


def test_piloted_event_errors():
    """mu_rest must be positive; the pilot must be under the same relation."""
    with pytest.raises(ValueError, match="mu_rest must be positive"):
        piloted_event(Gaussian(1.0), 0.0, ADD)
    with pytest.raises(ValueError, match="different neighbouring relations"):
        piloted_event(Gaussian(1.0), 1.0, REPLACE)


# ---------------------------------------------------------------------- warn_if_budget_binds
def _plan_with(details, steps=1000) -> NoisyGDPlan:
    return dataclasses.replace(_theorem_plan(None), steps=steps, details=details)


def test_warn_if_budget_binds_names_the_wanted_steps():
    """A binding budget warns ComputeBudgetWarning naming the wanted steps, the budget and
    the steps made, attributed to the caller (stacklevel 2)."""
    plan = _plan_with({"compute_budget_binds": True, "unconstrained_steps": 12345.4,
                       "compute_budget": 1000, "steps_rule": "my rule"})
    with pytest.warns(ComputeBudgetWarning) as record:
        warn_if_budget_binds(plan)
    assert len(record) == 1
    msg = str(record[0].message)
    assert "wanted 12,345 steps (my rule)" in msg
    assert "compute budget of 1,000 steps binds" in msg and "makes 1,000" in msg
    assert "step_budget" in msg
    assert record[0].filename == __file__


def test_warn_if_budget_binds_infinite_wish():
    """An infinite wanted T is shown as "more than 10,000,000"."""
    plan = _plan_with({"compute_budget_binds": True, "unconstrained_steps": math.inf,
                       "compute_budget": 1000})
    with pytest.warns(ComputeBudgetWarning, match="wanted more than 10,000,000 steps"):
        warn_if_budget_binds(plan)


@pytest.mark.parametrize("details", [{}, {"compute_budget_binds": False,
                                          "unconstrained_steps": 5000.0,
                                          "compute_budget": 1000}])
def test_warn_if_budget_binds_silent_otherwise(details):
    """No warning when the plan does not say the budget binds."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_budget_binds(_plan_with(details))


@pytest.mark.parametrize("budget", [20, 100_000])
def test_warn_if_budget_binds_follows_a_real_plan(budget):
    """On the planner's own plans: a warning exactly when details say the budget binds."""
    constants = LogisticLoss(l2=1e-3).constants(1.0)
    plan = plan_noisy_gd(1.0, 1e-5, 20000, 11, constants, step_budget=budget)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        warn_if_budget_binds(plan)
    binds = plan.details["compute_budget_binds"]
    assert binds == (plan.details["unconstrained_steps"] > budget)
    assert len(record) == int(binds)
    if binds:
        assert record[0].category is ComputeBudgetWarning
        wanted = f"{plan.details['unconstrained_steps']:,.0f}"
        assert f"wanted {wanted} steps" in str(record[0].message)


# ----------------------------------------------------------------------------- planned_ridge
def _ridge(n, d, clip, mu, f0, sens):
    """lambda* = sqrt(d) C Delta / (n mu sqrt(2 n F0)) (noisygd.planning.ridge_strength)."""
    return math.sqrt(d) * clip * sens / (n * mu * math.sqrt(2 * n * f0))


def test_planned_ridge_without_option_or_a_number():
    """No option: 0; a number: that number (the facts need no loss-at-zero bound)."""
    facts = _facts(loss_at_zero_bound=None)
    budget = Budget(1.0, 1e-5)
    assert planned_ridge(facts, budget, None, None) == 0.0
    assert planned_ridge(facts, budget, 0.5, 0.0) == 0.0
    assert planned_ridge(facts, budget, 0.5, 0.25) == 0.25


@pytest.mark.parametrize("relation", [ADD, REPLACE])
def test_planned_ridge_auto_closed_form(relation):
    """l2="auto" at a given mu: the closed form with C the Lipschitz constant sqrt(2) (logistic,
    unit rows plus intercept), d = n_params, Delta the relation's sensitivity, F0 = log 2;
    l2_factor multiplies it and dim replaces d."""
    facts = _facts(relation, n=1000.0, d=5)
    sens = 1.0 if relation is ADD else 2.0
    want = _ridge(1000.0, 6, math.sqrt(2), 0.7, math.log(2), sens)
    budget = Budget(1.0, 1e-5)
    assert planned_ridge(facts, budget, 0.7, "auto") == pytest.approx(want, rel=1e-12)
    assert planned_ridge(facts, budget, 0.7, "auto", factor=3.0) == pytest.approx(3 * want,
                                                                                  rel=1e-12)
    assert planned_ridge(facts, budget, 0.7, "auto", dim=24) == pytest.approx(want * 2,
                                                                              rel=1e-12)


def test_planned_ridge_auto_uses_the_clip_and_calibrates_mu():
    """The user's clip replaces L; with mu None the budget's exact GDP mu is used (here found
    by root finding on the Gaussian's (epsilon, delta) curve)."""
    facts = _facts(clip=0.5)
    mu = _gdp_mu(1.0, 1e-5)
    want = _ridge(1000.0, 6, 0.5, mu, math.log(2), 1.0)
    assert planned_ridge(facts, Budget(1.0, 1e-5), None, "auto") == pytest.approx(want, rel=1e-8)


def test_planned_ridge_auto_with_released_facts():
    """A released comparator radius replaces sqrt(2 n F0); with a released mean curvature
    too, the ridge is 2 d C^2 Delta^2 / (mu^2 n^2 D0^2 h)."""
    d0, h, mu, clip = 3.0, 0.2, 0.6, math.sqrt(2)
    facts = _facts(released=ReleasedFacts(comparator_radius=d0))
    want = math.sqrt(6) * clip / (1000.0 * mu * d0)
    assert planned_ridge(facts, Budget(1.0, 1e-5), mu, "auto") == pytest.approx(want, rel=1e-12)
    facts = _facts(released=ReleasedFacts(comparator_radius=d0, mean_curvature=h))
    want = 2 * 6 * clip**2 / (mu**2 * 1000.0**2 * d0**2 * h)
    assert planned_ridge(facts, Budget(1.0, 1e-5), mu, "auto", factor=2.0) == pytest.approx(
        2 * want, rel=1e-12)


def test_planned_ridge_errors():
    """Bad options are ValueErrors; "auto" without F0 or with a radius is an AssumptionError."""
    facts, budget = _facts(), Budget(1.0, 1e-5)
    with pytest.raises(ValueError, match=r"l2_factor'\] scales the planned ridge"):
        planned_ridge(facts, budget, 1.0, 0.1, factor=2.0)
    with pytest.raises(ValueError, match=r"method_options\['l2_factor'\] must be positive"):
        planned_ridge(facts, budget, 1.0, "auto", factor=0.0)
    with pytest.raises(ValueError, match=r"must be 'auto' or a number >= 0, got 'big'"):
        planned_ridge(facts, budget, 1.0, "big")
    with pytest.raises(ValueError, match=r"method_options\['l2'\] must be finite and >= 0"):
        planned_ridge(facts, budget, 1.0, -0.1)
    with pytest.raises(AssumptionError, match="loss_at_zero_bound"):
        planned_ridge(_facts(loss_at_zero_bound=None), budget, 1.0, "auto")
    with pytest.raises(AssumptionError, match="with a projection radius give l2= instead"):
        planned_ridge(_facts(radius=2.0), budget, 1.0, "auto")


# ------------------------------------------------------------------------------- scaled_clip
def _factor(q: float, sharp: float) -> float:
    """f = 1 - (1 - s) r(q), r = clip(log(q / 0.02) / log(0.2 / 0.02), 0, 1)."""
    r = min(1.0, max(0.0, math.log(q / 0.02) / math.log(10.0)))
    return 1.0 - (1.0 - sharp) * r


@pytest.mark.parametrize("q", [0.03, 0.0632, 0.15])
def test_scaled_clip_between_the_thresholds(q):
    """The clip is the base clip (L without a user clip) times the log-linear factor; the
    other facts are unchanged and the input is not modified."""
    facts = _facts()
    scaled, rule = scaled_clip(facts, 0.5, q, ratio_source="NoisyGD's plan")
    f = _factor(q, 0.5)
    assert 0.5 < f < 1.0
    assert scaled.clip == pytest.approx(math.sqrt(2) * f, rel=1e-12)
    assert dataclasses.replace(scaled, clip=None) == facts and facts.clip is None
    assert rule["base_clip"] == pytest.approx(math.sqrt(2), rel=1e-15)
    assert rule["factor"] == pytest.approx(f, rel=1e-12)
    assert rule["clip"] == pytest.approx(scaled.clip, rel=1e-15)
    assert rule["sharp"] == 0.5 and rule["noise_to_signal"] == q
    assert "NoisyGD's plan" in rule["rule"]


def test_scaled_clip_limits_and_user_clip():
    """q >= 0.2: the factor is the sharp ratio; q <= 0.02: 1 and the same facts object; the
    user's clip is the base."""
    facts = _facts(clip=2.0)
    scaled, rule = scaled_clip(facts, 0.25, 0.5, ratio_source="x")
    assert rule["factor"] == pytest.approx(0.25) and scaled.clip == pytest.approx(0.5)
    same, rule = scaled_clip(facts, 0.25, 0.01, ratio_source="x")
    assert same is facts and rule["factor"] == 1.0 and rule["clip"] == 2.0


@pytest.mark.parametrize("ratio, not_applied, why", [
    (None, None, "no noise-to-signal ratio to read"),
    (0.1, "a fixed clip", "a fixed clip"),
])
def test_scaled_clip_not_applied(ratio, not_applied, why):
    """No ratio or a reason not to apply: factor 1, the same facts, the reason recorded."""
    facts = _facts()
    same, rule = scaled_clip(facts, 0.5, ratio, ratio_source="x", not_applied=not_applied)
    assert same is facts
    assert rule["factor"] == 1.0 and rule["clip"] == rule["base_clip"]
    assert rule["rule"] == f"not applied: {why}"


def test_scaled_clip_errors():
    """A sharp ratio outside (0, 1] is refused when applied; no clip and no L is refused."""
    with pytest.raises(ValueError, match=r"sharp must be in \(0, 1\]"):
        scaled_clip(_facts(), 1.5, 0.1, ratio_source="x")
    facts = PublicFacts.from_objective(SquaredLoss(), 3, row_norm_bound=1.0, n_samples=100,
                                       relation=ADD)
    with pytest.raises(AssumptionError, match="states no Lipschitz constant"):
        scaled_clip(facts, 0.5, 0.1, ratio_source="x")


# -------------------------------------------------------------------------------- ssp_bounds
def test_ssp_bounds_closed_form():
    """(sqrt(beta), sqrt(2 F0))."""
    b, y = ssp_bounds(2.25, 8.0)
    assert b == pytest.approx(1.5, rel=1e-15) and y == pytest.approx(4.0, rel=1e-15)


def test_ssp_bounds_round_trip_through_the_squared_loss():
    """For the squared loss with rows in the B-ball and |y| <= Y (intercept column included)
    the declared constants give back (sqrt(B^2 + 1), Y)."""
    obj = SquaredLoss(target_bound=3.0)
    facts = PublicFacts.from_objective(obj, 4, row_norm_bound=2.0, n_samples=100,
                                       relation=ADD)
    b, y = ssp_bounds(facts.constants.smoothness, facts.loss_at_zero_bound)
    assert b == pytest.approx(math.sqrt(5.0), rel=1e-14)
    assert y == pytest.approx(3.0, rel=1e-14)


@pytest.mark.parametrize("beta, f0, match", [
    (None, 1.0, "declared smoothness"),
    (0.0, 1.0, "declared smoothness"),
    (-1.0, 1.0, "declared smoothness"),
    (math.nan, 1.0, "declared smoothness"),
    (1.0, None, "public bound on |y|"),
    (1.0, 0.0, "public bound on |y|"),
    (1.0, math.nan, "public bound on |y|"),
])
def test_ssp_bounds_refuses_missing_constants(beta, f0, match):
    """No (or a non-positive) smoothness or loss-at-zero bound: AssumptionError."""
    with pytest.raises(AssumptionError, match=match.replace("|", r"\|")):
        ssp_bounds(beta, f0)
