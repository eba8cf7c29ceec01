"""The usage memory learns from a ``tool_search`` followed by a successful call of one of its hits
through a real ``toolhost serve``, whatever the protocol era (2025-11-25 handshake: per connection;
2026-07-28, stateless: per caller) and in open access as with API keys; ``toolhost usage stats``
then counts the pair. (With ``--auth off`` there is no store, so nothing is remembered: README.)"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.servers.serves import gateway_with_users, running
from tests.servers.test_access_matrix import CLIENT_MODE, LEGACY, MODERN, TOOLHOST, Gateway, _env

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


CONFIG = {"toolhost": {"connect_timeout_seconds": 30},
          "mcpServers": {"orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]}}}
USERS = {"open": {}, "keys": {"alice": ["server:orders"]}}


@pytest.fixture(scope="module")
async def serves(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Gateway]]:
    root = tmp_path_factory.mktemp("usage")
    gateways = {mode: gateway_with_users(root, mode, grants, config=CONFIG) for mode, grants in USERS.items()}
    async with running(gateways) as gws:
        yield gws


def _stats(gw: Gateway) -> dict:
    out = subprocess.run([TOOLHOST, "usage", "stats", "--json", "--data-dir", str(gw.home / "data")],
                         capture_output=True, text=True, timeout=60, env=_env())
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("mode", ["open", "keys"])
async def test_a_search_then_a_call_of_a_hit_is_remembered_in_both_eras(serves, mode: str) -> None:
    gw = serves[mode]
    assert _stats(gw)["pairs"] == 0
    token = gw.keys.get("alice")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    for n, (era, query) in enumerate([(LEGACY, "which orders did a customer place"),
                                      (MODERN, "orders placed by one customer email")], start=1):
        async with httpx2.AsyncClient(headers=headers, timeout=40) as http, \
                Client(streamable_http_client(gw.url, http_client=http), mode=CLIENT_MODE[era]) as c:
            assert c.protocol_version == era
            with anyio.fail_after(40):
                found = await c.call_tool("tool_search", {"query": query})
                assert "orders__list_orders" in "".join(b.text for b in found.content), era
                called = await c.call_tool("call_tool", {"name": "orders__list_orders",
                                                         "arguments": {"customer": "ada@example.com"}})
                assert called.is_error is not True, era
        assert _stats(gw)["pairs"] == n, era
