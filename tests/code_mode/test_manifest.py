"""The capability manifest and script identifiers: what a script names, found before it runs."""

from __future__ import annotations

import hashlib

import pytest

from registry.code_mode import Manifest, ScriptRejected, build_manifest, python_identifier, python_names

NAMES = python_names(["orders__list", "orders__cancel", "fs__read-file", "print", "a-b", "a_b"])


def test_identifiers_are_python_names_and_collisions_get_a_stable_suffix():
    assert NAMES["fs__read_file"] == "fs__read-file"
    assert NAMES["print_"] == "print"  # a builtin is never shadowed
    assert NAMES["a_b"] == "a_b"
    suffix = hashlib.sha256(b"a-b").hexdigest()[:8]
    assert NAMES[f"a_b_{suffix}"] == "a-b"
    assert python_identifier("9tool") == "t_9tool"
    assert python_identifier("class") == "class_"
    assert python_names(["b", "a"]) == python_names(["a", "b"])
    with pytest.raises(ValueError, match="not a qualified name"):
        python_names(["bad name"])


def test_manifest_holds_free_names_that_are_tools_and_literal_call_tool_names():
    script = (
        "import asyncio\n"
        "rows = await orders__list(status='open')\n"
        "f = fs__read_file\n"
        "await call_tool('orders__cancel', {'id': 1})\n"
        "def helper(orders__list):\n"
        "    return orders__list\n"
        "len(rows)\n"
    )
    m = build_manifest(script, NAMES)
    assert m == Manifest(
        script_sha256=hashlib.sha256(script.encode()).hexdigest(),
        tools={"fs__read_file": "fs__read-file", "orders__cancel": "orders__cancel", "orders__list": "orders__list"},
        dynamic_call_tool=False,
    )
    assert m.qualified_names == ("fs__read-file", "orders__cancel", "orders__list")
    assert m.resolve("fs__read-file") == "fs__read-file"
    assert m.resolve("orders__get") is None


def test_a_name_bound_in_the_script_is_not_a_tool_and_a_dynamic_call_tool_is_flagged():
    m = build_manifest("orders__list = 3\nname = 'orders__' + 'cancel'\nawait call_tool(name, {})\norders__list", NAMES)
    assert m.tools == {}
    assert m.dynamic_call_tool is True


def test_changing_one_character_changes_the_hash():
    a = build_manifest("await orders__list()", NAMES)
    b = build_manifest("await orders__list() ", NAMES)
    assert a.tools == b.tools and a.script_sha256 != b.script_sha256


@pytest.mark.parametrize(
    ("script", "message", "line"),
    [
        ("x = 1\neval('orders__cancel')", "'eval' is not available in code mode", 2),
        ("exec('import os')", "'exec' is not available", 1),
        ("f = compile", "'compile' is not available", 1),
        ("__import__('os')", "'__import__' is not available", 1),
        ("globals()['orders__cancel']", "'globals' is not available", 1),
        ("vars()", "'vars' is not available", 1),
        ("().__class__.__base__.__subclasses__()", "dunder attribute", 1),
        ("def f(:\n  pass", "syntax error", 1),
    ],
)
def test_forbidden_constructs_are_rejected_with_their_line(script, message, line):
    with pytest.raises(ScriptRejected, match=message) as info:
        build_manifest(script, NAMES)
    assert info.value.line == line
    assert str(info.value).startswith("script rejected at code_mode.parse: line")


def test_an_oversized_script_is_rejected():
    with pytest.raises(ScriptRejected, match="at most 100000"):
        build_manifest("1\n" * 60_000, NAMES)
