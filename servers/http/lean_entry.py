"""One 2026-07-28 POST answered in the request's own task (the SDK's single-exchange entry, leaner).

The SDK's entry (``mcp.server._streamable_http_modern.handle_modern_request``) runs every
request's handler as a sibling task: a task group, a zero-buffer memory stream, a second task
watching for the client's disconnect, and a ``move_on_after`` window; the response is JSON when
the handler finishes without emitting a notification, SSE from the first notification (or after
15 s of silence, so keepalive pings hold the connection open behind proxies). Profiled under
``bench/gateway.py`` (py-spy, sequential ``call_tool`` over HTTP) that machinery was ~7% of
``toolhost serve``'s CPU per call.

:func:`handle_modern_post` gives the same answers with less: the handler runs in the request's
task, and its notification sink writes to the response itself: the first notification commits
``text/event-stream`` (status 200, the SDK's SSE headers) and later ones follow as events; a
handler that emits nothing gets one ``application/json`` body with the table-mapped status,
exactly like the SDK. The disconnect watch is one plain task (a client closing the response
stream still cancels the call: the 2026-07-28 way to cancel), and the 15 s keepalive is a timer
that starts a ping task only when it fires. Everything before dispatch (security checks, Accept,
parsing, notifications, routing-header and ``Mcp-Param-*`` checks) is the SDK's own code, in
the SDK's order; ``json_response`` mode and ``subscriptions/listen`` go to the SDK's entry
unchanged. ``after_response`` runs once the answer is written (the event log writes there,
:meth:`host.events.EventLog.defer`).

Source: MCP 2026-07-28 transports, streamable HTTP ("Sending Messages": the server MUST answer a
request POST with ``Content-Type: text/event-stream`` or ``application/json``); the SDK module
named above (mcp 2.3), whose helpers are used here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server import _streamable_http_modern as _sdk
from mcp.server.connection import Connection
from mcp.server.runner import serve_one
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request, find_duplicated_routing_header
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import HEADER_MISMATCH, PARSE_ERROR, ErrorData, JSONRPCError, JSONRPCRequest
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

__all__ = ["handle_modern_post"]

_LISTEN = "subscriptions/listen"


class _ResponseSink:
    """The handler's notification sink: commits SSE on the first event and writes events in order.

    Stands in for the SDK's memory stream (``dctx.sink``): ``send`` takes one SSE frame (bytes) and
    raises ``ClosedResourceError`` once the answer is written.
    """

    def __init__(self, send: Send) -> None:
        self._send = send
        self.committed = False
        self.closed = False
        self._lock: asyncio.Lock | None = None

    async def _emit(self, body: bytes, *, final: bool) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()  # only streamed answers pay for it
        async with self._lock:
            if self.closed:
                raise anyio.ClosedResourceError
            if not self.committed:
                self.committed = True
                await self._send({"type": "http.response.start", "status": 200, "headers": _sdk._SSE_HEADERS})
            if final:
                self.closed = True
            await self._send({"type": "http.response.body", "body": body, "more_body": not final})

    async def send(self, event: bytes) -> None:
        await self._emit(event, final=False)

    async def finish(self, event: bytes) -> None:
        await self._emit(event, final=True)

    async def ping_forever(self) -> None:
        """Keepalive once the handler ran silent for the SDK's window: commit SSE, ping every window."""
        # a detached task: any failure of a dead connection ends it quietly (the request's own
        # task reports errors); ClosedResourceError is the usual one
        with contextlib.suppress(Exception):
            while True:
                await self._emit(b": ping\r\n\r\n", final=False)
                await anyio.sleep(_sdk._SSE_PING_INTERVAL)


async def handle_modern_post(
    app: Any,
    security_settings: TransportSecuritySettings | None,
    json_response: bool,
    lifespan_state: Any,
    scope: Scope,
    receive: Receive,
    send: Send,
    *,
    after_response: Callable[[], None] | None = None,
) -> None:
    """ASGI handler for one 2026-07-28 request (module docstring); same answers as the SDK's entry.

    Args:
        app, security_settings, json_response, lifespan_state: what the SDK's session manager
            passes its own entry.
        after_response: scheduled (``loop.call_soon``) once a dispatched request's answer was
            handed to the server, so it runs after the answer's socket write.
    """
    if scope.get("method") != "POST" or json_response:
        await _sdk.handle_modern_request(app, security_settings, json_response, lifespan_state, scope, receive, send)
        return
    request = Request(scope, receive)
    err = await TransportSecurityMiddleware(security_settings).validate_request(request, is_post=True)
    if err is not None:
        await err(scope, receive, send)
        return
    has_json, has_sse = check_accept_headers(request)
    if not has_json or not has_sse:
        await Response(status_code=406)(scope, receive, send)
        return
    body = await request.body()
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        rej = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error"))
        await _sdk._write(rej, scope, receive, send)
        return
    if _sdk._is_notification_shaped(decoded):
        await _sdk._acknowledge_notification(decoded, request, scope, receive, send)
        return
    try:
        req = JSONRPCRequest.model_validate(decoded)
    except ValidationError:
        await _sdk._write(_sdk._INVALID_BODY, scope, receive, send)
        return
    if req.method == _LISTEN:
        await _sdk.handle_modern_request(app, security_settings, json_response, lifespan_state, scope,
                                         _replay(body, receive), send)
        return
    duplicated = find_duplicated_routing_header(request.headers.items())
    if duplicated is not None:
        rejection = InboundLadderRejection(code=HEADER_MISMATCH, message=f"{duplicated} header appears more than once")
        await _sdk._write_rejection(rejection, req.id, scope, receive, send)
        return
    verdict = classify_inbound_request(decoded, headers=dict(request.headers))
    if isinstance(verdict, InboundLadderRejection):
        await _sdk._write_rejection(verdict, req.id, scope, receive, send)
        return
    param_rejection = await _sdk._mcp_param_rejection(app, request, req, verdict, lifespan_state)
    if param_rejection is not None:
        await _sdk._write_rejection(param_rejection, req.id, scope, receive, send)
        return

    connection = Connection.from_envelope(verdict.protocol_version, verdict.client_info, verdict.client_capabilities)
    sink = _ResponseSink(send)
    dctx = _sdk._SingleExchangeDispatchContext(
        transport=TransportContext(kind="streamable-http", can_send_request=False, headers=request.headers),
        request_id=req.id,
        message_metadata=ServerMessageMetadata(request_context=request),
        progress_token=progress_token_from_params(req.params),
        sink=sink,  # type: ignore[arg-type] - duck-typed: the SDK only awaits sink.send(bytes)
    )
    loop = asyncio.get_running_loop()
    with anyio.CancelScope() as scope_cs:
        watcher = loop.create_task(_cancel_on_disconnect(receive, scope_cs))
        pinger: list[asyncio.Task[None]] = []
        keepalive = loop.call_later(
            _sdk._SSE_PING_INTERVAL, lambda: pinger.append(loop.create_task(sink.ping_forever()))
        )
        try:
            msg = await _sdk._to_jsonrpc_response(
                req.id, serve_one(app, dctx, req.method, req.params, connection=connection,
                                  lifespan_state=lifespan_state)
            )
            if sink.committed:
                await sink.finish(_sdk._sse_event(msg))
            else:
                sink.closed = True  # a ping timer firing from here on finds the answer written
                await _sdk._write(msg, scope, receive, send)
        finally:
            keepalive.cancel()
            watcher.cancel()
            for task in pinger:
                task.cancel()
            sink.closed = True
    if after_response is not None:
        # call_soon: after the socket write the coalescing transport scheduled (servers.http.runner), FIFO
        loop.call_soon(after_response)


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    """Cancel the request's handler when its client goes away (closing the stream cancels, 2026-07-28)."""
    try:
        while (await receive()).get("type") != "http.disconnect":
            pass
    except Exception:  # noqa: BLE001 - a detached task: a broken receive means the client is gone too
        pass
    scope.cancel()


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` that hands out the already-read body first (for the SDK's entry)."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again
