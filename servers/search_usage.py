"""Pieces of ``tool_search`` that need the host: each hit's context (approval, availability) and
learning from successful calls (usage memory, ``host.store.usage``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import anyio

from host.runtime import HostRuntime
from host.store.usage import UsageMemory
from host.upstream.status import AVAILABLE_STATES
from registry import Principal, ToolRecord
from registry.permissions import Effect
from registry.search import HitContext, SearchTrail

__all__ = ["UsageLearner", "hit_contexts"]

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


class UsageLearner:
    """Records (query → tool) after a successful call of a searched tool and refreshes the index's
    memory. Database work runs in a worker thread; failures are logged, never raised."""

    def __init__(self, runtime: HostRuntime, memory: UsageMemory) -> None:
        self.runtime = runtime
        self.memory = memory
        self.refresh()

    @classmethod
    def for_runtime(cls, runtime: HostRuntime, access: Any) -> UsageLearner | None:
        """A learner over the access store's database, or ``None`` without one."""
        store = getattr(access, "store", None)
        if store is None:
            return None
        try:
            return cls(runtime, UsageMemory(store))
        except Exception:  # noqa: BLE001 - search works without memory
            log.exception("tool_search: usage memory unavailable")
            return None

    def refresh(self) -> None:
        """Load the memory into the index (dropping pairs of tools whose definition changed)."""
        current = {t.qualified_name: t.definition_hash for t in self.runtime.registry.tools()}
        self.runtime.search_index.set_memory(self.memory.load(current))

    async def learned(self, trail: SearchTrail, tool_name: str) -> None:
        query = trail.query_for(tool_name)
        tool = self.runtime.registry.snapshot().get(tool_name)
        if query is None or tool is None:
            return

        def work() -> None:
            if self.memory.record(query, tool.qualified_name, tool.definition_hash):
                self.refresh()

        try:
            await anyio.to_thread.run_sync(work)
        except Exception:  # noqa: BLE001 - a failed memory write never fails the call
            log.exception("tool_search: could not remember a successful call")
