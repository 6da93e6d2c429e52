"""Table 3 reproduction: the public rules, the accounting checks, and a tiny run.

The quick run uses one dataset (WINE), mu in {0, 0.5}, 2 rounds, no Bassily (--quick).
"""

import json
import math

import numpy as np
import pytest

from noisygd.accounting.calibration import calibrate_mu
from noisygd.accounting.events import Gaussian, Neighbouring, SelfComposed
from noisygd.data import uci_data_dir
from noisygd.exceptions import AssumptionError
from noisygd.mechanisms.gaussian import analytic_gaussian_sigma
from noisygd.objectives.glm import HuberLoss, LogisticLoss
from noisygd.reproductions.zhang2017_table3 import (
    MUS,
    PAPER_TABLE3,
    _account,
    in_band,
    load_table3_data,
    main,
    make_objective,
    noisy_gd_max_steps,
    op_bound_steps,
    op_ratio,
    paper_lipschitz,
    paper_op_plan,
    row_bound,
    summarise,
)

DATA = uci_data_dir()  # $NOISYGD_DATA_DIR or ../shared/data/uci; `data` tests skip without it


def test_paper_table_is_complete():
    # 5 datasets x 2 mu x 4 eps, values copied from Table 3.
    assert len(PAPER_TABLE3) == 40
    assert PAPER_TABLE3[("ADULT", 0.1, 2.0)] == (0.0080, 5.1009, 264.23, 257.23)
    # the paper's mu values are a subset of the grid we run
    assert {mu for (_, mu, _) in PAPER_TABLE3} <= set(MUS)


def test_noisy_gd_steps_rule():
    n, p = 32561, 106
    assert noisy_gd_max_steps(n, p, 1.0, 1e-3, mu=0.1) == 100
    for eps in (0.1, 0.5, 1.0, 2.0):
        m = calibrate_mu(eps, 1e-3)
        expected = min(2000, max(100, math.ceil((0.2 * n * m / (2 * math.sqrt(p))) ** 2)))
        assert noisy_gd_max_steps(n, p, eps, 1e-3, mu=0.0) == expected
    # at the chosen T the noise-to-signal ratio sqrt(p) z / n is at most r* = 0.2
    T = noisy_gd_max_steps(n, p, 0.1, 1e-3, mu=0.0)
    assert 100 < T < 2000
    z = math.sqrt(T) * 2 / calibrate_mu(0.1, 1e-3)
    assert math.sqrt(p) * z / n == pytest.approx(0.2, rel=0.01)


@pytest.mark.parametrize("sens,factor", [("zhang2017", 3.0), ("contraction", 2.0)])
def test_op_bound_steps_matches_closed_form(sens, factor):
    # B(T) = beta D^2/(2T) + beta d (T sigma_1)^2 / 2 is minimised at (D^2/(2 d sigma_1^2))^(1/3)
    c = HuberLoss(threshold=1.0).constants(1.0)
    n, d, eps, delta, D = 6497, 13, 1.0, 1e-3, 10.0
    eta = 1.0 / c.smoothness
    sigma1 = analytic_gaussian_sigma(factor * c.lipschitz * eta / n, eps, delta)
    t_star = (D**2 / (2 * d * sigma1**2)) ** (1 / 3)
    T = op_bound_steps(c, n=n, dim=d, epsilon=eps, delta=delta, optimum_norm_bound=D,
                       sensitivity_bound=sens)
    assert abs(T - t_star) <= 1.0
    with pytest.raises(ValueError, match="mu = 0"):
        op_bound_steps(LogisticLoss(l2=0.1).constants(1.0), n=n, dim=d, epsilon=eps,
                       delta=delta, optimum_norm_bound=D)


def test_paper_lipschitz_is_theorem2s_constant_of_the_regularised_f():
    # f = l + mu/2 ||w||^2 on {||w|| <= 2D}: grad norm <= L_l + mu * 2D, attained along w
    assert paper_lipschitz(1.0, 0.1, 10.0) == pytest.approx(3.0)
    assert paper_lipschitz(1.0, 0.5, 2.0) == pytest.approx(3.0)
    assert paper_lipschitz(1.0, 0.0, 10.0) == 1.0  # Theorem 3: f Lipschitz on R^d


@pytest.mark.parametrize("loss,mu", [("logistic", 0.1), ("huber", 0.5), ("logistic", 0.0),
                                     ("huber", 0.0)])
def test_paper_op_plan_closed_forms(loss, mu):
    # Theorems 2-3 with Theta(.) = 1, Lemmas 2-3, Algorithm 1 line 8, written out by hand
    n, d, eps, delta = 30000, 34, 0.5, 1e-3
    obj = LogisticLoss(l2=mu, fit_intercept=False) if loss == "logistic" else \
        HuberLoss(threshold=1.0, l2=mu, fit_intercept=False)
    c = obj.constants(1.0)
    Ll, bl = (1.0, 0.25) if loss == "logistic" else (1.0, 1.0)  # ||x|| <= 1, no intercept
    assert (c.lipschitz, c.smoothness) == pytest.approx((Ll, bl))
    D = Ll / mu if mu > 0 else 10.0
    plan = paper_op_plan(c, n=n, dim=d, epsilon=eps, optimum_norm_bound=D, delta=delta)
    beta, k = bl + mu, d * math.log(1 / delta)
    if mu > 0:
        L = Ll + 2 * mu * D
        T = math.ceil((mu**2 + beta**2) / (mu * beta)
                      * math.log((mu * n * eps * D) ** 2 / (L * L * k)))
        eta, sens = 1 / (mu + beta), 5 * L * (mu + beta) / (n * mu * beta)
    else:
        L = Ll
        T = math.ceil(((beta * n * eps * D) ** 2 / (L * L * k)) ** (1 / 3))
        eta, sens = 1 / beta, 3 * L * T / (beta * n)
    assert plan.steps == T
    assert plan.learning_rate == pytest.approx(eta)
    assert plan.sensitivity == pytest.approx(sens)
    # line 8: density exp(-eps^2 ||z||^2 / (4 log(2/delta) Delta^2)) = N(0, sigma^2 I)
    assert plan.scale == pytest.approx(sens * math.sqrt(2 * math.log(2 / delta)) / eps)


@pytest.mark.parametrize("loss,mu", [("logistic", 0.1), ("huber", 0.5), ("logistic", 0.0)])
def test_paper_op_plan_line6_closed_forms(loss, mu):
    # the paper_raw setting: rows of norm <= R = 4, Algorithm 1 line 6 (L2-Laplace, eps-DP),
    # T of part 1 of Theorems 2-3 (k = d^2), Lemmas 2-3, written out by hand
    n, d, eps, R = 45211, 52, 0.1, 4.0
    obj = LogisticLoss(l2=mu, fit_intercept=False) if loss == "logistic" else \
        HuberLoss(threshold=1.0, l2=mu, fit_intercept=False)
    c = obj.constants(R)
    Ll, bl = (R, R * R / 4) if loss == "logistic" else (R, R * R)
    assert (c.lipschitz, c.smoothness) == pytest.approx((Ll, bl))
    D = min(Ll / mu, math.sqrt(2 * math.log(2) / mu)) if mu > 0 else 10.0
    plan = paper_op_plan(c, n=n, dim=d, epsilon=eps, optimum_norm_bound=D, noise="l2_laplace")
    beta, k = bl + mu, d * d
    if mu > 0:
        L = Ll + 2 * mu * D
        T = math.ceil((mu**2 + beta**2) / (mu * beta)
                      * math.log((mu * n * eps * D) ** 2 / (L * L * k)))
        sens = 5 * L * (mu + beta) / (n * mu * beta)
    else:
        T = math.ceil(((beta * n * eps * D) ** 2 / (Ll * Ll * k)) ** (1 / 3))
        sens = 3 * Ll * T / (beta * n)
    assert plan.steps == T and plan.sensitivity == pytest.approx(sens)
    assert plan.delta == 0.0 and plan.scale == pytest.approx(sens / eps)  # density e^{-||z||/b}
    # Lemma 6: E||z||^2 = d(d+1) b^2
    assert plan.expected_sq_noise_norm == pytest.approx(d * (d + 1) * (sens / eps) ** 2)
    with pytest.raises(ValueError, match="noise"):
        paper_op_plan(c, n=n, dim=d, epsilon=eps, optimum_norm_bound=D, noise="analytic")


def test_ratio_band_and_summary_counts():
    def row(ds, mu, eps, err, paper_cell=True):
        ours = PAPER_TABLE3[(ds, mu, eps)][0] if paper_cell else None
        return {"dataset": ds, "mu": mu, "epsilon": eps, "paper_cell": paper_cell,
                "paper_ours": ours, "paper_bassily": 1.0,
                "op_paper": {"mean_error": err}, "op_analytic": {"mean_error": err / 2},
                "op_contraction": {"mean_error": err / 8}, "op_bound": {"skipped": "x"}}
    p = PAPER_TABLE3[("WINE", 0.0, 0.1)][0]
    rows = [row("WINE", 0.0, 0.1, 2.0 * p), row("WINE", 0.0, 0.5, 0.0),
            row("BIKE", 0.1, 0.1, 1.0, paper_cell=False)]
    assert in_band(0.5) and in_band(2.0) and not in_band(2.01) and not in_band(None)
    assert op_ratio(rows[0]) == pytest.approx(2.0) and op_ratio(rows[2]) is None
    s = summarise(rows)
    assert s["paper_cells"] == 2 and s["op_paper_within_band"] == 1
    assert list(s["op_paper_band_misses"]) == ["WINE mu=0.0 eps=0.5"]
    assert s["within_band_by_column"]["op_analytic"] == 1  # 1.0x of the paper
    assert s["within_band_by_column"]["op_contraction"] == 0  # 0.25x and 0x
    assert s["best_column"] == "op_paper"  # ties go to op_paper
    assert "bassily" not in s["within_band_by_column"]  # compared with the paper's Bassily
    assert s["bassily_within_band_of_paper_bassily"] == 0 and s["bassily_ratio_range"] is None


def test_account_refuses_add_remove_and_overspending():
    replace = SelfComposed(Gaussian(10.0, 2.0, Neighbouring.REPLACE_ONE), 4)
    acc = _account(replace, target=10.0)
    assert acc["relation"] == "replace_one" and acc["epsilon"] <= 10.0
    with pytest.raises(AssumptionError, match="replace-one"):
        _account(SelfComposed(Gaussian(10.0, 1.0, Neighbouring.ADD_REMOVE), 4))
    with pytest.raises(AssumptionError, match="spends"):
        _account(replace, target=acc["epsilon"] / 2)


@pytest.mark.data
def test_paper_setting_rows_and_objective():
    # rows of the paper setting: the loader's [0, 1] / one-hot encoding projected onto the
    # unit ball (one-hot entries of unprojected short rows are exactly 1), no intercept
    if not DATA.is_dir():
        pytest.skip(f"no data at {DATA}")
    X, _ = load_table3_data("WINE", DATA, "paper")
    Xn, _ = load_table3_data("WINE", DATA, "noisygd")
    assert X.shape == Xn.shape == (6497, 12)
    norms = np.linalg.norm(X, axis=1)
    assert norms.max() <= 1.0 + 1e-12 and np.median(norms) > 0.99  # long rows projected
    # the same direction as the block-scaled rows: only each row's scale differs
    cos = np.sum(X * Xn, axis=1) / (norms * np.linalg.norm(Xn, axis=1))
    assert np.allclose(cos, 1.0)
    assert make_objective("WINE", 0.5, "paper").n_params(12) == 12
    assert make_objective("WINE", 0.5, "noisygd").n_params(12) == 13
    with pytest.raises(ValueError, match="setting"):
        load_table3_data("WINE", DATA, "other")


@pytest.mark.data
def test_paper_raw_rows_are_unprojected_within_the_public_bound():
    if not DATA.is_dir():
        pytest.skip(f"no data at {DATA}")
    X, _ = load_table3_data("WINE", DATA, "paper_raw")
    Xp, _ = load_table3_data("WINE", DATA, "paper")
    R = row_bound("WINE", "paper_raw")
    assert R == pytest.approx(math.sqrt(12)) and row_bound("WINE", "paper") == 1.0
    norms = np.linalg.norm(X, axis=1)
    assert norms.max() <= R + 1e-12 and norms.max() > 1.0  # not projected
    assert np.all(X >= 0.0) and np.all(X <= 1.0 + 1e-12)  # [0, 1] / one-hot entries
    # the paper setting's rows are these rows projected onto the unit ball
    assert np.allclose(Xp, X * np.minimum(1.0, 1.0 / norms)[:, None])


@pytest.mark.data
def test_quick_run_paper_raw_setting(tmp_path):
    rc = main(["--data-dir", str(DATA), "--datasets", "WINE", "--rounds", "2", "--quick",
               "--op-rounds", "5", "--mus", "0", "0.5", "--setting", "paper_raw",
               "--out-dir", str(tmp_path), "--no-progress"])
    assert rc == 0
    res = json.loads((tmp_path / "zhang2017_table3_paper_raw.json").read_text())
    R = math.sqrt(12)
    for r in res["rows"]:
        op = r["op_paper"]
        assert op["lipschitz"] == pytest.approx(paper_lipschitz(R, r["mu"], r["D"]))
        assert op["accounting"]["epsilon"] <= r["epsilon"] * (1 + 1e-6)  # pure eps-DP
        assert op["sigma"] == pytest.approx(op["sensitivity"] / r["epsilon"])  # line 6 scale
        assert r["op_analytic"]["accounting"]["epsilon"] <= r["epsilon"] * (1 + 1e-6)


@pytest.mark.data
def test_quick_run_paper_setting(tmp_path):
    rc = main(["--data-dir", str(DATA), "--datasets", "WINE", "--rounds", "2", "--quick",
               "--op-rounds", "10", "--mus", "0", "0.5", "--out-dir", str(tmp_path),
               "--no-progress"])
    assert rc == 0
    res = json.loads((tmp_path / "zhang2017_table3.json").read_text())
    assert res["meta"]["setting"] == "paper" and res["meta"]["op_rounds"] == 10
    for r in res["rows"]:
        op = r["op_paper"]
        assert r["d"] == 12 and op["rounds"] == 10  # no intercept; 10 noise draws
        assert op["lipschitz"] == pytest.approx(paper_lipschitz(1.0, r["mu"], r["D"]))
        assert op["accounting"]["epsilon"] <= r["epsilon"] * (1 + 1e-6)
        assert r["noisy_gd_centred"] == {"skipped": "n/a (noisygd setting)"}
    md = (tmp_path / "zhang2017_table3.md").read_text()
    first = md.splitlines()[0]
    assert first.startswith("**op_paper") and f"{res['meta']['summary']['op_paper_within_band']}"\
        f" of 8 cells" in first


@pytest.mark.data
def test_quick_run_writes_json_and_markdown(tmp_path):
    rc = main(["--data-dir", str(DATA), "--datasets", "WINE", "--rounds", "2", "--quick",
               "--setting", "noisygd", "--op-rounds", "2",
               "--mus", "0", "0.5", "--out-dir", str(tmp_path), "--no-progress"])
    assert rc == 0
    res = json.loads((tmp_path / "zhang2017_table3_noisygd.json").read_text())
    rows = res["rows"]
    assert len(rows) == 8 and {r["mu"] for r in rows} == {0.0, 0.5}
    assert all(r["paper_cell"] for r in rows)  # WINE's paper cells are mu in {0, 0.5}
    for r in rows:
        ran = [m for m in ("op_paper", "op_analytic", "op_contraction", "op_bound", "noisy_gd",
                           "noisy_gd_centred", "langevin", "dynamic") if "mean_error" in r[m]]
        for m in ran:
            assert r[m]["mean_error"] >= -1e-12  # w_hat is the exact minimiser
            # each run was calibrated for (eps, delta): the tightest accountant agrees
            assert r[m]["accounting"]["epsilon"] <= r["epsilon"] * (1 + 1e-6)
            assert r[m]["accounting"]["relation"] == "replace_one"
        assert r["bassily"] is None  # --quick
        assert r["noisy_gd"]["steps"] == noisy_gd_max_steps(r["n"], r["d"], r["epsilon"],
                                                            1e-3, r["mu"])
        if r["mu"] == 0:
            cen = r["noisy_gd_centred"]
            assert cen["steps"] == r["noisy_gd"]["steps"]  # the same public steps rule
            assert cen["clip"] == pytest.approx(math.hypot(cen["centred_radius"],
                                                           cen["intercept_scale"]))
            assert cen["clip"] < math.sqrt(2.0)  # below the uncentred bound sqrt(B^2 + 1)
            assert r["langevin"] == {"skipped": "n/a (needs mu>0)"}
            assert r["dynamic"] == {"skipped": "n/a (needs mu>0)"}
            assert r["op_bound"]["steps_rule"] == "bound"
            assert r["op_bound"]["steps"] < r["op_contraction"]["steps"]  # Theorem 3's T
        else:
            assert set(ran) == {"op_paper", "op_analytic", "op_contraction", "noisy_gd",
                                "langevin", "dynamic"}
            assert r["noisy_gd_centred"] == {"skipped": "n/a (mu=0 only)"}
            assert r["dynamic"]["spent"] <= r["dynamic"]["budget"]
    md = (tmp_path / "zhang2017_table3_noisygd.md").read_text()
    assert "| dataset | mu | eps | paper | paper ours | op_paper | op_paper / paper |" in md
    assert "Table 3" in md and "n/a (needs mu>0)" in md
