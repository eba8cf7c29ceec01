"""The meta tool's result for each kind of script outcome."""

from __future__ import annotations

from host.calls import ResultStatus
from host.code_mode import InnerCallRecord, ScriptOutcome, outcome_result

CALLS = (InnerCallRecord(0, "orders__list", "ok", 0.01), InnerCallRecord(1, "orders__cancel", "approval_required", 0.0))


def test_ok_outcome_gives_structured_result_and_json_text():
    r = outcome_result("c1", "run_script", ScriptOutcome("ok", "ab" * 32, value={"n": 2}, printed="hi\n", calls=CALLS))
    assert r.status is ResultStatus.OK
    assert r.structured == {"result": {"n": 2}, "printed": "hi\n", "calls": 2}
    assert r.text == '{"result": {"n": 2}, "printed": "hi\\n", "calls": 2}'
    assert r.error is None


def test_error_outcomes_map_to_statuses_with_where_and_details():
    limit = outcome_result(
        "c2",
        "run_script",
        ScriptOutcome(
            "limit_exceeded",
            "cd" * 32,
            limit="memory",
            where="code_mode.limit",
            message="MemoryError: too big",
            calls=CALLS,
        ),
    )
    assert (limit.status, limit.error.where, limit.text) == (
        ResultStatus.TOOL_ERROR,
        "code_mode.limit",
        "tool_error: MemoryError: too big",
    )
    assert limit.error.details == {
        "script_sha256": "cd" * 32,
        "calls": 2,
        "limit": "memory",
        "call_statuses": {"approval_required": 1, "ok": 1},
    }
    busy = outcome_result("c3", "run_script", ScriptOutcome("busy", "ef" * 32, where="code_mode.pool", message="retry"))
    assert (busy.status, busy.error.retry_after_seconds) == (ResultStatus.RATE_LIMITED, 1.0)
    crashed = outcome_result(
        "c4", "run_script", ScriptOutcome("crashed", "00" * 32, where="code_mode.sandbox", message="x")
    )
    assert (crashed.status, crashed.error.details["retryable"]) == (ResultStatus.UPSTREAM_ERROR, True)
    rejected = outcome_result(
        "c5", "run_script", ScriptOutcome("rejected", "11" * 32, where="code_mode.manifest", message="m")
    )
    assert rejected.status is ResultStatus.INVALID_ARGUMENTS
