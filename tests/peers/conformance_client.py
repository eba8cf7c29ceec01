"""Client-mode wrapper for the MCP conformance suite: toolhost's upstream layer is the client under test.

The suite runs ``python tests/peers/conformance_client.py URL`` with ``MCP_CONFORMANCE_SCENARIO``
set. The wrapper configures one streamable-HTTP server at URL and uses
:class:`host.upstream.manager.ServerManager` exactly as ``toolhost serve`` does: connecting does
the handshake and lists every tool page; calls go through ``ServerManager.call_tool``; an
upstream elicitation is answered through the relay (:mod:`host.upstream.relay`) by a stand-in
downstream client that accepts the schema's defaults (SEP-1034). OAuth scenarios are not
supported yet (toolhost has no upstream OAuth): they exit 1. ``TOOLHOST_CONFORMANCE_PROTOCOL=legacy``
selects ``toolhost.protocol: "legacy"`` (the 2025-11-25 handshake without the 2026 probe).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp.types import ElicitResult

from host.config import parse_config
from host.upstream.manager import ServerManager
from host.upstream.relay import Downstream, downstream_scope

CALLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "tools_call": [("add_numbers", {"a": 5, "b": 3})],
    "sse-retry": [("test_reconnection", {})],
    "elicitation-sep1034-client-defaults": [("test_client_elicitation_defaults", {})],
    # SEP-2322: two input-required flows, then an unrelated call that must not carry their state
    "sep-2322-client-request-state": [("test_mrtr_echo_state", {}), ("test_mrtr_no_state", {}),
                                      ("test_mrtr_unrelated", {}), ("test_mrtr_no_result_type", {})],
    "http-invalid-tool-headers": [("valid_tool", {})],
}
"""What a user would call in each scenario (the suite's ``MCP_CONFORMANCE_CONTEXT`` ``toolCalls`` come first)."""
ECHO_TOOL = "json_schema_echo"
"""The json-schema-2020-12-preservation scenario's tool: gets back the input schema toolhost kept."""


def planned_calls(scenario: str, context: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    calls = [(c["name"], c.get("arguments") or {}) for c in context.get("toolCalls", [])]
    return calls or CALLS.get(scenario, [])


async def accept_defaults(params: Any) -> ElicitResult:
    schema = getattr(params, "requested_schema", None) or {}
    content = {k: v["default"] for k, v in schema.get("properties", {}).items() if "default" in v}
    return ElicitResult(action="accept", content=content)


async def main(url: str, scenario: str) -> int:
    if scenario.startswith("auth/"):
        print(f"scenario {scenario}: upstream OAuth is not supported by toolhost yet", file=sys.stderr)
        return 1
    protocol = os.environ.get("TOOLHOST_CONFORMANCE_PROTOCOL", "auto")  # "legacy": initialize handshake only
    config = parse_config({"toolhost": {"connect_timeout_seconds": 20},
                           "mcpServers": {"s": {"url": url, "toolhost": {"protocol": protocol}}}})
    with tempfile.TemporaryDirectory() as tmp, anyio.fail_after(28):
        async with ServerManager(config, data_dir=Path(tmp)) as manager:
            status = manager.statuses()[0]
            if status.error:
                print(f"connect failed: {status.error}", file=sys.stderr)
                return 1
            context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
            calls = planned_calls(scenario, context)
            if scenario == "json-schema-2020-12-preservation":  # echo the schema toolhost kept
                kept = manager.registry.snapshot().resolve("s", "json_schema_2020_12_tool")
                calls = [(ECHO_TOOL, {"schema": kept.input_schema if kept is not None else None})]
            for name, args in calls:
                with downstream_scope(Downstream(session=object(), elicit=accept_defaults)):
                    result = await manager.call_tool("s", name, args, timeout_seconds=20)
                print(f"{name}: {result.model_dump(mode='json', exclude_none=True)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(anyio.run(main, sys.argv[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", "")))
