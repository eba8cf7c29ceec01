"""Glue for the loop driver: history conversion, ProviderModel memory, WithToolSearch ordering."""

from __future__ import annotations

import anyio
import pytest

from host.calls import TextBlock, ToolCall, ToolResult
from host.pipeline import CallContext
from host.agent.transcript import Message
from host.agent.providers import (
    TOOL_SEARCH_NAME,
    AnthropicMessagesAdapter,
    ProviderModel,
    Reasoning,
    WithToolSearch,
    to_conversation,
    to_messages,
)
from registry.search import DeferredLoadingState, SearchIndex

from .fake_api import THINKING, FakeAPI, Step
from .records import catalog


def _history() -> list[Message]:
    call = ToolCall(call_id="old_1", name="weather__get_forecast", raw_arguments='{"city":"Oslo"}')
    return [
        Message(role="system", text="sys"),
        Message(role="user", text="earlier question"),
        Message(role="assistant", text="", calls=[call]),
        Message(role="tool", result=ToolResult(call_id="old_1", name=call.name, content=[TextBlock(text="4°C")])),
        Message(role="assistant", text="It is 4°C."),
        Message(role="user", text="and Paris?"),
    ]


def test_messages_round_trip_through_a_conversation():
    history = _history()
    assert to_messages(to_conversation(history)) == history


@pytest.mark.anyio
async def test_resumed_history_gets_the_reasoning_on_the_right_message():
    history = _history()
    fake = FakeAPI(
        "anthropic_messages",
        [Step(reasoning=True, calls=[("toolu_new", "weather__get_forecast", {"city": "Paris"})]), Step(text="ok")],
    )
    model = ProviderModel(AnthropicMessagesAdapter(), fake, catalog(), model="m", params={"max_tokens": 64})
    with anyio.fail_after(5):
        reply = await model(history)
    history = [
        *history,
        reply,
        Message(
            role="tool",
            result=ToolResult(call_id="toolu_new", name="weather__get_forecast", content=[TextBlock(text="18°C")]),
        ),
    ]
    with anyio.fail_after(5):
        await model(history)
    assistants = [m for m in fake.requests[1]["messages"] if m["role"] == "assistant"]
    assert [b["type"] for b in assistants[0]["content"]] == ["tool_use"]  # the old turn: no reasoning
    assert assistants[2]["content"][0] == THINKING  # the new turn: its thinking block, verbatim
    conv = to_conversation(history, model.turns)
    assert isinstance(conv.turns[5].parts[0], Reasoning)


class _Pipeline:
    event_log = None

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    async def run_batch(self, calls, ctx):
        self.batches.append([c.call_id for c in calls])
        return [ToolResult(call_id=c.call_id, name=c.name, content=[TextBlock(text="ran")]) for c in calls]


@pytest.mark.anyio
async def test_with_tool_search_answers_searches_and_keeps_call_order():
    inner, index = _Pipeline(), SearchIndex()
    index.replace_server("shipping", [t for t in catalog() if t.server == "shipping"])
    wrapped = WithToolSearch(inner, index, DeferredLoadingState())
    calls = [
        ToolCall(call_id="a", name="weather__get_forecast", raw_arguments="{}"),
        ToolCall(call_id="s", name=TOOL_SEARCH_NAME, raw_arguments='{"query":"shipping eta"}', index=1),
        ToolCall(call_id="b", name="files__read_image", raw_arguments="{}", index=2),
    ]
    with anyio.fail_after(5):
        results = await wrapped.run_batch(calls, CallContext())
    assert [r.call_id for r in results] == ["a", "s", "b"]
    assert inner.batches == [["a", "b"]]
    assert results[1].structured == {"loaded": ["shipping__get_eta"]}
    assert wrapped.state.loaded == ["shipping__get_eta"] and wrapped.event_log is None


@pytest.mark.anyio
async def test_non_strict_reasons_are_logged_once(caplog):
    from host.agent.providers import OpenAIChatAdapter

    from .records import record

    tool = record("kv", "put", {"type": "object", "properties": {"data": {"type": "object"}}})
    fake = FakeAPI("openai_chat", [Step(text="a"), Step(text="b")])
    model = ProviderModel(OpenAIChatAdapter(), fake, [tool], model="m")
    caplog.set_level("INFO", logger="toolhost.providers")
    with anyio.fail_after(5):
        await model([Message(role="user", text="x")])
        await model([Message(role="user", text="y")])
    assert [r.getMessage() for r in caplog.records] == [
        "openai_chat declaration: kv__put: declared with strict=false because "
        "$.properties.data: object without properties (free-form map) cannot be strict"
    ]
