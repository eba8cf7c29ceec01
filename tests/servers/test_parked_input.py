"""Handshake-era upstream questions reach 2026-07-28 clients as input-required rounds.

Real upstream: ``tests/peers/asking_server.py`` (stdio, pinned to the handshake era), whose tools
and prompt ask the client mid-call. Downstream: the SDK ``Client`` in-process on 2026-07-28 (it
drives ``InputRequiredResult`` rounds with its callbacks), or its session driven by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.types import CreateMessageResult, ElicitResult, InputRequiredResult, ListRootsResult, Root, TextContent

from host.config import parse_config
from host.runtime import HostRuntime
from host.upstream import relay
from host.upstream.parked_input import CALL_GONE
from registry import AllowAll  # the runtime's default is safe; these tests call tools freely
from servers.gateway.server import create_registry_server

ROOT = Path(__file__).resolve().parents[2]
ASKING = ROOT / "tests/peers/asking_server.py"

pytestmark = pytest.mark.anyio

ASKS = "[MCP server 'ask' asks]"
"""How toolhost attributes a relayed elicitation to its upstream server."""


def _config() -> Any:
    return parse_config({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {
        "ask": {"command": sys.executable, "args": [str(ASKING)], "toolhost": {"protocol": "legacy"}}}})


async def _until_no_parked(server: Any) -> None:
    while server.listen_relay.catalog.parking.parked:
        await anyio.sleep(0.01)  # the parked call ends in the runtime's task group


async def test_upstream_questions_reach_a_2026_client_and_its_answers_reach_the_upstream(tmp_path) -> None:
    asked: list[str] = []
    colours = iter(["green"])

    async def elicit(_ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        if params.message == f"{ASKS} Your colour?":
            return ElicitResult(action="accept", content={"colour": next(colours)})
        return ElicitResult(action="accept", content={"name": "Ada"})

    async def sample(_ctx: Any, params: Any) -> CreateMessageResult:
        asked.append(params.messages[0].content.text)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="42"), model="m")

    async def roots(_ctx: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri="file:///work/project", name="project")])

    with anyio.fail_after(90):
        async with HostRuntime(_config(), policy=AllowAll(), data_dir=tmp_path / "data") as rt:
            assert rt.manager.connection("ask").status.protocol_version == "2025-11-25"
            server = create_registry_server(rt, expose="all")
            async with Client(server, mode="auto", elicitation_callback=elicit, sampling_callback=sample,
                              list_roots_callback=roots) as c:
                assert c.protocol_version == "2026-07-28"
                r = await c.call_tool("ask__ask_name", {})
                assert r.content[0].text == "name=accept:Ada"
                r = await c.call_tool("ask__ask_twice", {})  # two rounds, one question each
                assert r.content[0].text == "name=accept:Ada colour=accept:green"
                r = await c.call_tool("ask__ask_model", {})
                assert r.content[0].text == "model said 42"
                r = await c.call_tool("ask__list_roots", {})
                assert r.content[0].text == "roots=file:///work/project"
                p = await c.get_prompt("ask__greeting")
                assert p.messages[0].content.text == "Hello accept:Ada"
                assert asked == [f"{ASKS} Your name?", f"{ASKS} Your name?", f"{ASKS} Your colour?", "6*7?",
                                 f"{ASKS} Your name?"]  # each question says which server asks
            await _until_no_parked(server)


async def test_kinds_a_2026_client_did_not_declare_are_answered_at_once(tmp_path) -> None:
    with anyio.fail_after(90):
        async with HostRuntime(_config(), policy=AllowAll(), data_dir=tmp_path / "data") as rt:
            server = create_registry_server(rt, expose="all")
            async with Client(server, mode="auto") as c:
                r = await c.call_tool("ask__ask_name", {})
                assert r.content[0].text == "name=decline:-"
                r = await c.call_tool("ask__ask_model", {})
                assert r.is_error is True
                assert "did not declare the sampling capability" in r.content[0].text
            assert server.listen_relay.catalog.parking.parked == 0


async def test_an_unanswered_question_is_cancelled_upstream_and_a_late_retry_is_told_to_start_again(
        tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(relay, "FORWARD_TIMEOUT_SECONDS", 0.5)

    async def elicit(_ctx: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada"})

    with anyio.fail_after(90):
        async with HostRuntime(_config(), policy=AllowAll(), data_dir=tmp_path / "data") as rt:
            server = create_registry_server(rt, expose="all")
            async with Client(server, mode="auto", elicitation_callback=elicit) as c:
                first = await c.session.call_tool("ask__ask_name", {}, allow_input_required=True)
                assert isinstance(first, InputRequiredResult)
                [(key, request)] = first.input_requests.items()
                assert (key, request.method, request.params.message) == ("toolhost-1", "elicitation/create",
                                                                          f"{ASKS} Your name?")
                assert server.listen_relay.catalog.parking.parked == 1
                await _until_no_parked(server)  # nobody answered: the upstream got "cancel" and finished
                with pytest.raises(MCPError) as err:
                    await c.session.call_tool("ask__ask_name", {}, allow_input_required=True,
                                              input_responses={key: ElicitResult(action="accept",
                                                                                 content={"name": "Ada"})},
                                              request_state=first.request_state)
                assert (err.value.code, err.value.data) == (-32602, {"reason": CALL_GONE})
                assert err.value.message == ("toolhost: the call waiting for this input has ended (answered too "
                                             "late, or toolhost restarted); start the call again")
                r = await c.call_tool("ask__ask_name", {})  # starting again works
                assert r.content[0].text == "name=accept:Ada"
