"""Appending audit rows to a SQLite database without SQLAlchemy's per-statement work.

An audit append is four statements (``BEGIN IMMEDIATE``, read the chain head, insert, move the
head) and a commit. Through SQLAlchemy Core that cost ~650 µs of CPU per one-row transaction on
the reference machine, ~25x the ~25 µs the same transaction costs on a plain ``sqlite3``
connection (the audit write was the largest single item of serve's per-call CPU).
:class:`SqliteAuditAppender` runs exactly the transaction of :func:`host.store.audit._append` on a
dedicated ``sqlite3`` connection: the same columns, the same hash chain, the same write lock, so
rows it writes and rows written through SQLAlchemy (auth failures, admin actions, another
process) interleave into one valid chain. Its SQL is compiled once by SQLAlchemy from the schema's
own tables (:mod:`host.store.schema`, SQLite dialect), so the two paths cannot drift apart; only
the execution bypasses SQLAlchemy.

Two ways to wait for the database write lock:

* :meth:`~SqliteAuditAppender.append` waits up to the store's busy timeout (like every writer);
* :meth:`~SqliteAuditAppender.try_append` never waits: when another connection or process holds
  the write lock, or the appender is in use by another thread, it writes nothing and returns
  ``None`` at once. The audit writer uses it to commit on the event loop when that costs
  microseconds and hands the row to its writer thread otherwise (:mod:`host.access.audit_writer`).

Checkpoints: the connection does not checkpoint the WAL after its own commits (a checkpoint is an
``fsync`` and may take milliseconds, too long for an event loop). :attr:`checkpoint_due` turns
true every :data:`CHECKPOINT_EVERY` commits; :meth:`checkpoint` (call it off the event loop) runs
a passive checkpoint on its own connection. :meth:`append` checkpoints by itself when due (it
runs where waiting is allowed).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.dialects import sqlite
from sqlalchemy.sql import ClauseElement

from host.store import schema as s
from host.store.audit_chain import CHAIN_FIELDS, GENESIS, row_hash
from host.store.engine import BUSY_TIMEOUT_SECONDS

__all__ = ["CHECKPOINT_EVERY", "SqliteAuditAppender"]

CHECKPOINT_EVERY = 256
"""Commits between two passive WAL checkpoints of the appender (SQLite's own default is every
1,000 pages, ~4 MB; one audit commit writes ~4-6 pages)."""

_COLUMNS = (*CHAIN_FIELDS, "prev_hash", "row_hash")


@dataclass(frozen=True)
class _Sql:
    """A statement compiled by SQLAlchemy for ``sqlite3`` (qmark): its text and parameter order."""

    text: str
    names: tuple[str, ...]
    defaults: dict[str, Any]

    def args(self, values: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(values[n] if n in values else self.defaults[n] for n in self.names)


def _compile(statement: ClauseElement) -> _Sql:
    compiled = statement.compile(dialect=sqlite.dialect(paramstyle="qmark"))
    return _Sql(str(compiled), tuple(compiled.positiontup or ()), dict(compiled.params))


_INSERT = _compile(insert(s.audit).values({c: bindparam(c) for c in _COLUMNS}))
if _INSERT.names != _COLUMNS:  # _append passes the values in this order (checked even under -O)
    raise RuntimeError(f"audit insert columns {_INSERT.names} are not in the order {_COLUMNS}")
_HEAD = _compile(select(s.audit_head.c.last_id, s.audit_head.c.last_hash).where(s.audit_head.c.id == 1))
_NEW_HEAD = _compile(insert(s.audit_head).values(id=1, last_id=None, last_hash=bindparam("last_hash")))
_TOUCH_HEAD = _compile(
    update(s.audit_head).where(s.audit_head.c.id == 1).values(last_id=s.audit_head.c.last_id)
)
_SET_HEAD = _compile(
    update(s.audit_head).where(s.audit_head.c.id == 1)
    .values(last_id=bindparam("last_id"), last_hash=bindparam("last_hash"))
)


class SqliteAuditAppender:
    """Appends chained audit rows to the SQLite database file ``path`` (see module doc).

    Args:
        path: the database file (already migrated).
        busy_timeout_seconds: how long :meth:`append` waits for another writer's lock.

    Thread-safe: one connection, used under a lock.
    """

    def __init__(self, path: str, *, busy_timeout_seconds: float = BUSY_TIMEOUT_SECONDS) -> None:
        self.path = path
        self.busy_timeout_ms = int(busy_timeout_seconds * 1000)
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()
        self._probe_conn: sqlite3.Connection | None = None
        self._conn: sqlite3.Connection | None = None
        self._timeout_ms: int | None = None
        self._since_checkpoint = 0
        self._closed = False

    @property
    def checkpoint_due(self) -> bool:
        """True once :data:`CHECKPOINT_EVERY` commits happened since the last :meth:`checkpoint`."""
        return self._since_checkpoint >= CHECKPOINT_EVERY

    def append(self, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Insert ``rows`` (stored column values, as :func:`host.store.audit._row_values` builds them)
        at the end of the chain in one transaction, waiting for the write lock up to the busy
        timeout; checkpoints when due. Returns the new ids, in order.

        Raises:
            sqlite3.Error: the database refused the write (locked past the timeout, disk full, ...);
                nothing was written.
        """
        with self._lock:
            ids = self._append(rows, self.busy_timeout_ms)
        if self.checkpoint_due:
            self.checkpoint()
        return ids

    def try_append(self, rows: Sequence[dict[str, Any]]) -> list[int] | None:
        """Like :meth:`append` but never waits and never checkpoints: ``None`` (nothing written)
        when the appender is busy in another thread or another connection holds the write lock.

        Raises:
            sqlite3.Error: any other failure; nothing was written.
        """
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return self._append(rows, 0)
        except sqlite3.OperationalError as e:
            if _locked(e):
                return None
            raise
        finally:
            self._lock.release()

    def probe(self, timeout_ms: int | None = None) -> None:
        """Prove the database writable now: take the write lock (waiting up to ``timeout_ms``,
        default the busy timeout) and commit a write that changes nothing (the chain head row is
        rewritten with its own values, so a commit really reaches the WAL file).

        Raises:
            sqlite3.Error: locked past the timeout, disk full, read-only file, ...
        """
        with self._probe_lock:
            self._probe(self.busy_timeout_ms if timeout_ms is None else timeout_ms)

    def try_probe(self) -> bool | None:
        """:meth:`probe` without waiting: ``True`` when proven, ``None`` when it would have to wait
        (the appender busy in another thread, or another connection holds the write lock).

        Raises:
            sqlite3.Error: any other failure (disk full, read-only file, ...).
        """
        if not self._probe_lock.acquire(blocking=False):
            return None
        try:
            self._probe(0)
            return True
        except sqlite3.OperationalError as e:
            if _locked(e):
                return None
            raise
        finally:
            self._probe_lock.release()

    def _probe(self, timeout_ms: int) -> None:
        # its own connection: a probe must not wait behind the appender's own (possibly long) write
        conn = self._probe_conn
        if conn is None:
            if self._closed:
                raise sqlite3.ProgrammingError("the audit appender is closed")
            conn = self._probe_conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                                      timeout=0)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute(f"PRAGMA busy_timeout={timeout_ms}")
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(_TOUCH_HEAD.text, _TOUCH_HEAD.args({}))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def checkpoint(self) -> None:
        """A passive WAL checkpoint (copies committed pages into the database file without waiting
        for readers or writers). Blocking (it syncs the file): not on an event loop."""
        self._since_checkpoint = 0
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=0)
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error:
            pass  # another checkpoint runs, or the file is busy: the next one catches up
        finally:
            conn.close()

    def close(self) -> None:
        """Close the connection (idempotent); later appends raise ``sqlite3.ProgrammingError``."""
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        with self._probe_lock:
            if self._probe_conn is not None:
                self._probe_conn.close()
                self._probe_conn = None

    # -- internals -----------------------------------------------------------------------------
    def _connection(self, timeout_ms: int) -> sqlite3.Connection:
        conn = self._conn
        if conn is None:
            if self._closed:
                raise sqlite3.ProgrammingError("the audit appender is closed")
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=0)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA wal_autocheckpoint=0")
            self._conn = conn
        if timeout_ms != self._timeout_ms:
            conn.execute(f"PRAGMA busy_timeout={timeout_ms}")
            self._timeout_ms = timeout_ms
        return conn

    def _append(self, rows: Sequence[dict[str, Any]], timeout_ms: int) -> list[int]:
        if not rows:
            return []
        conn = self._connection(timeout_ms)
        conn.execute("BEGIN IMMEDIATE")
        try:
            head = conn.execute(_HEAD.text, _HEAD.args({})).fetchone()
            if head is None:
                conn.execute(_NEW_HEAD.text, _NEW_HEAD.args({"last_hash": GENESIS}))
                prev = GENESIS
            else:
                prev = head[1]
            ids: list[int] = []
            for values in rows:
                h = row_hash(prev, values)
                cur = conn.execute(_INSERT.text, (*[values.get(c) for c in CHAIN_FIELDS], prev, h))
                ids.append(int(cur.lastrowid))  # type: ignore[arg-type]
                prev = h
            conn.execute(_SET_HEAD.text, _SET_HEAD.args({"last_id": ids[-1], "last_hash": prev}))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._since_checkpoint += 1
        return ids


def _locked(error: sqlite3.OperationalError) -> bool:
    text = str(error).lower()
    return "locked" in text or "busy" in text
