"""The registry MCP server: every connected tool behind ``tool_search`` and ``call_tool``.

``tools/list`` shows (filtered by the caller's permissions):

* ``tool_search(query, limit=5)`` — BM25 search over names, descriptions and parameters;
  returns the matching tools' full definitions (qualified name, description, input schema,
  risk) as JSON text and as ``structuredContent`` ``{"tools": [...]}``;
* ``call_tool(name, arguments)`` — runs a tool by qualified name;
* every ``always_load`` tool, directly;
* with ``expose="all"``, every visible tool directly instead (small setups).

A tool may also be called directly by its qualified name. Unknown, invisible and denied
names all give the same answer, so names cannot be probed. Upstream ``isError`` results
pass through as errors; upstream progress notifications are forwarded to the caller.

Built on the SDK's low-level :class:`mcp.server.Server` (raw JSON Schemas, results built by
hand so the model always sees why a call failed). No import-time side effects.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from mcp.server import Server, ServerRequestContext
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)

from host.runtime import HostRuntime
from registry import ANONYMOUS, Principal, ToolRecord

__all__ = ["CALL_TOOL", "TOOL_SEARCH", "Expose", "PrincipalResolver", "create_registry_server", "tool_definition_json"]

TOOL_SEARCH = "tool_search"
CALL_TOOL = "call_tool"
MAX_SEARCH_LIMIT = 50

Expose = Literal["search", "all"]
PrincipalResolver = Callable[[ServerRequestContext[Any, Any]], Principal]
"""Maps a request to the caller (HTTP: from the bearer token; stdio: the ``--user``)."""

_SEARCH_TOOL = Tool(
    name=TOOL_SEARCH,
    title="Search tools",
    description=(
        "Find tools by what you want to do. Returns the best-matching tools with their full "
        "definitions (name, description, input schema, risk). Call one with call_tool. "
        "Search with a few keywords describing the task, e.g. 'cancel order' or 'current time zone'."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What you want to do, in a few words."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_SEARCH_LIMIT,
                "default": 5,
                "description": "How many tools to return.",
            },
        },
        "required": ["query"],
    },
    annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
)

_CALL_TOOL = Tool(
    name=CALL_TOOL,
    title="Call a tool",
    description=(
        "Run a tool found with tool_search, by its exact name, with arguments matching its input schema. "
        "Returns the tool's result."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Exact tool name from tool_search, e.g. 'orders__get_order'."},
            "arguments": {"type": "object", "description": "Arguments for the tool.", "default": {}},
        },
        "required": ["name"],
    },
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True),
)


def tool_definition_json(tool: ToolRecord) -> dict[str, Any]:
    """The definition a search hit returns: ``{name, title, description, input_schema, risk, server, annotations}``."""
    return {
        "name": tool.qualified_name,
        "title": tool.display_title,
        "description": tool.description,
        "input_schema": tool.input_schema,
        "risk": tool.risk.value,
        "server": tool.server,
        "annotations": tool.annotations.to_wire(),
    }


def _as_mcp_tool(tool: ToolRecord) -> Tool:
    ann = tool.annotations
    return Tool(
        name=tool.qualified_name,
        title=tool.display_title,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=ToolAnnotations(
            title=ann.title,
            read_only_hint=ann.read_only_hint,
            destructive_hint=ann.destructive_hint,
            idempotent_hint=ann.idempotent_hint,
            open_world_hint=ann.open_world_hint,
        ),
    )


def _text_error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def create_registry_server(
    runtime: HostRuntime,
    *,
    expose: Expose = "search",
    principal_for: PrincipalResolver | None = None,
    name: str = "toolhost",
) -> Server[Any]:
    """Build the registry MCP server over a running :class:`HostRuntime`.

    Args:
        runtime: connections, registry, search and policy.
        expose: ``"search"`` (tool_search + call_tool + always_load tools) or ``"all"``.
        principal_for: maps each request to its caller (default: the anonymous local user).
        name: the server name reported to clients.

    Returns:
        A low-level ``Server``; run it with ``stdio_server()`` or ``streamable_http_app()``.
    """
    resolve = principal_for or (lambda _ctx: ANONYMOUS)

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None) -> ListToolsResult:
        principal = resolve(ctx)
        visible = runtime.visible_tools(principal)
        if expose == "all":
            direct = visible
            meta_tools: list[Tool] = []
        else:
            direct = [t for t in visible if t.always_load]
            meta_tools = [_SEARCH_TOOL, _CALL_TOOL]
        return ListToolsResult(tools=meta_tools + [_as_mcp_tool(t) for t in direct])

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
        principal = resolve(ctx)
        args = dict(params.arguments or {})

        async def forward_progress(progress: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(progress, total, message)

        if params.name == TOOL_SEARCH:
            return _search(runtime, principal, args)
        if params.name == CALL_TOOL:
            target = args.get("name")
            if not isinstance(target, str) or not target:
                return _text_error("call_tool needs 'name': the exact tool name from tool_search")
            inner = args.get("arguments", {})
            if inner is None:
                inner = {}
            if isinstance(inner, str):
                try:
                    inner = json.loads(inner) if inner.strip() else {}
                except json.JSONDecodeError as err:
                    return _text_error(f"call_tool 'arguments' is not valid JSON ({err.msg} at column {err.colno}); "
                                       "pass an object")
            if not isinstance(inner, dict):
                return _text_error(f"call_tool 'arguments' must be an object, got {type(inner).__name__}")
            return await runtime.call(target, inner, principal, progress_callback=forward_progress)
        return await runtime.call(params.name, args, principal, progress_callback=forward_progress)

    return Server(
        name,
        version="0.1.0",
        instructions=(
            "toolhost: one MCP server in front of many. Use tool_search to find a tool for the task, "
            "then call_tool with its exact name and arguments."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _search(runtime: HostRuntime, principal: Principal, args: dict[str, Any]) -> CallToolResult:
    query = args.get("query")
    if not isinstance(query, str):
        return _text_error("tool_search needs 'query': a few words describing what you want to do")
    limit = args.get("limit", 5)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        return _text_error(f"tool_search 'limit' must be an integer from 1 to {MAX_SEARCH_LIMIT}")
    hits = runtime.search(query, principal, limit=limit)
    tools = [tool_definition_json(h.tool) | {"score": round(h.score, 4)} for h in hits]
    if not tools:
        servers = sorted({t.server for t in runtime.visible_tools(principal)})
        text = (
            f"No tool matches {query!r}. Try other keywords (a verb and an object, e.g. 'list orders'). "
            f"Servers available: {', '.join(servers) or 'none'}."
        )
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content={"tools": []})
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps({"tools": tools}, ensure_ascii=False))],
        structured_content={"tools": tools},
    )
