"""Rendering conversations for each API, checked field by field and against the SDK request types.

Bug cases: BR-02 (duplicate ids), BR-03 (one Anthropic user message), BR-06 (arguments written back
as objects), BR-17 (isError), BR-19 (images).
"""

from __future__ import annotations

import json

import pytest

from host.calls import ImageBlock, ResultStatus, TextBlock, ToolCall, ToolResult
from host.agent.providers import (
    AnthropicMessagesAdapter,
    AssistantTurn,
    Conversation,
    HistoryError,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    ResultsTurn,
    StopReason,
    UserTurn,
)

from .records import catalog
from .scripted import PNG_B64, TIMEOUT_TEXT, image_result, parallel_with_failure
from .sdk_check import validate_anthropic_request, validate_chat_request, validate_responses_request

ERROR_TEXT = f"Error (timeout): {TIMEOUT_TEXT}"


def test_scripted_parallel_failure_chat_field_by_field():
    params = OpenAIChatAdapter().prepare(parallel_with_failure(), catalog()[:1], model="gpt-4.1").params
    validate_chat_request(params)
    assert params["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and Hangzhou?"},
        {
            "role": "assistant",
            "content": "Checking both.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather__get_forecast", "arguments": '{"city":"Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "weather__get_forecast", "arguments": '{"city":"Hangzhou"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Paris: 18°C, sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": ERROR_TEXT},
    ]
    assert params["tool_choice"] == "auto"
    assert [t["function"]["name"] for t in params["tools"]] == ["weather__get_forecast"]
    assert params["tools"][0]["function"]["strict"] is True


def test_scripted_parallel_failure_responses_field_by_field():
    params = OpenAIResponsesAdapter().prepare(parallel_with_failure(), catalog()[:1], model="gpt-5.4").params
    validate_responses_request(params)
    assert params["instructions"] == "Be brief."
    assert params["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris and Hangzhou?"}]},
        {"role": "assistant", "content": "Checking both."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "weather__get_forecast",
            "arguments": '{"city":"Paris"}',
        },
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "weather__get_forecast",
            "arguments": '{"city":"Hangzhou"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "Paris: 18°C, sunny"},
        {"type": "function_call_output", "call_id": "call_2", "output": ERROR_TEXT},
    ]
    assert params["tools"][0]["name"] == "weather__get_forecast" and params["tools"][0]["strict"] is True


def test_scripted_parallel_failure_anthropic_field_by_field():
    params = (
        AnthropicMessagesAdapter()
        .prepare(parallel_with_failure(), catalog()[:1], model="claude-sonnet-4-5", max_tokens=1024)
        .params
    )
    validate_anthropic_request(params)
    assert params["system"] == "Be brief."
    assert params["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Hangzhou?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "call_1", "name": "weather__get_forecast", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_2", "name": "weather__get_forecast", "input": {"city": "Hangzhou"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": [{"type": "text", "text": "Paris: 18°C, sunny"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "call_2",
                    "content": [{"type": "text", "text": ERROR_TEXT}],
                    "is_error": True,
                },
            ],
        },
    ]
    assert params["tool_choice"] == {"type": "auto"}
    assert params["tools"][0]["input_schema"]["required"] == ["city"]


def test_image_result_chat_note_plus_user_message_br19():
    params = OpenAIChatAdapter().prepare(image_result(), catalog(), model="gpt-4.1").params
    validate_chat_request(params)
    tool_msg, image_msg = params["messages"][-2:]
    assert tool_msg == {
        "role": "tool",
        "tool_call_id": "call_img",
        "content": "chart.png (1x1)\n[image image/png, ~70 bytes: attached in the next user message]",
    }
    assert image_msg == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Images returned by the tool calls above:"},
            {"type": "text", "text": "Image from tool call call_img (files__read_image):"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
        ],
    }
    assert PNG_B64 not in tool_msg["content"]


def test_image_result_chat_without_image_support_is_text_only():
    params = OpenAIChatAdapter(images_in_user_message=False).prepare(image_result(), catalog(), model="m").params
    assert params["messages"][-1]["role"] == "tool"
    assert params["messages"][-1]["content"].endswith(
        "[image image/png, ~70 bytes: not shown (this model takes no images here)]"
    )


def test_image_result_responses_input_image_in_output_br19():
    params = OpenAIResponsesAdapter().prepare(image_result(), catalog(), model="m").params
    validate_responses_request(params)
    assert params["input"][-1] == {
        "type": "function_call_output",
        "call_id": "call_img",
        "output": [
            {"type": "input_text", "text": "chart.png (1x1)"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG_B64}", "detail": "auto"},
        ],
    }


def test_image_result_anthropic_image_block_br19():
    params = AnthropicMessagesAdapter().prepare(image_result(), catalog(), model="m", max_tokens=64).params
    validate_anthropic_request(params)
    assert params["messages"][-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "call_img",
                "content": [
                    {"type": "text", "text": "chart.png (1x1)"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
                ],
            }
        ],
    }


def _dup_conversation() -> Conversation:
    conv = Conversation()
    conv.add(UserTurn.text("list twice"))
    conv.add(
        AssistantTurn(
            parts=[
                ToolCall(call_id="call_X", name="fs__list_dir", raw_arguments='{"p":"a"}'),
                ToolCall(call_id="call_X", name="fs__list_dir", raw_arguments='{"p":"b"}', index=1),
            ]
        )
    )
    conv.add(
        ResultsTurn(
            results=[
                ToolResult(call_id="call_X", name="fs__list_dir", content=[TextBlock(text="A")]),
                ToolResult(call_id="call_X", name="fs__list_dir", content=[TextBlock(text="B")]),
            ]
        )
    )
    conv.add(UserTurn.text("again"))
    conv.add(AssistantTurn(parts=[ToolCall(call_id="list_dir:0", name="fs__list_dir", raw_arguments='{"p":"c"}')]))
    conv.add(
        ResultsTurn(results=[ToolResult(call_id="list_dir:0", name="fs__list_dir", content=[TextBlock(text="C")])])
    )
    conv.add(AssistantTurn(parts=[ToolCall(call_id="list_dir:0", name="fs__list_dir", raw_arguments='{"p":"d"}')]))
    conv.add(
        ResultsTurn(results=[ToolResult(call_id="list_dir:0", name="fs__list_dir", content=[TextBlock(text="D")])])
    )
    return conv


def test_duplicate_ids_renamed_and_paired_in_order_br02():
    messages = OpenAIChatAdapter().render_messages(_dup_conversation())
    pairs = [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"]
    assert pairs == [("call_X", "A"), ("call_X_dup1", "B"), ("list_dir:0", "C"), ("list_dir:0_dup1", "D")]
    calls = [tc["id"] for m in messages if m["role"] == "assistant" for tc in m.get("tool_calls", [])]
    assert calls == ["call_X", "call_X_dup1", "list_dir:0", "list_dir:0_dup1"]
    items = OpenAIResponsesAdapter().render_input(_dup_conversation())
    outputs = [(i["call_id"], i["output"]) for i in items if i.get("type") == "function_call_output"]
    assert outputs == pairs


def test_duplicate_and_illegal_ids_sanitized_for_anthropic_br02():
    params = AnthropicMessagesAdapter().prepare(_dup_conversation(), [], model="m", max_tokens=8).params
    validate_anthropic_request(params)
    uses = [b["id"] for m in params["messages"] for b in m["content"] if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for m in params["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert uses == results == ["call_X", "call_X_dup1", "list_dir_0", "list_dir_0_dup1"]


def test_chat_history_parallel_results_become_one_anthropic_user_message_br03():
    chat = {
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "id1", "type": "function", "function": {"name": "a__x", "arguments": "{}"}},
                    {"id": "id2", "type": "function", "function": {"name": "a__y", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "id1", "content": "one"},
            {"role": "tool", "tool_call_id": "id2", "content": "two"},
            {"role": "user", "content": "and now?"},
        ]
    }
    conv = OpenAIChatAdapter().parse_history(chat)
    messages = AnthropicMessagesAdapter().render_messages(conv)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "id1", "content": [{"type": "text", "text": "one"}]},
        {"type": "tool_result", "tool_use_id": "id2", "content": [{"type": "text", "text": "two"}]},
        {"type": "text", "text": "and now?"},
    ]


@pytest.mark.parametrize(
    ("raw", "as_object", "as_text"),
    [
        ("", {}, "{}"),
        ("   ", {}, "{}"),
        ('""', {}, "{}"),
        ("[]", {}, "{}"),
        ("null", {}, "{}"),
        ('{"a":1}', {"a": 1}, '{"a":1}'),
        ("{not json", {}, "{}"),
    ],
)
def test_arguments_written_back_as_objects_br06(raw, as_object, as_text):
    conv = Conversation(
        turns=[
            UserTurn.text("x"),
            AssistantTurn(parts=[ToolCall(call_id="c", name="a__b", raw_arguments=raw)]),
            ResultsTurn(results=[ToolResult(call_id="c", name="a__b", status=ResultStatus.INVALID_ARGUMENTS)]),
        ]
    )
    anthropic = AnthropicMessagesAdapter().render_messages(conv)
    assert anthropic[1]["content"][0]["input"] == as_object
    chat = OpenAIChatAdapter().render_messages(conv)
    assert chat[1]["tool_calls"][0]["function"]["arguments"] == as_text


def test_tool_error_flagged_for_anthropic_and_text_for_openai_br17():
    conv = Conversation(
        turns=[
            UserTurn.text("x"),
            AssistantTurn(parts=[ToolCall(call_id="c", name="a__b")]),
            ResultsTurn(
                results=[
                    ToolResult(
                        call_id="c", name="a__b", status=ResultStatus.TOOL_ERROR, content=[TextBlock(text="404")]
                    )
                ]
            ),
        ]
    )
    block = AnthropicMessagesAdapter().render_messages(conv)[2]["content"][0]
    assert block == {
        "type": "tool_result",
        "tool_use_id": "c",
        "content": [{"type": "text", "text": "404"}],
        "is_error": True,
    }
    assert OpenAIChatAdapter().render_messages(conv)[2] == {"role": "tool", "tool_call_id": "c", "content": "404"}


def test_call_without_result_gets_a_not_executed_result():
    conv = Conversation(turns=[UserTurn.text("x"), AssistantTurn(parts=[ToolCall(call_id="c", name="a__b")])])
    tool = OpenAIChatAdapter().render_messages(conv)[-1]
    assert tool == {
        "role": "tool",
        "tool_call_id": "c",
        "content": "Error (not_executed): No result was recorded for this call; it was not executed.",
    }


def test_result_without_its_call_is_a_history_error():
    conv = Conversation(
        turns=[
            UserTurn.text("x"),
            AssistantTurn(parts=[ToolCall(call_id="c", name="a__b")]),
            ResultsTurn(results=[ToolResult(call_id="zzz", name="a__b")]),
        ]
    )
    with pytest.raises(HistoryError) as err:
        AnthropicMessagesAdapter().render_messages(conv)
    assert err.value.turn == 2 and "'zzz'" in err.value.problem


def test_reasoning_replayed_verbatim_only_to_its_own_api():
    thinking = {"type": "thinking", "thinking": "plan", "signature": "sig=="}
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc=="}
    from host.agent.providers import Reasoning

    conv = Conversation(
        turns=[
            UserTurn.text("x"),
            AssistantTurn(
                api="anthropic_messages",
                stop=StopReason.TOOL_USE,
                parts=[
                    Reasoning(api="anthropic_messages", data=thinking),
                    Reasoning(api="openai_responses", data=reasoning),
                    ToolCall(call_id="c", name="a__b", raw_arguments="{}"),
                ],
            ),
            ResultsTurn(results=[ToolResult(call_id="c", name="a__b", content=[TextBlock(text="ok")])]),
        ]
    )
    assert AnthropicMessagesAdapter().render_messages(conv)[1]["content"][0] == thinking
    items = OpenAIResponsesAdapter().render_input(conv)
    assert items[1] == reasoning and items[2]["type"] == "function_call"
    assert all(
        m.get("role") != "assistant" or "thinking" not in json.dumps(m)
        for m in OpenAIChatAdapter().render_messages(conv)
    )


def test_audio_and_resource_results_become_notes_never_base64():
    from host.calls import AudioBlock, ResourceBlock

    conv = Conversation(
        turns=[
            UserTurn.text("x"),
            AssistantTurn(parts=[ToolCall(call_id="c", name="a__b")]),
            ResultsTurn(
                results=[
                    ToolResult(
                        call_id="c",
                        name="a__b",
                        content=[
                            AudioBlock(data="UklGRg==", mime_type="audio/wav"),
                            ResourceBlock(uri="file:///r.txt", name="r.txt"),
                        ],
                    )
                ]
            ),
        ]
    )
    text = OpenAIChatAdapter().render_messages(conv)[-1]["content"]
    assert text == (
        "[audio audio/wav, ~4 bytes: not shown (audio is not supported here)]\n[resource file:///r.txt (r.txt)]"
    )
    blocks = AnthropicMessagesAdapter().render_messages(conv)[-1]["content"][0]["content"]
    assert [b["text"] for b in blocks][1:] == text.split("\n")
    assert ImageBlock  # imported for the image tests above


def test_illegal_names_in_replayed_history_are_made_valid_br14():
    long_name = "mcp__chrome_devtools_mcp_chrome_devtools_performance_analyze_insight"  # 68 characters
    conv = Conversation(
        turns=[
            UserTurn.text("x"),
            AssistantTurn(
                parts=[
                    ToolCall(call_id="c1", name="calendar.respondToEvent", raw_arguments="{}"),
                    ToolCall(call_id="c2", name=long_name, raw_arguments="{}", index=1),
                    ToolCall(call_id="c3", name="weather__get_forecast", raw_arguments="{}", index=2),
                ]
            ),
            ResultsTurn(
                results=[ToolResult(call_id=c, name="x", status=ResultStatus.UNKNOWN_TOOL) for c in ("c1", "c2", "c3")]
            ),
        ]
    )
    chat = OpenAIChatAdapter().prepare(conv, [], model="m").params
    validate_chat_request(chat)
    names = [tc["function"]["name"] for tc in chat["messages"][1]["tool_calls"]]
    assert names[0] == "calendar_respondToEvent" and names[2] == "weather__get_forecast"
    assert len(names[1]) == 64 and names[1].startswith(long_name[:55] + "_")
    responses = OpenAIResponsesAdapter().render_input(conv)
    anthropic = AnthropicMessagesAdapter().render_messages(conv)
    assert [i["name"] for i in responses if i.get("type") == "function_call"] == names
    assert [b["name"] for b in anthropic[1]["content"]] == names


def test_chat_assistant_message_replayed_as_received():
    from .sdk_check import load_json, sdk_chat_completion

    data = sdk_chat_completion(load_json("chat_completion_parallel.json"))
    turn = OpenAIChatAdapter().parse_response(data)
    conv = Conversation(
        turns=[
            UserTurn.text("weather?"),
            turn,
            ResultsTurn(
                results=[ToolResult(call_id=c.call_id, name=c.name, content=[TextBlock(text="ok")]) for c in turn.calls]
            ),
        ]
    )
    received = data["choices"][0]["message"]
    rendered = OpenAIChatAdapter().render_messages(conv)[1]
    assert rendered == {k: received.get(k) for k in ("role", "content", "tool_calls")}


def test_wire_ids_follow_the_pipeline_renaming_rule():
    """Renaming is transcript.rename_duplicate_ids: ``a``, ``a_dup1``, then a real ``a_dup1`` → ``a_dup1_dup1``."""
    from host.agent.transcript import rename_duplicate_ids

    calls = [ToolCall(call_id=cid, name="t__x") for cid in ("a", "a", "a_dup1")]
    conv = Conversation(turns=[UserTurn.text("x"), AssistantTurn(parts=calls)])
    tool_ids = [m["tool_call_id"] for m in OpenAIChatAdapter().render_messages(conv) if m["role"] == "tool"]
    assert tool_ids == ["a", "a_dup1", "a_dup1_dup1"]
    assert tool_ids == [c.call_id for c in rename_duplicate_ids(calls)]


DEEP = "[" * 100000


def test_deeply_nested_argument_text_renders_as_empty_object_not_recursion_error():
    from host.agent.providers.render import arguments_object, arguments_text

    call = ToolCall(call_id="c", name="t__x", raw_arguments=DEEP)
    assert arguments_object(call) == {}
    assert arguments_text(call) == "{}"
    deep_object = '{"a":' * 100000
    assert arguments_object(call.model_copy(update={"raw_arguments": deep_object})) == {}
    too_many_digits = '{"a":' + "1" * 5000 + "}"  # over Python's int-string limit: ValueError, not JSONDecodeError
    assert arguments_object(call.model_copy(update={"raw_arguments": too_many_digits})) == {}


def test_pipeline_error_text_is_said_once():
    from host.calls import ResultStatus, ToolCall
    from host.pipeline.results import error_result
    from host.agent.providers.render import result_text

    res = error_result(ToolCall(call_id="c", name="t"), ResultStatus.TIMEOUT, "no answer within 1 s", where="execute")
    assert result_text(res) == "timeout: no answer within 1 s"
