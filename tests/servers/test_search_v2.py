"""tool_search v2 end to end: hybrid search in a real runtime, context on every hit, and learning
from a search followed by a successful call."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from host.access import AccessControl
from host.store.usage import UsageMemory
from host.access import OpenAccessPolicy
from servers.gateway.server import create_registry_server
from tests.servers.conftest import example, runtime


@pytest.mark.anyio
async def test_search_then_successful_call_is_remembered_and_hits_carry_context(tmp_path):
    access = AccessControl.open(tmp_path)
    try:
        async with runtime({"orders": example("servers.examples.orders")}, tmp_path,
                           policy=OpenAccessPolicy(access), auditor=access, dense=True) as rt:
            assert rt.vector_worker is not None
            with anyio.fail_after(60):
                assert await anyio.to_thread.run_sync(rt.vector_worker.wait_idle, 60)
            assert rt.search_index.vector_count() == len(rt.registry.tools())
            srv = create_registry_server(rt, access=access)
            with anyio.fail_after(60):
                async with Client(srv, mode="legacy") as c:
                    # Chinese: "check the status of my order" finds the English order tools.
                    found = await c.call_tool("tool_search", {"query": "查看我的订单状态", "limit": 3})
                    names = [t["name"] for t in found.structured_content["tools"]]
                    assert "orders__get_order" in names
                    hit = next(t for t in found.structured_content["tools"] if t["name"] == "orders__get_order")
                    assert (hit["risk"], hit["needs_approval"], hit["available"]) == ("read", False, True)
                    assert "- orders__get_order [read]: " in found.content[0].text
                    done = await c.call_tool("call_tool", {"name": "orders__get_order",
                                                           "arguments": {"order_id": "A1001"}})
                    assert not done.is_error
                    # A failed call teaches nothing.
                    bad = await c.call_tool("call_tool", {"name": "orders__cancel_order",
                                                          "arguments": {"order_id": "nope"}})
                    assert bad.is_error
            tool = rt.registry.snapshot().get("orders__get_order")
            assert UsageMemory(access.store).load() == {
                "orders__get_order": (tool.definition_hash, ["查看我的订单状态"]),
            }
            assert rt.search_index.memory() == {"orders__get_order": (tool.definition_hash, ("查看我的订单状态",))}
            # The vector worker embeds the remembered query (the memory's dense half).
            with anyio.fail_after(60):
                assert await anyio.to_thread.run_sync(rt.vector_worker.wait_idle, 60)
            assert rt.search_index.missing_memory_vectors() == []
            assert rt.search_index.set_memory_vectors([("查看我的订单状态", rt.vector_worker.embedder.embed(["查看我的订单状态"])[0])]) == 1
    finally:
        access.close()
