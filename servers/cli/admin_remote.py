"""The admin actions over a running serve's admin API: the same methods and return values as
:class:`servers.admin.AdminService`, so every admin command has one code path whichever runs it.

:func:`servers.cli.admin_common.service` hands a command this client when a ``toolhost serve`` runs on
the same data folder and permission store (:func:`servers.cli.serve_client.running_serve`), else the
service over the database. Errors come back as :class:`servers.cli.serve_client.ServeError` (the
API's message, which is the store's) or :class:`servers.cli.serve_client.ServeUnavailable` (the
command then runs on the database itself).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from servers.admin.protocol import AdminActions
from servers.cli.serve_client import RunningServe

__all__ = ["RemoteAdmin"]


def _p(value: str) -> str:
    return quote(value, safe="")


class RemoteAdmin(AdminActions):
    """The admin actions (:class:`servers.admin.protocol.AdminActions`, as
    :class:`servers.admin.AdminService` does them), answered by the serve at ``serve``."""

    remote = True

    def __init__(self, serve: RunningServe) -> None:
        self.serve = serve
        self._get = lambda path, **params: serve.request("GET", path, params=params)
        self._post = lambda path, body=None: serve.request("POST", path, body=body or {})
        self._delete = lambda path: serve.request("DELETE", path)

    # -- servers and tools
    def servers(self) -> list[dict[str, Any]]:
        return self._get("/servers")["servers"]

    def tools(self) -> list[dict[str, Any]]:
        return self._get("/tools")["tools"]

    def visible_tools(self, user: str | None = None) -> dict[str, Any]:
        return self._get("/tools/visible", user=user)

    def search(self, query: str, user: str | None = None, limit: int = 10) -> dict[str, Any]:
        return self._get("/search", q=query, user=user, limit=limit)

    # -- audit chain
    def audit_verify(self) -> dict[str, Any]:
        return self._get("/audit/verify")

    def audit_rows(self, *, after_id: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        return self._get("/audit/rows", after_id=after_id, limit=limit)["rows"]

    # -- users, roles, keys, grants
    def users(self) -> list[dict[str, Any]]:
        return self._get("/users")["users"]

    def add_user(self, name: str) -> dict[str, Any]:
        return self._post("/users", {"name": name})

    def remove_user(self, name: str) -> None:
        self._delete(f"/users/{_p(name)}")

    def disable_user(self, name: str, reason: str | None = None) -> dict[str, Any]:
        return self._post(f"/users/{_p(name)}/disable", {"reason": reason})

    def enable_user(self, name: str) -> dict[str, Any]:
        return self._post(f"/users/{_p(name)}/enable")

    def roles(self) -> list[dict[str, Any]]:
        return self._get("/roles")["roles"]

    def add_role(self, name: str, description: str = "") -> dict[str, Any]:
        return self._post("/roles", {"name": name, "description": description})

    def remove_role(self, name: str) -> None:
        self._delete(f"/roles/{_p(name)}")

    def assign_role(self, user: str, role: str) -> None:
        self._post(f"/roles/{_p(role)}/members", {"user": user})

    def unassign_role(self, user: str, role: str) -> None:
        self._delete(f"/roles/{_p(role)}/members/{_p(user)}")

    def keys(self, user: str | None = None) -> list[dict[str, Any]]:
        return self._get("/keys", user=user)["keys"]

    def create_key(self, user: str, label: str = "") -> dict[str, Any]:
        return self._post("/keys", {"user": user, "label": label})

    def revoke_keys(self, user: str, key_id: str | None) -> list[str]:
        body: dict[str, Any] = {"user": user, "key_id": key_id}
        if key_id is None:
            body["all"] = True
        return self._post("/keys/revoke", body)["revoked"]

    def grants(self, subject: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        return self._get("/grants", subject=subject, kind=kind)["grants"]

    def add_grant(self, subject: str, pattern: str, *, max_risk: str = "destructive", approval: bool | None = None,
                  deny: bool = False, kind: str = "user", taint: str | None = None) -> dict[str, Any]:
        return self._post("/grants", {"subject": subject, "pattern": pattern, "max_risk": max_risk,
                                      "approval": approval, "deny": deny, "kind": kind, "taint": taint})

    def remove_grant(self, subject: str, pattern: str, *, deny: bool = False, kind: str = "user") -> int:
        return self._post("/grants/remove", {"subject": subject, "pattern": pattern, "deny": deny,
                                             "kind": kind})["removed"]

    def set_self_approval(self, subject: str, pattern: str, enable: bool, *, kind: str = "user",
                          by: str) -> dict[str, Any]:
        return self._post("/grants/self-approval", {"subject": subject, "pattern": pattern, "enable": enable,
                                                    "kind": kind, "by": by})

    # -- usage memory
    def usage_stats(self) -> dict[str, Any]:
        return self._get("/usage")

    def usage_clear(self, tool: str | None = None) -> int:
        return self._post("/usage/clear", {"tool": tool})["forgotten"]

    # -- approvals
    def approvals(self, status: str = "open", user: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        return self._get("/approvals", status=status, user=user, limit=limit)["approvals"]

    def approval(self, approval_id: str, reveal: bool = False) -> dict[str, Any]:
        return self._get(f"/approvals/{_p(approval_id)}", reveal="1" if reveal else None)

    def decide(
        self, approval_id: str, approve: bool, by: str, *, how: str = "admin", approver_user: str | None = None,
        reveal: bool = False,
    ) -> dict[str, Any]:
        verb = "approve" if approve else "deny"
        return self._post(f"/approvals/{_p(approval_id)}/{verb}",
                          {"by": by, "how": how, "as": approver_user, "reveal": reveal})

    # -- pins
    def pins(self, status: str | None = None, server: str | None = None) -> list[dict[str, Any]]:
        return self._get("/pins", status=status, server=server)["pins"]

    def pin_diff(self, tool: str) -> dict[str, Any]:
        return self._get(f"/pins/{_p(tool)}/diff")

    def accept_pin(self, tool: str, reviewed_hash: str, by: str) -> list[dict[str, Any]]:
        return self._post(f"/pins/{_p(tool)}/accept", {"hash": reviewed_hash, "by": by})["accepted"]

    def accept_server_pins(self, server: str, by: str) -> list[dict[str, Any]]:
        return self._post("/pins/accept-server", {"server": server, "by": by})["accepted"]

    # -- audit
    def audit(self, *, user: str | None = None, tool: str | None = None, status: str | None = None,
              action: str | None = None, since: float | None = None, after_id: int | None = None,
              limit: int = 50) -> list[dict[str, Any]]:
        return self._get("/audit", user=user, tool=tool, status=status, action=action, since=since,
                         after_id=after_id, limit=limit)["entries"]
