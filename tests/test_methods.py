"""The built-in solvers through the estimators (`method=`), and the budget they spend."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from noisygd.accounting import best
from noisygd.accounting.events import Composed, Gaussian, PoissonSampled, SelfComposed
from noisygd.estimators import DPHuberRegressor, DPLogisticRegression
from noisygd.solvers import SOLVERS, get_solver


def _binary(n=3000, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y = (X @ np.ones(d) > 0).astype(int)
    return X, y


def test_named_methods():
    assert {"noisy_gd", "noisy_sgd", "dp_ftrl", "langevin", "output_perturbation",
            "rrpsgd", "ssp", "dynamic", "newton"} == set(SOLVERS)
    with pytest.raises(ValueError, match="unknown method"):
        get_solver("nope")


def test_noisy_sgd_pays_for_the_count_in_one_calibration():
    X, y = _binary()
    model = DPLogisticRegression(
        feature_range_share=0.0, epsilon=1.0, method="noisy_sgd", classes=[0, 1],
                                 random_state=0).fit(X, y)
    event = model.privacy_.event
    assert isinstance(event, Composed)
    # the private conditioning's rounds and per-feature scale (default) come first
    *conditioning, _, count, sgd = event.events
    assert model.conditioning_["release"]["events"] == [e.describe() for e in conditioning]
    assert isinstance(count, Gaussian)
    assert isinstance(sgd, SelfComposed) and isinstance(sgd.event, PoissonSampled)
    # The whole release meets the budget, and uses most of it (calibration is tight).
    assert 0.95 <= model.privacy_.epsilon <= 1.0
    assert model.score(X, y) > 0.85


def test_noisy_sgd_refuses_replace_one():
    X, y = _binary(n=500)
    with pytest.raises(ValueError, match="add_remove"):
        DPLogisticRegression(method="noisy_sgd", neighbouring="replace_one",
                             classes=[0, 1]).fit(X, y)


def test_noisy_sgd_needs_single_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) / 2
    y = rng.integers(0, 3, size=300)
    with pytest.raises(ValueError, match="single"):
        DPLogisticRegression(method="noisy_sgd", classes=[0, 1, 2], multiclass="ovr").fit(X, y)
    # the multinomial default is one problem, so NoisySGD (not a Gaussian composition) fits it
    model = DPLogisticRegression(method="noisy_sgd", classes=[0, 1, 2], random_state=0).fit(X, y)
    assert model.coef_.shape == (3, 3) and model.privacy_.epsilon <= 1.0 * (1 + 1e-9)


def test_dp_ftrl_is_a_tree_event_under_replace_one():
    X, y = _binary()
    model = DPLogisticRegression(
        feature_range_share=0.0, epsilon=1.0, method="dp_ftrl", neighbouring="replace_one",
                                 classes=[0, 1], random_state=0).fit(X, y)
    *conditioning, _, event = model.privacy_.event.events  # the private conditioning first
    assert model.conditioning_["release"]["events"] == [e.describe() for e in conditioning]
    assert type(event).__name__ == "TreeAggregation"
    plan = model.fit_info_["plans"][0]["plan"]
    assert plan["l2_ftrl_source"].startswith("regret bound") and plan["regret_bound"] > 0
    # The tree is a Gaussian mechanism: the exact accountant applies and the budget is spent.
    assert model.privacy_.by_accountant["gdp"] == pytest.approx(1.0, rel=1e-6)
    assert model.score(X, y) > 0.8


def test_dp_ftrl_under_add_remove_assigns_rows_to_leaves_at_random():
    # Issue 19, item 5: the default relation. Each row goes to one leaf per epoch at random,
    # so an added row changes one leaf (Delta = 1): the tree is accounted under add/remove.
    X, y = _binary()
    model = DPLogisticRegression(epsilon=1.0, method="dp_ftrl", classes=[0, 1],
                                 random_state=0).fit(X, y)
    tree = model.privacy_.event.events[-1]
    assert type(tree).__name__ == "TreeAggregation"
    assert tree.relation.value == "add_remove" and tree.leaves == "random"
    assert tree.restart_every == tree.steps // tree.epochs
    assert model.privacy_.by_accountant["gdp"] == pytest.approx(1.0, rel=1e-6)
    # the mu of the tree is sqrt(E (floor(log2 T_e) + 1)) / z with Delta = 1
    import math

    per_epoch = tree.steps // tree.epochs
    nodes = tree.epochs * (math.floor(math.log2(per_epoch)) + 1)
    assert tree.mu == pytest.approx(math.sqrt(nodes) / tree.noise_multiplier, rel=1e-12)
    # re-accounted by dp_accounting's PLD (independent library): the bridge's add/remove
    # Gaussian has shift 1/z' = mu, and the whole fit (count and tree) spends epsilon 1
    import dp_accounting

    from noisygd.accounting.dp_accounting_bridge import to_dp_accounting
    from noisygd.accounting.gdp import gaussian_mu

    assert to_dp_accounting(tree).noise_multiplier == pytest.approx(1.0 / tree.mu, rel=1e-12)
    acc = dp_accounting.pld.PLDAccountant(dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    acc.compose(dp_accounting.GaussianDpEvent(1.0 / gaussian_mu(model.privacy_.event)))
    assert acc.get_epsilon(model.privacy_.delta) == pytest.approx(1.0, rel=1e-2)
    assert model.score(X, y) > 0.8
    # one tree over several epochs with random leaves is refused (the node count would
    # depend on the leaves drawn)
    with pytest.raises(ValueError, match="restart"):
        DPLogisticRegression(method="dp_ftrl", classes=[0, 1],
                             method_options={"restart_every_epoch": False}).fit(X, y)


def test_random_leaves_are_uniform_and_an_added_row_changes_only_its_own_leaf():
    # The law behind Delta = 1 under add/remove (algorithms.dp_ftrl, leaves="random").
    from scipy import stats

    from noisygd.algorithms.dp_ftrl import _random_leaves
    from noisygd.objectives.glm import LogisticLoss
    from noisygd.oracles.array import ArrayOracle
    from noisygd.oracles.selection import POISSON_BLOCK, PoissonRows, RandomLeaf

    # (1) leaf sizes ~ Multinomial(n, 1/L): Pearson's chi-square with L - 1 degrees of
    # freedom, over 70 000 rows (two Poisson blocks); a correct sampler fails this with
    # probability 1e-3 (the seed is fixed, so the test is deterministic)
    n, L = 70_000, 40
    entropy = PoissonRows.entropy_from(np.random.default_rng(2026))
    sizes = np.bincount(RandomLeaf(L, entropy, 0).assignment(0, n), minlength=L)
    assert sizes.sum() == n and sizes.size == L
    chi2 = float(np.sum((sizes - n / L) ** 2 / (n / L)))
    assert stats.chi2.sf(chi2, L - 1) > 1e-3
    # the leaves partition the rows, and any cut of the rows into pieces (a Dask partition
    # each, crossing a block boundary) resolves the same rows as the whole range
    leaves = [RandomLeaf(L, entropy, t) for t in range(L)]
    whole = [leaf.indices(n) for leaf in leaves]
    assert np.array_equal(np.sort(np.concatenate(whole)), np.arange(n))
    cuts = (0, 123, POISSON_BLOCK - 1, POISSON_BLOCK + 5, n)
    for leaf, rows in zip(leaves[:3], whole[:3], strict=True):
        pieces = [a + leaf.local(a, b) for a, b in itertools.pairwise(cuts)]
        assert np.array_equal(np.concatenate(pieces), rows)
    # (2) D and D + {x} (x appended), the same generator state: in every epoch the leaves
    # agree on D's rows, and x is in exactly one leaf
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(501, 3)), rng.integers(0, 2, 501) * 2.0 - 1
    small = ArrayOracle(LogisticLoss(), X[:500], y[:500], row_norm_bound=5.0)
    big = ArrayOracle(LogisticLoss(), X, y, row_norm_bound=5.0)
    ra, rb = np.random.default_rng(7), np.random.default_rng(7)
    for _epoch in range(3):
        a = [sel.rows for ((_, sel),) in _random_leaves(small, 16, ra)]
        b = [sel.rows for ((_, sel),) in _random_leaves(big, 16, rb)]
        assert [np.array_equal(u, v[v < 500]) for u, v in zip(a, b, strict=True)] == [True] * 16
        assert sum(500 in v for v in b) == 1


def test_langevin_uses_the_last_iterate_accountant():
    X, y = _binary(n=2000)
    model = DPLogisticRegression(epsilon=1.0, method="langevin", neighbouring="replace_one",
                                 l2=0.05, max_iter=300, classes=[0, 1],
                                 random_state=0).fit(X, y)
    assert model.privacy_.accountant == "langevin_last_iterate"
    assert model.privacy_.epsilon <= 1.0 + 1e-9
    plan = model.fit_info_["plans"][0]["plan"]
    # No radius: Lemma 6 does not apply, and the plan says so instead of printing a number.
    assert plan["excess_risk_bound"] is None and "radius" in plan["excess_risk_bound_reason"]
    # The composition baseline (a paper-specific accountant, consulted on request) is looser.
    full = best(model.privacy_.event, model.delta, include_paper=True)
    assert full.by_accountant["langevin_composition"] >= model.privacy_.epsilon
    with pytest.raises(ValueError, match="replace_one"):
        DPLogisticRegression(method="langevin", classes=[0, 1], l2=0.05).fit(X, y)


def test_regressor_with_noisy_sgd():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4000, 3)) / 2
    y = np.clip(X @ np.array([0.5, -0.5, 0.2]), -1, 1)
    model = DPHuberRegressor(method="noisy_sgd", random_state=0).fit(X, y)
    assert model.privacy_.epsilon <= 1.0
    assert model.score(X, y) > 0.5


def test_same_budget_same_event_recomputed():
    """The reported epsilon is what an independent call of `best` gives for the event."""
    X, y = _binary(n=800)
    model = DPLogisticRegression(method="noisy_gd", classes=[0, 1], random_state=0).fit(X, y)
    again = best(model.privacy_.event, model.delta)
    assert again.epsilon == pytest.approx(model.privacy_.epsilon, rel=1e-12)


def test_output_perturbation_method():
    X, y = _binary(n=2000)
    model = DPLogisticRegression(epsilon=1.0, method="output_perturbation", l2=0.1,
                                 neighbouring="replace_one", classes=[0, 1],
                                 random_state=0).fit(X, y)
    assert type(model.privacy_.event).__name__ == "OutputPerturbation"
    assert model.privacy_.epsilon <= 1.0 + 1e-9
    assert model.score(X, y) > 0.8
    with pytest.raises(ValueError, match="clip"):
        DPLogisticRegression(method="output_perturbation", l2=0.1, clip=1.0,
                             neighbouring="replace_one", classes=[0, 1]).fit(X, y)


def test_rrpsgd_method_reports_both_accounts():
    X, y = _binary(n=150)
    model = DPLogisticRegression(epsilon=1.0, delta=1e-3, method="rrpsgd",
                                 neighbouring="replace_one", classes=[0, 1],
                                 random_state=0).fit(X, y)
    assert model.privacy_.epsilon <= 1.0
    info = model.fit_info_["plans"][0]
    # the noise is the tight account's (issue 19): far below Theorem 4's, whose argument
    # (a per-step epsilon <= 1) then cannot bound the event, and says so
    assert info["plan"]["noise_epsilon"] > 1.0
    assert info["paper_argument"] is None and info["paper_argument_omitted"]
    # default horizon: the compute budget min(n^2, 10 n), not n^2, and the plan says it binds
    assert model.n_iter_[0] <= 10 * 150 and info["plan"]["horizon"] == 10 * 150
    assert info["plan"]["compute_budget_binds"] and info["plan"]["paper_horizon"] == 150**2


def test_rrpsgd_at_epsilon_8_omits_the_paper_argument_it_cannot_bound():
    # Issue 10, item 6: at epsilon 8 the per-step epsilon of the paper's argument exceeds 1
    # (Lemma 9 fails), so no paper accountant bounds its event. The fit is valid under the
    # tight account and must not be aborted by the informational report.
    from noisygd.accounting.events import SelfComposed

    X, y = _binary(n=150)
    model = DPLogisticRegression(epsilon=8.0, delta=1e-3, method="rrpsgd",
                                 neighbouring="replace_one", classes=[0, 1],
                                 random_state=0).fit(X, y)
    assert model.privacy_.epsilon <= 8.0 * (1 + 1e-9)
    assert isinstance(model.privacy_.event, SelfComposed)
    plan = model.fit_info_["plans"][0]
    assert plan["paper_argument"] is None
    assert "Lemma 9" in plan["paper_argument_omitted"]


@pytest.mark.parametrize("epsilon", [1.0, 8.0])
def test_langevin_spends_the_whole_budget(epsilon):
    # Issue 10: the last-iterate plan must calibrate sigma to the budget, not leave part of
    # it unspent (the accountant's epsilon is within 0.1% of the target).
    X, y = _binary(n=2000)
    model = DPLogisticRegression(epsilon=epsilon, method="langevin", l2=1e-3,
                                 neighbouring="replace_one", classes=[0, 1],
                                 random_state=0).fit(X, y)
    assert 0.999 * epsilon <= model.privacy_.epsilon <= epsilon * (1 + 1e-9)


def test_noisy_sgd_plans_batch_and_steps_from_public_facts():
    # Issue 10: batch and epochs follow from the sampled Gaussian's trade-off (solver module
    # doc), not the constants 512 / 10: a small set gets more than 10 steps and batches
    # below n, and the batch's sampling noise is at most the privacy noise.
    from noisygd.solvers.noisy_sgd import plan_batch_and_steps

    X, y = _binary(n=400)
    model = DPLogisticRegression(method="noisy_sgd", n_samples_public=400, classes=[0, 1],
                                 random_state=0).fit(X, y)
    plan = model.fit_info_["plans"][0]["plan"]
    assert plan["steps"] > 10 and plan["sampling_rate"] < 1.0
    b, t = plan_batch_and_steps(n=30000, d=100, mu=0.5, clip=1.0, smoothness=0.5,
                                init_distance=100.0)
    assert 1.0 / b <= 100 * t / (30000**2 * 0.5**2) * (1 + 1e-9)  # C^2/b <= d C^2 T/(n mu)^2
    assert (b / 30000) * t**0.5 / 0.5 >= 1.0 - 1e-9  # z ~ q sqrt(T)/mu >= 1
    assert b <= 30000


def test_noisy_sgd_steps_follow_the_accelerated_bound_within_floor_and_cap():
    # T = min(T_max, max(T_min, ceil(T*))), T* the accelerated bound's minimiser
    # (planning.accelerated_t_star): more budget or more rows, more steps.
    from noisygd.planning import MAX_STEPS_ACCELERATED, MIN_STEPS_ACCELERATED, accelerated_t_star
    from noisygd.solvers.noisy_sgd import plan_batch_and_steps

    kw = {"d": 53, "clip": 1.2, "smoothness": 0.38, "init_distance": 117.7}
    prev = 0
    for n, mu in [(455, 0.27), (36168, 0.13), (36168, 0.27), (36168, 0.8), (36168, 3.0),
                  (10**7, 3.0)]:
        b, t = plan_batch_and_steps(n=n, mu=mu, **kw)
        t_star = accelerated_t_star(n=n, mu=mu, n_params=53, clip=1.2, smoothness=0.38,
                                    init_distance=117.7)
        assert t == min(MAX_STEPS_ACCELERATED, max(MIN_STEPS_ACCELERATED, math.ceil(t_star)))
        assert t >= prev and 1 <= b <= n
        prev = t
    assert plan_batch_and_steps(n=36168, mu=0.27, max_steps=50, **kw)[1] == 50


def test_output_perturbation_ridge_from_theorems_2_3():
    # l2=None: the ridge strength minimises B(lambda) = lambda D0^2/2 + beta/2 E||z||^2 over
    # the public grid (solvers.output_perturbation.choose_l2); NoisyGD plans its ridge
    # (planning.ridge_strength); the other methods keep 1e-4.
    import dataclasses

    from noisygd.algorithms.output_perturbation import plan_output_perturbation
    from noisygd.objectives.glm import LogisticLoss
    from noisygd.solvers.output_perturbation import L2_GRID, choose_l2

    c = LogisticLoss().constants(1.0)
    lam, value = choose_l2(c, n=2000, dim=6, epsilon=1.0, delta=1e-5, reference_norm=1.0)

    def bound(lam_):
        plan = plan_output_perturbation(dataclasses.replace(c, strong_convexity=lam_), n=2000,
                                        dim=6, epsilon=1.0, delta=1e-5, noise="analytic",
                                        sensitivity_bound="contraction")
        return 0.5 * lam_ + 0.5 * c.smoothness * plan.expected_sq_noise_norm

    assert value == pytest.approx(bound(lam), rel=1e-12)
    assert all(value <= bound(r * c.smoothness) for r in L2_GRID)
    assert lam > 1e-3  # the former default 1e-4 lets the noise swamp a set of this size
    X, y = _binary(n=2000)
    model = DPLogisticRegression(method="output_perturbation", neighbouring="replace_one",
                                 classes=[0, 1], random_state=0).fit(X, y)
    assert model.l2_ == pytest.approx(lam)
    assert model.privacy_.epsilon <= 1.0 + 1e-9
    default = DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)
    assert default.l2_ == pytest.approx(default.fit_info_["plans"][0]["plan"]["l2_planned"])
    # methods without a planned ridge keep the public constant 1e-4
    assert DPLogisticRegression(method="dynamic", classes=[0, 1],
                                random_state=0).fit(X, y).l2_ == 1e-4


@pytest.mark.parametrize("method", ["langevin", "output_perturbation", "rrpsgd"])
def test_a_replace_one_method_under_add_remove_names_the_argument_to_pass(method):
    # Issue 19, item 5: every method is usable with its defaults or says exactly what to pass
    from noisygd.estimators import DPLinearRegression

    X, y = _binary()
    with pytest.raises(ValueError, match=r"not add_remove: pass neighbouring='replace_one'"):
        DPLogisticRegression(method=method, classes=[0, 1]).fit(X, y)
    with pytest.raises(ValueError, match=r"radius=R .* and neighbouring='replace_one'"):
        DPLinearRegression(method=method).fit(X, y.astype(float))
