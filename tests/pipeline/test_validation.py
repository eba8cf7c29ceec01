"""Parsing and schema validation: empty/non-object arguments, $ref/$defs, numbers as strings."""

from __future__ import annotations

import pytest

from host.calls import ResultStatus, ToolCall
from host.pipeline import CallContext, Pipeline
from registry import ToolDefinition, ToolRegistry, build_record
from registry.validation import ArgumentParseError, compile_validator, parse_arguments, validate_arguments


class NeverCalled:
    async def call_tool(self, *a, **k):  # pragma: no cover - must not run
        raise AssertionError("executor must not be called")


def make_pipeline(tmp_path, schema, name="svc__tool", executor=None):
    reg = ToolRegistry()
    rec = build_record(server="svc", qualified_name=name,
                       definition=ToolDefinition(name="tool", input_schema=schema))
    reg.replace_server("svc", [rec])
    return Pipeline(reg, executor or NeverCalled(), spill_dir=tmp_path / "spill")


@pytest.mark.parametrize("raw", ["", "   ", "\n\t "])
def test_br06_empty_or_whitespace_arguments_are_an_empty_object(raw):
    assert parse_arguments(raw) == {}


@pytest.mark.parametrize(("raw", "got"), [('""', "string"), ("[]", "array"), ("null", "null"), ("3", "number")])
def test_br06_non_object_arguments_are_rejected_with_the_type(raw, got):
    out = parse_arguments(raw)
    assert isinstance(out, ArgumentParseError)
    assert (out.reason, out.got_type) == ("not_an_object", got)
    assert f"got a JSON {got}" in out.message


def test_invalid_json_reports_where_parsing_failed():
    out = parse_arguments('{"a": 1,, "b": 2}')
    assert isinstance(out, ArgumentParseError)
    assert (out.reason, out.position, out.line, out.column) == ("invalid_json", 8, 1, 9)
    assert out.excerpt == '{"a": 1,, "b": 2}'


@pytest.mark.anyio
async def test_br06_invalid_arguments_become_a_result_for_that_call(tmp_path):
    p = make_pipeline(tmp_path, {"type": "object", "properties": {}})
    calls = [ToolCall(call_id="a", name="svc__tool", raw_arguments="[]"),
             ToolCall(call_id="b", name="svc__tool", raw_arguments='{"x": tru'),
             ToolCall(call_id="c", name="svc__tool", raw_arguments='"\\"\\""')]
    results = await p.run_batch(calls, CallContext())
    assert [r.call_id for r in results] == ["a", "b", "c"]
    assert [r.status for r in results] == [ResultStatus.INVALID_ARGUMENTS] * 3
    assert results[0].error.where == "parse" and results[0].error.details["reason"] == "not_an_object"
    assert results[1].error.details["reason"] == "invalid_json" and results[1].error.details["column"] == 7
    assert results[1].text.startswith("invalid_arguments: arguments are not valid JSON")


BR09_SCHEMA = {
    "type": "object",
    "properties": {"q": {"$ref": "#/$defs/Query"}},
    "required": ["q"],
    "$defs": {"Query": {"type": "object", "properties": {"text": {"type": "string"}, "limit": {"type": "integer"}},
                        "required": ["text"]}},
}


def test_br09_ref_to_defs_is_resolved_and_validated():
    v = compile_validator(BR09_SCHEMA)
    assert validate_arguments(v, {"q": {"text": "x", "limit": 2}}).ok
    bad = validate_arguments(v, {"q": {"limit": 2}})
    assert [(x.path, x.given, x.expected, x.fix) for x in bad.violations] == [
        ("$.q.text", "<missing>", "required property 'text'", "add the property 'text'")]


def test_draft07_schema_with_definitions_is_honored():
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"n": {"$ref": "#/definitions/N"}}, "definitions": {"N": {"type": "integer",
                                                                                    "exclusiveMinimum": 0}}}
    v = compile_validator(schema)
    assert v.META_SCHEMA["$schema"] == "http://json-schema.org/draft-07/schema#"  # draft-07 rules apply
    out = validate_arguments(v, {"n": 0})
    assert [(x.path, x.keyword) for x in out.violations] == [("$.n", "exclusiveMinimum")]


def test_recursive_ref_validates_without_looping():
    schema = {"type": "object", "properties": {"node": {"$ref": "#/$defs/Node"}},
              "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"},
                                                                  "v": {"type": "integer"}}}}}
    v = compile_validator(schema)
    out = validate_arguments(v, {"node": {"child": {"child": {"v": "x"}}}}, coerce=False)
    assert [x.path for x in out.violations] == ["$.node.child.child.v"]


def test_every_violation_is_listed_with_path_given_expected_fix():
    schema = {"type": "object", "properties": {"id": {"type": "integer"}, "mode": {"enum": ["a", "b"]}},
              "required": ["id", "name"], "additionalProperties": False}
    out = validate_arguments(compile_validator(schema), {"id": True, "mode": "z", "extra": 1})
    got = {(v.path, v.keyword): (v.given, v.expected) for v in out.violations}
    assert got == {
        ("$.id", "type"): ("true", "integer"),
        ("$.mode", "enum"): ('"z"', 'one of ["a", "b"]'),
        ("$.name", "required"): ("<missing>", "required property 'name'"),
        ("$.extra", "additionalProperties"): ("1", "only the properties ['id', 'mode']"),
    }


INT_SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}, "price": {"type": "number"},
                                               "tags": {"type": "array", "items": {"type": "integer"}}}}


@pytest.mark.parametrize(("given", "value"), [("12345", 12345), ("-3", -3), ("0", 0)])
def test_br13_integer_string_is_coerced_losslessly(given, value):
    out = validate_arguments(compile_validator(INT_SCHEMA), {"id": given})
    assert out.ok and out.arguments == {"id": value} and type(out.arguments["id"]) is int
    assert [(c.path, c.given, c.value) for c in out.coercions] == [("$.id", given, value)]


@pytest.mark.parametrize("given", ["1e3", "0x10", "1,000", "12px", " 12", "012", "12.0", "NaN", "+5", ""])
def test_br13_lossy_or_ambiguous_strings_are_rejected(given):
    out = validate_arguments(compile_validator(INT_SCHEMA), {"id": given})
    assert not out.ok and out.arguments == {"id": given}
    assert [(v.path, v.expected) for v in out.violations] == [("$.id", "integer")]


def test_br13_number_coercion_requires_round_trip_and_nested_paths_work():
    v = compile_validator(INT_SCHEMA)
    assert validate_arguments(v, {"price": "2.5", "tags": ["1", 2]}).arguments == {"price": 2.5, "tags": [1, 2]}
    assert not validate_arguments(v, {"price": "2.50"}).ok
    assert not validate_arguments(v, {"id": "12"}, coerce=False).ok


def test_a_string_allowed_by_the_schema_is_never_coerced():
    v = compile_validator({"type": "object", "properties": {"id": {"type": ["string", "integer"]}}})
    out = validate_arguments(v, {"id": "12"})
    assert out.ok and out.arguments == {"id": "12"} and out.coercions == ()


@pytest.mark.anyio
async def test_br13_pipeline_sends_the_coerced_value_upstream(tmp_path):
    seen = []

    class Recorder:
        async def call_tool(self, server, tool, arguments, *, timeout_seconds, progress_callback=None):
            from mcp.types import CallToolResult, TextContent
            seen.append(arguments)
            return CallToolResult(content=[TextContent(type="text", text="ok")])

    p = make_pipeline(tmp_path, {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
                      executor=Recorder())
    ok = await p.call("svc__tool", '{"id": "12345"}', CallContext())
    bad = await p.call("svc__tool", '{"id": "1e3"}', CallContext())
    assert ok.status is ResultStatus.OK and seen == [{"id": 12345}]
    assert bad.status is ResultStatus.INVALID_ARGUMENTS and bad.error.where == "validate"
    assert bad.error.details["violations"] == [
        {"path": "$.id", "given": '"1e3"', "expected": "integer", "fix": "send a JSON integer, not a string"}]


@pytest.mark.anyio
async def test_a_tool_with_an_invalid_schema_is_still_callable_and_the_problem_is_logged(tmp_path):
    from mcp.types import CallToolResult, TextContent

    from host.events import EventLog

    class Echo:
        async def call_tool(self, server, tool, arguments, *, timeout_seconds, progress_callback=None):
            return CallToolResult(content=[TextContent(type="text", text="ran")])

    p = make_pipeline(tmp_path, {"type": "objekt"}, executor=Echo())
    p.event_log = EventLog(tmp_path / "events")
    res = await p.call("svc__tool", {"a": 1}, CallContext(conversation_id="s"))
    assert res.text == "ran"
    decision = next(e for e in p.event_log.events("s") if e["kind"] == "decision")
    assert decision["data"]["schema_problem"].startswith("the tool's inputSchema is invalid")
