"""The seam between the call pipeline and MCP connections.

The pipeline executes a call through a :class:`ToolExecutor`; the connection manager
(:class:`host.upstream.manager.ServerManager`) is the production implementation, and tests may use
an in-memory one built on the SDK's in-process transport.

A name the registry does not hold may still belong to a configured server that never listed its
tools (it failed to start, or its entry could not be used): :class:`UnlistedTools` answers which
one, so the call gets ``upstream_unavailable`` with that server's reason instead of ``unknown_tool``
(the manager implements it; an executor without servers need not).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mcp.types import CallToolResult

__all__ = ["ProgressCallback", "ToolExecutor", "UnlistedOwner", "UnlistedTools"]

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]
"""``async cb(progress, total, message)`` — MCP progress notification fields."""


@runtime_checkable
class ToolExecutor(Protocol):
    """Runs one ``tools/call`` on a named upstream server."""

    async def call_tool(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout_seconds: float,
        progress_callback: ProgressCallback | None = None,
    ) -> CallToolResult:
        """Call ``tool`` (its original name) on ``server`` and return the MCP result as received.

        A result with ``is_error=True`` is returned, not raised.

        Raises:
            host.errors.UpstreamUnavailable: the server is not connected (raised at once).
            host.errors.CallTimeout: no answer within ``timeout_seconds``; the request was
                cancelled upstream (the SDK sends ``notifications/cancelled``).
            host.errors.UpstreamError: the server answered with a JSON-RPC error.
        """
        ...


@dataclass(frozen=True)
class UnlistedOwner:
    """The configured server a qualified name would belong to, though none of its tools are listed.

    Attributes:
        server: the server's config name.
        reason: why it has no tools, as its status says it (``"<stage>: <reason>"``, e.g.
            ``"config: mcpServers.docs.env.TOKEN: environment variable TOKEN is not set (...)"``).
    """

    server: str
    reason: str


@runtime_checkable
class UnlistedTools(Protocol):
    """Which configured server that has listed no tools owns a name (by its namespace prefix)."""

    def unlisted_owner(self, name: str) -> UnlistedOwner | None:
        """The server whose prefix ``name`` carries (``prefix__tool``), when that server is down and
        has no tools in the registry; ``None`` otherwise (also for servers without a prefix)."""
        ...
