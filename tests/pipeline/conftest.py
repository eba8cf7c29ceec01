"""Pipeline test fixtures: example MCP servers connected in-process, behind a ToolExecutor.

:class:`InProcessExecutor` maps SDK errors with production's own
:func:`host.upstream.connection.call_client_tool`, so the pipeline sees the same exceptions as in production.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from host.pipeline import CallContext, Pipeline
from host.upstream.manager import tool_definition
from registry import ToolOverrides, ToolRegistry, assign_qualified_names, build_record
from registry.policy import AllowAll, Policy
from servers.examples import flaky, orders
from tests.support import InProcessExecutor


@dataclass
class Host:
    registry: ToolRegistry
    executor: InProcessExecutor
    pipeline: Pipeline
    state: flaky.FlakyState
    spill_dir: Path

    def ctx(self, **kwargs: Any) -> CallContext:
        return CallContext(conversation_id=kwargs.pop("conversation_id", "conv-1"), **kwargs)


@asynccontextmanager
async def connect(
    apps: dict[str, MCPServer],
    tmp_path: Path,
    *,
    overrides: dict[str, dict[str, ToolOverrides]] | None = None,
    policy: Policy | None = None,
    event_log: Any = None,
    approvals: Any = None,
    state: flaky.FlakyState | None = None,
) -> AsyncIterator[Host]:
    """Connect ``apps`` in-process, register their tools under ``<server>__<tool>``, build a Pipeline."""
    registry = ToolRegistry()
    executor = InProcessExecutor()
    async with AsyncExitStack() as stack:
        for server, app in apps.items():
            client = await stack.enter_async_context(Client(app))
            executor.clients[server] = client
            tools = (await client.list_tools()).tools
            names = assign_qualified_names(server, [t.name for t in tools], server=server)
            ov = (overrides or {}).get(server, {})
            registry.replace_server(server, [
                build_record(server=server, qualified_name=names[t.name], definition=tool_definition(t),
                             overrides=ov.get(t.name), default_timeout_seconds=5.0,
                             default_max_output_chars=2_000)
                for t in tools
            ])
        spill = tmp_path / "spill"
        pipeline = Pipeline(registry, executor, policy or AllowAll(), spill_dir=spill, event_log=event_log,
                            approvals=approvals)
        yield Host(registry, executor, pipeline, state or flaky.FlakyState(), spill)


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    """``flaky`` + ``orders`` servers in-process, default policy, 5 s timeouts, 2000-char outputs."""
    state = flaky.FlakyState()
    async with connect({"flaky": flaky.create_server(state), "orders": orders.create_server()}, tmp_path,
                       state=state) as h:
        yield h
