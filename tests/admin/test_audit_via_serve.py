"""``toolhost audit verify`` / ``audit export`` go through a running serve's admin API (which writes
its queued audit rows first), and read the database themselves when no serve runs."""

from __future__ import annotations

import json
import os
import subprocess

from tests.admin.support import PY, TOOLHOST, Serve, people

UNKNOWN_TOOL_STDERR = (
    "unknown_tool at lookup\nhint: `toolhost tools` lists the exact names (`--user NAME`: what that user may "
    "call); `toolhost search WORDS` finds a tool by what it does\n")


def test_audit_verify_and_export_see_the_serves_queued_rows_and_fall_back_to_the_database(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    people(data)
    cfg = tmp_path / "cfg.json"
    # rows are committed in the background, within 60 s: the call's row stays queued in the serve
    cfg.write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 30, "audit_durability": "interval",
                                            "audit_flush_seconds": 60},
                               "mcpServers": {"orders": {"command": PY, "args": ["-m", "servers.examples.orders"]}}}))

    def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([TOOLHOST, *args, "--data-dir", str(data)], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "COLUMNS": "200", **env})

    with Serve(cfg, data):
        called = cli("call", "orders__get_order", '{"order_id": "A1001"}')
        assert called.returncode == 0, called.stderr
        unknown = cli("call", "orders__nope")  # through the serve: a hint for a person, not the model's text only
        assert (unknown.returncode, unknown.stderr) == (1, UNKNOWN_TOOL_STDERR)
        direct = cli("audit", "export", TOOLHOST_NO_SERVE="1")  # the database alone: the row is still queued
        served = cli("audit", "export")
        verified = cli("audit", "verify")
    direct_rows = [json.loads(line) for line in direct.stdout.splitlines()]
    served_rows = [json.loads(line) for line in served.stdout.splitlines()]
    assert [(r["action"], r["tool"], r["status"]) for r in served_rows if r["action"] == "call"] == [
        ("call", "orders__get_order", "ok"), ("call", "orders__nope", "unknown_tool")]
    assert [r for r in direct_rows if r["action"] == "call"] == []
    assert served_rows[: len(direct_rows)] == direct_rows
    assert (verified.returncode, verified.stdout) == (
        0, f"ok: {len(served_rows)} rows of the audit log verified, the hash chain is intact\n")

    # the serve stopped (its queue written at exit): the database now holds the same rows, read directly
    alone = cli("audit", "export", "-o", str(tmp_path / "audit.jsonl"))
    assert (alone.returncode, alone.stderr) == (
        0,
        f"exported {len(served_rows)} audit rows to {tmp_path / 'audit.jsonl'}\n",
    )
    stored = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert stored == served_rows
    checked = cli("audit", "verify", "--file", str(tmp_path / "audit.jsonl"))
    assert (
        checked.stdout == f"ok: {len(stored)} rows of {tmp_path / 'audit.jsonl'} verified, the hash chain is intact\n"
    )
