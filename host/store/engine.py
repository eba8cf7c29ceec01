"""Opening the permission database: SQLite by default, any SQLAlchemy URL accepted.

SQLite (``<data_dir>/toolhost.db``) runs in WAL mode with a busy timeout and foreign keys on.
The driver's own transaction handling is switched off and every transaction is begun by us:
write transactions with ``BEGIN IMMEDIATE`` (the database write lock is taken at the start, so
two processes never interleave a read-modify-write and no update is lost; the other writer waits
up to the busy timeout), read transactions with a plain ``BEGIN`` (a consistent snapshot, not
blocking writers). Recipe: SQLAlchemy docs, "Serializable isolation / Savepoints / Transactional
DDL" for pysqlite. Other databases (e.g. ``postgresql+psycopg://...``) use their defaults.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event

__all__ = ["BUSY_TIMEOUT_SECONDS", "DB_FILE_NAME", "default_url", "open_engine", "read_tx", "write_tx"]

DB_FILE_NAME = "toolhost.db"
"""File name of the SQLite database inside the data folder."""

BUSY_TIMEOUT_SECONDS = 30.0
"""How long a SQLite writer waits for another writer's lock before failing (seconds)."""

_WRITE = "toolhost_write"


def default_url(data_dir: str | os.PathLike[str]) -> str:
    """``sqlite:///<data_dir>/toolhost.db`` (the folder is created when missing)."""
    path = Path(data_dir)
    path.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(path / DB_FILE_NAME).resolve()}"


def open_engine(url: str, *, echo: bool = False) -> Engine:
    """Create an engine for ``url``; SQLite gets WAL, busy timeout, foreign keys and explicit BEGINs.

    Raises:
        sqlalchemy.exc.ArgumentError: for an unparseable URL.
    """
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            echo=echo,
            connect_args={"timeout": BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
        )
        in_memory = url in ("sqlite://", "sqlite:///:memory:")

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn, _record) -> None:  # pragma: no cover - exercised via every test
            dbapi_conn.isolation_level = None  # we emit BEGIN ourselves
            cur = dbapi_conn.cursor()
            if not in_memory:
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_SECONDS * 1000)}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(_WRITE) else "BEGIN")

        return engine
    return create_engine(url, echo=echo, pool_pre_ping=True)


@contextmanager
def write_tx(engine: Engine) -> Iterator[Connection]:
    """A write transaction (SQLite: ``BEGIN IMMEDIATE``), committed on success, rolled back on error."""
    with engine.connect() as conn:
        conn.execution_options(**{_WRITE: True})
        with conn.begin():
            yield conn


@contextmanager
def read_tx(engine: Engine) -> Iterator[Connection]:
    """A read transaction: one consistent snapshot for several SELECTs."""
    with engine.connect() as conn, conn.begin():
        yield conn
