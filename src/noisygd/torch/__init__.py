"""noisygd for any ``torch.nn.Module`` (optional extra ``noisygd[torch]``; docs/torch.md).

* :class:`TorchOracle`: clipped per-example gradient sums on the module's device
  (book-keeping ghost norms where they apply, ``torch.func`` elsewhere);
* :class:`PrivateTrainer`: NoisyGD, NoisySGD (Poisson or shuffled), DP-FTRL and dynamic
  NoisyGD for a module and any torch optimiser, with the events, accountants, calibration,
  ledger and ``privacy_`` report of the linear estimators;
* :class:`PoissonLoader`, noise sources (:class:`TorchNoise`, :class:`NumpyNoise`,
  :class:`SecureNoise`).
"""

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
