"""History conversion: recorded through one API, rendered for the others (ids, pairing, order kept),
plus hypothesis round trips internal → API → internal for calls and results."""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host.agent.providers import (
    AnthropicMessagesAdapter,
    AssistantTurn,
    Conversation,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    ResultsTurn,
    StopReason,
    UserTurn,
)
from host.calls import ResultStatus, TextBlock, ToolCall, ToolResult

from .records import catalog
from .scripted import parallel_with_failure
from .sdk_check import (
    load_json,
    sdk_message,
    sdk_response,
    validate_anthropic_request,
    validate_chat_request,
    validate_responses_request,
)

ADAPTERS = {
    "openai_chat": OpenAIChatAdapter(),
    "openai_responses": OpenAIResponsesAdapter(),
    "anthropic_messages": AnthropicMessagesAdapter(),
}
VALIDATE = {
    "openai_chat": validate_chat_request,
    "openai_responses": validate_responses_request,
    "anthropic_messages": validate_anthropic_request,
}


def _request(api: str, conv: Conversation) -> dict:
    extra = {"max_tokens": 64} if api == "anthropic_messages" else {}
    params = ADAPTERS[api].prepare(conv, catalog(), model="m", **extra).params
    VALIDATE[api](params)
    return params


def _shape(conv: Conversation) -> list:
    """What must survive a conversion: per turn, the calls (id, name, args) or results (id, name, text)."""
    out = []
    for turn in conv.turns:
        if isinstance(turn, AssistantTurn):
            out.append(
                ("assistant", turn.text, [(c.call_id, c.name, json.loads(c.raw_arguments or "{}")) for c in turn.calls])
            )
        elif isinstance(turn, ResultsTurn):
            out.append(("results", [(r.call_id, r.name, r.text) for r in turn.results]))
        else:
            out.append(("user", [b.text for b in turn.content if isinstance(b, TextBlock)]))
    return out


def _sorted_results(conv: Conversation) -> Conversation:
    """Results in call order (rendering puts them there), failures as their rendered text."""
    turns = []
    for i, turn in enumerate(conv.turns):
        if isinstance(turn, ResultsTurn):
            order = {c.call_id: n for n, c in enumerate(conv.turns[i - 1].calls)}
            results = []
            for r in sorted(turn.results, key=lambda r: order[r.call_id]):
                if r.is_error and r.status is not ResultStatus.TOOL_ERROR:
                    r = ToolResult(
                        call_id=r.call_id,
                        name=r.name,
                        content=[TextBlock(text=f"Error ({r.error.code}): {r.error.message}")],
                    )
                results.append(r)
            turn = ResultsTurn(results=results)
        turns.append(turn)
    return Conversation(system=conv.system, turns=turns)


@pytest.mark.parametrize("source", sorted(ADAPTERS))
@pytest.mark.parametrize("target", sorted(ADAPTERS))
def test_scripted_conversation_converts_between_every_pair_of_apis(source, target):
    original = parallel_with_failure()
    imported = ADAPTERS[source].parse_history(_request(source, original))
    assert imported.system == "Be brief."
    assert _shape(imported) == _shape(_sorted_results(original))
    again = ADAPTERS[target].parse_history(_request(target, imported))
    assert _shape(again) == _shape(_sorted_results(original))


def test_anthropic_keeps_the_failure_flag_through_its_own_history():
    imported = AnthropicMessagesAdapter().parse_history(_request("anthropic_messages", parallel_with_failure()))
    assert [r.is_error for r in imported.turns[2].results] == [False, True]


def test_recorded_anthropic_response_replays_thinking_only_to_anthropic():
    turn = AnthropicMessagesAdapter().parse_response(sdk_message(load_json("anthropic_message_parallel.json")))
    conv = Conversation(
        turns=[
            UserTurn.text("weather?"),
            turn,
            ResultsTurn(
                results=[ToolResult(call_id=c.call_id, name=c.name, content=[TextBlock(text="ok")]) for c in turn.calls]
            ),
        ]
    )
    anthropic = _request("anthropic_messages", conv)
    assert anthropic["messages"][1]["content"][0]["type"] == "thinking"
    assert (
        anthropic["messages"][1]["content"][0]["signature"]
        == load_json("anthropic_message_parallel.json")["content"][0]["signature"]
    )
    chat = _request("openai_chat", conv)
    assert chat["messages"][1] == {
        "role": "assistant",
        "content": "I'll check both cities.",
        "tool_calls": [
            {
                "id": "toolu_01A",
                "type": "function",
                "function": {"name": "weather__get_forecast", "arguments": '{"city": "Paris", "days": 2}'},
            },
            {
                "id": "toolu_01B",
                "type": "function",
                "function": {"name": "weather__get_forecast", "arguments": '{"city": "杭州", "days": 1}'},
            },
        ],
    }


def test_recorded_responses_output_replays_reasoning_and_item_ids():
    turn = OpenAIResponsesAdapter().parse_response(sdk_response(load_json("responses_parallel.json")))
    conv = Conversation(
        turns=[
            UserTurn.text("weather?"),
            turn,
            ResultsTurn(
                results=[ToolResult(call_id=c.call_id, name=c.name, content=[TextBlock(text="ok")]) for c in turn.calls]
            ),
        ]
    )
    items = _request("openai_responses", conv)["input"]
    assert items[1] == load_json("responses_parallel.json")["output"][0]  # reasoning verbatim (encrypted)
    assert [(i["type"], i.get("id"), i["call_id"]) for i in items[2:6]] == [
        ("function_call", "fc_001", "call_weather_1"),
        ("function_call", "fc_002", "call_weather_2"),
        ("function_call_output", None, "call_weather_1"),
        ("function_call_output", None, "call_weather_2"),
    ]
    anthropic = _request("anthropic_messages", conv)
    assert [b["type"] for b in anthropic["messages"][1]["content"]] == ["tool_use", "tool_use"]


# -- hypothesis round trips ---------------------------------------------------------------------

_IDS = st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=12)
_NAMES = st.from_regex(r"[a-z]{1,6}__[a-z_]{1,8}", fullmatch=True)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_ARGS = st.dictionaries(st.text(min_size=1, max_size=6), _JSON, max_size=4)
_TEXT = st.text(min_size=1, max_size=30).filter(lambda t: t.strip() == t and t)


@st.composite
def _conversations(draw):
    n_calls = draw(st.integers(1, 3))
    ids = draw(st.lists(_IDS, min_size=n_calls, max_size=n_calls, unique=True))
    calls = [
        ToolCall(call_id=i, name=draw(_NAMES), raw_arguments=json.dumps(draw(_ARGS), ensure_ascii=False), index=k)
        for k, i in enumerate(ids)
    ]
    results = [
        ToolResult(
            call_id=c.call_id,
            name=c.name,
            content=[TextBlock(text=draw(_TEXT))],
            status=draw(st.sampled_from([ResultStatus.OK, ResultStatus.TOOL_ERROR])),
        )
        for c in calls
    ]
    text = draw(st.one_of(st.just(""), _TEXT))
    parts = ([TextBlock(text=text)] if text else []) + calls
    return Conversation(
        turns=[
            UserTurn.text(draw(_TEXT)),
            AssistantTurn(parts=parts, stop=StopReason.TOOL_USE),
            ResultsTurn(results=results),
        ]
    )


@pytest.mark.parametrize("api", sorted(ADAPTERS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv=_conversations())
def test_round_trip_internal_api_internal(api, conv):
    adapter = ADAPTERS[api]
    extra = {"max_tokens": 64} if api == "anthropic_messages" else {}
    back = adapter.parse_history(adapter.prepare(conv, [], model="m", **extra).params)
    assert _shape(back) == _shape(conv)
    if api == "anthropic_messages":
        assert [r.status for r in back.turns[2].results] == [r.status for r in conv.turns[2].results]
