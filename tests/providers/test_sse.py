"""SSE byte streams delivered one byte per chunk (BR-07): events and arguments come out byte-identical."""

from __future__ import annotations

import json

import anyio
import pytest

from host.agent.accumulate import ArgumentAccumulator
from host.agent.providers import (
    AnthropicMessagesAdapter,
    MalformedResponse,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    SSEDecoder,
    iter_sse_events,
)

from .sdk_check import load_events


def _sse(events, *, named: bool, done: bool = False) -> bytes:
    out = []
    for e in events:
        head = f"event: {e['type']}\n" if named else ""
        out.append(f"{head}data: {json.dumps(e, ensure_ascii=False)}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return ": keep-alive comment\n\n".join(out).encode("utf-8")


@pytest.mark.parametrize(
    ("api", "fixture", "named"),
    [
        ("openai_chat", "chat_stream_parallel.jsonl", False),
        ("openai_responses", "responses_stream_parallel.jsonl", True),
        ("anthropic_messages", "anthropic_stream_parallel.jsonl", True),
    ],
)
def test_one_byte_chunks_give_the_same_events(api, fixture, named):
    events = load_events(fixture)
    body = _sse(events, named=named, done=api == "openai_chat")
    decoder = SSEDecoder(api)
    got = [e for i in range(len(body)) for e in decoder.feed(body[i : i + 1])] + decoder.close()
    assert got == events
    assert decoder.done is (api == "openai_chat")
    adapter = {
        "openai_chat": OpenAIChatAdapter(),
        "openai_responses": OpenAIResponsesAdapter(),
        "anthropic_messages": AnthropicMessagesAdapter(),
    }[api]
    parser = adapter.stream_parser(ArgumentAccumulator())
    for event in got:
        parser.feed(event)
    raw = [c.raw_arguments for c in parser.turn().calls]
    assert [json.loads(r) for r in raw] == [{"city": "Paris", "days": 2}, {"city": "杭州", "days": 1}]
    assert "杭州".encode() in raw[1].encode()


@pytest.mark.anyio
async def test_async_iteration_over_byte_chunks_and_crlf():
    body = b'event: message_stop\r\ndata: {"type":"message_stop"}\r\n\r\ndata: {"a": 1}'

    async def chunks():
        for i in range(0, len(body), 3):
            yield body[i : i + 3]

    with anyio.fail_after(5):
        got = [e async for e in iter_sse_events(chunks())]
    assert got == [{"type": "message_stop"}, {"a": 1}]


def test_invalid_json_names_the_event():
    with pytest.raises(MalformedResponse) as err:
        SSEDecoder("anthropic_messages").feed(b"event: content_block_delta\ndata: {oops\n\n")
    assert err.value.where == "stream event content_block_delta"
