"""The ``subscriptions/listen`` stream of one 2026-07-28 upstream session, with resource subscriptions.

On 2026-07-28 there is no ``resources/subscribe`` (nor a standing GET stream): a client opens a
``subscriptions/listen`` request whose response is the event stream, and its filter - list
changes and the resource URIs to watch - is fixed for that stream. :class:`UpstreamListener`
keeps the set of URIs toolhost's clients subscribed to on this upstream and re-opens the stream
whenever the set changes (the SDK's events are level triggers, "no replay: re-listen and
refetch", so a client may read a resource once more than needed but misses no change after its
subscribe returned). The set survives reconnects: a new session listens for the same URIs.

Source: MCP 2026-07-28 draft, basic/utilities/subscriptions (SEP-2575).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import MCPError
from mcp.shared.subscriptions import ServerEvent
from mcp.types import INTERNAL_ERROR

__all__ = ["UpstreamListener"]


class UpstreamListener:
    """Owns one upstream's listen stream (module docstring).

    Args:
        server: the upstream's config name (for messages).
        on_event: ``await on_event(event)`` for each event (list changes, ``ResourceUpdated``).
        on_open: called each time a stream is acknowledged: events are not replayed, so a change
            made before the ack (e.g. during a call that raced the listen request) is only seen
            by refetching (the SDK's "re-listen and refetch").
    """

    def __init__(
        self,
        server: str,
        on_event: Callable[[ServerEvent], Awaitable[None]],
        on_open: Callable[[], None] | None = None,
    ) -> None:
        self.server = server
        self.on_event = on_event
        self.on_open = on_open
        self._uris: set[str] = set()
        self._generation = 0
        self._acked = -1
        self._honored: frozenset[str] = frozenset()
        self._failure: str | None = None
        self._changed = anyio.Event()
        self._ack = anyio.Event()

    @property
    def subscriptions(self) -> frozenset[str]:
        """The original resource URIs watched now."""
        return frozenset(self._uris)

    async def run(self, client: Any) -> None:
        """Listen on ``client`` (a 2026-07-28 SDK ``Client``) until cancelled, re-opening on changes."""
        caps = client.server_capabilities
        while True:
            self._changed = anyio.Event()
            generation, uris = self._generation, sorted(self._uris)
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._stream, client, caps, generation, uris)
                await self._changed.wait()
                tg.cancel_scope.cancel()

    async def _stream(self, client: Any, caps: Any, generation: int, uris: list[str]) -> None:
        try:
            async with client.listen(
                tools_list_changed=True,
                prompts_list_changed=caps is not None and caps.prompts is not None,
                resources_list_changed=caps is not None and caps.resources is not None,
                resource_subscriptions=uris,
            ) as sub:
                self._settle(generation, frozenset(sub.honored.resource_subscriptions or ()), None)
                if self.on_open is not None:
                    self.on_open()
                async for event in sub:
                    await self.on_event(event)
        except Exception as err:  # noqa: BLE001 - listening is best effort; calls still work
            message = err.message if isinstance(err, MCPError) else str(err)
            self._settle(generation, frozenset(), f"{type(err).__name__}: {message or err}")

    def _settle(self, generation: int, honored: frozenset[str], failure: str | None) -> None:
        if generation >= self._acked:
            self._acked, self._honored, self._failure = generation, honored, failure
        ack, self._ack = self._ack, anyio.Event()
        ack.set()

    async def _apply(self, timeout_seconds: float) -> None:
        self._generation += 1
        target = self._generation
        self._changed.set()
        with anyio.fail_after(timeout_seconds):
            while self._acked < target:
                await self._ack.wait()

    async def subscribe(self, uri: str, *, timeout_seconds: float) -> None:
        """Watch ``uri`` (original URI); returns once the upstream acknowledged the new stream.

        Raises:
            MCPError: ``-32603`` when the upstream does not serve ``subscriptions/listen`` or did
                not honor the URI (the message says which).
            TimeoutError: no acknowledgement within ``timeout_seconds``.
        """
        self._uris.add(uri)
        await self._apply(timeout_seconds)
        if self._failure is not None:
            self._uris.discard(uri)
            raise MCPError(INTERNAL_ERROR, f"{self.server!r} cannot watch resources: subscriptions/listen "
                           f"failed ({self._failure})")
        if uri not in self._honored:
            self._uris.discard(uri)
            raise MCPError(INTERNAL_ERROR, f"{self.server!r} did not accept a subscription to {uri}")

    async def unsubscribe(self, uri: str, *, timeout_seconds: float) -> None:
        """Stop watching ``uri`` (a URI not watched is fine)."""
        if uri in self._uris:
            self._uris.discard(uri)
            await self._apply(timeout_seconds)
