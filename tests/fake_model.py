"""A deterministic scripted model for tests and demos (no network, no randomness).

:class:`ScriptedModel` replays a list of steps, one per model turn. A step is an assistant
:class:`~host.agent.transcript.Message`, a :class:`StreamedTurn` (provider-like stream events
that go through :class:`~host.agent.accumulate.ArgumentAccumulator`, exactly as an adapter
would feed them), or a function ``history -> Message`` for replies that depend on results.
Every history the model was shown is kept in :attr:`ScriptedModel.seen`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from host.agent.accumulate import ArgumentAccumulator
from host.agent.transcript import Message
from host.calls import ToolCall

__all__ = ["ScriptExhausted", "ScriptedModel", "StreamedTurn", "call", "say"]


class ScriptExhausted(RuntimeError):
    """The model was asked for turn N but the script has fewer steps."""

    def __init__(self, turn: int, steps: int) -> None:
        super().__init__(f"scripted model asked for turn {turn} but the script has {steps} steps; add a step")


def say(text: str) -> Message:
    """A final assistant answer without tool calls."""
    return Message(role="assistant", text=text)


def call(name: str, arguments: dict[str, Any] | str = "", *, call_id: str | None = None, text: str = "") -> Message:
    """An assistant turn with one tool call (``arguments`` as dict, or raw text as the model wrote it)."""
    return calls([(name, arguments, call_id)], text=text)


def calls(items: Sequence[tuple[str, dict[str, Any] | str, str | None]], *, text: str = "") -> Message:
    """An assistant turn with several calls ``(name, arguments, call_id or None)``; ids default to ``call_<i>``."""
    out = []
    for i, (name, args, cid) in enumerate(items):
        raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        out.append(ToolCall(call_id=cid or f"call_{i}", name=name, raw_arguments=raw, index=i))
    return Message(role="assistant", text=text, calls=out)


@dataclass
class StreamedTurn:
    """Stream events replayed through an accumulator: ``("start", {...})``, ``("feed", fragment, {...})``,
    ``("name", name, {...})``, ``("finish", {...})``, ``("finish_all",)``; keys in dicts are ``index``/``call_id``/``name``.
    """

    events: list[tuple[Any, ...]]
    text: str = ""

    def build(self) -> Message:
        acc = ArgumentAccumulator()
        for ev in self.events:
            kind = ev[0]
            if kind == "start":
                acc.start(**ev[1])
            elif kind == "feed":
                acc.feed(ev[1], **ev[2])
            elif kind == "name":
                acc.set_name(ev[1], **ev[2])
            elif kind == "finish":
                acc.finish(**ev[1])
            elif kind == "finish_all":
                acc.finish_all()
            else:
                raise ValueError(f"unknown stream event {kind!r}")
        acc.finish_all()
        return Message(role="assistant", text=self.text, calls=acc.calls())


Step = Message | StreamedTurn | Callable[[list[Message]], Message]


@dataclass
class ScriptedModel:
    """Replays ``steps``; ``delay_seconds`` simulates model latency (awaited, cancellable)."""

    steps: list[Step]
    delay_seconds: float = 0.0
    seen: list[list[Message]] = field(default_factory=list)

    async def __call__(self, history: list[Message]) -> Message:
        turn = len(self.seen)
        self.seen.append(list(history))
        if self.delay_seconds:
            await anyio.sleep(self.delay_seconds)
        if turn >= len(self.steps):
            raise ScriptExhausted(turn, len(self.steps))
        step = self.steps[turn]
        if isinstance(step, Message):
            return step
        if isinstance(step, StreamedTurn):
            return step.build()
        return step(list(history))
