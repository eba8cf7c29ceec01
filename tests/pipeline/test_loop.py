"""The loop driver with the scripted fake model: exit conditions, BR-02/BR-06/BR-16 in a live loop."""

from __future__ import annotations

import anyio
import pytest

from host.calls import ResultStatus
from tests.fake_model import ScriptedModel, ScriptExhausted, StreamedTurn, call, calls, say
from host.agent.loop import StopReason, run_conversation
from host.agent.transcript import Message, check_transcript
from host.pipeline import BatchCancel, CallContext

USER = [Message(role="system", text="be brief"), Message(role="user", text="status of A1?")]


@pytest.mark.anyio
async def test_tool_call_then_final_answer(host):
    model = ScriptedModel([call("flaky__lookup_order", {"order_id": "A1"}, call_id="c1"),
                           lambda h: say(f"It is {h[-1].result.structured['status']}.")])
    with anyio.fail_after(5):
        out = await run_conversation(model, host.pipeline, USER, host.ctx())
    assert out.stop_reason is StopReason.FINAL_ANSWER and out.turns == 2
    assert out.final_text == "It is shipped."
    assert [m.role for m in out.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert model.seen[1][-1].result.call_id == "c1"  # the model saw the result paired with its call
    assert check_transcript(out.messages) == []


@pytest.mark.anyio
async def test_max_turns(host):
    model = ScriptedModel([call("flaky__stats", {}, call_id=f"c{i}") for i in range(10)])
    out = await run_conversation(model, host.pipeline, USER, host.ctx(), max_turns=3)
    assert (out.stop_reason, out.turns) == (StopReason.MAX_TURNS, 3)


@pytest.mark.anyio
async def test_br16_unknown_tools_do_not_crash_and_consecutive_failures_stop_the_loop(host):
    model = ScriptedModel([call("occcra_information", {}, call_id=f"c{i}") for i in range(10)])
    out = await run_conversation(model, host.pipeline, USER, host.ctx(), max_consecutive_failed_calls=3)
    assert (out.stop_reason, out.turns, out.consecutive_failures) == (StopReason.MAX_CONSECUTIVE_FAILURES, 3, 3)
    assert {m.result.status for m in out.messages if m.role == "tool"} == {ResultStatus.UNKNOWN_TOOL}


@pytest.mark.anyio
async def test_a_success_resets_the_failure_count(host):
    steps = [call("nope", {}, call_id="a"), call("nope", {}, call_id="b"), call("flaky__stats", {}, call_id="c"),
             call("nope", {}, call_id="d"), say("ok")]
    out = await run_conversation(ScriptedModel(steps), host.pipeline, USER, host.ctx(),
                                 max_consecutive_failed_calls=3)
    assert out.stop_reason is StopReason.FINAL_ANSWER and out.consecutive_failures == 1


@pytest.mark.anyio
async def test_time_budget_stops_the_loop(host):
    model = ScriptedModel([call("flaky__slow", {"seconds": 30}, call_id="c1"), say("never")])
    with anyio.fail_after(5):
        out = await run_conversation(model, host.pipeline, USER, host.ctx(), time_budget_seconds=0.3)
    assert out.stop_reason is StopReason.TIME_BUDGET
    assert out.messages[-1].result.status is ResultStatus.TIMEOUT


@pytest.mark.anyio
async def test_slow_model_is_bounded_by_the_time_budget(host):
    model = ScriptedModel([say("late")], delay_seconds=30)
    with anyio.fail_after(5):
        out = await run_conversation(model, host.pipeline, USER, host.ctx(), time_budget_seconds=0.2)
    assert (out.stop_reason, out.turns) == (StopReason.TIME_BUDGET, 0)


@pytest.mark.anyio
async def test_cancel_stops_the_loop_with_paired_results(host):
    cancel = BatchCancel()
    model = ScriptedModel([calls([("flaky__slow", {"seconds": 30}, "a"), ("flaky__increment", {"key": "k"}, "b")]),
                           say("never")])
    out = None

    async def run():
        nonlocal out
        out = await run_conversation(model, host.pipeline, USER, CallContext(cancel=cancel))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(5):
            await host.state.slow_started_event.wait()
        cancel.cancel()
    assert out.stop_reason is StopReason.CANCELLED
    assert [m.result.status for m in out.messages if m.role == "tool"] == [ResultStatus.CANCELLED,
                                                                           ResultStatus.NOT_EXECUTED]
    assert check_transcript(out.messages) == []


@pytest.mark.anyio
async def test_br06_unparsable_arguments_are_written_back_as_an_object(host):
    model = ScriptedModel([call("flaky__stats", '{"x": tru', call_id="c1"), call("flaky__stats", "", call_id="c2"),
                           say("done")])
    out = await run_conversation(model, host.pipeline, USER, host.ctx())
    bad_turn, bad_result, empty_turn, empty_result = out.messages[2:6]
    assert bad_turn.calls[0].arguments == {} and bad_turn.calls[0].raw_arguments == "{}"
    assert bad_result.result.status is ResultStatus.INVALID_ARGUMENTS
    assert empty_turn.calls[0].arguments == {} and empty_turn.calls[0].raw_arguments == "{}"
    assert empty_result.result.status is ResultStatus.OK
    assert out.stop_reason is StopReason.FINAL_ANSWER


@pytest.mark.anyio
async def test_br02_duplicate_ids_from_the_model_are_renamed_before_execution(host):
    model = ScriptedModel([
        calls([("flaky__lookup_order", {"order_id": "A1"}, "call_X"), ("flaky__lookup_order", {"order_id": "B"},
                                                                        "call_X")]),
        calls([("flaky__stats", {}, "call_X")]),
        say("done"),
    ])
    out = await run_conversation(model, host.pipeline, USER, host.ctx())
    ids = [c.call_id for m in out.messages for c in m.calls]
    assert ids == ["call_X", "call_X_dup1", "call_X_dup2"]
    results = [(m.result.call_id, m.result.status) for m in out.messages if m.role == "tool"]
    assert results == [("call_X", ResultStatus.OK), ("call_X_dup1", ResultStatus.TOOL_ERROR),
                       ("call_X_dup2", ResultStatus.OK)]
    assert check_transcript(out.messages) == []


@pytest.mark.anyio
async def test_br04_br07_streamed_turn_goes_through_the_accumulator(host):
    b = '{"order_id":"A1"}'.encode()
    events = [("start", {"index": 0, "call_id": "s1", "name": "flaky__lookup_order"}),
              ("start", {"index": 1, "call_id": "s2", "name": "flaky__lookup_order"})]
    for i in range(len(b)):
        events += [("feed", b[i:i + 1], {"index": 0}), ("feed", b[i:i + 1], {"index": 1})]
    events.append(("finish_all",))
    out = await run_conversation(ScriptedModel([StreamedTurn(events), say("ok")]), host.pipeline, USER, host.ctx())
    assert [(m.result.call_id, m.result.status) for m in out.messages if m.role == "tool"] == [
        ("s1", ResultStatus.OK), ("s2", ResultStatus.OK)]


@pytest.mark.anyio
async def test_script_exhaustion_is_a_clear_error(host):
    with pytest.raises(ScriptExhausted, match="turn 1 but the script has 1 steps"):
        await run_conversation(ScriptedModel([call("flaky__stats", {})]), host.pipeline, USER, host.ctx())
