"""A real ``toolhost serve`` wires the pieces: ``--log-format json`` (here from ``TOOLHOST_LOG_FORMAT``)
writes only JSON lines, banner and server rows included; ``/metrics`` counts HTTP answers by status
and refused keys by reason."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import httpx2

from tests.admin.support import PY, TOOLHOST, people
from tests.admin.test_metrics_scrape import samples


def test_json_log_format_from_env_and_http_metrics(tmp_path) -> None:
    data = tmp_path / "data"
    people(data)
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {
        "orders": {"command": PY, "args": ["-m", "servers.examples.orders"]},
        "gone": {"command": "no-such-mcp-binary", "args": []}}}))
    env = {**os.environ, "TOOLHOST_CONFIG": str(cfg), "TOOLHOST_HOME": str(data), "TOOLHOST_LOG_FORMAT": "json",
           "TOOLHOST_PORT": "0", "COLUMNS": "80"}
    proc = subprocess.Popen([TOOLHOST, "serve"], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    records = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            records.append(json.loads(line))  # every line is one JSON object
            if records[-1].get("event") == "serve.ready":
                break
        url = records[-1]["url"]
        assert httpx2.post(url, json={}, headers={"Accept": "application/json, text/event-stream"}).status_code == 401
        token = (data / "admin.token").read_text().strip()  # with API keys on, /metrics takes a credential
        got = samples(httpx2.get(url.removesuffix("/mcp") + "/metrics",
                                 headers={"Authorization": f"Bearer {token}"}).text)
    finally:
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=60)[1]
    records += [json.loads(line) for line in rest.splitlines()]
    assert proc.returncode == 0
    events = [r.get("event") for r in records if r["logger"] == "toolhost.serve"]
    assert events == ["serve.listening", "server.status", "server.status", "serve.ready", "serve.stopped"]
    rows = {r["server"]: (r["state"], r["level"]) for r in records if r.get("event") == "server.status"}
    assert rows == {"orders": ("connected", "info"), "gone": ("failed", "error")}
    assert got[("toolhost_auth_failures_total", (("reason", "no_key"),))] == 1
    assert got[("toolhost_http_requests_total", (("status", "401"),))] == 1
