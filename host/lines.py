"""Newline-delimited messages out of a byte stream, in linear time and with a size limit.

The stdio transport of MCP (spec 2025-06-18 and later, "Transports", stdio) delimits messages by
newlines. Both ends of toolhost that read such a stream (``serve --stdio`` reading its client,
:mod:`servers.stdio.wire`; toolhost reading an upstream server's stdout,
:mod:`host.upstream.stdio_pipe`) split it with :class:`LineFramer`:

* each chunk is scanned once (a line arriving in many chunks is joined once, when it ends), so a
  48 MB line costs what 48 MB of short lines cost instead of growing quadratically;
* a line longer than ``limit`` bytes is not kept: once it passes the limit its bytes are dropped
  up to the next newline, keeping only its first and last :data:`EDGE_BYTES`; when it ends the
  framer yields one :class:`LineTooLong` (its size and those edges, to find the request it answers:
  the Python SDK writes a reply's id first, the TypeScript SDK last). A peer that never sends a
  newline cannot make toolhost hold more than ``limit`` bytes for it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EDGE_BYTES", "LineFramer", "LineTooLong"]

EDGE_BYTES = 512
"""How many first and last bytes of a too-long line :class:`LineTooLong` keeps."""


@dataclass(frozen=True, slots=True)
class LineTooLong:
    """A line that passed the framer's limit (dropped).

    Attributes:
        size: its length in bytes (without the newline; at least ``limit + 1``).
        limit: the framer's limit in bytes.
        head: its first bytes (at most :data:`EDGE_BYTES`).
        tail: its last bytes (at most :data:`EDGE_BYTES`; a ``\r`` before the newline is kept).
    """

    size: int
    limit: int
    head: bytes
    tail: bytes


class LineFramer:
    """Splits a byte stream into lines (without the ``\\n``; a ``\\r`` before it is kept).

    Args:
        limit: the largest line kept, in bytes (without the newline); must be positive.

    Raises:
        ValueError: ``limit`` is not positive.
    """

    def __init__(self, limit: int) -> None:
        if limit <= 0:
            raise ValueError(f"LineFramer limit must be a positive number of bytes, got {limit!r}")
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._skipping = False  # inside a too-long line: only its edges are kept
        self._head = b""
        self._tail = b""

    def feed(self, chunk: bytes) -> list[bytes | LineTooLong]:
        """The lines (and :class:`LineTooLong` markers) that ``chunk`` completes, in stream order."""
        out: list[bytes | LineTooLong] = []
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            self._take(chunk[start:end], out, ended=True)
            start = end + 1
        if start < len(chunk):
            self._take(chunk[start:], out, ended=False)
        return out

    def finish(self) -> list[bytes | LineTooLong]:
        """At the end of the stream: the last line if it had no newline (empty list otherwise)."""
        out: list[bytes | LineTooLong] = []
        if self._skipping:
            out.append(self._too_long())
        elif self._parts:
            out.append(b"".join(self._parts))
        self._parts, self._size, self._skipping = [], 0, False
        return out

    def _take(self, piece: bytes, out: list[bytes | LineTooLong], *, ended: bool) -> None:
        size = self._size + len(piece)
        if not self._skipping and size > self.limit:  # the line passes the limit: keep its edges only
            joined = b"".join(self._parts)
            self._head, self._tail = joined[:EDGE_BYTES], joined[-EDGE_BYTES:]
            self._parts, self._skipping = [], True
        if self._skipping:
            self._size = size
            if len(self._head) < EDGE_BYTES:
                self._head += piece[: EDGE_BYTES - len(self._head)]
            self._tail = (self._tail + piece[-EDGE_BYTES:])[-EDGE_BYTES:]
            if ended:
                out.append(self._too_long())
                self._size, self._skipping = 0, False
            return
        if ended:
            if self._parts:
                self._parts.append(piece)
                piece = b"".join(self._parts)
                self._parts, self._size = [], 0
            out.append(piece)
        elif piece:
            self._parts.append(piece)
            self._size = size

    def _too_long(self) -> LineTooLong:
        return LineTooLong(self._size, self.limit, self._head, self._tail)
