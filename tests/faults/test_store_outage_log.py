"""A permission-store outage is one log line per window and one line when the store is back: never
a traceback per call or per approval-watcher check, never the driver's text or the database host.

The real case stops PostgreSQL under ``toolhost serve`` (open access, HTTP, both protocol eras)
until the console's approval watcher met the outage, makes calls (each refused at the authorize
stage or before), starts it again and reads serve's log; the
window itself is checked on :class:`host.pipeline.StoreOutageLog` with a clock the test moves."""

from __future__ import annotations

import json
import logging
import re
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy.exc import OperationalError
from typer.testing import CliRunner

from host.pipeline import StoreOutageLog
from servers.cli.app import app
from tests.postgres import PostgresCluster
from tests.servers.serve_proc import serve_http

FIXTURE = Path(__file__).resolve().parents[2] / "tests/peers/conformance_server.py"
CALLS = 12


async def _line(out: list[str], text: str) -> str:
    """The first line of serve's output holding ``text``, once it is written (bound the wait)."""
    while not (found := [line for line in out if text in line]):
        await anyio.sleep(0.05)  # serve's stderr is read by serve_http's thread into ``out``
    return found[0]


async def _outage(endpoint: str, pg: PostgresCluster, out: list[str]) -> list[str]:
    """PostgreSQL stopped until the approval watcher met it, then CALLS tool calls on a 2025-11-25
    session and as many on 2026-07-28, then started again and one call each: the outcomes."""
    seen: list[str] = []
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
    assert outcomes == ["error -32603"] * (2 * CALLS) + ["back: ok"] * 2, outcomes
    down = [line for line in log.splitlines() if "permission store unavailable" in line]
    back = [line for line in log.splitlines() if "permission store available again" in line]
    # the watcher's checks and 2 x CALLS calls inside one 30 s window: one outage line, one when back
    assert len(down) == 1 and len(back) == 1, log
    assert "Traceback" not in log and "authorizing call" not in log and "reading pending approvals" not in log
    # the watcher met it first: its failure is SQLAlchemy's class name, never the driver's text
    assert re.search(r"permission store unavailable \(unreachable; OperationalError at approval watcher\); "
                     r"answering the store-outage error until it is back \(1 failure in the last 30 s\)$", down[0])
    failed = int(re.search(r"available again after [0-9.]+ s \((\d+) failures\)$", back[0]).group(1))
    assert failed >= 2 * CALLS, back  # the calls were counted, not logged
    for line in down + back:
        assert "127.0.0.1" not in line and "psycopg" not in line and "connection" not in line.lower()


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
