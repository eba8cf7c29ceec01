"""The web console at ``/admin``: server-rendered pages (Jinja2, autoescaped) over :class:`AdminService`.

No JavaScript and no build step: every page is HTML with plain forms; the servers page refreshes
itself. Log in with the API key of an ``admin`` user or the local admin token (see
:mod:`servers.admin.auth`); every ``POST`` carries the session's CSRF token and must come from
the same origin. Secrets never reach a page, except a newly created API key, shown once in the
response to its creation (``Cache-Control: no-store``).

Pages: ``/admin/servers``, ``/admin/tools``, ``/admin/approvals`` (+ ``/{id}``), ``/admin/pins``
(+ ``/{tool}`` diff and accept), ``/admin/users`` (users, roles, keys), ``/admin/grants``,
``/admin/audit``, ``/admin/search``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from servers.admin.actions import APPROVAL_STATUSES, AdminService
from servers.admin.api import ApiError, _flag, audit_filters, classify
from servers.admin.approval_view import arguments_state, printable
from servers.admin.auth import SESSION_COOKIE, SESSION_IDLE_SECONDS, AdminAuth, AdminSession, same_origin
from servers.shared.times import when

__all__ = ["console_routes"]

HERE = Path(__file__).parent
NAV = [
    ("/admin/servers", "Servers"),
    ("/admin/tools", "Tools"),
    ("/admin/approvals", "Approvals"),
    ("/admin/pins", "Pins"),
    ("/admin/users", "Users & keys"),
    ("/admin/grants", "Grants"),
    ("/admin/audit", "Audit"),
    ("/admin/search", "Search"),
]
SERVERS_REFRESH_SECONDS = 5
NO_STORE = {"Cache-Control": "no-store", "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'self'; form-action 'self'; frame-ancestors 'none'"}

_env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
_env.filters["when"] = when


class Console:
    """Console routes bound to a service, the admin auth and optional restart/reload callables."""

    def __init__(self, service: AdminService | None, auth: AdminAuth, *, restart: Any = None,
                 reload: Any = None) -> None:
        self.service = service
        self.auth = auth
        self.restart = restart
        self.reload = reload

    def render(self, name: str, request: Request, session: AdminSession | None, status: int = 200,
               **context: Any) -> HTMLResponse:
        values = {
            "user": session.user if session else None, "csrf": session.csrf if session else "", "nav": NAV,
            "active": request.url.path, "message": request.query_params.get("msg"),
            "error": request.query_params.get("err") == "1",
        } | context
        html = _env.get_template(name).render(**values)
        return HTMLResponse(html, status_code=status, headers=NO_STORE)

    # -- login -------------------------------------------------------------------------------
    async def login(self, request: Request) -> Response:
        if request.method == "GET":
            return self.render("login.html", request, None, title="Log in")
        if not same_origin(request):
            return self.render("login.html", request, None, 403, title="Log in",
                               message="refused: the form was posted from another site", error=True)
        form = await request.form()
        user, key_id, reason = await self.auth.check_credential(str(form.get("key") or ""), request)
        if user is None:
            return self.render("login.html", request, None, 401, title="Log in", message=reason, error=True)
        sid, _session = self.auth.start_session(user, key_id)
        response = RedirectResponse("/admin/servers", status_code=303)
        response.set_cookie(SESSION_COOKIE, sid, max_age=SESSION_IDLE_SECONDS, path="/admin", httponly=True,
                            samesite="strict", secure=request.url.scheme == "https")
        return response

    async def logout(self, request: Request) -> Response:
        session = self.auth.session(request)
        form = await request.form()
        if session is not None and form.get("csrf") == session.csrf and same_origin(request):
            self.auth.end_session(request)
        response = RedirectResponse("/admin/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/admin")
        return response

    # -- plumbing -----------------------------------------------------------------------------
    def page(self, handler: Any) -> Any:
        """A GET page: needs a session (else redirect to the log-in page)."""

        async def endpoint(request: Request) -> Response:
            session = await self.auth.current_session(request)
            if session is None:
                return RedirectResponse("/admin/login", status_code=303)
            if self.service is None:
                return self.render("base.html", request, session, 503, title="Unavailable",
                                   message="the permission store is off (--auth off)", error=True)
            try:
                return await handler(request, session, self.service.acting_as(session.user))
            except Exception as e:  # noqa: BLE001 - classify() re-raises what is not an admin error
                err = classify(e)
                return self.render("base.html", request, session, err.status, title="Error", message=err.message,
                                   error=True)

        return endpoint

    def action(self, handler: Any, back: str) -> Any:
        """A POST action: session + CSRF token + same origin, then redirect to ``back`` with a message."""

        async def endpoint(request: Request) -> Response:
            session = await self.auth.current_session(request)
            if session is None:
                return RedirectResponse("/admin/login", status_code=303)
            form = await request.form()
            if form.get("csrf") != session.csrf or not same_origin(request):
                return self.render("base.html", request, session, 403, title="Refused",
                                   message="refused: missing or wrong CSRF token (reload the page and try again)",
                                   error=True)
            if self.service is None:
                return self.render("base.html", request, session, 503, title="Unavailable",
                                   message="the permission store is off (--auth off)", error=True)
            target = back.format(**request.path_params)
            try:
                result = await handler(request, form, session, self.service.acting_as(session.user))
            except Exception as e:  # noqa: BLE001 - classify() re-raises what is not an admin error
                err = classify(e)
                return RedirectResponse(f"{target}?{urlencode({'msg': err.message, 'err': '1'})}", status_code=303)
            if isinstance(result, Response):
                return result
            return RedirectResponse(f"{target}?{urlencode({'msg': result})}", status_code=303)

        return endpoint

    # -- pages ---------------------------------------------------------------------------------
    def routes(self) -> list[Route | Mount]:
        t = anyio.to_thread.run_sync

        async def index(_request: Request) -> Response:
            return RedirectResponse("/admin/servers", status_code=303)

        async def servers(r: Request, s: AdminSession, svc: AdminService) -> Response:
            return self.render("servers.html", r, s, title="Servers", servers=svc.servers(),
                               refresh=SERVERS_REFRESH_SECONDS)

        async def tools(r: Request, s: AdminSession, svc: AdminService) -> Response:
            rows = await t(svc.tools)
            return self.render("tools.html", r, s, title=f"Tools ({len(rows)})", tools=rows)

        async def approvals(r: Request, s: AdminSession, svc: AdminService) -> Response:
            status = r.query_params.get("status") or "open"
            rows = [r | _preview(r) for r in await t(svc.approvals, status)]
            return self.render("approvals.html", r, s, title="Approvals", approvals=rows, shown=status,
                               statuses=APPROVAL_STATUSES)

        async def approval(r: Request, s: AdminSession, svc: AdminService) -> Response:
            a = await t(svc.approval, r.path_params["id"], _flag(r, "reveal"))
            fields = [("status", a["status"]), ("user", a["user"] + (f" (key {a['key_id']})" if a["key_id"] else "")),
                      ("tool", a["tool"]), ("rule", a["rule"] or "-"), ("requested", when(a["created_at"])),
                      ("expires", when(a["expires_at"])),
                      ("decided", f"{when(a['decided_at'])} by {a['decided_by']}" if a["decided_by"] else "-"),
                      ("arguments sha256", a["arguments_hash"])]
            args = a["arguments"]
            pretty = printable(args if isinstance(args, str) else
                               json.dumps(args, indent=2, ensure_ascii=False, sort_keys=True))
            return self.render("approval.html", r, s, title=f"Approval {a['id']}", a=a, fields=fields, pretty=pretty,
                               state=arguments_state(a))

        async def pins(r: Request, s: AdminSession, svc: AdminService) -> Response:
            return self.render("pins.html", r, s, title="Pins", pins=await t(svc.pins))

        async def pin(r: Request, s: AdminSession, svc: AdminService) -> Response:
            review = await t(svc.pin_diff, r.path_params["tool"])
            return self.render("pin.html", r, s, title=f"Pin of {review['tool']}", review=review)

        async def users(r: Request, s: AdminSession, svc: AdminService, new_key: Any = None) -> Response:
            data = await t(lambda: (svc.users(), svc.roles(), svc.keys()))
            return self.render("users.html", r, s, title="Users, roles and API keys", users=data[0], roles=data[1],
                               keys=data[2], new_key=new_key)

        async def grants(r: Request, s: AdminSession, svc: AdminService) -> Response:
            rows, people, roles = await t(lambda: (svc.grants(), svc.users(), svc.roles()))
            subjects = [u["name"] for u in people] + [f"role:{x['name']}" for x in roles]
            return self.render("grants.html", r, s, title="Grants", grants=rows, subjects=subjects)

        async def audit(r: Request, s: AdminSession, svc: AdminService) -> Response:
            f = audit_filters(r)
            rows = await t(lambda: svc.audit(**f))
            query = urlencode({k: v for k, v in f.items() if v is not None})
            return self.render("audit.html", r, s, title="Audit (newest first)", entries=rows, filters=f, query=query)

        async def search(r: Request, s: AdminSession, svc: AdminService) -> Response:
            q = r.query_params.get("q", "")
            as_user = r.query_params.get("user") or None
            people = [u["name"] for u in await t(svc.users)]
            result = await t(svc.search, q, as_user) if q else None
            return self.render("search.html", r, s, title="Search playground", q=q, as_user=as_user, users=people,
                               result=result)

        # -- actions ---------------------------------------------------------------------------
        async def decide(r: Request, _f: FormData, s: AdminSession, svc: AdminService) -> str:
            verb = r.path_params["verb"]
            if verb not in ("approve", "deny"):
                raise ApiError(404, "not_found", f"no action {verb!r}")
            info = await t(lambda: svc.decide(r.path_params["id"], verb == "approve", s.user,
                                              reveal=_f.get("reveal") == "1"))
            return f"{info['status']} {info['id']}: {info['user']} → {info['tool']}"

        async def accept(r: Request, f: FormData, s: AdminSession, svc: AdminService) -> str:
            done = await t(svc.accept_pin, r.path_params["tool"], str(f.get("hash") or ""), s.user)
            return f"accepted {done[0]['tool']} ({done[0]['definition_hash'][:12]})"

        async def add_user(_r: Request, f: FormData, _s: AdminSession, svc: AdminService) -> str:
            name = str(f.get("name") or "").strip()
            await t(svc.add_user, name)
            return f"added user {name}"

        async def assign(_r: Request, f: FormData, _s: AdminSession, svc: AdminService) -> str:
            role, user = str(f.get("role") or "").strip(), str(f.get("user") or "").strip()
            if role not in {x["name"] for x in await t(svc.roles)}:
                await t(svc.add_role, role, "")
            await t(svc.assign_role, user, role)
            return f"user {user} now has role {role}"

        async def create_key(r: Request, f: FormData, s: AdminSession, svc: AdminService) -> Response:
            key = await t(svc.create_key, str(f.get("user") or ""), str(f.get("label") or ""))
            return await users(r, s, svc, new_key=key)  # shown once, in this response only

        async def revoke_key(_r: Request, f: FormData, _s: AdminSession, svc: AdminService) -> str:
            ids = await t(svc.revoke_keys, str(f.get("user") or ""), str(f.get("key_id") or "") or None)
            return f"revoked {', '.join(ids) or 'nothing'}"

        async def add_grant(_r: Request, f: FormData, _s: AdminSession, svc: AdminService) -> str:
            subject = str(f.get("subject") or "")
            kind = "role" if subject.startswith("role:") else "user"
            approval = {"always": True, "never": False}.get(str(f.get("approval") or ""))
            g = await t(lambda: svc.add_grant(subject.removeprefix("role:"), str(f.get("pattern") or ""),
                                              max_risk=str(f.get("max_risk") or "destructive"), approval=approval,
                                              deny=f.get("deny") == "yes", kind=kind))
            return f"added grant #{g['id']} {g['rule']}"

        async def remove_grant(_r: Request, f: FormData, _s: AdminSession, svc: AdminService) -> str:
            subject = str(f.get("subject") or "")
            kind = "role" if subject.startswith("role:") else "user"
            subject = subject.split(":", 1)[1] if ":" in subject else subject
            await t(lambda: svc.remove_grant(subject, str(f.get("pattern") or ""), deny=f.get("deny") == "yes",
                                             kind=kind))
            return f"removed grant {f.get('pattern')} from {f.get('subject')}"

        async def restart(r: Request, _f: FormData, _s: AdminSession, svc: AdminService) -> str:
            if self.restart is None:
                raise ApiError(501, "unsupported", "restarting needs a running toolhost serve")
            await self.restart(r.path_params["name"])
            await t(svc.acted, "server.reconnect", f"server {r.path_params['name']}")
            return f"reconnecting {r.path_params['name']}"

        async def reload(_r: Request, _f: FormData, _s: AdminSession, svc: AdminService) -> str:
            if self.reload is None:
                raise ApiError(501, "unsupported", "config reload needs a running toolhost serve")
            out = await self.reload(by=svc.actor)
            if out.get("error"):
                raise ApiError(400, "invalid_config", out["error"])
            return (f"config reloaded: added {out['added'] or '-'}, removed {out['removed'] or '-'}, "
                    f"changed {out['changed'] or '-'}")

        p, a = self.page, self.action
        return [
            Route("/admin", index), Route("/admin/", index),
            Route("/admin/login", self.login, methods=["GET", "POST"]),
            Route("/admin/logout", self.logout, methods=["POST"]),
            Route("/admin/servers", p(servers)),
            Route("/admin/servers/{name}/restart", a(restart, "/admin/servers"), methods=["POST"]),
            Route("/admin/reload", a(reload, "/admin/servers"), methods=["POST"]),
            Route("/admin/tools", p(tools)),
            Route("/admin/approvals", p(approvals)),
            Route("/admin/approvals/{id}", p(approval)),
            Route("/admin/approvals/{id}/{verb}", a(decide, "/admin/approvals"), methods=["POST"]),
            Route("/admin/pins", p(pins)),
            Route("/admin/pins/{tool}", p(pin)),
            Route("/admin/pins/{tool}/accept", a(accept, "/admin/pins"), methods=["POST"]),
            Route("/admin/users", p(users)),
            Route("/admin/users", a(add_user, "/admin/users"), methods=["POST"]),
            Route("/admin/roles/assign", a(assign, "/admin/users"), methods=["POST"]),
            Route("/admin/keys", a(create_key, "/admin/users"), methods=["POST"]),
            Route("/admin/keys/revoke", a(revoke_key, "/admin/users"), methods=["POST"]),
            Route("/admin/grants", p(grants)),
            Route("/admin/grants", a(add_grant, "/admin/grants"), methods=["POST"]),
            Route("/admin/grants/remove", a(remove_grant, "/admin/grants"), methods=["POST"]),
            Route("/admin/audit", p(audit)),
            Route("/admin/search", p(search)),
            Mount("/admin/static", StaticFiles(directory=HERE / "static"), name="admin-static"),
        ]


PREVIEW_CHARS = 120
"""Characters of the arguments shown per row on the approvals page (the approval's page shows all)."""


def _preview(row: dict[str, Any]) -> dict[str, Any]:
    """``{"preview", "whole"}``: the row's arguments on one line, and whether that is all of them
    (only then may the list offer Approve; otherwise the approver opens the approval)."""
    args = row["arguments"]
    text = printable(args if isinstance(args, str) else
                     json.dumps(args, ensure_ascii=False, sort_keys=True, separators=(",", ":")))
    whole = row["complete"] and len(text) <= PREVIEW_CHARS
    return {"preview": text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…", "whole": whole}


def console_routes(service: AdminService | None, auth: AdminAuth, **kwargs: Any) -> list[Route | Mount]:
    """The console's routes (absolute paths under ``/admin``)."""
    return Console(service, auth, **kwargs).routes()
