"""The audit problems and the runner (fast: small numbers of runs).

The worst-case canary is checked without statistics: with the same generator on ``D`` and
``D'`` every algorithm draws the same noise, so the difference of the released parameters
is the canary's deterministic effect, which the construction predicts exactly (the clipped
sums differ by exactly the sensitivity at every step).
"""

from __future__ import annotations

import numpy as np
import pytest

from noisygd.accounting import best
from noisygd.accounting.events import Gaussian, Neighbouring, PoissonSampled, SelfComposed
from noisygd.algorithms.base import FitResult
from noisygd.audit import (
    METHODS,
    AuditProblem,
    dp_ftrl_problem,
    langevin_problem,
    make_problem,
    noisy_gd_problem,
    noisy_sgd_problem,
    output_perturbation_problem,
    run_audit,
)


def _same_noise_difference(problem: AuditProblem, seed: int = 7) -> np.ndarray:
    a = problem.run(0, np.random.default_rng(seed)).theta
    b = problem.run(1, np.random.default_rng(seed)).theta
    return b - a


# ---------------------------------------------------------------- worst-case canaries
@pytest.mark.parametrize(("relation", "sens"), [("add_remove", 1.0), ("replace_one", 2.0)])
def test_noisy_gd_canary_moves_theta0_by_exactly_eta_T_C_times_the_sensitivity(
        relation: str, sens: float) -> None:
    p = noisy_gd_problem(noise_multiplier=3.0, steps=7, clip=0.5, learning_rate=0.2,
                         relation=relation)
    diff = _same_noise_difference(p)
    np.testing.assert_allclose(diff, [0.2 * 7 * 0.5 * sens, 0.0], rtol=1e-12, atol=1e-12)
    assert p.statistic(diff) == pytest.approx(diff[0])


@pytest.mark.parametrize("epochs", [1, 2, 4])
def test_dp_ftrl_canary_shifts_the_last_iterate_by_2CT_over_lambda(epochs: int) -> None:
    for tree in ("honaker", "plain"):
        p = dp_ftrl_problem(noise_multiplier=2.0, epochs=epochs, clip=0.5, l2_ftrl=4.0,
                            tree=tree)
        diff = _same_noise_difference(p)
        np.testing.assert_allclose(diff, [2 * 0.5 * epochs / 4.0, 0.0], atol=1e-12)


def test_output_perturbation_canary_difference_matches_the_recursion() -> None:
    # theta_0 <- theta_0 (1 - 1/n) +- Y/n, T times (eta = 1, B = 1): diff 2Y(1 - (1-1/n)^T)
    p = output_perturbation_problem(epsilon=1.0, delta=1e-5, steps=10)
    n = p.settings["n_samples"]
    diff = _same_noise_difference(p)
    np.testing.assert_allclose(diff, [2.0 * (1 - (1 - 1 / n) ** 10), 0.0], atol=1e-12)
    # within the contraction bound 2 eta L T / n, L = (B R + Y) B, and above 80% of it
    bound = best(p.run(0, np.random.default_rng(0)).event, 1e-5).event.sensitivity
    assert bound == pytest.approx(2 * (0.1 + 1.0) * 10 / n)
    assert 0.8 * bound < diff[0] <= bound


def test_langevin_canary_difference_is_the_mean_gap_of_theorem3() -> None:
    # delta_{k+1} = (1 - eta) delta_k + eta * 2B/n  =>  delta_K = (2B/n)(1 - (1-eta)^K)
    p = langevin_problem(sigma=0.5, step_size=0.1, steps=30)
    diff = _same_noise_difference(p)
    np.testing.assert_allclose(diff, [2.0 / 5 * (1 - 0.9**30), 0.0], atol=1e-12)


def test_noisy_sgd_problem_reports_the_poisson_event() -> None:
    """T Poisson-sampled Gaussian steps at rate gamma and multiplier z (add/remove, Delta = 1),
    on D and on D', whatever the seed."""
    p = noisy_sgd_problem(noise_multiplier=2.0, steps=3, sampling_rate=0.5)
    res = p.run(1, np.random.default_rng(0))
    want = SelfComposed(PoissonSampled(0.5, Gaussian(2.0, 1.0, Neighbouring.ADD_REMOVE)), 3)
    assert res.event == want
    assert p.run(0, np.random.default_rng(1)).event == want
    assert not p.gaussian_output


@pytest.mark.parametrize("method", sorted(METHODS))
def test_calibrated_problems_meet_their_epsilon(method: str) -> None:
    from noisygd.accounting.gdp import gdp_epsilon
    from noisygd.audit.registry import AUDITS

    p = make_problem(method, epsilon=2.0, delta=1e-5)
    eps = best(p.run(0, np.random.default_rng(0)).event, 1e-5).epsilon
    if AUDITS[method].solver is None:  # a pre-release: the claim is that release's own event
        assert eps == pytest.approx(gdp_epsilon(p.nu, 1e-5), rel=1e-9)
        assert eps < 2.0
        return
    assert eps == pytest.approx(2.0, rel=1e-3)
    assert eps <= 2.0 * (1 + 1e-9)


def test_builders_check_their_arguments() -> None:
    with pytest.raises(ValueError, match="noise or epsilon"):
        noisy_gd_problem()
    with pytest.raises(ValueError, match="not both"):
        noisy_gd_problem(epsilon=1.0, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="method"):
        make_problem("adam", epsilon=1.0)
    with pytest.raises(ValueError, match="inside the ball"):
        output_perturbation_problem(steps=10, n_ordinary=20)
    with pytest.raises(ValueError, match="sigma or epsilon"):
        langevin_problem()


# ---------------------------------------------------------------- the runner
def test_a_broken_mechanism_is_detected() -> None:
    # NoisyGD adding a quarter of the noise its event reports: true mu = 4 x claimed, so
    # the true epsilon is about 4.6 where the accountant is told 1. Confidence 0.95 (the
    # detection is a lower bound: it cannot be a false alarm more often than 5%).
    broken = noisy_gd_problem(epsilon=1.0, steps=1, noise_scale=0.25)
    res = run_audit(broken, runs=2000, delta=1e-5, confidence=0.95, seed=0)
    assert res.accountant_epsilon == pytest.approx(1.0, rel=1e-6)
    assert res.bound == "gdp"
    assert res.epsilon_lower > res.accountant_epsilon
    assert res.clopper_pearson.epsilon > res.accountant_epsilon
    assert not res.sound
    # the honest mechanism, same runs and seed: no violation
    honest = run_audit(noisy_gd_problem(epsilon=1.0, steps=1), runs=2000, delta=1e-5,
                       confidence=0.95, seed=0)
    assert honest.sound
    assert honest.clopper_pearson.epsilon <= honest.accountant_epsilon


def test_identical_datasets_give_a_zero_lower_bound() -> None:
    # D = D': both bounds are 0 except with probability <= 5% each (fixed seed)
    inner = noisy_gd_problem(noise_multiplier=1.0, steps=2)
    same = AuditProblem(name="same", run=lambda which, rng: inner.run(0, rng),
                        direction=inner.direction, relation=inner.relation,
                        gaussian_output=True, canary="none")
    res = run_audit(same, runs=2000, delta=1e-5, seed=1)
    assert res.epsilon_lower == 0.0
    assert res.clopper_pearson.epsilon == 0.0
    assert res.gdp.mu == 0.0


def test_audits_are_reproducible_from_the_seed() -> None:
    p = noisy_gd_problem(noise_multiplier=2.0, steps=2)
    a = run_audit(p, runs=200, seed=5).to_dict()
    b = run_audit(p, runs=200, seed=5).to_dict()
    c = run_audit(p, runs=200, seed=6).to_dict()
    for d in (a, b, c):
        d.pop("seconds")
    assert a == b
    assert a["statistic"] != c["statistic"]


def test_runs_whose_events_differ_are_refused() -> None:
    def run(which: int, rng: np.random.Generator) -> FitResult:
        return FitResult(theta=rng.standard_normal(2), event=Gaussian(1.0 + which), n_iter=1)

    bad = AuditProblem(name="bad", run=run, direction=np.array([1.0, 0.0]),
                       relation=Gaussian(1.0).neighbouring, gaussian_output=True, canary="")
    with pytest.raises(ValueError, match="different event"):
        run_audit(bad, runs=10)


def test_run_audit_checks_its_arguments() -> None:
    p = noisy_gd_problem(noise_multiplier=2.0, steps=1)
    with pytest.raises(ValueError, match="runs"):
        run_audit(p, runs=1)
    with pytest.raises(TypeError, match="runs"):
        run_audit(p, runs=10.0)
    with pytest.raises(ValueError, match="confidence"):
        run_audit(p, runs=10, confidence=1.5)
    with pytest.raises(TypeError, match="AuditProblem"):
        run_audit("noisy_gd", runs=10)


def test_langevin_in_a_ball_uses_corollary1_and_is_not_gaussian() -> None:
    p = langevin_problem(epsilon=2.0, radius=2.0)
    res = p.run(1, np.random.default_rng(0))
    assert res.event.theorem == "corollary1" and res.event.start == "projected_gaussian"
    assert best(res.event, 1e-5).epsilon == pytest.approx(2.0, rel=1e-3)
    assert not p.gaussian_output
    assert np.linalg.norm(res.theta) <= 2.0 + 1e-12
    with pytest.raises(ValueError, match="not both"):
        langevin_problem(epsilon=2.0, sigma=1.0)


def test_bad_split_is_refused_before_any_run() -> None:
    calls = []

    def run(which: int, rng: np.random.Generator) -> FitResult:
        calls.append(which)
        return FitResult(theta=rng.standard_normal(2), event=Gaussian(1.0), n_iter=1)

    p = AuditProblem(name="count", run=run, direction=np.array([1.0, 0.0]),
                     relation=Gaussian(1.0).neighbouring, gaussian_output=True, canary="")
    for split in (0.0, 1.0, 0.01):
        with pytest.raises(ValueError, match="split"):
            run_audit(p, runs=10, split=split)
    with pytest.raises(TypeError, match="candidates"):
        run_audit(p, runs=10, candidates=0.5)
    assert calls == []


def test_secure_mode_problem_audits_its_own_event() -> None:
    pytest.importorskip("opendp", reason="secure mode needs the opendp package")
    p = noisy_gd_problem(epsilon=2.0, steps=2, secure=True)
    assert not p.gaussian_output and p.settings["secure"] is True
    res = run_audit(p, runs=100, delta=1e-5)
    assert "DiscreteGaussianNoise" in res.event
    assert res.accountant in ("zcdp", "rdp")
    assert res.accountant_epsilon > 2.0  # zCDP/RDP of the discrete event, rounding included
    assert res.bound == "clopper_pearson"
    with pytest.raises(ValueError, match="noise_scale"):
        noisy_gd_problem(epsilon=2.0, secure=True, noise_scale=0.5)
