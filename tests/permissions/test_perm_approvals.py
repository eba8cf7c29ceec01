"""The approval hook (AccessControl.approval_hook) inside the pipeline's real authorize stage."""

from __future__ import annotations

import anyio
import pytest

from host.access import AccessControl
from host.calls import ResultStatus, ToolCall, ToolResult
from host.pipeline.prepare import ApprovalHook, Prepared, ValidatorCache, prepare_call
from registry.policy import Principal
from registry.store import ToolRegistry
from registry.tool import ToolAnnotations, ToolDefinition, build_record

pytestmark = pytest.mark.anyio

CANCEL = build_record(
    server="orders",
    qualified_name="orders__cancel_order",
    definition=ToolDefinition(
        name="cancel_order",
        input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        annotations=ToolAnnotations(destructive_hint=True),
    ),
)


async def prepare(access: AccessControl, principal: Principal, order_id: str, hook: ApprovalHook | None = None):
    reg = ToolRegistry()
    reg.replace_server("orders", [CANCEL])
    call = ToolCall(call_id="c1", name="orders__cancel_order", arguments={"order_id": order_id})
    with anyio.fail_after(10):
        return await prepare_call(
            call,
            snapshot=reg.snapshot(),
            policy=access.policy(),
            principal=principal,
            validators=ValidatorCache(),
            approvals=hook or access.approval_hook(),
            suggest=reg.suggest,
        )


async def test_destructive_call_waits_for_approval_then_runs_once(access: AccessControl) -> None:
    access.users.add("bob")
    access.grants.add("bob", "orders__*")  # destructive → approval by default
    bob = Principal("bob", key_id="k1")
    assert isinstance(access.approval_hook(), ApprovalHook)

    first = await prepare(access, bob, "A1")
    assert isinstance(first, ToolResult) and first.status is ResultStatus.APPROVAL_REQUIRED
    approval_id = first.error.approval_id
    assert (
        approval_id
        and approval_id.startswith("ap_")
        and f"toolhost approvals approve {approval_id}" in first.error.message
    )
    again = await prepare(access, bob, "A1")
    assert again.error.approval_id == approval_id  # the same call reuses its pending request
    [pending] = access.approvals.list(status="pending")
    assert (pending.user, pending.key_id, pending.tool, pending.rule) == (
        "bob",
        "k1",
        "orders__cancel_order",
        "allow:orders__*@user:bob",
    )

    access.approvals.approve(approval_id, by="admin")
    other_args = await prepare(access, bob, "A2")
    assert other_args.status is ResultStatus.APPROVAL_REQUIRED and other_args.error.approval_id != approval_id
    ran = await prepare(access, bob, "A1")
    assert isinstance(ran, Prepared) and ran.arguments == {"order_id": "A1"}
    once = await prepare(access, bob, "A1")
    assert isinstance(once, ToolResult) and once.status is ResultStatus.APPROVAL_REQUIRED  # used up

    denied_id = once.error.approval_id
    access.approvals.deny(denied_id)
    refused = await prepare(access, bob, "A1")
    assert refused.status is ResultStatus.PERMISSION_DENIED and refused.error.approval_id == denied_id


async def test_grant_without_approval_and_elicitation(access: AccessControl) -> None:
    access.users.add("ops")
    access.grants.add("ops", "orders__cancel_order", approval=False)
    assert isinstance(await prepare(access, Principal("ops"), "A1"), Prepared)

    access.users.add("eve")
    access.grants.add("eve", "orders__*")
    asked: list[str] = []

    async def yes(approval, tool):
        asked.append(tool.qualified_name)
        return True

    # the caller's own client is not asked unless an admin enabled self-approval
    pending = await prepare(access, Principal("eve"), "A7", access.approval_hook(elicit=yes))
    assert pending.status is ResultStatus.APPROVAL_REQUIRED and asked == []
    access.grants.set_self_approval("eve", "orders__*")

    async def no(approval, tool):
        return False

    ran = await prepare(access, Principal("eve"), "A7", access.approval_hook(elicit=yes))
    assert isinstance(ran, Prepared) and asked == ["orders__cancel_order"]
    [used] = access.approvals.list(status="used")
    assert used.decided_by == "eve (self-approval)"
    refused = await prepare(access, Principal("eve"), "A8", access.approval_hook(elicit=no))
    assert refused.status is ResultStatus.PERMISSION_DENIED


async def test_no_grant_is_unknown_not_approval(access: AccessControl) -> None:
    access.users.add("zed")
    res = await prepare(access, Principal("zed"), "A1")
    assert res.status is ResultStatus.UNKNOWN_TOOL and access.approvals.list(status="all") == []
