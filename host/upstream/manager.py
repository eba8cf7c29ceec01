"""All configured servers, connected concurrently, merged into one :class:`~registry.ToolRegistry`.

Usage::

    async with ServerManager(config, data_dir=path) as manager:   # connects every server
        manager.registry.tools()                                  # merged, namespaced tools
        await manager.call_tool("time", "get_current_time", {"timezone": "UTC"}, timeout_seconds=10)

Entering starts one owner task per server in an anyio task group and waits until every
server has either connected or failed (each bounded by its connect timeout), so one server
that fails to start, hangs in the handshake or exits never blocks or crashes the others.
Exiting stops every connection (stdio children are terminated by the SDK: stdin closed,
then SIGTERM, then SIGKILL).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.types import CallToolResult, Tool

from host.config import HostConfig, ServerConfig
from host.errors import UpstreamUnavailable
from host.upstream.catalog import UpstreamCatalog
from host.upstream.catalog_holds import CatalogHolds
from host.upstream.connection import ConnectionState, ServerConnection, ServerStatus
from host.upstream.executor import ProgressCallback, UnlistedOwner
from host.upstream.status import AVAILABLE_STATES
from host.upstream.tool_records import (
    DefinitionPrescorer,
    records_from_tools,
    tool_definition,
    unmatched_tool_names,
)
from registry import NameConflict, ToolRecord, ToolRegistry
from registry.catalog import Catalog, qualify_uri

__all__ = ["DefinitionPrescorer", "ServerManager", "records_from_tools", "tool_definition", "unmatched_tool_names"]

StatusListener = Callable[[ServerStatus], None]


def _config_failures(config: HostConfig) -> list[ServerStatus]:
    return [
        ServerStatus(name=f.name, transport=f.transport, state=ConnectionState.FAILED, error=f"config: {f.reason}")
        for f in config.failed.values()
    ]


class ServerManager:
    """Connections to every configured server plus the merged registry (see module docstring).

    Implements :class:`host.upstream.executor.ToolExecutor` and
    :class:`host.upstream.executor.UnlistedTools`.

    Args:
        config: the parsed configuration.
        data_dir: toolhost's data folder.
        registry: the registry to fill (a new one by default).
        reconnect: keep reconnecting failed/dropped servers with backoff (``serve``), or try
            each server once (one-shot CLI commands).
        on_status: called whenever a server's status changes (for live displays).
        connect_in_background: entering returns at once and the servers' first connect attempts run
            in the background (a gateway that answers while a slow server starts); otherwise entering
            returns after every first attempt ended. Either way :attr:`first_round` is set once they did.
        prescorer: slow per-definition work (the learned definition scan,
            :class:`host.store.pin_safety.PinSafety`): a listing with definitions it has not scored
            is applied only after :meth:`DefinitionPrescorer.prescore` (in a task, off the event
            loop; never-scanned tools are never in the registry, so never listed or callable).
            ``None``: listings apply at once.
    """

    def __init__(
        self,
        config: HostConfig,
        *,
        data_dir: Path,
        registry: ToolRegistry | None = None,
        reconnect: bool = False,
        on_status: StatusListener | None = None,
        connect_in_background: bool = False,
        prescorer: DefinitionPrescorer | None = None,
    ) -> None:
        self.config = config
        self.connect_in_background = connect_in_background
        self.first_round = anyio.Event()
        """Set once every configured server's first connect attempt ended (connected or failed)."""
        self.data_dir = data_dir
        self.registry = registry if registry is not None else ToolRegistry()
        self.on_status = on_status
        self.catalog = Catalog()
        """Prompts, resources and templates of every server (see :mod:`registry.catalog`)."""
        self.catalog_holds = CatalogHolds(
            lambda s: self.connections[s].config.toolhost.trust_definitions if s in self.connections else ())
        """Poisoned-looking prompts, resources, templates and instructions kept out of :attr:`catalog`."""
        self.catalog_listeners: list[Callable[[str], Awaitable[None]]] = []
        """Called with the server name after its catalog changed (to send list_changed downstream)."""
        self.resource_listeners: list[Callable[[str], Awaitable[None]]] = []
        """Called with the exposed URI when an upstream says a resource was updated."""
        self.reconnect = reconnect
        self.connections: dict[str, ServerConnection] = {
            name: self._connection(server) for name, server in config.servers.items()
        }
        self._config_failures = _config_failures(config)
        self._done: dict[str, anyio.Event] = {}
        self._tg: TaskGroup | None = None
        self.prescorer = prescorer
        self._listing_seq: dict[str, int] = {}
        self._scans = 0  # listings waiting for their pre-scan (their new tools are not in the registry yet)
        self._scans_idle = anyio.Event()
        self._scans_idle.set()

    def _connection(self, server: ServerConfig) -> ServerConnection:
        return ServerConnection(
            server,
            connect_timeout_seconds=self.config.connect_timeout_for(server),
            data_dir=self.data_dir,
            on_tools=self._on_tools,
            reconnect=self.reconnect,
            on_status=self._notify,
            lifecycle=self.config.lifecycle_for(server),
            on_catalog=self._on_catalog,
            on_resource_updated=self._on_resource_updated,
            log_limits=self.config.log_limits(),
        )

    # -- lifecycle ---------------------------------------------------------------------
    async def __aenter__(self) -> ServerManager:
        self._tg = await anyio.create_task_group().__aenter__()
        try:
            if self.connect_in_background:
                self._tg.start_soon(self._first_attempts)
            else:
                await self._first_attempts()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def listings_settled(self) -> None:
        """Return once every server's first connect attempt ended (:attr:`first_round`) and no listing
        waits for its pre-scan any more (the learned definition scan, :attr:`prescorer`): from then on
        the registry holds every tool the first round found."""
        await self.first_round.wait()
        while self._scans:
            await self._scans_idle.wait()

    @property
    def listings_are_settled(self) -> bool:
        """Whether :meth:`listings_settled` would return at once."""
        return self.first_round.is_set() and not self._scans

    async def _first_attempts(self) -> None:
        try:
            async with anyio.create_task_group() as starters:
                for conn in list(self.connections.values()):
                    starters.start_soon(self._start_one, conn)
        finally:
            self.first_round.set()

    async def _start_one(self, conn: ServerConnection) -> None:
        assert self._tg is not None
        done = self._done[conn.name] = anyio.Event()

        async def own(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            try:
                await conn.run(task_status=task_status)
            finally:
                done.set()

        await self._tg.start(own)

    # -- changing the set of servers while running (config reload, restart) -------------
    def use_config(self, config: HostConfig) -> None:
        """Adopt a reloaded configuration for defaults and listings of servers connected from now
        on, and its config failures; connections are changed with :meth:`add_server` /
        :meth:`remove_server`."""
        self.config = config
        self._config_failures = _config_failures(config)

    async def add_server(self, server: ServerConfig) -> None:
        """Connect a new server (returns after its first attempt, like entering).

        Raises:
            ValueError: a server of that name exists, or the manager is not running.
        """
        if self._tg is None:
            raise ValueError("the server manager is not running")
        if server.name in self.connections:
            raise ValueError(f"server {server.name!r} is already configured")
        conn = self.connections[server.name] = self._connection(server)
        await self._start_one(conn)

    def spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``await fn()`` in the manager's task group (it may outlive the request that started it;
        cancelled when the manager closes).

        Raises:
            ValueError: the manager is not running.
        """
        if self._tg is None:
            raise ValueError("the server manager is not running")
        self._tg.start_soon(fn)

    async def remove_server(self, name: str) -> None:
        """Disconnect ``name``, wait for its connection to close, and drop its tools.

        Raises:
            KeyError: no server of that name.
        """
        conn = self.connections.pop(name)
        conn.stop()
        done = self._done.pop(name, None)
        if done is not None:
            await done.wait()
        self.registry.remove_server(name)
        self.catalog_holds.remove_server(name)
        if name in self.catalog.servers():
            self.catalog.remove_server(name)
            for listener in list(self.catalog_listeners):
                await listener(name)

    async def restart_server(self, name: str) -> None:
        """Close and reconnect ``name`` with its current configuration (``KeyError`` if unknown)."""
        server = self.connections[name].config
        await self.remove_server(name)
        await self.add_server(server)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose(exc_type, exc, tb)

    def request_stop(self) -> None:
        """Stop every connection without waiting (safe from a signal handler task): connect
        attempts in progress are abandoned, so entering or exiting returns promptly."""
        for conn in self.connections.values():
            conn.stop()

    async def aclose(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> None:
        """Stop every connection and wait for the owner tasks to finish."""
        self.request_stop()
        tg, self._tg = self._tg, None
        if tg is not None:
            await tg.__aexit__(exc_type, exc, tb)

    # -- registry updates --------------------------------------------------------------
    def _on_tools(self, server: str, tools: list[Tool], warnings: list[str]) -> None:
        conn = self.connections.get(server)
        if conn is None:
            return  # a listing that raced the server's removal
        cfg = conn.config
        self.catalog_holds.screen_instructions(conn.status)  # logged and reported at connect, not first merge
        records = records_from_tools(self.config, cfg, tools)
        warnings.extend(unmatched_tool_names(cfg, tools))
        if tuple(records) == self.registry.by_server(server):
            return  # an identical listing changes nothing: no version bump, no listeners
        seq = self._listing_seq[server] = self._listing_seq.get(server, 0) + 1
        pending = self.prescorer.unscored(records) if self.prescorer is not None and self._tg is not None else []
        if not pending:
            self._apply_listing(server, records, warnings)
            return
        prescorer = self.prescorer
        assert prescorer is not None
        # until the scan ends, a new or changed tool is not in the registry (neither its old nor its
        # new definition is listed or callable); the scanned rest of the listing applies at once
        waiting = {r.qualified_name for r in pending}
        ready = [r for r in records if r.qualified_name not in waiting]
        if tuple(ready) != self.registry.by_server(server):
            self._apply_listing(server, ready, warnings)

        async def scan_then_apply() -> None:
            try:
                await prescorer.prescore(records)
                if self.connections.get(server) is conn and self._listing_seq.get(server) == seq:
                    self._apply_listing(server, records, warnings)  # else a newer listing or a removal won
            finally:
                self._scans -= 1
                if not self._scans:
                    self._scans_idle.set()

        if not self._scans:
            self._scans_idle = anyio.Event()
        self._scans += 1
        self.spawn(scan_then_apply)

    def _apply_listing(self, server: str, records: list[ToolRecord], warnings: list[str]) -> None:
        try:
            self.registry.replace_server(server, records)
        except NameConflict as err:
            warnings.append(str(err))

    async def _on_catalog(self, server: str, listing: UpstreamCatalog) -> None:
        conn = self.connections.get(server)
        if conn is None:
            return  # a listing that raced the server's removal
        cfg = conn.config
        before = self.catalog.servers().get(server)
        listing = self.catalog_holds.screen(server, cfg.prefix, listing, conn.status)
        try:
            after = self.catalog.replace_server(
                server, cfg.prefix, prompts=listing.prompts, resources=listing.resources, templates=listing.templates
            )
        except NameConflict as err:
            self.connections[server].status.warnings.append(f"catalog: {err}")
            return
        if before != after:
            for listener in list(self.catalog_listeners):
                await listener(server)

    async def _on_resource_updated(self, server: str, uri: str) -> None:
        conn = self.connections.get(server)
        if conn is None:
            return
        exposed = qualify_uri(conn.config.prefix, uri)
        for listener in list(self.resource_listeners):
            await listener(exposed)

    def _notify(self, status: ServerStatus) -> None:
        if self.on_status is not None:
            self.on_status(status)

    # -- status ------------------------------------------------------------------------
    def statuses(self) -> list[ServerStatus]:
        """Every server's status: connections in config order, then entries that failed to parse
        (``failed`` with ``error = "config: <path>: <problem>"``)."""
        return [c.status for c in self.connections.values()] + self._config_failures

    def connected(self) -> list[str]:
        """Names of connected servers."""
        return [n for n, c in self.connections.items() if c.status.state is ConnectionState.CONNECTED]

    def available(self, server: str) -> bool:
        """Whether calls to ``server`` are forwarded now (``connected`` or ``degraded``)."""
        conn = self.connections.get(server)
        return conn is not None and conn.status.state in AVAILABLE_STATES

    def unavailable_servers(self) -> frozenset[str]:
        """Servers whose tools are registered but cannot be called right now."""
        return frozenset(n for n, c in self.connections.items() if c.status.state not in AVAILABLE_STATES)

    def unlisted_owner(self, name: str) -> UnlistedOwner | None:
        """The down server without registered tools whose prefix ``name`` carries (see
        :class:`host.upstream.executor.UnlistedTools`): a connection that never listed (e.g. its
        command is missing), or an entry the config could not use (e.g. an unset variable)."""
        prefix, sep, rest = name.partition("__")
        if not sep or not prefix or not rest:
            return None
        for conn in self.connections.values():
            status = conn.status
            if status.state in AVAILABLE_STATES or conn.config.prefix != prefix:
                continue
            if self.registry.by_server(conn.name):
                return None  # its tools are registered: the pipeline answers for them
            return UnlistedOwner(conn.name, status.error or f"the server is {status.state.value}")
        for failed in self.config.failed.values():
            if failed.prefix == prefix and failed.name not in self.connections:
                return UnlistedOwner(failed.name, f"config: {failed.reason}")
        return None

    # -- ToolExecutor ------------------------------------------------------------------
    async def call_tool(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout_seconds: float,
        progress_callback: ProgressCallback | None = None,
    ) -> CallToolResult:
        """Call ``tool`` (original name) on ``server``; see :class:`host.upstream.executor.ToolExecutor`.

        Raises:
            UpstreamUnavailable: unknown or disconnected server (at once, no waiting).
            CallTimeout: no answer within ``timeout_seconds`` (cancelled upstream).
            UpstreamError: the server answered with a JSON-RPC error.
        """
        conn = self.connections.get(server)
        if conn is None:
            raise UpstreamUnavailable(server, "no such server in the configuration")
        return await conn.call_tool(
            tool, arguments, timeout_seconds=timeout_seconds, progress_callback=progress_callback
        )

    # -- prompts, resources, completion (see host.upstream.forward) --------------------
    def connection(self, server: str) -> ServerConnection:
        """The connection of ``server``.

        Raises:
            UpstreamUnavailable: no such server in the configuration.
        """
        conn = self.connections.get(server)
        if conn is None:
            raise UpstreamUnavailable(server, "no such server in the configuration")
        return conn

    def request_timeout(self, server: str) -> float:
        """Budget for one prompt/resource/completion request to ``server`` (seconds)."""
        cfg = self.config.servers[server]
        return cfg.toolhost.timeout_seconds or self.config.defaults.timeout_seconds
