"""The private per-feature scale of the defaults (issue 19, item 4): its release's
sensitivity by brute force under both relations, recorded before its read and composed,
the same seed giving the same model, ``coef_`` in the user's coordinates, and its report.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.events import Gaussian, Neighbouring
from noisygd.accounting.gdp import gaussian_mu
from noisygd.estimators import (
    CONDITIONING_RELEASES,
    FEATURE_SCALE_SHARE,
    DPLinearRegression,
    DPLogisticRegression,
    feature_scale_from_release,
)
from noisygd.objectives import CentredGLM, LogisticLoss
from noisygd.oracles.array import ArrayOracle


def _scaled_binary(n: int = 2000, seed: int = 0, spread: float = 100.0):
    rng = np.random.default_rng(seed)
    s = np.array([1.0, np.sqrt(spread), spread])
    raw = rng.uniform(-1.0, 1.0, (n, 3))
    X = raw * s / np.linalg.norm(s)  # columns spanning 100x, rows in the unit ball
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-3.0 * raw.sum(axis=1)))).astype(int)
    return X, y


def _sums(X, c, B):
    oracle = ArrayOracle(CentredGLM(LogisticLoss(), c, 1.0), X, np.ones(X.shape[0]),
                         row_norm_bound=B)
    return oracle.bounded_row_sums(absolute=True).absolute_rows


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_the_release_sensitivity_by_brute_force(relation):
    """sup ||S(D) - S(D')|| over neighbouring D, D' (small data, adversarial rows: far
    outside the ball, on one axis, at the centre, sparse) never exceeds the relation's
    Delta, which the stage's event declares; one axis row at the sphere attains 1."""
    rng = np.random.default_rng(5)
    c, B = np.array([0.2, -0.1, 0.05, 0.0]), 0.7
    D = rng.normal(size=(12, 4)) * 0.4
    extremes = [np.array([50.0, 0, 0, 0]), c + np.array([0, B, 0, 0]), c.copy(),
                np.array([-3.0, 4.0, 1e3, -2.0]), np.zeros(4), c + B * np.ones(4) / 2]
    candidates = extremes + [rng.normal(size=4) * k for k in (0.1, 1.0, 10.0) for _ in range(5)]
    base = _sums(D, c, B)
    worst = 0.0
    for x in candidates:
        if relation == "add_remove":
            other = _sums(np.vstack([D, x]), c, B)
            worst = max(worst, float(np.linalg.norm(other - base)))
        else:
            for i in range(D.shape[0]):
                Dp = D.copy()
                Dp[i] = x
                worst = max(worst, float(np.linalg.norm(_sums(Dp, c, B) - base)))
    rel = Neighbouring(relation)
    delta = rel.clipped_sum_sensitivity
    assert worst <= delta + 1e-12
    if relation == "add_remove":
        assert worst == pytest.approx(1.0, rel=1e-12)  # attained: the bound is exact
    est = DPLogisticRegression(neighbouring=relation)
    mu_f, event = est._feature_scale_event()
    assert isinstance(event, Gaussian) and event.relation is rel
    assert event.sensitivity == delta
    assert gaussian_mu(event) == pytest.approx(mu_f, rel=1e-12)
    assert mu_f == pytest.approx(math.sqrt(FEATURE_SCALE_SHARE) * calibrate_mu(1.0, 1e-5))


def test_the_release_is_recorded_before_its_read_and_composed(tmp_path, monkeypatch):
    from noisygd.ledger import Ledger

    X, y = _scaled_binary(600)
    seen = []
    real = ArrayOracle.bounded_row_sums

    def watching(self, *args, **kwargs):
        with Ledger(str(tmp_path / "l.db")) as ledger:
            seen.append((kwargs.get("absolute", False),
                         [r.algorithm.split("/")[1] for r in ledger.releases("d")]))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ArrayOracle, "bounded_row_sums", watching)
    with Ledger(str(tmp_path / "l.db")) as ledger:
        ledger.set_budget("d", 2.0, 1e-5)
    model = DPLogisticRegression(
        feature_range_share=0.0, classes=[0, 1], ledger=str(tmp_path / "l.db"), dataset="d",
                                 random_state=0).fit(X, y)
    # each stage's sums are read once its release is recorded: the conditioning's first
    # round (its later releases read X, not an oracle), then the feature scale
    names = list(CONDITIONING_RELEASES)
    assert seen == [(False, names[:1]), (True, [*names, "feature_scale"])]
    scale = model.privacy_.event.events[len(names)]  # after the conditioning, before the run
    assert scale.describe() == model.conditioning_["feature_scale_release"]["event"]
    assert gaussian_mu(model.privacy_.event) == pytest.approx(calibrate_mu(1.0, 1e-5),
                                                              rel=1e-9)
    with Ledger(str(tmp_path / "l.db")) as ledger:
        assert ledger.spent("d").epsilon == pytest.approx(model.privacy_.epsilon, rel=1e-6)


def test_same_seed_same_model_and_the_report():
    X, y = _scaled_binary(1500)
    a = DPLogisticRegression(feature_range_share=0.0, classes=[0, 1], random_state=4).fit(X, y)
    b = DPLogisticRegression(feature_range_share=0.0, classes=[0, 1], random_state=4).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.conditioning_["feature_scale"],
                                  b.conditioning_["feature_scale"])
    rep = a.conditioning_["feature_scale_release"]
    assert rep is a.fit_info_["feature_scale"]
    assert rep["share"] == FEATURE_SCALE_SHARE and 0.0 <= rep["shrinkage"] < 1.0
    f = a.conditioning_["feature_scale"]
    assert rep["spread"] == pytest.approx(f.max() / f.min())
    assert f[0] > f[1] > f[2]  # the column of smallest spread is scaled up most
    off = DPLogisticRegression(
        feature_range_share=0.0, classes=[0, 1], random_state=4, feature_scale_share=0).fit(X, y)
    assert off.conditioning_["feature_scale"] is None
    assert "feature_scale_release" not in off.conditioning_ and "release" in off.conditioning_
    one = DPLogisticRegression(
        feature_range_share=0.0, classes=[0, 1], random_state=4).fit(X[:, :1], y)
    assert one.conditioning_["feature_scale"] is None  # one column: nothing to scale
    with pytest.raises(ValueError, match="feature_scale_share"):
        DPLogisticRegression(
            feature_range_share=0.0, classes=[0, 1], feature_scale_share=0.7).fit(X, y)


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPLinearRegression])
def test_coef_in_the_users_coordinates_a_non_private_limit(cls):
    """With a huge epsilon the scaled fit approaches the (nearly unregularised) non-private
    optimum, reported in the user's coordinates: its scores match scikit-learn's fit on the
    same rows, and ``X @ coef_ + intercept_`` is what it predicts."""
    from sklearn.linear_model import LinearRegression, LogisticRegression

    X, y = _scaled_binary(3000, seed=1, spread=10.0)  # within the cap: f spans 10x
    kw = {"epsilon": 1e5, "random_state": 0}
    if cls is DPLogisticRegression:
        kw["classes"] = [0, 1]
        target = y
        ref = LogisticRegression(C=1e4, max_iter=10_000).fit(X, y).decision_function(X)
    else:
        kw["target_range"] = (0.0, 1.0)
        noise = np.random.default_rng(2).normal(0.0, 0.02, X.shape[0])
        target = np.clip(0.5 + X @ np.array([2.0, 0.5, 0.05]) + noise, 0.0, 1.0)
        ref = LinearRegression().fit(X, target).predict(X)
    on = cls(**kw).fit(X, target)
    assert on.conditioning_["feature_scale"] is not None
    a = on.decision_function(X) if cls is DPLogisticRegression else on.predict(X)
    assert np.corrcoef(a, ref)[0, 1] > 0.99
    np.testing.assert_allclose(a, ref, atol=0.1 * np.std(ref))
    np.testing.assert_allclose(a, X @ on.coef_ + on.intercept_, rtol=1e-10, atol=1e-12)


def test_post_processing_gates_noise_and_recovers_scales():
    rng = np.random.default_rng(0)
    n, sigma = 10_000.0, 20.0
    # noise only (equal true spreads): the gate shrinks all the way, f = 1 exactly. The
    # spread of 8 noisy means about their mean is tau^2 chi-square(7) (tau = sigma / n), and
    # the gate passes it only above 2 d tau^2 = 16 tau^2: P(chi2_7 > 16) = 2.5% of seeds
    # would see a partial shrink (this seed does not)
    equal = n * 0.1 + rng.normal(0.0, sigma, 8)
    out = feature_scale_from_release(equal, n, sigma)
    assert out.shrinkage == 1.0
    np.testing.assert_array_equal(out.scale, 1.0)
    assert out.spread == 1.0
    # spreads 100x apart, well resolved: f follows 1/m (ratios within 5%) without a cap
    m = np.geomspace(0.001, 0.1, 5)
    noisy = n * m + rng.normal(0.0, 0.1, 5)
    out = feature_scale_from_release(noisy, n, 0.1, cap=1e12)
    assert out.shrinkage < 0.01
    np.testing.assert_allclose(out.scale * m / (out.scale * m).mean(), 1.0, rtol=0.05)
    # the default cap (10): the closed form, no column scaled up more than 10x the
    # root-mean-square spread's unit, the wide columns still in proportion
    capped = feature_scale_from_release(noisy, n, 0.1)
    q = noisy / n
    q = q.mean() + (1.0 - capped.shrinkage) * (q - q.mean())
    m0 = np.maximum(q, 0.0) + 2.0 * 0.1 / n
    m1 = np.maximum(m0, np.sqrt(np.mean(m0 ** 2)) / 10.0)
    np.testing.assert_allclose(capped.scale, np.sqrt(np.mean(m1 ** 2)) / m1, rtol=1e-12)
    assert capped.spread < out.spread and m1[0] > m0[0]  # the cap binds on the narrowest
    np.testing.assert_allclose(capped.scale[-1] / capped.scale[-2], m[-2] / m[-1], rtol=0.05)


def test_each_stage_reads_its_scan_sums_and_closes_its_oracles(monkeypatch):
    """The default classifier's setup (issue 19): the conditioning's and the feature scale's
    sums come from the scans that built the oracles they read (``bounded_row_sums`` reads no
    row), and each stage closes the oracles it read before the next ones are built, so one
    oracle's ``O(n)`` arrays live at a time; the run's oracle stays open."""
    X, y = _scaled_binary(3000)
    events: list[tuple[str, int]] = []
    init, close, sums = ArrayOracle.__init__, ArrayOracle.close, ArrayOracle.bounded_row_sums

    def watched_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        events.append(("build", id(self)))

    def watched_close(self):
        events.append(("close", id(self)))
        close(self)

    def watched_sums(self, *args, **kwargs):
        out = sums(self, *args, **kwargs)
        events.append(("sums" if self.rows_read == 0 else "sums read rows", id(self)))
        return out

    monkeypatch.setattr(ArrayOracle, "__init__", watched_init)
    monkeypatch.setattr(ArrayOracle, "close", watched_close)
    monkeypatch.setattr(ArrayOracle, "bounded_row_sums", watched_sums)
    model = DPLogisticRegression(feature_range_share=0.0, classes=[0, 1], random_state=0).fit(X, y)
    assert "feature_scale_release" in model.conditioning_
    kinds = [k for k, _ in events]
    # the conditioning's first round (its later releases read X: no oracle), the feature
    # scale, then the run's oracle
    assert kinds == ["build", "sums", "close"] * 2 + ["build"]
    builds = [i for k, i in events if k == "build"]
    assert [i for k, i in events if k == "close"] == builds[:-1]
    assert len(set(builds)) == 3


def test_a_declared_ridge_stays_on_the_coefficients():
    """With a declared ``l2 > 0`` the auto per-feature scale is not released, so the ridge
    penalises ``w`` (and the centred intercept), not ``w_j / f_j``: in the non-private limit
    the fit lands on the minimiser of the ridge on ``w`` and far from that of the ridge on
    ``w / f``, which a declared share still asks for (and gets). ``l2=0`` (every change of
    coordinates the same problem) keeps the scale."""
    X, y = _scaled_binary(3000, seed=1, spread=10.0)
    lam, kw = 0.01, {"epsilon": 1e5, "classes": [0, 1], "random_state": 0,
                     "feature_range_share": 0.0}
    declared = DPLogisticRegression(l2=lam, **kw).fit(X, y)
    assert declared.conditioning_["feature_scale"] is None
    assert "feature_scale_release" not in declared.conditioning_
    assert [r["name"] for r in declared.fit_info_["pre_releases"]] == list(
        CONDITIONING_RELEASES)
    scaled = DPLogisticRegression(l2=lam, feature_scale_share=FEATURE_SCALE_SHARE, **kw).fit(X, y)
    f = scaled.conditioning_["feature_scale"]
    assert f is not None and f.max() / f.min() > 5.0  # columns spanning 10x
    assert DPLogisticRegression(l2=0.0, **kw).fit(X, y).conditioning_["feature_scale"] is not None

    y_pm = LogisticLoss().check_targets(y)

    def optimum(est, scale):
        cond = est.conditioning_
        obj = CentredGLM(LogisticLoss(l2=lam), cond["centre"], cond["intercept_scale"],
                         feature_scale=scale)
        v, _ = ArrayOracle(obj, X, y_pm, row_norm_bound=cond["row_norm_bound"]).minimize()
        return obj.to_base(v)

    on_w, on_w_over_f = optimum(declared, None), optimum(scaled, f)
    got = np.append(declared.coef_, declared.intercept_)
    assert np.linalg.norm(on_w - on_w_over_f) > 5.0  # the two ridges differ here
    assert np.linalg.norm(got - on_w) < 0.02 * np.linalg.norm(on_w)
    got_scaled = np.append(scaled.coef_, scaled.intercept_)
    assert np.linalg.norm(got_scaled - on_w_over_f) < 0.02 * np.linalg.norm(on_w_over_f)


def test_a_declared_ridge_is_a_ridge_after_the_released_range():
    """``DPLinearRegression(l2=lam)`` in the non-private limit is scikit-learn's ``Ridge``
    (``alpha = n lam``) on the columns in the released feature range's units ``g * x``
    (``conditioning_["feature_scale"]`` is ``g`` alone: no per-feature scale under a
    declared ridge), mapped back to the user's coordinates; on columns spanning 100x it is
    far from the ridge on the raw columns."""
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    n, s = 5000, np.array([1.0, 0.3, 0.1, 0.03, 0.01])
    X = rng.uniform(-1.0, 1.0, (n, 5)) * s / np.linalg.norm(s)
    y = np.clip(0.5 + X @ np.array([0.6, 1.5, 3.0, 6.0, 12.0])
                + rng.normal(0.0, 0.02, n), 0.0, 1.0)
    lam = 1e-2
    est = DPLinearRegression(epsilon=1e6, l2=lam, target_range=(0.0, 1.0),
                             random_state=0).fit(X, y)
    names = [r["name"] for r in est.fit_info_["pre_releases"]]
    assert "feature_range" in names and "feature_scale" not in names
    g = est.conditioning_["feature_scale"]
    assert g.max() / g.min() > 10.0
    in_units = Ridge(alpha=n * lam).fit(X * g, y).coef_ * g
    raw = Ridge(alpha=n * lam).fit(X, y).coef_
    np.testing.assert_allclose(est.coef_, in_units, rtol=0.02, atol=1e-3)
    assert np.linalg.norm(in_units - raw) > 0.5 * np.linalg.norm(in_units)
