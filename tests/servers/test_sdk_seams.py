"""The gateway's HTTP front end on the MCP SDK: built with the SDK's constructors, and the SDK
internals it still relies on (``servers.http.sdk_seams``) are there with the parameters recorded.

When the first test fails after an SDK upgrade, re-read the member it names in the new SDK, adapt
the code that uses it, then update ``servers/http/sdk_seams.py`` (its list and the version checked).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from mcp.server import Server
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.types import JSONRPCResponse

from host.limits import SessionLimits
from servers.http.api_keys import auth_settings
from servers.http.event_store import SessionEventStore
from servers.http.key_challenge import NO_KEY, NOT_BEARER, bad_key_text
from servers.http.sdk_seams import SDK_VERSION_CHECKED, SEAMS, SdkSeamError, seam_problems
from servers.http.sessions import FairSessionManager, fair_http_app, session_manager_of
from servers.http.transport import GatewayTransport

pytestmark = pytest.mark.anyio

URL = "http://127.0.0.1:8765/mcp"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_every_sdk_internal_relied_on_is_there_with_the_recorded_parameters() -> None:
    manager = FairSessionManager(Server("t"))
    assert seam_problems(manager) == []
    assert seam_problems(StreamableHTTPSessionManager(Server("t"))) == []
    assert SDK_VERSION_CHECKED == "2.3.0"
    assert {s.name for s in SEAMS if s.where == "manager"} == {
        "_admit_session", "_handle_request", "_handle_stateful_request",
        "_server_instances", "_session_owners", "_task_group", "_lifespan_state"}


def test_an_sdk_without_a_member_relied_on_refuses_to_build_the_manager(monkeypatch) -> None:
    """An SDK that renamed ``_admit_session`` would silently skip the override (no per-user limit,
    no request-id checks): building the manager fails instead, naming the member."""
    monkeypatch.delattr(StreamableHTTPSessionManager, "_admit_session")
    with pytest.raises(SdkSeamError) as err:
        FairSessionManager(Server("t"))
    assert err.value.problems == [("manager._admit_session is gone (overridden by FairSessionManager: per-user "
                                  "limit, GatewayTransport with its own event store)")]
    assert "checked against (servers/http/sdk_seams.py)" in str(err.value)
    assert f"Install mcp=={SDK_VERSION_CHECKED}" in str(err.value)


def test_a_changed_sdk_signature_is_reported(monkeypatch) -> None:
    async def changed(self: Any, scope: Any, receive: Any, send: Any, session: Any) -> None:
        return None

    monkeypatch.setattr(StreamableHTTPSessionManager, "_handle_stateful_request", changed)
    assert seam_problems() == [
        ("manager._handle_stateful_request takes ('self', 'scope', 'receive', 'send', 'session'), not "
        "('self', 'scope', 'receive', 'send') (overridden by FairSessionManager: HTTP 429 before a user's "
        "session over the limit opens)")]
    assert seam_problems(signatures=False) == []  # at start-up only missing members refuse to run


def test_the_manager_is_constructed_with_its_limits_and_makes_gateway_transports() -> None:
    server: Server[Any] = Server("t")
    limits = SessionLimits(max_per_user=3, idle_seconds=120, max_total=7)
    fair_http_app(server, limits=limits, max_request_body_size=1000)
    manager = session_manager_of(server)
    assert isinstance(manager, FairSessionManager)
    assert (manager.max_sessions_per_user, manager.session_idle_timeout, manager.max_sessions,
            manager.max_request_body_size, manager.retry_interval) == (3, 120, 7, 1000, 1000)
    assert manager.asgi_app.app == manager._handle_request  # the SDK's body limit runs the override
    assert session_manager_of(Server("other")) is None

    plain: Server[Any] = Server("plain")
    fair_http_app(plain, resumable=False)
    bare = session_manager_of(plain)
    assert bare is not None and bare.retry_interval is None
    transport = bare._admit_session(None)
    assert type(transport) is GatewayTransport and transport._event_store is None


class _Keys(TokenVerifier):
    async def verify_token(self, token: str) -> AccessToken | None:
        if token != "good":
            return None
        return AccessToken(token=token, client_id="alice", scopes=["tools"], expires_at=None)


REQUESTS: list[tuple[str, str, dict[str, str], bytes]] = [
    ("POST", "/mcp", HEADERS, json.dumps(INIT).encode()),  # no key: 401 with the metadata URL
    ("POST", "/mcp", {**HEADERS, "Authorization": "Bearer bad"}, json.dumps(INIT).encode()),
    ("GET", "/.well-known/oauth-protected-resource/mcp", {}, b""),
    ("POST", "/mcp", {**HEADERS, "Authorization": "Bearer good"}, b" " * 2000),  # over the body limit: 413
    ("POST", "/mcp", {**HEADERS, "Authorization": "Bearer good", "Host": "evil.example"}, json.dumps(INIT).encode()),
    ("POST", "/mcp", {**HEADERS, "Authorization": "Bearer good", "Mcp-Session-Id": "gone"}, json.dumps(INIT).encode()),
    ("POST", "/mcp", {**HEADERS, "Authorization": "Bearer good", "MCP-Protocol-Version": "2026-07-28"}, b"{not json"),
    ("GET", "/elsewhere", {}, b""),
]


async def _answers(app: Any, manager: StreamableHTTPSessionManager) -> list[tuple[Any, ...]]:
    answers = []
    async with manager.run(), httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                                 base_url="http://127.0.0.1:8765") as http:
        for method, path, headers, body in REQUESTS:
            r = await http.request(method, path, headers=headers, content=body)
            answers.append((r.status_code, r.headers.get("content-type"), r.headers.get("www-authenticate"), r.text))
    return answers


AS = "https://login.example.com"
"""A real authorization server (only then is protected-resource metadata served)."""


async def test_the_fair_app_answers_like_the_sdks_app_for_auth_limits_and_host_checks() -> None:
    """Same route, auth middleware, protected-resource metadata, DNS-rebinding protection and
    body limit as ``Server.streamable_http_app`` with the same arguments; only the 401 texts are
    toolhost's (which of the key's problems, :mod:`servers.http.key_challenge`)."""
    kwargs: dict[str, Any] = {"token_verifier": _Keys(), "auth": auth_settings(URL, issuer_url=AS),
                              "max_request_body_size": 1000}
    sdk_server: Server[Any] = Server("t")
    sdk_app = sdk_server.streamable_http_app(**kwargs)
    fair_server: Server[Any] = Server("t")
    fair_app = fair_http_app(fair_server, **kwargs)
    fair_manager = session_manager_of(fair_server)
    assert fair_manager is not None
    with anyio.fail_after(30):
        expected = await _answers(sdk_app, sdk_server.session_manager)
        got = await _answers(fair_app, fair_manager)
    assert got[2:] == expected[2:]
    assert [a[0] for a in got] == [a[0] for a in expected] == [401, 401, 200, 413, 421, 404, 400, 404]
    metadata = 'resource_metadata="http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp"'
    assert got[0][2] == f'Bearer realm="toolhost", {metadata}'
    assert got[1][2] == (f'Bearer realm="toolhost", error="invalid_token", error_description="{bad_key_text("bad")}", '
                         f'{metadata}')
    assert (json.loads(got[2][3])["resource"], json.loads(got[2][3])["authorization_servers"]) == (URL, [AS])
    assert fair_manager.open_sessions() == 0  # the refused opens left no session behind


async def test_each_session_gets_its_own_event_store_and_frees_ids_when_answered() -> None:
    manager = FairSessionManager(Server("t"))
    transport = manager._admit_session(None)
    assert isinstance(transport, GatewayTransport) and isinstance(transport._event_store, SessionEventStore)
    transport._ids_in_flight.update({"7"})
    await transport._event_store.store_event("7", JSONRPCResponse(jsonrpc="2.0", id=7, result={}))
    assert transport._ids_in_flight == set() and transport.idle() and not transport.closing()


async def test_api_keys_alone_advertise_no_authorization_server_and_say_what_is_wrong() -> None:
    """Without an authorization server: no protected-resource metadata (route or header), and a 401
    that says whether the key is missing, not a Bearer token, or not recognised."""
    server: Server[Any] = Server("t")
    app = fair_http_app(server, token_verifier=_Keys(), auth=auth_settings(URL))
    manager = session_manager_of(server)
    assert manager is not None
    body = json.dumps(INIT).encode()
    with anyio.fail_after(30):
        async with manager.run(), httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                                     base_url="http://127.0.0.1:8765") as http:
            answers = []
            for auth in (None, "Basic YWxpY2U6cHc=", "Bearer", "Bearer th_0123456789ab_secret", "Bearer good"):
                headers = HEADERS | ({"Authorization": auth} if auth else {})
                r = await http.post("/mcp", headers=headers, content=body)
                answers.append((r.status_code, r.headers.get("www-authenticate"),
                                r.json() if r.status_code == 401 else None))
            metadata = await http.get("/.well-known/oauth-protected-resource/mcp")
    assert metadata.status_code == 404
    assert answers[:4] == [
        (401, 'Bearer realm="toolhost"', {"error": "invalid_request", "error_description": NO_KEY}),
        (401, f'Bearer realm="toolhost", error="invalid_request", error_description="{NOT_BEARER}"',
         {"error": "invalid_request", "error_description": NOT_BEARER}),
        (401, f'Bearer realm="toolhost", error="invalid_request", error_description="{NOT_BEARER}"',
         {"error": "invalid_request", "error_description": NOT_BEARER}),
        (401, 'Bearer realm="toolhost", error="invalid_token", '
              f'error_description="{bad_key_text("th_0123456789ab_secret")}"',
         {"error": "invalid_token", "error_description": bad_key_text("th_0123456789ab_secret")}),
    ]
    assert answers[4][0] == 200
    assert bad_key_text("th_0123456789ab_secret") == (
        "API key th_0123456789ab_... (key id 0123456789ab) is not recognised or was revoked: check it was copied "
        "whole, or ask an admin for a new one (`toolhost keys create USER`; `toolhost keys list USER` shows revoked "
        "keys)")
    assert "secret" not in answers[3][1]  # the key's secret part is never echoed
