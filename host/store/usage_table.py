"""Table of the usage memory (``host.store.usage``); created by migration ``_v2_usage_memory``."""

from __future__ import annotations

from sqlalchemy import Column, Float, Integer, String, Table, Text, UniqueConstraint

from host.store.schema import metadata

__all__ = ["usage_memory"]

usage_memory = Table(
    "usage_memory",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("tool", String(300), nullable=False),  # qualified name
    Column("definition_hash", String(128), nullable=False),
    Column("query_key", String(64), nullable=False),  # sha256 of the normalised redacted query
    Column("query", Text, nullable=False),  # redacted, at most 200 characters
    Column("weight", Float, nullable=False),  # decayed count of successful calls, as of last_used
    Column("last_used", Float, nullable=False),
    UniqueConstraint("tool", "query_key", name="uq_usage_tool_query"),
)
