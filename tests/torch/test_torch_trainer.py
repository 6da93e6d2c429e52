"""PrivateTrainer and TorchOracle against the NumPy algorithms, events, calibration, loaders,
checkpoints, ledger and refusals."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from scipy import stats  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from torch import nn  # noqa: E402

from _goodness_of_fit import chi2_pvalue  # noqa: E402
from noisygd.accounting.events import (  # noqa: E402
    Gaussian,
    Neighbouring,
    PoissonSampled,
    SelfComposed,
)
from noisygd.accounting.registry import best  # noqa: E402
from noisygd.accounting.tree import TreeAggregation  # noqa: E402
from noisygd.algorithms.dp_ftrl import dp_ftrl  # noqa: E402
from noisygd.algorithms.noisy_gd import noisy_gd  # noqa: E402
from noisygd.algorithms.noisy_sgd import noisy_sgd  # noqa: E402
from noisygd.estimators import DPLogisticRegression  # noqa: E402
from noisygd.mechanisms.secure import SecureRandom  # noqa: E402
from noisygd.mechanisms.tree import TreeAggregator  # noqa: E402
from noisygd.torch import (  # noqa: E402
    NumpyNoise,
    PoissonLoader,
    PrivateTrainer,
    TorchNoise,
    TorchOracle,
)
from noisygd.torch.trainer import REFUSED, _Tree, account  # noqa: E402


def bce(out, target):
    return nn.functional.binary_cross_entropy_with_logits(out.squeeze(1), target,
                                                          reduction="none")


CE = nn.CrossEntropyLoss(reduction="none")


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return X / np.linalg.norm(X, axis=1).max(), y.astype(float)


def _linear(d=30):
    m = nn.Linear(d, 1).double()
    with torch.no_grad():
        m.weight.zero_()
        m.bias.zero_()
    return m


def _theta(m):
    return np.r_[m.weight.detach().numpy().ravel(), m.bias.detach().numpy()]


def _mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))


def _blobs(n=120, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 3
    return torch.randn(n, 5, generator=g) + y[:, None].float(), y


def test_reproduces_dplogisticregression_noisy_gd(cancer):
    """The torch oracle (through the NumPy noisy_gd) and the torch trainer (its own loop, NumPy
    noise) give DPLogisticRegression's NoisyGD model and event for the same seed and data."""
    X, y = cancer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPLogisticRegression(method="noisy_gd", epsilon=1.0, delta=1e-5, random_state=3,
                                   n_samples_public=len(X), classes=[0, 1],
                                   conditioning_share=0).fit(X, y)  # uncentred, as torch
    run = est.fit_info_["plans"][0]
    plan = run["plan"]
    assert est.conditioning_ == {"centre": None, "row_norm_bound": 1.0, "intercept_scale": 1.0,
                                 "feature_scale": None}
    assert run["averaging"] == "last" and run["momentum"] == 0.0
    reference = np.r_[est.coef_, est.intercept_]

    oracle = TorchOracle(_linear(), bce, X, y, l2=plan["l2"])
    res = noisy_gd(oracle, noise_multiplier=run["noise_multiplier"], clip=run["clip"],
                   steps=plan["steps"], learning_rate=run["learning_rate"],
                   n_samples=run["n_samples"], rng=np.random.default_rng(3))
    np.testing.assert_allclose(res.theta, reference, rtol=0, atol=1e-12)
    assert res.event == est.privacy_.event

    m = _linear()
    opt = torch.optim.SGD(m.parameters(), lr=run["learning_rate"] * run["n_samples"],
                          weight_decay=plan["l2"])
    trainer = PrivateTrainer(m, opt, bce, method="noisy_gd",
                             noise_multiplier=run["noise_multiplier"], delta=1e-5,
                             clip=run["clip"], steps=plan["steps"], n_samples_public=len(X),
                             generator=np.random.default_rng(3)).fit(X, y)
    np.testing.assert_allclose(_theta(m), reference, rtol=0, atol=1e-12)
    assert trainer.privacy_.event == est.privacy_.event
    assert trainer.privacy_.epsilon == pytest.approx(est.privacy_.epsilon, rel=1e-12)


def test_poisson_trainer_reproduces_numpy_noisy_sgd(cancer):
    """NumPy generator: the same Poisson batches and noise as ``noisy_sgd`` (expected-batch
    normalisation, SGD), hence the same model, on the torch oracle's device path."""
    X, y = cancer
    kw = dict(noise_multiplier=1.3, clip=0.7, steps=12)
    res = noisy_sgd(TorchOracle(_linear(), bce, X, y), sampling="poisson", batch_size=50,
                    learning_rate=0.4, n_samples=len(X), normalize="expected_batch",
                    rng=np.random.default_rng(5), **kw)
    m = _linear()
    trainer = PrivateTrainer(m, torch.optim.SGD(m.parameters(), lr=0.4), bce, delta=1e-5,
                             batch_size=50, n_samples_public=len(X),
                             generator=np.random.default_rng(5), **kw).fit(X, y)
    np.testing.assert_allclose(_theta(m), res.theta, rtol=0, atol=1e-12)
    assert trainer.privacy_.event == res.event == SelfComposed(
        PoissonSampled(50 / len(X), Gaussian(1.3)), 12)


def test_dp_ftrl_trainer_reproduces_numpy_dp_ftrl(cancer):
    """SGD(lr) on the tree's increments divided by b is DP-FTRL with lambda = b / lr."""
    X, y = cancer
    b, lr = 100, 0.5
    res = dp_ftrl(TorchOracle(_linear(), bce, X, y), noise_multiplier=2.0, clip=1.0,
                  l2_ftrl=b / lr, batch_size=b, epochs=2, output="last",
                  rng=np.random.default_rng(9))
    m = _linear()
    trainer = PrivateTrainer(m, torch.optim.SGD(m.parameters(), lr=lr), bce, method="dp_ftrl",
                             noise_multiplier=2.0, delta=1e-5, batch_size=b, epochs=2,
                             generator=np.random.default_rng(9)).fit(X, y)
    np.testing.assert_allclose(_theta(m), res.theta, rtol=0, atol=1e-10)
    assert trainer.privacy_.event == res.event
    assert isinstance(trainer.privacy_.event, TreeAggregation)


@pytest.mark.parametrize("variant", ["plain", "honaker"])
def test_torch_tree_equals_numpy_tree(variant):
    rng = np.random.default_rng(0)
    g = rng.normal(size=(13, 4))
    ref = TreeAggregator(4, 0.7, variant=variant, rng=np.random.default_rng(1))
    tree = _Tree(0.7, variant, NumpyNoise(np.random.default_rng(1)))
    for row in g:
        np.testing.assert_allclose(tree.add(torch.from_numpy(row)).numpy(), ref.add(row),
                                   rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("method", "extra", "expected"),
    [
        ("noisy_gd", {"steps": 7}, SelfComposed(Gaussian(1.0), 7)),
        ("noisy_sgd", {"steps": 7, "batch_size": 30},
         SelfComposed(PoissonSampled(0.25, Gaussian(1.0)), 7)),
        ("noisy_sgd", {"epochs": 2, "batch_size": 30, "sampling": "shuffle"},
         SelfComposed(Gaussian(1.0, sensitivity=2.0, relation=Neighbouring.REPLACE_ONE), 2)),
        ("dp_ftrl", {"epochs": 2, "batch_size": 30},
         TreeAggregation(noise_multiplier=1.0, steps=8, epochs=2)),
    ],
)
def test_events_of_each_method(method, extra, expected):
    X, y = _blobs()
    net = _mlp()
    trainer = PrivateTrainer(net, torch.optim.Adam(net.parameters(), lr=1e-2), CE,
                             method=method, noise_multiplier=1.0, delta=1e-5,
                             n_samples_public=len(X), generator=0, **extra).fit(X, y)
    assert trainer.privacy_.event == expected
    assert trainer.steps_done_ == trainer.plan_.steps
    assert trainer.privacy_report()["plan"]["method"] == method


@pytest.mark.parametrize("method", ["noisy_sgd", "noisy_gd", "dp_ftrl", "dynamic_noisy_gd"])
def test_epsilon_calibrated_to_target(method):
    X, y = _blobs()
    net = _mlp()
    trainer = PrivateTrainer(net, torch.optim.SGD(net.parameters(), lr=0.1), CE, method=method,
                             epsilon=2.0, delta=1e-5, batch_size=30, epochs=2,
                             n_samples_public=len(X), generator=0).fit(X, y)
    eps = trainer.privacy_.epsilon
    assert 2.0 / 1.01 <= eps <= 2.0 * (1 + 1e-9)
    assert best(trainer.planned_event(), 1e-5).epsilon == pytest.approx(eps)


def test_planned_accounting_is_computed_once_and_copied():
    """Two trainers on one plan get equal reports, each its own copy, equal to ``best``."""
    event = SelfComposed(PoissonSampled(0.2, Gaussian(1.3)), 9)
    a, b = account(event, 1e-5), account(event, 1e-5)
    ref = best(event, 1e-5)
    assert a == b == ref and a is not b and a.by_accountant is not b.by_accountant
    a.by_accountant.clear()
    assert account(event, 1e-5) == ref
    assert account(event, 1e-6).epsilon == best(event, 1e-6).epsilon > ref.epsilon


def test_dynamic_schedule_spends_the_uniform_budget():
    X, y = _blobs()
    net = _mlp()
    trainer = PrivateTrainer(net, torch.optim.SGD(net.parameters(), lr=0.1), CE,
                             method="dynamic_noisy_gd", noise_multiplier=2.0, delta=1e-5,
                             steps=6, n_samples_public=len(X), generator=0).fit(X, y)
    sigmas = np.array([g.noise_multiplier for g in trainer.privacy_.event.events])
    assert np.sum(sigmas ** -2.0) == pytest.approx(6 / 4.0)  # GDP mu of 6 steps at z = 2
    assert np.all(np.diff(sigmas) <= 1e-12)  # exponential: the noise decreases


def test_poisson_loader_samples_binomial_sizes_with_empty_batches():
    """Sizes ~ Binomial(n, gamma): a chi-square goodness-of-fit test at level 1e-3 (fixed seed;
    false failure rate 1e-3), and the empty batches the law gives (P = 0.8^20 per step)."""
    n, gamma, steps = 20, 0.2, 3000
    loader = PoissonLoader(n, gamma, steps, torch.Generator().manual_seed(0))
    sizes = np.array([len(b) for b in loader])
    assert len(sizes) == steps and (sizes == 0).sum() > 0
    counts = np.bincount(sizes, minlength=n + 1)
    probs = stats.binom.pmf(np.arange(n + 1), n, gamma)
    assert chi2_pvalue(counts, probs) > 1e-3  # adjacent cells pooled: each expects >= 5


def test_poisson_loader_thresholds_float64_uniforms():
    # T2: a row is in the batch iff its float64 uniform is below gamma (inclusion probability
    # gamma up to 2^-53). With float32 uniforms (multiples of 2^-24) a rate of 2^-30 would
    # include every row whose draw is 0, with probability 2^-24 = 64 gamma: the batch rule
    # is pinned to the float64 draws of the same generator state
    n, gamma = 5000, 0.3
    (batch,) = PoissonLoader(n, gamma, 1, torch.Generator().manual_seed(11))
    u = torch.rand(n, generator=torch.Generator().manual_seed(11), dtype=torch.float64)
    assert torch.equal(batch, (u < gamma).nonzero().squeeze(1))
    u32 = torch.rand(n, generator=torch.Generator().manual_seed(11))
    assert not torch.equal(batch, (u32 < gamma).nonzero().squeeze(1))


def test_accumulation_gives_the_same_run():
    X, y = _blobs()
    runs = []
    for chunk in (None, 7):
        net = _mlp()
        PrivateTrainer(net, torch.optim.SGD(net.parameters(), lr=0.1), CE, noise_multiplier=1.0,
                       delta=1e-5, batch_size=40, steps=5, n_samples_public=len(X),
                       max_physical_batch_size=chunk, generator=3).fit(X, y)
        runs.append(torch.cat([p.detach().ravel() for p in net.parameters()]))
    torch.testing.assert_close(runs[0], runs[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("method,extra", [("noisy_sgd", {"steps": 9}),
                                          ("noisy_sgd", {"steps": 9, "sampling": "shuffle"}),
                                          ("dp_ftrl", {"epochs": 3})])
def test_checkpoint_resume_equals_uninterrupted_run(tmp_path, method, extra):
    X, y = _blobs()

    def trainer():
        net = _mlp()
        return PrivateTrainer(net, torch.optim.Adam(net.parameters(), lr=0.01), CE,
                              method=method, noise_multiplier=1.0, delta=1e-5, batch_size=40,
                              n_samples_public=len(X), generator=11, **extra)

    whole = trainer().fit(X, y)
    first = trainer().fit(X, y, stop_after=4)
    torch.save(first.state_dict(), tmp_path / "ckpt.pt")
    resumed = trainer()
    resumed.load_state_dict(torch.load(tmp_path / "ckpt.pt", weights_only=False))
    assert resumed.steps_done_ == 4 and resumed.privacy_.event == whole.privacy_.event
    resumed.fit(X, y)
    for a, b in zip(whole.module.parameters(), resumed.module.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


def test_ledger_records_before_reading_and_refuses_over_budget(tmp_path, monkeypatch):
    """The planned event is in the ledger when the examples are first read (the trainer's
    TorchOracle is built on them); a second fit the budget cannot admit is refused before
    any example is read, and records nothing."""
    import noisygd.torch.trainer as trainer_module
    from noisygd.exceptions import BudgetExceededError
    from noisygd.ledger import Ledger

    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        ledger.set_budget("blobs", epsilon=2.2, delta=1e-5)
    seen = []
    real_oracle = trainer_module.TorchOracle

    def watching(*args, **kwargs):  # what the ledger holds when the data is read
        with Ledger(path) as ledger:
            seen.append(ledger.releases("blobs"))
        return real_oracle(*args, **kwargs)

    monkeypatch.setattr(trainer_module, "TorchOracle", watching)
    X, y = _blobs()
    net = _mlp()
    kw = dict(epsilon=2.0, delta=1e-5, batch_size=30, steps=5, n_samples_public=len(X),
              ledger=path, dataset="blobs", generator=0)
    first = PrivateTrainer(net, torch.optim.SGD(net.parameters(), lr=0.1), CE, **kw).fit(X, y)
    ((release,),) = seen
    assert release.id == first.ledger_release_.id
    assert release.event == first.privacy_.event

    class Unreadable:
        def __len__(self):
            return 120

        def __getitem__(self, item):
            raise AssertionError("read")

    with pytest.raises(BudgetExceededError):
        PrivateTrainer(net, torch.optim.SGD(net.parameters(), lr=0.1), CE, **kw).fit(
            Unreadable(), y)
    assert len(seen) == 1  # no oracle was built on the refused fit's data
    with Ledger(path) as ledger:
        assert [r.id for r in ledger.releases("blobs")] == [release.id]


@pytest.mark.parametrize("method", sorted(REFUSED))
def test_methods_needing_convexity_refuse_a_network(method):
    net = _mlp()
    with pytest.raises(ValueError, match="cannot train a network"):
        PrivateTrainer(net, torch.optim.SGD(net.parameters(), lr=0.1), CE, method=method,
                       noise_multiplier=1.0, delta=1e-5, steps=1)


def test_refusals_before_data():
    net = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.Linear(4, 3))
    with pytest.raises(ValueError, match="GroupNorm"):
        PrivateTrainer(net, torch.optim.SGD(net.parameters(), lr=0.1), CE,
                       noise_multiplier=1.0, delta=1e-5, steps=1, batch_size=10)
    X, y = _blobs()
    net = _mlp()
    with pytest.raises(ValueError, match="n_samples_public"):
        PrivateTrainer(net, torch.optim.SGD(net.parameters(), lr=0.1), CE,
                       noise_multiplier=1.0, delta=1e-5, steps=1, batch_size=10).fit(X, y)
    with pytest.raises(TypeError, match="secure=True"):
        PrivateTrainer(net, torch.optim.SGD(net.parameters(), lr=0.1), CE, secure=True,
                       generator=0, noise_multiplier=1.0, delta=1e-5, steps=1, batch_size=10)


def test_secure_mode_wraps_the_event():
    pytest.importorskip("opendp")
    X, y = _blobs(40)
    net = _mlp()
    trainer = PrivateTrainer(net, torch.optim.SGD(net.parameters(), lr=0.1), CE, secure=True,
                             method="noisy_gd", epsilon=4.0, delta=1e-5, steps=2,
                             n_samples_public=len(X), generator=SecureRandom()).fit(X, y)
    assert type(trainer.privacy_.event).__name__ == "DiscreteGaussianNoise"
    assert trainer.privacy_.epsilon <= 4.0 * (1 + 1e-9)


def test_torch_noise_is_seeded_and_on_the_values_device():
    a = TorchNoise(torch.Generator().manual_seed(4)).add_gaussian(torch.zeros(1000), 2.0)
    b = TorchNoise(torch.Generator().manual_seed(4)).add_gaussian(torch.zeros(1000), 2.0)
    torch.testing.assert_close(a, b)
    # sd 2: the sample variance of 1000 draws is within its 1e-4 two-sided chi-square bounds
    lo, hi = stats.chi2.ppf([5e-5, 1 - 5e-5], 999) / 999 * 4.0
    assert lo <= float(a.var()) <= hi


def test_fit_private_runs_a_network_and_the_noisy_gd_plan_refuses_it():
    """The oracle seam: training.fit_private trains a TorchOracle with NoisySGD; NoisyGD's
    planner needs a smoothness or Lipschitz constant that a network does not state."""
    from noisygd.exceptions import AssumptionError
    from noisygd.training import fit_private

    X, y = _blobs()
    oracle = TorchOracle(_mlp(), CE, X, y)
    assert oracle.row_norm_bound is None
    fit = fit_private([oracle], method="noisy_sgd", epsilon=2.0, delta=1e-5, clip=1.0,
                      n_samples_public=len(X), rng=np.random.default_rng(0))
    assert fit.privacy.epsilon <= 2.0 * (1 + 1e-9)
    assert fit.thetas[0].shape == (oracle.n_params,)
    with pytest.raises(AssumptionError, match="smoothness"):
        fit_private([oracle], method="noisy_gd", epsilon=2.0, delta=1e-5, clip=1.0,
                    n_samples_public=len(X), rng=np.random.default_rng(0))


def test_secure_dynamic_schedule_inflation_is_the_largest_steps():
    # T1: a secure release's grid is chosen from its own scale z s_t C, so the event's one
    # inflation factor is the max over the steps (as NumPy's dynamic_noisy_gd), not z C's
    pytest.importorskip("opendp")
    from noisygd.mechanisms.noise import sensitivity_inflation

    X, y = _blobs(40)
    net = _mlp()
    p = sum(w.numel() for w in net.parameters())
    # z C / sqrt(p) just below a power of two: the largest step's scale (shape > 1.01) lies
    # on the next grid, whose inflation is larger
    z = 0.995 * 2.0 ** 20 * math.sqrt(p) / 1.0
    trainer = PrivateTrainer(net, torch.optim.SGD(net.parameters(), lr=0.1), CE, secure=True,
                             method="dynamic_noisy_gd", noise_multiplier=z, delta=1e-5,
                             clip=1.0, steps=6, n_samples_public=len(X),
                             generator=SecureRandom()).fit(X, y)
    plan, event = trainer.plan_, trainer.privacy_.event
    sens = plan.clip  # add/remove: Delta = 1
    assert type(event).__name__ == "DiscreteGaussianNoise" and max(plan.noise_shape) > 1.01
    kappas = [sensitivity_inflation(SecureRandom(), z * s * plan.clip, p, sens)
              for s in plan.noise_shape]
    assert event.sensitivity_inflation == max(kappas)
    assert max(kappas) > sensitivity_inflation(SecureRandom(), z * plan.clip, p, sens)
