"""Approvals: calls that wait for a human.

Life cycle: ``pending`` → ``approved`` | ``denied`` | ``expired``; ``approved`` → ``used`` (once)
| ``expired``. A pending approval expires after ``pending_ttl_seconds``; an approved one can run
exactly once within ``approved_ttl_seconds`` of the decision, for the same user, tool and
arguments (compared by sha256 of canonical JSON). :meth:`Approvals.consume` flips
``approved`` → ``used`` with a conditional UPDATE, so two concurrent calls cannot both use it.

An open approval (pending, or approved and not yet used) keeps the call's exact arguments
(``arguments_json``: canonical JSON, nothing masked or cut, sealed at rest by
:class:`host.store.sealed.ArgumentSeal`) so an approver sees what the tool would receive; they are
cleared when the approval is used, denied or expires, leaving only the redacted copy
(``arguments_redacted``) and the digest. Without a seal nothing exact is stored.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, insert, or_, select, true, update

from host.store import schema as s
from host.store.audit import redacted_full_json
from host.store.audit_chain import arguments_digest
from host.store.db import Store
from host.store.errors import ApprovalNotPending, NotFound
from host.store.sealed import ArgumentSeal

__all__ = [
    "APPROVED_TTL_SECONDS",
    "PENDING_TTL_SECONDS",
    "USER_DISABLED",
    "ApprovalInfo",
    "Approvals",
    "arguments_hash",
    "call_issuers",
    "deny_open_approvals_of",
    "exact_json",
]

USER_DISABLED = "user-disabled"
"""``decided_how`` of the approvals denied because their user was disabled (:func:`deny_open_approvals_of`)."""

PENDING_TTL_SECONDS = 3600.0
"""How long a request waits for a decision (seconds)."""

APPROVED_TTL_SECONDS = 600.0
"""How long an approved call may be run, once (seconds)."""


def arguments_hash(arguments: Any) -> str:
    """sha256 hex of canonical JSON (sorted keys, no whitespace) of ``arguments``
    (:func:`host.store.audit_chain.arguments_digest`, also stored on each audit row)."""
    return arguments_digest(arguments)


@dataclass(frozen=True)
class ApprovalInfo:
    """An approval row.

    Attributes: id (``ap_`` + 16 hex), user, key_id, tool, arguments_hash, arguments_redacted (compact
    JSON of the full arguments with secrets masked and no value cut, so an approver sees everything
    the hash covers; rows written before this change may hold values cut to 200 characters), rule,
    status, created_at, expires_at, decided_at, decided_by, used_at (UNIX seconds), definition_hash
    (the served tool definition the approval is bound to; ``None`` for rows written before approvals
    were bound to a definition),
    decided_how (``cli``, ``admin``, ``elicitation``, ``self-elicitation``), arguments_json (the exact
    arguments as canonical JSON while the approval is open and this process holds the data folder's
    seal key, else ``None``; stored sealed).
    """

    id: str
    user: str
    key_id: str | None
    tool: str
    arguments_hash: str
    arguments_redacted: str
    rule: str | None
    status: str
    created_at: float
    expires_at: float
    decided_at: float | None
    decided_by: str | None
    used_at: float | None
    definition_hash: str | None = None
    decided_how: str | None = None
    arguments_json: str | None = None


def exact_json(arguments: Any) -> str:
    """Canonical JSON of the exact arguments (sorted keys, compact, non-ASCII kept): what
    :attr:`ApprovalInfo.arguments_json` holds and :func:`arguments_hash` digests the same value of."""
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=repr)


_CLEARED = {"arguments_json": None}
"""What a closed approval forgets: its exact arguments."""


def _same_call(user: str, tool: str, arguments_hash: str, definition_hash: str | None) -> Any:
    """The "same call" clause: approvals of ``user`` for ``tool`` with these arguments (their
    :func:`arguments_hash`) against this served definition (``None`` matches only rows bound to no
    definition). A request and its consumption match on exactly this."""
    a = s.approvals.c
    same_definition = a.definition_hash.is_(None) if definition_hash is None else a.definition_hash == definition_hash
    return and_(a.user == user, a.tool == tool, a.arguments_hash == arguments_hash, same_definition)




def deny_open_approvals_of(conn: Connection, user: str, *, by: str, how: str) -> list[ApprovalInfo]:
    """Deny, inside the caller's write transaction, every pending or approved-but-unused approval
    that ``user`` issued or that was asked for them (``"root as bob"`` names both); ``how`` is
    stored as ``decided_how`` (e.g. ``user-disabled``). Returns them as they were before (without
    their exact arguments), oldest first."""
    rows = conn.execute(
        select(s.approvals)
        .where(s.approvals.c.status.in_(("pending", "approved")))
        .order_by(s.approvals.c.created_at)
    ).all()
    hit = [r for r in rows if user in call_issuers(r.user)]
    if hit:
        conn.execute(
            update(s.approvals)
            .where(s.approvals.c.id.in_([r.id for r in hit]))
            .values(status="denied", decided_at=time.time(), decided_by=by[:64], decided_how=how, **_CLEARED)
        )
    return [ApprovalInfo(**(dict(r._mapping) | {"arguments_json": None})) for r in hit]


def call_issuers(recorded: str) -> tuple[str, ...]:
    """Both of ``"root as bob"`` (:attr:`registry.policy.Principal.recorded`), else the one user."""
    issuer, sep, subject = recorded.partition(" as ")
    return (issuer, subject) if sep else (recorded,)


class Approvals:
    """Request, decide, consume and list approvals."""

    def __init__(
        self,
        store: Store,
        *,
        pending_ttl_seconds: float = PENDING_TTL_SECONDS,
        approved_ttl_seconds: float = APPROVED_TTL_SECONDS,
        seal: ArgumentSeal | None = None,
    ) -> None:
        self.store = store
        self.seal = seal
        self.pending_ttl_seconds = pending_ttl_seconds
        self.approved_ttl_seconds = approved_ttl_seconds

    def _info(self, r) -> ApprovalInfo:
        """A row as :class:`ApprovalInfo`, its exact arguments opened (``None`` when they cannot be)."""
        values = dict(r._mapping)
        sealed = values.get("arguments_json")
        values["arguments_json"] = None if self.seal is None else self.seal.open(sealed, values["id"])
        return ApprovalInfo(**values)

    def _expire(self, conn, now: float) -> None:
        conn.execute(
            update(s.approvals)
            .where(and_(s.approvals.c.status.in_(("pending", "approved")), s.approvals.c.expires_at <= now))
            .values(status="expired", **_CLEARED)
        )

    def request(
        self,
        user: str,
        tool: str,
        arguments: Any,
        *,
        key_id: str | None = None,
        rule: str | None = None,
        definition_hash: str | None = None,
        must_mention: str | None = None,
    ) -> ApprovalInfo:
        """The approval for this call: the pending one for the same user/tool/arguments/definition, a
        denial of it decided within ``pending_ttl_seconds`` (status ``denied``: do not ask again), or
        a new pending one bound to ``definition_hash`` (the served definition's sha256). A denial
        because the user was disabled (:data:`USER_DISABLED`) does not count: enabled again, they may ask again.

        ``must_mention``: a text the approver must be shown (e.g. ``"taint:"`` for a session-taint
        hold). A pending request of the same call whose ``rule`` lacks it gets ``rule`` instead, so the
        approver decides on every reason the call is held for."""
        h = arguments_hash(arguments)
        now = time.time()
        with self.store.write() as conn:
            self._expire(conn, now)
            row = conn.execute(
                select(s.approvals)
                .where(
                    and_(
                        _same_call(user, tool, h, definition_hash),
                        or_(
                            s.approvals.c.status == "pending",
                            and_(
                                s.approvals.c.status == "denied",
                                s.approvals.c.decided_at > now - self.pending_ttl_seconds,
                                # denied because the user was disabled: asking again once enabled is fine
                                s.approvals.c.decided_how.is_distinct_from(USER_DISABLED),
                            ),
                        ),
                    )
                )
                .order_by(s.approvals.c.created_at.desc())
                .limit(1)
            ).first()
            if row is not None:
                if must_mention is not None and row.status == "pending" and must_mention not in (row.rule or ""):
                    conn.execute(update(s.approvals).where(s.approvals.c.id == row.id).values(rule=rule))
                    row = conn.execute(select(s.approvals).where(s.approvals.c.id == row.id)).one()
                return self._info(row)
            approval_id = "ap_" + secrets.token_hex(8)
            exact = exact_json(arguments or {})
            values = {
                "id": approval_id,
                "user": user,
                "key_id": key_id,
                "tool": tool,
                "arguments_hash": h,
                "arguments_redacted": redacted_full_json(arguments or {}),
                "rule": rule,
                "status": "pending",
                "created_at": now,
                "expires_at": now + self.pending_ttl_seconds,
                "decided_at": None,
                "decided_by": None,
                "used_at": None,
                "definition_hash": definition_hash,
                "decided_how": None,
                "arguments_json": None if self.seal is None else self.seal.seal(exact, approval_id),
            }
            conn.execute(insert(s.approvals).values(**values))
        return ApprovalInfo(**(values | {"arguments_json": exact if self.seal is not None else None}))

    def _decide(self, approval_id: str, status: str, by: str, how: str = "cli") -> ApprovalInfo:
        now = time.time()
        with self.store.write() as conn:
            self._expire(conn, now)
            row = conn.execute(select(s.approvals).where(s.approvals.c.id == approval_id)).first()
            if row is None:
                raise NotFound("approval", approval_id)
            if row.status != "pending":
                raise ApprovalNotPending(approval_id, row.status)
            expires = now + self.approved_ttl_seconds if status == "approved" else row.expires_at
            conn.execute(
                update(s.approvals)
                .where(s.approvals.c.id == approval_id)
                .values(status=status, decided_at=now, decided_by=by[:64], expires_at=expires, decided_how=how,
                        **({} if status == "approved" else _CLEARED))
            )
            row = conn.execute(select(s.approvals).where(s.approvals.c.id == approval_id)).one()
        return self._info(row)

    def approve(self, approval_id: str, *, by: str = "admin", how: str = "cli") -> ApprovalInfo:
        """Approve a pending request; the call may then run once within ``approved_ttl_seconds``.
        ``by``: who decided; ``how``: ``cli``, ``admin``, ``elicitation`` or ``self-elicitation``.

        Raises:
            NotFound: unknown id.
            ApprovalNotPending: already decided, used or expired.
        """
        return self._decide(approval_id, "approved", by, how)

    def deny(self, approval_id: str, *, by: str = "admin", how: str = "cli") -> ApprovalInfo:
        """Deny a pending request. Raises NotFound, ApprovalNotPending."""
        return self._decide(approval_id, "denied", by, how)

    def void_tool(self, tool: str) -> list[str]:
        """Expire every pending or approved approval of ``tool`` (its definition changed: what was
        approved is no longer what would run); returns their ids."""
        with self.store.write() as conn:
            ids = [
                r.id
                for r in conn.execute(
                    select(s.approvals.c.id).where(
                        and_(s.approvals.c.tool == tool, s.approvals.c.status.in_(("pending", "approved")))
                    )
                )
            ]
            if ids:
                conn.execute(update(s.approvals).where(s.approvals.c.id.in_(ids)).values(status="expired", **_CLEARED))
        return ids

    def consume(
        self, user: str, tool: str, arguments: Any, *, definition_hash: str | None = None,
        must_mention: str | None = None,
    ) -> ApprovalInfo | None:
        """Use an approved, unexpired approval for exactly this call (once) and this served definition;
        ``None`` when there is none. ``must_mention``: only an approval whose ``rule`` (what the approver
        was shown) contains this text counts (a session-taint hold is not lifted by an approval given
        for the policy alone)."""
        h = arguments_hash(arguments)
        now = time.time()
        with self.store.write() as conn:
            self._expire(conn, now)
            row = conn.execute(
                select(s.approvals)
                .where(
                    and_(_same_call(user, tool, h, definition_hash), s.approvals.c.status == "approved",
                         true() if must_mention is None else s.approvals.c.rule.contains(must_mention, autoescape=True))
                )
                .order_by(s.approvals.c.decided_at)
                .limit(1)
            ).first()
            if row is None:
                return None
            res = conn.execute(
                update(s.approvals)
                .where(and_(s.approvals.c.id == row.id, s.approvals.c.status == "approved"))
                .values(status="used", used_at=now, **_CLEARED)
            )
            if res.rowcount != 1:
                return None
            row = conn.execute(select(s.approvals).where(s.approvals.c.id == row.id)).one()
        return self._info(row)

    def get(self, approval_id: str) -> ApprovalInfo:
        """One approval. Raises NotFound."""
        with self.store.read() as conn:
            row = conn.execute(select(s.approvals).where(s.approvals.c.id == approval_id)).first()
        if row is None:
            raise NotFound("approval", approval_id)
        return self._info(row)

    def list(self, *, status: str | None = None, user: str | None = None, limit: int = 100) -> list[ApprovalInfo]:
        """Approvals, newest first; ``status``: ``None``/``"all"``, ``"open"`` (pending or approved-not-yet-used)
        or one status."""
        with self.store.write() as conn:
            self._expire(conn, time.time())
            q = select(s.approvals).order_by(s.approvals.c.created_at.desc()).limit(limit)
            if status == "open":
                q = q.where(or_(s.approvals.c.status == "pending", s.approvals.c.status == "approved"))
            elif status not in (None, "all"):
                q = q.where(s.approvals.c.status == status)
            if user is not None:
                q = q.where(s.approvals.c.user == user)
            return [self._info(r) for r in conn.execute(q)]
