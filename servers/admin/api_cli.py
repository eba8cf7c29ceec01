"""The admin API endpoints the CLI needs beyond the console's (same auth, errors and service).

=========================================  ==========================================================
``GET  /tools/visible?user=``              what ``toolhost tools`` lists: full definitions + held
``POST /call``                             ``{"name", "arguments", "user"|null}``: one tool call as
                                           ``user`` (grants apply) or, for the local admin token
                                           without a user, as the local admin (pins apply);
                                           answers the :class:`host.calls.ToolResult` as JSON
``DELETE /roles/{name}``                   remove a role with its grants and memberships
``POST /grants/self-approval``             ``{"subject", "pattern", "enable", "kind"}``
``POST /pins/accept-server``               ``{"server"}``: accept every held/changed definition of it
``GET  /usage`` / ``POST /usage/clear``    usage memory counts / forget (``{"tool"|null}``)
``GET  /audit/verify``                     ``{"rows", "broken": null|{"row_id", "kind", "message"}}``:
                                           the hash chain, after the serve wrote its queued rows
``GET  /audit/rows?after_id=&limit=``      ``{"rows": [...]}``: stored rows (every column, as
                                           ``audit export`` writes them), oldest first, ids > after_id
=========================================  ==========================================================

A call ``{"user": ...}`` on a serve running without permissions (open access) answers 501: the
CLI then runs it on its own with that user's grants, as it would with no serve.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
from starlette.requests import Request
from starlette.routing import Route

from host.code_mode import SCRIPT_TOOL
from servers.admin.actions import LOCAL_ADMIN, AdminService

__all__ = ["cli_routes", "decided_by"]


def decided_by(user: str, data: dict[str, Any]) -> tuple[str, str, str | None]:
    """``(by, how, approver_user)`` of a decision: an admin user decides as themself; the local admin
    token (the CLI of the data folder, who could write the database directly) names the OS user it
    stands for (``by``), ``how`` (``cli``) and the ``as`` user it decides as."""
    if user != LOCAL_ADMIN:
        return user, "admin", None
    by = data.get("by")
    how = "cli" if data.get("how") == "cli" else "admin"
    approver = data.get("as")
    return ((by if isinstance(by, str) and by else user), how,
            (approver if isinstance(approver, str) and approver else None))


def cli_routes(api: Any) -> list[Route]:
    """Routes bound to ``api`` (a :class:`servers.admin.api.AdminApi`)."""
    from servers.admin.api import ApiError, body_of, need

    t = anyio.to_thread.run_sync

    async def visible(r: Request, s: AdminService, _u: str) -> Any:
        user = r.query_params.get("user") or None
        return await t(lambda: s.visible_tools(user))

    async def call(r: Request, s: AdminService, auth_user: str) -> Any:

        d = await body_of(r)
        name = need(d, "name")
        arguments = d.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, (dict, str)):
            raise ApiError(400, "invalid", "arguments must be a JSON object (or its text)")
        user = d.get("user") or None
        if s.runtime is None:
            raise ApiError(501, "unsupported", "tool calls need a running toolhost serve")
        if user is None and auth_user != LOCAL_ADMIN:
            user = auth_user  # an admin user's key calls as that user (their grants apply)
        if user is not None and s.has_store and not s.runtime.policy.per_user:
            raise ApiError(501, "unsupported", "this serve runs without permissions (open access): "
                           "calls as a user run in the CLI itself")
        principal = await t(s.principal, user)
        if user is not None and user != s.actor:  # an admin's call as a user: audited as "root as bob"
            principal = dataclasses.replace(principal, actor=s.actor)
        # the admin API is stateless: one taint session per admin identity and user called as, never
        # the process-wide one (so neither a gateway client's reads nor another admin's reach it)
        taint_session = f"admin:{auth_user}:{principal.user}"
        if name == SCRIPT_TOOL and s.runtime.code_mode is not None:  # code mode: {"code": ...}
            code = arguments.get("code") if isinstance(arguments, dict) else None
            result = await s.runtime.run_script(code, principal, taint_session=taint_session)
            return result.model_dump(mode="json", exclude_none=True)
        result = await s.runtime.call(name, arguments, principal, session_id=taint_session)
        return result.model_dump(mode="json", exclude_none=True)

    async def role_delete(r: Request, s: AdminService, _u: str) -> Any:
        await t(s.remove_role, r.path_params["name"])
        return {"removed": r.path_params["name"]}

    async def self_approval(r: Request, s: AdminService, user: str) -> Any:
        d = await body_of(r)
        enable = d.get("enable", True)
        if not isinstance(enable, bool):
            raise ApiError(400, "invalid", "enable must be true or false")
        by, _how, _as = decided_by(user, d)
        return await t(lambda: s.set_self_approval(need(d, "subject"), need(d, "pattern"), enable,
                                                   kind=d.get("kind") or "user", by=by))

    async def accept_server(r: Request, s: AdminService, user: str) -> Any:
        d = await body_of(r)
        by, _how, _as = decided_by(user, d)
        return {"accepted": await t(s.accept_server_pins, need(d, "server"), by)}

    async def usage(r: Request, s: AdminService, _u: str) -> Any:
        if r.method == "POST":
            tool = (await body_of(r)).get("tool") or None
            return {"forgotten": await t(s.usage_clear, tool)}
        return await t(s.usage_stats)

    async def audit_verify(_r: Request, s: AdminService, _u: str) -> Any:
        return await t(s.audit_verify)

    async def audit_rows(r: Request, s: AdminService, _u: str) -> Any:
        from servers.admin.api import _int

        after = _int(r, "after_id", 0, lo=0, hi=2**62)
        return {"rows": await t(lambda: s.audit_rows(after_id=after, limit=_int(r, "limit", 1000)))}

    route = api.route
    return [
        route("/audit/verify", audit_verify, ["GET"]),
        route("/audit/rows", audit_rows, ["GET"]),
        route("/tools/visible", visible, ["GET"]),
        route("/call", call, ["POST"]),
        route("/roles/{name}", role_delete, ["DELETE"]),
        route("/grants/self-approval", self_approval, ["POST"]),
        route("/pins/accept-server", accept_server, ["POST"]),
        route("/usage", usage, ["GET"]),
        route("/usage/clear", usage, ["POST"]),
    ]


