"""ShuffleLoader (noisygd.torch.loader): each epoch a fresh permutation cut into consecutive
batches of ``batch_size`` (the last one shorter), epochs continuing across the step count.

Covers :class:`noisygd.torch.loader.ShuffleLoader`: the batches of every epoch partition the
rows with the documented sizes; the batch holding a row is its position in the epoch's
permutation divided by the batch size (host draws: NumPy's ``permutation`` of ``n``, one per
epoch); the same seed gives the same batches and different epochs differ; ``len``,
``epochs_touched``, the position kept across iterations and ``state_dict`` resume; bad
arguments refused.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from noisygd.mechanisms.secure import SecureRandom  # noqa: E402
from noisygd.torch.loader import ShuffleLoader  # noqa: E402


def _epochs(batches: list, per_epoch: int) -> list[list]:
    return [batches[a:a + per_epoch] for a in range(0, len(batches), per_epoch)]


@pytest.mark.parametrize("n,b", [(10, 3), (12, 4), (7, 7), (5, 1)])
@pytest.mark.parametrize("source", ["torch", "numpy"])
def test_every_epoch_is_a_permutation_cut_into_the_documented_batch_sizes(n, b, source):
    per_epoch = math.ceil(n / b)
    steps = 2 * per_epoch + 1  # two full epochs and the first batch of a third
    gen = (torch.Generator().manual_seed(3) if source == "torch"
           else np.random.default_rng(3))
    loader = ShuffleLoader(n, b, steps, gen)
    assert loader.per_epoch == per_epoch and len(loader) == steps
    batches = list(loader)
    assert len(batches) == steps
    sizes = [b] * (per_epoch - 1) + [n - (per_epoch - 1) * b]
    for epoch in _epochs(batches, per_epoch)[:2]:
        assert [int(x.numel()) for x in epoch] == sizes
        rows = torch.cat(epoch)
        assert rows.dtype == torch.int64 and rows.device.type == "cpu"
        assert sorted(rows.tolist()) == list(range(n))
    third = batches[-1]
    assert third.numel() == min(b, n) and len(set(third.tolist())) == third.numel()


def test_the_batch_holding_a_row_is_its_position_in_numpys_permutation_over_the_batch_size():
    """Host draws: epoch e's order is the e-th ``permutation(n)`` of the generator, and row
    r lies in batch ``pos_e(r) // batch_size`` of that epoch."""
    n, b = 11, 4
    per_epoch = 3
    loader = ShuffleLoader(n, b, 3 * per_epoch, np.random.default_rng(21))
    batches = [x.tolist() for x in loader]
    ref = np.random.default_rng(21)
    for e, epoch in enumerate(_epochs(batches, per_epoch)):
        perm = ref.permutation(n)
        for r in range(n):
            pos = int(np.flatnonzero(perm == r)[0])
            j = pos // b
            assert r in epoch[j], (e, r)
            assert epoch[j].index(r) == pos - j * b
        assert list(itertools.chain(*epoch)) == perm.tolist()


def test_torch_generator_batches_are_a_function_of_the_seed_and_epochs_differ():
    n, b, steps = 20, 6, 12  # four batches an epoch: three epochs

    def run(seed):
        return [x.tolist() for x in ShuffleLoader(n, b, steps, torch.Generator().manual_seed(seed))]

    first = run(5)
    assert first == run(5)
    assert first != run(6)
    epochs = [list(itertools.chain(*e)) for e in _epochs(first, 4)]
    # fixed seed; two independent uniform orders of 20 rows coincide with chance 1/20!
    assert epochs[0] != epochs[1] and epochs[1] != epochs[2] and epochs[0] != epochs[2]
    assert epochs[0] != list(range(n))


def test_secure_random_epochs_are_permutations():
    """A SecureRandom draws one permutation per epoch (not seedable: only the law's support
    is checked)."""
    n, b = 9, 4
    batches = list(ShuffleLoader(n, b, 6, SecureRandom()))
    for epoch in _epochs(batches, 3):
        assert [int(x.numel()) for x in epoch] == [4, 4, 1]
        assert sorted(torch.cat(epoch).tolist()) == list(range(n))


def test_epochs_touched_is_the_ceiling_of_steps_over_batches_per_epoch():
    loader = ShuffleLoader(10, 3, 5, torch.Generator().manual_seed(0))  # 4 batches an epoch
    assert [loader.epochs_touched(s) for s in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]
    # the permutations actually drawn: one per epoch touched
    calls = []

    class Counting:
        def permutation(self, n):
            calls.append(n)
            return np.random.default_rng(len(calls)).permutation(n)

    list(ShuffleLoader(10, 3, 9, Counting()))
    assert calls == [10] * loader.epochs_touched(9)


def test_the_position_is_kept_across_iterations():
    """Breaking off and iterating again continues with the next batch; a finished loader
    yields nothing more."""
    whole = [x.tolist() for x in ShuffleLoader(10, 3, 7, torch.Generator().manual_seed(8))]
    loader = ShuffleLoader(10, 3, 7, torch.Generator().manual_seed(8))
    head = [x.tolist() for x in itertools.islice(iter(loader), 2)]
    assert loader.position == 2
    tail = [x.tolist() for x in loader]
    assert head + tail == whole
    assert list(loader) == [] and loader.position == 7


@pytest.mark.parametrize("cut", [1, 3, 5])
def test_state_dict_resume_gives_the_same_remaining_batches(cut):
    """Position and permutation from ``state_dict`` plus the generator's own state (saved by
    its owner) resume the uninterrupted sequence, mid-epoch or at an epoch boundary."""
    n, b, steps = 10, 4, 8  # three batches an epoch
    whole = [x.tolist() for x in ShuffleLoader(n, b, steps, torch.Generator().manual_seed(1))]
    g = torch.Generator().manual_seed(1)
    first = ShuffleLoader(n, b, steps, g)
    head = [x.tolist() for x in itertools.islice(iter(first), cut)]
    state, g_state = first.state_dict(), g.get_state()
    assert state["position"] == cut
    g2 = torch.Generator()
    g2.set_state(g_state)
    resumed = ShuffleLoader(n, b, steps, g2)
    resumed.load_state_dict(state)
    assert head + [x.tolist() for x in resumed] == whole


@pytest.mark.parametrize("args,exc,match", [
    ((5, 6, 3), ValueError, "batch_size=6 exceeds the 5 examples"),
    ((0, 1, 3), ValueError, "n must be an integer >= 1"),
    ((5, 0, 3), ValueError, "batch_size must be an integer >= 1"),
    ((5, 2.0, 3), TypeError, "batch_size must be an integer"),
    ((5, 2, 0), ValueError, "steps must be an integer >= 1"),
    ((True, 1, 1), TypeError, "n must be an integer"),
])
def test_bad_arguments_are_refused(args, exc, match):
    with pytest.raises(exc, match=match):
        ShuffleLoader(*args, torch.Generator().manual_seed(0))
