"""The admin API: JSON over HTTP under ``/admin/api`` on ``toolhost serve``.

Authentication: ``Authorization: Bearer <key>`` with the API key of a user holding the ``admin``
role, or the local admin token from loopback (see :mod:`servers.admin.auth`). Errors are
``{"error": {"code": ..., "message": ...}}`` with status 400 (bad input), 401 (no/invalid
credential), 403 (not an admin, or a disabled one), 404 (unknown user/approval/tool/...), 409
(already exists, not pending, hash mismatch; ``user_disabled``: a key for a disabled user), 503
``no_store`` (serve runs with ``--auth off``: only the server, tool, search and call endpoints
answer then).

Endpoints (all JSON; ``GET`` reads, ``POST`` changes):

=========================================  ==========================================================
``GET  /servers``                          status of every server; ``code_mode``: the sandbox pool
                                           and limits (``null`` when code mode is off)
``POST /servers/{name}/restart``           reconnect one server
``GET  /tools``                            tools with risk, pin state, availability
``GET  /search?q=&user=&limit=``           search playground: hits with scores and why they ranked
``GET  /users`` / ``POST /users``          list / add ``{"name"}``
``DELETE /users/{name}``                   remove a user (grants, keys, approvals)
``POST /users/{name}/disable|enable``      disable ``{"reason"}`` (keys refused, open approvals
                                           denied) / enable again; the user's row with its state
``GET  /roles`` / ``POST /roles``          list / add ``{"name", "description"}``
``POST /roles/{role}/members``             ``{"user"}``; ``DELETE /roles/{role}/members/{user}``
``GET  /keys?user=`` / ``POST /keys``      list / create ``{"user", "label"}`` (``token`` shown once)
``POST /keys/revoke``                      ``{"user", "key_id"|null}``
``GET  /grants?subject=&kind=``            list
``POST /grants``                           ``{"subject", "pattern", "max_risk", "approval", "deny", "kind", "taint"}``
``POST /grants/remove``                    ``{"subject", "pattern", "deny", "kind"}``
``GET  /approvals?status=&user=``          list; ``GET /approvals/{id}?reveal=``: the exact arguments
                                           (too-long values hidden with length and sha256 unless reveal)
``POST /approvals/{id}/approve|deny``      decide (audited); ``{"reveal": true}`` when values were hidden
``GET  /pins?status=&server=``             list; ``GET /pins/{tool}/diff``: diff + pending hash
``POST /pins/{tool}/accept``               ``{"hash"}`` from the diff (audited)
``GET  /audit?user=&tool=&status=&action=&since=&after_id=&limit=``  newest first
``GET  /audit/export``                     the same filters, as JSON Lines
``POST /reload``                           reload the config file (see :mod:`servers.admin.reload`)
``...``                                    the CLI's endpoints: :mod:`servers.admin.api_cli`
=========================================  ==========================================================
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from host.store import StoreError
from host.store.errors import AlreadyExists, ApprovalNotPending, NotFound, PinHashMismatch, UserDisabled
from registry.errors import InvalidGrantPattern
from servers.admin.actions import LOCAL_ADMIN, AdminService, StoreOff
from servers.admin.api_cli import cli_routes, decided_by
from servers.admin.auth import AdminAuth

__all__ = ["ApiError", "api_routes", "error_response"]

Handler = Callable[[Request, AdminService, str], Awaitable[Any]]


class ApiError(Exception):
    """An error answer: HTTP ``status``, machine ``code``, human ``message`` naming the fix."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def classify(exc: Exception) -> ApiError:
    """The HTTP answer for an exception from an admin action."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, StoreOff):
        return ApiError(503, "no_store", str(exc))
    if isinstance(exc, NotFound):
        return ApiError(404, "not_found", str(exc))
    if isinstance(exc, UserDisabled):
        return ApiError(409, "user_disabled", str(exc))
    if isinstance(exc, (AlreadyExists, ApprovalNotPending, PinHashMismatch)):
        return ApiError(409, "conflict", str(exc))
    if isinstance(exc, (StoreError, InvalidGrantPattern, ValueError)):
        return ApiError(400, "invalid", str(exc))
    raise exc


async def body_of(request: Request) -> dict[str, Any]:
    """The JSON object body (``{}`` when empty); 400 otherwise."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as e:
        raise ApiError(400, "invalid_json", f"the body is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise ApiError(400, "invalid_json", "the body must be a JSON object")
    return data


def need(data: dict[str, Any], key: str, kind: type = str) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or (kind is str and not value):
        raise ApiError(400, "invalid", f"field {key!r} ({kind.__name__}) is required")
    return value


def _float(request: Request, key: str) -> float | None:
    value = request.query_params.get(key)
    if value in (None, ""):
        return None
    try:
        return float(value)
    except ValueError:
        raise ApiError(400, "invalid", f"query parameter {key} must be a number, got {value!r}") from None


def _int(request: Request, key: str, default: int, lo: int = 1, hi: int = 10_000) -> int:
    value = request.query_params.get(key)
    if value in (None, ""):
        return default
    try:
        n = int(value)
    except ValueError:
        raise ApiError(400, "invalid", f"query parameter {key} must be an integer, got {value!r}") from None
    if not lo <= n <= hi:
        raise ApiError(400, "invalid", f"query parameter {key} must be {lo}-{hi}, got {n}")
    return n


ACTOR_HEADER = "x-toolhost-actor"
"""Who the local admin token acts for (``local:<os user>``, sent by the CLI of the data folder)."""


def actor_of(user: str, request: Request) -> str:
    """Who an authenticated admin request acts for, as audited: the admin user; for the local admin
    token (only from loopback, the CLI of the data folder) the ``local:<os user>`` it names in
    :data:`ACTOR_HEADER`, else ``local-admin``."""
    if user == LOCAL_ADMIN:
        named = request.headers.get(ACTOR_HEADER, "")
        if named.startswith("local:") and 6 < len(named) <= 64 and named.isprintable():
            return named
    return user


def _flag(request: Request, key: str) -> bool:
    """A boolean query parameter: ``1``/``true``/``yes`` (any case) is true."""
    return (request.query_params.get(key) or "").lower() in ("1", "true", "yes")


def audit_filters(request: Request) -> dict[str, Any]:
    q = request.query_params
    return {
        "user": q.get("user") or None,
        "tool": q.get("tool") or None,
        "status": q.get("status") or None,
        "action": q.get("action") or None,
        "since": _float(request, "since"),
        "after_id": int(_float(request, "after_id") or 0) or None,
        "limit": _int(request, "limit", 50),
    }


class AdminApi:
    """Routes bound to one :class:`AdminService` and :class:`AdminAuth`.

    Args:
        restart: ``async (server name) -> None`` reconnecting one server (``None``: 501).
        reload: ``async () -> dict`` reloading the config (``None``: 501).
    """

    def __init__(self, service: AdminService | None, auth: AdminAuth, *, restart: Any = None,
                 reload: Any = None) -> None:
        self.service = service
        self.auth = auth
        self.restart = restart
        self.reload = reload

    def route(self, path: str, handler: Handler, methods: list[str], *, sync: bool = True) -> Route:
        async def endpoint(request: Request) -> Response:
            user, reason = await self.auth.from_bearer(request)
            if user is None:
                status = 403 if "role" in reason or "loopback" in reason or " is disabled by " in reason else 401
                headers = {"WWW-Authenticate": 'Bearer realm="toolhost-admin"'} if status == 401 else None
                return JSONResponse({"error": {"code": "unauthorized" if status == 401 else "forbidden",
                                               "message": reason}}, status_code=status, headers=headers)
            if self.service is None:
                return error_response(503, "no_store", str(StoreOff()))
            try:
                result = await handler(request, self.service.acting_as(actor_of(user, request)), user)
            except Exception as e:  # noqa: BLE001 - classify() re-raises what is not an admin error
                err = classify(e)
                return error_response(err.status, err.code, err.message)
            if isinstance(result, Response):
                return result
            return JSONResponse(result)

        return Route(path, endpoint, methods=methods)

    def routes(self) -> list[Route]:
        t = anyio.to_thread.run_sync

        async def servers(_r: Request, s: AdminService, _u: str) -> Any:
            return {"servers": s.servers(), "code_mode": s.code_mode()}

        async def restart(r: Request, s: AdminService, _u: str) -> Any:
            if self.restart is None:
                raise ApiError(501, "unsupported", "restarting servers needs a running toolhost serve")
            name = r.path_params["name"]
            if name not in {row["name"] for row in s.servers()}:
                raise ApiError(404, "not_found", f"no server named {name!r} in the configuration")
            await self.restart(name)
            await t(s.acted, "server.reconnect", f"server {name}")
            return {"restarted": name}

        async def tools(_r: Request, s: AdminService, _u: str) -> Any:
            return {"tools": await t(s.tools)}

        async def search(r: Request, s: AdminService, _u: str) -> Any:
            q = r.query_params.get("q", "")
            user = r.query_params.get("user") or None
            return await t(lambda: s.search(q, user, _int(r, "limit", 10, 1, 50)))

        async def users(r: Request, s: AdminService, _u: str) -> Any:
            if r.method == "POST":
                data = await body_of(r)
                return JSONResponse(await t(s.add_user, need(data, "name")), status_code=201)
            return {"users": await t(s.users)}

        async def user_delete(r: Request, s: AdminService, _u: str) -> Any:
            await t(s.remove_user, r.path_params["name"])
            return {"removed": r.path_params["name"]}

        async def user_disable(r: Request, s: AdminService, _u: str) -> Any:
            reason = (await body_of(r)).get("reason")
            if reason is not None and not isinstance(reason, str):
                raise ApiError(400, "invalid", "'reason' must be a string")
            return await t(s.disable_user, r.path_params["name"], reason)

        async def user_enable(r: Request, s: AdminService, _u: str) -> Any:
            return await t(s.enable_user, r.path_params["name"])

        async def roles(r: Request, s: AdminService, _u: str) -> Any:
            if r.method == "POST":
                data = await body_of(r)
                return JSONResponse(await t(s.add_role, need(data, "name"), data.get("description") or ""),
                                    status_code=201)
            return {"roles": await t(s.roles)}

        async def members(r: Request, s: AdminService, _u: str) -> Any:
            role = r.path_params["role"]
            if r.method == "POST":
                user = need(await body_of(r), "user")
                await t(s.assign_role, user, role)
            else:
                user = r.path_params["user"]
                await t(s.unassign_role, user, role)
            return {"role": role, "user": user, "member": r.method == "POST"}

        async def keys(r: Request, s: AdminService, _u: str) -> Any:
            if r.method == "POST":
                data = await body_of(r)
                return JSONResponse(await t(s.create_key, need(data, "user"), data.get("label") or ""),
                                    status_code=201)
            return {"keys": await t(s.keys, r.query_params.get("user") or None)}

        async def keys_revoke(r: Request, s: AdminService, _u: str) -> Any:
            data = await body_of(r)
            key_id = data.get("key_id")
            if key_id is None and data.get("all") is not True:
                raise ApiError(400, "invalid", "give key_id, or all: true to revoke every key of the user")
            return {"revoked": await t(s.revoke_keys, need(data, "user"), key_id)}

        async def grants(r: Request, s: AdminService, _u: str) -> Any:
            if r.method == "POST":
                d = await body_of(r)
                approval = d.get("approval")
                if approval is not None and not isinstance(approval, bool):
                    raise ApiError(400, "invalid", "approval must be true, false or null")
                return JSONResponse(await t(lambda: s.add_grant(
                    need(d, "subject"), need(d, "pattern"), max_risk=d.get("max_risk") or "destructive",
                    approval=approval, deny=bool(d.get("deny")), kind=d.get("kind") or "user",
                    taint=d.get("taint"))), status_code=201)
            q = r.query_params
            return {"grants": await t(lambda: s.grants(q.get("subject") or None, q.get("kind") or None))}

        async def grants_remove(r: Request, s: AdminService, _u: str) -> Any:
            d = await body_of(r)
            n = await t(lambda: s.remove_grant(need(d, "subject"), need(d, "pattern"), deny=bool(d.get("deny")),
                                               kind=d.get("kind") or "user"))
            return {"removed": n}

        async def approvals(r: Request, s: AdminService, _u: str) -> Any:
            q = r.query_params
            return {"approvals": await t(lambda: s.approvals(q.get("status") or "open", q.get("user") or None,
                                                             _int(r, "limit", 100)))}

        async def approval(r: Request, s: AdminService, _u: str) -> Any:
            return await t(s.approval, r.path_params["id"], _flag(r, "reveal"))

        async def decide(r: Request, s: AdminService, user: str) -> Any:
            verb = r.path_params["verb"]
            if verb not in ("approve", "deny"):
                raise ApiError(404, "not_found", f"no action {verb!r}: use approve or deny")
            approve = verb == "approve"
            data = await body_of(r)
            by, how, approver = decided_by(user, data)
            return await t(lambda: s.decide(r.path_params["id"], approve, by, how=how, approver_user=approver,
                                            reveal=data.get("reveal") is True))

        async def pins(r: Request, s: AdminService, _u: str) -> Any:
            q = r.query_params
            return {"pins": await t(lambda: s.pins(q.get("status") or None, q.get("server") or None))}

        async def pin_diff(r: Request, s: AdminService, _u: str) -> Any:
            return await t(s.pin_diff, r.path_params["tool"])

        async def pin_accept(r: Request, s: AdminService, user: str) -> Any:
            d = await body_of(r)
            by, _how, _as = decided_by(user, d)
            return {"accepted": await t(s.accept_pin, r.path_params["tool"], need(d, "hash"), by)}

        async def audit(r: Request, s: AdminService, _u: str) -> Any:
            f = audit_filters(r)
            return {"entries": await t(lambda: s.audit(**f))}

        async def audit_export(r: Request, s: AdminService, _u: str) -> Any:
            f = audit_filters(r) | {"limit": _int(r, "limit", 10_000)}
            rows = await t(lambda: s.audit(**f))
            text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
            return Response(text, media_type="application/x-ndjson",
                            headers={"Content-Disposition": 'attachment; filename="toolhost-audit.jsonl"'})

        async def reload(_r: Request, s: AdminService, _u: str) -> Any:
            if self.reload is None:
                raise ApiError(501, "unsupported", "config reload needs a running toolhost serve")
            return await self.reload(by=s.actor)

        async def taint_reset(r: Request, s: AdminService, _u: str) -> Any:
            return await t(s.reset_taint, (await body_of(r)).get("user") or None)

        r = self.route
        return [
            *cli_routes(self),  # before the console's patterns (/tools/visible, /roles/{name}, ...)
            r("/servers", servers, ["GET"]),
            r("/servers/{name}/restart", restart, ["POST"]),
            r("/tools", tools, ["GET"]),
            r("/search", search, ["GET"]),
            r("/users", users, ["GET", "POST"]),
            r("/users/{name}", user_delete, ["DELETE"]),
            r("/users/{name}/disable", user_disable, ["POST"]),
            r("/users/{name}/enable", user_enable, ["POST"]),
            r("/roles", roles, ["GET", "POST"]),
            r("/roles/{role}/members", members, ["POST"]),
            r("/roles/{role}/members/{user}", members, ["DELETE"]),
            r("/keys", keys, ["GET", "POST"]),
            r("/keys/revoke", keys_revoke, ["POST"]),
            r("/grants", grants, ["GET", "POST"]),
            r("/grants/remove", grants_remove, ["POST"]),
            r("/approvals", approvals, ["GET"]),
            r("/approvals/{id}", approval, ["GET"]),
            r("/approvals/{id}/{verb:str}", decide, ["POST"]),
            r("/pins", pins, ["GET"]),
            r("/pins/{tool}/diff", pin_diff, ["GET"]),
            r("/pins/{tool}/accept", pin_accept, ["POST"]),
            r("/audit", audit, ["GET"]),
            r("/audit/export", audit_export, ["GET"]),
            r("/reload", reload, ["POST"]),
            r("/taint/reset", taint_reset, ["POST"]),
        ]


def api_routes(service: AdminService | None, auth: AdminAuth, **kwargs: Any) -> list[Route]:
    """The admin API routes (mount under ``/admin/api``)."""
    return AdminApi(service, auth, **kwargs).routes()
