"""tools/list pagination against real (in-process) servers, including broken ones."""

from __future__ import annotations

import itertools

import anyio
import pytest
from mcp import Client
from mcp.server import Server
from mcp.types import ListToolsResult, Tool

from host.upstream.connection import list_all_tools

pytestmark = pytest.mark.anyio


def _tool(name: str, desc: str = "") -> Tool:
    return Tool(name=name, description=desc, input_schema={"type": "object", "properties": {}})


def paged_server(pages: dict[str | None, tuple[list[str], str | None]]) -> Server:
    """A low-level server that answers tools/list from a {cursor: (names, next_cursor)} table."""

    async def list_tools(ctx, params):
        cursor = params.cursor if params else None
        names, nxt = pages[cursor]
        return ListToolsResult(tools=[_tool(n) for n in names], next_cursor=nxt)

    return Server("paged", on_list_tools=list_tools)


async def listing(server: Server, **kw):
    with anyio.fail_after(10):
        async with Client(server) as client:
            return await list_all_tools(client, "paged", **kw)


async def test_every_page_is_listed():
    tools, warnings = await listing(paged_server({None: (["a", "b"], "p2"), "p2": (["c"], "p3"), "p3": (["d"], None)}))
    assert [t.name for t in tools] == ["a", "b", "c", "d"] and warnings == []


async def test_empty_string_cursor_ends_the_listing():
    tools, warnings = await listing(paged_server({None: (["a"], "")}))
    assert [t.name for t in tools] == ["a"] and warnings == []


async def test_repeated_cursor_stops_the_loop_with_a_warning():
    tools, warnings = await listing(paged_server({None: (["a"], "x"), "x": (["b"], "x")}))
    assert [t.name for t in tools] == ["a", "b"]
    assert warnings == ["tools/list cursor 'x' repeated after page 2; stopped listing"]


async def test_endless_fresh_cursors_stop_at_the_page_cap():
    counter = itertools.count()

    async def list_tools(ctx, params):
        n = next(counter)
        return ListToolsResult(tools=[_tool(f"t{n}")], next_cursor=f"c{n}")

    tools, warnings = await listing(Server("endless", on_list_tools=list_tools), max_pages=7)
    assert len(tools) == 7 and warnings == ["tools/list returned more than 7 pages; stopped listing"]


async def test_duplicate_names_are_reported_and_first_definition_kept():
    async def list_tools(ctx, params):
        if params is None or params.cursor is None:
            return ListToolsResult(tools=[_tool("a", "first"), _tool("b")], next_cursor="2")
        return ListToolsResult(tools=[_tool("a", "second")], next_cursor=None)

    tools, warnings = await listing(Server("dups", on_list_tools=list_tools))
    assert [(t.name, t.description) for t in tools] == [("a", "first"), ("b", "")]
    assert warnings == ["tool 'a' is listed 2 times by 'paged'; kept the first definition"]
