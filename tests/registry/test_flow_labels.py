"""Data-flow labels: derivation from annotations and name cues, config overrides per server and tool."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from registry.safety.flow import FlowConfig, Label, derive_labels, name_tokens
from registry.tool import Risk, ToolAnnotations, ToolDefinition, ToolOverrides, build_record

P, U, E = Label.PRIVATE_SOURCE, Label.UNTRUSTED_SOURCE, Label.EGRESS


def record(name, *, read_only=None, destructive=None, open_world=None, overrides=None):
    ann = ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive, open_world_hint=open_world)
    return build_record(server="s", qualified_name=f"s__{name}",
                        definition=ToolDefinition(name=name, annotations=ann), overrides=overrides)


@pytest.mark.parametrize(("name", "kwargs", "labels"), [
    # server-filesystem style: local reads are private, local writes carry nothing out
    ("read_text_file", {"read_only": True, "open_world": False}, {P}),
    ("list_directory", {"read_only": True, "open_world": False}, {P}),
    ("write_file", {"read_only": False, "destructive": True, "open_world": False}, set()),
    # a closed-world read without cues carries no label (mcp-server-time, server-everything's echo)
    ("get_current_time", {"read_only": True, "open_world": False}, set()),
    ("git_log", {"read_only": True, "open_world": False}, {P}),
    ("get-env", {"read_only": True, "open_world": False}, {P}),
    # mcp-server-fetch style: no annotations at all → open world by the MCP defaults
    ("fetch", {}, {U, E}),
    ("fetch", {"read_only": True}, {U}),
    # an inbox is both the user's data and third-party text
    ("list_inbox", {"read_only": True, "open_world": True}, {P, U}),
    ("send_email", {"read_only": False, "destructive": False, "open_world": True}, {U, E}),
    ("post_message", {"read_only": False, "destructive": False, "open_world": False}, {U, E}),
    ("create_gist", {"read_only": False, "destructive": False, "open_world": True}, {E, U}),
    ("calculate", {"read_only": True, "open_world": True}, {U}),
])
def test_derivation_table(name, kwargs, labels):
    assert derive_labels(record(name, **kwargs)).labels == frozenset(labels)


def test_reasons_name_the_rule_that_decided():
    got = derive_labels(record("fetch"))
    assert got.reasons == {
        P: "no cue",
        U: "name cue 'fetch'",
        E: "openWorldHint absent (MCP default: open world) and not read-only",
    }
    assert got.short() == "untrusted,egress"
    local = derive_labels(record("get_current_time", read_only=True, open_world=False))
    assert local.reasons == {P: "no cue", U: "no cue", E: "read-only (readOnlyHint true)"}


def test_config_risk_and_open_world_overrides_feed_the_derivation():
    rec = record("run_query", overrides=ToolOverrides(risk=Risk.READ, open_world=False))
    got = derive_labels(rec)
    assert got.labels == {P}
    assert got.reasons[P] == "name cue 'query' and the tool reads"


def test_per_tool_config_beats_per_server_beats_derivation():
    cfg = FlowConfig.model_validate({"private_source": True, "egress": False,
                                     "tools": {"fetch": {"egress": True}, "calculate": {"private_source": False}}})
    fetch = derive_labels(record("fetch", read_only=True), cfg)
    assert fetch.labels == {P, U, E}
    assert fetch.reasons[E] == "config toolhost.flow.tools.fetch.egress"
    assert fetch.reasons[P] == "config toolhost.flow.private_source"
    calc = derive_labels(record("calculate"), cfg)
    assert calc.labels == {U}
    assert calc.reasons[P] == "config toolhost.flow.tools.calculate.private_source"


def test_config_shape_rejects_unknown_keys():
    with pytest.raises(ValidationError, match="egres"):
        FlowConfig.model_validate({"tools": {"x": {"egres": True}}})


def test_name_tokens_split_snake_kebab_and_camel_case():
    assert name_tokens("fetchURL_v2-page") == {"fetch", "url", "v", "2", "page"}
    assert name_tokens("postgres_query") == {"postgres", "query"}  # "post" is not a token of postgres
