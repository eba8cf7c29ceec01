"""Users, roles and grants repositories, and loading them as a :class:`registry.permissions.GrantPolicy`."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from sqlalchemy import Connection, and_, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from host.store import schema as s
from host.store.db import Store, bump_revision, check_name
from host.store.errors import AlreadyExists, InvalidValue, NotFound
from registry.errors import InvalidGrantPattern
from registry.permissions import Grant, GrantEffect, GrantPolicy, Role, UserAccess
from registry.safety.taint import TaintDecision
from registry.tool import Risk

__all__ = [
    "Grants",
    "RoleInfo",
    "Roles",
    "UserInfo",
    "Users",
    "load_policy",
    "parse_risk",
    "self_approval_enabled",
    "set_self_approval",
]


def parse_risk(value: str | Risk) -> Risk:
    """``read`` / ``write`` / ``destructive`` as :class:`Risk`.

    Raises:
        InvalidValue: for anything else.
    """
    try:
        return Risk(value)
    except ValueError:
        raise InvalidValue("risk", value, "expected read, write or destructive") from None


@dataclass(frozen=True)
class UserInfo:
    """A user row with counts: ``name``, ``created_at`` (UNIX s), ``roles``, ``grants``, ``active_keys``,
    and its state: ``disabled_at`` (UNIX s; ``None`` while enabled), ``disabled_by``, ``disabled_reason``."""

    name: str
    created_at: float
    roles: tuple[str, ...] = ()
    grants: int = 0
    active_keys: int = 0
    disabled_at: float | None = None
    disabled_by: str | None = None
    disabled_reason: str | None = None

    @property
    def disabled(self) -> bool:
        return self.disabled_at is not None


@dataclass(frozen=True)
class RoleInfo:
    """A role row: ``name``, ``description``, ``created_at``, ``members``, ``grants`` (count)."""

    name: str
    description: str
    created_at: float
    members: tuple[str, ...] = ()
    grants: int = 0


def _exists(conn: Connection, table, name: str) -> bool:
    return conn.execute(select(table.c.name).where(table.c.name == name)).first() is not None


def require(conn: Connection, kind: str, name: str) -> None:
    """Raise :class:`NotFound` unless the ``user`` or ``role`` ``name`` exists."""
    table = s.users if kind == "user" else s.roles
    if not _exists(conn, table, name):
        raise NotFound(kind, name)


class Users:
    """Add, list and remove users; assign roles."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(self, name: str) -> UserInfo:
        """Create a user. Raises InvalidValue (bad name), AlreadyExists."""
        check_name("user", name)
        now = time.time()
        with self.store.write() as conn:
            if _exists(conn, s.users, name):
                raise AlreadyExists("user", name)
            conn.execute(insert(s.users).values(name=name, created_at=now))
            bump_revision(conn)
        return UserInfo(name, now)

    def exists(self, name: str) -> bool:
        with self.store.read() as conn:
            return _exists(conn, s.users, name)

    def get(self, name: str) -> UserInfo:
        """One user with roles, counts and state. Raises NotFound."""
        with self.store.read() as conn:
            require(conn, "user", name)
            return self.info(conn, name)

    @classmethod
    def info(cls, conn: Connection, name: str) -> UserInfo:
        """User ``name`` (which exists) inside the caller's transaction."""
        return next(u for u in cls._rows(conn, name) if u.name == name)

    def roles_of(self, user: str) -> tuple[str, ...]:
        """The user's role names, sorted (empty for an unknown user)."""
        with self.store.engine.connect() as conn:
            q = select(s.user_roles.c.role).where(s.user_roles.c.user == user).order_by(s.user_roles.c.role)
            return tuple(r[0] for r in conn.execute(q))

    def list(self) -> list[UserInfo]:
        """Every user, sorted by name, with roles, counts and state."""
        with self.store.read() as conn:
            return self._rows(conn)

    @staticmethod
    def _rows(conn: Connection, name: str | None = None) -> list[UserInfo]:
        """Users (all, or the one named) with roles, counts and state, sorted by name."""
        def only(q, column):
            return q if name is None else q.where(column == name)

        roles: dict[str, list[str]] = {}
        for user, role in conn.execute(
            only(select(s.user_roles.c.user, s.user_roles.c.role), s.user_roles.c.user).order_by(s.user_roles.c.role)
        ):
            roles.setdefault(user, []).append(role)
        grants = dict(
            conn.execute(
                only(select(s.grants.c.subject, func.count()), s.grants.c.subject)
                .where(s.grants.c.subject_kind == "user")
                .group_by(s.grants.c.subject)
            ).all()
        )
        keys = dict(
            conn.execute(
                only(select(s.api_keys.c.user, func.count()), s.api_keys.c.user)
                .where(s.api_keys.c.revoked_at.is_(None))
                .group_by(s.api_keys.c.user)
            ).all()
        )
        rows = conn.execute(only(select(s.users), s.users.c.name).order_by(s.users.c.name)).all()
        return [
            UserInfo(r.name, r.created_at, tuple(roles.get(r.name, ())), grants.get(r.name, 0), keys.get(r.name, 0),
                     r.disabled_at, r.disabled_by, r.disabled_reason)
            for r in rows
        ]

    def remove(self, name: str) -> None:
        """Delete a user with its grants, role memberships, API keys and approvals (one transaction:
        a later user of the same name inherits nothing, not even a pending or approved call).
        Raises NotFound."""
        with self.store.write() as conn:
            require(conn, "user", name)
            conn.execute(delete(s.approvals).where(s.approvals.c.user == name))
            conn.execute(delete(s.grants).where(and_(s.grants.c.subject_kind == "user", s.grants.c.subject == name)))
            conn.execute(delete(s.user_roles).where(s.user_roles.c.user == name))
            conn.execute(delete(s.api_keys).where(s.api_keys.c.user == name))
            conn.execute(delete(s.users).where(s.users.c.name == name))
            bump_revision(conn)

    def assign_role(self, user: str, role: str) -> None:
        """Give ``user`` the role. Raises NotFound (user or role), AlreadyExists (already a member)."""
        with self.store.write() as conn:
            require(conn, "user", user)
            require(conn, "role", role)
            try:
                conn.execute(insert(s.user_roles).values(user=user, role=role))
            except IntegrityError:
                raise AlreadyExists("role membership", f"{user} in {role}") from None
            bump_revision(conn)

    def unassign_role(self, user: str, role: str) -> None:
        """Take the role from ``user``. Raises NotFound when not a member."""
        with self.store.write() as conn:
            res = conn.execute(
                delete(s.user_roles).where(and_(s.user_roles.c.user == user, s.user_roles.c.role == role))
            )
            if res.rowcount == 0:
                require(conn, "user", user)
                require(conn, "role", role)
                raise NotFound("role membership", f"{user} in {role}", f"user {user!r} does not have role {role!r}")
            bump_revision(conn)


class Roles:
    """Add, list and remove roles (named sets of grants)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(self, name: str, description: str = "") -> RoleInfo:
        """Create a role. Raises InvalidValue, AlreadyExists."""
        check_name("role", name)
        now = time.time()
        with self.store.write() as conn:
            if _exists(conn, s.roles, name):
                raise AlreadyExists("role", name)
            conn.execute(insert(s.roles).values(name=name, description=description, created_at=now))
            bump_revision(conn)
        return RoleInfo(name, description, now)

    def list(self) -> list[RoleInfo]:
        """Every role, sorted, with members and grant counts."""
        with self.store.read() as conn:
            members: dict[str, list[str]] = {}
            for user, role in conn.execute(
                select(s.user_roles.c.user, s.user_roles.c.role).order_by(s.user_roles.c.user)
            ):
                members.setdefault(role, []).append(user)
            grants = dict(
                conn.execute(
                    select(s.grants.c.subject, func.count())
                    .where(s.grants.c.subject_kind == "role")
                    .group_by(s.grants.c.subject)
                ).all()
            )
            rows = conn.execute(select(s.roles).order_by(s.roles.c.name)).all()
        return [
            RoleInfo(r.name, r.description, r.created_at, tuple(members.get(r.name, ())), grants.get(r.name, 0))
            for r in rows
        ]

    def remove(self, name: str) -> None:
        """Delete a role, its grants and memberships. Raises NotFound."""
        with self.store.write() as conn:
            require(conn, "role", name)
            conn.execute(delete(s.grants).where(and_(s.grants.c.subject_kind == "role", s.grants.c.subject == name)))
            conn.execute(delete(s.user_roles).where(s.user_roles.c.role == name))
            conn.execute(delete(s.roles).where(s.roles.c.name == name))
            bump_revision(conn)


def _grant_from_row(r) -> Grant:
    approval = None if r.approval is None else bool(r.approval)
    return Grant(
        GrantEffect(r.effect), r.pattern, Risk(r.max_risk), approval, source=f"{r.subject_kind}:{r.subject}", id=r.id,
        taint=r.taint,
    )


class Grants:
    """Add, list and remove grants of a user or a role."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(
        self,
        subject: str,
        pattern: str,
        *,
        effect: GrantEffect | str = GrantEffect.ALLOW,
        max_risk: Risk | str = Risk.DESTRUCTIVE,
        approval: bool | None = None,
        kind: str = "user",
        taint: TaintDecision | str | None = None,
    ) -> Grant:
        """Add a grant to user (``kind="user"``) or role (``kind="role"``) ``subject``.

        ``taint``: the session-taint decision (``allow``/``approve``/``deny``) for the tools an
        allow grant covers (:mod:`registry.permissions`); ``None`` keeps the config rule.

        Raises:
            NotFound: unknown user or role.
            InvalidValue: bad pattern, risk, effect, kind or taint decision, or ``taint`` on a deny grant.
            AlreadyExists: the subject already has a grant with this effect and pattern.
        """
        if kind not in ("user", "role"):
            raise InvalidValue("grant subject kind", kind, "expected user or role")
        try:
            effect = GrantEffect(effect)
        except ValueError:
            raise InvalidValue("effect", effect, "expected allow or deny") from None
        if taint is not None:
            try:
                taint = TaintDecision(taint)
            except ValueError:
                raise InvalidValue("taint", taint, "expected allow, approve or deny") from None
            if effect is GrantEffect.DENY:
                raise InvalidValue("taint", taint.value, "a deny grant refuses every call; set taint on an allow grant")
        try:
            grant = Grant(effect, pattern, parse_risk(max_risk), approval, source=f"{kind}:{subject}", taint=taint)
        except InvalidGrantPattern as e:
            raise InvalidValue(
                "pattern", pattern, f"{e.reason} (use server:NAME or a glob such as orders__*)"
            ) from None
        with self.store.write() as conn:
            require(conn, kind, subject)
            dup = conn.execute(
                select(s.grants.c.id).where(
                    and_(
                        s.grants.c.subject_kind == kind,
                        s.grants.c.subject == subject,
                        s.grants.c.effect == grant.effect.value,
                        s.grants.c.pattern == pattern,
                    )
                )
            ).first()
            if dup is not None:
                raise AlreadyExists("grant", f"{grant.effect.value} {pattern} for {kind} {subject}")
            res = conn.execute(
                insert(s.grants).values(
                    subject_kind=kind,
                    subject=subject,
                    effect=grant.effect.value,
                    pattern=pattern,
                    max_risk=grant.max_risk.value,
                    approval=None if approval is None else int(approval),
                    created_at=time.time(),
                    taint=None if grant.taint is None else grant.taint.value,
                )
            )
            bump_revision(conn)
            gid = res.inserted_primary_key[0]
        return dataclasses.replace(grant, id=gid)

    def set_self_approval(self, subject: str, pattern: str, enabled: bool = True, *, kind: str = "user") -> int:
        """:func:`set_self_approval` on this store."""
        return set_self_approval(self.store, subject, pattern, enabled, kind=kind)

    def list(self, subject: str | None = None, *, kind: str | None = None) -> list[Grant]:
        """Grants, optionally of one subject; sorted by subject then id. Raises NotFound for an unknown subject."""
        q = select(s.grants).order_by(s.grants.c.subject_kind, s.grants.c.subject, s.grants.c.id)
        if kind is not None:
            q = q.where(s.grants.c.subject_kind == kind)
        if subject is not None:
            q = q.where(s.grants.c.subject == subject)
        with self.store.read() as conn:
            if subject is not None:
                require(conn, kind or "user", subject)
            return [_grant_from_row(r) for r in conn.execute(q)]

    def remove(self, subject: str, pattern: str, *, effect: GrantEffect | str | None = None, kind: str = "user") -> int:
        """Remove the subject's grants with this pattern (and effect, if given); return how many.

        Raises:
            NotFound: unknown subject, or no such grant.
        """
        cond = and_(s.grants.c.subject_kind == kind, s.grants.c.subject == subject, s.grants.c.pattern == pattern)
        if effect is not None:
            cond = and_(cond, s.grants.c.effect == GrantEffect(effect).value)
        with self.store.write() as conn:
            require(conn, kind, subject)
            n = conn.execute(delete(s.grants).where(cond)).rowcount
            if n == 0:
                raise NotFound(
                    "grant", pattern, f"{kind} {subject!r} has no grant {pattern!r}; see `toolhost grants list`"
                )
            bump_revision(conn)
        return n


def load_policy(conn: Connection) -> GrantPolicy:
    """Build a :class:`GrantPolicy` from the database (one read transaction's worth of SELECTs);
    disabled users (:meth:`Users.disable`) are not in it."""
    role_grants: dict[str, list[Grant]] = {}
    user_grants: dict[str, list[Grant]] = {}
    for r in conn.execute(select(s.grants).order_by(s.grants.c.id)):
        target = user_grants if r.subject_kind == "user" else role_grants
        target.setdefault(r.subject, []).append(_grant_from_row(r))
    memberships: dict[str, list[str]] = {}
    for user, role in conn.execute(select(s.user_roles.c.user, s.user_roles.c.role).order_by(s.user_roles.c.role)):
        memberships.setdefault(user, []).append(role)
    roles = {
        name: Role(name, tuple(role_grants.get(name, ())), desc or "")
        for name, desc in conn.execute(select(s.roles.c.name, s.roles.c.description))
    }
    # a disabled user is left out: their grants and roles give nothing, as for an unknown user
    users = {
        name: UserAccess(tuple(user_grants.get(name, ())), tuple(memberships.get(name, ())))
        for (name,) in conn.execute(select(s.users.c.name).where(s.users.c.disabled_at.is_(None)))
    }
    return GrantPolicy(users, roles)


def set_self_approval(store: Store, subject: str, pattern: str, enabled: bool, *, kind: str = "user") -> int:
    """Let (``enabled``) or stop the callers covered by ``subject``'s allow grant ``pattern`` approve
    their own calls through their client's elicitation (off by default; for single-user desktops).
    Returns the number of grants changed.

    Raises:
        NotFound: unknown subject or no such allow grant.
    """
    cond = and_(
        s.grants.c.subject_kind == kind,
        s.grants.c.subject == subject,
        s.grants.c.pattern == pattern,
        s.grants.c.effect == GrantEffect.ALLOW.value,
    )
    with store.write() as conn:
        require(conn, kind, subject)
        n = conn.execute(update(s.grants).where(cond).values(self_approval=1 if enabled else None)).rowcount
        if n == 0:
            raise NotFound("grant", pattern, f"{kind} {subject!r} has no allow grant {pattern!r}; see `toolhost "
                                             "grants list`")
        bump_revision(conn)
    return n


def self_approval_enabled(store: Store, rule: str | None) -> bool:
    """Whether the allow grant named by a decision ``rule`` (``allow:PATTERN@KIND:SUBJECT``) has
    self-approval enabled (:func:`set_self_approval`). Unknown or other rules: ``False``."""
    if not rule or not rule.startswith("allow:"):
        return False
    pattern, sep, source = rule[len("allow:") :].rpartition("@")
    kind, _, subject = source.partition(":")
    if not sep or kind not in ("user", "role"):
        return False
    with store.read() as conn:
        row = conn.execute(
            select(s.grants.c.self_approval).where(
                and_(
                    s.grants.c.subject_kind == kind,
                    s.grants.c.subject == subject,
                    s.grants.c.pattern == pattern,
                    s.grants.c.effect == GrantEffect.ALLOW.value,
                )
            )
        ).first()
    return bool(row is not None and row.self_approval)
