"""The per-server log file ``<data_dir>/logs/<server>.stderr.log``.

A stdio child's stderr is written to it directly (the child gets the file descriptor); toolhost
appends its own notes about the server — skipped garbage, missed pings, session expiry — as
timestamped lines containing ``toolhost:``. :meth:`ServerLog.tail` returns the child's last lines
of the current attempt (toolhost's notes left out), for connect errors.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import IO

from host.paths import private_opener

__all__ = ["ServerLog"]


class ServerLog:
    """One server's log file (module docstring). Opened per connect attempt, closed after it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[str] | None = None
        self._offset = 0

    def open(self, banner: str | None = None) -> IO[str]:
        """Open for appending; ``banner`` starts a new attempt (the tail starts after it)."""
        # 0600: a server's stderr may carry secrets
        self._fh = open(self.path, "a", encoding="utf-8", errors="replace", opener=private_opener)
        if banner is not None:
            self._fh.write(f"--- toolhost: {banner} at {time.strftime('%Y-%m-%dT%H:%M:%S')} ---\n")
            self._fh.flush()
            self._offset = self.path.stat().st_size
        return self._fh

    def write(self, line: str) -> None:
        """Append one timestamped line (ignored when closed)."""
        fh = self._fh
        if fh is None or fh.closed:
            return
        try:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")
            fh.flush()
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                fh.close()
            except OSError:
                pass

    def tail(self, lines: int) -> str:
        """The child's last ``lines`` lines since the current attempt's banner."""
        try:
            with open(self.path, encoding="utf-8", errors="replace") as fh:
                fh.seek(self._offset)
                text = fh.read()
        except OSError:
            return ""
        kept = [ln for ln in text.strip().splitlines() if " toolhost: " not in ln and not ln.startswith("toolhost: ")]
        return "\n".join(kept[-lines:])
