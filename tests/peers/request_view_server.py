"""A stdio MCP server whose one tool, ``view``, answers with what the gateway's request view read of
that call (:class:`servers.gateway.request_view.RequestView`), as JSON text; served the way
``toolhost serve --stdio`` serves (:func:`servers.stdio.wire.serve_stdio`). Connections are named
by the order they were first seen (``conn-1``, ``conn-2``, ...), so a test can compare them."""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp.server import Server, ServerRequestContext
from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, TextContent, Tool

from servers.gateway.request_view import RequestView
from servers.stdio.wire import serve_stdio

_NAMES: dict[int, str] = {}
_KEEP: list[Any] = []  # connections stay alive, so an id is never reused within a run


def _name(conn: Any) -> str | None:
    if conn is None:
        return None
    if id(conn) not in _NAMES:
        _KEEP.append(conn)
        _NAMES[id(conn)] = f"conn-{len(_NAMES) + 1}"
    return _NAMES[id(conn)]


def describe(view: RequestView) -> dict[str, Any]:
    """The JSON-ready facts of ``view`` (the tests in tests/servers/test_request_view.py compare them)."""
    return {
        "protocol_version": view.protocol_version,
        "modern": view.modern,
        "stateless": view.stateless,
        "request_id": view.request_id,
        "meta_session": view.meta.get("toolhost/session"),
        "http": view.http is not None,
        "session": type(view.session).__name__,
        "connection": _name(view.connection),
        "stateful_connection": _name(view.stateful_connection),
    }


async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> ListToolsResult:
    return ListToolsResult(tools=[Tool(name="view", input_schema={"type": "object"})])


async def call_tool(ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(describe(RequestView.of(ctx))))])


def server() -> Server[Any]:
    return Server("views", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    await serve_stdio(server(), stop=anyio.Event())


if __name__ == "__main__":
    anyio.run(main)
