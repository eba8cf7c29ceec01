"""``toolhost doctor`` starts every server with its real environment and says, for each, ok or what
failed and the fix; exit 1 on any failure, 2 for an invalid config; ``--json`` gives the same."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from servers.cli.doctor import split_fix
from tests.admin.support import PY, TOOLHOST

UNSET = "TOOLHOST_TEST_DOCTOR_UNSET"


def _config(tmp_path: Path) -> Path:
    chatty = tmp_path / "chatty.py"  # prints a banner on stdout instead of speaking MCP, then hangs
    chatty.write_text("import sys, time\nprint('Starting my-server v1.0 on stdio...', flush=True)\ntime.sleep(60)\n")
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 20}, "mcpServers": {
        "orders": {"command": PY, "args": ["-m", "servers.examples.orders"]},
        "docs": {"command": PY, "args": ["-m", "servers.examples.orders"], "env": {"TOKEN": f"${{{UNSET}}}"}},
        "gone": {"command": "no-such-mcp-binary", "args": []},
        "chatty": {"command": PY, "args": [str(chatty)], "toolhost": {"connect_timeout_seconds": 3}},
    }}))
    return path


def _doctor(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != UNSET} | {"COLUMNS": "80", "TOOLHOST_HOME": str(tmp_path / "h")}
    return subprocess.run([TOOLHOST, "doctor", *args], capture_output=True, text=True, timeout=120, env=env,
                          check=False)


def test_doctor_says_per_server_what_failed_and_the_fix(tmp_path) -> None:
    cfg = _config(tmp_path)
    done = _doctor(tmp_path, "--config", str(cfg))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"toolhost doctor: {cfg} (4 servers)"
    assert lines[1].startswith("ok      orders: 3 tools over stdio (orders 1.0.0, protocol ")
    assert lines[2:4] == [
        "FAILED  gone: start: mcpServers.gone.command: 'no-such-mcp-binary' was not found on PATH",
        "        fix: install it, give its full path, or set PATH in mcpServers.gone.env"]
    assert lines[4].startswith("FAILED  chatty: handshake: ") and lines[5].startswith("        fix: ")
    assert lines[6:] == [
        f"FAILED  docs: config: mcpServers.docs.env.TOKEN: environment variable {UNSET} is not set",
        f"        fix: set it, or write ${{{UNSET}:-default}}",
        "3 of 4 servers failed"]
    assert done.stderr == ""  # the unusable entry's warning is its FAILED block, not repeated

    as_json = _doctor(tmp_path, "--config", str(cfg), "--json")
    report = json.loads(as_json.stdout)
    assert (as_json.returncode, report["ok"], report["config"], report["warnings"]) == (1, False, str(cfg), [])
    assert [(s["name"], s["ok"], s["state"], s["tools"]) for s in report["servers"]] == [
        ("orders", True, "connected", 3), ("gone", False, "failed", 0), ("chatty", False, "failed", 0),
        ("docs", False, "failed", 0)]
    docs = report["servers"][3]
    assert (docs["problem"], docs["fix"]) == (
        f"config: mcpServers.docs.env.TOKEN: environment variable {UNSET} is not set",
        f"set it, or write ${{{UNSET}:-default}}")


def test_doctor_exits_0_when_every_server_connects_and_2_for_an_invalid_config(tmp_path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"mcpServers": {"orders": {"command": PY, "args": ["-m", "servers.examples.orders"]}}}))
    done = _doctor(tmp_path, "--config", str(good))
    assert (done.returncode, done.stdout.splitlines()[-1]) == (0, "every server connected")
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"x": {"command": "a",}}}')
    broken = _doctor(tmp_path, "--config", str(bad), "--json")
    report = json.loads(broken.stdout)
    assert (broken.returncode, report["ok"], report["servers"]) == (2, False, [])
    assert report["error"] == (f"{bad}: $: invalid JSON at line 1, column 38: "
                               "Expecting property name enclosed in double quotes")


def test_split_fix_takes_the_final_balanced_parenthesis() -> None:
    assert split_fix("config: a.b: X is not set (set it, or write ${X:-default})") == (
        "config: a.b: X is not set", "set it, or write ${X:-default}")
    assert split_fix("start: f(x) failed (see (the) docs)") == ("start: f(x) failed", "see (the) docs")
    assert split_fix("handshake: the server closed stdout") == (
        "handshake: the server closed stdout",
        "run the command by hand: an MCP server over stdio prints nothing but JSON-RPC on stdout")
    assert split_fix("weird") == ("weird", "see `toolhost servers` and the server's own logs")


def test_an_invalid_value_names_what_to_write_and_servers_calls_it_an_error_on_one_line(tmp_path) -> None:
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"mcpServers": {
        "orders": {"command": PY, "args": ["-m", "servers.examples.orders"], "toolhost": {"timeout_seconds": "ten"}},
        "rug": {"command": PY, "args": ["-m", "servers.examples.orders"]}}}))
    done = _doctor(tmp_path, "--config", str(path))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    failed = lines.index("FAILED  orders: config: mcpServers.orders.toolhost.timeout_seconds: Input should be a "
                         "valid number, unable to parse string as a number, got 'ten'")
    assert lines[failed + 1] == "        fix: write a number of seconds without quotes, e.g. 30"
    env = {**os.environ, "COLUMNS": "80", "TOOLHOST_HOME": str(tmp_path / "h"), "TOOLHOST_NO_SERVE": "1"}
    listed = subprocess.run([TOOLHOST, "servers", "--config", str(path)], capture_output=True, text=True,
                            timeout=120, env=env, stdin=subprocess.DEVNULL, check=False)
    assert listed.stderr.splitlines()[0] == (  # an error for that server, whole on one line (no TTY: never wrapped)
        "config error: server 'orders' is not started: mcpServers.orders.toolhost.timeout_seconds: Input should be "
        "a valid number, unable to parse string as a number, got 'ten' (write a number of seconds without quotes, "
        "e.g. 30)")
    assert "config warning" not in listed.stderr
