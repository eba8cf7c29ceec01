"""No audit row, no action through a real ``toolhost serve``: while another process holds the
SQLite write lock, write and destructive calls over HTTP (both protocol eras) and stdio are
answered "not sent" with the store's message (no driver text, no JSON-RPC error) and never reach
the recording upstream; before and after, calls run and are audited."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from host.access import AccessControl
from tests.faults.audit_faults import NOT_SENT, RAN_AUDITED, hold_lock, recorder_config, table, verdict
from tests.servers.serve_proc import TOOLHOST, serve_http


async def _calls(c: Client, prefix: str, db: Path) -> dict[str, object]:
    """before (runs), w0 + d0 with the lock held (refused), after (runs): the answers by key."""
    out: dict[str, object] = {}

    async def call(tool: str, key: str) -> None:
        out[key] = await c.call_tool("call_tool", {"name": tool, "arguments": {"key": key}})

    await call("rec__write", f"{prefix}-before")
    with hold_lock(db):
        await call("rec__write", f"{prefix}-w0")
        await call("rec__delete", f"{prefix}-d0")
    await call("rec__write", f"{prefix}-after")
    return out


@pytest.mark.anyio
async def test_serve_refuses_unauditable_calls_over_http_and_stdio(tmp_path: Path) -> None:
    data, calls_dir = tmp_path / "home", tmp_path / "calls"
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(recorder_config(calls_dir)))
    db = data / "toolhost.db"
    answers: dict[str, object] = {}
    with serve_http(cfg, data) as (url, _proc, _out), anyio.fail_after(120):
        for mode in ("legacy", "2026-07-28"):
            async with Client(streamable_http_client(url), mode=mode) as c:
                answers |= await _calls(c, f"http-{mode}", db)
    params = StdioServerParameters(command=TOOLHOST, args=["serve", "--stdio", "--config", str(cfg),
                                                          "--data-dir", str(data)])
    with anyio.fail_after(120):
        async with Client(params) as c:
            answers |= await _calls(c, "stdio", db)

    access = AccessControl.open(data)
    try:
        audited = {json.loads(r.arguments)["key"] for r in access.audit_log.query(action="call", limit=1000)
                   if r.tool and r.tool.startswith("rec__") and r.arguments}
    finally:
        access.close()
    found = {}
    for key, res in answers.items():
        text = res.content[0].text
        sent_false = res.is_error and "not_executed: permission store unavailable" in text
        ran = (calls_dir / f"{key}.started").exists()
        found[key] = RAN_AUDITED if ran and key in audited else (NOT_SENT if not ran and sent_false else
                                                                  verdict_text(ran, key in audited))
        if key.endswith(("-w0", "-d0")):
            assert "SQLite file toolhost.db" in text and "locked by another writer" in text, text
            assert "database is locked" not in text and "OperationalError" not in text
    print(table("serve (HTTP legacy 2025-11-25, HTTP 2026-07-28, stdio), SQLite lock held", found))
    expected = {f"{p}-{k}": (NOT_SENT if k in ("w0", "d0") else RAN_AUDITED)
                for p in ("http-legacy", "http-2026-07-28", "stdio") for k in ("before", "w0", "d0", "after")}
    assert found == expected


def verdict_text(ran: bool, audited: bool) -> str:
    return "ran without a row" if ran and not audited else "not sent, not said"


__all__ = ["verdict"]
