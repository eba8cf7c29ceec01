"""A script's approval covers the inner calls of its manifest: the pipeline asks no one again.

A script whose capability manifest names tools that need approval for the caller asks once for the
whole manifest (:mod:`host.code_mode.approval`). While the approved script runs, each of its inner
calls carries a :class:`ScriptCover` (a context variable set by
:class:`host.code_mode.inner.PipelineInnerCaller` around :meth:`host.runtime.HostRuntime.call`), and
:class:`CoveringApprovals`, the pipeline's approval hook around the gateway's own, answers
"approved" for a tool the cover names **with the same definition hash** for the same caller. Any
other call (another caller, a tool whose definition changed since the approval, no cover) goes to
the wrapped hook, exactly as a direct call does.

A call the session-taint rule holds (the pipeline passes ``reason``) is never covered: the script's
approval was for its manifest, not for the data its calls have seen, so a taint hold is always its
own approval naming the labels and the calls behind them, asked from the wrapped hook.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from host.pipeline.prepare import ApprovalHook, ApprovalOutcome
from registry.policy import Principal
from registry.tool import ToolRecord

__all__ = ["CoveringApprovals", "ScriptCover", "current_cover", "script_cover"]


@dataclass(frozen=True)
class ScriptCover:
    """An approved script's permission to run its manifest's tools.

    Attributes:
        principal: the caller the approval was asked for.
        approval_id: the script approval.
        approver: who decided it.
        definitions: ``{qualified name: definition hash}`` the approval was bound to.
    """

    principal: Principal
    approval_id: str
    approver: str | None
    definitions: Mapping[str, str]

    def covers(self, principal: Principal, tool: ToolRecord) -> bool:
        """True for the same caller and a manifest tool whose served definition is the approved one."""
        return principal == self.principal and self.definitions.get(tool.qualified_name) == tool.definition_hash


_COVER: ContextVar[ScriptCover | None] = ContextVar("toolhost_script_cover", default=None)


@contextmanager
def script_cover(cover: ScriptCover | None) -> Iterator[None]:
    """Within this block, calls covered by ``cover`` are approved (``None``: nothing is)."""
    token = _COVER.set(cover)
    try:
        yield
    finally:
        _COVER.reset(token)


def current_cover() -> ScriptCover | None:
    """The cover of the inner call running in this context, if any."""
    return _COVER.get()


class CoveringApprovals(ApprovalHook):
    """An :class:`host.pipeline.ApprovalHook`: a covered call is approved by its script's approval,
    every other call, and every taint hold, is decided by ``inner`` (see module doc)."""

    def __init__(self, inner: ApprovalHook) -> None:
        self.inner = inner

    async def check(self, principal: Principal, tool: ToolRecord, arguments: dict[str, Any], *,
                    reason: str | None = None) -> ApprovalOutcome:
        """``inner``'s answer, except for a policy approval (``reason is None``) the current
        :class:`ScriptCover` covers: approved by the script's approval."""
        cover = _COVER.get()
        if reason is None and cover is not None and cover.covers(principal, tool):
            return ApprovalOutcome(True, cover.approval_id, f"covered by script approval {cover.approval_id}")
        return await self.inner.check(principal, tool, arguments, reason=reason)
