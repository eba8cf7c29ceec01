"""Asking the connected user to approve a call through MCP elicitation (form mode).

:func:`elicitor_for` returns an :data:`host.access.ElicitApproval` for the current request when
the client declared the ``elicitation`` capability, else ``None`` (the call then stays pending
until ``toolhost approvals approve ID``). The user sees the tool, its risk and the redacted
arguments (complete up to :data:`ELICIT_MAX_ARGUMENT_CHARS`, else shortened with a warning; see
:func:`approval_message`) and answers with one boolean; ``accept`` + true approves, ``decline`` or false denies,
``cancel`` or any failure (no back channel on 2026-07-28 stateless connections, timeout) leaves
the approval pending. Source: MCP spec, client features, Elicitation (``elicitation/create``).

Wiring in a request handler (e.g. the registry server's ``call_tool``)::

    with approval_elicitation(elicitor_for(RequestView.of(ctx))):
        result = await runtime.call(...)
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.types import ClientCapabilities, ElicitationCapability

from host.access import ElicitApproval, approval_elicitation
from host.store import ApprovalInfo
from registry.tool import ToolRecord
from servers.gateway.request_view import RequestView

__all__ = [
    "ELICIT_MAX_ARGUMENT_CHARS",
    "ELICIT_TIMEOUT_SECONDS",
    "approval_elicitation",
    "approval_message",
    "elicitor_for",
]

ELICIT_TIMEOUT_SECONDS = 120.0
"""How long to wait for the user's answer before leaving the approval pending (seconds)."""

ELICIT_MAX_ARGUMENT_CHARS = 2000
"""Longest arguments text put in the prompt (characters); longer ones are shortened and the prompt says so."""


def approval_message(
    approval: ApprovalInfo, tool: ToolRecord, *, max_argument_chars: int = ELICIT_MAX_ARGUMENT_CHARS
) -> str:
    """The question shown to the user: tool, risk, the call's exact arguments (the caller's own, nothing
    masked) when they fit in ``max_argument_chars``, else their first ``max_argument_chars`` characters
    and an explicit warning that they were shortened (the approval covers the full arguments, which
    ``toolhost approvals show ID --reveal`` prints)."""
    args = approval.arguments_json if approval.arguments_json is not None else approval.arguments_redacted
    if len(args) <= max_argument_chars:
        shown, note = args, ""
    else:
        shown = args[:max_argument_chars] + "…"
        note = (
            f" WARNING: the arguments were shortened for this prompt ({max_argument_chars} of {len(args)} "
            "characters shown); approving covers the full arguments, which an admin can read with "
            f"`toolhost approvals show {approval.id}`. Decline if you cannot check them."
        )
    return (
        f"Allow {tool.qualified_name} ({tool.risk.value}) to run once with arguments {shown}?{note} "
        f"Approval id {approval.id}."
    )

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Run this call once?", "default": False}},
    "required": ["approve"],
}


def elicitor_for(request: RequestView, *, timeout_seconds: float = ELICIT_TIMEOUT_SECONDS) -> ElicitApproval | None:
    """An elicitation-based approver for ``request``, or ``None`` (no session, or the client did not
    declare ``elicitation``)."""
    session = request.session
    if session is None:
        return None
    try:
        supported = session.check_client_capability(ClientCapabilities(elicitation=ElicitationCapability()))
    except Exception:  # noqa: BLE001 - a session that cannot tell does not get asked
        return None
    if not supported:
        return None

    async def ask(approval: ApprovalInfo, tool: ToolRecord) -> bool | None:
        message = approval_message(approval, tool)
        try:
            with anyio.fail_after(timeout_seconds):
                result = await session.elicit_form(message, _SCHEMA, related_request_id=request.request_id)
        except Exception:  # noqa: BLE001 - no back channel / timeout / client error: stay pending
            return None
        if result.action == "accept":
            return (result.content or {}).get("approve") is True
        if result.action == "decline":
            return False
        return None

    return ask
