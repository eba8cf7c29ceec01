"""`toolhost serve` as a real process: stdio for an MCP client, HTTP with graceful SIGTERM shutdown."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.servers.conftest import PY

TOOLHOST = str(Path(sys.executable).parent / "toolhost")


def write_config(tmp_path: Path) -> Path:
    cfg = {"mcpServers": {"orders": {"command": PY, "args": ["-m", "servers.examples.orders"]},
                          "time": {"command": PY, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}}}
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(cfg))
    return path


@pytest.mark.anyio
async def test_stdio_serve_lists_searches_and_calls(tmp_path):
    params = StdioServerParameters(command=TOOLHOST, args=["serve", "--stdio", "--config", str(write_config(tmp_path)),
                                                          "--data-dir", str(tmp_path / "d")])
    with anyio.fail_after(60):
        async with Client(params) as c:
            assert [t.name for t in (await c.list_tools()).tools] == ["tool_search", "call_tool"]
            hits = await c.call_tool("tool_search", {"query": "cancel my order", "limit": 3})
            assert "orders__cancel_order" in [t["name"] for t in hits.structured_content["tools"]]
            r = await c.call_tool("call_tool", {"name": "orders__get_order", "arguments": {"order_id": "A1004"}})
            assert r.structured_content["status"] == "delivered"
            await c.call_tool("tool_search", {"query": "time"})  # answered after the call's events were written
            events = [json.loads(line) for f in sorted((tmp_path / "d" / "events").glob("*.jsonl"))
                      for line in f.read_text().splitlines()]
            call = [e for e in events if e["data"].get("name") == "orders__get_order"]
            assert [e["kind"] for e in events if e["data"].get("call_id") == call[0]["data"]["call_id"]] == \
                ["call", "decision", "result"]  # written after the answer left, not at shutdown


def _children(pid: int) -> set[int]:
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_http_serve_stops_children_on_sigterm(tmp_path):
    proc = subprocess.Popen([TOOLHOST, "serve", "--port", "0", "--config", str(write_config(tmp_path)),
                             "--data-dir", str(tmp_path / "d")], stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for line in proc.stderr:  # bounded: the process prints the URL or exits
            m = re.search(r"at (http://\S+/mcp)", line)
            if m:
                url = m.group(1)
                break
        assert url is not None, "toolhost serve did not announce its URL"
        children = _children(proc.pid)
        assert len(children) == 2  # orders + time stdio servers

        async def check() -> None:
            with anyio.fail_after(30):
                async with Client(url) as c:
                    r = await c.call_tool(
                        "call_tool", {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}
                    )
                    assert r.structured_content["timezone"] == "UTC"

        anyio.run(check)
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=30)[1]
        assert proc.returncode == 0, rest
        assert "toolhost stopped; all servers closed." in rest
        assert [pid for pid in children if _alive(pid)] == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_stdio_serve_stops_on_sigterm_while_the_client_keeps_stdin_open(tmp_path):
    proc = subprocess.Popen(
        [TOOLHOST, "serve", "--stdio", "--config", str(write_config(tmp_path)), "--data-dir", str(tmp_path / "d")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        up: set[str] = set()
        for line in proc.stderr:  # without a terminal, one line per server once the first connects ended
            if m := re.match(r"server (\w+): connected", line):
                up.add(m.group(1))
            if up == {"orders", "time"}:
                break
        children = _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)  # stdin stays open: the blocked read must not hold up shutdown
        assert proc.returncode == 0 and "toolhost stopped; all servers closed." in proc.stderr.read()
        assert [pid for pid in children if _alive(pid)] == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
