"""Bad tool definitions are isolated per tool (BR-37, BR-38); list_changed storms are coalesced (BR-54)."""

from __future__ import annotations

import json

import anyio
import pytest
from jsonschema.validators import validator_for

from host.agent.providers import adapter_for
from host.runtime import HostRuntime
from host.upstream.manager import ServerManager
from host.upstream.status import ConnectionState
from registry import check_tool
from servers.gateway.meta_tools import as_mcp_tool
from tests.upstream.support import config, hostile

pytestmark = pytest.mark.anyio

DRAFT7 = "http://json-schema.org/draft-07/schema#"
BAD_TOOLS = [
    {"name": "only_schema_uri", "description": "BR-37", "inputSchema": {"$schema": DRAFT7}},
    {"name": "no_input_schema", "description": "BR-37 variant"},
    {"name": "invalid_type", "description": "BR-38",
     "inputSchema": {"type": "object", "properties": {"x": {"type": "unknown"}}}},
    {"name": "string_root", "description": "not an object", "inputSchema": {"type": "string"}},
]


def test_check_tool_repairs_losslessly_and_holds_with_the_keyword():
    repaired = check_tool(BAD_TOOLS[0])
    assert repaired.tool["inputSchema"] == {"$schema": DRAFT7, "type": "object", "properties": {}}
    assert repaired.warnings == ["tool 'only_schema_uri': inputSchema has no root 'type'; added 'type': 'object' "
                                 "and 'properties': {}"]
    assert check_tool(BAD_TOOLS[1]).tool["inputSchema"] == {"type": "object", "properties": {}}
    held = check_tool(BAD_TOOLS[2])
    assert held.tool is None
    assert held.held_reason == ("inputSchema fails meta-validation: $.properties.x.type: 'unknown' is not valid "
                                "under any of the given schemas (keyword 'anyOf')")
    kept = check_tool({"name": "t", "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}},
                                                     "additionalProperties": False, "x-extra": 1}})
    assert kept.warnings == [] and kept.tool["inputSchema"]["x-extra"] == 1


async def test_one_bad_tool_costs_only_itself(tmp_path):
    cfg = config({"mixed": hostile(tools=BAD_TOOLS), "good": hostile()})
    with anyio.fail_after(30):
        async with HostRuntime(cfg, data_dir=tmp_path, reconnect=False) as rt:
            st = rt.manager.connections["mixed"].status
            assert st.state is ConnectionState.CONNECTED
            names = sorted(t.original_name for t in rt.registry.by_server("mixed"))
            assert names == ["broken", "die", "echo", "garble_then_echo", "hang", "no_input_schema",
                             "only_schema_uri", "slow"]
            assert st.held == {
                "invalid_type": "inputSchema fails meta-validation: $.properties.x.type: 'unknown' is not valid "
                                "under any of the given schemas (keyword 'anyOf')",
                "string_root": "inputSchema root 'type' must be 'object' (MCP tools take a JSON object), got "
                               "'string' (keyword 'type' at $.type)",
            }
            assert any(w.startswith("tool 'invalid_type' is held (not exported, searched or callable)")
                       for w in st.warnings)
            # Held tools are neither searchable nor callable (unknown_tool), and no exported
            # schema (MCP tools/list shape) fails meta-validation.
            assert not [h for h in rt.search("BR-38 invalid_type", limit=20).hits if h.tool.original_name ==
                        "invalid_type"]
            res = await rt.call("mixed__invalid_type", {})
            assert res.status.value == "unknown_tool"
            for rec in rt.registry.tools():
                schema = as_mcp_tool(rec).input_schema
                validator_for(schema).check_schema(schema)
                assert schema["type"] == "object"
            declared = json.dumps([adapter_for(api).declare_tools(rt.registry.tools())
                                   for api in ("openai_chat", "anthropic_messages")], default=str)
            assert "invalid_type" not in declared and "string_root" not in declared
            assert "mixed__only_schema_uri" in declared
            ok = await rt.call("mixed__only_schema_uri", {})
            assert ok.status.value == "tool_error"  # reached the server: "unknown tool" from the fake
            assert (await rt.call("good__echo", {"text": "hi"})).content[0].text == "hi"


async def test_storm_of_unchanged_list_changed_is_coalesced_and_silent(tmp_path):
    """BR-54: 100 list_changed at 100/s, nothing changes: few re-lists, no registry change."""
    cfg = config({"stormy": hostile(storm=100)}, relist_min_interval_seconds=0.5)
    changes: list[str] = []
    with anyio.fail_after(30):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=True) as m:
            m.registry.subscribe(lambda server, old, new: changes.append(server))
            gate = m.connections["stormy"]._relist
            version = m.registry.version
            with anyio.fail_after(10):
                while gate.requests < 100:
                    await anyio.sleep(0.05)  # the storm is the fake's own clock; poll its progress
                while not gate.idle:
                    await anyio.sleep(0.05)
            assert gate.requests == 100
            assert 1 <= gate.relists <= 5  # ~1 s of storm at one re-list per 0.5 s, plus the trailing one
            assert m.registry.version == version and changes == []


async def test_storm_with_changes_relists_at_the_minimum_interval_and_ends_current(tmp_path):
    cfg = config({"stormy": hostile(storm=100, storm_changes=True)}, relist_min_interval_seconds=0.5)
    changes: list[str] = []
    with anyio.fail_after(30):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=True) as m:
            m.registry.subscribe(lambda server, old, new: changes.append(server))
            gate = m.connections["stormy"]._relist
            with anyio.fail_after(10):
                while gate.requests < 100 or not gate.idle:
                    await anyio.sleep(0.05)
                while m.connections["stormy"].status.state is not ConnectionState.CONNECTED:
                    await anyio.sleep(0.05)
            assert 1 <= gate.relists <= 5 and len(changes) <= gate.relists
            echo = m.registry.snapshot().resolve("stormy", "echo")
            assert echo.description == "Echo the text back. v100"  # the trailing re-list saw the last change



async def test_the_relist_gate_is_idle_only_when_nothing_is_pending_or_running():
    from host.upstream.relist import RelistGate

    gate = RelistGate(min_interval_seconds=0)
    assert gate.idle
    gate.request()
    assert (gate.pending, gate.idle) == (True, False)
    with anyio.fail_after(5):
        await gate.wait_due()
    assert (gate.pending, gate.idle, gate.relists) == (False, False, 1)  # started, not yet recorded
    gate.finished()
    assert gate.idle
