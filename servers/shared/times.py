"""How a time is shown to an operator (CLI tables and console pages alike)."""

from __future__ import annotations

import datetime as dt

__all__ = ["when"]


def when(ts: float | None) -> str:
    """A UNIX time as ``YYYY-mm-dd HH:MM:SSZ`` (``-`` for none)."""
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
