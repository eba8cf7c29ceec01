"""Test helpers shared across test packages."""

from __future__ import annotations

from typing import Any

from mcp import Client
from mcp.types import CallToolResult

from host.errors import UpstreamUnavailable
from host.upstream.connection import call_client_tool
from host.upstream.executor import ProgressCallback

__all__ = ["InProcessExecutor"]


class InProcessExecutor:
    """ToolExecutor over ``mcp.Client(app)`` connections; SDK errors mapped by production's
    :func:`host.upstream.connection.call_client_tool`."""

    def __init__(self) -> None:
        self.clients: dict[str, Client] = {}
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    async def call_tool(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout_seconds: float,
        progress_callback: ProgressCallback | None = None,
    ) -> CallToolResult:
        client = self.clients.get(server)
        if client is None:
            raise UpstreamUnavailable(server, "not connected")
        self.calls.append((server, tool, arguments))
        return await call_client_tool(
            client, server, tool, arguments, timeout_seconds=timeout_seconds, progress_callback=progress_callback
        )
