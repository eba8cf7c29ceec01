"""Fixtures for the permission tests: a fresh AccessControl (once on SQLite, once on PostgreSQL) and a
record factory."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from host.access import AccessControl
from registry.tool import Risk, ToolAnnotations, ToolDefinition, ToolOverrides, ToolRecord, build_record


def make_record(
    qualified_name: str, risk: Risk | str = Risk.READ, *, server: str | None = None, description: str = ""
) -> ToolRecord:
    """A ToolRecord named ``qualified_name`` (server = the part before ``__`` unless given) with ``risk``."""
    server = server or qualified_name.partition("__")[0]
    original = qualified_name.partition("__")[2] or qualified_name
    return build_record(
        server=server,
        qualified_name=qualified_name,
        definition=ToolDefinition(name=original, description=description, annotations=ToolAnnotations()),
        overrides=ToolOverrides(risk=Risk(risk)),
    )


@pytest.fixture
def record() -> Callable[..., ToolRecord]:
    return make_record


@pytest.fixture
def access(store_url: str) -> Iterator[AccessControl]:
    """A fresh, migrated store on each backend (see ``store_url`` in tests/conftest.py)."""
    ac = AccessControl.open(url=store_url)
    try:
        yield ac
    finally:
        ac.close()
