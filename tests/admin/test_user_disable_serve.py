"""Disabling a user of a running ``toolhost serve``, in every access mode.

API keys: ``toolhost users disable alice --reason ...`` (through the serve) stops alice's open
sessions of both protocol eras (2025-11-25 handshake and 2026-07-28 stateless) at their next
request, no restart: her key is answered 403 naming who disabled her, since when, why and the
command that enables her; her pending approval is denied; no key can be created for her; bob is
untouched; the serve prints a ``user.disable`` event. ``toolhost users enable alice`` restores the
same key. The admin API does the same for an admin (who cannot disable themself), a disabled
admin's key is refused by the admin API too, and the local admin is not a user that can be
disabled. Open access and ``--auth off`` have no users: the command says so.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from host.access import AccessControl
from tests.servers.serves import gateway_with_users, running
from tests.servers.test_access_matrix import CLIENT_MODE, LEGACY, MODERN, TOOLHOST, Gateway, _env

pytestmark = pytest.mark.anyio

CONFIG = {"toolhost": {"connect_timeout_seconds": 30},
          "mcpServers": {"orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]}}}
LIST = ("orders__list_orders", {"customer": "ada@example.com"})
CANCEL = ("orders__cancel_order", {"order_id": "A1001"})
SINCE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"


def refusal(user: str, by: str, reason: str = "") -> str:
    why = f" \\({re.escape(reason)}\\)" if reason else ""
    return f"user {user} is disabled by {by} since {SINCE}{why}; an admin runs `toolhost users enable {user}`"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def serves(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Gateway]]:
    root = tmp_path_factory.mktemp("disable")
    keys = gateway_with_users(root, "keys", {"alice": ["orders__*"], "bob": ["orders__*"], "root": [],
                                             "carol": []}, config=CONFIG)
    access = AccessControl.open(keys.home / "data")
    try:
        access.roles.add("admin")
        access.users.assign_role("root", "admin")
        access.users.assign_role("carol", "admin")
    finally:
        access.close()
    gateways = {"keys": keys, "open": gateway_with_users(root, "open", {}, config=CONFIG),
                "off": gateway_with_users(root, "off", {}, config=CONFIG, args=["--auth", "off"])}
    async with running(gateways) as gws:
        yield gws


def toolhost(gw: Gateway, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TOOLHOST, *args, "--data-dir", str(gw.home / "data")], capture_output=True, text=True,
                          timeout=120, env=_env() | {"COLUMNS": "200"})


@asynccontextmanager
async def session(gw: Gateway, key: str, era: str, statuses: list[int] | None = None) -> AsyncIterator[Client]:
    """An MCP client of ``era`` with ``key``; the HTTP status of each of its answers is appended to ``statuses``."""
    async def seen(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=40,
                                  event_hooks={"response": [seen]}) as http, \
            Client(streamable_http_client(gw.url, http_client=http), mode=CLIENT_MODE[era]) as c:
        assert c.protocol_version == era
        yield c


async def call(c: Client, tool: tuple[str, dict]) -> tuple[bool, str]:
    with anyio.fail_after(40):
        r = await c.call_tool("call_tool", {"name": tool[0], "arguments": tool[1]})
    return bool(r.is_error), "".join(b.text for b in r.content if getattr(b, "text", None))


def mcp_post(gw: Gateway, key: str, era: str) -> httpx2.Response:
    """One raw JSON-RPC request of ``era`` with ``key`` (what any client's next request looks like)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": era}
    return httpx2.post(gw.url, json=body, headers=headers, timeout=40)


def admin_api(gw: Gateway, key: str, path: str, body: dict | None = None) -> httpx2.Response:
    base = gw.url.rsplit("/mcp", 1)[0]
    return httpx2.post(f"{base}/admin/api{path}", json=body or {}, headers={"Authorization": f"Bearer {key}"},
                       timeout=40)


async def test_disabling_stops_open_sessions_of_both_eras_and_enabling_restores_the_same_key(serves) -> None:
    gw = serves["keys"]
    alice, bob = gw.keys["alice"], gw.keys["bob"]
    old_seen: list[int] = []
    new_seen: list[int] = []
    async with session(gw, alice, LEGACY, old_seen) as old, session(gw, alice, MODERN, new_seen) as new:
        assert (await call(old, LIST))[0] is False and (await call(new, LIST))[0] is False
        waiting = await call(new, CANCEL)  # destructive: waits for an approval
        assert "approval" in waiting[1]
        approval_id = re.search(r"ap_[0-9a-f]{16}", waiting[1]).group(0)

        out = toolhost(gw, "users", "disable", "alice", "--reason", "left the team")
        assert (out.returncode, out.stderr) == (0, "")
        assert out.stdout == (f"disabled user alice: their keys are refused until `toolhost users enable alice`; "
                              f"denied open approvals {approval_id}\n")
        for c, seen in ((old, old_seen), (new, new_seen)):  # the next request of each open session is refused
            assert set(seen) <= {200, 202}
            with pytest.raises(MCPError, match="Server returned an error response"):  # all the SDK says
                await call(c, LIST)
            assert seen[-1] == 403
    by = re.escape(json.loads(toolhost(gw, "users", "list", "--json").stdout)[0]["disabled_by"])
    for era in (LEGACY, MODERN):
        answer = mcp_post(gw, alice, era)
        assert answer.status_code == 403, era
        assert answer.json()["error"] == "user_disabled" and "www-authenticate" not in answer.headers
        assert re.fullmatch(refusal("alice", by, "left the team"), answer.json()["error_description"])
        async with session(gw, bob, era) as c:  # other users are untouched
            assert (await call(c, LIST))[0] is False, era

    # her approval is denied, no key can be created, and everyone sees the state
    approvals = json.loads(toolhost(gw, "approvals", "list", "--status", "all", "--json").stdout)
    assert [(a["id"], a["status"], a["decided_how"]) for a in approvals if a["user"] == "alice"] == [
        (approval_id, "denied", "user-disabled")]
    created = toolhost(gw, "keys", "create", "alice")
    assert created.returncode == 1
    assert re.fullmatch(f"error: no new API key: {refusal('alice', by, 'left the team')}\n", created.stderr)
    rows = {u["name"]: u for u in json.loads(toolhost(gw, "users", "list", "--json").stdout)}
    assert (rows["alice"]["disabled_reason"], rows["alice"]["active_keys"], rows["bob"]["disabled_at"]) == (
        "left the team", 1, None)
    table = toolhost(gw, "users", "list").stdout
    assert re.search(r"alice +│ disabled by \S+ since \S+ \S+: left the team", table)
    assert re.search(r"bob +│ enabled", table)
    assert any("user.disable" in line and "user alice disabled by" in line for line in gw.stderr)
    again = toolhost(gw, "users", "disable", "alice")
    assert again.returncode == 0 and again.stdout.startswith("user alice is already disabled by ")

    enabled = toolhost(gw, "users", "enable", "alice")
    assert (enabled.returncode, enabled.stdout) == (0, "enabled user alice\n")
    for era in (LEGACY, MODERN):
        async with session(gw, alice, era) as c:
            assert (await call(c, LIST))[0] is False, era
    assert toolhost(gw, "users", "enable", "alice").stdout == "user alice is not disabled\n"


async def test_the_admin_api_disables_and_a_disabled_admin_is_refused(serves) -> None:
    gw = serves["keys"]
    root, carol = gw.keys["root"], gw.keys["carol"]
    done = admin_api(gw, root, "/users/bob/disable", {"reason": "on leave"})
    assert done.status_code == 200
    assert {k: done.json()[k] for k in ("name", "disabled_by", "disabled_reason", "changed", "denied_approvals")} == {
        "name": "bob", "disabled_by": "root", "disabled_reason": "on leave", "changed": True, "denied_approvals": []}
    assert mcp_post(gw, gw.keys["bob"], MODERN).status_code == 403
    self_disable = admin_api(gw, root, "/users/root/disable")
    assert self_disable.status_code == 400
    assert self_disable.json()["error"]["message"] == ("invalid user 'root': you cannot disable the user you act "
                                                       "as; another admin must")
    assert admin_api(gw, root, "/users/carol/disable").status_code == 200
    refused = admin_api(gw, carol, "/users/bob/enable")
    assert refused.status_code == 403
    assert re.fullmatch(refusal("carol", "root"), refused.json()["error"]["message"])
    assert admin_api(gw, root, "/users/nobody/disable").status_code == 404
    for name in ("carol", "bob"):
        enabled = admin_api(gw, root, f"/users/{name}/enable")
        assert (enabled.status_code, enabled.json()["changed"], enabled.json()["disabled_at"]) == (200, True, None)
    async with session(gw, gw.keys["bob"], LEGACY) as c:
        assert (await call(c, LIST))[0] is False
    audit = json.loads(toolhost(gw, "audit", "--action", "admin", "--user", "root", "--json").stdout)
    assert [(r["status"], r["detail"]) for r in audit][:4] == [
        ("user.enable", "user bob"), ("user.enable", "user carol"), ("user.disable", "user carol"),
        ("user.disable", "user bob: on leave")]


async def test_the_local_admin_is_no_user_that_can_be_disabled(serves) -> None:
    gw = serves["keys"]
    for name in ("local-admin", "local:root"):
        out = toolhost(gw, "users", "disable", name)
        assert out.returncode == 1
        assert out.stderr.startswith(f"error: invalid user '{name}': the local admin is not a user and cannot be "
                                     "disabled: it is the loopback-only token a running `toolhost serve` writes")


@pytest.mark.parametrize("mode", ["open", "off"])
async def test_without_users_there_is_no_one_to_disable(serves, mode: str) -> None:
    gw = serves[mode]
    for verb in ("disable", "enable"):
        out = toolhost(gw, "users", verb, "alice")
        assert (out.returncode, out.stdout) == (1, "")
        assert out.stderr == (
            "error: unknown user 'alice' (this data folder has no users: its gateway serves every local client "
            "without a key (open access) or runs with --auth off, so there is no one to " + verb + "; "
            "`toolhost users add NAME` turns on per-user access)\n")
