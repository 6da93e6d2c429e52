"""Direct tests of public helpers of the algorithms and oracles:
:func:`noisygd.algorithms.bassily.bassily_event`,
:func:`noisygd.algorithms.bassily.bassily_sgd_glm_batch`,
:func:`noisygd.algorithms.newton.modified_eigen`,
:func:`noisygd.algorithms.noisy_gd.check_oracle`,
:func:`noisygd.algorithms.noisy_gd.check_theta0` and
:func:`noisygd.oracles._parallel.default_threads`."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from noisygd.accounting.events import (
    DiscreteGaussianNoise,
    Gaussian,
    Neighbouring,
    SampledWithoutReplacement,
    SelfComposed,
)
from noisygd.accounting.rdp import DEFAULT_ORDERS, RDPAccountant, rdp_curve
from noisygd.algorithms.bassily import bassily_event, bassily_sgd_glm_batch
from noisygd.algorithms.newton import modified_eigen
from noisygd.algorithms.noisy_gd import check_oracle, check_theta0
from noisygd.mechanisms.secure import SecureRandom
from noisygd.objectives.glm import LogisticLoss
from noisygd.oracles import ArrayOracle, _parallel
from noisygd.oracles._parallel import default_threads

REPLACE = Neighbouring.REPLACE_ONE


# ----------------------------------------------------------------------------- bassily_event
def test_bassily_event_structure():
    """T x SampledWithoutReplacement(m, n, Gaussian(s m / L, sensitivity 2)), replace-one."""
    ev = bassily_event(lipschitz=1.5, noise_std=0.03, n=1000, batch_size=50, steps=400)
    assert isinstance(ev, SelfComposed) and ev.count == 400
    inner = ev.event
    assert isinstance(inner, SampledWithoutReplacement)
    assert (inner.sample_size, inner.population_size) == (50, 1000)
    assert inner.event == Gaussian(0.03 * 50 / 1.5, sensitivity=2.0, relation=REPLACE)
    assert ev.neighbouring is REPLACE


def test_bassily_event_full_batch_rdp_closed_form():
    """m = n (no amplification): T Gaussians with shift 2L/m over noise s, whose RDP is
    T alpha (2L / (m s))^2 / 2 (Mironov 2017, Prop. 7 and composition)."""
    L, s, n, T = 2.0, 0.5, 10, 7
    ev = bassily_event(lipschitz=L, noise_std=s, n=n, batch_size=n, steps=T)
    orders = np.array([1.5, 2.0, 8.0, 64.0])
    want = T * orders * (2 * L / n / s) ** 2 / 2
    np.testing.assert_allclose(rdp_curve(ev, orders), want, rtol=1e-12)


@pytest.mark.parametrize("n, m, T, s", [(1000, 50, 400, 0.02), (300, 10, 900, 0.3)])
def test_bassily_event_epsilon_matches_dp_accounting(n, m, T, s):
    """The event's RDP epsilon equals dp_accounting's for the composition it states, built
    here directly: T x SampledWithoutReplacementDpEvent(n, m, GaussianDpEvent(sigma)) with
    sigma = s / (2L/m), the noise over the batch mean's replace-one sensitivity. (At very small
    sigma noisygd caps each order by the unsampled Gaussian's alpha / (2 sigma^2), which
    dp_accounting does not; the cases here have sigma >= 0.5, where the cap never binds.)"""
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    L, delta = 1.0, 1e-5
    ev = bassily_event(lipschitz=L, noise_std=s, n=n, batch_size=m, steps=T)
    relation = dp_accounting.NeighboringRelation.REPLACE_ONE
    acc = rdp.RdpAccountant(orders=list(DEFAULT_ORDERS), neighboring_relation=relation)
    acc.compose(dp_accounting.SelfComposedDpEvent(
        dp_accounting.SampledWithoutReplacementDpEvent(
            source_dataset_size=n, sample_size=m,
            event=dp_accounting.GaussianDpEvent(noise_multiplier=s / (2 * L / m))), T))
    want = acc.get_epsilon(delta)
    assert 0.0 < want < math.inf
    assert RDPAccountant().epsilon(ev, delta) == pytest.approx(want, rel=1e-6)


def test_bassily_event_monotone_in_noise():
    """More noise (or fewer steps) never costs more epsilon."""
    def eps(s, T):
        return RDPAccountant().epsilon(
            bassily_event(lipschitz=1.0, noise_std=s, n=500, batch_size=25, steps=T), 1e-5)
    assert eps(0.02, 400) > eps(0.04, 400) > eps(0.04, 100)


@pytest.mark.parametrize("kwargs, match", [
    ({"lipschitz": 0.0}, "lipschitz must be positive"),
    ({"lipschitz": math.inf}, "lipschitz must be positive"),
    ({"noise_std": -1.0}, "noise_std must be positive"),
    ({"batch_size": 11}, "need 0 < sample_size <= population_size"),
])
def test_bassily_event_errors(kwargs, match):
    """Non-positive constants and a batch larger than n are refused."""
    args = {"lipschitz": 1.0, "noise_std": 0.1, "n": 10, "batch_size": 5, "steps": 3}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        bassily_event(**args)


# --------------------------------------------------------------------- bassily_sgd_glm_batch
@pytest.fixture(scope="module")
def glm():
    """60 unit-ball rows of a separable logistic problem (label = sign of the first column)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.where(X[:, 0] + 0.1 * X[:, 1] > 0, 1.0, -1.0)
    return X, y


def _oracle(glm, l2=0.0):
    X, y = glm
    return ArrayOracle(LogisticLoss(l2=l2), X, y, row_norm_bound=1.0)


def _mean_loss(theta, X, y):
    """Mean logistic loss log(1 + exp(-y (x.w + b))), written out here."""
    z = X @ theta[:3] + theta[3]
    return float(np.mean(np.logaddexp(0.0, -y * z)))


def _run(oracle, rng, **kw):
    args = {"lipschitz": math.sqrt(2.0), "l2": [0.0], "epsilon": [1e9], "delta": 1e-5,
            "radius": [3.0], "batch_size": 10, "rng": rng}
    args.update(kw)
    return bassily_sgd_glm_batch(oracle, **args)


def test_bassily_batch_decreases_the_loss_without_noise(glm):
    """At a huge epsilon (noise ~1e-8) the convex and the strongly convex runs end well below
    the loss at 0 (log 2), inside their balls."""
    X, y = glm
    theta, _, info = _run(_oracle(glm), np.random.default_rng(1), l2=[0.0, 0.05],
                          epsilon=[1e9, 1e9], radius=[3.0, 3.0], steps=200)
    assert theta.shape == (1, 2, 4)
    assert max(info["noise_std"]) < 1e-6
    for c in range(2):
        assert np.linalg.norm(theta[0, c]) <= 3.0 + 1e-9
        assert _mean_loss(theta[0, c], X, y) < 0.6 * math.log(2.0)


def test_bassily_batch_deterministic_and_ignores_oracle_l2(glm):
    """Same seed, same output; the oracle's own l2 is ignored (only the data term is used)."""
    a, ev_a, info_a = _run(_oracle(glm), np.random.default_rng(3), epsilon=[1.0], rounds=2)
    b, ev_b, _ = _run(_oracle(glm, l2=5.0), np.random.default_rng(3), epsilon=[1.0], rounds=2)
    np.testing.assert_array_equal(a, b)
    assert ev_a == ev_b
    c, _, _ = _run(_oracle(glm), np.random.default_rng(4), epsilon=[1.0], rounds=2)
    assert not np.allclose(a, c)
    assert info_a["steps"] == math.ceil((60 / 10) ** 2) == 36


def test_bassily_batch_common_batches_independent_rounds(glm):
    """Two identical configurations share every batch (near-noiseless: equal to 1e-6) while two
    rounds draw their own batches (different iterates)."""
    theta, _, _ = _run(_oracle(glm), np.random.default_rng(5), l2=[0.0, 0.0],
                       epsilon=[1e9, 1e9], radius=[3.0, 3.0], rounds=2)
    np.testing.assert_allclose(theta[:, 0], theta[:, 1], atol=1e-6)
    assert np.linalg.norm(theta[0, 0] - theta[1, 0]) > 1e-3


def test_bassily_batch_events_and_noise(glm):
    """Each configuration's noise is BST14's s_m (closed form) and its event is bassily_event
    at that noise, n rows, batch m and T steps; NumPy mode: no inflation."""
    n, m, L, delta = 60, 10, math.sqrt(2.0), 1e-5
    eps = np.array([0.5, 2.0])
    _, events, info = _run(_oracle(glm), np.random.default_rng(6), l2=[0.1, 0.0], epsilon=eps,
                           radius=[1.0, 2.0], steps=5)
    s = 4 * math.sqrt(2) * L * np.sqrt(math.log(n / delta) * math.log(1 / delta)) / (m * eps)
    np.testing.assert_allclose(info["noise_std"], s, rtol=1e-12)
    assert info["steps"] == 5 and info["sensitivity_inflation"] == [1.0, 1.0]
    for ev, sc in zip(events, info["noise_std"], strict=True):
        assert ev == bassily_event(lipschitz=L, noise_std=sc, n=n, batch_size=m, steps=5)


def test_bassily_batch_secure_mode_events(glm):
    """With a SecureRandom the events are the same runs under DiscreteGaussianNoise with the
    reported inflation (> 1), and the iterates stay in the ball."""
    theta, events, info = _run(_oracle(glm), SecureRandom(), epsilon=[1.0], steps=3)
    (kappa,) = info["sensitivity_inflation"]
    assert kappa > 1.0
    want = bassily_event(lipschitz=math.sqrt(2.0), noise_std=info["noise_std"][0], n=60,
                         batch_size=10, steps=3)
    assert events == [DiscreteGaussianNoise(want, kappa)]
    assert np.linalg.norm(theta[0, 0]) <= 3.0 + 1e-9


def test_bassily_batch_errors(glm):
    """A non-ArrayOracle, mismatched lengths and non-positive settings are refused."""
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match="needs an ArrayOracle over a GLMObjective"):
        _run(object(), rng)
    with pytest.raises(ValueError, match="must have the same length"):
        _run(_oracle(glm), rng, l2=[0.0, 0.1])
    for bad in ({"l2": [-0.1]}, {"radius": [0.0]}, {"epsilon": [0.0]}):
        with pytest.raises(ValueError, match="need l2 >= 0, radius > 0 and epsilon > 0"):
            _run(_oracle(glm), rng, **bad)
    with pytest.raises(ValueError, match="batch_size"):
        _run(_oracle(glm), rng, batch_size=0)
    with pytest.raises(ValueError, match="need n >= 2 and 1 <= batch_size <= n"):
        _run(_oracle(glm), rng, batch_size=61)


# ---------------------------------------------------------------------------- modified_eigen
def _sym(p: int, seed: int) -> np.ndarray:
    A = np.random.default_rng(seed).standard_normal((p, p))
    return 0.5 * (A + A.T)


@pytest.mark.parametrize("rule", ["add", "clip"])
def test_modified_eigen_rule_on_a_matrix(rule):
    """Eigenvalues: add: max(lam + tau, f); clip: max(lam, max(tau, f)); the eigenvectors
    are those of H; V diag(lam') V^T is symmetric positive definite with least eigenvalue
    >= max(f, ...)."""
    H = _sym(5, 0)
    tau, floor = 0.3, 0.05
    lam0 = np.linalg.eigvalsh(H)
    assert lam0.min() < -tau  # the rule has negative eigenvalues to act on
    lam, vecs = modified_eigen(H, tau, floor, rule)
    want = np.maximum(lam0 + tau, floor) if rule == "add" else np.maximum(lam0, max(tau, floor))
    np.testing.assert_allclose(lam, want, atol=1e-12)
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(5), atol=1e-12)
    np.testing.assert_allclose(H @ vecs, vecs * lam0, atol=1e-12)
    Hhat = (vecs * lam) @ vecs.T
    np.testing.assert_allclose(Hhat, Hhat.T, atol=1e-12)
    assert np.linalg.eigvalsh(Hhat).min() >= floor - 1e-12
    np.linalg.cholesky(Hhat)  # positive definite


def test_modified_eigen_symmetrises_and_keeps_a_well_conditioned_matrix():
    """A nonsymmetric input is read as (H + H^T)/2; clip leaves eigenvalues above max(tau, f)
    untouched (then V diag(lam) V^T is H), add shifts every one by tau."""
    S = _sym(4, 1) + 6.0 * np.eye(4)
    N = np.triu(np.ones((4, 4)), 1)
    H = S + N - N.T  # antisymmetric part dropped by the rule
    lam, vecs = modified_eigen(H, 0.5, 0.1, "clip")
    np.testing.assert_allclose((vecs * lam) @ vecs.T, S, atol=1e-12)
    lam_add, _ = modified_eigen(H, 0.5, 0.1, "add")
    np.testing.assert_allclose(lam_add, np.linalg.eigvalsh(S) + 0.5, atol=1e-12)


@pytest.mark.parametrize("rule, want", [("add", [0.4, 0.7, 3.5]), ("clip", [0.5, 0.5, 3.0])])
def test_modified_eigen_diagonal_release(rule, want):
    """A vector (diagonal release, tau 0.5, f 0.4): add: max(lam + 0.5, 0.4); clip:
    max(lam, 0.5); elementwise, eigenvectors None."""
    lam, vecs = modified_eigen(np.array([-1.0, 0.2, 3.0]), 0.5, 0.4, rule)
    assert vecs is None
    np.testing.assert_allclose(lam, want, atol=1e-15)


# ---------------------------------------------------------------- check_oracle / check_theta0
def test_check_oracle_returns_the_oracle(glm):
    """A GradientOracle comes back as the same object."""
    o = _oracle(glm)
    assert check_oracle(o) is o


@pytest.mark.parametrize("bad, name", [(None, "NoneType"), ([1.0], "list"),
                                       (LogisticLoss(), "LogisticLoss")])
def test_check_oracle_refuses_others(bad, name):
    """Anything else (including an objective) is a TypeError naming its type."""
    with pytest.raises(TypeError, match=f"oracle must be a GradientOracle, got {name}"):
        check_oracle(bad)


def test_check_theta0_none_gives_fresh_zeros():
    """None: zeros of shape (p,), a new array each call."""
    a, b = check_theta0(None, 3), check_theta0(None, 3)
    np.testing.assert_array_equal(a, np.zeros(3))
    a[0] = 1.0
    assert b[0] == 0.0 and a.dtype == np.float64


def test_check_theta0_copies_as_float():
    """A list or an int array comes back as a new float copy (the input is never aliased)."""
    src = np.array([1, 2, 3])
    out = check_theta0(src, 3)
    assert out.dtype == np.float64 and np.array_equal(out, [1.0, 2.0, 3.0])
    out[0] = 9.0
    assert src[0] == 1
    f = np.array([0.5, -0.5])
    assert check_theta0(f, 2) is not f
    np.testing.assert_array_equal(check_theta0([0.5, -0.5], 2), f)


@pytest.mark.parametrize("bad, shape", [
    ([1.0, 2.0], r"\(2,\)"),
    (np.zeros((1, 3)), r"\(1, 3\)"),
    (2.0, r"\(\)"),
    ([1.0, math.nan, 0.0], r"\(3,\)"),
    ([1.0, math.inf, 0.0], r"\(3,\)"),
])
def test_check_theta0_refuses_bad_vectors(bad, shape):
    """Wrong shape or a non-finite entry: ValueError naming the shape wanted and got."""
    with pytest.raises(ValueError, match=rf"finite vector of shape \(3,\), got shape {shape}"):
        check_theta0(bad, 3)


# ---------------------------------------------------------------------------- default_threads
@pytest.mark.parametrize("cores, want", [(1, 1), (3, 3), (8, 8), (64, 8), (0, 1)])
def test_default_threads_follows_the_affinity_mask(monkeypatch, cores, want):
    """The cores this process may run on (sched_getaffinity), at most 8, at least 1."""
    monkeypatch.setattr(_parallel.os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert default_threads() == want


@pytest.mark.parametrize("count, want", [(4, 4), (32, 8), (None, 1)])
def test_default_threads_without_affinity(monkeypatch, count, want):
    """Where sched_getaffinity is missing: os.cpu_count() capped at 8 (1 when unknown)."""
    monkeypatch.delattr(_parallel.os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(_parallel.os, "cpu_count", lambda: count)
    assert default_threads() == want


def test_default_threads_on_this_machine():
    """A positive int, at most 8 and at most the cores this process may use."""
    n = default_threads()
    assert isinstance(n, int) and 1 <= n <= 8
    if hasattr(os, "sched_getaffinity"):
        assert n <= len(os.sched_getaffinity(0))


@pytest.mark.parametrize(("kw", "exc", "match"), [
    ({"batch_size": 2.5}, TypeError, "batch_size must be an integer"),
    ({"steps": 0.5}, TypeError, "steps must be an integer"),
    ({"n": 10.0}, TypeError, "n must be an integer"),
    ({"steps": -1}, ValueError, "steps"),
])
def test_bassily_event_refuses_non_integer_counts(kw, exc, match):
    """A float batch size used to set the noise multiplier from 2.5 and the sample from 2."""
    args = {"lipschitz": 1.0, "noise_std": 0.1, "n": 10, "batch_size": 2, "steps": 3, **kw}
    with pytest.raises(exc, match=match):
        bassily_event(**args)


def test_modified_eigen_refuses_an_unknown_rule():
    """Any rule but "add" used to be read as "clip"."""
    with pytest.raises(ValueError, match="rule"):
        modified_eigen(np.eye(2), 0.1, 0.01, "Add")
