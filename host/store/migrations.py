"""Versioned schema migrations.

``schema_version`` holds one row with the current version. :data:`MIGRATIONS` is the ordered list
of migration functions; migration *n* (1-based) brings the schema from version *n-1* to *n*.
:func:`migrate` applies the missing ones in one write transaction (SQLite: under the database
write lock; PostgreSQL: under a transaction-scoped advisory lock), so two processes starting at
once migrate exactly once. New schema changes are appended as new functions, never edited in.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import Connection, Engine, inspect, select, text
from sqlalchemy.exc import DBAPIError

from host.store import schema as s
from host.store.engine import write_tx
from host.store.errors import SchemaMigrationFailed, SchemaTooNew

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "current_version", "db_error_line", "migrate"]


def db_error_line(error: DBAPIError) -> str:
    """The driver's message of ``error`` on one line (no SQL, no parameters)."""
    orig = getattr(error, "orig", None) or error
    return " ".join(str(orig).split()) or type(orig).__name__


def _v1_initial(conn: Connection) -> None:
    """Users, roles, grants, API keys, approvals, pins, audit and the revision counter."""
    tables = [s.meta, s.users, s.roles, s.user_roles, s.grants, s.api_keys, s.approvals, s.pins, s.audit]
    s.metadata.create_all(conn, tables=tables, checkfirst=True)
    conn.execute(s.meta.insert().values(key="revision", value=1))


_V2_COLUMNS = {
    "audit": ("definition_hash", "approval_id", "arguments_digest", "approver", "prev_hash", "row_hash"),
    "approvals": ("definition_hash", "decided_how"),
    "grants": ("self_approval",),
}


def _v2_security(conn: Connection) -> None:
    """Security tables: audit hash chain (+ head, auth tallies), approval binding, self-approval flag,
    shared rate-limit buckets. Existing audit rows are chained in id order."""
    from host.store.audit_chain import rechain_all

    for table_name, names in _V2_COLUMNS.items():
        table = s.metadata.tables[table_name]
        have = {c["name"] for c in inspect(conn).get_columns(table_name)}
        for name in names:
            if name not in have:
                col = table.c[name]
                ddl_type = col.type.compile(dialect=conn.dialect)
                conn.execute(text(f"ALTER TABLE {table_name} ADD COLUMN {name} {ddl_type}"))
    s.metadata.create_all(conn, tables=[s.audit_head, s.audit_tally, s.rate_buckets], checkfirst=True)
    rechain_all(conn)


def _v3_usage_memory(conn: Connection) -> None:
    """Usage memory of tool_search: (tool, remembered query) pairs (``host.store.usage``)."""
    from host.store.usage_table import usage_memory

    usage_memory.create(conn, checkfirst=True)


def _v4_pin_safety(conn: Connection) -> None:
    """Pins keep the scanner's findings, the drift triage of a pending change and the hash an admin
    accepted despite findings (``host.store.pin_safety``)."""
    have = {c["name"] for c in inspect(conn).get_columns("pins")}
    for name in ("findings", "drift", "scan_ok_hash"):
        if name not in have:
            ddl_type = s.pins.c[name].type.compile(dialect=conn.dialect)
            conn.execute(text(f"ALTER TABLE pins ADD COLUMN {name} {ddl_type}"))


def _v5_exact_approval_arguments(conn: Connection) -> None:
    """Approvals keep the exact arguments of the call while they are open (``arguments_json``),
    so an approver sees what the tool would receive."""
    have = {c["name"] for c in inspect(conn).get_columns("approvals")}
    if "arguments_json" not in have:
        ddl_type = s.approvals.c.arguments_json.type.compile(dialect=conn.dialect)
        conn.execute(text(f"ALTER TABLE approvals ADD COLUMN arguments_json {ddl_type}"))


def _v6_grant_taint(conn: Connection) -> None:
    """Grants may set the session-taint decision for the tools they cover (``grants.taint``;
    ``NULL`` keeps the config rule, so existing grants behave as before)."""
    have = {c["name"] for c in inspect(conn).get_columns("grants")}
    if "taint" not in have:
        ddl_type = s.grants.c.taint.type.compile(dialect=conn.dialect)
        conn.execute(text(f"ALTER TABLE grants ADD COLUMN taint {ddl_type}"))


def _v7_user_disabled(conn: Connection) -> None:
    """Users may be disabled (``users.disabled_at``, ``disabled_by``, ``disabled_reason``; ``NULL``:
    enabled, so every existing user stays enabled)."""
    have = {c["name"] for c in inspect(conn).get_columns("users")}
    for name in ("disabled_at", "disabled_by", "disabled_reason"):
        if name not in have:
            ddl_type = s.users.c[name].type.compile(dialect=conn.dialect)
            conn.execute(text(f"ALTER TABLE users ADD COLUMN {name} {ddl_type}"))


MIGRATIONS: list[Callable[[Connection], None]] = [
    _v1_initial, _v2_security, _v3_usage_memory, _v4_pin_safety, _v5_exact_approval_arguments, _v6_grant_taint,
    _v7_user_disabled,
]
"""Ordered migrations; index 0 creates version 1."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this code writes."""


def current_version(conn: Connection) -> int:
    """The stored schema version (0 for an empty database)."""
    if not inspect(conn).has_table("schema_version"):
        return 0
    row = conn.execute(select(s.schema_version.c.version).where(s.schema_version.c.id == 1)).first()
    return int(row[0]) if row else 0


def migrate(engine: Engine) -> int:
    """Bring the database to :data:`SCHEMA_VERSION`; return the version found before.

    Several processes may call this at the same moment (replicas starting together): the first
    migrates, the others wait for its lock and then find the schema current.

    Raises:
        SchemaTooNew: the database was written by a newer toolhost.
        SchemaMigrationFailed: a migration failed (e.g. the role may not create tables); nothing
            of it was committed (PostgreSQL and SQLite run DDL transactionally).
    """
    with write_tx(engine) as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(7243001)"))
        found = current_version(conn)
        if found > SCHEMA_VERSION:
            raise SchemaTooNew(found, SCHEMA_VERSION)
        if found == SCHEMA_VERSION:
            return found
        try:
            s.schema_version.create(conn, checkfirst=True)
            for migration in MIGRATIONS[found:]:
                migration(conn)
        except DBAPIError as e:
            raise SchemaMigrationFailed(found, SCHEMA_VERSION, db_error_line(e)) from e
        now = time.time()
        if found == 0:
            conn.execute(s.schema_version.insert().values(id=1, version=SCHEMA_VERSION, migrated_at=now))
        else:
            conn.execute(
                s.schema_version.update()
                .where(s.schema_version.c.id == 1)
                .values(version=SCHEMA_VERSION, migrated_at=now)
            )
        return found
