"""The console without API keys: in open access (a store, no users) and with ``--auth off`` (no
store) the local admin token logs in from loopback. Open access gets every page, and the search
playground's per-hit approval agrees with what a real call of that tool does (and the badge with
it); with ``--auth off`` the server and tool pages work (the tool page says every client may call
it), pages that need the store answer 503 naming the flag, no badge is drawn, and an unknown path
is the styled 404 inside the layout."""

from __future__ import annotations

import re

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.admin.support import Serve, config


def _login(client: httpx2.Client, serve: Serve) -> None:
    r = client.post("/admin/login", data={"key": serve.token}, follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (303, "/admin/servers")


def _badge(html: str) -> str | None:
    m = re.search(r'id="pending-badge"[^>]*>(\d+)<', html)
    return m.group(1) if m else None


async def _open_call(url: str) -> dict:
    with anyio.fail_after(60):
        async with httpx2.AsyncClient() as http, Client(streamable_http_client(url + "/mcp", http_client=http)) as c:
            r = await c.call_tool("call_tool", {"name": "orders__cancel_order", "arguments": {"order_id": "A1002"}})
            return (r.meta or {}).get("toolhost/error", {})


@pytest.mark.parametrize("mode", ["open-access", "auth-off"])
def test_console_pages_without_api_keys(tmp_path, mode: str) -> None:
    data = tmp_path / "data"
    extra = ("--auth", "off") if mode == "auth-off" else ()
    with Serve(config(tmp_path), data, *extra) as serve, httpx2.Client(base_url=serve.url, timeout=30) as console:
        _login(console, serve)
        servers = console.get("/admin/servers")
        assert servers.status_code == 200 and _badge(servers.text) is None
        orders = console.get("/admin/servers/orders")
        assert orders.status_code == 200 and "orders 1.0.0" in orders.text
        tool = console.get("/admin/tools/orders__cancel_order")
        assert tool.status_code == 200 and "&#34;order_id&#34;" in tool.text
        missing = console.get("/admin/no/such/page")
        assert missing.status_code == 404 and "<nav>" in missing.text and "/admin/no/such/page" in missing.text
        audit = console.get("/admin/audit")
        search = console.get("/admin/search", params={"q": "cancel order"})
        assert search.status_code == 200 and "orders__cancel_order</code>" in search.text
        if mode == "auth-off":
            assert "No permission store (--auth off): every client may call it." in tool.text
            assert audit.status_code == 503 and "the permission store is off (--auth off)" in audit.text
            assert _badge(console.get("/admin/tools").text) is None
            return
        assert audit.status_code == 200
        err = anyio.run(_open_call, serve.url)  # open access: what a real call does ...
        waits = err.get("code") == "approval_required"
        assert _badge(console.get("/admin/tools").text) == ("1" if waits else None)
        hits = console.get("/admin/search", params={"q": "cancel order"}).text
        row = re.search(r"orders__cancel_order</code></a></td>.*?</tr>", hits, re.S)
        assert row is not None  # ... is what the playground says of it
        assert ('<span class="tag approval">yes</span>' in row.group(0)) is waits
        assert '<span class="tag yes">yes</span>' in row.group(0)
