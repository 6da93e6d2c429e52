"""Calibration: meets the target, within 0.5% of the smallest noise that does."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest

from noisygd.accounting import (
    Composed,
    EpsilonDelta,
    Gaussian,
    Neighbouring,
    PoissonSampled,
    SelfComposed,
    UnsupportedEventError,
    best,
    calibrate_gaussian_composition,
    calibrate_mu,
    calibrate_noise_multiplier,
    get_accountant,
)
from noisygd.accounting.gdp import gdp_epsilon

GDP = get_accountant("gdp")


def _targets(n: int, seed: int):
    """Fixed-seed random targets: eps log-uniform in [0.05, 20], delta in [1e-12, 1e-3]."""
    rng = np.random.default_rng(seed)
    eps = np.exp(rng.uniform(math.log(0.05), math.log(20.0), n))
    delta = np.exp(rng.uniform(math.log(1e-12), math.log(1e-3), n))
    steps = rng.integers(1, 10_001, n)
    sens = rng.choice([1.0, 2.0], n)
    return [
        (float(e), float(d), int(t), float(s))
        for e, d, t, s in zip(eps, delta, steps, sens, strict=True)
    ]


TARGETS = _targets(50, seed=20240611)


def _make(steps: int, sensitivity: float = 1.0):
    rel = Neighbouring.REPLACE_ONE if sensitivity == 2.0 else Neighbouring.ADD_REMOVE
    return lambda z: SelfComposed(Gaussian(z, sensitivity, rel), steps)


def test_fifty_random_targets_generic_path():
    for eps, delta, steps, sens in TARGETS:
        make = _make(steps, sens)
        z = calibrate_noise_multiplier(make, eps, delta, accountant="gdp")
        assert GDP.epsilon(make(z), delta) <= eps  # meets the target
        assert GDP.epsilon(make(z * (1 - 0.005)), delta) > eps  # within 0.5% of the smallest


def test_fifty_random_targets_fast_path():
    for eps, delta, steps, sens in TARGETS:
        rel = Neighbouring.REPLACE_ONE if sens == 2.0 else Neighbouring.ADD_REMOVE
        z = calibrate_gaussian_composition(eps, delta, steps, sens, rel)
        make = _make(steps, sens)
        assert GDP.epsilon(make(z), delta) <= eps
        assert GDP.epsilon(make(z * (1 - 0.005)), delta) > eps
        # The fast path is far tighter than 0.5%: 1e-9 less noise already fails.
        assert GDP.epsilon(make(z * (1 - 1e-9)), delta) > eps


def test_fast_and_generic_paths_agree():
    for eps, delta, steps, sens in TARGETS[:10]:
        fast = calibrate_gaussian_composition(eps, delta, steps, sens)
        generic = calibrate_noise_multiplier(
            _make(steps, sens), eps, delta, accountant=GDP, rtol=1e-6
        )
        assert fast <= generic <= fast * (1 + 2e-6)


@pytest.mark.parametrize("eps, delta", [(0.5, 1e-5), (1.0, 1e-6), (8.0, 1e-9), (3.0, 1e-12)])
def test_single_gaussian_matches_dp_accounting_sigma(eps, delta):
    # dp_accounting.get_sigma_gaussian: Balle-Wang analytic Gaussian calibration.
    peer = dp_accounting.get_sigma_gaussian(eps, delta)
    assert calibrate_gaussian_composition(eps, delta, 1) == pytest.approx(peer, rel=1e-7)


@pytest.mark.parametrize("name", ["zcdp", "rdp"])
def test_other_accountants(name):
    acc = get_accountant(name)
    for eps, delta, steps, _ in TARGETS[:10]:
        make = _make(steps)
        z = calibrate_noise_multiplier(make, eps, delta, accountant=acc)
        assert acc.epsilon(make(z), delta) <= eps
        assert acc.epsilon(make(z * (1 - 0.005)), delta) > eps
        # Looser accountants need more noise than the exact one.
        assert z >= calibrate_gaussian_composition(eps, delta, steps) * (1 - 1e-9)


def test_zcdp_calibration_solves_the_best_of_the_classical_and_cks20_conversions():
    """T Gaussian steps are rho = T / (2 z^2)-zCDP; the zcdp accountant's epsilon is the
    smaller of the classical conversion rho + 2 sqrt(rho log(1/d)) (Bun-Steinke Prop. 1.3)
    and CKS20 Prop. 12, inf over alpha of alpha rho + log(1 - 1/alpha) - (log d + log alpha) /
    (alpha - 1). Both are written out here (the infimum on a dense grid of alpha, a close
    upper bound on it), their minimum solved for rho by brentq: the calibrated z is that
    rho's sqrt(T / (2 rho)) to the calibration's rtol (1e-4), and below the classical
    conversion's closed form z = sqrt(T / (2 rho_c)), rho_c = (sqrt(log(1/d) + eps) -
    sqrt(log(1/d)))^2, which CKS20 beats here."""
    from scipy import optimize

    eps, delta, steps = 2.0, 1e-6, 500
    L = math.log(1 / delta)
    alphas = 1.0 + np.logspace(-7, 10, 400_001)

    def conversion(rho: float) -> float:
        cks = float(np.min(alphas * rho + np.log1p(-1 / alphas)
                           - (math.log(delta) + np.log(alphas)) / (alphas - 1)))
        return min(rho + 2 * math.sqrt(rho * L), cks)

    rho = optimize.brentq(lambda r: conversion(r) - eps, 1e-6, 10.0, xtol=1e-15, rtol=1e-14)
    z_expected = math.sqrt(steps / (2 * rho))
    z = calibrate_noise_multiplier(_make(steps), eps, delta, accountant="zcdp")
    # the dense grid bounds the infimum from above (z_expected >= the exact root, by at
    # most ~1e-6 relative); z is the smallest meeting noise to rtol = 1e-4 above the root
    assert z_expected * (1 - 1e-6) <= z <= z_expected * (1 + 1e-4 + 1e-6)
    rho_classical = (math.sqrt(L + eps) - math.sqrt(L)) ** 2
    assert z < math.sqrt(steps / (2 * rho_classical)) * (1 - 0.05)


def test_best_accountant_default():
    # best = exact GDP for Gaussian compositions (it answers alone), so the default
    # calibration is the exact one, found by the cheap stage to rtol.
    for eps, delta, steps, _ in TARGETS[:10]:
        make = _make(steps)
        fast = calibrate_gaussian_composition(eps, delta, steps)
        z = calibrate_noise_multiplier(make, eps, delta)
        assert best(make(z), delta).epsilon <= eps
        assert fast * (1 - 1e-9) <= z <= fast * (1 + 1e-4)


def _meets_within(certify, make, z, eps, delta, rtol):
    """z meets the target under ``certify``, and is minimal to rtol: either z / (1 + rtol)
    fails, or the certified epsilon at z is within a factor 1 + rtol of the target."""
    e = certify(make(z), delta)
    assert e <= eps
    assert certify(make(z / (1 + rtol)), delta) > eps or e * (1 + rtol) > eps


ADULT_N = 30_000
ADULT_Q = 512 / ADULT_N
ADULT_STEPS = round(10 / ADULT_Q)


@pytest.mark.parametrize("prior", [None, Gaussian(25.0)])
@pytest.mark.parametrize("rtol", [2e-3, 1e-4])
def test_best_default_on_adult_like_noisy_sgd(prior, rtol):
    # NoisySGD on Adult: n = 30000, q = 512/n, 10 epochs, (1, 1e-5), optionally with a
    # Gaussian row count composed before it. Bracketed by RDP, refined by a coarse PLD,
    # verified by best (PLD at its own resolution).
    def make(z):
        own = SelfComposed(PoissonSampled(ADULT_Q, Gaussian(z)), ADULT_STEPS)
        return own if prior is None else Composed((prior, own))

    z = calibrate_noise_multiplier(make, 1.0, 1e-5, rtol=rtol)
    _meets_within(lambda ev, d: best(ev, d).epsilon, make, z, 1.0, 1e-5, rtol)
    res = best(make(z), 1e-5)
    assert res.accountant == "pld"
    # RDP alone needs more noise: the PLD refinement pays off.
    z_rdp = calibrate_noise_multiplier(make, 1.0, 1e-5, accountant="rdp", rtol=rtol)
    assert z < z_rdp
    assert get_accountant("rdp").epsilon(make(z_rdp), 1e-5) <= 1.0


@pytest.mark.parametrize("steps, z_hint", [(100, None), (ADULT_STEPS, "poisson")])
def test_pld_calibration_with_default_bracket(steps, z_hint):
    # Until issue 9 this raised: the PLD refused the default lower end z = 1e-3.
    pld = get_accountant("pld")
    if z_hint is None:
        def make(z):
            return SelfComposed(Gaussian(z), steps)
    else:
        def make(z):
            return SelfComposed(PoissonSampled(ADULT_Q, Gaussian(z)), steps)
    z = calibrate_noise_multiplier(make, 1.0, 1e-5, accountant="pld", rtol=1e-3)
    _meets_within(pld.epsilon, make, z, 1.0, 1e-5, 1e-3)
    if z_hint is None:  # PLD is an upper bound on the exact curve: at least the exact noise
        assert z >= calibrate_gaussian_composition(1.0, 1e-5, steps) * (1 - 1e-9)


def test_calibration_never_overshoots_the_target():
    # Every answer is verified by its certifier, whatever the accountant.
    for name in ("gdp", "zcdp", "rdp"):
        acc = get_accountant(name)
        for eps, delta, steps, _ in TARGETS[10:20]:
            make = _make(steps)
            z = calibrate_noise_multiplier(make, eps, delta, accountant=acc, rtol=1e-3)
            assert acc.epsilon(make(z), delta) <= eps


def test_calibrate_mu_is_largest_mu_meeting_target():
    rng = np.random.default_rng(7)
    for _ in range(20):
        eps = float(np.exp(rng.uniform(math.log(0.01), math.log(50))))
        delta = float(np.exp(rng.uniform(math.log(1e-12), math.log(1e-2))))
        mu = calibrate_mu(eps, delta)
        assert gdp_epsilon(mu, delta) <= eps
        assert gdp_epsilon(mu * (1 + 1e-8), delta) > eps


def test_calibrate_mu_checks_its_input_on_every_call():
    # calibrate_mu memoises its root searches; a cached budget must not let a bad input
    # through: True hashes as 1.0 and numpy scalars as their floats.
    mu = calibrate_mu(1.0, 1e-5)
    assert calibrate_mu(np.float32(1.0), 1e-5) == mu == calibrate_mu(1, 1e-5)
    with pytest.raises(TypeError, match="epsilon"):
        calibrate_mu(True, 1e-5)
    with pytest.raises(ValueError, match="epsilon"):
        calibrate_mu(float("nan"), 1e-5)
    with pytest.raises(ValueError, match="delta"):
        calibrate_mu(1.0, 1.0)


def test_lower_already_meets_target():
    z = calibrate_noise_multiplier(_make(1), 50.0, 1e-5, accountant="gdp", lower=1.0)
    assert z == 1.0


def test_explicit_upper():
    make = _make(10)
    z = calibrate_noise_multiplier(make, 1.0, 1e-5, accountant="gdp", upper=1e3)
    assert z == pytest.approx(calibrate_gaussian_composition(1.0, 1e-5, 10), rel=1e-4)
    with pytest.raises(ValueError, match="upper"):
        calibrate_noise_multiplier(make, 1.0, 1e-5, accountant="gdp", upper=2.0)


def test_unreachable_target_raises():
    # A fixed pure-DP part with eps = 5 never gets below eps = 1 under zCDP, whatever z.
    def make(z):
        return Composed((EpsilonDelta(5.0), Gaussian(z)))

    with pytest.raises(ValueError, match="no noise multiplier"):
        calibrate_noise_multiplier(make, 1.0, 1e-5, accountant="zcdp")


def test_refused_event_propagates():
    with pytest.raises(UnsupportedEventError):
        calibrate_noise_multiplier(
            lambda z: Composed((EpsilonDelta(0.1), Gaussian(z))), 1.0, 1e-5, accountant="gdp"
        )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"epsilon": 0.0, "delta": 1e-5},
        {"epsilon": 1.0, "delta": 0.0},
        {"epsilon": 1.0, "delta": 1.0},
        {"epsilon": 1.0, "delta": 1e-5, "lower": 0.0},
        {"epsilon": 1.0, "delta": 1e-5, "rtol": 0.0},
        {"epsilon": 1.0, "delta": 1e-5, "upper": 1e-4},
    ],
)
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError):
        calibrate_noise_multiplier(_make(1), accountant="gdp", **kwargs)


def test_invalid_fast_path_arguments():
    with pytest.raises(ValueError):
        calibrate_gaussian_composition(1.0, 1e-5, 0)
    with pytest.raises(ValueError):
        calibrate_gaussian_composition(1.0, 1e-5, 10, sensitivity=-1.0)
    with pytest.raises(ValueError):
        calibrate_mu(-1.0, 1e-5)
    with pytest.raises(TypeError):
        calibrate_noise_multiplier(_make(1), 1.0, 1e-5, accountant=3.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("prior", [None, Gaussian(25.0)])
@pytest.mark.parametrize("q, steps", [(ADULT_Q, ADULT_STEPS), (0.05, 400), (0.004, 5000)])
def test_clt_start_is_close_to_the_pld_answer(prior, q, steps):
    # Bu, Dong, Long and Su (2020): q^2 T (e^{1/z^2} - 1) = mu*^2 - mu_prior^2 gives a noise
    # within 10% of the PLD-calibrated one for these many-step, small-q families (where the
    # theorem's limit applies); it is only a starting point, the answer is certified.
    from noisygd.accounting.calibration import _clt_guess, _Events

    def make(z):
        own = SelfComposed(PoissonSampled(q, Gaussian(z)), steps)
        return own if prior is None else Composed((prior, own))

    guess = _clt_guess(_Events(make), 1.0, 1e-5, 1e-3, 1e12)
    z = calibrate_noise_multiplier(make, 1.0, 1e-5, rtol=1e-2)
    assert guess is not None and abs(guess / z - 1.0) < 0.10
    # its closed form, with mu* from calibrate_mu and the prior's mu = 1/25
    rest = calibrate_mu(1.0, 1e-5) ** 2 - (0.0 if prior is None else (1 / 25.0) ** 2)
    assert guess == pytest.approx(1.0 / math.sqrt(math.log1p(rest / (q * q * steps))), rel=1e-12)


def test_clt_start_declines_other_families():
    from noisygd.accounting.calibration import _clt_guess, _Events

    families = [
        lambda z: SelfComposed(Gaussian(z), 100),  # no sampling: exact GDP answers instead
        lambda z: SelfComposed(PoissonSampled(0.01, EpsilonDelta(1.0 / z)), 100),
        lambda z: Composed((SelfComposed(PoissonSampled(0.01, Gaussian(z)), 10),
                            SelfComposed(PoissonSampled(0.02, Gaussian(z)), 10))),
    ]
    for make in families:
        assert _clt_guess(_Events(make), 1.0, 1e-5, 1e-3, 1e12) is None


def test_events_the_pld_refuses_are_calibrated_by_the_cheap_accountants():
    # secure-mode noise on a Poisson subsample: only RDP bounds it, so the PLD search stage
    # is skipped and the cheap stage's answer (RDP) is verified by best, which RDP answers
    from noisygd.accounting.events import DiscreteGaussianNoise

    def make(z):
        return DiscreteGaussianNoise(SelfComposed(PoissonSampled(0.01, Gaussian(z)), 2000), 1.01)

    z = calibrate_noise_multiplier(make, 8.0, 1e-3, rtol=1e-2)
    res = best(make(z), 1e-3)
    assert res.accountant == "rdp" and res.epsilon <= 8.0
    _meets_within(lambda ev, d: best(ev, d).epsilon, make, z, 8.0, 1e-3, 1e-2)


def test_sampling_without_replacement_is_calibrated_with_the_pld():
    # the PLD bounds sampling without replacement (noisygd.accounting.wor_pld): calibration
    # searches with it and best certifies with it, at less noise than RDP needs
    from noisygd.accounting import SampledWithoutReplacement

    rep = Neighbouring.REPLACE_ONE

    def make(z):
        return SelfComposed(SampledWithoutReplacement(1, 150, Gaussian(z, 2.0, rep)), 2000)

    z = calibrate_noise_multiplier(make, 8.0, 1e-3, rtol=1e-2)
    res = best(make(z), 1e-3)
    assert res.accountant == "pld" and res.epsilon <= 8.0
    _meets_within(lambda ev, d: best(ev, d).epsilon, make, z, 8.0, 1e-3, 1e-2)
    z_rdp = calibrate_noise_multiplier(make, 8.0, 1e-3, rtol=1e-2, accountant="rdp")
    assert z < z_rdp


@pytest.mark.parametrize("power", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("start", [0.7, 1.0, 1.4])
def test_landing_reaches_the_window_in_few_evaluations(power, start):
    # eps(z) = (z0 / z)^power: the window (target / (1 + rtol), target] around z0 = 1 is
    # reached from +-40% in at most 4 evaluations, whatever the local slope
    from noisygd.accounting.calibration import _land

    calls = []

    def value(z):
        calls.append(z)
        return (1.0 / z) ** power

    landed = _land(value, 1.0, 1e-3, None, start, 1e-2, slope=-1.0)
    assert landed is not None
    z, slope = landed
    evaluations = len(calls)
    assert 1.0 / 1.01 < value(z) <= 1.0
    assert evaluations <= 4
    if evaluations > 2:
        # a secant of log eps against log z was taken before landing: the curve is a power
        # law, a line in log-log, so the secant is its slope -power (to rounding)
        assert slope == pytest.approx(-power, rel=1e-9)
    else:
        # landed before any secant: the slope handed in comes back unchanged
        assert slope == -1.0


def test_landing_hands_over_on_infinite_epsilon_or_refusal():
    from noisygd.accounting.calibration import _land

    assert _land(lambda z: math.inf, 1.0, 1e-3, None, 1.0, 1e-2, -1.0) is None

    def refuse(z):
        raise UnsupportedEventError("not this event")

    assert _land(refuse, 1.0, 1e-3, None, 1.0, 1e-2, -1.0) is None
    # lower already meets the target: lower is the answer
    assert _land(lambda z: 0.5 / z, 1.0, 0.6, None, 0.6, 1e-2, -1.0)[0] == 0.6
