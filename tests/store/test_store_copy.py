"""``toolhost store copy --to URL``: a SQLite store copied into an empty PostgreSQL database keeps its
users, keys, grants, roles, pins, approvals and a verifying audit chain, and goes on working there."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from host.access import AccessControl
from registry.policy import Principal
from servers.cli.app import app
from tests.permissions.conftest import make_record

runner = CliRunner()


def run(*args: str, ok: bool = True) -> str:
    result = runner.invoke(app, list(args))
    assert (result.exit_code == 0) is ok, result.output
    return result.output


def test_sqlite_store_copied_to_postgresql_keeps_everything_and_its_audit_chain(tmp_path: Path, postgres_url) -> None:
    data = tmp_path / "data"
    a = AccessControl.open(data)
    try:
        a.users.add("alice")
        a.roles.add("approver")
        a.users.add("carol")
        a.users.assign_role("carol", "approver")
        a.grants.add("alice", "orders__*")
        key = a.keys.create("alice")[1]
        a.observe("orders", [make_record("orders__get_order"), make_record("orders__cancel_order", "destructive")])
        pending = a.approvals.request("alice", "orders__cancel_order", {"order_id": "A1"})
        for n in range(3):
            a.audit(action="call", principal=Principal("alice"), tool="orders__get_order", decision="allow",
                    status="ok", arguments={"n": n})
        before = (a.users.list(), a.roles.list(), a.grants.list(), a.pins.list(), a.keys.list(),
                  a.approvals.get(pending.id), a.audit_log.verify())
    finally:
        a.close()
    assert before[-1][1] is None and before[-1][0] >= 3

    out = run("store", "copy", "--to", postgres_url, "--data-dir", str(data))
    assert f"audit chain verified on the target: {before[-1][0]} rows" in out
    assert "2 users" in out and "1 api_keys" in out and "1 grants" in out and "2 pins" in out

    b = AccessControl.open(data, url=postgres_url)
    try:
        after = (b.users.list(), b.roles.list(), b.grants.list(), b.pins.list(), b.keys.list(),
                 b.approvals.get(pending.id), b.audit_log.verify())
        assert after == before
        principal = b.authenticate(key)  # the same key, checked against the copied hash
        assert principal is not None and principal.user == "alice"
        # new rows get fresh ids after the copied ones, and the chain still verifies
        b.grants.add("carol", "orders__get_order")
        b.audit(action="call", principal=Principal("carol"), tool="orders__get_order", decision="allow", status="ok")
        rows, broken = b.audit_log.verify()
        assert broken is None and rows > before[-1][0]
        assert sorted(g.id for g in b.grants.list()) == [1, 2]
    finally:
        b.close()

    out = run("store", "copy", "--to", postgres_url, "--data-dir", str(data), ok=False)
    assert ("the target database is not empty (2 users, 1 roles, 2 grants, 1 api_keys, 1 approvals, 2 pins, "
            "4 audit); copy into a new, empty database") in out
