"""Native deferred loading per API, with the search engineer's SearchIndex and DeferredLoadingState.

Anthropic: defer_loading + client tool_search answered with tool_reference blocks. Responses:
tool_search (execution client) + defer_loading, tool_search_call → tool_search_output. Chat: a
tool_search function; loaded tools appended at the END of tools (earlier prefix byte-identical).
"""

from __future__ import annotations

import json
import re

from host.agent.providers import (
    TOOL_SEARCH_NAME,
    AnthropicMessagesAdapter,
    AssistantTurn,
    Conversation,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    ResultsTurn,
    StopReason,
    UserTurn,
    deferred_state,
    run_tool_search,
)
from host.calls import ResultStatus, TextBlock, ToolCall, ToolResult
from registry.search import DeferredLoadingState, SearchIndex

from .records import catalog
from .sdk_check import validate_anthropic_request, validate_chat_request, validate_responses_request

ETA = "shipping__get_eta"


def _index(tools):
    index = SearchIndex()
    for server in sorted({t.server for t in tools}):
        index.replace_server(server, [t for t in tools if t.server == server])
    return index


def _searched_conversation():
    """user → tool_search("shipping eta") → result (loads shipping__get_eta) → call it → result."""
    tools = catalog()
    state = DeferredLoadingState()
    conv = Conversation(turns=[UserTurn.text("When does order 42 arrive?")])
    search = ToolCall(call_id="call_s", name=TOOL_SEARCH_NAME, raw_arguments='{"query":"shipping eta of an order"}')
    conv.add(AssistantTurn(parts=[search], stop=StopReason.TOOL_USE))
    conv.add(ResultsTurn(results=[run_tool_search(search, _index(tools), state, default_limit=1)]))
    before = Conversation(turns=list(conv.turns))
    call = ToolCall(call_id="call_eta", name=ETA, raw_arguments='{"order_id":"42"}')
    conv.add(AssistantTurn(parts=[call], stop=StopReason.TOOL_USE))
    conv.add(ResultsTurn(results=[ToolResult(call_id="call_eta", name=ETA, content=[TextBlock(text="ETA: Tuesday")])]))
    return tools, state, before, conv


def test_search_loads_into_the_shared_state_and_the_history():
    tools, state, before, conv = _searched_conversation()
    assert state.loaded == [ETA]
    result = before.turns[-1].results[0]
    assert result.structured == {"loaded": [ETA]}
    assert result.content[0].text == (
        f"Found 1 tool(s), now callable:\n- {ETA} [read]: Look up the shipping ETA of an order. (params: order_id: "
        "string)"
    )
    assert deferred_state(conv).loaded == state.loaded


def test_loaded_set_survives_replay_from_json():
    _, state, _, conv = _searched_conversation()
    replayed = Conversation.model_validate_json(conv.model_dump_json())
    assert replayed == conv and deferred_state(replayed).to_json() == state.to_json()


def test_anthropic_defer_loading_and_tool_reference():
    tools, _, before, conv = _searched_conversation()
    adapter = AnthropicMessagesAdapter()
    first = adapter.prepare(Conversation(turns=before.turns[:1]), tools, model="m", tool_search=True, max_tokens=64)
    later = adapter.prepare(conv, tools, model="m", tool_search=True, max_tokens=64)
    validate_anthropic_request(first.params)
    validate_anthropic_request(later.params)
    assert [(t["name"], t.get("defer_loading")) for t in first.params["tools"]] == [
        ("weather__get_forecast", None),
        ("files__read_image", None),
        (ETA, True),
        (TOOL_SEARCH_NAME, None),
    ]
    assert json.dumps(first.params["tools"]) == json.dumps(later.params["tools"])  # nothing changes: cache kept
    search_result = later.params["messages"][2]["content"][0]
    assert search_result == {
        "type": "tool_result",
        "tool_use_id": "call_s",
        "content": [{"type": "tool_reference", "tool_name": ETA}],
    }
    assert later.params["messages"][3]["content"][0]["name"] == ETA


def test_responses_client_tool_search_and_output():
    tools, _, _, conv = _searched_conversation()
    params = OpenAIResponsesAdapter().prepare(conv, tools, model="m", tool_search=True).params
    validate_responses_request(params)
    kinds = [(t["type"], t.get("name"), t.get("defer_loading")) for t in params["tools"]]
    assert kinds == [
        ("function", "weather__get_forecast", None),
        ("function", "files__read_image", None),
        ("tool_search", None, None),
        ("function", ETA, True),
    ]
    assert params["tools"][2]["execution"] == "client"
    call, output = params["input"][1], params["input"][2]
    assert call == {
        "type": "tool_search_call",
        "call_id": "call_s",
        "execution": "client",
        "status": "completed",
        "arguments": {"query": "shipping eta of an order"},
    }
    assert output["type"] == "tool_search_output" and output["call_id"] == "call_s"
    assert output["execution"] == "client" and output["status"] == "completed"
    assert output["tools"] == [params["tools"][3]]  # the same definition the catalog declares
    assert params["input"][3]["type"] == "function_call" and params["input"][3]["name"] == ETA


def test_chat_tool_search_appends_loaded_tools_at_the_end():
    tools, _, before, conv = _searched_conversation()
    adapter = OpenAIChatAdapter()
    first = adapter.prepare(Conversation(turns=before.turns[:1]), tools, model="m", tool_search=True).params
    after = adapter.prepare(conv, tools, model="m", tool_search=True).params
    validate_chat_request(first)
    validate_chat_request(after)
    names = [t["function"]["name"] for t in after["tools"]]
    assert names == ["files__read_image", "weather__get_forecast", TOOL_SEARCH_NAME, ETA]
    assert json.dumps(after["tools"][:3]) == json.dumps(first["tools"])  # earlier prefix byte-identical
    listing = json.loads(after["messages"][2]["content"])
    assert [t["name"] for t in listing["loaded"]] == [ETA]
    assert listing["loaded"][0]["parameters"]["required"] == ["order_id"]


def test_exported_names_identical_across_declarations_hits_and_history_br14():
    tools, _, _, conv = _searched_conversation()
    pattern = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
    chat = OpenAIChatAdapter().prepare(conv, tools, model="m", tool_search=True).params
    anthropic = AnthropicMessagesAdapter().prepare(conv, tools, model="m", tool_search=True, max_tokens=8).params
    responses = OpenAIResponsesAdapter().prepare(conv, tools, model="m", tool_search=True).params
    declared = {t["function"]["name"] for t in chat["tools"]} | {t["name"] for t in anthropic["tools"]}
    hits = {t["name"] for t in json.loads(chat["messages"][2]["content"])["loaded"]}
    hits |= {b["tool_name"] for b in anthropic["messages"][2]["content"][0]["content"]}
    hits |= {t["name"] for t in responses["input"][2]["tools"]}
    replayed = {
        chat["messages"][3]["tool_calls"][0]["function"]["name"],
        anthropic["messages"][3]["content"][0]["name"],
        responses["input"][3]["name"],
    }
    assert hits == replayed == {ETA} and ETA in declared
    assert all(pattern.match(n) for n in declared | hits | replayed)


def test_switching_api_mid_conversation_keeps_the_loaded_tools():
    tools, _, _, conv = _searched_conversation()
    chat_request = OpenAIChatAdapter().prepare(conv, tools, model="m", tool_search=True).params
    imported = OpenAIChatAdapter().parse_history(chat_request)
    assert deferred_state(imported).loaded == [ETA]
    anthropic = AnthropicMessagesAdapter().prepare(imported, tools, model="m", tool_search=True, max_tokens=8).params
    validate_anthropic_request(anthropic)
    assert anthropic["messages"][2]["content"][0]["content"] == [{"type": "tool_reference", "tool_name": ETA}]
    back = AnthropicMessagesAdapter().parse_history(anthropic)
    assert deferred_state(back).loaded == [ETA]
    responses = OpenAIResponsesAdapter().prepare(back, tools, model="m", tool_search=True).params
    validate_responses_request(responses)
    assert [t["name"] for t in responses["input"][2]["tools"]] == [ETA]


def test_tool_search_without_query_is_an_invalid_arguments_result():
    result = run_tool_search(
        ToolCall(call_id="c", name=TOOL_SEARCH_NAME, raw_arguments="{}"), _index(catalog()), DeferredLoadingState()
    )
    assert result.status is ResultStatus.INVALID_ARGUMENTS
    assert result.error.message == (
        'tool_search needs {"query": "what the tool should do"}: \'query\' must be a non-empty string.'
    )


def test_search_hidden_tools_are_never_loaded():
    state = DeferredLoadingState()
    result = run_tool_search(
        ToolCall(call_id="c", name=TOOL_SEARCH_NAME, raw_arguments='{"query":"shipping eta"}'),
        _index(catalog()),
        state,
        visible=lambda t: t.server != "shipping",
    )
    assert ETA not in result.structured["loaded"] and ETA not in state.loaded
