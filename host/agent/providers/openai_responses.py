"""OpenAI Responses adapter (``POST /v1/responses``), plain dicts only, stateless (full ``input``).

Shapes (OpenAI API reference, Responses; guide "Tool search"):

* Declaration: ``{"type": "function", "name", "description", "parameters", "strict"}``;
  deferred ones add ``"defer_loading": true`` next to ``{"type": "tool_search",
  "execution": "client", "description", "parameters"}``.
* Calls: output items ``{"type": "function_call", "id": "fc_…", "call_id", "name",
  "arguments": "<JSON text>"}`` and ``{"type": "tool_search_call", "execution": "client",
  "call_id", "arguments": {…}}``. Streamed: ``response.output_item.added`` →
  ``response.function_call_arguments.delta``/``.done`` → ``response.output_item.done``;
  ``response.completed``/``.incomplete``/``.failed`` end the stream.
* Results: ``{"type": "function_call_output", "call_id", "output": "<text>" | [input_text,
  input_image…]}`` per call; ``{"type": "tool_search_output", "execution": "client", "call_id",
  "status": "completed", "tools": [function definitions]}`` for a search.
* Reasoning items (with ``encrypted_content``) are replayed verbatim, in their position.
* Programmatic tool calling (``{"type": "programmatic_tool_calling"}`` with ``allowed_callers`` on
  the function tools): a ``function_call`` a program made carries ``"caller": {"type": "program",
  "caller_id": "<the program item's call_id>"}`` (kept in :attr:`AssistantTurn.callers` and replayed
  on its item); ``program`` items (with their ``fingerprint``) and ``program_output`` items are
  replayed verbatim like reasoning.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from host.agent.providers.base import (
    API_RESPONSES,
    AccumulatorLike,
    AssistantTurn,
    Conversation,
    Declarations,
    PreparedRequest,
    Reasoning,
    StopReason,
)
from host.agent.providers.callers import RESPONSES_PROGRAM_ITEMS, program_caller_object
from host.agent.providers.choice import ToolChoice, responses_choice
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
    arguments_text,
    data_url,
    media_note,
    pair_conversation,
    result_text,
    wire_name,
)
from host.agent.providers.strict import openai_parameters
from host.calls import ImageBlock, TextBlock, ToolCall, ToolResult
from registry.tool import ToolRecord

__all__ = ["OpenAIResponsesAdapter", "ResponsesStreamParser"]


def _user_content(content: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextBlock):
            out.append({"type": "input_text", "text": b.text})
        elif isinstance(b, ImageBlock) and b.mime_type in ANTHROPIC_IMAGE_TYPES:
            out.append({"type": "input_image", "image_url": data_url(b), "detail": "auto"})
        else:
            out.append({"type": "input_text", "text": media_note(b, attached=False)})
    return out


def _stop(response: dict[str, Any], has_calls: bool) -> StopReason:
    status = response.get("status")
    if status == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason")
        return StopReason.REFUSAL if reason == "content_filter" else StopReason.MAX_TOKENS
    if status in ("failed", "cancelled"):
        return StopReason.OTHER
    return StopReason.TOOL_USE if has_calls else StopReason.END_TURN


_OPAQUE = ("reasoning", *RESPONSES_PROGRAM_ITEMS)
"""Items replayed verbatim: reasoning, and a program with its output."""


def _program_caller_of(item: dict[str, Any]) -> dict[str, Any] | None:
    return program_caller_object(item, API_RESPONSES)


def _parts_from_items(items: list[dict[str, Any]], api: str) -> tuple[list[Any], dict[int, str]]:
    """Output items → assistant parts (+ item ids by part position)."""
    parts: list[Any] = []
    ids: dict[int, str] = {}
    n_calls = 0
    for i, item in enumerate(items):
        kind = item.get("type")
        if kind in _OPAQUE:
            parts.append(Reasoning(api=api, data=item))
        elif kind == "message" and item.get("role", "assistant") == "assistant":
            content = item.get("content")
            text = (
                content
                if isinstance(content, str)
                else "".join(c.get("text") or c.get("refusal") or "" for c in content or [] if isinstance(c, dict))
            )
            if text:
                if item.get("id"):
                    ids[len(parts)] = item["id"]
                parts.append(TextBlock(text=text))
        elif kind in ("function_call", "tool_search_call"):
            if kind == "function_call" and (not item.get("call_id") or not item.get("name")):
                raise MalformedResponse(api, f"output[{i}]", "function_call needs call_id and name")
            if kind == "tool_search_call" and item.get("execution") == "server":
                continue  # hosted search: nothing for the client to run
            if kind == "tool_search_call":
                args = item.get("arguments")
                raw = args if isinstance(args, str) else json.dumps(args or {}, ensure_ascii=False)
                call = ToolCall(
                    call_id=item.get("call_id") or item.get("id") or f"tool_search_{i}",
                    name=TOOL_SEARCH_NAME,
                    raw_arguments=raw,
                    index=n_calls,
                )
            else:
                call = ToolCall(
                    call_id=item["call_id"], name=item["name"], raw_arguments=item.get("arguments") or "", index=n_calls
                )
            if item.get("id"):
                ids[len(parts)] = item["id"]
            parts.append(call)
            n_calls += 1
    return parts, ids


class OpenAIResponsesAdapter:
    """Responses adapter.

    Args:
        strict: declare tools with ``strict: true`` when the schema converts safely.
        declare_deferred: with tool search, also list the deferred functions in ``tools``
            (``defer_loading: true``); ``False`` sends them only inside ``tool_search_output``.
    """

    api = API_RESPONSES

    def __init__(self, *, strict: bool = True, declare_deferred: bool = True) -> None:
        self.strict = strict
        self.declare_deferred = declare_deferred

    def _function(self, record: ToolRecord, *, deferred: bool, decl: Declarations | None = None) -> dict[str, Any]:
        params, is_strict, notes = openai_parameters(record.qualified_name, record.input_schema, strict=self.strict)
        tool: dict[str, Any] = {
            "type": "function",
            "name": record.qualified_name,
            "description": record.description,
            "parameters": params,
            "strict": is_strict,
        }
        if deferred:
            tool["defer_loading"] = True
        if decl is not None:
            decl.tools.append(tool)
            decl.strict[record.qualified_name] = is_strict
            decl.schemas[record.qualified_name] = record.input_schema
            decl.notes.extend(notes)
        return tool

    def declare_tools(
        self, tools: Sequence[ToolRecord], *, tool_search: bool = False, loaded: Sequence[str] = ()
    ) -> Declarations:
        """Functions; with ``tool_search``: ``always_load`` ones, the client ``tool_search`` tool,
        then every other tool with ``defer_loading: true`` (when ``declare_deferred``)."""
        decl = Declarations()
        if not tool_search:
            for r in tools:
                self._function(r, deferred=False, decl=decl)
            return decl
        for r in tools:
            if r.always_load:
                self._function(r, deferred=False, decl=decl)
        decl.tools.append(
            {
                "type": "tool_search",
                "execution": "client",
                "description": TOOL_SEARCH_DESCRIPTION,
                "parameters": TOOL_SEARCH_PARAMETERS,
            }
        )
        for r in tools:
            if not r.always_load:
                tool = self._function(r, deferred=True, decl=decl if self.declare_deferred else None)
                if not self.declare_deferred:
                    decl.strict[r.qualified_name] = bool(tool["strict"])
                    decl.schemas[r.qualified_name] = r.input_schema
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
        """Request body (``model``, ``instructions``, ``input``, ``tools``, ``tool_choice``…)."""
        decl = self.declare_tools(tools, tool_search=tool_search)
        records = {r.qualified_name: r for r in tools}
        body: dict[str, Any] = {"model": model}
        if conversation.system:
            body["instructions"] = conversation.system
        body["input"] = self.render_input(conversation, records, tool_search)
        if decl.tools:
            body["tools"] = decl.tools
            search = TOOL_SEARCH_NAME if tool_search else None
            body.update(responses_choice(choice or ToolChoice(), search_tool=search).params)
        body.update(params)
        return PreparedRequest(params=body, declarations=decl)

    def render_input(
        self, conversation: Conversation, records: dict[str, ToolRecord] | None = None, tool_search: bool = False
    ) -> list[dict[str, Any]]:
        """The ``input`` items for ``conversation`` (see module docstring)."""
        records = records or {}
        items: list[dict[str, Any]] = []
        for seg in pair_conversation(conversation, self.api):
            if seg.user is not None:
                items.append({"role": "user", "content": _user_content(seg.user.content)})
                continue
            turn = seg.assistant
            same_api = turn.api == self.api
            pairs = iter(seg.pairs or [])
            for pos, part in enumerate(turn.parts):
                item_id = turn.item_ids.get(pos) if same_api else None
                if isinstance(part, Reasoning):
                    if part.api == self.api:
                        items.append(part.data)
                elif isinstance(part, TextBlock):
                    if item_id:
                        items.append(
                            {
                                "type": "message",
                                "id": item_id,
                                "role": "assistant",
                                "status": "completed",
                                "content": [{"type": "output_text", "text": part.text, "annotations": []}],
                            }
                        )
                    elif part.text:
                        items.append({"role": "assistant", "content": part.text})
                else:
                    pair = next(pairs)
                    if tool_search and part.name == TOOL_SEARCH_NAME:
                        item = {
                            "type": "tool_search_call",
                            "call_id": pair.wire_id,
                            "execution": "client",
                            "status": "completed",
                            "arguments": arguments_object(part),
                        }
                    else:
                        item = {
                            "type": "function_call",
                            "call_id": pair.wire_id,
                            "name": wire_name(part.name),
                            "arguments": arguments_text(part),
                        }
                        caller = turn.callers.get(part.call_id) if turn.api == self.api else None
                        if caller is not None:
                            item["caller"] = caller
                    if item_id:
                        item["id"] = item_id
                    items.append(item)
            for pair in seg.pairs or []:
                items.append(self._output(pair.result, pair.wire_id, records, tool_search))
        return items

    def _output(
        self, result: ToolResult, wire_id: str, records: dict[str, ToolRecord], tool_search: bool
    ) -> dict[str, Any]:
        if tool_search and result.name == TOOL_SEARCH_NAME and not result.is_error:
            tools = [self._function(records[n], deferred=True) for n in loaded_names(result) if n in records]
            return {
                "type": "tool_search_output",
                "call_id": wire_id,
                "execution": "client",
                "status": "completed",
                "tools": tools,
            }
        images = [b for b in result.content if isinstance(b, ImageBlock) and b.mime_type in ANTHROPIC_IMAGE_TYPES]
        if not images:
            return {"type": "function_call_output", "call_id": wire_id, "output": result_text(result)}
        output: list[dict[str, Any]] = []
        text = result_text(result, image_note=lambda b: "")
        if text != "(no output)":
            output.append({"type": "input_text", "text": text})
        for b in images:
            output.append({"type": "input_image", "image_url": data_url(b), "detail": "auto"})
        return {"type": "function_call_output", "call_id": wire_id, "output": output}

    def parse_response(self, response: dict[str, Any]) -> AssistantTurn:
        """A ``response`` object as an assistant turn (reasoning kept verbatim).

        Raises:
            MalformedResponse: ``output`` missing, or a function_call without call_id/name.
        """
        output = response.get("output")
        if not isinstance(output, list):
            raise MalformedResponse(self.api, "output", "expected a list of output items")
        parts, ids = _parts_from_items(output, self.api)
        has_calls = any(isinstance(p, ToolCall) for p in parts)
        callers = {i["call_id"]: c for i in output if i.get("type") == "function_call"
                   and (c := _program_caller_of(i)) is not None}
        return AssistantTurn(
            parts=parts, stop=_stop(response, has_calls), api=self.api, response_id=response.get("id"), item_ids=ids,
            callers=callers,
        )

    def stream_parser(self, accumulator: AccumulatorLike) -> ResponsesStreamParser:
        return ResponsesStreamParser(accumulator)

    def parse_history(self, request: dict[str, Any]) -> Conversation:
        """``{"instructions", "input": [...]}`` as a conversation."""
        from host.agent.providers.history import responses_history

        return responses_history(request.get("input") or [], instructions=request.get("instructions"))


class ResponsesStreamParser:
    """Feeds Responses streaming events to an accumulator (see module docstring)."""

    def __init__(self, accumulator: AccumulatorLike) -> None:
        self.acc = accumulator
        self._items: dict[int, dict[str, Any]] = {}
        self._text: dict[int, list[str]] = {}
        self._fed: dict[int, int] = {}
        self._search: set[int] = set()
        self._response: dict[str, Any] = {}
        self.done = False

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        idx = event.get("output_index")
        if kind in ("response.created", "response.in_progress"):
            self._response = event.get("response") or {}
        elif kind == "response.output_item.added":
            item = event.get("item") or {}
            self._items[idx] = item
            if item.get("type") == "function_call":
                self.acc.start(index=idx, call_id=item.get("call_id"), name=item.get("name"))
                self._fed[idx] = 0
                if item.get("arguments"):
                    self._feed(idx, item["arguments"])
        elif kind == "response.function_call_arguments.delta":
            self._feed(idx, event.get("delta") or "")
        elif kind == "response.function_call_arguments.done":
            self._close(idx, event.get("arguments"))
        elif kind == "response.output_text.delta":
            self._text.setdefault(idx, []).append(event.get("delta") or "")
        elif kind == "response.output_item.done":
            item = event.get("item") or {}
            self._items[idx] = item
            if item.get("type") == "function_call":
                self._close(idx, item.get("arguments"))
            elif item.get("type") == "tool_search_call" and item.get("execution") != "server":
                args = item.get("arguments")
                self.acc.start(index=idx, call_id=item.get("call_id") or item.get("id"), name=TOOL_SEARCH_NAME)
                self.acc.feed(args if isinstance(args, str) else json.dumps(args or {}, ensure_ascii=False), index=idx)
                self.acc.finish(index=idx)
                self._search.add(idx)
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self._response = event.get("response") or self._response
            self.acc.finish_all()
            self.done = True

    def _feed(self, idx: int, fragment: str) -> None:
        if fragment:
            self.acc.feed(fragment, index=idx)
            self._fed[idx] = self._fed.get(idx, 0) + len(fragment)

    def _close(self, idx: int, final: Any) -> None:
        if self._fed.get(idx, 0) == 0 and isinstance(final, str) and final:
            self._feed(idx, final)  # no deltas arrived: the done event carries the whole text
        self.acc.finish(index=idx)

    def turn(self) -> AssistantTurn:
        if not self.done:
            self.acc.finish_all()
        calls = iter(self.acc.calls())
        parts: list[Any] = []
        ids: dict[int, str] = {}
        callers: dict[str, dict[str, Any]] = {}
        for idx in sorted(self._items):
            item = self._items[idx]
            kind = item.get("type")
            if kind in _OPAQUE:
                parts.append(Reasoning(api=API_RESPONSES, data=item))
            elif kind == "message":
                done_parts, _ = _parts_from_items([item], API_RESPONSES)
                text = "".join(p.text for p in done_parts if isinstance(p, TextBlock)) or "".join(
                    self._text.get(idx, [])
                )
                if text:
                    if item.get("id"):
                        ids[len(parts)] = item["id"]
                    parts.append(TextBlock(text=text))
            elif kind == "function_call" or idx in self._search:
                if item.get("id"):
                    ids[len(parts)] = item["id"]
                call = next(calls)
                parts.append(call)
                if kind == "function_call" and (caller := _program_caller_of(item)) is not None:
                    callers[call.call_id] = caller
        has_calls = any(isinstance(p, ToolCall) for p in parts)
        stop = _stop(self._response, has_calls) if self.done else StopReason.OTHER
        return AssistantTurn(
            parts=parts, stop=stop, api=API_RESPONSES, response_id=self._response.get("id"), item_ids=ids,
            callers=callers,
        )
