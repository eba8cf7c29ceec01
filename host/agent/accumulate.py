"""Accumulate streamed tool-call arguments into complete :class:`~host.calls.ToolCall` objects.

One accumulator per model response (a *batch*). Provider adapters map their stream events:

* OpenAI Chat Completions: first ``delta.tool_calls[i]`` carrying ``id``/``function.name`` →
  :meth:`ArgumentAccumulator.start`; ``function.arguments`` pieces → :meth:`feed`;
  ``finish_reason`` → :meth:`finish_all`.
* OpenAI Responses: ``response.output_item.added`` (function_call) → ``start``;
  ``response.function_call_arguments.delta`` → ``feed``; ``...arguments.done`` → ``finish``.
* Anthropic Messages: ``content_block_start`` (tool_use) → ``start``; ``input_json_delta`` →
  ``feed``; ``content_block_stop`` → ``finish``.

Guarantees (parallel streamed calls never mix; a UTF-8 character split across chunks survives):

* Fragments are keyed by call index and/or call id, so parallel calls that interleave never mix.
  A call id wins over an index when both are given, so providers that send several calls at the
  same index with different ids still give separate calls, provided each is started.
* Nothing is parsed here (but to recognise a repeat, below): :meth:`calls` returns ``arguments=None``
  and the exact ``raw_arguments``.
* ``bytes`` fragments go through an incremental UTF-8 decoder, so a character split across
  chunks survives byte-identical; invalid UTF-8 is transport corruption and raises
  :class:`~host.pipeline.errors.InvalidEncoding` at ``finish``.
* Batch order is the provider's index when every call has one, else start order.
* A fragment that repeats the call's whole arguments so far, when those already are one complete
  JSON value, is not appended (some OpenAI-compatible servers end a stream with such a chunk;
  appending it would make the arguments invalid JSON).
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass, field

from host.calls import ToolCall
from host.pipeline.errors import AccumulatorError, CallAlreadyFinished, DuplicateCall, UnknownCall

__all__ = ["ArgumentAccumulator", "InvalidEncoding"]


class InvalidEncoding(AccumulatorError):
    """The bytes of a call's arguments are not valid UTF-8 (the stream is corrupt)."""

    def __init__(self, *, index: int | None, call_id: str | None, detail: str) -> None:
        super().__init__(f"argument bytes are not valid UTF-8 ({detail})", index=index, call_id=call_id,
                         event="finish")


@dataclass
class _Slot:
    seq: int
    index: int | None
    call_id: str | None
    name: str = ""
    parts: list[str] = field(default_factory=list)
    decoder: codecs.IncrementalDecoder | None = None
    finished: bool = False
    text: str | None = None
    length: int = 0  # characters in parts


class ArgumentAccumulator:
    """Collects the tool calls of one streamed model response (see module docstring)."""

    def __init__(self) -> None:
        self._slots: list[_Slot] = []
        self._by_index: dict[int, _Slot] = {}
        self._by_id: dict[str, _Slot] = {}

    # -- events ---------------------------------------------------------------------------
    def start(self, *, index: int | None = None, call_id: str | None = None, name: str | None = None) -> None:
        """A call begins. Needs an ``index`` or a ``call_id``.

        Raises:
            DuplicateCall: a call with this ``call_id`` was already started, or this ``index``
                is taken by a call without id (or the same id).
        """
        if index is None and call_id is None:
            raise AccumulatorError("start() needs an index or a call id", index=None, call_id=None, event="start")
        if call_id is not None and call_id in self._by_id:
            raise DuplicateCall(index=index, call_id=call_id)
        if index is not None and index in self._by_index:
            prior = self._by_index[index]
            if call_id is None or prior.call_id is None:
                raise DuplicateCall(index=index, call_id=call_id)
        slot = _Slot(seq=len(self._slots), index=index, call_id=call_id, name=name or "")
        self._slots.append(slot)
        if index is not None:
            self._by_index[index] = slot  # a later call at the same index (new id) takes the index over
        if call_id is not None:
            self._by_id[call_id] = slot

    def _find(self, index: int | None, call_id: str | None, event: str) -> _Slot:
        slot = None
        if call_id is not None:
            slot = self._by_id.get(call_id)
            if slot is None and index is not None:
                by_index = self._by_index.get(index)
                if by_index is not None and by_index.call_id is None:
                    slot = by_index  # id arrives after the start event (it carried only an index)
                    slot.call_id = call_id
                    self._by_id[call_id] = slot
        elif index is not None:
            slot = self._by_index.get(index)
        if slot is None:
            raise UnknownCall(index=index, call_id=call_id, event=event)
        return slot

    def feed(self, fragment: str | bytes, *, index: int | None = None, call_id: str | None = None) -> None:
        """Append an argument fragment (``str`` as is; ``bytes`` through an incremental UTF-8 decoder).

        Raises:
            UnknownCall: no call was started with this key.
            CallAlreadyFinished: the call was already finished.
        """
        slot = self._find(index, call_id, "feed")
        if slot.finished:
            raise CallAlreadyFinished(index=index, call_id=call_id, event="feed")
        if isinstance(fragment, bytes | bytearray | memoryview):
            if slot.decoder is None:
                slot.decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
            try:
                piece = slot.decoder.decode(bytes(fragment), final=False)
            except UnicodeDecodeError as exc:
                raise InvalidEncoding(index=index, call_id=call_id, detail=str(exc)) from exc
        else:
            if slot.decoder is not None and slot.decoder.getstate()[0]:
                raise InvalidEncoding(index=index, call_id=call_id,
                                      detail="a text fragment arrived in the middle of a multi-byte character")
            piece = fragment
        if piece and len(piece) == slot.length and _repeats_complete(slot.parts, piece):
            return  # a trailing chunk repeating the whole arguments (some servers send one): not appended
        slot.parts.append(piece)
        slot.length += len(piece)

    def set_name(self, name: str, *, index: int | None = None, call_id: str | None = None) -> None:
        """Set (replace) the tool name of a started call."""
        slot = self._find(index, call_id, "set_name")
        if slot.finished:
            raise CallAlreadyFinished(index=index, call_id=call_id, event="set_name")
        slot.name = name

    def append_name(self, fragment: str, *, index: int | None = None, call_id: str | None = None) -> None:
        """Append to the tool name (for providers that stream the name in pieces)."""
        slot = self._find(index, call_id, "set_name")
        if slot.finished:
            raise CallAlreadyFinished(index=index, call_id=call_id, event="set_name")
        slot.name += fragment

    def finish(self, *, index: int | None = None, call_id: str | None = None) -> None:
        """That call is complete (idempotent).

        Raises:
            UnknownCall: no call was started with this key.
            InvalidEncoding: its bytes end inside a character or are not UTF-8.
        """
        slot = self._find(index, call_id, "finish")
        self._close(slot)

    def _close(self, slot: _Slot) -> None:
        if slot.finished:
            return
        if slot.decoder is not None:
            try:
                slot.parts.append(slot.decoder.decode(b"", final=True))
            except UnicodeDecodeError as exc:
                raise InvalidEncoding(index=slot.index, call_id=slot.call_id, detail=str(exc)) from exc
        slot.text = "".join(slot.parts)
        slot.parts = []
        slot.length = 0
        slot.finished = True

    def finish_all(self) -> None:
        """The response stopped: every started call is complete."""
        for slot in self._slots:
            self._close(slot)

    # -- reading --------------------------------------------------------------------------
    @property
    def pending(self) -> int:
        """Number of started calls not yet finished."""
        return sum(1 for s in self._slots if not s.finished)

    def calls(self) -> list[ToolCall]:
        """Completed calls in batch order: ``raw_arguments`` set, ``arguments`` ``None``.

        A call without a provider id gets ``toolhost_call_<position>`` (unique in the batch).
        Unfinished calls are not included (call :meth:`finish_all` first).
        """
        done = [s for s in self._slots if s.finished]
        if all(s.index is not None for s in done):
            done.sort(key=lambda s: (s.index, s.seq))
        taken = {s.call_id for s in done if s.call_id is not None}
        out: list[ToolCall] = []
        for pos, slot in enumerate(done):
            call_id = slot.call_id
            if call_id is None:
                call_id = f"toolhost_call_{pos}"
                n = 0
                while call_id in taken:
                    n += 1
                    call_id = f"toolhost_call_{pos}_{n}"
                taken.add(call_id)
            out.append(ToolCall(call_id=call_id, name=slot.name, raw_arguments=slot.text or "", index=pos))
        return out


def _repeats_complete(parts: list[str], piece: str) -> bool:
    """Whether ``piece`` equals the text of ``parts`` and that text is already one complete JSON
    value (so appending it again could only make the arguments invalid)."""
    text = "".join(parts)
    if text != piece:
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
