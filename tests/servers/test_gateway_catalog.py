"""Prompts, resources, completion, logs, elicitation and sampling through toolhost (forwarded to the client that made
the call; capabilities that tell the truth).

Real upstreams: our conformance fixture (``tests/peers/conformance_server.py``, stdio) and
``@modelcontextprotocol/server-everything`` (stdio); the downstream client is the SDK ``Client``
in-process on a handshake-era session (the back channel elicitation/sampling need).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.types import (
    CreateMessageResult,
    ElicitResult,
    EmbeddedResource,
    PromptReference,
    ResourceTemplateReference,
    TextContent,
    ToolListChangedNotification,
)

from host.access import AccessControl
from host.config import parse_config
from host.runtime import HostRuntime
from host.upstream.implementation import toolhost_version
from registry import (
    AllowAll,  # the runtime's default is safe; these tests call tools freely
    Principal,
)
from servers.gateway.server import create_registry_server

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests/peers/conformance_server.py"
EVERYTHING = ROOT / "peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

pytestmark = pytest.mark.anyio


def _config(**extra: Any) -> Any:
    servers = {
        "fx": {"command": sys.executable, "args": [str(FIXTURE), "--stdio"], "toolhost": {"protocol": "legacy"}},
        "ev": {"command": "node", "args": [str(EVERYTHING), "stdio"]},
    }
    servers.update(extra)
    return parse_config({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": servers})


@asynccontextmanager
async def gateway(tmp_path: Path, config: Any = None, **kwargs: Any) -> AsyncIterator[tuple[HostRuntime, Any]]:
    async with HostRuntime(config or _config(), policy=AllowAll(), data_dir=tmp_path / "data") as rt:
        yield rt, create_registry_server(rt, expose="all", **kwargs)


async def test_prompts_resources_and_completion_values_through_the_gateway(tmp_path) -> None:
    with anyio.fail_after(90):
        async with gateway(tmp_path) as (rt, server), Client(server, mode="legacy") as c:
            prompts = {p.name for p in (await c.list_prompts()).prompts}
            assert {"fx__test_prompt_with_arguments", "ev__simple-prompt"} <= prompts
            got = await c.get_prompt("fx__test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
            assert got.messages[0].content.text == "Prompt with arguments: arg1='a', arg2='b'"
            simple = await c.get_prompt("ev__simple-prompt")
            assert simple.messages[0].content.text == "This is a simple prompt without arguments."

            uris = {str(r.uri) for r in (await c.list_resources()).resources}
            assert {"toolhost://fx/test://static-text", "toolhost://fx/test://static-binary"} <= uris
            text = await c.read_resource("toolhost://fx/test://static-text")
            assert text.contents[0].text == "This is the content of the static text resource."
            assert str(text.contents[0].uri) == "toolhost://fx/test://static-text"
            blob = await c.read_resource("toolhost://fx/test://static-binary")
            assert blob.contents[0].blob == PNG and blob.contents[0].mime_type == "image/png"
            templates = {t.uri_template for t in (await c.list_resource_templates()).resource_templates}
            assert "toolhost://fx/test://template/{id}/data" in templates
            data = await c.read_resource("toolhost://fx/test://template/7/data")
            assert json.loads(data.contents[0].text) == {"id": "7", "templateTest": True, "data": "Data for ID: 7"}

            done = await c.complete(PromptReference(type="ref/prompt", name="fx__test_prompt_with_arguments"),
                                    {"name": "arg1", "value": "a"})
            assert done.completion.values == ["alpha"]
            done = await c.complete(ResourceTemplateReference(type="ref/resource", uri="toolhost://fx/test://template/{id}/data"),
                                    {"name": "id", "value": "4"})
            assert done.completion.values == ["456"]
            await c.subscribe_resource("toolhost://fx/test://watched-resource")
            await c.unsubscribe_resource("toolhost://fx/test://watched-resource")

            with pytest.raises(MCPError) as unknown:
                await c.read_resource("toolhost://fx/test://nope")
            assert (unknown.value.code, unknown.value.message) == (-32002, "Resource not found: toolhost://fx/test://nope")
            with pytest.raises(MCPError) as bad_prompt:
                await c.get_prompt("fx__nope")
            assert (bad_prompt.value.code, bad_prompt.value.message) == (-32602, "Unknown prompt: fx__nope")


async def test_capabilities_tell_the_truth_and_server_info_is_toolhosts(tmp_path) -> None:
    with anyio.fail_after(90):
        async with gateway(tmp_path) as (rt, server), Client(server, mode="legacy") as c:
            caps = c.server_capabilities
            assert caps.tools.list_changed is True
            assert caps.prompts is not None and caps.resources is not None and caps.completions is not None
            assert caps.logging is not None
            assert (c.server_info.name, c.server_info.version) == ("toolhost", toolhost_version())
        # toolhost introduces itself upstream by its own name and version (the fixture can't echo it,
        # so read what the connection sent)
        only_tools = parse_config({"mcpServers": {"t": {"command": sys.executable,
                                                       "args": [str(ROOT / "tests/peers/tools_only_server.py")]}}})
        async with gateway(tmp_path / "b", only_tools) as (rt, server), Client(server, mode="legacy") as c:
            caps = c.server_capabilities
            assert caps.prompts is None and caps.resources is None and caps.completions is None
            assert caps.tools.list_changed is True


async def test_upstream_logs_reach_the_caller_at_its_level_and_the_server_log(tmp_path) -> None:
    received: list[tuple[str, Any]] = []

    async def on_log(params: Any) -> None:
        received.append((params.level, params.data))

    with anyio.fail_after(90):
        async with gateway(tmp_path) as (rt, server), Client(server, mode="legacy", logging_callback=on_log) as c:
            result = await c.call_tool("fx__test_tool_with_logging", {})
            assert result.content[0].text == "Tool with logging executed successfully"
            assert received == [("info", "Tool execution started"), ("info", "Tool processing data"),
                                ("info", "Tool execution completed")]
            await c.set_logging_level("warning")
            received.clear()
            await c.call_tool("fx__test_tool_with_logging", {})
            assert received == []
    log = (tmp_path / "data/logs/fx.log").read_text()
    assert log.count("INFO conformance: Tool execution started") == 2


async def test_elicitation_and_sampling_are_forwarded_to_the_calling_client(tmp_path) -> None:
    asked: list[str] = []

    async def elicit(_ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"response": "yes please"})

    sampled: list[Any] = []

    async def sample(_ctx: Any, params: Any) -> CreateMessageResult:
        sampled.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="42"), model="test-model")

    with anyio.fail_after(90):
        async with gateway(tmp_path) as (rt, server):
            async with Client(server, mode="legacy", elicitation_callback=elicit, sampling_callback=sample) as c:
                r = await c.call_tool("fx__test_elicitation", {"message": "Proceed?"})
                assert r.content[0].text == 'User response: action=accept, content={"response": "yes please"}'
                assert asked == ["[MCP server 'fx' asks] Proceed?"]  # the user sees which server asks
                r = await c.call_tool("fx__test_sampling", {"prompt": "6*7?"})
                assert r.content[0].text == "LLM response: 42"
                [req] = sampled
                assert req.system_prompt.startswith("[Requested by MCP server 'fx' through toolhost]")
                assert req.meta["toolhost/server"] == "fx"
            async with Client(server, mode="legacy") as plain:  # declared neither: declined / error at once
                r = await plain.call_tool("fx__test_elicitation", {"message": "Proceed?"})
                assert r.content[0].text == "User response: action=decline, content={}"
                r = await plain.call_tool("fx__test_sampling", {"prompt": "6*7?"})
                assert r.is_error


async def test_sampling_disabled_for_a_server_never_reaches_the_user(tmp_path) -> None:
    sampled: list[Any] = []

    async def sample(_ctx: Any, params: Any) -> CreateMessageResult:
        sampled.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="42"), model="test-model")

    fx = {"command": sys.executable, "args": [str(FIXTURE), "--stdio"],
          "toolhost": {"protocol": "legacy", "sampling": False}}
    cfg = parse_config({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {"fx": fx}})
    with anyio.fail_after(90):
        async with gateway(tmp_path, cfg) as (rt, server), \
                Client(server, mode="legacy", sampling_callback=sample) as c:
            r = await c.call_tool("fx__test_sampling", {"prompt": "6*7?"})
            assert r.is_error
            assert "sampling is disabled for server 'fx'" in r.content[0].text
    assert sampled == []


async def test_embedded_resources_and_links_pass_through_whole(tmp_path) -> None:
    with anyio.fail_after(90):
        async with gateway(tmp_path) as (rt, server), Client(server, mode="legacy") as c:
            r = await c.call_tool("fx__test_multiple_content_types", {})
            kinds = [b.type for b in r.content]
            assert kinds == ["text", "image", "resource"]
            res = r.content[2]
            assert isinstance(res, EmbeddedResource)
            assert str(res.resource.uri) == "toolhost://fx/test://mixed-content-resource"
            assert (res.resource.mime_type, res.resource.text) == ("application/json", '{"test": "data", "value": 123}')
            links = await c.call_tool("ev__get-resource-links", {"count": 2})
            link = next(b for b in links.content if b.type == "resource_link")
            assert str(link.uri) == "toolhost://ev/demo://resource/dynamic/blob/1" and link.name == "Blob Resource 1"
            readable = await c.read_resource(str(link.uri))
            assert readable.contents and str(readable.contents[0].uri) == str(link.uri)


async def test_two_users_see_different_prompts_and_a_hidden_uri_reads_like_an_unknown_one(tmp_path) -> None:
    access = AccessControl.open(tmp_path / "acl")
    try:
        access.users.add("alice")
        access.grants.add("alice", "server:fx")
        access.users.add("bob")
        access.grants.add("bob", "ev__*")
        access.grants.add("bob", "fx__test_simple_prompt")
        access.grants.add("bob", "fx__static-text")
        users = {"alice": access.principal_for_user("alice"), "bob": access.principal_for_user("bob")}
        current: dict[str, Principal] = {}
        config = _config()
        with anyio.fail_after(90):
            async with HostRuntime(config, data_dir=tmp_path / "data", policy=access, auditor=access) as rt:
                server = create_registry_server(rt, expose="all", access=access,
                                                principal_for=lambda _ctx: current["who"])
                async with Client(server, mode="legacy") as c:
                    current["who"] = users["alice"]
                    alice_prompts = {p.name for p in (await c.list_prompts()).prompts}
                    alice_uris = {str(r.uri) for r in (await c.list_resources()).resources}
                    current["who"] = users["bob"]
                    bob_prompts = {p.name for p in (await c.list_prompts()).prompts}
                    bob_uris = {str(r.uri) for r in (await c.list_resources()).resources}
                    assert alice_prompts == {"fx__test_simple_prompt", "fx__test_prompt_with_arguments",
                                             "fx__test_prompt_with_embedded_resource", "fx__test_prompt_with_image",
                                             "fx__test_input_required_result_prompt"}
                    assert bob_prompts >= {"fx__test_simple_prompt", "ev__simple-prompt"}
                    assert "fx__test_prompt_with_arguments" not in bob_prompts
                    assert "toolhost://fx/test://static-binary" in alice_uris
                    assert "toolhost://fx/test://static-binary" not in bob_uris
                    assert "toolhost://fx/test://static-text" in bob_uris

                    answers = []
                    for uri in ("toolhost://fx/test://static-binary", "toolhost://fx/test://no-such"):
                        with pytest.raises(MCPError) as err:
                            await c.read_resource(uri)
                        answers.append((err.value.code, err.value.message.replace(uri, "URI"), err.value.data))
                    assert answers[0][:2] == answers[1][:2] == (-32002, "Resource not found: URI")
                    with pytest.raises(MCPError) as hidden:
                        await c.get_prompt("fx__test_prompt_with_arguments", {"arg1": "x", "arg2": "y"})
                    assert hidden.value.message == "Unknown prompt: fx__test_prompt_with_arguments"
                    current["who"] = users["alice"]
                    ok = await c.read_resource("toolhost://fx/test://static-binary")
                    assert ok.contents[0].blob == PNG
        rows = [(r.action, r.user, r.tool, r.status) for r in access.audit_log.query(limit=50)
                if r.action in ("prompt", "resource")]
        assert ("resource", "alice", "toolhost://fx/test://static-binary", "ok") in rows
    finally:
        access.close()


async def test_a_client_that_trusts_list_changed_sees_tools_loaded_by_tool_search(tmp_path) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ToolListChangedNotification):
            changed.set()

    with anyio.fail_after(90):
        async with HostRuntime(_config(), policy=AllowAll(), data_dir=tmp_path / "data") as rt:
            server = create_registry_server(rt, expose="search")
            async with Client(server, mode="legacy", message_handler=on_message) as c:
                assert c.server_capabilities.tools.list_changed is True  # so this client re-lists
                before = {t.name for t in (await c.list_tools()).tools}
                assert "fx__test_simple_text" not in before
                await c.call_tool("tool_search", {"query": "select:fx__test_simple_text"})
                await changed.wait()
                after = {t.name for t in (await c.list_tools()).tools}
                assert "fx__test_simple_text" in after


async def test_empty_prefix_serves_original_names_and_a_collision_names_both_servers(tmp_path) -> None:
    fixture = {"command": sys.executable, "args": [str(FIXTURE), "--stdio"], "toolhost": {"prefix": ""}}
    config = parse_config({"toolhost": {"connect_timeout_seconds": 30},
                           "mcpServers": {"one": fixture, "two": dict(fixture)}})
    with anyio.fail_after(90):
        async with HostRuntime(config, policy=AllowAll(), data_dir=tmp_path / "data") as rt:
            owners = {t.server for t in rt.registry.tools()}
            assert len(owners) == 1 and rt.registry.get("test_simple_text") is not None
            loser = ({"one", "two"} - owners).pop()
            warnings = " ".join(rt.manager.connections[loser].status.warnings)
            assert "one/" in warnings and "two/" in warnings and "toolhost.prefix" in warnings
            assert rt.manager.catalog.prompt("test_simple_prompt") is not None


async def test_a_2026_client_asking_for_logs_with_the_request_log_level_gets_them(tmp_path) -> None:
    received: list[tuple[str, Any]] = []

    async def on_log(params: Any) -> None:
        received.append((params.level, params.data))

    fx = {"command": sys.executable, "args": [str(FIXTURE), "--stdio"], "toolhost": {"protocol": "legacy"}}
    cfg = parse_config({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {"fx": fx}})
    with anyio.fail_after(90):
        async with gateway(tmp_path, cfg) as (_rt, server):
            async with Client(server, mode="auto", log_level="info", logging_callback=on_log) as c:
                assert c.protocol_version == "2026-07-28"
                result = await c.call_tool("fx__test_tool_with_logging", {})
                assert result.content[0].text == "Tool with logging executed successfully"
            assert received == [("info", "Tool execution started"), ("info", "Tool processing data"),
                                ("info", "Tool execution completed")]
            received.clear()
            async with Client(server, mode="auto", log_level="error", logging_callback=on_log) as c:
                await c.call_tool("fx__test_tool_with_logging", {})
            async with Client(server, mode="auto", logging_callback=on_log) as c:  # did not ask: none
                await c.call_tool("fx__test_tool_with_logging", {})
            assert received == []
