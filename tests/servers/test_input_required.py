"""The 2026-07-28 input-required flow (SEP-2322) through toolhost.

Real upstream: our conformance fixture (``tests/peers/conformance_server.py``, stdio) on the
default protocol (2026-07-28), whose ``test_input_required_result_*`` tools and prompt answer with
``InputRequiredResult``. Downstream: the SDK ``Client`` in-process, on 2026-07-28 (the client gets
the input requests back and retries) and on the handshake era (toolhost drives the rounds and asks
the client with classic server→client requests).
"""

from __future__ import annotations

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
    InputRequiredResult,
    ListRootsResult,
    Root,
    TextContent,
)

from host.config import parse_config
from host.runtime import HostRuntime
from registry import (
    AllowAll,  # the runtime's default is safe; these tests call tools freely
    Principal,
)
from servers.gateway.server import create_registry_server

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests/peers/conformance_server.py"

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def gateway(tmp_path: Path, **kwargs: Any) -> AsyncIterator[tuple[HostRuntime, Any]]:
    config = parse_config({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {
        "fx": {"command": sys.executable, "args": [str(FIXTURE), "--stdio"]}}})
    async with HostRuntime(config, policy=AllowAll(), data_dir=tmp_path / "data") as rt:
        assert rt.manager.connection("fx").status.protocol_version == "2026-07-28"
        yield rt, create_registry_server(rt, expose="all", **kwargs)


async def _elicit(_ctx: Any, params: Any) -> ElicitResult:
    field = next(iter(params.requested_schema["properties"]))
    answers = {"name": "Alice", "color": "blue", "ok": True}
    return ElicitResult(action="accept", content={field: answers.get(field, "x")})


async def _sample(_ctx: Any, params: Any) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(type="text", text="Paris"), model="m",
                               stop_reason="endTurn")


async def _roots(_ctx: Any) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///work/a", name="a")])


def _text(result: Any) -> str:
    return result.content[0].text


async def test_a_2026_client_gets_the_upstream_input_requests_and_its_retry_completes(tmp_path) -> None:
    with anyio.fail_after(90):
        async with gateway(tmp_path) as (_rt, server), Client(
            server, mode="2026-07-28", elicitation_callback=_elicit, sampling_callback=_sample,
            list_roots_callback=_roots,
        ) as c:
            first = await c.session.call_tool("fx__test_input_required_result_elicitation", {},
                                              allow_input_required=True)
            assert isinstance(first, InputRequiredResult)
            assert list(first.input_requests) == ["user_name"]
            ask = first.input_requests["user_name"]
            assert ask.method == "elicitation/create"
            assert ask.params.message == "[MCP server 'fx' asks] What is your name?"  # which server asks
            assert first.request_state.startswith("v1.")  # toolhost's own state, sealed
            done = await c.session.call_tool(
                "fx__test_input_required_result_elicitation", {}, allow_input_required=True,
                input_responses={"user_name": ElicitResult(action="accept", content={"name": "Bob"})},
                request_state=first.request_state)
            assert _text(done) == "Hello, Bob!"

            # the SDK's own driver over toolhost: three rounds, upstream state carried inside toolhost's
            assert _text(await c.call_tool("fx__test_input_required_result_multi_round", {})) == "Alice likes blue"
            many = await c.call_tool("fx__test_input_required_result_multiple_inputs", {})
            assert _text(many) == "All inputs received for Alice: state-ok"
            assert _text(await c.call_tool("fx__test_input_required_result_sampling", {})) == "Sampling said: Paris"
            assert _text(await c.call_tool("fx__test_input_required_result_list_roots", {})) == "Roots: file:///work/a"
            # call_tool (the search-mode entry point) relays the same way
            via = await c.call_tool("call_tool",
                                    {"name": "fx__test_input_required_result_multi_round", "arguments": {}})
            assert _text(via) == "Alice likes blue"

            # prompts/get too
            prompt = await c.session.get_prompt("fx__test_input_required_result_prompt", allow_input_required=True)
            assert isinstance(prompt, InputRequiredResult) and list(prompt.input_requests) == ["user_context"]
            rendered = await c.get_prompt("fx__test_input_required_result_prompt")
            assert rendered.messages[0].content.text == "Use this context: x"


async def test_a_tampered_or_foreign_request_state_is_refused(tmp_path) -> None:
    user = ["alice"]

    def principal_for(_ctx: Any) -> Principal:
        return Principal(user=user[0])

    with anyio.fail_after(90):
        async with gateway(tmp_path, principal_for=principal_for) as (_rt, server), Client(
            server, mode="2026-07-28", elicitation_callback=_elicit,
        ) as c:
            tool = "fx__test_input_required_result_request_state"
            first = await c.session.call_tool(tool, {}, allow_input_required=True)
            assert isinstance(first, InputRequiredResult)
            answer = {"confirm": ElicitResult(action="accept", content={"ok": True})}
            with pytest.raises(MCPError) as tampered:
                await c.session.call_tool(tool, {}, allow_input_required=True, input_responses=answer,
                                          request_state=first.request_state + "x")
            assert (tampered.value.code, tampered.value.message) == (-32602, "Invalid or expired requestState")
            with pytest.raises(MCPError) as other_args:  # bound to the call's arguments
                await c.session.call_tool(tool, {"extra": 1}, allow_input_required=True, input_responses=answer,
                                          request_state=first.request_state)
            assert other_args.value.code == -32602
            user[0] = "bob"  # another toolhost user replays alice's state
            with pytest.raises(MCPError) as foreign:
                await c.session.call_tool(tool, {}, allow_input_required=True, input_responses=answer,
                                          request_state=first.request_state)
            assert (foreign.value.code, foreign.value.message) == (-32602, "Invalid or expired requestState")
            user[0] = "alice"
            done = await c.session.call_tool(tool, {}, allow_input_required=True, input_responses=answer,
                                             request_state=first.request_state)
            assert _text(done) == "Confirmed: state-ok"


async def test_input_kinds_the_client_did_not_declare_are_answered_by_toolhost(tmp_path) -> None:
    with anyio.fail_after(90):
        async with gateway(tmp_path) as (_rt, server):
            async with Client(server, mode="2026-07-28", sampling_callback=_sample) as c:
                # toolhost declared every kind upstream, so the fixture asks for elicitation and sampling;
                # this client declared sampling only: it is asked for sampling, toolhost declines the elicitation
                first = await c.session.call_tool("fx__test_input_required_result_capabilities", {},
                                                  allow_input_required=True)
                assert isinstance(first, InputRequiredResult) and list(first.input_requests) == ["greeting"]
                done = await c.call_tool("fx__test_input_required_result_capabilities", {})
                assert _text(done) == "Inputs received: greeting, user_name"  # user_name: toolhost's decline
                # roots/list has no safe default: MissingRequiredClientCapabilityError naming it
                with pytest.raises(MCPError) as no_roots:
                    await c.session.call_tool("fx__test_input_required_result_list_roots", {},
                                              allow_input_required=True)
                assert (no_roots.value.code, no_roots.value.data) == (-32021, {"requiredCapabilities": {"roots": {}}})
                assert no_roots.value.message == ("toolhost: 'fx' needs roots/list input, but the client that made "
                                                  "this request did not declare the roots capability")
            async with Client(server, mode="2026-07-28") as bare:  # declares nothing
                with pytest.raises(MCPError) as no_sampling:
                    await bare.session.call_tool("fx__test_missing_capability", {}, allow_input_required=True)
                assert (no_sampling.value.code, no_sampling.value.data) == (
                    -32021, {"requiredCapabilities": {"sampling": {}}})
                assert no_sampling.value.message == (
                    "toolhost: 'fx' needs sampling/createMessage input, but the client that made this request "
                    "did not declare the sampling capability")


async def test_a_handshake_era_client_is_asked_with_classic_requests(tmp_path) -> None:
    with anyio.fail_after(90):
        async with gateway(tmp_path) as (_rt, server), Client(
            server, mode="legacy", elicitation_callback=_elicit, sampling_callback=_sample, list_roots_callback=_roots,
        ) as c:
            assert _text(await c.call_tool("fx__test_input_required_result_multi_round", {})) == "Alice likes blue"
            many = await c.call_tool("fx__test_input_required_result_multiple_inputs", {})
            assert _text(many) == "All inputs received for Alice: state-ok"
            rendered = await c.get_prompt("fx__test_input_required_result_prompt")
            assert rendered.messages[0].content.text == "Use this context: x"
