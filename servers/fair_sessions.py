"""Fair streamable-HTTP sessions: a per-user session limit and idle expiry (issue 11, BR-50).

The SDK's :class:`mcp.server.streamable_http_manager.StreamableHTTPSessionManager` caps sessions
for all clients together (``max_sessions``, then 503 "Too many open sessions" for everyone), so
one user opening 10,000 sessions locked every other user out for the idle timeout (30 min).
:class:`FairSessionManager` also caps each user's open sessions (the API key's user, from the
SDK's ``AuthorizationContext``; unauthenticated clients share one bucket): a user at their limit
gets HTTP 429 with ``Retry-After`` for a *new* session, while their open sessions and every other
user keep working. Idle sessions are closed after ``SessionLimits.idle_seconds``.

:func:`fair_http_app` builds the SDK's app with ``Server.streamable_http_app`` and turns its
session manager into a :class:`FairSessionManager` (the SDK builds the manager itself and offers no
factory hook; the subclass only adds attributes and overrides two methods). Each session also gets
its own bounded event store, so its SSE streams can be resumed (:mod:`servers.event_store`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from mcp.server import Server
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, AuthorizationContext, authorization_context
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, EventStore, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from host.limits import SessionLimits
from servers.event_store import RETRY_INTERVAL_MS, SessionEventStore
from servers.session_transport import GatewayTransport

__all__ = ["FairSessionManager", "fair_http_app", "open_sessions"]

_log = logging.getLogger(__name__)
_ANONYMOUS = "<unauthenticated>"


def _owner(requestor: AuthorizationContext | None) -> str:
    if not requestor:
        return _ANONYMOUS
    return requestor.get("subject") or requestor.get("client_id") or _ANONYMOUS


class FairSessionManager(StreamableHTTPSessionManager):
    """A session manager with ``max_sessions_per_user`` (see module docstring)."""

    max_sessions_per_user: int = 32

    def open_sessions(self) -> int:
        """Open sessions of every user (the ``toolhost_sessions_open`` gauge)."""
        return len(self._server_instances)

    def sessions_of(self, owner: str) -> int:
        """Open sessions of ``owner`` (a user name, or ``<unauthenticated>``)."""
        owners = self._session_owners
        if owner == _ANONYMOUS:
            return sum(1 for sid in self._server_instances if sid not in owners)
        return sum(1 for sid in self._server_instances if sid in owners and _owner(owners[sid]) == owner)

    event_store_factory: Callable[[], EventStore] | None = None
    """Makes each new session's own event store (resumable SSE, :mod:`servers.event_store`), or ``None``."""

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        if self.sessions_of(_owner(requestor)) >= self.max_sessions_per_user:
            return None  # backstop under the creation lock; the precise answer is sent below
        transport = super()._admit_session(requestor)
        if transport is not None and self.event_store_factory is not None:
            # The SDK shares one store across sessions; a store per session keeps stream ids
            # (request ids, repeated across sessions) apart and frees memory with the session.
            transport._event_store = self.event_store_factory()  # noqa: SLF001 - read lazily by the transport
        if transport is not None and type(transport) is StreamableHTTPServerTransport:
            # request-id checks (servers.session_transport); resumed streams hand over without a gap
            transport.__class__ = GatewayTransport
            transport._ids_in_flight = set()
        return transport

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        if request.headers.get(MCP_SESSION_ID_HEADER) is None:
            user = scope.get("user")
            owner = _owner(authorization_context(user) if isinstance(user, AuthenticatedUser) else None)
            if self.sessions_of(owner) >= self.max_sessions_per_user:
                _log.warning("refusing a new session for %s: %d open", owner, self.max_sessions_per_user)
                await _too_many(owner, self.max_sessions_per_user, self.session_idle_timeout)(scope, receive, send)
                return
        await super()._handle_stateful_request(scope, receive, send)


def _too_many(owner: str, limit: int, idle: float | None) -> Any:
    from starlette.responses import Response

    retry = int(idle) if idle else 60
    message = (
        f"Too many open sessions for {owner}: {limit} are open. Reuse one (send its Mcp-Session-Id), "
        f"close one (HTTP DELETE), or wait until one has been idle for {retry} s"
    )
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}
    return Response(json.dumps(body), status_code=429, media_type="application/json",
                    headers={"Retry-After": str(retry)})


def fair_http_app(
    server: Server[Any], *, limits: SessionLimits | None = None, resumable: bool = True, **kwargs: Any
) -> Starlette:
    """``server.streamable_http_app(**kwargs)`` with per-user session limits and idle expiry, and
    (``resumable``) a bounded event store per session so SSE streams resume with ``Last-Event-ID``."""
    limits = limits or SessionLimits()
    if resumable:
        kwargs.setdefault("retry_interval", RETRY_INTERVAL_MS)
    app = server.streamable_http_app(
        session_idle_timeout=limits.idle_seconds, max_sessions=limits.max_total, **kwargs
    )
    manager = server._session_manager  # noqa: SLF001 - the SDK keeps the manager it built here
    if type(manager) is not StreamableHTTPSessionManager:
        raise TypeError(f"unexpected session manager {type(manager).__name__}; cannot add per-user limits")
    manager.__class__ = FairSessionManager
    manager.max_sessions_per_user = limits.max_per_user
    manager.event_store_factory = SessionEventStore if resumable else None
    return app


def open_sessions(server: Server[Any] | None) -> int:
    """Open MCP HTTP sessions of ``server`` once :func:`fair_http_app` served it (else 0): the one place
    that reads the SDK's session table, next to the per-user limits that use it."""
    manager = getattr(server, "_session_manager", None)
    return manager.open_sessions() if isinstance(manager, FairSessionManager) else 0
