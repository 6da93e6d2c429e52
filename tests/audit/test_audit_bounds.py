"""The statistics of the audit: Clopper-Pearson bounds, the DP test inequality, GDP mu.

Closed forms and SciPy's independent implementation (``binomtest(...).proportion_ci``)
check the Clopper-Pearson bounds; the exact binomial coverage checks their level. The
lower bounds on epsilon are checked on samples with a known answer: two identical
distributions (epsilon 0) and Gaussian pairs (exactly mu-GDP).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from noisygd.accounting.gdp import gdp_epsilon
from noisygd.audit.bounds import (
    clopper_pearson_lower,
    clopper_pearson_upper,
    empirical_epsilon,
    epsilon_from_rates,
    gdp_mu_from_rates,
)


# --------------------------------------------------------------------- Clopper-Pearson
@pytest.mark.parametrize("m", [1, 7, 100, 5000])
@pytest.mark.parametrize("alpha", [0.2, 0.025, 1e-4])
def test_clopper_pearson_closed_forms_at_the_ends(m: int, alpha: float) -> None:
    # k = 0: P(Bin(m, p) = 0) = (1 - p)^m = alpha  =>  p = 1 - alpha^(1/m)
    assert clopper_pearson_upper(0, m, alpha) == pytest.approx(1 - alpha ** (1 / m), rel=1e-10)
    # k = m: p^m = alpha  =>  p = alpha^(1/m); the trivial ends are exact
    assert clopper_pearson_lower(m, m, alpha) == pytest.approx(alpha ** (1 / m), rel=1e-10)
    assert clopper_pearson_upper(m, m, alpha) == 1.0
    assert clopper_pearson_lower(0, m, alpha) == 0.0


@pytest.mark.parametrize(("k", "m"), [(0, 10), (1, 10), (3, 10), (9, 10), (17, 250),
                                      (123, 250), (250, 250), (4999, 10000)])
def test_clopper_pearson_matches_scipy_binomtest(k: int, m: int) -> None:
    # a two-sided exact interval at level 1 - 2 alpha is the two one-sided bounds at alpha
    alpha = 0.025
    ci = stats.binomtest(k, m).proportion_ci(confidence_level=1 - 2 * alpha, method="exact")
    assert clopper_pearson_lower(k, m, alpha) == pytest.approx(ci.low, abs=1e-12)
    assert clopper_pearson_upper(k, m, alpha) == pytest.approx(ci.high, abs=1e-12)
    assert clopper_pearson_lower(k, m, alpha) == pytest.approx(
        1 - clopper_pearson_upper(m - k, m, alpha), abs=1e-12)


def test_clopper_pearson_upper_solves_the_binomial_tail_equation() -> None:
    # P(Bin(m, ub) <= k) = alpha: the defining equation, by the binomial cdf
    for k, m, alpha in [(2, 30, 0.05), (40, 200, 0.01), (0, 5, 0.3)]:
        ub = float(clopper_pearson_upper(k, m, alpha))
        assert stats.binom.cdf(k, m, ub) == pytest.approx(alpha, rel=1e-9)


@pytest.mark.parametrize(("p", "m"), [(0.3, 50), (0.02, 200), (0.9, 40)])
def test_clopper_pearson_coverage_is_at_least_the_level(p: float, m: int) -> None:
    # exact coverage: sum of the Bin(m, p) mass on the counts whose bound covers p
    alpha = 0.05
    k = np.arange(m + 1)
    pmf = stats.binom.pmf(k, m, p)
    assert pmf[clopper_pearson_upper(k, m, alpha) >= p].sum() >= 1 - alpha - 1e-12
    assert pmf[clopper_pearson_lower(k, m, alpha) <= p].sum() >= 1 - alpha - 1e-12


def test_clopper_pearson_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="counts"):
        clopper_pearson_upper(11, 10, 0.05)
    with pytest.raises(TypeError, match="integer"):
        clopper_pearson_upper(1.5, 10, 0.05)
    with pytest.raises(ValueError, match="alpha"):
        clopper_pearson_upper(1, 10, 0.0)


# --------------------------------------------------------------------- rates -> bounds
def test_epsilon_from_rates_closed_form() -> None:
    # max(log((1 - d - fnr)/fpr), log((1 - d - fpr)/fnr))
    assert epsilon_from_rates(0.1, 0.2, 0.0) == pytest.approx(math.log(8.0))
    assert epsilon_from_rates(0.2, 0.1, 0.0) == pytest.approx(math.log(8.0))
    assert epsilon_from_rates(0.1, 0.2, 0.05) == pytest.approx(math.log(0.75 / 0.1))
    assert epsilon_from_rates(0.5, 0.5, 0.0) == 0.0  # a coin flip shows nothing
    assert epsilon_from_rates(0.6, 0.7, 0.0) == 0.0  # worse than a coin: clipped at 0
    assert epsilon_from_rates(0.0, 0.5, 0.0) == math.inf


def test_gdp_mu_from_rates_inverts_the_gaussian_tradeoff_curve() -> None:
    # a threshold t between N(0,1) and N(mu,1): FPR = Phi(-t), FNR = Phi(t - mu)
    for mu in (0.1, 1.0, 3.0):
        for t in (-1.0, 0.3, 2.0):
            fpr, fnr = stats.norm.cdf(-t), stats.norm.cdf(t - mu)
            assert gdp_mu_from_rates(fpr, fnr) == pytest.approx(mu, rel=1e-9)
    assert gdp_mu_from_rates(0.5, 0.5) == 0.0
    assert gdp_mu_from_rates(0.7, 0.6) == 0.0


# --------------------------------------------------------------------- empirical_epsilon
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("bound", ["clopper_pearson", "gdp"])
def test_identical_distributions_give_no_evidence(seed: int, bound: str) -> None:
    # FPR + FNR = 1 exactly for every test, so the bound is 0 unless both upper bounds fall
    # below the truth: probability <= 1 - confidence = 5% per seed (false-failure rate).
    rng = np.random.default_rng(seed)
    s0, s1 = rng.standard_normal(5000), rng.standard_normal(5000)
    res = empirical_epsilon(s0, s1, delta=1e-5, confidence=0.95, bound=bound)
    assert res.epsilon == 0.0
    if bound == "gdp":
        assert res.mu == 0.0


def test_bound_is_non_increasing_in_confidence() -> None:
    rng = np.random.default_rng(3)
    s0, s1 = rng.standard_normal(4000), rng.standard_normal(4000) + 1.0
    for bound in ("clopper_pearson", "gdp"):
        eps = [empirical_epsilon(s0, s1, delta=1e-5, confidence=c, bound=bound).epsilon
               for c in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999, 0.999999)]
        assert all(a >= b for a, b in itertools.pairwise(eps)), eps
        assert eps[0] > eps[-1] > 0.0


def test_gaussian_pair_bounds_are_below_the_truth_and_close() -> None:
    # N(0,1) vs N(mu,1) is exactly mu-GDP: the lower bounds must not exceed the truth
    # (false-failure rate <= 5% each at this fixed seed) and with 20000 runs are close to it.
    mu, delta = 1.0, 1e-5
    rng = np.random.default_rng(4)
    s0, s1 = rng.standard_normal(20000), rng.standard_normal(20000) + mu
    true_eps = gdp_epsilon(mu, delta)
    cp = empirical_epsilon(s0, s1, delta=delta, confidence=0.95)
    g = empirical_epsilon(s0, s1, delta=delta, confidence=0.95, bound="gdp")
    assert 0.0 < cp.epsilon <= true_eps
    assert 0.85 * mu <= g.mu <= mu
    assert 0.8 * true_eps <= g.epsilon <= true_eps
    assert g.epsilon == pytest.approx(gdp_epsilon(g.mu, delta), rel=1e-8)


def test_orientation_is_found_when_the_canary_lowers_the_statistic() -> None:
    rng = np.random.default_rng(5)
    s0, s1 = rng.standard_normal(4000), rng.standard_normal(4000) - 1.0
    res = empirical_epsilon(s0, s1, delta=1e-5, bound="gdp")
    assert res.orientation == -1
    assert res.mu > 0.7


def test_bonferroni_candidates_and_splits_are_recorded() -> None:
    rng = np.random.default_rng(6)
    s0, s1 = rng.standard_normal(1000), rng.standard_normal(1000) + 2.0
    res = empirical_epsilon(s0, s1, delta=1e-5, candidates=3, split=0.3)
    assert (res.n_selection, res.n_evaluation, res.candidates) == (300, 700, 3)
    # the counts are those of the evaluation split at the chosen test
    tau, sign = res.threshold, res.orientation
    assert res.false_positives == int(np.sum(sign * s0[300:] > tau))
    assert res.false_negatives == int(np.sum(sign * s1[300:] <= tau))
    # each rate is bounded at alpha / (2k)
    assert res.fpr_upper == pytest.approx(
        float(clopper_pearson_upper(res.false_positives, 700, 0.05 / 6)))
    assert res.to_dict()["candidates"] == 3


def test_empirical_epsilon_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="same number"):
        empirical_epsilon([0.0, 1.0], [0.0], delta=1e-5)
    with pytest.raises(ValueError, match="finite"):
        empirical_epsilon([0.0, np.nan], [0.0, 1.0], delta=1e-5)
    with pytest.raises(ValueError, match="bound"):
        empirical_epsilon([0.0, 1.0], [0.0, 1.0], delta=1e-5, bound="dkw")
    with pytest.raises(ValueError, match="confidence"):
        empirical_epsilon([0.0, 1.0], [0.0, 1.0], delta=1e-5, confidence=1.0)
    with pytest.raises(ValueError, match="each split"):
        empirical_epsilon([0.0, 1.0], [0.0, 1.0], delta=1e-5, split=0.1)
    with pytest.raises(TypeError, match="candidates"):
        empirical_epsilon([0.0, 1.0], [0.0, 1.0], delta=1e-5, candidates=1.0)


# ------------------------------------------------------------ the statistic-family bound
def test_gaussian_family_is_the_gdp_curve_and_epsilon() -> None:
    from noisygd.accounting.gdp import gdp_epsilon
    from noisygd.audit.bounds import ShiftFamily

    g = ShiftFamily.gaussian()
    alpha = np.array([1e-3, 0.1, 0.5, 0.9])
    for mu in (0.3, 1.0, 2.5):
        assert np.allclose(g.tradeoff(alpha, mu), stats.norm.cdf(stats.norm.isf(alpha) - mu),
                           atol=1e-12)
        assert g.epsilon(mu, 1e-5) == pytest.approx(gdp_epsilon(mu, 1e-5), rel=1e-5)


def test_poisson_family_one_step_tradeoff_in_closed_form() -> None:
    # T = 1: D' = (1 - g) N(0, 1) + g N(nu, 1), so beta = 1 - (1 - g) a - g Q(Q^-1(a) - nu)
    from noisygd.audit.bounds import ShiftFamily

    fam = ShiftFamily.poisson_sum(1, 0.3)
    a = np.array([0.01, 0.2, 0.6])
    want = 1 - 0.7 * a - 0.3 * stats.norm.sf(stats.norm.isf(a) - 1.7)
    assert np.allclose(fam.tradeoff(a, 1.7), want, atol=1e-12)


def test_nu_lower_inverts_the_tradeoff() -> None:
    from noisygd.audit.bounds import ShiftFamily

    for fam in (ShiftFamily.poisson_sum(3, 0.6), ShiftFamily.symmetric_sum(2, 0.9)):
        alpha = np.array([0.05, 0.3])
        beta = fam.tradeoff(alpha, 0.8)
        assert np.allclose(fam.nu_lower(alpha, beta), 0.8, atol=1e-9)
        # a point above every curve (beta >= 1 - alpha) is no evidence: 0
        assert np.all(fam.nu_lower(alpha, 1 - alpha + 1e-9) == 0.0)


def test_family_epsilon_is_monotone_and_below_the_unsampled_gaussian() -> None:
    from noisygd.audit.bounds import ShiftFamily

    fam = ShiftFamily.poisson_sum(4, 0.5)
    e = [fam.epsilon(nu, 1e-5) for nu in (0.2, 0.4, 0.8)]
    assert e[0] < e[1] < e[2]
    # subsampling only hides the canary: below the full batch, which adds T nu every run
    g = ShiftFamily.gaussian()
    assert e[1] < g.epsilon(4 * 0.4, 1e-5)
    assert fam.epsilon(0.0, 1e-5) == 0.0


def test_family_bound_needs_its_family_and_is_close_to_gdp_on_gaussians() -> None:
    from noisygd.audit.bounds import ShiftFamily

    rng = np.random.default_rng(3)
    s0, s1 = rng.standard_normal(3000), rng.standard_normal(3000) + 0.8
    with pytest.raises(ValueError, match="family"):
        empirical_epsilon(s0, s1, delta=1e-5, bound="family")
    with pytest.raises(ValueError, match="family"):
        empirical_epsilon(s0, s1, delta=1e-5, family=ShiftFamily.gaussian())
    fam = empirical_epsilon(s0, s1, delta=1e-5, bound="family", family=ShiftFamily.gaussian())
    gdp = empirical_epsilon(s0, s1, delta=1e-5, bound="gdp")
    assert fam.mu == pytest.approx(gdp.mu, abs=0.05) and fam.mu < 0.8
    with pytest.raises(ValueError, match="weights"):
        ShiftFamily((0.5,), (0.0,), (1.0,), (1.0,))


def test_simulated_power_matches_a_direct_bound() -> None:
    """Each simulated audit is the GDP bound (the audit's own, same split, confidence and
    delta) on N(0, 1) against N(mu, 1) draws at the problem's mu = sqrt(T)/z = 1, computed
    here directly from the sampler seeded as documented (first_seed + i); every value is a
    positive lower bound on the true epsilon of 1-GDP."""
    from noisygd.accounting.gdp import gdp_epsilon
    from noisygd.audit.bounds import ShiftFamily
    from noisygd.audit.power import sample_statistic, simulate_lower_bounds
    from noisygd.audit.problems import noisy_gd_problem

    p = noisy_gd_problem(noise_multiplier=2.0, steps=4)  # mu = sqrt(4) / 2 = 1
    assert p.nu == pytest.approx(1.0, rel=1e-12) and p.family is None and p.gaussian_output
    low = simulate_lower_bounds(p, runs=2000, seeds=3, split=0.2, first_seed=5)
    direct = []
    for seed in (5, 6, 7):
        s0, s1 = sample_statistic(ShiftFamily.gaussian(), 1.0, 2000, np.random.default_rng(seed))
        direct.append(empirical_epsilon(s0, s1, delta=1e-5, confidence=0.95, bound="gdp",
                                        split=0.2).epsilon)
    np.testing.assert_array_equal(low, direct)
    assert np.all((low > 0) & (low < gdp_epsilon(1.0, 1e-5)))
