r"""The rows of Figures 1 and 2 of Chourasia, Ye and Shokri (NeurIPS 2021), called directly.

Covered: :func:`noisygd.reproductions.chourasia2021.figure1_rows` and
:func:`noisygd.reproductions.chourasia2021.figure2_rows`. Their size is set by ``k_max`` in
the module's ``FIG1``/``FIG2`` (they take no arguments), shrunk or stretched here with
``monkeypatch.setitem``. Closed forms are written out from the paper: Corollary 1
:math:`\varepsilon = \frac{\alpha S^2}{\lambda\sigma^2 n^2}(1 - e^{-\lambda\eta K/2})`, the
composition baseline :math:`\frac{\alpha S^2\eta K}{4\sigma^2 n^2}`, and for Figure 2 the
Gaussian laws of :math:`\theta_K` derived here from the recursion
:math:`\theta_{k+1} = (1-\eta)\theta_k + \eta\bar x + \sqrt{2\eta}\sigma N_k`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from noisygd.reproductions import chourasia2021 as ch
from noisygd.reproductions.chourasia2021 import figure1_rows, figure2_rows

S, N, ETA, SIGMA = 4.0, 5000, 0.02, 0.02  # the captions of both figures
UNIT = S**2 / (SIGMA**2 * N**2)  # alpha S^2 / (sigma^2 n^2) per unit alpha


def _curve(rows: list[dict], **key) -> list[dict]:
    return [r for r in rows if all(r[k] == v for k, v in key.items())]


# ---------------------------------------------------------------------- Figure 1
def test_figure1_rows_columns_and_grid(monkeypatch):
    """One row per (curve, K), K = 0..k_max in order, columns alpha, lam, K, ours, composition."""
    monkeypatch.setitem(ch.FIG1, "k_max", 20)
    rows = figure1_rows()
    assert len(rows) == 5 * 21
    assert all(list(r) == ["alpha", "lam", "K", "ours", "composition"] for r in rows)
    assert {(r["alpha"], r["lam"]) for r in rows} == {(30, 1.0), (20, 1.0), (10, 1.0),
                                                      (10, 2.0), (10, 4.0)}
    for alpha, lam in ch.FIG1["curves"]:
        assert [r["K"] for r in _curve(rows, alpha=alpha, lam=lam)] == list(range(21))


def test_figure1_is_corollary1_and_the_composition_baseline():
    """Every value is the closed form; both are 0 at K = 0."""
    for r in figure1_rows():
        a, lam, K = r["alpha"], r["lam"], r["K"]
        ours = a * UNIT / lam * (1 - math.exp(-lam * ETA * K / 2))
        assert r["ours"] == pytest.approx(ours, rel=1e-10, abs=1e-300)
        assert r["composition"] == pytest.approx(a * UNIT * ETA * K / 4, rel=1e-10, abs=1e-300)
        if K == 0:
            assert r["ours"] == 0.0 and r["composition"] == 0.0


def test_figure1_monotone_in_k_linear_in_alpha_decreasing_in_lambda():
    """ours rises and is concave in K; RDP is linear in alpha; more strong convexity gives less
    epsilon; the composition baseline ignores lambda."""
    rows = figure1_rows()
    for alpha, lam in ch.FIG1["curves"]:
        ours = np.array([r["ours"] for r in _curve(rows, alpha=alpha, lam=lam)])
        assert np.all(np.diff(ours) > 0) and np.all(np.diff(ours, 2) < 0)
    base = np.array([r["ours"] for r in _curve(rows, alpha=10, lam=1.0)])
    for alpha in (20, 30):
        other = np.array([r["ours"] for r in _curve(rows, alpha=alpha, lam=1.0)])
        np.testing.assert_allclose(other, base * alpha / 10, rtol=1e-12)
    by_lam = {lam: np.array([r["ours"] for r in _curve(rows, alpha=10, lam=lam)])
              for lam in (1.0, 2.0, 4.0)}
    assert np.all(by_lam[1.0][1:] > by_lam[2.0][1:]) and np.all(by_lam[2.0][1:] > by_lam[4.0][1:])
    comp = {lam: [r["composition"] for r in _curve(rows, alpha=10, lam=lam)]
            for lam in (1.0, 2.0, 4.0)}
    assert comp[1.0] == comp[2.0] == comp[4.0]


def test_figure1_last_iterate_levels_off_where_composition_grows(monkeypatch):
    """ours tends to alpha S^2 / (lambda sigma^2 n^2) while composition grows linearly; they
    cross once, at lambda eta K / 2 = u* with 2 (1 - e^-u*) = u*."""
    monkeypatch.setitem(ch.FIG1, "k_max", 4000)
    rows = figure1_rows()
    u_star = optimize.brentq(lambda u: 2 * (1 - math.exp(-u)) - u, 0.5, 3.0)
    for alpha, lam in ch.FIG1["curves"]:
        sub = _curve(rows, alpha=alpha, lam=lam)
        assert sub[-1]["ours"] == pytest.approx(alpha * UNIT / lam, rel=1e-12)
        comp = np.array([r["composition"] for r in sub])
        np.testing.assert_allclose(comp[1:] / np.arange(1, len(sub)), comp[1], rtol=1e-12)
        above = np.array([r["ours"] > r["composition"] for r in sub[1:]])
        k_star = 2 * u_star / (lam * ETA)
        ks = np.arange(1, len(sub))
        assert np.array_equal(above, ks < k_star)


# ---------------------------------------------------------------------- Figure 2
def _exact(alpha: float, K: int) -> float:
    """R_alpha of N(m, v) and N(m', v): mean gap (S/n)(1 - q), variance 2 sigma^2 (1 - q^2) /
    (2 - eta), q = (1 - eta)^K; alpha (gap)^2 / (2 v)."""
    q = (1 - ETA) ** K
    gap = S / N * (1 - q)
    var = 2 * SIGMA**2 * (1 - q * q) / (2 - ETA)
    return alpha * gap**2 / (2 * var)


def test_figure2_rows_columns_and_grid(monkeypatch):
    """One row per (alpha, K), K = 0..k_max; columns alpha, K, upper, exact, lower,
    composition; all 0 at K = 0."""
    monkeypatch.setitem(ch.FIG2, "k_max", 15)
    rows = figure2_rows()
    assert len(rows) == 3 * 16
    assert all(list(r) == ["alpha", "K", "upper", "exact", "lower", "composition"]
               for r in rows)
    for alpha in (10, 20, 30):
        sub = _curve(rows, alpha=alpha)
        assert [r["K"] for r in sub] == list(range(16))
        assert sub[0]["upper"] == sub[0]["exact"] == sub[0]["lower"] == 0.0
        assert sub[0]["composition"] == 0.0


def test_figure2_lower_exact_upper_and_composition():
    """Theorem 3 <= exact <= Corollary 2 at every K; exact <= composition, with equality after
    one step (one Gaussian step is exactly the composition of one); exact is the closed form."""
    rows = figure2_rows()
    assert len(rows) == 3 * 301
    for r in rows:
        assert r["lower"] <= r["exact"] * (1 + 1e-9)
        assert r["exact"] <= r["upper"] * (1 + 1e-9)
        assert r["exact"] <= r["composition"] * (1 + 1e-9)
        if r["K"] > 0:
            assert r["exact"] == pytest.approx(_exact(r["alpha"], r["K"]), rel=1e-8)
        if r["K"] == 1:
            assert r["exact"] == pytest.approx(r["composition"], rel=1e-8)
    for alpha in (10, 20, 30):
        sub = _curve(rows, alpha=alpha)
        for col in ("upper", "exact", "lower", "composition"):
            assert np.all(np.diff([r[col] for r in sub]) > 0), col


def test_figure2_limits_as_k_grows(monkeypatch):
    """At large K: upper -> alpha S^2 / ((2 - eta) sigma^2 n^2), exact -> alpha S^2 (2 - eta)
    / (4 sigma^2 n^2), lower -> alpha S^2 / (4 sigma^2 n^2); upper / exact -> 4 / (2 - eta)^2;
    linear in alpha throughout."""
    monkeypatch.setitem(ch.FIG2, "k_max", 2000)
    rows = figure2_rows()
    for alpha in (10, 20, 30):
        last = _curve(rows, alpha=alpha)[-1]
        assert last["K"] == 2000
        assert last["upper"] == pytest.approx(alpha * UNIT / (2 - ETA), rel=1e-9)
        assert last["exact"] == pytest.approx(alpha * UNIT * (2 - ETA) / 4, rel=1e-8)
        assert last["lower"] == pytest.approx(alpha * UNIT / 4, rel=1e-9)
        assert last["upper"] / last["exact"] == pytest.approx(4 / (2 - ETA) ** 2, rel=1e-8)
        first = _curve(rows, alpha=10)[-1]
        for col in ("upper", "exact", "lower", "composition"):
            assert last[col] == pytest.approx(first[col] * alpha / 10, rel=1e-9)
