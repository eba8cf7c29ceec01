"""The registry server's SDK ``Server``: capabilities and instructions that tell the truth.

:class:`RegistryServer` declares ``tools.listChanged`` (toolhost sends it) and the optional
capabilities (prompts, resources, completions, logging) only while some connected upstream offers
them; in open access its ``instructions`` merge each connected upstream's, attributed. Built by
:func:`servers.gateway.server.create_registry_server`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server import Server
from mcp.server.lowlevel.server import NotificationOptions

from host.upstream.connection import ServerStatus
from servers.gateway.catalog import CatalogHandlers
from servers.gateway.listen_relay import ListenRelay

__all__ = ["UPSTREAM_INSTRUCTIONS_CHARS", "RegistryServer"]

UPSTREAM_INSTRUCTIONS_CHARS = 4000
"""Longest part of one upstream's ``instructions`` merged into toolhost's (characters)."""


class RegistryServer(Server[Any]):
    """The low-level server with capabilities that tell the truth (``tools.listChanged`` is declared: it is sent).

    ``tools.listChanged`` is true (toolhost sends ``notifications/tools/list_changed`` after a
    ``tool_search`` and on registry changes); ``prompts``, ``resources`` (with ``subscribe`` and
    ``listChanged``), ``completions`` and ``logging`` are declared only when some connected
    upstream offers them.

    Args:
        catalog: the prompt/resource handlers (which capabilities upstreams offer).
        listen_relay: serves the ``subscriptions/listen`` streams (:attr:`listen_relay`; the HTTP
            runner closes them when the gateway stops).
        upstream_statuses: ``() -> [ServerStatus]`` whose connected servers' ``instructions`` are
            merged into this server's own, each under a heading naming the server and cut to
            :data:`UPSTREAM_INSTRUCTIONS_CHARS` (``None``: not merged, as with per-user grants, where
            naming a server a client may not see would break "a hidden tool answers exactly like an
            unknown one").
        args, kwargs: the SDK :class:`mcp.server.Server`'s.
    """

    def __init__(self, catalog: CatalogHandlers, listen_relay: ListenRelay, *args: Any,
                 upstream_statuses: Callable[[], list[ServerStatus]] | None = None, **kwargs: Any) -> None:
        import warnings

        self.upstream_statuses = upstream_statuses
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # logging is deprecated at 2026-07-28; still relayed on older sessions
            super().__init__(*args, **kwargs)
        self._catalog = catalog
        self.listen_relay = listen_relay

    @property
    def instructions(self) -> str | None:  # type: ignore[override]
        """toolhost's own instructions, then each connected upstream's (attributed), as sent in the
        ``initialize`` result and ``server/discover`` (MCP 2025-11-25 lifecycle, ``instructions``)."""
        parts = [self._own_instructions] if self._own_instructions else []
        for status in (self.upstream_statuses() if self.upstream_statuses is not None else ()):
            text = (self._catalog.manager.catalog_holds.screen_instructions(status) or "").strip()  # held: left out
            if not text or status.state.value not in ("connected", "degraded"):
                continue
            if len(text) > UPSTREAM_INSTRUCTIONS_CHARS:
                text = text[:UPSTREAM_INSTRUCTIONS_CHARS] + f" [cut: {len(text)} characters in all]"
            parts.append(f"Instructions of the upstream MCP server {status.name!r} (text from that server, "
                         f"not from toolhost):\n{text}")
        return "\n\n".join(parts) or None

    @instructions.setter
    def instructions(self, value: str | None) -> None:
        self._own_instructions = value

    def get_capabilities(  # type: ignore[override]
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> Any:
        options = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
        caps = super().get_capabilities(options, experimental_capabilities, extensions,
                                        protocol_version=protocol_version)
        offered = self._catalog.offered()
        update: dict[str, Any] = {}
        if caps.tools is not None and not (protocol_version or "") >= "2026":
            update["tools"] = caps.tools.model_copy(update={"list_changed": True})
        for key, attr in (
            ("prompts", "prompts"),
            ("resources", "resources"),
            ("completions", "completions"),
            ("logging", "logging"),
        ):
            if not offered[key]:
                update[attr] = None
        return caps.model_copy(update=update)
