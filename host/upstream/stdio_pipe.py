"""The stdio client transport to an upstream server, without the SDK's two pipe tasks.

The SDK's ``stdio_client`` bridges the child's pipes to the session through two tasks and two
zero-buffer memory streams: every request goes caller → memory stream → writer task → pipe, and
every reply pipe → reader task → memory stream → the session's receive loop, i.e. two extra task
switches per call on the hop that every toolhost path takes (the HTTP gateway reaches its
upstreams over stdio too). This transport gives the SDK ``ClientSession`` the same pair of
streams but does the work in the tasks that already run:

* :meth:`PipeSend.send` (the caller's task) serializes the message and writes it to the child's
  stdin (a synchronous write into the event loop's pipe transport, so concurrent callers never
  interleave, then ``drain`` — backpressure while the pipe is full);
* :meth:`PipeReceive.receive` (the session's receive loop) reads the child's stdout, splits lines
  and parses each into a ``SessionMessage`` — or returns the parse error as the item, as the SDK
  does, for :class:`~host.upstream.guard.TransportGuard` to turn into an error for the request it
  names or skip and log. Nothing is read ahead of the consumer (the SDK's backpressure).

Measured together with :mod:`servers.stdio.wire` (same run, 30 alternating rounds of 200
sequential ``call_tool`` calls through ``serve --stdio`` on a loaded 2-core machine, against a
checkout without both): 389 vs 347 calls/s, p50 1.87 vs 2.02 ms, serve + echo CPU 1.71 vs
1.83 ms per call. ``bench/gateway.py --baseline-tree PATH`` reruns it with the issue's tables.

Everything else is the SDK's behaviour: the child is started in a new session (its own process
group) with stderr to ``errlog``; lines are decoded with the configured encoding and error
handler (each line on its own: the spec's stdio messages are newline-delimited UTF-8); a line over
:data:`MAX_LINE_BYTES` (a server's ``toolhost.max_message_mib``) is dropped unread and fails the
request it answers when its id comes first or last (:class:`LineTooLongError`); a failed write (the
child closed stdin or died) ends the read side so the session sees
the connection end; the end of stdout ends the read stream at once; shutdown follows the MCP spec
sequence with the SDK's bounds (stop reading, close stdin so the child exits on its own within
2 s, then SIGTERM/SIGKILL its process group via the SDK's ``terminate_posix_process_tree``), with
stdout drained meanwhile so a child blocked on a full pipe can exit, all shielded from the
caller's cancellation. Windows keeps the SDK's ``stdio_client`` (Job Objects, its own spawn).
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, TextIO

import anyio
import anyio.lowlevel
import mcp_types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp import StdioServerParameters, stdio_client
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from host.lines import LineFramer, LineTooLong
from host.upstream.guard import ID_VALUE

__all__ = ["MAX_LINE_BYTES", "LineTooLongError", "PipeReceive", "PipeSend", "stdio_pipe_client"]

logger = logging.getLogger(__name__)

EXIT_GRACE_SECONDS = 2.0
"""After stdin closes, how long the child may take to exit on its own (the SDK's value)."""
KILL_GRACE_SECONDS = 2.0
"""Between SIGTERM and SIGKILL of the child's group (the SDK's value)."""
_REAP_SECONDS = 2.0
_EXIT_POLL_SECONDS = 0.01
MAX_LINE_BYTES = 16 << 20
"""The default largest message (line) read from an upstream server's stdout: 16 MiB (4 times the
HTTP body limit toolhost accepts from its clients; gRPC's default receive limit is 4 MiB); a
server's ``toolhost.max_message_mib`` changes it (e.g. for a tool returning big images, which are
passed on whole). A server that floods stdout without a newline cannot make toolhost hold more
bytes than that (:class:`host.lines.LineFramer`); parsing a message that fits costs more memory
than its bytes, though: a hostile-caller test measured ~150 bytes per byte for a reply made only of
empty JSON arrays (8 MiB: 1.2 GB peak) and ~10 for plain text."""
_LEADING_ID = re.compile(r'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*' + ID_VALUE)
_TRAILING_ID = re.compile(r'[,{]\s*"id"\s*:\s*' + ID_VALUE + r'\s*\}\s*\r?$')
_STARTS_AS_REQUEST = re.compile(
    r'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?(?:"id"\s*:\s*' + ID_VALUE + r'\s*,\s*)?"method"')
_READ_ERRORS = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)


class LineTooLongError(ValueError):
    """The read stream's item for a stdout line over the limit (dropped unparsed). Its text's first
    line says so and names the setting that raises the limit; a second line ``"id": N`` names the
    request it answers when the line is a reply whose id comes first (``{"jsonrpc": "2.0", "id": N,
    ...``, the Python SDK's order) or last (``{"result": ..., "jsonrpc": "2.0", "id": N}``, the
    TypeScript SDK's), so the transport guard fails that request at once instead of leaving it to
    its timeout (:mod:`host.upstream.guard`). A request or notification of the server (a
    ``method`` key first or right after the id) names none: it answers nothing of ours, even when
    its id equals one in flight (both sides count ids from 0)."""

    def __init__(self, too_long: LineTooLong) -> None:
        head = too_long.head.decode("utf-8", "replace")
        tail = too_long.tail.decode("utf-8", "replace")
        rid = None
        if not _STARTS_AS_REQUEST.match(head):
            m = _LEADING_ID.match(head) or _TRAILING_ID.search(tail)
            rid = m.group(1) if m else None
        mib = too_long.limit / (1 << 20)
        super().__init__(
            f"a message over toolhost's {mib:g} MiB stdio limit ({too_long.limit:,} bytes); ask the tool for "
            "less output or raise toolhost.max_message_mib"
            + (f'\n"id": {rid}' if rid is not None else ""))
        self.too_long = too_long


def parse_line(line: str) -> SessionMessage | Exception:
    """One stdout line as a ``SessionMessage``, or the parse error itself (as the SDK's reader)."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


class PipeReceive(ObjectReceiveStream):
    """The session's read stream: messages parsed from the child's stdout as they are asked for.

    ``receive`` raises ``anyio.EndOfStream`` when stdout ends (or a write found the child gone)
    and ``anyio.ClosedResourceError`` once the stream was closed.
    """

    last_context = None  # no sender context crosses a pipe

    def __init__(self, stdout: Any, encoding: str, errors: str, *, limit: int = MAX_LINE_BYTES) -> None:
        self._stdout = stdout
        self._encoding = encoding
        self._errors = errors
        self._framer = LineFramer(limit)
        self._lines: deque[bytes | LineTooLong] = deque()
        self._ended = False
        self._closed = False
        self._reading: anyio.CancelScope | None = None

    async def receive(self) -> SessionMessage | Exception:
        while not self._lines:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._ended:
                raise anyio.EndOfStream
            chunk = None
            with anyio.CancelScope() as self._reading:
                try:
                    chunk = await self._stdout.receive()
                except _READ_ERRORS:
                    self._ended = True
                    # stdout itself ended: a last line without a newline is still delivered (not
                    # after end()/close(), whose cut-off line would be a spurious parse error)
                    self._lines.extend(self._framer.finish())
                finally:
                    self._reading = None
            if chunk is None:  # stdout ended, or end()/close() cancelled the read
                continue
            self._lines.extend(self._framer.feed(chunk))
        line = self._lines.popleft()
        if isinstance(line, LineTooLong):
            return LineTooLongError(line)
        return parse_line(line.decode(self._encoding, self._errors))

    def end(self) -> None:
        """End the stream: a pending ``receive`` raises ``EndOfStream`` (what is parsed is still delivered)."""
        self._ended = True
        if self._reading is not None:
            self._reading.cancel()

    def close(self) -> None:
        self._closed = True
        self._lines.clear()
        if self._reading is not None:
            self._reading.cancel()

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()


class _NoSenderContext(ObjectReceiveStream):  # pragma: no cover - Windows only
    """The SDK ``stdio_client``'s memory read stream as a :class:`host.upstream.guard.TransportReceive`
    (no sender context crosses a pipe)."""

    last_context = None

    def __init__(self, inner: MemoryObjectReceiveStream[SessionMessage | Exception]) -> None:
        self._inner = inner

    async def receive(self) -> SessionMessage | Exception:
        return await self._inner.receive()

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()


class PipeSend(ObjectSendStream):
    """The session's write stream: each message written to the child's stdin by the sending task.

    ``send`` raises ``anyio.ClosedResourceError`` after ``close`` and ``anyio.BrokenResourceError``
    when the pipe is gone (then the read side ends too, so the session notices).
    """

    def __init__(self, stdin: Any, encoding: str, errors: str, reader: PipeReceive) -> None:
        self._stdin = stdin
        self._encoding = encoding
        self._errors = errors
        self._reader = reader
        self._closed = False

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
        data = (text + "\n").encode(self._encoding, self._errors)
        try:
            await self._stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            # The child may still be alive (it closed stdin): end the read side so the session sees
            # the connection end instead of a request waiting forever (the SDK's writer does the same).
            self._reader.end()
            raise anyio.BrokenResourceError from exc

    def close(self) -> None:
        self._closed = True

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()


@asynccontextmanager
async def stdio_pipe_client(
    server: StdioServerParameters,
    errlog: TextIO = sys.stderr,
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    stderr_sink: Callable[[bytes], None] | None = None,
) -> AsyncIterator[tuple[PipeReceive, PipeSend]]:
    """Start ``server`` and yield ``(read, write)`` streams for an SDK ``Client`` (module docstring);
    a stdout line over ``max_line_bytes`` is dropped (:class:`LineTooLongError`). The child's
    stderr goes to ``errlog``, or, with ``stderr_sink``, through a pipe to ``stderr_sink(chunk)``
    (e.g. a size-capped log, :class:`host.upstream.serverlog.ServerLog`).

    Raises:
        OSError: the command could not be started (e.g. ``FileNotFoundError``).
    """
    if sys.platform == "win32":  # pragma: no cover - Job Objects and the SDK's own spawn
        async with stdio_client(server, errlog=errlog) as (sdk_read, sdk_write):
            yield _NoSenderContext(sdk_read), sdk_write  # type: ignore[misc]
        return
    from mcp.client.stdio import get_default_environment  # the SDK's safe base variables

    process = await anyio.open_process(
        [server.command, *server.args], env=get_default_environment() | (server.env or {}),
        stderr=errlog if stderr_sink is None else subprocess.PIPE, cwd=server.cwd, start_new_session=True,
    )
    errors = server.encoding_error_handler
    read = PipeReceive(process.stdout, server.encoding, errors, limit=max_line_bytes)
    write = PipeSend(process.stdin, server.encoding, errors, read)
    async with anyio.create_task_group() as pumps:
        if stderr_sink is not None and process.stderr is not None:
            pumps.start_soon(_pump_stderr, process.stderr, stderr_sink)
        try:
            yield read, write
        finally:
            with anyio.CancelScope(shield=True):
                read.close()
                write.close()
                await _stop(process)
            pumps.cancel_scope.cancel()


async def _pump_stderr(stream: Any, sink: Callable[[bytes], None]) -> None:
    """Copy the child's stderr to ``sink`` until it closes (a failing sink drops the chunk)."""
    with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        while True:
            chunk = await stream.receive(65536)
            with suppress(Exception):  # a log is a record, not a reason to stop reading
                sink(chunk)


async def _stop(process: Process) -> None:
    """Close stdin, give the child :data:`EXIT_GRACE_SECONDS` to exit, then stop its group; stdout
    is drained meanwhile (a child blocked writing it could not exit). Every wait is bounded."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(_drain, process)
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
        if not await _exited(process, EXIT_GRACE_SECONDS):
            await terminate_posix_process_tree(process, KILL_GRACE_SECONDS)
            if not await _exited(process, _REAP_SECONDS):
                logger.warning("MCP server process %d is still alive after the kill escalation; abandoning it",
                               process.pid)
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()  # a survivor may hold the pipe open: end the drain anyway
        tg.cancel_scope.cancel()
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)  # else it warns at GC while a descendant holds a pipe
    if callable(close):
        with suppress(PermissionError):
            close()


async def _drain(process: Process) -> None:
    with suppress(*_READ_ERRORS, RuntimeError):  # RuntimeError: a cancelled read had not let go yet
        while True:
            await process.stdout.receive()


async def _exited(process: Process, timeout: float) -> bool:
    """Whether the child exited within ``timeout`` s (polling ``returncode``: ``wait()`` would also
    wait for pipe EOF, which a grandchild holding the pipe delays)."""
    deadline = anyio.current_time() + timeout
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(_EXIT_POLL_SECONDS)
    return True
