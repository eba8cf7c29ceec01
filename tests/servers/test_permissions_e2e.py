"""End to end: the bundled default config, two users with different keys, through an MCP client.

`toolhost serve` runs as a real process; users, grants, keys and approvals are managed with the
real CLI on the same SQLite database, without restarting the server.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from servers.cli.app import app
from servers.http.key_challenge import NO_KEY, NOT_BEARER, bad_key_text

TOOLHOST = str(Path(sys.executable).parent / "toolhost")
runner = CliRunner()


def admin(data: Path, *args: str) -> str:
    result = runner.invoke(app, [*args, "--data-dir", str(data)])
    assert result.exit_code == 0, result.stdout
    return result.stdout


def new_key(data: Path, user: str) -> str:
    return re.search(r"(th_\w+_\S+)", admin(data, "keys", "create", user)).group(1)


async def session(url: str, key: str | None):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers)
    return http, Client(streamable_http_client(url, http_client=http))


async def call(url: str, key: str, tool: str, args: dict | None = None):
    http, client = await session(url, key)
    async with http, client as c:
        if tool == "tool_search":
            return await c.call_tool("tool_search", args or {})
        return await c.call_tool("call_tool", {"name": tool, "arguments": args or {}})


@pytest.fixture
def served(tmp_path):
    data = tmp_path / "home"
    admin(data, "users", "add", "alice")
    admin(data, "users", "add", "bob")
    admin(data, "grants", "add", "alice", "orders__*")
    admin(data, "grants", "add", "bob", "server:time", "--max-risk", "read")
    admin(data, "grants", "add", "bob", "orders__get_order")
    keys = {"alice": new_key(data, "alice"), "bob": new_key(data, "bob")}
    proc = subprocess.Popen([TOOLHOST, "serve", "--port", "0", "--data-dir", str(data)],
                            stderr=subprocess.PIPE, text=True)
    url = None
    for line in proc.stderr:
        m = re.search(r"at (http://\S+/mcp)", line)
        if m:
            url = m.group(1)
            break
    assert url, "serve did not start"
    yield url, keys, data
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)


def test_two_users_see_and_do_different_things(served):
    url, keys, data = served

    async def scenario() -> None:
        with anyio.fail_after(60):
            alice = await call(url, keys["alice"], "tool_search", {"query": "order", "limit": 10})
            bob = await call(url, keys["bob"], "tool_search", {"query": "order time", "limit": 10})
            assert sorted(t["name"] for t in alice.structured_content["tools"]) == [
                "orders__cancel_order", "orders__get_order", "orders__list_orders"]
            assert sorted(t["name"] for t in bob.structured_content["tools"]) == [
                "orders__get_order", "time__convert_time", "time__get_current_time"]

            # Bob may not cancel: the answer is exactly that of a tool that does not exist.
            denied = await call(url, keys["bob"], "orders__cancel_order", {"order_id": "A1002"})
            missing = await call(url, keys["bob"], "orders__cancel_orderz", {"order_id": "A1002"})
            assert denied.is_error and denied.meta["toolhost/error"]["code"] == "unknown_tool"
            assert missing.meta["toolhost/error"]["code"] == "unknown_tool"

            # Alice's destructive call waits for approval, then runs exactly once.
            waiting = await call(url, keys["alice"], "orders__cancel_order", {"order_id": "A1002"})
            err = waiting.meta["toolhost/error"]
            assert waiting.is_error and err["code"] == "approval_required"
            approval_id = err["approval_id"]
            admin(data, "approvals", "approve", approval_id)
            done = await call(url, keys["alice"], "orders__cancel_order", {"order_id": "A1002"})
            assert not done.is_error and done.structured_content == {
                "order_id": "A1002", "status": "cancelled", "changed": True, "refund_cents": 5000}
            again = await call(url, keys["alice"], "orders__cancel_order", {"order_id": "A1002"})
            assert again.meta["toolhost/error"]["code"] == "approval_required"

            # A grant added now applies on the next request, without a restart.
            admin(data, "grants", "add", "bob", "orders__list_orders")
            listed = await call(url, keys["bob"], "orders__list_orders", {"status": "shipped"})
            assert not listed.is_error and listed.structured_content["count"] == 1

            # No key or a wrong key: HTTP 401 with a WWW-Authenticate challenge, before any tool is reached.
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "call_tool", "arguments": {"name": "orders__get_order"}}}
            # Each problem has its own text, and no authorization server is advertised (toolhost runs none).
            async with httpx2.AsyncClient() as http:
                texts = []
                for headers in ({}, {"Authorization": "Bearer th_000000000000_wrong"},
                                {"Authorization": f"Basic {keys['alice']}"}):
                    r = await http.post(url, json=body, headers={
                        "Accept": "application/json, text/event-stream", **headers})
                    assert r.status_code == 401 and r.headers["www-authenticate"].startswith('Bearer realm="toolhost"')
                    assert "resource_metadata" not in r.headers["www-authenticate"]
                    texts.append((r.json()["error"], r.json()["error_description"]))
                assert texts == [("invalid_request", NO_KEY), ("invalid_token", bad_key_text("th_000000000000_wrong")),
                                 ("invalid_request", NOT_BEARER)]
                gone = await http.get(url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp")
                assert gone.status_code == 404

    anyio.run(scenario)
    audit = admin(data, "audit", "--user", "bob", "--limit", "50")
    assert "orders__cancel_ord" in audit and "unknown_tool" in audit
