"""A PostgreSQL outage under ``toolhost serve`` (API keys on): a request that needs the permission
store answers HTTP 503 with ``Retry-After`` and a JSON-RPC error "permission store unavailable"
(code -32603, never 0), not a bare 500, and names neither the database host nor the driver's text;
once the database is back the same key works again."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from typer.testing import CliRunner

from servers.cli.app import app
from tests.postgres import PostgresCluster

TOOLHOST = str(Path(sys.executable).parent / "toolhost")
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def _admin(data: Path, url: str, *args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--data-dir", str(data), "--db-url", url])
    assert result.exit_code == 0, result.stdout
    return result.stdout


def _serve(data: Path, cfg: Path, url: str) -> subprocess.Popen:
    return subprocess.Popen(
        [TOOLHOST, "serve", "--port", "0", "--config", str(cfg), "--data-dir", str(data), "--db-url", url],
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True,
        env={**os.environ, "COLUMNS": "300"},
    )


@pytest.mark.anyio
async def test_postgresql_down_answers_503_with_retry_after(tmp_path: Path) -> None:
    data = tmp_path / "home"
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"mcpServers": {}}))
    with PostgresCluster() as pg:
        url = pg.create_database("toolhost")
        _admin(data, url, "users", "add", "alice")
        key = re.search(r"(th_\w+_\S+)", _admin(data, url, "keys", "create", "alice")).group(1)
        proc = _serve(data, cfg, url)
        try:
            assert proc.stderr is not None
            endpoint = next(m.group(1) for line in proc.stderr if (m := re.search(r"at (http://\S+/mcp)", line)))
            headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
            with anyio.fail_after(90):
                async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
                    up = await http.post(endpoint, json=INITIALIZE)
                    assert up.status_code == 200
                    await anyio.to_thread.run_sync(pg.pause)
                    answers = [await http.post(endpoint, json=INITIALIZE) for _ in range(3)]
                    await anyio.to_thread.run_sync(pg.resume)
                    back = await http.post(endpoint, json=INITIALIZE)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(60)
            log = proc.stderr.read() if proc.stderr else ""
    for down in answers:
        assert down.status_code == 503
        assert down.headers["retry-after"] == "5"
        error = down.json()["error"]
        assert error["code"] == -32603
        assert error["message"] == "permission store unavailable (unreachable); retry in 5 s"
        assert "127.0.0.1" not in down.text and "psycopg" not in down.text
    assert back.status_code == 200
    assert log.count("permission store unavailable") == 1  # one line for the outage, no traceback per request
    assert "Traceback" not in log
