"""The lean 2026-07-28 request path (``servers.http.lean_entry``, issue 12): the SDK's answers, and the
event log written once each answer is out.

A real upstream (our conformance fixture over stdio) behind ``serve_http``; raw HTTP requests.
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
from mcp.server import _streamable_http_modern as sdk_modern

from host.config import parse_config
from host.runtime import HostRuntime
from servers.gateway.server import create_registry_server
from servers.http.runner import serve_http
from servers.http.sessions import MODERN_HTTP_ENV

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests/peers/conformance_server.py"
V = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
           "MCP-Protocol-Version": V}

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def served(tmp_path: Path) -> AsyncIterator[tuple[str, HostRuntime]]:
    config = parse_config({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {
        "fx": {"command": sys.executable, "args": [str(FIXTURE), "--stdio"], "toolhost": {"protocol": "auto"}}}})
    async with HostRuntime(config, data_dir=tmp_path / "data", conversation_id="conv") as rt:
        rt.event_log.defer(within=600)  # only the after-answer hook writes during the test
        server = create_registry_server(rt, expose="all")
        stop, ready = anyio.Event(), anyio.Event()
        urls: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_http(server, port=0, stop=stop, after_response=rt.event_log.flush,
                                             on_ready=lambda u: (urls.append(u), ready.set())))
            with anyio.fail_after(30):
                await ready.wait()
            try:
                yield urls[0], rt
            finally:
                stop.set()


def call(rid: int, name: str, arguments: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": arguments or {}, "_meta": {**META, **meta}}}


def tool_headers(name: str) -> dict[str, str]:
    return {**HEADERS, "Mcp-Method": "tools/call", "Mcp-Name": name}


def sse_messages(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("data: "):]) for line in text.splitlines() if line.startswith("data: ")]


async def exchange(http: httpx2.AsyncClient, url: str, method: str, body: Any, headers: dict[str, str]) -> tuple:
    r = await http.request(method, url, content=body if isinstance(body, bytes) else json.dumps(body).encode(),
                           headers=headers)
    kind = r.headers.get("content-type", "")
    payload = r.json() if kind.startswith("application/json") else r.text
    if isinstance(payload, dict) and "error" in payload:
        payload = {**payload, "error": {k: v for k, v in payload["error"].items() if k != "data"}}
    return r.status_code, kind, payload


REQUESTS: list[tuple[str, Any, dict[str, str]]] = [
    ("POST", call(1, "fx__test_simple_text"), tool_headers("fx__test_simple_text")),
    ("POST", call(2, "fx__nope"), tool_headers("fx__nope")),
    ("POST", call(3, "fx__test_error_handling"), tool_headers("fx__test_error_handling")),
    ("POST", call(4, "fx__test_simple_text"), tool_headers("other")),  # routing header mismatch: 400
    ("POST", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}, HEADERS),
    ("POST", b"{not json", HEADERS),
    ("POST", [call(5, "fx__test_simple_text")], HEADERS),
    ("POST", call(6, "fx__test_simple_text"), {**tool_headers("fx__test_simple_text"), "Accept": "application/json"}),
    ("GET", b"", HEADERS),
    ("POST", {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": META}},
     {**HEADERS, "Mcp-Method": "tools/list"}),
]


async def test_the_lean_path_answers_exactly_like_the_sdk_entry(tmp_path, monkeypatch) -> None:
    answers: dict[str, list[tuple]] = {}
    for mode in ("lean", "sdk"):
        monkeypatch.setenv(MODERN_HTTP_ENV, mode)
        with anyio.fail_after(90):
            async with served(tmp_path / mode) as (url, _rt), httpx2.AsyncClient(timeout=30) as http:
                answers[mode] = [await exchange(http, url, m, b, h) for m, b, h in REQUESTS]
    assert answers["lean"] == answers["sdk"]
    first = answers["lean"][0]
    assert first[:2] == (200, "application/json")  # a call that emits nothing: one JSON body
    assert first[2]["result"]["content"] == [{"type": "text", "text": "This is a simple text response for testing."}]
    assert [a[0] for a in answers["lean"]] == [200, 200, 200, 400, 202, 400, 400, 406, 405, 200]


async def test_notifications_commit_sse_and_the_answer_ends_the_stream(tmp_path) -> None:
    name = "fx__test_tool_with_progress"
    with anyio.fail_after(60):
        async with served(tmp_path) as (url, _rt), httpx2.AsyncClient(timeout=30) as http:
            status, kind, text = await exchange(http, url, "POST", call(9, name, progressToken="p1"),
                                                tool_headers(name))
    assert (status, kind) == (200, "text/event-stream")
    messages = sse_messages(text)
    progress = [m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"]
    assert progress == [0, 50, 100]
    assert messages[-1]["id"] == 9 and "result" in messages[-1]  # the answer comes last
    assert all(m.get("params", {}).get("progressToken") == "p1" for m in messages[:-1])


async def test_a_silent_call_past_the_window_gets_keepalive_pings_then_its_answer(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(sdk_modern, "_SSE_PING_INTERVAL", 0.001)
    name = "fx__test_simple_text"
    with anyio.fail_after(60):
        async with served(tmp_path) as (url, _rt), httpx2.AsyncClient(timeout=30) as http:
            status, kind, text = await exchange(http, url, "POST", call(10, name), tool_headers(name))
    assert (status, kind) == (200, "text/event-stream")
    assert text.startswith(": ping\r\n\r\n")
    (answer,) = sse_messages(text)
    assert answer["id"] == 10 and answer["result"]["content"][0]["text"].startswith("This is a simple text")


async def test_the_event_log_is_written_after_each_answer(tmp_path) -> None:
    name = "fx__test_simple_text"
    with anyio.fail_after(60):
        async with served(tmp_path) as (url, rt), httpx2.AsyncClient(timeout=30) as http:
            path = rt.event_log.path_for("conv")
            for rid in (11, 12):
                status, _kind, _body = await exchange(http, url, "POST", call(rid, name), tool_headers(name))
                assert status == 200
                while len(path.read_text().splitlines() if path.exists() else []) < 3 * (rid - 10):
                    await anyio.sleep(0.005)  # the hook runs on the loop turn after the answer's write
            kinds = [json.loads(line)["kind"] for line in path.read_text().splitlines()]
    assert kinds == ["call", "decision", "result"] * 2
