"""What one upstream server's connection looks like from outside: its state and status record.

States (a circuit breaker per server; shown by ``toolhost servers`` and the serve console):

* ``pending``: not tried yet;
* ``connecting``: spawning / handshaking / listing;
* ``connected``: serving calls;
* ``degraded``: connected, but the last liveness ping or re-list failed (calls are still
  forwarded; the next failed ping, or a closed transport, takes it down);
* ``backing_off``: down; the next attempt is at :attr:`ServerStatus.next_attempt_at` (calls
  get ``upstream_unavailable`` at once with :attr:`ServerStatus.error`);
* ``failed``: down for good in this run: a configuration problem (fix the config and restart),
  or a one-shot CLI command whose single attempt failed;
* ``stopped``: closed on shutdown.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

__all__ = ["AVAILABLE_STATES", "ConnectionState", "ServerStatus"]


class ConnectionState(str, enum.Enum):
    PENDING = "pending"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    DEGRADED = "degraded"
    BACKING_OFF = "backing_off"
    FAILED = "failed"
    STOPPED = "stopped"


AVAILABLE_STATES = frozenset({ConnectionState.CONNECTED, ConnectionState.DEGRADED})
"""States in which calls are forwarded to the server."""


@dataclass
class ServerStatus:
    """What ``toolhost servers`` shows for one server.

    Attributes:
        name: the server's config name.
        transport: ``stdio``, ``streamable-http`` or ``sse``.
        state: the connection state (module docstring).
        tool_count: tools registered from the last listing.
        error: why the last attempt failed or the connection dropped, as
            ``"<stage>: <reason>"`` (``None`` when connected).
        stderr_tail: last stderr lines of a stdio child at the failure.
        protocol_version: the negotiated MCP protocol version.
        server_info: ``"name version"`` the server reported.
        instructions: the ``instructions`` the server sent at its handshake (``None``: none).
        connect_seconds: duration of the last successful connect + listing.
        warnings: non-fatal problems (repaired or held tools, duplicate names, cursor loops, …).
        held: ``{tool: reason}`` for listed tools held back (invalid definitions).
        next_attempt_at: when ``backing_off``, the wall-clock time (``time.time()``, seconds)
            of the next connect attempt.
        attempts: connect attempts since the last sustained healthy period.
        connected_at: wall-clock time the current session became connected.
        events: the last few state changes, ``"HH:MM:SS state: detail"`` (newest last).
    """

    name: str
    transport: str
    state: ConnectionState = ConnectionState.PENDING
    tool_count: int = 0
    error: str | None = None
    stderr_tail: str = ""
    protocol_version: str | None = None
    server_info: str | None = None
    instructions: str | None = None
    connect_seconds: float | None = None
    warnings: list[str] = field(default_factory=list)
    held: dict[str, str] = field(default_factory=dict)
    next_attempt_at: float | None = None
    attempts: int = 0
    connected_at: float | None = None
    events: list[str] = field(default_factory=list)

    @property
    def available(self) -> bool:
        """Whether calls are forwarded (``connected`` or ``degraded``)."""
        return self.state in AVAILABLE_STATES

    def describe_state(self) -> str:
        """``"backing_off (next attempt in 12 s)"``, ``"failed"``, … for displays."""
        if self.state is ConnectionState.BACKING_OFF and self.next_attempt_at is not None:
            return f"backing_off (next attempt in {max(0.0, self.next_attempt_at - time.time()):.0f} s)"
        return self.state.value

    def record_event(self, text: str, *, keep: int = 20) -> None:
        """Append one event line (bounded to ``keep`` lines)."""
        self.events.append(f"{time.strftime('%H:%M:%S')} {text}")
        del self.events[:-keep]
