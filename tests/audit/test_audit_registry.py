"""The audit registry and the construction of its newer problems (fast; no statistics).

Each canary test runs ``D`` and ``D'`` with the *same* generator, so that the noise (and,
where the datasets have the same size, the batches) is identical and the difference of the
two statistics is exactly the canary's effect: the claimed shift, to rounding.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.accounting import best
from noisygd.audit.bounds import ShiftFamily
from noisygd.audit.cli import METHOD_NAMES
from noisygd.audit.problems import METHODS, make_problem, noisy_sgd_problem
from noisygd.audit.registry import AUDITS, audited_solvers
from noisygd.solvers import SOLVERS


def test_every_solver_is_audited_and_the_cli_offers_every_entry() -> None:
    assert set(SOLVERS) <= audited_solvers()
    assert METHOD_NAMES == tuple(AUDITS) == tuple(METHODS)
    for name, entry in AUDITS.items():
        assert callable(entry.load()), name
        # None: an estimator's pre-release (made before any solver's run)
        assert entry.solver in SOLVERS or entry.solver is None, name
    assert [k for k, e in AUDITS.items() if e.solver is None] == ["target_range",
                                                                   "feature_range"]


def _pair(problem, seed=0):
    r0 = problem.run(0, np.random.default_rng(seed))
    r1 = problem.run(1, np.random.default_rng(seed))
    assert r0.event == r1.event
    return r0, r1


def test_without_replacement_canary_moves_by_2_eta_c_over_gamma_per_batch() -> None:
    p = noisy_sgd_problem(sampling="without_replacement", noise_multiplier=3.0, steps=4)
    s = p.settings
    step = s["learning_rate"] / s["sampling_rate"] * 2 * s["clip"]
    for seed in range(5):
        r0, r1 = _pair(p, seed)
        k = (p.observe(r1) - p.observe(r0)) / step  # batches that held the canary
        assert k == pytest.approx(round(k), abs=1e-9) and 0 <= round(k) <= 4
    assert p.family == ShiftFamily.symmetric_sum(4, 19 / 20)
    assert "SampledWithoutReplacement" in type(r0.event.event).__name__


def test_shuffle_statistic_is_the_accountants_gaussian() -> None:
    # white-box statistic with the permutation known: shift exactly 2 sqrt(E) / z
    p = noisy_sgd_problem(sampling="shuffle_fixed", noise_multiplier=4.0, epochs=3)
    for seed in range(3):
        r0, r1 = _pair(p, seed)
        assert p.observe(r0) - p.observe(r1) == pytest.approx(2 * math.sqrt(3) / 4.0,
                                                              abs=1e-9)
    assert p.gaussian_output


def test_poisson_problem_declares_its_binomial_family() -> None:
    p = noisy_sgd_problem(noise_multiplier=2.0, steps=3, sampling_rate=0.8)
    assert p.family == ShiftFamily.poisson_sum(3, 0.8)
    assert not p.gaussian_output


def test_ssp_statistic_shift_is_the_plans_mu() -> None:
    p = make_problem("ssp", epsilon=2.0)
    eps = best(p.run(0, np.random.default_rng(0)).event, 1e-5).epsilon
    assert eps == pytest.approx(2.0, rel=1e-6)
    mu = p.settings["mu"]
    assert mu == pytest.approx(math.sqrt(sum(z**-2 for z in p.settings["noise_multipliers"])),
                               rel=1e-12)  # each release moved by its whole sensitivity
    for seed in range(3):
        r0, r1 = _pair(p, seed)
        assert p.observe(r1) - p.observe(r0) == pytest.approx(mu, abs=1e-9)


def test_rrpsgd_canary_gradient_is_l_at_every_theta() -> None:
    p = make_problem("rrpsgd", epsilon=2.0)
    moves = set()
    for seed in range(12):
        r0, r1 = _pair(p, seed)
        assert r0.event == r1.event  # R = 1 always: one event
        d = (p.observe(r1) - p.observe(r0)) / (2 * r0.info["step_size"])
        moves.add(round(d, 9))
    assert moves == {0.0, 1.0}  # the canary sampled or not; when sampled, 2 eta L exactly


def test_linear_regression_white_box_statistic_shift_is_the_runs_mu() -> None:
    # The same generator on D and D': same noise; the white-box statistic differs by exactly
    # sqrt(T)/z (the canary at the clip in every step, checked inside the run).
    p = make_problem("linear_regression", epsilon=2.0, n_ordinary=500)
    r0, r1 = p.run(0, np.random.default_rng(1)), p.run(1, np.random.default_rng(1))
    assert r0.info["mu_run"] == r1.info["mu_run"] == pytest.approx(p.nu, rel=1e-6)
    assert p.observe(r1) - p.observe(r0) == pytest.approx(r0.info["mu_run"], abs=1e-9)
    # the claim is the whole fit (count, scale release and run), above the run's own mu
    from noisygd.accounting.gdp import gdp_epsilon

    claim = best(r0.event, 1e-5).epsilon
    assert claim == pytest.approx(2.0, rel=1e-3)
    assert gdp_epsilon(r0.info["mu_run"], 1e-5) < claim


def test_multinomial_white_box_run_keeps_the_canary_at_the_clip() -> None:
    """The canary at the clip in every step is checked inside the run: the white-box
    statistic calls at_clip on each recorded step's canary gradient and raises RuntimeError
    otherwise (test_white_box_refuses_a_canary_below_the_clip), so these runs completing is
    that check; the rest: each run's event meets the budget, finite statistics, the run's mu."""
    p = make_problem("multinomial", epsilon=2.0, n_ordinary=200)
    r0, r1 = p.run(0, np.random.default_rng(2)), p.run(1, np.random.default_rng(2))
    # the plan follows the released count, so the events may differ; each meets the budget
    assert p.event_varies
    for r in (r0, r1):
        assert best(r.event, 1e-5).epsilon == pytest.approx(2.0, rel=1e-3)
    assert math.isfinite(p.observe(r0)) and math.isfinite(p.observe(r1))
    assert r1.theta.shape == (3 * 2,)  # K x (d + 1)
    assert r0.info["mu_run"] == pytest.approx(p.nu, rel=1e-6)


def test_white_box_refuses_a_canary_below_the_clip() -> None:
    from noisygd.audit.estimator_problems import AT_CLIP_RTOL, _white_box_statistic

    p = np.zeros(2)
    records = [(p, np.zeros(2), np.array([0.5, 0.0]), 1.0)]
    info = {"schedule": "constant", "learning_rate": 0.1, "momentum": 0.0, "clip": 1.0,
            "noise_multiplier": 1.0, "n_samples": 10.0, "last_iterate": np.zeros(2)}
    with pytest.raises(RuntimeError, match="not the clip"):
        _white_box_statistic(records, info, 0.0)
    records = [(p, np.zeros(2), np.array([1.0 + AT_CLIP_RTOL / 2, 0.0]), 1.0)]
    assert _white_box_statistic(records, info, 0.0) == pytest.approx(0.0)


def test_steps_option_is_refused_where_the_problem_has_none() -> None:
    import argparse

    from noisygd.audit.cli import add_audit_parser, cmd_audit

    parser = argparse.ArgumentParser(prog="noisygd")
    add_audit_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["audit", "--method", "ssp", "--steps", "3", "--runs", "4"])
    with pytest.raises(ValueError, match="--steps"):
        cmd_audit(args)


@pytest.mark.parametrize("which", ["linear_regression", "multinomial"])
def test_white_box_fit_is_the_default_fit(which: str) -> None:
    # the recording solver changes nothing: same model as the default estimator, bit for bit
    from noisygd.audit.estimator_problems import CENTRED_ROW, WhiteBoxNoisyGD
    from noisygd.estimators import DPLinearRegression, DPLogisticRegression

    X = np.vstack([[1.0], np.ones((200, 1))])
    canary = np.array([1.0])
    if which == "linear_regression":
        y = np.concatenate([[1.0], np.zeros(200)])
        make = lambda **kw: DPLinearRegression(2.0, 1e-5, random_state=3, **kw)  # noqa: E731
        target = 1.0
    else:  # the multinomial audit's design (its default releases a centre first)
        canary = np.array([CENTRED_ROW])
        X = np.vstack([[CENTRED_ROW], -CENTRED_ROW * np.ones((200, 1))])
        X[1:41] = CENTRED_ROW
        y = np.concatenate([[0], 1 + np.arange(200) % 2])
        make = lambda **kw: DPLogisticRegression(  # noqa: E731
            2.0, 1e-5, multiclass="multinomial", classes=[0, 1, 2], random_state=3, **kw)
        target = 0.0
    plain = make().fit(X, y)
    solver = WhiteBoxNoisyGD(canary, target, True)
    observed = make(method=solver).fit(X, y)
    assert np.array_equal(plain.coef_, observed.coef_)
    assert np.array_equal(plain.intercept_, observed.intercept_)
    assert plain.privacy_.epsilon == observed.privacy_.epsilon
    assert solver.last_statistic is not None


@pytest.mark.parametrize("which", ["logistic", "multinomial", "linear_regression_centre"])
def test_centred_estimator_audit_runs_the_default_centre_release(which: str) -> None:
    # review U4: the default fit releases the private feature range and a centre first; the
    # rows sit at +-v (v just below 2^41, the range's top bin), which the released range
    # g = 2^-41 serves at about +-R; the classifiers' rows of D sit 80% at -v and 20% at +v,
    # so the centre lands near -0.6 v and the canary (+v) is served projected onto the ball
    # of the released radius (R: the rows at +v lie 1.6 R from the centre) about it (in
    # g-coordinates); the regressor's sit at -v and +v (centre near 0). A smoke run of the
    # audit: sound.
    from noisygd.audit.estimator_problems import CENTRED_ROW
    from noisygd.audit.runner import run_audit
    from noisygd.audit.whitebox import _as_served

    p = make_problem(which, epsilon=2.0)
    r1 = p.run(1, np.random.default_rng(4))
    centre, g = r1.info["centre"], r1.info["feature_scale"]
    assert g is not None and g[0] == 2.0 ** -41  # R / m, m = 2^41 the released magnitude
    # the regressor's D has rows at both -v and +v (its canary's residual stays near 2h)
    expected = 0.0 if which == "linear_regression_centre" else -0.6 * CENTRED_ROW
    assert centre is not None and centre[0] == pytest.approx(expected, abs=0.1 * CENTRED_ROW)
    assert r1.info["row_norm_bound"] == 1.0  # the released radius: R
    assert r1.info["mu_run"] == pytest.approx(p.nu, rel=1e-6)
    assert best(r1.event, 1e-5).epsilon == pytest.approx(2.0, rel=1e-3)

    class Served:  # what StepRecorder reads of its oracle
        objective = type("Centred", (), {"centre": centre, "feature_scale": g})()
        row_norm_bound = 1.0

    served = _as_served(Served(), np.array([[CENTRED_ROW]]))  # the canary's row, x = +v
    distance = g[0] * (served[0, 0] - centre[0])  # in the fit's coordinates
    assert distance == pytest.approx(1.0, abs=0.1)  # at distance about R
    assert distance <= 1.0 + 1e-12  # never beyond the ball
    res = run_audit(p, runs=12, delta=1e-5, confidence=0.95, seed=0, split=0.5)
    assert res.accountant_epsilon == pytest.approx(2.0, rel=1e-3)
    assert res.epsilon_lower <= res.accountant_epsilon
    assert res.clopper_pearson.epsilon <= res.accountant_epsilon
