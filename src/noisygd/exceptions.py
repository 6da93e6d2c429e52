"""Exceptions and warnings of noisygd (this module imports nothing of noisygd).

Every layer may raise these, so they live below all of them: :mod:`noisygd.accounting`
imports :class:`UnsupportedEventError` from here (and re-exports it from
:mod:`noisygd.accounting.base`), never the other way round.
"""

from __future__ import annotations

__all__ = [
    "AssumptionError",
    "BudgetExceededError",
    "DataAccessError",
    "PrivacyLeakWarning",
    "UnsupportedEventError",
]


class PrivacyLeakWarning(UserWarning):
    """A data-dependent step was taken that is neither declared public nor paid for."""


class AssumptionError(ValueError):
    """A theorem's assumption does not hold, so its guarantee cannot be given."""


class UnsupportedEventError(ValueError):
    """Raised by an accountant for an event its theorem cannot bound (it never guesses)."""


class BudgetExceededError(ValueError):
    """A release would spend more privacy budget than is left; it is refused before it runs."""


class DataAccessError(RuntimeError):
    """The data could not be read (a lost worker, a failed store): the failure is decided by
    the environment, not by any noisy value, so a fit that raises it released nothing
    (:mod:`noisygd.training`, "Failures": its ledger records are withdrawn)."""
