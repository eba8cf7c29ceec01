"""One line per operator-relevant event while serving, on the console and in the log.

Events: a server connected / failed / reconnected / stopped, tools held by a definition pin,
prompts/resources/templates/instructions held as poisoned-looking,
approvals pending / decided, config reloaded (or refused). Each goes to the ``toolhost.events``
logger (so ``--log-format json`` gives one JSON object per event) and, on a terminal, to the
serve console as a short coloured line.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

__all__ = ["EventReporter", "JsonFormatter", "configure_logging"]

logger = logging.getLogger("toolhost.events")

_STYLE = {"info": "green", "warning": "yellow", "error": "red"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``{"ts", "level", "logger", "message", "event", ...fields}``."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        extra = getattr(record, "toolhost", None)
        if isinstance(extra, dict):
            data.update(extra)
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, default=str)


def configure_logging(level: str = "info", fmt: str = "text", stream: Any = None) -> None:
    """Set up the root ``toolhost`` logger: ``level`` (debug/info/warning/error), ``fmt`` ``text`` or ``json``.

    Raises:
        ValueError: unknown level or format (names the accepted values).
    """
    levels = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
    if level.lower() not in levels:
        raise ValueError(f"--log-level must be one of {', '.join(levels)}, got {level!r}")
    if fmt not in ("text", "json"):
        raise ValueError(f"--log-format must be text or json, got {fmt!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    if fmt == "text":  # events already print as console lines (EventReporter); other handlers still get them
        handler.addFilter(lambda record: record.name != logger.name)
    handler.setFormatter(
        JsonFormatter() if fmt == "json" else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger("toolhost")
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(levels[level.lower()])
    root.propagate = False


class EventReporter:
    """Turns host happenings into events.

    Args:
        console: where short lines go (``None``: log only, e.g. with ``--log-format json``).
        metrics: a :class:`servers.observability.Metrics` whose reconnect counter is bumped.
    """

    def __init__(self, console: Console | None = None, metrics: Any = None) -> None:
        self.console = console
        self.metrics = metrics
        self.print_server_states = True
        """False when another listener prints server state lines (they are then only logged)."""
        self._last: dict[str, str] = {}
        self._ever_connected: set[str] = set()

    def emit(self, event: str, message: str, level: str = "info", *, show: bool = True, **fields: Any) -> None:
        """Log ``message`` with ``event`` and ``fields``; print it on the console (unless ``show`` is false)."""
        logger.log(getattr(logging, level.upper()), message, extra={"toolhost": {"event": event, **fields}})
        if self.console is not None and show:
            stamp = dt.datetime.now().strftime("%H:%M:%S")
            style = _STYLE[level]
            self.console.print(f"[dim]{stamp}[/dim] [{style}]{escape(event)}[/{style}] {escape(message)}",
                               highlight=False, soft_wrap=True)

    def seed(self, statuses: list[Any]) -> None:
        """Remember current states without printing (the start-up table already showed them)."""
        for status in statuses:
            self._last[status.name] = status.state.value
            if status.state.value == "connected":
                self._ever_connected.add(status.name)

    def server_status(self, status: Any) -> None:
        """A :class:`host.upstream.ServerStatus` change (the manager's ``on_status`` listener)."""
        name, state = status.name, status.state.value
        previous = self._last.get(name)
        if previous == state:
            return
        self._last[name] = state
        show = self.print_server_states
        if state == "connected":
            again = name in self._ever_connected
            self._ever_connected.add(name)
            if again and self.metrics is not None:
                self.metrics.reconnects.labels(name).inc()
            self.emit("server.reconnected" if again else "server.connected",
                      f"{name}: connected, {status.tool_count} tools", show=show, server=name,
                      tools=status.tool_count)
        elif state == "failed":
            self.emit("server.failed", f"{name}: {status.error or 'failed'}", "error", show=show, server=name,
                      error=status.error)
        elif state == "connecting" and previous in ("connected", "failed", "degraded"):
            retrying = previous == "failed"
            self.emit("server.backing_off" if retrying else "server.reconnecting",
                      f"{name}: {'retrying' if retrying else 'connection lost, reconnecting'}", "warning",
                      show=show, server=name)
        elif state in ("degraded", "backing_off"):
            detail = f" ({status.error})" if status.error else ""
            self.emit(f"server.{state}", f"{name}: {state.replace('_', ' ')}{detail}", "warning", show=show,
                      server=name)
        elif state == "stopped":
            self.emit("server.stopped", f"{name}: disconnected", show=show, server=name)

    def tools_held(self, server: str, tools: list[str]) -> None:
        """Tools of ``server`` held by a definition pin (changed since pinned)."""
        if tools:
            names = ", ".join(sorted(tools))
            self.emit("tools.held", f"{server}: {len(tools)} changed tool(s) held until reviewed: {names} "
                      "(toolhost pins diff TOOL)", "warning", server=server, tools=sorted(tools))

    def definitions_held(self, server: str, holds: list[Any]) -> None:
        """Prompts, resources, templates or instructions of ``server`` held as poisoned-looking
        (:class:`registry.catalog_scan.HeldDefinition` each): one ``definitions.held`` line per item."""
        for hold in holds:
            what = "instructions" if hold.kind == "instructions" else f"{hold.kind} {hold.original}"
            self.emit("definitions.held", f"{server}: {what} held, looks poisoned ({hold.findings()}); "
                      f"{hold.release_hint()}", "warning", server=server, kind=hold.kind, trust=hold.trust_key)

    def approval(self, approval_id: str, user: str, tool: str, status: str, by: str | None = None) -> None:
        """An approval request was created (``pending``) or decided (``approved``/``denied``)."""
        who = f" by {by}" if by else ""
        level = "warning" if status == "pending" else "info"
        self.emit(f"approval.{status}", f"{approval_id}: {user} -> {tool} {status}{who}", level,
                  approval=approval_id, user=user, tool=tool, by=by)

    async def taint_decided(self, event: Any) -> None:
        """A call the session-taint rule decided (a :class:`host.pipeline.TaintEvent`): event
        ``taint.<outcome>`` (``allowed``, ``denied``, ``approval_required``, ``approved``, ``rejected``)."""
        level = "info" if event.outcome in ("allowed", "approved") else "warning"
        self.emit(f"taint.{event.outcome}", f"{event.principal.user} -> {event.tool.qualified_name} "
                  f"(session {event.session_id}): {' '.join(event.verdict.reasons)}", level,
                  user=event.principal.user, tool=event.tool.qualified_name, session=event.session_id,
                  call_id=event.call_id, decision=event.verdict.decision.value, approval=event.approval_id)

    def config_reloaded(
        self, added: list[str], removed: list[str], changed: list[str], error: str | None = None
    ) -> None:
        """A config reload applied (or refused with ``error``)."""
        if error is not None:
            self.emit("config.refused", f"new config refused, the old one keeps serving: {error}", "error", error=error)
            return
        self.emit("config.reloaded", f"config reloaded: added {added or '-'}, removed {removed or '-'}, "
                  f"changed {changed or '-'}", added=added, removed=removed, changed=changed)
