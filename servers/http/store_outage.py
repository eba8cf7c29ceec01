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


def _json_ok(message: dict[str, Any]) -> bool:
    if message.get("status") != 200:
        return False
    return any(k.lower() == b"content-type" and v.lower().startswith(b"application/json")
               for k, v in message.get("headers", []))


def _is_outage_answer(body: bytes) -> bool:
    """Whether a JSON response body is the store-outage JSON-RPC error (:func:`outage_error`)."""
    if b'"store_unavailable"' not in body:
        return False
    try:
        data = json.loads(body)
    except ValueError:
        return False
    error = data.get("error") if isinstance(data, dict) else None
    return isinstance(error, dict) and isinstance(error.get("data"), dict) and \
        error["data"].get("reason") == "store_unavailable"


def _as_503(start: dict[str, Any]) -> dict[str, Any]:
    headers = [*start.get("headers", []), (b"retry-after", str(RETRY_AFTER_SECONDS).encode())]
    return {**start, "status": 503, "headers": headers}


def store_outage_guard(app: Any) -> Any:
    """``app`` answering 503 + ``Retry-After`` for a request that failed on the store (module doc):
    a 500 caused by a store error is replaced, and a JSON (not event-stream) response whose body is
    the store-outage JSON-RPC error a handler answered gets status 503 and ``Retry-After`` (the SDK
    client reads the JSON-RPC error from a non-2xx JSON body)."""

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        held: list[dict[str, Any]] = []
        json_start: dict[str, Any] | None = None
        started = False

        async def send_or_hold(message: dict[str, Any]) -> None:
            nonlocal started, json_start
            if message["type"] == "http.response.start":
                if message.get("status") == 500:
                    held.append(message)
                    return
                if _json_ok(message):  # held until its body shows whether it is the outage error
                    json_start = message
                    return
            if held:
                held.append(message)
                return
            if json_start is not None and message["type"] == "http.response.body":
                start, json_start = json_start, None
                if not message.get("more_body") and _is_outage_answer(message.get("body", b"")):
                    start = _as_503(start)
                started = True
                await send(start)
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, receive, send_or_hold)
        except BaseException as exc:
            error = find_store_error(exc)
            if error is None or started or json_start is not None:
                for message in ([json_start] if json_start is not None else []) + held:
                    await send(message)
                raise
            note_outage(error)
            body = json.dumps({"jsonrpc": "2.0", "id": None, "error": outage_error(error)}).encode()
            await send({"type": "http.response.start", "status": 503, "headers": [
                (b"content-type", b"application/json"), (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
                (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        for message in ([json_start] if json_start is not None else []) + held:
            await send(message)

    return guarded
