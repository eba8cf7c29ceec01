"""The audit links a call to its approval, and names who decided it, through a real ``toolhost serve``.

A call answered ``approval_required`` has an audit row carrying the ``ap_…`` id the caller got; the
repeated call after a denial (``permission_denied``) carries it too, and so does the call that ran
after an approval. ``toolhost approvals approve ID --as carol`` run by the local admin records both
people (``local:<os user> as carol``, like ``call --user bob`` records ``root as bob``) in the
decision's audit row, the approval itself and the row of the call it let run.

Access modes where approvals apply: API keys (a destructive tool needs an approver) and open access
(a session-taint hold: ``"taint": {"decision": "approve"}``); both protocol eras each.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from host.access import AccessControl
from servers.shared.local_principal import local_principal_name
from tests.servers.serves import running
from tests.servers.test_access_matrix import LEGACY, MODERN, TOOLHOST, Gateway, _env
from tests.servers.test_shared_taint_serve import client

pytestmark = pytest.mark.anyio

ERAS = (LEGACY, MODERN)
CANCEL = "orders__cancel_order"
READ = ("orders__list_orders", {"customer": "ada@example.com"})


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _gateway(root: Path, mode: str) -> Gateway:
    home = root / mode
    data = home / "data"
    data.mkdir(parents=True)
    servers: dict[str, Any] = {"orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]}}
    settings: dict[str, Any] = {"connect_timeout_seconds": 30}
    keys: dict[str, str] = {}
    if mode == "open":  # no users: approvals come from the session-taint rule
        settings["taint"] = {"decision": "approve"}
        servers["orders"]["toolhost"] = {"flow": {"private_source": True, "untrusted_source": True, "egress": False}}
        servers["echo"] = {"command": sys.executable, "args": ["-m", "servers.examples.echo"],
                           "toolhost": {"flow": {"private_source": False, "untrusted_source": False, "egress": True}}}
    else:
        access = AccessControl.open(data)
        try:
            access.users.add("alice")
            access.grants.add("alice", "orders__*")
            access.users.add("carol")
            access.roles.add("approver")
            access.users.assign_role("carol", "approver")
            keys = {"alice": access.keys.create("alice")[1]}
        finally:
            access.close()
    (home / "config.json").write_text(json.dumps({"toolhost": settings, "mcpServers": servers}))
    return Gateway((mode,), home, ["serve", "--config", str(home / "config.json"), "--data-dir", str(data),
                                   "--port", "0"], keys=keys)


@pytest.fixture(scope="module")
async def serves(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Gateway]]:
    root = tmp_path_factory.mktemp("approval-audit")
    async with running({mode: _gateway(root, mode) for mode in ("open", "keys")}) as gws:
        yield gws


async def call(c: Client, name: str, arguments: dict[str, Any], session: str | None = None) -> dict[str, Any]:
    """``{"code", "approval_id"}`` of a refused call, ``{"code": "ok"}`` of one that ran."""
    meta = {"toolhost/session": session} if session else None
    with anyio.fail_after(40):
        r = await c.call_tool("call_tool", {"name": name, "arguments": arguments}, meta=meta)
    if not r.is_error:
        return {"code": "ok"}
    err = r.meta["toolhost/error"]
    return {"code": err["code"], "approval_id": err.get("approval_id")}


async def toolhost(gw: Gateway, *args: str) -> str:
    """A CLI command on the serve's data folder (it goes through the running serve)."""
    with anyio.fail_after(90):
        done = await anyio.run_process([TOOLHOST, *args, "--data-dir", str(gw.home / "data")], env=_env(),
                                       check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


async def call_rows(gw: Gateway, tool: str) -> list[tuple[str, str | None, str | None]]:
    """``(status, approval_id, approver)`` of the audit's call rows of ``tool``, oldest first."""
    rows = json.loads(await toolhost(gw, "audit", "--action", "call", "--tool", tool, "--limit", "100", "--json"))
    return [(r["status"], r["approval_id"], r["approver"]) for r in sorted(rows, key=lambda r: r["id"])]


@pytest.mark.parametrize("era", ERAS)
async def test_with_api_keys_each_call_row_names_its_approval_and_who_decided(serves, era: str) -> None:
    gw = serves["keys"]
    by = f"{local_principal_name()} as carol"
    async with client(gw, gw.keys["alice"], era) as alice:
        # refused, then denied: both rows carry the approval the caller was given
        denied_args = {"order_id": "A1001", "reason": f"denied {era}"}
        asked = await call(alice, CANCEL, denied_args)
        assert asked["code"] == "approval_required" and asked["approval_id"].startswith("ap_")
        assert (await toolhost(gw, "approvals", "deny", asked["approval_id"], "--as", "carol")).startswith(
            f"denied {asked['approval_id']}")
        assert await call(alice, CANCEL, denied_args) == {"code": "permission_denied",
                                                          "approval_id": asked["approval_id"]}
        # refused, approved by the local admin as carol, then run once
        run_args = {"order_id": "A1002", "reason": f"approved {era}"}
        pending = await call(alice, CANCEL, run_args)
        assert pending["code"] == "approval_required"
        await toolhost(gw, "approvals", "approve", pending["approval_id"], "--as", "carol")
        assert await call(alice, CANCEL, run_args) == {"code": "ok"}

    rows = await call_rows(gw, CANCEL)
    mine = [r for r in rows if r[1] in (asked["approval_id"], pending["approval_id"])]
    assert mine == [
        ("approval_required", asked["approval_id"], None),
        ("permission_denied", asked["approval_id"], None),
        ("approval_required", pending["approval_id"], None),
        ("ok", pending["approval_id"], by),
    ]
    decisions = json.loads(await toolhost(gw, "audit", "--action", "approval", "--limit", "100", "--json"))
    assert sorted((d["approval_id"], d["status"], d["approver"], d["detail"]) for d in decisions
                  if d["approval_id"] in (asked["approval_id"], pending["approval_id"])) == sorted([
        (asked["approval_id"], "denied", by, f"cli: denied by {by}"),
        (pending["approval_id"], "approved", by, f"cli: approved by {by}"),
    ])
    shown = json.loads(await toolhost(gw, "approvals", "show", pending["approval_id"], "--json"))
    assert (shown["status"], shown["decided_by"], shown["decided_how"]) == ("used", by, "cli")


@pytest.mark.parametrize("era", ERAS)
async def test_in_open_access_a_taint_hold_row_names_its_approval(serves, era: str) -> None:
    gw = serves["open"]
    egress = ("echo__echo", {"text": f"the customer list ({era})"})
    session = f"conv-{era}"  # a stateless client's own conversation (ignored by handshake-era sessions)
    async with client(gw, era=era) as c:
        assert (await call(c, *READ, session=session))["code"] == "ok"
        held = await call(c, *egress, session=session)
        assert held["code"] == "approval_required" and held["approval_id"].startswith("ap_")
        await toolhost(gw, "approvals", "deny", held["approval_id"])
        assert await call(c, *egress, session=session) == {"code": "permission_denied",
                                                           "approval_id": held["approval_id"]}
    rows = [r for r in await call_rows(gw, egress[0]) if r[1] == held["approval_id"]]
    assert rows == [("approval_required", held["approval_id"], None),
                    ("permission_denied", held["approval_id"], None)]
    [decision] = [d for d in json.loads(await toolhost(gw, "audit", "--action", "approval", "--json"))
                  if d["approval_id"] == held["approval_id"]]
    local = local_principal_name()
    assert (decision["status"], decision["approver"], decision["detail"]) == ("denied", local,
                                                                             f"cli: denied by {local}")

