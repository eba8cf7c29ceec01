"""Search hits for the model: compact text per hit, full definitions as JSON-ready dicts.

The compact line is what a model reads to choose (``name — first description line (params)``);
the full definition (name, title, description, input schema, risk, server, annotations) is
what gets declared once the tool is loaded (deferred loading, ``registry.search.deferred``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from registry.search.result import SearchHit, SearchResult
from registry.tool import ToolRecord

__all__ = ["HitContext", "format_result", "hit_line", "one_line", "param_summary", "tool_definition"]


@dataclass(frozen=True)
class HitContext:
    """What a caller needs, besides the definition, to choose a hit.

    Attributes:
        needs_approval: a call by this caller waits for a human's approval (policy effect
            ``approval``).
        available: the tool's server is connected now (a call would be attempted).
    """

    needs_approval: bool = False
    available: bool = True

    def to_json(self) -> dict[str, bool]:
        return {"needs_approval": self.needs_approval, "available": self.available}

_MAX_DESC_CHARS = 160
_MAX_PARAMS = 8


def param_summary(schema: dict[str, Any] | None) -> str:
    """``"city: string, days?: integer"``: top-level parameters, ``?`` for optional ones.

    At most 8 are named; the rest are counted (``+3 more``). ``""`` for no parameters.
    """
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict) or not props:
        return ""
    required = schema.get("required") if isinstance(schema, dict) else None
    req = set(required) if isinstance(required, list) else set()
    parts = []
    for name, sub in list(props.items())[:_MAX_PARAMS]:
        typ = _type_label(sub)
        parts.append(f"{name}{'' if name in req else '?'}: {typ}")
    rest = len(props) - _MAX_PARAMS
    if rest > 0:
        parts.append(f"+{rest} more")
    return ", ".join(parts)


def _type_label(sub: Any) -> str:
    if not isinstance(sub, dict):
        return "any"
    t = sub.get("type")
    if isinstance(t, list):
        return "|".join(str(x) for x in t)
    if t == "array":
        return f"{_type_label(sub.get('items'))}[]"
    if isinstance(t, str):
        return t
    if "enum" in sub:
        return "enum"
    return "object" if "properties" in sub else "any"


def one_line(text: str, max_chars: int = _MAX_DESC_CHARS) -> str:
    """First non-empty line of ``text``, cut to ``max_chars`` with an ellipsis."""
    for line in (text or "").splitlines():
        line = " ".join(line.split())
        if line:
            return line if len(line) <= max_chars else line[: max_chars - 1].rstrip() + "…"
    return ""


def hit_line(tool: ToolRecord, context: HitContext | None = None) -> str:
    """``- server__tool [read]: description (params: a: string, b?: integer)``.

    The bracket gives the risk tier, then ``needs approval`` and ``unavailable now`` when they
    apply (``context``; without one, only the risk)."""
    desc = one_line(tool.description) or tool.display_title
    params = param_summary(tool.input_schema)
    tags = [tool.risk.value]
    if context is not None:
        if context.needs_approval:
            tags.append("needs approval")
        if not context.available:
            tags.append("unavailable now: server not connected")
    return f"- {tool.qualified_name} [{', '.join(tags)}]: {desc}" + (
        f" (params: {params})" if params else " (no parameters)"
    )


def tool_definition(tool: ToolRecord) -> dict[str, Any]:
    """The full definition of a tool as plain JSON: ``{name, title, description, input_schema,
    risk, server, annotations}`` (``name`` is the qualified name a model calls)."""
    out: dict[str, Any] = {
        "name": tool.qualified_name,
        "title": tool.display_title,
        "description": tool.description,
        "input_schema": tool.input_schema,
        "risk": tool.risk.value,
        "server": tool.server,
    }
    ann = tool.annotations.to_wire()
    if ann:
        out["annotations"] = ann
    return out


def format_result(
    result: SearchResult | Sequence[SearchHit], contexts: Mapping[str, HitContext] | None = None
) -> str:
    """The text a model gets for a search: one :func:`hit_line` per hit (with its
    :class:`HitContext` from ``contexts`` by qualified name), or the result's message. A weak
    result ("no tool fits") says so first and marks the hits as weak."""
    hits = result.hits if isinstance(result, SearchResult) else list(result)
    message = result.message if isinstance(result, SearchResult) else None
    weak = isinstance(result, SearchResult) and result.weak
    if not hits:
        return message or "No tools matched the query. Try other words."
    ctx = contexts or {}
    lines = [hit_line(h.tool, ctx.get(h.tool.qualified_name)) for h in hits]
    if weak:
        assert message is not None
        return "\n".join([message, f"Weak matches ({len(hits)}), callable but probably not right:", *lines])
    lines = [f"Found {len(hits)} tool(s), now callable:"] + lines
    if message:
        lines.append(message)
    return "\n".join(lines)
