"""Disabling and enabling users: until enabled again, nothing a disabled user holds works.

:class:`UserStates` writes the state (``users.disabled_at``, ``disabled_by``, ``disabled_reason``,
schema v7); :func:`disabled_error` reads it inside any transaction. What it means is decided where
access is decided: :class:`host.access.AccessControl` refuses a disabled user's API key and stdio
session (:class:`~host.store.errors.UserDisabled`), :func:`host.store.users.load_policy` leaves the
user out of the grant policy, :meth:`host.store.ApiKeys.create` refuses a new key and
:func:`host.access.decide` refuses deciding one of their approvals.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import Connection, select, update

from host.store import schema as s
from host.store.approvals import USER_DISABLED, ApprovalInfo, deny_open_approvals_of
from host.store.db import Store, bump_revision
from host.store.errors import InvalidValue, UserDisabled
from host.store.users import UserInfo, Users, require

__all__ = ["REASON_MAX_CHARS", "UserStateChange", "UserStates", "disabled_error"]


@dataclass(frozen=True)
class UserStateChange:
    """What :meth:`UserStates.disable` / :meth:`UserStates.enable` did.

    Attributes:
        user: the user as it is now.
        changed: ``False`` when it already was in that state (nothing was written).
        denied: the approvals of the user that disabling denied (as they were before).
    """

    user: UserInfo
    changed: bool
    denied: tuple[ApprovalInfo, ...] = ()


REASON_MAX_CHARS = 500
"""Longest ``--reason`` kept with a disabled user."""


def disabled_error(conn: Connection, user: str, refused: str = "") -> UserDisabled | None:
    """The :class:`UserDisabled` error of ``user`` when it is disabled, else ``None`` (also for an
    unknown user); ``refused`` names what is refused (e.g. ``no new API key``)."""
    row = conn.execute(
        select(s.users.c.disabled_at, s.users.c.disabled_by, s.users.c.disabled_reason).where(s.users.c.name == user)
    ).first()
    if row is None or row.disabled_at is None:
        return None
    return UserDisabled(user, row.disabled_by, row.disabled_at, row.disabled_reason, refused=refused)


class UserStates:
    """Disable and enable users (see module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def check_enabled(self, name: str, *, refused: str = "") -> None:
        """Nothing when ``name`` is enabled (or unknown).

        Raises:
            UserDisabled: it is disabled (the message says by whom, since when, why and how to enable
                it, after ``refused``: what was refused).
        """
        with self.store.read() as conn:
            error = disabled_error(conn, name, refused)
        if error is not None:
            raise error

    def disable(self, name: str, *, by: str, reason: str | None = None) -> UserStateChange:
        """Disable user ``name``: until :meth:`enable`, its API keys are refused
        (:class:`UserDisabled`), no key can be created for it, its grants give nothing
        (:func:`load_policy`) and its open approvals (pending, or approved and not yet used) are
        denied now, with ``decided_by=by`` and ``decided_how="user-disabled"``. Keys, grants and
        roles are kept, so enabling restores them. One transaction; bumps the access revision, so
        every serve refuses the user at its next request. Disabling a disabled user changes nothing.

        Args:
            by: who disables it, as recorded (a user, ``local-admin`` or ``local:<os user>``).
            reason: shown with every refusal (at most :data:`REASON_MAX_CHARS` characters, one line).

        Raises:
            NotFound: unknown user.
            InvalidValue: a reason that is too long or spans lines.
        """
        reason = (reason or "").strip() or None
        if reason is not None and (len(reason) > REASON_MAX_CHARS or not reason.isprintable()):
            raise InvalidValue("reason", reason[:40] + "…" if len(reason) > 40 else reason,
                               f"use one line of at most {REASON_MAX_CHARS} characters")
        with self.store.write() as conn:
            require(conn, "user", name)
            if disabled_error(conn, name) is not None:
                return UserStateChange(Users.info(conn, name), False)
            conn.execute(update(s.users).where(s.users.c.name == name)
                         .values(disabled_at=time.time(), disabled_by=by[:96], disabled_reason=reason))
            denied = deny_open_approvals_of(conn, name, by=by, how=USER_DISABLED)
            bump_revision(conn)
            return UserStateChange(Users.info(conn, name), True, tuple(denied))

    def enable(self, name: str) -> UserStateChange:
        """Enable a disabled user again: its keys, grants and roles work at the next request (the
        approvals denied when it was disabled stay denied). Enabling an enabled user changes nothing.

        Raises:
            NotFound: unknown user.
        """
        with self.store.write() as conn:
            require(conn, "user", name)
            if disabled_error(conn, name) is None:
                return UserStateChange(Users.info(conn, name), False)
            conn.execute(update(s.users).where(s.users.c.name == name)
                         .values(disabled_at=None, disabled_by=None, disabled_reason=None))
            bump_revision(conn)
            return UserStateChange(Users.info(conn, name), True)

