"""Schema normalization ($ref/$defs kept, OpenAI's object rules) and ref handling."""

from __future__ import annotations

import pytest

from host.agent.providers import SchemaCycle, find_ref_cycles, inline_refs, normalize_schema
from registry.validation import compile_validator

QUERY_REF = {
    "type": "object",
    "properties": {"q": {"$ref": "#/$defs/Query"}},
    "required": ["q"],
    "$defs": {"Query": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
}


def test_object_without_properties_gets_empty_properties_br10():
    out = normalize_schema({"type": "object", "additionalProperties": False})
    assert out.schema == {"type": "object", "additionalProperties": False, "properties": {}}


def test_missing_schema_or_type_becomes_an_empty_object():
    assert normalize_schema(None).schema == {"type": "object", "properties": {}}
    assert normalize_schema({"properties": {"a": {"type": "string"}}}).schema == {
        "properties": {"a": {"type": "string"}},
        "type": "object",
    }


def test_nested_objects_get_properties_too():
    out = normalize_schema({"type": "object", "properties": {"meta": {"type": "object"}}})
    assert out.schema["properties"]["meta"] == {"type": "object", "properties": {}}


def test_ref_and_defs_are_kept_whole_br09():
    out = normalize_schema(QUERY_REF)
    assert out.schema == QUERY_REF and out.notes == []


def test_definitions_renamed_to_defs_with_refs_rewritten():
    schema = {
        "type": "object",
        "properties": {"q": {"$ref": "#/definitions/Q"}},
        "definitions": {"Q": {"type": "string"}},
    }
    out = normalize_schema(schema)
    assert out.schema["properties"]["q"] == {"$ref": "#/$defs/Q"}
    assert out.schema["$defs"] == {"Q": {"type": "string"}}
    assert "definitions" not in out.schema
    assert schema["properties"]["q"] == {"$ref": "#/definitions/Q"}  # input untouched


def test_dangling_and_remote_refs_are_removed_with_a_note():
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/Missing"}, "b": {"$ref": "https://example.com/s.json"}},
    }
    out = normalize_schema(schema)
    assert out.schema["properties"] == {"a": {}, "b": {}}
    assert out.notes == [
        "$.properties.a: dangling $ref '#/$defs/Missing' removed (accepts any value there)",
        "$.properties.b: remote $ref 'https://example.com/s.json' removed (accepts any value there)",
    ]


def test_root_any_of_is_flattened_wider_for_anthropic():
    schema = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "x": {"type": "string"}},
                "required": ["id", "x"],
            },
            {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
                "required": ["id", "name"],
            },
        ]
    }
    out = normalize_schema(schema)
    assert out.schema == {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "x": {"type": "string"}, "name": {"type": "string"}},
        "required": ["id"],
    }
    validator = compile_validator(out.schema)
    for value in ({"id": 1, "x": "a"}, {"id": 2, "name": "b"}):  # never narrower than the original
        assert compile_validator(schema).is_valid(value) and validator.is_valid(value)


def test_root_all_of_is_merged_with_union_of_required():
    schema = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]},
        ]
    }
    assert normalize_schema(schema).schema == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }


def test_schema_keyword_dropped_at_root():
    out = normalize_schema({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {}})
    assert "$schema" not in out.schema


def test_cycles_detected_and_inlining_refuses_them():
    tree = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
        },
    }
    assert find_ref_cycles(tree) == ["#/$defs/Node"]
    with pytest.raises(SchemaCycle) as err:
        inline_refs(tree)
    assert err.value.refs == ["#/$defs/Node"]


def test_inline_refs_replaces_local_refs():
    assert inline_refs(QUERY_REF) == {
        "type": "object",
        "required": ["q"],
        "properties": {"q": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    }
