"""Which caller a stateless request belongs to, and per-caller state that expires.

A 2026-07-28 exchange carries no connection state (sessions were removed: SEP-2567, "Sessionless
MCP via Explicit State Handles"); handshake-era requests without a connection object (none reach
the gateway today) are treated the same way (:attr:`servers.gateway.request_view.RequestView.stateless`).
The gateway then keys what it remembers between requests (a search trail for the usage memory, a
session-taint session) by the caller:

``caller:<user>:<key id or ->`` plus ``:<value>`` when the request's ``_meta`` carries
:data:`SESSION_META_KEY` (a string the client picks per conversation, at most
:data:`MAX_SESSION_CHARS` characters). Without an API key and without that meta key, every
unauthenticated stateless client is one caller (:attr:`CallerScope.shared`).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from registry import Principal
from servers.gateway.request_view import RequestView

__all__ = ["MAX_SESSION_CHARS", "SESSION_META_KEY", "CallerScope", "ExpiringStates", "caller_scope"]

SESSION_META_KEY = "toolhost/session"
"""The request ``_meta`` key a stateless client may set to scope its conversation (any string)."""
MAX_SESSION_CHARS = 200


@dataclass(frozen=True)
class CallerScope:
    """The key of one stateless caller, and whether unrelated clients share it."""

    key: str
    shared: bool
    """No API key and no :data:`SESSION_META_KEY`: every unauthenticated stateless client."""


def caller_scope(request: RequestView, principal: Principal) -> CallerScope:
    """The scope of ``request`` made by ``principal`` (module docstring)."""
    session = request.meta.get(SESSION_META_KEY)
    base = f"caller:{principal.user}:{principal.key_id or '-'}"
    if isinstance(session, str) and session.strip():
        return CallerScope(f"{base}:{session.strip()[:MAX_SESSION_CHARS]}", shared=False)
    return CallerScope(base, shared=principal.key_id is None)


T = TypeVar("T")


class ExpiringStates(Generic[T]):
    """At most ``size`` states by key, each dropped ``ttl_seconds`` after its last use (least
    recently used first when full); ``on_drop(key)`` is told of every state dropped.

    ``clock`` is monotonic seconds."""

    def __init__(self, make: Callable[[], T], *, ttl_seconds: float, size: int = 4096,
                 on_drop: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._make, self.ttl_seconds, self.size = make, ttl_seconds, size
        self._on_drop, self._clock = on_drop, clock
        self._states: OrderedDict[str, tuple[T, float]] = OrderedDict()

    def get(self, key: str) -> T:
        """The live state of ``key`` (a new one after expiry), marked as used now."""
        now = self._clock()
        self._expire(now)
        entry = self._states.pop(key, None)
        state = entry[0] if entry is not None else self._make()
        self._states[key] = (state, now)
        while len(self._states) > self.size:
            self._drop(next(iter(self._states)))
        return state

    def drop(self, key: str) -> bool:
        """Forget ``key`` now; whether it was held."""
        if key not in self._states:
            return False
        self._drop(key)
        return True

    def keys(self) -> list[str]:
        """The live keys, least recently used first."""
        self._expire(self._clock())
        return list(self._states)

    def _expire(self, now: float) -> None:
        while self._states:
            key, (_state, seen) = next(iter(self._states.items()))
            if now - seen < self.ttl_seconds:
                return
            self._drop(key)

    def _drop(self, key: str) -> None:
        self._states.pop(key, None)
        if self._on_drop is not None:
            self._on_drop(key)
