"""HTTP 503 with ``Retry-After`` when the permission store is unavailable, never a bare 500.

A request that needs the permission database while it is down (PostgreSQL stopped, the SQLite
file unwritable) fails where it first reads it, often before any MCP handler runs (checking the
bearer key). Starlette's error middleware would answer ``500 Internal Server Error`` and uvicorn
would log a traceback per request. :func:`store_outage_guard` wraps the ASGI app: when a request
fails with a store error (:class:`host.store.StoreError` subclasses
:class:`~host.store.DatabaseUnavailable` / :class:`~host.store.AuditUnavailable`, or a SQLAlchemy
database error), the 500 is replaced by ``503`` with ``Retry-After`` and a JSON-RPC error body
(code -32603, "permission store unavailable: ..."; the store's kind only, never its host or the
driver's text), and the serve log gets one line per :data:`LOG_INTERVAL_SECONDS`.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from sqlalchemy.exc import DBAPIError

from host.store import AuditUnavailable, DatabaseUnavailable

__all__ = ["LOG_INTERVAL_SECONDS", "RETRY_AFTER_SECONDS", "store_outage_guard"]

_log = logging.getLogger("toolhost.serve")

RETRY_AFTER_SECONDS = 5
LOG_INTERVAL_SECONDS = 30.0
INTERNAL_ERROR = -32603


def _store_error(exc: BaseException) -> BaseException | None:
    if isinstance(exc, (DatabaseUnavailable, AuditUnavailable, DBAPIError)):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _store_error(inner)
            if found is not None:
                return found
    cause = exc.__cause__ or exc.__context__
    return _store_error(cause) if cause is not None and cause is not exc else None


def store_outage_guard(app: Any) -> Any:
    """``app`` answering 503 + ``Retry-After`` for a request that failed on the store (module doc)."""
    last_log = [-LOG_INTERVAL_SECONDS]

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        held: list[dict[str, Any]] = []
        started = False

        async def send_or_hold(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start" and message.get("status") == 500:
                held.append(message)
                return
            if held:
                held.append(message)
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, receive, send_or_hold)
        except BaseException as exc:
            error = _store_error(exc)
            if error is None or started:
                for message in held:
                    await send(message)
                raise
            now = time.monotonic()
            if now - last_log[0] >= LOG_INTERVAL_SECONDS:
                last_log[0] = now
                _log.error("toolhost: permission store unavailable (%s: %s); answering 503 until it is back",
                           type(error).__name__, " ".join(str(error).split())[:300])
            reason = error.reason if isinstance(error, AuditUnavailable) else "unreachable"
            body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                "code": INTERNAL_ERROR,
                "message": f"permission store unavailable ({reason}); retry in {RETRY_AFTER_SECONDS} s",
                "data": {"retry_after_seconds": RETRY_AFTER_SECONDS}}}).encode()
            await send({"type": "http.response.start", "status": 503, "headers": [
                (b"content-type", b"application/json"), (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
                (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        for message in held:
            await send(message)

    return guarded
