"""What ``toolhost serve`` writes on stderr besides log records, in the chosen ``--log-format``.

:class:`ServeOutput` is the one writer of serve's own lines (the open-access warning, the start-up
server table, the "serving at" banner, state changes, the closing line):

* ``text`` on a terminal: coloured rich lines and the server table, as before;
* ``text`` without a terminal (a log file, systemd, a client that captures stderr): the same lines
  never wrapped (``soft_wrap``), and the server table as one line per server
  (``server NAME: STATE — detail``, the format of later state changes), so nothing is folded at 80
  columns;
* ``json``: nothing but JSON lines, one object per line, each with ``ts``, ``level``, ``logger``
  (``toolhost.serve``), ``event`` and ``message`` like every log record
  (:class:`servers.observability.events.JsonFormatter`): ``serve.open_access``, ``server.status``
  (one per server at start-up, with the admin API's server row fields,
  :func:`servers.admin.server_rows.server_row`), ``serve.ready`` (``url``, ``tools``,
  ``api_key_required``, ``console``, ``token_file``), ``serve.stopped``, ``serve.error``,
  ``config.warning``, ``config.error``.

State changes after start-up: :meth:`ServeOutput.status_printer` gives the text line printer (one
line per change); in ``json`` it gives ``None`` and the event reporter's ``server.*`` records are
the one line per change (:class:`servers.observability.events.EventReporter`).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape

from host.upstream.status import ServerStatus
from servers.observability.status_events import status_event_printer

__all__ = ["ServeOutput"]


class ServeOutput:
    """serve's own stderr lines in ``fmt`` (``text`` or ``json``; module docstring).

    Args:
        fmt: ``text`` or ``json``.
        stream: where to write (default: ``sys.stderr``).
        terminal: whether ``stream`` is a terminal (default: ask the stream).
    """

    def __init__(self, fmt: str, stream: TextIO | None = None, *, terminal: bool | None = None) -> None:
        if fmt not in ("text", "json"):
            raise ValueError(f"--log-format must be text or json, got {fmt!r}")
        self.fmt = fmt
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = self.stream.isatty() if terminal is None else terminal
        self.console: Console | None = None
        """The rich console of ``text`` output (``None`` in ``json``): for other text-mode printers."""
        if fmt == "text":
            self.console = Console(file=self.stream, soft_wrap=not self.terminal, force_terminal=self.terminal or None,
                                   highlight=False)

    # -- JSON lines ---------------------------------------------------------------------------
    def _json(self, event: str, message: str, level: str = "info", **fields: Any) -> None:
        data = {"ts": dt.datetime.now(dt.UTC).isoformat(), "level": level, "logger": "toolhost.serve",
                "message": message, "event": event, **fields}
        self.stream.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
        self.stream.flush()

    def _text(self, markup: str) -> None:
        assert self.console is not None
        self.console.print(markup, highlight=False)

    # -- what serve writes --------------------------------------------------------------------
    def open_access(self) -> None:
        """The warning that every client may use every tool (no users configured)."""
        message = ("open access: no users are configured, so every client may use every tool (add users with "
                   "`toolhost users add` and restart, or pass --auth on).")
        if self.fmt == "json":
            self._json("serve.open_access", message, "warning")
        else:
            self._text("[yellow]open access:[/yellow] " + escape(message.removeprefix("open access: ")))

    def servers(self, statuses: Sequence[ServerStatus]) -> None:
        """Every server's state once connecting ended: a table on a terminal, else one line each."""
        if self.fmt == "json":
            from servers.admin.server_rows import server_row  # lazy: admin imports this package

            for s in statuses:
                detail = s.error if s.error else f"{s.tool_count} tools"
                self._json("server.status", f"{s.name}: {s.describe_state()} — {detail}",
                           "error" if s.error and not s.available else "info", server=s.name, **server_row(s))
            return
        if self.terminal:
            from servers.cli.display import servers_table

            assert self.console is not None
            self.console.print(servers_table(statuses))
            return
        printer = status_event_printer(self.console)  # type: ignore[arg-type]
        for s in statuses:
            printer(s)

    def serving(self, url: str, tools: int, *, api_key_required: bool, console_url: str, token_file: Any) -> None:
        """The banner once the HTTP socket listens."""
        message = (f"toolhost serving {tools} tools at {url}" + (" (API key required)" if api_key_required else "")
                   + f"; admin console {console_url} (log in with an admin user's API key or the token in "
                   f"{token_file}); /healthz /readyz /metrics")
        if self.fmt == "json":
            self._json("serve.ready", message, url=url, tools=tools, api_key_required=api_key_required,
                       console=console_url, token_file=str(token_file))
            return
        self._text(f"[green]toolhost serving {tools} tools at {escape(url)}[/green]"
                   + (" (API key required)" if api_key_required else "") + " (Ctrl+C to stop)\n"
                   + f"admin console {escape(console_url)} (log in with an admin user's API key or the token in "
                   f"{escape(str(token_file))}); /healthz /readyz /metrics")

    def config_warning(self, warning: str) -> None:
        """A non-fatal config problem (:attr:`host.config.HostConfig.warnings`)."""
        if self.fmt == "json":
            self._json("config.warning", warning, "warning")
        else:
            self._text(f"[yellow]config warning:[/yellow] {escape(warning)}")

    def config_error(self, error: str) -> None:
        """The config cannot be used at all (serve exits 2)."""
        if self.fmt == "json":
            self._json("config.error", error, "error")
        else:
            self._text(f"[red]config error:[/red] {escape(error)}")

    def stopped(self) -> None:
        """The closing line."""
        if self.fmt == "json":
            self._json("serve.stopped", "toolhost stopped; all servers closed.")
        else:
            self._text("toolhost stopped; all servers closed.")

    def error(self, message: str) -> None:
        """A problem that ends serve (printed before it exits)."""
        if self.fmt == "json":
            self._json("serve.error", message, "error")
        else:
            self._text(f"[red]{escape(message)}[/red]")

    def status_printer(self, seen: Sequence[ServerStatus] = ()) -> Callable[[ServerStatus], None] | None:
        """The text line printer for later state changes (``seen``: the states already shown);
        ``None`` in ``json`` (the event log's ``server.*`` records are those lines)."""
        return status_event_printer(self.console, seen) if self.console is not None else None

    def listening(self, url: str, connecting: int) -> None:
        """The line printed as soon as the HTTP socket listens, while ``connecting`` servers still start."""
        message = f"toolhost listening on {url}" + (f" while {connecting} server(s) connect" if connecting else "")
        if self.fmt == "json":
            self._json("serve.listening", message, url=url, connecting=connecting)
        else:
            self._text(escape(message))

    def warning(self, message: str) -> None:
        """A warning the operator must see (e.g. ``--auth off`` on a public address)."""
        if self.fmt == "json":
            self._json("serve.warning", message, "warning")
        else:
            self._text(f"[bold red]{escape(message)}[/bold red]")
