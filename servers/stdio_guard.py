"""Answers for malformed lines on ``toolhost serve --stdio`` (hostile-caller finding).

The SDK's stdio server turns a line it cannot read into an exception on its read stream, and the
server loop drops it: no reply, no log line, so a client that sent ``not json`` or two messages on
one line waits forever. :func:`guarded_read_stream` sits between the SDK's read stream and the
server and answers each such line on stdout, as JSON-RPC 2.0 §5.1 asks (id ``null`` when the id
could not be read):

* a line that is not JSON (or two messages on one line) → ``-32700`` Parse error, with the
  parser's position;
* JSON that is not a JSON-RPC message (``[]``, ``42``, a batch, a missing ``jsonrpc``) →
  ``-32600`` Invalid Request;
* a message with a method that is not a notification but came without a usable id (MCP requests
  need a string or integer id; the SDK reads ``{"id": null, "method": "ping"}`` as a
  notification) → ``-32600``.

Blank lines are skipped silently. Each answered line is also reported on stderr (one line, at
most 200 characters of the reason; never the line's content, which may carry a secret).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.shared.message import SessionMessage
from mcp.types import ErrorData, JSONRPCError, JSONRPCNotification
from pydantic import ValidationError

__all__ = ["guarded_read_stream", "line_error"]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def line_error(item: Any) -> ErrorData | None:
    """The error to answer for one item of the SDK's read stream, or ``None`` to pass it on."""
    if isinstance(item, SessionMessage):
        message = item.message
        if isinstance(message, JSONRPCNotification) and not message.method.startswith("notifications/"):
            return ErrorData(code=INVALID_REQUEST, message=(
                f"Invalid Request: {message.method!r} came without a usable id; MCP requests need a string "
                "or integer id (only notifications/* messages have none)"))
        return None
    if not isinstance(item, Exception):
        return None
    if isinstance(item, ValidationError):
        errors = item.errors()
        if errors and errors[0]["type"] == "json_invalid":
            if str(errors[0].get("input", "x")).strip() == "":
                return ErrorData(code=0, message="")  # a blank line: skipped
            return ErrorData(code=PARSE_ERROR, message=(
                f"Parse error: {errors[0]['msg']}; send one JSON-RPC message per line, as JSON"))
        return ErrorData(code=INVALID_REQUEST, message=(
            "Invalid Request: the line is JSON but not one JSON-RPC message (an object with jsonrpc '2.0' "
            "and a method, or a result/error with an id); batches are not supported"))
    return ErrorData(code=PARSE_ERROR, message=f"Parse error: {type(item).__name__}: {str(item)[:160]}")


@asynccontextmanager
async def guarded_read_stream(read: Any, write: Any) -> AsyncIterator[Any]:
    """A read stream for ``Server.run`` that answers malformed lines itself (module docstring)."""
    send, receive = anyio.create_memory_object_stream[Any](16)

    async def pump() -> None:
        async with send:
            async for item in read:
                error = line_error(item)
                if error is None:
                    await send.send(item)
                    continue
                if error.code == 0:
                    continue
                print(f"toolhost: stdin: {error.message[:200]}", file=sys.stderr, flush=True)
                reply = JSONRPCError(jsonrpc="2.0", id=None, error=error)
                try:
                    await write.send(SessionMessage(reply))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump)
        try:
            yield receive
        finally:
            tg.cancel_scope.cancel()
