"""The loop driver: model turn → tool calls through the pipeline → results → next turn.

:func:`run_conversation` stops on the first of: a final answer (a turn without tool calls),
``max_turns`` model turns, the total ``time_budget_seconds``, ``max_consecutive_failed_calls``
failed calls in a row (any non-``ok`` status), or a cancel of ``ctx.cancel``; it returns why.

History rules: duplicate call ids are renamed before execution (``X_dup1``, BR-02); the
assistant message written to history always carries an object (unparsable arguments are
written back as ``{}``, BR-06), and every call gets its result message right after, in call
order. With an event log, every message is recorded so the history can be rebuilt; to resume a
crashed conversation, rebuild it from the log, :func:`~host.pipeline.repair_transcript` it (the
repair is recorded as a ``transform``) and call :func:`run_conversation` again.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

import anyio

from host.agent.transcript import Message, rename_duplicate_ids
from host.calls import ToolCall
from host.pipeline.context import CallContext
from host.pipeline.pipeline import Pipeline
from registry.validation import parse_arguments

__all__ = ["LoopOutcome", "ModelCallable", "StopReason", "normalize_for_history", "run_conversation"]

ModelCallable = Callable[[list[Message]], Awaitable[Message]]
"""``async model(history) -> assistant Message`` (an adapter around a provider, or the fake)."""


class StopReason(str, enum.Enum):
    FINAL_ANSWER = "final_answer"
    MAX_TURNS = "max_turns"
    TIME_BUDGET = "time_budget"
    MAX_CONSECUTIVE_FAILURES = "max_consecutive_failures"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class LoopOutcome:
    """Why and where the loop stopped.

    Attributes:
        stop_reason: see :class:`StopReason`.
        messages: the full history (input history plus everything appended).
        turns: model turns made.
        consecutive_failures: failed calls in a row at the end.
    """

    stop_reason: StopReason
    messages: list[Message]
    turns: int
    consecutive_failures: int

    @property
    def final_text(self) -> str:
        """Text of the last assistant message ("" if none)."""
        for m in reversed(self.messages):
            if m.role == "assistant":
                return m.text
        return ""


def normalize_for_history(calls: list[ToolCall]) -> list[ToolCall]:
    """Calls as written to history: parsed object arguments; unparsable ones become ``{}``/``"{}"``."""
    out = []
    for pos, c in enumerate(calls):
        parsed = c.arguments if c.arguments is not None else parse_arguments(c.raw_arguments)
        if isinstance(parsed, dict):
            raw = c.raw_arguments if c.raw_arguments.strip() else "{}"
            out.append(c.model_copy(update={"arguments": parsed, "raw_arguments": raw, "index": pos}))
        else:
            out.append(c.model_copy(update={"arguments": {}, "raw_arguments": "{}", "index": pos}))
    return out


async def run_conversation(
    model: ModelCallable,
    pipeline: Pipeline,
    history: list[Message],
    ctx: CallContext,
    *,
    max_turns: int = 20,
    time_budget_seconds: float | None = None,
    max_consecutive_failed_calls: int = 5,
) -> LoopOutcome:
    """Run the conversation until an exit condition (module docstring). ``history`` is not mutated.

    Raises whatever the model raises (an adapter error ends the turn) and
    :class:`~host.pipeline.errors.PipelineFatal`.
    """
    if time_budget_seconds is not None:
        deadline = anyio.current_time() + time_budget_seconds
        if ctx.deadline is None or deadline < ctx.deadline:
            ctx = replace(ctx, deadline=deadline)
    log = pipeline.event_log
    messages = list(history)
    if log is not None:
        # A new conversation logs its starting history; a resumed one logs nothing when the
        # log already holds exactly this history, else records the replacement as a transform.
        logged = log.rebuild_history(ctx.conversation_id).messages
        if not logged:
            for m in messages:
                log.record_message(ctx.conversation_id, m, adapter=ctx.adapter)
        elif logged != messages:
            log.record_transform(ctx.conversation_id, "resume", messages, adapter=ctx.adapter,
                                 note="history given to run_conversation differs from the log")
    taken = {c.call_id for m in messages for c in m.calls}
    failures = 0
    turns = 0

    def done(reason: StopReason) -> LoopOutcome:
        if log is not None:
            log.append(ctx.conversation_id, "error" if reason is not StopReason.FINAL_ANSWER else "stop",
                       {"stop_reason": reason.value, "turns": turns}, adapter=ctx.adapter)
        return LoopOutcome(reason, messages, turns, failures)

    def append(m: Message) -> None:
        messages.append(m)
        if log is not None:
            log.record_message(ctx.conversation_id, m, adapter=ctx.adapter)

    while True:
        if ctx.cancel is not None and ctx.cancel.cancelled:
            return done(StopReason.CANCELLED)
        if turns >= max_turns:
            return done(StopReason.MAX_TURNS)
        remaining = ctx.remaining_seconds()
        if remaining is not None and remaining <= 0:
            return done(StopReason.TIME_BUDGET)
        reply: Message | None = None
        with anyio.move_on_after(remaining if remaining is not None else float("inf")):
            if log is not None:
                log.append(ctx.conversation_id, "request", {"history_len": len(messages), "turn": turns},
                           adapter=ctx.adapter)
            reply = await model(list(messages))
        if reply is None:
            return done(StopReason.TIME_BUDGET)
        turns += 1
        raw_calls = rename_duplicate_ids(reply.calls, taken)
        append(reply.model_copy(update={"calls": normalize_for_history(raw_calls)}))
        if not raw_calls:
            return done(StopReason.FINAL_ANSWER)
        results = await pipeline.run_batch(raw_calls, ctx)
        for res in results:
            append(Message(role="tool", result=res))
            failures = failures + 1 if res.is_error else 0
        if ctx.cancel is not None and ctx.cancel.cancelled:
            return done(StopReason.CANCELLED)
        if failures >= max_consecutive_failed_calls:
            return done(StopReason.MAX_CONSECUTIVE_FAILURES)
