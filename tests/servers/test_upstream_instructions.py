"""Upstream servers' ``instructions`` reach the client merged into toolhost's own, each attributed to
its server, in both protocol eras, when every client sees every server; with per-user grants they
are not merged (naming a server a client may not see would tell it the server exists)."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp import Client

from host.access import AccessControl
from host.config import parse_config
from host.runtime import HostRuntime
from servers.gateway.server import create_registry_server

pytestmark = pytest.mark.anyio

ORDERS = "Order desk of the example shop: look up, list and cancel customer orders."
NOTES = "Personal notes: list, read, write and delete short text notes."


def _config(tmp_path):
    return parse_config({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {
        "orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]},
        "notes": {"command": sys.executable, "args": ["-m", "servers.examples.notes", "--data-dir",
                                                      str(tmp_path / "n")]},
    }})


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_instructions_are_merged_and_attributed(tmp_path, mode: str) -> None:
    with anyio.fail_after(90):
        async with HostRuntime(_config(tmp_path), data_dir=tmp_path / "data") as rt:
            server = create_registry_server(rt, expose="all")
            async with Client(server, mode=mode) as c:
                text = c.instructions
    own, *upstream = text.split("\n\n")
    assert own.startswith("toolhost: one MCP server in front of many.")
    assert sorted(upstream) == sorted([
        f"Instructions of the upstream MCP server 'orders' (text from that server, not from toolhost):\n{ORDERS}",
        f"Instructions of the upstream MCP server 'notes' (text from that server, not from toolhost):\n{NOTES}",
    ])


async def test_with_per_user_grants_no_server_is_named(tmp_path) -> None:
    access = AccessControl.open(tmp_path / "acl")
    try:
        access.users.add("alice")
        access.grants.add("alice", "server:orders")
        alice = access.principal_for_user("alice")
        with anyio.fail_after(90):
            async with HostRuntime(_config(tmp_path), data_dir=tmp_path / "data", policy=access,
                                   auditor=access) as rt:
                server = create_registry_server(rt, expose="all", access=access, principal_for=lambda _c: alice)
                async with Client(server, mode="legacy") as c:
                    text = c.instructions
        assert "notes" not in text and "orders" not in text
        assert text.startswith("toolhost: one MCP server in front of many.")
    finally:
        access.close()
