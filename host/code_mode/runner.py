"""Code mode in a gateway: one :class:`SandboxPool` per runtime, and the ``execute`` meta tool's call.

:class:`CodeMode` owns the pool (opened and closed with :class:`host.runtime.HostRuntime`) and runs
one script call (:meth:`CodeMode.run`):

1. the caller's visible tools become script identifiers (:func:`registry.code_mode.python_names`);
   the script is parsed into its capability manifest (hidden tools are no names at all, so calling
   one answers exactly like calling a name that does not exist);
2. manifest tools needing approval for the caller: one approval for the whole manifest
   (:mod:`host.code_mode.approval`), else ``approval_required`` (or ``permission_denied`` when an
   approver denied it) before anything runs; only read/allowed tools: it runs at once;
3. the script runs in a worker; each inner call goes through the whole pipeline
   (:class:`host.code_mode.inner.PipelineInnerCaller`), covered by the script's approval;
4. the script is one ``script`` event in the event log and one audited call: tool ``execute``,
   arguments ``{"code", "manifest"}``, decision ``approval`` (rule ``code_mode:<tools>``) or
   ``allow`` (rule ``code_mode``), the approval and approver, ``definition_hash`` = the manifest
   digest, and ``detail`` = :meth:`host.code_mode.script_run.ScriptRun.audit_detail` (id, sha256,
   parent, counts, outcome); each inner call toolhost refused before the pipeline (outside the
   manifest, past the inner-call limit, never started) has a row of its own
   (:mod:`host.code_mode.refused`).

Result: :func:`host.code_mode.results.outcome_result` (structured ``{"result", "printed", "calls",
"script_id"}`` when ok).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Self

import anyio

from host.calls import ErrorInfo, ResultStatus, TextBlock, ToolResult
from host.code_mode.admission import owner_key
from host.code_mode.approval import ScriptApprovalRequest, ScriptApprovals
from host.code_mode.config import CodeModeConfig
from host.code_mode.cover import ScriptCover
from host.code_mode.inner import PipelineInnerCaller
from host.code_mode.pool import SandboxPool
from host.code_mode.refused import audit_refused
from host.code_mode.results import outcome_result
from host.code_mode.script_run import SCRIPT_TOOL, ScriptRun
from registry.code_mode import ScriptRejected, build_manifest, python_names, script_sha256
from registry.policy import Decision, Effect, Principal
from registry.tool import Risk, ToolRecord

if TYPE_CHECKING:
    from host.runtime import HostRuntime

__all__ = ["CodeMode"]

_logger = logging.getLogger("toolhost.code_mode")


class CodeMode:
    """The sandbox pool of one gateway and the ``execute`` call (module doc). An async context manager."""

    def __init__(self, config: CodeModeConfig) -> None:
        self.config = config
        self.pool = SandboxPool(config.pool, config.limits)

    async def __aenter__(self) -> Self:
        await self.pool.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.pool.__aexit__(*exc)

    def describe(self) -> dict[str, Any]:
        """``{"tool", "pool": {...}, "limits": {...}, "running": n, "queued": n}`` for ``toolhost servers --json`` and
        the admin API (pool size and limits as configured; ``running``: scripts running now, ``queued``:
        scripts waiting for a worker)."""
        return self.config.describe(running=self.pool.admission.running, queued=self.pool.admission.queued)

    async def run(
        self,
        runtime: HostRuntime,
        principal: Principal,
        code: Any,
        *,
        call_id: str | None = None,
        approvals: ScriptApprovals | None = None,
        pool_session: str | None = None,
        taint_session: str | None = None,
    ) -> ToolResult:
        """Run ``code`` for ``principal`` (module doc); exactly one result, never raises for the script's fault.

        ``pool_session``: the client session the script came in (``Mcp-Session-Id``, a stdio connection,
        a 2026-07-28 client connection); an anonymous caller's pool share is per session
        (:func:`host.code_mode.admission.owner_key`), a caller with an API key has one share per key.
        ``taint_session`` is the caller's session-taint session: the script's inner calls record
        into it and are checked against it, exactly as the caller's direct calls are (``None``: the
        runtime's conversation id)."""
        started = time.perf_counter()
        text = code if isinstance(code, str) else ""
        run = ScriptRun.new(script_sha256(text), call_id)
        request = ScriptApprovalRequest(text, run.script_sha256, {}, ())
        decision = Decision(Effect.ALLOW, "code mode script", "code_mode")
        approval: tuple[str | None, str | None] = (None, None)
        result: ToolResult | None = None
        statuses: list[str] = []
        outcome_name = "cancelled"
        try:
            if not isinstance(code, str) or not code.strip():
                result = _error(run, ResultStatus.INVALID_ARGUMENTS, "code_mode.parse",
                                "execute needs 'code': a Python script whose last expression is the result")
            else:
                visible = {t.qualified_name: t for t in runtime.visible_tools(principal)}
                try:
                    manifest = build_manifest(code, python_names(visible))
                except ScriptRejected as e:
                    manifest = None
                    result = _error(run, ResultStatus.INVALID_ARGUMENTS, "code_mode.parse", e.message,
                                    details={"line": e.line, "column": e.column})
                if manifest is not None:
                    definitions = {q: visible[q].definition_hash for q in manifest.qualified_names}
                    decisions = {q: runtime.policy.evaluate(principal, visible[q]) for q in manifest.qualified_names}
                    needs = tuple(q for q, d in decisions.items() if d.effect is Effect.APPROVAL)
                    request = ScriptApprovalRequest(
                        code, run.script_sha256, definitions, needs,
                        approval_rules={q: decisions[q].rule for q in needs},
                        risk=max((visible[q].risk for q in needs), key=lambda r: r.level, default=Risk.DESTRUCTIVE),
                    )
                    cover = None
                    if needs:
                        decision = Decision(Effect.APPROVAL, "a manifest tool needs approval", request.rule)
                        result, cover, approval = await _approve(run, principal, request, approvals)
                    if result is None:
                        outcome = await self.pool.run(
                            code, manifest,
                            PipelineInnerCaller(runtime, principal, run, cover, taint_session=taint_session),
                            owner=owner_key(principal, pool_session),
                        )
                        statuses = [c.status for c in outcome.calls]
                        await audit_refused(runtime, principal, run, outcome.calls)
                        result = outcome_result(run.parent_call_id, SCRIPT_TOOL, outcome)
                        if result.structured is not None:
                            result = result.model_copy(
                                update={"structured": {**result.structured, "script_id": run.script_id}}
                            )
                        elif result.error is not None:
                            error = result.error.model_copy(
                                update={"details": {**result.error.details, "script_id": run.script_id}}
                            )
                            result = result.model_copy(update={"error": error})
            outcome_name = result.status.value
            return result
        finally:
            _log_script(runtime, run, request, outcome_name, statuses, time.perf_counter() - started)
            if runtime.auditor is not None:
                with anyio.CancelScope(shield=True):
                    await runtime.auditor.audit_call_async(
                        principal,
                        SCRIPT_TOOL,
                        request.arguments,
                        status=outcome_name,
                        duration_seconds=time.perf_counter() - started,
                        tool=_script_record(request, runtime, self.config.limits.wall_clock_seconds),
                        decision=decision,
                        approval_id=approval[0],
                        approver=approval[1],
                        detail=run.audit_detail(outcome=outcome_name, statuses=statuses,
                                                tools=len(request.definitions)),
                    )


async def _approve(
    run: ScriptRun, principal: Principal, request: ScriptApprovalRequest, approvals: ScriptApprovals | None
) -> tuple[ToolResult | None, ScriptCover | None, tuple[str | None, str | None]]:
    """``(refusal or None, cover, (approval id, approver))`` for a script whose manifest needs approval."""
    names = ", ".join(request.needs_approval)
    details = {"needs_approval": list(request.needs_approval), "script_sha256": run.script_sha256,
               "script_id": run.script_id}
    if approvals is None:
        return _error(run, ResultStatus.APPROVAL_REQUIRED, "authorize",
                      f"the script names {names}, which need a human's approval before they can run;"
                      " ask the user to approve it", details=details), None, (None, None)
    verdict = await approvals.check_script(principal, request)
    if verdict.rejected:
        return _error(run, ResultStatus.PERMISSION_DENIED, "authorize",
                      f"the script was refused ({verdict.reason}); do not retry it unchanged",
                      details=details, approval_id=verdict.approval_id), None, (verdict.approval_id, verdict.approver)
    if not verdict.approved:
        return _error(run, ResultStatus.APPROVAL_REQUIRED, "authorize", verdict.reason, details=details,
                      approval_id=verdict.approval_id), None, (verdict.approval_id, None)
    assert verdict.approval_id is not None
    cover = ScriptCover(principal, verdict.approval_id, verdict.approver, dict(request.definitions))
    return None, cover, (verdict.approval_id, verdict.approver)


def _log_script(runtime: HostRuntime, run: ScriptRun, request: ScriptApprovalRequest, status: str,
                statuses: list[str], seconds: float) -> None:
    """One ``script`` event in the runtime's event log (next to the inner calls' own events)."""
    data = {"script_id": run.script_id, "script_sha256": run.script_sha256, "call_id": run.parent_call_id,
            "manifest": sorted(request.definitions), "needs_approval": list(request.needs_approval),
            "status": status, "calls": len(statuses), "seconds": round(seconds, 4)}
    try:
        runtime.event_log.append(runtime.conversation_id, "script", data)
    except Exception:  # the log is a record, not a reason to fail a call
        _logger.exception("toolhost: could not write a script event")


def _error(run: ScriptRun, status: ResultStatus, where: str, message: str, *,
           details: dict[str, Any] | None = None, approval_id: str | None = None) -> ToolResult:
    return ToolResult(
        call_id=run.parent_call_id,
        name=SCRIPT_TOOL,
        status=status,
        content=[TextBlock(text=f"{status.value}: {message}")],
        error=ErrorInfo(code=status.value, message=message, where=where,
                        details={"script_id": run.script_id, **(details or {})}, approval_id=approval_id),
    )


def _script_record(request: ScriptApprovalRequest, runtime: HostRuntime, seconds: float) -> ToolRecord:
    """The script as a tool record for its audit row: risk = the manifest's highest, definition hash =
    the manifest digest (what its approval is bound to)."""
    snap = runtime.registry.snapshot()
    records = [r for r in (snap.get(q) for q in request.definitions) if r is not None]
    risk = max((r.risk for r in records), key=lambda r: r.level, default=Risk.READ)
    return ToolRecord(
        qualified_name=SCRIPT_TOOL,
        server="toolhost",
        original_name=SCRIPT_TOOL,
        description="code mode script",
        input_schema={"type": "object"},
        risk=risk,
        open_world=any(r.open_world for r in records),
        timeout_seconds=seconds,
        max_output_chars=1,
        concurrency_safe=False,
        idempotent=False,
        definition_hash=request.digest,
    )
