"""One typed view of the MCP SDK's request context: what the gateway reads of a request, read once.

The SDK hands every low-level handler a :class:`mcp.server.ServerRequestContext` (mcp 2.3.0:
``session``, ``protocol_version``, ``method``, ``request_id``, ``meta``, ``request``). The gateway
needs a few facts from it in many places (the caller, the connection its state hangs on, the
back-channel); :meth:`RequestView.of` reads them once, at the top of each handler, and every
gateway module takes the :class:`RequestView` instead of probing the SDK's objects:

* ``protocol_version`` and :attr:`RequestView.stateless`: a 2026-07-28 exchange keeps no
  connection state (sessions were removed, SEP-2567); its per-request connection object is no
  identity to remember state by;
* ``meta``: the request's ``_meta`` (``{}`` when it carried none), e.g. ``toolhost/session``
  (:mod:`servers.gateway.caller_scope`) and ``io.modelcontextprotocol/logLevel``;
* ``request_id``: the JSON-RPC id, to relate back-channel requests and notifications to it;
* ``http``: the Starlette request over streamable HTTP (its ASGI scope carries the authenticated
  user and headers); ``None`` over stdio;
* ``session``: the per-request :class:`mcp.server.session.ServerSession` (elicitation, sampling,
  roots, log and progress notifications); ``None`` only for :meth:`RequestView.outside_request`;
* ``connection``: the SDK's :class:`mcp.server.connection.Connection` behind the session. The
  SDK has no public accessor for it in 2.3.0, so :func:`connection_of` reads it here and nowhere
  else, and fails loudly (:class:`SdkShapeError`) when the SDK changed shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from types import MappingProxyType
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.connection import Connection
from mcp.server.session import ServerSession
from mcp_types import RequestId
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request

__all__ = ["SDK_VERSION_CHECKED", "RequestView", "SdkShapeError", "connection_of"]

SDK_VERSION_CHECKED = "2.3.0"
"""The ``mcp`` version whose ``ServerSession`` :func:`connection_of` was checked against."""

_NO_META: Mapping[str, Any] = MappingProxyType({})


class SdkShapeError(RuntimeError):
    """The installed ``mcp`` no longer keeps a request's :class:`Connection` where :func:`connection_of`
    reads it (``ServerSession._connection``, mcp :data:`SDK_VERSION_CHECKED`).

    Attributes:
        found: the type name of what was there instead (``"nothing"`` when the attribute is gone).
    """

    def __init__(self, found: str) -> None:
        self.found = found
        super().__init__(
            f"mcp {version('mcp')}: ServerSession._connection holds {found}, not the request's "
            f"mcp.server.connection.Connection (checked against mcp {SDK_VERSION_CHECKED}); adapt "
            "servers/gateway/request_view.py:connection_of to the new SDK (its public Context.connection, "
            f"if handlers receive it) or install mcp=={SDK_VERSION_CHECKED}"
        )


def connection_of(session: ServerSession) -> Connection:
    """The SDK's per-client :class:`Connection` behind ``session`` (every era; on 2026-07-28 it is
    built per request).

    mcp 2.3.0 keeps it in ``ServerSession._connection`` and offers no public accessor to low-level
    handlers: ``mcp.server.context.Context.connection`` is the public one, but ``ServerRunner``
    does not construct ``Context`` yet (its docstring). Replace this read with it once handlers
    receive a ``Context``. ``tests/servers/test_request_view.py`` fails when this read breaks.

    Raises:
        SdkShapeError: the attribute is gone or holds something else.
    """
    try:
        conn = session._connection
    except AttributeError:
        raise SdkShapeError("nothing") from None
    if not isinstance(conn, Connection):
        raise SdkShapeError(type(conn).__name__)
    return conn


@dataclass(frozen=True)
class RequestView:
    """What the gateway reads of one request (module docstring), built by :meth:`of`.

    Attributes:
        protocol_version: the version the request was made under, e.g. ``"2025-11-25"``.
        request_id: the JSON-RPC request id (``None`` for a notification).
        meta: the request's ``_meta`` (read-only; empty when it carried none).
        http: the Starlette request over streamable HTTP, else ``None`` (stdio).
        session: the per-request back-channel (``None`` only outside a request).
        connection: the SDK's connection behind ``session`` (``None`` only outside a request).
    """

    protocol_version: str
    request_id: RequestId | None = None
    meta: Mapping[str, Any] = field(default_factory=lambda: _NO_META)
    http: Request | None = None
    session: ServerSession | None = None
    connection: Connection | None = None

    @classmethod
    def of(cls, ctx: ServerRequestContext[Any, Any]) -> RequestView:
        """The view of the SDK's request context ``ctx``.

        Raises:
            SdkShapeError: the SDK no longer keeps the connection where :func:`connection_of` reads it.
        """
        request = ctx.request
        return cls(
            protocol_version=ctx.protocol_version,
            request_id=ctx.request_id,
            meta=MappingProxyType(dict(ctx.meta)) if ctx.meta else _NO_META,
            http=request if isinstance(request, Request) else None,
            session=ctx.session,
            connection=connection_of(ctx.session),
        )

    @classmethod
    def outside_request(cls) -> RequestView:
        """The view used where the SDK asks the gateway something outside any handler (the
        ``get_tool_input_schema`` hook): no session, no connection, no HTTP request; a principal
        resolver then falls back to the SDK's auth context variable."""
        return cls(protocol_version=max(MODERN_PROTOCOL_VERSIONS))

    @property
    def modern(self) -> bool:
        """A 2026-07-28 (or later) request: no handshake, no ``logging/setLevel``."""
        return self.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def stateless(self) -> bool:
        """No connection state survives this request (a 2026-07-28 exchange, or no connection)."""
        return self.connection is None or self.modern

    @property
    def stateful_connection(self) -> Connection | None:
        """The connection a handshake-era request's state is kept by (stdio, stateful streamable
        HTTP with ``Mcp-Session-Id``); ``None`` when :attr:`stateless`."""
        return None if self.stateless else self.connection
