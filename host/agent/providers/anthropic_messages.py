"""Anthropic Messages adapter (``POST /v1/messages``), plain dicts only.

Shapes (Anthropic API reference, Messages; guides "Handle tool calls", "Tool search tool"):

* Declaration: ``{"name", "description", "input_schema"}``; deferred ones add
  ``"defer_loading": true`` and a client ``tool_search`` tool (never deferred) is declared.
* Calls: content blocks ``{"type": "tool_use", "id", "name", "input": {…}}`` (input is an
  object). Streamed: ``content_block_start`` (tool_use) → ``content_block_delta``
  (``input_json_delta.partial_json``) → ``content_block_stop``; ``message_stop`` ends it.
* Results: ONE user message whose content starts with every ``tool_result`` in call order
  (two consecutive user messages are a 400), ``is_error: true`` for failures, images as ``image``
  blocks with a base64 source (never base64 in text); a following user turn is merged after them. A search result is
  ``tool_reference`` blocks. ``tool_use.id`` is sanitized to ``^[a-zA-Z0-9_-]+$``.
* Thinking blocks (``thinking`` with ``signature``, ``redacted_thinking``) are replayed verbatim
  in their position.
* Programmatic tool calling (guide "Programmatic tool calling"): a ``tool_use`` made by the
  code-execution tool's program carries ``"caller": {"type": "code_execution_20250825", "tool_id":
  "srvtoolu_…"}`` (kept in :attr:`AssistantTurn.callers` and replayed on its ``tool_use``); the
  program's own ``server_tool_use`` and ``*_tool_result`` blocks are replayed verbatim, and the
  response's ``container.id`` is sent back as ``container`` on the next request.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from host.agent.providers.base import (
    API_ANTHROPIC,
    AccumulatorLike,
    AssistantTurn,
    Conversation,
    Declarations,
    PreparedRequest,
    Reasoning,
    StopReason,
)
from host.agent.providers.callers import anthropic_server_block, program_caller_object
from host.agent.providers.choice import ToolChoice, anthropic_choice
from host.agent.providers.deferred import (
    TOOL_SEARCH_DESCRIPTION,
    TOOL_SEARCH_NAME,
    TOOL_SEARCH_PARAMETERS,
    loaded_names,
)
from host.agent.providers.errors import MalformedResponse
from host.agent.providers.render import (
    ANTHROPIC_IMAGE_TYPES,
    arguments_object,
    media_note,
    pair_conversation,
    result_text,
    sanitize_anthropic_id,
    wire_name,
)
from host.agent.providers.schema import normalize_schema
from host.calls import ImageBlock, TextBlock, ToolCall, ToolResult
from registry.tool import ToolRecord

__all__ = ["AnthropicMessagesAdapter", "AnthropicStreamParser"]

_STOP = {
    "tool_use": StopReason.TOOL_USE,
    "end_turn": StopReason.END_TURN,
    "stop_sequence": StopReason.END_TURN,
    "max_tokens": StopReason.MAX_TOKENS,
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "refusal": StopReason.REFUSAL,
    "pause_turn": StopReason.PAUSED,
}
_THINKING = ("thinking", "redacted_thinking")


def _opaque(kind: Any) -> bool:
    """Blocks replayed verbatim: thinking, and the code-execution program's server blocks."""
    return kind in _THINKING or anthropic_server_block(kind)


def _program_caller_of(block: dict[str, Any]) -> dict[str, Any] | None:
    return program_caller_object(block, API_ANTHROPIC)


def _last_container(conversation: Conversation) -> str | None:
    for turn in reversed(conversation.turns):
        if isinstance(turn, AssistantTurn) and turn.container:
            return turn.container
    return None


def _blocks(content: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextBlock):
            if b.text:
                out.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageBlock) and b.mime_type in ANTHROPIC_IMAGE_TYPES:
            out.append({"type": "image", "source": {"type": "base64", "media_type": b.mime_type, "data": b.data}})
        else:
            out.append({"type": "text", "text": media_note(b, attached=False)})
    return out


class AnthropicMessagesAdapter:
    """Messages adapter (``max_tokens`` is required by the API: pass it in ``prepare``)."""

    api = API_ANTHROPIC

    def declare_tools(
        self, tools: Sequence[ToolRecord], *, tool_search: bool = False, loaded: Sequence[str] = ()
    ) -> Declarations:
        """Every tool; with ``tool_search`` the non-``always_load`` ones get ``defer_loading: true``
        and ``tool_search`` is declared last. ``loaded`` is not needed (tool_reference loads)."""
        decl = Declarations()
        for r in tools:
            norm = normalize_schema(r.input_schema)
            tool: dict[str, Any] = {"name": r.qualified_name, "description": r.description, "input_schema": norm.schema}
            if tool_search and not r.always_load:
                tool["defer_loading"] = True
            decl.tools.append(tool)
            decl.strict[r.qualified_name] = False
            decl.schemas[r.qualified_name] = r.input_schema
            decl.notes.extend(f"{r.qualified_name}: {n}" for n in norm.notes)
        if tool_search:
            decl.tools.append(
                {
                    "name": TOOL_SEARCH_NAME,
                    "description": TOOL_SEARCH_DESCRIPTION,
                    "input_schema": TOOL_SEARCH_PARAMETERS,
                }
            )
        return decl

    def prepare(
        self,
        conversation: Conversation,
        tools: Sequence[ToolRecord],
        *,
        model: str,
        choice: ToolChoice | None = None,
        tool_search: bool = False,
        **params: Any,
    ) -> PreparedRequest:
        """Request body (``model``, ``system``, ``messages``, ``tools``, ``tool_choice``…)."""
        decl = self.declare_tools(tools, tool_search=tool_search)
        declared = {t["name"] for t in decl.tools}
        body: dict[str, Any] = {"model": model}
        if conversation.system:
            body["system"] = conversation.system
        body["messages"] = self.render_messages(conversation, declared if tool_search else None)
        host_enforced = False
        if decl.tools:
            body["tools"] = decl.tools
            mapped = anthropic_choice(choice or ToolChoice())
            body.update(mapped.params)
            host_enforced = mapped.host_enforced
        container = _last_container(conversation)
        if container is not None:
            body["container"] = container
        body.update(params)
        return PreparedRequest(params=body, declarations=decl, host_enforced_choice=host_enforced)

    def render_messages(self, conversation: Conversation, search_names: set[str] | None = None) -> list[dict[str, Any]]:
        """The ``messages`` array. ``search_names``: declared tools a tool_reference may name
        (``None``: tool search is off and search results render as text)."""
        messages: list[dict[str, Any]] = []
        for seg in pair_conversation(conversation, self.api, sanitize=sanitize_anthropic_id):
            if seg.user is not None:
                blocks = _blocks(seg.user.content)
                if messages and messages[-1]["role"] == "user":
                    messages[-1]["content"].extend(blocks)  # after the tool_results: one user message
                else:
                    messages.append({"role": "user", "content": blocks})
                continue
            turn = seg.assistant
            pairs = iter(seg.pairs or [])
            content: list[dict[str, Any]] = []
            for part in turn.parts:
                if isinstance(part, Reasoning):
                    if part.api == self.api:
                        content.append(part.data)
                elif isinstance(part, TextBlock):
                    if part.text:
                        content.append({"type": "text", "text": part.text})
                else:
                    pair = next(pairs)
                    block = {"type": "tool_use", "id": pair.wire_id, "name": wire_name(part.name),
                             "input": arguments_object(part)}
                    caller = turn.callers.get(part.call_id) if turn.api == self.api else None
                    if caller is not None:
                        block["caller"] = caller
                    content.append(block)
            messages.append({"role": "assistant", "content": content or [{"type": "text", "text": "(no content)"}]})
            if seg.pairs:
                messages.append(
                    {"role": "user", "content": [self._result(p.result, p.wire_id, search_names) for p in seg.pairs]}
                )
        return messages

    def _result(self, result: ToolResult, wire_id: str, search_names: set[str] | None) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": wire_id}
        if search_names is not None and result.name == TOOL_SEARCH_NAME and not result.is_error:
            refs = [{"type": "tool_reference", "tool_name": n} for n in loaded_names(result) if n in search_names]
            block["content"] = refs or [{"type": "text", "text": "No tools matched the query. Try other words."}]
            return block
        content: list[dict[str, Any]] = []
        text = result_text(result, include_media_notes=False)
        if text != "(no output)" or not any(isinstance(b, ImageBlock) for b in result.content):
            content.append({"type": "text", "text": text})
        for b in result.content:
            if isinstance(b, ImageBlock):
                if b.mime_type in ANTHROPIC_IMAGE_TYPES:
                    content.append(
                        {"type": "image", "source": {"type": "base64", "media_type": b.mime_type, "data": b.data}}
                    )
                else:
                    content.append({"type": "text", "text": media_note(b, attached=False)})
            elif not isinstance(b, TextBlock):
                content.append({"type": "text", "text": media_note(b, attached=False)})
        block["content"] = content
        if result.is_error:
            block["is_error"] = True
        return block

    def parse_response(self, response: dict[str, Any]) -> AssistantTurn:
        """A ``message`` object as an assistant turn (thinking blocks kept verbatim).

        Raises:
            MalformedResponse: ``content`` missing, or a tool_use without id/name or with a
                non-object input.
        """
        content = response.get("content")
        if not isinstance(content, list):
            raise MalformedResponse(self.api, "content", "expected a list of content blocks")
        parts: list[Any] = []
        callers: dict[str, dict[str, Any]] = {}
        n = 0
        for i, block in enumerate(content):
            kind = block.get("type")
            if kind == "text" and block.get("text"):
                parts.append(TextBlock(text=block["text"]))
            elif _opaque(kind):
                parts.append(Reasoning(api=self.api, data=block))
            elif kind == "tool_use":
                if not block.get("id") or not block.get("name") or not isinstance(block.get("input", {}), dict):
                    raise MalformedResponse(self.api, f"content[{i}]", "tool_use needs id, name and an object input")
                raw = json.dumps(block.get("input", {}), ensure_ascii=False)
                parts.append(ToolCall(call_id=block["id"], name=block["name"], raw_arguments=raw, index=n))
                if (caller := _program_caller_of(block)) is not None:
                    callers[block["id"]] = caller
                n += 1
        stop = _STOP.get(response.get("stop_reason") or "", StopReason.OTHER)
        return AssistantTurn(parts=parts, stop=stop, api=self.api, response_id=response.get("id"), callers=callers,
                             container=_container_id(response))

    def stream_parser(self, accumulator: AccumulatorLike) -> AnthropicStreamParser:
        return AnthropicStreamParser(accumulator)

    def parse_history(self, request: dict[str, Any]) -> Conversation:
        """``{"system", "messages": [...]}`` as a conversation."""
        from host.agent.providers.history import anthropic_history

        return anthropic_history(request.get("messages") or [], system=request.get("system"))


def _container_id(message: dict[str, Any]) -> str | None:
    container = message.get("container")
    value = container.get("id") if isinstance(container, dict) else None
    return value if isinstance(value, str) and value else None


class AnthropicStreamParser:
    """Feeds Messages streaming events to an accumulator (see module docstring)."""

    def __init__(self, accumulator: AccumulatorLike) -> None:
        self.acc = accumulator
        self._blocks: dict[int, dict[str, Any]] = {}
        self._message: dict[str, Any] = {}
        self._stop: str | None = None
        self._server_json: dict[int, list[str]] = {}
        self.done = False

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        idx = event.get("index")
        if kind == "message_start":
            self._message = event.get("message") or {}
        elif kind == "content_block_start":
            block = dict(event.get("content_block") or {})
            self._blocks[idx] = block
            if block.get("type") == "server_tool_use":
                self._server_json[idx] = []
            elif block.get("type") == "tool_use":
                self.acc.start(index=idx, call_id=block.get("id"), name=block.get("name"))
            elif block.get("type") == "text":
                block["text"] = block.get("text") or ""
            elif block.get("type") == "thinking":
                block["thinking"] = block.get("thinking") or ""
                block["signature"] = block.get("signature") or ""
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            block = self._blocks.get(idx)
            if block is None:
                raise MalformedResponse(API_ANTHROPIC, f"content_block_delta[{idx}]", "delta before its block start")
            dtype = delta.get("type")
            if dtype == "input_json_delta" and idx in self._server_json:
                self._server_json[idx].append(delta.get("partial_json") or "")
            elif dtype == "input_json_delta":
                if delta.get("partial_json"):
                    self.acc.feed(delta["partial_json"], index=idx)
            elif dtype == "text_delta":
                block["text"] += delta.get("text") or ""
            elif dtype == "thinking_delta":
                block["thinking"] += delta.get("thinking") or ""
            elif dtype == "signature_delta":
                block["signature"] += delta.get("signature") or ""
        elif kind == "content_block_stop":
            if (self._blocks.get(idx) or {}).get("type") == "tool_use":
                self.acc.finish(index=idx)
            elif idx in self._server_json and "".join(self._server_json[idx]):
                try:
                    self._blocks[idx]["input"] = json.loads("".join(self._server_json.pop(idx)))
                except ValueError as e:
                    raise MalformedResponse(API_ANTHROPIC, f"content_block[{idx}]",
                                            f"server_tool_use input is not JSON: {e}") from e
        elif kind == "message_delta":
            self._stop = (event.get("delta") or {}).get("stop_reason") or self._stop
            if isinstance((event.get("delta") or {}).get("container"), dict):
                self._message["container"] = event["delta"]["container"]
        elif kind == "message_stop":
            self.acc.finish_all()
            self.done = True

    def turn(self) -> AssistantTurn:
        if not self.done:
            self.acc.finish_all()
        calls = iter(self.acc.calls())
        parts: list[Any] = []
        callers: dict[str, dict[str, Any]] = {}
        for idx in sorted(self._blocks):
            block = self._blocks[idx]
            kind = block.get("type")
            if kind == "tool_use":
                call = next(calls)
                parts.append(call)
                if (caller := _program_caller_of(block)) is not None:
                    callers[call.call_id] = caller
            elif kind == "text" and block["text"]:
                parts.append(TextBlock(text=block["text"]))
            elif _opaque(kind):
                parts.append(Reasoning(api=API_ANTHROPIC, data=block))
        stop = _STOP.get(self._stop or "", StopReason.OTHER) if self.done else StopReason.OTHER
        return AssistantTurn(parts=parts, stop=stop, api=API_ANTHROPIC, response_id=self._message.get("id"),
                             callers=callers, container=_container_id(self._message))
