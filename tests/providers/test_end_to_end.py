"""All three APIs end to end: loop driver → ProviderModel (adapter) → wire-level scripted model →
pipeline → real example MCP servers in process, whole and streamed.

Script: three parallel calls (an ok lookup, a failing lookup, an image), then a tool_search that
loads a deferred tool, then a call to it, then a final answer.
"""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from typing import Any

import anyio
import pytest
from mcp import Client

from host.calls import ImageBlock, ResultStatus
from host.agent.loop import StopReason, run_conversation
from host.upstream.manager import tool_definition
from host.pipeline import CallContext, Pipeline
from host.agent.transcript import Message
from host.agent.providers import (
    TOOL_SEARCH_NAME,
    AnthropicMessagesAdapter,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    ProviderModel,
    WithToolSearch,
    deferred_state,
    to_conversation,
)
from registry import ToolOverrides, ToolRegistry, assign_qualified_names, build_record
from registry.search import DeferredLoadingState, SearchIndex
from servers.examples import flaky, orders
from tests.support import InProcessExecutor

from .fake_api import REASONING, THINKING, FakeAPI, Step

GET_ORDER = "orders__get_order"
SCRIPT = [
    Step(
        reasoning=True,
        text="Looking these up.",
        calls=[
            ("call_a1", "flaky__lookup_order", {"order_id": "A1"}),
            ("call_z9", "flaky__lookup_order", {"order_id": "Z9"}),
            ("call_img", "flaky__image", {}),
        ],
    ),
    Step(calls=[("call_search", TOOL_SEARCH_NAME, {"query": "look up one order by its id", "limit": 1})]),
    Step(calls=[("call_get", GET_ORDER, {"order_id": "A1001"})]),
    Step(text="A1 shipped, Z9 does not exist, and A1001 is on its way."),
]


async def _run(api: str, stream: bool, tmp_path) -> tuple[Any, FakeAPI, DeferredLoadingState, ProviderModel]:
    adapter = {
        "openai_chat": OpenAIChatAdapter(),
        "openai_responses": OpenAIResponsesAdapter(),
        "anthropic_messages": AnthropicMessagesAdapter(),
    }[api]
    registry, executor = ToolRegistry(), InProcessExecutor()
    async with AsyncExitStack() as stack:
        for server, app in {"flaky": flaky.create_server(), "orders": orders.create_server()}.items():
            client = await stack.enter_async_context(Client(app))
            executor.clients[server] = client
            tools = (await client.list_tools()).tools
            names = assign_qualified_names(server, [t.name for t in tools], server=server)
            registry.replace_server(
                server,
                [
                    build_record(
                        server=server,
                        qualified_name=names[t.name],
                        definition=tool_definition(t),
                        overrides=ToolOverrides(always_load=server == "flaky"),
                        default_timeout_seconds=5.0,
                    )
                    for t in tools
                ],
            )
        index = SearchIndex()
        index.attach(registry)
        state = DeferredLoadingState()
        pipeline = WithToolSearch(Pipeline(registry, executor, spill_dir=tmp_path / "spill"), index, state)
        fake = FakeAPI(api, SCRIPT, stream=stream)
        params = {"max_tokens": 1024} if api == "anthropic_messages" else {}
        model = ProviderModel(adapter, fake, registry.tools, model="m", tool_search=True, params=params)
        history = [Message(role="system", text="You are the order desk."), Message(role="user", text="Status?")]
        with anyio.fail_after(30):
            outcome = await run_conversation(model, pipeline, history, CallContext(conversation_id="e2e", adapter=api))
        return outcome, fake, state, model


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", ["openai_chat", "openai_responses", "anthropic_messages"])
async def test_scripted_conversation_end_to_end(api, stream, tmp_path):
    outcome, fake, state, model = await _run(api, stream, tmp_path)
    assert outcome.stop_reason is StopReason.FINAL_ANSWER
    assert outcome.final_text == SCRIPT[-1].text
    results = {m.result.call_id: m.result for m in outcome.messages if m.role == "tool"}
    assert results["call_a1"].status is ResultStatus.OK and results["call_a1"].text == "order A1: shipped"
    assert results["call_z9"].status is ResultStatus.TOOL_ERROR and results["call_z9"].text == "no such order: Z9"
    assert any(isinstance(b, ImageBlock) for b in results["call_img"].content)
    assert results["call_search"].structured == {"loaded": [GET_ORDER]}
    assert results["call_get"].status is ResultStatus.OK and '"A1001"' in results["call_get"].text
    assert state.loaded == [GET_ORDER]
    assert deferred_state(to_conversation(outcome.messages)).loaded == [GET_ORDER]  # survives replay
    assert len(fake.requests) == 4
    second, third, fourth = fake.requests[1], fake.requests[2], fake.requests[3]
    CHECKS[api](second, third, fourth)


def _chat(second, third, fourth):
    tools = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["call_a1", "call_z9", "call_img"]
    assert tools[1]["content"] == "no such order: Z9"
    assert second["messages"][-1]["role"] == "user"
    assert second["messages"][-1]["content"][-1]["type"] == "image_url"
    assert GET_ORDER not in [t["function"]["name"] for t in second["tools"]]
    names = [t["function"]["name"] for t in third["tools"]]
    assert names[-1] == GET_ORDER and json.dumps(third["tools"][:-1]) == json.dumps(second["tools"])
    assert third["tools"] == fourth["tools"]


def _responses(second, third, fourth):
    items = second["input"]
    assert items[1] == REASONING  # encrypted reasoning replayed verbatim
    assert [i["call_id"] for i in items if i.get("type") == "function_call_output"] == [
        "call_a1",
        "call_z9",
        "call_img",
    ]
    image_output = [i for i in items if i.get("call_id") == "call_img" and i.get("type") == "function_call_output"][0]
    assert [p["type"] for p in image_output["output"]] == ["input_text", "input_image"]
    search_out = [i for i in third["input"] if i.get("type") == "tool_search_output"][0]
    assert [t["name"] for t in search_out["tools"]] == [GET_ORDER] and search_out["execution"] == "client"
    assert search_out["call_id"] == "call_search"
    assert json.dumps(second["tools"]) == json.dumps(third["tools"]) == json.dumps(fourth["tools"])


def _anthropic(second, third, fourth):
    assert second["messages"][1]["content"][0] == THINKING  # signature replayed verbatim
    results = second["messages"][2]["content"]
    assert [b["tool_use_id"] for b in results] == ["call_a1", "call_z9", "call_img"]
    assert results[1]["is_error"] is True and "is_error" not in results[0]
    assert [b["type"] for b in results[2]["content"]] == ["text", "image"]
    search = third["messages"][4]["content"][0]
    assert search == {
        "type": "tool_result",
        "tool_use_id": "call_search",
        "content": [{"type": "tool_reference", "tool_name": GET_ORDER}],
    }
    deferred = {t["name"]: t.get("defer_loading") for t in fourth["tools"]}
    assert deferred[GET_ORDER] is True and deferred["flaky__lookup_order"] is None
    assert json.dumps(second["tools"]) == json.dumps(third["tools"]) == json.dumps(fourth["tools"])


CHECKS = {"openai_chat": _chat, "openai_responses": _responses, "anthropic_messages": _anthropic}


@pytest.mark.anyio
async def test_strict_nulls_for_optional_arguments_are_decoded_before_the_pipeline_validates(tmp_path):
    """Chat strict mode: the model must send every key, so it sends ``"limit": null`` for an optional
    integer; the adapter's declarations turn that back into "absent" and the call succeeds."""
    registry, executor = ToolRegistry(), InProcessExecutor()
    async with Client(orders.create_server()) as client:
        executor.clients["orders"] = client
        tools = (await client.list_tools()).tools
        names = assign_qualified_names("orders", [t.name for t in tools], server="orders")
        registry.replace_server(
            "orders",
            [build_record(server="orders", qualified_name=names[t.name], definition=tool_definition(t)) for t in tools],
        )
        fake = FakeAPI(
            "openai_chat",
            [
                Step(calls=[("c1", "orders__list_orders", {"status": None, "customer": None, "limit": None})]),
                Step(text="done"),
            ],
        )
        model = ProviderModel(OpenAIChatAdapter(), fake, registry.tools, model="m")
        pipeline = Pipeline(registry, executor, spill_dir=tmp_path / "spill")
        with anyio.fail_after(30):
            outcome = await run_conversation(
                model, pipeline, [Message(role="user", text="list")], CallContext(conversation_id="strict")
            )
    declared = {t["function"]["name"]: t["function"]["strict"] for t in fake.requests[0]["tools"]}
    assert declared["orders__list_orders"] is True
    result = [m.result for m in outcome.messages if m.role == "tool"][0]
    assert result.status is ResultStatus.OK, result.error
    assert json.loads(result.text)["count"] == len(orders.SAMPLE_ORDERS)
