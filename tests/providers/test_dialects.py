"""Gemini schema subset for its OpenAI-compatible endpoint (one unknown key rejects the whole tool list)."""

from __future__ import annotations

from host.agent.providers import OpenAIChatAdapter
from host.agent.providers.dialects import gemini_schema

from .records import record
from .sdk_check import validate_chat_request

BR12 = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "kind": {"const": "event"},
        "tags": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
        "when": {"type": ["string", "null"], "format": "date-time"},
        "meta": {"$ref": "#/$defs/Meta"},
    },
    "required": ["kind"],
    "$defs": {
        "Meta": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "properties": {"owner": {"type": "string", "format": "email"}},
        }
    },
}


def test_br12_gemini_subset():
    out = gemini_schema(BR12)
    assert out.schema == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "nullable": True},
            "kind": {"enum": ["event"], "type": "string"},
            "tags": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
            "when": {"type": "string", "format": "date-time", "nullable": True},
            "meta": {"type": "object", "properties": {"owner": {"type": "string"}}},
        },
        "required": ["kind"],
    }
    assert out.notes == [
        "$.additionalProperties dropped (not in the Gemini schema subset; wider)",
        "$.properties.meta.additionalProperties dropped (not in the Gemini schema subset; wider)",
        "$.properties.meta.properties.owner.format 'email' dropped (wider)",
    ]


def test_recursive_refs_become_plain_objects():
    tree = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
        },
    }
    out = gemini_schema(tree)
    assert out.schema["properties"]["root"] == {"type": "object"}
    assert out.notes[0] == "$.properties.root: recursive $ref '#/$defs/Node' replaced by a plain object (wider)"


def test_chat_adapter_with_gemini_dialect():
    tools = [record("cal", "add_event", BR12), record("clock", "now", {"type": "object", "properties": {}})]
    decl = OpenAIChatAdapter(schema_dialect="gemini").declare_tools(tools)
    assert decl.strict == {"cal__add_event": False, "clock__now": False}
    assert decl.tools[0]["function"]["parameters"] == gemini_schema(BR12).schema
    assert decl.tools[1] == {"type": "function", "function": {"name": "clock__now", "description": "now tool"}}
    validate_chat_request(
        {"model": "gemini-2.5-flash", "messages": [{"role": "user", "content": "hi"}], "tools": decl.tools}
    )
