"""The audit write-behind (host.access.audit_writer): batches, order, shutdown flush, crash window, errors."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import anyio
import pytest

from host.access import AccessControl
from host.access import audit_writer as aw
from host.access.audit_writer import AuditWriter
from host.store import AuditLog, Store
from registry import Principal

ALICE = Principal(user="alice", key_id="k1")


def count(store: Store, **filters) -> int:
    return len(AuditLog(store).query(limit=100_000, **filters))


@pytest.mark.anyio
async def test_concurrent_rows_share_commits_in_queue_order(access: AccessControl):
    """While one batch is being written, 50 requests queue up: they are written as ONE next transaction,
    in the order they were queued, and each request gets its own row id."""
    log = access.audit_log
    first_started, release = threading.Event(), threading.Event()
    batches: list[list[str]] = []
    real = log.record_many

    def slow_first(entries):
        batches.append([e["detail"] for e in entries])
        if len(batches) == 1:
            first_started.set()
            release.wait(10)
        return real(entries)

    log.record_many = slow_first  # type: ignore[method-assign]
    ids: dict[int, int] = {}

    async def one(i: int) -> None:
        ids[i] = await access.audit_async(action="list", principal=ALICE, status="ok", detail=f"r{i}")

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, 0)
            await anyio.to_thread.run_sync(first_started.wait)
            for i in range(1, 51):
                tg.start_soon(one, i)
            while access.audit_writer.pending < 50:
                await anyio.sleep(0)  # let the 50 requests queue their rows
            release.set()
    assert batches == [["r0"], [f"r{i}" for i in range(1, 51)]]
    assert sorted(ids.values()) == list(range(ids[0], ids[0] + 51))
    rows = log.query(action="list", limit=100)
    assert [r.detail for r in reversed(rows)] == [f"r{i}" for i in range(51)]


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


def test_flush_waits_for_rows_queued_before_it(tmp_path):
    store = Store.open(data_dir=tmp_path / "d")
    writer = AuditWriter(AuditLog(store), durability="interval", flush_interval_seconds=60)
    for i in range(10):
        writer.submit({"action": "list", "detail": f"r{i}"})
    assert writer.flush(timeout=20) is True
    assert count(store) == 10
    writer.close()
    store.close()


def test_failing_writes_are_retried_then_reported(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(aw, "RETRY_DELAYS_SECONDS", (0, 0, 0))
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
    fut = writer.submit({"action": "list", "detail": "lost"})
    with pytest.raises(OSError, match="disk full"):
        fut.result(timeout=20)
    assert "could not write 1 audit rows after 4 attempts (OSError: disk full)" in caplog.text
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
from host.store import AuditLog, Store
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
