"""Rate limits as token buckets in the permission database, shared by every server process.

Each bucket (``user:<name>`` or ``tool:<user>:<key>``) is a row of ``rate_buckets`` holding its
tokens and when they were counted. :meth:`RateLimiter.take` refills a bucket for the time passed,
takes one token from every bucket that applies in one write transaction (SQLite: ``BEGIN
IMMEDIATE``; PostgreSQL: the rows are locked ``FOR UPDATE``), or takes none and says how long until
each short bucket holds a whole token again: ``retry_after_seconds = (1 - tokens) / rate``,
rounded up to the millisecond.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import insert, select, update

from host.limits.config import RateLimitConfig, RateRule
from host.store import schema as s
from host.store.db import Store

__all__ = ["RateDecision", "RateLimiter"]


@dataclass(frozen=True)
class RateDecision:
    """The answer of :meth:`RateLimiter.take`.

    Attributes:
        allowed: the call may run (one token was taken from each bucket).
        retry_after_seconds: when refused, seconds until every bucket allows one call.
        limit: when refused, which rule refused (``per user`` or ``per tool <key>``) and its figures.
    """

    allowed: bool
    retry_after_seconds: float = 0.0
    limit: str = ""


def rate_limiter_for(store: Store | None, config: RateLimitConfig | None) -> RateLimiter | None:
    """The config's rate limits over the permission database (shared by every process using it), or
    ``None`` without a store (``--auth off``) or without ``toolhost.rate_limits``."""
    if store is None or config is None:
        return None
    return RateLimiter(store, config)


class RateLimiter:
    """Per-user and per-tool token buckets over one :class:`host.store.Store` (see module docstring)."""

    def __init__(self, store: Store, config: RateLimitConfig, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.config = config
        self.clock = clock  # UNIX seconds; shared buckets need a wall clock all processes agree on

    def buckets_for(self, user: str, tool: str, server: str) -> list[tuple[str, RateRule, str]]:
        """``(bucket key, rule, description)`` of every rule that applies to ``user`` calling ``tool``."""
        out: list[tuple[str, RateRule, str]] = []
        rule = self.config.user_rule(user)
        if rule is not None:
            out.append((f"user:{user}", rule, f"per user: {rule.calls} calls per {rule.per_seconds:g} s"))
        found = self.config.tool_rule(tool, server)
        if found is not None:
            key, trule = found
            scope = tool if key == "*" else key
            out.append((f"tool:{user}:{scope}", trule,
                        f"per tool {scope}: {trule.calls} calls per {trule.per_seconds:g} s"))
        return out

    def take(self, user: str, tool: str, server: str, *, now: float | None = None) -> RateDecision:
        """Take one token from each bucket of ``user`` calling ``tool``, or none (see module docstring).

        ``now``: UNIX seconds (default: the clock)."""
        buckets = self.buckets_for(user, tool, server)
        if not buckets:
            return RateDecision(True)
        now = self.clock() if now is None else now
        with self.store.write() as conn:
            levels: list[float] = []
            for key, rule, _desc in buckets:
                row = conn.execute(
                    select(s.rate_buckets).where(s.rate_buckets.c.key == key).with_for_update()
                ).first()
                if row is None:
                    _insert_bucket(conn, key, float(rule.calls), now)
                    row = conn.execute(
                        select(s.rate_buckets).where(s.rate_buckets.c.key == key).with_for_update()
                    ).first()
                elapsed = max(0.0, now - row.updated_at)
                levels.append(min(float(rule.calls), row.tokens + elapsed * rule.rate))
            short = [(b, lvl) for b, lvl in zip(buckets, levels, strict=True) if lvl < 1.0]
            if short:
                wait = max((1.0 - lvl) / b[1].rate for b, lvl in short)
                worst = max(short, key=lambda x: (1.0 - x[1]) / x[0][1].rate)
                return RateDecision(False, math.ceil(wait * 1000 - 1e-6) / 1000, worst[0][2])
            for (key, _rule, _desc), lvl in zip(buckets, levels, strict=True):
                conn.execute(
                    update(s.rate_buckets).where(s.rate_buckets.c.key == key).values(tokens=lvl - 1.0, updated_at=now)
                )
        return RateDecision(True)


def _insert_bucket(conn, key: str, tokens: float, now: float) -> None:
    """A full bucket; on PostgreSQL a concurrent first use by another process is not an error."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        conn.execute(pg_insert(s.rate_buckets).values(key=key, tokens=tokens, updated_at=now).on_conflict_do_nothing())
    else:  # SQLite: BEGIN IMMEDIATE already serializes writers
        conn.execute(insert(s.rate_buckets).values(key=key, tokens=tokens, updated_at=now))
