"""Direct tests of public audit helpers not named elsewhere.

Covered: :func:`noisygd.audit.estimator_problems.linear_regression_problem`,
:func:`~noisygd.audit.estimator_problems.centred_linear_regression_problem`,
:func:`~noisygd.audit.estimator_problems.logistic_problem`,
:func:`~noisygd.audit.estimator_problems.multinomial_problem`,
:func:`noisygd.audit.power.sample_statistic`, :func:`noisygd.audit.problems.rrpsgd_problem`,
:func:`noisygd.audit.problems.ssp_problem`, :func:`noisygd.audit.table.markdown_row` and
:func:`noisygd.audit.whitebox.at_clip`.

The estimator audits cost a whole default fit per run (1 000 noisy steps), so their
statistical checks use few runs and lean on an exact identity instead: under the white-box
construction ``E[S | D] = 0`` and ``E[S | D'] = mu`` (a sum of martingale increments), so the
difference of two runs sharing a generator has mean exactly ``mu`` whatever the coupling.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

import noisygd.estimators as estimators_module
from noisygd.accounting import best
from noisygd.accounting.events import Composed, Neighbouring, SelfComposed
from noisygd.accounting.gdp import gdp_epsilon
from noisygd.algorithms.rrpsgd import rrpsgd_tight_event
from noisygd.audit.bounds import ShiftFamily
from noisygd.audit.estimator_problems import (
    CENTRED_ROW,
    centred_linear_regression_problem,
    linear_regression_problem,
    logistic_problem,
    multinomial_problem,
)
from noisygd.audit.power import sample_statistic
from noisygd.audit.problems import AuditProblem, noisy_gd_problem, rrpsgd_problem, ssp_problem
from noisygd.audit.runner import run_audit
from noisygd.audit.table import HEADER, markdown_row
from noisygd.audit.whitebox import AT_CLIP_RTOL, at_clip

# every default fit of these audits hits the 1 000-step compute budget: warned, not an error
pytestmark = pytest.mark.filterwarnings("ignore::noisygd.planning.ComputeBudgetWarning")

DELTA = 1e-5
# the budget shares of the default fits, as the estimators' and the module's docs state them
SCALE, CENTRE, COUNT, RANGE = 0.10, 0.10, 0.01, 0.0625


def gdp_mu(epsilon: float, delta: float) -> float:
    """mu of mu-GDP meeting (epsilon, delta): Dong, Roth and Su 2022, Cor. 2.13, by brentq."""
    def gap(mu: float) -> float:
        return (stats.norm.cdf(-epsilon / mu + mu / 2)
                - math.exp(epsilon) * stats.norm.cdf(-epsilon / mu - mu / 2) - delta)

    return optimize.brentq(gap, 1e-3, 50.0, xtol=1e-14)


def _recording(monkeypatch: pytest.MonkeyPatch, name: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Replace ``noisygd.estimators.<name>`` by a subclass recording what each fit is given."""
    seen: list[tuple[np.ndarray, np.ndarray]] = []
    base = getattr(estimators_module, name)

    class Recording(base):  # type: ignore[misc, valid-type]
        def fit(self, X, y, *args, **kwargs):
            seen.append((np.array(X, dtype=float), np.array(y)))
            return super().fit(X, y, *args, **kwargs)

    monkeypatch.setattr(estimators_module, name, Recording)
    return seen


def _paired_differences(problem: AuditProblem, seeds: range) -> np.ndarray:
    """``S(D') - S(D)`` for runs sharing each seed's generator; checks ``mu_run`` on each."""
    out = []
    for seed in seeds:
        r0 = problem.run(0, np.random.default_rng(seed))
        r1 = problem.run(1, np.random.default_rng(seed))
        for r in (r0, r1):
            assert r.info["mu_run"] == pytest.approx(problem.nu, rel=1e-9)
            assert problem.observe(r) == r.info["audit_statistic"]
        out.append(problem.observe(r1) - problem.observe(r0))
    return np.asarray(out)


def _check_common(problem: AuditProblem, name: str, n: int, shares: float) -> None:
    """The declared plan: name, add/remove, white-box Gaussian statistic, nu from the shares."""
    assert problem.name == name
    assert problem.relation is Neighbouring.ADD_REMOVE
    assert problem.gaussian_output and problem.event_varies
    assert problem.settings["n_samples"] == n and problem.settings["n_features"] == 1
    assert problem.settings["relation"] == "add_remove"
    assert problem.observed.startswith("white-box: every noisy step of the run")
    # the run's mu: the budget's mu times sqrt(1 - the unobserved releases' shares of mu^2)
    assert problem.nu == pytest.approx(gdp_mu(2.0, DELTA) * math.sqrt(1.0 - shares), rel=1e-7)
    # so the audit can show less than the whole fit's epsilon (module doc)
    assert gdp_epsilon(problem.nu, DELTA) < 2.0


def _check_claim(problem: AuditProblem, seed: int = 0) -> None:
    """The whole fit (every release) meets the budget; its run is a repeated Gaussian whose
    sqrt(T)/z is the run's mu."""
    res = problem.run(0, np.random.default_rng(seed))
    assert best(res.event, DELTA).epsilon == pytest.approx(2.0, rel=1e-3)
    assert best(res.event, DELTA).epsilon <= 2.0 * (1 + 1e-9)
    assert isinstance(res.event, Composed)
    runs = [e for e in res.event.events if isinstance(e, SelfComposed)]
    assert len(runs) == 1
    T, z = runs[0].count, runs[0].event.noise_multiplier
    assert math.sqrt(T) / z == pytest.approx(res.info["mu_run"], rel=1e-12)


# ------------------------------------------------------------ linear_regression_problem
def test_linear_regression_problem_datasets_plan_and_exact_shift(monkeypatch):
    """D: n rows x = 1, y = 0; D' = canary (x = 1, y = h = 1) first; nu = mu sqrt(1 - f - f_c);
    same-noise runs differ by exactly mu (the canary at the clip at every step)."""
    seen = _recording(monkeypatch, "DPLinearRegression")
    n = 200
    p = linear_regression_problem(epsilon=2.0, delta=DELTA, n_ordinary=n)
    _check_common(p, "linear_regression", n, SCALE + COUNT)
    assert "h = 1" in p.canary and "add/remove" in p.canary
    # module doc: the run's mu alone certifies about 0.94 of the fit's epsilon at epsilon 2
    assert gdp_epsilon(p.nu, DELTA) / 2.0 == pytest.approx(0.94, abs=0.01)
    diffs = _paired_differences(p, range(3))
    np.testing.assert_allclose(diffs, p.nu, atol=1e-9)
    (X0, y0), (X1, y1) = seen[0], seen[1]
    np.testing.assert_array_equal(X0, np.ones((n, 1)))
    np.testing.assert_array_equal(y0, np.zeros(n))
    np.testing.assert_array_equal(X1, np.ones((n + 1, 1)))
    np.testing.assert_array_equal(y1, np.concatenate([[1.0], np.zeros(n)]))
    _check_claim(p)


def test_linear_regression_problem_null_statistic_is_standard_normal():
    """On D the white-box statistic is N(0, 1): 40 independent runs.

    Mean within 4 / sqrt(40) of 0 (false-failure rate 6e-5) and sample variance inside the
    chi-square(39) 1e-4 and 1 - 1e-4 quantiles (rate 2e-4): about 3e-4 in all."""
    p = linear_regression_problem(epsilon=2.0, n_ordinary=200)
    s = np.array([p.observe(p.run(0, np.random.default_rng(1000 + i))) for i in range(40)])
    assert abs(s.mean()) < 4.0 / math.sqrt(40)
    chi = 39 * s.var(ddof=1)
    assert stats.chi2.ppf(1e-4, 39) < chi < stats.chi2.ppf(1 - 1e-4, 39)


def test_estimator_problems_refuse_bad_arguments():
    """Every estimator audit checks epsilon, delta and n_ordinary (type and range)."""
    for build in (linear_regression_problem, centred_linear_regression_problem,
                  logistic_problem, multinomial_problem):
        with pytest.raises(ValueError, match="epsilon must be positive"):
            build(epsilon=0.0)
        with pytest.raises(ValueError, match="delta must be in the open interval"):
            build(epsilon=1.0, delta=1.0)
        with pytest.raises(ValueError, match="n_ordinary must be an integer >= "):
            build(epsilon=1.0, n_ordinary=0)
        with pytest.raises(TypeError, match="n_ordinary must be an integer"):
            build(epsilon=1.0, n_ordinary=2.5)
        with pytest.raises(TypeError):  # keyword-only
            build(1.0)
    with pytest.raises(ValueError, match="n_classes must be an integer >= 3"):
        multinomial_problem(epsilon=1.0, n_classes=2)
    # the classifiers pin the canary's prediction with 20% of D: they ask for 100 rows
    for build in (logistic_problem, multinomial_problem):
        with pytest.raises(ValueError, match="n_ordinary must be an integer >= 100"):
            build(epsilon=1.0, n_ordinary=99)


# ------------------------------------------------------------ multinomial_problem
def test_multinomial_problem_datasets_plan_and_shift(monkeypatch):
    """D: classes 1..K-1 evenly, 80% at -v and 20% at +v; D' = canary +v of class 0 first;
    every default release made; same-noise differences have mean mu (two-sided t-test,
    false-failure 1e-3)."""
    seen = _recording(monkeypatch, "DPLogisticRegression")
    n, K = 1000, 4
    p = multinomial_problem(epsilon=2.0, n_ordinary=n, n_classes=K)
    _check_common(p, "multinomial", n, CENTRE + COUNT + RANGE)
    assert p.settings["n_classes"] == K and "centre" in p.settings["conditioning"]
    assert "class 0" in p.canary and f"1..{K - 1}" in p.canary
    diffs = _paired_differences(p, range(4))
    t = (diffs.mean() - p.nu) / (diffs.std(ddof=1) / math.sqrt(diffs.size))
    assert abs(t) < stats.t.ppf(1 - 5e-4, diffs.size - 1)
    (X0, y0), (X1, y1) = seen[0], seen[1]
    assert int(np.sum(X0[:, 0] == CENTRED_ROW)) == n // 5
    assert int(np.sum(X0[:, 0] == -CENTRED_ROW)) == n - n // 5
    assert set(y0.tolist()) == set(range(1, K))
    counts = np.bincount(y0.astype(int), minlength=K)[1:]
    assert counts.max() - counts.min() <= 1  # spread evenly
    assert X1[0, 0] == CENTRED_ROW and y1[0] == 0
    np.testing.assert_array_equal(X1[1:], X0)
    np.testing.assert_array_equal(y1[1:], y0)
    res = p.run(1, np.random.default_rng(9))
    assert res.theta.shape == (K * 2,)  # K x (one feature + intercept)
    _check_claim(p, seed=9)


# ------------------------------------------------------------ centred_linear_regression_problem
def test_centred_linear_regression_problem_datasets_plan_and_shift(monkeypatch):
    """D: half at -v (y = 0), half at +v (y = -1); D' = canary +v, y = 1 first; every release
    made; same-noise differences have mean mu (t-test, false-failure 1e-3)."""
    seen = _recording(monkeypatch, "DPLinearRegression")
    n = 400
    p = centred_linear_regression_problem(epsilon=2.0, n_ordinary=n)
    _check_common(p, "linear_regression_centre", n, SCALE + CENTRE + COUNT + RANGE)
    assert "centre" in p.settings["conditioning"]
    assert CENTRED_ROW == 2.0 ** 41 * (1.0 - 2.0 ** -21)
    diffs = _paired_differences(p, range(5))
    t = (diffs.mean() - p.nu) / (diffs.std(ddof=1) / math.sqrt(diffs.size))
    assert abs(t) < stats.t.ppf(1 - 5e-4, diffs.size - 1)
    (X0, y0), (X1, y1) = seen[0], seen[1]
    low = X0[:, 0] < 0
    assert low.sum() == n // 2 and set(np.abs(X0[:, 0])) == {CENTRED_ROW}
    np.testing.assert_array_equal(y0[low], 0.0)
    np.testing.assert_array_equal(y0[~low], -1.0)
    assert X1[0, 0] == CENTRED_ROW and y1[0] == 1.0
    np.testing.assert_array_equal(X1[1:], X0)
    np.testing.assert_array_equal(y1[1:], y0)
    _check_claim(p)


# ------------------------------------------------------------ logistic_problem
def test_logistic_problem_datasets_plan_and_shift(monkeypatch):
    """D: n rows of class 1, 80% at -v and 20% at +v; D' = canary +v of class 0 first;
    nu = mu sqrt(1 - 0.16); same-noise differences have mean mu (t-test, false-failure 1e-3)."""
    seen = _recording(monkeypatch, "DPLogisticRegression")
    n = 1000
    p = logistic_problem(epsilon=2.0, n_ordinary=n)
    _check_common(p, "logistic", n, CENTRE + COUNT + RANGE)
    assert "class 0" in p.canary and "20% of them at +R" in p.canary
    diffs = _paired_differences(p, range(6))
    t = (diffs.mean() - p.nu) / (diffs.std(ddof=1) / math.sqrt(diffs.size))
    assert abs(t) < stats.t.ppf(1 - 5e-4, diffs.size - 1)
    (X0, y0), (X1, y1) = seen[0], seen[1]
    assert int(np.sum(X0[:, 0] == CENTRED_ROW)) == n // 5
    assert int(np.sum(X0[:, 0] == -CENTRED_ROW)) == n - n // 5
    np.testing.assert_array_equal(y0, 1)
    assert X1[0, 0] == CENTRED_ROW and y1[0] == 0
    np.testing.assert_array_equal(X1[1:], X0)
    _check_claim(p)


# ------------------------------------------------------------ ssp_problem
def test_ssp_problem_three_releases_give_the_accountants_mu():
    """mu = (sum_k Delta_k^2 / sigma_k^2)^(1/2) with each release moved by its whole
    sensitivity (1 / z_k each), and mu-GDP is exactly the (epsilon, delta) budget."""
    p = ssp_problem(epsilon=1.5, delta=DELTA, n_ordinary=3, row_bound=2.0, target_bound=3.0)
    zs = p.settings["noise_multipliers"]
    assert len(zs) == 3  # lambda_min, A_00 and b_0
    assert p.nu == p.settings["mu"]
    assert p.nu == pytest.approx(math.sqrt(sum(z ** -2 for z in zs)), rel=1e-12)
    assert p.nu == pytest.approx(gdp_mu(1.5, DELTA), rel=1e-6)
    assert best(p.run(0, np.random.default_rng(0)).event, DELTA).epsilon == pytest.approx(
        1.5, rel=1e-6)
    assert p.relation is Neighbouring.ADD_REMOVE and p.gaussian_output
    assert p.settings["n_samples"] == 4
    assert "B = 2, Y = 3" in p.canary and "B^2, B^2 and BY" in p.canary


def test_ssp_problem_statistic_is_unit_normal_shifted_by_mu():
    """Same noise: S(D') - S(D) = mu exactly. Independent runs (1 000 each): the mean gap is
    mu within 4.5 sqrt(2/1000) (false-failure 7e-6) and each variance is inside the
    chi-square(999) 1e-4 tails (2e-4 each)."""
    p = ssp_problem(epsilon=2.0, row_bound=2.0, target_bound=3.0)
    for seed in range(3):
        same = [p.observe(p.run(w, np.random.default_rng(seed))) for w in (0, 1)]
        assert same[1] - same[0] == pytest.approx(p.nu, abs=1e-9)
    runs = 1000
    s0 = np.array([p.observe(p.run(0, np.random.default_rng(i))) for i in range(runs)])
    s1 = np.array([p.observe(p.run(1, np.random.default_rng(runs + i))) for i in range(runs)])
    assert abs(s1.mean() - s0.mean() - p.nu) < 4.5 * math.sqrt(2.0 / runs)
    lo, hi = stats.chi2.ppf(1e-4, runs - 1), stats.chi2.ppf(1 - 1e-4, runs - 1)
    for s in (s0, s1):
        assert lo < (runs - 1) * s.var(ddof=1) < hi


def test_ssp_problem_refuses_bad_arguments():
    """epsilon is required and positive; delta, n_ordinary and both bounds are checked."""
    with pytest.raises(ValueError, match="give epsilon"):
        ssp_problem()
    with pytest.raises(ValueError, match="epsilon must be positive"):
        ssp_problem(epsilon=-1.0)
    with pytest.raises(ValueError, match="delta must be in the open interval"):
        ssp_problem(epsilon=1.0, delta=0.0)
    with pytest.raises(ValueError, match="n_ordinary must be an integer >= 1"):
        ssp_problem(epsilon=1.0, n_ordinary=0)
    with pytest.raises(ValueError, match="row_bound must be positive"):
        ssp_problem(epsilon=1.0, row_bound=0.0)
    with pytest.raises(ValueError, match="target_bound must be positive"):
        ssp_problem(epsilon=1.0, target_bound=math.inf)


# ------------------------------------------------------------ rrpsgd_problem
def test_rrpsgd_problem_plan_is_the_tight_one_round_event():
    """One round, replace-one, rate 1/n; the paper's formula is fed the epsilon argument that
    gives sigma_z = z; the run's event is the tight event and meets epsilon."""
    dl = 1e-5
    p = rrpsgd_problem(epsilon=2.0, delta=dl, n_ordinary=3)
    n = 4
    s = p.settings
    z = s["noise_multiplier"]
    assert s["n_samples"] == n and s["sampling_rate"] == 0.25 and s["horizon"] == 1
    assert s["paper_epsilon_argument"] == pytest.approx(
        2.0 * math.sqrt(math.log(3.0 * n / dl) * math.log(2.0 / dl)) / z, rel=1e-12)
    assert p.relation is Neighbouring.REPLACE_ONE and not p.gaussian_output
    assert p.family == ShiftFamily.symmetric_sum(1, 1.0 / n)
    assert p.nu == pytest.approx(1.0 / z, rel=1e-12)
    res = p.run(1, np.random.default_rng(0))
    assert res.n_iter == 1
    assert res.info["sigma_z"] == pytest.approx(z, rel=1e-9)
    assert res.event == rrpsgd_tight_event(lipschitz=1.0, noise_std=res.info["sigma_z"], n=n,
                                           steps=1)
    eps = best(res.event, dl).epsilon
    assert eps == pytest.approx(2.0, rel=1e-3) and eps <= 2.0 * (1 + 1e-9)


def test_rrpsgd_problem_statistic_follows_its_symmetric_family():
    """In noise units s = theta_0 / (eta sigma_z): D is -k nu - N, D' is +k nu - N, k ~ Bin(1,
    1/n). Paired runs recover N exactly (KS against N(0, 1): false-failure 1e-3) and k (its
    count within 5 binomial s.d. of 400/n: 6e-7)."""
    p = rrpsgd_problem(epsilon=2.0, n_ordinary=3)
    runs, n = 400, 4
    halves, ks = [], []
    for seed in range(runs):
        r0 = p.run(0, np.random.default_rng(seed))
        r1 = p.run(1, np.random.default_rng(seed))
        unit = r0.info["step_size"] * r0.info["sigma_z"]
        a, b = p.observe(r0) / unit, p.observe(r1) / unit
        k = (b - a) / (2 * p.nu)
        assert k == pytest.approx(round(k), abs=1e-9) and round(k) in (0, 1)
        ks.append(round(k))
        halves.append((a + b) / 2)
        assert r0.theta[1] == r1.theta[1]  # the canary moves only its own coordinate
    assert stats.kstest(halves, "norm").pvalue > 1e-3
    sd = math.sqrt(runs * (1 / n) * (1 - 1 / n))
    assert abs(sum(ks) - runs / n) < 5 * sd


def test_rrpsgd_problem_refuses_bad_arguments():
    """epsilon is required and positive; delta and n_ordinary are checked."""
    with pytest.raises(ValueError, match="give epsilon"):
        rrpsgd_problem()
    with pytest.raises(ValueError, match="epsilon must be positive"):
        rrpsgd_problem(epsilon=0.0)
    with pytest.raises(ValueError, match="delta must be in the open interval"):
        rrpsgd_problem(epsilon=1.0, delta=1.5)
    with pytest.raises(ValueError, match="n_ordinary must be an integer >= 1"):
        rrpsgd_problem(epsilon=1.0, n_ordinary=0)


# ------------------------------------------------------------ sample_statistic
def test_sample_statistic_gaussian_family_is_n0_against_nnu():
    """ShiftFamily.gaussian at nu: N(0, 1) on D and N(nu, 1) on D' (KS, 1e-3 each)."""
    nu, runs = 1.3, 3000
    s0, s1 = sample_statistic(ShiftFamily.gaussian(), nu, runs, np.random.default_rng(0))
    assert s0.shape == s1.shape == (runs,)
    assert stats.kstest(s0, "norm").pvalue > 1e-3
    assert stats.kstest(s1, "norm", args=(nu, 1.0)).pvalue > 1e-3


def test_sample_statistic_mixture_weights_and_offsets_scale_with_nu():
    """Components far apart are identifiable: their frequencies are the weights (within 5
    binomial s.d.: 6e-7), each centred at offset * nu with unit noise (KS: 1e-3 each)."""
    fam = ShiftFamily((0.3, 0.7), (0.0, 60.0), (0.9, 0.1), (-60.0, 20.0))
    nu, runs = 0.5, 4000
    s0, s1 = sample_statistic(fam, nu, runs, np.random.default_rng(1))
    hi0 = s0 > 15.0
    assert abs(hi0.sum() - 0.7 * runs) < 5 * math.sqrt(runs * 0.21)
    assert stats.kstest(s0[hi0] - 30.0, "norm").pvalue > 1e-3
    assert stats.kstest(s0[~hi0], "norm").pvalue > 1e-3
    lo1 = s1 < -15.0
    assert abs(lo1.sum() - 0.9 * runs) < 5 * math.sqrt(runs * 0.09)
    assert stats.kstest(s1[lo1] + 30.0, "norm").pvalue > 1e-3
    assert stats.kstest(s1[~lo1] - 10.0, "norm").pvalue > 1e-3


def test_sample_statistic_poisson_family_matches_the_binomial_mixture():
    """poisson_sum(T, gamma): D' is sum_k Bin(k; T, gamma) N(k nu, 1) (KS against the mixture
    CDF written out here with scipy; false-failure 1e-3); at nu = 0 both are N(0, 1)."""
    T, gamma, nu, runs = 3, 0.4, 1.5, 3000
    fam = ShiftFamily.poisson_sum(T, gamma)
    w = stats.binom.pmf(np.arange(T + 1), T, gamma)

    def mixture_cdf(x):
        return stats.norm.cdf(np.asarray(x)[..., None] - np.arange(T + 1) * nu) @ w

    s0, s1 = sample_statistic(fam, nu, runs, np.random.default_rng(2))
    assert stats.kstest(s0, "norm").pvalue > 1e-3
    assert stats.kstest(s1, mixture_cdf).pvalue > 1e-3
    z0, z1 = sample_statistic(fam, 0.0, runs, np.random.default_rng(3))
    assert stats.kstest(z1, "norm").pvalue > 1e-3 and stats.kstest(z0, "norm").pvalue > 1e-3


def test_sample_statistic_is_reproducible_from_the_generator():
    """All randomness comes from the generator passed: same seed, same draws."""
    fam = ShiftFamily.symmetric_sum(2, 0.5)
    a = sample_statistic(fam, 1.0, 50, np.random.default_rng(7))
    b = sample_statistic(fam, 1.0, 50, np.random.default_rng(7))
    c = sample_statistic(fam, 1.0, 50, np.random.default_rng(8))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])


# ------------------------------------------------------------ markdown_row
def _cells(row: str) -> list[str]:
    assert row.startswith("| ") and row.endswith(" |")
    return [c.strip() for c in row[2:-2].split(" | ")]


def test_markdown_row_has_the_header_columns_and_formats():
    """One cell per HEADER column: claim and bound to 3 decimals with their names, the ratio
    claimed / implied to 2 decimals, runs as given, seconds rounded."""
    out = {"method": "noisy_gd", "observed": "last iterate", "accountant_epsilon": 2.0,
           "accountant": "gdp", "epsilon_lower": 1.6, "bound": "gdp",
           "clopper_pearson": {"epsilon": 1.23456}, "runs": 500, "seconds": 12.6}
    cells = _cells(markdown_row(out, "NoisyGDSolver"))
    head = _cells(HEADER.splitlines()[0])
    assert len(cells) == len(head) == 9
    assert cells == ["noisy_gd", "NoisyGDSolver", "last iterate", "2.000 (gdp)",
                     "1.600 (gdp)", "1.25", "1.235", "500", "13"]
    # no evidence at all: the ratio is infinite, not a division error
    cells = _cells(markdown_row({**out, "epsilon_lower": 0.0}, "x"))
    assert cells[4] == "0.000 (gdp)" and cells[5] == "inf"


def test_markdown_row_of_a_real_audit_result():
    """The row of an AuditResult.to_dict() shows its values (claim / lower bound ratio)."""
    res = run_audit(noisy_gd_problem(noise_multiplier=2.0, steps=4), runs=300, delta=DELTA,
                    seed=0, split=0.5)
    out = res.to_dict()
    cells = _cells(markdown_row(out, "solver"))
    assert cells[0] == res.method and cells[2] == res.observed
    assert float(cells[3].split()[0]) == pytest.approx(res.accountant_epsilon, abs=5e-4)
    assert cells[3].endswith(f"({res.accountant})")
    assert float(cells[4].split()[0]) == pytest.approx(res.epsilon_lower, abs=5e-4)
    assert res.epsilon_lower > 0  # mu = 1, 300 runs, seed 0: evidence, so a finite ratio
    assert float(cells[5]) == pytest.approx(res.accountant_epsilon / res.epsilon_lower,
                                            abs=5e-3)
    assert float(cells[6]) == pytest.approx(res.clopper_pearson.epsilon, abs=5e-4)
    assert int(cells[7]) == 300


# ------------------------------------------------------------ at_clip
def test_at_clip_returns_the_norm_at_the_clip():
    """A gradient of norm C (a vector or a K x p matrix, Frobenius) passes; its norm returned."""
    assert at_clip(np.array([1.5, 2.0]), 2.5, 2.5, 0) == pytest.approx(2.5, rel=1e-15)
    assert at_clip(np.full((2, 2), 0.5), 1.0, 1.0, 3) == pytest.approx(1.0, rel=1e-15)
    # within the relative tolerance, at any scale: the norm itself comes back
    C = 1e6
    c = np.array([C * (1 + AT_CLIP_RTOL / 2), 0.0])
    assert at_clip(c, C, C, 0) == float(np.linalg.norm(c))


def test_at_clip_refuses_a_gradient_off_the_clip_or_a_step_not_clipped_at_c():
    """Below or above C beyond the tolerance, or a step clipped at another value (or not at
    all): RuntimeError naming the 1-based step."""
    C = 2.0
    for factor in (1 - 3 * AT_CLIP_RTOL, 1 + 3 * AT_CLIP_RTOL, 0.5):
        with pytest.raises(RuntimeError, match=r"at step 5, not the clip 2"):
            at_clip(np.array([0.0, C * factor]), C, C, 4)
    for clip in (math.inf, 2.5):
        with pytest.raises(RuntimeError, match="not the worst case"):
            at_clip(np.array([C, 0.0]), C, clip, 0)
