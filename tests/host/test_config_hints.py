"""Config mistakes a new user makes get a fix, not a puzzle: did-you-mean for unknown keys in
``toolhost`` blocks and for a misspelt ``mcpServers``, URLs with a bad scheme named by JSON path,
and a stdio server's non-MCP stdout line quoted in its connect error."""

from __future__ import annotations

import sys

import anyio
import pytest

from host.config import parse_config
from host.errors import ConfigError
from host.upstream.manager import ServerManager


@pytest.mark.parametrize(("data", "error"), [
    ({"mcpServer": {"a": {"command": "x"}}},
     "mcpServers: required (an object mapping server names to server entries); found 'mcpServer': did you mean "
     "'mcpServers'?"),
    ({"toolhost": {"timout_seconds": 3}, "mcpServers": {}}, "toolhost.timout_seconds: unknown key (did you mean "
     "'timeout_seconds'?)"),
    ({"toolhost": {"rate_limits": {"per_usr": 3}}, "mcpServers": {}},
     "toolhost.rate_limits.per_usr: unknown key (did you mean 'per_user'?)"),
])
def test_top_level_mistakes_suggest_the_key(data, error):
    with pytest.raises(ConfigError) as e:
        parse_config(data)
    assert f"{e.value.path}: {e.value.problem}" == error


@pytest.mark.parametrize(("entry", "reason"), [
    ({"command": "x", "toolhost": {"prefx": "a"}}, "mcpServers.s.toolhost.prefx: unknown key (did you mean 'prefix'?)"),
    ({"command": "x", "toolhost": {"tools": {"t": {"timeout_secs": 1}}}},
     "mcpServers.s.toolhost.tools.t.timeout_secs: unknown key (did you mean 'timeout_seconds'?)"),
    ({"url": "https://h/mcp", "toolhost": {"oauth": {"scpe": "read"}}},
     "mcpServers.s.toolhost.oauth.scpe: unknown key (did you mean 'scope'?)"),
    ({"command": "x", "toolhost": {"zzzzz": 1}},
     "mcpServers.s.toolhost.zzzzz: unknown key (check the spelling; see the toolhost block reference in README)"),
    ({"url": "ftp://h/mcp?token=secret"}, "mcpServers.s.url: scheme 'ftp' of 'ftp://h/mcp' is not supported; a remote "
     'MCP server is reached over http:// or https:// (a local program is a "command" entry)'),
    ({"url": "localhost:8000/mcp"},
     "mcpServers.s.url: 'localhost:8000/mcp' has no scheme; write it as http://localhost:8000/mcp or https://localhost:8000/mcp"),
    ({"type": "sse", "url": "wss://h/sse"},
     "mcpServers.s.url: scheme 'wss' of 'wss://h/sse' is not supported; MCP over HTTP uses https://, not wss://"),
])
def test_server_entry_mistakes_fail_that_server_with_the_fix(entry, reason):
    cfg = parse_config({"mcpServers": {"s": entry, "ok": {"command": "y"}}})
    assert list(cfg.servers) == ["ok"]
    assert cfg.failed["s"].reason == reason


@pytest.mark.anyio
async def test_non_mcp_stdout_text_is_quoted_in_the_connect_error(tmp_path):
    banner = "import sys, time; print('Server listening on http://localhost:3000', flush=True); "
    cfg = parse_config({"toolhost": {"connect_timeout_seconds": 3}, "mcpServers": {
        "hangs": {"command": sys.executable, "args": ["-c", banner + "time.sleep(30)"]},
        "exits": {"command": sys.executable, "args": ["-c", "print('Usage: srv [--stdio]'); raise SystemExit(2)"]}}})
    with anyio.fail_after(30):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=False) as m:
            errors = {name: c.status.error for name, c in m.connections.items()}
    advice = ("(a stdio server may write only JSON-RPC messages to stdout; its logs belong on stderr: check its "
              "flags for a stdio or quiet mode)")
    assert errors["hangs"] == (
        "handshake: no answer within the connect timeout of 3 s (raise mcpServers.hangs.toolhost."
        "connect_timeout_seconds for a slow server); it wrote text that is not MCP to stdout: 'Server listening on "
        f"http://localhost:3000' {advice}")
    assert errors["exits"].endswith(f"; it wrote text that is not MCP to stdout: 'Usage: srv [--stdio]' {advice}")
