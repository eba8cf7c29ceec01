"""``serve --watch-config`` (add, change, remove a server while serving; a broken file is refused and
the old config keeps serving) and the ``toolhost_sessions_open`` gauge counting real MCP sessions (2025 protocol
versions; a 2026-07-28
client sends stateless requests and opens none)."""

from __future__ import annotations

import json
import os
import re
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.admin.support import PY, Serve, config, people
from tests.admin.test_admin_api import _child_pid


def _write(path, servers: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": servers}))
    os.replace(tmp, path)  # like an editor's save: the watcher sees a new file at once, never half of it


def test_watch_config_applies_added_changed_and_removed_servers_and_refuses_a_broken_file(tmp_path) -> None:
    data = tmp_path / "data"
    cfg = config(tmp_path)
    orders = {"command": PY, "args": ["-m", "servers.examples.orders"]}
    rug = {"command": PY, "args": ["-m", "servers.examples.rugpull"]}
    notes = {"command": PY, "args": ["-m", "servers.examples.notes", "--data-dir", str(tmp_path / "n")]}
    with Serve(cfg, data, "--watch-config") as serve, serve.api() as api:
        orders_pid = _child_pid(serve.proc.pid, "servers.examples.orders")
        rug_pid = _child_pid(serve.proc.pid, "servers.examples.rugpull")

        start = len(serve.lines)
        _write(cfg, {"orders": orders, "rug": rug, "notes": notes})  # added
        serve.wait_for(r"config\.reloaded|config reloaded", 60, start)
        assert [(s["name"], s["state"]) for s in api.get("/servers").json()["servers"]] == [
            ("orders", "connected"),
            ("rug", "connected"),
            ("notes", "connected"),
        ]
        assert _child_pid(serve.proc.pid, "servers.examples.orders") == orders_pid  # unchanged: untouched

        start = len(serve.lines)
        cfg.write_text('{"mcpServers": {"orders": ')  # broken: refused, the old config keeps serving
        refused = serve.wait_for(r"new config refused, the old one keeps serving: (.*)", 60, start)
        assert "config" in refused.group(1).lower() or "json" in refused.group(1).lower()
        assert [s["name"] for s in api.get("/servers").json()["servers"]] == ["orders", "rug", "notes"]

        start = len(serve.lines)
        _write(cfg, {"orders": orders, "rug": rug | {"env": {"RUG_MODE": "x"}}})  # rug changed, notes removed
        serve.wait_for(r"config\.reloaded|config reloaded", 60, start)
        assert [(s["name"], s["state"]) for s in api.get("/servers").json()["servers"]] == [
            ("orders", "connected"),
            ("rug", "connected"),
        ]
        assert _child_pid(serve.proc.pid, "servers.examples.orders") == orders_pid
        assert _child_pid(serve.proc.pid, "servers.examples.rugpull") not in (None, rug_pid)  # reconnected
        assert _child_pid(serve.proc.pid, "servers.examples.notes") is None
        assert {t["name"] for t in api.get("/tools").json()["tools"]} >= {"orders__get_order", "rug__word_count"}
        assert not any(t["name"].startswith("notes__") for t in api.get("/tools").json()["tools"])


@asynccontextmanager
async def session_client(url: str, token: str, mode: str):
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url + "/mcp", http_client=http), mode=mode) as c,
    ):
        yield c


@pytest.mark.anyio
async def test_sessions_open_gauge_counts_open_mcp_sessions(tmp_path) -> None:
    data = tmp_path / "data"
    keys = people(data)
    with Serve(config(tmp_path), data) as serve:

        async def gauge() -> float:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {serve.token}"}) as http:
                text = (await http.get(serve.url + "/metrics")).text
            return float(re.search(r"^toolhost_sessions_open (\S+)$", text, re.M).group(1))

        with anyio.fail_after(60):
            assert await gauge() == 0.0
            async with session_client(serve.url, keys["alice"], "legacy") as a:
                await a.list_tools()
                assert await gauge() == 1.0
                async with (
                    session_client(serve.url, keys["root"], "legacy") as b,
                    session_client(serve.url, keys["root"], "auto") as modern,
                ):
                    await b.list_tools()
                    await modern.list_tools()  # 2026-07-28 requests carry no session: not counted
                    assert await gauge() == 2.0
                assert await gauge() == 1.0  # the client ended its session (HTTP DELETE)
            assert await gauge() == 0.0
