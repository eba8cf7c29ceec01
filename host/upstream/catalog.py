"""Every page of an upstream's ``prompts/list``, ``resources/list`` and ``resources/templates/list``.

Same rules as :func:`host.upstream.connection.list_all_tools`: stop on a missing/empty cursor,
on a cursor seen before (a broken server's loop) or after :data:`MAX_LIST_PAGES` pages; duplicate
names/URIs keep the first definition. Only the lists the server's capabilities announce are
asked for; one list failing (e.g. ``Method not found`` from a server that announced it anyway)
costs that list only, with a warning.

Definitions are returned as camelCase JSON dicts (the wire form), ready for
:meth:`registry.catalog.Catalog.replace_server`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp import Client, MCPError

__all__ = ["MAX_LIST_PAGES", "UpstreamCatalog", "list_catalog", "list_pages"]

MAX_LIST_PAGES = 1000
"""Upper bound on pages of one list."""


@dataclass
class UpstreamCatalog:
    """One server's prompts, resources and templates (wire dicts) plus listing warnings."""

    prompts: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


async def list_pages(
    fetch: Callable[[str | None], Awaitable[Any]],
    items_of: Callable[[Any], list[Any]],
    key: str,
    what: str,
    *,
    max_pages: int = MAX_LIST_PAGES,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every page of one paginated list: ``(items as wire dicts, warnings)``.

    Args:
        fetch: ``await fetch(cursor)`` returns one page (a result with ``next_cursor``).
        items_of: the page's items.
        key: the identity field in the wire dict (``name``, ``uri``, ``uriTemplate``).
        what: the method name for warnings (``prompts/list``).
    """
    out: list[dict[str, Any]] = []
    warnings: list[str] = []
    seen_cursors: set[str] = set()
    seen: set[str] = set()
    cursor: str | None = None
    for page_no in range(max_pages):
        page = await fetch(cursor)
        for item in items_of(page):
            wire = item.model_dump(mode="json", by_alias=True, exclude_none=True)
            ident = str(wire.get(key))
            if ident in seen:
                warnings.append(f"{what}: {key} {ident[:80]!r} is listed twice; kept the first definition")
                continue
            seen.add(ident)
            out.append(wire)
        cursor = page.next_cursor or None
        if cursor is None:
            break
        if cursor in seen_cursors:
            warnings.append(f"{what} cursor {cursor[:40]!r} repeated after page {page_no + 1}; stopped listing")
            break
        seen_cursors.add(cursor)
    else:
        warnings.append(f"{what} returned more than {max_pages} pages; stopped listing")
    return out, warnings


async def list_catalog(client: Client, *, prompts: bool = True, resources: bool = True) -> UpstreamCatalog:
    """List what the server announces (``capabilities.prompts`` / ``.resources``), every page.

    Args:
        prompts: list prompts (only when the server declared the capability).
        resources: list resources and templates (same).
    """
    caps = client.server_capabilities
    out = UpstreamCatalog()
    if prompts and caps is not None and caps.prompts is not None:
        await _one(out, "prompts", lambda c: client.list_prompts(cursor=c, cache_mode="refresh"),
                   lambda p: p.prompts, "name", "prompts/list")
    if resources and caps is not None and caps.resources is not None:
        await _one(out, "resources", lambda c: client.list_resources(cursor=c, cache_mode="refresh"),
                   lambda p: p.resources, "uri", "resources/list")
        await _one(out, "templates", lambda c: client.list_resource_templates(cursor=c, cache_mode="refresh"),
                   lambda p: p.resource_templates, "uriTemplate", "resources/templates/list")
    return out


async def _one(
    out: UpstreamCatalog,
    attr: str,
    fetch: Callable[[str | None], Awaitable[Any]],
    items_of: Callable[[Any], list[Any]],
    key: str,
    what: str,
) -> None:
    try:
        items, warnings = await list_pages(fetch, items_of, key, what)
    except MCPError as err:
        out.warnings.append(f"{what} failed: MCP error {err.code}: {err.message}")
        return
    setattr(out, attr, items)
    out.warnings.extend(warnings)
