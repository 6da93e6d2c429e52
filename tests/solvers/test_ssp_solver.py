"""method="ssp": AdaSSP as a Solver (plan from public facts, run on an oracle), in fit_private
and in DPLinearRegression."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from noisygd.accounting.events import Composed, Gaussian, Neighbouring
from noisygd.accounting.gdp import calibrate_mu, gaussian_mu
from noisygd.estimators import DPLinearRegression
from noisygd.exceptions import AssumptionError
from noisygd.objectives.glm import LogisticLoss, SquaredLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.solvers import SOLVERS, Budget, PublicFacts, SSPSolver, get_solver
from noisygd.training import fit_private

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _data(n: int = 400, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d)) / math.sqrt(d)
    y = np.clip(X @ np.array([1.0, -0.5, 0.3])[:d] + 0.05 * rng.normal(size=n), -1.0, 1.0)
    return X, y


def _oracle(l2: float = 0.0, **kw) -> ArrayOracle:
    X, y = _data()
    return ArrayOracle(SquaredLoss(l2=l2, fit_intercept=False, target_bound=1.0, **kw), X, y,
                       row_norm_bound=1.0)


def _facts(oracle, relation: str = "replace_one", **kw) -> PublicFacts:
    return PublicFacts.from_oracle(oracle, n_samples=oracle.n_rows, relation=relation, **kw)


def test_named_once_and_resolved():
    assert SOLVERS["ssp"] is SSPSolver
    assert isinstance(get_solver("ssp"), SSPSolver)
    assert SSPSolver.gaussian and not SSPSolver.clips_gradients and SSPSolver.secure_mode
    assert set(SSPSolver.relations) == {Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE}


def test_plan_reads_the_declared_bounds_and_spends_mu():
    oracle = _oracle()
    solver = SSPSolver()
    plan = solver.plan(_facts(oracle), Budget(1.0, 1e-5))
    assert plan.row_bound == pytest.approx(1.0) and plan.target_bound == pytest.approx(1.0)
    assert gaussian_mu(solver.planned_event(plan)) == pytest.approx(calibrate_mu(1.0, 1e-5))
    assert plan.sensitivity == 2.0  # replace-one
    res = solver.run(plan, oracle, np.random.default_rng(0))
    assert res.event == solver.planned_event(plan)


def test_prior_event_is_paid_in_quadrature():
    oracle = _oracle()
    prior = Gaussian(10.0, 1.0)
    plan = SSPSolver().plan(_facts(oracle, "add_remove"), Budget(1.0, 1e-5, prior_event=prior))
    total = math.hypot(gaussian_mu(plan.event), gaussian_mu(prior))
    assert total == pytest.approx(calibrate_mu(1.0, 1e-5), rel=1e-12)


@pytest.mark.parametrize("objective", [LogisticLoss(), LogisticLoss(l2=0.1)])
def test_other_losses_are_refused(objective):
    X, _ = _data()
    oracle = ArrayOracle(objective, X, (X[:, 0] > 0).astype(float), row_norm_bound=1.0)
    with pytest.raises(ValueError, match="only to the squared loss"):
        SSPSolver().plan(_facts(oracle), Budget(1.0, 1e-5))


def test_refusals_clip_steps_options_and_missing_target_bound():
    oracle = _oracle()
    s = SSPSolver()
    with pytest.raises(ValueError, match="does not clip"):
        s.plan(_facts(oracle, clip=1.0), Budget(1.0, 1e-5))
    with pytest.raises(ValueError, match="takes no steps"):
        s.plan(_facts(oracle, max_iter=10), Budget(1.0, 1e-5))
    with pytest.raises(TypeError, match=r"\['steps'\] is not an option of method='ssp'"):
        s.plan(_facts(oracle, options={"steps": 3}), Budget(1.0, 1e-5))
    with pytest.raises(TypeError, match="unknown method_options for method='ssp': 'stepz'"):
        s.plan(_facts(oracle, options={"stepz": 3}), Budget(1.0, 1e-5))
    X, y = _data()
    no_bound = ArrayOracle(SquaredLoss(fit_intercept=False), X, y, row_norm_bound=1.0)
    with pytest.raises(AssumptionError, match=r"bound on \|y\|"):
        s.plan(_facts(no_bound), Budget(1.0, 1e-5))


def test_secure_mode_plans_discrete_gaussian_releases_within_the_zcdp_budget():
    from noisygd.accounting.events import DiscreteGaussianNoise
    from noisygd.accounting.zcdp import zcdp_rho
    from noisygd.mechanisms.secure import SecureRandom

    oracle = _oracle()
    budget = Budget(1.0, 1e-5, secure=True)
    s = SSPSolver()
    plan = s.plan(_facts(oracle), budget)
    event = s.planned_event(plan)
    assert plan.secure and all(isinstance(e, DiscreteGaussianNoise) for e in event.events)
    assert all(e.sensitivity_inflation >= 1.0 for e in event.events)
    rho = zcdp_rho(event)
    assert rho <= budget.secure_rho() * (1 + 1e-12)
    assert rho >= 0.999 * budget.secure_rho()  # the budget is spent, not wasted
    res = s.run(plan, oracle, SecureRandom())
    assert res.event == event and np.all(np.isfinite(res.theta))
    with pytest.raises(TypeError, match="secure"):
        s.run(plan, oracle, np.random.default_rng(0))
    with pytest.raises(TypeError, match="secure"):
        s.run(s.plan(_facts(oracle), Budget(1.0, 1e-5)), oracle, SecureRandom())


def test_estimator_secure_fit_meets_the_budget():
    X, y = _data(n=1000)
    model = DPLinearRegression(method="ssp", secure=True, target_range=(-1.0, 1.0)).fit(X, y)
    assert model.privacy_.epsilon <= 1.0 * (1 + 1e-9)


def test_run_refuses_an_oracle_with_other_bounds():
    s = SSPSolver()
    plan = s.plan(_facts(_oracle()), Budget(1.0, 1e-5))
    X, y = _data()
    other = ArrayOracle(SquaredLoss(fit_intercept=False, target_bound=1.0), X, y,
                        row_norm_bound=2.0)
    with pytest.raises(ValueError, match="other row or target bounds"):
        s.run(plan, other, np.random.default_rng(0))


def test_huge_epsilon_gives_the_ridge_solution_of_the_objective():
    """eps = 1e6, replace-one (n public): the ridge solution (X^T X + n l2 I)^{-1} X^T y."""
    X, y = _data()
    n, d = X.shape
    oracle = _oracle(l2=0.05)
    fit = fit_private([oracle], method="ssp", epsilon=1e6, delta=1e-6,
                      relation="replace_one", rng=np.random.default_rng(0))
    ridge = np.linalg.solve(X.T @ X + n * 0.05 * np.eye(d), X.T @ y)
    np.testing.assert_allclose(fit.thetas[0], ridge, rtol=0, atol=1e-3)


def test_fit_private_add_remove_pays_the_count_and_meets_the_budget():
    fit = fit_private([_oracle()], method="ssp", epsilon=1.0, delta=1e-5,
                      rng=np.random.default_rng(0))
    assert isinstance(fit.event, Composed)
    gaussians = [e for e in fit.event.events if isinstance(e, Gaussian)]
    assert len(gaussians) == 1  # the count
    ssp = [e for e in fit.event.events if isinstance(e, Composed)]
    assert len(ssp) == 1 and len(ssp[0].events) == 3
    assert gaussian_mu(fit.event) == pytest.approx(calibrate_mu(1.0, 1e-5), rel=1e-9)
    assert fit.privacy.epsilon <= 1.0 + 1e-9


def test_estimator_with_ssp_same_seed_same_model_and_close_at_huge_epsilon():
    X, y = _data(n=2000)
    kw = dict(method="ssp", target_range=(-1.0, 1.0), row_norm_bound=1.0, l2=0.0)
    a = DPLinearRegression(epsilon=1.0, random_state=3, **kw).fit(X, y)
    b = DPLinearRegression(epsilon=1.0, random_state=3, **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    big = DPLinearRegression(epsilon=1e7, delta=1e-6, random_state=0, **kw).fit(X, y)
    from sklearn.linear_model import LinearRegression

    ref = LinearRegression().fit(X, y)
    np.testing.assert_allclose(big.coef_, ref.coef_, atol=2e-3)
    assert big.intercept_ == pytest.approx(ref.intercept_, abs=2e-3)
    assert big.conditioning_["intercept_scale"] is not None  # conditioned coordinates


def test_estimator_default_method_stays_noisy_gd():
    """The default rule (docs/ssp.md, "When to choose it"): NoisyGD's worst-case bound is the
    smaller one for every public (n, d, epsilon, bounds), so method="auto" stays NoisyGD."""
    est = DPLinearRegression()
    est._check_common_params()
    assert est._solver.name == "noisy_gd"


def test_docs_example_runs():
    text = (DOCS / "ssp.md").read_text(encoding="utf-8")
    code = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    assert code
    namespace: dict[str, object] = {"__name__": "docs_ssp"}
    for block in code:
        exec(compile(block, "docs/ssp.md", "exec"), namespace)


def test_linear_regression_default_ridges():
    """l2=None: 0 with "ssp" (AdaSSP's own ridge); with NoisyGD the planned ridge
    ridge_strength(n, p, C, mu, F0 = h^2/2) at the public n (no count: n declared) and the
    run's clip C (Huber's, times the sharp clip's factor: tests/test_sharp_clip.py)."""
    from noisygd.estimators import huber_clip
    from noisygd.planning import ridge_strength

    X, y = _data(n=600)
    kw = dict(target_range=(-1.0, 1.0), target_range_share=0.0, n_samples_public=600,
              random_state=0)
    ssp = DPLinearRegression(method="ssp", **kw).fit(X, y)
    assert ssp.l2_ == 0.0
    gd = DPLinearRegression(scale_share=0.0, conditioning_share=0, **kw).fit(X, y)
    # h = 1, R = 1, s = R/sqrt(d) (no feature_bounds: c = 0; the regression's default s)
    rule = gd.fit_info_["plans"][0]["plan"]["clip_rule"]
    assert rule["base_clip"] == pytest.approx(huber_clip(1.0, 1.0, 1.0 / np.sqrt(X.shape[1])),
                                              rel=1e-12)
    clip = rule["base_clip"] * rule["factor"]
    expected = ridge_strength(n=600, n_params=4, clip=clip, mu=calibrate_mu(1.0, 1e-5),
                              loss_at_zero=0.5)
    assert gd.l2_ == pytest.approx(expected, rel=1e-9)
    assert DPLinearRegression(method="noisy_sgd", l2=None)._L2_DEFAULT == 1e-3
