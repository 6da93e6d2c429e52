"""The seeds' bounds of :mod:`noisygd.bounds`: closed forms, the papers' own expressions, and
Monte Carlo checks of the probabilistic statements (fixed seeds)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.bounds import (
    Assumption,
    Bound,
    comparable,
    noisy_sgd_gradient_variance,
    noisy_sgd_utility_bound,
    online_to_batch_bound,
    online_to_batch_refusal,
    strongly_convex_uniform_average_bound,
    theorem6_bound,
    tree_error_bound,
    tree_nodes_per_prefix,
)


# ------------------------------------------------------------------ Lecture 12, 12.3.3
def test_noisy_sgd_variance_closed_form():
    # d sigma^2 / gamma^2 + n L^2 / gamma
    assert noisy_sgd_gradient_variance(n=100, d=4, noise_std=2.0, sampling_rate=0.5,
                                       lipschitz=3.0) == pytest.approx(4 * 4 / 0.25 + 900 / 0.5)


def test_noisy_sgd_variance_bounds_the_estimator_variance():
    # Monte Carlo of eq. (12.2) with Poisson sampling: the empirical E||g - E g||^2 is within
    # the bound (a 5-sigma margin of the Monte Carlo mean; false failure < 1e-6)
    rng = np.random.default_rng(3)
    n, d, q, s = 60, 3, 0.2, 0.7
    G = rng.normal(size=(n, d))
    G /= np.linalg.norm(G, axis=1, keepdims=True)  # per-example norms 1 = L
    reps = 20000
    mask = rng.random((reps, n)) < q
    g = (mask @ G + s * rng.standard_normal((reps, d))) / q
    dev = np.sum((g - G.sum(axis=0)) ** 2, axis=1)
    bound = noisy_sgd_gradient_variance(n=n, d=d, noise_std=s, sampling_rate=q, lipschitz=1.0)
    assert dev.mean() - 5 * dev.std() / math.sqrt(reps) <= bound
    # and the exact variance (1 - q)/q sum||g_i||^2 + d s^2/q^2 is what it estimates
    exact = (1 - q) / q * n + d * s * s / q / q
    assert dev.mean() == pytest.approx(exact, rel=0.03)


def test_noisy_sgd_utility_bound_closed_form():
    n, d, s, q, L, beta, D, T = 1000, 5, 3.0, 0.1, 1.0, 0.25, 2.0, 400
    V = d * s * s / q**2 + n * L * L / q
    eta = min(1 / (n * beta), D / math.sqrt(V * T))
    bound, got_eta = noisy_sgd_utility_bound(n=n, d=d, noise_std=s, sampling_rate=q,
                                             lipschitz=L, smoothness=beta, init_distance=D,
                                             steps=T)
    assert got_eta == eta
    assert bound == pytest.approx((D * D / (T * eta) + eta * V) / n, rel=1e-12)
    # the notes' second form is an upper bound: n beta D^2 / T + 2 D sqrt(V / T)
    assert bound * n <= n * beta * D * D / T + 2 * D * math.sqrt(V / T) * (1 + 1e-12)


# ------------------------------------------------------------------ Lecture 12, 12.2.4
def test_strongly_convex_uniform_average_closed_form_and_crossover():
    n, d, L, s, lam, T = 500, 3, 1.0, 4.0, 0.01, 200
    got = strongly_convex_uniform_average_bound(n=n, d=d, lipschitz=L, noise_std=s,
                                                strong_convexity=lam, steps=T)
    want = (n * n * L * L + d * s * s) / (2 * n * lam * T) * (1 + math.log(T)) / n
    assert got == pytest.approx(want, rel=1e-12)
    # against the weighted schedule's 4 (n^2 L^2 + d s^2) / (lambda (T + 1)): smaller iff T <= 1088
    for T, smaller in ((1088, True), (1089, False)):
        log_form = strongly_convex_uniform_average_bound(n=n, d=d, lipschitz=L, noise_std=s,
                                                         strong_convexity=lam, steps=T)
        weighted = 4 * (n * n * L * L + d * s * s) / (n * lam * (T + 1)) / n
        assert (log_form < weighted) is smaller


# ------------------------------------------------------------------ tree mechanism (001)
def test_tree_bounds_closed_forms():
    assert tree_nodes_per_prefix(1) == 1
    assert tree_nodes_per_prefix(8) == 4 and tree_nodes_per_prefix(7) == 3
    assert tree_error_bound(noise_std=2.0, n_params=9, nodes_per_prefix=4) == pytest.approx(12)
    hp = tree_error_bound(noise_std=2.0, n_params=9, nodes_per_prefix=4, beta=math.exp(-2))
    assert hp == pytest.approx(2 * 2 * (3 + 2))
    # the slides' rate with the constant 1 + sqrt 2 (ln(1/beta) >= 1)
    assert hp <= (1 + math.sqrt(2)) * 2 * math.sqrt(4 * 9 * 2)


def _prefix_errors(T, d, sigma, rng):
    """Plain binary-tree prefix sums written out: node [j 2^l, (j+1) 2^l) carries
    N(0, sigma^2 I); prefix t sums the nodes of t's binary digits."""
    levels = T.bit_length()
    nodes = {(lvl, j): sigma * rng.standard_normal(d)
             for lvl in range(levels) for j in range(T >> lvl)}
    out = np.zeros((T, d))
    for t in range(1, T + 1):
        start = 0
        for lvl in reversed(range(levels)):
            if t - start >= 1 << lvl:
                out[t - 1] += nodes[(lvl, start >> lvl)]
                start += 1 << lvl
    return out


def test_tree_error_bound_holds_with_the_stated_probability():
    # 400 trees: the high-probability bound at beta = 0.1 fails at most 0.1 of the time
    # (binomial: P(more than 60 of 400 failures | p = 0.1) < 1e-4), the mean is below the
    # expectation bound
    rng = np.random.default_rng(0)
    T, d, sigma, beta = 37, 4, 1.5, 0.1
    k = tree_nodes_per_prefix(T)
    hp = tree_error_bound(noise_std=sigma, n_params=d, nodes_per_prefix=k, beta=beta)
    mean_bound = tree_error_bound(noise_std=sigma, n_params=d, nodes_per_prefix=k)
    avgs = np.array([np.linalg.norm(_prefix_errors(T, d, sigma, rng), axis=1).mean()
                     for _ in range(400)])
    assert np.sum(avgs > hp) <= 60
    assert avgs.mean() <= mean_bound
    # the slides' form sigma sqrt(d log T ln(1/beta)) hides a constant: at beta = 0.9 it is
    # exceeded far more often than 90% of the time
    assert np.mean(avgs > sigma * math.sqrt(d * math.log2(T) * math.log(1 / 0.9))) > 0.95


# ------------------------------------------------------------------ Zhang et al. Theorem 6
def test_theorem6_matches_the_papers_terms_at_t_equal_n_squared():
    n, d, L, beta, eps, delta, gamma, gap = 30, 3, 1.0, 0.5, 1.0, 1e-5, 0.05, math.log(2)
    alpha = 2 * L * math.sqrt(math.log(3 * n / delta) * math.log(2 / delta)) / eps
    sigma = math.sqrt(4 * L * L + d * alpha * alpha)  # Theorem 5's sigma
    d_f = math.sqrt(2 * gap / beta)
    eta = min(1 / beta, d_f / (sigma * n))
    a = 1 / (1 - math.exp(-2 / d))
    log3 = math.log(3 / gamma)
    # inequalities (1)-(5) of the proof as the paper writes them, T = n^2
    x = (eta - beta * eta**2) * n * L * L * math.sqrt(12 * log3)
    y = (eta + beta * eta**2) * n * L * L / eps * math.sqrt(
        24 * a * log3 * math.log(3 * n / delta) * math.log(2 / delta))
    r = beta / 2 * alpha**2 * eta**2 * (d * n * n + 2 * n * math.sqrt(d * log3) + 2 * log3)
    drift = 2 * beta * eta**2 * n * n * L * L
    want = (gap + x + y + r + drift) / (n * n * (eta - beta / 2 * eta**2))
    got = theorem6_bound(lipschitz=L, smoothness=beta, loss_gap=gap, noise_std=alpha,
                         n_params=d, steps=n * n, step_size=eta, confidence=gamma)
    assert got == pytest.approx(want, rel=1e-12)
    # smaller failure probability, larger bound
    assert theorem6_bound(lipschitz=L, smoothness=beta, loss_gap=gap, noise_std=alpha,
                          n_params=d, steps=n * n, step_size=eta, confidence=1e-3) > got


def test_theorem6_refuses_a_step_outside_theorem5():
    with pytest.raises(ValueError, match="2/beta"):
        theorem6_bound(lipschitz=1, smoothness=1, loss_gap=1, noise_std=1, n_params=1, steps=4,
                       step_size=2.0, confidence=0.1)


# ------------------------------------------------------------------ online to batch (001)
def test_online_to_batch_applies_only_to_one_averaged_pass():
    assert online_to_batch_bound(average_regret=0.3, epochs=1, output="average",
                                 regret_covers_run=True) == 0.3
    reason = online_to_batch_refusal(epochs=4, output="last", regret_covers_run=False)
    assert "4 epochs" in reason and "output='last'" in reason and "does not cover" in reason
    with pytest.raises(ValueError, match="one pass"):
        online_to_batch_bound(average_regret=0.3, epochs=2, output="average",
                              regret_covers_run=True)


def test_online_to_batch_on_a_simulated_stream():
    # iid linear-regression stream, online gradient descent on the squared loss clipped to a
    # ball (a one-pass online learner): E L_P(w_bar) - L_P(w*) <= E regret / T (Monte Carlo,
    # 300 streams; the difference of the two sides' means has a 5-sigma margin)
    rng = np.random.default_rng(1)
    T, w_star = 200, np.array([0.5, -0.3])
    gaps, regrets = [], []
    for _ in range(300):
        X = rng.normal(size=(T, 2)) / 2
        y = X @ w_star + 0.1 * rng.normal(size=T)
        w, ws, reg = np.zeros(2), [], 0.0
        for t in range(T):
            ws.append(w.copy())
            reg += 0.5 * (X[t] @ w - y[t]) ** 2 - 0.5 * (X[t] @ w_star - y[t]) ** 2
            w = w - 0.5 / math.sqrt(t + 1) * (X[t] @ w - y[t]) * X[t]
        wb = np.mean(ws, axis=0)
        # L_P(w) - L_P(w*) = 0.5 (w - w*)^T E[x x^T] (w - w*), E[x x^T] = I / 4
        gaps.append(0.125 * np.sum((wb - w_star) ** 2))
        regrets.append(reg / T)
    diff = np.array(regrets) - np.array(gaps)
    assert diff.mean() + 5 * diff.std() / math.sqrt(len(diff)) >= 0


# ------------------------------------------------------------------ Bound / comparable
def test_comparable_needs_the_same_quantity_comparator_guarantee_and_premises():
    d_derived = Assumption("D >= ||theta*||", 300.0, "derived", "sqrt(2 F0 / l2)")
    d_nominal = Assumption("D >= ||theta*||", 1.0, "nominal", "DEFAULT_INIT_DISTANCE")
    base = dict(quantity="E F(theta) - F(theta*)", comparator="argmin F",
                guarantee="in expectation", reference="x")
    a = Bound(43.3, assumptions=(d_derived,), **base)
    b = Bound(12.0, assumptions=(d_derived,), **base)
    c = Bound(0.02, assumptions=(d_nominal,), **base)
    assert comparable(a, b) and not comparable(a, c) and c.nominal and not a.nominal
    assert not comparable(a, Bound(43.3, assumptions=(d_derived,),
                                   **{**base, "comparator": "any w with ||w|| <= D"}))
    assert "[nominal: DEFAULT_INIT_DISTANCE]" in d_nominal.text()
    with pytest.raises(ValueError, match="source"):
        Assumption("x", 1.0, "guessed")
