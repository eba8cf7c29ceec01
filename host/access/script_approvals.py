"""Script approvals over the approval store: one approval per script run, for its whole manifest.

The row is an ordinary approval (``toolhost approvals list`` shows tool ``execute`` with the script
and its manifest as arguments), decided by the same approvers with :func:`host.access.gate.decide`.
See :mod:`host.code_mode.approval` for what it binds.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import anyio.to_thread

from host.code_mode.approval import ScriptApprovalRequest, ScriptVerdict
from host.code_mode.script_run import SCRIPT_TOOL
from registry.policy import Principal

if TYPE_CHECKING:
    from host.access.control import AccessControl

__all__ = ["ScriptApprovalGate"]


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
        return ScriptVerdict(
            False,
            req.id,
            reason=(
                f"the script names {', '.join(request.needs_approval)}, which need a human's approval: approval "
                f"{req.id} is pending for the whole script; an approver runs `toolhost approvals approve {req.id}`, "
                "then the same script can run once"
            ),
        )
