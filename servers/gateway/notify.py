"""Telling connected clients that the tool list they see may have changed.

When an upstream server connects late, reconnects, or announces ``tools/list_changed``, the
registry changes; clients that list tools directly (``--expose all``, ``always_load`` tools,
deferred loading) should re-list. Handshake-era connections (stdio, stateful streamable HTTP)
get a ``notifications/tools/list_changed`` on their standalone channel; 2026-07-28 clients get it
on their ``subscriptions/listen`` streams (the event is published on :attr:`ToolsChangedNotifier.bus`,
which :class:`servers.gateway.listen_relay.ListenRelay` serves). Changes that arrive together are sent as
one notification.
"""

from __future__ import annotations

import weakref
from typing import Any

import anyio
from mcp.server.connection import Connection
from mcp.server.subscriptions import InMemorySubscriptionBus, SubscriptionBus, ToolsListChanged

from servers.gateway.request_view import RequestView

__all__ = ["ToolsChangedNotifier"]

TOOLS_LIST_CHANGED = "notifications/tools/list_changed"


class ToolsChangedNotifier:
    """Remembers client connections and notifies them after registry changes.

    Use: :meth:`remember` from every request handler, :meth:`changed` as a registry listener,
    and run :meth:`run` in a task group for as long as the server serves.
    """

    def __init__(self, bus: SubscriptionBus | None = None) -> None:
        self.bus: SubscriptionBus = bus if bus is not None else InMemorySubscriptionBus()
        """Where the 2026-07-28 ``ToolsListChanged`` event is published (listen streams)."""
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._dirty = anyio.Event()

    def remember(self, request: RequestView) -> None:
        """Note the request's connection (handshake-era connections only; others are stateless)."""
        if (conn := request.stateful_connection) is not None:
            self._connections.add(conn)

    def changed(self, *_args: Any) -> None:
        """Registry listener (``registry.subscribe(notifier.changed)``): a notification is due."""
        self._dirty.set()

    async def run(self) -> None:
        """Send one notification to every remembered connection per burst of changes (forever)."""
        while True:
            await self._dirty.wait()
            self._dirty = anyio.Event()
            for conn in list(self._connections):
                await conn.notify(TOOLS_LIST_CHANGED, None)  # best effort: never raises
            await self.bus.publish(ToolsListChanged())  # the SDK's bus isolates its listeners
