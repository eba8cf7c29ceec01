"""Programmatic callers in an agent loop: which tools the provider's program may call, and the
governed path of every call a program made.

Anthropic Messages and OpenAI Responses host *programmatic tool calling*: the model writes a
program that runs in the provider's sandbox, and each tool call the program makes comes back to
this loop as an ordinary tool call with a ``caller`` naming the program
(:mod:`host.agent.providers.callers` has the shapes). OpenAI Chat Completions has no programmatic
callers.

Who may be called by a program (:class:`ProgrammaticPolicy`):

* **read-risk tools**: always (what the caller may see; hidden tools stay unknown);
* **write and destructive tools**: only directly, unless an allow grant that decides the tool for
  the caller says calls need no human approval (``toolhost grants add USER PATTERN --no-approval``,
  :class:`GrantedPrograms`): the operator has said calls to it need no human looking at each one,
  which is what a program's calls are. Without users (open access) no grant exists, so only
  read-risk tools (:class:`ReadOnlyPrograms`).

:class:`ProgrammaticCalls` is the loop's pipeline: a direct call goes to the wrapped pipeline; a
call made by a program goes through :meth:`host.runtime.HostRuntime.call` (validation,
authorization, pins, approvals, rate limits, budgets, redaction, the audit row) with
:class:`ProgramStep` naming the program in the audit row's ``detail``
(``program anthropic_messages:srvtoolu_… call:toolu_…``), and a ``program_call`` event in the
conversation's event log. A tool the program may not call is refused (``permission_denied``,
``where: "authorize"``) with a message saying how to call it instead, and the refusal is audited.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from host.agent.providers.callers import may_call_programmatically
from host.calls import ResultStatus, ToolCall, ToolResult
from host.pipeline.context import BatchCancel, CallContext
from host.pipeline.results import error_result
from host.store import AuditUnavailable
from registry.policy import Effect, Principal
from registry.tool import ToolRecord

if TYPE_CHECKING:
    from host.access import AccessControl
    from host.runtime import HostRuntime

__all__ = ["GrantedPrograms", "ProgramStep", "ProgrammaticCalls", "ProgrammaticPolicy", "ReadOnlyPrograms"]


class ProgrammaticPolicy(Protocol):
    """Which tools beyond read-risk ones a provider's program may call, for one caller."""

    def allows(self, tool: ToolRecord) -> bool:
        """True when a program may call ``tool`` although it is not read-risk."""
        ...


class ReadOnlyPrograms:
    """Programs may call read-risk tools only (open access: no grants to say otherwise)."""

    def allows(self, tool: ToolRecord) -> bool:
        return False


class GrantedPrograms:
    """Programs may also call a write/destructive tool when the allow grant deciding it for
    ``principal`` has ``approval`` set to never (``--no-approval``); see the module docstring.

    Args:
        access: the permission store (grants are read live, so a grant change applies at once).
        principal: the caller.
    """

    def __init__(self, access: AccessControl, principal: Principal) -> None:
        self.access = access
        self.principal = principal
        self._rules: tuple[int, frozenset[str]] | None = None

    def allows(self, tool: ToolRecord) -> bool:
        decision = self.access.evaluate(self.principal, tool)
        return decision.effect is Effect.ALLOW and decision.rule in self._no_approval_rules()

    def _no_approval_rules(self) -> frozenset[str]:
        """Rules of the principal's allow grants with ``approval`` never, read once per access revision."""
        revision = self.access.revision
        if self._rules is None or self._rules[0] != revision:
            subjects = [("user", self.principal.user), *(("role", r) for r in self.principal.roles)]
            rules = frozenset(g.rule for kind, subject in subjects
                              for g in self.access.grants.list(subject, kind=kind) if g.approval is False)
            self._rules = (revision, rules)
        return self._rules[1]


@dataclass(frozen=True)
class ProgramStep:
    """A call made by a provider's program: the audit row's ``detail`` names the program.

    Attributes:
        api: the provider API (``anthropic_messages`` or ``openai_responses``).
        program_id: Anthropic's code-execution ``tool_id`` (``srvtoolu_…``), Responses' program
            ``caller_id``.
        call_id: the provider's id of this tool call.
    """

    api: str
    program_id: str
    call_id: str

    def audit_detail(self) -> str:
        """``program <api>:<program id> call:<call id>``."""
        return f"program {self.api}:{self.program_id} call:{self.call_id}"


class ProgrammaticCalls:
    """The loop's pipeline when the provider's program may call tools (module docstring).

    Args:
        direct: runs direct calls (``run_batch``, ``event_log``), e.g.
            :class:`~host.agent.providers.WithToolSearch`.
        runtime: runs and audits the calls programs made.
        programs: call id → program id of the calls programs made (kept current by
            :class:`~host.agent.providers.ProviderModel` as replies arrive).
        policy: which non-read tools a program may call.
        api: the provider API (for the audit detail).
    """

    def __init__(self, direct: Any, runtime: HostRuntime, programs: Mapping[str, str], policy: ProgrammaticPolicy,
                 *, api: str) -> None:
        self.direct = direct
        self.runtime = runtime
        self.programs = programs
        self.policy = policy
        self.api = api

    @property
    def event_log(self) -> Any:
        return self.direct.event_log

    async def run_batch(self, calls: Sequence[ToolCall], ctx: CallContext) -> list[ToolResult]:
        """One result per call, in call order; direct calls run first, as one batch.

        Program calls keep the loop's ``ctx.deadline`` and ``ctx.cancel`` as direct calls do
        (:mod:`host.pipeline.execute`): one that would start after either is ``not_executed``; one
        running when the switch is pulled ends ``cancelled``, when the deadline passes ``timeout``
        (its effect unknown, its audit row says so)."""
        direct = [c for c in calls if c.call_id not in self.programs]
        ran = iter(await self.direct.run_batch(direct, ctx) if direct else [])
        out: list[ToolResult] = []
        for call in calls:
            program = self.programs.get(call.call_id)
            out.append(next(ran) if program is None else await self._program_call(call, program, ctx))
        return out

    async def _program_call(self, call: ToolCall, program: str, ctx: CallContext) -> ToolResult:
        rt, principal = self.runtime, ctx.principal
        step = ProgramStep(self.api, program, call.call_id)
        arguments = call.arguments if call.arguments is not None else call.raw_arguments
        tool = rt.registry.snapshot().get(call.name)
        refused = tool is not None and rt.is_visible(principal, tool) and not may_call_programmatically(
            tool, allow=self.policy.allows)
        if self.event_log is not None:
            self.event_log.append(ctx.conversation_id, "program_call",
                                  {"call_id": call.call_id, "tool": call.name, "program": program,
                                   "api": self.api, "allowed": not refused}, adapter=ctx.adapter)
        if not refused:
            return await _within_budget(call, ctx, rt.call(
                call.name, arguments, principal, conversation_id=ctx.conversation_id,
                call_id=call.call_id, script_step=step, session_id=ctx.session_id))
        assert tool is not None
        message = (
            f"{call.name} is a {tool.risk.value}-risk tool and may not be called from a program "
            f"({step.audit_detail()}); "
            "call it directly as a tool call, or an admin allows programs to call it with "
            f"`toolhost grants add {principal.user} '{call.name}' --no-approval`"
        )
        result = error_result(call, ResultStatus.PERMISSION_DENIED, message, where="authorize")
        if rt.auditor is not None:
            with contextlib.suppress(AuditUnavailable):  # nothing ran; the row stays queued for the writer
                await rt.auditor.audit_call_async(
                    principal, call.name, arguments, timeout=rt.config.defaults.audit_wait_seconds,
                    status=result.status.value, duration_seconds=0.0, tool=tool,
                    decision=rt.policy.evaluate(principal, tool),
                    detail=f"{step.audit_detail()}; refused: not programmatic",
                )
        return result


async def _within_budget(call: ToolCall, ctx: CallContext, running: Coroutine[Any, Any, ToolResult]) -> ToolResult:
    """``running`` (one program call) bounded by the loop's deadline and cancel switch (run_batch doc)."""
    reason = ctx.cancel.reason if ctx.cancel is not None and ctx.cancel.cancelled else None
    remaining = ctx.remaining_seconds()
    if reason is None and remaining is not None and remaining <= 0:
        reason = "deadline"
    if reason is not None:
        running.close()
        message = ("the conversation's time budget ran out before this call could start" if reason == "deadline"
                   else f"the call was not started ({reason})")
        return error_result(call, ResultStatus.NOT_EXECUTED, message, where="execute", details={"reason": reason})
    result: ToolResult | None = None
    with anyio.move_on_after(math.inf if remaining is None else remaining) as budget:
        async with anyio.create_task_group() as tg:
            if ctx.cancel is not None:
                tg.start_soon(_cancel_when_pulled, ctx.cancel, tg.cancel_scope)
            result = await running
            tg.cancel_scope.cancel()
    if result is not None:
        return result
    if budget.cancelled_caught:
        return error_result(call, ResultStatus.TIMEOUT, "the conversation's time budget ran out while the call ran;"
                            " its effect is unknown", where="execute", details={"reason": "deadline"})
    why = ctx.cancel.reason if ctx.cancel is not None else "cancelled"
    return error_result(call, ResultStatus.CANCELLED, f"the call was cancelled while running ({why}); its effect"
                        " is unknown", where="execute", details={"reason": why})


async def _cancel_when_pulled(cancel: BatchCancel, scope: anyio.CancelScope) -> None:
    await cancel.wait()
    scope.cancel()
