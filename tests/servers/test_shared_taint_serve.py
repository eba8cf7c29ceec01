"""Session taint of stateless (2026-07-28) clients through a real ``toolhost serve``.

Without an API key, every unauthenticated stateless client is one caller: a private-and-untrusted
read by one client holds another client's egress call. The refusal says the session is shared and
how to scope it; a per-conversation ``_meta["toolhost/session"]`` scopes it; an admin's
``toolhost taint reset`` (audited) clears it. With API keys each key is its own caller and the
refusal carries no shared-session note. Handshake-era connections keep one session each.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.servers.serves import gateway_with_users, running
from tests.servers.test_access_matrix import CLIENT_MODE, LEGACY, MODERN, TOOLHOST, Gateway, _env

pytestmark = pytest.mark.anyio

READ = ("orders__list_orders", {"customer": "ada@example.com"})
EGRESS = ("echo__echo", {"text": "the customer list"})
SHARED = "shared by every unauthenticated stateless (2026-07-28) client"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


FLOW = {"private_source": True, "untrusted_source": True, "egress": False}
CONFIG = {"toolhost": {"connect_timeout_seconds": 30, "taint": {"decision": "deny"}}, "mcpServers": {
    "orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"], "toolhost": {"flow": FLOW}},
    "echo": {"command": sys.executable, "args": ["-m", "servers.examples.echo"],
             "toolhost": {"flow": {"private_source": False, "untrusted_source": False, "egress": True}}},
}}
USERS = {"open": {}, "keys": {"alice": ["*"], "bob": ["*"]}}


@pytest.fixture(scope="module")
async def serves(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Gateway]]:
    root = tmp_path_factory.mktemp("taint")
    gateways = {mode: gateway_with_users(root, mode, grants, config=CONFIG) for mode, grants in USERS.items()}
    async with running(gateways) as gws:
        yield gws


@asynccontextmanager
async def client(gw: Gateway, key: str | None = None, era: str = MODERN) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=40) as http, \
            Client(streamable_http_client(gw.url, http_client=http), mode=CLIENT_MODE[era]) as c:
        assert c.protocol_version == era
        yield c


async def call(c: Client, tool: tuple[str, dict], session: str | None = None) -> tuple[bool, str]:
    meta = {"toolhost/session": session} if session else None
    with anyio.fail_after(40):
        r = await c.call_tool("call_tool", {"name": tool[0], "arguments": tool[1]}, meta=meta)
    return bool(r.is_error), "".join(b.text for b in r.content if getattr(b, "text", None))


def toolhost(gw: Gateway, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TOOLHOST, *args, "--data-dir", str(gw.home / "data")], capture_output=True, text=True,
                          timeout=60, env=_env())


async def test_unauthenticated_stateless_clients_share_one_session_an_admin_can_reset(serves) -> None:
    gw = serves["open"]
    async with client(gw) as first:
        assert (await call(first, READ))[0] is False  # client 1 reads private, untrusted data
    async with client(gw) as other:
        held, text = await call(other, EGRESS)  # an unrelated client 2: held all the same
        assert held and "permission_denied" in text and SHARED in text
        assert 'send a per-conversation _meta["toolhost/session"]' in text and "toolhost taint reset" in text
        assert (await call(other, EGRESS, session="conv-2"))[0] is False  # its own conversation: clean
    async with client(gw, era=LEGACY) as conn:
        assert (await call(conn, EGRESS))[0] is False  # a handshake-era connection is its own session
    reset = toolhost(gw, "taint", "reset")
    assert (reset.returncode, reset.stdout) == (0, "reset 2 stateless taint sessions\n"), reset.stderr
    async with client(gw) as after:
        assert (await call(after, EGRESS))[0] is False
    audit = json.loads(toolhost(gw, "audit", "--json").stdout)
    rows = [r for r in audit if r["action"] == "admin" and r["status"] == "taint.reset"]
    assert [r["detail"] for r in rows] == ["2 stateless taint sessions"]


async def test_with_api_keys_each_key_is_its_own_session_and_the_refusal_has_no_shared_note(serves) -> None:
    gw = serves["keys"]
    async with client(gw, gw.keys["alice"]) as alice:
        assert (await call(alice, READ))[0] is False
        held, text = await call(alice, EGRESS)
        assert held and "permission_denied" in text and SHARED not in text
    async with client(gw, gw.keys["bob"]) as bob:
        assert (await call(bob, EGRESS))[0] is False
    only_bob = toolhost(gw, "taint", "reset", "--user", "bob")
    assert only_bob.stdout == "reset 1 stateless taint session of user bob\n"
    async with client(gw, gw.keys["alice"]) as alice:
        assert (await call(alice, EGRESS))[0] is True  # alice's taint was not reset
    assert toolhost(gw, "taint", "reset").stdout == "reset 1 stateless taint session\n"  # alice's
    async with client(gw, gw.keys["alice"]) as alice:
        assert (await call(alice, EGRESS))[0] is False
