"""The web console at ``/admin``: server-rendered pages (Jinja2, autoescaped) over :class:`AdminService`.

No JavaScript and no build step: every page is HTML with plain forms; the servers page refreshes
itself. Log in with the API key of an ``admin`` user or the local admin token (see
:mod:`servers.admin.auth`); every ``POST`` carries the session's CSRF token and must come from
the same origin, and answers with a redirect (post-redirect-get). Secrets never reach a page,
except a newly created API key, kept in the session and shown once on the next users page
(``Cache-Control: no-store``). Every page's navigation shows how many calls wait for approval.

Pages (:mod:`servers.admin.console_pages`): ``/admin/servers`` (+ ``/{name}``), ``/admin/tools``
(+ ``/{tool}``), ``/admin/approvals`` (+ ``/{id}``), ``/admin/pins`` (+ ``/{tool}`` diff and accept),
``/admin/users`` (users, roles, keys), ``/admin/grants``, ``/admin/audit`` (+ ``/{id}``),
``/admin/search``; any other ``/admin/...`` path is a styled 404. Actions:
:mod:`servers.admin.console_actions`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
from jinja2 import Environment, FileSystemLoader, select_autoescape
from sqlalchemy import func, select
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from host.store import schema as s
from servers.admin.actions import AdminService
from servers.admin.api import classify
from servers.admin.auth import SESSION_COOKIE, SESSION_IDLE_SECONDS, AdminAuth, AdminSession, same_origin
from servers.admin.console_actions import Warn, action_routes
from servers.admin.console_pages import page_routes
from servers.shared.times import when

__all__ = ["Console", "console_routes", "pending_count"]

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

    async def render(self, name: str, request: Request, session: AdminSession | None, status: int = 200,
                     **context: Any) -> HTMLResponse:
        """Template ``name`` in the layout; with a session, the navigation carries the pending-approvals count."""
        pending = None
        if session is not None and self.service is not None and self.service.has_store:
            pending = await anyio.to_thread.run_sync(pending_count, self.service)
        path = request.url.path
        values = {
            "user": session.user if session else None, "csrf": session.csrf if session else "", "nav": NAV,
            "active": next((href for href, _ in NAV if path == href or path.startswith(href + "/")), path),
            "pending": pending, "message": request.query_params.get("msg"),
            "error": request.query_params.get("err") == "1", "warn": request.query_params.get("warn") == "1",
        } | context
        html = _env.get_template(name).render(**values)
        return HTMLResponse(html, status_code=status, headers=NO_STORE)

    # -- login -------------------------------------------------------------------------------
    async def login(self, request: Request) -> Response:
        if request.method == "GET":
            return await self.render("login.html", request, None, title="Log in")
        if not same_origin(request):
            return await self.render("login.html", request, None, 403, title="Log in",
                               message="refused: the form was posted from another site", error=True)
        form = await request.form()
        user, key_id, reason = await self.auth.check_credential(str(form.get("key") or ""), request)
        if user is None:
            return await self.render("login.html", request, None, 401, title="Log in", message=reason, error=True)
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
                return await self.render("base.html", request, session, 503, title="Unavailable",
                                   message="the permission store is off (--auth off)", error=True)
            try:
                return await handler(request, session, self.service.acting_as(session.user))
            except Exception as e:  # noqa: BLE001 - classify() re-raises what is not an admin error
                err = classify(e)
                page = "missing.html" if err.status == 404 else "base.html"
                return await self.render(page, request, session, err.status, title="Not found" if err.status == 404
                                         else "Error", message=err.message, error=True, path=request.url.path)

        return endpoint

    def action(self, handler: Any, back: str) -> Any:
        """A POST action: session + CSRF token + same origin, then redirect to ``back`` with a message."""

        async def endpoint(request: Request) -> Response:
            session = await self.auth.current_session(request)
            if session is None:
                return RedirectResponse("/admin/login", status_code=303)
            form = await request.form()
            if form.get("csrf") != session.csrf or not same_origin(request):
                return await self.render("base.html", request, session, 403, title="Refused",
                                   message="refused: missing or wrong CSRF token (reload the page and try again)",
                                   error=True)
            if self.service is None:
                return await self.render("base.html", request, session, 503, title="Unavailable",
                                   message="the permission store is off (--auth off)", error=True)
            target = back.format(**request.path_params)
            try:
                result = await handler(request, form, session, self.service.acting_as(session.user))
            except Exception as e:  # noqa: BLE001 - classify() re-raises what is not an admin error
                err = classify(e)
                return RedirectResponse(f"{target}?{urlencode({'msg': err.message, 'err': '1'})}", status_code=303)
            if isinstance(result, Response):
                return result
            if isinstance(result, Warn):
                return RedirectResponse(f"{target}?{urlencode({'msg': result.text, 'warn': '1'})}", status_code=303)
            return RedirectResponse(f"{target}?{urlencode({'msg': result})}", status_code=303)

        return endpoint

    async def not_found(self, request: Request) -> Response:
        """A styled 404: inside the layout (navigation, badge) for a session, the bare page otherwise."""
        session = await self.auth.current_session(request)
        return await self.render("missing.html", request, session, 404, title="Not found", path=request.url.path)

    def routes(self) -> list[Route | Mount]:
        async def index(_request: Request) -> Response:
            return RedirectResponse("/admin/servers", status_code=303)

        return [
            Route("/admin", index), Route("/admin/", index),
            Route("/admin/login", self.login, methods=["GET", "POST"]),
            Route("/admin/logout", self.logout, methods=["POST"]),
            *page_routes(self), *action_routes(self),
            Mount("/admin/static", StaticFiles(directory=HERE / "static"), name="admin-static"),
            Route("/admin/{rest:path}", self.not_found),
        ]


def pending_count(service: AdminService) -> int:
    """How many approvals wait for a decision (pending and not expired): the navigation's badge."""
    a = s.approvals.c
    with service.access.store.read() as conn:
        return conn.execute(select(func.count()).select_from(s.approvals)
                            .where(a.status == "pending", a.expires_at > time.time())).scalar_one()


def console_routes(service: AdminService | None, auth: AdminAuth, **kwargs: Any) -> list[Route | Mount]:
    """The console's routes (absolute paths under ``/admin``)."""
    return Console(service, auth, **kwargs).routes()
