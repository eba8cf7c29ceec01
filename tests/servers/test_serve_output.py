"""serve's own stderr lines: ``--log-format json`` writes nothing but JSON lines (the banner and the
server table too); text without a terminal never wraps at 80 columns; one line per state change."""

from __future__ import annotations

import io
import json
import logging
import time

from host.upstream.status import ConnectionState, ServerStatus
from servers.observability.events import EventReporter, configure_logging
from servers.observability.serve_output import ServeOutput

LONG = ("start: mcpServers.gone.command: 'no-such-mcp-binary' was not found on PATH (install it, give its full "
        "path, or set PATH in mcpServers.gone.env)")


def _statuses() -> list[ServerStatus]:
    return [ServerStatus(name="orders", transport="stdio", state=ConnectionState.CONNECTED, tool_count=3,
                         server_info="orders 1.0.0", connect_seconds=1.5),
            ServerStatus(name="gone", transport="stdio", state=ConnectionState.FAILED, error=LONG)]


def test_json_format_writes_only_json_lines_for_everything_serve_prints() -> None:
    stream = io.StringIO()
    out = ServeOutput("json", stream, terminal=False)
    out.open_access()
    out.servers(_statuses())
    out.serving("http://127.0.0.1:1/mcp", 3, api_key_required=False, console_url="http://127.0.0.1:1/admin",
                token_file="/d/admin.token")
    out.error("cannot listen")
    out.stopped()
    assert out.status_printer() is None and out.console is None
    records = [json.loads(line) for line in stream.getvalue().splitlines()]  # every line is one JSON object
    assert [(r["event"], r["level"], r["logger"]) for r in records] == [
        ("serve.open_access", "warning", "toolhost.serve"), ("server.status", "info", "toolhost.serve"),
        ("server.status", "error", "toolhost.serve"), ("serve.ready", "info", "toolhost.serve"),
        ("serve.error", "error", "toolhost.serve"), ("serve.stopped", "info", "toolhost.serve")]
    assert (records[1]["server"], records[1]["state"], records[1]["tools"], records[1]["message"]) == (
        "orders", "connected", 3, "orders: connected — 3 tools")
    assert (records[2]["error"], records[2]["message"]) == (LONG, f"gone: failed — {LONG}")
    assert {k: records[3][k] for k in ("url", "tools", "api_key_required", "console", "token_file")} == {
        "url": "http://127.0.0.1:1/mcp", "tools": 3, "api_key_required": False,
        "console": "http://127.0.0.1:1/admin", "token_file": "/d/admin.token"}


def test_text_without_a_terminal_never_wraps_and_lists_servers_one_per_line() -> None:
    stream = io.StringIO()
    out = ServeOutput("text", stream, terminal=False)
    out.open_access()
    out.servers(_statuses())
    out.serving("http://127.0.0.1:1/mcp", 3, api_key_required=True, console_url="http://127.0.0.1:1/admin",
                token_file="/d/admin.token")
    assert stream.getvalue().splitlines() == [
        ("open access: no users are configured, so every client may use every tool (add users with `toolhost users "
         "add` and restart, or pass --auth on)."),
        "server orders: connected — 3 tools",
        f"server gone: failed — {LONG}",
        "toolhost serving 3 tools at http://127.0.0.1:1/mcp (API key required) (Ctrl+C to stop)",
        ("admin console http://127.0.0.1:1/admin (log in with an admin user's API key or the token in "
         "/d/admin.token); /healthz /readyz /metrics")]
    assert "\x1b[" not in stream.getvalue()  # no colour codes in a file


def _changes() -> list[ServerStatus]:
    """connected, a re-list (same state), dropped: backing_off before and after its next attempt is
    known, reconnecting, connected again."""
    s = lambda state, **kw: ServerStatus(name="loop", transport="stdio", state=state, tool_count=2, **kw)  # noqa: E731
    soon = time.time() + 2
    return [s(ConnectionState.CONNECTED), s(ConnectionState.CONNECTED),
            s(ConnectionState.BACKING_OFF, error="connection: exited"),
            s(ConnectionState.BACKING_OFF, error="connection: exited", next_attempt_at=soon),
            s(ConnectionState.CONNECTING), s(ConnectionState.CONNECTED)]


def test_one_line_per_state_change_in_text_and_in_json() -> None:
    stream = io.StringIO()
    printer = ServeOutput("text", stream, terminal=False).status_printer()
    assert printer is not None
    for status in _changes():
        printer(status)
    assert stream.getvalue().splitlines() == [
        "server loop: connected — 2 tools",
        "server loop: backing_off (next attempt in 2 s) — connection: exited",
        "server loop: connected — 2 tools"]

    logs = io.StringIO()
    root = logging.getLogger("toolhost")
    saved = (list(root.handlers), root.level, root.propagate)
    configure_logging("info", "json", stream=logs)
    try:
        reporter = EventReporter(None)
        for status in _changes():
            reporter.server_status(status)
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        root.propagate = saved[2]
    records = [json.loads(line) for line in logs.getvalue().splitlines()]
    assert [(r["event"], r["message"]) for r in records] == [
        ("server.connected", "loop: connected, 2 tools"),
        ("server.backing_off", "loop: backing off (connection: exited)"),
        ("server.reconnected", "loop: connected, 2 tools")]


def test_config_warnings_and_errors_follow_the_format(tmp_path) -> None:
    import pytest
    import typer

    from servers.cli.common import _load

    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"mcpServers": {"x": {"command": "a", "colour": "red"}}}))
    stream = io.StringIO()
    _load(cfg, tmp_path / "d", ServeOutput("json", stream, terminal=False))
    [warning] = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert (warning["event"], warning["level"]) == ("config.warning", "warning") and "colour" in warning["message"]
    cfg.write_text("{")
    stream = io.StringIO()
    with pytest.raises(typer.Exit) as exited:
        _load(cfg, tmp_path / "d", ServeOutput("json", stream, terminal=False))
    [error] = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert (exited.value.exit_code, error["event"], error["message"]) == (
        2, "config.error",
        f"{cfg}: $: invalid JSON at line 1, column 2: Expecting property name enclosed in double quotes")
