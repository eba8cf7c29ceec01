"""`toolhost tools/search/call/servers` against real third-party MCP servers no one here wrote.

Peers: mcp-server-time and mcp-server-git (PyPI, 2026-07-28 protocol) and
@modelcontextprotocol/server-everything (npm, 2025-11-25 handshake) over stdio.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from servers.cli.app import app
from tests.servers.conftest import PY, everything, git_server

runner = CliRunner()


@pytest.fixture
def peers_config(tmp_path: Path, git_repo: Path) -> Path:
    cfg = {
        "mcpServers": {
            "time": {"command": PY, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
            "git": git_server(git_repo),
            "everything": everything(),
        }
    }
    path = tmp_path / "peers.json"
    path.write_text(json.dumps(cfg))
    return path


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout


def test_servers_reports_both_protocol_generations(peers_config, tmp_path):
    code, out = run("servers", "--config", str(peers_config), "--data-dir", str(tmp_path / "d"), "--json")
    assert code == 0, out
    rows = {r["name"]: r for r in json.loads(out)}
    assert {n: r["state"] for n, r in rows.items()} == {"time": "connected", "git": "connected", "everything": "connected"}
    assert rows["time"]["tools"] == 2 and rows["everything"]["tools"] == 17 and rows["git"]["tools"] >= 12


def test_tools_lists_risk_from_real_annotations(peers_config, tmp_path):
    code, out = run("tools", "--config", str(peers_config), "--data-dir", str(tmp_path / "d"), "--json")
    assert code == 0, out
    tools = {t["name"]: t for t in json.loads(out)}
    assert tools["git__git_reset"]["risk"] == "destructive"
    assert tools["git__git_status"]["risk"] == "read"
    assert tools["time__get_current_time"]["risk"] == "read"
    assert tools["everything__get-sum"]["risk"] == "read"
    assert tools["everything__get-sum"]["server"] == "everything"


def test_search_finds_the_right_real_tool(peers_config, tmp_path):
    code, out = run("search", "convert time between timezones", "--config", str(peers_config),
                    "--data-dir", str(tmp_path / "d"), "--json", "--limit", "3")
    assert code == 0, out
    assert json.loads(out)[0]["name"] == "time__convert_time"


def test_call_returns_real_values(peers_config, tmp_path, git_repo):
    d = str(tmp_path / "d")
    code, out = run("call", "everything__get-sum", '{"a": 19, "b": 23}', "--config", str(peers_config),
                    "--data-dir", d, "--json")
    assert code == 0, out
    assert "42" in json.loads(out)["content"][0]["text"]

    code, out = run("call", "time__convert_time",
                    '{"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}',
                    "--config", str(peers_config), "--data-dir", d, "--json")
    assert code == 0, out
    assert json.loads(out)["structured"]["target"]["datetime"].endswith("T21:00:00+09:00")

    code, out = run("call", "git__git_log", json.dumps({"repo_path": str(git_repo)}), "--config", str(peers_config),
                    "--data-dir", d)
    assert code == 0, out
    assert "first commit" in out


def test_call_errors_exit_nonzero_with_the_reason(peers_config, tmp_path):
    d = str(tmp_path / "d")
    code, out = run("call", "time__nope", "{}", "--config", str(peers_config), "--data-dir", d)
    assert code == 1 and "there is no tool named 'time__nope'" in out and "tool_search" in out
    code, _ = run("call", "time__convert_time", "[1]", "--config", str(peers_config), "--data-dir", d)
    assert code == 2
