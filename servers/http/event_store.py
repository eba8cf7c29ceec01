"""Resumable SSE streams for ``toolhost serve`` (MCP 2025-11-25 transports: resumability, SEP-1699).

With an event store the SDK's streamable-HTTP transport gives every SSE event an id, opens each
POST stream with a *priming* event (id, empty data, ``retry`` = :data:`RETRY_INTERVAL_MS`), and
answers ``GET /mcp`` with ``Last-Event-ID`` by replaying what that stream sent after the id and
then tailing it live. A client whose connection dropped mid-call (proxy timeout, network change)
reconnects and still receives the progress, logs and the result of its call.

Decision: **in memory, one bounded store per HTTP session** (:class:`SessionEventStore`, installed
on each session's transport by :class:`servers.http.sessions.FairSessionManager`), not in the
database. A handshake-era HTTP session lives in one process (its transport, its in-flight
requests and its server→client streams are memory of that replica; the SDK answers 404 for a
session id it does not hold), so replicas need sticky sessions anyway and the events of a session
are only useful where the session is. Per session means an event id from one session can never
replay another session's stream (the SDK's stream ids are JSON-RPC request ids, which repeat
across sessions), and the memory goes with the session (idle expiry, DELETE). 2026-07-28 requests
are stateless and not resumable (the SDK stores no events for them).

Replay hands over to the live tail without a gap. The SDK replays, then (on a resumed stream)
sends a fresh priming event and only then registers the stream for live messages; the priming
send waits for the client, and a message stored in that window was neither replayed nor sent
live (a call's first log line went missing when the client reconnected quickly). Two parts close
it: :meth:`SessionEventStore.replay_events_after` keeps sending until no newer event of the
stream is stored, and :class:`ResumableTransport` sends no priming event on a resumed stream, so
nothing waits between the end of the replay and the registration. (A client that loses a resumed
stream before any event resumes from the id it already has; nothing is lost.)

Bounds: at most :data:`MAX_EVENTS` events and :data:`MAX_BYTES` bytes of messages per session;
the oldest go first. A ``Last-Event-ID`` older than what is kept (or unknown) replays nothing,
and the client falls back to repeating its request.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.streamable_http import (
    EventCallback,
    EventId,
    EventMessage,
    EventStore,
    StreamableHTTPServerTransport,
    StreamId,
)
from mcp.types import JSONRPCError, JSONRPCMessage, JSONRPCResponse

__all__ = ["MAX_BYTES", "MAX_EVENTS", "RETRY_INTERVAL_MS", "ResumableTransport", "SessionEventStore"]

MAX_EVENTS = 1000
"""Most events kept per session (priming events included)."""
MAX_BYTES = 4 * 1024 * 1024
"""Most bytes of JSON messages kept per session."""
RETRY_INTERVAL_MS = 1000
"""The SSE ``retry`` field sent with priming events: how long a client waits before reconnecting (ms)."""


@dataclass(frozen=True)
class _Event:
    number: int
    stream_id: StreamId
    message: JSONRPCMessage | None
    size: int


class SessionEventStore(EventStore):
    """The SDK ``EventStore`` of one HTTP session, bounded (module docstring).

    Event ids are decimal strings counting up from 1 within the session.
    """

    def __init__(self, *, max_events: int = MAX_EVENTS, max_bytes: int = MAX_BYTES) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._events: deque[_Event] = deque()
        self._bytes = 0
        self._next = 0
        self._resumed: StreamId | None = None
        self.on_response: Callable[[StreamId], None] | None = None
        """Told the stream id of every response/error stored (its request is then answered)."""

    @property
    def size(self) -> int:
        """Events kept now. (No ``__len__``: the SDK tests the store for truth, an empty one must count.)"""
        return len(self._events)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        """Keep one event (``message`` ``None``: a priming event); returns its id."""
        self._resumed = None  # any new event ends the replay hand-over (see resumed_just_now)
        if self.on_response is not None and isinstance(message, JSONRPCResponse | JSONRPCError):
            self.on_response(stream_id)
        self._next += 1
        size = 0 if message is None else len(message.model_dump_json(by_alias=True, exclude_none=True))
        self._events.append(_Event(self._next, stream_id, message, size))
        self._bytes += size
        while self._events and (len(self._events) > self.max_events or self._bytes > self.max_bytes):
            self._bytes -= self._events.popleft().size
        return str(self._next)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        """Send the events of ``last_event_id``'s stream that came after it; returns that stream's id,
        or ``None`` when the id is malformed, unknown or no longer kept."""
        try:
            number = int(last_event_id)
        except ValueError:
            return None
        if not self._events or not self._events[0].number <= number <= self._events[-1].number:
            return None
        stream_id = self._events[number - self._events[0].number].stream_id
        sent = number
        while True:  # events stored while a send awaited the client are sent too
            newer = [e for e in self._events if e.number > sent and e.stream_id == stream_id]
            if not newer:
                break
            for event in newer:
                sent = event.number
                if event.message is not None:
                    await send_callback(EventMessage(event.message, str(event.number)))
        self._resumed = stream_id
        return stream_id

    def resumed_just_now(self, stream_id: StreamId) -> bool:
        """Whether ``stream_id`` was replayed and nothing has been stored since (the SDK asks for
        the resumed stream's priming event at exactly that point; :class:`ResumableTransport`)."""
        return self._resumed == stream_id


class ResumableTransport(StreamableHTTPServerTransport):
    """The SDK's transport, minus the priming event on a *resumed* stream (module docstring):
    that send waits for the client while the stream is not yet registered for live messages."""

    async def _mint_priming_event(self, stream_id: StreamId, protocol_version: str) -> Any:
        store = self._event_store
        if isinstance(store, SessionEventStore) and store.resumed_just_now(stream_id):
            return None
        return await super()._mint_priming_event(stream_id, protocol_version)
