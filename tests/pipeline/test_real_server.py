"""The pipeline over a real transport: ``flaky`` as a stdio child process behind host.manager.ServerManager."""

from __future__ import annotations

import sys

import anyio
import pytest

from host.calls import ResultStatus, TextBlock
from host.config import parse_config
from host.manager import ServerManager
from host.pipeline import CallContext, Pipeline

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
