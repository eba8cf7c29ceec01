"""``toolhost doctor`` on remote (streamable HTTP / SSE) servers gives the fix for what went wrong
over the network — nothing listening, a host name that does not resolve, TLS against a plain HTTP
port — never stdio advice; a flooding stderr line is shown cut with its length; a URL that is not
one gets a fix that reads as one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

from servers.cli.doctor import STAGE_FIXES
from tests.admin.support import TOOLHOST


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _doctor(tmp_path: Path, servers: dict) -> dict:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 10}, "mcpServers": servers}))
    env = os.environ | {"COLUMNS": "80", "TOOLHOST_HOME": str(tmp_path / "h")}
    done = subprocess.run([TOOLHOST, "doctor", "--config", str(cfg), "--json"], capture_output=True, text=True,
                          timeout=120, env=env, check=False)
    assert done.returncode == 1, done.stderr
    return {s["name"]: s for s in json.loads(done.stdout)["servers"]}


def test_remote_failures_get_network_fixes_not_stdio_ones(tmp_path) -> None:
    plain = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)  # speaks HTTP, not TLS
    Thread(target=plain.serve_forever, daemon=True).start()
    closed = _free_port()
    try:
        got = _doctor(tmp_path, {
            "refused": {"url": f"http://127.0.0.1:{closed}/mcp"},
            "refused_sse": {"url": f"http://127.0.0.1:{closed}/sse", "transport": "sse"},
            "nodns": {"url": "http://no-such-host.invalid/mcp"},
            "tls": {"url": f"https://127.0.0.1:{plain.server_address[1]}/mcp"},
        })
    finally:
        plain.shutdown()
        plain.server_close()
    assert got["refused"]["fix"] == (f"start the server at http://127.0.0.1:{closed}/mcp, or correct the URL's "
                                     "host and port")
    assert got["refused_sse"]["fix"] == (f"start the server at http://127.0.0.1:{closed}/sse, or correct the URL's "
                                         "host and port")
    assert got["nodns"]["fix"] == ("correct the host name in http://no-such-host.invalid/mcp (or check the "
                                   "network's DNS / VPN)")
    assert got["tls"]["fix"].startswith("use http:// for a server without TLS (or the TLS port)")
    assert all(s["fix"] != STAGE_FIXES["handshake"] for s in got.values())


def test_a_flooding_stderr_line_is_cut_and_a_non_url_reads_as_a_fix(tmp_path) -> None:
    flood = "import sys; sys.stderr.write('x' * 5000 + '\\n'); sys.exit(3)"
    got = _doctor(tmp_path, {"flood": {"command": sys.executable, "args": ["-c", flood]},
                             "typo": {"url": "not a url"}})
    assert got["flood"]["stderr_tail"] == "x" * 800 + "… (5000 characters)"
    assert (got["typo"]["problem"], got["typo"]["fix"]) == (
        "config: mcpServers.typo.url: 'not a url' is not a URL; write the server's address as "
        "http://HOST:PORT/PATH or https://HOST/PATH",
        "edit the entry at the JSON path named above, then run `toolhost doctor` again")


def test_a_server_without_a_version_reads_cleanly_in_the_ok_line(tmp_path) -> None:
    script = tmp_path / "slow.py"
    script.write_text("from mcp.server.mcpserver import MCPServer\napp = MCPServer('slow', version='')\n"
                      "@app.tool()\nasync def ping() -> str:\n    '''Ping.'''\n    return 'pong'\napp.run()\n")
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"mcpServers": {"slow": {"command": sys.executable, "args": [str(script)]}}}))
    env = os.environ | {"COLUMNS": "80", "TOOLHOST_HOME": str(tmp_path / "h")}
    done = subprocess.run([TOOLHOST, "doctor", "--config", str(cfg)], capture_output=True, text=True, timeout=120,
                          env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith("ok      slow: 1 tools over stdio (slow, protocol 2026-07-28, ")
