"""Configuration problems fail only their server, with one line naming the server, the JSON path
and the fix (VS Code inputs, relative cwd, missing/non-executable commands, unset variables)."""

from __future__ import annotations

import json
import os
import sys

import anyio
import pytest
from typer.testing import CliRunner

from host.config import load_config, parse_config
from host.upstream.manager import ServerManager
from host.upstream.status import ConnectionState
from servers.cli.app import app
from tests.upstream.support import HOSTILE, config, hostile

PY = sys.executable


def test_unset_variable_fails_only_its_server():
    cfg = parse_config({"mcpServers": {
        "docs": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
        "good": {"command": "x"}}}, environ={})
    assert list(cfg.servers) == ["good"]
    assert cfg.failed["docs"].reason == ("mcpServers.docs.headers.Authorization: environment variable DOCS_TOKEN "
                                         "is not set (set it, or write ${DOCS_TOKEN:-default})")
    assert cfg.failed["docs"].transport == "streamable-http"


def test_vscode_inputs_and_workspace_folder_resolve_or_fail_clearly(tmp_path):
    vscode = tmp_path / "proj" / ".vscode"
    vscode.mkdir(parents=True)
    data = {
        "inputs": [{"type": "promptString", "id": "api-key", "password": True},
                   {"type": "promptString", "id": "region", "default": "eu"}],
        "servers": {
            "remote": {"type": "http", "url": "https://x/mcp",
                       "headers": {"Authorization": "Bearer ${input:api-key}", "X-Region": "${input:region}"}},
            "local": {"command": "x", "args": ["${workspaceFolder}/data", "${userHome}"]},
        },
    }
    (vscode / "mcp.json").write_text(json.dumps(data))
    cfg = load_config(vscode / "mcp.json", environ={"TOOLHOST_INPUT_API_KEY": "k1"})
    assert cfg.servers["remote"].headers == {"Authorization": "Bearer k1", "X-Region": "eu"}
    assert cfg.servers["local"].args == [f"{tmp_path / 'proj'}/data", os.path.expanduser("~")]
    unresolved = load_config(vscode / "mcp.json", environ={})
    assert list(unresolved.servers) == ["local"]
    assert unresolved.failed["remote"].reason == (
        "mcpServers.remote.headers.Authorization: ${input:api-key} has no value (set the environment variable "
        "TOOLHOST_INPUT_API_KEY, or give the input 'api-key' a \"default\" in the top-level \"inputs\" list)")
    override = load_config(vscode / "mcp.json",
                           environ={"TOOLHOST_INPUT_API_KEY": "k", "TOOLHOST_WORKSPACE_FOLDER": "/w"})
    assert override.servers["local"].args[0] == "/w/data"


def test_relative_cwd_is_resolved_against_the_config_file(tmp_path, monkeypatch):
    (tmp_path / "cfg" / "srv").mkdir(parents=True)
    (tmp_path / "cfg" / "c.json").write_text(json.dumps({"mcpServers": {"s": {"command": "x", "cwd": "srv"}}}))
    monkeypatch.chdir("/")
    assert load_config(tmp_path / "cfg" / "c.json").servers["s"].cwd == str((tmp_path / "cfg" / "srv").resolve())


def test_package_runners_get_a_longer_first_connect_budget():
    cfg = parse_config({"mcpServers": {"n": {"command": "npx", "args": ["-y", "pkg"]}, "p": {"command": "python3"},
                                       "o": {"command": "python3", "toolhost": {"first_connect_timeout_seconds": 90}}}})
    assert cfg.lifecycle_for(cfg.servers["n"]).first_connect_timeout_seconds == 120
    assert cfg.lifecycle_for(cfg.servers["p"]).first_connect_timeout_seconds is None
    assert cfg.lifecycle_for(cfg.servers["o"]).first_connect_timeout_seconds == 90


@pytest.mark.anyio
async def test_start_problems_fail_only_their_server(tmp_path):
    script = tmp_path / "not_exec.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o644)
    cfg = config({
        "missing": {"command": "no-such-mcp-server-cmd"},
        "nocwd": {"command": PY, "args": [HOSTILE], "cwd": str(tmp_path / "nope")},
        "noexec": {"command": str(script)},
        "good": hostile(),
    })
    with anyio.fail_after(30):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=True) as m:
            st = {s.name: s for s in m.statuses()}
            assert {n: s.state for n, s in st.items()} == {
                "missing": ConnectionState.FAILED, "nocwd": ConnectionState.FAILED,
                "noexec": ConnectionState.FAILED, "good": ConnectionState.CONNECTED}
            def tail(name):
                return f" (not retried: fix it, then run `toolhost reconnect {name}` or reload the config)"
            assert st["missing"].error == ("start: mcpServers.missing.command: 'no-such-mcp-server-cmd' was not found "
                                           "on PATH (install it, give its full path, or set PATH in "
                                           "mcpServers.missing.env)" + tail("missing"))
            assert st["nocwd"].error == (f"start: mcpServers.nocwd.cwd: folder '{tmp_path / 'nope'}' does not exist "
                                         "(create it or fix the path; a relative cwd is resolved against the config "
                                         "file's folder)" + tail("nocwd"))
            assert st["noexec"].error == (f"start: mcpServers.noexec.command: '{script}' is not executable (chmod +x "
                                          "it, or run it through its interpreter, e.g. \"command\": \"python3\", "
                                          "\"args\": [script])" + tail("noexec"))
            res = await m.call_tool("good", "echo", {"text": "ok"}, timeout_seconds=10)
            assert res.content[0].text == "ok"


def test_servers_command_shows_config_failures_next_to_healthy_servers(tmp_path):
    cfg_file = tmp_path / "c.json"
    cfg_file.write_text(json.dumps({"mcpServers": {
        "docs": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN_UNSET_X}"}},
        "good": hostile()}}))
    result = CliRunner().invoke(app, ["servers", "--config", str(cfg_file), "--data-dir", str(tmp_path / "d"),
                                      "--json"], env={"COLUMNS": "200"})
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert result.exit_code == 1
    assert rows["good"]["state"] == "connected" and rows["good"]["tools"] == 6
    assert rows["docs"]["state"] == "failed"
    assert rows["docs"]["error"] == ("config: mcpServers.docs.headers.Authorization: environment variable "
                                     "DOCS_TOKEN_UNSET_X is not set (set it, or write ${DOCS_TOKEN_UNSET_X:-default})")
