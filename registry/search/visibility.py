"""What a caller may see in the search index: the visibility mask over corpus slots (cached per
index generation and caller key) and the help message that lists the caller's servers.

Pure; the mask cache is guarded by a lock (any thread may search).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np

from registry.search.index_state import IndexState
from registry.tool import ToolRecord

__all__ = ["MASK_CACHE_SIZE", "SERVER_HINTS", "MaskCache", "help_message"]

MASK_CACHE_SIZE = 32
"""Visibility masks kept (LRU), keyed by ``(generation, visible_key)``."""
SERVER_HINTS = 10
"""Servers listed in a help message at most."""


class MaskCache:
    """Visibility masks per ``(index generation, caller key)`` (LRU of :data:`MASK_CACHE_SIZE`)."""

    def __init__(self) -> None:
        self._cache: OrderedDict[tuple[int, Hashable], np.ndarray | None] = OrderedDict()
        self._lock = threading.Lock()

    def mask(
        self, st: IndexState, visible: Callable[[ToolRecord], bool] | None, key: Hashable | None
    ) -> np.ndarray | None:
        """Visibility over slots, or ``None`` when every tool is visible (global statistics).

        ``key`` (hashable identity of ``visible``) caches the mask for ``st``'s generation;
        ``None`` computes it every time (one ``visible`` call per tool).
        """
        if visible is None:
            return None
        cache_key = (st.generation, key)
        if key is not None:
            with self._lock:
                if cache_key in self._cache:
                    self._cache.move_to_end(cache_key)
                    return self._cache[cache_key]
        mask: np.ndarray | None = np.fromiter(
            (rec is not None and bool(visible(rec)) for rec in st.records), dtype=bool, count=len(st.records)
        )
        if int(mask.sum()) == len(st.by_name):  # type: ignore[union-attr]
            mask = None  # all visible: identical statistics, no per-query masking cost
        if key is not None:
            with self._lock:
                self._cache[cache_key] = mask
                while len(self._cache) > MASK_CACHE_SIZE:
                    self._cache.popitem(last=False)
        return mask


def help_message(st: IndexState, visible: Callable[[ToolRecord], bool] | None, *, empty: bool) -> str:
    """The message of a result without hits: why (``empty``: the query has no searchable words),
    the caller's servers with most visible tools (at most :data:`SERVER_HINTS`) and the query forms."""
    counts: dict[str, int] = {}
    for server, names in st.servers.items():
        n = sum(1 for name in names if visible is None or visible(st.by_name[name]))
        if n:
            counts[server] = n
    top = sorted(counts, key=lambda s: (-counts[s], s))[:SERVER_HINTS]
    head = (
        "The query has no searchable words."
        if empty
        else "No tool matched the query. Try other words (what the tool does, the object it acts on)."
    )
    if not top:
        return head + " No tools are available."
    listing = ", ".join(f"{s} ({counts[s]} tools)" for s in top)
    more = f" and {len(counts) - len(top)} more" if len(counts) > len(top) else ""
    return (
        f"{head} Available servers: {listing}{more}. Describe the task in a few words "
        "(e.g. 'create calendar event'), use 'select:<tool name>' for an exact name, or "
        "'regex:<pattern>' to match names and descriptions."
    )
