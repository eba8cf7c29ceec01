"""Disabling a user in the permission store and the access layer, on SQLite and PostgreSQL.

Until enabled again: the user's right API key is refused with an error naming who disabled them,
since when, why and the command that enables them (and an ``auth`` audit row); no key can be
created for them; their grants give nothing (also to a stdio session already running, at its next
request), and a stdio serve for them does not start; their open approvals are denied at once (also
one an admin issued as them) and deciding one is refused. Keys, grants and roles are kept, so
enabling restores them. The v7 migration adds the state to a v6 database and keeps every user enabled.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from host.access import AccessControl, decide
from host.store import InvalidValue, NotFound, UserDisabled
from host.store import schema as s
from host.store.migrations import SCHEMA_VERSION, migrate
from registry.policy import Effect, Principal

from .conftest import make_record

ORDERS = make_record("orders__list", "read")
SINCE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"


def refusal(user: str, by: str, reason: str | None = None, refused: str = "") -> str:
    """The exact text of a :class:`UserDisabled` as a regex."""
    why = f" \\({re.escape(reason)}\\)" if reason else ""
    head = f"{re.escape(refused)}: " if refused else ""
    return (f"{head}user {user} is disabled by {re.escape(by)} since {SINCE}{why}; "
            f"an admin runs `toolhost users enable {user}`")


@pytest.fixture
def alice(access: AccessControl) -> str:
    """User alice with a grant on orders and one API key (the token is returned)."""
    access.users.add("alice")
    access.grants.add("alice", "orders__*")
    return access.keys.create("alice", "laptop")[1]


def test_a_disabled_users_right_key_is_refused_naming_the_state_and_the_fix(access, alice) -> None:
    assert access.authenticate(alice).user == "alice"
    before = access.revision
    done = access.user_states.disable("alice", by="root", reason="left the team")
    assert (done.changed, done.user.disabled_by, done.user.disabled_reason) == (True, "root", "left the team")
    assert access.revision > before  # every serve's key cache and policy miss at their next request
    with pytest.raises(UserDisabled) as info:
        access.authenticate(alice)
    assert re.fullmatch(refusal("alice", "root", "left the team"), str(info.value))
    assert (info.value.user, info.value.disabled_by, info.value.reason) == ("alice", "root", "left the team")
    [row] = access.audit_log.query(action="auth", limit=5)
    assert (row.user, row.status, row.rule, row.key_id) == ("alice", "invalid_key", "user-disabled",
                                                            access.keys.list("alice")[0].key_id)
    # a wrong secret for the same key id still says nothing about the state
    key_id = access.keys.list("alice")[0].key_id
    assert access.authenticate(f"th_{key_id}_{'x' * 43}") is None


def test_no_key_can_be_created_for_a_disabled_user(access, alice) -> None:
    access.user_states.disable("alice", by="root")
    with pytest.raises(UserDisabled, match=refusal("alice", "root", refused="no new API key")):
        access.keys.create("alice")
    assert [k.label for k in access.keys.list("alice")] == ["laptop"]  # nothing was written


def test_a_disabled_users_grants_give_nothing_and_enabling_restores_everything(access, alice) -> None:
    running = access.principal_for_user("alice")  # e.g. a stdio session started before
    assert access.evaluate(running, ORDERS).effect is Effect.ALLOW
    access.user_states.disable("alice", by="root")
    assert access.evaluate(running, ORDERS).effect is Effect.DENY
    with pytest.raises(UserDisabled, match=refusal("alice", "root")):
        access.principal_for_user("alice")  # a new stdio session does not start
    [info] = access.users.list()
    assert (info.disabled, info.active_keys, info.grants) == (True, 1, 1)  # kept
    done = access.user_states.enable("alice")
    assert (done.changed, done.user.disabled_at, done.user.disabled_by) == (True, None, None)
    assert access.evaluate(running, ORDERS).effect is Effect.ALLOW
    assert access.authenticate(alice).user == "alice"


def test_disabling_twice_keeps_the_first_and_enabling_an_enabled_user_changes_nothing(access, alice) -> None:
    first = access.user_states.disable("alice", by="root", reason="first")
    revision = access.revision
    again = access.user_states.disable("alice", by="carol", reason="second")
    assert (again.changed, again.user.disabled_by, again.user.disabled_reason) == (False, "root", "first")
    assert again.user.disabled_at == first.user.disabled_at and access.revision == revision
    access.user_states.enable("alice")
    assert access.user_states.enable("alice").changed is False


def test_unknown_users_and_bad_reasons_are_clear_errors(access, alice) -> None:
    with pytest.raises(NotFound, match="unknown user 'bob'"):
        access.user_states.disable("bob", by="root")
    with pytest.raises(NotFound, match="unknown user 'bob'"):
        access.user_states.enable("bob")
    with pytest.raises(InvalidValue, match="use one line of at most 500 characters"):
        access.user_states.disable("alice", by="root", reason="two\nlines")
    with pytest.raises(InvalidValue, match="use one line of at most 500 characters"):
        access.user_states.disable("alice", by="root", reason="x" * 501)
    assert access.users.get("alice").disabled is False


def test_open_approvals_are_denied_with_the_reason_and_cannot_be_decided(access, alice) -> None:
    access.users.add("root")
    pending = access.approvals.request("alice", "orders__cancel", {"id": 1})
    approved = access.approvals.request("alice", "orders__cancel", {"id": 2})
    access.approvals.approve(approved.id, by="carol")
    as_alice = access.approvals.request(Principal(user="alice", actor="root").recorded, "orders__cancel", {"id": 3})
    others = access.approvals.request("root", "orders__cancel", {"id": 4})
    done = access.user_states.disable("alice", by="root", reason="left")
    assert sorted(a.id for a in done.denied) == sorted([pending.id, approved.id, as_alice.id])
    assert {a.id: a.status for a in done.denied}[approved.id] == "approved"  # as it was before
    for a in (pending, approved, as_alice):
        now = access.approvals.get(a.id)
        assert (now.status, now.decided_by, now.decided_how) == ("denied", "root", "user-disabled")
    assert access.approvals.get(others.id).status == "pending"
    # an approval that appears anyway (a call racing the disable) cannot be decided
    late = access.approvals.request("alice", "orders__cancel", {"id": 5})
    with pytest.raises(UserDisabled, match=refusal("alice", "root", "left", f"approval {late.id} cannot be decided")):
        decide(access, late.id, approve=True, by="carol", how="cli")
    assert access.approvals.get(late.id).status == "pending"
    # enabled again, the same call may ask again (a denial for being disabled is no "do not ask again")
    access.user_states.enable("alice")
    again = access.approvals.request("alice", "orders__cancel", {"id": 1})
    assert again.id != pending.id and again.status == "pending"


def test_a_disabled_approver_cannot_decide(access, alice) -> None:
    access.users.add("carol")
    access.roles.add("approver")
    access.users.assign_role("carol", "approver")
    pending = access.approvals.request("alice", "orders__cancel", {"id": 1})
    access.user_states.disable("carol", by="root")
    refused = f"approval {pending.id} cannot be decided"
    with pytest.raises(UserDisabled, match=refusal("carol", "root", refused=refused)):
        decide(access, pending.id, approve=True, by="carol", how="admin", approver_user="carol")
    assert access.approvals.get(pending.id).status == "pending"


def test_migration_from_v6_adds_the_state_and_keeps_every_user_enabled(access, alice) -> None:
    engine = access.store.engine
    with engine.begin() as conn:  # back to schema 6: users without the state columns
        for column in ("disabled_at", "disabled_by", "disabled_reason"):
            conn.execute(text(f"ALTER TABLE users DROP COLUMN {column}"))
        conn.execute(s.schema_version.update().values(version=6))
    assert migrate(engine) == 6
    assert migrate(engine) == SCHEMA_VERSION == 7
    [info] = access.users.list()
    assert (info.name, info.disabled_at, info.disabled_by, info.disabled_reason, info.active_keys) == (
        "alice", None, None, None, 1)
    assert access.authenticate(alice).user == "alice"
    access.user_states.disable("alice", by="root", reason="after the upgrade")
    assert access.users.get("alice").disabled_reason == "after the upgrade"


def test_a_stdio_serve_for_a_disabled_user_does_not_start(tmp_path) -> None:
    data = tmp_path / "data"
    access = AccessControl.open(data)
    try:
        access.users.add("alice")
        access.user_states.disable("alice", by="root", reason="left")
    finally:
        access.close()
    config = tmp_path / "config.json"
    config.write_text('{"mcpServers": {}}')
    toolhost = str(Path(sys.executable).parent / "toolhost")
    out = subprocess.run([toolhost, "serve", "--stdio", "--user", "alice", "--config", str(config), "--data-dir",
                          str(data)], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert (out.returncode, out.stdout) == (2, "")
    assert re.search(refusal("alice", "root", "left"), out.stderr)
