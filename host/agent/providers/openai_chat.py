"""OpenAI Chat Completions adapter (``POST /v1/chat/completions``), plain dicts only.

Shapes (OpenAI API reference, Chat Completions):

* Declaration: ``{"type": "function", "function": {"name", "description", "parameters", "strict"}}``.
* Calls: ``choices[0].message.tool_calls[i] = {"id", "type": "function", "function": {"name",
  "arguments": "<JSON text>"}}``; streamed as ``choices[0].delta.tool_calls[i]`` keyed by
  ``index`` (``id`` and ``name`` arrive once, ``arguments`` in pieces); ``finish_reason`` ends it.
* Results: the assistant message as received (``content`` + ``tool_calls``), then one
  ``{"role": "tool", "tool_call_id", "content": "<text>"}`` per call in call order. Tool messages
  are text: an image becomes a short note there, and the images follow in ONE user message after
  the last tool message when ``images_in_user_message`` (never base64 in a tool message's text).
* No native deferred loading: see :mod:`host.agent.providers.deferred`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from host.agent.providers.base import (
    API_CHAT,
    AccumulatorLike,
    AssistantTurn,
    Conversation,
    Declarations,
    PreparedRequest,
    StopReason,
)
from host.agent.providers.choice import ToolChoice, chat_choice
from host.agent.providers.deferred import (
    TOOL_SEARCH_DESCRIPTION,
    TOOL_SEARCH_NAME,
    TOOL_SEARCH_PARAMETERS,
    loaded_from_conversation,
    loaded_names,
    split_catalog,
)
from host.agent.providers.dialects import gemini_schema
from host.agent.providers.errors import MalformedResponse
from host.agent.providers.render import (
    ANTHROPIC_IMAGE_TYPES,
    arguments_text,
    data_url,
    media_note,
    pair_conversation,
    result_text,
    wire_name,
)
from host.agent.providers.strict import openai_parameters
from host.calls import AudioBlock, ImageBlock, TextBlock, ToolCall, ToolResult
from registry.tool import ToolRecord

__all__ = ["ChatStreamParser", "OpenAIChatAdapter"]

_FINISH = {
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "stop": StopReason.END_TURN,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}


def _stop(finish_reason: str | None, has_calls: bool) -> StopReason:
    stop = _FINISH.get(finish_reason or "", StopReason.OTHER)
    if stop is StopReason.END_TURN and has_calls:  # a forced tool_choice ends with "stop"
        return StopReason.TOOL_USE
    return stop


def _user_parts(content: list[Any]) -> str | list[dict[str, Any]]:
    if all(isinstance(b, TextBlock) for b in content):
        return "\n".join(b.text for b in content)
    parts: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextBlock):
            parts.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageBlock) and b.mime_type in ANTHROPIC_IMAGE_TYPES:
            parts.append({"type": "image_url", "image_url": {"url": data_url(b)}})
        elif isinstance(b, AudioBlock) and b.mime_type in ("audio/wav", "audio/x-wav", "audio/mpeg", "audio/mp3"):
            parts.append(
                {
                    "type": "input_audio",
                    "input_audio": {"data": b.data, "format": "wav" if "wav" in b.mime_type else "mp3"},
                }
            )
        else:
            parts.append({"type": "text", "text": media_note(b, attached=False)})
    return parts


class OpenAIChatAdapter:
    """Chat Completions adapter.

    Args:
        strict: declare tools with ``strict: true`` when the schema converts safely.
        schema_dialect: ``"openai"``, or ``"gemini"`` for Gemini's OpenAI-compatible endpoint
            (schemas rewritten by :func:`host.agent.providers.dialects.gemini_schema`, never strict,
            ``parameters`` omitted for tools without parameters).
        images_in_user_message: the model accepts images: relay tool-result images in a user
            message after the tool messages (else they are described in text only).
    """

    api = API_CHAT

    def __init__(
        self, *, strict: bool = True, images_in_user_message: bool = True, schema_dialect: str = "openai"
    ) -> None:
        if schema_dialect not in ("openai", "gemini"):
            raise ValueError(f"schema_dialect must be 'openai' or 'gemini', got {schema_dialect!r}")
        self.strict = strict and schema_dialect == "openai"
        self.images_in_user_message = images_in_user_message
        self.schema_dialect = schema_dialect

    # -- declarations ---------------------------------------------------------------------
    def _function(self, name: str, description: str, schema: dict[str, Any] | None, decl: Declarations) -> None:
        if self.schema_dialect == "gemini":
            norm = gemini_schema(schema)
            params, is_strict, notes = norm.schema, False, [f"{name}: {n}" for n in norm.notes]
            function: dict[str, Any] = {"name": name, "description": description}
            if params.get("properties"):
                function["parameters"] = params
            decl.tools.append({"type": "function", "function": function})
        else:
            params, is_strict, notes = openai_parameters(name, schema, strict=self.strict)
            decl.tools.append(
                {
                    "type": "function",
                    "function": {"name": name, "description": description, "parameters": params, "strict": is_strict},
                }
            )
        decl.strict[name] = is_strict
        decl.notes.extend(notes)
        if schema is not None:
            decl.schemas[name] = schema

    def declare_tools(
        self, tools: Sequence[ToolRecord], *, tool_search: bool = False, loaded: Sequence[str] = ()
    ) -> Declarations:
        """Function declarations: all ``tools``; with ``tool_search``: ``always_load`` ones,
        then ``tool_search``, then the loaded ones in load order (appended at the end)."""
        decl = Declarations()
        if not tool_search:
            for r in tools:
                self._function(r.qualified_name, r.description, r.input_schema, decl)
            return decl
        eager, loaded_records = split_catalog(tools, loaded)
        for r in eager:
            self._function(r.qualified_name, r.description, r.input_schema, decl)
        self._function(TOOL_SEARCH_NAME, TOOL_SEARCH_DESCRIPTION, TOOL_SEARCH_PARAMETERS, decl)
        for r in loaded_records:
            self._function(r.qualified_name, r.description, r.input_schema, decl)
        return decl

    # -- requests -------------------------------------------------------------------------
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
        """Request body for ``conversation`` (``model``, ``messages``, ``tools``, ``tool_choice``…).

        Extra ``params`` (e.g. ``max_completion_tokens``, ``stream``) are passed through.
        """
        loaded = loaded_from_conversation(conversation) if tool_search else []
        decl = self.declare_tools(tools, tool_search=tool_search, loaded=loaded)
        records = {r.qualified_name: r for r in tools}
        body: dict[str, Any] = {"model": model, "messages": self.render_messages(conversation, records, tool_search)}
        if decl.tools:
            body["tools"] = decl.tools
            body.update(chat_choice(choice or ToolChoice()).params)
        body.update(params)
        return PreparedRequest(params=body, declarations=decl)

    def render_messages(
        self, conversation: Conversation, records: dict[str, ToolRecord] | None = None, tool_search: bool = False
    ) -> list[dict[str, Any]]:
        """The ``messages`` array for ``conversation`` (see module docstring)."""
        records = records or {}
        messages: list[dict[str, Any]] = []
        if conversation.system:
            messages.append({"role": "system", "content": conversation.system})
        for seg in pair_conversation(conversation, self.api):
            if seg.user is not None:
                messages.append({"role": "user", "content": _user_parts(seg.user.content)})
                continue
            turn, pairs = seg.assistant, seg.pairs or []
            msg: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
            if pairs:
                msg["tool_calls"] = [
                    {
                        "id": p.wire_id,
                        "type": "function",
                        "function": {"name": wire_name(p.call.name), "arguments": arguments_text(p.call)},
                    }
                    for p in pairs
                ]
            elif msg["content"] is None:
                msg["content"] = ""
            messages.append(msg)
            images: list[dict[str, Any]] = []
            for p in pairs:
                content = self._tool_content(p.result, records, tool_search, images, p.wire_id)
                messages.append({"role": "tool", "tool_call_id": p.wire_id, "content": content})
            if images:
                messages.append({"role": "user", "content": images})
        return messages

    def _tool_content(
        self,
        result: ToolResult,
        records: dict[str, ToolRecord],
        tool_search: bool,
        images: list[dict[str, Any]],
        wire_id: str,
    ) -> str:
        if tool_search and result.name == TOOL_SEARCH_NAME and not result.is_error:
            loaded = []
            for name in loaded_names(result):
                r = records.get(name)
                if r is not None:
                    params, _, _ = openai_parameters(name, r.input_schema, strict=False)
                    loaded.append({"name": name, "description": r.description, "parameters": params})
            return json.dumps({"loaded": loaded, "note": "These tools are now callable."}, ensure_ascii=False)

        relay = self.images_in_user_message

        def note(block: ImageBlock) -> str:
            if relay and block.mime_type in ANTHROPIC_IMAGE_TYPES:
                if not images:
                    images.append({"type": "text", "text": "Images returned by the tool calls above:"})
                images.append({"type": "text", "text": f"Image from tool call {wire_id} ({result.name}):"})
                images.append({"type": "image_url", "image_url": {"url": data_url(block)}})
                return media_note(block, attached=True)
            return media_note(block, attached=False)

        return result_text(result, image_note=note)

    # -- responses ------------------------------------------------------------------------
    def parse_response(self, response: dict[str, Any]) -> AssistantTurn:
        """A ``chat.completion`` object (first choice) as an assistant turn.

        Raises:
            MalformedResponse: no choices, or a tool call without ``id``/``function.name``.
        """
        choices = response.get("choices")
        if not isinstance(choices, list) or not choices:
            raise MalformedResponse(self.api, "choices", "expected a non-empty list")
        message = choices[0].get("message") or {}
        parts: list[Any] = []
        text = message.get("content")
        if isinstance(text, str) and text:
            parts.append(TextBlock(text=text))
        if isinstance(message.get("refusal"), str) and message["refusal"]:
            parts.append(TextBlock(text=message["refusal"]))
        calls = message.get("tool_calls") or []
        for i, tc in enumerate(calls):
            fn = tc.get("function") or {}
            if tc.get("type", "function") != "function":
                continue
            if not tc.get("id") or not fn.get("name"):
                raise MalformedResponse(self.api, f"choices[0].message.tool_calls[{i}]", "needs id and function.name")
            parts.append(
                ToolCall(
                    call_id=tc["id"],
                    name=fn["name"],
                    raw_arguments=fn.get("arguments") or "",
                    index=len([p for p in parts if isinstance(p, ToolCall)]),
                )
            )
        has_calls = any(isinstance(p, ToolCall) for p in parts)
        return AssistantTurn(
            parts=parts,
            stop=_stop(choices[0].get("finish_reason"), has_calls),
            api=self.api,
            response_id=response.get("id"),
        )

    def stream_parser(self, accumulator: AccumulatorLike) -> ChatStreamParser:
        return ChatStreamParser(accumulator)

    # -- history --------------------------------------------------------------------------
    def parse_history(self, request: dict[str, Any]) -> Conversation:
        """``{"messages": [...]}`` (system/developer, user, assistant, tool) as a conversation."""
        from host.agent.providers.history import chat_history

        return chat_history(request.get("messages") or [])


class ChatStreamParser:
    """Feeds ``chat.completion.chunk`` events to an accumulator (see module docstring)."""

    def __init__(self, accumulator: AccumulatorLike) -> None:
        self.acc = accumulator
        self._text: list[str] = []
        self._ids: dict[int, str | None] = {}
        self._seen_ids: set[str] = set()  # ids of calls started without an index
        self._last: tuple[int | None, str | None] | None = None  # key of the most recent call
        self._finish: str | None = None
        self._id: str | None = None
        self.done = False

    def feed(self, event: dict[str, Any]) -> None:
        self._id = self._id or event.get("id")
        for choice in event.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                self._text.append(delta["content"])
            if isinstance(delta.get("refusal"), str):
                self._text.append(delta["refusal"])
            for tc in delta.get("tool_calls") or []:
                self._call_delta(tc)
            if choice.get("finish_reason"):
                self._finish = choice["finish_reason"]
                self.acc.finish_all()
                self.done = True

    def _call_delta(self, tc: dict[str, Any]) -> None:
        index = tc.get("index")
        if index is None:
            self._call_delta_without_index(tc)
            return
        if not isinstance(index, int) or isinstance(index, bool):
            raise MalformedResponse(API_CHAT, "choices[0].delta.tool_calls[].index", "expected an integer")
        fn = tc.get("function") or {}
        call_id = tc.get("id") or None
        if index not in self._ids or (call_id is not None and self._ids[index] not in (None, call_id)):
            self.acc.start(index=index, call_id=call_id, name=fn.get("name") or None)
            self._ids[index] = call_id
        else:
            if call_id is not None and self._ids[index] is None:
                self._ids[index] = call_id
            if fn.get("name"):
                self.acc.set_name(fn["name"], index=index, call_id=self._ids[index])
        self._last = (index, self._ids[index])
        if fn.get("arguments"):
            self.acc.feed(fn["arguments"], index=index, call_id=self._ids[index])

    def _call_delta_without_index(self, tc: dict[str, Any]) -> None:
        """Gemini's OpenAI-compatible stream sends no ``index``: key the call by its ``id``.

        A new id starts a call (batch order = order ids first appear); a known id continues
        it; a delta with neither index nor id (``"id": ""``) continues the most recent call.
        """
        fn = tc.get("function") or {}
        call_id = tc.get("id") or None
        known = self._key_of(call_id) if call_id is not None else None
        if call_id is not None and known is None:
            self.acc.start(call_id=call_id, name=fn.get("name") or None)
            self._seen_ids.add(call_id)
            self._last = (None, call_id)
        else:
            if known is not None:
                self._last = known
            elif self._last is None:
                raise MalformedResponse(
                    API_CHAT,
                    "choices[0].delta.tool_calls[]",
                    "a tool call delta has neither index nor id and no call was started before it",
                )
            if fn.get("name"):
                self.acc.set_name(fn["name"], index=self._last[0], call_id=self._last[1])
        if fn.get("arguments"):
            self.acc.feed(fn["arguments"], index=self._last[0], call_id=self._last[1])

    def _key_of(self, call_id: str) -> tuple[int | None, str] | None:
        """The accumulator key of an already started call with this id, else ``None``."""
        if call_id in self._seen_ids:
            return (None, call_id)
        for index, known in self._ids.items():
            if known == call_id:
                return (index, call_id)
        return None

    def turn(self) -> AssistantTurn:
        if not self.done:
            self.acc.finish_all()
        calls = self.acc.calls()
        parts: list[Any] = [TextBlock(text="".join(self._text))] if "".join(self._text) else []
        parts.extend(calls)
        return AssistantTurn(
            parts=parts,
            stop=_stop(self._finish, bool(calls)) if self.done else StopReason.OTHER,
            api=API_CHAT,
            response_id=self._id,
        )
