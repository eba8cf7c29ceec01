"""Remote servers from config: streamable HTTP and legacy SSE, against the real server-everything (npm)."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator

import anyio
import pytest

from host.config import parse_config
from host.upstream.connection import ConnectionState
from host.upstream.manager import ServerManager
from tests.servers.conftest import EVERYTHING, NODE


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(params=["streamableHttp", "sse"])
def remote_everything(request) -> Iterator[tuple[str, str]]:
    """server-everything listening on a free port; yields (transport, url) once it says it listens."""
    port = free_port()
    proc = subprocess.Popen([NODE, str(EVERYTHING), request.param], env={**os.environ, "PORT": str(port)},
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        for line in proc.stderr:  # bounded: it prints its banner or exits
            if str(port) in line:
                break
        assert proc.poll() is None, "server-everything did not start"
        path = "/mcp" if request.param == "streamableHttp" else "/sse"
        yield request.param, f"http://127.0.0.1:{port}{path}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.anyio
async def test_remote_server_connects_lists_and_calls(remote_everything, tmp_path):
    transport, url = remote_everything
    entry = {"url": url, "headers": {"X-Test": "${TEST_HEADER:-yes}"}}
    if transport == "sse":
        entry["type"] = "sse"
    cfg = parse_config({"toolhost": {"connect_timeout_seconds": 20}, "mcpServers": {"ev": entry}})
    assert cfg.servers["ev"].transport == ("sse" if transport == "sse" else "streamable-http")
    with anyio.fail_after(40):
        async with ServerManager(cfg, data_dir=tmp_path) as m:
            (status,) = m.statuses()
            assert status.state is ConnectionState.CONNECTED, status.error
            # 13 base tools + 4 offered because toolhost declares roots, elicitation and sampling
            assert status.tool_count == 17
            assert m.registry.get("ev__get-sum").risk.value == "read"
            result = await m.call_tool("ev", "get-sum", {"a": 2, "b": 40}, timeout_seconds=10)
            assert "42" in result.content[0].text
