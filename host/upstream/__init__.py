"""Upstream MCP servers: one owned connection per configured server, and the manager that merges them.

* :mod:`host.upstream.connection` — :class:`ServerConnection`: transport, handshake, listing,
  reconnects, and forwarding calls to one server;
* :mod:`host.upstream.manager` — :class:`ServerManager`: every connection in one task group,
  merged into one :class:`registry.ToolRegistry`;
* :mod:`host.upstream.executor` — the :class:`ToolExecutor` seam the call pipeline executes through.
"""

from host.upstream.connection import ConnectionState, ServerConnection, ServerStatus, call_client_tool, list_all_tools
from host.upstream.executor import ProgressCallback, ToolExecutor
from host.upstream.manager import ServerManager, records_from_tools, tool_definition, unmatched_tool_names

__all__ = [
    "ConnectionState",
    "ProgressCallback",
    "ServerConnection",
    "ServerManager",
    "ServerStatus",
    "ToolExecutor",
    "call_client_tool",
    "list_all_tools",
    "records_from_tools",
    "tool_definition",
    "unmatched_tool_names",
]
