"""Which client session a code-mode script comes from: an anonymous caller's share of the sandbox
pool is per session (:func:`host.code_mode.admission.owner_key`).

* a caller with an API key: ``None`` (its share is its key);
* a handshake-era connection (stdio, stateful streamable HTTP with ``Mcp-Session-Id``): the
  connection's session id (:class:`servers.gateway.taint_sessions.TaintSessions`);
* a 2026-07-28 request (stateless): its ``Mcp-Session-Id`` header when it carries one, else the
  HTTP client connection (``peer:<address>:<port>``); on stdio ``None`` (one client per process).

A client that opens many connections gets many shares; the pool's anonymous cap
(``toolhost.code_mode.pool.max_anonymous_scripts``) bounds what they hold together.
"""

from __future__ import annotations

from typing import Any

from mcp.server import ServerRequestContext
from starlette.requests import Request

from registry import Principal
from servers.gateway.taint_sessions import TaintSessions

__all__ = ["script_session"]


def script_session(ctx: ServerRequestContext[Any, Any], principal: Principal, sessions: TaintSessions) -> str | None:
    """The session id of request ``ctx`` for the pool share of ``principal``'s script (module doc)."""
    if principal.key_id:
        return None
    if ctx.protocol_version < "2026":
        return sessions.of(ctx, principal)
    request = ctx.request
    if not isinstance(request, Request):
        return None
    if sid := request.headers.get("mcp-session-id"):
        return f"mcp:{sid}"
    client = request.client
    return None if client is None else f"peer:{client.host}:{client.port}"
