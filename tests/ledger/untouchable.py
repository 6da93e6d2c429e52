"""An array-like whose values must not be read: the ledger tests' proof that a refusal comes
before the data (imported by the test modules of this folder)."""

from __future__ import annotations


class Untouchable:
    """Array-like whose shape is public metadata and whose values must not be read."""

    def __init__(self, shape):
        self.shape = shape

    def __array__(self, *args, **kwargs):
        raise AssertionError("the data was read")

    def __len__(self):
        raise AssertionError("the data was read")

    def __getattr__(self, name):
        raise AssertionError(f"the data was read ({name})")
