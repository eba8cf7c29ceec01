"""``subscriptions/listen`` served to toolhost's own 2026-07-28 clients (SEP-2575).

Real upstream: our conformance fixture (stdio, default protocol: 2026-07-28, so toolhost watches
its resources through its own upstream listen stream). Downstream: the SDK ``Client`` in-process
(``mode="auto"``: it discovers and negotiates 2026-07-28), where change notifications ride ``subscriptions/listen``
only.
"""

from __future__ import annotations

import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.server.subscriptions import ToolsListChanged
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated

from host.access import AccessControl
from host.config import parse_config
from host.runtime import HostRuntime
from registry import (
    AllowAll,  # the runtime's default is safe; these tests call tools freely
    Principal,
)
from servers.gateway.listen_relay import MAX_STREAMS, MAX_STREAMS_PER_CALLER, MAX_URIS
from servers.gateway.notify import ToolsChangedNotifier
from servers.gateway.server import create_registry_server

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests/peers/conformance_server.py"
WATCHED = "toolhost://fx/test://watched-resource"
UNKNOWN = "toolhost://fx/test://no-such"

pytestmark = pytest.mark.anyio


def _fixture() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FIXTURE), "--stdio"]}


def _config(**servers: Any) -> Any:
    return parse_config({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": servers or {"fx": _fixture()}})


async def _no_open_streams(server: Any, left: int = 0) -> None:
    while server.listen_relay.open_streams > left:
        await anyio.sleep(0.01)  # the stream's cleanup runs in the server's handler task after the client left


async def test_registry_and_catalog_changes_reach_a_2026_client_on_its_listen_stream(tmp_path) -> None:
    events: list[Any] = []
    with anyio.fail_after(120):
        async with HostRuntime(_config(), policy=AllowAll(), data_dir=tmp_path / "data") as rt, \
                anyio.create_task_group() as tg:
            notifier = ToolsChangedNotifier()
            rt.registry.subscribe(notifier.changed)
            tg.start_soon(notifier.run)
            server = create_registry_server(rt, expose="all", notifier=notifier)
            async with Client(server, mode="auto") as c:
                assert c.protocol_version == "2026-07-28"
                caps = c.server_capabilities
                assert (caps.tools.list_changed, caps.prompts.list_changed, caps.resources.list_changed,
                        caps.resources.subscribe) == (True, True, True, True)
                before = {t.name for t in (await c.list_tools()).tools}
                assert "fy__test_simple_text" not in before
                async with c.listen(tools_list_changed=True, prompts_list_changed=True,
                                    resources_list_changed=True) as sub:
                    assert server.listen_relay.open_streams == 1
                    # a second upstream connects at runtime: new tools, prompts and resources
                    await rt.manager.add_server(_config(fy=_fixture()).servers["fy"])
                    async for event in sub:
                        events.append(event)
                        if {type(e) for e in events} >= {ToolsListChanged, PromptsListChanged, ResourcesListChanged}:
                            break
                after = {t.name for t in (await c.list_tools()).tools}
                assert "fy__test_simple_text" in after
                assert "fy__test_simple_prompt" in {p.name for p in (await c.list_prompts()).prompts}
                await _no_open_streams(server)
            tg.cancel_scope.cancel()
    assert set(events) == {ToolsListChanged(), PromptsListChanged(), ResourcesListChanged()}


async def test_resource_updates_reach_2026_listeners_who_may_see_the_uri_only(tmp_path) -> None:
    access = AccessControl.open(tmp_path / "acl")
    try:
        access.users.add("alice")
        access.grants.add("alice", "server:fx")
        access.users.add("bob")
        access.grants.add("bob", "fx__static-text")
        users = {"alice": access.principal_for_user("alice"), "bob": access.principal_for_user("bob")}
        current: dict[str, Principal] = {}
        with anyio.fail_after(120):
            async with HostRuntime(_config(), data_dir=tmp_path / "data", policy=access, auditor=access) as rt:
                conn = rt.manager.connection("fx")
                assert conn.status.protocol_version == "2026-07-28"
                server = create_registry_server(rt, expose="all", access=access,
                                                principal_for=lambda _ctx: current["who"])
                async with Client(server, mode="auto") as alice_c, Client(server, mode="auto") as bob_c:
                    current["who"] = users["alice"]
                    async with alice_c.listen(resource_subscriptions=[WATCHED, UNKNOWN]) as alice_sub:
                        current["who"] = users["bob"]
                        async with bob_c.listen(tools_list_changed=True,
                                                resource_subscriptions=[WATCHED, UNKNOWN]) as bob_sub:
                            # a hidden URI is acknowledged exactly like an unknown one
                            assert alice_sub.honored.resource_subscriptions == [WATCHED, UNKNOWN]
                            assert bob_sub.honored.resource_subscriptions == [WATCHED, UNKNOWN]
                            # one upstream subscription, for alice's visible URI only
                            assert conn.listener.subscriptions == frozenset({"test://watched-resource"})
                            # the upstream announces a change (its tool called directly: no approval needed)
                            result = await conn.connected_client().call_tool("test_touch_watched_resource", {})
                            assert result.is_error is not True
                            assert await alice_sub.__anext__() == ResourceUpdated(uri=WATCHED)
                            await server.listen_relay.bus.publish(ToolsListChanged())
                            # bob's first event is the later tools change: the hidden URI's update never came
                            assert await bob_sub.__anext__() == ToolsListChanged()
                    await _no_open_streams(server)
                    assert conn.listener.subscriptions == frozenset()  # the stream's end unsubscribed upstream
    finally:
        access.close()


async def test_a_listen_stream_watching_too_many_uris_is_refused_with_the_limit(tmp_path) -> None:
    with anyio.fail_after(90):
        async with HostRuntime(_config(), policy=AllowAll(), data_dir=tmp_path / "data") as rt:
            server = create_registry_server(rt, expose="all")
            async with Client(server, mode="auto") as c:
                uris = [f"toolhost://fx/test://r{i}" for i in range(MAX_URIS + 1)]
                with pytest.raises(MCPError) as err:
                    async with c.listen(resource_subscriptions=uris):
                        pass
                assert err.value.code == -32602
                assert err.value.message == (f"subscriptions/listen: {MAX_URIS + 1} resourceSubscriptions; toolhost "
                                             f"watches at most {MAX_URIS} URIs per stream (open several streams)")
                assert server.listen_relay.open_streams == 0


async def test_over_http_a_listen_stream_gets_updates_and_ends_cleanly_when_toolhost_stops(tmp_path) -> None:
    from servers.http.runner import serve_http

    got: list[Any] = []
    with anyio.fail_after(120):
        async with HostRuntime(_config(), policy=AllowAll(), data_dir=tmp_path / "data") as rt:
            conn = rt.manager.connection("fx")
            server = create_registry_server(rt, expose="all")
            stop, ready = anyio.Event(), anyio.Event()
            urls: list[str] = []
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: serve_http(server, port=0, stop=stop,
                                                 on_ready=lambda u: (urls.append(u), ready.set())))
                await ready.wait()
                async with Client(urls[0], mode="auto") as c:
                    assert c.protocol_version == "2026-07-28"
                    async with c.listen(resource_subscriptions=[WATCHED]) as sub:
                        assert conn.listener.subscriptions == frozenset({"test://watched-resource"})
                        await conn.connected_client().call_tool("test_touch_watched_resource", {})
                        got.append(await sub.__anext__())
                        stop.set()  # toolhost stops: the stream ends gracefully (its final result), no error
                        async for event in sub:
                            got.append(event)
    assert got == [ResourceUpdated(uri=WATCHED)]


async def test_one_api_key_holds_at_most_its_share_of_listen_streams(tmp_path) -> None:
    alice, bob = Principal(user="alice", key_id="ka"), Principal(user="bob", key_id="kb")
    current = {"who": alice}
    with anyio.fail_after(120):
        async with HostRuntime(_config(), policy=AllowAll(), data_dir=tmp_path / "data") as rt:
            server = create_registry_server(rt, expose="all", principal_for=lambda _ctx: current["who"])
            assert server.listen_relay.share == MAX_STREAMS_PER_CALLER == MAX_STREAMS // 8
            server.listen_relay.share = 2
            async with Client(server, mode="auto") as c, AsyncExitStack() as alices:
                for _ in range(2):
                    await alices.enter_async_context(c.listen(tools_list_changed=True))
                with pytest.raises(MCPError) as err:
                    async with c.listen(tools_list_changed=True):
                        pass
                assert (err.value.code, err.value.data) == (-32603, {"share": 2, "open": 2})
                assert err.value.message == (
                    "toolhost: this API key already has 2 open subscriptions/listen streams, its share of the "
                    f"{MAX_STREAMS} the gateway serves; close one of them and retry, or give each client its own "
                    "key (toolhost keys create)")
                current["who"] = bob  # another key still gets a stream
                async with c.listen(tools_list_changed=True) as bob_sub:
                    await server.listen_relay.bus.publish(ToolsListChanged())
                    assert await bob_sub.__anext__() == ToolsListChanged()
                await _no_open_streams(server, left=2)  # bob's is gone, alice's two stay
                assert server.listen_relay.open_streams == 2
                await alices.aclose()  # alice closes hers: she may listen again
                await _no_open_streams(server)
                current["who"] = alice
                async with c.listen(tools_list_changed=True):
                    assert server.listen_relay.open_streams == 1
