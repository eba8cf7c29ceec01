"""Provider-neutral transcript: messages, call/result pairing checks, repair and trimming.

A transcript is a list of :class:`Message`. An ``assistant`` message may carry tool calls; each
call must be answered by exactly one ``tool`` message (carrying a :class:`ToolResult`) placed
after it and before the next ``assistant`` message (what OpenAI, Anthropic and Gemini all
require).

* :func:`check_transcript` lists every pairing problem (:class:`TranscriptIssue`).
* :func:`repair_transcript` fixes them deterministically: duplicate call ids are renamed
  ``X``, ``X_dup1``, ``X_dup2``… (results follow their call in order); missing results become
  ``not_executed`` results; duplicate results and results without a call are dropped; results
  are moved right after their assistant turn, in call order. Every change is reported.
* :func:`trim_history` drops whole units (a user message, or an assistant turn with all its
  results), never half a pair; ``system`` messages are always kept.
* :func:`history_bytes` is the canonical byte form used to compare histories (prefix caches).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from host.calls import ResultStatus, ToolCall, ToolResult
from host.pipeline.results import error_result

__all__ = [
    "Message",
    "RepairReport",
    "TranscriptIssue",
    "check_transcript",
    "history_bytes",
    "rename_duplicate_ids",
    "repair_transcript",
    "split_units",
    "trim_history",
]


class Message(BaseModel):
    """One message of the model-visible history.

    Attributes:
        role: ``system`` | ``user`` | ``assistant`` | ``tool``.
        text: the message text (assistant text may be empty when it only calls tools).
        calls: tool calls of an ``assistant`` message, in the model's order.
        result: the tool result of a ``tool`` message (one message per result).
        programs: of an ``assistant`` message, call id → the program id of each call the
            provider's code runtime made (programmatic tool calling; direct calls are absent), so
            the event log shows which program made which call.
    """

    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant", "tool"]
    text: str = ""
    calls: list[ToolCall] = Field(default_factory=list)
    result: ToolResult | None = None
    programs: dict[str, str] = Field(default_factory=dict)


def history_bytes(messages: Sequence[Message]) -> bytes:
    """Canonical UTF-8 JSON of a history (one line per message): equal bytes ⇔ equal history."""
    return "\n".join(
        json.dumps(m.model_dump(mode="json"), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        for m in messages
    ).encode("utf-8")


@dataclass(frozen=True)
class TranscriptIssue:
    """A pairing problem.

    Attributes:
        kind: ``missing_result`` | ``duplicate_result`` | ``orphan_result`` | ``duplicate_call_id``.
        call_id: the id involved.
        message_index: index of the offending message (the assistant turn for ``missing_result``
            and ``duplicate_call_id``, the tool message otherwise).
    """

    kind: str
    call_id: str
    message_index: int


def _turns(messages: Sequence[Message]) -> list[tuple[int | None, list[int]]]:
    """Segments: (assistant index or None for results before any assistant turn, tool indices)."""
    out: list[tuple[int | None, list[int]]] = []
    current: tuple[int | None, list[int]] | None = None
    for i, m in enumerate(messages):
        if m.role == "assistant":
            current = (i, [])
            out.append(current)
        elif m.role == "tool":
            if current is None:
                current = (None, [])
                out.append(current)
            current[1].append(i)
    return out


def check_transcript(messages: Sequence[Message]) -> list[TranscriptIssue]:
    """Every pairing problem of ``messages`` (empty list: the transcript is well paired)."""
    issues: list[TranscriptIssue] = []
    seen_ids: Counter[str] = Counter()
    for a_idx, tool_idx in _turns(messages):
        calls = messages[a_idx].calls if a_idx is not None else []
        ids = Counter(c.call_id for c in calls)
        for cid in ids:
            if ids[cid] > 1 or seen_ids[cid] > 0:
                issues.append(TranscriptIssue("duplicate_call_id", cid, a_idx if a_idx is not None else -1))
        seen_ids.update(ids)
        answered: Counter[str] = Counter()
        for t in tool_idx:
            res = messages[t].result
            cid = res.call_id if res is not None else ""
            if cid not in ids:
                issues.append(TranscriptIssue("orphan_result", cid, t))
                continue
            answered[cid] += 1
            if answered[cid] > ids[cid]:
                issues.append(TranscriptIssue("duplicate_result", cid, t))
        for cid, n in ids.items():
            if answered[cid] < n:
                issues.append(TranscriptIssue("missing_result", cid, a_idx if a_idx is not None else -1))
    return issues


def rename_duplicate_ids(calls: Sequence[ToolCall], taken: set[str] | None = None) -> list[ToolCall]:
    """Give every call a unique id: the first keeps ``X``, later ones ``X_dup1``, ``X_dup2``…

    ``taken`` holds ids already used earlier in the conversation; it is updated in place.
    """
    used = taken if taken is not None else set()
    out: list[ToolCall] = []
    for call in calls:
        cid = call.call_id
        if cid in used:
            n = 1
            while f"{call.call_id}_dup{n}" in used:
                n += 1
            cid = f"{call.call_id}_dup{n}"
            call = call.model_copy(update={"call_id": cid})
        used.add(cid)
        out.append(call)
    return out


@dataclass(frozen=True)
class RepairReport:
    """What :func:`repair_transcript` changed: ``messages`` plus one line per ``actions`` item."""

    messages: list[Message]
    actions: list[str]


def repair_transcript(messages: Sequence[Message], *, reason: str = "the conversation was interrupted") -> RepairReport:
    """A well-paired copy of ``messages`` (see module docstring); ``reason`` goes into added results."""
    actions: list[str] = []
    out: list[Message] = []
    taken: set[str] = set()
    pending_calls: list[ToolCall] = []
    pending_results: list[list[ToolResult]] = []  # per pending call, the results found

    def close_turn() -> None:
        nonlocal pending_calls, pending_results
        for call, found in zip(pending_calls, pending_results, strict=True):
            if found:
                out.append(Message(role="tool", result=found[0]))
            else:
                actions.append(f"added a not_executed result for call {call.call_id}")
                out.append(Message(role="tool", result=error_result(
                    call, ResultStatus.NOT_EXECUTED, f"no result was recorded for this call ({reason})",
                    where="pair", details={"reason": reason})))
        pending_calls, pending_results = [], []

    # Results of one segment are matched to calls by original id, in order.
    segments = _turns(messages)
    results_of: dict[int, list[int]] = {a: tools for a, tools in segments if a is not None}
    for i, m in enumerate(messages):
        if m.role == "tool":
            continue  # placed by close_turn
        if m.role == "assistant":
            close_turn()
            renamed = rename_duplicate_ids(m.calls, taken)
            for old, new in zip(m.calls, renamed, strict=True):
                if old.call_id != new.call_id:
                    actions.append(f"renamed duplicate call id {old.call_id} to {new.call_id} (message {i})")
            out.append(m.model_copy(update={"calls": renamed}) if renamed != list(m.calls) else m)
            pending_calls = renamed
            pending_results = [[] for _ in renamed]
            # collect this turn's results
            originals = [c.call_id for c in m.calls]
            for t in results_of[i]:
                res = messages[t].result
                if res is None:
                    actions.append(f"dropped a tool message without a result (message {t})")
                    continue
                slots = [k for k, cid in enumerate(originals) if cid == res.call_id and not pending_results[k]]
                if not slots:
                    what = "duplicate result" if res.call_id in originals else "result without a call"
                    actions.append(f"dropped {what} for {res.call_id} (message {t})")
                    continue
                k = slots[0]
                if res.call_id != renamed[k].call_id:
                    res = res.model_copy(update={"call_id": renamed[k].call_id})
                pending_results[k].append(res)
            continue
        if pending_calls:
            close_turn()
        out.append(m)
    close_turn()
    for seg in segments:
        if seg[0] is None:
            for t in seg[1]:
                res = messages[t].result
                actions.append(f"dropped result without a call for {res.call_id if res else '?'} (message {t})")
    return RepairReport(out, actions)


def split_units(messages: Sequence[Message]) -> tuple[list[Message], list[list[Message]]]:
    """``(system messages, units)``: a unit is a user message, or an assistant turn plus its results."""
    system = [m for m in messages if m.role == "system"]
    units: list[list[Message]] = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool" and units and units[-1][0].role == "assistant":
            units[-1].append(m)
        else:
            units.append([m])
    return system, units


def trim_history(
    messages: Sequence[Message],
    budget: int,
    measure: Callable[[Message], int] = lambda m: len(history_bytes([m])),
) -> list[Message]:
    """Drop the oldest whole units until the total ``measure`` fits ``budget``.

    System messages are always kept; the newest unit is always kept (even over budget). The
    kept part starts with a ``user`` message as the APIs expect: when the cut falls after the
    last user message before it, that user message is pinned in front of the kept units.
    """
    system, units = split_units(messages)
    sizes = [sum(measure(m) for m in u) for u in units]
    total = sum(measure(m) for m in system) + sum(sizes)
    start = 0
    pinned: int | None = None
    while start < len(units) - 1 and total > budget:
        total -= sizes[start]
        start += 1
        if pinned is not None and pinned < start:
            pinned = None
        if units[start][0].role != "user":
            if pinned is None:
                prior = [i for i in range(start) if units[i][0].role == "user"]
                if prior:
                    pinned = prior[-1]
                    total += sizes[pinned]
    head = [units[pinned]] if pinned is not None and pinned < start else []
    return [*system, *(m for u in [*head, *units[start:]] for m in u)]
