"""The torch tests run single-threaded: CI's 2 shared cores make OpenMP's thread
synchronisation, not the arithmetic, the cost of small tensors."""

from __future__ import annotations

try:
    import torch
except ImportError:  # the tests skip themselves (pytest.importorskip)
    torch = None

if torch is not None:
    torch.set_num_threads(1)
