"""Shared test configuration: anyio runs on asyncio; every test gets its own data folder."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path, monkeypatch):
    """Point TOOLHOST_HOME at a temporary folder so no test writes outside it."""
    home = tmp_path / "toolhost-home"
    monkeypatch.setenv("TOOLHOST_HOME", str(home))
    return home
