r"""Noise sources: where the Gaussian noise of a torch release is drawn.

Every noisy release of :mod:`noisygd.torch` adds :math:`\mathcal N(0, \sigma^2 I)` to a
tensor through a :class:`NoiseSource`. Three sources exist:

:class:`TorchNoise` (the default)
    ``torch.randn`` from an explicit :class:`torch.Generator` on the tensor's device: the
    noise is drawn where the parameters live, with no host copy. Same generator seed, same
    device and dtype: same draws.
:class:`NumpyNoise`
    ``rng.standard_normal`` from a :class:`numpy.random.Generator`, in float64, in the order
    and with the arithmetic of :func:`noisygd.mechanisms.noise.add_gaussian_noise`: a torch
    run with it reproduces the NumPy algorithms draw for draw (one host-to-device copy of the
    noise per release; for reproduction and tests).
:class:`SecureNoise`
    secure mode: the release is rounded to a power-of-two grid and gets exact discrete
    Gaussian noise from a :class:`~noisygd.mechanisms.secure.SecureRandom` (OpenDP); the
    rounding enlarges the sensitivity by the factor :math:`\kappa = 1 + \gamma\sqrt d/\Delta`
    and :meth:`NoiseSource.wrap_event` wraps the event in
    :class:`~noisygd.accounting.events.DiscreteGaussianNoise`. The values pass through the
    host (the exact sampler runs there).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import torch

from noisygd._checks import check_generator
from noisygd.accounting.events import DpEvent
from noisygd.mechanisms.noise import add_gaussian_noise, secure_event, sensitivity_inflation
from noisygd.mechanisms.secure import SecureRandom

__all__ = ["NoiseSource", "NumpyNoise", "SecureNoise", "TorchNoise", "as_noise_source"]


class NoiseSource(ABC):
    """Adds Gaussian noise to a tensor (module doc)."""

    #: Whether the noise is the secure discrete Gaussian (events are wrapped).
    secure: bool = False

    @abstractmethod
    def add_gaussian(self, values: torch.Tensor, sd: float) -> torch.Tensor:
        r"""``values`` plus :math:`\mathcal N(0, \mathrm{sd}^2 I)`, a new tensor on the same
        device and of the same dtype."""

    def wrap_event(self, event: DpEvent, sd: float, dim: int, sensitivity: float) -> DpEvent:
        """The event of a run that drew its noise here (``event`` itself unless secure).

        Parameters
        ----------
        event : DpEvent
            The event of the run with continuous Gaussian noise.
        sd : float
            The noise scale of each release.
        dim : int
            Coordinates per release.
        sensitivity : float
            L2 sensitivity of one release in the units of ``sd``.
        """
        return event


class TorchNoise(NoiseSource):
    """``torch.randn`` from an explicit :class:`torch.Generator` on the values' device.

    Parameters
    ----------
    generator : torch.Generator
        Must live on the device of the tensors it noises (``torch.Generator(device=...)``).

    Examples
    --------
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> TorchNoise(g).add_gaussian(torch.zeros(3), 1.0).shape
    torch.Size([3])
    """

    def __init__(self, generator: torch.Generator) -> None:
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        self.generator = generator

    def add_gaussian(self, values: torch.Tensor, sd: float) -> torch.Tensor:
        if values.device.type != self.generator.device.type:
            raise ValueError(f"the generator lives on {self.generator.device}, the values on "
                             f"{values.device}: create it with torch.Generator(device=...)")
        noise = torch.randn(values.shape, generator=self.generator, device=values.device,
                            dtype=values.dtype)
        return noise.mul_(sd).add_(values)


class NumpyNoise(NoiseSource):
    """NumPy's ``values + sd * rng.standard_normal(shape)`` in float64 (module doc).

    Parameters
    ----------
    rng : numpy.random.Generator
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = check_generator("rng", rng, secure=False)

    def add_gaussian(self, values: torch.Tensor, sd: float) -> torch.Tensor:
        # 0 + sd * rng.standard_normal(shape): NumPy's draws, through the one NumPy noise site
        draw = torch.from_numpy(add_gaussian_noise(np.zeros(tuple(values.shape)), sd, self.rng))
        return (values.to(torch.float64) + draw.to(values.device)).to(values.dtype)


class SecureNoise(NoiseSource):
    """Discrete Gaussian noise on a grid from a :class:`SecureRandom` (module doc).

    Parameters
    ----------
    rng : SecureRandom, optional
        Default: a new ``SecureRandom()`` (OS entropy).
    """

    secure = True

    def __init__(self, rng: SecureRandom | None = None) -> None:
        self.rng = SecureRandom() if rng is None else rng
        if not isinstance(self.rng, SecureRandom):
            raise TypeError("SecureNoise needs a SecureRandom")

    def add_gaussian(self, values: torch.Tensor, sd: float) -> torch.Tensor:
        host = values.detach().to("cpu", torch.float64).numpy()
        out = torch.from_numpy(np.asarray(add_gaussian_noise(host, sd, self.rng)))
        return out.to(device=values.device, dtype=values.dtype)

    def wrap_event(self, event: DpEvent, sd: float, dim: int, sensitivity: float) -> DpEvent:
        kappa = sensitivity_inflation(self.rng, sd, dim, sensitivity)
        return secure_event(event, self.rng, kappa)


def as_noise_source(source: Any, device: torch.device | str = "cpu") -> NoiseSource:
    """A :class:`NoiseSource` from what a user passes as ``generator``.

    Parameters
    ----------
    source : NoiseSource, torch.Generator, numpy.random.Generator, SecureRandom, int or None
        An int seeds a new ``torch.Generator`` on ``device``; ``None`` seeds one from the OS
        (not reproducible).
    device : torch.device or str
        Where a generator made here lives.
    """
    if isinstance(source, NoiseSource):
        return source
    if isinstance(source, torch.Generator):
        return TorchNoise(source)
    if isinstance(source, SecureRandom):
        return SecureNoise(source)
    if isinstance(source, np.random.Generator):
        return NumpyNoise(source)
    if source is None or (isinstance(source, int | np.integer) and not isinstance(source, bool)):
        gen = torch.Generator(device=device)
        if source is None:
            gen.seed()
        else:
            gen.manual_seed(int(source))
        return TorchNoise(gen)
    raise TypeError("generator must be a torch.Generator, a numpy Generator, a SecureRandom, "
                    f"a NoiseSource, an int seed or None; got {type(source).__name__}")
