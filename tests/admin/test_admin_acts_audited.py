"""Every administrative act leaves a chained audit row naming its actor: each AdminActions method
that changes something (users, roles, role members, keys, grants, self-approval, usage memory, pin
accepts, decisions), through the service, the admin API, the console and the CLI; config reloads and
reconnects; an admin's call as a user is recorded as "root as bob" and that admin may not approve it."""

from __future__ import annotations

import inspect
import json
import re

import httpx2
import pytest

from host.access import AccessControl, NotAnApprover
from servers.admin import AdminActions, AdminService
from servers.shared.local_principal import local_principal_name
from tests.admin.support import Serve, config, people
from tests.admin.test_cli_via_serve import cli
from tests.permissions.conftest import record  # noqa: F401 - the fixture

READS = {"servers", "tools", "visible_tools", "search", "users", "roles", "keys", "grants", "usage_stats",
         "approvals", "approval", "pins", "pin_diff", "audit", "audit_verify", "audit_rows"}
"""Protocol methods that change nothing (no row)."""

ACTS = {
    # method: (call on a service, expected (action, status))
    "add_user": (lambda s, x: s.add_user("carol"), ("admin", "user.add")),
    "remove_user": (lambda s, x: s.remove_user("dave"), ("admin", "user.remove")),
    "disable_user": (lambda s, x: s.disable_user("bob", "on leave"), ("admin", "user.disable")),
    "enable_user": (lambda s, x: (s.access.user_states.disable("dave", by="root"), s.enable_user("dave")),
                    ("admin", "user.enable")),
    "add_role": (lambda s, x: s.add_role("ops", "d"), ("admin", "role.add")),
    "remove_role": (lambda s, x: s.remove_role("old"), ("admin", "role.remove")),
    "assign_role": (lambda s, x: s.assign_role("bob", "old"), ("admin", "role.assign")),
    "unassign_role": (lambda s, x: s.unassign_role("bob", "member"), ("admin", "role.unassign")),
    "create_key": (lambda s, x: s.create_key("bob", "ci"), ("admin", "key.create")),
    "revoke_keys": (lambda s, x: s.revoke_keys("bob", None), ("admin", "key.revoke")),
    "add_grant": (lambda s, x: s.add_grant("bob", "orders__*", max_risk="read"), ("admin", "grant.add")),
    "remove_grant": (lambda s, x: s.remove_grant("bob", "rug__*"), ("admin", "grant.remove")),
    "set_self_approval": (lambda s, x: s.set_self_approval("bob", "rug__*", True, by=s.actor),
                          ("admin", "self-approval.enable")),
    "usage_clear": (lambda s, x: s.usage_clear(), ("admin", "usage.clear")),
    "decide": (lambda s, x: s.decide(x["approval"], False, s.actor), ("approval", "denied")),
    "accept_pin": (lambda s, x: s.accept_pin("rug__q", x["pin_hash"], s.actor), ("pin", "accepted")),
    "accept_server_pins": (lambda s, x: s.accept_server_pins("rug", s.actor), ("pin", "accepted")),
}


def _protocol_methods() -> set[str]:
    return {n for n, v in vars(AdminActions).items() if not n.startswith("_") and inspect.isfunction(v)}


def test_every_protocol_method_is_classified_as_a_read_or_an_audited_act() -> None:
    assert READS | set(ACTS) == _protocol_methods()
    assert not READS & set(ACTS)


@pytest.fixture
def store(tmp_path, record):  # noqa: F811 - the imported fixture
    access = AccessControl.open(tmp_path / "d")
    access.users.add("root")
    access.roles.add("admin")
    access.users.assign_role("root", "admin")
    for name in ("bob", "dave"):
        access.users.add(name)
    access.roles.add("old")
    access.roles.add("member")
    access.users.assign_role("bob", "member")
    access.keys.create("bob")
    access.grants.add("bob", "rug__*")
    v1, v2 = record("rug__q", description="one"), record("rug__q", description="two")
    access.observe("rug", [v1])
    access.observe("rug", [v2])
    extra = {"approval": access.approvals.request("bob", "rug__q", {"x": 1}).id,
             "pin_hash": access.pins.review("rug__q").pending_hash}
    yield access, extra
    access.close()


@pytest.mark.parametrize("method", sorted(ACTS))
def test_each_act_leaves_a_chained_row_naming_the_actor(store, method: str) -> None:
    access, extra = store
    svc = AdminService(access).acting_as("root")
    before = access.audit_log.query(limit=1)
    act, (action, status) = ACTS[method]
    act(svc, extra)
    [row] = access.audit_log.query(limit=1)
    assert not before or row.id > before[0].id
    assert (row.action, row.status) == (action, status)
    assert (row.approver if action == "approval" else row.user) == "root"
    count, broken = access.audit_log.verify()
    assert broken is None and count >= 1


def test_the_local_cli_acts_as_the_os_user(store) -> None:
    access, _extra = store
    AdminService(access).add_user("erin")
    [row] = access.audit_log.query(limit=1)
    assert (row.user, row.status, row.detail) == (local_principal_name(), "user.add", "user erin")


def _rows(api: httpx2.Client, after: int) -> list[dict]:
    return [r for r in api.get("/audit", params={"limit": 200}).json()["entries"] if r["id"] > after][::-1]


def _last_id(api: httpx2.Client) -> int:
    rows = api.get("/audit", params={"limit": 1}).json()["entries"]
    return rows[0]["id"] if rows else 0


ENDPOINTS = [
    ("POST", "/users", {"name": "carol"}, "user.add"),
    ("POST", "/roles", {"name": "ops"}, "role.add"),
    ("POST", "/roles/ops/members", {"user": "carol"}, "role.assign"),
    ("DELETE", "/roles/ops/members/carol", None, "role.unassign"),
    ("DELETE", "/roles/ops", None, "role.remove"),
    ("POST", "/keys", {"user": "carol"}, "key.create"),
    ("POST", "/keys/revoke", {"user": "carol", "all": True}, "key.revoke"),
    ("POST", "/grants", {"subject": "carol", "pattern": "orders__*"}, "grant.add"),
    ("POST", "/grants/self-approval", {"subject": "carol", "pattern": "orders__*", "enable": True},
     "self-approval.enable"),
    ("POST", "/grants/remove", {"subject": "carol", "pattern": "orders__*"}, "grant.remove"),
    ("POST", "/usage/clear", {}, "usage.clear"),
    ("POST", "/users/carol/disable", {"reason": "on leave"}, "user.disable"),
    ("POST", "/users/carol/enable", {}, "user.enable"),
    ("DELETE", "/users/carol", None, "user.remove"),
    ("POST", "/servers/orders/restart", {}, "server.reconnect"),
    ("POST", "/reload", {}, "config.reload"),
]


def test_api_console_and_cli_acts_are_audited_with_their_actor(tmp_path) -> None:
    data = tmp_path / "data"
    keys = people(data)
    with Serve(config(tmp_path), data) as serve, serve.api(keys["root"]) as api:
        for method, path, body, status in ENDPOINTS:
            mark = _last_id(api)
            r = api.request(method, path, json=body) if body is not None else api.request(method, path)
            assert r.status_code < 300, (path, r.text)
            rows = [x for x in _rows(api, mark) if x["action"] == "admin"]
            assert [(x["user"], x["status"]) for x in rows] == [("root", status)], path
        # the CLI through the running serve: the OS user behind the local admin token
        mark = _last_id(api)
        assert cli(data, "users", "add", "frank").returncode == 0
        assert [(x["user"], x["status"], x["detail"]) for x in _rows(api, mark)] == [
            (local_principal_name(), "user.add", "user frank")]
        # the console: the logged-in admin
        with httpx2.Client(base_url=serve.url, timeout=30) as console:
            assert console.post("/admin/login", data={"key": keys["root"]}).status_code == 303
            csrf = re.search(r'name="csrf" value="([^"]+)"', console.get("/admin/users").text).group(1)
            mark = _last_id(api)
            assert console.post("/admin/users", data={"csrf": csrf, "name": "gina"}).status_code == 303
            assert [(x["user"], x["status"]) for x in _rows(api, mark)] == [("root", "user.add")]
        # an admin's call as a user: "root as alice", and root may not approve it
        mark = _last_id(api)
        out = api.post("/call", json={"name": "orders__cancel_order", "arguments": {"order_id": "A1003"},
                                      "user": "alice"}).json()  # the client's 30 s timeout bounds it
        approval_id = out["error"]["approval_id"]
        assert [(x["user"], x["action"]) for x in _rows(api, mark)][-1] == ("root as alice", "call")
        pending = api.get(f"/approvals/{approval_id}").json()
        assert pending["user"] == "root as alice"
        refused = api.post(f"/approvals/{approval_id}/approve")
        assert refused.status_code == 400 and "they issued this call" in refused.json()["error"]["message"]
        verified = api.get("/audit/verify").json()
        assert verified["broken"] is None


def test_an_issuer_may_not_decide_their_call_as_a_user(store) -> None:
    access, _extra = store
    req = access.approvals.request("root as bob", "rug__q", {"x": 2})
    svc = AdminService(access).acting_as("root")
    with pytest.raises(NotAnApprover, match="they issued this call"):
        svc.decide(req.id, True, "root")
    access.users.add("bob2")
    with pytest.raises(NotAnApprover):
        svc.decide(req.id, True, "bob")
    assert json.loads(access.approvals.get(req.id).arguments_json) == {"x": 2}
