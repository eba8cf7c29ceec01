"""The last check before a call is sent upstream: :class:`SendGate`.

The pipeline asks the gate right before each prepared call goes to its server (after look up,
validation and authorization, and after waiting for earlier calls of the batch). A gate that
answers a :class:`~host.calls.ToolResult` refuses the call: that result is the call's answer and
nothing is sent. Implemented by the audit layer (:class:`host.access.audit_gate.AuditSendGate`:
no audit row, no action).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from host.calls import ToolResult
from host.pipeline.prepare import Prepared

__all__ = ["SendGate"]


@runtime_checkable
class SendGate(Protocol):
    """Decides, per call, whether it may be sent upstream now."""

    async def before_send(self, prep: Prepared) -> ToolResult | None:
        """``None``: send it; a result: the call's answer (it was not sent; say so in
        ``error.details["sent"] = False``)."""
        ...
