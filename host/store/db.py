"""The :class:`Store`: one database handle plus the revision counter every repository bumps."""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, String, Table, select, update
from sqlalchemy.exc import DBAPIError

from host.store import schema as s
from host.store.audit_sqlite import SqliteAuditAppender
from host.store.engine import default_url, open_engine, read_tx, redact_url, write_tx
from host.store.errors import DatabaseUnavailable, InvalidValue
from host.store.migrations import db_error_line, migrate
from host.store.revision import PostgresRevisionReader

__all__ = ["NAME_RE", "Store", "bump_revision", "check_name", "fit_row"]

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
"""User and role names: ASCII letters, digits, ``. _ @ -``, 1-64 characters, starting alphanumeric."""


def check_name(kind: str, name: str) -> str:
    """Return ``name`` when it matches :data:`NAME_RE`.

    Raises:
        InvalidValue: naming the field and the accepted characters.
    """
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InvalidValue(f"{kind} name", name, "use 1-64 ASCII letters, digits, '.', '_', '@' or '-'")
    return name


def bump_revision(conn: Connection) -> None:
    """Increase ``meta.revision`` inside the caller's write transaction (access changed)."""
    conn.execute(update(s.meta).where(s.meta.c.key == "revision").values(value=s.meta.c.value + 1))


def fit_row(table: Table, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with every string cut to its column's declared length (``String(n)``).

    SQLite ignores declared lengths while PostgreSQL refuses longer values; rows built from
    client input (audit rows name whatever tool a client asked for) are fitted so no backend
    loses them. A cut value ends with ``…``.
    """
    lengths = _LENGTHS.get(table)
    if lengths is None:
        lengths = _LENGTHS[table] = {
            c.name: c.type.length for c in table.columns if isinstance(c.type, String) and c.type.length is not None
        }
    out = dict(values)
    for name, value in values.items():
        length = lengths.get(name)
        if length is not None and isinstance(value, str) and len(value) > length:
            out[name] = value[: length - 1] + "…"
    return out


_LENGTHS: dict[Table, dict[str, int]] = {}
"""Declared ``String(n)`` lengths per table, by column name (read once: looking them up per row
was a measurable part of an audit write, issue 12)."""


class Store:
    """The permission database.

    Use :meth:`open` (migrates) rather than the constructor. Repositories live in sibling modules
    and take the store: :class:`~host.store.users.Users`, ``Roles``, ``Grants``,
    :class:`~host.store.keys.ApiKeys`, :class:`~host.store.approvals.Approvals`,
    :class:`~host.store.pins.Pins`, :class:`~host.store.audit.AuditLog`.

    Attributes:
        engine: the SQLAlchemy engine.
        url: the database URL as given (may contain a password: never log it; use :attr:`safe_url`).
        safe_url: the URL with its password hidden.
    """

    def __init__(self, engine: Engine, url: str) -> None:
        self.engine = engine
        self.url = url
        self.safe_url = redact_url(url)
        self._rev_lock = threading.Lock()
        self._rev_conn: sqlite3.Connection | None = None
        self._rev_pg: PostgresRevisionReader | None = None
        self._audit_appender: SqliteAuditAppender | None = None
        db = engine.url.database
        if engine.dialect.name == "sqlite" and db and db != ":memory:" and not db.startswith("file:"):
            self._audit_appender = SqliteAuditAppender(db)
        if engine.dialect.name == "sqlite" and db and db != ":memory:":
            # A dedicated autocommit connection: reading one integer costs ~3 µs instead of ~90 µs
            # through the pool, so the revision can be checked on every policy evaluation.
            self._rev_conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False, timeout=30.0)
        elif engine.dialect.name == "postgresql":
            self._rev_pg = PostgresRevisionReader(engine)

    @classmethod
    def open(cls, url: str | None = None, *, data_dir: str | os.PathLike[str] | None = None) -> Store:
        """Open (and migrate) the database at ``url``, default ``sqlite:///<data_dir>/toolhost.db``.

        ``data_dir`` resolves like every toolhost command (:func:`host.paths.data_dir`).
        """
        if url is None:
            from host.paths import data_dir as resolve

            url = default_url(resolve(data_dir))
        engine = open_engine(url)
        try:
            with engine.connect():
                pass
        except DBAPIError as e:
            engine.dispose()
            raise DatabaseUnavailable(redact_url(url), db_error_line(e)) from None
        try:
            migrate(engine)
        except BaseException:
            engine.dispose()
            raise
        return cls(engine, url)

    @property
    def audit_appender(self) -> SqliteAuditAppender | None:
        """The plain-``sqlite3`` audit appender of a SQLite file database (``None`` otherwise);
        see :mod:`host.store.audit_sqlite`."""
        return self._audit_appender

    def close(self) -> None:
        """Dispose of pooled connections."""
        if self._audit_appender is not None:
            self._audit_appender.close()
        if self._rev_conn is not None:
            self._rev_conn.close()
            self._rev_conn = None
        if self._rev_pg is not None:
            self._rev_pg.close()
        self.engine.dispose()

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction (SQLite: ``BEGIN IMMEDIATE``, so concurrent writers never lose updates)."""
        with write_tx(self.engine) as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction (one consistent snapshot)."""
        with read_tx(self.engine) as conn:
            yield conn

    def revision(self) -> int:
        """The current access revision, read from the database every time (so a change made by any
        replica or the CLI is seen by the next request here). SQLite: ~3 µs on a dedicated
        connection; PostgreSQL: one prepared SELECT on a dedicated autocommit connection
        (:class:`host.store.revision.PostgresRevisionReader`); else one SELECT through the pool."""
        if self._rev_conn is not None:
            with self._rev_lock:
                return int(self._rev_conn.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()[0])
        if self._rev_pg is not None:
            return self._rev_pg.read()
        with self.engine.connect() as conn:
            return int(conn.execute(select(s.meta.c.value).where(s.meta.c.key == "revision")).scalar_one())
