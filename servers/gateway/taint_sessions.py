"""Which session-taint session a gateway request belongs to (:mod:`host.pipeline.taint`).

* a handshake-era connection (stdio, stateful streamable HTTP with ``Mcp-Session-Id``): one taint
  session per client connection, ended (:meth:`host.runtime.HostRuntime.end_session`) when the
  connection object goes away;
* a 2026-07-28 exchange is stateless (no connection state survives a request; the spec removed
  sessions, SEP-2567), so its taint is kept per caller
  (:func:`servers.gateway.caller_scope.caller_scope`): ``caller:<user>:<key id>``, narrowed by the
  request's ``_meta["toolhost/session"]`` when the client sends one. Every stateless request of one
  API key (or, in open access, of every unauthenticated client) without that meta key shares one
  session, which errs towards holding an egress call rather than forgetting a private read. Such a
  session is forgotten after :data:`TAINT_IDLE_SECONDS` without a call, and an admin can end it at
  once (``POST /admin/api/taint/reset``, :meth:`host.runtime.HostRuntime.end_sessions`). One
  caller's many ``_meta`` sessions push out only its own (:mod:`servers.gateway.caller_states`).
"""

from __future__ import annotations

import logging
import secrets
import time
import weakref
from collections.abc import Callable

from mcp.server.connection import Connection

from host.calls import TextBlock, ToolResult
from registry import Principal
from servers.gateway.caller_scope import SESSION_META_KEY, caller_scope
from servers.gateway.caller_states import CallerKeys
from servers.gateway.request_view import RequestView

__all__ = ["SHARED_SESSION_NOTE", "TAINT_IDLE_SECONDS", "TaintSessions"]

_logger = logging.getLogger("toolhost.taint")

TAINT_IDLE_SECONDS = 1800.0
"""A stateless caller's taint session is forgotten this long after its last call (seconds)."""

SHARED_SESSION_NOTE = (
    "Note: this taint session is shared by every unauthenticated stateless (2026-07-28) client of this "
    "gateway, so another client's earlier calls count here too. To scope it, connect with an API key "
    f"(toolhost users add; toolhost keys create) or send a per-conversation _meta[\"{SESSION_META_KEY}\"] "
    f"string with each request; it resets after {int(TAINT_IDLE_SECONDS // 60)} idle minutes, or at once "
    "when an admin runs `toolhost taint reset`."
)


def _evicted(key: str) -> None:
    _logger.info("toolhost: stateless taint session key %s evicted for room (its taint is kept)", key)


class TaintSessions:
    """Session ids per client connection (weakly held) or per stateless caller (idle-expiring).

    Args:
        end: called with a session id once its connection is gone or its caller was idle too long.
        idle_seconds: how long a stateless caller's session outlives its last call.
        clock: monotonic seconds.
    """

    def __init__(self, end: Callable[[str], None], *, idle_seconds: float = TAINT_IDLE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._end = end
        self._ids: weakref.WeakKeyDictionary[Connection, str] = weakref.WeakKeyDictionary()
        self._callers = CallerKeys(ttl_seconds=idle_seconds, on_expire=end, on_evict=_evicted, clock=clock)

    def of(self, request: RequestView, principal: Principal) -> str:
        """The taint session of ``request`` made by ``principal`` (module docstring)."""
        conn = request.stateful_connection
        if conn is None:
            key = caller_scope(request, principal).key
            self._callers.touch(key)
            return key
        sid = self._ids.get(conn)
        if sid is None:
            sid = self._ids[conn] = f"conn-{secrets.token_hex(8)}"
            weakref.finalize(conn, self._end, sid)
        return sid

    @staticmethod
    def explained(request: RequestView, principal: Principal, result: ToolResult) -> ToolResult:
        """``result`` with :data:`SHARED_SESSION_NOTE` added when the taint rule held it in a
        session unrelated clients share (else ``result`` unchanged)."""
        err = result.error
        if err is None or err.details.get("rule") != "taint":
            return result
        if not request.stateless or not caller_scope(request, principal).shared:
            return result
        message = f"{err.message} {SHARED_SESSION_NOTE}"
        return result.model_copy(update={"error": err.model_copy(update={"message": message}),
                                          "content": [TextBlock(text=f"{result.status.value}: {message}")]})
