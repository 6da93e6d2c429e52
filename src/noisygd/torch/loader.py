r"""Batch samplers on the device: real Poisson sampling and shuffled fixed-size batches.

:class:`PoissonLoader` draws, at every step, each of the ``n`` examples independently with
probability :math:`\gamma` (``torch.rand(n, dtype=float64) < t`` from an explicit
:class:`torch.Generator`, with :math:`t = \lfloor\gamma 2^{53}\rfloor 2^{-53}`: the uniforms
are multiples of :math:`2^{-53}`, so the inclusion probability is exactly :math:`t`, within
:math:`2^{-53}` below :math:`\gamma` and never above it, which the accounted rate
:math:`\gamma` dominates): batch sizes are Binomial(:math:`n, t`) and a batch may be empty,
which is the sampling the accountant's ``PoissonSampled(gamma, ...)`` event assumes (a
fixed-size batch would not be). :class:`ShuffleLoader` cuts a fresh permutation of the
examples into consecutive batches each epoch (``shuffle_fixed``: accounted without
amplification, under replace-one neighbours).

Both yield index tensors on the generator's device and keep their position in
:meth:`state_dict` (for checkpoint and resume). Given a :class:`numpy.random.Generator` or a
:class:`~noisygd.mechanisms.secure.SecureRandom` instead, they draw on the host exactly as
:func:`noisygd.algorithms.noisy_sgd.noisy_sgd` does and copy the indices to ``device``: a
NumPy generator gives seed material once (before the first batch) and step ``t``'s batch is
the :class:`~noisygd.oracles.selection.PoissonRows` description ``(gamma, entropy, t)``
resolved over the ``n`` rows; a ``SecureRandom`` draws a Binomial size, then a uniform
subset of that size (the same law); a permutation per epoch.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from noisygd._checks import check_fraction, check_positive_int
from noisygd.mechanisms.noise import is_secure
from noisygd.oracles.selection import PoissonRows

Sampler = Any  # torch.Generator, numpy.random.Generator or SecureRandom


def _device(generator: Sampler, device: torch.device | str | None) -> torch.device:
    if isinstance(generator, torch.Generator):
        return generator.device
    return torch.device("cpu" if device is None else device)

__all__ = ["PoissonLoader", "ShuffleLoader"]


class PoissonLoader:
    """Poisson-sampled batches of indices (module doc).

    Parameters
    ----------
    n : int
        Number of examples held (private under add/remove: used only to draw).
    sampling_rate : float
        :math:`\\gamma` in (0, 1].
    steps : int
        Number of batches.
    generator : torch.Generator, numpy.random.Generator or SecureRandom
        The source of the draws; a torch generator draws on its device (module doc).
    device : torch.device or str, optional
        Where host-drawn indices are copied (default cpu).

    Examples
    --------
    >>> import torch
    >>> loader = PoissonLoader(10, 0.5, 3, torch.Generator().manual_seed(0))
    >>> [b.dtype for b in loader] == [torch.int64] * 3
    True
    """

    def __init__(self, n: int, sampling_rate: float, steps: int,
                 generator: Sampler, device: torch.device | str | None = None) -> None:
        self.n = check_positive_int("n", n)
        self.sampling_rate = check_fraction("sampling_rate", sampling_rate)
        self.steps = check_positive_int("steps", steps)
        self.generator = generator
        self.device = _device(generator, device)
        self.position = 0
        #: A NumPy generator's seed material for the Poisson descriptions (drawn at the
        #: first batch, as noisy_sgd draws it before its first step).
        self.entropy: tuple[int, ...] | None = None
        self._threshold = math.floor(self.sampling_rate * 2.0**53) * 2.0**-53

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[torch.Tensor]:
        while self.position < self.steps:
            self.position += 1
            g = self.generator
            if isinstance(g, torch.Generator):
                mask = torch.rand(self.n, generator=g, device=self.device,
                                  dtype=torch.float64) < self._threshold
                yield mask.nonzero().squeeze(1)
                continue
            if is_secure(g):
                k = int(g.binomial(self.n, self.sampling_rate))
                idx = (g.choice(self.n, size=k, replace=False) if k
                       else np.empty(0, dtype=np.int64))
            else:  # noisy_sgd's description of step t (oracles.selection.PoissonRows)
                if self.entropy is None:
                    self.entropy = PoissonRows.entropy_from(g)
                idx = PoissonRows(self.sampling_rate, self.entropy,
                                  self.position - 1).indices(self.n)
            yield torch.as_tensor(np.asarray(idx, dtype=np.int64), device=self.device)

    def state_dict(self) -> dict[str, Any]:
        """Position and the Poisson seed material, if drawn (the generator's state is saved
        by its owner)."""
        return {"position": self.position, "entropy": self.entropy}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.position = int(state["position"])
        entropy = state.get("entropy")
        self.entropy = None if entropy is None else tuple(int(e) for e in entropy)


class ShuffleLoader:
    """Each epoch, a fresh permutation cut into consecutive batches of ``batch_size``.

    Parameters
    ----------
    n : int
        Number of examples (public: replace-one neighbours).
    batch_size : int
    steps : int
        Number of batches (epochs continue across the boundary).
    generator : torch.Generator, numpy.random.Generator or SecureRandom
    device : torch.device or str, optional
        Where host-drawn permutations are copied (default cpu).
    """

    def __init__(self, n: int, batch_size: int, steps: int,
                 generator: Sampler, device: torch.device | str | None = None) -> None:
        self.n = check_positive_int("n", n)
        self.batch_size = check_positive_int("batch_size", batch_size)
        if self.batch_size > self.n:
            raise ValueError(f"batch_size={batch_size} exceeds the {n} examples")
        self.steps = check_positive_int("steps", steps)
        self.generator = generator
        self.device = _device(generator, device)
        self.per_epoch = math.ceil(self.n / self.batch_size)
        self.position = 0
        self._perm: torch.Tensor | None = None

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[torch.Tensor]:
        while self.position < self.steps:
            j = self.position % self.per_epoch
            if j == 0 or self._perm is None:
                g = self.generator
                if isinstance(g, torch.Generator):
                    self._perm = torch.randperm(self.n, generator=g, device=self.device)
                else:
                    self._perm = torch.as_tensor(np.asarray(g.permutation(self.n),
                                                            dtype=np.int64), device=self.device)
            self.position += 1
            yield self._perm[j * self.batch_size:(j + 1) * self.batch_size]

    def epochs_touched(self, steps: int) -> int:
        """Epochs (permutations) that ``steps`` batches draw from."""
        return math.ceil(steps / self.per_epoch)

    def state_dict(self) -> dict[str, Any]:
        """Position and the current permutation."""
        return {"position": self.position, "perm": self._perm}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.position = int(state["position"])
        self._perm = state["perm"]
