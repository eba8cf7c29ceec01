"""Fair streamable-HTTP sessions: a per-user session limit and idle expiry.

The SDK's :class:`mcp.server.streamable_http_manager.StreamableHTTPSessionManager` caps sessions
for all clients together (``max_sessions``, then 503 "Too many open sessions" for everyone), so
one user opening 10,000 sessions locked every other user out for the idle timeout (30 min).
:class:`FairSessionManager` also caps each user's open sessions (the API key's user, from the
SDK's ``AuthorizationContext``; unauthenticated clients share one bucket): a user at their limit
asking for a new session first gets one of their own sessions back: the least recently used *idle*
one (no HTTP request open, no open GET stream, no call still running) is closed to make room, so a client that crashed
or
restarted without ``DELETE`` is never locked out, and in open access (every caller is the one user
``<unauthenticated>``) one client opening sessions in a loop only churns idle sessions instead of
locking every other client out until they expire. Only when every session of the user is busy is
the new one refused: HTTP 429 with ``Retry-After``, while their open sessions and every other user
keep working (logged at most once a minute per user). A client whose idle session was reclaimed
gets 404 on its next request and opens a new session, as the spec requires (MCP 2025-11-25,
transports: session management). Idle sessions are closed after ``SessionLimits.idle_seconds``.

:func:`fair_http_app` constructs the :class:`FairSessionManager` and mounts it in a Starlette app
the way the SDK's ``Server.streamable_http_app`` mounts its own manager (same route, auth
middleware, protected-resource metadata and lifespan). Each session gets a
:class:`servers.http.transport.GatewayTransport` (request-id checks, gap-free resumed streams)
with its own bounded event store, so its SSE streams can be resumed (:mod:`servers.http.event_store`).
The SDK offers no hook to choose the session transport, so the manager overrides the SDK's
private ``_admit_session``; every SDK internal relied on is listed in :mod:`servers.http.sdk_seams`.
"""

from __future__ import annotations

import json
import logging
import os
import weakref
from collections.abc import Callable
from typing import Any, cast
from uuid import uuid4

from mcp.server import Server
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    AuthorizationContext,
    BearerAuthBackend,
    authorization_context,
)
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.auth.settings import AuthSettings
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, EventStore
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from host.limits import SessionLimits
from servers.http.event_store import RETRY_INTERVAL_MS, SessionEventStore
from servers.http.key_challenge import ApiKeyRequired
from servers.http.lean_entry import handle_modern_post
from servers.http.sdk_seams import check_sdk_seams
from servers.http.transport import GatewayTransport
from servers.observability.report_throttle import ReportThrottle

__all__ = [
    "BUSY_RETRY_SECONDS",
    "MODERN_HTTP_ENV",
    "FairSessionManager",
    "fair_http_app",
    "open_sessions",
    "session_manager_of",
]

_log = logging.getLogger(__name__)

BUSY_RETRY_SECONDS = 5
"""``Retry-After`` (seconds) when every session of a user is busy: any that goes idle can be reclaimed."""
_ANONYMOUS = "<unauthenticated>"
MODERN_HTTP_ENV = "TOOLHOST_MODERN_HTTP"
"""``sdk``: serve 2026-07-28 requests with the SDK's own entry instead of :mod:`servers.http.lean_entry`."""
_PV_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("ascii")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _owner(requestor: AuthorizationContext | None) -> str:
    if not requestor:
        return _ANONYMOUS
    return requestor.get("subject") or requestor.get("client_id") or _ANONYMOUS


class FairSessionManager(StreamableHTTPSessionManager):
    """The SDK's stateful session manager with ``max_sessions_per_user`` (see module docstring).

    Args:
        app: the MCP server.
        limits: per-user and total session limits and the idle timeout (seconds).
        resumable: give each session its own :class:`~servers.http.event_store.SessionEventStore`.
        lean_modern: answer 2026-07-28 requests through :mod:`servers.http.lean_entry` (``False``: the
            SDK's entry, for A/B runs of ``bench/gateway.py --alt``).
        after_response: called after each 2026-07-28 request's answer was written
            (:mod:`servers.http.lean_entry`).
        json_response, security_settings, retry_interval, max_request_body_size: as for the SDK's
            ``StreamableHTTPSessionManager`` (bytes; an over-limit body gets 413 before parsing).

    Raises:
        servers.http.sdk_seams.SdkSeamError: the installed ``mcp`` lacks an internal this class relies on.
    """

    def __init__(
        self,
        app: Server[Any],
        *,
        limits: SessionLimits | None = None,
        resumable: bool = True,
        lean_modern: bool = True,
        after_response: Callable[[], None] | None = None,
        json_response: bool = False,
        security_settings: TransportSecuritySettings | None = None,
        retry_interval: int | None = None,
        max_request_body_size: int = DEFAULT_MAX_REQUEST_BODY_SIZE,
    ) -> None:
        limits = limits or SessionLimits()
        super().__init__(
            app,
            event_store=None,  # one store per session instead (see _admit_session)
            json_response=json_response,
            stateless=False,
            security_settings=security_settings,
            retry_interval=retry_interval,
            session_idle_timeout=limits.idle_seconds,
            max_request_body_size=max_request_body_size,
            max_sessions=limits.max_total,
        )
        check_sdk_seams(self)
        self.max_sessions_per_user = limits.max_per_user
        self.event_store_factory: Callable[[], EventStore] | None = SessionEventStore if resumable else None
        """Makes each new session's own event store (resumable SSE, :mod:`servers.http.event_store`), or ``None``."""
        self.lean_modern = lean_modern
        self.after_response = after_response
        self._refusals = ReportThrottle(60)
        """Refusal warnings: one per user per minute."""

    def open_sessions(self) -> int:
        """Open sessions of every user (the ``toolhost_sessions_open`` gauge)."""
        return len(self._server_instances)

    def _transport(self, sid: str) -> GatewayTransport:
        return cast(GatewayTransport, self._server_instances[sid])  # every session's, see _admit_session

    def _session_ids_of(self, owner: str) -> list[str]:
        owners = self._session_owners
        if owner == _ANONYMOUS:
            return [sid for sid in self._server_instances if sid not in owners]
        return [sid for sid in self._server_instances if sid in owners and _owner(owners[sid]) == owner]

    def sessions_of(self, owner: str) -> int:
        """Open sessions of ``owner`` (a user name, or ``<unauthenticated>``); sessions being closed
        (idle expiry or reclaimed) do not count."""
        return sum(1 for sid in self._session_ids_of(owner) if not self._transport(sid).closing())

    def reclaim_idle(self, owner: str) -> str | None:
        """Close ``owner``'s least recently used idle session (module docstring); returns its id, or
        ``None`` when every session of ``owner`` has a request in flight."""
        idle = []
        for sid in self._session_ids_of(owner):
            transport = self._transport(sid)
            scope = transport.idle_scope
            if scope is None or transport.closing() or not transport.idle():
                continue
            idle.append((scope.deadline, sid, scope))  # deadline = last activity + idle timeout
        if not idle:
            return None
        _, sid, scope = min(idle)
        scope.cancel()  # the SDK's idle expiry path: the session ends and is discarded
        _log.info("closed the least recently used idle session of %s to open a new one", owner)
        return sid

    def _admit_session(self, requestor: AuthorizationContext | None) -> GatewayTransport | None:
        # The SDK's _admit_session (mcp 2.3.0, servers.http.sdk_seams) with the per-user limit first and
        # this gateway's transport: the SDK builds a plain StreamableHTTPServerTransport there and
        # offers no hook to choose the class, so the registration is repeated here.
        owner = _owner(requestor)
        if self.sessions_of(owner) >= self.max_sessions_per_user and self.reclaim_idle(owner) is None:
            return None  # backstop under the creation lock (two opens raced past the check below)
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            return None
        # The SDK shares one store across sessions; a store per session keeps stream ids
        # (request ids, repeated across sessions) apart and frees memory with the session.
        transport = GatewayTransport(
            uuid4().hex,
            is_json_response_enabled=self.json_response,
            event_store=self.event_store_factory() if self.event_store_factory is not None else None,
            security_settings=self.security_settings,
            retry_interval=self.retry_interval,
            idle_timeout=self.session_idle_timeout,
        )
        session_id = transport.mcp_session_id
        assert session_id is not None
        if requestor is not None:
            self._session_owners[session_id] = requestor
        self._server_instances[session_id] = transport
        _log.debug("created the transport of session %s", session_id)
        return transport

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

    def _log_refusal(self, owner: str) -> None:
        """One warning per user per minute, with the count refused since the last one."""
        count = self._refusals.allow(owner)
        if count is None:
            return
        extra = f" ({count} more refused in the last minute)" if count else ""
        _log.warning("refusing a new session for %s: all %d of its sessions are busy%s",
                     owner, self.max_sessions_per_user, extra)


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


_managers: weakref.WeakKeyDictionary[Server[Any], FairSessionManager] = weakref.WeakKeyDictionary()
"""The session manager :func:`fair_http_app` built for each server (the SDK keeps only its own)."""


def fair_http_app(
    server: Server[Any],
    *,
    limits: SessionLimits | None = None,
    resumable: bool = True,
    after_response: Callable[[], None] | None = None,
    streamable_http_path: str = "/mcp",
    json_response: bool = False,
    retry_interval: int | None = None,
    max_request_body_size: int = DEFAULT_MAX_REQUEST_BODY_SIZE,
    transport_security: TransportSecuritySettings | None = None,
    host: str = "127.0.0.1",
    auth: AuthSettings | None = None,
    token_verifier: TokenVerifier | None = None,
    custom_starlette_routes: list[BaseRoute] | None = None,
    debug: bool = False,
) -> Starlette:
    """The streamable-HTTP app of ``server``, served by a :class:`FairSessionManager`.

    Mounted like the SDK's ``Server.streamable_http_app`` (mcp 2.3.0) with the same keyword
    arguments, whose meaning it keeps: DNS-rebinding protection for loopback ``host`` when no
    ``transport_security`` is given; with ``token_verifier``, bearer auth in front of
    ``streamable_http_path`` (``auth.required_scopes``; a 401 says whether the key is missing,
    not a ``Bearer`` token, or not recognised: :class:`servers.http.key_challenge.ApiKeyRequired`)
    and, with ``auth.resource_server_url`` (only when an authorization server is configured, see
    :func:`servers.http.api_keys.auth_settings`), the protected-resource metadata route, named in
    ``WWW-Authenticate``. toolhost is a resource server only: no authorization-server routes, no
    stateless mode.

    Args:
        server: the MCP server (its lifespan runs with the app's).
        limits: per-user session limit, idle expiry (seconds) and total cap.
        resumable: a bounded event store per session, so SSE streams resume with ``Last-Event-ID``
            (priming events then carry ``retry`` = ``retry_interval``, default
            :data:`~servers.http.event_store.RETRY_INTERVAL_MS` ms).
        after_response: see :class:`FairSessionManager`.
        custom_starlette_routes: more routes served beside the MCP endpoint.

    The manager is :func:`session_manager_of` ``(server)`` afterwards.
    """
    if resumable and retry_interval is None:
        retry_interval = RETRY_INTERVAL_MS
    if transport_security is None and host in _LOOPBACK:
        transport_security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = FairSessionManager(
        server,
        limits=limits,
        resumable=resumable,
        lean_modern=os.environ.get(MODERN_HTTP_ENV, "lean").strip().lower() != "sdk",
        after_response=after_response,
        json_response=json_response,
        security_settings=transport_security,
        retry_interval=retry_interval,
        max_request_body_size=max_request_body_size,
    )
    _managers[server] = manager
    endpoint: Any = StreamableHTTPASGIApp(manager)
    middleware: list[Middleware] = []
    routes: list[BaseRoute] = []
    if auth is not None and token_verifier is not None:
        backend = BearerAuthBackend(
            token_verifier, resource_server_url=auth.resource_server_url if auth.validate_token_resource else None
        )
        middleware = [Middleware(AuthenticationMiddleware, backend=backend), Middleware(AuthContextMiddleware)]
    if token_verifier is not None:
        metadata_url = None
        if auth is not None and auth.resource_server_url:
            metadata_url = build_resource_metadata_url(auth.resource_server_url)
        required = (auth.required_scopes or []) if auth is not None else []
        endpoint = ApiKeyRequired(endpoint, required, metadata_url)
    routes.append(Route(streamable_http_path, endpoint=endpoint))
    if auth is not None and auth.resource_server_url:
        routes.extend(create_protected_resource_routes(
            resource_url=auth.resource_server_url,
            authorization_servers=[auth.issuer_url],
            scopes_supported=auth.required_scopes,
        ))
    routes.extend(custom_starlette_routes or [])
    return Starlette(debug=debug, routes=routes, middleware=middleware, lifespan=lambda _app: manager.run())


def session_manager_of(server: Server[Any] | None) -> FairSessionManager | None:
    """The :class:`FairSessionManager` of ``server`` once :func:`fair_http_app` built its app, else ``None``."""
    return _managers.get(server) if server is not None else None


def open_sessions(server: Server[Any] | None) -> int:
    """Open MCP HTTP sessions of ``server`` once :func:`fair_http_app` served it (else 0): the one place
    that reads the SDK's session table, next to the per-user limits that use it."""
    manager = session_manager_of(server)
    return manager.open_sessions() if manager is not None else 0
