"""The ``cluster`` fixture: replicas of ``toolhost serve`` on a fresh PostgreSQL database
(tests/replicas/harness.py)."""

from __future__ import annotations

import pytest

from tests.replicas.harness import Cluster


@pytest.fixture
def cluster(postgres_url, tmp_path):
    c = Cluster(postgres_url, tmp_path)
    try:
        yield c
    finally:
        c.stop()
