"""A stdio MCP server offering only tools (no prompts, resources, completions or logging capability)."""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, TextContent, Tool


async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
    return ListToolsResult(tools=[Tool(name="ping", description="Answers pong", input_schema={"type": "object"})])


async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text="pong")])


async def main() -> None:
    server = Server("tools-only", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
