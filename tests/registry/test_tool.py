"""Tool records: risk derivation from MCP annotation defaults, overrides, definition hash."""

from __future__ import annotations

import pytest

from registry import Risk, ToolAnnotations, ToolDefinition, ToolOverrides, build_record, definition_hash, derive_risk


@pytest.mark.parametrize(
    ("hints", "risk"),
    [
        ({}, Risk.DESTRUCTIVE),  # no readOnlyHint: not read-only; destructiveHint defaults to true
        ({"readOnlyHint": True}, Risk.READ),
        ({"readOnlyHint": True, "destructiveHint": True}, Risk.READ),  # destructive is meaningless when read-only
        ({"readOnlyHint": False}, Risk.DESTRUCTIVE),
        ({"destructiveHint": False}, Risk.WRITE),
        ({"readOnlyHint": False, "destructiveHint": False}, Risk.WRITE),
        ({"readOnlyHint": False, "destructiveHint": True}, Risk.DESTRUCTIVE),
        ({"readOnlyHint": "yes"}, Risk.DESTRUCTIVE),  # non-bool hints are ignored, not trusted
    ],
)
def test_risk_follows_spec_defaults(hints, risk):
    assert derive_risk(ToolAnnotations.from_wire(hints)) is risk


def _record(hints=None, overrides=None):
    d = ToolDefinition(name="t", description="d", annotations=ToolAnnotations.from_wire(hints or {}))
    return build_record(server="s", qualified_name="s__t", definition=d, overrides=overrides)


def test_unannotated_tool_is_destructive_open_world_not_idempotent_not_concurrent():
    r = _record()
    assert (r.risk, r.open_world, r.idempotent, r.concurrency_safe) == (Risk.DESTRUCTIVE, True, False, False)


def test_read_only_tool_is_idempotent_and_concurrency_safe():
    r = _record({"readOnlyHint": True, "openWorldHint": False})
    assert (r.risk, r.open_world, r.idempotent, r.concurrency_safe) == (Risk.READ, False, True, True)


def test_config_overrides_win_over_annotations():
    r = _record(
        {"readOnlyHint": True},
        ToolOverrides(risk=Risk.DESTRUCTIVE, timeout_seconds=3, max_output_chars=100, concurrency_safe=True),
    )
    assert (r.risk, r.timeout_seconds, r.max_output_chars, r.concurrency_safe) == (Risk.DESTRUCTIVE, 3, 100, True)


def test_risk_ordering_is_by_level_not_alphabet():
    assert Risk.READ < Risk.WRITE < Risk.DESTRUCTIVE
    assert Risk.DESTRUCTIVE > Risk.READ
    assert max([Risk.WRITE, Risk.DESTRUCTIVE, Risk.READ], key=lambda r: r.level) is Risk.DESTRUCTIVE


def test_definition_hash_ignores_key_order_but_not_content():
    a = ToolDefinition(name="t", description="x", input_schema={"type": "object", "properties": {"a": {}, "b": {}}})
    b = ToolDefinition(name="t", description="x", input_schema={"properties": {"b": {}, "a": {}}, "type": "object"})
    c = ToolDefinition(name="t", description="x!", input_schema=a.input_schema)
    d = ToolDefinition(name="t", description="x", input_schema=a.input_schema,
                       annotations=ToolAnnotations(read_only_hint=True))
    assert definition_hash(a) == definition_hash(b)
    assert len({definition_hash(a), definition_hash(c), definition_hash(d)}) == 3
    assert (
        definition_hash(a) == "4bbd75497b5f0cfbd1f07f987d85986ff2f7607fd9777c39e77172f6b1783844"
    )  # pinned: a change here breaks every stored pin


def test_a_lone_surrogate_in_a_definition_still_hashes():
    d = ToolDefinition(name="t", description="bad \ud800 text")
    assert len(definition_hash(d)) == 64
