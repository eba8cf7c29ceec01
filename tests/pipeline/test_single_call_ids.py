"""The ids the pipeline generates for single calls stay short: ``toolhost_single_1000`` and
up passed redaction's 20-character token hint, so every call from the 1,000th on cost a secret-
detector scan when its events were written."""

from __future__ import annotations

import itertools

import anyio
import pytest

import host.pipeline.pipeline as pipeline_module
from host.events import EventLog
from host.pipeline.pipeline import SINGLE_ID_PREFIX
from registry import redaction
from servers.examples import orders
from tests.pipeline.conftest import connect


def test_ids_up_to_ten_billion_pass_no_redaction_hint() -> None:
    for n in (0, 999, 1000, 123_456_789, 9_999_999_999):
        cid = f"{SINGLE_ID_PREFIX}{n}"
        assert not redaction._ANY_HINT.search(cid), cid
    assert redaction._ANY_HINT.search("toolhost_single_1000")  # the old format did


@pytest.mark.anyio
async def test_late_single_calls_write_their_events_without_a_detector_scan(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(pipeline_module, "_single_ids", itertools.count(9_999_999_990))
    scanned: list[str] = []
    real = redaction._redact_text
    monkeypatch.setattr(redaction, "_redact_text", lambda text: scanned.append(text) or real(text))
    log = EventLog(tmp_path / "events")
    with anyio.fail_after(30):  # the connect and the close are bounded too
        async with connect({"orders": orders.create_server()}, tmp_path, event_log=log) as h:
            results = [await h.pipeline.call("orders__get_order", {"order_id": "A1001"}, h.ctx()) for _ in range(3)]
    assert [r.call_id for r in results] == [f"toolhost_{n}" for n in (9_999_999_990, 9_999_999_991, 9_999_999_992)]
    events = list(log.events(h.ctx().conversation_id))
    assert [e["data"]["call_id"] for e in events if e["kind"] == "call"] == [r.call_id for r in results]
    assert not any(t.startswith("toolhost_") for t in scanned)
