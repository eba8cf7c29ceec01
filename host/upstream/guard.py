"""A guard between an SDK transport and its ``Client``: garbage never wedges, EOF is noticed at
once, and every ``tools/call`` knows whether it was sent.

:func:`guarded` wraps any SDK transport (stdio, streamable HTTP, SSE) and yields the same pair of
streams with these guarantees (the "skip, log, and fail the named request" kind):

* **Every inbound item is delivered, turned into an error for the one request it names, or
  skipped and logged** to the server's log (``<data_dir>/logs/<server>.stderr.log``) — never
  left to stall the connection. A line that is not JSON, not UTF-8 (stdio decodes with
  replacement characters), or a JSON-RPC message of the wrong shape is an ``Exception`` item
  from the SDK: when its text names the id of a request in flight, that request fails at once
  with JSON-RPC error ``-32700`` ("the server's reply could not be parsed"), so the call ends
  ``upstream_error`` instead of waiting for its timeout; otherwise it is skipped. A reply to an
  id that is not in flight is skipped and logged.
* **Bare strings in a ``tools/call`` result's ``content``** (some servers send ``["text"]``
  instead of ``[{"type": "text", "text": "text"}]``) are read as text blocks, with one log line,
  instead of failing the call with the validation error's dump.
* **End of stream is reported** through ``on_closed(reason)`` as soon as the read side ends
  (a stdio child that exits closes its stdout), so the connection is marked down at once.
* **Sent or not**: a ``tools/call`` request written to the transport marks the caller's
  :class:`CallSlot` (a context variable set by the caller; the SDK writes in the caller's
  task), so a cut-off call is reported "not sent" or "sent, outcome unknown" truthfully.
* **Session expiry** (streamable HTTP): :meth:`TransportGuard.http_response_hook` notes the
  request ids whose POST carried ``Mcp-Session-Id`` and got HTTP 404 (the server forgot the
  session); :meth:`TransportGuard.session_expired` answers for a slot.

The SDK's own per-line parse tracebacks are reduced to one line (see :func:`quiet_sdk_logs`).
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.shared.message import SessionMessage
from mcp.types import ErrorData, JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse
from pydantic import ValidationError

__all__ = ["CALL_SLOT", "ID_VALUE", "PARSE_ERROR_CODE", "CallSlot", "Transport", "TransportGuard", "TransportReceive",
           "TransportSend", "guarded", "quiet_sdk_logs"]

PARSE_ERROR_CODE = -32700
"""JSON-RPC "Parse error": used for a reply that arrived but could not be parsed."""

_MAX_LOGGED_SKIPS = 200
_EXCERPT = 160
ID_VALUE = r'(-?\d+|"(?:[^"\\]|\\.){0,200}")'
"""Regex of a JSON-RPC id as written in a message (an integer or a string of up to 200 characters)."""
_ID_RE = re.compile(r'"id"\s*:\s*' + ID_VALUE)


@dataclass
class CallSlot:
    """Per-call record filled by the guard: whether (and under which id) the request was written."""

    sent: bool = False
    request_id: Any = None


CALL_SLOT: contextvars.ContextVar[CallSlot | None] = contextvars.ContextVar("toolhost_call_slot", default=None)
"""Set by :func:`host.upstream.forward_call.call_client_tool` around one ``tools/call``."""


def _key(request_id: Any) -> str:
    return str(request_id)


def _excerpt(text: str) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + f"… ({len(text)} chars)"


class TransportGuard:
    """State shared by the guarded streams of one session (module docstring).

    Args:
        server: the server's name (for log lines).
        log: writes one line to the server's log.
        on_closed: called once with a reason when the read side ends.
    """

    def __init__(self, server: str, *, log: Callable[[str], None], on_closed: Callable[[str], None]) -> None:
        self.server = server
        self._log = log
        self._on_closed = on_closed
        self.in_flight: dict[str, str] = {}
        self.expired: set[str] = set()
        self.skipped = 0
        self.first_garbage: str | None = None
        """The first skipped line that was not a JSON-RPC message (an excerpt), quoted in connect errors."""
        self.closed = False
        self.idle_timeout = False
        self.http_auth_failure: tuple[int, str | None] | None = None

    # -- outbound ------------------------------------------------------------------------
    def outbound(self, item: SessionMessage) -> None:
        msg = item.message
        if isinstance(msg, JSONRPCRequest):
            self.in_flight[_key(msg.id)] = msg.method
            if msg.method == "tools/call":
                slot = CALL_SLOT.get()
                if slot is not None and not slot.sent:
                    slot.sent = True
                    slot.request_id = msg.id
        elif isinstance(msg, JSONRPCNotification) and msg.method == "notifications/cancelled":
            rid = (msg.params or {}).get("requestId")
            if rid is not None:
                self.in_flight.pop(_key(rid), None)

    # -- inbound -------------------------------------------------------------------------
    def inbound(self, item: SessionMessage | Exception) -> Any | None:
        """The item to deliver, a replacement error, or ``None`` to skip it."""
        if isinstance(item, Exception):
            return self._garbage(item)
        msg = item.message
        if isinstance(msg, JSONRPCResponse | JSONRPCError):
            if msg.id is None:
                error = msg.error if isinstance(msg, JSONRPCError) else ""
                self._skip(f"error reply without an id: {_excerpt(str(error))}")
                return None
            method = self.in_flight.pop(_key(msg.id), None)
            if method is None:
                self._skip(f"reply to request id {msg.id!r}, which is not in flight (late, duplicate or unknown)")
                return None
            if method == "tools/call" and isinstance(msg, JSONRPCResponse):
                return self._bare_strings_as_text(item, msg)
        return item

    def _bare_strings_as_text(self, item: Any, msg: JSONRPCResponse) -> Any:
        """A ``tools/call`` result whose ``content`` holds bare strings (not content blocks) gets
        each read as a text block (logged once per reply) instead of failing validation."""
        result = msg.result
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, list) or not any(isinstance(c, str) for c in content):
            return item
        self._log(f"toolhost: the reply to tools/call id {msg.id!r} had bare strings in content; read them as "
                  "text blocks")
        fixed = [{"type": "text", "text": c} if isinstance(c, str) else c for c in content]
        return SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=msg.id, result={**result, "content": fixed}))

    def _garbage(self, exc: Exception) -> Any | None:
        if type(exc).__name__ == "ReadTimeout":  # an idle SSE stream (httpx2.ReadTimeout)
            self.idle_timeout = True
            self._log("toolhost: the SSE stream was idle past its read timeout; reconnecting")
            return None
        text = _exception_text(exc)
        for m in _ID_RE.finditer(text):
            raw = m.group(1)
            try:
                rid = json.loads(raw)
            except ValueError:
                continue
            method = self.in_flight.pop(_key(rid), None)
            if method is not None:
                self._skip(f"unparseable reply to {method} id {rid!r} ({type(exc).__name__}); failed that "
                           f"request: {_excerpt(text)}")
                error = ErrorData(code=PARSE_ERROR_CODE, message=f"the server's reply to {method} could not be "
                                  f"parsed ({_first_line(exc)})")
                return SessionMessage(JSONRPCError(jsonrpc="2.0", id=rid, error=error))
        if self.first_garbage is None:
            self.first_garbage = _excerpt(text.strip())
        self._skip(f"malformed input skipped ({type(exc).__name__}: {_first_line(exc)}): {_excerpt(text)}")
        return None

    def _skip(self, line: str) -> None:
        self.skipped += 1
        if self.skipped <= _MAX_LOGGED_SKIPS:
            self._log(f"toolhost: {line}")
        elif self.skipped % 1000 == 0:
            self._log(f"toolhost: {self.skipped} malformed or unexpected messages skipped so far")

    def eof(self, reason: str) -> None:
        if not self.closed:
            self.closed = True
            self._on_closed(reason)

    # -- HTTP session expiry -------------------------------------------------------------
    async def http_response_hook(self, response: Any) -> None:
        """httpx2 ``response`` event hook: note requests answered 404 while carrying a session id."""
        request = response.request
        if response.status_code in (401, 403):
            self.http_auth_failure = (response.status_code, response.headers.get("www-authenticate"))
        if response.status_code != 404 or request.method != "POST" or not request.headers.get("mcp-session-id"):
            return
        try:
            body = json.loads(request.content or b"null")
        except ValueError:
            return
        if isinstance(body, dict) and "id" in body and "method" in body:
            self.expired.add(_key(body["id"]))
            self._log(f"toolhost: HTTP 404 for {body['method']} id {body['id']!r} with Mcp-Session-Id: "
                      "the server forgot the session")

    def session_expired(self, slot: CallSlot) -> bool:
        """Whether the request of ``slot`` was answered 404 because its session was forgotten."""
        return slot.request_id is not None and _key(slot.request_id) in self.expired


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return _excerpt(text[0]) if text else type(exc).__name__


def _exception_text(exc: Exception) -> str:
    """The raw input behind a transport parse error (pydantic keeps it in ``errors()``)."""
    if isinstance(exc, ValidationError):
        try:
            for err in exc.errors():
                value = err.get("input")
                if isinstance(value, str | bytes):
                    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
                if isinstance(value, dict):
                    return json.dumps(value, default=str)[:10_000]
        except Exception:  # noqa: BLE001 - best effort only
            pass
    return str(exc)


class TransportReceive(Protocol):
    """The read stream of every transport toolhost opens (:func:`host.upstream.transport.open_transport`):
    :class:`host.upstream.stdio_pipe.PipeReceive` (stdio) and the SDK's context stream (SSE,
    streamable HTTP; ``mcp.shared._context_streams.ContextReceiveStream``)."""

    last_context: contextvars.Context | None
    """The sender's context of the last message (the SDK's session runs its handler in it,
    ``mcp.shared._stream_protocols.ReadStream``); ``None`` when none crossed (a pipe)."""

    async def receive(self) -> SessionMessage | Exception: ...
    async def aclose(self) -> None: ...
    def close(self) -> None: ...


class TransportSend(Protocol):
    """The write stream of every transport toolhost opens (see :class:`TransportReceive`)."""

    async def send(self, item: SessionMessage, /) -> None: ...
    async def aclose(self) -> None: ...
    def close(self) -> None: ...


class _GuardedReceive(ObjectReceiveStream[Any]):
    """The SDK transport's read stream with :meth:`TransportGuard.inbound` applied; iteration and
    ``async with`` come from anyio's :class:`~anyio.abc.ObjectReceiveStream`."""

    def __init__(self, inner: TransportReceive, guard: TransportGuard) -> None:
        self._inner = inner
        self._guard = guard

    @property
    def last_context(self) -> contextvars.Context | None:
        """The inner stream's (the SDK's dispatcher reads it to run the message's handler in)."""
        return self._inner.last_context

    async def receive(self) -> Any:
        while True:
            try:
                item = await self._inner.receive()
            except anyio.EndOfStream:
                self._guard.eof("the server closed the connection (end of its output stream)")
                raise
            except anyio.ClosedResourceError:
                self._guard.eof("the transport was closed")
                raise
            out = self._guard.inbound(item)
            if out is not None:
                return out

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()


class _GuardedSend(ObjectSendStream[SessionMessage]):
    """The SDK transport's write stream with :meth:`TransportGuard.outbound` applied (anyio's
    :class:`~anyio.abc.ObjectSendStream` gives ``async with``)."""

    def __init__(self, inner: TransportSend, guard: TransportGuard) -> None:
        self._inner = inner
        self._guard = guard

    async def send(self, item: SessionMessage, /) -> None:
        self._guard.outbound(item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()


Transport = AbstractAsyncContextManager[tuple[TransportReceive, TransportSend]]
"""An opened-on-entry transport: :func:`host.upstream.stdio_pipe.stdio_pipe_client`, the SDK's
``sse_client`` and ``streamable_http_client``."""


@asynccontextmanager
async def guarded(transport: Transport, guard: TransportGuard) -> AsyncIterator[tuple[Any, Any]]:
    """Enter the SDK ``transport`` and yield its streams wrapped by ``guard``."""
    async with transport as streams:
        read, write = streams[0], streams[1]
        yield _GuardedReceive(read, guard), _GuardedSend(write, guard)


class _OneLine(logging.Filter):
    """Turns an SDK transport log record with a traceback into one line (no traceback)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            record.msg = f"{record.getMessage()}: {type(exc).__name__}: {_first_line(exc)}"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        if record.name == "mcp.client.stdio" and "Failed to parse JSONRPC" in str(record.msg):
            return False  # logged to the server's own log by the guard instead
        return True


_QUIET = _OneLine()


def quiet_sdk_logs() -> None:
    """Install the one-line filter on the SDK's client transport loggers (idempotent).

    An idle SSE stream's ``httpx ReadTimeout`` and a garbage stdout line otherwise print a
    ~60-line traceback on the serve console; the connection logs one line per event itself.
    """
    for name in ("mcp.client.stdio", "mcp.client.sse", "mcp.client.streamable_http"):
        logger = logging.getLogger(name)
        if _QUIET not in logger.filters:
            logger.addFilter(_QUIET)
