"""History import: a conversation recorded in one API's request shape → a neutral conversation.

Rendering the result with another adapter converts the history (ids, pairing and order kept), so
a user can switch models mid-conversation. What each API cannot carry is noted here:

* Chat Completions tool messages have no error flag: imported results are ``ok`` (their text
  still says "Error (…)" when we rendered a failure). Data-URL images become image blocks.
* Reasoning (Anthropic thinking, Responses reasoning items) is kept as :class:`Reasoning` for its
  own API and dropped when rendering for another one (it cannot be verified there).
* A ``tool_search`` result keeps its loaded names in ``structured`` (``{"loaded": [...]}``):
  Chat's JSON text, Responses' ``tool_search_output.tools`` and Anthropic's ``tool_reference``
  blocks are all read back, so the loaded set survives the switch.
"""

from __future__ import annotations

import json
from typing import Any

from host.agent.providers.base import (
    API_ANTHROPIC,
    API_CHAT,
    API_RESPONSES,
    AssistantTurn,
    Conversation,
    Reasoning,
    ResultsTurn,
    StopReason,
    UserTurn,
)
from host.agent.providers.callers import RESPONSES_PROGRAM_ITEMS, anthropic_server_block, program_caller_object
from host.agent.providers.deferred import TOOL_SEARCH_NAME
from host.calls import ImageBlock, ResourceBlock, ResultStatus, TextBlock, ToolCall, ToolResult

__all__ = ["anthropic_history", "chat_history", "responses_history"]


def _image_from_url(url: str) -> ImageBlock | ResourceBlock:
    if url.startswith("data:") and ";base64," in url:
        head, data = url[5:].split(";base64,", 1)
        return ImageBlock(data=data, mime_type=head or "image/png")
    return ResourceBlock(uri=url)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict) and "text" in p)


def _search_structured(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("loaded"), list):
        return {"loaded": [t.get("name") if isinstance(t, dict) else t for t in data["loaded"]]}
    return None


def _finish_turn(parts: list[Any], api: str, ids: dict[int, str] | None = None,
                 callers: dict[str, dict[str, Any]] | None = None) -> AssistantTurn:
    stop = StopReason.TOOL_USE if any(isinstance(p, ToolCall) for p in parts) else StopReason.END_TURN
    return AssistantTurn(parts=parts, stop=stop, api=api, item_ids=ids or {}, callers=callers or {})


def chat_history(messages: list[dict[str, Any]]) -> Conversation:
    """Chat Completions ``messages`` → conversation (system/developer text becomes ``system``)."""
    conv = Conversation()
    names: dict[str, str] = {}
    for msg in messages:
        role = msg.get("role")
        if role in ("system", "developer"):
            text = _text_of(msg.get("content"))
            conv.system = f"{conv.system}\n{text}" if conv.system else text
        elif role == "user":
            content = msg.get("content")
            blocks: list[Any] = []
            if isinstance(content, str):
                blocks.append(TextBlock(text=content))
            for part in content if isinstance(content, list) else []:
                if part.get("type") == "text":
                    blocks.append(TextBlock(text=part.get("text", "")))
                elif part.get("type") == "image_url":
                    blocks.append(_image_from_url((part.get("image_url") or {}).get("url", "")))
            conv.add(UserTurn(content=blocks))
        elif role == "assistant":
            parts: list[Any] = []
            text = _text_of(msg.get("content"))
            if text:
                parts.append(TextBlock(text=text))
            for i, tc in enumerate(msg.get("tool_calls") or []):
                fn = tc.get("function") or {}
                names[tc["id"]] = fn.get("name", "")
                parts.append(
                    ToolCall(
                        call_id=tc["id"], name=fn.get("name", ""), raw_arguments=fn.get("arguments") or "", index=i
                    )
                )
            conv.add(_finish_turn(parts, API_CHAT))
        elif role == "tool":
            call_id = msg.get("tool_call_id", "")
            name = names.get(call_id, "")
            text = _text_of(msg.get("content"))
            structured = _search_structured(text) if name == TOOL_SEARCH_NAME else None
            result = ToolResult(call_id=call_id, name=name, content=[TextBlock(text=text)], structured=structured)
            if conv.turns and isinstance(conv.turns[-1], ResultsTurn):
                conv.turns[-1].results.append(result)
            else:
                conv.add(ResultsTurn(results=[result]))
    return conv


def responses_history(items: list[dict[str, Any]] | str, *, instructions: str | None = None) -> Conversation:
    """Responses ``input`` items → conversation (``instructions`` becomes ``system``)."""
    conv = Conversation(system=instructions)
    if isinstance(items, str):
        return conv.add(UserTurn.text(items))
    parts: list[Any] = []
    ids: dict[int, str] = {}
    callers: dict[str, dict[str, Any]] = {}
    names: dict[str, str] = {}
    results: list[ToolResult] = []

    def flush_assistant() -> None:
        nonlocal parts, ids, callers
        if parts:
            conv.add(_finish_turn(parts, API_RESPONSES, ids, callers))
            parts, ids, callers = [], {}, {}

    def flush_results() -> None:
        nonlocal results
        if results:
            conv.add(ResultsTurn(results=results))
            results = []

    for item in items:
        kind = item.get("type", "message")
        role = item.get("role")
        if kind == "message" and role in ("system", "developer"):
            text = _text_of(item.get("content"))
            conv.system = f"{conv.system}\n{text}" if conv.system else text
        elif kind == "message" and role == "user":
            flush_assistant()
            flush_results()
            content = item.get("content")
            blocks: list[Any] = [TextBlock(text=content)] if isinstance(content, str) else []
            for part in content if isinstance(content, list) else []:
                if part.get("type") == "input_text":
                    blocks.append(TextBlock(text=part.get("text", "")))
                elif part.get("type") == "input_image" and part.get("image_url"):
                    blocks.append(_image_from_url(part["image_url"]))
            conv.add(UserTurn(content=blocks))
        elif kind in ("message", "reasoning", "function_call", "tool_search_call", *RESPONSES_PROGRAM_ITEMS):
            flush_results()
            if kind == "reasoning" or kind in RESPONSES_PROGRAM_ITEMS:
                parts.append(Reasoning(api=API_RESPONSES, data=item))
                continue
            if item.get("id"):
                ids[len(parts)] = item["id"]
            if kind == "message":
                parts.append(TextBlock(text=_text_of(item.get("content"))))
                continue
            call_id = item.get("call_id") or item.get("id") or ""
            name = item.get("name", "") if kind == "function_call" else TOOL_SEARCH_NAME
            args = item.get("arguments")
            raw = args if isinstance(args, str) else json.dumps(args or {}, ensure_ascii=False)
            names[call_id] = name
            if (caller := program_caller_object(item, API_RESPONSES)) is not None:
                callers[call_id] = caller
            parts.append(
                ToolCall(
                    call_id=call_id, name=name, raw_arguments=raw, index=sum(isinstance(p, ToolCall) for p in parts)
                )
            )
        elif kind in ("function_call_output", "tool_search_output"):
            flush_assistant()
            call_id = item.get("call_id") or ""
            if kind == "tool_search_output":
                loaded = [t.get("name") for t in item.get("tools") or [] if isinstance(t, dict)]
                results.append(
                    ToolResult(
                        call_id=call_id,
                        name=TOOL_SEARCH_NAME,
                        structured={"loaded": loaded},
                        content=[TextBlock(text=f"Loaded: {', '.join(loaded)}")],
                    )
                )
                continue
            output = item.get("output")
            blocks = [TextBlock(text=output)] if isinstance(output, str) else []
            for part in output if isinstance(output, list) else []:
                if part.get("type") == "input_text":
                    blocks.append(TextBlock(text=part.get("text", "")))
                elif part.get("type") == "input_image" and part.get("image_url"):
                    blocks.append(_image_from_url(part["image_url"]))
            results.append(ToolResult(call_id=call_id, name=names.get(call_id, ""), content=blocks))
    flush_assistant()
    flush_results()
    return conv


def _anthropic_blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [TextBlock(text=content)]
    out: list[Any] = []
    for b in content or []:
        if b.get("type") == "text":
            out.append(TextBlock(text=b.get("text", "")))
        elif b.get("type") == "image" and (b.get("source") or {}).get("type") == "base64":
            out.append(ImageBlock(data=b["source"]["data"], mime_type=b["source"].get("media_type", "image/png")))
    return out


def anthropic_history(messages: list[dict[str, Any]], *, system: Any = None) -> Conversation:
    """Anthropic ``messages`` → conversation (tool_result blocks become a results turn)."""
    conv = Conversation(system=_text_of(system) if system else None)
    names: dict[str, str] = {}
    for msg in messages:
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        if msg.get("role") == "assistant":
            parts: list[Any] = []
            callers: dict[str, dict[str, Any]] = {}
            for b in blocks:
                if b.get("type") == "text" and b.get("text"):
                    parts.append(TextBlock(text=b["text"]))
                elif b.get("type") in ("thinking", "redacted_thinking") or anthropic_server_block(b.get("type")):
                    parts.append(Reasoning(api=API_ANTHROPIC, data=b))
                elif b.get("type") == "tool_use":
                    names[b["id"]] = b.get("name", "")
                    if (caller := program_caller_object(b, API_ANTHROPIC)) is not None:
                        callers[b["id"]] = caller
                    parts.append(
                        ToolCall(
                            call_id=b["id"],
                            name=b.get("name", ""),
                            raw_arguments=json.dumps(b.get("input") or {}, ensure_ascii=False),
                            index=sum(isinstance(p, ToolCall) for p in parts),
                        )
                    )
            conv.add(_finish_turn(parts, API_ANTHROPIC, callers=callers))
            continue
        results: list[ToolResult] = []
        rest: list[dict[str, Any]] = []
        for b in blocks:
            if b.get("type") != "tool_result":
                rest.append(b)
                continue
            call_id = b.get("tool_use_id", "")
            inner = b.get("content")
            refs = [
                r.get("tool_name") for r in inner or [] if isinstance(r, dict) and r.get("type") == "tool_reference"
            ]
            status = ResultStatus.TOOL_ERROR if b.get("is_error") else ResultStatus.OK
            structured = {"loaded": refs} if refs or names.get(call_id) == TOOL_SEARCH_NAME else None
            results.append(
                ToolResult(
                    call_id=call_id,
                    name=names.get(call_id, ""),
                    status=status,
                    content=_anthropic_blocks(inner),
                    structured=structured,
                )
            )
        if results:
            conv.add(ResultsTurn(results=results))
        if rest:
            conv.add(UserTurn(content=_anthropic_blocks(rest)))
    return conv
