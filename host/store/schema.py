"""Database schema of the permission store (SQLAlchemy Core tables).

Times are UNIX seconds (float, UTC). Grants belong to a *subject*: ``("user", name)`` or
``("role", name)``. ``meta.revision`` increases with every change that affects access (users,
roles, grants, keys, pins), so readers can cache a policy and re-check one integer per request.
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = [
    "api_keys",
    "approvals",
    "audit",
    "audit_head",
    "audit_tally",
    "rate_buckets",
    "grants",
    "meta",
    "metadata",
    "pins",
    "roles",
    "schema_version",
    "user_roles",
    "users",
]

metadata = MetaData()

schema_version = Table(
    "schema_version",
    metadata,
    Column("id", Integer, primary_key=True),  # always 1
    Column("version", Integer, nullable=False),
    Column("migrated_at", Float, nullable=False),
)

meta = Table(
    "meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Integer, nullable=False),
)

users = Table(
    "users",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("created_at", Float, nullable=False),
    # v7: a disabled user's keys, grants and approvals work no more until an admin enables it again
    # (host.store.user_state.UserStates.disable): when (UNIX s), by whom, why; all NULL while enabled
    Column("disabled_at", Float, nullable=True),
    Column("disabled_by", String(96), nullable=True),
    Column("disabled_reason", Text, nullable=True),
)

roles = Table(
    "roles",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("description", Text, nullable=False, default=""),
    Column("created_at", Float, nullable=False),
)

user_roles = Table(
    "user_roles",
    metadata,
    Column("user", String(64), ForeignKey("users.name", ondelete="CASCADE"), primary_key=True),
    Column("role", String(64), ForeignKey("roles.name", ondelete="CASCADE"), primary_key=True),
)

grants = Table(
    "grants",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("subject_kind", String(8), nullable=False),  # "user" | "role"
    Column("subject", String(64), nullable=False),
    Column("effect", String(8), nullable=False),  # "allow" | "deny"
    Column("pattern", String(160), nullable=False),
    Column("max_risk", String(16), nullable=False),
    Column("approval", Integer, nullable=True),  # NULL default, 1 always, 0 never
    Column("created_at", Float, nullable=False),
    # v2: 1 = the caller's own client may answer the approval elicitation (single-user desktops)
    Column("self_approval", Integer, nullable=True),
    # v6: the session-taint decision for the tools an allow grant covers: NULL (the config rule),
    # "allow", "approve" or "deny" (registry.permissions, "Taint per grant")
    Column("taint", String(8), nullable=True),
    UniqueConstraint("subject_kind", "subject", "effect", "pattern", name="uq_grant"),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("key_id", String(32), primary_key=True),
    Column("user", String(64), ForeignKey("users.name", ondelete="CASCADE"), nullable=False),
    Column("label", Text, nullable=False, default=""),
    Column("kdf", String(64), nullable=False),  # e.g. "scrypt:16384:8:1"
    Column("salt", LargeBinary, nullable=False),
    Column("hash", LargeBinary, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("last_used_at", Float, nullable=True),
    Column("revoked_at", Float, nullable=True),
    Index("ix_api_keys_user", "user"),
)

approvals = Table(
    "approvals",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("user", String(64), nullable=False),
    Column("key_id", String(32), nullable=True),
    Column("tool", String(128), nullable=False),
    Column("arguments_hash", String(64), nullable=False),
    Column("arguments_redacted", Text, nullable=False),
    Column("rule", Text, nullable=True),
    Column("status", String(16), nullable=False),  # pending approved denied used expired
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    Column("decided_at", Float, nullable=True),
    Column("decided_by", String(64), nullable=True),
    Column("used_at", Float, nullable=True),
    # v2: the served definition the approval is bound to (a pin change voids it) and how it was decided
    Column("definition_hash", String(64), nullable=True),
    Column("decided_how", String(32), nullable=True),  # cli | admin | elicitation | self-elicitation
    # v4: the exact arguments (canonical JSON, nothing masked) while the approval is open, for the
    # approver; cleared once it is used, denied or expired (the audit keeps only the redacted copy)
    Column("arguments_json", Text, nullable=True),
    Index("ix_approvals_lookup", "user", "tool", "arguments_hash", "status"),
)

pins = Table(
    "pins",
    metadata,
    Column("tool", String(128), primary_key=True),
    Column("server", String(128), nullable=False),
    Column("definition_hash", String(64), nullable=True),  # NULL while a new tool is held
    Column("definition_json", Text, nullable=True),
    Column("status", String(16), nullable=False),  # trusted changed held
    Column("pending_hash", String(64), nullable=True),
    Column("pending_json", Text, nullable=True),
    Column("pinned_at", Float, nullable=True),
    Column("updated_at", Float, nullable=False),
    # v4: the scanner's findings on the served definition (JSON list; NULL: not suspicious), the drift
    # triage of a pending change (JSON object) and the hash an admin accepted despite its findings
    Column("findings", Text, nullable=True),
    Column("drift", Text, nullable=True),
    Column("scan_ok_hash", String(64), nullable=True),
    Index("ix_pins_server", "server"),
)

audit = Table(
    "audit",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False),
    Column("user", String(64), nullable=True),
    Column("key_id", String(32), nullable=True),
    Column("action", String(16), nullable=False),  # call list search auth approve pin admin
    Column("tool", String(160), nullable=True),
    Column("decision", String(16), nullable=True),
    Column("rule", Text, nullable=True),
    Column("status", String(32), nullable=True),
    Column("duration_ms", Float, nullable=True),
    Column("arguments", Text, nullable=True),
    Column("detail", Text, nullable=True),
    # v2: tamper evidence (host.store.audit_chain) and what the call was bound to
    Column("definition_hash", String(64), nullable=True),
    Column("approval_id", String(32), nullable=True),
    Column("arguments_digest", String(64), nullable=True),
    Column("approver", String(96), nullable=True),
    Column("prev_hash", String(64), nullable=True),
    Column("row_hash", String(64), nullable=True),
    Index("ix_audit_at", "at"),
    Index("ix_audit_user", "user"),
    Index("ix_audit_tool", "tool"),
)

audit_head = Table(
    "audit_head",
    metadata,
    Column("id", Integer, primary_key=True),  # always 1; writers lock this row (FOR UPDATE)
    Column("last_id", Integer, nullable=True),
    Column("last_hash", String(64), nullable=False),
)
"""v2: the head of the audit hash chain (last row id and hash)."""

audit_tally = Table(
    "audit_tally",
    metadata,
    Column("audit_id", Integer, primary_key=True),
    Column("attempts", Integer, nullable=False),
)
"""v2: repeat counts of aggregated ``auth``/``invalid_key`` rows, kept outside the hash chain
(the chained row is never updated)."""

rate_buckets = Table(
    "rate_buckets",
    metadata,
    Column("key", String(255), primary_key=True),  # e.g. "user:alice" or "tool:alice:orders__cancel"
    Column("tokens", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
)
"""v2: token buckets of rate limits shared by every server process on this database."""
