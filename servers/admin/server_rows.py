"""One server's status as a JSON row: the one shape of ``GET /admin/api/servers`` and of
``toolhost servers --json`` (answered by a running serve or by the CLI itself)."""

from __future__ import annotations

from typing import Any

from host.upstream.status import ServerStatus

__all__ = ["SERVER_ROW_KEYS", "server_row"]

SERVER_ROW_KEYS = ("name", "transport", "state", "tools", "error", "stderr_tail", "warnings", "protocol_version",
                   "server_info", "connect_seconds", "state_text", "available", "held", "next_attempt_at")


def server_row(s: ServerStatus) -> dict[str, Any]:
    """``s`` as JSON: every key of :data:`SERVER_ROW_KEYS`.

    ``state``: a :class:`host.upstream.status.ConnectionState` value; ``tools``: registered tool
    count; ``connect_seconds``: how long the last connect took (s); ``state_text``: the state for
    people (``backing_off (next attempt in 4 s)``); ``held``: ``{tool: reason}``;
    ``next_attempt_at``: UNIX seconds when backing off, else ``None``."""
    return {
        "name": s.name,
        "transport": s.transport,
        "state": s.state.value,
        "tools": s.tool_count,
        "error": s.error,
        "stderr_tail": s.stderr_tail,
        "warnings": list(s.warnings),
        "protocol_version": s.protocol_version,
        "server_info": s.server_info,
        "connect_seconds": s.connect_seconds,
        "state_text": s.describe_state(),
        "available": s.available,
        "held": dict(s.held),
        "next_attempt_at": s.next_attempt_at,
    }
