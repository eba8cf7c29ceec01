"""The upstream stdio transport (:mod:`host.upstream.stdio_pipe`) against real child processes.

Through the connection (garbage skipped, EOF at once, fault injection) it is covered by
``test_stdio_failures.py`` and ``test_fault_injection.py``; these pin the transport's own
contract: line framing, a child that closed its stdin, and shutdown of a child that floods stdout.
"""

from __future__ import annotations

import sys
import time

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCNotification, JSONRPCResponse

from host.upstream.stdio_pipe import EXIT_GRACE_SECONDS, stdio_pipe_client

pytestmark = pytest.mark.anyio


def _child(code: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-c", code], encoding_error_handler="replace")


async def test_lines_are_framed_across_writes_and_bad_ones_come_back_as_errors_in_order() -> None:
    code = (
        "import os, time\n"
        "os.write(1, b'{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\\nnot json\\n{\"jsonrpc\":\"2.0\",')\n"
        "time.sleep(0.2)\n"
        "os.write(1, b'\"id\":2,\"result\":{\"t\":\"\\xff\"}}\\n')\n"
    )
    with anyio.fail_after(30):
        async with stdio_pipe_client(_child(code)) as (read, _write):
            first, bad, third = [await read.receive() for _ in range(3)]
            with pytest.raises(anyio.EndOfStream):  # the child exited: its stdout closed
                await read.receive()
    assert isinstance(first, SessionMessage) and first.message == JSONRPCResponse(jsonrpc="2.0", id=1, result={})
    assert isinstance(bad, ValueError) and "Invalid JSON" in str(bad)
    assert isinstance(third, SessionMessage)
    assert third.message == JSONRPCResponse(jsonrpc="2.0", id=2, result={"t": "\ufffd"})  # invalid UTF-8 replaced


async def test_a_child_that_closed_its_stdin_fails_the_send_and_ends_the_read_side() -> None:
    code = "import os, time\nos.close(0)\nprint('closed', flush=True)\ntime.sleep(30)\n"
    message = SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"))
    with anyio.fail_after(30):
        async with stdio_pipe_client(_child(code)) as (read, write):
            assert isinstance(await read.receive(), ValueError)  # the 'closed' line is not JSON-RPC
            async with anyio.create_task_group() as tg:
                ended = anyio.Event()

                async def reader() -> None:
                    with pytest.raises(anyio.EndOfStream):
                        await read.receive()
                    ended.set()

                tg.start_soon(reader)
                await anyio.wait_all_tasks_blocked()
                with pytest.raises(anyio.BrokenResourceError):
                    for _ in range(100):  # the first writes may still land in the pipe buffer
                        await write.send(message)
                await ended.wait()  # the session's receive loop sees the end, the child still runs
            started = time.monotonic()
        stopped = time.monotonic() - started
    assert stopped >= EXIT_GRACE_SECONDS - 0.1  # it ignored stdin EOF: stopped by signal after the grace


async def test_shutdown_drains_a_child_blocked_on_a_full_stdout_so_it_exits_by_itself() -> None:
    code = "import os, sys\nos.write(1, b'x' * 1_000_000)\nsys.stdin.read()\nsys.exit(7)\n"
    with anyio.fail_after(30):
        async with stdio_pipe_client(_child(code)) as (_read, _write):
            await anyio.sleep(0)  # nobody reads: the child blocks on its full stdout
            started = time.monotonic()
        stopped = time.monotonic() - started
    assert stopped < EXIT_GRACE_SECONDS  # drained, saw stdin EOF and exited without a signal


async def test_progress_forwards_finish_before_the_result_even_when_the_reply_arrives_with_them(tmp_path) -> None:
    """Conformance ``tools-call-with-progress`` was flaky: the SDK forwards progress in tasks of its
    own and resolved the reply read right behind them first, so the result overtook the progress."""
    from host.upstream.manager import ServerManager
    from tests.upstream.support import config, hostile

    forwarded: list[tuple[float, float | None]] = []

    async def slow_downstream(progress: float, total: float | None, message: str | None) -> None:
        await anyio.sleep(0.05)  # a forward that has to wait for the downstream client
        forwarded.append((progress, total))

    with anyio.fail_after(30):
        async with ServerManager(config({"p": hostile(progress_tool=True)}), data_dir=tmp_path) as m:
            for _ in range(3):
                forwarded.clear()
                res = await m.call_tool("p", "progress", {"steps": 3}, timeout_seconds=10,
                                        progress_callback=slow_downstream)
                assert res.content[0].text == "done"
                assert forwarded == [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]
