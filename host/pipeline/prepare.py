"""Stages before any side effect: look up the name, parse, validate, authorize.

Order (name first, so names cannot be probed, BR-16/BR-26):

1. **look up + visibility**: the qualified name must exist *and* the policy must not deny it;
   a denied or invisible tool gets exactly the same ``unknown_tool`` answer as a missing one
   (suggestions are drawn only from names the caller may see);
2. **parse** (``registry.validation.parse_arguments``, BR-06);
3. **validate** against the tool's full ``inputSchema`` with the lossless coercion policy
   (``registry.validation``, BR-09, BR-13);
4. **approval**: a policy ``approval`` decision asks the optional :class:`ApprovalHook`; without
   one, or while pending, the result is ``approval_required`` with the policy's reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from host.calls import ResultStatus, ToolCall, ToolResult
from host.pipeline.results import error_result
from registry.policy import Decision, Effect, Principal, RequestPolicy
from registry.store import RegistrySnapshot
from registry.tool import ToolRecord
from registry.validation import (
    ArgumentParseError,
    Coercion,
    compile_validator,
    excerpt,
    parse_arguments,
    validate_arguments,
)

__all__ = ["ApprovalHook", "ApprovalOutcome", "Prepared", "ValidatorCache", "prepare_call", "unknown_tool_result"]

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
    """Decides calls that the policy marked ``approval`` (implemented by the permissions layer)."""

    async def check(self, principal: Principal, tool: ToolRecord, arguments: dict[str, Any]) -> ApprovalOutcome:
        ...


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
) -> Prepared | ToolResult:
    """Run stages 1–4 for one call: a :class:`Prepared` call, or the error :class:`ToolResult`."""
    record = snapshot.get(call.name)
    decision = policy.evaluate(principal, record) if record is not None else None
    if record is None or decision is None or decision.effect is Effect.DENY:
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
