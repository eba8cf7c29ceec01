"""Bypass attempts through the real streamable-HTTP registry server with the SDK client and API keys.

Two users with different grants see, find and run different tools; every attempt to reach a tool
outside a grant (by name, case change, look-alike Unicode, ``server:`` forms, another user's
revoked key, no key) fails exactly like an unknown tool, or with 401 before any tool is reached.
"""

from __future__ import annotations

import re
import socket
import sys
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from host.access import AccessControl
from host.config import parse_config
from host.runtime import HostRuntime
from servers.gateway.server import create_registry_server
from servers.http.api_keys import ApiKeyVerifier, auth_settings, principal_resolver
from servers.http.runner import serve_http

pytestmark = pytest.mark.anyio

UNKNOWN = "no_such__tool"
ALICE_VISIBLE = {"orders__get_order", "notes__list_notes", "notes__read_note", "notes__write_note"}
BOB_VISIBLE = {"orders__get_order", "orders__cancel_order", "notes__read_note", "notes__write_note"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def serving(tmp_path, access: AccessControl):
    cfg = parse_config(
        {
            "toolhost": {"connect_timeout_seconds": 30},
            "mcpServers": {
                "orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]},
                "notes": {
                    "command": sys.executable,
                    "args": ["-m", "servers.examples.notes", "--data-dir", str(tmp_path / "notes")],
                    "toolhost": {"always_load": ["list_notes"]},
                },
            },
        },
        data_dir=tmp_path,
    )
    async with HostRuntime(cfg, data_dir=tmp_path, policy=access) as rt:
        rt.pipeline.approvals = access.approval_hook()
        unwatch = access.watch(rt.registry)
        port = _free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        server = create_registry_server(rt, principal_for=principal_resolver(access))
        stop = anyio.Event()
        ready = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: serve_http(
                    server,
                    port=port,
                    stop=stop,
                    token_verifier=ApiKeyVerifier(access),
                    auth=auth_settings(url),
                    on_ready=lambda _u: ready.set(),
                )
            )
            with anyio.fail_after(20):
                await ready.wait()
            try:
                yield url
            finally:
                stop.set()
        unwatch()


@asynccontextmanager
async def client(url: str, token: str | None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers) as http, Client(streamable_http_client(url, http_client=http)) as c:
        yield c


_DID_YOU_MEAN = re.compile(r" ?[Dd]id you mean:? ([^?]*)\?")


def same_as(unknown_answer: str, name: str) -> set[str]:
    """The unknown-tool answer with ``name`` in place of the unknown name (plain or repr-quoted)."""
    return {unknown_answer.replace(UNKNOWN, name), unknown_answer.replace(repr(UNKNOWN), repr(name))}


def like_unknown(answer: str, unknown_answer: str, name: str, visible: set[str]) -> bool:
    """``answer`` is the unknown-tool answer for ``name``: same text once the name is swapped, and any
    "did you mean" suggestions (computed per name) only name tools the caller may see."""
    suggested = {n.strip() for m in _DID_YOU_MEAN.finditer(answer) for n in m.group(1).split(",")}
    if not suggested <= visible:
        return False
    return _DID_YOU_MEAN.sub("", answer) in {_DID_YOU_MEAN.sub("", x) for x in same_as(unknown_answer, name)}


def text(result: Any) -> str:
    return result.content[0].text


@pytest.fixture
def people(access: AccessControl) -> dict[str, str]:
    access.users.add("alice")
    access.grants.add("alice", "orders__get_order", max_risk="read")
    access.grants.add("alice", "server:notes", max_risk="write")
    access.users.add("bob")
    access.grants.add("bob", "orders__*", approval=False)
    access.grants.add("bob", "orders__list_orders", effect="deny")
    access.grants.add("bob", "notes__[rw]*_note", max_risk="write")  # read_note, write_note
    access.users.add("carol")
    access.grants.add("carol", "*", approval=False)
    access.users.add("dora")
    access.grants.add("dora", "orders__cancel_order")  # destructive: approval by default
    tokens = {name: access.keys.create(name)[1] for name in ("alice", "bob", "carol", "dora")}
    access.keys.revoke("carol")
    return tokens


async def test_two_users_see_find_and_run_different_tools(tmp_path, access, people) -> None:
    async with serving(tmp_path, access) as url:
        with anyio.fail_after(60):
            async with client(url, people["alice"]) as c:
                assert [t.name for t in (await c.list_tools()).tools] == [
                    "tool_search",
                    "call_tool",
                    "notes__list_notes",
                ]
                found = await c.call_tool("tool_search", {"query": "order note", "limit": 50})
                assert {t["name"] for t in found.structured_content["tools"]} <= ALICE_VISIBLE
                assert "orders__get_order" in {t["name"] for t in found.structured_content["tools"]}
                got = await c.call_tool("call_tool", {"name": "orders__get_order", "arguments": {"order_id": "A1001"}})
                assert not got.is_error and got.structured_content["status"] == "pending"
            async with client(url, people["bob"]) as c:
                assert [t.name for t in (await c.list_tools()).tools] == ["tool_search", "call_tool"]
                found = await c.call_tool("tool_search", {"query": "cancel order", "limit": 50})
                names = {t["name"] for t in found.structured_content["tools"]}
                assert "orders__cancel_order" in names
                assert names <= BOB_VISIBLE
                done = await c.call_tool("orders__cancel_order", {"order_id": "A1001"})
                assert not done.is_error, text(done)


async def test_bypass_attempts_fail_like_unknown_tools(tmp_path, access, people) -> None:
    attempts = [
        "orders__cancel_order",  # outside the grant, by exact name
        "notes__delete_note",  # granted server, but above the grant's risk ceiling
        "Orders__Get_Order",  # case change of a granted tool
        "ORDERS__GET_ORDER",
        "оrders__get_order",  # Cyrillic о
        "ｏrders__get_order",  # fullwidth ｏ
        "orders__get_order\u200b",  # zero-width space
        "server:orders",  # the grant-pattern form as a name
        "server:orders/cancel_order",
        "orders/cancel_order",
        "cancel_order",
    ]
    async with serving(tmp_path, access) as url:
        with anyio.fail_after(60):
            async with client(url, people["alice"]) as c:
                base_wrapped = text(
                    await c.call_tool("call_tool", {"name": UNKNOWN, "arguments": {"order_id": "A1001"}})
                )
                base_direct = text(await c.call_tool(UNKNOWN, {"order_id": "A1001"}))
                for name in attempts:
                    wrapped = await c.call_tool("call_tool", {"name": name, "arguments": {"order_id": "A1001"}})
                    direct = await c.call_tool(name, {"order_id": "A1001"})
                    assert wrapped.is_error and direct.is_error, name
                    assert like_unknown(text(wrapped), base_wrapped, name, ALICE_VISIBLE), (name, text(wrapped))
                    assert like_unknown(text(direct), base_direct, name, ALICE_VISIBLE), (name, text(direct))
                # nothing was cancelled
                order = await c.call_tool("orders__get_order", {"order_id": "A1001"})
                assert order.structured_content["status"] == "pending"
            # bob's deny grant beats his allow: list_orders is unknown to him
            async with client(url, people["bob"]) as c:
                denied = await c.call_tool("call_tool", {"name": "orders__list_orders", "arguments": {}})
                assert like_unknown(text(denied), base_wrapped, "orders__list_orders", BOB_VISIBLE), text(denied)

        carol_key_id = people["carol"].split("_")[1]
        init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        for token in (people["carol"], None, "th_000000000000_" + "x" * 43, "not-a-key", people["alice"][:-2]):
            with anyio.fail_after(30):
                async with httpx2.AsyncClient() as http:
                    headers = {"Accept": "application/json, text/event-stream"}
                    if token:
                        headers["Authorization"] = f"Bearer {token}"
                    raw = await http.post(url, json=init, headers=headers)
                assert raw.status_code == 401 and "Bearer" in raw.headers.get("www-authenticate", "")
                with pytest.raises(BaseExceptionGroup) as info:  # the SDK client cannot even start a session
                    async with client(url, token) as c:
                        await c.list_tools()
                assert info.group_contains(MCPError)
    rejected = access.audit_log.query(action="auth")
    assert carol_key_id in {e.key_id for e in rejected}
    assert people["carol"] not in repr(rejected)  # the secret never reaches the log
    assert all(e.status == "invalid_key" and e.decision == "deny" for e in rejected)


async def test_destructive_call_waits_for_approval_over_http(tmp_path, access, people) -> None:
    async with serving(tmp_path, access) as url:
        with anyio.fail_after(60):
            async with client(url, people["dora"]) as c:
                waiting = await c.call_tool(
                    "call_tool", {"name": "orders__cancel_order", "arguments": {"order_id": "A1002"}}
                )
                err = waiting.meta["toolhost/error"]
                assert waiting.is_error and err["code"] == "approval_required"
                approval_id = err["approval_id"]
                assert f"toolhost approvals approve {approval_id}" in text(waiting)
                [pending] = access.approvals.list(status="pending")
                assert (pending.id, pending.user, pending.key_id) == (approval_id, "dora", people["dora"].split("_")[1])

                access.approvals.approve(approval_id, by="admin")  # what `toolhost approvals approve` does
                done = await c.call_tool("orders__cancel_order", {"order_id": "A1002"})
                assert not done.is_error, text(done)
                again = await c.call_tool("orders__cancel_order", {"order_id": "A1002"})
                assert again.is_error and again.meta["toolhost/error"]["code"] == "approval_required"
                assert again.meta["toolhost/error"]["approval_id"] != approval_id  # ran once; a new request
