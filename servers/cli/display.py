"""Rich renderings for the CLI: server status, tool tables, live connect display."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from rich.console import Console
from rich.live import Live
from rich.table import Table

from host.upstream.connection import ConnectionState, ServerStatus
from registry import ToolRecord
from registry.safety import FlowLabels
from servers.cli.tables import risk_cell, tool_rows_table

__all__ = ["live_status", "servers_table", "tools_table"]

_STATE_STYLE = {
    ConnectionState.PENDING: "dim",
    ConnectionState.CONNECTING: "yellow",
    ConnectionState.CONNECTED: "green",
    ConnectionState.DEGRADED: "yellow",
    ConnectionState.BACKING_OFF: "magenta",
    ConnectionState.FAILED: "red",
    ConnectionState.STOPPED: "dim",
}


def servers_table(statuses: Sequence[ServerStatus], *, show_stderr: bool = True) -> Table:
    """A table: server, transport, state, tools, connect time, detail (error, stderr tail, warnings)."""
    table = Table(title="MCP servers", expand=False)
    for col in ("server", "transport", "state", "tools", "connect s", "detail"):
        table.add_column(col, overflow="fold")
    for s in statuses:
        detail = s.error or (s.server_info or "")
        if s.error and show_stderr and s.stderr_tail:
            detail += "\n[dim]stderr:[/dim]\n" + s.stderr_tail
        warnings = [w for w in s.warnings if " is held (" not in w]  # held tools are listed below
        if warnings:
            detail += "\n" + "\n".join(f"[yellow]warning:[/yellow] {w}" for w in warnings)
        if s.held:
            detail += "\n" + "\n".join(f"[red]held:[/red] {t}: {r}" for t, r in s.held.items())
        style = _STATE_STYLE.get(s.state, "")
        table.add_row(
            s.name,
            s.transport,
            f"[{style}]{s.describe_state()}[/{style}]",
            str(s.tool_count) if s.available else "-",
            f"{s.connect_seconds:.2f}" if s.connect_seconds is not None else "-",
            detail,
        )
    return table


def tools_table(tools: Sequence[ToolRecord], *, title: str = "Tools",
                labels: Callable[[ToolRecord], FlowLabels] | None = None) -> Table:
    """A table: name, server, risk, data flow (``labels``: e.g. ``HostRuntime.taint.labels``; the
    column is left out without it), timeout, description (first line). Names are never broken
    or cut; the description is cut (…) to fit the terminal (:func:`servers.cli.tables.tool_rows_table`)."""
    rows = []
    for t in tools:
        first_line = (t.description or "").strip().splitlines()[0] if t.description.strip() else ""
        rows.append((t.qualified_name, t.server, risk_cell(t.risk.value), *((labels(t).short(),) if labels else ()),
                     f"{t.timeout_seconds:g}", first_line))
    heads = ("name", "server", "risk", *(("data flow",) if labels else ()), "timeout s")
    return tool_rows_table(title, heads, "description", rows)


@contextmanager
def live_status(console: Console, statuses: Sequence[ServerStatus], *, enabled: bool = True) -> Iterator[callable]:
    """A live-updating server table while connecting; yields a ``refresh()`` callable."""
    if not enabled or not console.is_terminal:
        yield lambda *_: None
        return
    with Live(
        servers_table(statuses, show_stderr=False), console=console, transient=True, refresh_per_second=8
    ) as live:
        yield lambda *_: live.update(servers_table(statuses, show_stderr=False))
