"""Private selection by random stopping (noisygd.tuning)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from noisygd.accounting import Gaussian, Neighbouring, SelfComposed, best
from noisygd.accounting.events import RandomStoppingSelection
from noisygd.tuning import (
    gaussian_run_event,
    private_select,
    private_sum,
    private_sum_event,
    runs_pmf,
    sample_runs,
)

TNB = "truncated_negative_binomial"
LAWS = [(TNB, 1.0, 8.0), (TNB, 0.0, 8.0), (TNB, 0.5, 5.0), (TNB, -0.5, 4.0), (TNB, 3.0, 12.0),
        ("poisson", None, 6.0)]


@pytest.mark.parametrize(("dist", "eta", "mean"), LAWS)
def test_pmf_matches_scipy(dist: str, eta: float | None, mean: float) -> None:
    e = RandomStoppingSelection(Gaussian(1.0), dist, mean, eta)
    k = np.arange(400)
    full = runs_pmf(e, 50_000)  # tails of eta <= 0 are heavy: sum far out
    p = full[:400]
    if dist == "poisson":
        ref = stats.poisson.pmf(k, mean)
    elif eta == 0.0:
        ref = np.where(k >= 1, stats.logser.pmf(np.maximum(k, 1), 1 - e.gamma), 0.0)
    elif eta > 0:  # negative binomial conditioned on K >= 1
        ref = np.where(k >= 1, stats.nbinom.pmf(k, eta, e.gamma), 0.0)
        ref /= 1 - stats.nbinom.pmf(0, eta, e.gamma)
    else:
        ref = None  # eta < 0 has no scipy counterpart; the mean is checked below
    if ref is not None:
        np.testing.assert_allclose(p, ref, rtol=1e-9, atol=1e-300)
    assert full.sum() == pytest.approx(1.0, abs=1e-9)
    assert (np.arange(full.size) * full).sum() == pytest.approx(mean, rel=1e-7)


@pytest.mark.parametrize(("dist", "eta", "mean"), LAWS)
def test_sampled_runs_follow_the_stated_law(dist: str, eta: float | None, mean: float) -> None:
    # Chi-square goodness of fit, 20 000 draws, cells pooled to expected counts >= 20.
    # False-failure rate 1e-3 per law under a correct sampler (fixed seed: deterministic).
    e = RandomStoppingSelection(Gaussian(1.0), dist, mean, eta)
    rng = np.random.default_rng(20220125)
    n = 20_000
    draws = np.array([sample_runs(e, rng) for _ in range(n)])
    kmax = int(draws.max()) + 1
    p = runs_pmf(e, kmax + 200)
    edges, acc = [], 0.0
    lo = 0
    for k in range(len(p)):
        acc += p[k]
        if acc * n >= 20 and (1 - p[: k + 1].sum()) * n >= 20:
            edges.append((lo, k))
            lo, acc = k + 1, 0.0
    edges.append((lo, math.inf))
    obs = np.array([np.sum((draws >= a) & (draws <= b)) for a, b in edges])
    exp = np.array([p[a: (len(p) if b == math.inf else b + 1)].sum() for a, b in edges]) * n
    exp[-1] = n - exp[:-1].sum()
    chi2 = float(((obs - exp) ** 2 / exp).sum())
    assert chi2 < stats.chi2.ppf(1 - 1e-3, len(edges) - 1), (chi2, len(edges))
    if dist != "poisson":
        assert draws.min() >= 1


def _toy(seed: int, n: int = 4000):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)) / 3.0
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]  # rows of norm <= 1
    y = np.where(X[:, 0] + 0.05 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _problem(X, y, f_score: float = 0.2):
    """Candidate c in {+1, -1} multiplies a private mean of y_i x_i: -1 is the bad setting."""
    f_fit = math.sqrt(1 - f_score)
    f_sc = math.sqrt(f_score)

    def fit_one(c, mu, rng):
        # sum of y_i x_i (norm <= 1: add/remove sensitivity 1) + N(0, (1/mu_fit)^2 I)
        s = (y[:, None] * X).sum(0) + rng.normal(0.0, 1.0 / (f_fit * mu), X.shape[1])
        return c * s, Gaussian(1.0 / (f_fit * mu))

    def score_one(w, mu, rng):
        return private_sum(np.sign(X @ w) == y, bound=1.0, mu=f_sc * mu, rng=rng)

    def run_event(c, mu):
        return Gaussian(1.0 / (f_fit * mu))

    def score_event(mu):
        return private_sum_event(f_sc * mu)

    return fit_one, score_one, run_event, score_event


@pytest.mark.parametrize(("dist", "eta"), [(TNB, 1.0), (TNB, 0.0), ("poisson", None)])
@pytest.mark.parametrize("epsilon", [0.5, 2.0, 8.0])
def test_calibration_meets_the_target_and_is_tight(dist: str, eta: float | None,
                                                   epsilon: float) -> None:
    X, y = _toy(0, n=200)
    fit_one, score_one, run_event, score_event = _problem(X, y)
    _, event, report = private_select(
        [1.0, -1.0], fit_one, score_one, epsilon=epsilon, delta=1e-6,
        rng=np.random.default_rng(1), run_event=run_event, score_event=score_event,
        distribution=dist, eta=eta, mean=6.0, rtol=1e-3)
    assert report.epsilon <= epsilon
    assert best(event, 1e-6).epsilon == report.epsilon
    assert report.privacy.accountant == "rdp"
    # 0.3% more per-run budget than calibrated breaks the target (rtol 1e-3)
    from noisygd.tuning import selection_event

    bigger = selection_event([1.0, -1.0], run_event, report.knob * 1.003, score_event=score_event,
                             distribution=dist, mean=6.0, eta=eta)
    assert best(bigger, 1e-6).epsilon > epsilon
    assert sum(report.runs_per_candidate) == report.n_runs


def test_selection_picks_the_better_candidate_at_generous_epsilon() -> None:
    # Candidate +1 has accuracy ~0.97 on the toy data, -1 ~0.03; at epsilon 8 the noisy scores
    # essentially never mis-rank them, so a selection fails only if no run drew +1:
    # P(fail) = sum_k P(K = k) 2^-k, computed from the law below. Over 20 seeds the test
    # allows failures up to the count whose binomial tail is < 1e-3 (false-failure rate).
    X, y = _toy(3)
    fit_one, score_one, run_event, score_event = _problem(X, y)
    mean = 8.0
    law = RandomStoppingSelection(Gaussian(1.0), TNB, mean, 1.0)
    pmf = runs_pmf(law, 2000)
    p_fail = float(sum(pmf[k] * 0.5**k for k in range(1, len(pmf))))
    seeds = 20
    allowed = int(stats.binom.ppf(1 - 1e-3, seeds, p_fail))
    wins = 0
    for seed in range(seeds):
        _, _, report = private_select(
            [1.0, -1.0], fit_one, score_one, epsilon=8.0, delta=1e-6,
            rng=np.random.default_rng(seed), run_event=run_event, score_event=score_event,
            mean=mean)
        assert report.epsilon <= 8.0
        wins += report.chosen == 0
        assert report.candidate == [1.0, -1.0][report.chosen]
    assert seeds - wins <= allowed, (wins, allowed, p_fail)


def test_public_validation_score_and_private_requirement() -> None:
    X, y = _toy(5, n=300)
    fit_one, _, run_event, _ = _problem(X, y)
    Xv, yv = _toy(6, n=300)  # declared public

    def public_score(w, mu, rng):
        return float(np.mean(np.sign(Xv @ w) == yv))

    kw = dict(epsilon=2.0, delta=1e-6, run_event=run_event)
    with pytest.raises(ValueError, match="private"):
        private_select([1.0, -1.0], fit_one, public_score, rng=np.random.default_rng(0), **kw)
    _, event, report = private_select([1.0, -1.0], fit_one, public_score,
                                      rng=np.random.default_rng(0), public_score=True, **kw)
    assert report.public_score and report.epsilon <= 2.0
    assert event.runs == (run_event(1.0, report.knob),)  # no score event in the runs


def test_a_run_performing_more_than_planned_is_refused() -> None:
    X, y = _toy(7, n=100)
    fit_one, score_one, _, score_event = _problem(X, y)

    def understated(c, mu):
        return Gaussian(10.0 / mu)  # claims ten times the noise the run adds

    with pytest.raises(RuntimeError, match="not within its planned event"):
        private_select([1.0], fit_one, score_one, epsilon=1.0, delta=1e-6,
                       rng=np.random.default_rng(0), run_event=understated,
                       score_event=score_event)


def test_poisson_with_no_run_releases_nothing() -> None:
    X, y = _toy(8, n=100)
    fit_one, score_one, run_event, score_event = _problem(X, y)
    law = RandomStoppingSelection(Gaussian(1.0), "poisson", 1.0)
    seed = next(s for s in range(100) if sample_runs(law, np.random.default_rng(s)) == 0)
    model, _, report = private_select(
        [1.0, -1.0], fit_one, score_one, epsilon=4.0, delta=1e-6,
        rng=np.random.default_rng(seed), run_event=run_event, score_event=score_event,
        distribution="poisson", mean=1.0)
    assert model is None and report.chosen is None and report.n_runs == 0


def test_unreachable_target_and_argument_checks() -> None:
    X, y = _toy(9, n=100)
    fit_one, score_one, run_event, score_event = _problem(X, y)
    base = dict(rng=np.random.default_rng(0), run_event=run_event, score_event=score_event)
    with pytest.raises(ValueError, match="no per-run budget"):
        private_select([1.0], fit_one, score_one, epsilon=1e-3, delta=1e-6, mean=100.0,
                       knob_bounds=(1.0, 10.0), **base)
    with pytest.raises(ValueError):
        private_select([], fit_one, score_one, epsilon=1.0, delta=1e-6, **base)
    with pytest.raises(TypeError):
        private_select([1.0], fit_one, score_one, epsilon="1", delta=1e-6, **base)
    with pytest.raises(ValueError):
        private_select([1.0], fit_one, score_one, epsilon=1.0, delta=1.5, **base)
    with pytest.raises(TypeError):
        private_select([1.0], fit_one, score_one, epsilon=1.0, delta=1e-6,
                       rng=0, run_event=run_event, score_event=score_event)


def test_gaussian_run_event_dominates_calibrated_gaussian_runs() -> None:
    from noisygd.accounting import calibrate_gaussian_composition, calibrate_mu
    from noisygd.accounting.rdp import DEFAULT_ORDERS, rdp_curve

    mu = calibrate_mu(1.0, 1e-5)
    z = calibrate_gaussian_composition(1.0, 1e-5, steps=100, sensitivity=1.0,
                                       relation=Neighbouring.ADD_REMOVE)
    run = SelfComposed(Gaussian(z), 100)
    env = gaussian_run_event()("any", mu)
    o = np.asarray(DEFAULT_ORDERS)
    assert np.all(rdp_curve(run, o) <= rdp_curve(env, o) * (1 + 1e-9))
    assert gaussian_run_event(share=0.25)("any", 2.0) == Gaussian(1.0)  # sqrt(0.25) * 2 = 1
    with pytest.raises(ValueError):
        gaussian_run_event(share=1.5)


def test_private_sum_noise_scale() -> None:
    # the noise of private_sum has standard deviation bound/mu (chi-square test on the
    # sample variance, 4000 draws, false-failure rate 1e-3)
    rng = np.random.default_rng(11)
    v = np.array([0.2, 5.0, -3.0, 1.0])  # clipped to [0, 2]: 0.2 + 2 + 0 + 1
    draws = np.array([private_sum(v, bound=2.0, mu=0.5, rng=rng) for _ in range(4000)])
    resid = draws - 3.2
    s2 = float(resid.var(ddof=0)) * 4000 / 16.0  # sum of squares / sigma^2, sigma = 4
    assert stats.chi2.ppf(5e-4, 4000) < s2 < stats.chi2.ppf(1 - 5e-4, 4000)
    assert private_sum_event(0.5) == Gaussian(2.0, 1.0)
