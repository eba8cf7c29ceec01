"""The audit hash chain: every audit row carries the hash of the row before it.

``row_hash = sha256(canonical JSON of {"prev": prev_hash, <every field of CHAIN_FIELDS>})`` (hex),
where ``prev_hash`` is the previous row's ``row_hash`` (:data:`GENESIS` for the first row) and
canonical JSON sorts keys, uses no whitespace and keeps non-ASCII characters. Rows are chained in
id order; ``audit_head`` (one row) holds the last id and hash. Writers lock the head row inside
their write transaction (SQLite: ``BEGIN IMMEDIATE`` already serializes writers; PostgreSQL:
``SELECT ... FOR UPDATE`` on the head), so concurrent appenders from several processes never fork
the chain.

What it detects (:func:`verify_rows`): a modified row (its hash no longer matches its content), a
deleted or inserted row (the next row's ``prev_hash`` no longer matches), a truncated tail (the
head names a row or hash that is not the last one). What it does not: an attacker who can write
the database can recompute the whole chain; export it (``toolhost audit export``) and keep the
last hash elsewhere to anchor it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, insert, select, update

from host.store import schema as s

__all__ = [
    "CANONICAL",
    "CHAIN_FIELDS",
    "GENESIS",
    "ChainBreak",
    "arguments_digest",
    "digest_of",
    "lock_head",
    "rechain_all",
    "row_hash",
    "set_head",
    "verify_rows",
]

GENESIS = "0" * 64
"""``prev_hash`` of the first row of a chain."""

CHAIN_FIELDS = (
    "at",
    "user",
    "key_id",
    "action",
    "tool",
    "decision",
    "rule",
    "status",
    "duration_ms",
    "arguments",
    "detail",
    "definition_hash",
    "approval_id",
    "arguments_digest",
    "approver",
)
"""Audit columns covered by ``row_hash`` (everything but ``id``, ``prev_hash`` and ``row_hash``)."""


def arguments_digest(arguments: Any) -> str:
    """sha256 hex of canonical JSON (sorted keys, no whitespace) of ``arguments`` (``None`` → ``{}``).

    The same digest binds an approval to its call (:func:`host.store.approvals.arguments_hash`).
    Lone surrogates (valid JSON escapes, not valid UTF-8) are hashed as their UTF-16 code units
    (``surrogatepass``), like :func:`registry.tool.definition_hash`."""
    return digest_of(_CANONICAL_ANY(arguments or {}))


def digest_of(canonical: str) -> str:
    """sha256 hex of canonical JSON text (what :func:`arguments_digest` hashes)."""
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
"""Canonical JSON text (sorted keys, no whitespace, non-ASCII kept), one encoder built once
(``json.dumps`` with options builds one per call; ~2 µs of each audit row)."""
_CANONICAL_ANY = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode


def row_hash(prev_hash: str, row: Mapping[str, Any]) -> str:
    """The hash of one audit row (``row`` holds at least :data:`CHAIN_FIELDS`) after ``prev_hash``."""
    body = {"prev": prev_hash}
    for name in CHAIN_FIELDS:
        value = row.get(name)
        body[name] = float(value) if isinstance(value, int) and not isinstance(value, bool) and name in (
            "at",
            "duration_ms",
        ) else value
    return hashlib.sha256(CANONICAL(body).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChainBreak:
    """The first broken link of a chain.

    Attributes:
        row_id: the id of the first row that does not verify (``None``: the head or the tail).
        kind: ``modified`` (content does not match its hash), ``link`` (its ``prev_hash`` is not the
            previous row's hash: a row before it was deleted or inserted, or it was inserted),
            ``head`` (the chain head names another last row: the tail was cut or rows appended
            outside toolhost), ``unchained`` (a row without hashes).
        message: one sentence for an admin.
    """

    row_id: int | None
    kind: str
    message: str


def verify_rows(
    rows: Iterable[Mapping[str, Any]], *, head: tuple[int | None, str] | None = None
) -> tuple[int, ChainBreak | None]:
    """Walk ``rows`` (id order, each with ``id``, :data:`CHAIN_FIELDS`, ``prev_hash``, ``row_hash``).

    Args:
        rows: the audit rows, oldest first.
        head: ``(last_id, last_hash)`` of the chain head when known (database), else ``None`` (export).

    Returns:
        ``(rows verified, first break or None)``.
    """
    prev = GENESIS
    prev_id: int | None = None
    count = 0
    for row in rows:
        rid = row.get("id")
        if row.get("row_hash") is None or row.get("prev_hash") is None:
            return count, ChainBreak(rid, "unchained", f"row {rid} carries no hash (written outside toolhost)")
        if row["prev_hash"] != prev:
            after = f"row {prev_id}" if prev_id is not None else "the start of the chain"
            return count, ChainBreak(
                rid,
                "link",
                f"row {rid} does not follow {after}: a row between them was deleted or inserted, "
                f"or row {rid} itself was inserted",
            )
        if row_hash(prev, row) != row["row_hash"]:
            return count, ChainBreak(rid, "modified", f"row {rid} was modified after it was written")
        prev, prev_id = row["row_hash"], rid
        count += 1
    if head is not None and (head[1] != prev or (head[0] is not None and head[0] != prev_id)):
        return count, ChainBreak(
            None,
            "head",
            f"the chain head names row {head[0]} but the last row is {prev_id}: rows at the end were deleted",
        )
    return count, None


# Built once: SQLAlchemy then reuses the compiled form from its cache key, memoized on the
# statement object (a statement built per call cost ~40 % of an audit write in CPU).
_LOCK_HEAD = select(s.audit_head).where(s.audit_head.c.id == 1).with_for_update()
_SET_HEAD = update(s.audit_head).where(s.audit_head.c.id == 1)  # SET from the execute parameters


def lock_head(conn: Connection) -> tuple[int | None, str]:
    """``(last_id, last_hash)`` of the chain, locking the head row until the transaction ends
    (creates the head when missing). Call inside a write transaction."""
    row = conn.execute(_LOCK_HEAD).first()
    if row is None:
        conn.execute(insert(s.audit_head).values(id=1, last_id=None, last_hash=GENESIS))
        return None, GENESIS
    return row.last_id, row.last_hash


def set_head(conn: Connection, last_id: int | None, last_hash: str) -> None:
    """Move the chain head (inside the transaction that called :func:`lock_head`)."""
    conn.execute(_SET_HEAD, {"last_id": last_id, "last_hash": last_hash})


def rechain_all(conn: Connection) -> int:
    """(Migration) hash every audit row in id order and set the head; returns the row count."""
    lock_head(conn)
    prev = GENESIS
    last_id = None
    count = 0
    for row in conn.execute(select(s.audit).order_by(s.audit.c.id)).mappings().all():
        h = row_hash(prev, row)
        conn.execute(update(s.audit).where(s.audit.c.id == row["id"]).values(prev_hash=prev, row_hash=h))
        prev, last_id = h, row["id"]
        count += 1
    set_head(conn, last_id, prev)
    return count
