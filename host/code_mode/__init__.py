"""Code mode: a model's script calls many tools inside a pydantic-monty sandbox, out of toolhost's process.

* :class:`SandboxPool` runs scripts in worker processes with wall-clock, CPU, memory, recursion,
  inner-call, output and print limits (:class:`ScriptLimits`, :class:`PoolConfig`).
* :class:`InnerCaller` is the seam every inner call goes through (the gateway implements it with
  the full call pipeline).
* :func:`outcome_result` turns a run's :class:`ScriptOutcome` into the meta tool's ToolResult.
* The capability manifest and typed stubs are pure and live in :mod:`registry.code_mode`.
"""

from host.code_mode.bridge import PRELUDE, error_message, exception_data, sandbox_value
from host.code_mode.caller import InnerCaller
from host.code_mode.config import CodeModeConfig, PoolConfig, ScriptLimits
from host.code_mode.outcome import InnerCallRecord, OutcomeStatus, ScriptOutcome
from host.code_mode.pool import SandboxPool
from host.code_mode.results import BUSY_RETRY_AFTER_SECONDS, outcome_result

__all__ = [
    "BUSY_RETRY_AFTER_SECONDS",
    "PRELUDE",
    "CodeModeConfig",
    "InnerCallRecord",
    "InnerCaller",
    "OutcomeStatus",
    "PoolConfig",
    "SandboxPool",
    "ScriptLimits",
    "ScriptOutcome",
    "error_message",
    "exception_data",
    "outcome_result",
    "sandbox_value",
]
