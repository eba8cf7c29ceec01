"""``toolhost backup`` while a real serve answers calls, ``toolhost restore`` into a new folder, and a
new serve started from it: the same users, keys, grants, pins and open approval, and an audit chain
that verifies."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from host.access import AccessControl
from tests.servers.serves import running
from tests.servers.test_access_matrix import CLIENT_MODE, MODERN, TOOLHOST, Gateway, _env

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]  # two serves, on a shared machine


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _gateway(home: Path, data: Path, keys: dict[str, str]) -> Gateway:
    config = {"toolhost": {"connect_timeout_seconds": 30},
              "mcpServers": {"orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]}}}
    (home / "config.json").write_text(json.dumps(config))
    return Gateway((data.name,), home, ["serve", "--config", str(home / "config.json"), "--data-dir", str(data),
                                        "--port", "0"], keys=keys)


async def toolhost(*args: str, ok: bool = True) -> tuple[int, str, str]:
    with anyio.fail_after(90):
        done = await anyio.run_process([TOOLHOST, *args], env=_env(), check=False)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert (done.returncode == 0) is ok, (out, err)
    return done.returncode, out, err


def state(data: Path) -> dict[str, Any]:
    """Users, keys (without last use), grants, roles and pins of the data folder's store."""
    access = AccessControl.open(data)
    try:
        return {"users": access.users.list(), "roles": access.roles.list(), "grants": access.grants.list(),
                "pins": access.pins.list(),
                "keys": [dataclasses.replace(k, last_used_at=None) for k in access.keys.list()]}
    finally:
        access.close()


async def call(url: str, key: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=40) as http, \
            Client(streamable_http_client(url, http_client=http), mode=CLIENT_MODE[MODERN]) as c:
        with anyio.fail_after(40):
            r = await c.call_tool("call_tool", {"name": name, "arguments": arguments})
    return r.meta["toolhost/error"] if r.is_error else {"code": "ok", "value": r.structured_content}


async def test_a_backup_taken_while_serving_restores_into_a_folder_a_new_serve_runs_from(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "home" / "data"
    data.mkdir(parents=True)
    access = AccessControl.open(data)
    try:
        access.users.add("alice")
        access.grants.add("alice", "orders__*")
        access.roles.add("approver")
        access.users.add("carol")
        access.users.assign_role("carol", "approver")
        keys = {"alice": access.keys.create("alice")[1]}
    finally:
        access.close()
    (data / "servers" / "orders").mkdir(parents=True)
    (data / "servers" / "orders" / "state.txt").write_text("kept\n")
    backup, restored = tmp_path / "backup", tmp_path / "restored" / "data"

    async with running({"old": _gateway(home, data, keys)}) as gws:
        gw = gws["old"]
        pending = await call(gw.url, keys["alice"], "orders__cancel_order", {"order_id": "A1002", "reason": "r"})
        assert pending["code"] == "approval_required"
        calls = 0
        first = anyio.Event()
        stop = anyio.Event()

        async def keep_calling() -> None:
            nonlocal calls
            while not stop.is_set():
                got = await call(gw.url, keys["alice"], "orders__get_order", {"order_id": "A1001"})
                assert got["code"] == "ok"
                calls += 1
                first.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(keep_calling)
            with anyio.fail_after(60):
                await first.wait()
            _, out, _ = await toolhost("backup", str(backup), "--data-dir", str(data))
            during = calls
            stop.set()
        assert during >= 1 and out.startswith(f"backed up {data.resolve()} to {backup.resolve()}: toolhost.db, ")
        assert "skipped: admin.token (the running serve's local admin token; a new serve writes its own); " \
               "serve.json (the running serve's address); serve.lock (the running serve's lock); " in out
        # the running serve's folder is not a restore target, even with --force
        _, _, err = await toolhost("restore", str(backup), "--force", "--data-dir", str(data), ok=False)
        assert "another toolhost serve" in err and "is running on this data folder" in err
    before = state(data)

    manifest = json.loads((backup / "toolhost-backup.json").read_text())
    assert manifest["store"] == "sqlite" and {"toolhost.db", "approvals.key", "servers"} <= set(manifest["copied"])
    assert not {"admin.token", "serve.json", "serve.lock", "search"} & {p.name for p in backup.iterdir()}

    _, out, _ = await toolhost("restore", str(backup), "--data-dir", str(restored))
    assert out == f"restored {backup.resolve()} into {restored.resolve()}; start it with toolhost serve --data-dir " \
                  f"{restored.resolve()}\n"
    _, _, err = await toolhost("restore", str(backup), "--data-dir", str(restored), ok=False)
    assert "is not empty" in err and "--force" in err
    assert (restored / "servers" / "orders" / "state.txt").read_text() == "kept\n"
    assert (restored / "approvals.key").read_bytes() == (data / "approvals.key").read_bytes()
    assert state(restored) == before

    _, out, _ = await toolhost("audit", "verify", "--data-dir", str(restored))
    assert out.startswith("ok: ") and "the hash chain is intact" in out
    async with running({"new": _gateway(tmp_path / "restored", restored, keys)}) as gws:
        gw = gws["new"]
        # the same key works; the open approval's arguments are readable (the approvals key came along)
        got = await call(gw.url, keys["alice"], "orders__get_order", {"order_id": "A1001"})
        assert got["code"] == "ok" and got["value"]["order_id"] == "A1001"
        shown = json.loads((await toolhost("approvals", "show", pending["approval_id"], "--json",
                                           "--data-dir", str(restored)))[1])
        assert (shown["status"], shown["arguments"]) == ("pending", {"order_id": "A1002", "reason": "r"})
        assert (state(restored))["pins"] == before["pins"]
        _, out, _ = await toolhost("audit", "verify", "--data-dir", str(restored))
        assert out.startswith("ok: ") and "the hash chain is intact" in out
