"""Pieces of ``tool_search`` that need the host: each hit's context (approval, availability) and
learning from successful calls (usage memory, ``host.store.usage``)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

import anyio

from host.access import AccessControl
from host.runtime import HostRuntime
from host.search import VectorWorker
from host.store.usage import MAX_PER_TOOL, UsageMemory
from host.upstream.status import AVAILABLE_STATES
from registry import Principal, ToolRecord
from registry.permissions import Effect
from registry.search import HitContext, SearchTrail

__all__ = ["RELOAD_SECONDS", "UsageLearner", "hit_contexts"]

log = logging.getLogger("toolhost.search")


def hit_contexts(runtime: HostRuntime, principal: Principal, tools: Sequence[ToolRecord]) -> dict[str, HitContext]:
    """``{qualified name: HitContext}``: approval from the caller's policy decision (effect
    ``approval``), availability from the runtime's server statuses (calls are forwarded:
    :data:`host.upstream.status.AVAILABLE_STATES`)."""
    if not tools:
        return {}
    connected = {s.name for s in runtime.statuses() if s.state in AVAILABLE_STATES}
    out = {}
    for tool in tools:
        try:
            approval = runtime.policy.evaluate(principal, tool).effect == Effect.APPROVAL
        except Exception:  # noqa: BLE001 - a failing policy must not break search; the call itself is checked again
            approval = True
        out[tool.qualified_name] = HitContext(needs_approval=approval, available=tool.server in connected)
    return out


RELOAD_SECONDS = 60.0
"""Least time between two full reloads of the usage memory from the database (seconds).

A learned call updates only its tool's memory in the index (:meth:`SearchIndex.remember`); the
whole memory (decay, definition changes, pairs learned by other replicas) is reloaded when a
learned call comes this long after the last reload."""


class UsageLearner:
    """Records (query → tool) after a successful call of a searched tool and keeps the index's
    memory current. Database work runs in a worker thread; failures are logged, never raised.

    Each learned call writes one row and updates that tool's memory in the index; the full
    reload happens at most once per ``reload_seconds`` (``clock`` is monotonic seconds).
    ``vector_worker`` (the runtime's, when dense search is on) is told to embed newly remembered
    queries (the memory's dense half); ``None``: BM25 memory only.
    """

    def __init__(
        self,
        runtime: HostRuntime,
        memory: UsageMemory,
        *,
        reload_seconds: float = RELOAD_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        vector_worker: VectorWorker | None = None,
    ) -> None:
        self.runtime = runtime
        self.memory = memory
        self.vector_worker = vector_worker
        self.reload_seconds = reload_seconds
        self.reloads = 0
        """Full reloads so far (the first happens here)."""
        self._clock = clock
        self._lock = threading.Lock()
        self._loaded: dict[str, tuple[str, list[str]]] = {}
        self._loaded_at = 0.0
        self.refresh()

    @classmethod
    def for_runtime(cls, runtime: HostRuntime, access: AccessControl | None) -> UsageLearner | None:
        """A learner over the access store's database (``None`` without a store), telling the runtime's
        vector worker of new queries."""
        if access is None:
            return None
        try:
            return cls(runtime, UsageMemory(access.store), vector_worker=runtime.vector_worker)
        except Exception:  # search works without memory
            log.exception("tool_search: usage memory unavailable")
            return None

    def refresh(self) -> None:
        """Reload the whole memory into the index (dropping pairs of tools whose definition
        changed and pairs decayed away)."""
        current = {t.qualified_name: t.definition_hash for t in self.runtime.registry.tools()}
        with self._lock:
            loaded = self.memory.load(current)
            self.runtime.search_index.set_memory(loaded)
            self._loaded = loaded
            self._loaded_at = self._clock()
            self.reloads += 1
        self._embed_new()

    def _embed_new(self) -> None:
        """Have the vector worker embed newly remembered queries (the memory's dense half)."""
        if self.vector_worker is not None:
            self.vector_worker.notify()

    def _learn(self, query: str, tool: str, definition_hash: str) -> None:
        text = self.memory.record(query, tool, definition_hash)
        if text is None:
            return
        if self._clock() - self._loaded_at >= self.reload_seconds:
            self.refresh()
            return
        with self._lock:
            h, queries = self._loaded.get(tool, (definition_hash, []))
            if h != definition_hash:
                queries = []
            # Newest first, once (the database ranks by decayed use; the next reload restores that order).
            queries = [text, *(q for q in queries if q.lower() != text.lower())][:MAX_PER_TOOL]
            self._loaded[tool] = (definition_hash, queries)
            self.runtime.search_index.remember(tool, definition_hash, queries)
        self._embed_new()

    async def learned(self, trail: SearchTrail, tool_name: str) -> None:
        query = trail.query_for(tool_name)
        tool = self.runtime.registry.snapshot().get(tool_name)
        if query is None or tool is None:
            return
        try:
            await anyio.to_thread.run_sync(self._learn, query, tool.qualified_name, tool.definition_hash)
        except Exception:  # a failed memory write never fails the call
            log.exception("tool_search: could not remember a successful call")
