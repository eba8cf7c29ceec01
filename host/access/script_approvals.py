"""Script approvals over the approval store: one approval per script run, for its whole manifest.

The row is an ordinary approval (``toolhost approvals list`` shows tool ``execute`` with the script
and its manifest as arguments), decided by the same approvers with :func:`host.access.gate.decide`.
See :mod:`host.code_mode.approval` for what it binds.

Self-approval by elicitation, as for a direct call (:class:`host.access.gate.ApprovalGate`): when the
request has an elicitor (:func:`host.access.approval_elicitation`, set by the gateway for clients
with the ``elicitation`` capability) and the grant deciding every tool that needs approval has
self-approval enabled, the caller is asked once for the whole script (the prompt shows the script
and its manifest with definition hashes); accept + true approves it (decided ``self-elicitation``,
audited) and it runs at once, decline or false denies it, no answer leaves it pending.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import anyio.to_thread

from host.access.gate import current_elicitation, decide
from host.code_mode.approval import ScriptApprovalRequest, ScriptVerdict
from host.code_mode.script_run import SCRIPT_TOOL
from host.store import ApprovalInfo, ApprovalNotPending, NotFound
from host.store.users import self_approval_enabled
from registry.policy import Principal
from registry.tool import Risk, ToolAnnotations, ToolDefinition, ToolRecord, build_record

if TYPE_CHECKING:
    from host.access.control import AccessControl

__all__ = ["ScriptApprovalGate", "script_record"]


def script_record(request: ScriptApprovalRequest) -> ToolRecord:
    """The ``execute`` call as the tool an approval prompt names: risk the highest of the tools needing approval."""
    annotations = ToolAnnotations(read_only_hint=request.risk is Risk.READ,
                                  destructive_hint=request.risk is Risk.DESTRUCTIVE)
    return build_record(server="toolhost", qualified_name=SCRIPT_TOOL,
                        definition=ToolDefinition(name=SCRIPT_TOOL, annotations=annotations,
                                                  description="a code-mode script and its capability manifest"))


class ScriptApprovalGate:
    """:class:`host.code_mode.approval.ScriptApprovals` backed by ``access.approvals``."""

    def __init__(self, access: AccessControl) -> None:
        self.access = access

    async def check_script(self, principal: Principal, request: ScriptApprovalRequest) -> ScriptVerdict:
        approvals = self.access.approvals
        args, digest = request.arguments, request.digest
        used = await anyio.to_thread.run_sync(
            partial(approvals.consume, principal.user, SCRIPT_TOOL, args, definition_hash=digest)
        )
        if used is not None:
            return ScriptVerdict(True, used.id, used.decided_by, f"approved by {used.decided_by}")
        req = await anyio.to_thread.run_sync(
            partial(approvals.request, principal.user, SCRIPT_TOOL, args, key_id=principal.key_id,
                    rule=request.rule, definition_hash=digest)
        )
        if req.status == "denied":
            return ScriptVerdict(False, req.id, req.decided_by, f"approval {req.id} was denied by {req.decided_by}",
                                 rejected=True)
        asked = await self._ask_caller(principal, request, req)
        if asked is not None:
            return asked
        return ScriptVerdict(
            False,
            req.id,
            reason=(
                f"the script names {', '.join(request.needs_approval)}, which need a human's approval: approval "
                f"{req.id} is pending for the whole script; an approver runs `toolhost approvals approve {req.id}`, "
                "then the same script can run once"
            ),
        )

    async def _ask_caller(self, principal: Principal, request: ScriptApprovalRequest,
                          req: ApprovalInfo) -> ScriptVerdict | None:
        """Self-approval by elicitation (module docstring); ``None`` when not asked or not answered."""
        elicit = current_elicitation()
        if elicit is None or not request.needs_approval:
            return None
        rules = [request.approval_rules.get(q) for q in request.needs_approval]
        store = self.access.store
        if not all([await anyio.to_thread.run_sync(self_approval_enabled, store, rule) for rule in rules]):
            return None  # the issuer may not approve their own script: an approver decides
        answer = await elicit(req, script_record(request))
        if answer is None:
            return None
        by = f"{principal.user} (self-approval)"
        try:
            await anyio.to_thread.run_sync(
                partial(decide, self.access, req.id, approve=answer, by=by, how="self-elicitation"))
        except (ApprovalNotPending, NotFound):
            return None  # decided meanwhile: the pending/denied answer of the next ask says what happened
        if not answer:
            return ScriptVerdict(False, req.id, by, "the user declined the script", rejected=True)
        used = await anyio.to_thread.run_sync(
            partial(self.access.approvals.consume, principal.user, SCRIPT_TOOL, request.arguments,
                    definition_hash=request.digest))
        if used is None:
            return None
        return ScriptVerdict(True, used.id, used.decided_by, "approved by the user (self-approval)")
