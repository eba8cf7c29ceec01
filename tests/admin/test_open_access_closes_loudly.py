"""A serve started in open access closes when users are added while it runs (it never stays open
after permissions were turned on), and its clients are told so — a restart is needed and then an
API key — instead of an ``unknown_tool`` answer, in both protocol eras."""

from __future__ import annotations

import subprocess

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.admin.support import TOOLHOST, Serve, config

pytestmark = pytest.mark.anyio
ERAS = {"2025-11-25": "legacy", "2026-07-28": "auto"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


CALL = ("call_tool", {"name": "orders__get_order", "arguments": {"order_id": "A1001"}})
SEARCH = ("tool_search", {"query": "look up an order"})


async def _call(url: str, era: str, tool: tuple[str, dict] = CALL) -> tuple[bool, str, dict]:
    async with httpx2.AsyncClient(timeout=40) as http, \
            Client(streamable_http_client(url + "/mcp", http_client=http), mode=ERAS[era]) as c:
        assert c.protocol_version == era
        with anyio.fail_after(40):
            r = await c.call_tool(*tool)
    return bool(r.is_error), "".join(b.text for b in r.content if getattr(b, "text", None)), r.meta or {}


async def _list(url: str, era: str) -> dict:
    async with httpx2.AsyncClient(timeout=40) as http, \
            Client(streamable_http_client(url + "/mcp", http_client=http), mode=ERAS[era]) as c:
        with anyio.fail_after(40):
            return (await c.list_tools()).meta or {}


async def test_clients_learn_the_gateway_closed_and_what_to_do(tmp_path) -> None:
    data = tmp_path / "data"
    with Serve(config(tmp_path), data) as serve:
        for era in ERAS:
            assert (await _call(serve.url, era))[0] is False
            found, text, _meta = await _call(serve.url, era, SEARCH)
            assert not found and "orders__get_order" in text
            assert "toolhost/error" not in await _list(serve.url, era)
        added = subprocess.run([TOOLHOST, "users", "add", "ann", "--data-dir", str(data)], capture_output=True,
                               text=True, timeout=60)
        assert added.returncode == 0, added.stderr
        assert added.stderr == (f"warning: the running serve (pid {serve.proc.pid}) now refuses every tool until you "
                                "restart it: it started without users (open access); after the restart it requires "
                                "API keys (toolhost keys create ann)\n")
        for era in ERAS:
            for tool, where in ((CALL, "call_tool"), (SEARCH, "tool_search")):
                failed, text, meta = await _call(serve.url, era, tool)
                assert failed and text.startswith("permission_denied: users were added after this toolhost gateway "
                                                  "started without permissions (open access)"), (era, where, text)
                assert "restart `toolhost serve`" in text and "Authorization: Bearer <key>" in text
                assert meta["toolhost/error"]["details"]["rule"] == "open-access-closed"
                assert meta["toolhost/error"]["code"] == "permission_denied"
            listed = await _list(serve.url, era)  # tools/list carries the same reason in its _meta
            assert listed["toolhost/error"]["message"].startswith("permission_denied: users were added after")
            assert listed["toolhost/error"]["where"] == "tools/list"
