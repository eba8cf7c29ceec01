"""Fair streamable-HTTP sessions: a per-user session limit and idle expiry (issue 11, BR-50).

The SDK's :class:`mcp.server.streamable_http_manager.StreamableHTTPSessionManager` caps sessions
for all clients together (``max_sessions``, then 503 "Too many open sessions" for everyone), so
one user opening 10,000 sessions locked every other user out for the idle timeout (30 min).
:class:`FairSessionManager` also caps each user's open sessions (the API key's user, from the
SDK's ``AuthorizationContext``; unauthenticated clients share one bucket): a user at their limit
asking for a new session first gets one of their own sessions back: the least recently used *idle*
one (no HTTP request open, no open GET stream, no call still running) is closed to make room, so a client that crashed or
restarted without ``DELETE`` is never locked out, and in open access (every caller is the one user
``<unauthenticated>``) one client opening sessions in a loop only churns idle sessions instead of
locking every other client out until they expire. Only when every session of the user is busy is
the new one refused: HTTP 429 with ``Retry-After``, while their open sessions and every other user
keep working (logged at most once a minute per user). A client whose idle session was reclaimed
gets 404 on its next request and opens a new session, as the spec requires (MCP 2025-11-25,
transports: session management). Idle sessions are closed after ``SessionLimits.idle_seconds``.

:func:`fair_http_app` builds the SDK's app with ``Server.streamable_http_app`` and turns its
session manager into a :class:`FairSessionManager` (the SDK builds the manager itself and offers no
factory hook; the subclass only adds attributes and overrides two methods). Each session also gets
its own bounded event store, so its SSE streams can be resumed (:mod:`servers.http.event_store`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any

from mcp.server import Server
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, AuthorizationContext, authorization_context
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, EventStore, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from host.limits import SessionLimits
from servers.http.event_store import RETRY_INTERVAL_MS, SessionEventStore
from servers.http.lean_entry import handle_modern_post
from servers.http.transport import GatewayTransport
from servers.observability.report_throttle import ReportThrottle

__all__ = ["BUSY_RETRY_SECONDS", "MODERN_HTTP_ENV", "FairSessionManager", "fair_http_app", "open_sessions"]

_log = logging.getLogger(__name__)

BUSY_RETRY_SECONDS = 5
"""``Retry-After`` (seconds) when every session of a user is busy: any that goes idle can be reclaimed."""
_ANONYMOUS = "<unauthenticated>"
MODERN_HTTP_ENV = "TOOLHOST_MODERN_HTTP"
"""``sdk``: serve 2026-07-28 requests with the SDK's own entry instead of :mod:`servers.http.lean_entry`."""
_PV_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("ascii")


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

    def _session_ids_of(self, owner: str) -> list[str]:
        owners = self._session_owners
        if owner == _ANONYMOUS:
            return [sid for sid in self._server_instances if sid not in owners]
        return [sid for sid in self._server_instances if sid in owners and _owner(owners[sid]) == owner]

    def sessions_of(self, owner: str) -> int:
        """Open sessions of ``owner`` (a user name, or ``<unauthenticated>``); sessions being closed
        (idle expiry or reclaimed) do not count."""
        return sum(1 for sid in self._session_ids_of(owner) if not _closing(self._server_instances[sid]))

    def reclaim_idle(self, owner: str) -> str | None:
        """Close ``owner``'s least recently used idle session (module docstring); returns its id, or
        ``None`` when every session of ``owner`` has a request in flight."""
        idle = []
        for sid in self._session_ids_of(owner):
            transport = self._server_instances[sid]
            scope = transport.idle_scope
            if scope is None or _closing(transport) or getattr(transport, "_requests_in_flight", 1):
                continue
            if getattr(transport, "_ids_in_flight", None):
                continue  # a call still runs (its client dropped the stream and may resume)
            idle.append((scope.deadline, sid, scope))  # deadline = last activity + idle timeout
        if not idle:
            return None
        _, sid, scope = min(idle)
        scope.cancel()  # the SDK's idle expiry path: the session ends and is discarded
        _log.info("closed the least recently used idle session of %s to open a new one", owner)
        return sid

    event_store_factory: Callable[[], EventStore] | None = None
    """Makes each new session's own event store (resumable SSE, :mod:`servers.http.event_store`), or ``None``."""

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        owner = _owner(requestor)
        if self.sessions_of(owner) >= self.max_sessions_per_user and self.reclaim_idle(owner) is None:
            return None  # backstop under the creation lock (two opens raced past the check below)
        transport = super()._admit_session(requestor)
        if transport is not None and self.event_store_factory is not None:
            # The SDK shares one store across sessions; a store per session keeps stream ids
            # (request ids, repeated across sessions) apart and frees memory with the session.
            transport._event_store = self.event_store_factory()  # noqa: SLF001 - read lazily by the transport
        if transport is not None and type(transport) is StreamableHTTPServerTransport:
            # request-id checks (servers.http.transport); resumed streams hand over without a gap
            transport = GatewayTransport.adopt(transport)
        return transport

    after_response: Callable[[], None] | None = None
    lean_modern: bool = True
    """2026-07-28 requests through :mod:`servers.http.lean_entry` (``TOOLHOST_MODERN_HTTP=sdk``: the SDK's
    entry, for A/B runs of ``bench/gateway.py --alt``)."""
    """Called after each 2026-07-28 request's answer was written (:mod:`servers.http.lean_entry`)."""

    async def _handle_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The SDK's own routing by the MCP-Protocol-Version header; 2026-07-28 requests take the
        # leaner single-exchange entry of servers.http.lean_entry (same answers, less per request).
        pv = next((v for k, v in scope["headers"] if k == _PV_HEADER), None)
        if (self.lean_modern and pv is not None and pv.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS
                and self._task_group is not None):
            await handle_modern_post(self.app, self.security_settings, self.json_response, self._lifespan_state,
                                     scope, receive, send, after_response=self.after_response)
            return
        await super()._handle_request(scope, receive, send)

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        if request.headers.get(MCP_SESSION_ID_HEADER) is None:
            user = scope.get("user")
            owner = _owner(authorization_context(user) if isinstance(user, AuthenticatedUser) else None)
            if self.sessions_of(owner) >= self.max_sessions_per_user and self.reclaim_idle(owner) is None:
                self._log_refusal(owner)
                await _too_many(owner, self.max_sessions_per_user, self.session_idle_timeout)(scope, receive, send)
                return
        await super()._handle_stateful_request(scope, receive, send)


    _refusals: ReportThrottle
    """Refusal warnings: one per user per minute (set by :func:`fair_http_app`)."""

    def _log_refusal(self, owner: str) -> None:
        """One warning per user per minute, with the count refused since the last one."""
        count = self._refusals.allow(owner)
        if count is None:
            return
        extra = f" ({count} more refused in the last minute)" if count else ""
        _log.warning("refusing a new session for %s: all %d of its sessions are busy%s",
                     owner, self.max_sessions_per_user, extra)


def _closing(transport: Any) -> bool:
    scope = getattr(transport, "idle_scope", None)
    return bool(scope is not None and scope.cancel_called) or bool(getattr(transport, "is_terminated", False))


def _too_many(owner: str, limit: int, idle: float | None) -> Any:
    from starlette.responses import Response

    retry = BUSY_RETRY_SECONDS
    message = (
        f"Too many open sessions for {owner}: {limit} are open, each with a request in flight or an open "
        f"GET stream. Reuse one (send its Mcp-Session-Id), close one (HTTP DELETE), or retry in {retry} s "
        "(an idle session is then closed to make room)"
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
    # the SDK bound its own _handle_request into the body-limit middleware in __init__
    manager.asgi_app = RequestBodyLimitMiddleware(manager._handle_request, manager.max_request_body_size)
    manager._refusals = ReportThrottle(60)
    manager.max_sessions_per_user = limits.max_per_user
    manager.event_store_factory = SessionEventStore if resumable else None
    manager.lean_modern = os.environ.get(MODERN_HTTP_ENV, "lean").strip().lower() != "sdk"
    return app


def open_sessions(server: Server[Any] | None) -> int:
    """Open MCP HTTP sessions of ``server`` once :func:`fair_http_app` served it (else 0): the one place
    that reads the SDK's session table, next to the per-user limits that use it."""
    manager = getattr(server, "_session_manager", None)
    return manager.open_sessions() if isinstance(manager, FairSessionManager) else 0
