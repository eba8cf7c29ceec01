"""The calling client as a relay target for upstream server→client traffic.

:func:`downstream_for` turns the current request (:class:`servers.gateway.request_view.RequestView`) into a
:class:`host.upstream.relay.Downstream`: upstream log messages go to it at the level it set
with ``logging/setLevel`` (:class:`LogLevels`; every level until it sets one), and upstream
``elicitation/create``, ``sampling/createMessage`` and ``roots/list`` are forwarded to it only
when it declared that capability (MCP spec 2025-11-25, client features). Requests are sent on
the calling request's stream (``related_request_id``), params passed through whole.

On 2026-07-28 requests (no ``logging/setLevel``) log delivery is a per-request opt-in: upstream
log messages go to the request's own back-channel (the per-request ``ServerSession``'s
``send_log_message``), which sends only levels at or above the ``io.modelcontextprotocol/logLevel``
the request's ``_meta`` carried, and nothing when it carried none (MCP 2026-07-28, server/utilities/logging).
That level (or a handshake-era client's ``logging/setLevel`` level) is also forwarded to a
2026-07-28 upstream as its request's ``_meta`` log level (:func:`host.upstream.relay.log_level_meta`),
so the upstream itself sends that request's logs from that level up.
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

from mcp.server.connection import Connection
from mcp.server.session import ServerSession
from mcp.shared.message import ServerMessageMetadata
from mcp.types import (
    ClientCapabilities,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitationCapability,
    ElicitRequest,
    ElicitRequestParams,
    ElicitResult,
    ListRootsRequest,
    ListRootsResult,
    LoggingLevel,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    RootsCapability,
    SamplingCapability,
)
from mcp_types import LOG_LEVEL_META_KEY

from host.upstream.relay import LOG_LEVELS, Downstream
from servers.gateway.request_view import RequestView

__all__ = ["LogLevels", "downstream_for"]


class LogLevels:
    """The ``logging/setLevel`` level of each client connection (weakly held)."""

    def __init__(self) -> None:
        self._levels: weakref.WeakKeyDictionary[Connection, str] = weakref.WeakKeyDictionary()

    def set(self, request: RequestView, level: LoggingLevel) -> None:
        if request.connection is not None:
            self._levels[request.connection] = level

    def floor(self, request: RequestView) -> str | None:
        """The level this client connection set with ``logging/setLevel``, or ``None``."""
        return self._levels.get(request.connection) if request.connection is not None else None

    def wants(self, request: RequestView, level: str) -> bool:
        """Whether a message at ``level`` goes to this client (all levels until it set one)."""
        floor = self.floor(request)
        if floor is None:
            return True
        return LOG_LEVELS.index(level) >= LOG_LEVELS.index(floor)


def _declares(session: ServerSession, caps: ClientCapabilities) -> bool:
    try:
        return bool(session.check_client_capability(caps))
    except Exception:  # noqa: BLE001 - a session that cannot tell is not asked
        return False


def _request_log(session: ServerSession) -> Any:
    """Deliver upstream log messages on the request's own back-channel at the level its ``_meta`` asked
    for (2026-07-28: nothing when it asked for none)."""

    async def request_log(params: LoggingMessageNotificationParams, _server: str) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SDK marks request logging deprecated at 2026-07-28; still spec
            await session.send_log_message(params.level, params.data, params.logger)

    return request_log


def _requested_level(request: RequestView) -> str | None:
    """The ``io.modelcontextprotocol/logLevel`` of a 2026-07-28 request's ``_meta`` (``None``: none or not a level)."""
    level = request.meta.get(LOG_LEVEL_META_KEY)
    return level if level in LOG_LEVELS else None


def downstream_for(request: RequestView, levels: LogLevels) -> Downstream | None:
    """The relay target for ``request`` (``None`` when it has no session)."""
    session = request.session
    if session is None:
        return None
    related = request.request_id
    meta = ServerMessageMetadata(related_request_id=related)

    async def log(params: LoggingMessageNotificationParams, _server: str) -> None:
        if not levels.wants(request, params.level):
            return
        await session.send_notification(LoggingMessageNotification(params=params), related_request_id=related)


    async def elicit(params: ElicitRequestParams) -> ElicitResult:
        return await session.send_request(ElicitRequest(params=params), ElicitResult, metadata=meta)

    async def sample(params: CreateMessageRequestParams) -> Any:
        result_type = CreateMessageResultWithTools if params.tools else CreateMessageResult
        return await session.send_request(CreateMessageRequest(params=params), result_type, metadata=meta)

    async def roots() -> ListRootsResult:
        return await session.send_request(ListRootsRequest(), ListRootsResult, metadata=meta)

    modern = request.modern
    return Downstream(
        session=request.connection,
        log=_request_log(session) if modern else log,
        log_level=_requested_level(request) if modern else levels.floor(request),
        elicit=elicit if _declares(session, ClientCapabilities(elicitation=ElicitationCapability())) else None,
        sample=sample if _declares(session, ClientCapabilities(sampling=SamplingCapability())) else None,
        roots=roots if _declares(session, ClientCapabilities(roots=RootsCapability())) else None,
    )
