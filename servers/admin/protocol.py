"""The admin actions as one declared seam: what every admin surface may ask of a store or a serve.

Two implementations: :class:`servers.admin.actions.AdminService` (over the permission store and,
when serving, the running host) and :class:`servers.cli.admin_remote.RemoteAdmin` (the same actions
through a running serve's admin API). Both take the same arguments and return the same JSON-ready
values, so a CLI command has one code path whichever answers (:class:`servers.cli.admin_common.Admin`);
a test keeps their method sets and signatures equal to this protocol's.

Errors: :class:`host.store.StoreError` subclasses from the store (their message names the fix);
through a serve, :class:`servers.cli.serve_client.ServeError` carrying that message, or
:class:`servers.cli.serve_client.ServeUnavailable`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["AdminActions"]


@runtime_checkable
class AdminActions(Protocol):
    """Every admin action (see the module docstring); rows are dicts as ``--json`` prints them."""

    # -- servers and tools
    def servers(self) -> list[dict[str, Any]]:
        """Every configured server (``toolhost servers --json``'s rows)."""
        ...

    def tools(self) -> list[dict[str, Any]]:
        """Every registered tool with risk, pin state and availability."""
        ...

    def visible_tools(self, user: str | None = None) -> dict[str, Any]:
        """``{"tools": [...], "held": [...]}``: what ``toolhost tools`` lists for ``user``."""
        ...

    def search(self, query: str, user: str | None = None, limit: int = 10) -> dict[str, Any]:
        """``tool_search`` as ``user`` with scores and why each hit ranked."""
        ...

    # -- users, roles, keys, grants
    def users(self) -> list[dict[str, Any]]: ...
    def add_user(self, name: str) -> dict[str, Any]: ...
    def remove_user(self, name: str) -> None: ...

    def disable_user(self, name: str, reason: str | None = None) -> dict[str, Any]:
        """Disable ``name`` (keys refused, grants void, open approvals denied) until enabled; its row
        with ``disabled_at``/``disabled_by``/``disabled_reason``, ``changed``, ``denied_approvals``."""
        ...

    def enable_user(self, name: str) -> dict[str, Any]:
        """Enable ``name`` again; its row and ``changed``."""
        ...

    def roles(self) -> list[dict[str, Any]]: ...
    def add_role(self, name: str, description: str = "") -> dict[str, Any]: ...
    def remove_role(self, name: str) -> None: ...
    def assign_role(self, user: str, role: str) -> None: ...
    def unassign_role(self, user: str, role: str) -> None: ...
    def keys(self, user: str | None = None) -> list[dict[str, Any]]: ...

    def create_key(self, user: str, label: str = "") -> dict[str, Any]:
        """A new key; its ``token`` (the secret) is returned only here."""
        ...

    def revoke_keys(self, user: str, key_id: str | None) -> list[str]:
        """Revoke ``key_id`` (``None``: every active key of ``user``); the revoked ids."""
        ...

    def grants(self, subject: str | None = None, kind: str | None = None) -> list[dict[str, Any]]: ...

    def add_grant(
        self, subject: str, pattern: str, *, max_risk: str = "destructive", approval: bool | None = None,
        deny: bool = False, kind: str = "user", taint: str | None = None,
    ) -> dict[str, Any]: ...

    def remove_grant(self, subject: str, pattern: str, *, deny: bool = False, kind: str = "user") -> int: ...

    def set_self_approval(
        self, subject: str, pattern: str, enable: bool, *, kind: str = "user", by: str
    ) -> dict[str, Any]:
        """Let the callers of one allow grant approve their own calls; audited."""
        ...

    # -- usage memory
    def usage_stats(self) -> dict[str, Any]: ...
    def usage_clear(self, tool: str | None = None) -> int: ...

    # -- approvals
    def approvals(self, status: str = "open", user: str | None = None, limit: int = 100) -> list[dict[str, Any]]: ...
    def approval(self, approval_id: str, reveal: bool = False) -> dict[str, Any]:
        """One approval with the call's exact arguments; values too long to show are hidden (length,
        sha256) unless ``reveal``; ``complete`` says whether ``arguments`` is all of it."""
        ...

    def decide(
        self, approval_id: str, approve: bool, by: str, *, how: str = "admin", approver_user: str | None = None,
        reveal: bool = False,
    ) -> dict[str, Any]:
        """Approve (the same call may then run once) or deny; audited. Approving a call whose arguments
        were not all shown needs ``reveal``; who issued the call may not decide it."""
        ...

    # -- pins
    def pins(self, status: str | None = None, server: str | None = None) -> list[dict[str, Any]]: ...
    def pin_diff(self, tool: str) -> dict[str, Any]: ...
    def accept_pin(self, tool: str, reviewed_hash: str, by: str) -> list[dict[str, Any]]: ...
    def accept_server_pins(self, server: str, by: str) -> list[dict[str, Any]]: ...

    # -- audit
    def audit(
        self, *, user: str | None = None, tool: str | None = None, status: str | None = None,
        action: str | None = None, since: float | None = None, after_id: int | None = None, limit: int = 50,
    ) -> list[dict[str, Any]]:
        """Entries newest first; ``since`` (UNIX s) and ``after_id`` keep only newer ones."""
        ...

    def audit_verify(self) -> dict[str, Any]:
        """``{"rows": verified, "broken": None | {"row_id", "kind", "message"}}``."""
        ...

    def audit_rows(self, *, after_id: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        """Stored rows (every column) with ids above ``after_id``, oldest first."""
        ...
