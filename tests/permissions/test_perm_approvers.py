"""Approvals decided by approvers, not the caller (the caller's own client answering "accept" is not an approval).

A real runtime over the example orders server, audited by the permission store: the caller's own
elicitation never approves unless an admin enabled self-approval on the grant; an approver (role
``approver``, not the caller) decides through the CLI path; every decision and every call is an
audit row naming who approved; a definition change voids pending approvals.
"""

from __future__ import annotations

import sys
from contextlib import asynccontextmanager

import anyio
import pytest

from host.access import AccessControl, NotAnApprover, approval_elicitation, decide
from host.calls import ResultStatus
from host.config import parse_config
from host.runtime import HostRuntime
from registry.policy import Principal
from registry.tool import ToolDefinition, build_record

pytestmark = pytest.mark.anyio

ARGS = {"order_id": "A1002", "reason": "duplicate"}


@asynccontextmanager
async def runtime(tmp_path, access: AccessControl):
    cfg = parse_config(
        {"mcpServers": {"orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]}}},
        data_dir=tmp_path,
    )
    async with HostRuntime(cfg, data_dir=tmp_path, policy=access, approvals=access.approval_hook(),
                           auditor=access) as rt:
        access.watch(rt.registry)
        yield rt


def _asker(answers: list[bool], asked: list[str]):
    async def elicit(approval, tool):
        asked.append(approval.id)
        return answers.pop(0)

    return elicit


async def test_self_approval_is_refused_by_default_and_audited_when_enabled(tmp_path, access: AccessControl):
    access.users.add("eve")
    access.grants.add("eve", "orders__*")
    eve = Principal("eve", key_id="k1")
    asked: list[str] = []
    with anyio.fail_after(60):
        async with runtime(tmp_path, access) as rt:
            with approval_elicitation(_asker([True, True], asked)):
                first = await rt.call("orders__cancel_order", ARGS, eve)
            assert (first.status, asked) == (ResultStatus.APPROVAL_REQUIRED, [])  # the caller was not asked
            assert "an approver runs `toolhost approvals approve" in first.error.message
            access.grants.set_self_approval("eve", "orders__*")
            with approval_elicitation(_asker([True], asked)):
                second = await rt.call("orders__cancel_order", ARGS, eve)
    assert second.status is ResultStatus.OK and asked == [first.error.approval_id]
    [decision] = access.audit_log.query(action="approval")
    assert (decision.user, decision.approver, decision.status, decision.approval_id) == (
        "eve", "eve (self-approval)", "approved", first.error.approval_id
    )
    assert decision.detail == "self-elicitation: approved by eve (self-approval)"
    calls = access.audit_log.query(action="call")
    assert [(c.status, c.approver, c.approval_id) for c in calls] == [
        ("ok", "eve (self-approval)", first.error.approval_id),
        ("approval_required", None, first.error.approval_id),  # the row names the approval the caller got
    ]
    assert calls[0].definition_hash == decision.definition_hash and len(calls[0].definition_hash) == 64
    assert calls[0].arguments_digest == decision.arguments_digest
    assert access.audit_log.verify()[1] is None


async def test_only_an_approver_other_than_the_caller_decides(tmp_path, access: AccessControl):
    for name in ("eve", "bob", "carol"):
        access.users.add(name)
    access.roles.add("approver")
    access.users.assign_role("carol", "approver")
    access.users.assign_role("eve", "approver")  # an approver still cannot approve their own call
    access.grants.add("eve", "orders__*")
    eve = Principal("eve", roles=("approver",))
    with anyio.fail_after(60):
        async with runtime(tmp_path, access) as rt:
            pending = await rt.call("orders__cancel_order", ARGS, eve)
            ap = pending.error.approval_id
            with pytest.raises(NotAnApprover, match=r"bob may not decide approval .*: not in role 'approver'"):
                decide(access, ap, approve=True, by="bob", how="cli", approver_user="bob")
            with pytest.raises(NotAnApprover, match="it is their own call; another approver must decide"):
                decide(access, ap, approve=True, by="eve", how="cli", approver_user="eve")
            assert access.approvals.get(ap).status == "pending"
            decide(access, ap, approve=True, by="carol", how="cli", approver_user="carol")
            ran = await rt.call("orders__cancel_order", ARGS, eve)
            again = await rt.call("orders__cancel_order", ARGS, eve)  # an approval runs one call
    assert ran.status is ResultStatus.OK and again.status is ResultStatus.APPROVAL_REQUIRED
    [decision] = access.audit_log.query(action="approval")
    assert (decision.approver, decision.detail) == ("carol", "cli: approved by carol")
    assert [(c.status, c.approver) for c in access.audit_log.query(action="call")] == [
        ("approval_required", None), ("ok", "carol"), ("approval_required", None)
    ]


async def test_a_definition_change_voids_pending_approvals(access: AccessControl):
    access.users.add("eve")
    access.grants.add("eve", "orders__*")
    v1 = build_record(server="orders", qualified_name="orders__cancel_order",
                      definition=ToolDefinition(name="cancel_order", description="v1"))
    v2 = build_record(server="orders", qualified_name="orders__cancel_order",
                      definition=ToolDefinition(name="cancel_order", description="v2: also refunds"))
    access.observe("orders", [v1])
    req = access.approvals.request("eve", v1.qualified_name, ARGS, definition_hash=v1.definition_hash)
    access.approvals.approve(req.id, by="carol")
    access.observe("orders", [v2])
    assert access.approvals.get(req.id).status == "expired"
    assert access.approvals.consume("eve", v1.qualified_name, ARGS, definition_hash=v1.definition_hash) is None
    [row] = access.audit_log.query(action="approval")
    assert row.detail == f"approval {req.id} voided: the served definition changed"
