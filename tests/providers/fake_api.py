"""A scripted model at the wire level: each step becomes a response in one API's JSON shape.

Every request it receives is validated against the SDK's request types, and every response
(whole, or each stream event) it returns is first parsed by the SDK's models, so the adapters
only ever see shapes the official SDKs accept.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from host.agent.providers import TOOL_SEARCH_NAME

from .sdk_check import (
    sdk_chat_chunk,
    sdk_chat_completion,
    sdk_message,
    sdk_message_event,
    sdk_response,
    sdk_response_event,
    validate_anthropic_request,
    validate_chat_request,
    validate_responses_request,
)

THINKING = {"type": "thinking", "thinking": "Three lookups at once.", "signature": "c2lnbmF0dXJlLTE="}
REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "ZW5jcnlwdGVk"}


PROGRAM_CODE = "for oid in ['A1001', 'A1002']:\n    await get_order(order_id=oid)"
CONTAINER = {"id": "container_011abc", "expires_at": "2026-12-06T06:00:00Z"}


@dataclass
class Step:
    """One model turn: ``calls`` as ``(call_id, name, arguments)``, and/or final ``text``.

    ``program``: the calls were made by the provider's code runtime under this program id
    (Anthropic: a ``server_tool_use`` code_execution block ``srvtoolu_…`` and ``caller`` on each
    ``tool_use``, plus a ``container``; Responses: a ``program`` item and ``caller`` on each
    ``function_call``)."""

    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    text: str = ""
    reasoning: bool = False
    program: str | None = None


class FakeAPI:
    def __init__(self, api: str, steps: list[Step], *, stream: bool = False) -> None:
        self.api = api
        self.steps = steps
        self.stream = stream
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any] | AsyncIterator[dict[str, Any]]:
        {
            "openai_chat": validate_chat_request,
            "openai_responses": validate_responses_request,
            "anthropic_messages": validate_anthropic_request,
        }[self.api](params)
        self.requests.append(params)
        n = len(self.requests)
        step = self.steps[n - 1]
        build = {"openai_chat": self._chat, "openai_responses": self._responses, "anthropic_messages": self._anthropic}[
            self.api
        ]
        whole, events = build(step, n)
        if not self.stream:
            return whole

        async def gen() -> AsyncIterator[dict[str, Any]]:
            for e in events:
                yield e

        return gen()

    # -- Chat Completions ------------------------------------------------------------------
    def _chat(self, step: Step, n: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        finish = "tool_calls" if step.calls else "stop"
        message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
        if step.calls:
            message["tool_calls"] = [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
                }
                for cid, name, args in step.calls
            ]
        whole = sdk_chat_completion(
            {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            }
        )
        head = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        events = [
            {
                **head,
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": step.text or None}, "finish_reason": None}
                ],
            }
        ]
        for i, (cid, name, args) in enumerate(step.calls):
            text = json.dumps(args, ensure_ascii=False)
            half = len(text) // 2
            events.append(
                {
                    **head,
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": None,
                            "delta": {
                                "tool_calls": [
                                    {
                                        "index": i,
                                        "id": cid,
                                        "type": "function",
                                        "function": {"name": name, "arguments": text[:half]},
                                    }
                                ]
                            },
                        }
                    ],
                }
            )
            events.append(
                {
                    **head,
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": None,
                            "delta": {"tool_calls": [{"index": i, "function": {"arguments": text[half:]}}]},
                        }
                    ],
                }
            )
        events.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        return whole, [sdk_chat_chunk(e) for e in events]

    # -- Responses -------------------------------------------------------------------------
    def _responses(self, step: Step, n: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        output: list[dict[str, Any]] = [dict(REASONING)] if step.reasoning else []
        if step.program:
            output.append({"type": "program", "id": f"prog_item_{n}", "call_id": step.program, "code": PROGRAM_CODE,
                           "fingerprint": "ZnA="})
        for i, (cid, name, args) in enumerate(step.calls):
            if name == TOOL_SEARCH_NAME:
                output.append(
                    {
                        "type": "tool_search_call",
                        "id": f"ts_{n}_{i}",
                        "execution": "client",
                        "call_id": cid,
                        "status": "completed",
                        "arguments": args,
                    }
                )
            else:
                output.append(
                    {
                        "type": "function_call",
                        "id": f"fc_{n}_{i}",
                        "call_id": cid,
                        "name": name,
                        "arguments": json.dumps(args, ensure_ascii=False),
                        "status": "completed",
                    }
                )
                if step.program:
                    output[-1]["caller"] = {"type": "program", "caller_id": step.program}
        if step.text:
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": step.text, "annotations": []}],
                }
            )
        base = {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": 0,
            "model": "m",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
        whole = sdk_response({**base, "status": "completed", "output": output})
        events: list[dict[str, Any]] = [
            {
                "type": "response.created",
                "sequence_number": 0,
                "response": {**base, "status": "in_progress", "output": []},
            }
        ]
        for idx, item in enumerate(output):
            if item["type"] == "function_call":
                events.append(
                    {
                        "type": "response.output_item.added",
                        "sequence_number": len(events),
                        "output_index": idx,
                        "item": {**item, "arguments": "", "status": "in_progress"},
                    }
                )
                text = item["arguments"]
                for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
                    events.append(
                        {
                            "type": "response.function_call_arguments.delta",
                            "sequence_number": len(events),
                            "item_id": item["id"],
                            "output_index": idx,
                            "delta": piece,
                        }
                    )
                events.append(
                    {
                        "type": "response.function_call_arguments.done",
                        "sequence_number": len(events),
                        "item_id": item["id"],
                        "output_index": idx,
                        "name": item["name"],
                        "arguments": text,
                    }
                )
            else:
                events.append(
                    {
                        "type": "response.output_item.added",
                        "sequence_number": len(events),
                        "output_index": idx,
                        "item": item,
                    }
                )
            events.append(
                {"type": "response.output_item.done", "sequence_number": len(events), "output_index": idx, "item": item}
            )
        events.append(
            {
                "type": "response.completed",
                "sequence_number": len(events),
                "response": {**base, "status": "completed", "output": output},
            }
        )
        return whole, [sdk_response_event(e) for e in events]

    # -- Anthropic Messages ----------------------------------------------------------------
    def _anthropic(self, step: Step, n: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        content: list[dict[str, Any]] = [dict(THINKING)] if step.reasoning else []
        if step.text:
            content.append({"type": "text", "text": step.text})
        caller = {"type": "code_execution_20250825", "tool_id": step.program} if step.program else None
        if step.program:
            content.append({"type": "server_tool_use", "id": step.program, "name": "code_execution",
                            "input": {"code": PROGRAM_CODE}})
        by_program = {"caller": caller} if caller else {}
        content += [{"type": "tool_use", "id": cid, "name": name, "input": args, **by_program}
                    for cid, name, args in step.calls]
        stop = "tool_use" if step.calls else "end_turn"
        msg = {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        if step.program:
            msg["container"] = CONTAINER
        whole = sdk_message({**msg, "content": content, "stop_reason": stop})
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": {**msg, "content": [], "stop_reason": None}}
        ]
        for idx, block in enumerate(content):
            if block["type"] == "thinking":
                events += [
                    {
                        "type": "content_block_start",
                        "index": idx,
                        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                    },
                    {
                        "type": "content_block_delta",
                        "index": idx,
                        "delta": {"type": "thinking_delta", "thinking": block["thinking"]},
                    },
                    {
                        "type": "content_block_delta",
                        "index": idx,
                        "delta": {"type": "signature_delta", "signature": block["signature"]},
                    },
                ]
            elif block["type"] == "text":
                events += [
                    {"type": "content_block_start", "index": idx, "content_block": {"type": "text", "text": ""}},
                    {
                        "type": "content_block_delta",
                        "index": idx,
                        "delta": {"type": "text_delta", "text": block["text"]},
                    },
                ]
            else:
                text = json.dumps(block["input"], ensure_ascii=False)
                events.append(
                    {
                        "type": "content_block_start",
                        "index": idx,
                        "content_block": {**block, "input": {}},
                    }
                )
                events += [
                    {
                        "type": "content_block_delta",
                        "index": idx,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    }
                    for piece in (text[: len(text) // 2], text[len(text) // 2 :])
                ]
            events.append({"type": "content_block_stop", "index": idx})
        events += [
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None,
                          **({"container": CONTAINER} if step.program else {})},
                "usage": {"output_tokens": 1},
            },
            {"type": "message_stop"},
        ]
        return whole, [sdk_message_event(e) for e in events]
