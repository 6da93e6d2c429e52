"""Direct tests of four accountant classes that no other test names.

Covered: :class:`noisygd.accounting.output_perturbation.PureDPAccountant`,
:class:`~noisygd.accounting.output_perturbation.PaperTheoremAccountant`,
:class:`~noisygd.accounting.output_perturbation.RRPSGDPaperAccountant` and
:class:`noisygd.accounting.subsampling.SubsamplingLemmaAccountant`: their ``epsilon(event,
delta)`` against the closed form of the theorem each docstring names (written out here), the
events each refuses (``UnsupportedEventError``, with its message), the argument checks,
monotonicity, the ``delta(event, epsilon)`` inverse of the base class, and agreement with the
exact Gaussian privacy profile (Balle and Wang 2018, Theorem 8, written out with SciPy), with
dp_accounting's PLD accountant and with the library's general accountants.
"""

from __future__ import annotations

import itertools
import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import pld_privacy_accountant
from scipy import optimize, stats

from noisygd.accounting import best, get_accountant
from noisygd.accounting.base import GENERAL, PAPER, UnsupportedEventError
from noisygd.accounting.events import (
    Composed,
    EpsilonDelta,
    Gaussian,
    Neighbouring,
    NonPrivate,
    OutputNoise,
    OutputPerturbation,
    PoissonSampled,
    RRPSGDPaperArgument,
    SampledWithoutReplacement,
    SelfComposed,
)
from noisygd.accounting.output_perturbation import (
    PaperTheoremAccountant,
    PureDPAccountant,
    RRPSGDPaperAccountant,
)
from noisygd.accounting.subsampling import SubsamplingLemmaAccountant

R1 = Neighbouring.REPLACE_ONE


# --------------------------------------------------------------- independent closed forms
def bw_delta(mu: float, eps: float) -> float:
    r"""Exact delta of the Gaussian mechanism with :math:`\mu = \Delta/\sigma` (Balle & Wang
    2018, Theorem 8): :math:`\Phi(-\varepsilon/\mu + \mu/2) - e^\varepsilon
    \Phi(-\varepsilon/\mu - \mu/2)`."""
    return float(stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(
        -eps / mu - mu / 2))


def bw_epsilon(mu: float, delta: float) -> float:
    """The exact Gaussian epsilon at ``delta``: the root of :func:`bw_delta` in epsilon."""
    if bw_delta(mu, 0.0) <= delta:
        return 0.0
    return float(optimize.brentq(lambda e: bw_delta(mu, e) - delta, 0.0, 100.0,
                                 xtol=1e-14, rtol=1e-13))


def paper_sigma(sens: float, eps0: float, delta0: float) -> float:
    r"""Zhang et al. 2017's :math:`\sigma = \Delta\sqrt{2\log(2/\delta_0)}/\varepsilon_0`."""
    return sens * math.sqrt(2 * math.log(2 / delta0)) / eps0


def classical_sigma(sens: float, eps0: float, delta0: float) -> float:
    r"""Dwork & Roth 2014, Theorem A.1: :math:`\Delta\sqrt{2\log(1.25/\delta_0)}/\varepsilon_0`."""
    return sens * math.sqrt(2 * math.log(1.25 / delta0)) / eps0


def paper_event(eps0: float = 0.5, delta0: float = 1e-5, sens: float = 0.3,
                sigma: float | None = None,
                noise: OutputNoise = OutputNoise.GAUSSIAN_PAPER) -> OutputPerturbation:
    s = paper_sigma(sens, eps0, delta0) if sigma is None else sigma
    return OutputPerturbation(noise, sens, s, eps0, delta0)


def laplace_event(sens: float = 0.3, scale: float = 0.2) -> OutputPerturbation:
    return OutputPerturbation(OutputNoise.L2_LAPLACE, sens, scale, sens / scale)


def amplified(rate: float, eps: float, delta: float) -> tuple[float, float]:
    r"""Balle, Barthe & Gaboardi 2018, Theorems 8-9: :math:`(\log(1 + q(e^\varepsilon - 1)),
    q\delta)`."""
    return math.log(1 + rate * (math.exp(eps) - 1)), rate * delta


def advanced(eps: float, k: int, slack: float) -> float:
    r"""Dwork, Rothblum & Vadhan 2010, Theorem III.3: :math:`\sqrt{2k\log(1/\delta')}
    \varepsilon + k\varepsilon(e^\varepsilon - 1)`."""
    return math.sqrt(2 * k * math.log(1 / slack)) * eps + k * eps * (math.exp(eps) - 1)


def rrpsgd_chain(mu0: float, n: int, T: int, delta: float) -> float:
    """Theorem 4 of Zhang et al. 2017 (Appendix A.4), as the class docstring lists it."""
    delta0 = min(n * delta / (2 * T), 0.5)
    eps0 = bw_epsilon(mu0, delta0)
    eps1 = 2 * eps0 / n
    return math.sqrt(2 * T * math.log(2 / delta)) * eps1 + T * eps1 * (math.exp(eps1) - 1)


# ------------------------------------------------------------------------ class attributes
@pytest.mark.parametrize(("cls", "name", "kind", "types"), [
    (PureDPAccountant, "pure_dp", GENERAL,
     {OutputPerturbation, EpsilonDelta, SelfComposed, Composed}),
    (PaperTheoremAccountant, "paper_thm", PAPER, {OutputPerturbation}),
    (RRPSGDPaperAccountant, "zhang2017_thm4", PAPER, {RRPSGDPaperArgument}),
    (SubsamplingLemmaAccountant, "subsampling_lemma", GENERAL,
     {PoissonSampled, SampledWithoutReplacement, EpsilonDelta, SelfComposed, Composed}),
])
def test_declared_name_kind_event_types_and_registry(cls, name, kind, types) -> None:
    """Each class declares its registry name, kind, dispatch table and a theorem string."""
    assert cls.name == name
    assert cls.kind == kind
    assert set(cls.event_types()) == types
    assert cls.theorem
    acc = cls()
    assert acc.theorem_for(EpsilonDelta(1.0)) == cls.theorem
    assert type(get_accountant(name)) is cls
    assert repr(acc) == f"{cls.__name__}()"


@pytest.mark.parametrize("cls", [PureDPAccountant, PaperTheoremAccountant,
                                 RRPSGDPaperAccountant, SubsamplingLemmaAccountant])
@pytest.mark.parametrize(("delta", "exc", "match"), [
    (0.0, ValueError, r"delta must be in the open interval \(0, 1\)"),
    (1.0, ValueError, r"delta must be in the open interval \(0, 1\)"),
    (-1e-5, ValueError, r"delta must be in the open interval \(0, 1\)"),
    (float("nan"), ValueError, r"delta must be in the open interval \(0, 1\)"),
    ("1e-5", TypeError, "delta must be a real number"),
    (True, TypeError, "delta must be a real number"),
])
def test_epsilon_checks_delta(cls, delta, exc, match) -> None:
    """Every accountant checks delta in (0, 1) before reading an event it supports."""
    event = {
        PureDPAccountant: laplace_event(),
        PaperTheoremAccountant: paper_event(),
        RRPSGDPaperAccountant: RRPSGDPaperArgument(0.2, 50, 2500),
        SubsamplingLemmaAccountant: PoissonSampled(0.1, EpsilonDelta(1.0)),
    }[cls]
    with pytest.raises(exc, match=match):
        cls().epsilon(event, delta)


@pytest.mark.parametrize(("epsilon", "exc", "match"), [
    (0.0, ValueError, "epsilon must be positive and finite"),
    (-1.0, ValueError, "epsilon must be positive and finite"),
    (math.inf, ValueError, "epsilon must be positive and finite"),
    ("1", TypeError, "epsilon must be a real number"),
])
def test_delta_checks_epsilon(epsilon, exc, match) -> None:
    """The inherited ``delta(event, epsilon)`` checks epsilon > 0 and finite."""
    with pytest.raises(exc, match=match):
        PureDPAccountant().delta(laplace_event(), epsilon)


# ----------------------------------------------------------------------------- pure_dp
@pytest.mark.parametrize(("sens", "scale"), [(0.3, 0.2), (1.0, 4.0), (2e-3, 1e-4)])
@pytest.mark.parametrize("delta", [1e-12, 1e-5, 0.5])
def test_pure_dp_l2_laplace_is_sensitivity_over_scale(sens, scale, delta) -> None:
    """Zhang et al. 2017 Thm 1: L2-Laplace output perturbation is (Delta/b)-DP, at any delta."""
    assert PureDPAccountant().epsilon(laplace_event(sens, scale), delta) == pytest.approx(
        sens / scale, rel=1e-15)


def test_pure_dp_epsilon_delta_events_and_basic_composition() -> None:
    """EpsilonDelta(eps, 0) gives eps; (self-)compositions add epsilons (D&R Thm 3.16)."""
    acc = PureDPAccountant()
    assert acc.epsilon(EpsilonDelta(0.7), 1e-6) == 0.7
    assert acc.epsilon(EpsilonDelta(0.7, relation=R1), 1e-6) == 0.7
    assert acc.epsilon(SelfComposed(laplace_event(0.3, 0.2), 7), 1e-6) == pytest.approx(
        7 * 1.5, rel=1e-15)
    mixed = Composed((laplace_event(0.3, 0.2), EpsilonDelta(0.2, relation=R1),
                      SelfComposed(EpsilonDelta(0.1, relation=R1), 3)))
    assert acc.epsilon(mixed, 1e-6) == pytest.approx(1.5 + 0.2 + 3 * 0.1, rel=1e-15)
    nested = SelfComposed(Composed((EpsilonDelta(0.25), SelfComposed(EpsilonDelta(0.5), 2))), 4)
    assert acc.epsilon(nested, 1e-3) == pytest.approx(4 * (0.25 + 2 * 0.5), rel=1e-15)
    assert acc.epsilon(SelfComposed(EpsilonDelta(0.3), 0), 1e-3) == 0.0  # nothing released


def test_pure_dp_does_not_depend_on_delta() -> None:
    """The pure epsilon is the same at every delta (documented)."""
    event = SelfComposed(laplace_event(0.4, 0.1), 3)
    values = {PureDPAccountant().epsilon(event, float(d)) for d in np.geomspace(1e-15, 0.9, 12)}
    assert len(values) == 1
    assert values.pop() == pytest.approx(4 * 3.0, rel=1e-15)


@pytest.mark.parametrize(("event", "match"), [
    (EpsilonDelta(0.5, 1e-9), r"EpsilonDelta\(epsilon=0.5, delta=1e-09\) is not pure DP"),
    (paper_event(), "Gaussian output perturbation is not pure DP"),
    (OutputPerturbation(OutputNoise.GAUSSIAN_ANALYTIC, 1.0, 3.0, 1.0, 1e-5),
     "Gaussian output perturbation is not pure DP"),
    (Gaussian(2.0), "pure_dp bounds only pure-DP events, not Gaussian"),
    (SelfComposed(Gaussian(2.0), 3), "pure_dp bounds only pure-DP events, not Gaussian"),
    (Composed((EpsilonDelta(0.1), Gaussian(2.0))),
     "pure_dp bounds only pure-DP events, not Gaussian"),
    (Composed((EpsilonDelta(0.1), EpsilonDelta(0.1, 1e-7))), "is not pure DP"),
    (PoissonSampled(0.1, EpsilonDelta(1.0)),
     "pure_dp bounds only pure-DP events, not PoissonSampled"),
    (NonPrivate(), "pure_dp bounds only pure-DP events, not NonPrivate"),
    (RRPSGDPaperArgument(0.2, 50, 2500),
     "pure_dp bounds only pure-DP events, not RRPSGDPaperArgument"),
])
def test_pure_dp_refuses_every_approximate_or_unknown_event(event, match) -> None:
    """Anything not pure DP (Gaussian noise, delta > 0, unknown types) is refused."""
    acc = PureDPAccountant()
    with pytest.raises(UnsupportedEventError, match=match):
        acc.epsilon(event, 1e-5)
    assert acc.supports(event) is False


@pytest.mark.parametrize(("noise_multiplier", "count"), [(2.0, 1), (0.5, 1), (3.0, 10)])
def test_pure_dp_is_never_below_dp_accounting_laplace_pld(noise_multiplier, count) -> None:
    """Basic composition of Laplace mechanisms is an upper bound on dp_accounting's PLD value,
    and for one mechanism at a tiny delta it is (almost) the exact epsilon 1/b."""
    # a one-dimensional L2-Laplace is the Laplace mechanism: sensitivity 1, scale b
    ours = PureDPAccountant().epsilon(
        SelfComposed(laplace_event(1.0, noise_multiplier), count), 1e-10)
    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(dp_accounting.LaplaceDpEvent(noise_multiplier), count)
    ref = acc.get_epsilon(1e-10)
    # dp_accounting's pessimistic PLD rounds each loss up by at most its grid step (1e-4)
    assert ref <= ours + count * 1e-4
    if count == 1:
        assert ref == pytest.approx(ours, rel=1e-3)


def test_pure_dp_delta_is_one_below_the_pure_epsilon() -> None:
    """At epsilon below Delta/b no delta < 1 is certified: the inverse answers 1."""
    acc = PureDPAccountant()
    assert acc.delta(laplace_event(0.3, 0.2), 1.4) == 1.0
    assert acc.delta(SelfComposed(EpsilonDelta(0.5), 4), 1.99) == 1.0


def test_pure_dp_delta_is_negligible_at_or_above_the_pure_epsilon() -> None:
    """A pure-DP event is certified at every delta: the inverse is at most 1e-299."""
    assert PureDPAccountant().delta(laplace_event(0.3, 0.2), 1.6) <= 1e-299


# --------------------------------------------------------------------------- paper_thm
@pytest.mark.parametrize(("eps0", "delta0"), [(0.5, 1e-5), (0.05, 1e-8), (0.999, 1e-3)])
def test_paper_theorem_certifies_the_calibration_epsilon_at_every_delta_from_delta0(
        eps0, delta0) -> None:
    """For delta >= delta0 the answer is the calibrated epsilon0, unchanged by delta."""
    acc = PaperTheoremAccountant()
    event = paper_event(eps0, delta0, sens=0.7)
    for delta in (delta0, delta0 * 1.0001, math.sqrt(delta0), 0.9):
        assert acc.epsilon(event, delta) == eps0
    assert acc.supports(event) is (delta0 <= 1e-5)  # supports() probes at delta = 1e-5


def test_paper_theorem_refuses_delta_below_delta0() -> None:
    """Below the calibrated delta0 the theorem says nothing: refused, never extrapolated."""
    acc = PaperTheoremAccountant()
    event = paper_event(0.5, 1e-5)
    for delta in (1e-5 * (1 - 1e-9), 1e-6, 1e-20):
        with pytest.raises(UnsupportedEventError, match=r"certifies delta >= 1e-05, asked"):
            acc.epsilon(event, delta)


@pytest.mark.parametrize("eps0", [1.0, 1.5, 8.0])
def test_paper_theorem_refuses_epsilon0_at_least_one(eps0) -> None:
    """Dwork-Roth Theorem A.1 needs epsilon0 < 1: an event calibrated above is refused."""
    with pytest.raises(UnsupportedEventError,
                       match=rf"Theorem A.1 needs epsilon < 1; .* epsilon = {eps0}"):
        PaperTheoremAccountant().epsilon(paper_event(eps0, 1e-5), 1e-3)


def test_paper_theorem_accepts_the_classical_sigma_and_refuses_less() -> None:
    """The classical sigma Delta sqrt(2 log(1.25/delta0))/eps0 is the smallest accepted."""
    acc = PaperTheoremAccountant()
    s = classical_sigma(0.3, 0.5, 1e-5)
    assert paper_sigma(0.3, 0.5, 1e-5) > s
    assert acc.epsilon(paper_event(0.5, 1e-5, 0.3, sigma=s), 1e-5) == 0.5
    with pytest.raises(UnsupportedEventError, match="below the classical Gaussian-mechanism"):
        acc.epsilon(paper_event(0.5, 1e-5, 0.3, sigma=s * (1 - 1e-6)), 1e-5)


@pytest.mark.parametrize(("event", "match"), [
    (laplace_event(), "paper_thm only reads OutputPerturbation events with the paper's"),
    (paper_event(noise=OutputNoise.GAUSSIAN_ANALYTIC),
     "paper_thm only reads OutputPerturbation events with the paper's Gaussian noise"),
    (Gaussian(3.0), "with the paper's Gaussian noise, not Gaussian"),
    (EpsilonDelta(0.5, 1e-5), "with the paper's Gaussian noise, not EpsilonDelta"),
    (SelfComposed(paper_event(), 2), "with the paper's Gaussian noise, not SelfComposed"),
    (RRPSGDPaperArgument(0.2, 50, 2500), "not RRPSGDPaperArgument"),
])
def test_paper_theorem_refuses_other_events(event, match) -> None:
    """Only the paper's Gaussian output perturbation is read (not even its compositions)."""
    acc = PaperTheoremAccountant()
    with pytest.raises(UnsupportedEventError, match=match):
        acc.epsilon(event, 1e-3)
    assert acc.supports(event) is False


@pytest.mark.parametrize("eps0", [0.05, 0.3, 0.7, 0.999])
@pytest.mark.parametrize("delta0", [1e-3, 1e-6, 1e-10])
def test_paper_theorem_is_sound_against_the_exact_gaussian_profile(eps0, delta0) -> None:
    """Every accepted event really is (eps0, delta0)-DP: the exact Gaussian delta at eps0
    (Balle-Wang) of the smallest accepted sigma is at most delta0 (Theorem A.1 holds)."""
    sens = 0.3
    acc = PaperTheoremAccountant()
    for sigma in (classical_sigma(sens, eps0, delta0), paper_sigma(sens, eps0, delta0)):
        event = paper_event(eps0, delta0, sens, sigma=sigma)
        assert acc.epsilon(event, delta0) == eps0
        assert bw_delta(sens / sigma, eps0) <= delta0


@pytest.mark.parametrize(("eps0", "delta0"), [(0.5, 1e-5), (0.9, 1e-3), (0.1, 1e-7)])
def test_paper_theorem_is_never_below_the_exact_accountants(eps0, delta0) -> None:
    """The paper's epsilon0 is at least the exact Gaussian epsilon (closed form, the gdp
    accountant and dp_accounting's PLD) of the same release, at every delta >= delta0."""
    sens = 0.3
    event = paper_event(eps0, delta0, sens)
    mu = sens / event.scale
    pld = pld_privacy_accountant.PLDAccountant()
    pld.compose(dp_accounting.GaussianDpEvent(event.scale / sens))
    for delta in (delta0, 10 * delta0, 0.5):
        paper = PaperTheoremAccountant().epsilon(event, delta)
        exact = bw_epsilon(mu, delta)
        assert paper >= exact
        assert paper >= get_accountant("gdp").epsilon(event, delta)
        assert paper >= pld.get_epsilon(delta)
        assert get_accountant("gdp").epsilon(event, delta) == pytest.approx(exact, rel=1e-7,
                                                                             abs=1e-12)


def test_paper_theorem_delta_is_one_below_epsilon0() -> None:
    """Below eps0 no delta is certified: the inherited inverse answers 1."""
    acc = PaperTheoremAccountant()
    assert acc.delta(paper_event(0.5, 1e-5), 0.49) == 1.0


def test_paper_theorem_delta_at_epsilon0_is_delta0() -> None:
    """The smallest delta certified at eps0 is the calibrated delta0."""
    assert PaperTheoremAccountant().delta(paper_event(0.5, 1e-5), 0.5) == pytest.approx(
        1e-5, rel=1e-6)


# ---------------------------------------------------------------------- zhang2017_thm4
@pytest.mark.parametrize(("mu0", "n", "T", "delta"), [
    (0.2, 50, 2500, 1e-3),  # T = n^2: delta0 = delta / (2n), as in the paper
    (0.05, 20, 100, 1e-5),
    (0.5, 10, 7, 1e-2),
    (0.3, 100, 1, 0.5),  # n delta / (2T) = 25: delta0 capped at 1/2
])
def test_rrpsgd_paper_epsilon_is_the_theorem4_chain(mu0, n, T, delta) -> None:
    """exact Gaussian eps0 at delta0 = min(n delta/(2T), 1/2), Lemma 9 (eps1 = 2 eps0/n),
    Lemma 10 over T steps with delta' = delta/2."""
    got = RRPSGDPaperAccountant().epsilon(RRPSGDPaperArgument(mu0, n, T), delta)
    assert got == pytest.approx(rrpsgd_chain(mu0, n, T, delta), rel=1e-8)


def test_rrpsgd_paper_refuses_when_lemma9_does_not_apply() -> None:
    """Lemma 9 needs a per-step eps0 <= 1: the boundary mu0 (eps0 = 1 exactly) splits the
    accepted from the refused."""
    n, T, delta = 40, 1600, 1e-4
    delta0 = n * delta / (2 * T)
    mu_star = optimize.brentq(lambda m: bw_delta(m, 1.0) - delta0, 1e-3, 10.0, xtol=1e-14)
    acc = RRPSGDPaperAccountant()
    below = acc.epsilon(RRPSGDPaperArgument(mu_star * (1 - 1e-4), n, T), delta)
    assert below == pytest.approx(rrpsgd_chain(mu_star * (1 - 1e-4), n, T, delta), rel=1e-8)
    with pytest.raises(UnsupportedEventError,
                       match=r"per-step epsilon 1.* > 1: the amplification lemma \(Lemma 9\)"):
        acc.epsilon(RRPSGDPaperArgument(mu_star * (1 + 1e-4), n, T), delta)


def test_rrpsgd_paper_is_monotone() -> None:
    """Non-increasing in delta; increasing in the per-step mu and in the horizon."""
    acc = RRPSGDPaperAccountant()
    deltas = np.geomspace(1e-9, 0.5, 15)
    eps = [acc.epsilon(RRPSGDPaperArgument(0.05, 30, 900), float(d)) for d in deltas]
    assert all(a >= b for a, b in itertools.pairwise(eps))
    by_mu = [acc.epsilon(RRPSGDPaperArgument(m, 30, 900), 1e-5) for m in (0.01, 0.05, 0.1)]
    assert by_mu[0] < by_mu[1] < by_mu[2]
    by_t = [acc.epsilon(RRPSGDPaperArgument(0.05, 30, t), 1e-5) for t in (10, 100, 900)]
    assert by_t[0] < by_t[1] < by_t[2]


@pytest.mark.parametrize(("event", "match"), [
    (Gaussian(3.0), "zhang2017_thm4 reads only RRPSGDPaperArgument events, not Gaussian"),
    (SelfComposed(SampledWithoutReplacement(1, 50, Gaussian(10.0, 2.0, R1)), 2500),
     "reads only RRPSGDPaperArgument events, not SelfComposed"),
    (SelfComposed(RRPSGDPaperArgument(0.2, 50, 2500), 2), "not SelfComposed"),
    (paper_event(), "not OutputPerturbation"),
    ("not an event", "not str"),
])
def test_rrpsgd_paper_refuses_every_other_event(event, match) -> None:
    """Only the paper's own description of RRPSGD is read."""
    with pytest.raises(UnsupportedEventError, match=match):
        RRPSGDPaperAccountant().epsilon(event, 1e-3)


@pytest.mark.parametrize(("mu0", "n", "delta"), [(0.2, 50, 1e-3), (0.05, 20, 1e-5)])
def test_rrpsgd_paper_is_never_below_the_tight_description(mu0, n, delta) -> None:
    """The paper's chain of lemmas is looser than the general accountants on the tight event
    SelfComposed(SampledWithoutReplacement(1, n, Gaussian(2/mu0, 2)), T)."""
    T = n * n
    paper = RRPSGDPaperAccountant().epsilon(RRPSGDPaperArgument(mu0, n, T), delta)
    tight = SelfComposed(SampledWithoutReplacement(1, n, Gaussian(2 / mu0, 2.0, R1)), T)
    assert tight.event.event.mu == pytest.approx(mu0)
    result = best(tight, delta)
    assert paper >= result.epsilon
    assert paper >= get_accountant("rdp").epsilon(tight, delta)
    # best() with include_paper never picks the looser paper value for the paper event
    assert best(RRPSGDPaperArgument(mu0, n, T), delta, include_paper=True).epsilon == paper


# ------------------------------------------------------------------- subsampling_lemma
@pytest.mark.parametrize(("rate", "eps", "inner_delta", "delta"), [
    (0.1, 1.0, 0.0, 1e-6),
    (0.01, 3.0, 1e-7, 1e-6),
    (0.5, 0.2, 1e-5, 1e-4),
    (1.0, 0.7, 0.0, 1e-3),
    (0.0, 5.0, 1e-3, 1e-5),
])
def test_subsampling_lemma_poisson_is_balle_barthe_gaboardi(rate, eps, inner_delta,
                                                           delta) -> None:
    """One Poisson-sampled (eps, delta)-DP mechanism: log(1 + q(e^eps - 1)) (Theorem 8)."""
    e1, d1 = amplified(rate, eps, inner_delta)
    want = min(e1, advanced(e1, 1, delta - d1))
    got = SubsamplingLemmaAccountant().epsilon(PoissonSampled(rate, EpsilonDelta(eps,
                                                                                 inner_delta)),
                                               delta)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
    assert got == pytest.approx(e1, rel=1e-12, abs=1e-15)  # advanced never helps for k = 1 here


@pytest.mark.parametrize(("m", "n"), [(1, 100), (7, 10), (10, 10)])
def test_subsampling_lemma_without_replacement_uses_rate_m_over_n(m, n) -> None:
    """Sampling m of n without replacement (replace-one): Theorem 9 with q = m/n."""
    event = SampledWithoutReplacement(m, n, EpsilonDelta(2.0, 1e-8, R1))
    e1, _ = amplified(m / n, 2.0, 1e-8)
    assert SubsamplingLemmaAccountant().epsilon(event, 1e-5) == pytest.approx(e1, rel=1e-12)


@pytest.mark.parametrize(("rate", "eps", "inner_delta", "k", "delta", "winner"), [
    (0.01, 0.5, 1e-8, 1000, 1e-5, "advanced"),
    (0.1, 1.0, 0.0, 10000, 1e-6, "advanced"),
    (0.5, 2.0, 1e-7, 3, 1e-5, "basic"),
    (0.2, 1.0, 1e-6, 10, 1e-5 + 1e-12, "basic"),
])
def test_subsampling_lemma_self_composition_is_min_of_basic_and_advanced(
        rate, eps, inner_delta, k, delta, winner) -> None:
    """k copies: min(k eps', DRV10 with slack delta - k q delta_inner); both branches met."""
    e1, d1 = amplified(rate, eps, inner_delta)
    basic = k * e1
    adv = advanced(e1, k, delta - k * d1)
    assert (adv < basic) is (winner == "advanced")
    event = SelfComposed(PoissonSampled(rate, EpsilonDelta(eps, inner_delta)), k)
    assert SubsamplingLemmaAccountant().epsilon(event, delta) == pytest.approx(
        min(basic, adv), rel=1e-10)


def test_subsampling_lemma_zero_slack_falls_back_to_basic_composition() -> None:
    """At delta equal to the summed deltas there is no slack: basic composition only."""
    event = SelfComposed(PoissonSampled(0.5, EpsilonDelta(0.01, 1e-4)), 1000)
    e1, d1 = amplified(0.5, 0.01, 1e-4)
    total = 1000 * d1
    acc = SubsamplingLemmaAccountant()
    assert acc.epsilon(event, total) == pytest.approx(1000 * e1, rel=1e-12)
    assert acc.epsilon(event, 2 * total) < 1000 * e1  # with slack, advanced is smaller here


def test_subsampling_lemma_heterogeneous_composition_is_basic() -> None:
    """Different amplified pairs (and an unsampled EpsilonDelta) are summed, with deltas."""
    a = PoissonSampled(0.1, EpsilonDelta(1.0, 1e-7))
    b = SelfComposed(PoissonSampled(0.02, EpsilonDelta(2.0, 0.0)), 5)
    c = EpsilonDelta(0.05, 1e-8)
    want = amplified(0.1, 1.0, 1e-7)[0] + 5 * amplified(0.02, 2.0, 0.0)[0] + 0.05
    acc = SubsamplingLemmaAccountant()
    assert acc.epsilon(Composed((a, b, c)), 1e-6) == pytest.approx(want, rel=1e-12)
    # identical parts are one kind: the composition of two copies is a self-composition
    assert acc.epsilon(Composed((a, a)), 1e-6) == acc.epsilon(SelfComposed(a, 2), 1e-6)


@pytest.mark.parametrize(("event", "delta", "exc", "match"), [
    (PoissonSampled(0.1, EpsilonDelta(1.0, 0.01)), 1e-4, UnsupportedEventError,
     r"the composed deltas sum to 0.001 > target delta 0.0001"),
    (SelfComposed(PoissonSampled(0.5, EpsilonDelta(1.0, 1e-6)), 100), 1e-5,
     UnsupportedEventError, r"sum to 5e-05 > target delta 1e-05"),
    (EpsilonDelta(1.0), 1e-5, UnsupportedEventError, "no subsampled"),
    (SelfComposed(EpsilonDelta(1.0), 3), 1e-5, UnsupportedEventError, "no subsampled"),
    (Gaussian(1.0), 1e-5, UnsupportedEventError, "no subsampled"),
    (PoissonSampled(0.1, Gaussian(1.0)), 1e-5, UnsupportedEventError,
     "applies to sampled EpsilonDelta events, got a sampled Gaussian"),
    (PoissonSampled(0.1, SelfComposed(EpsilonDelta(1.0), 2)), 1e-5, UnsupportedEventError,
     "got a sampled SelfComposed"),
    (Composed((PoissonSampled(0.1, EpsilonDelta(1.0)), Gaussian(1.0))), 1e-5,
     UnsupportedEventError, "the subsampling lemma does not apply to Gaussian"),
    ("not an event", 1e-5, TypeError, "event must be a DpEvent, got str"),
])
def test_subsampling_lemma_refusals(event, delta, exc, match) -> None:
    """No bound from the given guarantees, no sampling, or a sampled non-(eps, delta) event:
    refused, never guessed."""
    with pytest.raises(exc, match=match):
        SubsamplingLemmaAccountant().epsilon(event, delta)


def test_subsampling_lemma_is_monotone_in_delta_and_rate() -> None:
    """Non-increasing in delta, non-decreasing in the sampling rate; rate 1 is the inner
    epsilon and rate 0 is 0."""
    acc = SubsamplingLemmaAccountant()
    event = SelfComposed(PoissonSampled(0.05, EpsilonDelta(0.5, 1e-9)), 400)
    eps = [acc.epsilon(event, float(d)) for d in np.geomspace(1e-6, 0.9, 20)]
    assert all(a >= b for a, b in itertools.pairwise(eps))
    by_rate = [acc.epsilon(PoissonSampled(q, EpsilonDelta(0.8)), 1e-5)
               for q in (0.0, 0.001, 0.1, 0.5, 1.0)]
    assert by_rate[0] == 0.0
    assert all(a < b for a, b in itertools.pairwise(by_rate))
    assert by_rate[-1] == pytest.approx(0.8, rel=1e-14)


def test_subsampling_lemma_is_tight_for_sampled_randomized_response() -> None:
    """Poisson-sampled randomized response (add/remove) attains log(1 + q(e^eps - 1)): the
    accountant is never below, and equal to, the pair's exact epsilon at a tiny delta."""
    eps, q, delta = 1.3, 0.2, 1e-13
    p_true = math.exp(eps) / (1 + math.exp(eps))
    rr1 = np.array([1 - p_true, p_true])  # output law of RR with the canary's bit 1
    rr0 = rr1[::-1]  # without the canary (bit 0)
    p, p_prime = rr0, q * rr1 + (1 - q) * rr0

    def hockey(e: float) -> float:
        return max(float(np.sum(np.maximum(p_prime - math.exp(e) * p, 0))),
                   float(np.sum(np.maximum(p - math.exp(e) * p_prime, 0))))

    exact = optimize.brentq(lambda e: hockey(e) - delta, 0.0, 10.0, xtol=1e-15)
    ours = SubsamplingLemmaAccountant().epsilon(PoissonSampled(q, EpsilonDelta(eps)), delta)
    assert ours >= exact
    assert ours == pytest.approx(exact, abs=1e-10)


def test_subsampling_lemma_at_rate_one_agrees_with_pure_dp() -> None:
    """At q = 1 (no amplification) and where advanced composition does not help, the lemma
    accountant equals pure_dp's basic composition, and is never above it."""
    sub = SubsamplingLemmaAccountant()
    pure = PureDPAccountant()
    for k, delta in ((3, 1e-6), (50, 1e-6), (2000, 1e-3)):
        a = sub.epsilon(SelfComposed(PoissonSampled(1.0, EpsilonDelta(0.5)), k), delta)
        b = pure.epsilon(SelfComposed(EpsilonDelta(0.5), k), delta)
        assert a <= b * (1 + 1e-14)
        if k == 3:
            assert a == pytest.approx(b, rel=1e-14)


def test_subsampling_lemma_delta_inverts_advanced_composition() -> None:
    """For pure inner events the inherited inverse solves DRV10 for its slack:
    delta = exp(-((eps - k e'(e^e' - 1)) / e')^2 / (2k))."""
    k, q, eps_inner, target = 20, 0.1, 1.0, 1.0
    e1, _ = amplified(q, eps_inner, 0.0)
    assert target < k * e1  # basic composition cannot reach the target
    want = math.exp(-((target - k * e1 * (math.exp(e1) - 1)) / e1) ** 2 / (2 * k))
    acc = SubsamplingLemmaAccountant()
    event = SelfComposed(PoissonSampled(q, EpsilonDelta(eps_inner)), k)
    got = acc.delta(event, target)
    assert got == pytest.approx(want, rel=1e-6)
    assert acc.epsilon(event, got) <= target
    # k = 1: DRV10 with slack near 1 goes below e', down to e'(e^e' - 1) as delta -> 1
    one = PoissonSampled(q, EpsilonDelta(eps_inner))
    want_one = math.exp(-((0.5 * e1 - e1 * (math.exp(e1) - 1)) / e1) ** 2 / 2)
    assert acc.delta(one, 0.5 * e1) == pytest.approx(want_one, rel=1e-6)
    assert acc.delta(one, 0.1 * e1) == 1.0  # below e'(e^e' - 1): nothing is certified


def test_subsampling_lemma_delta_at_the_basic_epsilon_is_the_summed_delta() -> None:
    """At eps = k e' the smallest certified delta is the summed k q delta_inner."""
    k, q = 20, 0.1
    e1, d1 = amplified(q, 1.0, 1e-6)
    event = SelfComposed(PoissonSampled(q, EpsilonDelta(1.0, 1e-6)), k)
    assert SubsamplingLemmaAccountant().delta(event, k * e1) == pytest.approx(k * d1, rel=1e-6)
