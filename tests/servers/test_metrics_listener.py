"""``toolhost serve --metrics-host/--metrics-port``: ``/metrics`` without a credential on a listener
of its own (API keys on: the main listener's ``/metrics`` still answers 401), nothing else on that
listener, a warning when it is bound beyond loopback, and it stops with serve."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import anyio
import httpx2
import pytest
from typer.testing import CliRunner

from servers.cli.app import app
from tests.servers.serve_proc import serve_http

pytestmark = pytest.mark.anyio


def _users(data: Path) -> str:
    for args in (["users", "add", "alice"], ["keys", "create", "alice"]):
        result = CliRunner().invoke(app, [*args, "--data-dir", str(data)])
        assert result.exit_code == 0, result.stdout
    return result.stdout


async def test_metrics_on_their_own_listener_need_no_credential(tmp_path: Path) -> None:
    data, cfg = tmp_path / "home", tmp_path / "config.json"
    cfg.write_text(json.dumps({"mcpServers": {}}))
    _users(data)  # API keys on
    with serve_http(cfg, data, "--metrics-host", "0.0.0.0", "--metrics-port", "0") as (url, proc, out):
        text = "".join(out)
        assert "warning: /metrics is served without a credential on 0.0.0.0" in " ".join(text.split())
        port = re.search(r"/metrics without a credential at http://0\.0\.0\.0:(\d+)/metrics", text).group(1)
        metrics_url = f"http://127.0.0.1:{port}"
        with anyio.fail_after(60):
            async with httpx2.AsyncClient(timeout=30) as http:
                main = await http.get(url.removesuffix("/mcp") + "/metrics")
                own = await http.get(f"{metrics_url}/metrics")
                other = [(await http.get(f"{metrics_url}{path}")).status_code for path in ("/mcp", "/admin", "/")]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    assert main.status_code == 401  # the main listener still wants an admin's credential
    assert own.status_code == 200 and own.headers["content-type"].startswith("text/plain")
    assert "toolhost_build_info{python=" in own.text
    assert other == [404, 404, 404]
    with pytest.raises(httpx2.ConnectError):  # stopped with serve
        httpx2.get(f"{metrics_url}/metrics", timeout=5)


async def test_no_metrics_listener_unless_asked(tmp_path: Path) -> None:
    data, cfg = tmp_path / "home", tmp_path / "config.json"
    cfg.write_text(json.dumps({"mcpServers": {}}))
    with serve_http(cfg, data) as (_url, _proc, out):
        assert "/metrics without a credential" not in "".join(out)
