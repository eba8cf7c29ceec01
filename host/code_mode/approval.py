"""Approving a script once for its whole capability manifest.

Before a script runs, the gateway finds the manifest tools that need approval for the caller (the
policy's ``approval`` decision). None: the script runs at once. Some: one approval is asked for the
**whole manifest**, bound to

* the script text (so its sha256: a changed script is another approval),
* the manifest as ``{qualified name: definition hash}`` of every tool it names (a tool whose served
  definition changes after approval no longer matches),

stored as an ordinary approval row (tool :data:`host.code_mode.script_run.SCRIPT_TOOL`, arguments
:attr:`ScriptApprovalRequest.arguments`, ``definition_hash`` :attr:`ScriptApprovalRequest.digest`),
so ``toolhost approvals list``/``approve`` and the console decide it like any other. An approved
script approval runs the script once; its inner calls of the manifest's tools are then covered
(:mod:`host.code_mode.cover`).

Self-approval by elicitation follows the direct-call rule: only when the allow grant deciding
**every** tool that needs approval has self-approval enabled (``toolhost grants self-approval``)
is the caller's own client asked (MCP elicitation, where the connection has it); otherwise the
issuer cannot approve their own script and it waits for an approver.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from registry.policy import Principal
from registry.tool import Risk

__all__ = ["ScriptApprovalRequest", "ScriptApprovals", "ScriptVerdict"]


@dataclass(frozen=True)
class ScriptApprovalRequest:
    """What a script approval is asked for.

    Attributes:
        code: the script text.
        script_sha256: its hex sha256.
        definitions: ``{qualified name: definition hash}`` of every tool of the manifest.
        needs_approval: the manifest tools that need approval for this caller, sorted.
        approval_rules: for each tool of ``needs_approval``, the rule that decided it (an allow
            grant's ``allow:PATTERN@user:NAME``), which says whether self-approval applies.
        risk: the highest risk among ``needs_approval`` (shown when the caller is asked).
    """

    code: str
    script_sha256: str
    definitions: Mapping[str, str]
    needs_approval: tuple[str, ...]
    approval_rules: Mapping[str, str | None] = field(default_factory=dict)
    risk: Risk = Risk.DESTRUCTIVE

    @property
    def arguments(self) -> dict[str, Any]:
        """The approval's (and the script audit row's) arguments: ``{"code", "manifest"}``; an approver
        sees all of it (the approvals table keeps the full text)."""
        return {"code": self.code, "manifest": dict(sorted(self.definitions.items()))}

    @property
    def digest(self) -> str:
        """sha256 hex of the canonical manifest JSON (the approval row's ``definition_hash``)."""
        text = json.dumps(dict(sorted(self.definitions.items())), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def rule(self) -> str:
        """The rule recorded on the approval: ``code_mode:`` + the tools that need approval."""
        return "code_mode:" + ",".join(self.needs_approval)


@dataclass(frozen=True)
class ScriptVerdict:
    """Answer of :class:`ScriptApprovals`: ``approved`` (run now), else pending or ``rejected``.

    Attributes: approved, approval_id, approver (who decided, when approved), reason (for the model),
    rejected (an approver denied it).
    """

    approved: bool
    approval_id: str | None = None
    approver: str | None = None
    reason: str = ""
    rejected: bool = False


@runtime_checkable
class ScriptApprovals(Protocol):
    """Decides script approvals (implemented over the approval store by
    :class:`host.access.script_approvals.ScriptApprovalGate`)."""

    async def check_script(self, principal: Principal, request: ScriptApprovalRequest) -> ScriptVerdict:
        """Use an approved, unused approval of exactly this request, else ask (or report the pending
        or denied one)."""
        ...
