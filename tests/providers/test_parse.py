"""Recorded responses (hand-written from the API docs), parsed by the SDK models, then by our adapters.

Whole responses and streams of each API give the same calls; streams go through the pipeline's
real ArgumentAccumulator (one per response), including a UTF-8 character split across deltas.
"""

from __future__ import annotations

import json

import pytest

from host.calls import TextBlock, ToolCall
from host.agent.accumulate import ArgumentAccumulator
from host.agent.providers import (
    TOOL_SEARCH_NAME,
    AnthropicMessagesAdapter,
    MalformedResponse,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    Reasoning,
    StopReason,
)

from .sdk_check import (
    load_events,
    load_json,
    sdk_chat_chunk,
    sdk_chat_completion,
    sdk_message,
    sdk_message_event,
    sdk_response,
    sdk_response_event,
)

PARIS = {"city": "Paris", "days": 2}
HANGZHOU = {"city": "杭州", "days": 1}


def _args(call: ToolCall) -> dict:
    return json.loads(call.raw_arguments)


def _check_two_calls(calls: list[ToolCall], ids: tuple[str, str]) -> None:
    assert [c.call_id for c in calls] == list(ids)
    assert [c.name for c in calls] == ["weather__get_forecast", "weather__get_forecast"]
    assert [_args(c) for c in calls] == [PARIS, HANGZHOU]
    assert [c.index for c in calls] == [0, 1]


def test_chat_whole_response_gives_two_calls_with_string_arguments():
    turn = OpenAIChatAdapter().parse_response(sdk_chat_completion(load_json("chat_completion_parallel.json")))
    _check_two_calls(turn.calls, ("call_weather_1", "call_weather_2"))
    assert turn.calls[0].raw_arguments == '{"city":"Paris","days":2}'
    assert turn.stop is StopReason.TOOL_USE and turn.text == "" and turn.response_id == "chatcmpl-abc123"


def test_chat_stream_interleaved_deltas_keyed_by_index():
    acc = ArgumentAccumulator()
    parser = OpenAIChatAdapter().stream_parser(acc)
    events = [sdk_chat_chunk(e) for e in load_events("chat_stream_parallel.jsonl")]
    for event in events[:-2]:
        parser.feed(event)
        assert not parser.done
    parser.feed(events[-2])
    assert parser.done
    parser.feed(events[-1])  # usage-only chunk after the finish
    turn = parser.turn()
    _check_two_calls(turn.calls, ("call_weather_1", "call_weather_2"))
    assert turn.stop is StopReason.TOOL_USE


def test_chat_stream_utf8_bytes_split_inside_a_character_stay_byte_identical():
    """BR-07: the pipeline accumulator decodes bytes incrementally; the parser passes str pieces."""
    acc = ArgumentAccumulator()
    parser = OpenAIChatAdapter().stream_parser(acc)
    parser.feed(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "c1", "function": {"name": "weather__get_forecast", "arguments": ""}}
                        ]
                    },
                }
            ]
        }
    )
    text = '{"city":"杭州"}'
    for piece in [text[i : i + 1] for i in range(len(text))]:
        parser.feed(
            {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}]}
        )
    parser.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    assert parser.turn().calls[0].raw_arguments.encode() == text.encode()


def test_chat_stream_two_calls_sharing_an_index_stay_separate():
    """BR-04: some servers send every call at index 0 with a new id; arguments must not concatenate."""
    parser = OpenAIChatAdapter().stream_parser(ArgumentAccumulator())
    for n, pid in enumerate((3, 9, 11)):
        parser.feed(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": f"call_{n}",
                                    "function": {"name": "gitlab__get_project", "arguments": ""},
                                }
                            ]
                        },
                    }
                ]
            }
        )
        parser.feed(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [{"index": 0, "function": {"arguments": json.dumps({"project_id": pid})}}]
                        },
                    }
                ]
            }
        )
    parser.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    assert [_args(c) for c in parser.turn().calls] == [{"project_id": 3}, {"project_id": 9}, {"project_id": 11}]


def test_chat_forced_tool_choice_finish_stop_still_means_calls():
    response = {
        "id": "x",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "a__b", "arguments": "{}"}}],
                },
            }
        ],
    }
    assert OpenAIChatAdapter().parse_response(response).stop is StopReason.TOOL_USE


def test_chat_length_cut_marks_calls_incomplete():
    response = {
        "id": "x",
        "choices": [
            {
                "index": 0,
                "finish_reason": "length",
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "a__b", "arguments": '{"q":'}}
                    ],
                },
            }
        ],
    }
    turn = OpenAIChatAdapter().parse_response(response)
    assert turn.stop is StopReason.MAX_TOKENS and not turn.stop.calls_complete


def test_chat_tool_call_without_id_is_a_clear_error():
    bad = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "tool_calls": [{"type": "function", "function": {"name": "a__b", "arguments": "{}"}}],
                },
            }
        ]
    }
    with pytest.raises(MalformedResponse) as err:
        OpenAIChatAdapter().parse_response(bad)
    assert err.value.where == "choices[0].message.tool_calls[0]"


def test_responses_whole_response_keeps_reasoning_and_item_ids():
    turn = OpenAIResponsesAdapter().parse_response(sdk_response(load_json("responses_parallel.json")))
    _check_two_calls(turn.calls, ("call_weather_1", "call_weather_2"))
    assert isinstance(turn.parts[0], Reasoning)
    assert turn.parts[0].data["encrypted_content"] == "gAAAAABoENCRYPTED=="
    assert turn.item_ids == {1: "fc_001", 2: "fc_002"}
    assert turn.stop is StopReason.TOOL_USE


def test_responses_stream_matches_whole_response():
    parser = OpenAIResponsesAdapter().stream_parser(ArgumentAccumulator())
    for event in load_events("responses_stream_parallel.jsonl"):
        parser.feed(sdk_response_event(event))
    assert parser.done
    streamed = parser.turn()
    whole = OpenAIResponsesAdapter().parse_response(sdk_response(load_json("responses_parallel.json")))
    assert streamed.parts == whole.parts and streamed.item_ids == whole.item_ids
    assert streamed.stop is StopReason.TOOL_USE and streamed.response_id == "resp_s1"


def test_responses_stream_done_event_alone_carries_the_arguments():
    parser = OpenAIResponsesAdapter().stream_parser(ArgumentAccumulator())
    parser.feed(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "a__b", "arguments": ""},
        }
    )
    parser.feed(
        {"type": "response.function_call_arguments.done", "output_index": 0, "item_id": "fc_1", "arguments": '{"x":1}'}
    )
    parser.feed({"type": "response.completed", "response": {"id": "r", "status": "completed"}})
    assert parser.turn().calls[0].raw_arguments == '{"x":1}'


def test_responses_client_tool_search_call_becomes_a_tool_search_call():
    turn = OpenAIResponsesAdapter().parse_response(sdk_response(load_json("responses_tool_search_call.json")))
    assert turn.calls == [
        ToolCall(call_id="call_search_1", name=TOOL_SEARCH_NAME, raw_arguments='{"query": "shipping eta"}', index=0)
    ]
    assert turn.item_ids == {0: "ts_001"}


def test_responses_incomplete_max_output_tokens():
    turn = OpenAIResponsesAdapter().parse_response(
        {"id": "r", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}
    )
    assert turn.stop is StopReason.MAX_TOKENS


def test_anthropic_whole_message_keeps_thinking_text_and_object_inputs():
    turn = AnthropicMessagesAdapter().parse_response(sdk_message(load_json("anthropic_message_parallel.json")))
    _check_two_calls(turn.calls, ("toolu_01A", "toolu_01B"))
    assert turn.parts[0] == Reasoning(
        api="anthropic_messages",
        data={
            "type": "thinking",
            "thinking": "Two cities, so two parallel calls.",
            "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
        },
    )
    assert turn.parts[1] == TextBlock(text="I'll check both cities.")
    assert turn.stop is StopReason.TOOL_USE


def test_anthropic_stream_matches_whole_message():
    parser = AnthropicMessagesAdapter().stream_parser(ArgumentAccumulator())
    for event in load_events("anthropic_stream_parallel.jsonl"):
        parser.feed(sdk_message_event(event))
    assert parser.done
    streamed = parser.turn()
    whole = AnthropicMessagesAdapter().parse_response(sdk_message(load_json("anthropic_message_parallel.json")))
    assert [(_args(c), c.call_id) for c in streamed.calls] == [(_args(c), c.call_id) for c in whole.calls]
    assert streamed.parts[:2] == whole.parts[:2]
    assert streamed.stop is StopReason.TOOL_USE


def test_anthropic_tool_use_without_input_deltas_gives_empty_text():
    """BR-06: a no-parameter tool streams no input_json_delta; the pipeline reads "" as {}."""
    parser = AnthropicMessagesAdapter().stream_parser(ArgumentAccumulator())
    parser.feed(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "clock__now", "input": {}},
        }
    )
    parser.feed({"type": "content_block_stop", "index": 0})
    parser.feed({"type": "message_delta", "delta": {"stop_reason": "tool_use"}})
    parser.feed({"type": "message_stop"})
    assert parser.turn().calls == [ToolCall(call_id="toolu_1", name="clock__now", raw_arguments="", index=0)]


def test_anthropic_tool_use_with_non_object_input_is_a_clear_error():
    bad = {
        "id": "m",
        "content": [{"type": "tool_use", "id": "t", "name": "a__b", "input": []}],
        "stop_reason": "tool_use",
    }
    with pytest.raises(MalformedResponse) as err:
        AnthropicMessagesAdapter().parse_response(bad)
    assert err.value.where == "content[0]"


def test_chat_stream_gemini_style_calls_without_index_keyed_by_id():
    """Gemini's OpenAI-compatible stream omits ``tool_calls[].index`` (and ends with "stop").

    Raw dicts: the SDK's ChatCompletionChunk model itself rejects a delta without ``index``.
    The second chunk has neither index nor id (``"id": ""``): it continues the most recent call.
    """
    parser = OpenAIChatAdapter().stream_parser(ArgumentAccumulator())
    for event in load_events("gemini_chat_stream_parallel.jsonl"):
        parser.feed(event)
    turn = parser.turn()
    assert [c.call_id for c in turn.calls] == ["function-call-1", "function-call-2"]
    assert [c.name for c in turn.calls] == ["weather__get_forecast", "weather__get_forecast"]
    assert [_args(c) for c in turn.calls] == [PARIS, HANGZHOU]
    assert turn.stop is StopReason.TOOL_USE and turn.response_id == "gem-s1"


def test_chat_stream_two_indexless_calls_in_one_delta_and_repeated_ids():
    parser = OpenAIChatAdapter().stream_parser(ArgumentAccumulator())

    def chunk(*calls, finish=None):
        return {"choices": [{"index": 0, "delta": {"tool_calls": list(calls)}, "finish_reason": finish}]}

    parser.feed(
        chunk(
            {"id": "a", "function": {"name": "t__one", "arguments": '{"n":'}},
            {"id": "b", "function": {"name": "t__two", "arguments": '{"m":'}},
        )
    )
    parser.feed(chunk({"function": {"arguments": "2}"}}))  # no index, no id: continues the latest call (b)
    parser.feed(chunk({"id": "a", "function": {"arguments": "1"}}))  # a known id continues that call
    parser.feed(chunk({"id": "", "function": {"arguments": "}"}}, finish="tool_calls"))  # latest is now a
    turn = parser.turn()
    assert [(c.call_id, c.name, c.raw_arguments) for c in turn.calls] == [
        ("a", "t__one", '{"n":1}'),
        ("b", "t__two", '{"m":2}'),
    ]


def test_chat_stream_delta_without_index_or_id_before_any_call_is_malformed():
    parser = OpenAIChatAdapter().stream_parser(ArgumentAccumulator())
    with pytest.raises(MalformedResponse) as info:
        parser.feed({"choices": [{"index": 0, "delta": {"tool_calls": [{"function": {"arguments": "{}"}}]}}]})
    assert "choices[0].delta.tool_calls[]" in str(info.value)
