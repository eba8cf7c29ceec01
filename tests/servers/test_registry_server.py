"""The registry server used by the SDK's own client: in-process and over real streamable HTTP."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from registry import PatternPolicy, Principal
from servers.gateway.server import create_registry_server
from servers.http.runner import serve_http
from tests.servers.conftest import everything, example, runtime

pytestmark = pytest.mark.anyio


async def test_http_list_search_and_call(tmp_path):
    servers = {"orders": example("servers.examples.orders"),
               "notes": example("servers.examples.notes", "--data-dir", str(tmp_path / "notes")) | {
                   "toolhost": {"always_load": ["list_notes"]}}}
    async with runtime(servers, tmp_path) as rt:
        srv = create_registry_server(rt)
        stop = anyio.Event()
        ready: list[str] = []
        got_url = anyio.Event()

        def on_ready(url: str) -> None:
            ready.append(url)
            got_url.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_http(srv, port=0, stop=stop, on_ready=on_ready))
            with anyio.fail_after(20):
                await got_url.wait()
            url = ready[0]
            assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
            with anyio.fail_after(30):
                async with Client(url) as c:
                    names = [t.name for t in (await c.list_tools()).tools]
                    assert names == ["tool_search", "call_tool", "notes__list_notes"]

                    found = await c.call_tool("tool_search", {"query": "cancel my order", "limit": 3})
                    top3 = [t["name"] for t in found.structured_content["tools"]]
                    assert "orders__cancel_order" in top3
                    hit = next(t for t in found.structured_content["tools"] if t["name"] == "orders__cancel_order")
                    assert hit["risk"] == "destructive" and hit["input_schema"]["required"] == ["order_id"]
                    text = found.content[0].text
                    assert text.startswith("Found 3 tool(s), now callable:\n- " + top3[0] + " [")
                    # Risk tier, approval and availability ride on every hit line and definition.
                    assert ("- orders__cancel_order [destructive]: Cancel an order that has not shipped yet "
                            "and refund it.") in text
                    assert (hit["needs_approval"], hit["available"], found.structured_content["weak"]) == (False, True, False)
                    assert "(params: order_id: string, reason?: string)" in text
                    # 2026-07-28 exchanges are stateless: the short list stays short.
                    names = [t.name for t in (await c.list_tools(cache_mode="refresh")).tools]
                    assert names == ["tool_search", "call_tool", "notes__list_notes"]

                    done = await c.call_tool("call_tool", {"name": "orders__cancel_order",
                                                           "arguments": {"order_id": "A1005"}})
                    assert not done.is_error and done.structured_content["refund_cents"] == 15900

                    refused = await c.call_tool("call_tool", {"name": "orders__cancel_order",
                                                              "arguments": {"order_id": "A1003"}})
                    assert refused.is_error and "already shipped" in refused.content[0].text

                    direct = await c.call_tool("notes__list_notes", {})
                    assert direct.structured_content == {"notes": [], "count": 0}
            stop.set()


async def test_unknown_and_invisible_tools_answer_the_same(tmp_path):
    async with runtime({"orders": example("servers.examples.orders")}, tmp_path,
                       policy=PatternPolicy(allow=("orders__get_order",))) as rt:
        srv = create_registry_server(rt, principal_for=lambda _ctx: Principal(user="u"))
        with anyio.fail_after(20):
            async with Client(srv) as c:
                hidden = await c.call_tool("call_tool", {"name": "orders__cancel_order", "arguments": {"order_id": "A1001"}})
                unknown = await c.call_tool("call_tool", {"name": "orders__nonexistent", "arguments": {}})
                assert hidden.is_error and unknown.is_error
                assert hidden.content[0].text.replace("cancel_order", "X") == unknown.content[0].text.replace("nonexistent", "X")
                search = await c.call_tool("tool_search", {"query": "cancel order", "limit": 5})
                assert [t["name"] for t in search.structured_content["tools"]] == ["orders__get_order"]


async def test_expose_all_lists_every_visible_tool(tmp_path):
    async with runtime({"orders": example("servers.examples.orders")}, tmp_path) as rt:
        srv = create_registry_server(rt, expose="all")
        with anyio.fail_after(20):
            async with Client(srv) as c:
                tools = {t.name: t for t in (await c.list_tools()).tools}
                assert sorted(tools) == ["orders__cancel_order", "orders__get_order", "orders__list_orders"]
                assert tools["orders__cancel_order"].annotations.destructive_hint is True
                r = await c.call_tool("orders__get_order", {"order_id": "A1001"})
                assert r.structured_content["customer"] == "ada@example.com"


async def test_bad_meta_tool_arguments_are_explained(tmp_path):
    async with runtime({"orders": example("servers.examples.orders")}, tmp_path) as rt:
        srv = create_registry_server(rt)
        with anyio.fail_after(20):
            async with Client(srv) as c:
                r1 = await c.call_tool("call_tool", {"name": "orders__get_order", "arguments": "{oops"})
                assert r1.is_error and "not valid JSON" in r1.content[0].text
                r2 = await c.call_tool("call_tool", {"name": "orders__get_order", "arguments": "{\"order_id\": \"A1002\"}"})
                assert not r2.is_error and r2.structured_content["status"] == "paid"
                r3 = await c.call_tool("tool_search", {"query": "orders", "limit": 0})
                assert r3.is_error and "from 1 to 50" in r3.content[0].text


async def test_search_hits_are_loaded_for_the_connection(tmp_path):
    """Deferred loading on a handshake-era connection: hits join tools/list and a list_changed is sent."""
    async with runtime({"orders": example("servers.examples.orders")}, tmp_path) as rt:
        srv = create_registry_server(rt)
        changed = anyio.Event()

        async def on_message(message) -> None:
            if type(message).__name__ == "ToolListChangedNotification":
                changed.set()

        with anyio.fail_after(20):
            async with Client(srv, mode="legacy", message_handler=on_message) as c:
                assert [t.name for t in (await c.list_tools()).tools] == ["tool_search", "call_tool"]
                await c.call_tool("tool_search", {"query": "select:orders__get_order"})
                await changed.wait()
                listed = {t.name: t for t in (await c.list_tools()).tools}
                assert list(listed) == ["tool_search", "call_tool", "orders__get_order"]
                assert listed["orders__get_order"].input_schema["required"] == ["order_id"]
                direct = await c.call_tool("orders__get_order", {"order_id": "A1002"})
                assert direct.structured_content["status"] == "paid"


async def test_upstream_progress_is_forwarded_to_the_client(tmp_path):
    """server-everything's long-running operation reports 3 steps; our client sees all of them."""
    async with runtime({"ev": everything()}, tmp_path) as rt:
        srv = create_registry_server(rt)
        seen: list[tuple[float, float | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total))

        with anyio.fail_after(30):
            async with Client(srv) as c:
                r = await c.call_tool("call_tool", {"name": "ev__trigger-long-running-operation",
                                                    "arguments": {"duration": 0.3, "steps": 3}},
                                      progress_callback=on_progress)
        assert not r.is_error
        assert seen == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.parametrize("host", ["127.0.0.2", "::1"])
async def test_dns_rebinding_is_refused_on_every_loopback_spelling(tmp_path, host):
    import httpx2

    async with runtime({"orders": example("servers.examples.orders")}, tmp_path) as rt:
        srv = create_registry_server(rt)
        stop, ready = anyio.Event(), anyio.Event()
        urls: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_http(srv, host=host, port=0, stop=stop,
                                             on_ready=lambda u: (urls.append(u), ready.set())))
            with anyio.fail_after(20):
                await ready.wait()
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
                headers = {"Accept": "application/json, text/event-stream"}
                async with httpx2.AsyncClient() as http:
                    evil = await http.post(urls[0], json=body, headers={
                        **headers, "Host": "attacker.example", "Origin": "http://attacker.example"})
                    assert evil.status_code == 421
                async with Client(urls[0]) as c:  # the real address still works
                    assert [t.name for t in (await c.list_tools()).tools] == ["tool_search", "call_tool"]
            stop.set()


async def test_overlong_search_query_is_refused(tmp_path):
    async with runtime({"orders": example("servers.examples.orders")}, tmp_path) as rt:
        with anyio.fail_after(20):
            async with Client(create_registry_server(rt)) as c:
                r = await c.call_tool("tool_search", {"query": "select:" + ",".join(["x"] * 2000)})
    assert r.is_error and r.content[0].text == "tool_search 'query' is 4006 characters; use at most 2000"


async def test_a_query_that_cannot_run_is_an_invalid_arguments_error_with_its_code(tmp_path):
    """Hostile-caller finding: ``regex:[`` came back as an ordinary result (``isError`` false, no
    code) although the README calls it an ``invalid_arguments`` error."""
    async with runtime({"orders": example("servers.examples.orders")}, tmp_path) as rt:
        with anyio.fail_after(20):
            async with Client(create_registry_server(rt)) as c:
                bad = await c.call_tool("tool_search", {"query": "regex:["})
                limit = await c.call_tool("tool_search", {"query": "orders", "limit": 0})
                none = await c.call_tool("tool_search", {"query": "regex:^nothing_here"})
    assert bad.is_error and bad.content[0].text.startswith("invalid_arguments: tool_search 'query': Invalid regex '['")
    assert bad.meta["toolhost/error"] == {"code": "invalid_arguments", "message": bad.content[0].text,
                                         "where": "tool_search"}
    assert limit.is_error and limit.meta["toolhost/error"]["code"] == "invalid_arguments"
    assert not none.is_error and none.content[0].text.startswith("No tool matches the regex")  # a valid query


async def test_clients_are_told_when_the_registry_changes(tmp_path):
    from registry import ToolDefinition, build_record
    from servers.gateway.notify import ToolsChangedNotifier

    async with runtime({"orders": example("servers.examples.orders")}, tmp_path) as rt:
        notifier = ToolsChangedNotifier()
        rt.registry.subscribe(notifier.changed)
        srv = create_registry_server(rt, expose="all", notifier=notifier)
        changed = anyio.Event()

        async def on_message(message) -> None:
            if type(message).__name__ == "ToolListChangedNotification":
                changed.set()

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(notifier.run)
                async with Client(srv, mode="legacy", message_handler=on_message) as c:
                    assert len((await c.list_tools()).tools) == 3
                    late = build_record(server="late", qualified_name="late__ping", definition=ToolDefinition(name="ping"))
                    rt.registry.replace_server("late", [late])  # e.g. a server that connected late
                    await changed.wait()
                    assert "late__ping" in [t.name for t in (await c.list_tools()).tools]
                tg.cancel_scope.cancel()


async def test_each_gateway_call_is_audited_once_by_the_runtime_and_an_unaudited_runtime_is_refused(tmp_path):
    from host.access import AccessControl

    access = AccessControl.open(tmp_path / "acl")
    try:
        servers = {"orders": example("servers.examples.orders")}
        async with runtime(servers, tmp_path / "plain", policy=access) as rt:
            with pytest.raises(ValueError, match=r"needs a runtime that audits its calls: build it with "
                                                 r"HostRuntime\(\.\.\., auditor=access\)"):
                create_registry_server(rt, access=access)
        access.users.add("u")
        access.grants.add("u", "orders__get_order")
        user = access.principal_for_user("u")
        async with runtime(servers, tmp_path / "audited", policy=access, auditor=access) as rt:
            srv = create_registry_server(rt, access=access, principal_for=lambda _ctx: user)
            with anyio.fail_after(60):
                async with Client(srv, mode="legacy") as c:
                    ok = await c.call_tool("call_tool", {"name": "orders__get_order",
                                                         "arguments": {"order_id": "A1001"}})
                    hidden = await c.call_tool("orders__cancel_order", {"order_id": "A1001"})
            assert not ok.is_error and hidden.is_error
        rows = [(r.user, r.tool, r.status) for r in access.audit_log.query(action="call")]
        assert sorted(rows) == [("u", "orders__cancel_order", "unknown_tool"), ("u", "orders__get_order", "ok")]
    finally:
        access.close()
