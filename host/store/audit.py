"""The audit log: one row per decision and call, with arguments redacted.

Redaction (:func:`redact`): :func:`registry.redaction.redact`, the rules the event log uses too
(values under secret-looking keys, bearer credentials, well-known key formats including toolhost's
``th_<id>_<secret>``, ``password=…`` pairs in text), then strings are cut to
:data:`MAX_VALUE_CHARS`. Nested dicts and lists are walked.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, insert, select

from host.store import schema as s
from host.store.db import Store
from registry.redaction import REDACTED
from registry.redaction import redact as redact_secrets

__all__ = ["MAX_VALUE_CHARS", "REDACTED", "AuditEntry", "AuditLog", "redact", "redacted_json"]

MAX_VALUE_CHARS = 200
"""Longest string value kept in an audit row (characters); longer ones are cut with an ellipsis."""

_MAX_DEPTH = 20


def _cut(value: Any, depth: int = 0) -> Any:
    if depth > _MAX_DEPTH:
        return "[…]"
    if isinstance(value, dict):
        return {str(k): _cut(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cut(v, depth + 1) for v in value]
    if isinstance(value, str):
        return value if len(value) <= MAX_VALUE_CHARS else value[: MAX_VALUE_CHARS - 1] + "…"
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return _cut(redact_secrets(repr(value)), depth)


def redact(value: Any) -> Any:
    """A copy of ``value`` (JSON-like) with secrets masked by :func:`registry.redaction.redact` (the
    same rules as the event log) and strings cut to :data:`MAX_VALUE_CHARS`."""
    return _cut(redact_secrets(value))


def redacted_json(arguments: Any) -> str:
    """Compact JSON of :func:`redact` ``(arguments)``."""
    return json.dumps(redact(arguments), ensure_ascii=False, sort_keys=True, separators=(",", ":"))


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
                insert(s.audit).values(
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
                )
            )
            return int(res.inserted_primary_key[0])

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
