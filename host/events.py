"""Append-only JSONL event log, one file per conversation, with secret redaction and replay.

File: ``<root>/<safe conversation id>.jsonl``; one JSON object per line::

    {"v": 1, "seq": 0, "ts": "2026-11-30T01:02:03.456789+00:00", "conversation_id": "c1",
     "kind": "message", "adapter": "openai-chat", "data": {...}}

Kinds written by toolhost:

* ``message``: a message appended to the model-visible history (``data.message``, a
  :class:`~host.agent.transcript.Message` dump);
* ``transform``: the history was rewritten on purpose (``data.op`` = ``trim`` / ``repair`` /
  ``compact``; ``data.messages`` is the complete new history), never a silent rewrite;
* ``request``: a model request (``data``: model, tool names, ``history_len``);
* ``call``: a tool call (``raw_arguments`` and parsed ``arguments`` kept apart);
* ``decision``: the policy decision for a call; ``result``: a tool result; ``error``: a
  fatal error or a stop of the loop.

Redaction (before anything is written): values under keys that name a secret (``token``,
``secret``, ``password``, ``api_key``, ``authorization``, ``cookie``, ``private_key``…; see
:data:`SECRET_KEY`) become ``"[REDACTED]"``, and bearer/basic credentials and well-known key
formats inside any string are masked. A message event changed by redaction is marked
``"redacted": true``; :func:`EventLog.rebuild_history` is byte-identical to the live history
for every conversation without secrets, and reports the redacted messages otherwise.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from host.agent.transcript import Message
from host.paths import safe_file_name
from registry.redaction import REDACTED, SECRET_KEY, redact

__all__ = ["FORMAT_VERSION", "REDACTED", "SECRET_KEY", "EventLog", "ReplayResult", "redact"]

FORMAT_VERSION = 1
"""Version of the event format (``v`` of every line)."""

_MAX_PENDING = 256
"""Queued events (:meth:`EventLog.defer`) that make an append write them at once."""
_logger = logging.getLogger(__name__)
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
"""``json.dumps`` with the event line's options, built once (``dumps`` builds an encoder per call
when given options)."""


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None

class ReplayResult:
    """Outcome of :meth:`EventLog.rebuild_history`.

    Attributes:
        messages: the rebuilt model-visible history.
        redacted_indexes: positions of messages whose event was changed by redaction (their
            bytes differ from what the model saw).
        transforms: the ``transform`` events applied, in order.
    """

    def __init__(self, messages: list[Message], redacted_indexes: list[int], transforms: list[dict[str, Any]]):
        self.messages = messages
        self.redacted_indexes = redacted_indexes
        self.transforms = transforms

    @property
    def exact(self) -> bool:
        """True when no message was redacted: the history is byte-identical to the live one."""
        return not self.redacted_indexes


class EventLog:
    """Append-only JSONL event log per conversation under ``root`` (created on first write).

    Thread-safe for appends from one process; each line is one ``write`` on an ``O_APPEND``
    descriptor (kept open for up to ``max_open_files`` conversations, least recently used closed).
    """

    def __init__(self, root: Path, *, redact_secrets: bool = True, max_open_files: int = 32) -> None:
        self.root = Path(root)
        self.redact_secrets = redact_secrets
        self.max_open_files = max_open_files
        self._seq: dict[str, int] = {}
        self._fds: dict[str, int] = {}
        self._paths: dict[str, Path] = {}  # safe_file_name is not free; it runs 3x per tool call
        self._root_made = False
        self._lock = threading.Lock()
        self._pending: list[tuple[str, str, dict[str, Any], str | None, float]] = []
        self._defer_loop: asyncio.AbstractEventLoop | None = None
        self._defer_within = 0.05
        self._timer: asyncio.TimerHandle | None = None

    def path_for(self, conversation_id: str) -> Path:
        """The JSONL file of ``conversation_id``."""
        path = self._paths.get(conversation_id)
        if path is None:
            if len(self._paths) >= 1024:
                self._paths.clear()
            path = self._paths[conversation_id] = self.root / f"{safe_file_name(conversation_id)}.jsonl"
        return path

    def _next_seq(self, conversation_id: str, path: Path) -> int:
        seq = self._seq.get(conversation_id)
        if seq is None:
            seq = sum(1 for _ in path.open("rb")) if path.exists() else 0
        self._seq[conversation_id] = seq + 1
        return seq

    def append(
        self, conversation_id: str, kind: str, data: dict[str, Any], *, adapter: str | None = None
    ) -> dict | None:
        """Redact and append one event; returns the event as written.

        Deferred (:meth:`defer`) and called on the deferring event loop: the event is queued with its
        time stamp and written (redacted) at the next :meth:`flush`; returns ``None``.
        """
        ts = time.time()  # formatted when written (datetime.isoformat costs ~2 us)
        loop = self._defer_loop
        if loop is not None:
            if _running_loop() is loop:
                with self._lock:
                    self._pending.append((conversation_id, kind, data, adapter, ts))
                    many = len(self._pending) >= _MAX_PENDING
                if many:
                    self.flush()
                elif self._timer is None:
                    self._timer = loop.call_later(self._defer_within, self._timed_flush)
                return None
            self.flush()  # another thread: what the loop queued goes first, order holds
        with self._lock:
            return self._write([(conversation_id, kind, data, adapter, ts)])[0]

    def defer(self, *, within: float = 0.05) -> None:
        """Queue appends made on the running event loop; write them at :meth:`flush` or ``within`` s.

        ``toolhost serve`` calls :meth:`flush` right after each answer is handed to the socket
        (``servers.http.lean_entry``) or the stdout pipe (``servers.stdio.wire``), so redacting and
        writing a call's three events (~7% of serve's CPU per call, py-spy) no longer delays the
        answer. Nothing is lost on shutdown:
        :meth:`close` and :meth:`events` flush first, and at most ``_MAX_PENDING`` events wait. A
        crash (SIGKILL) may lose the events of the answers of its last loop turn (at most
        ``within`` s); the audit log, which must be complete, is committed before each answer.
        Appends from other threads are written at once (after what is queued).
        """
        self._defer_loop = asyncio.get_running_loop()
        self._defer_within = within

    def _timed_flush(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Write the queued events (:meth:`defer`) in order; a failing write is logged, never raised."""
        if not self._pending:
            return
        if self._timer is not None and _running_loop() is self._defer_loop:
            self._timer.cancel()
            self._timer = None
        with self._lock:
            pending, self._pending = self._pending, []
            # one conversation's failure (its file cannot be opened, an entry cannot be encoded)
            # never costs the other conversations' queued events
            runs: dict[str, list[tuple[str, str, dict[str, Any], str | None, float]]] = {}
            for entry in pending:
                runs.setdefault(entry[0], []).append(entry)
            for run in runs.values():
                try:
                    self._write(run)
                except Exception:  # noqa: BLE001 - the log is a record, not a reason to fail a call
                    _logger.exception("toolhost: could not write %d event(s) of one conversation", len(run))

    def _write(self, entries: list[tuple[str, str, dict[str, Any], str | None, float]]) -> list[dict]:
        """Redact and write ``entries`` (under ``self._lock``): one ``write`` per run of one conversation."""
        if not self._root_made:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._root_made = True
        written: list[dict] = []
        lines: list[str] = []
        current: str | None = None
        for conversation_id, kind, data, adapter, ts in entries:
            if conversation_id != current and lines:
                self._emit(current, lines)  # type: ignore[arg-type]
                lines = []
            current = conversation_id
            clean = redact(data) if self.redact_secrets else data
            stamp = _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).isoformat()
            event = {"v": FORMAT_VERSION, "seq": 0, "ts": stamp, "conversation_id": conversation_id, "kind": kind,
                     "adapter": adapter, "data": clean}
            if kind in ("message", "transform") and clean != data:
                event["redacted"] = True
            event["seq"] = self._next_seq(conversation_id, self.path_for(conversation_id))
            lines.append(_ENCODE(event) + "\n")
            written.append(event)
        if lines:
            self._emit(current, lines)  # type: ignore[arg-type]
        return written

    def _emit(self, conversation_id: str, lines: list[str]) -> None:
        fd = self._fd(conversation_id, self.path_for(conversation_id))
        os.write(fd, "".join(lines).encode("utf-8", "surrogatepass"))

    def _fd(self, conversation_id: str, path: Path) -> int:
        fd = self._fds.pop(conversation_id, None)
        if fd is None:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                os.write(fd, b"\n")  # a crash tore the last line: end it, so the next event starts cleanly
            if len(self._fds) >= self.max_open_files:
                os.close(self._fds.pop(next(iter(self._fds))))
        self._fds[conversation_id] = fd  # most recently used last
        return fd

    def close(self) -> None:
        """Write what is queued, then close the cached file descriptors (appends reopen them as needed).
        Appends after ``close`` are written at once (deferring ends here)."""
        self.flush()
        self._defer_loop = None
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()

    def __del__(self) -> None:
        for fd in getattr(self, "_fds", {}).values():
            try:
                os.close(fd)
            except OSError:
                pass

    # -- history helpers ----------------------------------------------------------------------
    def record_message(self, conversation_id: str, message: Message, *, adapter: str | None = None) -> None:
        """Append ``message`` to the conversation's model-visible history."""
        self.append(conversation_id, "message", {"message": message.model_dump(mode="json")}, adapter=adapter)

    def record_transform(
        self, conversation_id: str, op: str, messages: list[Message], *, note: str = "", adapter: str | None = None
    ) -> None:
        """Record that the history was replaced by ``messages`` (trim, repair, compaction)."""
        self.append(conversation_id, "transform",
                    {"op": op, "note": note, "messages": [m.model_dump(mode="json") for m in messages]},
                    adapter=adapter)

    def events(self, conversation_id: str) -> Iterator[dict[str, Any]]:
        """Every event of the conversation, in order (a torn last line is skipped)."""
        self.flush()
        path = self.path_for(conversation_id)
        if not path.exists():
            return
        with path.open(encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                if not line.endswith("\n"):
                    break  # a crash mid-write: the last line is incomplete
                try:
                    yield json.loads(line)
                except ValueError:
                    continue  # a line torn by a crash (and ended by a later append): skipped

    def rebuild_history(self, conversation_id: str) -> ReplayResult:
        """The model-visible history from ``message`` and ``transform`` events alone."""
        messages: list[Message] = []
        redacted: list[int] = []
        transforms: list[dict[str, Any]] = []
        for ev in self.events(conversation_id):
            if ev["kind"] == "message":
                if ev.get("redacted"):
                    redacted.append(len(messages))
                messages.append(Message.model_validate(ev["data"]["message"]))
            elif ev["kind"] == "transform":
                messages = [Message.model_validate(m) for m in ev["data"]["messages"]]
                redacted = list(range(len(messages))) if ev.get("redacted") else []
                transforms.append({"op": ev["data"]["op"], "seq": ev["seq"]})
        return ReplayResult(messages, redacted, transforms)
