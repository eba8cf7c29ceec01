"""The gateway's :class:`host.code_mode.InnerCaller`: every inner call through the whole call pipeline.

One :class:`PipelineInnerCaller` per script run, bound to the caller (principal), the run (script id,
sha256, parent call id) and the script's approval cover. Each call goes through
:meth:`host.runtime.HostRuntime.call` exactly like a direct ``call_tool``: validation, authorization
(a hidden tool answers like an unknown one), definition pins, rate limits, budgets, output limits,
redaction, the event log and the hash-chained audit, whose row names the script and step
(:meth:`host.code_mode.script_run.InnerStep.audit_detail`).

Concurrency follows the pipeline's batch rule (:mod:`host.pipeline.execute`) within one script:
calls the script runs together (``asyncio.gather``) overlap when their tools are
``concurrency_safe`` (read-only by default), except two with the same ``resource_key``; a
state-changing call runs alone (it waits for the calls in flight, and later ones wait for it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from host.calls import ToolResult
from host.code_mode.cover import ScriptCover, script_cover
from host.code_mode.script_run import InnerStep, ScriptRun
from registry.policy import Principal

if TYPE_CHECKING:
    from host.runtime import HostRuntime

__all__ = ["InnerSchedule", "PipelineInnerCaller"]


class InnerSchedule:
    """Shared (concurrency-safe) and exclusive (state-changing) slots of one script run, plus one
    lock per ``resource_key`` (see module doc)."""

    def __init__(self) -> None:
        self._cond = anyio.Condition()
        self._shared = 0
        self._exclusive = False
        self._resources: dict[str, anyio.Lock] = {}

    @asynccontextmanager
    async def slot(self, *, safe: bool, resource_key: str | None) -> AsyncIterator[None]:
        """Hold a slot for one call: shared when ``safe``, else exclusive; and its resource's lock."""
        async with AsyncExitStack() as stack:
            if resource_key is not None:
                await stack.enter_async_context(self._resources.setdefault(resource_key, anyio.Lock()))
            async with self._cond:
                while self._exclusive or (not safe and self._shared):
                    await self._cond.wait()
                if safe:
                    self._shared += 1
                else:
                    self._exclusive = True
            try:
                yield
            finally:
                with anyio.CancelScope(shield=True):
                    async with self._cond:
                        if safe:
                            self._shared -= 1
                        else:
                            self._exclusive = False
                        self._cond.notify_all()


class PipelineInnerCaller:
    """Runs a script's tool calls as ``principal`` through ``runtime`` (see module doc).

    Args:
        runtime: the host runtime (its pipeline, rate limiter and auditor).
        principal: the caller of the script.
        run: the script run (id, sha256, parent call id).
        cover: the script's approval for its manifest (``None``: no tool needed one).
        taint_session: the caller's session-taint session (the one its direct calls use: an HTTP
            session, a stdio connection, ``caller:<user>:<key id>``); every inner call records
            into it and is checked against it (``None``: the runtime's conversation id, as for a
            direct :meth:`host.runtime.HostRuntime.call` without a session).
    """

    def __init__(self, runtime: HostRuntime, principal: Principal, run: ScriptRun,
                 cover: ScriptCover | None = None, *, taint_session: str | None) -> None:
        self.runtime = runtime
        self.principal = principal
        self.run = run
        self.cover = cover
        self.taint_session = taint_session
        self.schedule = InnerSchedule()

    async def call(self, name: str, arguments: dict[str, Any], *, step: int) -> ToolResult:
        inner = InnerStep(self.run, step)
        record = self.runtime.registry.snapshot().get(name)
        safe = record is None or record.concurrency_safe  # an unknown name is answered without running anything
        with script_cover(self.cover):
            async with self.schedule.slot(safe=safe, resource_key=None if record is None else record.resource_key):
                return await self.runtime.call(
                    name, arguments, self.principal, call_id=inner.call_id, script_step=inner,
                    session_id=self.taint_session,
                )
