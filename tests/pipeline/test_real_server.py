"""The pipeline over a real transport: ``flaky`` as a stdio child process behind host.upstream.manager.ServerManager."""

from __future__ import annotations

import sys

import anyio
import pytest

from host.calls import ResultStatus, TextBlock
from host.config import parse_config
from host.pipeline import CallContext, Pipeline
from host.upstream.manager import ServerManager

pytestmark = pytest.mark.anyio


async def stats(pipeline, ctx):
    res = await pipeline.call("flaky__stats", {}, ctx)
    assert res.status is ResultStatus.OK
    return res.structured


async def test_stdio_timeout_cancels_the_handler_and_errors_are_classified(tmp_path):
    cfg = parse_config({"mcpServers": {"flaky": {
        "command": sys.executable, "args": ["-m", "servers.examples.flaky"],
        "toolhost": {"tools": {"slow": {"timeout_seconds": 0.5}}},
    }}})
    with anyio.fail_after(60):
        async with ServerManager(cfg, data_dir=tmp_path) as manager:
            pipeline = Pipeline(manager.registry, manager, spill_dir=tmp_path / "spill")
            ctx = CallContext(conversation_id="real")

            res = await pipeline.call("flaky__slow", {"seconds": 30}, ctx, call_id="c7")
            assert res.status is ResultStatus.TIMEOUT and res.call_id == "c7"
            # notifications/cancelled reached the child: its handler was cancelled, not left running.
            with anyio.fail_after(5):
                while (s := await stats(pipeline, ctx))["slow_cancelled"] < 1:
                    await anyio.sleep(0.05)
            assert (s["slow_started"], s["slow_cancelled"], s["slow_finished"]) == (1, 1, 0)

            err = await pipeline.call("flaky__lookup_order", {"order_id": "Z9"}, ctx)
            assert err.status is ResultStatus.TOOL_ERROR and err.content == [TextBlock(text="no such order: Z9")]

            limited = await pipeline.call("flaky__rate_limited", {}, ctx)
            assert limited.status is ResultStatus.RATE_LIMITED and limited.error.retry_after_seconds == 7

            upstream = await pipeline.call("flaky__protocol_error", {}, ctx)
            assert upstream.status is ResultStatus.UPSTREAM_ERROR and upstream.error.details["mcp_code"] == -32602

            ok = await pipeline.call("flaky__slow", {"seconds": 0.01}, ctx)
            assert ok.status is ResultStatus.OK and ok.text == "slept 0.01 s"


async def test_stdio_batch_cancel_cancels_running_handlers_and_skips_waiting_calls(tmp_path):
    from host.calls import ToolCall
    from host.pipeline import BatchCancel

    cfg = parse_config({"mcpServers": {"flaky": {"command": sys.executable, "args": ["-m", "servers.examples.flaky"]}}})
    with anyio.fail_after(60):
        async with ServerManager(cfg, data_dir=tmp_path) as manager:
            pipeline = Pipeline(manager.registry, manager, spill_dir=tmp_path / "spill")
            cancel = BatchCancel()
            calls = [ToolCall(call_id="a", name="flaky__slow", raw_arguments='{"seconds": 30}'),
                     ToolCall(call_id="b", name="flaky__slow", raw_arguments='{"seconds": 30}', index=1),
                     ToolCall(call_id="w", name="flaky__increment", raw_arguments='{"key": "x"}', index=2)]
            out = []
            probe = CallContext(conversation_id="probe")
            async with anyio.create_task_group() as tg:
                async def run():
                    out.extend(await pipeline.run_batch(calls, CallContext(conversation_id="b", cancel=cancel)))
                tg.start_soon(run)
                with anyio.fail_after(10):
                    while (await stats(pipeline, probe))["slow_started"] < 2:
                        await anyio.sleep(0.05)
                cancel.cancel("stop pressed")
            assert [r.status for r in out] == [ResultStatus.CANCELLED, ResultStatus.CANCELLED,
                                               ResultStatus.NOT_EXECUTED]
            with anyio.fail_after(5):
                while (s := await stats(pipeline, probe))["slow_cancelled"] < 2:
                    await anyio.sleep(0.05)
            assert (s["slow_finished"], s["counters"]) == (0, {})
