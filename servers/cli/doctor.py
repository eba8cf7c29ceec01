"""``toolhost doctor``: check a config as ``serve`` would use it, server by server, and say what to fix.

It validates the config (a fatal error names the JSON path and exits 2), starts every server once
with the environment ``serve`` would give it (never through a running serve: a fresh connection is
the point), and prints one block per server: ``ok`` with its tools, protocol and connect time, or
``FAILED`` with the problem and the fix, the server's last stderr lines, and warnings (held tools,
names in ``toolhost`` blocks that match nothing). Exit status 0 when every server connected, 1 when
any failed; ``--json`` prints the same as one object (:func:`doctor_report`).

The texts are the ones ``toolhost servers`` and the serve console show (the connection's
``"<stage>: <problem> (<fix>)"``, :mod:`host.upstream` and :mod:`host.config`): doctor splits the
trailing parenthesis off as the fix, or names the usual fix for that stage when the text has none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from servers.cli.common import ConfigOpt, DataDirOpt, JsonOpt, _run, err, out

__all__ = ["REMOTE_PROBLEM_FIXES", "REMOTE_STAGE_FIXES", "STAGE_FIXES", "doctor", "doctor_report", "split_fix"]

STAGE_FIXES = {
    "config": "edit the entry at the JSON path named above, then run `toolhost doctor` again",
    "start": "check the command and its arguments run by hand in a shell",
    "handshake": "run the command by hand: an MCP server over stdio prints nothing but JSON-RPC on stdout",
    "list": "the server answered the handshake but not tools/list: check its logs (stderr below)",
    "connection": "the server exited or dropped the connection: check its logs (stderr below)",
}
"""The usual fix per stage of a stdio server, for texts that carry none."""

REMOTE_STAGE_FIXES = {
    "config": STAGE_FIXES["config"],
    "handshake": "check the URL (scheme, host, port and path) and that the server is running; an SSE-only "
                 "server needs \"transport\": \"sse\"",
    "list": "the server answered the handshake but not tools/list: check the remote server's logs",
    "connection": "the server closed the connection: check that it is still running and its logs",
}
"""The usual fix per stage of a remote (streamable HTTP / SSE) server."""

REMOTE_PROBLEM_FIXES = (
    (("refused", "connection attempts failed"), "start the server at {url}, or correct the URL's host and port"),
    (("dns lookup", "name or service not known", "name resolution", "nodename nor servname"),
     "correct the host name in {url} (or check the network's DNS / VPN)"),
    (("tls", "ssl", "certificate"), "use http:// for a server without TLS (or the TLS port); a private certificate "
                                    "authority needs SSL_CERT_FILE pointing at its certificate"),
    (("timed out", "timeout"), "the server at {url} did not answer in time: check it is up and reachable, or "
                               "raise \"connect_timeout_seconds\""),
    (("401", "403", "unauthorized", "forbidden"), "the server refused the credentials: set its \"headers\" "
                                                  "(e.g. Authorization) or its OAuth settings"),
    (("404", "not found"), "nothing answers at that path: check the URL's path (often /mcp, or /sse with "
                           "\"transport\": \"sse\")"),
)
"""A remote server's usual fix by what its problem says (first match wins; ``{url}``: the server's URL)."""


def split_fix(error: str, transport: str = "stdio", url: str | None = None) -> tuple[str, str]:
    """``(problem, fix)`` of a status text ``"<stage>: <problem> (<fix>)"``: the final parenthesis
    (balanced) is the fix; without one, the usual fix for the transport (``stdio``, else remote:
    :data:`REMOTE_PROBLEM_FIXES` by what the problem says, then :data:`REMOTE_STAGE_FIXES` of the
    stage), or a pointer to ``toolhost servers``."""
    text = error.strip()
    if text.endswith(")"):
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                if i > 0 and text[i - 1] == " ":
                    return text[: i - 1], text[i + 1 : -1]
                break
    stage = text.partition(":")[0]
    if transport == "stdio":
        return text, STAGE_FIXES.get(stage, "see `toolhost servers` and the server's own logs")
    lowered = text.lower()
    for cues, fix in REMOTE_PROBLEM_FIXES:
        if any(cue in lowered for cue in cues):
            return text, fix.format(url=url or "its URL")
    return text, REMOTE_STAGE_FIXES.get(stage, "see `toolhost servers` and the remote server's own logs")


def _server(status: Any, url: str | None) -> dict[str, Any]:
    problem, fix = split_fix(status.error, status.transport, url) if status.error else (None, None)
    return {
        "name": status.name,
        "transport": status.transport,
        "ok": status.error is None and status.state.value in ("connected", "degraded"),
        "state": status.state.value,
        "tools": status.tool_count,
        "problem": problem,
        "fix": fix,
        "stderr_tail": status.stderr_tail,
        "warnings": list(status.warnings),
        "held": dict(status.held),
        "protocol_version": status.protocol_version,
        "server_info": status.server_info,
        "connect_seconds": status.connect_seconds,
    }


def doctor_report(config_path: str, warnings: list[str], statuses: list[Any],
                  urls: dict[str, str] | None = None) -> dict[str, Any]:
    """``{"config", "ok", "warnings", "servers": [{name, transport, ok, state, tools, problem, fix,
    stderr_tail, warnings, held, protocol_version, server_info, connect_seconds}]}``; servers in
    config order, entries the config could not use last (as ``toolhost servers`` orders them).
    ``urls``: each remote server's URL, named in its fix."""
    servers = [_server(s, (urls or {}).get(s.name)) for s in statuses]
    return {"config": config_path, "ok": all(s["ok"] for s in servers), "warnings": list(warnings),
            "servers": servers}


def _print(report: dict[str, Any]) -> None:
    servers = report["servers"]
    out.print(f"toolhost doctor: {report['config']} ({len(servers)} server{'s' if len(servers) != 1 else ''})",
              highlight=False, soft_wrap=True)
    for s in servers:
        if s["ok"]:
            seconds = f", connected in {s['connect_seconds']:.2f} s" if s["connect_seconds"] is not None else ""
            protocol = f", protocol {s['protocol_version']}" if s["protocol_version"] else ""
            out.print(f"[green]ok[/green]      {s['name']}: {s['tools']} tools over {s['transport']}"
                      f" ({s['server_info'] or 'unnamed server'}{protocol}{seconds})",
                      highlight=False, soft_wrap=True)
        else:
            out.print(f"[red]FAILED[/red]  {s['name']}: {s['problem']}", highlight=False, soft_wrap=True, markup=True)
            out.print(f"        fix: {s['fix']}", highlight=False, soft_wrap=True, markup=False)
        for line in s["stderr_tail"].splitlines()[-5:]:
            out.print(f"        stderr: {line}", highlight=False, soft_wrap=True, markup=False)
        for warning in s["warnings"]:
            out.print(f"        warning: {warning}", highlight=False, soft_wrap=True, markup=False)
    failed = sum(1 for s in servers if not s["ok"])
    out.print(f"{failed} of {len(servers)} servers failed" if failed else "every server connected",
              highlight=False, soft_wrap=True)


def doctor(config: ConfigOpt = None, data_dir: DataDirOpt = None, as_json: JsonOpt = False) -> None:
    """Check the config and start every server once with its real environment: for each, ok or what
    failed and the fix. Exits 1 when any server failed, 2 when the config itself is invalid."""
    from host.config import DEFAULT_CONFIG_PATH, load_config
    from host.errors import ConfigError
    from host.paths import data_dir as resolve_data_dir

    root = resolve_data_dir(data_dir)
    path = str(config if config is not None else DEFAULT_CONFIG_PATH)
    try:
        cfg = load_config(config, data_dir=root)
    except ConfigError as e:
        if as_json:
            out.print_json(json.dumps({"config": path, "ok": False, "error": str(e), "warnings": [], "servers": []}))
        else:
            err.print(f"[red]config error:[/red] {e}", highlight=False)
        raise typer.Exit(2) from None
    report = _run(_check, cfg, root, path)
    # an unusable entry's warning repeats its FAILED block: keep the other warnings only
    report["warnings"] = [w for w in report["warnings"]
                          if not any(w.startswith(f"server {name!r} is not started:") for name in cfg.failed)]
    if as_json:
        out.print_json(json.dumps(report))
    else:
        for warning in report["warnings"]:
            err.print(f"[yellow]config warning:[/yellow] {escape(warning)}", highlight=False)
        _print(report)
    if not report["ok"]:
        raise typer.Exit(1)


async def _check(cfg: Any, root: Path, path: str) -> dict[str, Any]:
    from host.config_model import RemoteServerConfig
    from host.upstream.manager import ServerManager

    async with ServerManager(cfg, data_dir=root, reconnect=False) as manager:
        urls = {name: server.url for name, server in cfg.servers.items() if isinstance(server, RemoteServerConfig)}
        return doctor_report(path, cfg.warnings, manager.statuses(), urls)
