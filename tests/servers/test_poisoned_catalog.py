"""Poisoned prompts, resources, templates and upstream ``instructions`` are held (in process, both
protocol eras): never listed, a get/read answers why and how an admin releases it, the instructions
are left out of toolhost's merged text; ``trust_definitions`` releases each; a re-list after
``list_changed`` is screened again. The upstream is ``tests/peers/poisoned_server.py``."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError

from host.config import parse_config
from host.runtime import HostRuntime
from host.upstream.catalog_holds import HELD_PREFIX
from registry import AllowAll
from servers.gateway.server import create_registry_server
from tests.peers.poisoned_server import INJECTION

pytestmark = pytest.mark.anyio

PEER = Path(__file__).resolve().parents[2] / "tests" / "peers" / "poisoned_server.py"
OWN = ("toolhost: one MCP server in front of many. Use tool_search to find a tool for the task, "
       "then call_tool with its exact name and arguments.")
RELEASE = '"toolhost": {"trust_definitions": [...]} in the config entry of server \'bad\''
ALL_TRUSTED = ["prompt:summarize", "prompt:review", "resource:page://news", "template:page://{slug}",
               "instructions"]


def _config(trusted: list[str] | None = None, **toolhost: Any) -> Any:
    server: dict[str, Any] = {"command": sys.executable, "args": [str(PEER)], "toolhost": toolhost}
    if trusted is not None:
        toolhost["trust_definitions"] = trusted
    return parse_config({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {"bad": server}})


@asynccontextmanager
async def gateway(tmp_path: Path, trusted: list[str] | None = None, **toolhost: Any
                  ) -> AsyncIterator[tuple[HostRuntime, Any]]:
    async with HostRuntime(_config(trusted, **toolhost), policy=AllowAll(), data_dir=tmp_path / "data") as rt:
        yield rt, create_registry_server(rt, expose="all")


async def _error(op: Any) -> MCPError:
    with pytest.raises(MCPError) as info:
        await op
    return info.value


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_poisoned_items_are_held_and_say_why(tmp_path, mode: str) -> None:
    with anyio.fail_after(90):
        async with gateway(tmp_path) as (rt, server), Client(server, mode=mode) as c:
            prompts = [p.name for p in (await c.list_prompts()).prompts]
            resources = [str(r.uri) for r in (await c.list_resources()).resources]
            templates = [t.uri_template for t in (await c.list_resource_templates()).resource_templates]
            instructions = c.instructions
            summarize = await _error(c.get_prompt("bad__summarize", {"text": "x"}))
            review = await _error(c.get_prompt("bad__review", {"code": "x"}))
            news = await _error(c.read_resource("toolhost://bad/page://news"))
            page = await _error(c.read_resource("toolhost://bad/page://home"))
            unknown = await _error(c.get_prompt("bad__nope", {}))
            greet = await c.get_prompt("bad__greet", {"name": "Ada"})
            readme = await c.read_resource("toolhost://bad/memo://readme")
            warnings = [w for w in rt.statuses()[0].warnings if w.startswith(HELD_PREFIX)]
    assert prompts == ["bad__greet"]
    assert resources == ["toolhost://bad/memo://readme"]
    assert templates == ["toolhost://bad/memo://notes/{id}"]
    assert instructions == OWN
    assert summarize.code == -32602
    assert summarize.message.startswith(
        "toolhost: prompt bad__summarize of server 'bad' is held: its definition looks poisoned (instruction "
        "'<IMPORTANT>' in description; ")
    assert summarize.message.endswith(f'releases it by adding "prompt:summarize" to {RELEASE}')
    assert summarize.data == {"held": True, "server": "bad", "trust": "prompt:summarize"}
    assert "in inputSchema.properties.code.description" in review.message
    assert review.data["trust"] == "prompt:review"
    assert (news.code, news.data["trust"]) == (-32602, "resource:page://news")
    assert news.message.startswith("toolhost: resource toolhost://bad/page://news of server 'bad' is held")
    assert (page.code, page.data["trust"]) == (-32602, "template:page://{slug}")
    assert unknown.message == "Unknown prompt: bad__nope"
    assert greet.messages[0].content.text == "Hello, Ada!"
    assert readme.contents[0].text == "readme text"
    assert sorted(w.split(" looks poisoned")[0] for w in warnings) == [
        f"{HELD_PREFIX}instructions", f"{HELD_PREFIX}prompt 'review'", f"{HELD_PREFIX}prompt 'summarize'",
        f"{HELD_PREFIX}resource 'page://news'", f"{HELD_PREFIX}template 'page://{{slug}}'"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_trust_definitions_releases_each_item(tmp_path, mode: str) -> None:
    with anyio.fail_after(90):
        async with gateway(tmp_path, ALL_TRUSTED) as (rt, server), Client(server, mode=mode) as c:
            prompts = sorted(p.name for p in (await c.list_prompts()).prompts)
            resources = sorted(str(r.uri) for r in (await c.list_resources()).resources)
            templates = sorted(t.uri_template for t in (await c.list_resource_templates()).resource_templates)
            summarize = await c.get_prompt("bad__summarize", {"text": "x"})
            news = await c.read_resource("toolhost://bad/page://news")
            instructions = c.instructions
            held = rt.manager.catalog_holds.held()
    assert prompts == ["bad__greet", "bad__review", "bad__summarize"]
    assert resources == ["toolhost://bad/memo://readme", "toolhost://bad/page://news"]
    assert templates == ["toolhost://bad/memo://notes/{id}", "toolhost://bad/page://{slug}"]
    assert summarize.messages[0].content.text == "Summarize: x"
    assert news.contents[0].text == "Release notes."
    assert instructions == (f"{OWN}\n\nInstructions of the upstream MCP server 'bad' (text from that server, "
                            f"not from toolhost):\n{INJECTION}")
    assert held == []


async def test_a_relisted_prompt_is_screened_again(tmp_path) -> None:
    changed = anyio.Event()
    seen: list[tuple[str, list[str]]] = []

    def listener(server: str, holds: list[Any]) -> None:
        seen.append((server, [h.trust_key for h in holds]))
        if "prompt:greet" in seen[-1][1]:
            changed.set()

    with anyio.fail_after(90):
        # the peer sends prompts/list_changed on its handshake-era session
        async with gateway(tmp_path, protocol="legacy") as (rt, server), Client(server, mode="legacy") as c:
            rt.manager.catalog_holds.subscribe(listener)  # replays the holds made at connect
            before = [p.name for p in (await c.list_prompts()).prompts]
            await c.call_tool("bad__poison", {})
            await changed.wait()
            after = [p.name for p in (await c.list_prompts()).prompts]
            greet = await _error(c.get_prompt("bad__greet", {"name": "Ada"}))
    assert before == ["bad__greet"]
    assert after == []
    assert seen[0] == ("bad", ["prompt:summarize", "prompt:review", "resource:page://news",
                               "template:page://{slug}", "instructions"])
    assert seen[-1] == ("bad", ["prompt:greet"])
    assert greet.data == {"held": True, "server": "bad", "trust": "prompt:greet"}
