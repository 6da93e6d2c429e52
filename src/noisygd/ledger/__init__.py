"""The privacy ledger: every release against a named dataset, composed by the accountants.

See :mod:`noisygd.ledger.core` for the semantics (transactions, locking, crash guarantee,
composition) and ``docs/ledger.md`` for a tour. Needs SQLAlchemy 2 (and psycopg 3 for
PostgreSQL).
"""

from __future__ import annotations

from noisygd.ledger.core import (
    BudgetExceededError,
    DatasetBudget,
    Ledger,
    LedgerError,
    Release,
    check_ledger_arguments,
    opened_ledger,
    record_release,
)

__all__ = [
    "BudgetExceededError",
    "DatasetBudget",
    "Ledger",
    "LedgerError",
    "Release",
    "check_ledger_arguments",
    "opened_ledger",
    "record_release",
]
