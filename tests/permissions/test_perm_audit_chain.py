"""The tamper-evident audit log (issue 11): a hash chain that names the first broken link."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import re

import pytest
import typer
from sqlalchemy import delete, insert, select, update
from typer.testing import CliRunner

from host.access import AccessControl
from host.store import schema as s
from host.store.audit_chain import GENESIS, row_hash
from servers.cli.admin_commands import register


def _fill(access: AccessControl) -> list[int]:
    ids = [access.audit(action="list", detail=f"{i} tools") for i in range(3)]
    ids += access.audit_log.record_many(
        [
            {"action": "call", "user": "alice", "tool": "orders__get_order", "arguments": {"id": "A1"}, "status": "ok"},
            {"action": "search", "user": "alice", "detail": "3 hits"},
        ]
    )
    ids.append(access.audit(action="call", tool="x__y", arguments={"n": 1}, status="ok", duration_seconds=0.5))
    return ids


def test_record_and_record_many_extend_one_chain(access: AccessControl) -> None:
    ids = _fill(access)
    rows = list(access.audit_log.rows())
    assert [r["id"] for r in rows] == ids
    assert rows[0]["prev_hash"] == GENESIS
    assert all(rows[i]["prev_hash"] == rows[i - 1]["row_hash"] for i in range(1, len(rows)))
    assert rows[3]["arguments_digest"] == hashlib.sha256(b'{"id":"A1"}').hexdigest()
    assert (rows[3]["user"], rows[3]["tool"], rows[5]["duration_ms"]) == ("alice", "orders__get_order", 500.0)
    assert access.audit_log.verify() == (6, None)


def test_record_many_rejects_unknown_fields_and_writes_nothing(access: AccessControl) -> None:
    with pytest.raises(TypeError, match=r"unknown audit entry field\(s\) \['colour'\]"):
        access.audit_log.record_many([{"action": "list"}, {"action": "list", "colour": "red"}])
    assert list(access.audit_log.rows()) == []


@pytest.mark.parametrize(
    ("tamper", "row_index", "kind"),
    [
        ("modify", 3, "modified"),
        ("delete", 2, "link"),
        ("insert", None, "link"),
        ("truncate", None, "head"),
    ],
)
def test_chain_detects_modified_deleted_inserted_rows(access: AccessControl, tamper, row_index, kind) -> None:
    ids = _fill(access)
    with access.store.write() as conn:
        if tamper == "modify":
            conn.execute(update(s.audit).where(s.audit.c.id == ids[3]).values(status="denied"))
        elif tamper == "delete":
            conn.execute(delete(s.audit).where(s.audit.c.id == ids[2]))
        elif tamper == "insert":
            # a forged row appended after the last one, hashed as if it followed row 1
            prev = conn.execute(select(s.audit.c.row_hash).where(s.audit.c.id == ids[1])).scalar_one()
            forged = {f: None for f in ("user", "key_id", "tool", "decision", "rule", "status", "duration_ms",
                                        "arguments", "detail", "definition_hash", "approval_id",
                                        "arguments_digest", "approver")}
            forged |= {"at": 1.0, "action": "approval", "approver": "mallory"}
            conn.execute(insert(s.audit).values(id=ids[-1] + 1, **forged, prev_hash=prev,
                                                row_hash=row_hash(prev, forged)))
        else:
            conn.execute(delete(s.audit).where(s.audit.c.id == ids[-1]))
    count, broken = access.audit_log.verify()
    assert broken is not None and broken.kind == kind
    if tamper == "modify":
        assert (count, broken.row_id, broken.message) == (3, ids[3], f"row {ids[3]} was modified after it was written")
    elif tamper == "delete":
        assert (count, broken.row_id) == (2, ids[3])
        assert broken.message.startswith(f"row {ids[3]} does not follow row {ids[1]}: a row between them was deleted")
    elif tamper == "insert":
        assert (count, broken.row_id) == (6, ids[-1] + 1)
    else:
        assert count == 5 and broken.message == (
            f"the chain head names row {ids[-1]} but the last row is {ids[-2]}: rows at the end were deleted"
        )


def test_auth_failure_aggregation_keeps_the_chain_intact(access: AccessControl) -> None:
    first = access.audit_log.record_auth_failure(None, reason="unknown", now=1000.0)
    assert access.audit_log.record_auth_failure(None, reason="unknown", now=1001.0) == first
    access.audit(action="list")
    [row] = access.audit_log.query(action="auth")
    assert row.detail.startswith("2 failed attempts since 1970-01-01T001640Z: unknown")
    assert access.audit_log.verify() == (2, None)


def _append_many(path: str, n: int, url: str | None = None) -> None:
    ac = AccessControl.open(path, url=url)
    try:
        for i in range(n):
            if i % 2:
                ac.audit_log.record_many([{"action": "list", "detail": f"{i}a"}, {"action": "list", "detail": f"{i}b"}])
            else:
                ac.audit(action="search", detail=str(i))
    finally:
        ac.close()


def test_concurrent_appenders_in_several_processes_never_fork_the_chain(tmp_path) -> None:
    path = str(tmp_path / "data")
    AccessControl.open(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(path, 40)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    ac = AccessControl.open(path)
    try:
        assert ac.audit_log.verify() == (3 * (20 + 20 * 2), None)
    finally:
        ac.close()


def test_cli_verify_and_export(tmp_path, access: AccessControl) -> None:
    db = ["--db-url", str(access.store.url)]
    _fill(access)
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    ok = runner.invoke(app, ["audit", "verify", *db])
    assert (ok.exit_code, ok.output.strip()) == (0, "ok: 6 rows of the audit log verified, the hash chain is intact")
    out = tmp_path / "audit.jsonl"
    exported = runner.invoke(app, ["audit", "export", "--output", str(out), *db])
    assert exported.exit_code == 0, exported.output
    assert out.stat().st_mode & 0o777 == 0o600
    lines = out.read_text().splitlines()
    assert len(lines) == 6 and json.loads(lines[0])["prev_hash"] == GENESIS
    again = runner.invoke(app, ["audit", "verify", "--file", str(out), *db])
    assert again.exit_code == 0 and "ok: 6 rows of" in again.output
    rows = [json.loads(line) for line in lines]
    rows[4]["detail"] = "0 hits"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bad = runner.invoke(app, ["audit", "verify", "--file", str(out), *db])
    assert bad.exit_code == 1
    assert re.search(rf"BROKEN: row {rows[4]['id']} was modified after it was written \(4 rows before it verified\)",
                     bad.output)
    listing = runner.invoke(app, ["audit", "--action", "search", *db])
    assert listing.exit_code == 0 and "search" in listing.output


def test_chain_holds_on_sqlite_and_postgresql_with_concurrent_processes(tmp_path, store_url) -> None:
    """Three processes append through one database (PostgreSQL: writers serialize on the store's
    advisory lock and the chain head row is locked FOR UPDATE); then a modified row is found."""
    path = str(tmp_path / "data")
    AccessControl.open(path, url=store_url).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(path, 20, store_url)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    ac = AccessControl.open(path, url=store_url)
    try:
        assert ac.audit_log.verify() == (3 * (10 + 10 * 2), None)
        victim = [r["id"] for r in ac.audit_log.rows()][7]
        with ac.store.write() as conn:
            conn.execute(update(s.audit).where(s.audit.c.id == victim).values(detail="edited"))
        count, broken = ac.audit_log.verify()
        assert (count, broken.row_id, broken.kind) == (7, victim, "modified")
    finally:
        ac.close()
