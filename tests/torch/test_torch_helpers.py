"""Public helpers of ``noisygd.torch``: ``noise.as_noise_source``, ``trainer.check_method``
and ``trainer.plan_run`` (steps by the documented rules; the calibrated noise spends the
budget it is given, checked with closed forms and with dp_accounting)."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from scipy import optimize, stats  # noqa: E402

from noisygd.accounting.registry import best  # noqa: E402
from noisygd.mechanisms.secure import SecureRandom  # noqa: E402
from noisygd.torch.noise import (  # noqa: E402
    NoiseSource,
    NumpyNoise,
    SecureNoise,
    TorchNoise,
    as_noise_source,
)
from noisygd.torch.trainer import METHODS, REFUSED, check_method, plan_run  # noqa: E402

EPS, DELTA = 1.0, 1e-5


def _gdp_epsilon(mu: float, delta: float) -> float:
    """Epsilon at ``delta`` of mu-GDP (Dong, Roth and Su 2022, Cor. 2.13), solved here."""

    def gap(eps):
        return (stats.norm.cdf(-eps / mu + mu / 2.0)
                - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2.0) - delta)

    return float(optimize.brentq(gap, 0.0, 200.0, xtol=1e-13, rtol=1e-13))


# ---------------------------------------------------------------- as_noise_source
def test_a_noise_source_is_used_as_is():
    source = TorchNoise(torch.Generator())
    assert as_noise_source(source) is source


def test_a_torch_generator_becomes_torch_noise_drawing_from_it():
    g = torch.Generator().manual_seed(5)
    source = as_noise_source(g)
    assert isinstance(source, TorchNoise) and source.generator is g
    got = source.add_gaussian(torch.ones(4, dtype=torch.float64), 0.5)
    expected = 1.0 + 0.5 * torch.randn(4, generator=torch.Generator().manual_seed(5),
                                       dtype=torch.float64)
    assert torch.allclose(got, expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("seed", [7, np.int64(7)])
def test_an_int_seed_gives_a_reproducible_torch_generator(seed):
    a, b = as_noise_source(seed), as_noise_source(7)
    assert isinstance(a, TorchNoise)
    assert a.generator.device.type == "cpu"
    x, y = a.add_gaussian(torch.zeros(6), 1.0), b.add_gaussian(torch.zeros(6), 1.0)
    assert torch.equal(x, y)
    assert torch.equal(x, torch.randn(6, generator=torch.Generator().manual_seed(7)))
    assert not torch.equal(x, as_noise_source(8).add_gaussian(torch.zeros(6), 1.0))


def test_none_seeds_a_torch_generator_on_the_device():
    source = as_noise_source(None, device=torch.device("cpu"))
    assert isinstance(source, TorchNoise)
    assert source.generator.device.type == "cpu"
    assert source.add_gaussian(torch.zeros(3), 1.0).shape == (3,)


def test_a_numpy_generator_becomes_numpy_noise_with_numpys_draws():
    """values + sd * rng.standard_normal(shape), in float64, then the values' dtype."""
    rng = np.random.default_rng(3)
    source = as_noise_source(rng)
    assert isinstance(source, NumpyNoise) and source.rng is rng
    got = source.add_gaussian(torch.full((2, 3), 2.0, dtype=torch.float64), 0.5)
    expected = 2.0 + 0.5 * np.random.default_rng(3).standard_normal((2, 3))
    assert np.array_equal(got.numpy(), expected)
    half = as_noise_source(np.random.default_rng(3)).add_gaussian(torch.zeros(3), 1.0)
    assert half.dtype == torch.float32


def test_a_secure_random_becomes_secure_noise():
    rng = SecureRandom()
    source = as_noise_source(rng)
    assert isinstance(source, SecureNoise) and source.rng is rng
    assert source.secure and isinstance(source, NoiseSource)


@pytest.mark.parametrize(("value", "name"), [(True, "bool"), (1.5, "float"), ("7", "str"),
                                             ([1], "list")])
def test_anything_else_is_refused_naming_its_type(value, name):
    with pytest.raises(TypeError, match=f"generator must be a torch.Generator, .*; got {name}"):
        as_noise_source(value)


# ---------------------------------------------------------------- check_method
@pytest.mark.parametrize("method", METHODS)
def test_check_method_returns_a_method_a_network_can_use(method):
    assert check_method(method) == method


@pytest.mark.parametrize("method", sorted(REFUSED))
def test_check_method_refuses_the_convex_only_methods_saying_why(method):
    with pytest.raises(ValueError, match=f"method='{method}' cannot train a network") as info:
        check_method(method)
    msg = str(info.value)
    assert REFUSED[method] in msg
    assert all(m in msg for m in METHODS)


def test_check_method_refuses_an_unknown_method_listing_the_choices():
    with pytest.raises(ValueError, match="method must be one of") as info:
        check_method("adam")
    assert all(repr(m) in str(info.value) for m in METHODS) and "'adam'" in str(info.value)
    with pytest.raises(TypeError, match="method must be a string"):
        check_method(None)


# ---------------------------------------------------------------- plan_run: steps
def _plan(method, **kw):
    args = {"n_samples": 100, "clip": 1.0, "batch_size": None, "steps": None, "epochs": None,
            "delta": DELTA, "noise_multiplier": 2.0}
    return plan_run(method, **{**args, **kw})


def test_plan_run_steps_follow_the_documented_rules():
    """Poisson T = ceil(E / gamma), gamma = b / n; shuffled and DP-FTRL T = E ceil(n / b);
    NoisyGD T = steps (epochs = steps)."""
    poisson = _plan("noisy_sgd", batch_size=30, epochs=1.0)
    assert poisson.steps == math.ceil(1.0 / 0.3) == 4
    assert poisson.sampling_rate == pytest.approx(0.3)
    assert poisson.epochs == pytest.approx(4 * 0.3)
    assert (poisson.sampling, poisson.relation) == ("poisson", "add_remove")
    shuffled = _plan("noisy_sgd", batch_size=30, epochs=1.5, sampling="shuffle")
    assert shuffled.per_epoch == math.ceil(100 / 30) == 4
    assert shuffled.steps == math.ceil(1.5 * 4) == 6 and shuffled.epochs == 1.5
    assert shuffled.relation == "replace_one"
    ftrl = _plan("dp_ftrl", batch_size=30, epochs=3)
    assert (ftrl.steps, ftrl.epochs, ftrl.relation) == (12, 3, "replace_one")
    assert _plan("dp_ftrl", batch_size=30, steps=8).epochs == 2
    gd = _plan("noisy_gd", steps=9)
    assert (gd.steps, gd.epochs, gd.batch_size, gd.sampling) == (9, 9.0, None, None)


def test_plan_run_keeps_a_given_noise_multiplier():
    plan = _plan("noisy_gd", steps=4, noise_multiplier=3.25, clip=0.5)
    assert plan.noise_multiplier == 3.25 and plan.clip == 0.5
    assert plan.largest_sd() == pytest.approx(3.25 * 0.5)


def test_dynamic_schedule_has_the_budget_of_constant_noise():
    """The shape s is scaled so that sum_t s_t^-2 = T: the same mu as T steps at z."""
    plan = _plan("dynamic_noisy_gd", steps=6)
    shape = np.array(plan.noise_shape)
    assert shape.shape == (6,)
    assert np.sum(shape ** -2.0) == pytest.approx(6.0, rel=1e-12)
    assert np.all(np.diff(shape) <= 0)  # the default "exponential" shape decreases
    assert plan.largest_sd() == pytest.approx(2.0 * shape.max())


# ---------------------------------------------------------------- plan_run: the budget
def test_noisy_gd_plan_spends_the_budget_exactly_by_gdp():
    """SelfComposed(Gaussian(z), T) is mu-GDP with mu = sqrt(T) / z (sensitivity 1): its
    epsilon at delta is the target, and 0.1% less noise would exceed it."""
    plan = plan_run("noisy_gd", n_samples=100, clip=1.0, batch_size=None, steps=10, epochs=None,
                    epsilon=EPS, delta=DELTA)
    z = plan.noise_multiplier
    assert _gdp_epsilon(math.sqrt(10) / z, DELTA) <= EPS * (1 + 1e-6)
    assert _gdp_epsilon(math.sqrt(10) / (z * 0.999), DELTA) > EPS
    assert best(plan.event(), DELTA).epsilon <= EPS * (1 + 1e-9)


def test_dynamic_noisy_gd_calibrates_to_the_same_noise_as_noisy_gd():
    kw = {"n_samples": 100, "clip": 1.0, "batch_size": None, "steps": 5, "epochs": None,
          "epsilon": EPS, "delta": DELTA}
    z_gd = plan_run("noisy_gd", **kw).noise_multiplier
    dyn = plan_run("dynamic_noisy_gd", **kw)
    assert dyn.noise_multiplier == pytest.approx(z_gd, rel=1e-3)
    assert best(dyn.event(), DELTA).epsilon <= EPS * (1 + 1e-9)


def test_shuffled_plan_spends_the_budget_under_replace_one():
    """Replace-one sensitivity 2, one release per epoch touched: mu = 2 sqrt(E) / z."""
    plan = plan_run("noisy_sgd", n_samples=100, clip=1.0, batch_size=30, steps=None, epochs=2,
                    sampling="shuffle", epsilon=EPS, delta=DELTA)
    z = plan.noise_multiplier
    assert _gdp_epsilon(2.0 * math.sqrt(2) / z, DELTA) <= EPS * (1 + 1e-6)
    assert _gdp_epsilon(2.0 * math.sqrt(2) / (z * 0.999), DELTA) > EPS


def test_poisson_plan_spends_the_budget_by_dp_accountings_pld():
    """An independent accountant (dp_accounting's PLD) agrees the run is within the budget,
    and spends nearly all of it."""
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    plan = plan_run("noisy_sgd", n_samples=100, clip=1.0, batch_size=10, steps=None, epochs=1,
                    epsilon=EPS, delta=DELTA)
    assert plan.steps == 10 and plan.sampling_rate == pytest.approx(0.1)
    event = dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
        0.1, dp_accounting.GaussianDpEvent(plan.noise_multiplier)), 10)
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(event)
    eps = accountant.get_epsilon(DELTA)
    assert 0.97 * EPS <= eps <= EPS * (1 + 1e-3)
    assert best(plan.event(), DELTA).epsilon <= EPS * (1 + 1e-9)


def test_dp_ftrl_plan_is_within_the_budget_and_tight():
    plan = plan_run("dp_ftrl", n_samples=100, clip=1.0, batch_size=25, steps=None, epochs=2,
                    epsilon=EPS, delta=DELTA)
    assert best(plan.event(), DELTA).epsilon <= EPS * (1 + 1e-9)
    assert best(plan.event(plan.noise_multiplier * 0.99), DELTA).epsilon > EPS


def test_secure_noise_needs_more_noise_for_the_same_budget():
    """A secure source wraps the event (rounding, zCDP): the calibrated noise is larger, and
    the wrapped event meets the budget."""
    kw = {"n_samples": 100, "clip": 1.0, "batch_size": None, "steps": 10, "epochs": None,
          "epsilon": EPS, "delta": DELTA, "n_params": 3}
    secure = SecureNoise()
    plan = plan_run("noisy_gd", noise=secure, **kw)
    assert plan.noise_multiplier > plan_run("noisy_gd", **kw).noise_multiplier
    wrapped = secure.wrap_event(plan.event(), plan.largest_sd(), 3, 1.0)
    assert wrapped != plan.event()
    assert best(wrapped, DELTA).epsilon <= EPS * (1 + 1e-9)


# ---------------------------------------------------------------- plan_run: refusals
@pytest.mark.parametrize(("method", "kw", "exc", "match"), [
    ("noisy_gd", {"steps": 5, "epsilon": 1.0}, ValueError, "give exactly one of epsilon"),
    ("noisy_gd", {"steps": 5, "noise_multiplier": None}, ValueError,
     "give exactly one of epsilon"),
    ("noisy_gd", {"steps": 5, "epochs": 2}, ValueError, "give exactly one of steps and epochs"),
    ("noisy_gd", {}, ValueError, "give exactly one of steps and epochs"),
    ("dp_ftrl", {"batch_size": 10, "epochs": 1, "relation": "add_remove"}, ValueError,
     "dp_ftrl is accounted under replace-one"),
    ("noisy_sgd", {"batch_size": 10, "epochs": 1, "sampling": "shuffle",
                   "relation": "add_remove"}, ValueError, "shuffled batches are accounted"),
    ("noisy_sgd", {"batch_size": 10, "epochs": 1, "relation": "replace_one"}, ValueError,
     "Poisson sampling is accounted under add/remove"),
    ("noisy_sgd", {"batch_size": 200, "epochs": 1}, ValueError,
     "batch_size=200 exceeds n_samples=100"),
    ("noisy_sgd", {"batch_size": 10.0, "epochs": 1}, TypeError, "batch_size must be an integer"),
    ("dp_ftrl", {"batch_size": 30, "steps": 6}, ValueError,
     "dp_ftrl runs whole epochs of 4 steps"),
    ("noisy_sgd", {"batch_size": 10, "epochs": 1, "sampling": "bogus"}, ValueError,
     "sampling must be one of"),
    ("dp_ftrl", {"batch_size": 10, "epochs": 1, "tree": "oak"}, ValueError,
     "tree must be one of"),
    ("noisy_gd", {"steps": 5, "clip": 0.0}, ValueError, "clip must be positive"),
    ("noisy_gd", {"steps": 5, "delta": 1.5}, ValueError, "delta"),
    ("noisy_gd", {"steps": 0}, ValueError, "steps must be an integer >= 1"),
    ("langevin", {"steps": 5}, ValueError, "cannot train a network"),
])
def test_plan_run_refusals(method, kw, exc, match):
    with pytest.raises(exc, match=match):
        _plan(method, **kw)
