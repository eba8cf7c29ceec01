"""The audit log: one row per decision and call, with arguments redacted.

Redaction (:func:`redact`): :func:`registry.redaction.redact`, the rules the event log uses too
(values under secret-looking keys, bearer credentials, well-known key formats including toolhost's
``th_<id>_<secret>``, ``password=…`` pairs in text), then strings are cut to
:data:`MAX_VALUE_CHARS`. Nested dicts and lists are walked. Approvals store
:func:`redacted_full_json` instead (secrets masked, nothing cut): an approver must see every
character the approved hash covers.

Failed authentication is aggregated (:meth:`AuditLog.record_auth_failure`): at most one
``auth``/``invalid_key`` row per key id (or per unknown key) per :data:`AUTH_FAILURE_WINDOW_SECONDS`,
its ``detail`` counting the attempts, so a flood of bad tokens cannot grow the log without bound.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, insert, select, update

from host.store import schema as s
from host.store.db import Store, fit_row
from registry.redaction import REDACTED
from registry.redaction import redact as redact_secrets

__all__ = [
    "AUTH_FAILURE_WINDOW_SECONDS",
    "MAX_VALUE_CHARS",
    "REDACTED",
    "AuditEntry",
    "AuditLog",
    "redact",
    "redacted_full_json",
    "redacted_json",
]

MAX_VALUE_CHARS = 200
"""Longest string value kept in an audit row (characters); longer ones are cut with an ellipsis."""

AUTH_FAILURE_WINDOW_SECONDS = 60.0
"""Failed authentications of one key id (or of unknown keys) within this window share one audit row."""

_MAX_DEPTH = 20
_FAILURES = re.compile(r"^(\d+) failed attempt")


def _cut(value: Any, depth: int = 0, max_chars: int | None = MAX_VALUE_CHARS) -> Any:
    if max_chars is not None and depth > _MAX_DEPTH:
        return "[…]"
    if isinstance(value, dict):
        return {str(k): _cut(v, depth + 1, max_chars) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cut(v, depth + 1, max_chars) for v in value]
    if isinstance(value, str):
        return value if max_chars is None or len(value) <= max_chars else value[: max_chars - 1] + "…"
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return _cut(redact_secrets(repr(value)), depth, max_chars)


def redact(value: Any) -> Any:
    """A copy of ``value`` (JSON-like) with secrets masked by :func:`registry.redaction.redact` (the
    same rules as the event log) and strings cut to :data:`MAX_VALUE_CHARS`."""
    return _cut(redact_secrets(value))


def redacted_json(arguments: Any) -> str:
    """Compact JSON of :func:`redact` ``(arguments)``."""
    return json.dumps(redact(arguments), ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def redacted_full_json(arguments: Any) -> str:
    """Compact JSON of ``arguments`` with secrets masked (:func:`registry.redaction.redact`) and
    **nothing cut**: what an approver must see. Non-JSON values become their redacted ``repr``;
    values nested deeper than 64 levels become ``"[REDACTED: too deep]"`` (visible, never silent)."""
    return json.dumps(
        _cut(redact_secrets(arguments), max_chars=None), ensure_ascii=False, sort_keys=True, separators=(",", ":")
    )


@dataclass(frozen=True)
class AuditEntry:
    """One audit row.

    Attributes:
        id, at (UNIX s), user, key_id, action (``call``, ``list``, ``search``, ``auth``, ``approval``,
        ``pin``), tool, decision (``allow``/``deny``/``approval``), rule, status (e.g. ``ok``,
        ``tool_error``, ``unknown_tool``, ``approval_required``), duration_ms, arguments (redacted
        JSON text), detail.
    """

    id: int
    at: float
    user: str | None
    key_id: str | None
    action: str
    tool: str | None
    decision: str | None
    rule: str | None
    status: str | None
    duration_ms: float | None
    arguments: str | None
    detail: str | None


class AuditLog:
    """Append and query audit entries."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def record(
        self,
        *,
        action: str,
        user: str | None = None,
        key_id: str | None = None,
        tool: str | None = None,
        decision: str | None = None,
        rule: str | None = None,
        status: str | None = None,
        duration_ms: float | None = None,
        arguments: Any = None,
        detail: str | None = None,
    ) -> int:
        """Append an entry (``arguments`` are redacted here); return its id."""
        with self.store.write() as conn:
            res = conn.execute(
                insert(s.audit).values(**fit_row(s.audit, dict(
                    at=time.time(),
                    user=user,
                    key_id=key_id,
                    action=action,
                    tool=_cut(redact_secrets(tool)) if tool is not None else None,
                    decision=decision,
                    rule=rule,
                    status=status,
                    duration_ms=duration_ms,
                    arguments=None if arguments is None else redacted_json(arguments),
                    detail=None if detail is None else _cut(redact_secrets(detail)),
                )))
            )
            return int(res.inserted_primary_key[0])

    def record_many(self, entries: list[dict[str, Any]]) -> list[int]:
        """Append several entries in ONE transaction (the audit write-behind's batches); return
        their ids in order. Each entry holds :meth:`record`'s keyword arguments, plus an optional
        ``at`` (UNIX seconds; default now), so a queued row keeps the time of its event."""
        if not entries:
            return []
        now = time.time()
        ids: list[int] = []
        with self.store.write() as conn:
            for e in entries:
                tool, arguments, detail = e.get("tool"), e.get("arguments"), e.get("detail")
                res = conn.execute(
                    insert(s.audit).values(
                        at=e.get("at", now),
                        user=e.get("user"),
                        key_id=e.get("key_id"),
                        action=e["action"],
                        tool=_cut(redact_secrets(tool)) if tool is not None else None,
                        decision=e.get("decision"),
                        rule=e.get("rule"),
                        status=e.get("status"),
                        duration_ms=e.get("duration_ms"),
                        arguments=None if arguments is None else redacted_json(arguments),
                        detail=None if detail is None else _cut(redact_secrets(detail)),
                    )
                )
                ids.append(int(res.inserted_primary_key[0]))
        return ids

    def query(
        self,
        *,
        user: str | None = None,
        tool: str | None = None,
        status: str | None = None,
        action: str | None = None,
        decision: str | None = None,
        limit: int = 50,
    ) -> list[AuditEntry]:
        """The latest ``limit`` entries matching every given filter, newest first."""
        conds = []
        for col, val in (
            (s.audit.c.user, user),
            (s.audit.c.tool, tool),
            (s.audit.c.status, status),
            (s.audit.c.action, action),
            (s.audit.c.decision, decision),
        ):
            if val is not None:
                conds.append(col == val)
        q = select(s.audit).order_by(s.audit.c.id.desc()).limit(max(1, limit))
        if conds:
            q = q.where(and_(*conds))
        with self.store.read() as conn:
            return [AuditEntry(**r._mapping) for r in conn.execute(q)]

    def record_auth_failure(
        self,
        key_id: str | None,
        *,
        reason: str,
        user: str | None = None,
        rule: str = "api-key",
        now: float | None = None,
        window_seconds: float = AUTH_FAILURE_WINDOW_SECONDS,
    ) -> int:
        """Record a rejected credential, aggregated: the ``auth``/``invalid_key`` row of the same
        ``key_id`` (``None``: unknown or malformed keys) written within ``window_seconds`` has its
        count raised (``detail`` = ``"<n> failed attempt(s) since <first>: <reason>"``); otherwise a
        new row is added. Returns the row id. ``now``: UNIX seconds (default: the clock)."""
        now = time.time() if now is None else now
        key_cond = s.audit.c.key_id.is_(None) if key_id is None else s.audit.c.key_id == key_id
        with self.store.write() as conn:
            row = conn.execute(
                select(s.audit.c.id, s.audit.c.detail)
                .where(
                    and_(
                        s.audit.c.action == "auth",
                        s.audit.c.status == "invalid_key",
                        key_cond,
                        s.audit.c.at > now - window_seconds,
                    )
                )
                .order_by(s.audit.c.id.desc())
                .limit(1)
            ).first()
            if row is not None:
                m = _FAILURES.match(row.detail or "")
                count = (int(m.group(1)) if m else 1) + 1
                first = (row.detail or "").partition(" since ")[2].partition(":")[0] or "?"
                detail = f"{count} failed attempts since {first}: {_cut(redact_secrets(reason))}"
                conn.execute(update(s.audit).where(s.audit.c.id == row.id).values(detail=detail))
                return int(row.id)
            stamp = time.strftime("%Y-%m-%dT%H%M%SZ", time.gmtime(now))
            res = conn.execute(
                insert(s.audit).values(**fit_row(s.audit, dict(
                    at=now,
                    user=user,
                    key_id=key_id,
                    action="auth",
                    decision="deny",
                    rule=rule,
                    status="invalid_key",
                    detail=f"1 failed attempt since {stamp}: {_cut(redact_secrets(reason))}",
                )))
            )
            return int(res.inserted_primary_key[0])
