"""The audit write-behind (host.access.audit_writer): batches, order, shutdown flush, crash window, errors."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest

from host.access import AccessControl
from host.access import audit_writer as aw
from host.access.audit_writer import AuditWriter
from host.store import AuditLog, AuditUnavailable, Store
from host.store.audit_sqlite import CHECKPOINT_EVERY
from host.store.engine import write_tx
from registry import Principal

ALICE = Principal(user="alice", key_id="k1")


def count(store: Store, **filters) -> int:
    return len(AuditLog(store).query(limit=100_000, **filters))


@pytest.mark.anyio
async def test_concurrent_rows_share_commits_in_queue_order(access: AccessControl):
    """While another writer holds the database write lock, the first row waits in the writer thread and
    50 later requests queue up behind it (never committed ahead of it): once the lock is released they
    are written as ONE next transaction, in the order they were queued, each request with its own id."""
    log = access.audit_log
    first_started = threading.Event()
    batches: list[list[str]] = []
    real = log.record_many

    def spy(entries):
        batches.append([e.detail for e in entries])  # AuditRecord values
        first_started.set()
        return real(entries)

    log.record_many = spy  # type: ignore[method-assign]
    ids: dict[int, int] = {}

    async def one(i: int) -> None:
        ids[i] = await access.audit_async(action="list", principal=ALICE, status="ok", detail=f"r{i}")

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            with write_tx(access.store.engine):  # another writer (the CLI, a replica) holds the lock
                tg.start_soon(one, 0)
                await anyio.to_thread.run_sync(first_started.wait)
                for i in range(1, 51):
                    tg.start_soon(one, i)
                while access.audit_writer.pending < 50:
                    await anyio.sleep(0)  # let the 50 requests queue their rows
    assert batches == [["r0"], [f"r{i}" for i in range(1, 51)]]
    assert sorted(ids.values()) == list(range(ids[0], ids[0] + 51))
    rows = log.query(action="list", limit=100)
    assert [r.detail for r in reversed(rows)] == [f"r{i}" for i in range(51)]
    assert log.verify() == (51, None)
    # the writer is idle again: the next row is committed on the event loop (SQLite), in order
    last = await access.audit_async(action="list", principal=ALICE, status="ok", detail="after")
    assert last == ids[50] + 1
    assert batches == [["r0"], [f"r{i}" for i in range(1, 51)]] + ([] if access.store.audit_appender else [["after"]])


@pytest.mark.anyio
async def test_an_idle_writer_commits_on_the_event_loop(tmp_path):
    """SQLite, commit durability, nothing queued: the row is committed before write() returns, with no
    writer thread and no thread hop; the hash chain is the one SQLAlchemy writers extend."""
    access = AccessControl.open(tmp_path / "d")
    try:
        with anyio.fail_after(10):
            first = await access.audit_async(action="list", principal=ALICE, status="ok", detail="one")
            access.audit_auth_failure(None)  # a SQLAlchemy-written row in between
            second = await access.audit_call_async(ALICE, "orders__get_order", {"api_key": "s3cret"}, status="ok")
        assert access.audit_writer._thread is None
        assert [r.id for r in reversed(access.audit_log.query(limit=10))] == [first, first + 1, second]
        assert second == first + 2
        assert json.loads(access.audit_log.query(action="call")[0].arguments) == {"api_key": "[REDACTED]"}
        assert access.audit_log.verify() == (3, None)
    finally:
        access.close()


def _checkpointed_rows(db: Path) -> int:
    """Audit rows in the database file itself (``immutable``: the WAL is not read)."""
    conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        return conn.execute("SELECT count(*) FROM audit").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.anyio
async def test_inline_commits_are_checkpointed_by_the_writer_thread(tmp_path):
    """Inline commits never checkpoint the WAL on the event loop; every CHECKPOINT_EVERY commits the
    writer thread copies them into the database file."""
    access = AccessControl.open(tmp_path / "d")
    db = tmp_path / "d" / "toolhost.db"
    try:
        access.audit_log.checkpoint()  # the schema into the file: from here on only audit rows are in the WAL
        assert _checkpointed_rows(db) == 0
        with anyio.fail_after(60):
            for i in range(CHECKPOINT_EVERY - 1):
                await access.audit_async(action="list", principal=ALICE, status="ok", detail=f"r{i}")
            assert access.audit_writer._thread is None  # no checkpoint yet: the rows are in the WAL only
            assert _checkpointed_rows(db) == 0
            await access.audit_async(action="list", principal=ALICE, status="ok", detail="last")
            assert await anyio.to_thread.run_sync(access.audit_writer.flush, 20) is True
        assert _checkpointed_rows(db) == CHECKPOINT_EVERY
        assert len(access.audit_log.query(limit=1000)) == CHECKPOINT_EVERY
    finally:
        access.close()


def test_try_record_many_never_waits_for_a_locked_database(tmp_path):
    """Another writer holds the lock: nothing is written and None comes back at once (no busy wait)."""
    store = Store.open(data_dir=tmp_path / "d")
    log = AuditLog(store)
    try:
        with write_tx(store.engine):
            t0 = time.monotonic()
            assert log.try_record_many([{"action": "list", "detail": "x"}]) is None
            assert time.monotonic() - t0 < 1.0  # the busy timeout is 30 s
        assert count(store) == 0
        (row_id,) = log.try_record_many([{"action": "list", "detail": "x"}])
        assert [r.id for r in log.query()] == [row_id]
    finally:
        store.close()


@pytest.mark.anyio
async def test_call_rows_keep_decision_rule_and_redaction(access: AccessControl, record):
    rec = record("orders__get_order")
    with anyio.fail_after(10):
        row_id = await access.audit_call_async(ALICE, "orders__get_order", {"order_id": "A1", "api_key": "s3cret"},
                                               status="ok", duration_seconds=0.0125, tool=rec)
    (row,) = access.audit_log.query(action="call")
    assert row.id == row_id
    assert (row.user, row.key_id, row.tool, row.status, row.duration_ms) == (
        "alice", "k1", "orders__get_order", "ok", 12.5)
    assert (row.decision, row.rule) == ("deny", "unknown-user")  # alice is no user of this store
    assert json.loads(row.arguments) == {"api_key": "[REDACTED]", "order_id": "A1"}


def test_close_writes_every_queued_row_at_once(tmp_path):
    """interval durability with a 60 s window: close() (the SIGTERM path) still writes all 200 rows now."""
    store = Store.open(data_dir=tmp_path / "d")
    writer = AuditWriter(AuditLog(store), durability="interval", flush_interval_seconds=60)
    futures = [writer.submit({"action": "list", "detail": f"r{i}"}) for i in range(200)]
    assert count(store) == 0
    t0 = time.monotonic()
    writer.close()
    assert time.monotonic() - t0 < 30
    assert count(store) == 200
    assert all(f.done() for f in futures)
    writer.submit({"action": "list", "detail": "late"})  # after close: written at once, not lost
    assert count(store) == 201
    store.close()


def test_a_row_whose_waiter_gave_up_is_written_and_the_writer_thread_lives_on(tmp_path):
    """Review finding: a cancelled request cancelled its row's future; set_result then raised in
    the writer thread, which stopped for good (later rows never resolved, later calls hung)."""
    store = Store.open(data_dir=tmp_path / "d")
    writer = AuditWriter(AuditLog(store), durability="interval", flush_interval_seconds=60)
    futures = [writer.submit({"action": "list", "detail": f"r{i}"}) for i in range(3)]
    assert futures[1].cancel()  # what asyncio.wrap_future does when the awaiting task is cancelled
    assert writer.flush(timeout=20) is True
    assert count(store) == 3 and futures[0].result() != futures[2].result()
    late = writer.submit({"action": "list", "detail": "after"})
    assert writer.flush(timeout=20) is True and late.result(timeout=20) > futures[2].result()
    assert count(store) == 4
    writer.close()
    store.close()


def test_flush_waits_for_rows_queued_before_it(tmp_path):
    store = Store.open(data_dir=tmp_path / "d")
    writer = AuditWriter(AuditLog(store), durability="interval", flush_interval_seconds=60)
    for i in range(10):
        writer.submit({"action": "list", "detail": f"r{i}"})
    assert writer.flush(timeout=20) is True
    assert count(store) == 10
    writer.close()
    store.close()


def test_failing_writes_are_retried_then_reported_and_kept_until_written(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(aw, "RETRY_DELAYS_SECONDS", (0, 0, 0))
    monkeypatch.setattr(aw, "OUTAGE_RETRY_SECONDS", 0.05)
    store = Store.open(data_dir=tmp_path / "d")
    log = AuditLog(store)
    real, calls = log.record_many, []

    def flaky(entries):
        calls.append(len(entries))
        if len(calls) <= 2:
            raise OSError("disk full")
        return real(entries)

    log.record_many = flaky  # type: ignore[method-assign]
    writer = AuditWriter(log)
    assert writer.submit({"action": "list", "detail": "kept"}).result(timeout=20) > 0
    assert calls == [1, 1, 1] and count(store) == 1

    log.record_many = lambda entries: (_ for _ in ()).throw(OSError("disk full"))  # type: ignore[method-assign]
    fut = writer.submit({"action": "list", "detail": "kept through the outage"})
    with pytest.raises(AuditUnavailable) as refused:
        fut.result(timeout=20)
    assert (refused.value.reason, refused.value.store) == ("disk full", "SQLite file toolhost.db")
    assert "could not write 1 audit rows after 4 attempts (disk full; OSError); they stay queued" in caplog.text
    assert writer.outage is not None
    log.record_many = real  # type: ignore[method-assign]  # the disk has room again: the kept row is written
    assert writer.flush(timeout=20)
    assert count(store) == 2 and writer.outage is None
    assert "the audit log can be written again; 1 queued rows written" in caplog.text
    writer.close()
    store.close()


def test_bad_settings_are_refused(tmp_path):
    store = Store.open(data_dir=tmp_path / "d")
    with pytest.raises(ValueError, match="audit durability must be 'commit' or 'interval', got 'later'"):
        AuditWriter(AuditLog(store), durability="later")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"audit flush interval must be in \(0, 60\] seconds, got 0"):
        AuditWriter(AuditLog(store), flush_interval_seconds=0)
    store.close()


_CRASH_CHILD = """
import sys, time
from host.store import AuditLog, AuditUnavailable, Store
from host.store.audit_sqlite import CHECKPOINT_EVERY
from host.store.engine import write_tx
from host.access.audit_writer import AuditWriter
store = Store.open(data_dir=sys.argv[1])
writer = AuditWriter(AuditLog(store), durability="interval", flush_interval_seconds=float(sys.argv[2]))
for i in range(300):
    writer.submit({"action": "call", "detail": f"r{i}"})
print("queued", flush=True)
time.sleep(600)
"""


def test_interval_crash_loses_nothing_older_than_the_window(tmp_path):
    """interval durability, SIGKILL (no shutdown code runs): rows queued longer than the flush window
    (plus one write) before the kill are all in the database."""
    window = 0.2
    proc = subprocess.Popen([sys.executable, "-c", _CRASH_CHILD, str(tmp_path / "d"), str(window)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "queued"
        queued_at = time.monotonic()
        store = Store.open(data_dir=tmp_path / "d")
        while count(store) < 300 and time.monotonic() - queued_at < window + 10:
            time.sleep(0.02)  # polling the database the child writes: no event crosses the process
        elapsed = time.monotonic() - queued_at
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert count(store) == 300
        assert elapsed < window + 5  # the window plus one write, with room for a loaded machine
        store.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
