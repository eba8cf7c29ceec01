"""Glue between the adapters and the loop driver (:func:`host.agent.loop.run_conversation`).

* :func:`to_conversation` / :func:`to_messages` convert the loop's history
  (:class:`host.agent.transcript.Message`: system/user/assistant/tool) to and from the
  provider-neutral :class:`~host.agent.providers.base.Conversation`.
* :class:`ProviderModel` is a ``ModelCallable``: it renders the history with an adapter, sends the
  request through a transport you give it (``async send(params) -> response dict | async
  iterator of stream events``), parses the answer (streams through a fresh
  :class:`~host.agent.accumulate.ArgumentAccumulator`), decodes strict-mode arguments, and
  remembers each assistant turn so reasoning (thinking signatures, encrypted reasoning items)
  is replayed verbatim on the next request. With ``programmatic`` (Anthropic Messages, OpenAI
  Responses; Chat Completions has no programmatic callers) it declares ``allowed_callers`` on each
  tool and keeps :attr:`ProviderModel.programs`, the call id → program id of every call the
  provider's code runtime made (:mod:`host.agent.programmatic` runs those).
* :class:`WithToolSearch` wraps a :class:`~host.pipeline.Pipeline`: ``tool_search`` calls are
  answered from a :class:`~registry.search.SearchIndex` into the conversation's
  :class:`~registry.search.DeferredLoadingState`; every other call runs through the pipeline.
  Results come back in call order.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping, Sequence
from typing import Any

from host.agent.accumulate import ArgumentAccumulator
from host.agent.providers.base import (
    AssistantTurn,
    Conversation,
    ProviderAdapter,
    ResultsTurn,
    StopReason,
    UserTurn,
)
from host.agent.providers.callers import PROGRAMMATIC_APIS, declare_programmatic, program_caller
from host.agent.providers.choice import ToolChoice
from host.agent.providers.deferred import TOOL_SEARCH_NAME, run_tool_search
from host.agent.transcript import Message
from host.calls import TextBlock, ToolCall, ToolResult
from host.pipeline.context import CallContext
from registry.search import DeferredLoadingState, SearchIndex
from registry.tool import ToolRecord

__all__ = ["ProviderModel", "Send", "WithToolSearch", "to_conversation", "to_messages"]

logger = logging.getLogger("toolhost.providers")

Send = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | AsyncIterable[dict[str, Any]]]]
"""``async send(request_params) -> response`` (a whole response dict, or stream events)."""


def to_conversation(messages: Sequence[Message], remembered: Mapping[int, AssistantTurn] | None = None) -> Conversation:
    """The loop's history as a conversation.

    Args:
        remembered: message index → the assistant turn as parsed; that message takes its
            reasoning parts, stop reason and item ids when the call count matches (calls always
            come from the history: renamed ids, normalized arguments).
    """
    conv = Conversation()
    remembered = remembered or {}
    for k, m in enumerate(messages):
        if m.role == "system":
            conv.system = f"{conv.system}\n{m.text}" if conv.system else m.text
        elif m.role == "user":
            conv.add(UserTurn.text(m.text))
        elif m.role == "assistant":
            turn = remembered.get(k)
            if turn is not None and len(turn.calls) == len(m.calls):
                calls = iter(m.calls)
                parts = [next(calls) if isinstance(p, ToolCall) else p for p in turn.parts]
                conv.add(turn.model_copy(update={"parts": parts}))
            else:
                parts = ([TextBlock(text=m.text)] if m.text else []) + list(m.calls)
                conv.add(AssistantTurn(parts=parts, stop=StopReason.TOOL_USE if m.calls else StopReason.END_TURN))
        elif m.role == "tool" and m.result is not None:
            if conv.turns and isinstance(conv.turns[-1], ResultsTurn):
                conv.turns[-1].results.append(m.result)
            else:
                conv.add(ResultsTurn(results=[m.result]))
    return conv


def to_messages(conversation: Conversation) -> list[Message]:
    """A conversation as the loop's history (reasoning is not representable there and is dropped)."""
    out: list[Message] = [Message(role="system", text=conversation.system)] if conversation.system else []
    for turn in conversation.turns:
        if isinstance(turn, UserTurn):
            out.append(Message(role="user", text="\n".join(b.text for b in turn.content if isinstance(b, TextBlock))))
        elif isinstance(turn, AssistantTurn):
            out.append(Message(role="assistant", text=turn.text, calls=turn.calls))
        else:
            out.extend(Message(role="tool", result=r) for r in turn.results)
    return out


class ProviderModel:
    """A ``ModelCallable`` speaking one provider API through ``adapter`` (see module docstring).

    Args:
        adapter: the API adapter.
        send: the transport.
        tools: the catalog to declare (a sequence, or a function returning the current one,
            e.g. the caller's visible registry tools).
        model: the provider's model name.
        tool_search: deferred loading on (only ``always_load`` tools up front).
        choice: the tool_choice for every request (default auto).
        params: extra request parameters (e.g. ``{"max_tokens": 1024}``, ``{"stream": True}``).
        programmatic: ``allow(tool)`` for non-read tools the provider's program may call
            (:meth:`host.agent.programmatic.ProgrammaticPolicy.allows`); ``None``: tools are
            declared without ``allowed_callers`` (direct calls only).

    Raises:
        ValueError: ``programmatic`` with OpenAI Chat Completions (no programmatic callers there).
    """

    def __init__(
        self,
        adapter: ProviderAdapter,
        send: Send,
        tools: Sequence[ToolRecord] | Callable[[], Sequence[ToolRecord]],
        *,
        model: str,
        tool_search: bool = False,
        choice: ToolChoice | None = None,
        params: dict[str, Any] | None = None,
        programmatic: Callable[[ToolRecord], bool] | None = None,
    ) -> None:
        if programmatic is not None and adapter.api not in PROGRAMMATIC_APIS:
            raise ValueError(f"{adapter.api} has no programmatic tool calling (OpenAI Chat Completions has none); "
                             "use openai_responses or anthropic_messages, or leave programmatic unset")
        self.adapter = adapter
        self.send = send
        self.tools = tools
        self.model = model
        self.tool_search = tool_search
        self.choice = choice
        self.params = dict(params or {})
        self.programmatic = programmatic
        self.programs: dict[str, str] = {}
        """Call id → program id of every call the provider's code runtime made, so far."""
        self.turns: dict[int, AssistantTurn] = {}
        """History index at which the loop appends each reply → the turn as parsed."""
        self.requests: list[dict[str, Any]] = []
        self._logged: set[str] = set()

    async def __call__(self, history: list[Message]) -> Message:
        tools = self.tools() if callable(self.tools) else self.tools
        conversation = to_conversation(history, self.turns)
        prepared = self.adapter.prepare(
            conversation, tools, model=self.model, choice=self.choice, tool_search=self.tool_search, **self.params
        )
        if self.programmatic is not None:
            declare_programmatic(prepared.declarations, tools, self.adapter.api, allow=self.programmatic)
            prepared.params["tools"] = prepared.declarations.tools
        self.requests.append(prepared.params)
        for note in prepared.declarations.notes:  # non-strict reasons, dropped keywords: once each
            if note not in self._logged:
                self._logged.add(note)
                logger.info("%s declaration: %s", self.adapter.api, note)
        response = await self.send(prepared.params)
        if isinstance(response, dict):
            turn = self.adapter.parse_response(response)
        else:
            parser = self.adapter.stream_parser(ArgumentAccumulator())
            async for event in response:
                parser.feed(event)
            turn = parser.turn()
        self.turns[len(history)] = turn  # the loop appends the reply right after ``history``
        calls = [prepared.declarations.decode_call(c) for c in turn.calls]
        programs = {cid: pid for cid, caller in turn.callers.items()
                    if (pid := program_caller({"caller": caller}, self.adapter.api)) is not None}
        self.programs.update(programs)
        return Message(role="assistant", text=turn.text, calls=calls, programs=programs)


class WithToolSearch:
    """A pipeline that also answers ``tool_search`` calls (see module docstring).

    Args:
        pipeline: runs every other call (``run_batch``; its ``event_log`` is exposed).
        index: the search index over the registry.
        state: the conversation's deferred-loading state (rebuild it with
            :func:`~host.agent.providers.deferred.deferred_state` when resuming).
        visible: the caller's permission predicate for search hits.
    """

    def __init__(
        self,
        pipeline: Any,
        index: SearchIndex,
        state: DeferredLoadingState,
        *,
        visible: Callable[[ToolRecord], bool] | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.index = index
        self.state = state
        self.visible = visible

    @property
    def event_log(self) -> Any:
        return self.pipeline.event_log

    async def run_batch(self, calls: Sequence[ToolCall], ctx: CallContext) -> list[ToolResult]:
        """One result per call, in call order; search calls never reach the pipeline."""
        others = [c for c in calls if c.name != TOOL_SEARCH_NAME]
        ran = iter(await self.pipeline.run_batch(others, ctx) if others else [])
        out: list[ToolResult] = []
        for call in calls:
            if call.name == TOOL_SEARCH_NAME:
                out.append(run_tool_search(call, self.index, self.state, visible=self.visible))
            else:
                out.append(next(ran))
        return out
