"""Client-mode wrapper for the MCP conformance suite: toolhost's upstream layer is the client under test.

The suite runs ``python tests/peers/conformance_client.py URL`` with ``MCP_CONFORMANCE_SCENARIO``
set. The wrapper configures one streamable-HTTP server at URL and uses
:class:`host.upstream.manager.ServerManager` exactly as ``toolhost serve`` does: connecting does
the handshake and lists every tool page; calls go through ``ServerManager.call_tool``; an
upstream elicitation is answered through the relay (:mod:`host.upstream.relay`) by a stand-in
downstream client that accepts the schema's defaults (SEP-1034). ``auth/*`` scenarios configure
``toolhost.oauth`` (:mod:`host.upstream.oauth`; a pre-registered client when the scenario's
context gives one) and a stand-in browser that follows the authorization URL's redirects to
toolhost's loopback listener, as a user's browser would. ``TOOLHOST_CONFORMANCE_PROTOCOL=legacy``
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
import httpx2
from mcp.types import ElicitResult

from host.config import parse_config
from host.upstream.manager import ServerManager
from host.upstream.oauth import authorization_browser
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


async def follow_in_browser(url: str) -> None:
    """A user's browser: open the authorization URL and follow its redirects (to toolhost's listener)."""
    async with httpx2.AsyncClient(follow_redirects=True, timeout=10) as http:
        await http.get(url)


async def main(url: str, scenario: str) -> int:
    protocol = os.environ.get("TOOLHOST_CONFORMANCE_PROTOCOL", "auto")  # "legacy": initialize handshake only
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    options: dict[str, Any] = {"protocol": protocol}
    if scenario.startswith("auth/"):
        options["oauth"] = {k: context[k] for k in ("client_id", "client_secret") if context.get(k)}
        if scenario == "auth/client-credentials-basic":  # the user configures a machine-to-machine client
            options["oauth"]["grant"] = "client_credentials"
    config = parse_config({"toolhost": {"connect_timeout_seconds": 20},
                           "mcpServers": {"s": {"url": url, "toolhost": options}}})
    with tempfile.TemporaryDirectory() as tmp, anyio.fail_after(28), authorization_browser(follow_in_browser):
        data_dir = Path(os.environ.get("TOOLHOST_CONFORMANCE_DATA_DIR") or tmp)  # kept by tests that inspect it
        async with ServerManager(config, data_dir=data_dir) as manager:
            status = manager.statuses()[0]
            if status.error:
                print(f"connect failed: {status.error}", file=sys.stderr)
                return 1
            calls = planned_calls(scenario, context)
            if scenario == "json-schema-2020-12-preservation":  # echo the schema toolhost kept
                kept = manager.registry.snapshot().resolve("s", "json_schema_2020_12_tool")
                calls = [(ECHO_TOOL, {"schema": kept.input_schema if kept is not None else None})]
            if scenario.startswith("auth/") and not calls:  # a user calls the tools it was authorized for
                calls = [(t.original_name, {}) for t in manager.registry.by_server("s")]
            for name, args in calls:
                with downstream_scope(Downstream(session=object(), elicit=accept_defaults)):
                    result = await manager.call_tool("s", name, args, timeout_seconds=20)
                print(f"{name}: {result.model_dump(mode='json', exclude_none=True)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(anyio.run(main, sys.argv[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", "")))
