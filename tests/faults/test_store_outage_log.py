"""A permission-store outage is one log line per window and one line when the store is back: never
a traceback per call or per approval-watcher check, never the driver's text or the database host.

The real case stops PostgreSQL under ``toolhost serve`` (open access, HTTP, both protocol eras)
until the console's approval watcher met the outage, makes calls (each refused at the authorize
stage or before) and ``/readyz`` checks, starts it again and reads serve's log; the audit writer's
failed probes and writes under another process's SQLite write lock go through the same limiter;
the window itself is checked on :class:`host.pipeline.StoreOutageLog` with a clock the test moves."""

from __future__ import annotations

import json
import logging
import re
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy import make_url
from sqlalchemy.exc import OperationalError
from typer.testing import CliRunner

from host.access.audit_writer import AuditWriter
from host.pipeline import StoreOutageLog
from host.store import AuditLog, AuditUnavailable, Store
from servers.cli.app import app
from tests.faults.audit_faults import hold_lock
from tests.postgres import PostgresCluster
from tests.servers.serve_proc import serve_http

FIXTURE = Path(__file__).resolve().parents[2] / "tests/peers/conformance_server.py"
CALLS = 12
READY_CHECKS = 5


async def _line(out: list[str], text: str) -> str:
    """The first line of serve's output holding ``text``, once it is written (bound the wait)."""
    while not (found := [line for line in out if text in line]):
        await anyio.sleep(0.05)  # serve's stderr is read by serve_http's thread into ``out``
    return found[0]


async def _outage(endpoint: str, pg: PostgresCluster, out: list[str]) -> list[str]:
    """PostgreSQL stopped until the approval watcher met it, then CALLS tool calls on a 2025-11-25
    session and as many on 2026-07-28 and READY_CHECKS ``/readyz`` checks, then started again and
    one call each: the outcomes."""
    seen: list[str] = []
    readyz = endpoint.removesuffix("/mcp") + "/readyz"
    async with Client(streamable_http_client(endpoint), mode="legacy") as old, \
            Client(streamable_http_client(endpoint), mode="2026-07-28") as new:
        await anyio.to_thread.run_sync(pg.pause)
        try:
            await _line(out, "permission store unavailable")  # the watcher checks every second
            for c in (old, new):
                for _ in range(CALLS):
                    try:
                        res = await c.call_tool("call_tool", {"name": "fx__test_simple_text", "arguments": {}})
                        seen.append("tool error" if res.is_error else "ok")
                    except MCPError as err:
                        seen.append(f"error {err.code}")
            async with httpx.AsyncClient() as http:
                for _ in range(READY_CHECKS):
                    res = await http.get(readyz)
                    seen.append(f"readyz {res.status_code} {res.json()['store']}")
        finally:
            await anyio.to_thread.run_sync(pg.resume)
        for c in (old, new):
            res = await c.call_tool("call_tool", {"name": "fx__test_simple_text", "arguments": {}})
            seen.append("back: " + ("tool error" if res.is_error else "ok"))
        await _line(out, "permission store available again")
    return seen


@pytest.mark.anyio
async def test_a_postgresql_outage_logs_one_line_and_one_when_back(tmp_path: Path) -> None:
    data, cfg = tmp_path / "home", tmp_path / "config.json"
    cfg.write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 30},
                               "mcpServers": {"fx": {"command": sys.executable, "args": [str(FIXTURE), "--stdio"]}}}))
    with PostgresCluster() as pg:
        url = pg.create_database("toolhost")
        assert CliRunner().invoke(app, ["users", "list", "--data-dir", str(data), "--db-url", url]).exit_code == 0
        with serve_http(cfg, data, "--db-url", url) as (endpoint, _proc, out), anyio.fail_after(240):
            outcomes = await _outage(endpoint, pg, out)
            log = "".join(out)
    assert outcomes == (["error -32603"] * (2 * CALLS) + ["readyz 503 unavailable"] * READY_CHECKS
                        + ["back: ok"] * 2), outcomes
    down = [line for line in log.splitlines() if "permission store unavailable" in line]
    back = [line for line in log.splitlines() if "permission store available again" in line]
    # the watcher's checks, 2 x CALLS calls and the /readyz checks inside one 30 s window: one
    # outage line, one when back
    assert len(down) == 1 and len(back) == 1, log
    assert "Traceback" not in log and "authorizing call" not in log and "reading pending approvals" not in log
    assert "store probe failed" not in log and "audit log cannot be written" not in log
    # the watcher met it first: its failure is SQLAlchemy's class name, never the driver's text
    assert re.search(r"permission store unavailable \(unreachable; OperationalError at approval watcher\); "
                     r"answering the store-outage error until it is back \(1 failure in the last 30 s\)$", down[0])
    failed = int(re.search(r"available again after [0-9.]+ s \((\d+) failures\)$", back[0]).group(1))
    assert failed >= 2 * CALLS + READY_CHECKS, back  # the calls and checks were counted, not logged
    db_port = f"port {make_url(url).port}"  # how the driver names the database's host in its text
    for line in log.splitlines():
        assert "psycopg" not in line and "connection refused" not in line.lower() and db_port not in line, line


@pytest.mark.anyio
async def test_audit_probe_failures_share_the_outage_window(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "toolhost.db"
    store = Store.open(f"sqlite:///{db}")
    now = [100.0]
    outage = StoreOutageLog(interval=30.0, clock=lambda: now[0])
    writer = AuditWriter(AuditLog(store), outage_log=outage)
    caplog.set_level(logging.DEBUG)
    refused = []
    try:
        with hold_lock(db), anyio.fail_after(60):
            for _ in range(4):
                with pytest.raises(AuditUnavailable) as probe:
                    await writer.ensure_writable(timeout_seconds=0.2)
                refused.append(probe.value.reason)
            now[0] += 31.0
            with pytest.raises(AuditUnavailable):
                await writer.ensure_writable(timeout_seconds=0.2)
        with anyio.fail_after(60):
            await writer.ensure_writable(timeout_seconds=5.0)  # the lock is gone
            assert await writer.write({"action": "call", "user": "alice", "status": "ok"}) is not None
    finally:
        writer.close()
    assert refused == ["locked by another writer"] * 4
    assert [r.action for r in AuditLog(store).query(action="call")] == ["call"]
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert lines == [
        "toolhost: permission store unavailable (locked by another writer; OperationalError at audit probe); "
        "answering the store-outage error until it is back (1 failure in the last 30 s)",
        "toolhost: permission store unavailable (locked by another writer; OperationalError at audit probe); "
        "answering the store-outage error until it is back (4 failures in the last 30 s)",
    ], lines
    assert not any("database is locked" in r.getMessage() for r in caplog.records)


def _locked() -> OperationalError:
    return OperationalError("UPDATE grants", {}, Exception("database is locked (host 10.0.0.5)"))


def test_the_window_holds_across_failures_and_flapping(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    log = StoreOutageLog(interval=30.0, clock=lambda: now[0])
    caplog.set_level(logging.INFO, logger="toolhost.serve")
    assert [log.note(_locked(), "authorize") for _ in range(50)] == [True] + [False] * 49
    now[0] += 29.9
    assert log.note(_locked(), "approval watcher") is False
    now[0] += 0.2
    assert log.note(_locked(), "request") is True
    now[0] += 1.5
    assert log.recovered() is True and log.recovered() is False and not log.down
    # a flapping store (works, fails, works) inside the same window writes nothing more
    assert log.note(_locked(), "authorize") is False and log.down
    assert log.recovered() is False and not log.down
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "toolhost: permission store unavailable (locked by another writer; OperationalError at authorize); "
        "answering the store-outage error until it is back (1 failure in the last 30 s)",
        "toolhost: permission store unavailable (locked by another writer; OperationalError at request); "
        "answering the store-outage error until it is back (51 failures in the last 30 s)",
        "toolhost: permission store available again after 31.6 s (52 failures)",
    ]
    assert [r.levelname for r in caplog.records] == ["ERROR", "ERROR", "WARNING"]
    assert not any("10.0.0.5" in line or "database is locked" in line for line in lines)
