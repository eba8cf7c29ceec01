"""The typed view of the SDK's request context (``servers.gateway.request_view``) in both protocol
eras, over stdio and over streamable HTTP, and the loud failure when the SDK moves what it reads."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.server.connection import Connection
from mcp.server.session import ServerSession

from servers.gateway.request_view import SDK_VERSION_CHECKED, RequestView, SdkShapeError, connection_of
from servers.http.runner import serve_http

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))
import request_view_server

pytestmark = pytest.mark.anyio

PEER = Path(request_view_server.__file__)
MODERN = "2026-07-28"


async def views(client: Client, metas: list[dict[str, Any] | None]) -> list[dict[str, Any]]:
    """One ``view`` call per entry of ``metas`` (each its request ``_meta``), answered facts in order."""
    out = []
    for meta in metas:
        result = await client.call_tool("view", {}, meta=meta)
        assert not result.is_error, result
        out.append(json.loads(result.content[0].text))
    return out


def stdio_client(mode: str) -> Client:
    return Client(StdioServerParameters(command=sys.executable, args=[str(PEER)]), mode=mode)  # type: ignore[arg-type]


async def test_a_handshake_era_stdio_request_is_stateful_on_its_one_connection() -> None:
    with anyio.fail_after(30):
        async with stdio_client("legacy") as client:
            first, second = await views(client, [{"toolhost/session": "conv-1"}, None])
    assert first == {"protocol_version": "2025-11-25", "modern": False, "stateless": False,
                     "request_id": first["request_id"], "meta_session": "conv-1", "http": False,
                     "session": "ServerSession", "connection": "conn-1", "stateful_connection": "conn-1"}
    assert second["stateful_connection"] == "conn-1" and second["meta_session"] is None
    assert first["request_id"] is not None and second["request_id"] != first["request_id"]


async def test_a_2026_stdio_request_is_stateless_and_reads_its_meta() -> None:
    with anyio.fail_after(30):
        async with stdio_client(MODERN) as client:
            first, second = await views(client, [{"toolhost/session": "conv-9"}, None])
    assert first == {"protocol_version": MODERN, "modern": True, "stateless": True,
                     "request_id": first["request_id"], "meta_session": "conv-9", "http": False,
                     "session": "ServerSession", "connection": first["connection"], "stateful_connection": None}
    assert first["connection"] is not None  # the SDK builds one per exchange: no identity to keep state by
    assert second["stateful_connection"] is None and second["meta_session"] is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def http_url() -> AsyncIterator[str]:
    port = _free_port()
    stop, ready = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_http(request_view_server.server(), port=port, stop=stop,
                                         on_ready=lambda _u: ready.set()))
        with anyio.fail_after(20):
            await ready.wait()
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            stop.set()


async def test_http_requests_carry_the_starlette_request_in_both_eras() -> None:
    with anyio.fail_after(60):
        async with http_url() as url:
            async with httpx2.AsyncClient() as http, \
                    Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                legacy = await views(client, [None, {"toolhost/session": "a"}])
            async with httpx2.AsyncClient() as http, \
                    Client(streamable_http_client(url, http_client=http), mode=MODERN) as client:
                modern = await views(client, [{"toolhost/session": "b"}])
    assert [(v["protocol_version"], v["http"], v["stateless"], v["meta_session"]) for v in legacy + modern] == [
        ("2025-11-25", True, False, None), ("2025-11-25", True, False, "a"), (MODERN, True, True, "b")]
    assert legacy[0]["stateful_connection"] == legacy[1]["stateful_connection"] is not None  # Mcp-Session-Id
    assert modern[0]["stateful_connection"] is None


def test_outside_a_request_there_is_no_session_connection_or_http_request() -> None:
    view = RequestView.outside_request()
    assert (view.session, view.connection, view.http, view.request_id, dict(view.meta)) == (None, None, None, None, {})
    assert view.modern and view.stateless and view.stateful_connection is None


def test_the_view_is_read_only() -> None:
    view = RequestView(protocol_version="2025-11-25", meta={"toolhost/session": "x"})
    with pytest.raises(AttributeError):
        view.protocol_version = MODERN  # type: ignore[misc]
    assert view.stateless  # no connection object: nothing to keep state by


def test_the_connection_is_read_where_the_sdk_keeps_it() -> None:
    """When this fails after an SDK upgrade, adapt ``connection_of`` (its docstring says how)."""
    conn = Connection.from_envelope("2025-11-25", None, None)
    session = ServerSession(object(), conn)  # type: ignore[arg-type]  # the request channel is not used
    assert connection_of(session) is conn
    assert SDK_VERSION_CHECKED == "2.3.0"


def test_an_sdk_that_moved_the_connection_fails_loudly(monkeypatch) -> None:
    session = ServerSession(object(), Connection.from_envelope("2025-11-25", None, None))  # type: ignore[arg-type]
    monkeypatch.delattr(session, "_connection")
    with pytest.raises(SdkShapeError) as gone:
        connection_of(session)
    assert gone.value.found == "nothing"
    assert "ServerSession._connection holds nothing" in str(gone.value)
    assert "servers/gateway/request_view.py:connection_of" in str(gone.value)
    monkeypatch.setattr(session, "_connection", "a string", raising=False)
    with pytest.raises(SdkShapeError) as other:
        connection_of(session)
    assert other.value.found == "str"
