"""One user cannot exhaust sessions for everyone (issue 11 finding 5, bug case BR-50).

Through the real streamable-HTTP server with API keys: a user with no grants opens sessions until
refused; the refusal is HTTP 429 with ``Retry-After`` for that user only, while another user opens
a session-based (legacy handshake) connection and keeps calling tools.
"""

from __future__ import annotations

import json
import sys
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from host.access import AccessControl
from host.config import parse_config
from host.limits import SessionLimits
from host.runtime import HostRuntime
from servers.gateway.server import create_registry_server
from servers.http.api_keys import ApiKeyVerifier, auth_settings, principal_resolver
from servers.http.runner import serve_http
from servers.http.sessions import BUSY_RETRY_SECONDS, FairSessionManager, session_manager_of

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}},
}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@asynccontextmanager
async def serving(tmp_path, access: AccessControl | None, limits: SessionLimits):
    """``toolhost serve`` over HTTP with API keys of ``access``, or in open access (``None``)."""
    cfg = parse_config(
        {"mcpServers": {"orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]}}},
        data_dir=tmp_path,
    )
    async with HostRuntime(cfg, data_dir=tmp_path, policy=access, auditor=access) as rt:
        if access is None:
            server, keys = create_registry_server(rt), {}
        else:
            server = create_registry_server(rt, principal_for=principal_resolver(access), access=access)
            keys = {"token_verifier": ApiKeyVerifier(access), "auth": auth_settings("http://127.0.0.1/mcp")}
        stop, ready = anyio.Event(), anyio.Event()
        urls: list[str] = []

        def on_ready(url: str) -> None:
            urls.append(url)
            ready.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_http(server, port=0, stop=stop, on_ready=on_ready,
                                             session_limits=limits, **keys))
            with anyio.fail_after(30):
                await ready.wait()
            try:
                yield urls[0], server
            finally:
                stop.set()


async def _open(http: httpx2.AsyncClient, url: str) -> tuple[int, str | None, str]:
    async with http.stream("POST", url, json=INIT, headers=HEADERS) as resp:
        body = (await resp.aread()).decode()
        return resp.status_code, resp.headers.get("mcp-session-id") or resp.headers.get("retry-after"), body


async def test_one_user_flooding_sessions_does_not_lock_out_another(tmp_path, access: AccessControl):
    access.users.add("mallory")  # no grants at all
    access.users.add("bob")
    access.grants.add("bob", "orders__get_order")
    mallory = access.keys.create("mallory")[1]
    bob = access.keys.create("bob")[1]
    limits = SessionLimits(max_per_user=4, idle_seconds=900, max_total=50)
    with anyio.fail_after(90):
        async with serving(tmp_path, access, limits) as (url, server):
            manager = session_manager_of(server)
            assert isinstance(manager, FairSessionManager) and manager.session_idle_timeout == 900
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {mallory}"}) as flood, AsyncExitStack() as busy:
                opened = [await _open(flood, url) for _ in range(4)]
                assert [s for s, _, _ in opened] == [200] * 4
                for _, sid, _ in opened:  # an open GET stream keeps each session busy
                    stream = await busy.enter_async_context(flood.stream("GET", url, headers=_get_headers(sid)))
                    assert stream.status_code == 200
                refused = [await _open(flood, url) for _ in range(8)]
                assert [s for s, _, _ in refused] == [429] * 8
                assert refused[0][1] == str(BUSY_RETRY_SECONDS)
                assert json.loads(refused[0][2])["error"]["message"] == (
                    "Too many open sessions for mallory: 4 are open, each with a request in flight or an open GET "
                    "stream. Reuse one (send its Mcp-Session-Id), close one (HTTP DELETE), or retry in 5 s "
                    "(an idle session is then closed to make room)")
                async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {bob}"}) as http, Client(
                    streamable_http_client(url, http_client=http), mode="legacy"
                ) as c:
                    result = await c.call_tool("call_tool", {"name": "orders__get_order",
                                                             "arguments": {"order_id": "A1001"}})
                    assert result.is_error is False and "A1001" in result.content[0].text
                    assert manager.sessions_of("bob") == 1 and manager.sessions_of("mallory") == 4
                # mallory ends one session: she may open one again
                sid = opened[0][1]
                deleted = await flood.delete(url, headers={"mcp-session-id": sid, **HEADERS})
                assert deleted.status_code == 200
                assert (await _open(flood, url))[0] == 200


async def test_in_open_access_a_client_opening_sessions_in_a_loop_churns_idle_sessions_and_locks_no_one_out(
    tmp_path,
):
    """Hostile-caller finding: without keys every caller is ``<unauthenticated>``; 300 initialize
    requests without DELETE locked every new client out for the idle timeout (10 min)."""
    limits = SessionLimits(max_per_user=4, idle_seconds=900, max_total=50)
    with anyio.fail_after(90):
        async with serving(tmp_path, None, limits) as (url, server), httpx2.AsyncClient() as http:
            manager = session_manager_of(server)
            assert isinstance(manager, FairSessionManager) and manager.max_sessions_per_user == 4
            opened = [await _open(http, url) for _ in range(12)]
            assert [s for s, _, _ in opened] == [200] * 12  # each new one reclaimed the oldest idle one
            assert manager.sessions_of("<unauthenticated>") == 4
            first, newest = opened[0][1], opened[-1][1]
            gone = await http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                                   headers={**HEADERS, "mcp-session-id": first, "mcp-protocol-version": "2025-06-18"})
            assert gone.status_code == 404  # the client opens a new session, as the spec requires
            alive = await http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                                    headers={**HEADERS, "mcp-session-id": newest, "mcp-protocol-version": "2025-06-18"})
            assert alive.status_code == 200
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as c:  # a newcomer
                result = await c.call_tool("call_tool", {"name": "orders__get_order", "arguments": {"order_id": "A1001"}})
                assert result.is_error is False and "A1001" in result.content[0].text


def _get_headers(sid: str | None) -> dict[str, str]:
    assert sid is not None
    return {"Accept": "text/event-stream", "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
