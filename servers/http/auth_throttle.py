"""Failed authentications throttled per client (ASGI middleware).

A client (its IP address) that keeps sending bad credentials would otherwise cost a key
derivation per request and slow every other user down. :class:`AuthFailureThrottle` watches the
answers: every ``401`` (an invalid, revoked or missing API key on ``/mcp``, the admin API, the
metrics, a failed console log-in) takes one token from that client's bucket of
:data:`FAILURE_BURST` tokens, refilled at :data:`FAILURES_PER_SECOND`. While the bucket is empty,
that client's requests are answered ``429 Too Many Requests`` with ``Retry-After`` (seconds, RFC
9110 §10.2.3) before any credential is checked; other clients are untouched, and a client that
stops failing gets its tokens back. At most :data:`MAX_CLIENTS` buckets are kept (full ones are
forgotten first). Clients behind one address (NAT) share a bucket.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

__all__ = ["FAILURES_PER_SECOND", "FAILURE_BURST", "MAX_CLIENTS", "AuthFailureThrottle"]

FAILURE_BURST = 20
"""Failed authentications a client may make at once before it is throttled."""

FAILURES_PER_SECOND = 2.0
"""Failed authentications per second a client may keep making (the bucket's refill rate)."""

MAX_CLIENTS = 10_000
"""Buckets kept at most (an attacker with many addresses cannot grow memory without bound)."""


class AuthFailureThrottle:
    """Wraps an ASGI app (module docstring). ``clock``: monotonic seconds (tests may pass their own)."""

    def __init__(self, app: Any, *, burst: int = FAILURE_BURST, per_second: float = FAILURES_PER_SECOND,
                 max_clients: int = MAX_CLIENTS, clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.burst, self.per_second, self.max_clients, self.clock = float(burst), per_second, max_clients, clock
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, at)

    def _tokens(self, client: str, now: float) -> float:
        tokens, at = self._buckets.get(client, (self.burst, now))
        return min(self.burst, tokens + (now - at) * self.per_second)

    def retry_after(self, client: str) -> float:
        """Seconds until ``client`` may try again (``0``: now)."""
        if client not in self._buckets:
            return 0.0
        tokens = self._tokens(client, self.clock())
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.per_second

    def failed(self, client: str) -> None:
        """Count one failed authentication of ``client``."""
        now = self.clock()
        tokens = self._tokens(client, now)
        if client not in self._buckets and len(self._buckets) >= self.max_clients:
            self._forget(now)
        self._buckets[client] = (max(0.0, tokens - 1.0), now)

    def _forget(self, now: float) -> None:
        full = [c for c in self._buckets if self._tokens(c, now) >= self.burst]
        for c in full or sorted(self._buckets, key=lambda c: self._buckets[c][1])[: max(1, self.max_clients // 10)]:
            del self._buckets[c]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = (scope.get("client") or ("?", 0))[0]
        wait = self.retry_after(client)
        if wait > 0:
            await _too_many(send, math.ceil(wait))
            return

        async def watch(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 401:
                self.failed(client)
            await send(message)

        await self.app(scope, receive, watch)


async def _too_many(send: Any, seconds: int) -> None:
    body = json.dumps({"error": {"code": "too_many_failed_authentications", "message": (
        f"too many failed authentications from this address; retry after {seconds} s with a valid "
        "API key")}}).encode()
    await send({"type": "http.response.start", "status": 429, "headers": [
        (b"content-type", b"application/json"), (b"retry-after", str(seconds).encode()),
        (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
