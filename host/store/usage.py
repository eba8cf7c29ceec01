"""Usage memory of ``tool_search``: which queries led to a successful call of which tool.

When a search in a conversation is followed by a successful call of one of its hits, the pair
(query, tool) is remembered; the search index then treats a tool's remembered queries as an extra
field of its document (``registry.search.SearchIndex.set_memory``), so the next user who words a
task the same way finds the tool.

Rules:

* **Redacted** like the audit log (:func:`host.store.audit.redact`: secrets masked, at most 200
  characters) before anything is stored.
* **Bounded**: at most :data:`MAX_PER_TOOL` queries per tool (the weakest go first) and
  :data:`MAX_ROWS` overall (the least recently used go first).
* **Decayed**: a pair's weight halves every :data:`HALF_LIFE_SECONDS` without use; pairs below
  :data:`MIN_WEIGHT` are dropped when the memory is loaded.
* **Dropped on change**: a pair belongs to one definition hash; when the tool's definition changes,
  :meth:`UsageMemory.load` deletes the old pairs.
* **Never shown to callers**: nothing here reaches a search result. Permission safety comes from
  the index: a tool's memory only changes the document of that tool, and search statistics are
  computed over the caller's visible tools only, so memory on a tool a caller cannot see changes
  nothing that caller sees.
* Cleared with ``toolhost usage clear``.
"""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import delete, func, select, update

from host.store.audit import redact
from host.store.db import Store
from host.store.usage_table import usage_memory as t

__all__ = ["HALF_LIFE_SECONDS", "MAX_PER_TOOL", "MAX_ROWS", "MIN_WEIGHT", "UsageMemory", "UsageStats"]

HALF_LIFE_SECONDS = 30 * 86400.0
"""A remembered pair's weight halves after this long without a successful call (30 days)."""
MAX_PER_TOOL = 32
"""Remembered queries kept per tool."""
MAX_ROWS = 50_000
"""Remembered pairs kept in all."""
MIN_WEIGHT = 0.05
"""Pairs whose decayed weight falls below this are forgotten."""
MAX_QUERY_CHARS = 200


@dataclass(frozen=True)
class UsageStats:
    """How much is remembered: pairs, distinct tools, oldest use (UNIX seconds or ``None``)."""

    pairs: int
    tools: int
    oldest: float | None


def _normalise(query: str) -> str | None:
    red = redact(" ".join(query.split()))
    if not isinstance(red, str):
        return None
    red = red[:MAX_QUERY_CHARS].strip()
    return red or None


def _decayed(weight: float, last_used: float, now: float) -> float:
    return weight * 0.5 ** (max(0.0, now - last_used) / HALF_LIFE_SECONDS)


class UsageMemory:
    """The repository over the ``usage_memory`` table of a :class:`~host.store.db.Store`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def record(self, query: str, tool: str, definition_hash: str, *, now: float | None = None) -> str | None:
        """Remember that ``query`` led to a successful call of ``tool``. Returns the text stored
        (redacted, whitespace collapsed, at most 200 characters), or ``None`` when the query has
        nothing left to remember after redaction."""
        text = _normalise(query)
        if text is None:
            return None
        now = time.time() if now is None else now
        key = hashlib.sha256(text.lower().encode()).hexdigest()
        with self.store.write() as conn:
            row = conn.execute(
                select(t.c.id, t.c.weight, t.c.last_used, t.c.definition_hash).where(
                    t.c.tool == tool, t.c.query_key == key
                )
            ).first()
            if row is None:
                conn.execute(
                    t.insert().values(
                        tool=tool, definition_hash=definition_hash, query_key=key, query=text, weight=1.0, last_used=now
                    )
                )
            else:
                weight = (
                    1.0 if row.definition_hash != definition_hash else _decayed(row.weight, row.last_used, now) + 1.0
                )
                conn.execute(
                    update(t)
                    .where(t.c.id == row.id)
                    .values(weight=weight, last_used=now, definition_hash=definition_hash)
                )
            self._bound(conn, tool, now)
        return text

    def _bound(self, conn, tool: str, now: float) -> None:  # a SQLAlchemy Connection
        rows = conn.execute(select(t.c.id, t.c.weight, t.c.last_used).where(t.c.tool == tool)).all()
        if len(rows) > MAX_PER_TOOL:
            rows.sort(key=lambda r: _decayed(r.weight, r.last_used, now))
            drop = [r.id for r in rows[: len(rows) - MAX_PER_TOOL]]
            conn.execute(delete(t).where(t.c.id.in_(drop)))
        total = conn.execute(select(func.count()).select_from(t)).scalar_one()
        if total > MAX_ROWS:
            old = conn.execute(select(t.c.id).order_by(t.c.last_used.asc()).limit(total - MAX_ROWS)).scalars().all()
            conn.execute(delete(t).where(t.c.id.in_(old)))

    def load(
        self, current: Mapping[str, str] | None = None, *, now: float | None = None
    ) -> dict[str, tuple[str, list[str]]]:
        """``{tool: (definition hash, queries strongest first)}`` for ``SearchIndex.set_memory``.

        ``current`` maps registered tools to their definition hashes: pairs of a tool whose
        definition has changed since are deleted, as are pairs decayed below :data:`MIN_WEIGHT`.
        """
        now = time.time() if now is None else now
        with self.store.write() as conn:
            rows = conn.execute(
                select(t.c.id, t.c.tool, t.c.definition_hash, t.c.query, t.c.weight, t.c.last_used)
            ).all()
            stale = [
                r.id
                for r in rows
                if _decayed(r.weight, r.last_used, now) < MIN_WEIGHT
                or (current is not None and r.tool in current and current[r.tool] != r.definition_hash)
            ]
            for start in range(0, len(stale), 500):
                conn.execute(delete(t).where(t.c.id.in_(stale[start : start + 500])))
        gone = set(stale)
        by_tool: dict[str, list] = defaultdict(list)
        for r in rows:
            if r.id not in gone:
                by_tool[r.tool].append(r)
        out: dict[str, tuple[str, list[str]]] = {}
        for tool, rs in by_tool.items():
            rs.sort(key=lambda r: -_decayed(r.weight, r.last_used, now))
            out[tool] = (rs[0].definition_hash, [r.query for r in rs[:MAX_PER_TOOL]])
        return out

    def forget_tool(self, tool: str) -> int:
        """Delete every pair of ``tool``; returns how many."""
        with self.store.write() as conn:
            return conn.execute(delete(t).where(t.c.tool == tool)).rowcount or 0

    def clear(self) -> int:
        """Delete the whole memory; returns how many pairs."""
        with self.store.write() as conn:
            return conn.execute(delete(t)).rowcount or 0

    def stats(self) -> UsageStats:
        """Counts only (the admin sees how much is remembered, never the queries)."""
        with self.store.read() as conn:
            pairs = conn.execute(select(func.count()).select_from(t)).scalar_one()
            tools = conn.execute(select(func.count(func.distinct(t.c.tool)))).scalar_one()
            oldest = conn.execute(select(func.min(t.c.last_used))).scalar_one()
        return UsageStats(int(pairs), int(tools), float(oldest) if oldest is not None else None)
