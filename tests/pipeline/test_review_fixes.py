"""Defects found in review: ReDoS via schema patterns, broken $refs, deep nesting, secrets in violations."""

from __future__ import annotations

import pytest

from registry.validation import compile_validator, validate_arguments
from registry.policy import PurePolicy


@pytest.mark.timeout(10)  # stdlib re needs hours for this input
def test_backtracking_schema_pattern_is_bounded():
    v = compile_validator({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|aa)+$"}}})
    out = validate_arguments(v, {"s": "a" * 60 + "b"})
    assert [x.keyword for x in out.violations] == ["pattern"]


def test_patterns_still_match_and_reject():
    v = compile_validator({"type": "object", "properties": {"id": {"type": "string", "pattern": "^A[0-9]{4}$"}},
                           "patternProperties": {"^x-": {"type": "integer"}}})
    assert validate_arguments(v, {"id": "A1001", "x-n": 1}).ok
    bad = validate_arguments(v, {"id": "B1", "x-n": "one"})
    assert sorted(x.path for x in bad.violations) == ["$.id", "$[\"x-n\"]"]


def test_dangling_ref_is_a_schema_problem_not_an_exception():
    v = compile_validator({"type": "object", "properties": {"q": {"$ref": "#/$defs/missing"}}})
    out = validate_arguments(v, {"q": 1})
    assert out.ok and out.schema_problem.startswith("the tool's inputSchema cannot be applied:")


def test_deeply_nested_arguments_are_a_violation():
    v = compile_validator({"type": "object", "properties": {"a": {"$ref": "#"}}})
    deep: dict = {}
    cur = deep
    for _ in range(5000):
        cur["a"] = {}
        cur = cur["a"]
    out = validate_arguments(v, deep)
    assert [(x.path, x.keyword) for x in out.violations] == [("$", "depth")]


@pytest.mark.parametrize("key", ["password", "api_key", "clientSecret", "access_token"])
def test_secret_values_never_appear_in_violations_or_coercions(key):
    v = compile_validator({"type": "object", "properties": {key: {"type": "integer", "maxLength": 3},
                                                            "n": {"type": "integer"}},
                           "additionalProperties": False})
    out = validate_arguments(v, {key: "hunter2", "n": "5", "extra_token": "tok-abcdef"})
    text = repr(out.violations)
    assert "hunter2" not in text and "tok-abcdef" not in text
    good = validate_arguments(v, {key: "987654321", "n": "5"})
    assert good.ok and "987654321" not in repr(good.coercions)
    assert [(c.path, c.given, c.value) for c in good.coercions if c.path == "$.n"] == [("$.n", "5", 5)]


class _BrokenPolicy(PurePolicy):
    def evaluate(self, principal, tool):
        raise RuntimeError("permission database is locked")


@pytest.mark.anyio
async def test_a_failing_policy_denies_that_call_and_the_batch_still_pairs(host):
    import anyio

    from host.calls import ResultStatus, ToolCall

    host.pipeline.policy = _BrokenPolicy()
    calls = [ToolCall(call_id="a", name="flaky__stats", raw_arguments="{}"),
             ToolCall(call_id="b", name="nope__x", raw_arguments="{}", index=1)]
    with anyio.fail_after(10):
        results = await host.pipeline.run_batch(calls, host.ctx())
    assert [(r.call_id, r.status) for r in results] == [("a", ResultStatus.PERMISSION_DENIED),
                                                          ("b", ResultStatus.PERMISSION_DENIED)]
    assert "could not be authorized right now (RuntimeError)" in results[0].text


@pytest.mark.anyio
async def test_a_failing_result_callback_costs_no_other_call_its_result(host):
    import anyio

    from host.calls import ResultStatus, ToolCall
    from host.pipeline import CallContext

    async def boom(_res):
        raise RuntimeError("UI went away")

    calls = [ToolCall(call_id="a", name="flaky__stats", raw_arguments="{}"),
             ToolCall(call_id="b", name="flaky__slow", raw_arguments='{"seconds": 0.2}', index=1)]
    with anyio.fail_after(10):
        results = await host.pipeline.run_batch(calls, CallContext(conversation_id="c", on_result=boom))
    assert [(r.call_id, r.status) for r in results] == [("a", ResultStatus.OK), ("b", ResultStatus.OK)]


@pytest.mark.parametrize(("text", "expected"), [
    ("Authorization: Bearer abcdefghijklmnop", "Authorization: Bearer [REDACTED]"),
    ('api_key = "hunter2"', 'api_key = "[REDACTED]"'),
    ("password='hunter2'", "password='[REDACTED]'"),
    ("{'password': 'hunter2'}", "{'password': '[REDACTED]'}"),  # a Python repr inside an error message
    ('upstream said: {"password": "hunter2"}', 'upstream said: {"password": "[REDACTED]"}'),
    ("api_key=sk-live-ABCDEF1234567890 password: hunter2", "api_key=[REDACTED] password: [REDACTED]"),
    ("token_count: 5 max_tokens=7", "token_count: 5 max_tokens=7"),
    ("the bearer bonds matured", "the bearer bonds matured"),
])
def test_redaction_of_secrets_inside_text(text, expected):
    from registry.redaction import redact

    assert redact(text) == expected


def test_redaction_never_raises_on_deep_values():
    from registry.redaction import redact

    deep: dict = {}
    cur = deep
    for _ in range(3000):
        cur["a"] = {}
        cur = cur["a"]
    cur["token"] = "x"
    assert "too deep" in str(redact(deep))
    assert redact("[" * 50000 + '"token"') .startswith("[")


def test_a_torn_event_line_does_not_break_later_appends_or_replay(tmp_path):
    from host.events import EventLog

    log = EventLog(tmp_path)
    log.append("c", "request", {"n": 1})
    path = log.path_for("c")
    log.close()
    with path.open("ab") as fh:  # a crash in the middle of a write
        fh.write(b'{"v":1,"seq":1,"kind":"res')
    fresh = EventLog(tmp_path)
    fresh.append("c", "request", {"n": 2})
    assert [e["data"] for e in fresh.events("c")] == [{"n": 1}, {"n": 2}]


def test_spill_files_are_private_distinct_and_capped(tmp_path):
    import stat

    from host.paths import safe_file_name
    from host.pipeline.format import SpillStore

    assert safe_file_name("call 1") != safe_file_name(safe_file_name("call 1"))
    store = SpillStore(tmp_path / "spill", max_files_per_conversation=3)
    paths = [store.write("conv", f"call{i}", "x" * 10) for i in range(5)]
    assert stat.S_IMODE(paths[-1].stat().st_mode) == 0o600
    assert stat.S_IMODE(paths[-1].parent.stat().st_mode) == 0o700
    assert sorted(p.name for p in paths[-1].parent.iterdir()) == ["call2.txt", "call3.txt", "call4.txt"]


def test_integer_beyond_the_conversion_limit_is_an_argument_error():
    from registry.validation import ArgumentParseError, parse_arguments

    out = parse_arguments('{"n": ' + "9" * 5000 + "}")
    assert isinstance(out, ArgumentParseError) and out.reason == "invalid_json"
    assert out.message.startswith("arguments cannot be parsed (Exceeds the limit (4300 digits)")
