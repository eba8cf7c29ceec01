"""A stdio MCP server with N synthetic tools (``--tools 10000``), for memory benchmarks.

Built on the SDK's low-level ``Server`` (raw JSON Schemas, ``tools/list`` paginated by 500).
Tool ``tool_<i>`` takes ``{"text": string, "count": integer}`` and echoes ``text``.
"""

from __future__ import annotations

import argparse

import anyio
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

PAGE = 500
VERBS = ["get", "list", "create", "update", "delete", "search", "sync", "export"]
NOUNS = ["order", "invoice", "customer", "ticket", "repo", "file", "event", "report", "user", "note"]


def make_tools(n: int) -> list[Tool]:
    tools = []
    for i in range(n):
        verb, noun = VERBS[i % len(VERBS)], NOUNS[(i // len(VERBS)) % len(NOUNS)]
        tools.append(Tool(
            name=f"tool_{i}",
            description=f"{verb.title()} a {noun} in workspace {i // 80}: {verb}s the {noun} record and returns it.",
            input_schema={"type": "object", "properties": {
                "text": {"type": "string", "description": f"The {noun} id or text."},
                "count": {"type": "integer", "minimum": 1, "description": "How many."}}, "required": ["text"]},
        ))
    return tools


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tools", type=int, default=10_000)
    tools = make_tools(p.parse_args().tools)

    async def list_tools(ctx, params):
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + PAGE
        return ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)

    async def call_tool(ctx, params):
        return CallToolResult(content=[TextContent(type="text", text=str((params.arguments or {}).get("text")))])

    srv = Server("many", version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (r, w):
            await srv.run(r, w, srv.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
