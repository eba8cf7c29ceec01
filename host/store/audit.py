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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, insert, select, update

from host.store import schema as s
from host.store.audit_chain import (
    CANONICAL,
    ChainBreak,
    arguments_digest,
    digest_of,
    lock_head,
    row_hash,
    set_head,
    verify_rows,
)
from host.store.audit_record import AuditRecord
from host.store.db import Store, fit_row
from registry.redaction import REDACTED
from registry.redaction import redact as redact_secrets

__all__ = [
    "AUTH_FAILURE_WINDOW_SECONDS",
    "MAX_VALUE_CHARS",
    "REDACTED",
    "AuditEntry",
    "AuditLog",
    "AuditRecord",
    "ChainBreak",
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
    return CANONICAL(redact(arguments))


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
        JSON text), detail, definition_hash (sha256 of the served tool definition), approval_id,
        arguments_digest (sha256 of the canonical unredacted arguments), approver (who approved the
        call, ``None`` when none did), prev_hash and row_hash (:mod:`host.store.audit_chain`).
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
    definition_hash: str | None = None
    approval_id: str | None = None
    arguments_digest: str | None = None
    approver: str | None = None
    prev_hash: str | None = None
    row_hash: str | None = None


_ENTRY_FIELDS = tuple(AuditEntry.__dataclass_fields__)


def _row_values(entry: AuditRecord | Mapping[str, Any]) -> dict[str, Any]:
    """The stored columns of one entry: redacted, cut, with the argument digest (of the unredacted
    arguments, so a call can be matched to its approval) and the time.

    Raises:
        TypeError: a mapping with an unknown field, or no ``action``.
    """
    e = AuditRecord.coerce(entry)
    if not e.action:
        raise TypeError("an audit entry needs 'action' (call, list, search, auth, approval, pin, admin)")
    arguments, tool, detail, digest = e.arguments, e.tool, e.detail, e.arguments_digest
    stored = None
    if arguments is not None:
        clean = redact(arguments)
        if digest is None and isinstance(arguments, dict) and arguments and clean == arguments:
            # nothing masked or cut (the usual call): the stored text is the canonical text the
            # digest hashes, so it is encoded once
            stored = CANONICAL(clean)
            digest = digest_of(stored)
        else:
            stored = CANONICAL(clean)
            if digest is None:
                digest = arguments_digest(arguments)
    # escape, then cut to the column sizes before hashing: the hash covers what is stored
    return fit_row(s.audit, _storable({
        "at": float(time.time() if e.at is None else e.at),
        "user": e.user,
        "key_id": e.key_id,
        "action": e.action,
        "tool": _cut(redact_secrets(tool)) if tool is not None else None,
        "decision": e.decision,
        "rule": e.rule,
        "status": e.status,
        "duration_ms": None if e.duration_ms is None else float(e.duration_ms),
        "arguments": stored,
        "detail": None if detail is None else _cut(redact_secrets(detail)),
        "definition_hash": e.definition_hash,
        "approval_id": e.approval_id,
        "arguments_digest": digest,
        "approver": e.approver,
    }))


def _storable(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with every text valid UTF-8: a lone UTF-16 surrogate (JSON allows ``"\\ud800"``, and
    a client may send it in arguments or a tool name) is stored as its ``\\udXXX`` escape, since
    neither SQLite nor PostgreSQL accept it and the row would be lost (hostile-caller finding: such
    a call had no audit row). ASCII text, the usual case, is returned as is without encoding."""
    for key, value in row.items():
        if isinstance(value, str) and not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                row[key] = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return row


_INSERT_ROW = insert(s.audit)
"""Built once (its compiled form is cached); the row's columns come with each execute."""


def _append(conn: Any, rows: list[dict[str, Any]]) -> list[int]:
    """Insert ``rows`` at the end of the hash chain (caller holds a write transaction)."""
    _last_id, prev = lock_head(conn)
    ids: list[int] = []
    for values in rows:
        h = row_hash(prev, values)
        res = conn.execute(_INSERT_ROW, {**values, "prev_hash": prev, "row_hash": h})
        ids.append(int(res.inserted_primary_key[0]))
        prev = h
    if ids:
        set_head(conn, ids[-1], prev)
    return ids


class AuditLog:
    """Append and query audit entries; every row extends the hash chain (:mod:`host.store.audit_chain`)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def record(self, entry: AuditRecord) -> int:
        """Append ``entry`` (its ``arguments`` are redacted here, their digest taken before); return its id."""
        return self.record_many([entry])[0]

    def record_many(self, entries: Sequence[AuditRecord | Mapping[str, Any]]) -> list[int]:
        """Append several entries in one transaction, in order; returns their ids.

        Each entry is an :class:`AuditRecord` or a mapping of its attribute names (``at``, UNIX
        seconds, for entries recorded earlier and written late). All are redacted and chained.

        Raises:
            TypeError: an entry has an unknown field or no ``action`` (nothing is written).
        """
        rows = [_row_values(e) for e in entries]
        if not rows:
            return []
        appender = self.store.audit_appender
        if appender is not None:
            return appender.append(rows)
        with self.store.write() as conn:
            return _append(conn, rows)

    def try_record_many(self, entries: Sequence[AuditRecord | Mapping[str, Any]]) -> list[int] | None:
        """:meth:`record_many` without waiting: ``None`` (nothing written) when the write cannot
        happen at once: another writer holds the database lock, or the database is not a SQLite
        file (whose plain appender, :mod:`host.store.audit_sqlite`, makes a write cost
        microseconds). For callers on an event loop that have a slower path to fall back to.

        Raises:
            TypeError: an entry has an unknown field or no ``action`` (nothing is written).
            sqlite3.Error: any failure but a busy database (nothing is written).
        """
        appender = self.store.audit_appender
        if appender is None:
            return None
        rows = [_row_values(e) for e in entries]
        if not rows:
            return []
        return appender.try_append(rows)

    @property
    def checkpoint_due(self) -> bool:
        """True when :meth:`checkpoint` should run (after many :meth:`try_record_many` commits)."""
        appender = self.store.audit_appender
        return appender is not None and appender.checkpoint_due

    def checkpoint(self) -> None:
        """Checkpoint the SQLite WAL the appender wrote (blocking; off the event loop). No-op elsewhere."""
        appender = self.store.audit_appender
        if appender is not None:
            appender.checkpoint()

    def rows(self, *, after_id: int = 0, batch: int = 1000) -> Iterator[dict[str, Any]]:
        """Every audit row (all columns, as stored), oldest first, read in batches of ``batch``."""
        last = after_id
        while True:
            with self.store.read() as conn:
                chunk = [
                    dict(r)
                    for r in conn.execute(
                        select(s.audit).where(s.audit.c.id > last).order_by(s.audit.c.id).limit(batch)
                    ).mappings()
                ]
            if not chunk:
                return
            yield from chunk
            last = chunk[-1]["id"]

    def verify(self) -> tuple[int, ChainBreak | None]:
        """Check the whole hash chain: ``(rows verified, first broken link or None)``."""
        with self.store.read() as conn:
            head = conn.execute(select(s.audit_head).where(s.audit_head.c.id == 1)).first()
        return verify_rows(self.rows(), head=None if head is None else (head.last_id, head.last_hash))

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
            found = [dict(r._mapping) for r in conn.execute(q)]
            auth_ids = [r["id"] for r in found if r["action"] == "auth"]
            tally = (
                dict(conn.execute(select(s.audit_tally).where(s.audit_tally.c.audit_id.in_(auth_ids))).all())
                if auth_ids
                else {}
            )
        out = []
        for r in found:
            if r["id"] in tally and r["detail"]:
                r["detail"] = f"{tally[r['id']]} failed attempts since " + r["detail"].partition(" since ")[2]
            out.append(AuditEntry(**{k: r[k] for k in _ENTRY_FIELDS}))
        return out

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
        """Record a rejected credential, aggregated: a repeat of the same ``key_id`` (``None``:
        unknown or malformed keys) within ``window_seconds`` of its ``auth``/``invalid_key`` row
        raises that row's count (kept in ``audit_tally``, outside the hash chain, so the chained row
        is never rewritten; :meth:`query` shows ``"<n> failed attempts since <first>: <reason>"``);
        otherwise a new row is appended. Returns the row id. ``now``: UNIX seconds (default: the clock)."""
        now = time.time() if now is None else now
        key_cond = s.audit.c.key_id.is_(None) if key_id is None else s.audit.c.key_id == key_id
        with self.store.write() as conn:
            row = conn.execute(
                select(s.audit.c.id)
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
                done = conn.execute(
                    update(s.audit_tally)
                    .where(s.audit_tally.c.audit_id == row.id)
                    .values(attempts=s.audit_tally.c.attempts + 1)
                )
                if done.rowcount != 1:
                    conn.execute(insert(s.audit_tally).values(audit_id=row.id, attempts=2))
                return int(row.id)
            stamp = time.strftime("%Y-%m-%dT%H%M%SZ", time.gmtime(now))
            values = _row_values(AuditRecord(
                "auth", at=now, user=user, key_id=key_id, decision="deny", rule=rule, status="invalid_key",
                detail=f"1 failed attempt since {stamp}: {_cut(redact_secrets(reason))}",
            ))
            return _append(conn, [values])[0]
