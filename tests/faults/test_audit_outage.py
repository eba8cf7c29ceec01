"""No audit row, no action (runtime level): with the audit store unwritable in three ways (SQLite
write lock held by another process, disk full, PostgreSQL stopped), every call of a real upstream
that records what it received is either "ran and audited" or "not sent and said so", never "ran
without a row"; a call that ran while the store failed keeps its row queued (written once the store
is back) and is answered "outcome unknown"."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from host.access import AccessControl
from host.calls import ResultStatus, ToolResult
from host.config import parse_config
from host.runtime import HostRuntime
from host.store import AuditUnavailable
from registry import AllowAll, Principal
from tests.faults.audit_faults import (
    NOT_SENT,
    RAN_AUDITED,
    DiskFiller,
    LockHolder,
    hold_lock,
    recorder_config,
    table,
    verdicts,
    wait_started,
)

ALICE = Principal("alice")


def _assert_refused_cleanly(res: ToolResult, cause: str, store: str) -> None:
    assert res.status is ResultStatus.NOT_EXECUTED
    assert res.error is not None and res.error.where == "audit"
    assert res.error.details["sent"] is False
    assert (res.error.details["cause"], res.error.details["store"]) == (cause, store)
    assert res.error.message.startswith("permission store unavailable: the audit log")
    assert res.error.retry_after_seconds and res.error.retry_after_seconds > 0
    text = res.error.message.lower()
    for driver_text in ("operationalerror", "sqlite3", "psycopg", "127.0.0.1", "connection refused",
                        "database is locked"):
        assert driver_text not in text


def _assert_outcome_unknown(res: ToolResult) -> None:
    assert res.status is ResultStatus.UPSTREAM_ERROR
    assert res.error is not None and res.error.where == "audit"
    assert res.error.details["sent"] is True
    assert (res.error.details["outcome"], res.error.details["audit"]) == ("unknown", "queued")
    assert res.error.message.startswith("outcome unknown: the call was sent to rec")


async def _held_call(rt: HostRuntime, calls_dir: Path, tool: str, key: str, break_store, mend_store) -> ToolResult:
    """A call that reaches the upstream, the store breaking while it runs, answered before it is mended."""
    out: list[ToolResult] = []

    async def run() -> None:
        out.append(await rt.call(tool, {"key": key, "hold": True}, ALICE))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await wait_started(calls_dir, key)
        break_store()
        (calls_dir / f"{key}.go").touch()
    mend_store()
    return out[0]


@pytest.mark.anyio
async def test_sqlite_write_lock_held_by_another_process(tmp_path: Path) -> None:
    calls_dir, db = tmp_path / "calls", tmp_path / "toolhost.db"
    access = AccessControl.open(url=f"sqlite:///{db}")
    cfg = parse_config(recorder_config(calls_dir), data_dir=tmp_path)
    calls: dict[str, ToolResult] = {}
    try:
        with anyio.fail_after(120):
            async with HostRuntime(cfg, data_dir=tmp_path, auditor=access, policy=AllowAll()) as rt:
                calls["before"] = await rt.call("rec__write", {"key": "before"}, ALICE)
                with hold_lock(db):
                    for i in range(2):
                        calls[f"w{i}"] = await rt.call("rec__write", {"key": f"w{i}"}, ALICE)
                    calls["d0"] = await rt.call("rec__delete", {"key": "d0"}, ALICE)
                    calls["r0"] = await rt.call("rec__read", {"key": "r0"}, ALICE)  # best effort: runs
                    with anyio.fail_after(5), pytest.raises(AuditUnavailable) as listing:  # a listing's row
                        await access.audit_async(action="list", principal=ALICE, status="ok", timeout=1.0)
                    assert listing.value.store == "SQLite file toolhost.db"
                holder: list = []
                calls["mid"] = await _held_call(
                    rt, calls_dir, "rec__delete", "mid",
                    lambda: holder.append(LockHolder(db)), lambda: holder[0].release(),
                )
                calls["after"] = await rt.call("rec__write", {"key": "after"}, ALICE)
        found = verdicts(calls, calls_dir, access)
    finally:
        access.close()
    print(table("sqlite write lock held by another process", found))
    assert found == {"before": RAN_AUDITED, "w0": NOT_SENT, "w1": NOT_SENT, "d0": NOT_SENT, "r0": RAN_AUDITED,
                     "mid": RAN_AUDITED, "after": RAN_AUDITED}
    for key in ("w0", "w1", "d0"):
        _assert_refused_cleanly(calls[key], "locked by another writer", "SQLite file toolhost.db")
    assert calls["r0"].status is ResultStatus.OK  # a best-effort read answers its result; its row came later
    _assert_outcome_unknown(calls["mid"])
    assert calls["mid"].error.details["upstream_status"] == "ok"
    assert calls["after"].status is ResultStatus.OK


@pytest.mark.anyio
async def test_required_read_calls_are_refused_like_writes(tmp_path: Path) -> None:
    calls_dir, db = tmp_path / "calls", tmp_path / "toolhost.db"
    access = AccessControl.open(url=f"sqlite:///{db}")
    cfg = parse_config(recorder_config(calls_dir, audit_read_calls="required"), data_dir=tmp_path)
    try:
        with anyio.fail_after(60):
            async with HostRuntime(cfg, data_dir=tmp_path, auditor=access, policy=AllowAll()) as rt:
                with hold_lock(db):
                    res = await rt.call("rec__read", {"key": "r0"}, ALICE)
        found = verdicts({"r0": res}, calls_dir, access)
    finally:
        access.close()
    assert found == {"r0": NOT_SENT}
    _assert_refused_cleanly(res, "locked by another writer", "SQLite file toolhost.db")


@pytest.mark.anyio
async def test_disk_full(tmp_path: Path) -> None:
    calls_dir = tmp_path / "calls"
    volume = DiskFiller(tmp_path / "volume", size_mib=8)
    calls: dict[str, ToolResult] = {}
    try:
        access = AccessControl.open(url=f"sqlite:///{volume.mount / 'toolhost.db'}")
        cfg = parse_config(recorder_config(calls_dir), data_dir=tmp_path)
        try:
            with anyio.fail_after(120):
                async with HostRuntime(cfg, data_dir=tmp_path, auditor=access, policy=AllowAll()) as rt:
                    calls["before"] = await rt.call("rec__write", {"key": "before"}, ALICE)
                    volume.fill()
                    # SQLite first reuses the WAL file's free space (those calls run and are audited);
                    # call until the store is really full, then on
                    for i in range(400):
                        calls[f"fill{i}"] = res = await rt.call("rec__write", {"key": f"fill{i}"}, ALICE)
                        if res.status is not ResultStatus.OK:
                            break
                    for i in range(3):
                        calls[f"w{i}"] = await rt.call("rec__write", {"key": f"w{i}"}, ALICE)
                    calls["d0"] = await rt.call("rec__delete", {"key": "d0"}, ALICE)
                    volume.free()
                    calls["mid"] = await _held_call(rt, calls_dir, "rec__write", "mid", volume.fill, volume.free)
                    calls["after"] = await rt.call("rec__write", {"key": "after"}, ALICE)
            found = verdicts(calls, calls_dir, access)
        finally:
            access.close()
    finally:
        volume.unmount()
    print(table("disk full", found))
    filling = {k: v for k, v in found.items() if k.startswith("fill")}
    assert set(filling.values()) <= {RAN_AUDITED, NOT_SENT} and len(filling) < 400
    assert {k: v for k, v in found.items() if not k.startswith("fill")} == {
        "before": RAN_AUDITED, "w0": NOT_SENT, "w1": NOT_SENT, "w2": NOT_SENT, "d0": NOT_SENT,
        "mid": RAN_AUDITED, "after": RAN_AUDITED}
    for key in ("w0", "w1", "w2", "d0"):
        _assert_refused_cleanly(calls[key], "disk full", "SQLite file toolhost.db")
    _assert_outcome_unknown(calls["mid"])
    assert calls["after"].status is ResultStatus.OK


@pytest.mark.anyio
async def test_postgresql_stopped(tmp_path: Path) -> None:
    from tests.postgres import PostgresCluster

    calls_dir = tmp_path / "calls"
    calls: dict[str, ToolResult] = {}
    with PostgresCluster() as pg:
        url = pg.create_database("toolhost")
        access = AccessControl.open(url=url)
        cfg = parse_config(recorder_config(calls_dir), data_dir=tmp_path)
        try:
            with anyio.fail_after(180):
                async with HostRuntime(cfg, data_dir=tmp_path, auditor=access, policy=AllowAll()) as rt:
                    calls["before"] = await rt.call("rec__write", {"key": "before"}, ALICE)
                    await anyio.to_thread.run_sync(pg.pause)
                    for i in range(3):
                        calls[f"w{i}"] = await rt.call("rec__write", {"key": f"w{i}"}, ALICE)
                    calls["d0"] = await rt.call("rec__delete", {"key": "d0"}, ALICE)
                    await anyio.to_thread.run_sync(pg.resume)
                    assert access.audit_writer.flush(timeout=60)  # the outage's rows are written
                    calls["mid"] = await _held_call(rt, calls_dir, "rec__write", "mid", pg.pause, pg.resume)
                    calls["after"] = await rt.call("rec__write", {"key": "after"}, ALICE)
            found = verdicts(calls, calls_dir, access)
        finally:
            access.close()
    print(table("postgresql stopped", found))
    assert found == {"before": RAN_AUDITED, "w0": NOT_SENT, "w1": NOT_SENT, "w2": NOT_SENT, "d0": NOT_SENT,
                     "mid": RAN_AUDITED, "after": RAN_AUDITED}
    for key in ("w0", "w1", "w2", "d0"):
        _assert_refused_cleanly(calls[key], "unreachable", "PostgreSQL database 'toolhost'")
    _assert_outcome_unknown(calls["mid"])
    assert calls["after"].status is ResultStatus.OK
