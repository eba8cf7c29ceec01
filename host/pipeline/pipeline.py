"""The :class:`Pipeline` facade: N tool calls in, N tool results out, in call order.

Stages: (accumulate, done by the adapter with :class:`~host.agent.accumulate.ArgumentAccumulator`)
→ look up + visibility → parse → validate (+ lossless coercion) → authorize/approval → execute
(timeouts, cancellation, scheduling) → format/limit (+ spill) → pair. Each stage's failure is a
result for that call; only :class:`~host.pipeline.errors.PipelineFatal` escapes.

Use::

    pipeline = Pipeline(registry, executor, policy, spill_dir=data_dir / "spill", event_log=EventLog(...))
    results = await pipeline.run_batch(calls, CallContext(principal=p, conversation_id="c1"))
    result = await pipeline.call("time__get_current_time", {"timezone": "UTC"}, ctx)
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from host.calls import ResultStatus, ToolCall, ToolResult
from host.pipeline.context import CallContext
from host.pipeline.errors import PipelineFatal
from host.pipeline.execute import Around, execute_batch
from host.pipeline.format import SpillStore
from host.pipeline.prepare import ApprovalHook, DenialDisclosure, Prepared, ValidatorCache, prepare_call
from host.pipeline.results import error_result
from host.pipeline.send_gate import SendGate
from host.pipeline.store_outage_log import STORE_OUTAGE_LOG, find_store_error, store_reason
from host.pipeline.taint import TaintStage
from host.tracing import span
from host.upstream.executor import ToolExecutor, UnlistedTools
from host.upstream.relay import sample_gate_scope
from registry.policy import AllowAll, RequestPolicy
from registry.store import ToolRegistry

__all__ = ["SINGLE_ID_PREFIX", "Pipeline"]

_logger = logging.getLogger("toolhost.pipeline")

_single_ids = itertools.count()
SINGLE_ID_PREFIX = "toolhost_"
"""Prefix of the ids :meth:`Pipeline.call` generates (``toolhost_<n>``). Kept short on purpose: an id
of 20 or more token-like characters (``toolhost_single_1000`` and up) passes redaction's cheap
token hint, and every call's fresh id then cost a full secret-detector scan in the event log
(~150 µs per call from the 1,000th call of a ``serve`` on); ``toolhost_<n>`` stays
under 20 characters for the first 10^10 calls."""


class Pipeline:
    """The standard call pipeline.

    Args:
        registry: where names are resolved (one snapshot is used per batch).
        executor: runs ``tools/call`` upstream (:class:`host.upstream.manager.ServerManager` in production).
        policy: authorization (default :class:`~registry.policy.AllowAll`).
        spill_dir: folder for full outputs over a tool's ``max_output_chars`` (one sub-folder
            per conversation).
        event_log: optional :class:`host.events.EventLog`; gets ``call``, ``decision`` and
            ``result`` events.
        approvals: optional hook deciding calls the policy marks ``approval``.
        send_gate: optional last check right before a call is sent upstream (:class:`SendGate`).
        coerce: apply the lossless string→number coercion (``registry.validation``).
        taint: the session-taint stage (:class:`host.pipeline.taint.TaintStage`; ``None``: no
            trifecta rule): checked after the policy allowed a call, fed every result that ran.
        unlisted: which down server owns a name it never listed (``upstream_unavailable`` instead
            of ``unknown_tool``; :class:`host.upstream.executor.UnlistedTools`).
        disclosure: which denials are explained to the caller (default: none;
            :class:`host.pipeline.prepare.DenialDisclosure`).
    """

    def __init__(
        self,
        registry: ToolRegistry,
        executor: ToolExecutor,
        policy: RequestPolicy | None = None,
        *,
        spill_dir: Path,
        event_log: Any | None = None,
        approvals: ApprovalHook | None = None,
        send_gate: SendGate | None = None,
        coerce: bool = True,
        taint: TaintStage | None = None,
        unlisted: UnlistedTools | None = None,
        disclosure: DenialDisclosure | None = None,
    ) -> None:
        self.unlisted = unlisted
        self.disclosure = disclosure
        self.registry = registry
        self.executor = executor
        self.policy: RequestPolicy = policy or AllowAll()
        self.spill = SpillStore(spill_dir)
        self.event_log = event_log
        self.approvals = approvals
        self.send_gate = send_gate
        self.coerce = coerce
        self.taint = taint
        self._validators = ValidatorCache()

    def _log(self, ctx: CallContext, kind: str, data: dict[str, Any]) -> None:
        if self.event_log is not None:
            try:
                self.event_log.append(ctx.conversation_id, kind, data, adapter=ctx.adapter)
            except Exception:  # the log is a record, not a reason to fail a call
                _logger.exception("toolhost: could not write a %s event", kind)

    async def run_batch(self, calls: Sequence[ToolCall], ctx: CallContext) -> list[ToolResult]:
        """Run a batch; returns exactly ``len(calls)`` results, ``results[i].call_id == calls[i].call_id``.

        Raises:
            PipelineFatal: protocol corruption or a broken invariant (the turn must end).
        """
        snapshot = self.registry.snapshot()
        slots: list[ToolResult | None] = [None] * len(calls)
        preps: list[Prepared] = []
        positions: list[int] = []
        logging = self.event_log is not None
        for pos, call in enumerate(calls):
            if logging:
                self._log(ctx, "call", {"call_id": call.call_id, "name": call.name, "index": call.index,
                                        "raw_arguments": call.raw_arguments, "arguments": call.arguments})
            try:
                with span("toolhost.prepare", **{"toolhost.tool": call.name, "toolhost.call_id": call.call_id}) as sp:
                    out = await prepare_call(
                        call, snapshot=snapshot, policy=self.policy, principal=ctx.principal,
                        validators=self._validators, approvals=self.approvals, suggest=self.registry.suggest,
                        coerce=self.coerce, taint=self.taint, session_id=ctx.taint_session,
                        unlisted=self.unlisted, disclosure=self.disclosure,
                    )
                    _trace_prepared(sp, out)
                STORE_OUTAGE_LOG.recovered()
            except Exception as exc:  # noqa: BLE001 - logged by _unauthorized; fails closed, this call only
                out = _unauthorized(call, exc)
            if isinstance(out, ToolResult):
                slots[pos] = out
                if logging:
                    self._log(ctx, "decision", {"call_id": call.call_id, "stage": out.error.where if out.error
                                                else "", "status": out.status.value})
                await self._completed(ctx, out)
                continue
            if logging:
                decision = {"call_id": call.call_id, "stage": "authorize", "effect": out.decision.effect.value,
                            "rule": out.decision.rule, "server": out.record.server, "tool": out.record.original_name}
                if out.coercions:
                    decision["coercions"] = [{"path": c.path, "given": c.given, "value": c.value}
                                             for c in out.coercions]
                decision.update(out.notes)
                self._log(ctx, "decision", decision)
            preps.append(out)
            positions.append(pos)

        done: set[str] = set()

        ran = {p.call.call_id: p.record for p in preps} if self.taint is not None else {}

        async def completed(res: ToolResult) -> None:
            done.add(res.call_id)
            record = ran.get(res.call_id)
            if record is not None and res.status is not ResultStatus.NOT_EXECUTED:
                self.taint.record_result(ctx.taint_session, res.call_id, record)  # type: ignore[union-attr]
            await self._completed(ctx, res)

        if preps:
            try:
                with span("toolhost.execute", **{"toolhost.calls": len(preps)}):
                    executed = await execute_batch(preps, self.executor, ctx, spill=self.spill, completed=completed,
                                                   gate=self.send_gate, around=self._sampling_scope(ctx))
            except anyio.get_cancelled_exc_class():
                # the caller went away (client disconnect, serve shutting down): the event log
                # still pairs every logged call with a result, as the audit already does
                for p in preps:
                    if p.call.call_id not in done:
                        self._log(ctx, "result", error_result(
                            p.call, ResultStatus.CANCELLED, "the caller cancelled the request while the call "
                            "ran (client disconnect or shutdown); its effect is unknown", where="execute",
                            details={"reason": "caller_cancelled"}).model_dump(mode="json"))
                raise
        else:
            executed = []
        for pos, res in zip(positions, executed, strict=True):
            slots[pos] = res
        results: list[ToolResult] = []
        for call, res in zip(calls, slots, strict=True):
            if res is None or res.call_id != call.call_id:
                raise PipelineFatal("pair", f"call {call.call_id!r} has no matching result")
            results.append(res)
        return results

    def _sampling_scope(self, ctx: CallContext) -> Around | None:
        """Each call's upstream request asks the taint rule before a sampling request reaches the client."""
        taint = self.taint
        if taint is None:
            return None
        return lambda prep: sample_gate_scope(taint.sampling_gate(
            ctx.principal, ctx.taint_session, prep.call.call_id, prep.record, prep.decision))

    async def _completed(self, ctx: CallContext, res: ToolResult) -> None:
        """Log a result and tell the UI; a failing log or callback never costs another call its result."""
        if self.event_log is not None:
            self._log(ctx, "result", res.model_dump(mode="json"))
        if ctx.on_result is not None:
            try:
                await ctx.on_result(res)
            except Exception:
                _logger.exception("toolhost: the on_result callback failed for call %s", res.call_id)

    async def call(
        self, name: str, arguments: dict[str, Any] | str | None, ctx: CallContext, *, call_id: str | None = None
    ) -> ToolResult:
        """Run one call. ``arguments`` as a dict (already parsed) or as raw JSON text.

        ``call_id`` defaults to ``ctx.call_id`` or a generated ``toolhost_<n>`` (:data:`SINGLE_ID_PREFIX`).
        """
        cid = call_id or ctx.call_id or f"{SINGLE_ID_PREFIX}{next(_single_ids)}"
        if isinstance(arguments, str):
            call = ToolCall(call_id=cid, name=name, raw_arguments=arguments)
        else:
            args = arguments if arguments is not None else {}
            call = ToolCall(call_id=cid, name=name, raw_arguments=_dumps(args), arguments=args)
        (result,) = await self.run_batch([call], ctx)
        return result


def _unauthorized(call: ToolCall, exc: Exception) -> ToolResult:
    """The fail-closed answer to a call whose authorization raised ``exc``: a store outage is one
    rate-limited log line (:data:`STORE_OUTAGE_LOG`) and names its reason; anything else is a bug and
    logs its traceback."""
    store = find_store_error(exc)
    if store is None:
        _logger.exception("toolhost: authorizing call %s failed", call.call_id)
        why, details = type(exc).__name__, {"error": type(exc).__name__}
    else:
        STORE_OUTAGE_LOG.note(store, "authorize")
        reason = store_reason(store)
        why = f"permission store unavailable: {reason}"
        details = {"error": type(store).__name__, "reason": "store_unavailable", "store_reason": reason}
    return error_result(call, ResultStatus.PERMISSION_DENIED,
                        f"the call could not be authorized right now ({why}); try again later",
                        where="authorize", details=details)


def _trace_prepared(sp: Any, out: Prepared | ToolResult) -> None:
    if sp is None or not sp.is_recording():
        return
    if isinstance(out, ToolResult):
        sp.set_attribute("toolhost.status", out.status.value)
        sp.set_attribute("toolhost.stage", out.error.where if out.error and out.error.where else "prepare")
        return
    sp.set_attribute("toolhost.server", out.record.server)
    sp.set_attribute("toolhost.decision", out.decision.effect.value)
    if out.decision.rule:
        sp.set_attribute("toolhost.rule", out.decision.rule)


def _dumps(value: dict[str, Any]) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return ""

