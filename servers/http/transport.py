"""The streamable-HTTP transport of one ``toolhost serve`` session: the SDK's, with request-id checks.

The SDK routes a request's response, logs and progress back to the POST that carried it by the
JSON-RPC id (``str(id)``), per session. Two requests with the same id in flight at once therefore
crossed: the second POST took over the first one's stream, received the *first* call's result,
and the first POST never got an answer (a hostile-caller finding; with ``cancel_order`` a client
would see another order's outcome). And a request whose id is neither a string nor an integer
(``null``, ``1.5``, an object) was taken for a notification: ``202 Accepted``, no answer ever.

:class:`GatewayTransport` checks the id of every POSTed request before the SDK sees it:

* an id that is not a string or an integer → HTTP 400, JSON-RPC ``-32600`` (id ``null``);
* an id already in flight in this session → HTTP 400, JSON-RPC ``-32600`` naming the id; the
  request in flight is untouched. Ids count as one the way the SDK correlates them: the
  transport keys streams by ``str(id)``, the dispatcher by ``coerce_request_id`` (``"07"`` is 7).
  An id stays in flight until its response is stored (the session's event store tells), so a
  client that dropped its POST mid-call cannot reuse the id while the call still runs; without
  an event store, until its POST ends.

Source: JSON-RPC 2.0 §4 (an id is a string, a number or null; numbers SHOULD NOT have fractional
parts; a request with id null is not allowed by MCP) and MCP 2025-11-25 basic/index ("Requests
MUST include a string or integer ID", "the request ID MUST NOT have been previously used by the
requestor within the same session"). The request body was already read whole by the SDK's body
limit middleware (4 MiB), so reading it here costs no extra buffering; it is handed on unchanged.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core
from mcp.server.streamable_http import EventStore
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.dispatcher import coerce_request_id
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from servers.http.event_store import ResumableTransport, SessionEventStore

__all__ = ["GatewayTransport", "id_keys", "id_problem"]


def _error(status: int, request_id: Any, message: str) -> Response:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32600, "message": message}}
    return Response(json.dumps(body), status_code=status, media_type="application/json")


def id_keys(rid: str | int) -> tuple[str, ...]:
    """The keys under which the SDK correlates request id ``rid`` (transport and dispatcher)."""
    return tuple(dict.fromkeys((str(rid), str(coerce_request_id(rid)))))


def id_problem(message: Any, in_flight: Any) -> tuple[str | None, tuple[str, ...]]:
    """``(problem, keys)`` for one parsed JSON-RPC message: ``problem`` is the error text when its
    id is invalid or already in ``in_flight`` (a container of :func:`id_keys` keys), ``keys`` the
    keys to track while the request runs (empty for notifications, responses and batches)."""
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None, ()
    rid = message["id"]
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        shown = json.dumps(rid)[:64]
        return (f"Invalid Request: the id of {message['method']!r} is {shown}; MCP request ids are "
                "strings or integers (a message without an id is a notification)"), ()
    keys = id_keys(rid)
    if any(k in in_flight for k in keys):
        return (f"Invalid Request: id {json.dumps(rid)[:64]} is already in flight in this session; "
                "give every request of a session its own id"), ()
    return None, keys


class GatewayTransport(ResumableTransport):
    """One session's transport (module docstring); also hands resumed streams over without a gap.

    Built by :class:`servers.http.sessions.FairSessionManager` for every new session, with the SDK
    transport's own constructor arguments. ``event_store``: the session's own
    :class:`~servers.http.event_store.SessionEventStore` (it tells this transport when a response is
    stored, which frees its request id), another SDK ``EventStore``, or ``None`` (not resumable).
    """

    def __init__(
        self,
        mcp_session_id: str | None,
        *,
        is_json_response_enabled: bool = False,
        event_store: EventStore | None = None,
        security_settings: TransportSecuritySettings | None = None,
        retry_interval: int | None = None,
        idle_timeout: float | None = None,
    ) -> None:
        super().__init__(
            mcp_session_id,
            is_json_response_enabled=is_json_response_enabled,
            event_store=event_store,
            security_settings=security_settings,
            retry_interval=retry_interval,
            idle_timeout=idle_timeout,
        )
        self._ids_in_flight: set[str] = set()
        if isinstance(event_store, SessionEventStore):
            event_store.on_response = self.answered

    def closing(self) -> bool:
        """Whether the session is ending: its idle expiry fired (or was triggered to reclaim it),
        or it was terminated (``DELETE``, shutdown)."""
        scope = self.idle_scope
        return (scope is not None and scope.cancel_called) or self.is_terminated

    def idle(self) -> bool:
        """Whether nothing of the session is running: no HTTP request open (a POST being served or
        an open GET stream) and no call still running whose client dropped its stream (it may
        resume). Only an idle session may be reclaimed for its user's new one."""
        return not self._requests_in_flight and not self._ids_in_flight  # SDK counter: servers.http.sdk_seams

    def answered(self, stream_id: str) -> None:
        """The response of request ``stream_id`` was stored: its id is free again."""
        try:
            keys = id_keys(int(stream_id))
        except ValueError:
            keys = (stream_id,)
        self._ids_in_flight.difference_update((stream_id, *keys))

    async def handle_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") != "POST":
            await super().handle_request(scope, receive, send)
            return
        first = await receive()
        pending: list[Message] = [first]

        async def replay() -> Message:
            return pending.pop() if pending else await receive()

        keys: tuple[str, ...] = ()
        if first.get("type") == "http.request" and not first.get("more_body", False):
            try:
                parsed = pydantic_core.from_json(first.get("body", b""))
            except ValueError:
                parsed = None  # the SDK answers the parse error itself
            problem, keys = id_problem(parsed, _InFlight(self._ids_in_flight, self._request_streams))
            if problem is not None:
                rid = parsed["id"]
                valid = isinstance(rid, str | int) and not isinstance(rid, bool)
                await _error(400, rid if valid else None, problem)(scope, replay, send)
                return
        if not keys:
            await super().handle_request(scope, replay, send)
            return
        store = self._event_store
        self._ids_in_flight.update(keys)
        status: list[int] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            await super().handle_request(scope, replay, watch)
        finally:
            # dispatched (200) with an event store: the id is freed when its response is stored
            if not (status == [200] and isinstance(store, SessionEventStore)):
                self._ids_in_flight.difference_update(keys)


class _InFlight:
    """``key in`` either toolhost's own set (from the check on) or the SDK's open request streams."""

    def __init__(self, *sets: Any) -> None:
        self._sets = sets

    def __contains__(self, key: object) -> bool:
        return any(key in s for s in self._sets)
