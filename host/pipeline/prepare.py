"""Stages before any side effect: look up the name, parse, validate, authorize.

Order (name first, so names cannot be probed: a denied name answers like an unknown one):

1. **look up + visibility**: the qualified name must exist *and* the policy must not deny it;
   a denied or invisible tool gets exactly the same ``unknown_tool`` answer as a missing one
   (suggestions are drawn only from names the caller may see). Two exceptions, each for callers
   entitled to know: a name of a configured server that never listed its tools
   (:class:`host.upstream.executor.UnlistedTools`) answers ``upstream_unavailable`` with that
   server's reason when the caller's grants cover the name; a denial a :class:`DenialDisclosure`
   explains (the local admin asking for a held definition) answers ``permission_denied`` with the
   policy's reason (which names ``toolhost pins diff`` / ``pins accept --hash``);
2. **parse** (``registry.validation.parse_arguments``: ``""`` is ``{}``);
3. **validate** against the tool's full ``inputSchema`` with the lossless coercion policy
   (``registry.validation``: the whole schema, lossless number coercion);
4. **approval**: a policy ``approval`` decision asks the optional :class:`ApprovalHook`; without
   one, or while pending, the result is ``approval_required`` with the policy's reason;
5. **session taint** (:mod:`host.pipeline.taint`), once the policy allowed the call: an egress call
   after private and untrusted results in the same session gets the rule of the caller's grants
   (:mod:`registry.permissions`) or else ``toolhost.taint`` —
   ``deny`` → ``permission_denied``, ``approve`` → the approval hook asked with the taint reasons
   (one approval covers a policy approval too), ``allow`` → runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from host.calls import ResultStatus, ToolCall, ToolResult
from host.pipeline.results import error_result
from host.pipeline.taint import TaintEvent, TaintStage
from host.upstream.executor import UnlistedTools
from registry.policy import Decision, Effect, Principal, RequestPolicy
from registry.safety import TaintDecision, TaintVerdict
from registry.safety.taint import CONFIG_RULE, TAINT_MENTION
from registry.store import RegistrySnapshot
from registry.tool import ToolDefinition, ToolRecord, build_record
from registry.validation import (
    ArgumentParseError,
    Coercion,
    compile_validator,
    excerpt,
    parse_arguments,
    validate_arguments,
)

__all__ = [
    "ApprovalHook", "ApprovalOutcome", "DenialDisclosure", "NoDisclosure", "Prepared", "ValidatorCache", "prepare_call",
    "unknown_tool_result", "unlisted_tool_result",
]

TOOL_SEARCH_HINT = "use tool_search to find a tool by what it does"


@dataclass(frozen=True)
class ApprovalOutcome:
    """Answer of an :class:`ApprovalHook`.

    Attributes:
        approved: the call may run now.
        approval_id: id of the pending approval request (shown to the model), if any.
        reason: why (for the model when not approved).
        rejected: a human explicitly refused (→ ``permission_denied`` instead of ``approval_required``).
    """

    approved: bool
    approval_id: str | None = None
    reason: str = ""
    rejected: bool = False


@runtime_checkable
class ApprovalHook(Protocol):
    """Decides calls that the policy marked ``approval`` (implemented by the permissions layer).

    ``reason`` is given only for a call the session-taint rule holds (``toolhost.taint``
    ``approve``): the taint reasons (which calls brought private data and untrusted content), to be
    shown to the approver with the request.
    """

    async def check(self, principal: Principal, tool: ToolRecord, arguments: dict[str, Any], *,
                    reason: str | None = None) -> ApprovalOutcome:
        ...


@runtime_checkable
class DenialDisclosure(Protocol):
    """Whether a caller is told why the policy denied a tool, instead of ``unknown_tool``.

    Implementations: :class:`NoDisclosure` (the default: every denial looks like an unknown name)
    and :class:`host.access.LocalAdminDisclosure` (the local admin learns that a definition is held
    and how to review it).
    """

    def explains(self, principal: Principal, decision: Decision) -> bool: ...


class NoDisclosure:
    """A :class:`DenialDisclosure` that explains nothing."""

    def explains(self, principal: Principal, decision: Decision) -> bool:
        return False


@dataclass(frozen=True)
class Prepared:
    """A call that passed every check and may execute.

    Attributes:
        call: the model's call (``arguments`` set to the parsed, un-coerced object).
        record: the resolved tool (server + original name).
        arguments: what is sent upstream (coerced copy when coercions applied).
        decision: the policy decision.
        coercions: lossless coercions applied.
    """

    call: ToolCall
    record: ToolRecord
    arguments: dict[str, Any]
    decision: Decision
    coercions: tuple[Coercion, ...] = ()
    notes: dict[str, Any] = field(default_factory=dict)


class ValidatorCache:
    """Compiled validators per (qualified name, definition hash); bounded to ``max_entries``."""

    def __init__(self, max_entries: int = 2048) -> None:
        self._cache: dict[tuple[str, str], Any] = {}
        self._max = max_entries

    def get(self, record: ToolRecord) -> Any:
        key = (record.qualified_name, record.definition_hash)
        hit = self._cache.get(key)
        if hit is None:
            if len(self._cache) >= self._max:
                self._cache.clear()
            hit = self._cache[key] = compile_validator(record.input_schema)
        return hit


def unknown_tool_result(
    call: ToolCall, snapshot: RegistrySnapshot, policy: RequestPolicy, principal: Principal, suggest: Any
) -> ToolResult:
    """``unknown_tool`` with close names among the tools ``principal`` may see."""
    # One consistent view for the whole loop (a live database policy would otherwise re-read its
    # revision once per tool: a round trip each on PostgreSQL).
    sees = policy.for_request(principal).visible
    visible = [r.qualified_name for r in snapshot.by_name.values() if sees(r)]
    close = suggest(call.name, 3, visible) if call.name else []
    did = f" Did you mean: {', '.join(close)}?" if close else ""
    return error_result(
        call, ResultStatus.UNKNOWN_TOOL, f"there is no tool named {excerpt(call.name, 80)!r}.{did} "
        f"Use an exact name from the tool list, or {TOOL_SEARCH_HINT}.", where="lookup",
        details={"suggestions": close},
    )


def unlisted_tool_result(
    call: ToolCall, unlisted: UnlistedTools | None, policy: RequestPolicy, principal: Principal
) -> ToolResult | None:
    """``upstream_unavailable`` for a name of a server that listed no tools, or ``None``.

    Only for a caller whose grants cover the name (checked as for a prompt or resource of that
    server: grants decide, pins hold listed definitions only): anyone else gets ``unknown_tool``,
    so server names cannot be probed.
    """
    owner = unlisted.unlisted_owner(call.name) if unlisted is not None and call.name else None
    if owner is None:
        return None
    placeholder = build_record(server=owner.server, qualified_name=call.name,
                               definition=ToolDefinition(name=call.name.partition("__")[2]))
    if not policy.for_request(principal).catalog_visible(placeholder):
        return None
    return error_result(
        call, ResultStatus.UPSTREAM_UNAVAILABLE,
        f"{excerpt(call.name, 80)!r} would be a tool of the server {owner.server!r}, which has not listed "
        f"its tools: {owner.reason}; the call was not sent. Fix that (`toolhost servers` shows each "
        "server's state) and retry once the server is connected",
        where="lookup", details={"server": owner.server, "reason": owner.reason, "sent": False},
    )


async def prepare_call(
    call: ToolCall,
    *,
    snapshot: RegistrySnapshot,
    policy: RequestPolicy,
    principal: Principal,
    validators: ValidatorCache,
    approvals: ApprovalHook | None,
    suggest: Any,
    coerce: bool = True,
    taint: TaintStage | None = None,
    session_id: str = "default",
    unlisted: UnlistedTools | None = None,
    disclosure: DenialDisclosure | None = None,
) -> Prepared | ToolResult:
    """Run stages 1–5 for one call: a :class:`Prepared` call, or the error :class:`ToolResult`.

    ``taint``/``session_id``: the session-taint stage and the caller's session (``None``: no taint rule).
    """
    record = snapshot.get(call.name)
    decision = policy.evaluate(principal, record) if record is not None else None
    if record is None or decision is None:
        return unlisted_tool_result(call, unlisted, policy, principal) or unknown_tool_result(
            call, snapshot, policy, principal, suggest)
    if decision.effect is Effect.DENY:
        if disclosure is not None and disclosure.explains(principal, decision):
            return error_result(call, ResultStatus.PERMISSION_DENIED, decision.reason, where="authorize",
                                details={"rule": decision.rule})
        return unknown_tool_result(call, snapshot, policy, principal, suggest)

    if call.arguments is not None:
        parsed: dict[str, Any] | ArgumentParseError = call.arguments
    else:
        parsed = parse_arguments(call.raw_arguments)
    if isinstance(parsed, ArgumentParseError):
        details = {"reason": parsed.reason, "excerpt": parsed.excerpt}
        if parsed.position is not None:
            details.update(position=parsed.position, line=parsed.line, column=parsed.column)
        return error_result(call, ResultStatus.INVALID_ARGUMENTS, parsed.message, where="parse", details=details)
    call = call.model_copy(update={"arguments": parsed})

    outcome = validate_arguments(validators.get(record), parsed, coerce=coerce)
    if not outcome.ok:
        lines = "; ".join(f"{v.path}: got {v.given}, expected {v.expected} ({v.fix})" for v in outcome.violations)
        return error_result(
            call, ResultStatus.INVALID_ARGUMENTS,
            f"arguments do not match the input schema of {record.qualified_name}: {lines}",
            where="validate", details={"violations": [v.as_dict() for v in outcome.violations]},
        )
    notes: dict[str, Any] = {}
    if outcome.schema_problem:
        notes["schema_problem"] = outcome.schema_problem

    tainted: TaintVerdict | None = None
    if taint is not None:
        verdict = taint.check(session_id, call.call_id, record, decision)
        if verdict.triggered:
            tainted = verdict
            if verdict.decision is TaintDecision.DENY:
                await taint.decided(TaintEvent(principal, session_id, call.call_id, record, verdict, "denied"))
                return error_result(call, ResultStatus.PERMISSION_DENIED, verdict.message(record.qualified_name),
                                    where="authorize", details=_taint_details(verdict))
            if verdict.decision is TaintDecision.ALLOW:
                await taint.decided(TaintEvent(principal, session_id, call.call_id, record, verdict, "allowed"))
                tainted = None
    if tainted is not None:
        return await _taint_approval(call, record, outcome.arguments, decision, outcome.coercions, notes,
                                     principal=principal, approvals=approvals, taint=taint, session_id=session_id,
                                     verdict=tainted)

    if decision.effect is Effect.APPROVAL:
        if approvals is None:
            return error_result(call, ResultStatus.APPROVAL_REQUIRED, f"{record.qualified_name} needs a human's "
                                f"approval before it can run ({decision.reason}); ask the user to approve it",
                                where="authorize", details={"rule": decision.rule})
        verdict = await approvals.check(principal, record, outcome.arguments)
        if verdict.rejected:
            return error_result(call, ResultStatus.PERMISSION_DENIED, f"the call to {record.qualified_name} was "
                                f"refused ({verdict.reason or 'approval rejected'}); do not retry it unchanged",
                                where="authorize", details={"rule": decision.rule}, approval_id=verdict.approval_id)
        if not verdict.approved:
            return error_result(call, ResultStatus.APPROVAL_REQUIRED, f"{record.qualified_name} is waiting for a "
                                f"human's approval ({verdict.reason or decision.reason})", where="authorize",
                                details={"rule": decision.rule}, approval_id=verdict.approval_id)
    return Prepared(call, record, outcome.arguments, decision, outcome.coercions, notes)


def _taint_details(verdict: TaintVerdict) -> dict[str, Any]:
    """``details`` of a result the taint rule decided: the rule, its decision, the calls behind it."""
    def calls(seen: Any) -> list[dict[str, Any]]:
        return [{"call_id": c.call_id, "tool": c.tool, "seq": c.seq} for c in seen]

    return {"rule": "taint", "taint_rule": verdict.rule, "decision": verdict.decision.value,
            "private_calls": calls(verdict.private_calls),
            "untrusted_calls": calls(verdict.untrusted_calls), "reasons": list(verdict.reasons)}


async def _taint_approval(
    call: ToolCall, record: ToolRecord, arguments: dict[str, Any], decision: Decision, coercions: tuple[Coercion, ...],
    notes: dict[str, Any], *, principal: Principal, approvals: ApprovalHook | None, taint: TaintStage,
    session_id: str, verdict: TaintVerdict,
) -> Prepared | ToolResult:
    """The approval stage of a call the taint rule holds (``approve``): one approval, whose reason
    names the labels and the calls behind them, covers a policy ``approval`` too."""
    name = record.qualified_name
    details = _taint_details(verdict)
    reason = " ".join(verdict.reasons)
    if decision.effect is Effect.APPROVAL:
        reason = f"{decision.reason}; {reason}"
    event = lambda outcome, approval_id=None: TaintEvent(  # noqa: E731
        principal, session_id, call.call_id, record, verdict, outcome, approval_id)
    if approvals is None:
        await taint.decided(event("approval_required"))
        change = ('sets "toolhost": {"taint": {"decision": "allow"}}' if verdict.rule == CONFIG_RULE
                  else f"changes the taint decision of grant {verdict.rule}")
        return error_result(call, ResultStatus.APPROVAL_REQUIRED, verdict.message(name) + " No approver is "
                            "configured for this host: a human approves from a gateway with a permission store, "
                            f"or an admin {change}.",
                            where="authorize", details=details)
    answer = await approvals.check(principal, record, arguments, reason=f"{TAINT_MENTION}{reason}")
    if answer.rejected:
        await taint.decided(event("rejected", answer.approval_id))
        return error_result(call, ResultStatus.PERMISSION_DENIED, f"the call to {name} was refused "
                            f"({answer.reason or 'approval rejected'}); do not retry it unchanged. "
                            + " ".join(verdict.reasons), where="authorize", details=details,
                            approval_id=answer.approval_id)
    if not answer.approved:
        await taint.decided(event("approval_required", answer.approval_id))
        return error_result(call, ResultStatus.APPROVAL_REQUIRED, f"{verdict.message(name)} ({answer.reason})",
                            where="authorize", details=details, approval_id=answer.approval_id)
    await taint.decided(event("approved", answer.approval_id))
    return Prepared(call, record, arguments, decision, coercions, {**notes, "taint": "approved"})
