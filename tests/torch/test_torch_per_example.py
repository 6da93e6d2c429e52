"""Per-example gradients (torch.func) against batch-size-1 backward passes; fused norms and
clipped sums (book-keeping) against the materialised ones."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from noisygd.torch.fused import fused_plan  # noqa: E402
from noisygd.torch.oracle import TorchOracle, check_per_example  # noqa: E402
from noisygd.torch.per_example import per_example_gradients  # noqa: E402

CE = nn.CrossEntropyLoss(reduction="none")


@pytest.fixture(autouse=True)
def _float64():
    """Every test here in float64 (tolerances of 1e-6 and below), restored afterwards."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


class Pool(nn.Module):
    """Mean over all but the batch and last dims, then a linear head (a classifier)."""

    def __init__(self, body: nn.Module, width: int, classes: int = 3, channels_last=True):
        super().__init__()
        self.body, self.head, self.channels_last = body, nn.Linear(width, classes), channels_last

    def forward(self, x):
        h = self.body(x)
        h = h.flatten(2).mean(2) if not self.channels_last else h.flatten(1, -2).mean(1)
        return self.head(h)


class Block(nn.Module):
    """A pre-norm transformer block from Linear and LayerNorm only (fused path applies)."""

    def __init__(self, vocab=11, d=8, heads=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.head = nn.Linear(d, 3)
        self.heads = heads

    def forward(self, tokens):
        h = self.emb(tokens)
        B, T, d = h.shape
        q, k, v = self.qkv(self.ln1(h)).view(B, T, 3, self.heads, d // self.heads).unbind(2)
        att = torch.softmax(torch.einsum("bthe,bshe->bhts", q, k) / (d // self.heads) ** 0.5,
                            -1)
        h = h + self.proj(torch.einsum("bhts,bshe->bthe", att, v).reshape(B, T, d))
        h = h + self.ff2(torch.relu(self.ff1(self.ln2(h))))
        return self.head(h.mean(1))


def _models():
    g = torch.Generator().manual_seed(1)
    seq = torch.randint(0, 11, (6, 5), generator=g)
    seq[0, :2] = 0  # padding
    seq[1] = 3  # repeated index within an example
    return {
        "linear": (nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)),
                   torch.randn(6, 4, generator=g)),
        "linear_sequence": (Pool(nn.Linear(4, 7), 7), torch.randn(6, 9, 4, generator=g)),
        "linear_sequence_ghost": (Pool(nn.Linear(16, 16), 16), torch.randn(6, 3, 16, generator=g)),
        "conv2d": (Pool(nn.Sequential(nn.Conv2d(2, 4, 3, padding=1, stride=2), nn.ReLU(),
                                      nn.Conv2d(4, 3, 2, dilation=2)), 3,
                        channels_last=False), torch.randn(6, 2, 9, 9, generator=g)),
        # >= 256 output positions: per-example gradients by unfold (2 input channels), then
        # by a batch-grouped convolution (8 input channels)
        "conv2d_grouped": (Pool(nn.Sequential(nn.Conv2d(2, 8, 3, stride=2, padding=2,
                                                        dilation=2), nn.Tanh(),
                                              nn.Conv2d(8, 2, 3, padding=1)), 2,
                                channels_last=False), torch.randn(6, 2, 34, 34, generator=g)),
        "conv2d_ghost": (Pool(nn.Conv2d(16, 16, 3), 16, channels_last=False),
                         torch.randn(6, 16, 4, 4, generator=g)),
        # ghost norm with stride, dilation, padding and a rectangular kernel
        "conv2d_ghost_strided": (Pool(nn.Conv2d(16, 16, (3, 2), stride=(2, 1), padding=(1, 2),
                                                dilation=(1, 2)), 16, channels_last=False),
                                 torch.randn(6, 16, 3, 2, generator=g)),
        "embedding": (Pool(nn.Embedding(11, 4, padding_idx=0), 4), seq),
        "layernorm": (Pool(nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6)), 6),
                      torch.randn(6, 5, 4, generator=g)),
        "groupnorm": (Pool(nn.Sequential(nn.Conv2d(2, 6, 3), nn.GroupNorm(3, 6)), 6,
                           channels_last=False), torch.randn(6, 2, 6, 6, generator=g)),
        "transformer_block": (Block(), seq),
        "torch_transformer_layer": (Pool(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                                    batch_first=True), 8),
                                    torch.randn(6, 5, 8, generator=g)),
    }


MODELS = ["conv2d", "conv2d_ghost", "conv2d_ghost_strided", "conv2d_grouped", "embedding",
          "groupnorm", "layernorm", "linear", "linear_sequence", "linear_sequence_ghost",
          "torch_transformer_layer", "transformer_block"]


def _setup(name):
    torch.manual_seed(0)
    model, x = _models()[name]
    y = torch.arange(x.shape[0]) % 3
    return model, x, y


def _reference(model, x, y):
    """Per-example gradients by one backward pass per example (batch size 1)."""
    params = [p for p in model.parameters() if p.requires_grad]
    rows = []
    for i in range(x.shape[0]):
        loss = CE(model(x[i:i + 1]), y[i:i + 1]).sum()
        rows.append(torch.autograd.grad(loss, params, allow_unused=True, materialize_grads=True))
    return [torch.stack([r[k] for r in rows]) for k in range(len(params))]


@pytest.mark.parametrize("name", MODELS)
def test_per_example_gradients_equal_batch_size_one(name):
    model, x, y = _setup(name)
    names = [k for k, p in model.named_parameters() if p.requires_grad]
    got = per_example_gradients(model, CE, x, y, names)
    for g, ref in zip(got, _reference(model, x, y), strict=True):
        assert g.shape == ref.shape
        torch.testing.assert_close(g, ref, atol=1e-6, rtol=0)


FUSED = [m for m in MODELS if m != "torch_transformer_layer"]


@pytest.mark.parametrize("name", FUSED)
def test_fused_norms_equal_materialised(name):
    model, x, y = _setup(name)
    oracle = TorchOracle(model, CE, x, y)
    assert oracle.fused
    fused = oracle.per_example_sq_norms(fused=True)
    materialised = oracle.per_example_sq_norms(fused=False)
    for a, b in zip(fused, materialised, strict=True):
        torch.testing.assert_close(a, b, atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("name", FUSED)
@pytest.mark.parametrize("per_layer", [False, True])
def test_fused_clipped_sum_equals_torch_func(name, per_layer):
    model, x, y = _setup(name)
    fused = TorchOracle(model, CE, x, y, per_layer=per_layer)
    plain = TorchOracle(model, CE, x, y, per_layer=per_layer, fused=False)
    rows = torch.tensor([5, 0, 2, 2])
    # a clip below most norms, so that the factors matter
    norms = torch.stack(plain.per_example_sq_norms()).sum(0).sqrt()
    clip = float(norms.median())
    a, la = fused.clipped_sum(rows, clip)
    b, lb = plain.clipped_sum(rows, clip)
    torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-9)
    torch.testing.assert_close(la, lb)


def test_clipped_sum_clips_each_example():
    model, x, y = _setup("linear")
    oracle = TorchOracle(model, CE, x, y, fused=False)
    per = per_example_gradients(model, CE, x, y, oracle.parameter_names)
    flat = torch.cat([g.flatten(1) for g in per], 1)
    clip = 0.3
    expected = (flat * torch.clamp(clip / flat.norm(dim=1), max=1.0)[:, None]).sum(0)
    torch.testing.assert_close(oracle.clipped_sum(None, clip)[0], expected)
    assert float(oracle.clipped_sum(torch.tensor([3]), clip)[0].norm()) <= clip * (1 + 1e-12)


def test_per_layer_clipping_bounds_each_tensor_and_the_total():
    model, x, y = _setup("linear")
    weights = [1.0, 2.0, 1.0, 3.0]
    oracle = TorchOracle(model, CE, x, y, per_layer=weights)
    clip = 0.05
    clips = oracle.clips(clip)
    assert sum(c * c for c in clips) == pytest.approx(clip * clip)
    for i in range(x.shape[0]):
        parts = oracle.split(oracle.clipped_sum(torch.tensor([i]), clip)[0])
        for part, c in zip(parts, clips, strict=True):
            assert float(part.norm()) <= c * (1 + 1e-12)
            assert float(part.norm()) == pytest.approx(c)  # every norm here exceeds its clip


def test_fused_chosen_automatically():
    model, x, y = _setup("torch_transformer_layer")
    assert not TorchOracle(model, CE, x, y).fused  # MultiheadAttention: torch.func
    with pytest.raises(ValueError, match="fused=True"):
        TorchOracle(model, CE, x, y, fused=True)
    grouped = nn.Sequential(nn.Conv2d(2, 2, 3, groups=2), nn.Flatten(), nn.Linear(8, 3))
    assert fused_plan(grouped, [k for k, _ in grouped.named_parameters()]) is None


def test_layer_called_twice_falls_back_to_torch_func():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(torch.tanh(self.lin(x)))

    torch.manual_seed(0)
    model, x, y = Twice(), torch.randn(5, 3), torch.tensor([0, 1, 2, 0, 1])
    fused = TorchOracle(model, CE, x, y)
    assert fused.fused  # the plan applies; this forward pass calls `lin` twice
    plain = TorchOracle(model, CE, x, y, fused=False)
    torch.testing.assert_close(fused.clipped_sum(None, 0.1)[0], plain.clipped_sum(None, 0.1)[0])


def test_in_place_activation_falls_back_to_torch_func():
    """ReLU(inplace=True) overwrites a recorded output: the fused norms would be wrong, so the
    version counters send this forward pass to torch.func."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(inplace=True), nn.Linear(8, 3))
    x, y = torch.randn(20, 5), torch.arange(20) % 3
    fused = TorchOracle(model, CE, x, y)
    plain = TorchOracle(model, CE, x, y, fused=False)
    torch.testing.assert_close(fused.clipped_sum(None, 0.1)[0], plain.clipped_sum(None, 0.1)[0])


def test_batch_mixing_module_detected_and_served_by_torch_func():
    """A module whose output for one example depends on the others (here: centring over the
    batch, with sequence-first activations for the linear layer) fails the first-batch check."""

    class Mixing(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)

        def forward(self, x):
            return self.lin(x - x.mean(0, keepdim=True))

    torch.manual_seed(0)
    x, y = torch.randn(8, 4), torch.arange(8) % 3
    oracle = TorchOracle(Mixing(), CE, x, y)
    assert oracle.fused
    with pytest.warns(RuntimeWarning, match="disagree"):
        oracle.clipped_sum(None, 0.5)
    assert not oracle.fused


def test_mixing_beyond_the_first_examples_or_by_position_is_detected():
    """T3: a module that mixes example i with example i - 4 only (invisible to a check on four
    examples, each alone or together), and one that mixes neighbours by batch position,
    fail the first-batch check: eight examples, their batch-mates permuted and replaced."""

    class Shifted(nn.Module):
        def __init__(self, lag):
            super().__init__()
            self.lin, self.lag = nn.Linear(4, 3), lag

        def forward(self, x):
            mixed = x.clone()
            mixed[self.lag:] = x[self.lag:] + x[:-self.lag]
            return self.lin(mixed)

    torch.manual_seed(0)
    x, y = torch.randn(16, 4), torch.arange(16) % 3
    for lag in (4, 1):
        oracle = TorchOracle(Shifted(lag), CE, x, y)
        assert oracle.fused
        with pytest.warns(RuntimeWarning, match="disagree"):
            oracle.clipped_sum(None, 0.5)
        assert not oracle.fused
    # a module that does not mix passes (no warning) and keeps the fused path
    plain = TorchOracle(nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)), CE, x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        plain.clipped_sum(None, 0.5)
    assert plain.fused


def test_batchnorm_in_training_mode_refused_with_groupnorm_named():
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.Flatten())
    with pytest.raises(ValueError, match=r"'1' is BatchNorm2d.*GroupNorm\(num_groups, 4\)"):
        check_per_example(model)
    with pytest.raises(ValueError, match="GroupNorm"):
        TorchOracle(model, CE, torch.randn(2, 1, 5, 5), torch.tensor([0, 1]))
    model.eval()
    check_per_example(model)  # frozen statistics: per-example


def test_loss_must_be_per_example():
    model, x, y = _setup("linear")
    oracle = TorchOracle(model, nn.CrossEntropyLoss(), x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused, not sent to torch.func with a warning
        with pytest.raises(ValueError, match="reduction='none'"):
            oracle.clipped_sum(None, 1.0)


class Siamese(nn.Module):
    """Two views of every example on the batch axis of one Linear (contrastive style)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 3)

    def forward(self, x):
        h = self.enc(torch.cat([x, -x]))
        return h[:x.shape[0]] - h[x.shape[0]:]


class Tied(nn.Module):
    """An embedding whose weight is also the decoder's (tied weights)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(7, 4)
        self.dec = nn.Linear(4, 7, bias=False)
        self.dec.weight = self.emb.weight

    def forward(self, tokens):
        return self.dec(self.emb(tokens).mean(1))


def _clipped_reference(per, clip):
    """The clipped sum of per-example gradients (a list of (B, ...) tensors), flat."""
    flat = torch.cat([g.flatten(1) for g in per], 1)
    return (flat * torch.clamp(clip / flat.norm(dim=1), max=1.0)[:, None]).sum(0)


@pytest.mark.parametrize("first", [1, 5])
def test_views_on_the_batch_axis_are_clipped_per_example(first):
    """T1: a module with two rows per example on a covered layer's batch axis is not served
    by per-row (per-view) norms, whose clipped contribution per example could reach 2C:
    the plan declines it, and each example's contribution to the clipped sum is at most C,
    from a first batch of one example or of several."""
    torch.manual_seed(0)
    model = Siamese()
    x, y = 10 * torch.randn(6, 4), 10 * torch.randn(6, 3)
    mse = lambda out, t: ((out - t) ** 2).sum(1)  # noqa: E731
    names = [k for k, _ in model.named_parameters()]
    assert fused_plan(model, names).sq_norms(model, mse, x, y) is None
    oracle = TorchOracle(model, mse, x, y)
    clip = 1.0
    rows = torch.arange(first)
    got = oracle.clipped_sum(rows, clip)[0]  # the first batch
    assert not oracle.fused
    ref = _clipped_reference(per_example_gradients(model, mse, x[rows], y[rows], names), clip)
    torch.testing.assert_close(got, ref, atol=1e-10, rtol=1e-10)
    for i in range(first):  # the sensitivity: removing example i moves the sum by <= C
        rest = rows[rows != i]
        without = oracle.clipped_sum(rest, clip)[0]
        assert float((got - without).norm()) <= clip * (1 + 1e-9)
    if first == 1:  # per-view clipping gave 1.98 here (review demo torch_siamese.py)
        assert float(got.norm()) == pytest.approx(clip)


@pytest.mark.parametrize("n", [1, 6])
def test_tied_weights_take_the_exact_path(n):
    """T2: a parameter shared by two modules would be counted under one only by the plan:
    refused, and the clipped sum equals the one from batch-size-1 backward passes."""
    torch.manual_seed(0)
    model = Tied()
    x, y = torch.randint(0, 7, (n, 5)), torch.arange(n) % 7
    names = [k for k, _ in model.named_parameters()]
    assert fused_plan(model, names) is None
    oracle = TorchOracle(model, CE, x, y)
    assert not oracle.fused
    ref = _reference(model, x, y)
    for g, r in zip(per_example_gradients(model, CE, x, y, names), ref, strict=True):
        torch.testing.assert_close(g, r, atol=1e-12, rtol=0)
    clip = 0.5 * float(_clipped_reference(ref, float("inf")).norm()) / n
    torch.testing.assert_close(oracle.clipped_sum(None, clip)[0], _clipped_reference(ref, clip),
                               atol=1e-12, rtol=1e-10)


def test_first_batch_of_one_example_is_checked_and_the_check_repeats():
    """A first batch of one example is checked against its own backward pass (exact for one
    example) and cannot show mixing: the check runs again on the next batch, which catches a
    batch-mixing module."""

    class Mixing(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)

        def forward(self, x):
            return self.lin(x - 0.5 * x.mean(0, keepdim=True))

    torch.manual_seed(0)
    x, y = torch.randn(8, 4), torch.arange(8) % 3
    model = Mixing()
    oracle = TorchOracle(model, CE, x, y)
    one = torch.tensor([2])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = oracle.clipped_sum(one, 0.1)[0]
    assert oracle.fused
    ref = _clipped_reference(per_example_gradients(model, CE, x[one], y[one],
                                                   oracle.parameter_names), 0.1)
    torch.testing.assert_close(got, ref, atol=1e-12, rtol=1e-10)
    with pytest.warns(RuntimeWarning, match="disagree"):
        oracle.clipped_sum(None, 0.1)
    assert not oracle.fused


def test_check_treats_a_shape_mismatch_as_disagreement():
    from noisygd.torch.oracle import _agree

    assert not _agree([torch.ones(2)], [torch.ones(3)])
    assert not _agree([torch.ones(2)], [torch.ones(2), torch.ones(2)])
    assert _agree([torch.ones(2)], [torch.ones(2) * (1 + 1e-6)])


def test_convolutional_batches_are_gathered_channels_last_with_the_same_values():
    """The fused oracle of a network with a Conv2d copies each batch of images of 16x16 pixels
    or more channels-last (faster CPU kernels): the same examples and values, the stored
    examples left as given; smaller images, a network without a convolution, or the
    torch.func path get the batch as stored."""
    model, x, y = _setup("conv2d_grouped")
    oracle = TorchOracle(model, CE, x, y)
    rows = torch.tensor([4, 1, 1])
    xb, yb = oracle._batch(rows)
    assert xb.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(xb, x[rows]) and torch.equal(yb, y[rows])
    assert oracle.X.is_contiguous()
    assert torch.equal(oracle._batch(None)[0], x)
    plain = TorchOracle(model, CE, x, y, fused=False)
    assert plain._batch(rows)[0].is_contiguous()
    mlp, xm, ym = _setup("linear")
    assert TorchOracle(mlp, CE, xm, ym)._batch(rows)[0].is_contiguous()
    small, xs, ys = _setup("conv2d")  # 9x9 images: below the channels-last threshold
    assert TorchOracle(small, CE, xs, ys)._batch(rows)[0].is_contiguous()


def test_convolutional_batches_padded_to_a_bucket_give_the_exact_sum():
    """On CPU the fused path pads a convolutional network's batches of small images (below
    16x16 pixels) to a multiple of 8 rows with copies of the first example at factor 0: the
    clipped sum and the loss equal the unpadded torch.func ones; a batch of one real example
    (padded to 8 copies) does not pass the fused path's check, which needs two distinct
    examples. Larger images (channels-last) are not padded."""
    model, x, y = _setup("conv2d")
    fused = TorchOracle(model, CE, x, y)
    plain = TorchOracle(model, CE, x, y, fused=False)
    rows = torch.tensor([5, 0, 2, 2, 3])
    padded, n_real = fused._padded(rows)
    assert n_real == 5 and padded.tolist() == [5, 0, 2, 2, 3, 5, 5, 5]
    assert plain._padded(rows) == (rows, None)
    lone = TorchOracle(model, CE, x, y)
    lone.clipped_sum(torch.tensor([4]), 0.1)
    assert lone.fused and not lone._checked
    norms = torch.stack(plain.per_example_sq_norms()).sum(0).sqrt()
    clip = float(norms.median())
    for idx in (rows, torch.tensor([4]), torch.arange(6)):
        a, la = fused.clipped_sum(idx, clip)
        b, lb = plain.clipped_sum(idx, clip)
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-9)
        torch.testing.assert_close(la, lb)
    mlp, xm, ym = _setup("linear")
    assert TorchOracle(mlp, CE, xm, ym)._padded(rows) == (rows, None)
    big, xb, yb = _setup("conv2d_grouped")  # 34x34 images: channels-last, not padded
    assert TorchOracle(big, CE, xb, yb)._padded(rows) == (rows, None)
