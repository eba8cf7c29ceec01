"""Rendering helpers shared by the adapters: call/result pairing, wire ids, result text.

Pairing (bug cases BR-01, BR-02): each assistant turn's calls are paired with the results that
follow it by call id, in call order, one slot per call. Duplicate ids (two calls sharing
``call_X`` in one turn, or ``list_dir:0`` reused in a later turn) are renamed deterministically on
the wire by :func:`host.agent.transcript.rename_duplicate_ids` (after ``sanitize``): the first
keeps its id, later ones get ``_dup1``, ``_dup2``…, and each result follows its call's new id.
A call with no recorded result gets a ``not_executed`` error result, so every call id sent has
exactly one result; a result whose call is not in the previous assistant turn raises
:class:`~host.agent.providers.errors.HistoryError`. (That result is built here, not with
``host.pipeline.results.error_result``: it carries no text block, so :func:`result_text` renders
its error line once.)

Result text (BR-17, BR-19): failures carry their error text; media never becomes base64 text.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from host.calls import AudioBlock, ErrorInfo, ImageBlock, ResourceBlock, ResultStatus, TextBlock, ToolCall, ToolResult
from host.agent.transcript import rename_duplicate_ids
from host.agent.providers.arguments import parse_arguments_object
from host.agent.providers.base import AssistantTurn, Conversation, ResultsTurn, UserTurn
from host.agent.providers.errors import HistoryError
from registry.naming import MAX_NAME_CHARS, is_valid_name, sanitize_part

__all__ = [
    "ANTHROPIC_IMAGE_TYPES",
    "PairedCall",
    "Segment",
    "arguments_object",
    "arguments_text",
    "data_url",
    "media_note",
    "pair_conversation",
    "result_text",
    "sanitize_anthropic_id",
    "wire_name",
]

ANTHROPIC_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""Image media types the Anthropic and OpenAI image inputs accept."""

_ANTHROPIC_ID = re.compile(r"[^a-zA-Z0-9_-]")


def wire_name(name: str) -> str:
    """A tool name every API accepts (``^[a-zA-Z0-9_-]{1,64}$``, BR-14), for replayed history.

    Valid names (every qualified name) are unchanged; others (``calendar.respondToEvent``, a
    68-character name) get illegal characters replaced by ``_`` and, when too long, are cut and
    given ``_`` + 8 hex digits of their sha256, deterministically.
    """
    if is_valid_name(name):
        return name
    out = sanitize_part(name)
    if len(out) > MAX_NAME_CHARS:
        out = out[: MAX_NAME_CHARS - 9] + "_" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return out


def sanitize_anthropic_id(call_id: str) -> str:
    """A ``tool_use.id`` Anthropic accepts (``^[a-zA-Z0-9_-]+$``): other characters become ``_``."""
    return _ANTHROPIC_ID.sub("_", call_id) or "call"


def arguments_object(call: ToolCall) -> dict[str, Any]:
    """The call's arguments as an object for history (BR-06): ``""``/non-object text → ``{}``."""
    if call.arguments is not None:
        return dict(call.arguments)
    parsed = parse_arguments_object(call.raw_arguments)
    return parsed if parsed is not None else {}


def arguments_text(call: ToolCall) -> str:
    """Argument text for OpenAI history: the raw text when it is a JSON object, else ``{}``-based."""
    text = call.raw_arguments
    if text.strip() and parse_arguments_object(text) is not None:
        return text
    return json.dumps(arguments_object(call), ensure_ascii=False, separators=(",", ":"))


def data_url(block: ImageBlock) -> str:
    return f"data:{block.mime_type};base64,{block.data}"


def _decoded_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=")


def media_note(block: Any, *, attached: bool) -> str:
    """One short line standing in for a non-text block inside text (size in decoded bytes)."""
    if isinstance(block, ImageBlock):
        size = _decoded_size(block.data)
        where = "attached in the next user message" if attached else "not shown (this model takes no images here)"
        return f"[image {block.mime_type}, ~{size} bytes: {where}]"
    if isinstance(block, AudioBlock):
        return f"[audio {block.mime_type}, ~{_decoded_size(block.data)} bytes: not shown (audio is not supported here)]"
    if isinstance(block, ResourceBlock):
        return resource_note(block)
    return "[unsupported content]"


def resource_note(block: ResourceBlock) -> str:
    """A resource as text: link ``[resource URI (NAME)]``; embedded text in full after
    a ``[resource URI (MIME)]`` line; an embedded blob as ``[resource URI (MIME), ~N bytes, binary, not shown]``."""
    mime = f" ({block.mime_type})" if block.mime_type else ""
    if not block.embedded:
        label = f" ({block.name})" if block.name else ""
        return f"[resource {block.uri}{label}]"
    if block.text is not None:
        return f"[resource {block.uri}{mime}]\n{block.text}"
    return f"[resource {block.uri}{mime}, ~{_decoded_size(block.blob or '')} bytes, binary, not shown]"


def error_line(error: ErrorInfo | None, status: ResultStatus) -> str:
    if error is None:
        return f"Error ({status.value})."
    return f"Error ({error.code}): {error.message}"


def result_text(
    result: ToolResult, *, image_note: Callable[[ImageBlock], str] | None = None, include_media_notes: bool = True
) -> str:
    """All of a result as text: text blocks, notes for media, the error line for failures.

    Args:
        image_note: text for each image block (default :func:`media_note` "not shown").
        include_media_notes: ``False`` leaves media out entirely (when sent as blocks).
    """
    lines: list[str] = []
    has_text = any(isinstance(b, TextBlock) for b in result.content)
    if result.is_error and result.status is not ResultStatus.TOOL_ERROR and not has_text:
        # Pipeline errors already carry "<status>: <message>" as text; say it once.
        lines.append(error_line(result.error, result.status))
    for block in result.content:
        if isinstance(block, TextBlock):
            lines.append(block.text)
        elif not include_media_notes:
            continue
        elif isinstance(block, ImageBlock) and image_note is not None:
            note = image_note(block)
            if note:  # "" leaves the image out of the text (sent as a block beside it)
                lines.append(note)
        else:
            lines.append(media_note(block, attached=False))
    if not result.content and result.structured is not None:
        lines.append(json.dumps(result.structured, ensure_ascii=False))
    if result.status is ResultStatus.TOOL_ERROR and not any(isinstance(b, TextBlock) for b in result.content):
        lines.append(error_line(result.error, result.status))
    text = "\n".join(lines)
    return text if text else "(no output)"


@dataclass
class PairedCall:
    """One call slot: the call, its id on the wire, and its result (paired, in call order)."""

    call: ToolCall
    wire_id: str
    result: ToolResult


@dataclass
class Segment:
    """A rendering unit: a user turn, or an assistant turn with its paired results."""

    turn_index: int
    user: UserTurn | None = None
    assistant: AssistantTurn | None = None
    pairs: list[PairedCall] | None = None

    def wire_id(self, call_position: int) -> str:
        return self.pairs[call_position].wire_id if self.pairs else ""


def _missing_result(call: ToolCall) -> ToolResult:
    return ToolResult(
        call_id=call.call_id,
        name=call.name,
        status=ResultStatus.NOT_EXECUTED,
        error=ErrorInfo(
            code=ResultStatus.NOT_EXECUTED.value,
            where="history",
            message="No result was recorded for this call; it was not executed.",
        ),
    )


def pair_conversation(
    conversation: Conversation, api: str, *, sanitize: Callable[[str], str] | None = None
) -> list[Segment]:
    """Split a conversation into segments with every call paired to exactly one result.

    Args:
        api: target API name (for error messages).
        sanitize: maps a provider call id to one the target API accepts.

    Raises:
        HistoryError: a results turn does not follow an assistant turn, or holds a result whose
            call id is not among that turn's calls (or more results than calls with that id).
    """
    segments: list[Segment] = []
    used: set[str] = set()
    turns = conversation.turns
    i = 0
    while i < len(turns):
        turn = turns[i]
        if isinstance(turn, UserTurn):
            segments.append(Segment(turn_index=i, user=turn))
            i += 1
            continue
        if isinstance(turn, ResultsTurn):
            raise HistoryError(api, i, "tool results without a preceding assistant turn; drop or re-pair them")
        results: list[tuple[int, ToolResult]] = []
        j = i + 1
        while j < len(turns) and isinstance(turns[j], ResultsTurn):
            results.extend((j, r) for r in turns[j].results)
            j += 1
        pairs: list[PairedCall] = []
        taken = [False] * len(results)
        on_wire = turn.calls
        if sanitize:
            on_wire = [c.model_copy(update={"call_id": sanitize(c.call_id)}) for c in turn.calls]
        wire_ids = [c.call_id for c in rename_duplicate_ids(on_wire, used)]
        for call, wire in zip(turn.calls, wire_ids, strict=True):
            found = None
            for k, (_, res) in enumerate(results):
                if not taken[k] and res.call_id == call.call_id:
                    taken[k] = True
                    found = res
                    break
            pairs.append(PairedCall(call=call, wire_id=wire, result=found or _missing_result(call)))
        for k, (turn_at, res) in enumerate(results):
            if not taken[k]:
                raise HistoryError(
                    api,
                    turn_at,
                    f"result for call id {res.call_id!r} has no matching call in the "
                    "previous assistant turn; every result must answer one call",
                )
        segments.append(Segment(turn_index=i, assistant=turn, pairs=pairs))
        i = j
    return segments
