"""Tables, engines and locking transactions of the privacy ledger (SQLAlchemy 2 Core).

Two backends are supported and tested: SQLite (a file path, the default) and PostgreSQL
(``postgresql+psycopg://...``; a bare ``postgresql://`` URL is read as psycopg 3). Other
SQLAlchemy dialects are refused: the ledger's safety rests on the locking described below,
which has been checked only on these two.

Locking
-------
Every change is one transaction that first takes a lock, so that concurrent processes
serialise:

* SQLite: ``BEGIN IMMEDIATE`` (the database's write lock, taken before the first read, so
  no other writer can commit between our read of the releases and our insert). Readers
  use a plain deferred ``BEGIN``. Waiting for the lock is bounded by ``timeout`` seconds
  (sqlite3's busy timeout). ``PRAGMA synchronous=FULL``: a commit has reached the disk
  when it returns.
* PostgreSQL: ``SELECT ... FOR UPDATE`` on the dataset's budget row (a per-dataset lock;
  at READ COMMITTED the statements after it see every release committed before the lock
  was granted), bounded by ``SET LOCAL lock_timeout``. Creating the tables takes a
  transaction-scoped advisory lock so that concurrent first uses do not race.

Connections are not pooled (:class:`~sqlalchemy.pool.NullPool`): a ledger may be opened in
forked or spawned workers, and a connection is never shared between processes.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

try:
    import sqlalchemy as sa
    from sqlalchemy import event
    from sqlalchemy.engine import URL, Connection, Engine, make_url
    from sqlalchemy.pool import NullPool
except ImportError as exc:  # pragma: no cover - exercised only without SQLAlchemy
    raise ImportError(
        "noisygd.ledger needs SQLAlchemy 2: pip install 'SQLAlchemy>=2,<3' "
        "(and 'psycopg[binary]>=3.1,<4' for PostgreSQL)"
    ) from exc

__all__ = [
    "SCHEMA_VERSION",
    "budgets",
    "create_schema",
    "describe_url",
    "is_postgresql",
    "ledger_meta",
    "make_engine",
    "metadata",
    "releases",
    "transaction",
]

#: Version of the table layout; a ledger written with another version is refused.
SCHEMA_VERSION = "1"

_SUPPORTED = ("sqlite", "postgresql")
_PG_SCHEMA_LOCK = 0x6E6F69737967  # "noisyg": advisory-lock key for table creation

metadata = sa.MetaData()

ledger_meta = sa.Table(
    "noisygd_ledger_meta",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

budgets = sa.Table(
    "noisygd_budgets",
    metadata,
    sa.Column("dataset", sa.String(255), primary_key=True),
    sa.Column("epsilon", sa.Double, nullable=False),
    sa.Column("delta", sa.Double, nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("updated_at", sa.String(40), nullable=False),
)

releases = sa.Table(
    "noisygd_releases",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "dataset", sa.String(255), sa.ForeignKey("noisygd_budgets.dataset"), nullable=False,
        index=True,
    ),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("algorithm", sa.String(255), nullable=False),
    sa.Column("parameters", sa.Text, nullable=False),
    sa.Column("event", sa.Text, nullable=False),
    sa.Column("event_description", sa.Text, nullable=False),
    sa.Column("relation", sa.String(32), nullable=False),
    sa.Column("delta", sa.Double, nullable=False),
    sa.Column("epsilon", sa.Double, nullable=False),
    sa.Column("accountant", sa.String(64), nullable=False),
    sa.Column("theorem", sa.Text, nullable=False),
    sa.Column("spent_epsilon", sa.Double, nullable=False),
    sa.Column("spent_accountant", sa.String(64), nullable=False),
    sa.Column("noisygd_version", sa.String(40), nullable=False),
    # Set by Ledger.settle: the event first recorded (the reservation) and when it was replaced.
    sa.Column("reserved_event", sa.Text, nullable=True),
    sa.Column("settled_at", sa.String(40), nullable=True),
)


def _to_url(target: str | os.PathLike[str]) -> URL:
    """An SQLAlchemy URL for a path (SQLite) or a URL string."""
    if isinstance(target, os.PathLike) or (isinstance(target, str) and "://" not in target):
        path = Path(target).expanduser()
        if str(target) in ("", ":memory:"):
            raise ValueError("ledger must name a file or a database URL; an in-memory SQLite "
                             "ledger would forget every release")
        return URL.create("sqlite+pysqlite", database=str(path.resolve()))
    if not isinstance(target, str):
        raise TypeError(
            f"ledger must be a file path or an SQLAlchemy URL string, got {type(target).__name__}"
        )
    try:
        url = make_url(target)
    except sa.exc.ArgumentError as exc:
        raise ValueError(f"ledger is not a valid SQLAlchemy URL: {exc}") from None
    backend = url.get_backend_name()
    if backend not in _SUPPORTED:
        raise ValueError(
            f"ledger backend {backend!r} is not supported (supported: SQLite file paths or "
            "sqlite:/// URLs, and postgresql+psycopg:// URLs)"
        )
    if backend == "sqlite" and url.database in (None, "", ":memory:"):
        raise ValueError("ledger must name a file or a database URL; an in-memory SQLite "
                         "ledger would forget every release")
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    return url


def describe_url(url: URL) -> str:
    """The URL with its password hidden (safe to print and to store)."""
    return url.render_as_string(hide_password=True)


def _check_sqlite_file(url: URL) -> None:
    path = Path(str(url.database))
    if not path.parent.is_dir():
        raise FileNotFoundError(f"ledger folder {path.parent} does not exist")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise ValueError(f"ledger {path} exists and is not a regular file")


def make_engine(target: str | os.PathLike[str], *, timeout: float) -> Engine:
    """An engine for ``target`` with the locking of the module docstring.

    Parameters
    ----------
    target : str or path-like
        A file path (SQLite) or an SQLAlchemy URL (``sqlite:///...``,
        ``postgresql+psycopg://...``).
    timeout : float
        Seconds to wait for the ledger's lock before failing.
    """
    url = _to_url(target)
    if url.get_backend_name() == "sqlite":
        _check_sqlite_file(url)
        engine = sa.create_engine(url, poolclass=NullPool, connect_args={"timeout": timeout})
        _install_sqlite_hooks(engine)
    else:
        try:
            engine = sa.create_engine(
                url, poolclass=NullPool, connect_args={"connect_timeout": max(2, int(timeout))}
            )
        except ModuleNotFoundError as exc:
            raise ImportError(
                "a PostgreSQL ledger needs psycopg 3: pip install 'psycopg[binary]>=3.1,<4'"
            ) from exc
    return engine


def _install_sqlite_hooks(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control from sqlite3 (its legacy mode issues BEGIN lazily, after
        # our first read), then enforce foreign keys and durable commits.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute("PRAGMA synchronous = FULL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get("noisygd_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def is_postgresql(engine: Engine) -> bool:
    """Whether ``engine`` talks to PostgreSQL."""
    return engine.dialect.name == "postgresql"


@contextmanager
def transaction(engine: Engine, *, write: bool, timeout: float) -> Iterator[Connection]:
    """One transaction: committed on normal exit, rolled back on any exception.

    With ``write=True`` on SQLite the transaction holds the database's write lock from its
    first statement (``BEGIN IMMEDIATE``); on PostgreSQL the caller locks the rows it
    reads (``FOR UPDATE``) and waiting for them is bounded by ``lock_timeout`` =
    ``timeout`` seconds (SQLite's wait is bounded by the engine's busy timeout).
    """
    with engine.connect() as conn:
        if write:
            conn.execution_options(noisygd_write=True)
        with conn.begin():
            if is_postgresql(engine):
                ms = max(1, int(timeout * 1000))
                conn.exec_driver_sql(f"SET LOCAL lock_timeout = {ms}")
            yield conn


def _refuse_foreign_sqlite(conn: Connection, engine: Engine) -> None:
    """Refuse an SQLite file that holds tables but no ledger: another application's database,
    to which the ledger's tables must not be added (a PostgreSQL database may be shared)."""
    names = set(sa.inspect(conn).get_table_names())
    if names and ledger_meta.name not in names:
        raise ValueError(
            f"ledger {describe_url(engine.url)} is an SQLite database of another application "
            f"(it holds {len(names)} table(s) and no noisygd ledger): give the path of a new "
            "file, or of an existing ledger")


def create_schema(engine: Engine, *, timeout: float) -> None:
    """Create the tables if absent, and check the schema version of an existing ledger.

    Raises
    ------
    ValueError
        If the ledger was written with another schema version, or is an SQLite file holding
        another application's tables.
    """
    with transaction(engine, write=True, timeout=timeout) as conn:
        if is_postgresql(engine):
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_PG_SCHEMA_LOCK)))
        else:
            _refuse_foreign_sqlite(conn, engine)
        metadata.create_all(conn, checkfirst=True)
        found = conn.execute(
            sa.select(ledger_meta.c.value).where(ledger_meta.c.key == "schema_version")
        ).scalar_one_or_none()
        if found is None:
            conn.execute(sa.insert(ledger_meta).values(key="schema_version",
                                                       value=SCHEMA_VERSION))
        elif found != SCHEMA_VERSION:
            raise ValueError(
                f"this ledger has schema version {found}; this noisygd reads version "
                f"{SCHEMA_VERSION}"
            )
