"""Choices and help rendering of the ``toolhost`` command line (kept apart so :mod:`servers.cli.app` stays small)."""

from __future__ import annotations

import enum
import json
from typing import Any

from rich.console import Console

__all__ = ["AuthChoice", "Expose", "LogFormat", "LogLevel", "RiskChoice", "flags_without_placeholder", "json_object",
           "print_remote_search"]


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


def print_remote_search(out: Console, query: str, found: dict[str, Any], as_json: bool) -> None:
    """Print a running serve's search answer (``GET /admin/api/search``) like ``toolhost search``."""
    from rich.table import Table

    hits = found.get("hits", [])
    if as_json:
        out.print_json(json.dumps(hits))
        return
    if not hits:
        out.print(found.get("message") or f"No tool matches {query!r}.", soft_wrap=True)
        return
    table = Table(title=f"Top {len(hits)} for {query!r} (from the running serve)")
    for col in ("name", "server", "risk", "data flow", "score", "why"):
        table.add_column(col)
    for h in hits:
        table.add_row(h["name"], h["server"], h["risk"], h.get("flow") or "-", f"{h['score']:.3f}",
                      "; ".join(h["why"]) or "-")
    out.print(table)
