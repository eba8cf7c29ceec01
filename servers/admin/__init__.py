"""Administering a running ``toolhost serve``: the admin API, the web console, config reload.

* :class:`AdminActions` - the admin actions as a protocol (:class:`AdminService` and
  :class:`servers.cli.admin_remote.RemoteAdmin` implement it);
* :class:`AdminService` - every admin action, implemented once (API, console and CLI use it);
* :func:`admin_routes` - the ``/admin/api`` JSON API and the ``/admin`` console as Starlette routes;
* :class:`AdminAuth`, :func:`write_local_token`, :func:`read_local_token` - who may administer;
* :class:`ConfigReloader` - applying a changed config file without a restart.
"""

from __future__ import annotations

from typing import Any

from starlette.routing import Mount, Route

from servers.admin.actions import ADMIN_ROLE, AdminService
from servers.admin.auth import TOKEN_FILE, AdminAuth, read_local_token, write_local_token
from servers.admin.protocol import AdminActions
from servers.admin.reload import ConfigReloader

__all__ = [
    "ADMIN_ROLE",
    "TOKEN_FILE",
    "AdminActions",
    "AdminAuth",
    "AdminService",
    "ConfigReloader",
    "admin_routes",
    "read_local_token",
    "write_local_token",
]


def admin_routes(service: AdminService | None, auth: AdminAuth, *, restart: Any = None,
                 reload: Any = None) -> list[Route | Mount]:
    """``/admin/api/...`` (JSON, bearer) and ``/admin/...`` (console pages, session) routes."""
    from servers.admin.api import api_routes  # noqa: PLC0415 - keep `import servers.admin` light
    from servers.admin.console import console_routes  # noqa: PLC0415

    return [Mount("/admin/api", routes=api_routes(service, auth, restart=restart, reload=reload)),
            *console_routes(service, auth, restart=restart, reload=reload)]
