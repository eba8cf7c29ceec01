"""The console's GET pages (see :mod:`servers.admin.console`): each reads through :class:`AdminService`
(or, for the audit table and a tool's grants, the store and the running host it holds) and renders
one template."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from registry.policy import Effect, matches_pattern
from registry.search import tool_definition
from servers.admin.actions import APPROVAL_STATUSES, AdminService
from servers.admin.api import ApiError, _flag
from servers.admin.approval_view import arguments_state, printable
from servers.admin.audit_page import ACTIONS, PAGE_SIZES, AuditQuery, BadFilter, audit_entry, audit_page
from servers.admin.auth import AdminSession
from servers.shared.times import when

if TYPE_CHECKING:
    from servers.admin.console import Console

__all__ = ["SEARCH_SYNTAX", "page_routes"]

SERVERS_REFRESH_SECONDS = 5
PREVIEW_CHARS = 120
"""Characters of the arguments shown per row on the approvals page (the approval's page shows all)."""
STDERR_TAIL_CHARS = 8000
"""At most this much of a server's stderr tail is shown on its page (the end of it)."""

SEARCH_SYNTAX = (
    ("free text", "cancel an order", "BM25 over name, description and parameters (plus related words)"),
    ("select:", "select:orders__get_order,orders__list_orders", "exact tools by qualified name, in that order"),
    ("regex:", "regex:^orders__.*order$", "a Python regular expression over names, descriptions and parameters"),
)
"""The query forms of tool search (:mod:`registry.search.index`): form, example, meaning."""

t = anyio.to_thread.run_sync


def _pretty(value: Any) -> str:
    return printable(value if isinstance(value, str) else
                     json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))


def _preview(row: dict[str, Any]) -> dict[str, Any]:
    """``{"preview", "whole"}``: the row's arguments on one line, and whether that is all of them
    (only then may the list offer Approve; otherwise the approver opens the approval)."""
    args = row["arguments"]
    text = printable(args if isinstance(args, str) else
                     json.dumps(args, ensure_ascii=False, sort_keys=True, separators=(",", ":")))
    whole = row["complete"] and len(text) <= PREVIEW_CHARS
    return {"preview": text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…", "whole": whole}


def _with_definition(review: dict[str, Any]) -> dict[str, Any]:
    """A pin review (:meth:`AdminService.pin_diff`) plus ``new`` (never pinned: a new tool of its
    server) and, for a new tool, ``definition``: its whole pending definition (MCP wire form), read
    back from the review's diff against nothing, so it is exactly the definition ``pending_hash`` names."""
    new = review["pinned_hash"] is None and review["pending_hash"] is not None
    definition = None
    if new:
        body = review["diff"].splitlines(keepends=True)[3:]  # after the ---, +++ and @@ lines: all additions
        definition = json.loads("".join(line[1:] for line in body))
    return review | {"new": new, "definition": definition}


def _grants_for(svc: AdminService, tool: Any) -> list[dict[str, Any]]:
    """The grants whose pattern covers ``tool`` (a :class:`registry.ToolRecord`), allow and deny."""
    return [g for g in svc.grants() if matches_pattern(g["pattern"], tool)]


def page_routes(c: Console) -> list[Route]:
    render = c.render

    async def servers(r: Request, s: AdminSession, svc: AdminService) -> Response:
        return await render("servers.html", r, s, title="Servers", servers=svc.servers(),
                            refresh=SERVERS_REFRESH_SECONDS)

    async def server(r: Request, s: AdminSession, svc: AdminService) -> Response:
        name = r.path_params["name"]
        row = next((x for x in svc.servers() if x["name"] == name), None)
        if row is None:
            raise ApiError(404, "not_found", f"no server {name!r} is configured (see the servers page)")
        tools = [x for x in await t(svc.tools) if x["server"] == name]
        tail = row["stderr_tail"] or ""
        return await render("server.html", r, s, title=f"Server {name}", srv=row, tools=tools,
                            tail=printable(tail[-STDERR_TAIL_CHARS:]), cut=len(tail) > STDERR_TAIL_CHARS)

    async def tools(r: Request, s: AdminSession, svc: AdminService) -> Response:
        rows = await t(svc.tools)
        return await render("tools.html", r, s, title=f"Tools ({len(rows)})", tools=rows)

    async def tool(r: Request, s: AdminSession, svc: AdminService) -> Response:
        name = r.path_params["tool"]
        row = next((x for x in await t(svc.tools) if x["name"] == name), None)
        if row is None:
            raise ApiError(404, "not_found", f"no tool {name!r} (see the tools page)")
        record = svc.runtime.registry.get(name) if svc.runtime is not None and name in svc.runtime.registry else None
        if record is None:  # held and never served: its definition is the pending one of its pin (MCP wire form)
            definition, grants = _with_definition(await t(svc.pin_diff, name))["definition"], []
            schema = None if definition is None else definition["inputSchema"]
        else:
            definition = tool_definition(record)
            grants = await t(_grants_for, svc, record) if svc.has_store else None  # None: --auth off
            schema = definition["input_schema"]
        return await render("tool.html", r, s, title=f"Tool {name}", tool=row, grants=grants,
                            definition=None if definition is None else _pretty(definition),
                            schema=None if schema is None else _pretty(schema))

    async def approvals(r: Request, s: AdminSession, svc: AdminService) -> Response:
        status = r.query_params.get("status") or "open"
        rows = [x | _preview(x) for x in await t(svc.approvals, status)]
        return await render("approvals.html", r, s, title="Approvals", approvals=rows, shown=status,
                            statuses=APPROVAL_STATUSES)

    async def approval(r: Request, s: AdminSession, svc: AdminService) -> Response:
        a = await t(svc.approval, r.path_params["id"], _flag(r, "reveal"))
        fields = [("status", a["status"]), ("user", a["user"] + (f" (key {a['key_id']})" if a["key_id"] else "")),
                  ("tool", a["tool"]), ("rule", a["rule"] or "-"), ("requested", when(a["created_at"])),
                  ("expires", when(a["expires_at"])),
                  ("decided", f"{when(a['decided_at'])} by {a['decided_by']}" if a["decided_by"] else "-"),
                  ("arguments sha256", a["arguments_hash"])]
        return await render("approval.html", r, s, title=f"Approval {a['id']}", a=a, fields=fields,
                            pretty=_pretty(a["arguments"]), state=arguments_state(a))

    async def pins(r: Request, s: AdminSession, svc: AdminService) -> Response:
        return await render("pins.html", r, s, title="Pins", pins=await t(svc.pins))

    async def pin(r: Request, s: AdminSession, svc: AdminService) -> Response:
        review = _with_definition(await t(svc.pin_diff, r.path_params["tool"]))
        definition = review["definition"]
        return await render("pin.html", r, s, title=f"Pin of {review['tool']}", review=review,
                            definition=None if definition is None else _pretty(definition))

    async def users(r: Request, s: AdminSession, svc: AdminService) -> Response:
        new_key, s.flash_key = s.flash_key, None  # shown once: this response only
        data = await t(lambda: (svc.users(), svc.roles(), svc.keys()))
        return await render("users.html", r, s, title="Users, roles and API keys", users=data[0], roles=data[1],
                            keys=data[2], new_key=new_key)

    async def grants(r: Request, s: AdminSession, svc: AdminService) -> Response:
        rows, people, roles = await t(lambda: (svc.grants(), svc.users(), svc.roles()))
        subjects = [u["name"] for u in people] + [f"role:{x['name']}" for x in roles]
        registered = svc.runtime.registry.tools() if svc.runtime is not None else None
        for g in rows:  # how many registered tools each pattern covers now (None: no running host)
            g["covers"] = None if registered is None else sum(matches_pattern(g["pattern"], x) for x in registered)
        return await render("grants.html", r, s, title="Grants", grants=rows, subjects=subjects)

    async def audit(r: Request, s: AdminSession, svc: AdminService) -> Response:
        try:
            q = AuditQuery.parse(r.query_params)
        except BadFilter as e:
            raise ApiError(400, "invalid", str(e)) from None
        found = await t(audit_page, svc.access, q)
        return await render("audit.html", r, s, title="Audit (newest first)", page=found, q=q, sizes=PAGE_SIZES,
                            actions=ACTIONS)

    async def audit_row(r: Request, s: AdminSession, svc: AdminService) -> Response:
        raw = r.path_params["id"]
        row = await t(audit_entry, svc.access, int(raw)) if raw.isdigit() else None
        if row is None:
            raise ApiError(404, "not_found", f"no audit row {raw!r}")
        args = row["arguments"]
        try:
            shown = _pretty(json.loads(args)) if args else None
        except ValueError:
            shown = printable(args)
        return await render("audit_row.html", r, s, title=f"Audit row {row['id']}", row=row, arguments=shown)

    async def search(r: Request, s: AdminSession, svc: AdminService) -> Response:
        q = r.query_params.get("q", "")
        as_user = r.query_params.get("user") or None
        people = [u["name"] for u in await t(svc.users)] if svc.has_store else []  # --auth off: no users
        result = await t(_searched, svc, q, as_user) if q else None
        return await render("search.html", r, s, title="Search playground", q=q, as_user=as_user, users=people,
                            result=result, syntax=SEARCH_SYNTAX)

    p = c.page
    return [
        Route("/admin/servers", p(servers)),
        Route("/admin/servers/{name}", p(server)),
        Route("/admin/tools", p(tools)),
        Route("/admin/tools/{tool}", p(tool)),
        Route("/admin/approvals", p(approvals)),
        Route("/admin/approvals/{id}", p(approval)),
        Route("/admin/pins", p(pins)),
        Route("/admin/pins/{tool}", p(pin)),
        Route("/admin/users", p(users)),
        Route("/admin/grants", p(grants)),
        Route("/admin/audit", p(audit)),
        Route("/admin/audit/{id}", p(audit_row)),
        Route("/admin/search", p(search)),
    ]


def _searched(svc: AdminService, query: str, user: str | None) -> dict[str, Any]:
    """:meth:`AdminService.search` with, per hit, ``approval`` (the caller's call would wait for an
    approval) and ``available``/``unavailable`` (as the tools page says)."""
    result = svc.search(query, user)
    if svc.runtime is None:
        return result
    principal = svc.principal(user)
    rows = {x["name"]: x for x in svc.tools()}
    registry = svc.runtime.registry
    for h in result["hits"]:
        gone = h["name"] not in registry  # its server went away since the search
        h["approval"] = not gone and svc.runtime.policy.evaluate(principal, registry.get(h["name"])).effect \
            is Effect.APPROVAL
        row = rows.get(h["name"], {})
        h["available"], h["unavailable"] = row.get("available", False), row.get("unavailable")
    return result
