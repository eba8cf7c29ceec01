"""Taint sessions of gateway requests: one per client connection (ended when it goes away), one per
caller for stateless 2026-07-28 exchanges."""

from __future__ import annotations

import gc

from mcp.server.connection import Connection as SdkConnection

from registry import Principal
from servers.gateway.request_view import RequestView
from servers.gateway.taint_sessions import TaintSessions

ALICE = Principal(user="alice", key_id="k1")


def connection(version: str = "2025-11-25") -> SdkConnection:
    """The SDK's per-client connection object (no channel: nothing is sent in these tests)."""
    return SdkConnection.from_envelope(version, None, None)


def request(conn: SdkConnection | None, version: str = "2025-11-25") -> RequestView:
    return RequestView(protocol_version=version, connection=conn)


def test_one_session_per_connection_ended_when_the_connection_goes():
    ended: list[str] = []
    sessions = TaintSessions(ended.append)
    a, b = connection(), connection()
    first = sessions.of(request(a), ALICE)
    assert sessions.of(request(a), ALICE) == first and first.startswith("conn-")
    other = sessions.of(request(b), ALICE)
    assert other != first
    del a
    gc.collect()
    assert ended == [first]


def test_stateless_exchanges_share_one_session_per_caller():
    sessions = TaintSessions(lambda _sid: None)
    modern = sessions.of(request(connection(), "2026-07-28"), ALICE)
    assert modern == "caller:alice:k1" == sessions.of(request(None), ALICE)
    assert sessions.of(request(None), Principal(user="local")) == "caller:local:-"


def modern(meta: dict | None = None) -> RequestView:
    return RequestView(protocol_version="2026-07-28", connection=connection("2026-07-28"), meta=meta or {})


def test_a_session_meta_key_scopes_a_stateless_caller():
    sessions = TaintSessions(lambda _sid: None)
    local = Principal(user="local")
    assert sessions.of(modern({"toolhost/session": "conv-1"}), local) == "caller:local:-:conv-1"
    assert sessions.of(modern({"toolhost/session": "conv-2"}), ALICE) == "caller:alice:k1:conv-2"
    assert sessions.of(modern({"toolhost/session": "  "}), local) == "caller:local:-"  # blank: not a scope
    assert sessions.of(modern({"toolhost/session": 7}), local) == "caller:local:-"  # not a string
    assert sessions.of(modern({"toolhost/session": "x" * 500}), local) == "caller:local:-:" + "x" * 200


def test_a_stateless_session_ends_after_its_idle_time_and_not_before():
    now = [0.0]
    ended: list[str] = []
    sessions = TaintSessions(ended.append, idle_seconds=100, clock=lambda: now[0])
    sessions.of(modern(), Principal(user="local"))
    now[0] = 99.0
    sessions.of(modern(), ALICE)
    assert ended == []
    now[0] = 150.0
    sessions.of(modern(), ALICE)  # alice was seen at 99: still live; local was idle 150 s
    assert ended == ["caller:local:-"]
    now[0] = 300.0
    sessions.of(modern(), Principal(user="local"))
    assert ended == ["caller:local:-", "caller:alice:k1"]
