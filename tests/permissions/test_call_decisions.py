"""One policy decision per forwarded call (:mod:`host.access.call_scope`): the authorize
stage, the rate limit and the audit row share it, and the next call decides afresh, so a grant
revoked mid-session denies the very next call."""

from __future__ import annotations

import sys

import anyio
import pytest

from host.access import AccessControl, CallScopedPolicy, call_scope
from host.calls import ResultStatus
from host.config import parse_config
from host.limits import RateLimitConfig, RateLimiter, RateRule
from host.runtime import HostRuntime
from registry.policy import Decision, Principal, PurePolicy
from registry.tool import ToolRecord

from tests.permissions.conftest import make_record


class CountingPolicy(PurePolicy):
    """``access`` as the policy, counting evaluations; ``revoke_after_next`` removes alice's grant
    right after the next evaluation (a grant changed while that call runs)."""

    def __init__(self, access: AccessControl) -> None:
        self.access = access
        self.evaluations = 0
        self.revoke_after_next = False

    def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
        self.evaluations += 1
        decision = self.access.evaluate(principal, tool)
        if self.revoke_after_next:
            self.revoke_after_next = False
            self.access.grants.remove("alice", "orders__get_order")
        return decision


@pytest.mark.anyio
async def test_one_evaluation_per_call_and_a_revoked_grant_denies_the_next_call(tmp_path, access: AccessControl):
    access.users.add("alice")
    access.grants.add("alice", "orders__get_order")
    cfg = parse_config(
        {"mcpServers": {"orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]}}},
        data_dir=tmp_path,
    )
    policy = CountingPolicy(access)
    limiter = RateLimiter(access.store, RateLimitConfig(per_tool=RateRule(calls=100, per_seconds=60)))
    alice = Principal("alice")
    args = {"order_id": "A1001"}
    with anyio.fail_after(60):
        async with HostRuntime(cfg, data_dir=tmp_path, policy=policy, auditor=access, limiter=limiter) as rt:
            first = await rt.call("orders__get_order", args, alice)
            after_first = policy.evaluations
            policy.revoke_after_next = True  # revoked once the second call was authorized
            second = await rt.call("orders__get_order", args, alice)
            after_second = policy.evaluations
            third = await rt.call("orders__get_order", args, alice)
    assert (after_first, after_second) == (1, 2)  # rate limit + authorize + audit row: one evaluation
    assert [r.status for r in (first, second, third)] == [ResultStatus.OK, ResultStatus.OK, ResultStatus.UNKNOWN_TOOL]
    rows = access.audit_log.query(action="call", user="alice")  # newest first
    assert [(r.status, r.decision) for r in rows] == [("unknown_tool", "deny"), ("ok", "allow"), ("ok", "allow")]
    assert rows[1].rule == rows[2].rule != rows[0].rule  # the second row: the grant that let it run


def test_decisions_are_remembered_only_inside_a_scope_and_per_definition() -> None:
    calls: list[str] = []

    class Inner(PurePolicy):
        def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
            calls.append(tool.definition_hash)
            if principal.user == "broken":
                raise RuntimeError("database is locked")
            from registry.policy import Effect  # noqa: PLC0415

            return Decision(Effect.ALLOW, "ok", "test")

    policy = CallScopedPolicy(Inner())
    a, changed = make_record("s__t"), make_record("s__t", description="changed")
    alice = Principal("alice")
    policy.evaluate(alice, a)
    policy.evaluate(alice, a)
    assert len(calls) == 2  # outside a scope: every evaluation asks
    with call_scope():
        first = policy.evaluate(alice, a)
        assert policy.evaluate(alice, a) is first and len(calls) == 3
        policy.evaluate(alice, changed)  # another definition of the same name: asked again
        policy.evaluate(Principal("bob"), a)  # another caller: asked again
        assert len(calls) == 5
        for _ in range(2):
            with pytest.raises(RuntimeError):
                policy.evaluate(Principal("broken"), a)  # a failure is not remembered
        assert len(calls) == 7
    with call_scope():
        policy.evaluate(alice, a)  # a new call decides afresh
    assert len(calls) == 8
