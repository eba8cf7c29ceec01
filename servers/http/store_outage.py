"""HTTP 503 with ``Retry-After`` when the permission store is unavailable, never a bare 500.

A request that needs the permission database while it is down (PostgreSQL stopped, the SQLite
file unwritable) fails where it first reads it, often before any MCP handler runs (checking the
bearer key). Starlette's error middleware would answer ``500 Internal Server Error`` and uvicorn
would log a traceback per request. :func:`store_outage_guard` wraps the ASGI app: when a request
fails with a store error (:class:`host.store.StoreError` subclasses
:class:`~host.store.DatabaseUnavailable` / :class:`~host.store.AuditUnavailable`, or a SQLAlchemy
database error), the 500 is replaced by ``503`` with ``Retry-After`` and the JSON-RPC error body
of :mod:`servers.gateway.store_outage` (code -32603, "permission store unavailable (REASON); retry
in N s"; never the host or the driver's text), and the serve log gets one line per
:data:`LOG_INTERVAL_SECONDS`.
"""

from __future__ import annotations

import json
from typing import Any

from servers.gateway.store_outage import (
    LOG_INTERVAL_SECONDS,
    RETRY_AFTER_SECONDS,
    find_store_error,
    note_outage,
    outage_error,
)

__all__ = ["LOG_INTERVAL_SECONDS", "RETRY_AFTER_SECONDS", "store_outage_guard"]


def store_outage_guard(app: Any) -> Any:
    """``app`` answering 503 + ``Retry-After`` for a request that failed on the store (module doc)."""

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
            error = find_store_error(exc)
            if error is None or started:
                for message in held:
                    await send(message)
                raise
            note_outage(error)
            body = json.dumps({"jsonrpc": "2.0", "id": None, "error": outage_error(error)}).encode()
            await send({"type": "http.response.start", "status": 503, "headers": [
                (b"content-type", b"application/json"), (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
                (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        for message in held:
            await send(message)

    return guarded
