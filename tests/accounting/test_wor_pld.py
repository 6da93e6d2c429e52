"""PLD accounting of the Gaussian mechanism on a subset drawn without replacement.

The accountant composes the symmetric dominating PLD of :mod:`noisygd.accounting.wor_pld`
(Zhu, Dong and Wang 2022, Proposition 30). Every check below is against an independent
computation: scipy quadrature of hockey-stick divergences, the closed-form Gaussian
mechanism, exact (Monte-Carlo-free) lower bounds from explicit tests, dp_accounting's
*optimistic* PLD of a realisable pair, and the RDP accountant.
"""

from __future__ import annotations

import itertools
import logging
import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats
from scipy.special import logsumexp

from noisygd.accounting import (
    Composed,
    EpsilonDelta,
    Gaussian,
    Neighbouring,
    SampledWithoutReplacement,
    SelfComposed,
    UnsupportedEventError,
    best,
    get_accountant,
)
from noisygd.accounting.wor_pld import (
    _symmetrised,
    symmetric_mass_at_zero,
    without_replacement_gaussian_pld,
)

REP = Neighbouring.REPLACE_ONE
DELTA = 1e-5
PLD = get_accountant("pld")
RDP = get_accountant("rdp")


def _event(m: int, n: int, z: float, steps: int) -> SelfComposed:
    # NoisySGD's event: clipped sum (replace-one sensitivity 2C), noise z C
    return SelfComposed(SampledWithoutReplacement(m, n, Gaussian(z, 2.0, REP)), steps)


# ------------------------------------------------------------------ independent references
def _hockey_stick(p, q, alpha: float, scale: float) -> float:
    """int (p - alpha q)_+ by quadrature (densities p, q on the real line)."""
    f = lambda x: max(p(x) - alpha * q(x), 0.0)  # noqa: E731
    pts = np.linspace(-12 * scale, 12 * scale + 1, 41)
    return sum(integrate.quad(f, a, b, limit=200, epsabs=1e-14)[0]
               for a, b in itertools.pairwise(pts))


def _remove_pair(rate: float, sigma: float):
    p = lambda x: rate * stats.norm.pdf(x, 1.0, sigma) + (1 - rate) * stats.norm.pdf(x, 0.0, sigma)  # noqa: E731
    q = lambda x: stats.norm.pdf(x, 0.0, sigma)  # noqa: E731
    return p, q


def _one_step_epsilon(rate: float, sigma: float, delta: float) -> float:
    """Exact epsilon of H_{e^eps}(rate N(1) + (1-rate) N(0) || N(0)) = delta, by quadrature."""
    p, q = _remove_pair(rate, sigma)
    g = lambda e: _hockey_stick(p, q, math.exp(e), sigma) - delta  # noqa: E731
    if g(0.0) <= 0:
        return 0.0
    return optimize.brentq(g, 0.0, 60.0, xtol=1e-10)


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """Closed form: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""
    def g(e: float) -> float:
        return (stats.norm.cdf(-e / mu + mu / 2)
                - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2) - delta)
    return optimize.brentq(g, 0.0, 200.0, xtol=1e-12)


def _test_lower_bound(rate: float, sigma: float, steps: int, delta: float) -> float:
    r"""An exact lower bound on the T-step epsilon (no Monte Carlo).

    The pair :math:`(P'^{\otimes T}, Q^{\otimes T})`, :math:`P' = \gamma\mathcal N(1,\sigma^2)
    + (1-\gamma)\mathcal N(0,\sigma^2)`, :math:`Q = \mathcal N(0,\sigma^2)`, is realised by
    two neighbouring datasets (every other row's clipped gradient equal to the replaced
    row's), so for any event S, :math:`\varepsilon \ge \log((P(S) - \delta)/Q(S))` whenever
    :math:`P(S) > \delta`. Two families of S, with exact probabilities: the sum above t
    (a binomial mixture of Gaussians under P) and the maximum above t.
    """
    best_lb = 0.0
    k = np.arange(steps + 1)
    lw = stats.binom.logpmf(k, steps, rate)
    keep = lw > -80
    k, lw = k[keep], lw[keep]
    sd = math.sqrt(steps) * sigma
    for t in np.linspace(0.0, k.max() + 12 * sd, 801):
        p = math.exp(logsumexp(lw + stats.norm.logsf((t - k) / sd)))
        if p > delta:
            best_lb = max(best_lb, math.log(p - delta) - stats.norm.logsf(t / sd))
    for t in np.linspace(-2.0, 1.0 + 12 * sigma, 801):
        lq = math.log(-math.expm1(steps * stats.norm.logcdf(t / sigma)))
        inner = np.logaddexp(math.log(rate) + stats.norm.logcdf((t - 1) / sigma),
                             math.log1p(-rate) + stats.norm.logcdf(t / sigma))
        p = -math.expm1(steps * inner)
        if p > delta:
            best_lb = max(best_lb, math.log(p - delta) - lq)
    return best_lb


# ------------------------------------------------------------------------------- tests
GRID = [(q, z, t) for q in (0.001, 0.01, 0.1, 0.5) for z in (0.8, 1.0, 2.0) for t in (1, 100, 1000)]


@pytest.mark.parametrize(("q", "z", "steps"), GRID)
def test_pld_is_at_most_rdp(q: float, z: float, steps: int) -> None:
    # (a) both are sound upper bounds; the PLD should never be the looser one on this grid
    n = 10_000
    ev = _event(round(q * n), n, z, steps)
    assert PLD.epsilon(ev, DELTA) <= RDP.epsilon(ev, DELTA) * (1 + 1e-9)


@pytest.mark.parametrize(("q", "sigma"), [
    (0.01, 0.4), (0.9, 2.0),
    # 6-9 s each (scipy quadrature and a fine PLD): make test-slow
    *(pytest.param(q, s, marks=pytest.mark.slow)
      for q, s in ((0.01, 1.0), (0.1, 0.5), (0.5, 1.0)))])
def test_one_step_matches_the_exact_two_point_value(q: float, sigma: float) -> None:
    # (b) one step: the PLD's epsilon is the remove pair's exact epsilon (scipy quadrature),
    # never below it, and above it only by the loss discretisation
    n = 1000
    ev = SampledWithoutReplacement(round(q * n), n, Gaussian(2 * sigma, 2.0, REP))
    exact = _one_step_epsilon(q, sigma, DELTA)
    ours = PLD.epsilon(ev, DELTA)
    assert exact * (1 - 1e-9) <= ours <= exact * 1.003 + 1e-3


@pytest.mark.parametrize(("q", "sigma"), [(0.01, 0.5), (0.2, 1.0)])
def test_one_step_profile_is_the_two_part_bound(q: float, sigma: float) -> None:
    # ZDW22 Prop. 30: H_a(remove pair) for a = e^eps >= 1, H_a(add pair) for a < 1; the
    # pessimistic PLD is above both (quadrature, to its relative accuracy 1e-8), and close
    pld = without_replacement_gaussian_pld(q, sigma, 1e-4)
    p, qq = _remove_pair(q, sigma)
    for eps in (0.0, 0.05, 0.3, 1.0, 2.0):
        exact = _hockey_stick(p, qq, math.exp(eps), sigma)
        assert exact * (1 - 1e-8) <= pld.get_delta_for_epsilon(eps) <= exact + 2e-4
    for eps in (-0.05, -0.3, -1.0):
        exact = _hockey_stick(qq, p, math.exp(eps), sigma)  # the reversed ("add") pair
        assert exact * (1 - 1e-8) <= pld.get_delta_for_epsilon(eps) <= exact + 2e-4


@pytest.mark.parametrize(("q", "sigma"), [(0.001, 0.3), (0.01, 0.4), (0.1, 1.0), (0.5, 0.5),
                                          (0.99, 0.3), (1.0, 1.0)])
def test_mass_at_zero_is_a_valid_pair(q: float, sigma: float) -> None:
    # the discretised symmetric PLD is a probability distribution with z >= 0, close to the
    # exact z = (1 - q)(2 Phi(1 / (2 sigma)) - 1): never below it (pessimistic rounding moves
    # the losses in (-h, 0] onto the atom and rounds the positive ones up, shrinking their
    # mirrored mass) and above it by about one bucket's continuous mass (h = 1e-3: measured
    # 3e-5 to 0.02, at most 2.3% of z), so the atom's presence is resolved even where z is
    # small (q = 0.99: z = 0.009)
    pld = _symmetrised(q, sigma, 1e-3)
    dense = pld._pmf_remove.to_dense_pmf()
    probs = np.asarray(dense._probs)
    zero = probs[-dense._lower_loss]
    assert np.all(probs >= 0.0)
    assert math.fsum(probs) + dense._infinity_mass == pytest.approx(1.0, abs=1e-9)
    exact = (1 - q) * (2 * stats.norm.cdf(1 / (2 * sigma)) - 1)
    assert symmetric_mass_at_zero(q, sigma) == pytest.approx(exact, abs=1e-12)
    assert zero >= exact - 1e-12
    assert zero == pytest.approx(exact, rel=0.03, abs=1e-3)


@pytest.mark.parametrize(("q", "z", "steps"), [(0.01, 0.8, 1000), (0.01, 1.0, 1000),
                                               (0.1, 2.0, 100), (0.01, 1.0, 10_000)])
def test_composition_is_above_exact_lower_bounds(q: float, z: float, steps: int) -> None:
    # (b) T steps: above the explicit-test lower bound (exact, no Monte Carlo) and above
    # dp_accounting's optimistic (lower) estimate of the realisable remove pair composed
    from dp_accounting.pld import privacy_loss_distribution as pld

    n = 10_000
    ev = _event(round(q * n), n, z, steps)
    ours = PLD.epsilon(ev, DELTA)
    assert ours >= _test_lower_bound(q, z / 2, steps, DELTA)
    logging.disable(logging.WARNING)  # dp_accounting warns that it uses privacy buckets
    try:
        optimistic = pld.from_gaussian_mechanism(
            z / 2, 1.0, pessimistic_estimate=False, use_connect_dots=False,
            value_discretization_interval=1e-3, sampling_prob=q)
    finally:
        logging.disable(logging.NOTSET)
    remove = pld.PrivacyLossDistribution(optimistic._pmf_remove).self_compose(steps)
    assert ours >= remove.get_epsilon_for_delta(DELTA)


@pytest.mark.parametrize(("z", "steps"), [(1.0, 1), (0.8, 10), (2.0, 100), (5.0, 1000)])
def test_full_batch_is_the_gaussian_mechanism(z: float, steps: int) -> None:
    # (c) m = n: T Gaussian mechanisms with shift 2C and noise zC, mu = 2 sqrt(T) / z
    ev = _event(500, 500, z, steps)
    exact = _gaussian_epsilon(2 * math.sqrt(steps) / z, DELTA)
    ours = PLD.epsilon(ev, DELTA)
    assert exact * (1 - 1e-9) <= ours <= exact * 1.002 + 1e-3
    # the symmetrised construction itself (not used at q = 1) gives the same pair
    built = _symmetrised(1.0, z / 2, 1e-3).self_compose(steps).get_epsilon_for_delta(DELTA)
    assert exact * (1 - 1e-9) <= built <= exact * 1.002 + 2e-3


def test_best_reports_the_pld_and_mixed_compositions() -> None:
    ev = _event(100, 10_000, 0.8, 1000)
    res = best(ev, DELTA)
    assert res.accountant == "pld"
    assert res.epsilon < res.by_accountant["rdp"] / 3  # the gain on the kind of run
    mixed = Composed((ev, SelfComposed(Gaussian(40.0, 2.0, REP), 5)))
    lone = PLD.epsilon(ev, DELTA)
    assert lone <= PLD.epsilon(mixed, DELTA) <= RDP.epsilon(mixed, DELTA)
    # delta is the inverse reading of the same PLD
    eps = PLD.epsilon(ev, DELTA)
    assert PLD.delta(ev, eps) <= DELTA * (1 + 1e-6)
    assert PLD.delta(ev, eps * 0.9) > DELTA


def test_refusals() -> None:
    inner = SampledWithoutReplacement(10, 100, EpsilonDelta(1.0, 1e-7, REP))
    assert not PLD.supports(inner)
    with pytest.raises(UnsupportedEventError):
        PLD.epsilon(SelfComposed(inner, 3), DELTA)
    assert PLD.epsilon(SampledWithoutReplacement(10, 100, Gaussian(math.inf, 2.0, REP)),
                       DELTA) == 0.0
    with pytest.raises(ValueError):
        without_replacement_gaussian_pld(0.0, 1.0, 1e-3)
    with pytest.raises(ValueError):
        without_replacement_gaussian_pld(0.5, -1.0, 1e-3)


def test_monotone_in_steps_batch_and_noise() -> None:
    # composition never tighter than its parts; bigger batches and less noise cost more
    def eps(m: int, z: float, steps: int) -> float:
        return PLD.epsilon(_event(m, 10_000, z, steps), DELTA)

    by_steps = [eps(100, 1.0, t) for t in (1, 2, 10, 100, 1000)]
    by_batch = [eps(m, 1.0, 100) for m in (1, 10, 100, 1000, 10_000)]
    by_noise = [eps(100, z, 100) for z in (0.6, 1.0, 2.0, 5.0)]
    assert by_steps == sorted(by_steps)
    assert by_batch == sorted(by_batch)
    assert by_noise == sorted(by_noise, reverse=True)
