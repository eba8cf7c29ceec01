"""Look-up and authorization: unknown names, denied answers like unknown, approval."""

from __future__ import annotations

import anyio
import pytest

from host.calls import ResultStatus, ToolCall
from host.pipeline import ApprovalOutcome, CallContext
from registry import Risk
from registry.policy import PatternPolicy, Principal
from servers.examples import orders

from .conftest import connect


@pytest.mark.anyio
async def test_br16_unknown_tool_gets_suggestions_and_the_loop_goes_on(host):
    with anyio.fail_after(5):
        results = await host.pipeline.run_batch(
            [ToolCall(call_id="u", name="orders__get_ordr", raw_arguments='{"order_id":"A1001"}'),
             ToolCall(call_id="k", name="orders__get_order", raw_arguments='{"order_id":"A1001"}', index=1)],
            host.ctx())
    unknown, known = results
    assert unknown.status is ResultStatus.UNKNOWN_TOOL and unknown.error.where == "lookup"
    assert unknown.error.details["suggestions"][0] == "orders__get_order"
    assert "Did you mean: orders__get_order" in unknown.text and "tool_search" in unknown.text
    assert known.status is ResultStatus.OK and known.structured["status"] == "pending"


@pytest.mark.anyio
async def test_br16_bare_tool_name_suggests_the_qualified_one(host):
    res = await host.pipeline.call("occcra_information", {}, host.ctx())
    assert res.status is ResultStatus.UNKNOWN_TOOL and res.error.details["suggestions"] == []
    res = await host.pipeline.call("cancel_order", {}, host.ctx())
    assert "orders__cancel_order" in res.error.details["suggestions"]


@pytest.mark.anyio
async def test_br26_a_denied_tool_answers_exactly_like_a_missing_one(tmp_path):
    deny = PatternPolicy(allow=("orders__get_order",))  # only get_order is granted
    async with connect({"orders": orders.create_server()}, tmp_path / "a", policy=deny) as h:
        denied = await h.pipeline.call("orders__cancel_order", {"order_id": "A1001"}, h.ctx(), call_id="c")
        assert h.executor.calls == []  # nothing reached the server
    # The same name on a host where that tool does not exist at all:
    async with connect({"orders": orders.create_server()}, tmp_path / "b", policy=deny) as h2:
        h2.registry.replace_server("orders", [r for r in h2.registry.by_server("orders")
                                              if r.original_name != "cancel_order"])
        missing = await h2.pipeline.call("orders__cancel_order", {"order_id": "A1001"}, h2.ctx(), call_id="c")
    assert denied.status is ResultStatus.UNKNOWN_TOOL
    assert denied.model_dump() == missing.model_dump()
    assert "cancel_order" not in str(denied.error.details["suggestions"])


@pytest.mark.anyio
async def test_denied_tool_with_bad_arguments_still_looks_unknown(tmp_path):
    async with connect(
        {"orders": orders.create_server()}, tmp_path, policy=PatternPolicy(deny=("orders__cancel*",))
    ) as h:
        res = await h.pipeline.call("orders__cancel_order", "not json", h.ctx())
    assert res.status is ResultStatus.UNKNOWN_TOOL


@pytest.mark.anyio
async def test_max_risk_denies_destructive_tools(tmp_path):
    async with connect({"orders": orders.create_server()}, tmp_path, policy=PatternPolicy(max_risk=Risk.READ)) as h:
        res = await h.pipeline.call("orders__cancel_order", {"order_id": "A1001"}, h.ctx())
        ok = await h.pipeline.call("orders__get_order", {"order_id": "A1001"}, h.ctx())
    assert (res.status, ok.status) == (ResultStatus.UNKNOWN_TOOL, ResultStatus.OK)


class Approvals:
    def __init__(self, outcome):
        self.outcome = outcome
        self.asked = []

    async def check(self, principal, tool, arguments):
        self.asked.append((principal.user, tool.qualified_name, arguments))
        return self.outcome


APPROVE_DESTRUCTIVE = PatternPolicy(approval_risk=Risk.DESTRUCTIVE)


@pytest.mark.anyio
async def test_approval_without_hook_is_approval_required_with_reason(tmp_path):
    async with connect({"orders": orders.create_server()}, tmp_path, policy=APPROVE_DESTRUCTIVE) as h:
        res = await h.pipeline.call("orders__cancel_order", {"order_id": "A1001"}, h.ctx())
        assert h.executor.calls == []
    assert res.status is ResultStatus.APPROVAL_REQUIRED and res.error.where == "authorize"
    assert "risk destructive needs approval" in res.error.message


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("outcome", "status", "executed"),
    [
        (ApprovalOutcome(approved=True), ResultStatus.OK, True),
        (
            ApprovalOutcome(approved=False, approval_id="ap-7", reason="waiting for alice"),
            ResultStatus.APPROVAL_REQUIRED,
            False,
        ),
        (ApprovalOutcome(approved=False, rejected=True, reason="alice said no"), ResultStatus.PERMISSION_DENIED, False),
    ],
)
async def test_approval_hook_decides(tmp_path, outcome, status, executed):
    hook = Approvals(outcome)
    async with connect({"orders": orders.create_server()}, tmp_path, policy=APPROVE_DESTRUCTIVE, approvals=hook) as h:
        ctx = CallContext(principal=Principal(user="bob"))
        res = await h.pipeline.call("orders__cancel_order", {"order_id": "A1001"}, ctx)
        assert bool(h.executor.calls) is executed
    assert res.status is status
    assert hook.asked == [
        (
            "bob",
            "orders__cancel_order",
            {
                "order_id": "A1001",
            },
        )
    ]
    if status is ResultStatus.APPROVAL_REQUIRED:
        assert res.error.approval_id == "ap-7" and "waiting for alice" in res.text
