"""The permission store on SQLite and PostgreSQL: migrations under concurrent starts, clear errors,
the revision every replica re-reads, and shared state written by several processes at once.

Every test taking ``store_url`` runs twice (``[sqlite]``, ``[postgresql]``); see tests/conftest.py.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import func, select, update

from host.access import AccessControl
from host.store import DatabaseUnavailable, SchemaMigrationFailed, SchemaTooNew, Store
from host.store import schema as s
from host.store.migrations import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(300)  # several Python processes start per test; CI machines are small


def race(code: str, url: str, args: list[list[str]], timeout: float = 240) -> list[str]:
    """Start one process per ``args`` entry running ``code`` (``sys.argv[1]`` is ``url``), let them
    all get ready (each prints ``ready`` then waits for a line on stdin), release them at once and
    return each one's stdout after ``ready``. Fails with the stderr of any process that fails."""
    procs = [
        subprocess.Popen([sys.executable, "-c", code, url, *a], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT)
        for a in args
    ]
    try:
        for p in procs:
            line = p.stdout.readline().strip()
            assert line == "ready", p.stderr.read()
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            assert p.returncode == 0, err
            outs.append(out.strip())
        return outs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


OPEN_AT_ONCE = r"""
import sys
from host.store import Store
url = sys.argv[1]
print("ready", flush=True)
sys.stdin.readline()
store = Store.open(url)
print(store.revision())
store.close()
"""


def test_replicas_starting_at_once_migrate_exactly_once(store_url: str) -> None:
    outs = race(OPEN_AT_ONCE, store_url, [[] for _ in range(4)])
    assert outs == ["1", "1", "1", "1"]  # one migration inserted the revision row; nobody failed
    store = Store.open(store_url)
    with store.read() as conn:
        assert conn.execute(select(s.schema_version.c.version)).scalars().all() == [SCHEMA_VERSION]
        assert conn.execute(select(func.count()).select_from(s.meta)).scalar_one() == 1
    store.close()


def test_a_database_written_by_a_newer_toolhost_is_refused(store_url: str) -> None:
    store = Store.open(store_url)
    with store.write() as conn:
        conn.execute(update(s.schema_version).values(version=SCHEMA_VERSION + 1))
    store.close()
    with pytest.raises(SchemaTooNew) as e:
        Store.open(store_url)
    assert (e.value.found, e.value.supported) == (SCHEMA_VERSION + 1, SCHEMA_VERSION)
    assert str(e.value) == (f"database schema version {SCHEMA_VERSION + 1} is newer than this toolhost supports "
                            f"({SCHEMA_VERSION}); upgrade toolhost")


def test_an_unreachable_database_is_one_clear_error_without_the_password() -> None:
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(DatabaseUnavailable) as e:
        Store.open(f"postgresql://alice:s3cret-pw@127.0.0.1:{port}/toolhost")
    msg = str(e.value)
    assert e.value.url == f"postgresql://alice:***@127.0.0.1:{port}/toolhost"
    assert msg.startswith(f"cannot reach the database at postgresql://alice:***@127.0.0.1:{port}/toolhost: ")
    assert "Connection refused" in msg and "$TOOLHOST_DATABASE_URL" in msg
    assert "s3cret-pw" not in msg


def test_a_migration_the_role_may_not_run_is_one_clear_error(postgres_cluster, postgres_url: str) -> None:
    db = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(host="127.0.0.1", port=postgres_cluster.port, user="toolhost", dbname="postgres",
                         autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS reader")
        admin.execute("CREATE ROLE reader LOGIN")
    url = f"postgresql://reader@127.0.0.1:{postgres_cluster.port}/{db}"
    with pytest.raises(SchemaMigrationFailed) as e:
        Store.open(url)
    assert (e.value.found, e.value.supported) == (0, SCHEMA_VERSION)
    assert "permission denied for schema public" in e.value.reason
    assert str(e.value).startswith(f"the database is empty and creating toolhost's tables (schema {SCHEMA_VERSION}) "
                                   "failed: ")
    assert str(e.value).endswith("GRANT CREATE ON SCHEMA public TO <role>; or create the database owned by it: "
                                 "createdb -O <role> <database>)")
    with psycopg.connect(postgres_cluster.url(db).replace("+psycopg", "")) as conn:  # nothing half-made
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)


def test_the_revision_survives_a_dropped_database_connection(postgres_url: str) -> None:
    a = AccessControl.open(url=postgres_url)
    b = AccessControl.open(url=postgres_url)  # another replica
    before = a.revision
    with psycopg.connect(postgres_url.replace("+psycopg", ""), autocommit=True) as admin:
        # e.g. a PostgreSQL restart or failover: every toolhost connection is cut
        killed = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = 'toolhost' AND pid <> pg_backend_pid()"
        ).fetchone()[0]
    assert killed >= 2  # at least each replica's revision connection
    b.users.add("alice")  # the pool's pre-ping replaces the dead connection
    assert a.revision == before + 1  # reconnected, and it sees the other replica's change
    a.close()
    b.close()


def test_postgres_urls_use_psycopg3(postgres_cluster, postgres_url: str) -> None:
    db = postgres_url.rsplit("/", 1)[1]
    for scheme in ("postgres", "postgresql", "postgresql+psycopg"):
        store = Store.open(f"{scheme}://toolhost@127.0.0.1:{postgres_cluster.port}/{db}")
        assert (store.engine.dialect.name, store.engine.dialect.driver) == ("postgresql", "psycopg")
        assert store.revision() == 1
        store.close()


CONSUME = r"""
import sys
from host.store import Approvals, Store
url = sys.argv[1]
store = Store.open(url)
approvals = Approvals(store)
print("ready", flush=True)
sys.stdin.readline()
used = approvals.consume("alice", "orders__cancel_order", {"order_id": "A1"})
print("used" if used is not None else "none")
store.close()
"""


def test_an_approval_is_consumed_exactly_once_across_processes(store_url: str) -> None:
    access = AccessControl.open(url=store_url)
    access.users.add("alice")
    req = access.approvals.request("alice", "orders__cancel_order", {"order_id": "A1"})
    access.approvals.approve(req.id, by="admin")
    outs = race(CONSUME, store_url, [[] for _ in range(5)])
    assert sorted(outs) == ["none", "none", "none", "none", "used"]
    assert access.approvals.get(req.id).status == "used"
    access.close()


AUDIT = r"""
import sys
from host.access import AccessControl
url, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
access = AccessControl.open(url=url)
print("ready", flush=True)
sys.stdin.readline()
for i in range(n):
    access.audit(action="call", tool=f"{tag}__t{i}", status="ok")
print("done")
"""


def test_audit_rows_appended_by_several_processes_at_once_all_land(store_url: str) -> None:
    n = 40
    access = AccessControl.open(url=store_url)
    assert race(AUDIT, store_url, [[tag, str(n)] for tag in ("a", "b", "c")]) == ["done"] * 3
    rows = access.audit_log.query(action="call", limit=1000)
    assert sorted(r.tool for r in rows) == sorted(f"{t}__t{i}" for t in "abc" for i in range(n))
    assert len({r.id for r in rows}) == 3 * n
    access.close()


def test_client_chosen_values_longer_than_a_column_are_cut_not_lost(store_url: str) -> None:
    access = AccessControl.open(url=store_url)
    name = "x" * 190  # a client may call any name; the audit column holds 160 characters
    row_id = access.audit(action="call", tool=name, status="unknown_tool")
    [row] = access.audit_log.query(action="call")
    assert (row.id, row.tool) == (row_id, "x" * 159 + "…")
    access.close()


def test_switching_to_wal_is_retried_while_another_process_holds_the_file(monkeypatch) -> None:
    """One of four replicas opening a fresh SQLite database at once failed with "database is
    locked": SQLite may refuse the WAL switch at once, without its busy handler."""
    import sqlite3

    from host.store import engine

    class Cursor:
        def __init__(self, failures: list[str]) -> None:
            self.failures, self.calls = failures, 0

        def execute(self, sql: str) -> None:
            self.calls += 1
            if self.failures:
                raise sqlite3.OperationalError(self.failures.pop(0))

    pauses: list[float] = []
    monkeypatch.setattr(engine.time, "sleep", pauses.append)
    busy = Cursor(["database is locked", "database is busy"])
    engine._pragma_until_free(busy, "PRAGMA journal_mode=WAL")
    assert busy.calls == 3 and pauses == [0.005, 0.01]
    broken = Cursor(["disk I/O error"])
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        engine._pragma_until_free(broken, "PRAGMA journal_mode=WAL")
    assert broken.calls == 1  # only lock contention is waited out


def test_lone_surrogates_from_a_client_are_stored_escaped_not_lost(store_url: str) -> None:
    """Hostile-caller finding: arguments ``{"tag": "\\ud800"}`` (a valid JSON escape, not valid
    UTF-8) raised in the audit writer and the call had no audit row. Now the row is written with the
    surrogate as its escape text, and the chain verifies."""
    from host.store.audit_chain import arguments_digest

    access = AccessControl.open(url=store_url)
    args = {"tag": "a\ud800b"}
    row_id = access.audit(action="call", tool="echo__e\udc01", status="ok", arguments=args,
                          detail="bad \ud83d text")
    [row] = access.audit_log.query(action="call")
    assert (row.id, row.tool, row.arguments, row.detail) == (
        row_id, "echo__e\\udc01", '{"tag":"a\\ud800b"}', "bad \\ud83d text")
    assert row.arguments_digest == arguments_digest(args) != arguments_digest({"tag": "a\ufffdb"})
    long_name = "t" * 150 + "\ud800" * 10  # review finding: escaping after the cut overflowed the column
    access.audit(action="call", tool=long_name, status="unknown_tool")
    newest = access.audit_log.query(action="call")[0]
    assert newest.tool == "t" * 150 + "\\ud800" + "\\ud…" and len(newest.tool) == 160
    assert access.audit_log.verify() == (2, None)
    access.close()
