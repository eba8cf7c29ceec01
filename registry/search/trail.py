"""Recent free-text searches of one conversation, to learn which query led to which call.

``tool_search`` records each result; when the conversation then calls a tool successfully,
:meth:`SearchTrail.query_for` names the newest search whose hits included that tool, and the host
remembers the pair (``host.store.usage``). Pure and bounded.
"""

from __future__ import annotations

from collections import deque

from registry.search.result import SearchResult

__all__ = ["SearchTrail"]

_FREE_TEXT_MODES = frozenset({"bm25", "hybrid"})


class SearchTrail:
    """The last ``size`` free-text searches (query, hit names) of one conversation."""

    def __init__(self, size: int = 8) -> None:
        self._recent: deque[tuple[str, frozenset[str]]] = deque(maxlen=size)

    def record(self, query: str, result: SearchResult) -> None:
        """Remember a free-text search with hits (``select:``/``regex:`` and empty ones are not
        worded like tasks, so they teach nothing)."""
        if result.mode in _FREE_TEXT_MODES and result.hits:
            self._recent.append((query, frozenset(h.tool.qualified_name for h in result.hits)))

    def query_for(self, tool: str) -> str | None:
        """The newest recorded query whose hits included ``tool``."""
        for query, names in reversed(self._recent):
            if tool in names:
                return query
        return None
