"""The seam between the call pipeline and MCP connections.

The pipeline executes a call through a :class:`ToolExecutor`; the connection manager
(:class:`host.upstream.manager.ServerManager`) is the production implementation, and tests may use
an in-memory one built on the SDK's in-process transport.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from mcp.types import CallToolResult

__all__ = ["ProgressCallback", "ToolExecutor"]

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
