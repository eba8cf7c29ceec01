"""The code-mode meta tool's own result: a :class:`ScriptOutcome` as one :class:`host.calls.ToolResult`.

=================  ========================  =====================================================
outcome            result status             why
=================  ========================  =====================================================
``ok``             ``ok``                    structured ``{"result", "printed", "calls"}``, text = JSON
``script_error``   ``tool_error``            the script raised: the model can fix it (traceback)
``limit_exceeded`` ``tool_error``            ``details.limit`` names the limit
``rejected``       ``invalid_arguments``     parse error or script/manifest mismatch
``crashed``        ``upstream_error``        the worker died (replaced); ``details.retryable``
``busy``           ``rate_limited``          waited too long for a worker; ``retry_after_seconds``
``rate_limited``   ``rate_limited``          over the caller's share, or the queue is full; ditto
=================  ========================  =====================================================

``details`` always holds ``script_sha256``, ``calls`` (count) and ``call_statuses`` (count per status).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from host.calls import ErrorInfo, ResultStatus, TextBlock, ToolResult
from host.code_mode.outcome import ScriptOutcome

__all__ = ["BUSY_RETRY_AFTER_SECONDS", "outcome_result"]

BUSY_RETRY_AFTER_SECONDS = 1.0
"""Retry-After given when a ``busy``/``rate_limited`` outcome carries none (seconds)."""

_STATUS = {
    "script_error": ResultStatus.TOOL_ERROR,
    "limit_exceeded": ResultStatus.TOOL_ERROR,
    "rejected": ResultStatus.INVALID_ARGUMENTS,
    "crashed": ResultStatus.UPSTREAM_ERROR,
    "busy": ResultStatus.RATE_LIMITED,
    "rate_limited": ResultStatus.RATE_LIMITED,
}


def outcome_result(call_id: str, name: str, outcome: ScriptOutcome) -> ToolResult:
    """The meta tool's result for ``outcome`` (mapping in the module doc)."""
    details: dict[str, Any] = {
        "script_sha256": outcome.script_sha256,
        "calls": len(outcome.calls),
        "call_statuses": dict(sorted(Counter(c.status for c in outcome.calls).items())),
    }
    if outcome.ok:
        value = {"result": outcome.value, "printed": outcome.printed, "calls": len(outcome.calls)}
        text = json.dumps(value, ensure_ascii=False, default=repr)
        return ToolResult(call_id=call_id, name=name, content=[TextBlock(text=text)], structured=value)
    status = _STATUS[outcome.status]
    if outcome.limit:
        details["limit"] = outcome.limit
    if outcome.status == "crashed":
        details["retryable"] = True
    if outcome.printed:
        details["printed"] = outcome.printed
    retry = None
    if outcome.status in ("busy", "rate_limited"):
        retry = outcome.retry_after or BUSY_RETRY_AFTER_SECONDS
    return ToolResult(
        call_id=call_id,
        name=name,
        status=status,
        content=[TextBlock(text=f"{status.value}: {outcome.message}")],
        error=ErrorInfo(
            code=status.value,
            message=outcome.message,
            where=outcome.where,
            details=details,
            retry_after_seconds=retry,
        ),
    )
