"""Newline-delimited messages out of a byte stream, in linear time and with a size limit.

The stdio transport of MCP (spec 2025-06-18 and later, "Transports", stdio) delimits messages by
newlines. Both ends of toolhost that read such a stream (``serve --stdio`` reading its client,
:mod:`servers.stdio_wire`; toolhost reading an upstream server's stdout,
:mod:`host.upstream.stdio_pipe`) split it with :class:`LineFramer`:

* each chunk is scanned once (a line arriving in many chunks is joined once, when it ends), so a
  48 MB line costs what 48 MB of short lines cost instead of growing quadratically;
* a line longer than ``limit`` bytes is not kept: as soon as it passes the limit the framer yields
  one :class:`LineTooLong` (its size so far and its first bytes, to find the request it answers)
  and drops the rest of it up to the next newline, so a peer that never sends a newline cannot
  make toolhost hold more than ``limit`` bytes for it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HEAD_BYTES", "LineFramer", "LineTooLong"]

HEAD_BYTES = 512
"""How many first bytes of a too-long line :class:`LineTooLong` keeps."""


@dataclass(frozen=True, slots=True)
class LineTooLong:
    """A line that passed the framer's limit (dropped).

    Attributes:
        size: its bytes seen when it passed the limit (at least ``limit + 1``).
        limit: the framer's limit in bytes.
        head: its first bytes (at most :data:`HEAD_BYTES`).
    """

    size: int
    limit: int
    head: bytes


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
        self._skipping = False

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
        if self._parts:
            out.append(b"".join(self._parts))
        self._parts, self._size, self._skipping = [], 0, False
        return out

    def _take(self, piece: bytes, out: list[bytes | LineTooLong], *, ended: bool) -> None:
        if self._skipping:  # the rest of a line already reported as too long
            if ended:
                self._skipping = False
            return
        size = self._size + len(piece)
        if size > self.limit:
            head = b"".join(self._parts)[:HEAD_BYTES] if self._parts else b""
            if len(head) < HEAD_BYTES:
                head += piece[: HEAD_BYTES - len(head)]
            out.append(LineTooLong(size, self.limit, head))
            self._parts, self._size, self._skipping = [], 0, not ended
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
