"""Approval through MCP elicitation: the connected user is asked and their answer decides the call."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server import Server, ServerRequestContext
from mcp.types import CallToolRequestParams, CallToolResult, ElicitResult, ListToolsResult, TextContent, Tool

from host.access import AccessControl
from registry.policy import Principal
from registry.tool import ToolAnnotations, ToolDefinition, build_record
from servers.gateway.approval_elicit import approval_elicitation, elicitor_for
from servers.gateway.request_view import RequestView

pytestmark = pytest.mark.anyio

DROP = build_record(
    server="db",
    qualified_name="db__drop_table",
    definition=ToolDefinition(name="drop_table", annotations=ToolAnnotations(destructive_hint=True)),
)


def gate_server(access: AccessControl) -> Server[Any]:
    """A tiny server whose one tool asks the approval gate, with elicitation set per request."""
    gate = access.approval_hook()

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> ListToolsResult:
        return ListToolsResult(tools=[Tool(name="drop", input_schema={"type": "object"})])

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
        with approval_elicitation(elicitor_for(RequestView.of(ctx))):
            out = await gate.check(Principal("eve"), DROP, dict(params.arguments or {}))
        verdict = "approved" if out.approved else ("rejected" if out.rejected else "pending")
        return CallToolResult(content=[TextContent(type="text", text=f"{verdict} {out.approval_id}")])

    return Server("gate", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_user_approves_or_declines_through_elicitation(access: AccessControl) -> None:
    access.users.add("eve")
    access.grants.add("eve", "db__*")
    access.grants.set_self_approval("eve", "db__*")
    answers = [ElicitResult(action="accept", content={"approve": True}), ElicitResult(action="decline")]
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return answers.pop(0)

    with anyio.fail_after(20):
        async with Client(gate_server(access), mode="legacy", elicitation_callback=on_elicit) as c:
            first = await c.call_tool("drop", {"table": "t1", "password": "hunter2"})
            second = await c.call_tool("drop", {"table": "t2"})
    assert first.content[0].text.startswith("approved ap_")
    assert second.content[0].text.startswith("rejected ap_")
    assert "db__drop_table (destructive)" in asked[0] and '"password":"hunter2"' in asked[0]  # the exact call
    assert [(a.status, a.decided_by) for a in access.approvals.list(status="all")] == [
        ("denied", "eve (self-approval)"),
        ("used", "eve (self-approval)"),
    ]


async def test_without_elicitation_support_the_call_stays_pending(access: AccessControl) -> None:
    access.users.add("eve")
    access.grants.add("eve", "db__*")
    with anyio.fail_after(20):
        async with Client(gate_server(access), mode="legacy") as c:  # no elicitation callback
            out = await c.call_tool("drop", {"table": "t1"})
    assert out.content[0].text.startswith("pending ap_")
    assert [a.status for a in access.approvals.list(status="all")] == ["pending"]
