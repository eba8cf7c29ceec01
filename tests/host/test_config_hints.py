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
])
def test_top_level_mistakes_suggest_the_key(data, error):
    with pytest.raises(ConfigError) as e:
        parse_config(data)
    assert f"{e.value.path}: {e.value.problem}" == error


@pytest.mark.parametrize(("data", "warning"), [
    ({"toolhost": {"timout_seconds": 3}, "mcpServers": {}},
     "toolhost.timout_seconds: unknown key, ignored (did you mean 'timeout_seconds'?)"),
    ({"toolhost": {"rate_limits": {"per_usr": 3}}, "mcpServers": {}},
     "toolhost.rate_limits.per_usr: unknown key, ignored (did you mean 'per_user'?)"),
    ({"mcpServer": {}, "mcpServers": {}}, "$.mcpServer: unknown key, ignored (did you mean 'mcpServers'?)"),
])
def test_an_unknown_top_level_key_is_a_warning_with_its_path_and_a_suggestion(data, warning):
    assert parse_config(data).warnings == [warning]


@pytest.mark.parametrize(("entry", "warning"), [
    ({"command": "x", "toolhost": {"prefx": "a"}},
     "mcpServers.s.toolhost.prefx: unknown key, ignored (did you mean 'prefix'?)"),
    ({"command": "x", "toolhost": {"tools": {"t": {"timeout_secs": 1}}}},
     "mcpServers.s.toolhost.tools.t.timeout_secs: unknown key, ignored (did you mean 'timeout_seconds'?)"),
    ({"url": "https://h/mcp", "toolhost": {"oauth": {"scpe": "read"}}},
     "mcpServers.s.toolhost.oauth.scpe: unknown key, ignored (did you mean 'scope'?)"),
    ({"command": "x", "toolhost": {"zzzzz": 1}},
     "mcpServers.s.toolhost.zzzzz: unknown key, ignored (check the spelling; see the toolhost block reference in "
     "README)"),
    ({"command": "x", "argz": []}, "mcpServers.s.argz: unknown key, ignored (did you mean 'args'?)"),
])
def test_an_unknown_key_in_a_server_entry_is_a_warning_and_the_server_starts(entry, warning):
    cfg = parse_config({"mcpServers": {"s": entry}})
    assert (list(cfg.servers), cfg.failed, cfg.warnings) == (["s"], {}, [warning])


def test_every_invalid_value_of_a_server_is_reported_at_once_and_unknown_keys_still_warn():
    cfg = parse_config({"mcpServers": {"s": {"command": "x", "args": "a b", "toolhost": {
        "timeout_seconds": -1, "risk": {"t": "dangerous"}, "prefx": "p"}}}})
    assert cfg.failed["s"].reason == (
        "mcpServers.s.toolhost.risk.t: Input should be 'read', 'write' or 'destructive', got 'dangerous' (write one of "
        "'read', 'write' or 'destructive'); "
        "mcpServers.s.toolhost.timeout_seconds: Input should be greater than 0, got -1 "
        "(write a number above 0, e.g. 30); "
        'mcpServers.s.args: Input should be a valid list, got \'a b\' (write a JSON list, e.g. ["a", "b"])')
    assert "mcpServers.s.toolhost.prefx: unknown key, ignored (did you mean 'prefix'?)" in cfg.warnings
    with pytest.raises(ConfigError) as e:
        parse_config({"toolhost": {"timeout_seconds": "soon", "max_output_chars": -5, "timout": 1}, "mcpServers": {}})
    assert f"{e.value.path}: {e.value.problem}" == (
        "toolhost.timeout_seconds: Input should be a valid number, unable to parse string as a number, got 'soon' "
        "(write a number of seconds without quotes, e.g. 30); "
        "toolhost.max_output_chars: Input should be greater than 0, got -5 (write a number above 0, e.g. 20000)")


@pytest.mark.parametrize(("entry", "reason"), [
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
