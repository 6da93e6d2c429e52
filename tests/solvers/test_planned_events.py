"""Every solver states, from its plan alone, the event its run returns (``planned_event``).

The privacy ledger records that event before the run reads any data, and ``fit_private``
withholds a model whose run performed another; these tests run each solver on real data
and compare.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.accounting import best
from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.events import (
    Composed,
    Gaussian,
    Neighbouring,
    PoissonSampled,
    SampledWithoutReplacement,
    SelfComposed,
)
from noisygd.exceptions import UnknownOptionError
from noisygd.objectives.glm import LogisticLoss, SquaredLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.solvers import (
    SOLVERS,
    Budget,
    DPFTRLSolver,
    DynamicSolver,
    LangevinSolver,
    NewtonSolver,
    NoisyGDSolver,
    NoisySGDSolver,
    OutputPerturbationSolver,
    PublicFacts,
    RRPSGDSolver,
    SSPSolver,
)

ADD = Neighbouring.ADD_REMOVE
REPLACE = Neighbouring.REPLACE_ONE


def _oracle(objective=None, n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    y = np.where(X @ np.ones(d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return ArrayOracle(objective or LogisticLoss(l2=1e-2), X, y, row_norm_bound=1.0)


def _plan_and_run(solver, oracle, relation, budget, *, max_iter=None, options=None, seed=0):
    facts = PublicFacts.from_oracle(oracle, n_samples=oracle.n_rows, relation=relation,
                                    max_iter=max_iter, options=options)
    plan = solver.plan(facts, budget)
    return plan, solver.run(plan, oracle, np.random.default_rng(seed))


CASES = [
    pytest.param(NoisyGDSolver(), ADD, {}, None, id="noisy_gd-add_remove"),
    pytest.param(NoisyGDSolver(), REPLACE, {"averaging": "uniform"}, None,
                 id="noisy_gd-replace_one-override"),
    pytest.param(NoisySGDSolver(), ADD, {"expected_batch_size": 64, "epochs": 2}, None,
                 id="noisy_sgd"),
    pytest.param(DPFTRLSolver(), REPLACE, {"epochs": 2, "batch_size": 50}, None, id="dp_ftrl"),
    pytest.param(DPFTRLSolver(), REPLACE, {"epochs": 1, "restart_every_epoch": False}, None,
                 id="dp_ftrl-one-tree"),
    pytest.param(LangevinSolver(), REPLACE, {}, 200, id="langevin"),
    pytest.param(OutputPerturbationSolver(), REPLACE, {}, None, id="output_perturbation"),
    pytest.param(RRPSGDSolver(), REPLACE, {}, 3000, id="rrpsgd"),
    pytest.param(NewtonSolver(), ADD, {}, None, id="newton"),
    pytest.param(NewtonSolver(), REPLACE, {"hessian": "diagonal", "steps": 5,
                                                   "row_nonzeros": 4}, None,
                 id="newton-replace_one-diagonal"),
    pytest.param(DynamicSolver(), ADD, {}, None, id="dynamic"),
    pytest.param(DynamicSolver(), REPLACE, {"momentum": 0.9}, 50, id="dynamic-momentum"),
]


@pytest.mark.parametrize(("solver", "relation", "options", "max_iter"), CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_run_returns_the_planned_event(solver, relation, options, max_iter, seed):
    plan, result = _plan_and_run(solver, _oracle(), relation, Budget(1.0, 1e-5),
                                 max_iter=max_iter, options=options, seed=seed)
    planned = solver.planned_event(plan)
    assert result.event == planned
    assert type(result.event) is type(planned)
    # the planned event is within the budget the plan was made for
    assert best(planned, 1e-5).epsilon <= 1.0 * (1 + 1e-9)


def test_ssp_returns_the_planned_event():
    # SSP refuses every loss but the squared loss: its own oracle (targets +-1, within 1)
    oracle = _oracle(SquaredLoss(l2=1e-2, fit_intercept=False, target_bound=1.0))
    plan, result = _plan_and_run(SSPSolver(), oracle, ADD, Budget(1.0, 1e-5))
    assert result.event == SSPSolver().planned_event(plan)
    assert best(result.event, 1e-5).epsilon <= 1.0 * (1 + 1e-9)


def test_every_registered_solver_is_covered():
    covered = {type(p.values[0]).name for p in CASES} | {"ssp"}
    assert covered == set(SOLVERS)


def test_noisy_gd_steps_are_set_by_max_iter_not_by_an_option():
    # an option that overrode the planned steps ran a noise calibrated for other steps (more
    # epsilon than the budget, or noise wasted): refused, naming max_iter; max_iter plans the
    # noise for its steps, and the planned event is the run's
    with pytest.raises(UnknownOptionError, match=r"\['steps'\] is not an option.*max_iter"):
        _plan_and_run(NoisyGDSolver(), _oracle(), ADD, Budget(1.0, 1e-5), options={"steps": 7})
    plan, result = _plan_and_run(NoisyGDSolver(), _oracle(), ADD, Budget(1.0, 1e-5),
                                 max_iter=7)
    event = NoisyGDSolver().planned_event(plan)
    assert event == result.event and event.count == 7


def test_noisy_sgd_planned_event_meets_the_budget_and_its_noise_is_minimal():
    # One calibration (best accountant, rtol 2e-3) on the whole release, count included.
    count = Gaussian(50.0)
    facts = PublicFacts.from_oracle(_oracle(n=3000), n_samples=3000.0, relation=ADD,
                                    options={"expected_batch_size": 64, "epochs": 3})
    plan = NoisySGDSolver().plan(facts, Budget(1.0, 1e-5, prior_event=count))
    event = NoisySGDSolver().planned_event(plan)
    assert event == SelfComposed(PoissonSampled(64 / 3000, Gaussian(plan.noise_multiplier)),
                                 plan.steps)
    assert plan.steps == round(3 / (64 / 3000))
    whole = best(Composed((count, event)), 1e-5)
    assert whole.epsilon <= 1.0 * (1 + 1e-9)
    assert whole.accountant == "pld"
    # minimal to the calibration's rtol: a noise 0.5% smaller misses the target
    smaller = SelfComposed(PoissonSampled(64 / 3000, Gaussian(plan.noise_multiplier / 1.005)),
                           plan.steps)
    assert best(Composed((count, smaller)), 1e-5).epsilon > 1.0


def test_gaussian_solvers_plan_exactly_the_budget_mu():
    mu = calibrate_mu(1.0, 1e-5)
    for solver, relation, options in [(NoisyGDSolver(), ADD, {}),
                                      (DPFTRLSolver(), REPLACE, {"epochs": 2})]:
        facts = PublicFacts.from_oracle(_oracle(), n_samples=400, relation=relation,
                                        options=options)
        event = solver.planned_event(solver.plan(facts, Budget(1.0, 1e-5, mu=mu / 2)))
        assert best(event, 1e-5).by_accountant["gdp"] == pytest.approx(
            best(Gaussian(2.0 / mu), 1e-5).epsilon, rel=1e-9)


def test_rrpsgd_releases_the_worst_case_over_the_rounds():
    solver = RRPSGDSolver()
    plan, result = _plan_and_run(solver, _oracle(), REPLACE, Budget(1.0, 1e-5), max_iter=3000)
    realised = result.info["realised_event"]
    assert isinstance(realised.event, SampledWithoutReplacement)
    assert realised.count == result.info["R"] <= 3000
    assert result.event.count == plan.steps == 3000
    assert result.event == result.info["worst_case_event"]
    assert best(realised, 1e-5).epsilon <= best(result.event, 1e-5).epsilon


def test_from_objective_gives_the_facts_of_an_array_oracle():
    for objective in (LogisticLoss(l2=1e-3), SquaredLoss(l2=1e-2, radius=2.0, target_bound=1.0),
                      LogisticLoss(l2=0.0, radius=5.0, fit_intercept=False)):
        oracle = _oracle(objective)
        kwargs = {"n_samples": 400.0, "relation": REPLACE, "clip": 0.5, "max_iter": 9,
                  "options": {"epochs": 2}}
        assert PublicFacts.from_objective(objective, 3, row_norm_bound=1.0, **kwargs) == \
            PublicFacts.from_oracle(oracle, **kwargs)


def test_rrpsgd_remembered_calibration_is_the_fresh_one_and_keyed_by_the_prior():
    # the plan's noise search is remembered (rrpsgd._calibrated_noise_epsilon): a second plan
    # of the same run returns the fresh search's value exactly, and a prior release, which
    # leaves less budget to the run, is part of the key (more noise: a smaller epsilon_alg)
    from noisygd.solvers import rrpsgd

    oracle = _oracle()
    facts = PublicFacts.from_oracle(oracle, n_samples=oracle.n_rows, relation=REPLACE,
                                    max_iter=400)
    solver = RRPSGDSolver()
    plain = solver.plan(facts, Budget(1.0, 1e-5))
    prior = Gaussian(20.0, 1.0, REPLACE)
    with_prior = solver.plan(facts, Budget(1.0, 1e-5, prior_event=prior))
    again = solver.plan(facts, Budget(1.0, 1e-5))
    args = (plain.lipschitz, plain.n_samples, plain.steps, 1.0, 1e-5)
    assert plain.steps == 400
    assert again.noise_epsilon == plain.noise_epsilon == (
        rrpsgd._calibrated_noise_epsilon.__wrapped__(*args, None))
    assert with_prior.noise_epsilon < plain.noise_epsilon
    assert with_prior.noise_epsilon == rrpsgd._calibrated_noise_epsilon.__wrapped__(*args, prior)
