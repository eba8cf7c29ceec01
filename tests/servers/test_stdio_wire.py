"""The loop-native stdio wire of ``toolhost serve --stdio`` (:mod:`servers.stdio.wire`) on real pipes.

End to end (a real ``serve --stdio`` process, malformed lines answered) is
``tests/servers/test_stdio_guard.py``; these check what only shows under pressure: a full pipe,
many senders at once, a reader that went away.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import termios
import time

import anyio
import pytest
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCNotification, JSONRPCRequest

from servers.stdio.wire import PAUSE_READING_BYTES, StdinLines, StdoutWire, WireReceive, WireSend

pytestmark = pytest.mark.anyio


async def _read_all(fd: int, want_lines: int) -> list[bytes]:
    os.set_blocking(fd, False)
    data = b""
    while data.count(b"\n") < want_lines:
        await anyio.wait_readable(fd)
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            continue
        assert chunk, "the pipe closed early"
        data += chunk
    return data.split(b"\n")[:-1]


async def test_concurrent_senders_on_a_full_pipe_wait_and_every_message_arrives_whole_in_send_order() -> None:
    r, w = os.pipe()
    wire = StdoutWire(w)
    sent: list[int] = []
    done = anyio.Event()
    finished = 0

    async def sender(i: int) -> None:
        nonlocal finished
        sent.append(i)  # no await before write(): the send order is the order of this list
        await wire.write(json.dumps({"i": i, "pad": str(i) * 40_000}).encode() + b"\n")
        finished += 1
        if finished == 20:
            done.set()

    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for i in range(20):
                    tg.start_soon(sender, i)
                await anyio.wait_all_tasks_blocked()
                assert finished < 20  # ~800 kB cannot fit a pipe: senders wait for the reader
                assert wire.pending  # what did not fit is held, not dropped
                lines = await _read_all(r, 20)
                await done.wait()
    finally:
        wire.close()
        os.close(r)
    got = [json.loads(line) for line in lines]
    assert [m["i"] for m in got] == sent
    assert all(m["pad"] == str(m["i"]) * 40_000 for m in got)
    assert not wire.pending


async def test_a_reader_that_went_away_breaks_the_wire_for_every_sender() -> None:
    r, w = os.pipe()
    os.close(r)
    wire = StdoutWire(w)
    try:
        with anyio.fail_after(10):
            with pytest.raises(anyio.BrokenResourceError):
                await wire.write(b'{"jsonrpc":"2.0","id":1,"result":{}}\n')
            assert wire.broken and wire.gone.is_set()
            with pytest.raises(anyio.BrokenResourceError):
                await WireSend(wire).send(SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="x")))
    finally:
        wire.close()


async def test_receive_parses_lines_answers_malformed_ones_on_the_wire_and_ends_at_eof() -> None:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    reported: list[str] = []
    wire = StdoutWire(out_w)
    read = WireReceive(StdinLines(in_r), WireSend(wire), reported.append)
    os.write(in_w, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\nnot json\n\n{"jsonrpc":"2.0","id":2,"me')
    try:
        with anyio.fail_after(10):
            first = await read.receive()
            assert first.message == JSONRPCRequest(jsonrpc="2.0", id=1, method="ping")

            async def finish_the_line() -> None:
                await anyio.wait_all_tasks_blocked()
                os.write(in_w, b'thod":"ping"}\n')  # the rest of a line split across reads
                os.close(in_w)

            async with anyio.create_task_group() as tg:
                tg.start_soon(finish_the_line)
                second = await read.receive()
            assert second.message == JSONRPCRequest(jsonrpc="2.0", id=2, method="ping")
            with pytest.raises(anyio.EndOfStream):
                await read.receive()
            (answer,) = await _read_all(out_r, 1)
    finally:
        wire.close()
        os.close(in_r)
        os.close(out_r)
    error = json.loads(answer)
    assert error["id"] is None and error["error"]["code"] == -32700  # the blank line got no answer
    assert error["error"]["message"].startswith("Parse error: Invalid JSON: expected ident at line 1 column 2")
    assert reported == [error["error"]["message"]]


async def test_a_line_over_the_limit_is_answered_without_being_held_and_the_next_line_is_read() -> None:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    reported: list[str] = []
    wire = StdoutWire(out_w)
    read = WireReceive(StdinLines(in_r, limit=1 << 20), WireSend(wire), reported.append)
    try:
        with anyio.fail_after(10):

            async def put(data: bytes) -> None:
                while data:
                    await anyio.wait_writable(in_w)
                    try:
                        data = data[os.write(in_w, data):]
                    except BlockingIOError:
                        continue

            async def write_all() -> None:
                os.set_blocking(in_w, False)
                await put(b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"')
                for _ in range(64):  # 4 MiB, read in pieces: the reader never holds more than its limit
                    await put(b"x" * (1 << 16))
                await put(b'"}}\n{"jsonrpc":"2.0","id":4,"method":"ping"}\n')

            async with anyio.create_task_group() as tg:
                tg.start_soon(write_all)
                message = await read.receive()
            assert message.message == JSONRPCRequest(jsonrpc="2.0", id=4, method="ping")
            (answer,) = await _read_all(out_r, 1)
    finally:
        wire.close()
        for fd in (in_r, in_w, out_r):
            os.close(fd)
    error = json.loads(answer)
    assert error == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": (
        "Invalid Request: a line of more than 1,048,576 bytes is over toolhost's stdio message limit (1 MiB, the "
        "same as its HTTP body limit); send smaller arguments (large inputs belong in a file or resource the tool "
        "reads)")}}
    assert reported == [error["error"]["message"]]


def test_close_gives_up_on_a_reader_that_stopped_reading_after_its_timeout() -> None:
    r, w = os.pipe()
    wire = StdoutWire(w)
    stuck = b"x" * (1 << 20)  # far more than a pipe holds: most of it stays pending
    with pytest.raises(BlockingIOError):
        while True:
            os.write(w, stuck)  # fill the pipe first: nobody reads r
    wire.pending += stuck
    t0 = time.monotonic()
    wire.close(timeout=0.2)  # returns (the pending bytes dropped) instead of blocking for ever
    waited = time.monotonic() - t0
    os.close(r)
    assert not wire.pending
    assert 0.2 <= waited < 5
    with pytest.raises(OSError):
        os.fstat(w)  # the wire's fd is closed


async def test_no_request_is_read_while_the_client_is_not_reading_its_answers() -> None:
    """Hostile-caller finding: a client that never read stdout had every request read and run, its
    answers queued in memory (25 MB/s, 1.3 GB), and SIGTERM took minutes. Past
    PAUSE_READING_BYTES of unread answers, requests wait in the client's pipe until answers left."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    wire = StdoutWire(out_w)
    read = WireReceive(StdinLines(in_r), WireSend(wire), [].append)
    request = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    try:
        with anyio.fail_after(10):
            with pytest.raises(BlockingIOError):
                while True:
                    os.write(out_w, b"x" * 65536)  # the client's end is full: it stopped reading
            wire.pending += b"a" * PAUSE_READING_BYTES + b"nswers that do not fit\n"
            os.write(in_w, request)
            got: list[SessionMessage] = []

            async def receive() -> None:
                got.append(await read.receive())
                tg.cancel_scope.cancel()  # the client's reading is done too

            async def client_reads_again() -> None:
                os.set_blocking(out_r, False)
                while True:
                    await anyio.wait_readable(out_r)
                    with contextlib.suppress(BlockingIOError):
                        os.read(out_r, 1 << 20)

            async with anyio.create_task_group() as tg:
                tg.start_soon(receive)
                await anyio.wait_all_tasks_blocked()
                assert got == []
                assert fcntl.ioctl(in_r, termios.FIONREAD, b"\0\0\0\0") == len(request).to_bytes(4, "little")
                tg.start_soon(client_reads_again)  # answers leave, then the request is read
            assert got[0].message == JSONRPCRequest(jsonrpc="2.0", id=1, method="ping")
            assert len(wire.pending) <= PAUSE_READING_BYTES
    finally:
        wire.close(timeout=0)
        for fd in (in_r, in_w, out_r):
            os.close(fd)


async def test_a_client_that_hangs_up_stdin_while_reading_is_paused_ends_the_session() -> None:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    wire = StdoutWire(out_w)
    read = WireReceive(StdinLines(in_r), WireSend(wire), [].append)
    try:
        with anyio.fail_after(10):
            with pytest.raises(BlockingIOError):
                while True:
                    os.write(out_w, b"x" * 65536)
            wire.pending += b"x" * (PAUSE_READING_BYTES + 1)
            os.write(in_w, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
            os.close(in_w)  # the client closes stdin (spec shutdown) but never reads stdout
            with pytest.raises(anyio.EndOfStream):
                await read.receive()
    finally:
        wire.close(timeout=0)
        os.close(in_r)
        os.close(out_r)


def test_stdin_is_blocking_again_after_serving() -> None:
    r, w = os.pipe()
    lines = StdinLines(r)
    assert not os.get_blocking(r)
    lines.close()
    assert os.get_blocking(r)  # the next reader of a shared pipe (or a terminal) gets it as it was
    os.close(r)
    os.close(w)


async def test_after_send_runs_once_the_message_is_in_the_pipe_and_not_when_the_write_fails() -> None:
    r, w = os.pipe()
    seen: list[bytes] = []
    os.set_blocking(r, False)
    send = WireSend(StdoutWire(w), after_send=lambda: seen.append(os.read(r, 1 << 16)))
    with anyio.fail_after(10):
        await send.send(SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/x")))
        assert seen == [b'{"jsonrpc":"2.0","method":"notifications/x"}\n']  # the bytes were readable by then
        os.close(r)
        with pytest.raises(anyio.BrokenResourceError):
            await send.send(SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/y")))
    assert len(seen) == 1
    send.wire.close(timeout=0)
