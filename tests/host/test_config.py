"""mcpServers config: formats, env expansion, toolhost blocks, and every error path with its JSON path."""

from __future__ import annotations

import json
import os

import pytest

from host.config import DEFAULT_CONFIG_PATH, RemoteServerConfig, StdioServerConfig, load_config, parse_config
from host.errors import ConfigError
from host.upstream.connection import SAFE_ENV_VARS, _child_env
from registry import Risk

ENV = {"HOME": "/home/u", "TOKEN": "s3cret", "EMPTY": ""}


def parse(data, environ=ENV):
    return parse_config(data, environ=environ, source="cfg.json")


def error_of(data, environ=ENV) -> str:
    """The load error, or else the reason of the one server entry that failed (a bad entry fails
    only itself: it is left out of ``servers`` and recorded in ``failed``)."""
    try:
        cfg = parse(data, environ)
    except ConfigError as e:
        return str(e)
    assert len(cfg.failed) == 1, cfg.failed
    (failed,) = cfg.failed.values()
    assert failed.name not in cfg.servers
    return "cfg.json: " + failed.reason


def test_claude_desktop_stdio_and_remote_entries():
    cfg = parse({"mcpServers": {
        "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "1"}, "cwd": "/tmp"},
        "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        "vsc": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
    }})
    git, docs, old, vsc = (cfg.servers[n] for n in ("git", "docs", "old", "vsc"))
    assert isinstance(git, StdioServerConfig) and git.args == ["mcp-server-git"] and git.cwd == "/tmp"
    assert isinstance(docs, RemoteServerConfig) and docs.transport == "streamable-http"
    assert docs.headers == {"Authorization": "Bearer s3cret"}
    assert (old.transport, vsc.transport) == ("sse", "streamable-http")


def test_vscode_servers_key_and_disabled_entries():
    cfg = parse({"servers": {"a": {"command": "x"}, "b": {"command": "y", "disabled": True}}})
    assert list(cfg.servers) == ["a"] and cfg.skipped == ["b"]


def test_env_expansion_with_defaults_and_vscode_form():
    cfg = parse({"mcpServers": {"s": {"command": "${HOME}/bin/srv", "args": ["${MISSING:-dflt}", "${env:TOKEN}",
                                                                               "${EMPTY:-fallback}", "$HOME"]}}})
    assert cfg.servers["s"].command == "/home/u/bin/srv"
    assert cfg.servers["s"].args == ["dflt", "s3cret", "fallback", "$HOME"]


def test_unset_variable_names_server_path_and_variable():
    msg = error_of({"mcpServers": {"gh": {"url": "https://x", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}}})
    assert msg == ("cfg.json: mcpServers.gh.headers.Authorization: environment variable GH_TOKEN is not set "
                   "(set it, or write ${GH_TOKEN:-default})")


def test_toolhost_builtin_variables():
    cfg = parse_config({"mcpServers": {"s": {"command": "${TOOLHOST_PYTHON}", "args": ["${TOOLHOST_DATA_DIR}/x"]}}},
                       environ={}, data_dir=__import__("pathlib").Path("/data"))
    import sys
    assert cfg.servers["s"].command == sys.executable and cfg.servers["s"].args == ["/data/x"]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, "mcpServers: required (an object mapping server names to server entries)"),
        ([], "$: expected a JSON object with an 'mcpServers' key"),
        ({"mcpServers": []}, "mcpServers: expected an object, got list"),
        ({"mcpServers": {"git": {}}}, "mcpServers.git.command: required (the executable that starts a stdio server)"),
        ({"mcpServers": {"git": "uvx"}}, "mcpServers.git: expected an object with 'command' or 'url', got str"),
        ({"mcpServers": {"r": {"type": "http"}}}, "mcpServers.r.url: required (the server's URL)"),
        ({"mcpServers": {"r": {"type": "ws", "url": "x"}}},
         "mcpServers.r.type: expected one of stdio, http, streamable-http, sse; got 'ws'"),
        ({"mcpServers": {"g": {"command": "x", "args": "a b"}}}, "mcpServers.g.args: Input should be a valid list"),
        ({"mcpServers": {"g": {"command": "x", "toolhost": {"timeout_seconds": -1}}}},
         "mcpServers.g.toolhost.timeout_seconds: Input should be greater than 0"),
        ({"mcpServers": {"g": {"command": "x", "toolhost": {"risk": {"t": "dangerous"}}}}},
         "mcpServers.g.toolhost.risk.t: Input should be 'read', 'write' or 'destructive'"),
        ({"mcpServers": {"g": {"command": "x", "toolhost": {"prefix": "..."}}}},
         "mcpServers.g.toolhost.prefix: a server prefix needs at least one letter or digit"),
        ({"mcpServers": {"a": {"command": "x"}, "b": {"command": "y", "toolhost": {"prefix": "a"}}}},
         "mcpServers.b.toolhost.prefix: prefix 'a' is already used by server 'a'; set a different toolhost.prefix"),
        ({"toolhost": {"timeout_seconds": "soon"}, "mcpServers": {}}, "toolhost.timeout_seconds: Input should be a "
                                                                      "valid number"),
    ],
)
def test_every_error_names_its_json_path(data, expected):
    msg = error_of(data)
    assert msg.startswith("cfg.json: " + expected), msg


def test_invalid_json_file_reports_line_and_column(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text('{"mcpServers": {\n  "a": {"command": "x",}\n}}')
    with pytest.raises(ConfigError) as e:
        load_config(f)
    assert str(e.value) == (f"{f}: $: invalid JSON at line 2, column 24: Expecting property name enclosed in double "
                            "quotes")


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path / "nope.json")
    assert "cannot read the config file: No such file or directory" in str(e.value)


def test_toolhost_block_overrides_merge():
    cfg = parse({"toolhost": {"timeout_seconds": 9}, "mcpServers": {"g": {"command": "x", "toolhost": {
        "prefix": "git", "enabled": ["a", "b", "c"], "disabled": ["c"], "risk": {"a": "read"},
        "timeout_seconds": 5, "max_output_chars": 100, "always_load": ["b"],
        "tools": {"b": {"timeout_seconds": 1, "concurrency_safe": True}}}}}})
    g = cfg.servers["g"]
    assert g.prefix == "git" and cfg.defaults.timeout_seconds == 9
    assert [g.toolhost.includes(t) for t in "abcd"] == [True, True, False, False]
    a, b = g.toolhost.overrides_for("a"), g.toolhost.overrides_for("b")
    assert (a.risk, a.timeout_seconds, a.max_output_chars, a.always_load) == (Risk.READ, 5, 100, False)
    assert (b.risk, b.timeout_seconds, b.always_load, b.concurrency_safe) == (None, 1, True, True)


def test_bundled_default_config_parses():
    cfg = load_config(DEFAULT_CONFIG_PATH, data_dir=__import__("pathlib").Path("/d"))
    assert list(cfg.servers) == ["orders", "notes", "time"]
    assert cfg.servers["notes"].args[-1] == "/d/servers/notes"
    bundled = json.loads(DEFAULT_CONFIG_PATH.read_text())
    assert bundled["mcpServers"]["notes"]["toolhost"]["always_load"] == ["list_notes"]


def test_child_gets_safe_environment_plus_its_own_env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    monkeypatch.setenv("LANG", "C.UTF-8")
    cfg = parse({"mcpServers": {"s": {"command": "x", "env": {"MY_VAR": "1"}, "toolhost": {"inherit_env": "minimal"}}}})
    env = _child_env(cfg.servers["s"])
    assert "OPENAI_API_KEY" not in env
    assert env["MY_VAR"] == "1" and env["LANG"] == "C.UTF-8"
    assert set(env) - {"MY_VAR"} <= set(SAFE_ENV_VARS)
    assert env.get("PATH") == os.environ.get("PATH")


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda tmp: tmp / "afile", "exists and is not a folder"),
        (lambda tmp: tmp / "afile" / "sub", "Not a directory"),
    ],
)
def test_unusable_data_dir_is_a_clear_error(tmp_path, make, reason):
    from host.errors import DataDirError
    from host.paths import data_dir

    (tmp_path / "afile").write_text("x")
    with pytest.raises(DataDirError) as e:
        data_dir(make(tmp_path))
    assert str(e.value) == (
        f"data folder {make(tmp_path)}: {reason} (pass --data-dir or set $TOOLHOST_HOME to a writable folder)"
    )


def test_unknown_keys_warn_with_a_suggestion_and_other_clients_keys_are_tolerated():
    cfg = parse({"mcpServer": 1, "mcpServers": {"g": {"command": "x", "argz": ["a"], "autoApprove": ["t"]}}})
    assert cfg.warnings == [
        "$.mcpServer: unknown key, ignored (did you mean 'mcpServers'?)",
        "mcpServers.g.argz: unknown key, ignored (did you mean 'args'?)",
    ]


def test_duplicate_keys_in_the_file_are_an_error(tmp_path):
    f = tmp_path / "dup.json"
    f.write_text('{"mcpServers": {"git": {"command": "a"}, "git": {"command": "b"}}}')
    with pytest.raises(ConfigError) as e:
        load_config(f)
    assert str(e.value) == (
        f"{f}: $: key 'git' appears twice in one object (JSON would silently keep the last); rename or remove one"
    )


def test_toolhost_names_that_match_no_tool_are_reported():
    from mcp.types import Tool

    from host.upstream.manager import unmatched_tool_names

    cfg = parse(
        {
            "mcpServers": {
                "g": {
                    "command": "x",
                    "toolhost": {"disabled": ["git_rest"], "always_load": ["git_status"], "risk": {"nope": "read"}},
                }
            }
        }
    )
    tools = [Tool(name="git_status", input_schema={"type": "object"}), Tool(name="git_reset", input_schema={})]
    assert unmatched_tool_names(cfg.servers["g"], tools) == [
        "toolhost.disabled names 'git_rest', which 'g' does not list",
        "toolhost.risk names 'nope', which 'g' does not list",
    ]


def test_empty_prefix_is_honoured_and_may_be_shared() -> None:
    """``prefix: ""`` means un-namespaced; clashes are caught per name at listing time."""
    cfg = parse_config(
        {
            "mcpServers": {
                "a": {"command": "x", "toolhost": {"prefix": ""}},
                "b": {"command": "y", "toolhost": {"prefix": ""}},
                "c": {"command": "z"},
            }
        }
    )
    assert [cfg.servers[n].prefix for n in ("a", "b", "c")] == ["", "", "c"]
    assert cfg.servers["a"].toolhost.protocol == "auto"
