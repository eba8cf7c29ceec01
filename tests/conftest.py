"""Shared test configuration: anyio runs on asyncio; every test gets its own data folder."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path, monkeypatch):
    """Point TOOLHOST_HOME at a temporary folder and unset any database URL, so no test writes outside it."""
    home = tmp_path / "toolhost-home"
    monkeypatch.setenv("TOOLHOST_HOME", str(home))
    for name in ("TOOLHOST_DATABASE_URL", "TOOLHOST_DB_URL"):  # never the developer's own database
        monkeypatch.delenv(name, raising=False)
    # Rankings in tests must not depend on when background embedding finishes: BM25 only, unless
    # a test turns the dense part on (HostRuntime(dense=True) and waits for the vector worker).
    monkeypatch.setenv("TOOLHOST_DENSE_SEARCH", "0")
    return home


# -- the permission database on every backend ------------------------------------------------
# `store_url` runs a test once per backend: on a SQLite file in the test's folder and on a fresh,
# empty database of one throwaway PostgreSQL cluster that the whole session shares (started on
# first use with initdb/pg_ctl, stopped at session end; see tests/postgres.py). Any store test
# gets PostgreSQL coverage by taking `store_url` (or `access`, in tests/permissions) instead of
# building a SQLite URL itself; `postgres_url` is a fresh PostgreSQL database alone (replica tests).

@pytest.fixture(scope="session")
def postgres_cluster():
    """The session's throwaway PostgreSQL cluster (:class:`tests.postgres.PostgresCluster`)."""
    from tests.postgres import PostgresCluster

    cluster = PostgresCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster):
    """A fresh, empty PostgreSQL database (dropped after the test): its SQLAlchemy URL."""
    url = postgres_cluster.create_database()
    try:
        yield url
    finally:
        postgres_cluster.drop_database(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """An empty permission database URL, once per backend (test ids end in ``[sqlite]`` / ``[postgresql]``)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return request.getfixturevalue("postgres_url")
