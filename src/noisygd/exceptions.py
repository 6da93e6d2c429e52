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
    "UnknownOptionError",
    "UnsupportedEventError",
]


class PrivacyLeakWarning(UserWarning):
    """A data-dependent step was taken that is neither declared public nor paid for."""


class AssumptionError(ValueError):
    """A theorem's assumption does not hold, so its guarantee cannot be given."""


class UnknownOptionError(TypeError, ValueError):
    """A ``method_options`` key the method does not take, refused before anything is recorded or
    read. A ``TypeError``, as an unexpected keyword argument is, and a ``ValueError``, as the
    other refusals of an argument are."""


class UnsupportedEventError(ValueError):
    """Raised by an accountant for an event its theorem cannot bound (it never guesses)."""


class BudgetExceededError(ValueError):
    """A release would spend more privacy budget than is left; it is refused before it runs."""


class DataAccessError(RuntimeError):
    """The data could not be read (a lost worker, a failed store). Like any failure of a fit,
    its ledger records are withdrawn only if it came before the fit's first noise draw, and
    kept after it (:mod:`noisygd.training`, module doc 9; docs/ledger.md, "A fit that
    fails")."""
