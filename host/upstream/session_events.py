"""What a connected upstream session does besides calls: its background tasks and notifications.

:class:`SessionEvents` is a part of :class:`host.upstream.connection.ServerConnection` (a mixin,
split out by job): re-listing tools after ``tools/list_changed`` (through the storm-control
:class:`~host.upstream.relist.RelistGate`), re-listing prompts/resources after their
``list_changed``, relaying ``resources/updated``, the liveness probes of remote sessions, and
the routing of handshake-era notifications and 2026-07-28 listen events to those. It uses the
connection's ``name``, ``status``, ``log``, ``config``, ``lifecycle``, ``connect_timeout_seconds``,
``on_catalog``, ``on_resource_updated``, ``_client``, ``_relist``, ``_catalog_due`` and its
``_set_state`` / ``_record_tools`` / ``_connection_lost`` methods.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ToolsListChanged
from mcp.types import (
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
    ToolListChangedNotification,
)

from host.upstream.catalog import UpstreamCatalog, list_catalog
from host.upstream.forward_call import describe_exception
from host.upstream.listing import list_all_tools
from host.upstream.liveness import watch_liveness
from host.upstream.status import ConnectionState

__all__ = ["SessionEvents"]


class SessionEvents:
    """Background work and notification routing of a connected session (module docstring)."""

    name: str
    status: Any
    log: Any
    config: Any
    lifecycle: Any
    connect_timeout_seconds: float
    on_catalog: Any
    on_resource_updated: Any
    _client: Client | None
    _relist: Any
    _catalog_due: anyio.Event

    def _set_state(self, state: ConnectionState, detail: str | None = None) -> None:
        raise NotImplementedError

    def _record_tools(self, tools: list[Any], warnings: list[str]) -> None:
        raise NotImplementedError

    def _connection_lost(self, reason: str) -> str | None:
        raise NotImplementedError

    async def _relist_loop(self, client: Client) -> None:
        while True:
            await self._relist.wait_due()
            try:
                await self._relist_once(client)
            finally:
                self._relist.finished()

    async def _relist_once(self, client: Client) -> None:
        try:
            with anyio.fail_after(self.connect_timeout_seconds):
                held: dict[str, str] = {}
                tools, warnings = await list_all_tools(client, self.name, held=held)
        except Exception as err:  # noqa: BLE001 - a failed re-list keeps the last good tools
            self.log.write(f"toolhost: re-list after tools/list_changed failed: {describe_exception(err)}")
            if self.status.state is ConnectionState.CONNECTED:
                self.status.error = f"re-list: {describe_exception(err)}"
                self._set_state(ConnectionState.DEGRADED, self.status.error)
            return
        self.status.held = held
        self._record_tools(tools, warnings)
        if self.status.state is ConnectionState.DEGRADED:
            self.status.error = None
            self._set_state(ConnectionState.CONNECTED)

    async def _catalog_loop(self, client: Client) -> None:
        """Re-list prompts/resources after their ``list_changed`` (bursts coalesce into one listing)."""
        while True:
            await self._catalog_due.wait()
            self._catalog_due = anyio.Event()
            await self._list_catalog(client)

    async def _list_catalog(self, client: Client) -> None:
        """List prompts/resources/templates (when announced) and report them; never fails the session."""
        if self.on_catalog is None:
            return
        try:
            with anyio.fail_after(self.connect_timeout_seconds):
                catalog = await list_catalog(client)
        except Exception as err:  # noqa: BLE001 - tools stay usable without the catalog
            catalog = UpstreamCatalog(warnings=[f"listing prompts/resources failed: {describe_exception(err)}"])
        self.status.warnings = [w for w in self.status.warnings if not w.startswith("catalog: ")]
        self.status.warnings.extend(f"catalog: {w}" for w in catalog.warnings)
        await self.on_catalog(self.name, catalog)

    async def _resource_updated(self, uri: str) -> None:
        if self.on_resource_updated is not None:
            await self.on_resource_updated(self.name, str(uri))

    async def _ping_loop(self, client: Client) -> None:
        def miss(reason: str) -> None:
            self.log.write(f"toolhost: {reason}")
            self.status.error = f"liveness: {reason}"
            self._set_state(ConnectionState.DEGRADED, reason)

        def recovered() -> None:
            self.status.error = None
            self._set_state(ConnectionState.CONNECTED, "ping answered again")

        def dead(reason: str) -> None:
            self.log.write(f"toolhost: {reason}")
            self._connection_lost(reason)

        await watch_liveness(client, self.lifecycle.ping_interval_seconds, on_miss=miss, on_recovered=recovered,
                             on_dead=dead)

    async def _on_listen_event(self, event: Any) -> None:
        """A 2026-07-28 ``subscriptions/listen`` event (see :class:`host.upstream.listen.UpstreamListener`)."""
        if isinstance(event, ResourceUpdated):
            await self._resource_updated(event.uri)
        elif isinstance(event, (PromptsListChanged, ResourcesListChanged)):
            self._catalog_due.set()
        elif isinstance(event, ToolsListChanged):
            self._relist.request()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, ToolListChangedNotification):
            self._relist.request()
        elif isinstance(message, (PromptListChangedNotification, ResourceListChangedNotification)):
            self._catalog_due.set()
        elif isinstance(message, ResourceUpdatedNotification):
            client = self._client
            if client is not None and client.protocol_version >= "2026":
                return  # the listen stream delivers it (the SDK also hands it to the message handler)
            await self._resource_updated(message.params.uri)
