"""The console's POST actions (see :mod:`servers.admin.console`): each goes through
:class:`AdminService` acting as the logged-in admin (so it is audited with that actor) and answers
with a redirect back to its page carrying a one-line outcome."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from servers.admin.actions import AdminService
from servers.admin.api import ApiError
from servers.admin.auth import AdminSession

if TYPE_CHECKING:
    from servers.admin.console import Console

__all__ = ["Warn", "action_routes"]

t = anyio.to_thread.run_sync


@dataclass(frozen=True)
class Warn:
    """An action's outcome that worked but needs the operator's eye (shown as a warning)."""

    text: str


def _field(f: FormData, name: str) -> str:
    return str(f.get(name) or "").strip()


def _subject(f: FormData) -> tuple[str, str]:
    """``(name, kind)`` of the form's ``subject`` (``role:NAME`` for a role, else a user)."""
    subject = _field(f, "subject")
    if subject.startswith("role:"):
        return subject.removeprefix("role:"), "role"
    return subject.removeprefix("user:"), "user"


def action_routes(c: Console) -> list[Route]:
    async def decide(r: Request, f: FormData, s: AdminSession, svc: AdminService) -> str:
        verb = r.path_params["verb"]
        if verb not in ("approve", "deny"):
            raise ApiError(404, "not_found", f"no action {verb!r}")
        info = await t(lambda: svc.decide(r.path_params["id"], verb == "approve", s.user,
                                          reveal=f.get("reveal") == "1"))
        return f"{info['status']} {info['id']}: {info['user']} → {info['tool']}"

    async def accept(r: Request, f: FormData, s: AdminSession, svc: AdminService) -> str:
        done = await t(svc.accept_pin, r.path_params["tool"], _field(f, "hash"), s.user)
        return f"accepted {done[0]['tool']} ({done[0]['definition_hash'][:12]})"

    async def add_user(_r: Request, f: FormData, _s: AdminSession, svc: AdminService) -> str:
        name = _field(f, "name")
        await t(svc.add_user, name)
        return f"added user {name}"

    async def remove_user(r: Request, _f: FormData, s: AdminSession, svc: AdminService) -> str:
        name = r.path_params["name"]
        if name == s.user:
            raise ApiError(400, "invalid", "you cannot delete the user you are logged in as")
        await t(svc.remove_user, name)
        return f"deleted user {name} (with its keys, grants, role memberships and approvals)"

    async def disable_user(r: Request, f: FormData, _s: AdminSession, svc: AdminService) -> str | Warn:
        name = r.path_params["name"]
        row = await t(svc.disable_user, name, _field(f, "reason") or None)
        if not row["changed"]:
            return Warn(f"{name} was already disabled (by {row['disabled_by']})")
        denied = row["denied_approvals"]
        return (f"disabled {name}: their keys are refused and their grants give nothing until enabled"
                + (f"; denied approvals {', '.join(denied)}" if denied else ""))

    async def enable_user(r: Request, _f: FormData, _s: AdminSession, svc: AdminService) -> str | Warn:
        name = r.path_params["name"]
        row = await t(svc.enable_user, name)
        return f"enabled {name}" if row["changed"] else Warn(f"{name} was not disabled")

    async def add_role(_r: Request, f: FormData, _s: AdminSession, svc: AdminService) -> str:
        name = _field(f, "name")
        await t(svc.add_role, name, _field(f, "description"))
        return f"added role {name}"

    async def assign(_r: Request, f: FormData, _s: AdminSession, svc: AdminService) -> str:
        role, user = _field(f, "role"), _field(f, "user")
        await t(svc.assign_role, user, role)
        return f"user {user} now has role {role}"

    async def create_key(_r: Request, f: FormData, s: AdminSession, svc: AdminService) -> Response:
        s.flash_key = await t(svc.create_key, _field(f, "user"), _field(f, "label"))
        return RedirectResponse("/admin/users", status_code=303)  # the users page shows it once

    async def revoke_key(_r: Request, f: FormData, _s: AdminSession, svc: AdminService) -> str:
        ids = await t(svc.revoke_keys, _field(f, "user"), _field(f, "key_id") or None)
        return f"revoked {', '.join(ids) or 'nothing'}"

    async def add_grant(_r: Request, f: FormData, _s: AdminSession, svc: AdminService) -> str | Warn:
        subject, kind = _subject(f)
        pattern = _field(f, "pattern")
        approval = {"always": True, "never": False}.get(_field(f, "approval"))
        g = await t(lambda: svc.add_grant(subject, pattern, max_risk=_field(f, "max_risk") or "destructive",
                                          approval=approval, deny=f.get("deny") == "yes", kind=kind,
                                          taint=_field(f, "taint") or None))
        done = f"added grant #{g['id']} {g['rule']}" + (f" (taint {g['taint']})" if g["taint"] else "")
        return Warn(f"{done}; but {g['unmatched']['warning']}") if "unmatched" in g else done

    async def remove_grant(_r: Request, f: FormData, _s: AdminSession, svc: AdminService) -> str:
        subject, kind = _subject(f)
        await t(lambda: svc.remove_grant(subject, _field(f, "pattern"), deny=f.get("deny") == "yes", kind=kind))
        return f"removed grant {f.get('pattern')} from {f.get('subject')}"

    async def restart(r: Request, _f: FormData, _s: AdminSession, svc: AdminService) -> str:
        if c.restart is None:
            raise ApiError(501, "unsupported", "restarting needs a running toolhost serve")
        await c.restart(r.path_params["name"])
        await t(svc.acted, "server.reconnect", f"server {r.path_params['name']}")
        return f"reconnecting {r.path_params['name']}"

    async def reload(_r: Request, _f: FormData, _s: AdminSession, svc: AdminService) -> str:
        if c.reload is None:
            raise ApiError(501, "unsupported", "config reload needs a running toolhost serve")
        out = await c.reload(by=svc.actor)
        if out.get("error"):
            raise ApiError(400, "invalid_config", out["error"])
        return (f"config reloaded: added {out['added'] or '-'}, removed {out['removed'] or '-'}, "
                f"changed {out['changed'] or '-'}")

    a = c.action
    post = ["POST"]
    return [
        Route("/admin/servers/{name}/restart", a(restart, "/admin/servers"), methods=post),
        Route("/admin/reload", a(reload, "/admin/servers"), methods=post),
        Route("/admin/approvals/{id}/{verb}", a(decide, "/admin/approvals"), methods=post),
        Route("/admin/pins/{tool}/accept", a(accept, "/admin/pins"), methods=post),
        Route("/admin/users", a(add_user, "/admin/users"), methods=post),
        Route("/admin/users/{name}/delete", a(remove_user, "/admin/users"), methods=post),
        Route("/admin/users/{name}/disable", a(disable_user, "/admin/users"), methods=post),
        Route("/admin/users/{name}/enable", a(enable_user, "/admin/users"), methods=post),
        Route("/admin/roles", a(add_role, "/admin/users"), methods=post),
        Route("/admin/roles/assign", a(assign, "/admin/users"), methods=post),
        Route("/admin/keys", a(create_key, "/admin/users"), methods=post),
        Route("/admin/keys/revoke", a(revoke_key, "/admin/users"), methods=post),
        Route("/admin/grants", a(add_grant, "/admin/grants"), methods=post),
        Route("/admin/grants/remove", a(remove_grant, "/admin/grants"), methods=post),
    ]
