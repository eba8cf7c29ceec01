"""Reading the access revision from PostgreSQL cheaply, on every request.

Every replica caches what it compiled from the database (the policy of
:class:`host.access.AccessControl`, the search index's visibility masks keyed by
``(principal, revision)``) and re-reads one integer, ``meta.revision``, per request: any write
through any replica or the CLI bumps it in the same transaction, so the next request on every
replica rebuilds. Reading it through the pool costs a checkout, a ``BEGIN``, the ``SELECT`` and a
``ROLLBACK``; :class:`PostgresRevisionReader` keeps one dedicated autocommit connection with the
statement prepared server-side, so a read is one round trip.
"""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import Engine

from host.store.engine import redact_url
from host.store.errors import DatabaseUnavailable

__all__ = ["PostgresRevisionReader"]

_QUERY = "SELECT value FROM meta WHERE key = 'revision'"


class PostgresRevisionReader:
    """``read() -> int``: ``meta.revision`` over a dedicated psycopg 3 connection (thread-safe).

    The connection is opened on first use with the engine's own connect arguments and reopened
    once when it breaks (server restart, failover, idle timeout).

    Raises (from :meth:`read`):
        DatabaseUnavailable: the database cannot be reached even after reconnecting.
    """

    def __init__(self, engine: Engine) -> None:
        cargs, cparams = engine.dialect.create_connect_args(engine.url)
        self._cargs: list[Any] = list(cargs)
        self._cparams: dict[str, Any] = dict(cparams)
        self._url = redact_url(engine.url)
        self._lock = threading.Lock()
        self._conn: Any = None

    def read(self) -> int:
        import psycopg

        with self._lock:
            for attempt in (1, 2):
                try:
                    if self._conn is None or self._conn.closed:
                        self._conn = psycopg.connect(
                            *self._cargs, **self._cparams, autocommit=True, prepare_threshold=0
                        )
                    row = self._conn.execute(_QUERY).fetchone()
                    return int(row[0])
                except psycopg.OperationalError as e:
                    self._close()
                    if attempt == 2:
                        raise DatabaseUnavailable(self._url, " ".join(str(e).split())) from None
            raise AssertionError("unreachable")  # pragma: no cover

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - a broken connection may fail to close; it is dropped anyway
                pass

    def close(self) -> None:
        """Close the dedicated connection (the next :meth:`read` reopens it)."""
        with self._lock:
            self._close()
