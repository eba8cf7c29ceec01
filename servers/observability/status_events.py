"""One console line per server state change while ``serve`` runs (connected, degraded,
backing_off with the next attempt time, failed with the reason).

Only changes of state are printed (a re-list that keeps the state prints nothing), so a
crash-looping server shows one line per attempt, not a traceback.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.markup import escape

from host.upstream.status import ConnectionState, ServerStatus

__all__ = ["status_event_printer"]

_STYLE = {
    ConnectionState.CONNECTED: "green",
    ConnectionState.DEGRADED: "yellow",
    ConnectionState.BACKING_OFF: "magenta",
    ConnectionState.FAILED: "red",
}


def status_event_printer(console: Console) -> Callable[[ServerStatus], None]:
    """An ``on_status`` listener printing ``server NAME: STATE — detail`` on each state change."""
    last: dict[str, tuple[ConnectionState, float | None]] = {}

    def on_status(status: ServerStatus) -> None:
        key = (status.state, status.next_attempt_at)
        if last.get(status.name) == key or status.state in (ConnectionState.CONNECTING, ConnectionState.STOPPED):
            last[status.name] = key
            return
        last[status.name] = key
        if status.state is ConnectionState.BACKING_OFF and status.next_attempt_at is None:
            return  # the line with the next attempt time follows at once
        style = _STYLE.get(status.state, "")
        detail = status.error if status.state is not ConnectionState.CONNECTED else f"{status.tool_count} tools"
        text = f"server {escape(status.name)}: [{style}]{escape(status.describe_state())}[/{style}]"
        console.print(text + (f" — {escape(detail)}" if detail else ""), highlight=False, soft_wrap=True)

    return on_status
