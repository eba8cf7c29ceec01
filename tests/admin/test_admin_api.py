"""The admin API, health and metrics of a real `toolhost serve` process (one per module)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.admin.support import PY, Serve, config, mcp_client, people


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("admin-api")
    data = tmp / "data"
    keys = people(data)
    cfg = config(tmp)
    with Serve(cfg, data) as serve:
        yield serve, keys, cfg


def test_health_and_readiness_name_each_server(served) -> None:
    serve, keys, _cfg = served
    assert httpx2.get(serve.url + "/healthz").json() == {"status": "ok"}
    bare = httpx2.get(serve.url + "/readyz")  # without a key: ready or not, nothing named
    assert (bare.status_code, bare.json()) == (200, {"ready": True})
    ready = httpx2.get(serve.url + "/readyz", headers={"Authorization": f"Bearer {keys['root']}"})
    assert ready.status_code == 200
    body = ready.json()
    assert (body["ready"], body["store"]) == (True, "ok")
    assert [(s["name"], s["state"], s["tools"]) for s in body["servers"]] == [
        ("orders", "connected", 3), ("rug", "connected", 2)]


def test_admin_api_needs_an_admin_credential(served) -> None:
    serve, keys, _cfg = served
    no_key = httpx2.get(serve.url + "/admin/api/servers")
    assert no_key.status_code == 401
    assert no_key.json()["error"]["code"] == "unauthorized"
    with serve.api(keys["alice"]) as api:
        r = api.get("/servers")
    assert r.status_code == 403
    assert r.json()["error"]["message"] == (
        "user alice has no 'admin' role (toolhost roles add admin; toolhost roles assign admin alice)")
    with serve.api("tha_wrong") as api:
        assert api.get("/servers").status_code == 401
    with serve.api(keys["root"]) as api:
        assert [s["name"] for s in api.get("/servers").json()["servers"]] == ["orders", "rug"]
    with serve.api() as api:  # the local admin token, from loopback
        assert api.get("/servers").status_code == 200
    assert oct((serve.data_dir / "admin.token").stat().st_mode & 0o777) == "0o600"


def test_tools_users_keys_and_grants(served) -> None:
    serve, keys, _cfg = served
    with serve.api(keys["root"]) as api:
        tools = {t["name"]: t for t in api.get("/tools").json()["tools"]}
        assert tools["orders__cancel_order"] | {"description": ""} == {
            "name": "orders__cancel_order", "server": "orders", "risk": "destructive", "open_world": False,
            "timeout_seconds": tools["orders__cancel_order"]["timeout_seconds"], "description": "",
            "pin": "trusted", "available": True, "unavailable": None, "flow": "-",
            "flow_reasons": "private_source: no cue; untrusted_source: no cue; egress: no cue"}
        assert api.post("/users", json={"name": "bob"}).status_code == 201
        dup = api.post("/users", json={"name": "bob"})
        assert dup.status_code == 409
        created = api.post("/keys", json={"user": "bob", "label": "laptop"})
        assert created.status_code == 201
        token = created.json()["token"]
        assert token.startswith("th_") and created.json()["label"] == "laptop"
        listed = api.get("/keys", params={"user": "bob"}).json()["keys"]
        assert [k["label"] for k in listed] == ["laptop"] and token not in json.dumps(listed)
        bad = api.post("/grants", json={"subject": "bob", "pattern": "orders__[", "max_risk": "read"})
        assert bad.status_code == 400
        g = api.post("/grants", json={"subject": "bob", "pattern": "orders__*", "max_risk": "read"}).json()
        assert (g["subject"], g["pattern"], g["max_risk"], g["effect"]) == ("user:bob", "orders__*", "read", "allow")
        hits = api.get("/search", params={"q": "cancel order", "user": "bob"}).json()["hits"]
        assert "orders__cancel_order" not in [h["name"] for h in hits]  # read-only grant hides it
        assert [h["name"] for h in hits][:1] == ["orders__list_orders"] or "orders__get_order" in [
            h["name"] for h in hits]
        full = api.get("/search", params={"q": "cancel order"}).json()["hits"]
        assert full[0]["name"] == "orders__cancel_order"
        assert full[0]["why"] == ["name: cancel, order", "description: cancel, order", "parameters: order"]
        assert api.delete("/users/bob").json() == {"removed": "bob"}
        assert api.delete("/users/bob").status_code == 404


@pytest.mark.anyio
async def test_approve_a_pending_call_through_the_api(served) -> None:
    serve, keys, _cfg = served
    with anyio.fail_after(60):
        async with mcp_client(serve.url, keys["alice"]) as c:
            waiting = await c.call_tool("orders__cancel_order", {"order_id": "A1002", "api_key": "sk-live-secret"})
            err = waiting.meta["toolhost/error"]
            assert err["code"] == "approval_required"
            with serve.api(keys["root"]) as api:
                [pending] = api.get("/approvals").json()["approvals"]
                assert (pending["id"], pending["user"], pending["tool"]) == (
                    err["approval_id"], "alice", "orders__cancel_order")
                shown = api.get(f"/approvals/{pending['id']}").json()
                # exact, for the approver
                assert shown["arguments"] == {"order_id": "A1002", "api_key": "sk-live-secret"}
                assert api.post(f"/approvals/{pending['id']}/approve").json()["status"] == "approved"
                assert api.post(f"/approvals/{pending['id']}/approve").status_code == 409
                done = await c.call_tool("orders__cancel_order", {"order_id": "A1002", "api_key": "sk-live-secret"})
                assert not done.is_error
                unknown = await c.call_tool("call_tool", {"name": "orders__no_such_tool", "arguments": {}})
                assert unknown.meta["toolhost/error"]["code"] == "unknown_tool"
                audit = api.get("/audit", params={"action": "approval"}).json()["entries"]
                assert [(e["user"], e["approver"], e["approval_id"], e["status"], e["detail"]) for e in audit] == [
                    ("alice", "root", pending["id"], "approved", "admin: approved by root")]
                export = api.get("/audit/export", params={"tool": "orders__cancel_order"})
                rows = [json.loads(line) for line in export.text.splitlines()]
                assert {r["action"] for r in rows} >= {"call", "approval"}
                assert "sk-live-secret" not in export.text
    metrics = httpx2.get(serve.url + "/metrics", headers={"Authorization": f"Bearer {keys['root']}"}).text
    assert re.search(r'toolhost_tool_calls_total\{server="orders",status="ok",tool="orders__cancel_order"\} 1\.0',
                     metrics)
    assert re.search(r'toolhost_upstream_call_duration_seconds_count\{server="orders"\} 1\.0', metrics)
    assert re.search(r'toolhost_gateway_overhead_seconds_count\{server="orders"\} 2\.0', metrics)
    assert 'toolhost_tool_calls_total{server="-",status="unknown_tool",tool="-"} 1.0' in metrics
    assert 'toolhost_upstream_up{server="rug"} 1.0' in metrics
    assert "toolhost_approvals_pending 0.0" in metrics


def test_reload_adds_removes_and_refuses_a_broken_config(tmp_path) -> None:
    data = tmp_path / "data"
    cfg = config(tmp_path)
    with Serve(cfg, data) as serve, serve.api() as api:
        first_pid = _child_pid(serve.proc.pid, "servers.examples.orders")
        cfg.write_text("{ not json")
        refused = api.post("/reload").json()
        assert refused["error"].startswith("config error") or "JSON" in refused["error"] or refused["error"]
        assert [s["name"] for s in api.get("/servers").json()["servers"]] == ["orders", "rug"]
        cfg.write_text(json.dumps({"mcpServers": {
            "orders": {"command": PY, "args": ["-m", "servers.examples.orders"]},
            "notes": {"command": PY, "args": ["-m", "servers.examples.notes", "--data-dir", str(tmp_path / "n")]},
        }}))
        start = len(serve.lines)
        serve.proc.send_signal(signal.SIGHUP)
        serve.wait_for(r"config\.reloaded", 60, start)
        servers = api.get("/servers").json()["servers"]
        assert [(s["name"], s["state"]) for s in servers] == [("orders", "connected"), ("notes", "connected")]
        assert _child_pid(serve.proc.pid, "servers.examples.orders") == first_pid  # unchanged: untouched
        assert _child_pid(serve.proc.pid, "servers.examples.rugpull") is None
        assert "rug__daily_quote" not in {t["name"] for t in api.get("/tools").json()["tools"]}


def _child_pid(parent: int, needle: str) -> int | None:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent and needle in cmd:
            return int(entry)
    return None


def test_cli_search_asks_the_running_serve(served) -> None:
    serve, _keys, _cfg = served
    out = subprocess.run([str(Path(sys.executable).parent / "toolhost"), "search", "cancel my order", "--json",
                          "--data-dir", str(serve.data_dir)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    hits = json.loads(out.stdout)
    assert hits[0]["name"] == "orders__cancel_order"
    assert hits[0]["why"] == ["name: cancel, order", "description: cancel, order", "parameters: order"]  # via the API
    assert json.loads((serve.data_dir / "serve.json").read_text())["url"] == serve.url
    assert oct((serve.data_dir / "serve.json").stat().st_mode & 0o777) == "0o600"  # owner-only, like the token
