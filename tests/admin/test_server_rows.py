"""``toolhost servers --json`` prints the admin API's rows (servers/admin/server_rows.py): the same keys and
values whether a running serve answers or the CLI connects the servers itself."""

from __future__ import annotations

import json
import os
import subprocess

from servers.admin.server_rows import SERVER_ROW_KEYS
from tests.admin.support import PY, TOOLHOST, Serve


def test_servers_json_rows_are_the_admin_api_rows_with_or_without_a_running_serve(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {
        "orders": {"command": PY, "args": ["-m", "servers.examples.orders"]},
        "broken": {"command": "/nonexistent/toolhost-missing-server"}}}))

    def cli() -> list[dict]:
        done = subprocess.run([TOOLHOST, "servers", "--json", "--config", str(cfg), "--data-dir", str(data)],
                              capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
        assert done.returncode == 1, done.stderr  # a server failed
        return json.loads(done.stdout)

    with Serve(cfg, data) as serve:
        with serve.api() as api:
            from_api = api.get("/servers").json()["servers"]
        via_serve = cli()
    alone = cli()

    assert via_serve == from_api
    assert [tuple(r) for r in alone] == [SERVER_ROW_KEYS] * 2 == [tuple(r) for r in from_api]
    for row in (*alone, *from_api):
        assert row["connect_seconds"] is None or row["connect_seconds"] > 0
    # the values: the same but for how long connecting took, and the serve's note that it will not retry
    # a server the configuration must fix (a one-shot CLI run retries nothing anyway)
    hint = " (not retried: fix it, then run `toolhost reconnect broken` or reload the config)"
    same = [{k: v for k, v in r.items() if k != "connect_seconds"} for r in alone]
    assert [r | {"error": r["error"] and r["error"] + hint} if r["name"] == "broken" else r for r in same] == [
        {k: v for k, v in r.items() if k != "connect_seconds"} for r in from_api]
    orders, broken = sorted(alone, key=lambda r: r["name"] != "orders")
    assert (orders["state"], orders["tools"], orders["available"], orders["state_text"], orders["server_info"]) == (
        "connected", 3, True, "connected", orders["server_info"])
    assert (broken["state"], broken["tools"], broken["available"], broken["transport"]) == ("failed", 0, False, "stdio")
    assert broken["error"] == (
        "start: mcpServers.broken.command: '/nonexistent/toolhost-missing-server' does not exist (fix the path)")
