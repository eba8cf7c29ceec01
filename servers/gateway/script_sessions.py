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

from registry import Principal
from servers.gateway.request_view import RequestView
from servers.gateway.taint_sessions import TaintSessions

__all__ = ["script_session"]


def script_session(request: RequestView, principal: Principal, sessions: TaintSessions) -> str | None:
    """The session id of ``request`` for the pool share of ``principal``'s script (module doc)."""
    if principal.key_id:
        return None
    if not request.modern:
        return sessions.of(request, principal)
    http = request.http
    if http is None:
        return None
    if sid := http.headers.get("mcp-session-id"):
        return f"mcp:{sid}"
    client = http.client
    return None if client is None else f"peer:{client.host}:{client.port}"
