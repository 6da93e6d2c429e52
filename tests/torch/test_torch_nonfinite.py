"""An example whose per-example gradient is not finite contributes exactly zero to the clipped
sum, on the fused and the torch.func paths (privacy review finding T3: before, C/inf = 0 and
0 * inf = NaN made the sum NaN exactly when that example was in the batch)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from noisygd.torch import PrivateTrainer, TorchOracle  # noqa: E402
from noisygd.torch.per_example import clip_factors, finite_rows, masked_rows  # noqa: E402

C = 1.0


def _exp_loss(out, y):
    """A per-example loss exp(out * y): overflows to inf for a large output."""
    return torch.exp(out[:, 0] * y)


def _shallow():
    """The reviewer's demo: one linear layer; row 2's loss exp(1000) overflows, so its
    output gradient ``b`` is inf."""
    m = nn.Sequential(nn.Linear(2, 1)).double()
    with torch.no_grad():
        m[0].weight.fill_(0.5)
        m[0].bias.fill_(0.0)
    X = np.array([[0.1, 0.2], [0.3, -0.1], [1000.0, 1000.0]])
    return m, X, np.ones(3), _exp_loss


def _deep():
    """Two linear layers; row 2's hidden activation 2e308 overflows, so the second layer's
    input ``a`` is inf (the masking of the recorded inputs, not only of ``b``)."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1)).double()
    with torch.no_grad():
        m[0].weight.fill_(1.0)
    X = np.array([[0.1, 0.2], [0.3, -0.1], [1e308, 1e308]])
    return m, X, np.array([0.1, -0.2, 0.3]), _squared


def _squared(out, t):
    return (out.flatten(1).sum(1) - t) ** 2


def _nan_target():
    """The demo with a NaN target for row 2: its gradient is NaN, not inf."""
    m, X, y, loss = _shallow()
    X[2] = [0.2, 0.1]
    y[2] = np.nan
    return m, X, y, loss


def _sequence():
    """Sequences of 4 positions through Linear, LayerNorm, Linear, NaN target for row 2: the
    fused path's materialised caches (a Linear over positions, LayerNorm's affine
    gradients) are masked too."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(2, 2), nn.LayerNorm(2), nn.Linear(2, 1)).double()
    X = np.random.default_rng(0).normal(size=(3, 4, 2))
    return m, X, np.array([0.5, -0.5, np.nan]), _squared


def _conv(channels, size, out):
    """Conv2d, ReLU, Linear with a NaN target for row 2: each of the convolution's three
    per-example rules (the ghost norm; materialised from unfolded chunks; materialised by a
    batch-grouped convolution), whose sums read only the materialised gradients, not the
    layer's input and output gradient."""
    def case():
        torch.manual_seed(0)
        m = nn.Sequential(nn.Conv2d(channels, out, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(out * size * size, 1)).double()
        X = np.random.default_rng(0).normal(size=(3, channels, size, size))
        return m, X, np.array([0.5, -0.5, np.nan]), _squared
    case.__name__ = f"_conv_{channels}x{size}x{size}"
    return case


CONV_GHOST = _conv(16, 2, 16)  # 4 positions: T (d + p) < d p
CONV_UNFOLDED = _conv(2, 5, 3)  # materialised, fewer than 4 input channels
CONV_GROUPED = _conv(4, 16, 2)  # materialised, 256 positions and 4 input channels


@pytest.mark.parametrize("per_layer", [False, True])
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("case", [_shallow, _deep, _nan_target, _sequence, CONV_GHOST,
                                  CONV_UNFOLDED, CONV_GROUPED])
def test_a_non_finite_example_contributes_zero(case, fused, per_layer):
    m, X, y, loss = case()
    orc = TorchOracle(m, loss, X, y, fused=fused, per_layer=per_layer)
    th = orc.get_flat().cpu().numpy()
    without = orc.clipped_gradient_sum(th, C, rows=np.array([0, 1]))
    sq = orc.per_example_sq_norms(np.array([2]), fused=fused)
    assert not bool(finite_rows(sq)[0])  # the example is indeed non-finite
    with_row = orc.clipped_gradient_sum(th, C, rows=np.array([0, 1, 2]))
    assert orc.fused is fused  # the path under test served the sum
    assert np.all(np.isfinite(with_row))
    assert np.linalg.norm(with_row - without) <= C * (1 + 1e-12)
    np.testing.assert_allclose(with_row, without, rtol=1e-12, atol=0)  # dropped: exactly 0
    orc.close()


def test_clip_factors_zero_every_block_of_a_non_finite_example():
    sq = [torch.tensor([4.0, float("inf"), 0.25]), torch.tensor([0.0, 1.0, float("nan")])]
    for clips in (1.0, [1.0, 1.0]):
        for f in clip_factors(sq, clips):
            assert float(f[1]) == 0.0 and float(f[2]) == 0.0
            assert torch.all(torch.isfinite(f))
    assert float(clip_factors(sq, 1.0)[0][0]) == 0.5  # finite: min(1, C / ||g||)


def test_masked_rows_zeroes_dropped_rows_exactly_and_keeps_indices():
    t = torch.tensor([[1.0, 2.0], [float("inf"), float("nan")], [3.0, -4.0]])
    keep = torch.tensor([True, False, True])
    got = masked_rows(t, keep)
    assert torch.equal(got, torch.tensor([[1.0, 2.0], [0.0, 0.0], [3.0, -4.0]]))
    idx = torch.tensor([[1, 2], [3, 4], [5, 6]])
    assert masked_rows(idx, keep) is idx  # embedding indices: the output gradient is masked


def _fit(X, y, n_public):
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 2)).double()
    trainer = PrivateTrainer(net, torch.optim.SGD(net.parameters(), lr=0.5),
                             nn.CrossEntropyLoss(reduction="none"), method="noisy_gd",
                             noise_multiplier=1.0, clip=C, steps=4, delta=1e-5,
                             n_samples_public=n_public, generator=0)
    trainer.fit(torch.as_tensor(X), torch.as_tensor(y))
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()])


def test_same_seed_same_finite_model_whatever_the_overflowing_example():
    """noisy_gd sums every example each step: with an overflowing example the model is
    finite and the same for the same seed, and the same whichever label that example has
    (its gradient, of opposite signs for the two labels were it finite, contributes exactly
    zero). ``n_samples_public`` is the true count: the trainer refuses any other."""
    g = np.random.default_rng(0)
    X = g.normal(size=(20, 2))
    y = (X[:, 0] > 0).astype(np.int64)
    X_bad = np.vstack([X, [1e308, 1e308]])
    first, again = _fit(X_bad, np.r_[y, 1], 21), _fit(X_bad, np.r_[y, 1], 21)
    assert torch.all(torch.isfinite(first))
    assert torch.equal(first, again)
    torch.testing.assert_close(first, _fit(X_bad, np.r_[y, 0], 21), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="n_samples_public must be the number of examples"):
        _fit(X, y, 21)
