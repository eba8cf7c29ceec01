"""Programmatic callers declared from risk and grants, in the providers' documented shapes."""

from __future__ import annotations

import pytest

from host.agent.providers import AnthropicMessagesAdapter, OpenAIResponsesAdapter
from host.agent.providers.base import API_ANTHROPIC, API_CHAT, API_RESPONSES
from host.agent.providers.callers import allowed_callers, declare_programmatic, program_caller
from registry import Risk, ToolRecord


def _tool(name: str, risk: Risk) -> ToolRecord:
    return ToolRecord(qualified_name=name, server="orders", original_name=name.split("__")[1], description=name,
                      input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}}, risk=risk,
                      open_world=False, timeout_seconds=5, max_output_chars=100, concurrency_safe=True,
                      idempotent=True, definition_hash="0" * 64)


GET, CANCEL = _tool("orders__get_order", Risk.READ), _tool("orders__cancel_order", Risk.DESTRUCTIVE)


def test_read_tools_may_be_called_by_the_providers_program_and_writes_only_directly():
    assert allowed_callers(GET, API_ANTHROPIC) == ["direct", "code_execution_20250825"]
    assert allowed_callers(CANCEL, API_ANTHROPIC) == ["direct"]
    assert allowed_callers(GET, API_RESPONSES) == ["direct", "programmatic"]
    assert allowed_callers(CANCEL, API_RESPONSES, allow=lambda t: t.qualified_name == CANCEL.qualified_name) == [
        "direct", "programmatic"]
    with pytest.raises(ValueError, match="openai_chat has no programmatic tool calling"):
        allowed_callers(GET, API_CHAT)


def test_declarations_get_allowed_callers_and_tool_search_stays_direct():
    anthropic = declare_programmatic(AnthropicMessagesAdapter().declare_tools([GET, CANCEL], tool_search=True),
                                     [GET, CANCEL], API_ANTHROPIC)
    assert [(t["name"], t.get("allowed_callers")) for t in anthropic.tools] == [
        ("orders__get_order", ["direct", "code_execution_20250825"]),
        ("orders__cancel_order", ["direct"]),
        ("tool_search", None),
        ("code_execution", None),
    ]
    assert anthropic.tools[-1] == {"type": "code_execution_20250825", "name": "code_execution"}
    responses = declare_programmatic(OpenAIResponsesAdapter().declare_tools([GET, CANCEL]), [GET, CANCEL],
                                     API_RESPONSES)
    assert [(t.get("name"), t.get("allowed_callers")) for t in responses.tools] == [
        ("orders__get_order", ["direct", "programmatic"]), ("orders__cancel_order", ["direct"]), (None, None)]
    assert responses.tools[-1] == {"type": "programmatic_tool_calling"}
    writes_only = declare_programmatic(OpenAIResponsesAdapter().declare_tools([CANCEL]), [CANCEL], API_RESPONSES)
    assert [(t["type"], t["allowed_callers"]) for t in writes_only.tools] == [("function", ["direct"])]


def test_the_program_id_of_a_returned_call_is_read_from_its_caller():
    anthropic_block = {"type": "tool_use", "id": "toolu_1", "name": "orders__get_order", "input": {},
                       "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_abc"}}
    assert program_caller(anthropic_block, API_ANTHROPIC) == "srvtoolu_abc"
    assert program_caller({**anthropic_block, "caller": {"type": "direct"}}, API_ANTHROPIC) is None
    item = {"type": "function_call", "call_id": "call_1", "name": "orders__get_order", "arguments": "{}",
            "caller": {"type": "program", "caller_id": "prog_9"}}
    assert program_caller(item, API_RESPONSES) == "prog_9"
    assert program_caller({"type": "function_call"}, API_RESPONSES) is None
    assert program_caller(item, API_ANTHROPIC) is None


def _program_response(api: str) -> dict:
    if api == API_ANTHROPIC:
        return {"id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "tool_use",
                "container": {"id": "container_9", "expires_at": "2026-12-06T06:00:00Z"},
                "content": [{"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution",
                             "input": {"code": "await get_order(order_id='A1')"}},
                            {"type": "tool_use", "id": "toolu_1", "name": "orders__get_order",
                             "input": {"order_id": "A1"},
                             "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}}]}
    return {"id": "resp_1", "status": "completed",
            "output": [{"type": "program", "id": "pg_1", "call_id": "prog_1", "code": "x", "fingerprint": "ZnA="},
                       {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "orders__get_order",
                        "arguments": "{\"order_id\": \"A1\"}", "caller": {"type": "program", "caller_id": "prog_1"}}]}


@pytest.mark.parametrize("api", [API_ANTHROPIC, API_RESPONSES])
def test_a_programs_turn_is_replayed_and_survives_a_history_import(api):
    from host.agent.providers import Conversation, ResultsTurn, UserTurn, adapter_for
    from host.calls import TextBlock, ToolResult

    adapter = adapter_for(api)
    turn = adapter.parse_response(_program_response(api))
    [call] = turn.calls
    assert {c: program_caller({"caller": v}, api) for c, v in turn.callers.items()} == {
        call.call_id: "srvtoolu_1" if api == API_ANTHROPIC else "prog_1"}
    conv = Conversation().add(UserTurn.text("A1?")).add(turn).add(
        ResultsTurn(results=[ToolResult(call_id=call.call_id, name=call.name, content=[TextBlock(text="paid")])]))
    body = adapter.prepare(conv, [GET], model="m", max_tokens=10) if api == API_ANTHROPIC else adapter.prepare(
        conv, [GET], model="m")
    request = body.params
    again = adapter.prepare(adapter.parse_history(request), [GET], model="m",
                            **({"max_tokens": 10} if api == API_ANTHROPIC else {})).params
    if api == API_ANTHROPIC:
        assert request["container"] == "container_9"
        assert request["messages"][1]["content"] == _program_response(api)["content"]
        assert again["messages"] == request["messages"]  # the container is a request parameter, not history
    else:
        assert request["input"][1:3] == _program_response(api)["output"]
        assert again["input"] == request["input"]
