"""Copy a whole permission store into an empty database (e.g. SQLite to PostgreSQL for replicas).

Every table of :data:`host.store.schema.metadata` is copied row for row with its keys, in foreign
key order, in one write transaction on the target: users, roles, keys (hashes), grants, pins,
approvals (sealed arguments: the data folder's ``approvals.key`` still opens them), the audit log
with its hash chain head (ids and hashes unchanged, so the chain verifies on the target), usage
memory and revisions. Rate-limit buckets are left out (transient). The source is read in one
snapshot (:func:`host.store.engine.read_tx`); a serve may keep writing to it meanwhile, and rows
written after the snapshot are not copied.
"""

from __future__ import annotations

from sqlalchemy import Engine, func, select, text

import host.store.usage_table  # noqa: F401  (registers usage_memory on the metadata)
from host.store import schema as s
from host.store.engine import read_tx, write_tx
from host.store.migrations import SCHEMA_VERSION, current_version, migrate

__all__ = ["SKIPPED_TABLES", "TargetNotEmpty", "copy_store"]

SKIPPED_TABLES = frozenset({"schema_version", "rate_buckets"})
"""Not copied: the version (the target is migrated to the same one) and transient rate buckets."""

_DATA_TABLES = ("users", "roles", "grants", "api_keys", "approvals", "pins", "audit")
_BATCH = 1000


class TargetNotEmpty(Exception):
    """The target store already holds data. Attributes: counts (table -> rows)."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts
        held = ", ".join(f"{n} {t}" for t, n in counts.items() if n)
        super().__init__(f"the target database is not empty ({held}); copy into a new, empty database")


def copy_store(source: Engine, target: Engine) -> dict[str, int]:
    """Copy every table of ``source`` into ``target`` (migrated first); returns rows copied per table.

    Raises:
        TargetNotEmpty: ``target`` holds users, keys, grants, roles, pins, approvals or audit rows.
        host.store.errors.SchemaTooNew: either database is newer than this toolhost.
        ValueError: ``source`` is not at this toolhost's schema version (run toolhost on it once).
    """
    with source.connect() as conn:
        found = current_version(conn)
    if found != SCHEMA_VERSION:
        raise ValueError(f"the source database is at schema version {found}, this toolhost writes "
                         f"{SCHEMA_VERSION}: run any toolhost command on it once to migrate it first")
    migrate(target)
    copied: dict[str, int] = {}
    with read_tx(source) as src, write_tx(target) as dst:
        counts = {t: int(dst.execute(select(func.count()).select_from(s.metadata.tables[t])).scalar_one())
                  for t in _DATA_TABLES}
        if any(counts.values()):
            raise TargetNotEmpty(counts)
        for table in s.metadata.sorted_tables:
            if table.name in SKIPPED_TABLES:
                continue
            dst.execute(table.delete())  # rows a fresh migration wrote (revisions, the chain head)
            n = 0
            for chunk in src.execute(select(table)).mappings().partitions(_BATCH):
                dst.execute(table.insert(), [dict(row) for row in chunk])
                n += len(chunk)
            copied[table.name] = n
        if dst.dialect.name == "postgresql":  # explicit ids were inserted: move the serial sequences past them
            for table in s.metadata.sorted_tables:
                col = table.c.get("id")
                if table.name in SKIPPED_TABLES or col is None or col.autoincrement is not True:
                    continue
                dst.execute(text(f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                                 f"COALESCE((SELECT MAX(id) FROM {table.name}), 0) + 1, false)"))
    return copied
