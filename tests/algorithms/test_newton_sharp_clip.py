"""Newton's sharp clip after the first step (noisygd.algorithms.newton, module doc): the
noise-to-signal ratio's closed form, the clip each release uses and its noise, the event
unchanged, the regimes, the checks, the estimators' option and the audit."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import noisygd.algorithms.newton as newton_module
from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.events import Neighbouring
from noisygd.algorithms.newton import NewtonPlan, newton, output_noise_to_signal, plan_newton
from noisygd.objectives.glm import LogisticLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.planning import sharp_clip_factor

ADD = Neighbouring.ADD_REMOVE


def test_noise_to_signal_is_the_ratio_of_the_newton_decrements():
    """q = sigma sqrt(tr H^-1) / sqrt(g^T H^-1 g) for the full form (H = V diag(l) V^T)
    and the diagonal form, computed from the matrices; a zero gradient gives inf."""
    rng = np.random.default_rng(0)
    V, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    lam = np.array([0.5, 2.0, 7.0, 40.0])
    H = V @ np.diag(lam) @ V.T
    g = rng.standard_normal(4)
    step = -np.linalg.solve(H, g)
    want = 1.7 * math.sqrt(np.trace(np.linalg.inv(H))) / math.sqrt(g @ np.linalg.solve(H, g))
    assert output_noise_to_signal(lam, 1.7, g, step) == pytest.approx(want, rel=1e-12)
    step_diag = -g / lam
    want_diag = 1.7 * math.sqrt(np.sum(1 / lam)) / math.sqrt(np.sum(g * g / lam))
    assert output_noise_to_signal(lam, 1.7, g, step_diag) == pytest.approx(want_diag,
                                                                            rel=1e-12)
    assert output_noise_to_signal(lam, 1.7, np.zeros(4), np.zeros(4)) == math.inf


def test_noise_to_signal_numerator_is_the_rms_decrement_of_the_noise():
    """sigma^2 tr H^-1 = E xi^T H^-1 xi for xi ~ N(0, sigma^2 I): a Monte Carlo mean of
    20 000 draws within 3 standard errors (false failure about 0.3%, fixed seed)."""
    rng = np.random.default_rng(1)
    lam = np.array([0.3, 1.0, 4.0])
    xi = 2.0 * rng.standard_normal((20_000, 3))
    draws = np.sum(xi * xi / lam, axis=1)
    closed = output_noise_to_signal(lam, 2.0, np.ones(3), -np.ones(3) / lam) ** 2 \
        * float(np.sum(1 / lam))
    assert abs(draws.mean() - closed) <= 3 * draws.std() / math.sqrt(draws.size)


def _problem(n, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / math.sqrt(d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w = rng.standard_normal(d)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-(X @ w))), 1.0, -1.0)
    return ArrayOracle(LogisticLoss(l2=1e-4), X, y, row_norm_bound=1.0)


def _plan(oracle, eps, sharp, **kw):
    c = oracle.constants()
    plan = plan_newton(calibrate_mu(eps, 1e-5), relation=ADD, n_params=oracle.n_params,
                       n_samples=oracle.n_rows, n_step=oracle.n_rows, clip=c.lipschitz,
                       curvature_clip=c.smoothness, **kw)
    return dataclasses.replace(plan, sharp=sharp)


class _Recording:
    """An oracle proxy that records the clip of every gradient call."""

    def __init__(self, oracle):
        self._oracle, self.clips = oracle, []

    def clipped_gradient_sum(self, theta, clip):
        self.clips.append(clip)
        return self._oracle.clipped_gradient_sum(theta, clip)

    def __getattr__(self, name):
        return getattr(self._oracle, name)


def test_noise_limited_run_clips_later_steps_at_half_with_noise_to_match(monkeypatch):
    """A noise-limited run (300 rows, epsilon 0.5): q >= 0.2, so steps 1.. clip at C/2 and
    their noise sd is z_t C/2; step 0 keeps C; the event is the plan's without the rule."""
    oracle = _problem(300)
    plan = _plan(oracle, 0.5, 0.5)
    sds = []
    real = newton_module.add_gaussian_noise
    monkeypatch.setattr(newton_module, "add_gaussian_noise",
                        lambda v, sd, rng: (sds.append(sd), real(v, sd, rng))[1])
    proxy = _Recording(oracle)
    res = newton(proxy, plan, np.random.default_rng(0))
    record = res.info["sharp_clip"]
    assert record["noise_to_signal"] >= 0.2 and record["factor"] == 0.5
    C = plan.clip
    assert proxy.clips == [C] + [C / 2] * (plan.steps - 1)
    gradient_sds = [sd for sd in sds if sd not in {z * plan.curvature_clip
                                                   for z in plan.hessian_noise}]
    want = [plan.gradient_noise[0] * C] + [z * C / 2 for z in plan.gradient_noise[1:]]
    np.testing.assert_allclose(gradient_sds, want, rtol=1e-15)
    assert res.event == dataclasses.replace(plan, sharp=None).event == plan.event
    again = newton(oracle, plan, np.random.default_rng(0))
    assert np.array_equal(again.theta, res.theta)  # the same seed gives the same model


def test_optimisation_limited_run_keeps_its_clip():
    """40 000 rows at epsilon 8: q <= 0.02, factor 1, the same model as without the rule."""
    oracle = _problem(40_000)
    plan = _plan(oracle, 8.0, 0.5)
    res = newton(oracle, plan, np.random.default_rng(3))
    assert res.info["sharp_clip"]["noise_to_signal"] <= 0.02
    assert res.info["sharp_clip"]["factor"] == 1.0
    off = newton(oracle, dataclasses.replace(plan, sharp=None), np.random.default_rng(3))
    assert np.array_equal(res.theta, off.theta) and "sharp_clip" not in off.info


def test_the_factor_follows_the_noise_regime():
    for q in (0.01, 0.05, 0.2, 3.0):
        f = sharp_clip_factor(q, 0.5)
        assert 0.5 <= f <= 1.0
    assert sharp_clip_factor(0.01, 0.5) == 1.0 and sharp_clip_factor(0.2, 0.5) == 0.5


@pytest.mark.parametrize("bad", [0.0, 1.5, -0.1, float("nan")])
def test_plan_refuses_a_sharp_ratio_outside_the_unit_interval(bad):
    oracle = _problem(50)
    with pytest.raises(ValueError, match="sharp"):
        _plan(oracle, 1.0, bad)


def test_secure_plan_refuses_the_rule_and_the_solver_drops_it():
    from noisygd.solvers.base import Budget
    from noisygd.solvers.newton import NewtonSolver

    oracle = _problem(50)
    with pytest.raises(ValueError, match="secure"):
        _plan(oracle, 1.0, 0.5, secure=True)
    facts = dataclasses.replace(_facts(oracle), options={"sharp_clip": 0.5})
    assert NewtonSolver().plan(facts, Budget(1.0, 1e-5)).sharp == 0.5
    assert NewtonSolver().plan(facts, Budget(1.0, 1e-5, secure=True)).sharp is None


def _facts(oracle):
    from noisygd.solvers.base import PublicFacts

    return PublicFacts.from_oracle(oracle, relation=ADD, n_samples=float(oracle.n_rows))


def test_estimators_pass_their_sharp_ratio_to_newton():
    from noisygd.estimators import DPLinearRegression, DPLogisticRegression

    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, (400, 3)) / 2
    y = (X @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.standard_normal(400) > 0).astype(int)
    est = DPLogisticRegression(epsilon=1.0, method="newton", classes=[0, 1],
                               random_state=0).fit(X, y)
    record = est.fit_info_["plans"][0]["sharp_clip"]
    assert record["sharp"] == 0.5 and 0.5 <= record["factor"] <= 1.0
    off = DPLogisticRegression(epsilon=1.0, method="newton", classes=[0, 1], random_state=0,
                               method_options={"sharp_clip": 1.0}).fit(X, y)
    assert off.fit_info_["plans"][0]["sharp_clip"]["factor"] == 1.0
    declared = DPLogisticRegression(epsilon=1.0, method="newton", classes=[0, 1], clip=0.7,
                                    random_state=0).fit(X, y)
    assert "sharp_clip" not in declared.fit_info_["plans"][0]  # a declared clip is kept
    reg = DPLinearRegression(epsilon=1.0, method="newton", random_state=0).fit(X, X[:, 0])
    assert reg.fit_info_["plans"][0]["sharp_clip"]["sharp"] == pytest.approx(0.6745 / 1.345,
                                                                              abs=1e-4)


def test_newton_plan_default_has_no_sharp_clip():
    plan = plan_newton(1.0, relation=ADD, n_params=3, n_samples=100, n_step=100, clip=1.0,
                       curvature_clip=1.0, steps=3)
    assert isinstance(plan, NewtonPlan) and plan.sharp is None
    assert "sharp_clip" not in plan.summary()


def test_audit_problem_runs_the_rule_at_its_worst_case():
    """The audit's sharp entry: both datasets clip steps 1.. at C/2, and the canary's
    clipped gradients differ by exactly C then C/2 (the release's sensitivity in units of
    the clip each step uses)."""
    from noisygd.audit.problems import make_problem

    p = make_problem("newton_sharp", epsilon=2.0)
    runs = [p.run(k, np.random.default_rng(0)) for k in (0, 1)]
    assert runs[0].event == runs[1].event
    assert [r.info["sharp_clip"]["factor"] for r in runs] == [0.5, 0.5]
    assert p.settings["sharp"] == 0.5 and p.name == "newton_sharp"
