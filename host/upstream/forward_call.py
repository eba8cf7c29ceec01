"""Forwarding one ``tools/call`` on an entered SDK ``Client``, with truthful outcomes.

Every way a call can end maps to one host error (or a result):

* the SDK's own read timeout (``REQUEST_TIMEOUT``, it sends ``notifications/cancelled``) or the
  outer bound ``timeout_seconds + 5`` → :class:`~host.errors.CallTimeout`;
* the connection was cut (``CONNECTION_CLOSED``, closed/broken streams, transport errors):
  → :class:`~host.errors.UpstreamUnavailable` when the request was provably **not sent**, or
  :class:`~host.errors.CallOutcomeUnknown` when it **was written** to the transport (it may have
  run). "Written" is recorded by :class:`host.upstream.guard.TransportGuard` in the
  call's :class:`~host.upstream.guard.CallSlot`;
* a 404 for a request that carried ``Mcp-Session-Id`` → :class:`SessionExpired` (internal: the
  connection re-initializes and retries that request once; it provably was not processed);
* any other JSON-RPC error → :class:`~host.errors.UpstreamError` (code, message, data kept;
  ``-32700`` when the reply could not be parsed, see the guard).

Progress before the result: the SDK hands each upstream ``notifications/progress`` to a task of
its own and resolves the reply inline, so a reply read right behind the progress lines woke the
caller while the forwards to the downstream client were still running, and the client got the
result before (or without) the progress (conformance ``tools-call-with-progress``, flaky under
load). The forwards started before the reply are awaited (at most :data:`PROGRESS_SETTLE_SECONDS`)
before the result is returned; they did start first, as the SDK schedules each in reading order.

JSON-RPC codes -32000/-32001 are also free for servers to use ("implementation-defined server
errors"), so only the SDK's own local errors (fixed message, no data) mean closed / timed out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import httpx2
from mcp import Client, MCPError
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult, TextContent

from host.errors import CallOutcomeUnknown, CallTimeout, HostError, UpstreamError, UpstreamUnavailable
from host.upstream.executor import ProgressCallback
from host.upstream.guard import CALL_SLOT, CallSlot, TransportGuard
from host.upstream.input_required import InputNotDeclared, SamplingDisabled, current_exchange, run_round
from host.upstream.relay import log_level_meta

__all__ = [
    "INPUT_PENDING_TEXT",
    "OUTER_GRACE_SECONDS",
    "PROGRESS_SETTLE_SECONDS",
    "SessionExpired",
    "call_client_tool",
    "describe_exception",
]

INPUT_PENDING_TEXT = "toolhost: the server needs input from the client (input_required); the client retries the call"
"""Text of the interim result a call returns while its input-required round goes to the client."""

OUTER_GRACE_SECONDS = 5.0
"""Extra time the outer bound waits after the SDK's read timeout (seconds)."""


PROGRESS_SETTLE_SECONDS = 2.0
"""How long a finished call waits for its progress forwards still running (seconds)."""


class _OrderedProgress:
    """A progress callback that counts its running forwards, so the result can wait for them."""

    def __init__(self, callback: ProgressCallback) -> None:
        self._callback = callback
        self._running = 0
        self._idle: anyio.Event | None = None

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self._running += 1
        try:
            await self._callback(progress, total, message)
        finally:
            self._running -= 1
            if self._running == 0 and self._idle is not None:
                self._idle.set()

    async def settle(self) -> None:
        """Wait until the forwards running now are done (bounded by :data:`PROGRESS_SETTLE_SECONDS`)."""
        if self._running:
            self._idle = anyio.Event()
            with anyio.move_on_after(PROGRESS_SETTLE_SECONDS):
                await self._idle.wait()


class SessionExpired(HostError):
    """The streamable-HTTP server answered 404 to a request carrying its session id (an expired session)."""

    def __init__(self, server: str, tool: str) -> None:
        self.server = server
        self.tool = tool
        super().__init__(f"{server}/{tool}: the server forgot the MCP session (HTTP 404 with Mcp-Session-Id)")


def _cut(server: str, tool: str, slot: CallSlot, reason: str) -> HostError:
    if slot.sent:
        return CallOutcomeUnknown(server, tool, reason)
    return UpstreamUnavailable(server, reason)


async def call_client_tool(
    client: Client,
    server: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    timeout_seconds: float,
    progress_callback: ProgressCallback | None = None,
    on_lost: Callable[[str], str | None] | None = None,
    guard: TransportGuard | None = None,
    allow_sampling: bool = True,
) -> CallToolResult:
    """One ``tools/call`` (module docstring).

    Args:
        allow_sampling: the server's ``toolhost.sampling`` (a 2026-07-28 upstream's embedded sampling
            request fails the call when false: an error result naming the setting).
        on_lost: called with a reason when the connection turns out to be closed; may return
            a better reason (e.g. "the server's stdout closed") for the error.
        guard: the session's transport guard (session expiry; sent/not-sent needs it installed).

    Raises:
        CallTimeout, UpstreamUnavailable, CallOutcomeUnknown, UpstreamError, SessionExpired.
    """
    slot = CallSlot()
    token = CALL_SLOT.set(slot)
    ordered = _OrderedProgress(progress_callback) if progress_callback is not None else None
    if ordered is not None:
        progress_callback = ordered
    try:
        with anyio.fail_after(timeout_seconds + OUTER_GRACE_SECONDS):
            result = await _call(client, server, tool, arguments, timeout_seconds, progress_callback, allow_sampling)
            if ordered is not None:
                await ordered.settle()
            return result
    except MCPError as err:
        if guard is not None and guard.session_expired(slot):
            raise SessionExpired(server, tool) from None
        if err.code == REQUEST_TIMEOUT and err.data is None and "timed out" in err.message.lower():
            raise CallTimeout(server, tool, timeout_seconds) from None
        if err.code == CONNECTION_CLOSED and err.data is None and err.message == "Connection closed":
            better = on_lost(err.message) if on_lost is not None else None
            raise _cut(server, tool, slot, better or "connection closed") from None
        raise UpstreamError(server, tool, err.code, err.message, err.data) from None
    except TimeoutError:
        raise CallTimeout(server, tool, timeout_seconds) from None
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, httpx2.TransportError) as err:
        text = describe_exception(err)
        better = on_lost(text) if on_lost is not None else None
        raise _cut(server, tool, slot, better or f"connection lost: {text}") from None
    finally:
        CALL_SLOT.reset(token)


async def _call(
    client: Client, server: str, tool: str, arguments: dict[str, Any], timeout_seconds: float,
    progress_callback: ProgressCallback | None,
    allow_sampling: bool,
) -> CallToolResult:
    exchange = current_exchange()
    meta = log_level_meta(client.protocol_version)
    if exchange is None or client.protocol_version < "2026":
        try:
            return await client.call_tool(
                tool, arguments, read_timeout_seconds=timeout_seconds, progress_callback=progress_callback, meta=meta
            )
        except MCPError as err:  # the SDK drives a 2026-07-28 upstream's rounds and re-raises our refusal
            if SamplingDisabled.raised_for(err, server):
                return _error_result(err.message)
            raise
    # A 2026-07-28 client on both sides: one input round, the client drives the rest.
    try:
        result = await run_round(exchange, lambda responses, state: client.session.call_tool(
            tool, arguments, read_timeout_seconds=timeout_seconds, progress_callback=progress_callback,
            input_responses=responses, request_state=state, allow_input_required=True, meta=meta),
            server=server, allow_sampling=allow_sampling)
    except InputNotDeclared as refused:
        exchange.refused = refused  # answered as the JSON-RPC error by the request handler
        return _error_result(refused.message)
    except SamplingDisabled as refused:  # the tool's own failure, as on the handshake wire
        return _error_result(refused.message)
    if result is None:
        return CallToolResult(content=[TextContent(type="text", text=INPUT_PENDING_TEXT)])
    return result


def _error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def describe_exception(err: BaseException) -> str:
    """A one-line description of an exception, unwrapping exception groups."""
    while isinstance(err, BaseExceptionGroup) and len(err.exceptions) == 1:
        err = err.exceptions[0]
    if isinstance(err, BaseExceptionGroup):
        return "; ".join(describe_exception(e) for e in err.exceptions[:3])
    if isinstance(err, MCPError):
        return f"MCP error {err.code}: {err.message}"
    if isinstance(err, FileNotFoundError):
        return f"command not found: {err.filename or err}"
    text = str(err) or type(err).__name__
    return f"{type(err).__name__}: {text}" if type(err).__name__ not in text else text
