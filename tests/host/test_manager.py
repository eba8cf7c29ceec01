"""Connecting real stdio servers: failures are isolated and reported; calls map errors truthfully."""

from __future__ import annotations

import sys

import anyio
import pytest

from host.config import parse_config
from host.errors import CallOutcomeUnknown, CallTimeout, UpstreamError, UpstreamUnavailable
from host.upstream.connection import ConnectionState
from host.upstream.manager import ServerManager
from registry import Risk

pytestmark = pytest.mark.anyio

PY = sys.executable


def config(servers: dict, connect_timeout: float = 20) -> object:
    return parse_config({"toolhost": {"connect_timeout_seconds": connect_timeout}, "mcpServers": servers})


async def test_broken_servers_do_not_block_or_crash_the_others(tmp_path):
    cfg = config({
        "orders": {"command": PY, "args": ["-m", "servers.examples.orders"]},
        "crashes": {"command": PY, "args": ["-c", "import sys; sys.stderr.write('boom: API key missing\\n'); "
                                                  "sys.exit(3)"]},
        "missing": {"command": "/nonexistent/mcp-server"},
        "hangs": {"command": PY, "args": ["-c", "import time; time.sleep(600)"],
                  "toolhost": {"connect_timeout_seconds": 2}},
    })
    with anyio.fail_after(40):
        async with ServerManager(cfg, data_dir=tmp_path) as m:
            st = {s.name: s for s in m.statuses()}
            assert st["orders"].state is ConnectionState.CONNECTED and st["orders"].tool_count == 3
            assert st["crashes"].state is ConnectionState.FAILED
            assert "boom: API key missing" in st["crashes"].stderr_tail
            assert st["missing"].state is ConnectionState.FAILED
            assert st["missing"].error == ("start: mcpServers.missing.command: '/nonexistent/mcp-server' does "
                                           "not exist (fix the path)")
            assert st["hangs"].state is ConnectionState.FAILED
            assert st["hangs"].error == ("handshake: no answer within the connect timeout of 2 s (raise "
                                         "mcpServers.hangs.toolhost.connect_timeout_seconds for a slow server)")
            assert m.connected() == ["orders"]
            assert sorted(t.qualified_name for t in m.registry.tools()) == [
                "orders__cancel_order", "orders__get_order", "orders__list_orders"]
            result = await m.call_tool("orders", "get_order", {"order_id": "A1003"}, timeout_seconds=10)
            assert result.structured_content["status"] == "shipped"
            with pytest.raises(UpstreamUnavailable) as e:
                await m.call_tool("crashes", "anything", {}, timeout_seconds=10)
            assert e.value.server == "crashes"
    log = (tmp_path / "logs" / "crashes.stderr.log").read_text()
    assert "boom: API key missing" in log


async def test_toolhost_block_filters_and_overrides(tmp_path):
    cfg = config({"shop": {"command": PY, "args": ["-m", "servers.examples.orders"], "toolhost": {
        "prefix": "o", "disabled": ["list_orders"], "risk": {"get_order": "write"},
        "timeout_seconds": 4, "always_load": ["get_order"]}}})
    with anyio.fail_after(30):
        async with ServerManager(cfg, data_dir=tmp_path) as m:
            tools = {t.qualified_name: t for t in m.registry.tools()}
    assert sorted(tools) == ["o__cancel_order", "o__get_order"]
    assert tools["o__get_order"].risk is Risk.WRITE and tools["o__get_order"].always_load
    assert tools["o__cancel_order"].risk is Risk.DESTRUCTIVE and tools["o__cancel_order"].timeout_seconds == 4
    assert tools["o__cancel_order"].original_name == "cancel_order" and tools["o__cancel_order"].server == "shop"


async def test_call_errors_are_classified(tmp_path):
    cfg = config({"flaky": {"command": PY, "args": ["-m", "servers.examples.orders"]}})
    with anyio.fail_after(30):
        async with ServerManager(cfg, data_dir=tmp_path) as m:
            not_found = await m.call_tool("flaky", "get_order", {"order_id": "nope"}, timeout_seconds=10)
            assert not_found.is_error and "no order with id 'nope'" in not_found.content[0].text
            with pytest.raises(UpstreamUnavailable):
                await m.call_tool("other", "x", {}, timeout_seconds=1)


async def test_timeout_cancels_upstream_and_errors_keep_code_and_data(tmp_path):
    cfg = config({"flaky": {"command": PY, "args": ["-m", "servers.examples.flaky"]}})
    with anyio.fail_after(40):
        async with ServerManager(cfg, data_dir=tmp_path) as m:
            with pytest.raises(CallTimeout) as t:
                await m.call_tool("flaky", "slow", {"seconds": 30}, timeout_seconds=0.5)
            assert (t.value.server, t.value.tool, t.value.timeout_seconds) == ("flaky", "slow", 0.5)
            # The SDK sent notifications/cancelled: the upstream handler was cancelled, not left running.
            stats = None
            for _ in range(50):
                stats = (await m.call_tool("flaky", "stats", {}, timeout_seconds=5)).structured_content
                if stats["slow_cancelled"]:
                    break
                await anyio.sleep(0.05)  # the cancel notification is asynchronous; poll the server's own state
            assert stats["slow_started"] == 1 and stats["slow_cancelled"] == 1 and stats["slow_finished"] == 0
            with pytest.raises(UpstreamError) as e:
                await m.call_tool("flaky", "protocol_error", {}, timeout_seconds=5)
            assert (e.value.code, e.value.data) == (-32602, {"field": "x"})
            with pytest.raises(UpstreamError) as r:
                await m.call_tool("flaky", "rate_limited", {}, timeout_seconds=5)
            assert r.value.error_message == "Rate limit exceeded" and r.value.data["retryAfter"] > 0


DYING_SERVER = '''
import os
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
app = MCPServer("dying", log_level="WARNING")

@app.tool(annotations=ToolAnnotations(read_only_hint=True))
async def ping() -> str:
    return "pong"

@app.tool()
async def die() -> str:
    os._exit(1)

app.run()
'''


async def test_dead_server_fails_fast_then_reconnects_and_relists(tmp_path):
    script = tmp_path / "dying.py"
    script.write_text(DYING_SERVER)
    cfg = config({"dying": {"command": PY, "args": [str(script)]}})
    reconnected = anyio.Event()
    states: list[ConnectionState] = []

    def on_status(status) -> None:
        if not states or states[-1] is not status.state:
            states.append(status.state)
        if status.state is ConnectionState.CONNECTED and ConnectionState.BACKING_OFF in states:
            reconnected.set()

    with anyio.fail_after(40):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=True, on_status=on_status) as m:
            assert (await m.call_tool("dying", "ping", {}, timeout_seconds=30)).content[0].text == "pong"
            with anyio.fail_after(10):  # far below the 30 s call timeout: the dead transport is noticed at once
                with pytest.raises(CallOutcomeUnknown) as e:  # it was sent: it may have run
                    await m.call_tool("dying", "die", {}, timeout_seconds=30)
            assert (e.value.server, e.value.tool) == ("dying", "die")
            assert e.value.reason == "connection: the server process exited (its stdout closed)"
            with pytest.raises(UpstreamUnavailable):  # until reconnected, calls fail fast too
                await m.call_tool("dying", "ping", {}, timeout_seconds=30)
            await reconnected.wait()
            assert states == [ConnectionState.CONNECTING, ConnectionState.CONNECTED, ConnectionState.BACKING_OFF,
                              ConnectionState.CONNECTING, ConnectionState.CONNECTED]
            assert [t.qualified_name for t in m.registry.tools()] == ["dying__die", "dying__ping"]
            assert (await m.call_tool("dying", "ping", {}, timeout_seconds=30)).content[0].text == "pong"
