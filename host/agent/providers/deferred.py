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

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from host.agent.providers.base import Conversation, ResultsTurn
from host.calls import ErrorInfo, ResultStatus, TextBlock, ToolCall, ToolResult
from registry.search import DeferredLoadingState, SearchIndex, SearchResult, format_result
from registry.tool import ToolRecord
from registry.validation import ArgumentParseError, parse_arguments

__all__ = [
    "TOOL_SEARCH_DESCRIPTION",
    "TOOL_SEARCH_NAME",
    "TOOL_SEARCH_PARAMETERS",
    "deferred_state",
    "loaded_from_conversation",
    "loaded_names",
    "run_tool_search",
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


def search_result(call: ToolCall, hits: Sequence[ToolRecord] | SearchResult) -> ToolResult:
    """The result of a ``tool_search`` call that found (and loaded) ``hits``, best first.

    ``structured`` is ``{"loaded": [qualified names]}``; the text is
    :func:`registry.search.format_result` (one line per hit, or guidance when none).
    """
    if isinstance(hits, SearchResult):
        result = hits
    else:
        from registry.search import SearchHit

        result = SearchResult([SearchHit(tool=r, score=0.0) for r in hits], "select")
    names = [h.tool.qualified_name for h in result.hits]
    text = format_result(result) or "No tools matched the query. Try other words."
    return ToolResult(
        call_id=call.call_id, name=TOOL_SEARCH_NAME, content=[TextBlock(text=text)], structured={"loaded": names}
    )


def run_tool_search(
    call: ToolCall,
    index: SearchIndex,
    state: DeferredLoadingState,
    *,
    visible: Callable[[ToolRecord], bool] | None = None,
    default_limit: int = 5,
    max_limit: int = 20,
) -> ToolResult:
    """Answer a ``tool_search`` call: search ``index``, load the hits into ``state``.

    Args:
        call: the model's call (``{"query": str, "limit"?: int}``; ``raw_arguments`` is parsed
            when ``arguments`` is ``None``).
        visible: the caller's permission predicate (hidden tools are never returned).
        default_limit: hits when the call gives no ``limit``; ``max_limit`` caps it.

    Returns:
        :func:`search_result`, or an ``invalid_arguments`` result naming the fix.
    """
    args = call.arguments if call.arguments is not None else parse_arguments(call.raw_arguments)
    query = args.get("query") if isinstance(args, dict) else None
    if not isinstance(query, str) or not query.strip():
        problem = args.message if isinstance(args, ArgumentParseError) else "'query' must be a non-empty string"
        message = f'tool_search needs {{"query": "what the tool should do"}}: {problem}.'
        return ToolResult(
            call_id=call.call_id,
            name=TOOL_SEARCH_NAME,
            status=ResultStatus.INVALID_ARGUMENTS,
            content=[TextBlock(text=message)],
            error=ErrorInfo(code=ResultStatus.INVALID_ARGUMENTS.value, message=message, where="validate"),
        )
    limit = args.get("limit", default_limit)
    limit = max(1, min(max_limit, limit if isinstance(limit, int) and not isinstance(limit, bool) else default_limit))
    result = index.search(query, visible=visible, limit=limit)
    state.record_search(result)
    return search_result(call, result)


def loaded_names(result: ToolResult) -> list[str]:
    """Names a ``tool_search`` result loaded (empty for failures and other tools)."""
    if result.name != TOOL_SEARCH_NAME or result.is_error or not isinstance(result.structured, dict):
        return []
    names = result.structured.get("loaded")
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def loaded_from_conversation(conversation: Conversation) -> list[str]:
    """Every tool loaded by ``tool_search`` results in ``conversation``, in load order, once."""
    return deferred_state(conversation).loaded


def deferred_state(conversation: Conversation) -> DeferredLoadingState:
    """The conversation's :class:`~registry.search.DeferredLoadingState`, rebuilt from its history
    (replay from the event log gives the same loaded set, in the same order)."""
    state = DeferredLoadingState()
    for turn in conversation.turns:
        if isinstance(turn, ResultsTurn):
            for result in turn.results:
                state.mark_loaded(loaded_names(result))
    return state


def split_catalog(tools: Iterable[ToolRecord], loaded: Sequence[str]) -> tuple[list[ToolRecord], list[ToolRecord]]:
    """``(eager, loaded_records)`` per :meth:`DeferredLoadingState.declared`: ``always_load`` tools
    (sorted by qualified name), then the loaded ones in load order (tools gone are skipped)."""
    by_name = {r.qualified_name: r for r in tools}
    declared = DeferredLoadingState(loaded=list(loaded)).declared(by_name)
    eager = [r for r in declared if r.always_load]
    return eager, [r for r in declared if not r.always_load]
