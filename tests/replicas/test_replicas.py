"""Issue 15: two real `toolhost serve` replicas on one PostgreSQL, driven by the SDK client.

Users, keys, grants and approvals are managed with the real admin CLI on the shared database;
nothing is restarted between steps. Each test starts several Python processes (replicas, their
upstream servers, CLI runs), so the time bounds are generous for a loaded 2-core CI machine.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import httpx2
import pytest

from host.access import AccessControl
from tests.replicas.harness import FLAKY, ORDERS, TOOLHOST, Cluster, Replica, call, error_code

ORDER = {"order_id": "A1001"}
BOUND = 240  # seconds for one scenario (hang guard)
pytestmark = pytest.mark.timeout(420)


def _setup(cluster: Cluster) -> str:
    cluster.admin("users", "add", "alice")
    cluster.admin("grants", "add", "alice", "orders__get_order")
    return cluster.new_key("alice")


def test_a_grant_added_while_replicas_run_is_enforced_by_each_on_its_next_request(cluster: Cluster) -> None:
    key = _setup(cluster)
    a, b = cluster.start(2)

    async def scenario() -> None:
        with anyio.fail_after(BOUND):
            assert error_code(await call(b.url, key, "orders__list_orders")) == "unknown_tool"  # B cached its policy
            assert error_code(await call(a.url, key, "orders__get_order", ORDER)) is None
            cluster.admin("grants", "add", "alice", "orders__list_orders")
            listed = await call(b.url, key, "orders__list_orders", {"status": "shipped"})
            assert error_code(listed) is None and listed.structured_content["count"] == 1
            cluster.admin("grants", "add", "alice", "orders__get_order", "--deny")
            assert error_code(await call(a.url, key, "orders__get_order", ORDER)) == "unknown_tool"
            assert error_code(await call(b.url, key, "orders__get_order", ORDER)) == "unknown_tool"
            cluster.admin("keys", "revoke", "alice", "--all")
            async with httpx2.AsyncClient() as http:  # a revoked key: 401 on both, at once
                for r in (a, b):
                    resp = await http.post(r.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                           headers={"Authorization": f"Bearer {key}",
                                                    "Accept": "application/json, text/event-stream"})
                    assert resp.status_code == 401

    anyio.run(scenario)


def test_an_approval_made_on_one_replica_runs_once_on_the_other(cluster: Cluster) -> None:
    key = _setup(cluster)
    cluster.admin("grants", "add", "alice", "orders__cancel_order", "--max-risk", "destructive", "--approval")
    a, b = cluster.start(2)
    args = {"order_id": "A1002"}

    async def scenario() -> None:
        with anyio.fail_after(BOUND):
            waiting = await call(a.url, key, "orders__cancel_order", args)
            assert error_code(waiting) == "approval_required"
            approval_id = waiting.meta["toolhost/error"]["approval_id"]
            # the real CLI, in its own process, finding the database through the environment
            env = {**os.environ, "TOOLHOST_DATABASE_URL": cluster.db_url}
            done = subprocess.run([TOOLHOST, "approvals", "approve", approval_id], env=env,
                                  capture_output=True, text=True, timeout=180)
            assert done.returncode == 0, done.stderr
            ran = await call(b.url, key, "orders__cancel_order", args)
            assert error_code(ran) is None and ran.structured_content == {
                "order_id": "A1002", "status": "cancelled", "changed": True, "refund_cents": 5000}
            again = await call(a.url, key, "orders__cancel_order", args)
            assert error_code(again) == "approval_required"
            assert again.meta["toolhost/error"]["approval_id"] != approval_id

    anyio.run(scenario)
    access = AccessControl.open(url=cluster.db_url)
    assert access.approvals.get(approval_id_of(access)).status == "used"
    access.close()


def approval_id_of(access: AccessControl) -> str:
    [used] = [a for a in access.approvals.list(status="all") if a.status == "used"]
    return used.id


def test_two_replicas_auditing_concurrent_calls_lose_no_row(cluster: Cluster) -> None:
    key = _setup(cluster)
    a, b = cluster.start(2)
    per_replica = 12

    async def scenario() -> None:
        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tg:
                for r in (a, b):
                    for _ in range(per_replica):
                        tg.start_soon(call, r.url, key, "orders__get_order", ORDER)

    anyio.run(scenario)
    access = AccessControl.open(url=cluster.db_url)
    rows = access.audit_log.query(action="call", limit=1000)
    assert [(r.user, r.tool, r.status) for r in rows] == [("alice", "orders__get_order", "ok")] * (2 * per_replica)
    assert len({r.id for r in rows}) == 2 * per_replica
    verified, broken = access.audit_log.verify()  # one hash chain, no fork, whichever replica appended
    assert broken is None
    assert verified == sum(1 for _ in access.audit_log.rows())
    access.close()


def test_a_rate_limit_holds_across_replicas(postgres_url: str, tmp_path: Path) -> None:
    limits = {"rate_limits": {"tools": {"orders__get_order": {"calls": 3, "per_seconds": 3600}}}}
    cluster = Cluster(postgres_url, tmp_path, toolhost=limits)
    try:
        key = _setup(cluster)
        a, b = cluster.start(2)
        outcomes: list[tuple[str | None, float | None]] = []

        async def scenario() -> None:
            with anyio.fail_after(BOUND):
                for r in (a, b, a, b, a):  # alternate: the bucket is in the database, not in a replica
                    res = await call(r.url, key, "orders__get_order", ORDER)
                    err = (res.meta or {}).get("toolhost/error", {}) if res.is_error else {}
                    outcomes.append((error_code(res), err.get("retry_after_seconds")))

        anyio.run(scenario)
        assert [code for code, _ in outcomes] == [None, None, None, "rate_limited", "rate_limited"]
        # one call per 1200 s refills (3 per hour): the wait is most of that, never zero
        assert all(600 < wait <= 1200 for _, wait in outcomes[3:])
    finally:
        cluster.stop()


def test_killing_a_replica_mid_call_loses_no_audit_row_of_a_completed_call(postgres_url: str, tmp_path: Path) -> None:
    cluster = Cluster(postgres_url, tmp_path, {"orders": ORDERS, "flaky": FLAKY})
    try:
        _kill_mid_call(cluster)
    finally:
        cluster.stop()


def _kill_mid_call(cluster: Cluster) -> None:
    key = _setup(cluster)
    cluster.admin("grants", "add", "alice", "flaky__slow")
    a, b = cluster.start(2)
    completed = 5

    async def scenario() -> None:
        with anyio.fail_after(BOUND):
            for _ in range(completed):
                assert error_code(await call(a.url, key, "orders__get_order", ORDER)) is None
            slow_failed = anyio.Event()

            async def slow_call() -> None:
                with pytest.raises(Exception):  # noqa: B017, PT011 - the connection dies with the replica
                    await call(a.url, key, "flaky__slow", {"seconds": 60})
                slow_failed.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow_call)
                while not await anyio.to_thread.run_sync(_slow_started, a):  # A is running the slow call
                    await anyio.sleep(0.05)
                a.kill()
                await slow_failed.wait()
            # the other replica keeps serving on the same database
            assert error_code(await call(b.url, key, "orders__get_order", ORDER)) is None

    anyio.run(scenario)
    access = AccessControl.open(url=cluster.db_url)
    rows = access.audit_log.query(action="call", limit=100)
    assert [(r.tool, r.status) for r in rows] == [("orders__get_order", "ok")] * (completed + 1)
    access.close()


def _slow_started(replica: Replica) -> bool:
    """Whether the replica's event log (in its own data folder) shows the slow call on its way upstream."""
    data = Path(replica.proc.args[replica.proc.args.index("--data-dir") + 1])
    return any('"flaky__slow"' in p.read_text(errors="replace") for p in (data / "events").glob("*.jsonl"))


WRITER = r"""
import sys
from typer.testing import CliRunner
from servers.cli.app import app
url, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
runner = CliRunner()
print("ready", flush=True)
sys.stdin.readline()
for i in range(n):
    for args in (["users", "add", f"{tag}{i}"], ["grants", "add", f"{tag}{i}", f"orders__t{i}"],
                 ["roles", "assign", "ops", f"{tag}{i}"]):
        r = runner.invoke(app, [*args, "--db-url", url])
        assert r.exit_code == 0, (args, r.stdout)
print("done", flush=True)
"""


def test_concurrent_admin_writes_from_several_processes_lose_nothing(cluster: Cluster) -> None:
    from tests.store.test_backends import race

    cluster.admin("roles", "add", "ops")
    n = 8
    assert race(WRITER, cluster.db_url, [[tag, str(n)] for tag in ("p", "q", "r")]) == ["done"] * 3
    access = AccessControl.open(url=cluster.db_url)
    names = {f"{t}{i}" for t in "pqr" for i in range(n)}
    assert {u.name for u in access.users.list()} == names
    assert {(u, g.pattern) for u in names for g in access.grants.list(u)} == {
        (f"{t}{i}", f"orders__t{i}") for t in "pqr" for i in range(n)}
    assert {u.name for u in access.users.list() if "ops" in u.roles} == names
    access.close()


def test_a_handshake_session_unknown_to_a_replica_answers_404(cluster: Cluster) -> None:
    key = _setup(cluster)
    a, b = cluster.start(2)
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}

    async def scenario() -> None:
        with anyio.fail_after(BOUND):
            async with httpx2.AsyncClient(timeout=30) as http:
                opened = await http.post(a.url, json=init, headers=headers)
                assert opened.status_code == 200
                session = opened.headers["mcp-session-id"]
                h = {**headers, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
                await http.post(a.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
                listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
                assert (await http.post(a.url, json=listing, headers=h)).status_code == 200
                elsewhere = await http.post(b.url, json=listing, headers=h)
                assert elsewhere.status_code == 404
                assert elsewhere.json()["error"]["message"] == "Session not found"

    anyio.run(scenario)
