"""Upstream MCP servers: one owned connection per configured server, and the manager that merges them.

* :mod:`host.upstream.connection` — :class:`ServerConnection`: transport, handshake, listing,
  reconnects, and forwarding calls to one server;
* :mod:`host.upstream.transport` — opening a stdio child / streamable HTTP / SSE transport;
* :mod:`host.upstream.stdio_pipe` — the stdio client transport (the SDK's, without its two pipe tasks);
* :mod:`host.upstream.listen` — the 2026-07-28 ``subscriptions/listen`` stream (resource subscriptions);
* :mod:`host.upstream.input_required` — the 2026-07-28 input-required flow between a client and an upstream;
* :mod:`host.upstream.status` — :class:`ConnectionState` (the per-server circuit breaker) and
  :class:`ServerStatus`;
* :mod:`host.upstream.backoff` — reconnect delays that reset only after a healthy period;
* :mod:`host.upstream.guard` — the transport guard: garbage skipped and logged, end of stream
  noticed at once, sent/not-sent per call, expired HTTP sessions;
* :mod:`host.upstream.forward_call` — one ``tools/call`` with truthful outcomes;
* :mod:`host.upstream.liveness` — ping/discover probes of remote sessions;
* :mod:`host.upstream.listing` — ``tools/list`` checked tool by tool (bad definitions held);
* :mod:`host.upstream.relist` — ``list_changed`` storm control;
* :mod:`host.upstream.diagnose` — one-line reasons for servers that cannot start or be reached;
* :mod:`host.upstream.serverlog` — the per-server log file;
* :mod:`host.upstream.manager` — :class:`ServerManager`: every connection in one task group,
  merged into one :class:`registry.ToolRegistry`;
* :mod:`host.upstream.executor` — the :class:`ToolExecutor` seam the call pipeline executes through.
"""

from host.upstream.backoff import Backoff
from host.upstream.connection import ConnectionState, ServerConnection, ServerStatus, call_client_tool, list_all_tools
from host.upstream.executor import ProgressCallback, ToolExecutor
from host.upstream.manager import (
    DefinitionPrescorer,
    ServerManager,
    records_from_tools,
    tool_definition,
    unmatched_tool_names,
)
from host.upstream.relist import RelistGate

__all__ = [
    "Backoff",
    "ConnectionState",
    "ProgressCallback",
    "RelistGate",
    "ServerConnection",
    "DefinitionPrescorer",
    "ServerManager",
    "ServerStatus",
    "ToolExecutor",
    "call_client_tool",
    "list_all_tools",
    "records_from_tools",
    "tool_definition",
    "unmatched_tool_names",
]
