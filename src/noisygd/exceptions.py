"""Exceptions and warnings of noisygd."""

from __future__ import annotations

from noisygd.accounting.base import UnsupportedEventError


class PrivacyLeakWarning(UserWarning):
    """A data-dependent step was taken that is neither declared public nor paid for."""


class AssumptionError(ValueError):
    """A theorem's assumption does not hold, so its guarantee cannot be given."""


__all__ = ["AssumptionError", "PrivacyLeakWarning", "UnsupportedEventError"]
