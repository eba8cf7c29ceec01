"""Answers for malformed lines on ``toolhost serve --stdio`` (hostile-caller finding).

The SDK's stdio server turns a line it cannot read into an exception on its read stream, and the
server loop drops it: no reply, no log line, so a client that sent ``not json`` or two messages on
one line waits forever. :func:`guarded_read_stream` sits between the SDK's read stream and the
server and answers each such line on stdout, as JSON-RPC 2.0 §5.1 asks (id ``null`` when the id
could not be read):

* a line that is not JSON (or two messages on one line) → ``-32700`` Parse error, with the
  parser's position;
* JSON that is not a JSON-RPC message (``[]``, ``42``, a batch, a missing ``jsonrpc``, params
  of the wrong type) → ``-32600`` Invalid Request, with the message's id when it can be read (so
  the client's waiting request ends) and ``null`` otherwise.

What the SDK reads as a notification gets no answer, as JSON-RPC §4.1 requires (this includes a
request sent with ``"id": null``, which the SDK cannot tell from a notification). Blank lines are
skipped silently. Answered lines are reported on stderr (the reason, at most 200 characters,
never the line's content, which may carry a secret), at most one line a second with a count of
the others, so a client that never reads stderr cannot block the server on a full pipe.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.message import SessionMessage
from mcp.types import ErrorData, JSONRPCError, JSONRPCMessage, JSONRPCNotification
from pydantic import ValidationError

from servers.observability.report_throttle import ReportThrottle

__all__ = [
    "OVERSIZED_LINE", "SKIP", "LineReporter", "guarded_read_stream", "line_error", "odd_id_error",
    "oversized_line_error",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


OVERSIZED_LINE = "\x00toolhost: line over the stdio message limit\x00"
"""What the SDK's reader gets for a stdin line over the limit (``servers.stdio.wire.OversizedLine``):
not JSON, and answered by :func:`line_error` with :func:`oversized_line_error`."""


def line_error(item: Any, *, limit: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> JSONRPCError | None:
    """The answer for one item of the SDK's read stream, or ``None`` to pass it on (blank lines:
    :data:`SKIP`); ``limit`` is the stdin line limit named for an :data:`OVERSIZED_LINE`."""
    if not isinstance(item, Exception):
        return None
    if isinstance(item, ValidationError):
        errors = item.errors()
        if errors and errors[0].get("input") == OVERSIZED_LINE:
            return oversized_line_error(limit)
        if errors and errors[0]["type"] == "json_invalid":
            if str(errors[0].get("input", "x")).strip() == "":
                return SKIP
            return _reply(None, PARSE_ERROR, (
                f"Parse error: {errors[0]['msg']}; send one JSON-RPC message per line, as JSON"))
        return _reply(_readable_id(errors), INVALID_REQUEST, (
            "Invalid Request: the line is JSON but not one valid JSON-RPC message (an object with "
            "jsonrpc '2.0' and a method with object params, or a result/error with an id); batches "
            "are not supported"))
    return _reply(None, PARSE_ERROR, f"Parse error: {type(item).__name__}: {str(item)[:160]}")


def odd_id_error(line: str, message: JSONRPCMessage) -> JSONRPCError | None:
    """The answer for a line the SDK read as a notification although it carries an ``id`` that is
    not a string or integer (``null``, ``1.5``, ``true``, an object): a request the client awaits,
    so it gets ``-32600`` with ``id: null`` (JSON-RPC 2.0 section 5: the id could not be used)
    instead of silence; ``None`` for every other message. The id rule and its wording are HTTP's
    (:func:`servers.http.transport.id_problem`). Costs one substring test per notification."""
    from servers.http.transport import id_problem  # lazy: only for such lines

    if not isinstance(message, JSONRPCNotification) or '"id"' not in line:
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    problem, _keys = id_problem(data, ())
    return None if problem is None else _reply(None, INVALID_REQUEST, problem)


def oversized_line_error(limit: int) -> JSONRPCError:
    """The answer for a stdin line longer than ``limit`` bytes (dropped unread, so its id is
    unknown: ``null``, JSON-RPC 2.0 section 5): ``-32600`` naming the limit, as HTTP answers a body
    over the same limit with 413."""
    return _reply(None, INVALID_REQUEST, (
        f"Invalid Request: a line of more than {limit:,} bytes is over toolhost's stdio message limit "
        f"({limit // (1 << 20)} MiB, the same as its HTTP body limit); "
        "send smaller arguments (large inputs belong in a file or resource the tool reads)"))


def _readable_id(errors: list[Any]) -> str | int | None:
    for error in errors:
        data = error.get("input")
        if isinstance(data, dict) and "id" in data:
            rid = data["id"]
            if isinstance(rid, str | int) and not isinstance(rid, bool):
                return rid
    return None


def _reply(rid: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=code, message=message))


SKIP = _reply(None, 0, "")
"""Marker answer: drop the line without a reply (a blank line)."""


class LineReporter:
    """Reports answered lines on stderr: the reason (at most 200 characters, never the line), at
    most one report a second with a count of the ones held back (module docstring)."""

    def __init__(self) -> None:
        self._throttle = ReportThrottle(1.0)

    def __call__(self, reason: str) -> None:
        held = self._throttle.allow()
        if held is None:
            return
        more = f" ({held} more malformed lines in the last second)" if held else ""
        print(f"toolhost: stdin: {reason[:200]}{more}", file=sys.stderr, flush=True)


@asynccontextmanager
async def guarded_read_stream(read: Any, write: Any) -> AsyncIterator[Any]:
    """A read stream for ``Server.run`` that answers malformed lines itself (module docstring).

    For the SDK's ``stdio_server`` streams; :mod:`servers.stdio.wire` applies :func:`line_error`
    and :class:`LineReporter` inline instead (no pump task).
    """
    send, receive = anyio.create_memory_object_stream[Any](16)
    report = LineReporter()

    async def pump() -> None:
        async with send:
            async for item in read:
                reply = line_error(item)
                if reply is None:
                    await send.send(item)
                    continue
                if reply is SKIP:
                    continue
                report(reply.error.message)
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
