"""Code mode: a model's script calls many tools inside a pydantic-monty sandbox, out of toolhost's process.

* :class:`SandboxPool` runs scripts in worker processes with wall-clock, CPU, memory, recursion,
  inner-call, output and print limits (:class:`ScriptLimits`, :class:`PoolConfig`).
* :class:`InnerCaller` is the seam every inner call goes through (the gateway implements it with
  the full call pipeline).
* :func:`outcome_result` turns a run's :class:`ScriptOutcome` into the meta tool's ToolResult.
* The capability manifest and typed stubs are pure and live in :mod:`registry.code_mode`.
* In a gateway: :class:`CodeMode` (one pool per :class:`host.runtime.HostRuntime`, the ``execute``
  call), :class:`PipelineInnerCaller` (inner calls through the whole pipeline), script approvals for
  a whole manifest (:class:`ScriptApprovals`) and the cover of their inner calls (:class:`CoveringApprovals`).
"""

from host.code_mode.approval import ScriptApprovalRequest, ScriptApprovals, ScriptVerdict
from host.code_mode.bridge import PRELUDE, error_message, exception_data, sandbox_value
from host.code_mode.caller import InnerCaller
from host.code_mode.config import CodeModeConfig, PoolConfig, ScriptLimits
from host.code_mode.cover import CoveringApprovals, ScriptCover, current_cover, script_cover
from host.code_mode.inner import PipelineInnerCaller
from host.code_mode.outcome import InnerCallRecord, OutcomeStatus, ScriptOutcome
from host.code_mode.pool import SandboxPool
from host.code_mode.results import BUSY_RETRY_AFTER_SECONDS, outcome_result
from host.code_mode.runner import CodeMode
from host.code_mode.script_run import SCRIPT_TOOL, InnerStep, ScriptRun, parse_inner_detail

__all__ = [
    "BUSY_RETRY_AFTER_SECONDS",
    "PRELUDE",
    "SCRIPT_TOOL",
    "CodeMode",
    "CodeModeConfig",
    "CoveringApprovals",
    "InnerCallRecord",
    "InnerCaller",
    "InnerStep",
    "OutcomeStatus",
    "PipelineInnerCaller",
    "PoolConfig",
    "SandboxPool",
    "ScriptApprovalRequest",
    "ScriptApprovals",
    "ScriptCover",
    "ScriptLimits",
    "ScriptOutcome",
    "ScriptRun",
    "ScriptVerdict",
    "current_cover",
    "error_message",
    "exception_data",
    "outcome_result",
    "parse_inner_detail",
    "sandbox_value",
    "script_cover",
]
