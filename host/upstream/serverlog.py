"""The per-server log files under ``<data_dir>/logs/``, bounded in size: ``<server>.stderr.log``
(a stdio child's stderr plus toolhost's notes) and ``<server>.log`` (the server's
``notifications/message`` logs, :mod:`host.upstream.relay`).

A stdio child's stderr is read from a pipe and appended here (:meth:`ServerLog.write_bytes`);
toolhost appends its own notes about the server — skipped garbage, missed pings, session expiry —
as timestamped lines containing ``toolhost:``. :meth:`ServerLog.tail` returns the child's last
lines of the current attempt (toolhost's notes left out), for connect errors, reading at most
:data:`TAIL_BYTES` from the end of the file.

Bounds (:class:`LogLimits`, from the config's ``toolhost`` block): each file is rotated when a
write would take it past ``log_max_mib`` (``x.log`` → ``x.log.1`` → … ``x.log.<log_backups>``,
the oldest dropped), so one server's logs never take more than ``(log_backups + 1) ×
log_max_mib`` per file kind; logged notifications are rate limited per server
(``log_notifications_per_second``, bursts up to 10 s worth), the number dropped noted in the log.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from host.paths import PRIVATE_DIR_MODE, private_opener

__all__ = ["TAIL_BYTES", "LogLimits", "NotificationBudget", "RotatingFile", "ServerLog"]

TAIL_BYTES = 64 * 1024
TAIL_LINE_CHARS = 800
"""A stderr line longer than this is shown cut, with its length (a flood stays one readable line)."""
"""Most bytes :meth:`ServerLog.tail` reads (from the end of the file)."""


@dataclass(frozen=True)
class LogLimits:
    """Size caps and rates of a server's log files.

    Attributes:
        max_bytes: largest size of one log file before it is rotated (bytes).
        backups: rotated files kept per log (``x.log.1`` … ``x.log.<backups>``).
        notifications_per_second: logged ``notifications/message`` per second and server
            (bursts up to 10 s worth); the rest are dropped and counted.
    """

    max_bytes: int = 10 * 1024 * 1024
    backups: int = 2
    notifications_per_second: float = 50.0


class RotatingFile:
    """Appends to ``path`` (0600), rotating it when a write would take it past ``limits.max_bytes``.

    Writes never raise: a full disk or a missing folder drops the data (a log is a record, not a
    reason to fail a server). Not thread-safe (used from the event loop).
    """

    def __init__(self, path: Path, limits: LogLimits) -> None:
        self.path = path
        self.limits = limits
        self._fd: int | None = None
        self._size = 0

    @property
    def size(self) -> int:
        """Bytes in the current file (as written through this object)."""
        return self._size

    def write(self, data: bytes) -> bool:
        """Append ``data``; ``True`` when the file was rotated first. A single write larger than
        the cap keeps only its last ``max_bytes`` bytes."""
        if not data:
            return False
        cap = self.limits.max_bytes
        if len(data) > cap:
            data = data[-cap:]
        rotated = False
        try:
            fd = self._open()
            if self._size + len(data) > cap and self._size > 0:
                self._rotate()
                fd = self._open()
                rotated = True
            os.write(fd, data)
            self._size += len(data)
        except OSError:
            pass
        return rotated

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
            self._fd = private_opener(str(self.path), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            self._size = os.fstat(self._fd).st_size
        return self._fd

    def _rotate(self) -> None:
        self.close()
        backups = self.limits.backups
        if backups <= 0:
            self.path.unlink(missing_ok=True)
            return
        for i in range(backups, 0, -1):
            src = self.path if i == 1 else self.path.with_name(f"{self.path.name}.{i - 1}")
            if src.exists():
                os.replace(src, self.path.with_name(f"{self.path.name}.{i}"))

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


class NotificationBudget:
    """A token bucket: ``rate`` per second, up to ``10 × rate`` at once (see :class:`LogLimits`)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.capacity = max(1.0, rate * 10)
        self._tokens = self.capacity
        self._at = time.monotonic()
        self.dropped = 0

    def take(self) -> bool:
        """Whether one more notification may be logged now (else it is counted in ``dropped``)."""
        now = time.monotonic()
        self._tokens = min(self.capacity, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        self.dropped += 1
        return False


class ServerLog:
    """One server's stderr log (module docstring). Opened per connect attempt, closed after it."""

    def __init__(self, path: Path, limits: LogLimits | None = None) -> None:
        self.path = path
        self._file = RotatingFile(path, limits or LogLimits())
        self._open = False
        self._offset = 0

    def open(self, banner: str | None = None) -> None:
        """Open for appending; ``banner`` starts a new attempt (the tail starts after it)."""
        self._open = True
        if banner is not None:
            self._file.write(f"--- toolhost: {banner} at {time.strftime('%Y-%m-%dT%H:%M:%S')} ---\n".encode())
            self._offset = self._file.size

    def write_bytes(self, data: bytes) -> None:
        """Append a chunk of the child's stderr as it came (ignored when closed)."""
        if self._open and self._file.write(data):
            self._offset = 0  # rotated: the attempt goes on in the new file

    def write(self, line: str) -> None:
        """Append one timestamped line (ignored when closed)."""
        if self._open:
            self.write_bytes(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n".encode("utf-8", "replace"))

    def close(self) -> None:
        self._open = False
        self._file.close()

    def tail(self, lines: int) -> str:
        """The child's last ``lines`` lines since the current attempt's banner (reads at most
        :data:`TAIL_BYTES` from the end of the file)."""
        try:
            with open(self.path, "rb") as fh:
                end = fh.seek(0, os.SEEK_END)
                start = max(self._offset if self._offset <= end else 0, end - TAIL_BYTES)
                fh.seek(start)
                data = fh.read(end - start)
        except OSError:
            return ""
        text = data.decode("utf-8", "replace")
        got = text.strip().splitlines()
        if start > self._offset and got:
            got = got[1:]  # began mid-line
        kept = [ln for ln in got if " toolhost: " not in ln and not ln.startswith("toolhost: ")]
        return "\n".join(_cut(ln) for ln in kept[-lines:])


def _cut(line: str) -> str:
    return line if len(line) <= TAIL_LINE_CHARS else f"{line[:TAIL_LINE_CHARS]}… ({len(line)} characters)"
