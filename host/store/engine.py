"""Opening the permission database: SQLite by default, PostgreSQL for several replicas.

**SQLite** (``<data_dir>/toolhost.db``) runs in WAL mode with a busy timeout and foreign keys on.
The driver's own transaction handling is switched off and every transaction is begun by us:
write transactions with ``BEGIN IMMEDIATE`` (the database write lock is taken at the start, so
two processes never interleave a read-modify-write and no update is lost; the other writer waits
up to the busy timeout), read transactions with a plain ``BEGIN`` (a consistent snapshot, not
blocking writers). Recipe: SQLAlchemy docs, "Serializable isolation / Savepoints / Transactional
DDL" for pysqlite.

**PostgreSQL** (``postgresql://user:password@host:5432/db``; ``postgres://`` and
``postgresql+psycopg://`` are accepted too) goes through psycopg 3 and a connection pool
(:data:`POOL_SIZE` + :data:`POOL_OVERFLOW` connections per process, pre-pinged, recycled after
:data:`POOL_RECYCLE_SECONDS`). The same guarantees as SQLite hold across every replica:

* a write transaction first takes the transaction-scoped advisory lock :data:`WRITE_LOCK_KEY`
  (``pg_advisory_xact_lock``, PostgreSQL docs §9.27.10), so writers of all replicas run one at a
  time, exactly like SQLite's ``BEGIN IMMEDIATE``: a read-modify-write (consume an approval,
  aggregate an auth failure, append to the audit chain) never interleaves with another one;
* a read transaction is ``REPEATABLE READ``: one snapshot for all its SELECTs.

Any other SQLAlchemy URL is passed through with the dialect's defaults (unsupported, untested).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from host.store.errors import InvalidValue

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "CONNECT_TIMEOUT_SECONDS",
    "DB_FILE_NAME",
    "POOL_OVERFLOW",
    "POOL_RECYCLE_SECONDS",
    "POOL_SIZE",
    "POOL_TIMEOUT_SECONDS",
    "WRITE_LOCK_KEY",
    "default_url",
    "normalize_url",
    "open_engine",
    "read_tx",
    "redact_url",
    "write_tx",
]

DB_FILE_NAME = "toolhost.db"
"""File name of the SQLite database inside the data folder."""

BUSY_TIMEOUT_SECONDS = 30.0
"""How long a SQLite writer waits for another writer's lock before failing (seconds)."""

POOL_SIZE = 5
"""PostgreSQL connections each process keeps open (SQLAlchemy ``pool_size``)."""

POOL_OVERFLOW = 10
"""Extra PostgreSQL connections opened under load and closed when returned (``max_overflow``)."""

POOL_TIMEOUT_SECONDS = 30.0
"""How long a request waits for a free pooled connection before failing (seconds)."""

POOL_RECYCLE_SECONDS = 1800
"""Pooled connections older than this are replaced (seconds); survives server-side idle timeouts."""

CONNECT_TIMEOUT_SECONDS = 10
"""How long opening one PostgreSQL connection may take (libpq ``connect_timeout``, seconds)."""

WRITE_LOCK_KEY = 7243000
"""PostgreSQL advisory lock every write transaction holds (all replicas' writers serialize on it)."""

_WRITE = "toolhost_write"


def default_url(data_dir: str | os.PathLike[str]) -> str:
    """``sqlite:///<data_dir>/toolhost.db`` (the folder is created when missing)."""
    path = Path(data_dir)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return f"sqlite:///{(path / DB_FILE_NAME).resolve()}"


def _private_sqlite_files(database: str) -> None:
    """Create the SQLite file 0600 before SQLite does (its -wal/-shm files copy the main file's
    mode) and tighten existing ones: the database holds audit rows and approval arguments."""
    try:
        os.close(os.open(database, os.O_RDWR | os.O_CREAT, 0o600))
    except OSError:
        return  # SQLite reports the real problem on connect
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            st = os.stat(database + suffix)
            if st.st_uid == os.getuid() and st.st_mode & 0o077:
                os.chmod(database + suffix, 0o600)
        except OSError:
            pass


def redact_url(url: str | URL) -> str:
    """``url`` with its password replaced by ``***`` (safe for messages and logs)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable database URL>"


def normalize_url(url: str) -> URL:
    """The SQLAlchemy URL for ``url``: ``postgres://`` and ``postgresql://`` use psycopg 3.

    Raises:
        InvalidValue: an unparseable URL (the message never contains the password).
    """
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise InvalidValue(
            "database URL", "<hidden>",
            "expected e.g. postgresql://user:password@host:5432/toolhost or sqlite:////path/toolhost.db",
        ) from None
    if parsed.drivername in ("postgres", "postgresql"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def open_engine(url: str, *, echo: bool = False) -> Engine:
    """Create an engine for ``url`` (see the module docstring for what each database gets).

    Nothing is connected yet: :func:`host.store.migrations.migrate` is the first to connect.

    Raises:
        InvalidValue: an unparseable URL, or one whose driver is not installed.
    """
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed, echo)
    try:
        if parsed.get_backend_name() == "postgresql":
            return _postgresql_engine(parsed, echo)
        return create_engine(parsed, echo=echo, pool_pre_ping=True)
    except (NoSuchModuleError, ModuleNotFoundError) as e:
        raise InvalidValue(
            "database URL", redact_url(parsed),
            f"no driver for {parsed.drivername!r} ({e}); use postgresql://... (psycopg 3) or sqlite:///...",
        ) from None


def _pragma_until_free(cur: Any, sql: str) -> None:
    """Run ``sql``, retrying while SQLite answers "database is locked" up to the busy timeout.

    Switching a new database to WAL needs an exclusive lock, and SQLite may refuse it at once
    without calling the busy handler when another process is creating or switching the same file
    (replicas starting together on a fresh database: one of four failed to open now and then).
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    pause = 0.005
    while True:
        try:
            cur.execute(sql)
            return
        except sqlite3.OperationalError as e:
            text = str(e).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)  # a connect hook is synchronous; this runs only under that contention
        pause = min(pause * 2, 0.1)


def _sqlite_engine(url: URL, echo: bool) -> Engine:
    engine = create_engine(
        url,
        echo=echo,
        connect_args={"timeout": BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
    )
    in_memory = url.database in (None, "", ":memory:")
    if not in_memory and not str(url.database).startswith("file:"):
        _private_sqlite_files(str(url.database))

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:  # pragma: no cover - exercised via every test
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_SECONDS * 1000)}")
        if not in_memory:
            _pragma_until_free(cur, "PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(_WRITE) else "BEGIN")

    return engine


def _postgresql_engine(url: URL, echo: bool) -> Engine:
    query = dict(url.query)
    query.setdefault("connect_timeout", str(CONNECT_TIMEOUT_SECONDS))
    query.setdefault("application_name", "toolhost")
    return create_engine(
        url.set(query=query),
        echo=echo,
        pool_size=POOL_SIZE,
        max_overflow=POOL_OVERFLOW,
        pool_timeout=POOL_TIMEOUT_SECONDS,
        pool_recycle=POOL_RECYCLE_SECONDS,
        pool_pre_ping=True,
    )


@contextmanager
def write_tx(engine: Engine) -> Iterator[Connection]:
    """A write transaction, committed on success, rolled back on error.

    SQLite: ``BEGIN IMMEDIATE``. PostgreSQL: ``READ COMMITTED`` under the advisory lock
    :data:`WRITE_LOCK_KEY`, taken first, so every statement sees all writes committed before it.
    """
    with engine.connect() as conn:
        conn.execution_options(**{_WRITE: True})
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": WRITE_LOCK_KEY})
            yield conn


@contextmanager
def read_tx(engine: Engine) -> Iterator[Connection]:
    """A read transaction: one consistent snapshot for several SELECTs (PostgreSQL: ``REPEATABLE READ``)."""
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            # psycopg sends it with the BEGIN (no extra round trip); reset when the connection returns to the pool
            conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            yield conn
