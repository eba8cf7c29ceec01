"""The one answer toolhost gives when the permission store is down, on every transport and method.

A request that needs the permission database while it is unavailable (PostgreSQL stopped, the
SQLite file locked, full or read-only) is answered with a JSON-RPC error, the same for
``tools/list``, ``tool_search``, ``prompts/*``, ``resources/*``, ``completion/complete``, …:

* ``code`` :data:`STORE_UNAVAILABLE` (``-32603``, JSON-RPC 2.0 §5.1 *Internal error*: the server
  could not answer; never ``0``);
* ``message`` ``permission store unavailable (REASON); retry in N s`` - REASON one of
  ``unreachable``, ``locked by another writer``, ``disk full``, ``read-only``, ``write failed``;
* ``data`` ``{"reason": "store_unavailable", "store_reason": REASON, "retry_after_seconds": N}``.

Never the database host, the password or the driver's text. Over HTTP the same body comes with
status 503 and ``Retry-After: N`` (:mod:`servers.http.store_outage`) when the failure happens before
the MCP handler answers (e.g. checking the bearer key) or the answer is a JSON response (2026-07-28
requests); an answer streamed as ``text/event-stream`` (2025-11-25 sessions) already sent status
200, so the error is the stream's JSON-RPC response. A
``tools/call`` that gets as far as its audit row and cannot write it is answered by the call
pipeline instead (a tool result with ``details.sent=false``, ``not_executed: permission store
unavailable: …``).
"""

from __future__ import annotations

from typing import Any

from host.pipeline import LOG_INTERVAL_SECONDS, STORE_OUTAGE_LOG, find_store_error, store_reason

__all__ = ["LOG_INTERVAL_SECONDS", "RETRY_AFTER_SECONDS", "STORE_UNAVAILABLE", "find_store_error", "note_outage",
           "outage_error"]

STORE_UNAVAILABLE = -32603
"""JSON-RPC code of the store-outage answer."""

RETRY_AFTER_SECONDS = 5
"""When a client should retry (seconds; ``Retry-After`` over HTTP)."""


def outage_error(error: BaseException) -> dict[str, Any]:
    """The JSON-RPC ``error`` object (``code``, ``message``, ``data``; module docstring) for ``error``."""
    reason = store_reason(error)
    return {
        "code": STORE_UNAVAILABLE,
        "message": f"permission store unavailable ({reason}); retry in {RETRY_AFTER_SECONDS} s",
        "data": {"reason": "store_unavailable", "store_reason": reason, "retry_after_seconds": RETRY_AFTER_SECONDS},
    }


def note_outage(error: BaseException) -> None:
    """Log the outage behind a refused request (:data:`host.pipeline.STORE_OUTAGE_LOG`: rate-limited)."""
    STORE_OUTAGE_LOG.note(error, "request")
