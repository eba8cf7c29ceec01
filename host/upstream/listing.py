"""Listing an upstream's tools, one tool at a time: a bad definition costs only itself.

:func:`list_all_tools` reads every page of ``tools/list`` and checks each listed tool on its
own with :func:`registry.check_tool` (missing ``inputSchema``/root ``type`` repaired with a
warning; a schema failing meta-validation for its draft is *held*: not registered, so not
exported, searchable or callable, and reported with the reason): one bad tool never takes its server offline.

The SDK validates a whole ``tools/list`` page against the negotiated protocol's schema, so one
tool without ``inputSchema`` fails the page. When that happens the page is fetched again
through the session's raw request path (same request stamping, no result validation; private
SDK members ``ClientSession._stamp`` / ``_dispatcher`` / ``_absorb_tool_listing``, mcp 2.3) and
every entry is checked on its own; the kept tools are then absorbed into the session exactly as
the SDK's own listing would be (2026 ``x-mcp-header`` filtering, output-schema cache).
"""

from __future__ import annotations

from typing import Any

import pydantic
from mcp import Client
from mcp.types import ListToolsRequest, ListToolsResult, PaginatedRequestParams, Tool

from registry import check_tool

__all__ = ["MAX_LIST_PAGES", "list_all_tools"]

MAX_LIST_PAGES = 1000
"""Upper bound on ``tools/list`` pages, so a server that never ends its cursor chain cannot hang us."""


async def _raw_page(client: Client, cursor: str | None) -> dict[str, Any]:
    session: Any = client.session
    req = ListToolsRequest(params=PaginatedRequestParams(cursor=cursor) if cursor is not None else None)
    data = req.model_dump(by_alias=True, mode="json", exclude_none=True)
    opts: dict[str, Any] = {}
    session._stamp(data, opts)
    raw = await session._dispatcher.send_raw_request(data["method"], data.get("params"), opts)
    return raw if isinstance(raw, dict) else {}


async def _page(client: Client, cursor: str | None) -> tuple[list[Any], str | None, bool]:
    """``(raw tool dicts, next cursor, via_raw)`` of one page."""
    try:
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
    except pydantic.ValidationError:
        raw = await _raw_page(client, cursor)
        tools = raw.get("tools")
        nxt = raw.get("nextCursor")
        return (tools if isinstance(tools, list) else []), (nxt if isinstance(nxt, str) and nxt else None), True
    dumped = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in page.tools]
    return dumped, page.next_cursor or None, False


def _first_error(err: pydantic.ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "$"
    return f"{loc}: {first['msg']}"


async def list_all_tools(
    client: Client,
    server: str,
    *,
    max_pages: int = MAX_LIST_PAGES,
    held: dict[str, str] | None = None,
) -> tuple[list[Tool], list[str]]:
    """Every page of ``tools/list``; ends on any input a broken server can send.

    Stops on a missing/empty cursor, a cursor seen before (loop), or after ``max_pages``
    pages. Duplicate names keep the first definition. Each tool is checked on its own
    (module docstring).

    Args:
        held: filled with ``{tool name: reason}`` for every tool held back.

    Returns:
        ``(tools, warnings)``: the usable (possibly repaired) tools and one warning line per
        repair, held tool, duplicate or cursor problem.
    """
    tools: list[Tool] = []
    warnings: list[str] = []
    seen_cursors: set[str] = set()
    seen_names: dict[str, int] = {}
    cursor: str | None = None
    for page_no in range(max_pages):
        raw_tools, next_cursor, via_raw = await _page(client, cursor)
        page_tools: list[Tool] = []
        for raw in raw_tools:
            check = check_tool(raw)
            if check.name in seen_names:
                seen_names[check.name] += 1
                continue
            seen_names[check.name] = 1
            warnings.extend(check.warnings)
            if check.tool is None:
                if held is not None:
                    held[check.name] = check.held_reason or "invalid definition"
                continue
            try:
                tool = Tool.model_validate(check.tool, by_name=False)
            except pydantic.ValidationError as err:
                reason = f"definition does not match the MCP Tool shape: {_first_error(err)}"
                warnings.append(f"tool {check.name!r} is held (not exported, searched or callable): {reason}")
                if held is not None:
                    held[check.name] = reason
                continue
            page_tools.append(tool)
        if via_raw:
            complete = cursor is None and next_cursor is None
            absorbed = client.session._absorb_tool_listing(  # private SDK method: see module docstring
                ListToolsResult(tools=page_tools, next_cursor=next_cursor), complete=complete
            )
            page_tools = list(absorbed.tools)
        tools.extend(page_tools)
        cursor = next_cursor
        if cursor is None:
            break
        if cursor in seen_cursors:
            warnings.append(f"tools/list cursor {cursor[:40]!r} repeated after page {page_no + 1}; stopped listing")
            break
        seen_cursors.add(cursor)
    else:
        warnings.append(f"tools/list returned more than {max_pages} pages; stopped listing")
    for name, count in seen_names.items():
        if count > 1:
            warnings.append(f"tool {name!r} is listed {count} times by {server!r}; kept the first definition")
    return tools, warnings
