"""Storm control for ``notifications/tools/list_changed`` (a flood of them while nothing changes).

An upstream may announce "my tools changed" hundreds of times a second. :class:`RelistGate`
coalesces the announcements: at most one re-list in flight per server, at least
``min_interval_seconds`` between the starts of two re-lists, and a trailing re-list when
announcements arrived while one was running or waiting (so the last change is never missed).
Whether a re-list that changed nothing notifies anyone is decided downstream: the registry
ignores an identical listing (no version bump, no listeners, so no client notification and no
audit row).
"""

from __future__ import annotations

import anyio

__all__ = ["RelistGate"]


class RelistGate:
    """Coalesces re-list requests (module docstring). Single event loop; not thread-safe.

    Use: :meth:`request` from notification handlers; the owner loops on
    ``await gate.wait_due()``, performs one re-list, then calls :meth:`finished`.
    """

    def __init__(self, min_interval_seconds: float = 1.0) -> None:
        self.min_interval_seconds = min_interval_seconds
        self._pending = False
        self._event = anyio.Event()
        self._last_start: float | None = None
        self._running = False
        self.requests = 0
        self.relists = 0

    def request(self) -> None:
        """Note one announcement (cheap; never blocks)."""
        self.requests += 1
        self._pending = True
        self._event.set()

    @property
    def pending(self) -> bool:
        """An announcement arrived that no started re-list has covered yet."""
        return self._pending

    @property
    def idle(self) -> bool:
        """Nothing pending and no re-list running: the last announcement's listing is recorded."""
        return not self._pending and not self._running

    def finished(self) -> None:
        """The re-list that :meth:`wait_due` let start has ended (recorded or failed)."""
        self._running = False

    async def wait_due(self) -> None:
        """Return when a re-list should start now (one is pending and the interval has passed)."""
        while not self._pending:
            await self._event.wait()
            self._event = anyio.Event()
        if self._last_start is not None:
            wait = self._last_start + self.min_interval_seconds - anyio.current_time()
            if wait > 0:
                await anyio.sleep(wait)
        self._pending = False
        self._event = anyio.Event()
        self._last_start = anyio.current_time()
        self._running = True
        self.relists += 1
