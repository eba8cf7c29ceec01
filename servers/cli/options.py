"""Choices and help rendering of the ``toolhost`` command line (kept apart so :mod:`servers.cli.app` stays small)."""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from typing import Any

from rich.console import Console

__all__ = ["AuthChoice", "Expose", "LogFormat", "LogLevel", "RiskChoice", "flags_without_placeholder", "json_object",
           "print_search", "remote_search_table"]


def flags_without_placeholder() -> None:
    """typer prints ``<bool>`` as the value type of on/off flags (``--stdio <bool>``), which reads as if a
    value were expected: flags show no type."""
    from typer.core import TyperOption

    original = TyperOption.display_type_rich
    if getattr(original, "_toolhost", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        if self.is_flag and self.metavar is None:
            return None
        return original(self, ctx)

    display_type_rich._toolhost = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


class Expose(str, enum.Enum):
    search = "search"
    all = "all"


class AuthChoice(str, enum.Enum):
    auto = "auto"
    on = "on"
    off = "off"


class LogLevel(str, enum.Enum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


class LogFormat(str, enum.Enum):
    text = "text"
    json = "json"


class RiskChoice(str, enum.Enum):
    """``--max-risk`` (click names the option and lists these when another value is given)."""

    read = "read"
    write = "write"
    destructive = "destructive"


def json_object(value: str | None) -> dict[str, Any]:
    """Parameter callback: a command-line JSON object (``""``/``None`` is ``{}``).

    Raises:
        typer.BadParameter: not JSON, or JSON but not an object; click prefixes the parameter's name
            (``Invalid value for 'ARGS': ...``) and exits 2.
    """
    import typer

    example = """pass one JSON object in single quotes, e.g. '{"order_id": "A1001"}' ('{}' for none)"""
    if value is None or not value.strip():
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as e:
        raise typer.BadParameter(f"not valid JSON ({e.msg} at column {e.colno}); {example}") from None
    if not isinstance(parsed, dict):
        raise typer.BadParameter(f"a JSON {type(parsed).__name__}, not an object; {example}")
    return parsed


def print_search(out: Console, err: Console, view: dict[str, Any], as_json: bool,
                 table: Callable[[], Any]) -> int:
    """Print a search view (:func:`servers.shared.search_view.search_view`, from a running serve or
    made here): ``--json`` the hits' definitions (:func:`servers.shared.search_view.cli_hits`, one
    shape both ways), else the message of a weak result ("No tool fits ...") and ``table()``.

    Returns the command's exit status: 2 when the query cannot run (an invalid ``regex:`` pattern;
    its error on ``err``), else 0.
    """
    from servers.shared.search_view import cli_hits

    if view.get("invalid"):
        err.print(f"error: {view['message']}", markup=False, highlight=False, soft_wrap=True)
        return 2
    if as_json:
        out.print_json(json.dumps(cli_hits(view)))
        if view.get("weak") and view.get("message"):
            err.print(view["message"], markup=False, highlight=False, soft_wrap=True)
        return 0
    if not view["hits"]:
        out.print(view.get("message") or f"No tool matches {view['query']!r}.", markup=False, soft_wrap=True)
        return 0
    if view.get("weak") and view.get("message"):
        out.print(view["message"], markup=False, highlight=False, soft_wrap=True)
    out.print(table())
    return 0


def remote_search_table(view: dict[str, Any]) -> Any:
    """The table of a running serve's search answer (with why each hit ranked; names never cut)."""
    from servers.cli.tables import risk_cell, tool_rows_table

    hits = view["hits"]
    rows = [(h["name"], h["server"], risk_cell(h["risk"]), h.get("flow") or "-", f"{h['score']:.3f}",
             "; ".join(h["why"]) or "-") for h in hits]
    return tool_rows_table(f"Top {len(hits)} for {view['query']!r} (from the running serve)",
                           ("name", "server", "risk", "data flow", "score"), "why", rows, wrap_last=True)
