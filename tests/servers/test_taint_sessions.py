"""Taint sessions of gateway requests: one per client connection (ended when it goes away), one per
caller for stateless 2026-07-28 exchanges."""

from __future__ import annotations

import gc
from types import SimpleNamespace

from registry import Principal
from servers.gateway.taint_sessions import TaintSessions

ALICE = Principal(user="alice", key_id="k1")


class Connection:
    pass


def request(conn: object | None, version: str = "2025-11-25") -> SimpleNamespace:
    return SimpleNamespace(session=SimpleNamespace(_connection=conn), protocol_version=version)


def test_one_session_per_connection_ended_when_the_connection_goes():
    ended: list[str] = []
    sessions = TaintSessions(ended.append)
    a, b = Connection(), Connection()
    first = sessions.of(request(a), ALICE)
    assert sessions.of(request(a), ALICE) == first and first.startswith("conn-")
    other = sessions.of(request(b), ALICE)
    assert other != first
    del a
    gc.collect()
    assert ended == [first]


def test_stateless_exchanges_share_one_session_per_caller():
    sessions = TaintSessions(lambda _sid: None)
    modern = sessions.of(request(Connection(), "2026-07-28"), ALICE)
    assert modern == "caller:alice:k1" == sessions.of(request(None), ALICE)
    assert sessions.of(request(None), Principal(user="local")) == "caller:local:-"
