"""One view of a search result for every front end that shows it outside MCP: the admin API's
``GET /admin/api/search`` (and so the console and the CLI through a running serve) and the CLI
on its own. ``toolhost search --json`` prints :func:`cli_hits` of it, so its shape is the same
with and without a running serve."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from registry import ToolRecord
from registry.search import SearchResult, tool_definition

__all__ = ["cli_hits", "search_view", "why"]


def search_view(query: str, result: SearchResult, labels: Callable[[ToolRecord], Any]) -> dict[str, Any]:
    """``{"query", "mode", "weak", "invalid", "message", "hits": [{name, server, risk, flow (short
    text), score, why, definition}]}``; ``definition``: the tool's JSON definition
    (:func:`registry.search.tool_definition`) with its data-flow labels (``flow``: each label and
    its reason). ``weak``: free text only, nothing fits well (the hits are the closest tools)."""
    hits = []
    for h in result.hits:
        flow = labels(h.tool)
        hits.append({
            "name": h.tool.qualified_name,
            "server": h.tool.server,
            "risk": h.tool.risk.value,
            "flow": flow.short(),
            "score": round(float(h.score), 4),
            "why": why(query, h.tool),
            "definition": tool_definition(h.tool) | {"flow": flow.as_dict()},
        })
    return {"query": query, "mode": result.mode, "weak": bool(result.weak), "invalid": bool(result.invalid),
            "message": result.message, "hits": hits}


def cli_hits(view: dict[str, Any]) -> list[dict[str, Any]]:
    """What ``toolhost search --json`` prints: each hit's definition with its ``score`` and ``why``."""
    return [h["definition"] | {"score": h["score"], "why": h["why"]} for h in view["hits"]]


def why(query: str, tool: ToolRecord) -> list[str]:
    """Which query words (after tokenizing and stemming, as the index does) appear where in ``tool``:
    a plain explanation of a BM25 hit."""
    from registry.search import Tokenizer  # lazy: only the playground and the CLI need it

    tok = Tokenizer()
    words = set(tok(query))
    fields = {
        "name": tool.qualified_name.replace("_", " "),
        "description": tool.description or "",
        "parameters": " ".join((tool.input_schema or {}).get("properties", {}).keys()).replace("_", " "),
    }
    reasons = []
    for field_name, text in fields.items():
        found = sorted(words & set(tok(text)))
        if found:
            reasons.append(f"{field_name}: {', '.join(found)}")
    return reasons
