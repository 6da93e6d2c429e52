"""The ledger's storage helpers on SQLite files (no server): ``noisygd.ledger.storage``'s
``make_engine``, ``create_schema``, ``describe_url`` and ``is_postgresql``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

sa = pytest.importorskip("sqlalchemy")
from sqlalchemy.engine import make_url  # noqa: E402
from sqlalchemy.pool import NullPool  # noqa: E402

from noisygd.ledger.storage import (  # noqa: E402
    SCHEMA_VERSION,
    budgets,
    create_schema,
    describe_url,
    is_postgresql,
    ledger_meta,
    make_engine,
    releases,
)

TABLES = {ledger_meta.name, budgets.name, releases.name}


# ---------------------------------------------------------------- describe_url
@pytest.mark.parametrize("password", ["s3cret", "p@ss:w/rd%", "ünï"])
def test_describe_url_hides_the_password(password):
    """The password never appears; user, host, port and database do; the URL is unchanged."""
    url = sa.engine.URL.create("postgresql+psycopg", username="alice", password=password,
                               host="db.example", port=5433, database="ledger")
    text = describe_url(url)
    assert password not in text
    assert "***" in text
    parsed = make_url(text)
    assert (parsed.username, parsed.host, parsed.port, parsed.database) == (
        "alice", "db.example", 5433, "ledger")
    assert parsed.password == "***"
    assert url.password == password  # the URL itself keeps it


def test_describe_url_without_password_is_the_url():
    for text in ("postgresql+psycopg://bob@host:5432/db", "sqlite+pysqlite:////tmp/x/ledger.db"):
        assert describe_url(make_url(text)) == text


# ---------------------------------------------------------------- make_engine
def test_make_engine_from_a_path_is_an_absolute_sqlite_file(tmp_path, monkeypatch):
    """A relative path is resolved against the working folder; no pooling; not PostgreSQL."""
    monkeypatch.chdir(tmp_path)
    engine = make_engine("ledger.db", timeout=1.0)
    try:
        assert engine.url.get_backend_name() == "sqlite"
        assert Path(engine.url.database) == (tmp_path / "ledger.db").resolve()
        assert isinstance(engine.pool, NullPool)
        assert not is_postgresql(engine)
    finally:
        engine.dispose()


def test_make_engine_accepts_path_objects_and_sqlite_urls(sqlite_path):
    for target in (Path(sqlite_path), f"sqlite:///{sqlite_path}"):
        engine = make_engine(target, timeout=1.0)
        try:
            assert Path(engine.url.database).resolve() == Path(sqlite_path).resolve()
        finally:
            engine.dispose()


def test_make_engine_connections_enforce_foreign_keys_durability_and_timeout(sqlite_path):
    """Each connection has foreign keys on, synchronous FULL (2) and the busy timeout."""
    engine = make_engine(sqlite_path, timeout=2.5)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 2500
    finally:
        engine.dispose()


def test_make_engine_write_transactions_take_the_write_lock_first(sqlite_path):
    """A write transaction holds SQLite's write lock from its BEGIN (IMMEDIATE): a second
    writer times out before it reads anything, while a reader still gets in."""
    first = make_engine(sqlite_path, timeout=5.0)
    second = make_engine(sqlite_path, timeout=0.05)
    try:
        with first.connect() as setup, setup.begin():
            setup.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        holder = first.connect().execution_options(noisygd_write=True)
        with holder, holder.begin():
            holder.exec_driver_sql("SELECT 1")  # no write yet: BEGIN IMMEDIATE alone locks
            with second.connect() as reader:
                assert reader.exec_driver_sql("SELECT COUNT(*) FROM t").scalar() == 0
            blocked = second.connect().execution_options(noisygd_write=True)
            with blocked, pytest.raises(sa.exc.OperationalError, match="locked"):
                blocked.begin()
    finally:
        first.dispose()
        second.dispose()


@pytest.mark.parametrize("target", ["", ":memory:", "sqlite://", "sqlite:///:memory:"])
def test_make_engine_refuses_an_in_memory_ledger(target):
    with pytest.raises(ValueError, match="in-memory SQLite ledger would forget"):
        make_engine(target, timeout=1.0)


def test_make_engine_refuses_other_backends_and_bad_urls():
    with pytest.raises(ValueError, match="backend 'mysql' is not supported"):
        make_engine("mysql://u:p@host/db", timeout=1.0)
    with pytest.raises(ValueError, match="not a valid SQLAlchemy URL"):
        make_engine("::not a url://", timeout=1.0)
    with pytest.raises(TypeError, match="file path or an SQLAlchemy URL string, got int"):
        make_engine(42, timeout=1.0)


def test_make_engine_refuses_a_missing_folder_and_a_non_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"ledger folder .* does not exist"):
        make_engine(tmp_path / "absent" / "ledger.db", timeout=1.0)
    (tmp_path / "folder.db").mkdir()
    with pytest.raises(ValueError, match="exists and is not a regular file"):
        make_engine(tmp_path / "folder.db", timeout=1.0)


def test_make_engine_reads_a_bare_postgresql_url_as_psycopg3():
    """``postgresql://`` becomes ``postgresql+psycopg://`` (no connection is made)."""
    pytest.importorskip("psycopg")
    engine = make_engine("postgresql://bob:pw@127.0.0.1:1/db", timeout=1.0)
    try:
        assert engine.url.drivername == "postgresql+psycopg"
        assert is_postgresql(engine)
        assert isinstance(engine.pool, NullPool)
        assert "pw" not in describe_url(engine.url)
    finally:
        engine.dispose()


# ---------------------------------------------------------------- is_postgresql
def test_is_postgresql_is_the_dialect_name():
    """True exactly for the PostgreSQL dialect (a mock engine: no driver, no server)."""
    assert is_postgresql(sa.create_mock_engine("postgresql://", lambda *a, **k: None))
    assert not is_postgresql(sa.create_mock_engine("sqlite://", lambda *a, **k: None))


# ---------------------------------------------------------------- create_schema
def _tables(path: str) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _versions(path: str) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute(
            "SELECT value FROM noisygd_ledger_meta WHERE key = 'schema_version'")]


def test_create_schema_creates_the_tables_and_records_the_version(sqlite_path):
    engine = make_engine(sqlite_path, timeout=1.0)
    try:
        create_schema(engine, timeout=1.0)
        assert TABLES <= _tables(sqlite_path)
        assert _versions(sqlite_path) == [SCHEMA_VERSION]
        create_schema(engine, timeout=1.0)  # idempotent: one version row
        assert _versions(sqlite_path) == [SCHEMA_VERSION]
    finally:
        engine.dispose()


def test_create_schema_tables_enforce_the_budget_foreign_key(sqlite_path):
    """A release of a dataset without a budget row is refused by the database."""
    engine = make_engine(sqlite_path, timeout=1.0)
    row = {"dataset": "nobudget", "created_at": "t", "algorithm": "a", "parameters": "{}",
           "event": "{}", "event_description": "", "relation": "add_remove", "delta": 1e-5,
           "epsilon": 1.0, "accountant": "x", "theorem": "", "spent_epsilon": 1.0,
           "spent_accountant": "x", "noisygd_version": "0"}
    try:
        create_schema(engine, timeout=1.0)
        with engine.connect() as conn, pytest.raises(sa.exc.IntegrityError, match="FOREIGN"):
            with conn.begin():
                conn.execute(sa.insert(releases).values(**row))
    finally:
        engine.dispose()


def test_create_schema_refuses_another_schema_version(sqlite_path):
    engine = make_engine(sqlite_path, timeout=1.0)
    try:
        create_schema(engine, timeout=1.0)
        with sqlite3.connect(sqlite_path) as conn:
            conn.execute("UPDATE noisygd_ledger_meta SET value = '999' "
                         "WHERE key = 'schema_version'")
        with pytest.raises(ValueError, match=f"schema version 999; this noisygd reads version "
                                             f"{SCHEMA_VERSION}"):
            create_schema(engine, timeout=1.0)
    finally:
        engine.dispose()


def test_create_schema_refuses_another_applications_database(tmp_path):
    """An SQLite file with tables but no ledger is left untouched."""
    path = str(tmp_path / "app.db")
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER)")
    engine = make_engine(path, timeout=1.0)
    try:
        with pytest.raises(ValueError, match=r"another application \(it holds 1 table"):
            create_schema(engine, timeout=1.0)
    finally:
        engine.dispose()
    assert _tables(path) == {"customers"}
