"""Resumable SSE on ``toolhost serve`` (issue 9; :mod:`servers.http.event_store`) and header whitespace.

A real upstream (our conformance fixture over stdio) behind ``serve_http``; the client is raw
HTTP (httpx2), so the test controls exactly when the connection drops.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.types import JSONRPCResponse

from host.config import parse_config
from host.runtime import HostRuntime
from servers.gateway.server import create_registry_server
from servers.http.event_store import RETRY_INTERVAL_MS, ResumableTransport, SessionEventStore
from servers.http.runner import serve_http

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests/peers/conformance_server.py"
ACCEPT = "application/json, text/event-stream"

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def served(tmp_path: Path, protocol: str = "legacy") -> AsyncIterator[str]:
    config = parse_config({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {
        "fx": {"command": sys.executable, "args": [str(FIXTURE), "--stdio"], "toolhost": {"protocol": protocol}}}})
    async with HostRuntime(config, data_dir=tmp_path / "data") as rt:
        server = create_registry_server(rt, expose="all")
        stop, ready = anyio.Event(), anyio.Event()
        urls: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_http(server, port=0, stop=stop,
                                             on_ready=lambda u: (urls.append(u), ready.set())))
            with anyio.fail_after(20):
                await ready.wait()
            try:
                yield urls[0]
            finally:
                stop.set()


def _events(lines: list[str]) -> list[dict[str, str]]:
    """SSE lines → events ({"id", "retry", "data"}), one per blank-line-terminated block."""
    events, current = [], {}
    for line in lines:
        if not line:
            if current:
                events.append(current)
            current = {}
            continue
        field, _, value = line.partition(":")
        current[field] = value.lstrip(" ")
    return events


async def _initialize(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    r = await http.post(url, json=body, headers={"Accept": ACCEPT})
    assert r.status_code == 200
    headers = {"Accept": ACCEPT, "Mcp-Session-Id": r.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-11-25"}
    done = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    assert done.status_code == 202
    return headers


async def test_a_client_that_lost_its_stream_mid_call_resumes_with_last_event_id(tmp_path) -> None:
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "fx__test_tool_with_logging", "arguments": {}}}
    with anyio.fail_after(60):
        async with served(tmp_path) as url, httpx2.AsyncClient(timeout=30) as http:
            headers = await _initialize(http, url)
            lines: list[str] = []
            async with http.stream("POST", url, json=call, headers=headers) as r:
                assert r.headers["content-type"].startswith("text/event-stream")
                async for line in r.aiter_lines():
                    lines.append(line)
                    if line == "" and lines[:-1]:
                        break  # the priming event arrived: drop the connection mid-call
            priming = _events(lines)[0]
            assert (priming["data"], priming["retry"]) == ("", str(RETRY_INTERVAL_MS)) and priming["id"].isdigit()

            replayed: list[dict[str, Any]] = []
            last_id = priming["id"]
            for _attempt in range(5):  # like an SDK client: reconnect while the stream ends early
                resume = {**headers, "Accept": "text/event-stream", "Last-Event-ID": last_id}
                async with http.stream("GET", url, headers=resume) as r:
                    assert r.status_code == 200
                    block: list[str] = []
                    async for line in r.aiter_lines():
                        block.append(line)
                        if line == "":
                            for event in _events(block):
                                last_id = event.get("id", last_id)
                                if event.get("data"):
                                    replayed.append(json.loads(event["data"]) | {"_event_id": event["id"]})
                            block = []
                            if any(m.get("id") == 2 for m in replayed):
                                break
                if any(m.get("id") == 2 for m in replayed):
                    break
            logs = [m["params"]["data"] for m in replayed if m.get("method") == "notifications/message"]
            assert logs == ["Tool execution started", "Tool processing data", "Tool execution completed"]
            result = next(m for m in replayed if m.get("id") == 2)
            assert result["result"]["content"] == [{"type": "text", "text": "Tool with logging executed successfully"}]
            ids = [int(m["_event_id"]) for m in replayed]
            assert ids == sorted(ids) and ids[0] > int(priming["id"])  # only what came after it, in order

            # an id this session never issued replays nothing (and never another session's stream)
            other = await _initialize(http, url)
            async with http.stream("GET", url, headers={**other, "Accept": "text/event-stream",
                                                        "Last-Event-ID": str(ids[-1])}) as r:
                assert r.status_code == 200
                with anyio.move_on_after(1.0):
                    async for line in r.aiter_lines():
                        assert not line.startswith("data: {"), line


async def _raw_post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """POST over a plain socket (HTTP clients refuse to send header values with surrounding spaces)."""
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    head = "".join(f"{k}:{v}\r\n" for k, v in headers.items())
    request = (f"POST /mcp HTTP/1.1\r\nHost: {host_port}\r\nContent-Length: {len(body)}\r\n"
               f"Connection: close\r\n{head}\r\n").encode() + body
    async with await anyio.connect_tcp(host, int(port)) as stream:
        await stream.send(request)
        raw = b""
        try:
            while True:
                raw += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            pass
    status = int(raw.split(b" ", 2)[1])
    text = raw.decode()
    payload = next(line for line in text.splitlines() if line.startswith(("{", "data: {")))
    return status, json.loads(payload.removeprefix("data: "))


async def test_header_values_with_surrounding_whitespace_are_accepted(tmp_path) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": "fx__test_simple_text", "arguments": {}, "_meta": meta}}).encode()
    headers = {"Accept": f" {ACCEPT}", "Content-Type": "application/json", "MCP-Protocol-Version": "2026-07-28 ",
               "Mcp-Method": "\ttools/call"}
    with anyio.fail_after(60):
        async with served(tmp_path, "auto") as url:
            status, data = await _raw_post(url, body, {**headers, "Mcp-Name": "  fx__test_simple_text\t "})
            assert status == 200
            assert data["result"]["content"] == [{"type": "text", "text": "This is a simple text response for testing."}]
            status, data = await _raw_post(url, body, {**headers, "Mcp-Name": " other "})
            assert (status, data["error"]["code"]) == (400, -32020)


async def test_the_event_store_is_bounded_and_replays_only_the_stream_of_the_id() -> None:
    def msg(n: int) -> Any:
        return JSONRPCResponse(jsonrpc="2.0", id=n, result={"n": n})

    store = SessionEventStore(max_events=4, max_bytes=10_000)
    ids = [await store.store_event("a", None), await store.store_event("a", msg(1)),
           await store.store_event("b", msg(2)), await store.store_event("a", msg(3))]
    assert ids == ["1", "2", "3", "4"]
    sent: list[tuple[str, Any]] = []

    async def collect(event: Any) -> None:
        sent.append((event.event_id, event.message.id))

    assert await store.replay_events_after("1", collect) == "a"
    assert sent == [("2", 1), ("4", 3)]  # stream "a" only, after event 1
    await store.store_event("b", msg(4))  # the fifth event pushes out the first
    assert store.size == 4
    sent.clear()
    assert await store.replay_events_after("1", collect) is None and sent == []  # no longer kept
    assert await store.replay_events_after("nope", collect) is None
    assert await store.replay_events_after("99", collect) is None
    small = SessionEventStore(max_events=100, max_bytes=60)
    for n in range(5):
        await small.store_event("a", msg(n))
    assert 0 < small.size < 5  # bytes bound: only the newest fit


async def test_events_stored_while_the_replay_waits_on_the_client_are_replayed_too() -> None:
    """The hand-over window: a message stored during the replay's sends (the client reads slowly)
    is sent by that replay, not lost between replay and live tail."""
    store = SessionEventStore()
    priming = await store.store_event("2", None)
    await store.store_event("2", JSONRPCResponse(jsonrpc="2.0", id=90, result={"n": 1}))
    sent: list[str] = []

    async def slow_client(event: Any) -> None:
        sent.append(event.event_id)
        if len(sent) == 1:  # while the first replayed event is on its way, the call logs again
            await store.store_event("2", JSONRPCResponse(jsonrpc="2.0", id=91, result={"n": 2}))
            await store.store_event("other", JSONRPCResponse(jsonrpc="2.0", id=92, result={"n": 3}))

    with anyio.fail_after(5):
        assert await store.replay_events_after(priming, slow_client) == "2"
    assert sent == ["2", "3"]  # both events of stream "2", none of "other"


async def test_a_resumed_stream_gets_no_priming_event_so_nothing_waits_before_the_live_tail() -> None:
    store = SessionEventStore()
    transport = ResumableTransport(mcp_session_id="s1", event_store=store, retry_interval=RETRY_INTERVAL_MS)
    with anyio.fail_after(5):
        first = await transport._mint_priming_event("2", "2025-11-25")  # a POST stream is primed
        assert first == {"id": "1", "data": "", "retry": RETRY_INTERVAL_MS}

        async def ignore(_event: Any) -> None:
            return None

        assert await store.replay_events_after("1", ignore) == "2"
        assert store.resumed_just_now("2") and not store.resumed_just_now("3")
        assert await transport._mint_priming_event("2", "2025-11-25") is None  # the resumed stream
        await store.store_event("2", JSONRPCResponse(jsonrpc="2.0", id=2, result={}))
        assert not store.resumed_just_now("2")  # any new event ends the hand-over
        assert await transport._mint_priming_event("3", "2025-11-25") == {"id": "3", "data": "", "retry": RETRY_INTERVAL_MS}


def test_serve_sessions_use_the_resumable_transport() -> None:
    from mcp.server.lowlevel import Server

    from servers.http.sessions import FairSessionManager, fair_http_app, session_manager_of
    from servers.http.transport import GatewayTransport

    server: Server[Any] = Server("t")
    fair_http_app(server)
    manager = session_manager_of(server)
    assert isinstance(manager, FairSessionManager)
    assert server._session_manager is None  # built by toolhost, not set on the SDK's server
    first, second = manager._admit_session(None), manager._admit_session(None)
    assert type(first) is GatewayTransport and isinstance(first, ResumableTransport)
    assert isinstance(first._event_store, SessionEventStore) and isinstance(second._event_store, SessionEventStore)
    assert first._event_store is not second._event_store  # one store per session
    assert first._event_store.on_response == first.answered  # a stored response frees its request id
    assert manager.open_sessions() == 2 and manager.sessions_of("<unauthenticated>") == 2
