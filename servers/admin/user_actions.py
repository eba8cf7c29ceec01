"""The admin actions on users, roles and API keys, including disabling and enabling a user.

:class:`UserAdmin` is the part of :class:`servers.admin.actions.AdminService` that administers who
may connect; every act is audited as an ``admin`` row by :meth:`AdminService.acted`.

Disabling (:meth:`UserAdmin.disable_user`) goes through :class:`host.store.UserStates`, which
keeps the user's keys, grants and roles but makes them worthless until :meth:`UserAdmin.enable_user`
(what a disabled user meets is decided in the access layer: :mod:`host.store.user_state`). The
user's open approvals are denied at once, each with its own ``approval`` audit row and event. Who
cannot be disabled, with a clear error (:class:`host.store.InvalidValue` or :class:`host.store.NotFound`):
the local admin (``local-admin``, ``local:<os user>``: a loopback-only token, not a user), the
admin doing it (they would lock themself out mid-act), and anyone on a data folder without users
(open access, or a serve with ``--auth off`` whose database has none).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from host.store import AuditRecord, InvalidValue, NotFound, UserStateChange

if TYPE_CHECKING:
    from host.access import AccessControl

__all__ = ["LOCAL_ADMIN", "UserAdmin", "row_of"]

LOCAL_ADMIN = "local-admin"
"""Who the local admin token stands for (loopback only; see :mod:`servers.admin.auth`)."""


def row_of(obj: Any) -> dict[str, Any]:
    """A dataclass as a JSON-ready dict (tuples become lists)."""
    data = dataclasses.asdict(obj)
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in data.items()}


class UserAdmin:
    """Users, roles and keys (a base of :class:`servers.admin.actions.AdminService`, which provides
    ``access``, ``actor``, ``runtime``, ``acted``, ``on_approval`` and ``on_user_state``)."""

    access: AccessControl
    actor: str
    runtime: Any
    on_approval: Callable[[str, str, str, str, str | None], None] | None
    on_user_state: Callable[[str, str, dict[str, Any]], None] | None
    acted: Callable[..., None]

    def users(self) -> list[dict[str, Any]]:
        return [row_of(u) for u in self.access.users.list()]

    def add_user(self, name: str) -> dict[str, Any]:
        """Create user ``name``: its row, plus ``"serve_closed": {"pid": N}`` when this is the service of
        a serve running in open access (pid N), which from now on refuses every tool until restarted."""
        row = row_of(self.access.users.add(name))
        self.acted("user.add", f"user {name}")
        if self.runtime is not None and not self.runtime.policy.per_user:
            row["serve_closed"] = {"pid": os.getpid()}
        return row

    def remove_user(self, name: str) -> None:
        self.access.users.remove(name)
        self.acted("user.remove", f"user {name}")

    def disable_user(self, name: str, reason: str | None = None) -> dict[str, Any]:
        """Disable user ``name`` (module docstring): the user's row with ``disabled_at``/``_by``/``_reason``,
        ``changed`` (``False``: it was disabled already, nothing written) and ``denied_approvals`` (ids).

        Raises:
            host.store.NotFound: unknown user (the hint says so when there are no users at all).
            host.store.InvalidValue: the local admin, the acting admin themself, or a bad reason.
        """
        self._check_can_change(name, "disable")
        done = self._known(name, "disable", lambda: self.access.user_states.disable(name, by=self.actor, reason=reason))
        for a in done.denied:
            self.access.audit_log.record(AuditRecord(
                "approval", user=a.user, key_id=a.key_id, tool=a.tool, decision="deny", rule=a.rule, status="denied",
                detail=f"user-disabled: {a.status} approval denied by {self.actor} (user {name} disabled)",
                definition_hash=a.definition_hash, approval_id=a.id, arguments_digest=a.arguments_hash,
                approver=self.actor))
            if self.on_approval is not None:
                self.on_approval(a.id, a.user, a.tool, "denied", self.actor)
        if done.changed:
            why = f": {done.user.disabled_reason}" if done.user.disabled_reason else ""
            self.acted("user.disable", f"user {name}{why}")
            self._state_event("user.disable", f"user {name} disabled by {self.actor}{why}; "
                              f"{len(done.denied)} open approval(s) denied", done)
        return self._state_row(done)

    def enable_user(self, name: str) -> dict[str, Any]:
        """Enable user ``name`` again: its row and ``changed`` (``False``: it was enabled already).

        Raises:
            host.store.NotFound: unknown user.
            host.store.InvalidValue: the local admin or the acting admin themself.
        """
        self._check_can_change(name, "enable")
        done = self._known(name, "enable", lambda: self.access.user_states.enable(name))
        if done.changed:
            self.acted("user.enable", f"user {name}")
            self._state_event("user.enable", f"user {name} enabled by {self.actor}", done)
        return self._state_row(done)

    def _check_can_change(self, name: str, verb: str) -> None:
        local = name == LOCAL_ADMIN or name.startswith("local:")
        if local and not self.access.users.exists(name):
            raise InvalidValue("user", name, (
                f"the local admin is not a user and cannot be {verb}d: it is the loopback-only token a running "
                "`toolhost serve` writes to its data folder (new at each start, removed at exit) and the CLI "
                "of whoever can read that folder; to take it away, stop the serve or restrict the data folder"))
        if name == self.actor:
            raise InvalidValue("user", name, f"you cannot {verb} the user you act as; another admin must")

    def _known(self, name: str, verb: str, change: Callable[[], UserStateChange]) -> UserStateChange:
        try:
            return change()
        except NotFound as e:
            if e.kind == "user" and not self.access.users.list():
                raise NotFound("user", name, (
                    "this data folder has no users: its gateway serves every local client without a key (open "
                    f"access) or runs with --auth off, so there is no one to {verb}; `toolhost users add NAME` "
                    "turns on per-user access")) from None
            raise

    def _state_row(self, done: UserStateChange) -> dict[str, Any]:
        return row_of(done.user) | {"changed": done.changed, "denied_approvals": [a.id for a in done.denied]}

    def _state_event(self, event: str, message: str, done: UserStateChange) -> None:
        if self.on_user_state is not None:
            self.on_user_state(event, message, {"user": done.user.name, "by": self.actor,
                                                "reason": done.user.disabled_reason})

    def roles(self) -> list[dict[str, Any]]:
        return [row_of(r) for r in self.access.roles.list()]

    def add_role(self, name: str, description: str = "") -> dict[str, Any]:
        row = row_of(self.access.roles.add(name, description))
        self.acted("role.add", f"role {name}")
        return row

    def remove_role(self, name: str) -> None:
        self.access.roles.remove(name)
        self.acted("role.remove", f"role {name}")

    def assign_role(self, user: str, role: str) -> None:
        self.access.users.assign_role(user, role)
        self.acted("role.assign", f"role {role} to user {user}")

    def unassign_role(self, user: str, role: str) -> None:
        self.access.users.unassign_role(user, role)
        self.acted("role.unassign", f"role {role} from user {user}")

    def keys(self, user: str | None = None) -> list[dict[str, Any]]:
        return [row_of(k) | {"active": k.active} for k in self.access.keys.list(user)]

    def create_key(self, user: str, label: str = "") -> dict[str, Any]:
        """A new key; ``token`` is the secret, returned only here (only its hash is stored)."""
        info, token = self.access.keys.create(user, label)
        self.acted("key.create", f"key {info.key_id} of user {user}" + (f" ({label})" if label else ""))
        return row_of(info) | {"active": True, "token": token}

    def revoke_keys(self, user: str, key_id: str | None) -> list[str]:
        ids = list(self.access.keys.revoke(user, key_id))
        self.acted("key.revoke", f"keys {', '.join(ids) or '(none)'} of user {user}")
        return ids
