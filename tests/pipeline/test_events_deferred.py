"""Deferred event-log writes (``EventLog.defer``): queued on the loop, written in order, never lost."""

from __future__ import annotations

import json

import anyio
import pytest

from host.events import EventLog

pytestmark = pytest.mark.anyio


def _lines(log: EventLog, conversation: str) -> list[dict]:
    path = log.path_for(conversation)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_appends_on_the_loop_wait_for_flush_and_keep_their_order_time_and_redaction(tmp_path) -> None:
    log = EventLog(tmp_path)
    log.defer(within=60)  # only an explicit flush writes here
    assert log.append("c1", "call", {"n": 1, "api_key": "sk-secret-value-123456"}) is None
    log.append("c2", "call", {"n": 2})
    log.append("c1", "result", {"n": 3})
    assert _lines(log, "c1") == [] and _lines(log, "c2") == []
    log.flush()
    c1, c2 = _lines(log, "c1"), _lines(log, "c2")
    assert [(e["seq"], e["kind"], e["data"]["n"]) for e in c1] == [(0, "call", 1), (1, "result", 3)]
    assert [(e["seq"], e["data"]["n"]) for e in c2] == [(0, 2)]
    assert c1[0]["data"]["api_key"] == "[REDACTED]"
    assert c1[0]["ts"] <= c2[0]["ts"] <= c1[1]["ts"]  # stamped when appended, not when written


async def test_the_timer_writes_what_no_flush_did(tmp_path) -> None:
    log = EventLog(tmp_path)
    log.defer(within=0.01)
    log.append("c", "call", {"n": 1})
    with anyio.fail_after(5):
        while not _lines(log, "c"):
            await anyio.sleep(0.01)
    assert [e["data"]["n"] for e in _lines(log, "c")] == [1]


async def test_close_events_and_thread_appends_write_the_queue_first(tmp_path) -> None:
    log = EventLog(tmp_path)
    log.defer(within=60)
    log.append("c", "call", {"n": 1})
    assert [e["data"]["n"] for e in log.events("c")] == [1]  # a read sees every appended event
    log.append("c", "call", {"n": 2})
    written = await anyio.to_thread.run_sync(lambda: log.append("c", "call", {"n": 3}))
    assert written is not None and written["seq"] == 2  # off the loop: written at once, after the queue
    log.append("c", "call", {"n": 4})
    log.close()  # shutdown writes what is queued
    assert [(e["seq"], e["data"]["n"]) for e in _lines(log, "c")] == [(0, 1), (1, 2), (2, 3), (3, 4)]


async def test_a_full_queue_is_written_without_waiting(tmp_path) -> None:
    from host import events

    log = EventLog(tmp_path)
    log.defer(within=60)
    for n in range(events._MAX_PENDING):
        log.append("c", "call", {"n": n})
    assert [e["data"]["n"] for e in _lines(log, "c")] == list(range(events._MAX_PENDING))


def test_without_defer_every_append_is_written_at_once(tmp_path) -> None:
    log = EventLog(tmp_path)
    event = log.append("c", "call", {"n": 1})
    assert event is not None and event["seq"] == 0
    assert [e["data"]["n"] for e in _lines(log, "c")] == [1]


async def test_one_conversation_that_cannot_be_written_costs_no_other_its_events(tmp_path) -> None:
    """Review finding: one failing write dropped the whole queue (every conversation's events)."""
    log = EventLog(tmp_path)
    log.defer(within=60)
    log.path_for("bad").mkdir(parents=True)  # a folder where its file should be: os.open fails
    log.append("c1", "call", {"n": 1})
    log.append("bad", "call", {"n": 2})
    log.append("c2", "call", {"n": 3})
    log.append("c1", "result", {"n": 4})
    log.flush()
    assert [e["data"]["n"] for e in _lines(log, "c1")] == [1, 4]
    assert [e["data"]["n"] for e in _lines(log, "c2")] == [3]
    log.close()
    log.append("c2", "result", {"n": 5})  # after close nothing waits for a flush that never comes
    assert [e["data"]["n"] for e in _lines(log, "c2")] == [3, 5]
    log.close()
