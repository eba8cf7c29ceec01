"""Deferred loading shared by the adapters: the tool_search tool, its results, the loaded set.

With ``tool_search`` on, only ``always_load`` tools are declared up front; the model calls
``tool_search`` (one provider-neutral :class:`~host.calls.ToolCall` named
:data:`TOOL_SEARCH_NAME`) and the host answers with a :class:`~host.calls.ToolResult` built by
:func:`search_result`, whose ``structured`` is ``{"loaded": [qualified names…]}``. Each adapter
renders that result natively:

* Anthropic Messages: every other tool is declared with ``defer_loading: true``; the result is a
  ``tool_result`` made of ``tool_reference`` blocks (client-side tool search).
* OpenAI Responses: ``{"type": "tool_search", "execution": "client"}`` plus functions with
  ``defer_loading: true``; the call is a ``tool_search_call`` item, the result a
  ``tool_search_output`` item carrying the hits' function definitions.
* OpenAI Chat Completions (no native support): a ``tool_search`` function whose result lists
  the hits' definitions as JSON; later requests append the loaded tools at the END of ``tools``
  so the earlier prefix stays byte-identical.

The loaded set is derived from the conversation itself (:func:`loaded_from_conversation`), so it
survives replay from the event log and switching APIs mid-conversation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from host.calls import TextBlock, ToolCall, ToolResult
from host.providers.base import Conversation, ResultsTurn
from registry.tool import ToolRecord

__all__ = [
    "TOOL_SEARCH_DESCRIPTION",
    "TOOL_SEARCH_NAME",
    "TOOL_SEARCH_PARAMETERS",
    "loaded_from_conversation",
    "loaded_names",
    "search_result",
    "split_catalog",
]

TOOL_SEARCH_NAME = "tool_search"
"""Name of the search tool. Qualified names always contain ``__``, so it never collides."""

TOOL_SEARCH_DESCRIPTION = (
    "Search the catalog of available tools by what you want to do. Matching tools become "
    "callable right after this call; call tool_search first when no loaded tool fits."
)

TOOL_SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What the tool should do, in a few words."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "Most tools to load (default 5)."},
    },
    "required": ["query"],
    "additionalProperties": False,
}


def search_result(call: ToolCall, hits: Sequence[ToolRecord]) -> ToolResult:
    """The result of a ``tool_search`` call that found (and loaded) ``hits``, best first.

    ``structured`` is ``{"loaded": [qualified names]}``; the text lists name and description.
    """
    names = [r.qualified_name for r in hits]
    if hits:
        lines = [f"Loaded {len(hits)} tool(s); call them directly:"]
        lines += [f"- {r.qualified_name}: {(r.description or r.display_title).splitlines()[0][:200]}" for r in hits]
        text = "\n".join(lines)
    else:
        text = "No tools matched the query. Try other words."
    return ToolResult(call_id=call.call_id, name=TOOL_SEARCH_NAME, content=[TextBlock(text=text)],
                      structured={"loaded": names})


def loaded_names(result: ToolResult) -> list[str]:
    """Names a ``tool_search`` result loaded (empty for failures and other tools)."""
    if result.name != TOOL_SEARCH_NAME or result.is_error or not isinstance(result.structured, dict):
        return []
    names = result.structured.get("loaded")
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def loaded_from_conversation(conversation: Conversation) -> list[str]:
    """Every tool loaded by ``tool_search`` results in ``conversation``, in load order, once."""
    seen: dict[str, None] = {}
    for turn in conversation.turns:
        if isinstance(turn, ResultsTurn):
            for result in turn.results:
                for name in loaded_names(result):
                    seen.setdefault(name, None)
    return list(seen)


def split_catalog(tools: Iterable[ToolRecord], loaded: Sequence[str]) -> tuple[list[ToolRecord], list[ToolRecord]]:
    """``(eager, loaded_records)``: ``always_load`` tools in catalog order, then loaded ones in load order."""
    tools = list(tools)
    eager = [r for r in tools if r.always_load]
    by_name = {r.qualified_name: r for r in tools if not r.always_load}
    return eager, [by_name[n] for n in loaded if n in by_name]
