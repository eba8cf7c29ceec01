"""Which session-taint session a gateway request belongs to (:mod:`host.pipeline.taint`).

* a handshake-era connection (stdio, stateful streamable HTTP with ``Mcp-Session-Id``): one taint
  session per client connection, ended (:meth:`host.runtime.HostRuntime.end_session`) when the
  connection object goes away;
* a 2026-07-28 exchange is stateless (no connection state survives a request), so its taint is kept
  per caller: ``caller:<user>:<key id>`` — every stateless request of one API key shares one
  session, which errs towards holding an egress call rather than forgetting a private read.
"""

from __future__ import annotations

import secrets
import weakref
from collections.abc import Callable
from typing import Any

from mcp.server import ServerRequestContext

from registry import Principal

__all__ = ["TaintSessions"]


class TaintSessions:
    """Session ids per client connection (weakly held).

    Args:
        end: called with a session id once its connection is gone.
    """

    def __init__(self, end: Callable[[str], None]) -> None:
        self._end = end
        self._ids: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    def of(self, ctx: ServerRequestContext[Any, Any], principal: Principal) -> str:
        """The taint session of request ``ctx`` made by ``principal`` (module docstring)."""
        conn = getattr(ctx.session, "_connection", None)
        if conn is None or ctx.protocol_version >= "2026":
            return f"caller:{principal.user}:{principal.key_id or '-'}"
        sid = self._ids.get(conn)
        if sid is None:
            sid = self._ids[conn] = f"conn-{secrets.token_hex(8)}"
            weakref.finalize(conn, self._end, sid)
        return sid
