"""Resource subscriptions and logs of a 2026-07-28 upstream through toolhost, without ``protocol: "legacy"``.

Real upstream: our conformance fixture (stdio) on the default protocol (2026-07-28; it serves
``subscriptions/listen`` and announces ``test://watched-resource`` changes with
``test_touch_watched_resource``). Downstream: the SDK ``Client`` in-process on a handshake-era
session (``resources/subscribe``, ``logging/setLevel``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import ResourceUpdatedNotification

from host.config import parse_config
from host.runtime import HostRuntime
from servers.gateway.server import create_registry_server

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests/peers/conformance_server.py"
WATCHED = "toolhost://fx/test://watched-resource"

pytestmark = pytest.mark.anyio


def _config() -> Any:
    return parse_config({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {
        "fx": {"command": sys.executable, "args": [str(FIXTURE), "--stdio"]}}})


async def test_a_subscription_on_a_2026_upstream_rides_its_listen_stream(tmp_path) -> None:
    updates: list[str] = []
    got = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            updates.append(str(message.params.uri))
            got.set()

    with anyio.fail_after(90):
        async with HostRuntime(_config(), data_dir=tmp_path / "data") as rt:
            conn = rt.manager.connection("fx")
            assert conn.status.protocol_version == "2026-07-28"
            server = create_registry_server(rt, expose="all")
            async with Client(server, mode="legacy", message_handler=on_message) as c:
                await c.subscribe_resource(WATCHED)
                assert conn.listener.subscriptions == frozenset({"test://watched-resource"})
                await c.call_tool("fx__test_touch_watched_resource", {})
                await got.wait()
                assert updates == [WATCHED]
                await c.unsubscribe_resource(WATCHED)
                assert conn.listener.subscriptions == frozenset()


async def test_logs_of_a_2026_upstream_reach_the_caller_at_its_level(tmp_path) -> None:
    received: list[tuple[str, Any]] = []

    async def on_log(params: Any) -> None:
        received.append((params.level, params.data))

    with anyio.fail_after(90):
        async with HostRuntime(_config(), data_dir=tmp_path / "data") as rt:
            assert rt.manager.connection("fx").status.protocol_version == "2026-07-28"
            server = create_registry_server(rt, expose="all")
            async with Client(server, mode="legacy", logging_callback=on_log) as c:
                await c.set_logging_level("info")
                result = await c.call_tool("fx__test_tool_with_logging", {})
                assert result.content[0].text == "Tool with logging executed successfully"
                assert received == [("info", "Tool execution started"), ("info", "Tool processing data"),
                                    ("info", "Tool execution completed")]
                received.clear()
                await c.set_logging_level("warning")  # toolhost filters per client: info is below it
                await c.call_tool("fx__test_tool_with_logging", {})
                assert received == []
            log = (tmp_path / "data" / "logs" / "fx.log").read_text()
            assert log.count("INFO conformance: Tool execution started") == 2  # the server log keeps all
