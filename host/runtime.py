"""The assembled host: connections + registry + search + policy + call path, in one object.

The registry server and every CLI command use this, so listing, searching and calling go
through the same code whatever the front end::

    async with HostRuntime(load_config(path, data_dir=d), data_dir=d) as rt:
        rt.visible_tools(principal)                 # tools the caller may see
        rt.search("cancel my order", principal)     # ranked, permission-filtered
        await rt.call("orders__cancel_order", {"order_id": "A1002"}, principal)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from mcp.types import CallToolResult, TextContent
from rank_bm25 import BM25Okapi

from host.config import HostConfig
from host.connection import ServerStatus
from host.errors import CallTimeout, UpstreamError, UpstreamUnavailable
from host.executor import ProgressCallback
from host.manager import ServerManager
from registry import ANONYMOUS, AllowAll, Policy, Principal, ToolRecord, ToolRegistry

__all__ = ["HostRuntime", "SearchHit"]


class SearchHit:
    """One ranked search result: ``tool`` and its BM25 ``score``."""

    __slots__ = ("score", "tool")

    def __init__(self, tool: ToolRecord, score: float) -> None:
        self.tool = tool
        self.score = score


_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(_CAMEL.sub(" ", text).lower())


def _doc(tool: ToolRecord) -> list[str]:
    props = tool.input_schema.get("properties") or {}
    parts = [tool.qualified_name.replace("_", " "), tool.server, tool.title or "", tool.description]
    for pname, pschema in props.items() if isinstance(props, dict) else ():
        parts.append(pname.replace("_", " "))
        if isinstance(pschema, dict):
            parts.append(str(pschema.get("description", "")))
    return _tokens(" ".join(parts))


class HostRuntime:
    """Connections, registry, search and the call path for one configuration.

    Args:
        config: parsed configuration.
        data_dir: the data folder.
        policy: decides what each principal may see and call (default: allow all).
        reconnect: keep reconnecting failed servers (``serve``) or try once (CLI one-shots).
        on_status: called on every server status change (live display).
    """

    def __init__(
        self,
        config: HostConfig,
        *,
        data_dir: Path,
        policy: Policy | None = None,
        reconnect: bool = False,
        on_status: Callable[[ServerStatus], None] | None = None,
    ) -> None:
        self.config = config
        self.data_dir = data_dir
        self.policy: Policy = policy or AllowAll()
        self.registry = ToolRegistry()
        self.manager = ServerManager(
            config, data_dir=data_dir, registry=self.registry, reconnect=reconnect, on_status=on_status
        )

    async def __aenter__(self) -> HostRuntime:
        await self.manager.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.manager.__aexit__(exc_type, exc, tb)

    # -- views filtered by policy ------------------------------------------------------
    def is_visible(self, principal: Principal, tool: ToolRecord) -> bool:
        """Whether ``principal`` may see (and so try to call) ``tool``."""
        return self.policy.evaluate(principal, tool).visible

    def visible_tools(self, principal: Principal = ANONYMOUS) -> list[ToolRecord]:
        """Every tool the principal may see, sorted by qualified name."""
        return [t for t in self.registry.tools() if self.is_visible(principal, t)]

    def statuses(self) -> list[ServerStatus]:
        """Status of every configured server, in config order."""
        return self.manager.statuses()

    def search(self, query: str, principal: Principal = ANONYMOUS, *, limit: int = 5) -> list[SearchHit]:
        """Visible tools ranked by BM25 over names, descriptions and parameters (best first)."""
        tools = self.visible_tools(principal)
        q = _tokens(query)
        if not tools or not q:
            return []
        index = BM25Okapi([_doc(t) for t in tools])
        scores = index.get_scores(q)
        order = sorted(range(len(tools)), key=lambda i: (-scores[i], tools[i].qualified_name))
        return [SearchHit(tools[i], float(scores[i])) for i in order[:limit] if scores[i] > 0 and math.isfinite(scores[i])]

    # -- calls ---------------------------------------------------------------------------
    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        principal: Principal = ANONYMOUS,
        *,
        progress_callback: ProgressCallback | None = None,
    ) -> CallToolResult:
        """Run one call by qualified name and return an MCP result (errors as ``isError`` results)."""
        tool = self.registry.snapshot().get(name)
        if tool is None or not self.is_visible(principal, tool):
            return _error(f"unknown tool {name!r}; use tool_search to find tools")
        try:
            return await self.manager.call_tool(
                tool.server,
                tool.original_name,
                arguments or {},
                timeout_seconds=tool.timeout_seconds,
                progress_callback=progress_callback,
            )
        except (UpstreamUnavailable, CallTimeout, UpstreamError) as err:
            return _error(str(err))


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

