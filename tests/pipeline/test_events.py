"""Event log: byte-identical replay, recorded transformations, redaction (grep test), crash tolerance."""

from __future__ import annotations

import json

import pytest

from host.calls import ToolCall
from host.events import FORMAT_VERSION, EventLog
from tests.fake_model import ScriptedModel, call, calls, say
from host.agent.loop import run_conversation
from host.agent.transcript import Message, history_bytes, trim_history
from host.pipeline import CallContext
from servers.examples import flaky, orders

from .conftest import connect

USER = [Message(role="system", text="be brief"), Message(role="user", text="Wie ist der Status von A1? 杭州 🙂")]


def script():
    return ScriptedModel([
        calls([("flaky__lookup_order", {"order_id": "A1"}, "c1"), ("flaky__image", {}, "c2"),
               ("flaky__huge", {"chars": 5000}, "c3")], text="checking"),
        call("flaky__stats", '{"broken": ', call_id="c4"),
        call("nope__missing", {}, call_id="c5"),
        say("Shipped."),
    ])


@pytest.mark.anyio
async def test_replay_rebuilds_the_model_visible_history_byte_for_byte(tmp_path):
    log = EventLog(tmp_path / "events")
    state = flaky.FlakyState()
    async with connect({"flaky": flaky.create_server(state)}, tmp_path, event_log=log, state=state) as h:
        out = await run_conversation(script(), h.pipeline, USER, CallContext(conversation_id="conv-A",
                                                                             adapter="fake"))
    replay = log.rebuild_history("conv-A")
    assert replay.exact
    assert history_bytes(replay.messages) == history_bytes(out.messages)
    assert len(out.messages) == 2 + 4 + 5  # system, user, 4 assistant turns, 5 results

    # A deliberate trim is recorded as an event, and replay follows it.
    trimmed = trim_history(out.messages, 2000)
    assert trimmed != out.messages
    log.record_transform("conv-A", "trim", trimmed, note="budget 2000", adapter="fake")
    assert history_bytes(log.rebuild_history("conv-A").messages) == history_bytes(trimmed)
    assert [t["op"] for t in log.rebuild_history("conv-A").transforms] == ["trim"]


@pytest.mark.anyio
async def test_every_event_has_version_time_sequence_and_adapter_and_calls_keep_raw_apart(tmp_path):
    log = EventLog(tmp_path / "events")
    async with connect({"flaky": flaky.create_server()}, tmp_path, event_log=log) as h:
        await run_conversation(script(), h.pipeline, USER, CallContext(conversation_id="c", adapter="fake"))
    events = list(log.events("c"))
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert all(e["v"] == FORMAT_VERSION and e["adapter"] == "fake" and e["ts"].endswith("+00:00") for e in events)
    kinds = {e["kind"] for e in events}
    assert {"message", "request", "call", "decision", "result", "stop"} <= kinds
    broken = next(e for e in events if e["kind"] == "call" and e["data"]["call_id"] == "c4")
    assert broken["data"]["raw_arguments"] == '{"broken": ' and broken["data"]["arguments"] is None
    result = next(e for e in events if e["kind"] == "result" and e["data"]["call_id"] == "c4")
    assert result["data"]["status"] == "invalid_arguments"


SECRETS = ["sk-live-abcdefghijklmnop123456", "hunter2-password-value", "ghp_abcdefghijklmnopqrstuvwxyz012345",
           "eyJhbGciOiJIUzI1NiJ9.payload1234.sig"]


@pytest.mark.anyio
async def test_no_secret_reaches_the_log_file(tmp_path):
    log = EventLog(tmp_path / "events")
    model = ScriptedModel([
        calls([("orders__get_order", {"order_id": "A1001", "api_key": SECRETS[0]}, "c1"),
               ("orders__get_order", json.dumps({"order_id": "A1002", "password": SECRETS[1]}) + "}", "c2")]),
        say(f"use token {SECRETS[2]} and header Authorization: Bearer {SECRETS[3]}"),
    ])
    history = [Message(role="user", text=f"my key is {SECRETS[0]}")]
    async with connect({"orders": orders.create_server()}, tmp_path, event_log=log) as h:
        out = await run_conversation(model, h.pipeline, history, CallContext(conversation_id="secret"))
    text = log.path_for("secret").read_text(encoding="utf-8")
    for secret in SECRETS:
        assert secret not in text
    assert "[REDACTED]" in text
    replay = log.rebuild_history("secret")
    assert not replay.exact and replay.redacted_indexes == [0, 1, 4]
    assert len(replay.messages) == len(out.messages)


def test_torn_last_line_after_a_crash_is_ignored_and_appends_continue(tmp_path):
    log = EventLog(tmp_path)
    log.record_message("c", Message(role="user", text="hi"))
    with log.path_for("c").open("a", encoding="utf-8") as fh:
        fh.write('{"v":1,"seq":1,"kind":"mess')  # the process died mid-write
    assert [m.text for m in log.rebuild_history("c").messages] == ["hi"]


def test_conversation_ids_cannot_escape_the_log_folder(tmp_path):
    log = EventLog(tmp_path / "logs")
    log.record_message("../../etc/passwd", Message(role="user", text="x"))
    files = list((tmp_path / "logs").iterdir())
    assert len(files) == 1 and files[0].parent == tmp_path / "logs" and ".." not in files[0].name


def test_keys_that_merely_contain_token_are_not_redacted(tmp_path):
    log = EventLog(tmp_path)
    ev = log.append("c", "request", {"max_tokens": 100, "token_count": 5, "page_token": "abc", "x-api-key": "k"})
    assert ev["data"] == {"max_tokens": 100, "token_count": 5, "page_token": "[REDACTED]", "x-api-key": "[REDACTED]"}


@pytest.mark.anyio
async def test_crashed_conversation_is_rebuilt_repaired_and_resumed(tmp_path):
    from host.agent.loop import StopReason
    from host.agent.transcript import check_transcript, repair_transcript

    log = EventLog(tmp_path / "events")
    # The process died after the model's turn was logged, before any result was.
    log.record_message("r", USER[0])
    log.record_message("r", USER[1])
    log.record_message("r", Message(role="assistant", calls=[
        ToolCall(call_id="c1", name="flaky__stats", raw_arguments="{}", arguments={})]))
    rebuilt = log.rebuild_history("r").messages
    assert [i.kind for i in check_transcript(rebuilt)] == ["missing_result"]
    repaired = repair_transcript(rebuilt, reason="toolhost restarted").messages
    log.record_transform("r", "repair", repaired)
    async with connect({"flaky": flaky.create_server()}, tmp_path, event_log=log) as h:
        out = await run_conversation(ScriptedModel([say("resumed")]), h.pipeline, repaired,
                                     CallContext(conversation_id="r"))
    assert out.stop_reason is StopReason.FINAL_ANSWER
    assert out.messages[3].result.status.value == "not_executed"
    replay = log.rebuild_history("r")
    assert history_bytes(replay.messages) == history_bytes(out.messages)
    assert [t["op"] for t in replay.transforms] == ["repair"]  # resuming the same history adds no transform
