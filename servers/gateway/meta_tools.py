"""The gateway's own tools: ``tool_search`` and ``call_tool`` (definitions, argument checks and
the ``tool_search`` result), and the MCP shape of an upstream tool for ``tools/list``.

Used by :mod:`servers.gateway.server`, which routes requests to them; no I/O of its own (the
search runs in :meth:`host.runtime.HostRuntime.search`). No import-time side effects.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.types import CallToolResult, TextContent, Tool, ToolAnnotations

from host.access.open_access import CLOSED_RULE
from host.code_mode import SCRIPT_TOOL
from host.runtime import HostRuntime
from registry import Principal, ToolRecord
from registry.code_mode import python_names, render_stubs
from registry.search import HitContext, SearchTrail, tool_definition
from registry.search import format_result as format_search
from registry.search.query_check import search_pattern_problem
from servers.gateway.mcp_results import ERROR_META_KEY
from servers.gateway.search_usage import hit_contexts

__all__ = [
    "CALL_TOOL",
    "CALL_TOOL_TOOL",
    "EXECUTE",
    "EXECUTE_TOOL",
    "MAX_QUERY_CHARS",
    "MAX_SEARCH_LIMIT",
    "SEARCH_TOOL",
    "TOOL_SEARCH",
    "as_mcp_tool",
    "gateway_refusal",
    "refusal_error",
    "run_search",
    "search_error",
    "search_tool",
    "text_error",
]

TOOL_SEARCH = "tool_search"
CALL_TOOL = "call_tool"
MAX_SEARCH_LIMIT = 50
MAX_QUERY_CHARS = 2000
"""Longest ``tool_search`` query accepted from a client (characters)."""

SEARCH_TOOL = Tool(
    name=TOOL_SEARCH,
    title="Search tools",
    description=(
        "Find tools by what you want to do. Returns the best-matching tools with their full "
        "definitions (name, description, input schema, risk), whether a call needs a human's approval "
        "and whether the tool is available now; says so when no tool fits. Call one with call_tool. "
        "Search with a few words describing the task (any language), e.g. 'cancel order' or 'current time zone'."
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
    annotations=ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    ),
)

EXECUTE = SCRIPT_TOOL
"""The code-mode meta tool (``execute``, as FastMCP and Cloudflare name it), listed when code mode is on."""

EXECUTE_TOOL = Tool(
    name=EXECUTE,
    title="Run a script that calls tools",
    description=(
        "Run a short Python script that calls several tools and returns one result, so intermediate results "
        "never pass through you. Call a tool as `await server__tool(key=value)` (typed stubs: "
        "tool_search(query, format='python')) or `await call_tool('name', {...})`; use asyncio.gather to run "
        "calls in parallel. A call returns the tool's structured content (a dict) or its text; a failed call "
        "raises (PermissionError, LookupError, ValueError, TimeoutError, RuntimeError) and tool_error(e) gives "
        "its status, where, message and retry_after. The last expression is the result. Sandboxed: no files, "
        "network, environment or imports beyond asyncio/json/re/math. Every call is authorized, limited and "
        "audited like a direct call; a script naming tools that need approval asks once for the whole script."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": "The Python script; its last expression is the result, e.g. "
                "\"o = await orders__get_order(order_id='A1001')\\no['status']\".",
            },
        },
        "required": ["code"],
    },
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                open_world_hint=True),
)

CALL_TOOL_TOOL = Tool(
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
    annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
    ),
)


def search_tool(code_mode: bool) -> Tool:
    """``tool_search``'s definition; with code mode on it takes ``format`` (``"python"``: typed stubs)."""
    if not code_mode:
        return SEARCH_TOOL
    schema = json.loads(json.dumps(SEARCH_TOOL.input_schema))
    schema["properties"]["format"] = {
        "type": "string",
        "enum": ["definitions", "python"],
        "default": "definitions",
        "description": "'python': the found tools as typed Python stubs to call from an execute script.",
    }
    return SEARCH_TOOL.model_copy(update={"input_schema": schema})


def as_mcp_tool(tool: ToolRecord) -> Tool:
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


def text_error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def search_error(text: str) -> CallToolResult:
    """A ``tool_search`` argument error, coded like the pipeline's (``_meta["toolhost/error"]``)."""
    err = {"code": "invalid_arguments", "message": text, "where": "tool_search"}
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True, _meta={ERROR_META_KEY: err})


def gateway_refusal(runtime: HostRuntime, principal: Principal) -> str | None:
    """Why every tool is refused to ``principal``, when the whole gateway refuses (a serve started in
    open access after users were added: rule :data:`host.access.open_access.CLOSED_RULE`), else ``None``. The
    reason concerns the gateway, not a tool, so telling it reveals nothing about any tool."""
    view = runtime.policy.for_request(principal)
    for tool in runtime.registry.tools()[:1]:
        decision = view.evaluate(tool)
        return decision.reason if decision.rule == CLOSED_RULE else None
    return None


def refusal_error(reason: str, where: str) -> dict[str, Any]:
    """The ``_meta["toolhost/error"]`` of a gateway that refuses every tool (:func:`gateway_refusal`),
    coded like ``call_tool``'s: ``permission_denied``, the ``reason`` and ``details.rule``."""
    return {"code": "permission_denied", "message": f"permission_denied: {reason}", "where": where,
            "details": {"rule": CLOSED_RULE}}


def refused_search(reason: str) -> CallToolResult:
    """A ``tool_search`` answer of a gateway that refuses every tool (:func:`refusal_error`)."""
    err = refusal_error(reason, "tool_search")
    return CallToolResult(content=[TextContent(type="text", text=err["message"])], is_error=True,
                          _meta={ERROR_META_KEY: err})


def run_search(
    runtime: HostRuntime, principal: Principal, args: dict[str, Any], trail: SearchTrail | None = None
) -> tuple[CallToolResult, list[str]]:
    """Run ``tool_search``; returns the MCP result and the qualified names of the hits.

    Each hit carries its risk tier, whether this caller's call needs approval and whether its
    server is connected now; a weak result ("no tool fits") says so (``structuredContent.weak``).
    """
    query = args.get("query")
    if not isinstance(query, str):
        return search_error("tool_search needs 'query': a few words describing what you want to do"), []
    if len(query) > MAX_QUERY_CHARS:
        return search_error(f"tool_search 'query' is {len(query)} characters; use at most {MAX_QUERY_CHARS}"), []
    limit = args.get("limit", 5)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        return search_error(f"tool_search 'limit' must be an integer from 1 to {MAX_SEARCH_LIMIT}"), []
    if args.get("format", "definitions") not in ("definitions", "python"):
        return search_error("tool_search 'format' must be 'definitions' or 'python'"), []
    rejected = search_pattern_problem(query)
    if rejected is not None:
        return search_error(f"invalid_arguments: tool_search 'query': {rejected}"), []
    result = runtime.search(query, principal, limit=limit)
    if not result.hits and (refusal := gateway_refusal(runtime, principal)) is not None:
        return refused_search(refusal), []
    if result.invalid:
        return search_error(f"invalid_arguments: tool_search 'query': {result.message}"), []
    if trail is not None:
        trail.record(query, result)
    contexts: dict[str, HitContext] = hit_contexts(runtime, principal, [h.tool for h in result.hits])
    tools = [
        tool_definition(h.tool) | {"score": round(h.score, 4)} | contexts[h.tool.qualified_name].to_json()
        for h in result.hits
    ]
    structured: dict[str, Any] = {"tools": tools}
    if result.mode in ("bm25", "hybrid"):
        structured["weak"] = result.weak
    if result.message:
        structured["message"] = result.message
    if args.get("format") == "python":
        names = python_names(t.qualified_name for t in runtime.visible_tools(principal))
        stubs = render_stubs([h.tool for h in result.hits], names)
        structured["stubs"] = stubs
        text = stubs if result.hits else format_search(result, contexts)
        return (
            CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured),
            [h.tool.qualified_name for h in result.hits],
        )
    text = format_search(result, contexts)
    if tools:
        text += "\n\nFull definitions (JSON):\n" + json.dumps({"tools": tools}, ensure_ascii=False)
    return (
        CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured),
        [h.tool.qualified_name for h in result.hits],
    )
