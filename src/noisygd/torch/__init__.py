"""noisygd for any ``torch.nn.Module`` (optional extra ``noisygd[torch]``; docs/torch.md).

* :class:`TorchOracle`: clipped per-example gradient sums on the module's device
  (book-keeping ghost norms where they apply, ``torch.func`` elsewhere);
* :class:`PrivateTrainer`: NoisyGD, NoisySGD (Poisson or shuffled), DP-FTRL and dynamic
  NoisyGD for a module and any torch optimiser, with the events, accountants, calibration,
  ledger and ``privacy_`` report of the linear estimators;
* :class:`PoissonLoader`, noise sources (:class:`TorchNoise`, :class:`NumpyNoise`,
  :class:`SecureNoise`).
"""

try:
    import torch as _torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("noisygd.torch needs PyTorch: pip install 'noisygd[torch]' "
                      "(torch==2.13.0)") from exc

from noisygd.torch.loader import PoissonLoader, ShuffleLoader
from noisygd.torch.noise import NoiseSource, NumpyNoise, SecureNoise, TorchNoise
from noisygd.torch.oracle import TorchOracle, check_per_example
from noisygd.torch.trainer import METHODS, PrivateTrainer

__all__ = [
    "METHODS",
    "NoiseSource",
    "NumpyNoise",
    "PoissonLoader",
    "PrivateTrainer",
    "SecureNoise",
    "ShuffleLoader",
    "TorchNoise",
    "TorchOracle",
    "check_per_example",
]
