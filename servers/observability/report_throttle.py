"""At most one report per key per interval, counting the ones held back (log-flood control)."""

from __future__ import annotations

import time
from collections.abc import Hashable

__all__ = ["ReportThrottle"]


class ReportThrottle:
    """Decides whether a report (a log or stderr line) goes out now.

    Args:
        interval_seconds: least time between two reports of one key (monotonic seconds).
    """

    def __init__(self, interval_seconds: float) -> None:
        self.interval_seconds = interval_seconds
        self._state: dict[Hashable, tuple[float, int]] = {}

    def allow(self, key: Hashable = None) -> int | None:
        """``None``: hold this report back (it is counted). Otherwise report now; the value is how
        many reports of ``key`` were held back since the last one."""
        now = time.monotonic()
        last, held = self._state.get(key, (float("-inf"), 0))
        if now - last < self.interval_seconds:
            self._state[key] = (last, held + 1)
            return None
        self._state[key] = (now, 0)
        return held
