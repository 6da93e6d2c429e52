"""Fixtures of the ledger tests: an SQLite file, and a real PostgreSQL server on loopback.

The PostgreSQL server is started once per test session from the server binaries of
Debian's ``postgresql`` package (``initdb`` and ``pg_ctl`` on ``PATH`` or under
``/usr/lib/postgresql/*/bin``; ``make postgres`` installs them): ``initdb`` into a fresh
folder under the system temporary directory, then ``pg_ctl start`` listening on
127.0.0.1 only, on a free port, with its Unix socket in that folder. ``initdb`` refuses
to run as root, so as root the server runs as the ``postgres`` user (else ``nobody``)
through ``runuser``. Authentication is ``trust``, acceptable for a throw-away server
that listens on loopback only. ``fsync=off`` speeds the tests up; it changes nothing a
client-process kill can observe (the server process is never killed). Each test gets its
own database, dropped afterwards.

Tests that need the server skip, with the reason printed (``-ra``), when psycopg is not
installed, the binaries are absent, or the server does not start.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class PostgresServer:
    """A running throw-away server: connect as ``user`` to ``host:port`` (no password)."""

    host: str
    port: int
    user: str

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{self.user}@{self.host}:{self.port}/{database}"


def _find_binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_as_prefix() -> tuple[list[str], int | None, int | None]:
    """Command prefix, uid and gid for running the server (initdb refuses root)."""
    if os.geteuid() != 0:
        return [], None, None
    runuser = shutil.which("runuser")
    if runuser is None:
        pytest.skip("running as root and `runuser` is not available to start PostgreSQL as "
                    "another user (initdb refuses root)")
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return [runuser, "-u", name, "--"], entry.pw_uid, entry.pw_gid
    pytest.skip("running as root and neither a `postgres` nor a `nobody` user exists to run "
                "PostgreSQL (initdb refuses root)")
    raise AssertionError("unreachable")  # pragma: no cover


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server on 127.0.0.1 for the whole session (module docstring)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg 3 is not installed (pip install 'psycopg[binary]>=3.1,<4'); "
                    "PostgreSQL ledger tests skipped")
    initdb, pg_ctl = _find_binary("initdb"), _find_binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL server binaries initdb/pg_ctl not found (install Debian's "
                    "`postgresql` package: `make postgres`); PostgreSQL ledger tests skipped")
    prefix, uid, gid = _run_as_prefix()
    base = tempfile.mkdtemp(prefix="noisygd-pg-")
    data, log = os.path.join(base, "data"), os.path.join(base, "server.log")
    if uid is not None:
        os.chown(base, uid, gid)
    user = "noisygd"
    init = subprocess.run(
        [*prefix, initdb, "-D", data, "-A", "trust", "-U", user, "-E", "UTF8", "--no-sync"],
        capture_output=True, text=True, check=False,
    )
    if init.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"initdb failed, PostgreSQL ledger tests skipped: {init.stderr.strip()}")
    port = _free_port()
    options = (f"-c listen_addresses=127.0.0.1 -p {port} -k {base} -c fsync=off "
               "-c max_connections=50")
    start = subprocess.run(
        [*prefix, pg_ctl, "-D", data, "-l", log, "-w", "-t", "60", "-o", options, "start"],
        capture_output=True, text=True, check=False,
    )
    if start.returncode != 0:
        text = open(log).read() if os.path.exists(log) else ""
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"PostgreSQL did not start, ledger tests skipped: {start.stderr.strip()} "
                    f"{text[-500:]}")
    try:
        yield PostgresServer("127.0.0.1", port, user)
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", data, "-m", "fast", "-w", "stop"],
                       capture_output=True, check=False)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """An SQLAlchemy URL of a fresh, empty database on the session's server."""
    import psycopg

    name = f"ledger_{uuid.uuid4().hex[:16]}"
    admin = dict(host=postgres_server.host, port=postgres_server.port,
                 user=postgres_server.user, dbname="postgres", autocommit=True)
    with psycopg.connect(**admin) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield postgres_server.url(name)
    finally:
        with psycopg.connect(**admin) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def sqlite_path(tmp_path) -> str:
    """A path for a new SQLite ledger file."""
    return str(tmp_path / "ledger.db")


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request) -> str:
    """A new ledger on each backend: an SQLite file path, then a PostgreSQL database URL."""
    if request.param == "sqlite":
        return request.getfixturevalue("sqlite_path")
    return request.getfixturevalue("postgres_url")
