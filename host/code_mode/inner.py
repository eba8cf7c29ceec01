"""The gateway's :class:`host.code_mode.InnerCaller`: every inner call through the whole call pipeline.

One :class:`PipelineInnerCaller` per script run, bound to the caller (principal), the run (script id,
sha256, parent call id) and the script's approval cover. Each call goes through
:meth:`host.runtime.HostRuntime.call` exactly like a direct ``call_tool``: validation, authorization
(a hidden tool answers like an unknown one), definition pins, rate limits, budgets, output limits,
redaction, the event log and the hash-chained audit, whose row names the script and step
(:meth:`host.code_mode.script_run.InnerStep.audit_detail`). Concurrency is the runtime's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from host.calls import ToolResult
from host.code_mode.cover import ScriptCover, script_cover
from host.code_mode.script_run import InnerStep, ScriptRun
from registry.policy import Principal

if TYPE_CHECKING:
    from host.runtime import HostRuntime

__all__ = ["PipelineInnerCaller"]


class PipelineInnerCaller:
    """Runs a script's tool calls as ``principal`` through ``runtime`` (see module doc).

    Args:
        runtime: the host runtime (its pipeline, rate limiter and auditor).
        principal: the caller of the script.
        run: the script run (id, sha256, parent call id).
        cover: the script's approval for its manifest (``None``: no tool needed one).
    """

    def __init__(self, runtime: HostRuntime, principal: Principal, run: ScriptRun,
                 cover: ScriptCover | None = None) -> None:
        self.runtime = runtime
        self.principal = principal
        self.run = run
        self.cover = cover

    async def call(self, name: str, arguments: dict[str, Any], *, step: int) -> ToolResult:
        inner = InnerStep(self.run, step)
        with script_cover(self.cover):
            return await self.runtime.call(
                name, arguments, self.principal, call_id=inner.call_id, script_step=inner
            )
