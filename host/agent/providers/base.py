"""The shared interface of the provider adapters and the provider-neutral conversation.

A conversation is a list of turns (JSON form of :meth:`Conversation.model_dump`)::

    {"system": "You are…" | null,
     "turns": [
       {"type": "user", "content": [{"type": "text", "text": "…"}, {"type": "image", …}]},
       {"type": "assistant", "api": "anthropic_messages", "stop": "tool_use",
        "parts": [{"type": "reasoning", "api": "anthropic_messages", "data": {<thinking block>}},
                  {"type": "text", "text": "Let me look."},
                  {"call_id": "toolu_1", "name": "fs__read", "raw_arguments": "{…}", "index": 0}]},
       {"type": "results", "results": [<ToolResult>, …]}]}

Assistant parts keep the order the model produced. :class:`Reasoning` parts are opaque and
replayed verbatim, only to the API that produced them (Anthropic thinking blocks with their
``signature``; Responses reasoning items with ``encrypted_content``). Every adapter renders the
same conversation, so history recorded through one API converts to the others.

Every adapter implements :class:`ProviderAdapter` and works on plain dicts (no SDK import).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from host.agent.providers.arguments import parse_arguments_object
from host.agent.providers.strict import decode_strict_arguments
from host.calls import ContentBlock, TextBlock, ToolCall, ToolResult
from registry.tool import ToolRecord

__all__ = [
    "API_ANTHROPIC",
    "API_CHAT",
    "API_RESPONSES",
    "AccumulatorLike",
    "AssistantPart",
    "AssistantTurn",
    "Conversation",
    "Declarations",
    "PreparedRequest",
    "ProviderAdapter",
    "Reasoning",
    "ResultsTurn",
    "StopReason",
    "StreamParser",
    "Turn",
    "UserTurn",
]

API_CHAT = "openai_chat"
API_RESPONSES = "openai_responses"
API_ANTHROPIC = "anthropic_messages"


class StopReason(str, enum.Enum):
    """Why the model stopped, across APIs.

    Chat ``finish_reason``: tool_calls→TOOL_USE, stop→END_TURN, length→MAX_TOKENS,
    content_filter→REFUSAL. Responses ``status``: completed→TOOL_USE/END_TURN (by content),
    incomplete→MAX_TOKENS/REFUSAL (``incomplete_details.reason``). Anthropic ``stop_reason``:
    tool_use, end_turn/stop_sequence→END_TURN, max_tokens/model_context_window_exceeded→
    MAX_TOKENS, refusal, pause_turn→PAUSED.
    """

    TOOL_USE = "tool_use"
    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    REFUSAL = "refusal"
    PAUSED = "paused"
    OTHER = "other"

    @property
    def calls_complete(self) -> bool:
        """True when the calls of the response are whole (not cut off by a token limit)."""
        return self is not StopReason.MAX_TOKENS


class Reasoning(BaseModel):
    """Opaque reasoning that must travel with the tool calls it preceded.

    Attributes:
        api: the API that produced it (it is replayed only there, byte for byte).
        data: the block/item exactly as received, e.g. ``{"type": "thinking", "thinking": "…",
            "signature": "…"}`` or ``{"type": "reasoning", "id": "rs_1", "encrypted_content": "…"}``.
    """

    model_config = ConfigDict(frozen=True)
    type: Literal["reasoning"] = "reasoning"
    api: str
    data: dict[str, Any]


AssistantPart = TextBlock | Reasoning | ToolCall


class UserTurn(BaseModel):
    """What the user said: text and images."""

    model_config = ConfigDict(frozen=True)
    type: Literal["user"] = "user"
    content: list[ContentBlock] = Field(default_factory=list)

    @classmethod
    def text(cls, text: str) -> UserTurn:
        return cls(content=[TextBlock(text=text)])


class AssistantTurn(BaseModel):
    """One model response: parts in the order produced.

    Attributes:
        parts: :class:`~host.calls.TextBlock`, :class:`Reasoning` and :class:`~host.calls.ToolCall`.
        stop: why the model stopped.
        api: the API it came from (``None`` when built by hand).
        response_id: the provider's message/response id, if any.
    """

    model_config = ConfigDict(frozen=True)
    type: Literal["assistant"] = "assistant"
    parts: list[AssistantPart] = Field(default_factory=list)
    stop: StopReason = StopReason.END_TURN
    api: str | None = None
    response_id: str | None = None
    item_ids: dict[int, str] = Field(default_factory=dict)
    """Part position → the provider's item id (Responses ``fc_…``/``msg_…``), replayed to that API."""
    callers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Call id → the ``caller`` object of a call made by the provider's code runtime, as received
    (Anthropic ``{"type": "code_execution_20250825", "tool_id"}``, Responses ``{"type": "program",
    "caller_id"}``); direct calls are absent. Replayed to that API (:mod:`host.agent.providers.callers`)."""
    container: str | None = None
    """Anthropic: the code-execution container id of the response, sent back as ``container`` on
    the next request (a programmatic call's result must go to the container that made it)."""

    @property
    def calls(self) -> list[ToolCall]:
        """The tool calls, in batch order."""
        return [p for p in self.parts if isinstance(p, ToolCall)]

    @property
    def text(self) -> str:
        """All text parts joined (no separator)."""
        return "".join(p.text for p in self.parts if isinstance(p, TextBlock))

    @property
    def reasoning(self) -> list[Reasoning]:
        return [p for p in self.parts if isinstance(p, Reasoning)]


class ResultsTurn(BaseModel):
    """The results of the previous assistant turn's calls (any order; paired by call id)."""

    model_config = ConfigDict(frozen=True)
    type: Literal["results"] = "results"
    results: list[ToolResult] = Field(default_factory=list)


Turn = Annotated[UserTurn | AssistantTurn | ResultsTurn, Field(discriminator="type")]


class Conversation(BaseModel):
    """A provider-neutral conversation (see module docstring)."""

    system: str | None = None
    turns: list[Turn] = Field(default_factory=list)

    def add(self, turn: UserTurn | AssistantTurn | ResultsTurn) -> Conversation:
        """Append a turn in place and return ``self``."""
        self.turns.append(turn)
        return self


@dataclass
class Declarations:
    """A rendered ``tools`` array and what the adapter decided per tool.

    Attributes:
        tools: the API's tool list, in order.
        strict: qualified name → True when declared with ``strict: true``.
        notes: one line per change or decision worth logging (non-strict reason, dropped keyword).
        schemas: qualified name → the **original** input schema (for argument decoding).
    """

    tools: list[dict[str, Any]] = field(default_factory=list)
    strict: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)

    def decode_call(self, call: ToolCall) -> ToolCall:
        """For a strict tool, parse the arguments and map strict ``null`` back to "absent".

        Returns the call with ``arguments`` set (``raw_arguments`` untouched) when the tool was
        declared strict and the text is a JSON object; otherwise the call unchanged.
        """
        if not self.strict.get(call.name) or call.arguments is not None:
            return call
        parsed = parse_arguments_object(call.raw_arguments)
        if parsed is None:  # not an object (or nested too deeply): the pipeline reports it
            return call
        decoded = decode_strict_arguments(parsed, self.schemas[call.name])
        return call.model_copy(update={"arguments": decoded})


@dataclass
class PreparedRequest:
    """A request ready to send, with what is needed to read its response.

    Attributes:
        params: the request body (JSON-able dict: ``model``, ``messages``/``input``, ``tools``…).
        declarations: the rendered tools (use :meth:`Declarations.decode_call` on strict calls).
        host_enforced_choice: the API cannot express the tool_choice restriction; check
            ``choice.permits(name)`` for every call.
    """

    params: dict[str, Any]
    declarations: Declarations
    host_enforced_choice: bool = False


@runtime_checkable
class AccumulatorLike(Protocol):
    """What stream parsers feed (``host.agent.accumulate.ArgumentAccumulator``)."""

    def start(self, *, index: int | None = None, call_id: str | None = None, name: str | None = None) -> None: ...
    def feed(self, fragment: str | bytes, *, index: int | None = None, call_id: str | None = None) -> None: ...
    def set_name(self, name: str, *, index: int | None = None, call_id: str | None = None) -> None: ...
    def finish(self, *, index: int | None = None, call_id: str | None = None) -> None: ...
    def finish_all(self) -> None: ...
    def calls(self) -> list[ToolCall]: ...


@runtime_checkable
class StreamParser(Protocol):
    """Consumes one streamed response, event by event (already JSON-decoded dicts)."""

    def feed(self, event: dict[str, Any]) -> None:
        """Handle one event (unknown event types are ignored)."""
        ...

    @property
    def done(self) -> bool:
        """True once the API's terminal event arrived (the calls are complete)."""
        ...

    def turn(self) -> AssistantTurn:
        """The assistant turn built so far (finishes pending calls)."""
        ...


@runtime_checkable
class ProviderAdapter(Protocol):
    """One model API: declarations, requests, responses (whole and streamed), history."""

    api: str

    def declare_tools(
        self, tools: Sequence[ToolRecord], *, tool_search: bool = False, loaded: Sequence[str] = ()
    ) -> Declarations:
        """The ``tools`` array for ``tools`` (deferred ones per API when ``tool_search``)."""
        ...

    def prepare(
        self,
        conversation: Conversation,
        tools: Sequence[ToolRecord],
        *,
        model: str,
        choice: Any = None,
        tool_search: bool = False,
        **params: Any,
    ) -> PreparedRequest:
        """Complete request parameters (JSON-able) for ``conversation``, with its declarations."""
        ...

    def parse_response(self, response: dict[str, Any]) -> AssistantTurn:
        """A complete (non-streamed) response as an assistant turn."""
        ...

    def stream_parser(self, accumulator: AccumulatorLike) -> StreamParser:
        """A parser for one streamed response that feeds ``accumulator``."""
        ...

    def parse_history(self, request: dict[str, Any]) -> Conversation:
        """A conversation recorded in this API's request shape, as a neutral conversation."""
        ...
