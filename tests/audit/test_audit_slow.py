"""Empirical privacy audits of the implemented algorithms against their accountants (slow).

Each test runs an algorithm ``RUNS`` times on each of two neighbouring datasets that differ
in a worst-case canary (:mod:`noisygd.audit.problems`) and computes a lower bound on epsilon
at ``delta = 1e-5`` that holds with probability ``CONFIDENCE`` (:mod:`noisygd.audit.bounds`).

* **Soundness**: the lower bound never exceeds the epsilon the accountant certifies for
  the run's own event. If the accountant is right this fails with probability at most
  ``1 - CONFIDENCE`` = 5% over the choice of seed (the seed is fixed, so the test is
  deterministic; the secure-mode audit cannot be seeded and runs at 99.9% instead).
* **Tightness** (the Gaussian-output cases: squared loss, full batch, the statistic exactly
  Gaussian): the lower bound is at least half the accountant's epsilon. The measured
  ratios (docs/audit.md) are 0.68 to 0.94, so this fails only if the algorithm adds more
  noise than its event says or the canary is no longer worst case.

Runs and confidence are stated in each test; every test takes well under two minutes on
one core (the Langevin audits, 50 steps per run, are the longest at 20 to 30 s).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from noisygd.audit import (
    AuditProblem,
    AuditResult,
    dp_ftrl_problem,
    langevin_problem,
    make_problem,
    noisy_gd_problem,
    noisy_sgd_problem,
    run_audit,
)

pytestmark = pytest.mark.slow

RUNS = 10_000  # per dataset
CONFIDENCE = 0.95
DELTA = 1e-5
SEED = 0


def _audit(problem: AuditProblem) -> AuditResult:
    return run_audit(problem, runs=RUNS, delta=DELTA, confidence=CONFIDENCE, seed=SEED)


@pytest.mark.parametrize("method", ["noisy_gd", "dp_ftrl", "output_perturbation", "langevin"])
def test_gaussian_output_audits_are_sound_and_within_2x(method: str) -> None:
    """10 000 runs per dataset, 95% confidence, epsilon 2 at delta 1e-5 (GDP bound)."""
    res = _audit(make_problem(method, epsilon=2.0, delta=DELTA))
    assert res.accountant_epsilon == pytest.approx(2.0, rel=1e-3)
    assert res.bound == "gdp"
    # soundness: neither lower bound exceeds the accountant
    assert res.epsilon_lower <= res.accountant_epsilon
    assert res.clopper_pearson.epsilon <= res.accountant_epsilon
    # tightness: within a factor 2
    assert res.epsilon_lower >= res.accountant_epsilon / 2, res.to_dict()


@pytest.mark.parametrize(
    "problem",
    [
        # one step at low noise: the CP bound is near its ceiling for 10 000 runs
        pytest.param(lambda: noisy_gd_problem(epsilon=8.0, steps=1), id="noisy_gd-eps8-T1"),
        pytest.param(lambda: noisy_gd_problem(epsilon=2.0, steps=5, relation="replace_one"),
                     id="noisy_gd-replace_one"),
        # four epochs: every node of the tree carries the canary with multiplicity
        pytest.param(lambda: dp_ftrl_problem(epsilon=2.0, epochs=4), id="dp_ftrl-4-epochs"),
        pytest.param(lambda: langevin_problem(epsilon=8.0), id="langevin-eps8"),
    ],
)
def test_more_gaussian_output_audits(problem: Callable[[], AuditProblem]) -> None:
    """10 000 runs per dataset, 95% confidence: sound and within 2x in other regimes."""
    res = _audit(problem())
    assert res.bound == "gdp"
    assert res.clopper_pearson.epsilon <= res.epsilon_lower <= res.accountant_epsilon
    assert res.epsilon_lower >= res.accountant_epsilon / 2, res.to_dict()


@pytest.mark.parametrize(
    "problem",
    [
        pytest.param(lambda: make_problem("noisy_sgd", epsilon=2.0, delta=DELTA),
                     id="eps2-T4-rate0.8"),
        # a single Poisson-sampled step: the last iterate is the whole release
        pytest.param(lambda: noisy_sgd_problem(epsilon=8.0, steps=1, sampling_rate=0.5),
                     id="eps8-T1-rate0.5"),
        pytest.param(lambda: noisy_sgd_problem(epsilon=4.0, steps=1, sampling_rate=0.1),
                     id="eps4-T1-rate0.1"),
    ],
)
def test_noisy_sgd_audit_is_sound(problem: Callable[[], AuditProblem]) -> None:
    """10 000 runs per dataset, 95% confidence, the binomial-mixture family bound (the
    statistic is a Gaussian mixture, so the GDP conversion is not a bound on epsilon here);
    the assumption-free Clopper-Pearson bound is sound too."""
    res = _audit(problem())
    assert res.bound == "family"
    assert res.accountant == "pld"
    assert 0.0 < res.epsilon_lower <= res.accountant_epsilon, res.to_dict()
    assert res.clopper_pearson.epsilon <= res.accountant_epsilon


def test_projected_noisy_gd_in_a_ball_is_sound() -> None:
    """10 000 runs per dataset, 95% confidence: Corollary 1 (ball of radius 2, projected
    Gaussian start), Clopper-Pearson (the projection makes the statistic non-Gaussian)."""
    res = _audit(langevin_problem(epsilon=2.0, radius=2.0))
    assert res.bound == "clopper_pearson"
    assert res.accountant == "langevin_last_iterate"
    assert res.accountant_epsilon == pytest.approx(2.0, rel=1e-3)
    assert 0.0 < res.epsilon_lower <= res.accountant_epsilon, res.to_dict()


def test_secure_mode_noisy_gd_audit_is_sound() -> None:
    """Secure mode (OS entropy, discrete Gaussian; not seedable, so this test is random):
    10 000 runs per dataset at 99.9% confidence, so a correct accountant fails it with
    probability at most 0.1% per execution. Clopper-Pearson headline (lattice output)."""
    pytest.importorskip("opendp", reason="secure mode needs the opendp package")
    res = run_audit(noisy_gd_problem(epsilon=4.0, steps=1, secure=True), runs=RUNS,
                    delta=DELTA, confidence=0.999, seed=SEED)
    assert res.bound == "clopper_pearson"
    assert "DiscreteGaussianNoise" in res.event
    assert 0.0 < res.epsilon_lower <= res.accountant_epsilon, res.to_dict()
    assert res.gdp.epsilon <= res.accountant_epsilon


# --------------------------------------------------------------- issue 23, item 5: power
#: ``(method, epsilon, runs per dataset)``: the audits whose implied lower bound must come
#: within 1.5x of the claim, at a budget where a few thousand runs suffice (docs/audit.md).
#: ``linear_regression`` observes only the run (about 0.94 of the fit's mu), so it is
#: audited at epsilon 8, where 2 000 whole fits suffice.
WITHIN_1_5X = [
    ("noisy_gd", 4.0, 4000),
    ("noisy_sgd", 4.0, 4000),
    ("noisy_sgd_wor", 4.0, 4000),
    ("noisy_sgd_shuffle", 4.0, 4000),
    ("dp_ftrl", 4.0, 4000),
    ("dynamic", 4.0, 4000),
    ("linear_regression", 8.0, 2000),
]


@pytest.mark.parametrize(("method", "epsilon", "runs"), WITHIN_1_5X,
                         ids=[m for m, _, _ in WITHIN_1_5X])
def test_implied_lower_bound_is_within_1_5x_of_the_claim(method: str, epsilon: float,
                                                         runs: int) -> None:
    """Seed 0, 95% confidence, a fifth of the runs choose the test (``split=0.2``).

    False-failure rates. Soundness (lower bound <= claim): at most 5% over the choice of the
    seed if the claim is sound. Power (claim / lower bound <= 1.5): the bound is a
    high-confidence *lower* bound, so a correct implementation fails only when the runs
    fall unluckily; the rate was measured by running the same bound on samples drawn from
    the statistic's exact law at the claimed parameters (``python -m noisygd.audit.power``):
    0 of 300 seeds for the Gaussian problems (noisy_gd, noisy_sgd_shuffle, dp_ftrl, dynamic:
    one law; worst ratio 1.37), 0 of 200 for linear_regression at epsilon 8 (worst 1.41) and
    0 of 100 for each mixture family (worst 1.31, 1.37) (docs/audit.md): below 1% (95% upper
    bounds 1% / 1.5% / 3%). A failure otherwise means
    more noise than the event states (the claim is loose) or a canary that no longer
    reaches the worst case.
    """
    res = run_audit(make_problem(method, epsilon=epsilon, delta=DELTA), runs=runs,
                    delta=DELTA, confidence=CONFIDENCE, seed=SEED, split=0.2)
    assert res.accountant_epsilon == pytest.approx(epsilon, rel=1e-3)
    assert res.epsilon_lower <= res.accountant_epsilon, res.to_dict()
    assert res.clopper_pearson.epsilon <= res.accountant_epsilon
    assert res.accountant_epsilon / res.epsilon_lower <= 1.5, res.to_dict()


@pytest.mark.parametrize(("method", "runs"), [("ssp", 4000), ("ssp_centred", 4000),
                                              ("rrpsgd", 4000),
                                              ("newton", 4000),
                                              ("newton_multinomial", 4000),
                                              ("multinomial", 500),
                                              ("logistic", 500),
                                              ("linear_regression_centre", 500)])
def test_the_other_new_audits_are_sound(method: str, runs: int) -> None:
    """Epsilon 2, 95% confidence: the lower bound never exceeds the claim (false-failure
    rate at most 5% over the seed if the claim is sound). ``ssp`` and ``ssp_centred`` are
    exactly Gaussian (white-box releases); ``rrpsgd``'s accountant pair is not attained by
    any pair of rows (docs/audit.md); ``newton``'s and ``newton_multinomial``'s statistics
    are not Gaussian (Clopper-Pearson);
    ``logistic``, ``multinomial`` and ``linear_regression_centre`` run the binary and
    multinomial classifiers' and the regressor's defaults with the private feature range and
    centre released, observing the run only (review U4; measured at these settings for the
    first and last: lower bounds 0.609 and 0.606 of 2.000, ceilings 1.815 and 1.691, the
    run's share; the multinomial's ceiling is the binary's, 1.815)."""
    res = run_audit(make_problem(method, epsilon=2.0, delta=DELTA), runs=runs, delta=DELTA,
                    confidence=CONFIDENCE, seed=SEED, split=0.2)
    assert res.accountant_epsilon == pytest.approx(2.0, rel=1e-3)
    assert 0.0 < res.epsilon_lower <= res.accountant_epsilon, res.to_dict()
    assert res.clopper_pearson.epsilon <= res.accountant_epsilon
