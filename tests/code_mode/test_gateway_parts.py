"""The gateway side of code mode without a sandbox: the config block, audit details, the approval cover."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from host.access.gate import approval_elicitation, current_elicitation
from host.code_mode import (
    SCRIPT_TOOL,
    CoveringApprovals,
    InnerStep,
    PoolConfig,
    ScriptApprovalRequest,
    ScriptCover,
    ScriptLimits,
    ScriptRun,
    parse_inner_detail,
    script_cover,
)
from host.config import parse_config
from host.errors import ConfigError
from host.pipeline import ApprovalHook, ApprovalOutcome
from registry import Principal, Risk, ToolRecord

pytestmark = pytest.mark.anyio


def _record(name: str = "orders__cancel_order", digest: str = "a" * 64) -> ToolRecord:
    return ToolRecord(qualified_name=name, server="orders", original_name=name.split("__")[1], input_schema={},
                      risk=Risk.DESTRUCTIVE, open_world=False, timeout_seconds=5, max_output_chars=100,
                      concurrency_safe=False, idempotent=True, definition_hash=digest)


def test_the_code_mode_block_is_off_by_default_and_parsed_into_pool_and_limits():
    assert parse_config({"mcpServers": {}}).defaults.code_mode.to_config().enabled is False
    block = {"enabled": True, "pool": {"min_workers": 0, "max_workers": 3}, "limits": {"cpu_seconds": 2.5,
                                                                                      "max_inner_calls": 7}}
    cfg = parse_config({"mcpServers": {}, "toolhost": {"code_mode": block}}).defaults.code_mode.to_config()
    assert cfg.enabled is True
    assert cfg.pool == PoolConfig(min_workers=0, max_workers=3)
    assert cfg.limits == ScriptLimits(cpu_seconds=2.5, max_inner_calls=7)
    off = parse_config({"mcpServers": {}, "toolhost": {"code_mode": block}}).defaults.code_mode
    assert off.to_config(enabled=False).enabled is False


def test_an_invalid_code_mode_value_is_a_config_error_naming_the_key():
    with pytest.raises(ConfigError) as err:
        parse_config({"mcpServers": {}, "toolhost": {"code_mode": {"limits": {"cpu_seconds": 0}}}})
    assert "code_mode" in str(err.value)


@pytest.mark.parametrize(("block", "warning"), [
    ({"pool": {"max_wrokers": 2}}, "toolhost.code_mode.pool.max_wrokers: unknown key, ignored (did you mean "
                                   "'max_workers'?)"),
    ({"enabeld": True}, "toolhost.code_mode.enabeld: unknown key, ignored (did you mean 'enabled'?)"),
])
def test_an_unknown_code_mode_key_is_a_warning_with_its_path_and_a_suggestion(block, warning):
    assert parse_config({"mcpServers": {}, "toolhost": {"code_mode": block}}).warnings == [warning]


def test_audit_details_name_the_script_and_step_and_fit_the_audit_column():
    sha = hashlib.sha256(b"x = 1").hexdigest()
    run = ScriptRun.new(sha, "call_0123456789ab")
    step = InnerStep(run, 12)
    detail = step.audit_detail()
    assert detail == f"script {run.script_id} sha256:{sha} parent:call_0123456789ab step:12"
    assert len(detail) < 200 and step.call_id == "call_0123456789ab.12"
    assert parse_inner_detail(detail) == {"script_id": run.script_id, "sha256": sha, "parent": "call_0123456789ab",
                                          "step": 12}
    own = run.audit_detail(outcome="ok", statuses=["ok", "ok", "tool_error"], tools=2)
    assert own.endswith("parent:call_0123456789ab tools:2 calls:3 (ok=2,tool_error=1) outcome:ok")
    assert parse_inner_detail(own) == {"script_id": run.script_id, "sha256": sha, "parent": "call_0123456789ab"}
    assert parse_inner_detail("rate limit reached") is None
    assert ScriptRun.new(sha).script_id != run.script_id


def test_a_script_approval_binds_the_script_and_every_definition_hash():
    one = ScriptApprovalRequest("x", "s", {"b__t": "2" * 64, "a__t": "1" * 64}, ("b__t",))
    assert one.arguments == {"code": "x", "manifest": {"a__t": "1" * 64, "b__t": "2" * 64}}
    assert one.rule == "code_mode:b__t"
    changed = ScriptApprovalRequest("x", "s", {"b__t": "3" * 64, "a__t": "1" * 64}, ("b__t",))
    assert one.digest != changed.digest and len(one.digest) == 64


class _Asked(ApprovalHook):
    def __init__(self) -> None:
        self.asked: list[str] = []
        self.reasons: list[str | None] = []

    async def check(self, principal: Principal, tool: ToolRecord, arguments: dict[str, Any], *,
                    reason: str | None = None) -> ApprovalOutcome:
        self.asked.append(tool.qualified_name)
        self.reasons.append(reason)
        return ApprovalOutcome(False, "ap_direct", "pending")


async def test_the_cover_approves_only_its_caller_and_the_approved_definitions():
    inner = _Asked()
    hook = CoveringApprovals(inner)
    alice, bob = Principal(user="alice"), Principal(user="bob")
    cover = ScriptCover(alice, "ap_script", "root", {"orders__cancel_order": "a" * 64})
    assert (await hook.check(alice, _record(), {})).approved is False  # no script running: asked
    with script_cover(cover):
        covered = await hook.check(alice, _record(), {"order_id": "A1"})
        other_user = await hook.check(bob, _record(), {})
        changed = await hook.check(alice, _record(digest="b" * 64), {})
        other_tool = await hook.check(alice, _record("orders__refund"), {})
    assert (covered.approved, covered.approval_id) == (True, "ap_script")
    assert [o.approved for o in (other_user, changed, other_tool)] == [False, False, False]
    assert inner.asked == ["orders__cancel_order"] * 3 + ["orders__refund"]
    assert SCRIPT_TOOL == "execute"


async def test_the_cover_never_approves_a_taint_hold():
    """A call the session-taint rule holds asks its own approval, with its reasons, even inside the
    approved script and for a tool the script's approval covers."""
    inner = _Asked()
    hook = CoveringApprovals(inner)
    alice = Principal(user="alice")
    with script_cover(ScriptCover(alice, "ap_script", "root", {"orders__cancel_order": "a" * 64})):
        held = await hook.check(alice, _record(), {}, reason="taint: Private data came from #1")
    assert (held.approved, held.approval_id) == (False, "ap_direct")
    assert (inner.asked, inner.reasons) == (["orders__cancel_order"], ["taint: Private data came from #1"])


def test_the_current_requests_elicitation_is_read_through_the_gate_s_accessor():
    async def elicit(approval, tool):
        return True

    assert current_elicitation() is None
    with approval_elicitation(elicit):
        assert current_elicitation() is elicit
    assert current_elicitation() is None
