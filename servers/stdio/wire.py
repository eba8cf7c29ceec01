"""``toolhost serve --stdio``: the MCP wire on this process's stdin/stdout, read and written on the
event loop without pipe tasks or worker threads.

The SDK's ``stdio_server`` reads stdin and writes stdout through ``anyio.wrap_file`` (a worker-
thread hop per line) and two pipe tasks joined to the server by memory streams; toolhost's
malformed-line guard (:mod:`servers.stdio.malformed`) added one more task. A request thus crossed
three tasks (plus a thread per line) before the SDK's dispatcher saw it, and every reply one task
and a thread. Here :class:`WireReceive` is the server's read stream: its ``receive`` (the
dispatcher's own loop) reads stdin with non-blocking ``os.read`` (waiting for readability on the
event loop), parses the line, and answers a malformed one itself (:func:`servers.stdio.malformed.line_error`,
same answers and stderr reports as the guard). :class:`WireSend` writes each reply from the task
that sends it with non-blocking ``os.write`` on a private duplicate of fd 1; only when the pipe is
full does the sender wait for writability (one task flushes, the others wait for it), so replies
are never interleaved and a client that stops reading holds the senders back.

Measured with :mod:`host.upstream.stdio_pipe` (numbers there): ~10% less serve CPU per call.

Like the SDK's own claim of the standard streams, fd 1 is pointed at stderr while serving, so a
stray ``print`` cannot corrupt the wire; it is restored on exit. When stdin or stdout is not a pipe,
socket or terminal (e.g. a regular file), the SDK's ``stdio_server`` with the guard serves instead.
"""

from __future__ import annotations

import contextlib
import os
import select
import stat
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import mcp_types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.message import SessionMessage

from host.lines import LineFramer, LineTooLong
from servers.stdio.malformed import (
    OVERSIZED_LINE,
    SKIP,
    LineReporter,
    guarded_read_stream,
    line_error,
    odd_id_error,
    oversized_line_error,
)

__all__ = [
    "CLOSE_TIMEOUT_SECONDS", "HANGUP_POLL_SECONDS", "PAUSE_READING_BYTES", "OversizedLine", "StdinLines", "StdoutWire",
    "WireReceive", "WireSend", "serve_stdio",
]


CLOSE_TIMEOUT_SECONDS = 5.0
"""At shutdown, how long :meth:`StdoutWire.close` waits for the client to read replies still buffered."""
PAUSE_READING_BYTES = 1 << 20
"""Answers waiting for the client to read them (bytes) above which no more requests are read."""
HANGUP_POLL_SECONDS = 0.5
"""While reading is paused, how often stdin is checked for the client's hang-up."""


def usable(fd: int) -> bool:
    """Whether ``fd`` is a pipe, socket or terminal (what non-blocking I/O on the loop needs)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


class StdinLines:
    """Lines of a pipe/socket/tty stdin, read without a worker thread, so cancelling the server
    really stops the read (the SDK's default reader blocks a thread that cannot be interrupted,
    and SIGTERM would wait for the client to close stdin). Lines are decoded as UTF-8 with
    replacement characters, as the SDK's reader does, and split in linear time
    (:class:`host.lines.LineFramer`). A line over ``limit`` bytes (default: the HTTP body limit,
    the SDK's ``DEFAULT_MAX_REQUEST_BODY_SIZE``, 4 MiB) is not kept: it comes out as an
    :class:`OversizedLine` (:class:`WireReceive`, or the guard on the fallback path, answers it)."""

    def __init__(self, fd: int, *, limit: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> None:
        self.fd = fd
        self.eof = False
        self._framer = LineFramer(limit)
        self._ready: deque[bytes | LineTooLong] = deque()
        os.set_blocking(fd, False)

    def __aiter__(self) -> StdinLines:
        return self

    def close(self) -> None:
        """Put ``fd`` back in blocking mode (a pipe shared with the next reader, or a terminal)."""
        with contextlib.suppress(OSError):
            os.set_blocking(self.fd, True)

    async def __anext__(self) -> str:
        while not self._ready:
            if self.eof:
                raise StopAsyncIteration
            await anyio.wait_readable(self.fd)
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                continue
            if chunk:
                self._ready.extend(self._framer.feed(chunk))
            else:
                self.eof = True
                self._ready.extend(self._framer.finish())
        line = self._ready.popleft()
        if isinstance(line, LineTooLong):
            return OversizedLine(line)
        return line.decode("utf-8", "replace")


class OversizedLine(str):
    """A stdin line over the size limit, dropped: :data:`servers.stdio.malformed.OVERSIZED_LINE` (which
    the guard answers on the SDK's fallback path) carrying the :class:`host.lines.LineTooLong` report."""

    too_long: LineTooLong

    def __new__(cls, too_long: LineTooLong) -> OversizedLine:
        line = super().__new__(cls, OVERSIZED_LINE)
        line.too_long = too_long
        return line


class StdoutWire:
    """Messages written whole to a non-blocking pipe/socket ``fd``, in the order they were given.

    :meth:`claim` makes one for the MCP wire on stdout: a private duplicate of fd 1, with fd 1
    itself pointed at stderr until :meth:`close`. :meth:`write` raises ``anyio.BrokenResourceError``
    once the reader closed its end, and :attr:`gone` is set then (:func:`serve_stdio` stops serving:
    a client that cannot read answers must not have calls run for it).
    """

    def __init__(self, fd: int, *, restore: int | None = None) -> None:
        self.fd = fd
        self.restore = restore
        os.set_blocking(fd, False)
        self.pending = bytearray()
        self.broken = False
        self.gone = anyio.Event()
        self._flushing: anyio.Event | None = None

    @classmethod
    def claim(cls) -> StdoutWire:
        """The wire on stdout; fd 1 points at stderr until :meth:`close` gives it back."""
        fd = os.dup(1)
        os.dup2(2, 1)
        return cls(fd, restore=1)

    async def write(self, data: bytes) -> None:
        """Write ``data`` whole, after everything written before; returns once it left the process."""
        if self.broken:
            raise anyio.BrokenResourceError
        if not self.pending:  # the usual case: straight into the pipe, no await
            try:
                n = os.write(self.fd, data)
            except BlockingIOError:
                n = 0
            except OSError as exc:  # EPIPE: the client is gone
                self._break()
                raise anyio.BrokenResourceError from exc
            if n == len(data):
                return
            data = data[n:]
        self.pending += data
        await self.drained()

    async def drained(self) -> None:
        """Return once everything written so far left the process (flushing it if nobody does).

        Raises:
            anyio.BrokenResourceError: the reader went away (what was pending is dropped).
        """
        while self.pending:
            if self._flushing is not None:  # another sender flushes; wait for it
                await self._flushing.wait()
                if self.broken:  # the reader went away: our bytes were dropped with the rest
                    raise anyio.BrokenResourceError
                continue
            self._flushing = anyio.Event()
            try:
                await self._flush()
            finally:
                self._flushing.set()
                self._flushing = None
        if self.broken:
            raise anyio.BrokenResourceError

    async def _flush(self) -> None:
        while self.pending:
            await anyio.wait_writable(self.fd)
            try:
                n = os.write(self.fd, self.pending)
            except BlockingIOError:
                continue
            except OSError as exc:
                self._break()
                raise anyio.BrokenResourceError from exc
            del self.pending[:n]

    def _break(self) -> None:
        self.broken = True
        self.pending.clear()
        self.gone.set()

    def close(self, timeout: float = CLOSE_TIMEOUT_SECONDS) -> None:
        """Write what is still buffered (waiting at most ``timeout`` seconds in all for the reader to
        take it; a client that stopped reading cannot hold the shutdown), then give the claimed fd
        back to the wire."""
        deadline = time.monotonic() + timeout
        poller = select.poll()  # (select.select fails for fds past 1023)
        poller.register(self.fd, select.POLLOUT)
        with contextlib.suppress(OSError):
            while self.pending and not self.broken:
                left = deadline - time.monotonic()
                if left <= 0 or not poller.poll(left * 1000):
                    print(f"toolhost: stdout: {len(self.pending):,} bytes of answers dropped at shutdown (the "
                          f"client did not read them within {timeout:g} s)", file=sys.stderr, flush=True)
                    self.pending.clear()
                    break
                try:
                    del self.pending[: os.write(self.fd, self.pending)]
                except BlockingIOError:
                    continue
        if self.restore is not None:
            with contextlib.suppress(OSError):
                os.set_blocking(self.fd, True)
                os.dup2(self.fd, self.restore)
        with contextlib.suppress(OSError):
            os.close(self.fd)


class WireSend(ObjectSendStream):
    """The server's write stream: each message serialized and written by the task that sends it."""

    def __init__(self, wire: StdoutWire, *, after_send: Callable[[], None] | None = None) -> None:
        self._wire = wire
        self._after_send = after_send
        self._closed = False

    @property
    def wire(self) -> StdoutWire:
        """The wire this stream writes to."""
        return self._wire

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
        await self._wire.write((text + "\n").encode("utf-8"))
        if self._after_send is not None:  # the message left: deferred work (the event log) runs now
            self._after_send()

    async def aclose(self) -> None:
        self._closed = True
        await anyio.lowlevel.checkpoint()


class WireReceive(ObjectReceiveStream):
    """The server's read stream: the next message parsed from stdin; a malformed line is answered
    on the wire and reported on stderr (:mod:`servers.stdio.malformed`), a blank line skipped, and the
    next line read. Raises ``anyio.EndOfStream`` at the end of stdin."""

    last_context = None  # the dispatcher then runs handlers in a copy of the serving task's context

    def __init__(self, lines: StdinLines, write: WireSend, report: Callable[[str], None]) -> None:
        self._lines = lines
        self._write = write
        self._report = report
        self._closed = False

    async def receive(self) -> SessionMessage:
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            if len(self._write.wire.pending) > PAUSE_READING_BYTES:
                await self._until_drained_or_hangup()
            try:
                line = await self._lines.__anext__()
            except StopAsyncIteration:
                raise anyio.EndOfStream from None
            if isinstance(line, OversizedLine):
                reply = oversized_line_error(line.too_long.limit)
                self._report(reply.error.message)
                with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                    await self._write.send(SessionMessage(reply))
                continue
            try:
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except Exception as exc:  # noqa: BLE001 - answered as the SDK's stdio_server would deliver it
                reply = line_error(exc)
            else:
                reply = odd_id_error(line, message)
                if reply is None:
                    return SessionMessage(message)
            if reply is SKIP or reply is None:
                continue
            self._report(reply.error.message)
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self._write.send(SessionMessage(reply))

    async def _until_drained_or_hangup(self) -> None:
        """The client does not read its answers: read no more requests (what waits in memory stays
        bounded) until they left, or until the client hung up stdin (then end as at EOF: without a
        read, EOF would go unnoticed; a hang-up is polled every :data:`HANGUP_POLL_SECONDS`)."""
        wire = self._write.wire
        poller = select.poll()
        poller.register(self._lines.fd, select.POLLIN)
        while len(wire.pending) > PAUSE_READING_BYTES and not wire.broken:
            with anyio.move_on_after(HANGUP_POLL_SECONDS), contextlib.suppress(anyio.BrokenResourceError):
                await wire.drained()
            if any(event & select.POLLHUP for _fd, event in poller.poll(0)):
                raise anyio.EndOfStream

    async def aclose(self) -> None:
        self._closed = True
        await anyio.lowlevel.checkpoint()


async def _until(stop: anyio.Event, action: Callable[[], None]) -> None:
    await stop.wait()
    action()


async def serve_stdio(server: Server[Any], *, stop: anyio.Event, after_send: Callable[[], None] | None = None) -> None:
    """Serve ``server`` over this process's stdin/stdout until EOF of stdin, ``stop`` is set, or the
    client closed its end of stdout (calls in flight are then cancelled, as on EOF). ``after_send``
    runs after each message was written (the event log's deferred writes,
    :meth:`host.events.EventLog.defer`); on the SDK fallback path (stdout not a pipe) it is not
    called and the log's timer writes them (within 50 ms)."""
    direct = usable(0) and usable(1)
    stdin: Any = StdinLines(0) if usable(0) else None
    wire = StdoutWire.claim() if direct else None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_until, stop, tg.cancel_scope.cancel)
            if wire is not None:
                tg.start_soon(_until, wire.gone, tg.cancel_scope.cancel)
                write = WireSend(wire, after_send=after_send)
                read = WireReceive(stdin, write, LineReporter())
                await server.run(read, write, server.create_initialization_options())
            else:
                async with stdio_server(stdin=stdin) as (read, write), \
                        guarded_read_stream(read, write) as checked:  # malformed lines get an answer
                    await server.run(checked, write, server.create_initialization_options())
            tg.cancel_scope.cancel()
    finally:
        if wire is not None:
            wire.close()
        if stdin is not None:
            stdin.close()
