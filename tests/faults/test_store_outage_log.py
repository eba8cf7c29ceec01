"""A permission-store outage is one log line per window and one line when the store is back: never
a traceback per call or per approval-watcher check, never the driver's text or the database host.

The real case stops PostgreSQL under ``toolhost serve`` (open access, HTTP, both protocol eras),
makes calls while the approval watcher keeps checking, starts it again and reads serve's log; the
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


async def _outage_calls(endpoint: str, pg: PostgresCluster) -> list[str]:
    """CALLS tool calls per protocol era with PostgreSQL stopped, then one once it is back: the outcomes."""
    seen: list[str] = []
    for mode in ("legacy", "2026-07-28"):
        async with Client(streamable_http_client(endpoint), mode=mode) as c:
            await anyio.to_thread.run_sync(pg.pause)
            try:
                for _ in range(CALLS):
                    try:
                        res = await c.call_tool("call_tool", {"name": "fx__test_simple_text", "arguments": {}})
                        seen.append("tool error" if res.is_error else "ok")
                    except MCPError as err:
                        seen.append(f"error {err.code}")
            finally:
                await anyio.to_thread.run_sync(pg.resume)
            res = await c.call_tool("call_tool", {"name": "fx__test_simple_text", "arguments": {}})
            seen.append("back: " + ("tool error" if res.is_error else "ok"))
    return seen


@pytest.mark.anyio
async def test_a_postgresql_outage_logs_one_line_and_one_when_back(tmp_path: Path) -> None:
    data, cfg = tmp_path / "home", tmp_path / "config.json"
    cfg.write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 30},
                               "mcpServers": {"fx": {"command": sys.executable, "args": [str(FIXTURE), "--stdio"]}}}))
    with PostgresCluster() as pg:
        url = pg.create_database("toolhost")
        assert CliRunner().invoke(app, ["users", "list", "--data-dir", str(data), "--db-url", url]).exit_code == 0
        with serve_http(cfg, data, "--db-url", url) as (endpoint, proc, out), anyio.fail_after(240):
            outcomes = await _outage_calls(endpoint, pg)
            # the recovery line is written by the next store access that works: the call above, or the
            # approval watcher within a second; serve's log is read after it stops
        assert proc.returncode is not None
        log = "".join(out)
    assert outcomes == (["error -32603"] * CALLS + ["back: ok"]) * 2, outcomes
    down = [line for line in log.splitlines() if "permission store unavailable" in line]
    back = [line for line in log.splitlines() if "permission store available again" in line]
    # two outages (one per era) inside one 30 s window: one outage line and one recovery line in all
    assert len(down) == 1 and len(back) == 1, log
    assert "Traceback" not in log and "authorizing call" not in log and "reading pending approvals" not in log
    assert "permission store unavailable (unreachable; DatabaseUnavailable at authorize); answering the " \
           "store-outage error until it is back (1 refusal in the last 30 s)" in down[0]
    refused = int(re.search(r"available again after [0-9.]+ s \((\d+) refusals\)", back[0]).group(1))
    assert refused >= CALLS, back
    for line in down + back:
        assert "127.0.0.1" not in line and "psycopg" not in line and "connection" not in line.lower()


def _locked() -> OperationalError:
    return OperationalError("UPDATE grants", {}, Exception("database is locked (host 10.0.0.5)"))


def test_the_window_holds_across_refusals_and_flapping(caplog: pytest.LogCaptureFixture) -> None:
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
        "answering the store-outage error until it is back (1 refusal in the last 30 s)",
        "toolhost: permission store unavailable (locked by another writer; OperationalError at request); "
        "answering the store-outage error until it is back (51 refusals in the last 30 s)",
        "toolhost: permission store available again after 31.6 s (52 refusals)",
    ]
    assert [r.levelname for r in caplog.records] == ["ERROR", "ERROR", "WARNING"]
    assert not any("10.0.0.5" in line or "database is locked" in line for line in lines)
