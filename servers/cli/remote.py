"""``toolhost tools|call|servers`` answered by the running serve of the data folder (one process owns the upstreams).

Each function prints what the command prints on its own path (same tables, same JSON) from the
admin API's answer, and returns ``None`` when the serve cannot answer (the command then connects
the servers itself). Error answers (unknown user, ...) print one ``error:`` line and exit 2, as
the local path does. Imports stay light: no SDK, no database.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from servers.cli.serve_client import RunningServe, ServeError, ServeUnavailable
from servers.cli.tables import risk_cell, tool_rows_table

__all__ = ["call_via_serve", "code_mode_line", "post_to_serve", "print_call_failure", "servers_via_serve",
           "tools_via_serve"]

_STATE_STYLE = {"pending": "dim", "connecting": "yellow", "connected": "green", "degraded": "yellow",
                "backing_off": "magenta", "failed": "red", "stopped": "dim"}


def _ask(serve: RunningServe, err: Console, method: str, path: str, **kwargs: Any) -> Any | None:
    try:
        return serve.request(method, path, **kwargs)
    except ServeUnavailable:
        return None
    except ServeError as e:
        err.print(f"[red]error:[/red] {e.message}", highlight=False)
        raise typer.Exit(2) from None


def post_to_serve(data_dir: Path | None, path: str, *, absent: str, body: dict[str, Any] | None = None,
                  timeout: float | None = None, then_get: str | None = None) -> tuple[Any, Any]:
    """``POST /admin/api{path}`` to the running serve of ``data_dir`` (with the local admin token),
    then, when given, ``GET /admin/api{then_get}``; returns both answers (``None`` for no GET).
    ``timeout``: seconds for the POST (default the client's ``REQUEST_TIMEOUT_SECONDS``).

    For commands that act on state only a running serve holds (``toolhost reconnect``,
    ``toolhost taint reset``). Every failure is one ``error:`` line on stderr: no serve runs on the
    data folder (``absent`` says why that matters and what to do; exit 2), the serve did not answer
    (exit 2), or it answered with an error (its message; exit 2 for 404, e.g. an unknown server, else 1).
    """
    from servers.cli.serve_client import REQUEST_TIMEOUT_SECONDS, ServeError, ServeUnavailable, running_serve

    serve = running_serve(data_dir, any_store=True)  # its state, whichever permission store it uses
    if serve is None:
        typer.echo(f"error: no toolhost serve runs on the data folder {_where(data_dir)}; {absent}", err=True)
        raise typer.Exit(2)
    try:
        answer = serve.request("POST", path, body=body or {}, timeout=timeout or REQUEST_TIMEOUT_SECONDS)
        return answer, None if then_get is None else serve.request("GET", then_get)
    except ServeUnavailable as e:
        typer.echo(f"error: the running toolhost serve did not answer: {e}", err=True)
        raise typer.Exit(2) from None
    except ServeError as e:
        typer.echo(f"error: {e.message}", err=True)
        raise typer.Exit(2 if e.status == 404 else 1) from None


def _where(data_dir: Path | None) -> str:
    from host.paths import data_dir as resolve

    return str(resolve(data_dir))


def tools_table(rows: list[dict[str, Any]], *, title: str) -> Table:
    """:func:`servers.cli.display.tools_table` over JSON tool definitions."""
    cells = []
    for t in rows:
        description = (t.get("description") or "").strip()
        flow = (t.get("flow") or {}).get("short", "-")
        cells.append((t["name"], t["server"], risk_cell(t["risk"]), flow, f"{t['timeout_seconds']:g}",
                      description.splitlines()[0] if description else ""))
    return tool_rows_table(title, ("name", "server", "risk", "data flow", "timeout s"), "description", cells)


def tools_via_serve(serve: RunningServe, out: Console, err: Console, *, user: str | None, as_json: bool,
                    show_all: bool) -> bool | None:
    found = _ask(serve, err, "GET", "/tools/visible", params={"user": user})
    if found is None:
        return None
    records, held = found["tools"], found["held"] if show_all else []
    if as_json:
        rows = [{k: v for k, v in t.items() if k != "timeout_seconds"} for t in records]
        rows += [{"name": h["name"], "server": h["server"], "held": True, "reason": h["reason"]} for h in held]
        out.print_json(json.dumps(rows))
    else:
        out.print(tools_table(records, title=f"{len(records)} tools"))
        for h in held:
            out.print(f"held: {h['server']}/{h['name']}: {h['reason']}", markup=False, soft_wrap=True)
    return True


def call_via_serve(serve: RunningServe, out: Console, err: Console, *, name: str, arguments: dict[str, Any],
                   user: str | None, as_json: bool) -> bool | None:
    """``True`` when the call's result is an error (exit 1), ``False`` when ok, ``None``: not answered."""
    from servers.cli.serve_client import CALL_TIMEOUT_SECONDS

    result = _ask(serve, err, "POST", "/call", body={"name": name, "arguments": arguments, "user": user},
                  timeout=CALL_TIMEOUT_SECONDS)
    if result is None:
        return None
    if as_json:
        out.print_json(json.dumps(result))
    else:
        for block in result.get("content", []):
            text = block.get("text")
            out.print(text if text is not None else f"[{block.get('type')} content]", markup=False, soft_wrap=True)
        error = result.get("error")
        if result.get("status") != "ok" and error is not None:
            print_call_failure(err, result["status"], error.get("where"))
    return result.get("status") != "ok"


CLI_HINTS = {
    "unknown_tool": "`toolhost tools` lists the exact names (`--user NAME`: what that user may call); "
                    "`toolhost search WORDS` finds a tool by what it does",
    "invalid_arguments": "`toolhost tools --json` shows each tool's input_schema; pass ARGS as one JSON object",
}
"""What a person at the command line can do about a failed call's status (the result's own text is
written for a model and names MCP tools such as tool_search)."""


def print_call_failure(err: Console, status: str, where: str | None) -> None:
    """``STATUS at WHERE`` on stderr, and a command-line hint for the statuses that have one."""
    err.print(f"[red]{status}[/red] at {where or 'call'}")
    hint = CLI_HINTS.get(status)
    if hint is not None:
        err.print(f"hint: {hint}", markup=False, highlight=False, soft_wrap=True)


def servers_table(rows: list[dict[str, Any]]) -> Table:
    """:func:`servers.cli.display.servers_table` over the admin API's server rows."""
    table = Table(title="MCP servers", expand=False)
    for col in ("server", "transport", "state", "tools", "connect s", "detail"):
        table.add_column(col, overflow="fold")
    for s in rows:
        detail = s["error"] or (s.get("server_info") or "")
        if s["error"] and s.get("stderr_tail"):
            detail += "\n[dim]stderr:[/dim]\n" + s["stderr_tail"]
        warnings = [w for w in s.get("warnings", []) if " is held (" not in w]
        if warnings:
            detail += "\n" + "\n".join(f"[yellow]warning:[/yellow] {w}" for w in warnings)
        if s.get("held"):
            detail += "\n" + "\n".join(f"[red]held:[/red] {t}: {r}" for t, r in s["held"].items())
        style = _STATE_STYLE.get(s["state"], "")
        table.add_row(
            s["name"], s["transport"], f"[{style}]{s.get('state_text') or s['state']}[/{style}]",
            str(s["tools"]) if s.get("available", True) else "-",
            f"{s['connect_seconds']:.2f}" if s.get("connect_seconds") is not None else "-",
            detail,
        )
    return table


def servers_via_serve(serve: RunningServe, out: Console, err: Console, *, as_json: bool) -> bool | None:
    """``True`` when a server has an error (exit 1), ``False`` otherwise, ``None``: not answered."""
    found = _ask(serve, err, "GET", "/servers")
    if found is None:
        return None
    rows = found["servers"]
    if as_json:
        out.print_json(json.dumps(rows))  # the API's rows as they are (servers.admin.server_rows)
    else:
        out.print(servers_table(rows))
        if found.get("code_mode"):
            out.print(code_mode_line(found["code_mode"]), highlight=False)
    return any(s["error"] for s in rows)


def code_mode_line(cm: dict[str, Any]) -> str:
    """The sandbox pool as ``toolhost servers`` prints it, from the admin API's ``code_mode`` object
    (``{"tool", "pool": {...}, "limits": {...}, "running", "queued"}``: ``CodeMode.describe``)::

        code mode: execute on, 1-2 sandbox workers, 1 running, 0 queued now; share: 1 script per caller,
        6 for anonymous sessions together, queue 4; per script 15 s wall clock, 2 s CPU, 32 MiB, 100 tool calls
    """
    pool, lim = cm["pool"], cm["limits"]
    return (f"code mode: {cm['tool']} on, {pool['min_workers']}-{pool['max_workers']} sandbox workers, "
            f"{cm['running']} running, {cm['queued']} queued now; share: {pool['max_scripts_per_caller']} "
            f"script{'' if pool['max_scripts_per_caller'] == 1 else 's'} per caller, "
            f"{pool['max_anonymous_scripts']} for anonymous sessions together, queue {pool['max_queued_scripts']}; "
            f"per script {lim['wall_clock_seconds']:g} s wall clock, {lim['cpu_seconds']:g} s CPU, "
            f"{lim['max_memory_bytes'] // (1024 * 1024)} MiB, {lim['max_inner_calls']} tool calls")
