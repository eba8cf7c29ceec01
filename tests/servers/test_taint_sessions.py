"""Taint sessions of gateway requests: one per client connection (ended when it goes away), one per
caller for stateless 2026-07-28 exchanges, bounded per caller (one caller's flood never ends another
caller's taint) and never dropped silently when tainted."""

from __future__ import annotations

import gc

from mcp.server.connection import Connection as SdkConnection

from host.access import AccessControl
from host.access.taint_audit import taint_drop_auditor
from registry import Principal
from registry.safety import FlowGuard, FlowLabels, Label
from registry.tool import ToolAnnotations, ToolDefinition, build_record
from servers.gateway.caller_states import CallerKeys
from servers.gateway.request_view import RequestView
from servers.gateway.taint_sessions import TaintSessions

ALICE = Principal(user="alice", key_id="k1")
PRIVATE = FlowLabels(True, False, False, {Label.PRIVATE_SOURCE: "a file:// resource"})
UNTRUSTED = FlowLabels(False, True, False, {Label.UNTRUSTED_SOURCE: "test"})
READ = build_record(server="notes", qualified_name="notes__list_notes", definition=ToolDefinition(
    name="list_notes", annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False)))
POST = build_record(server="out", qualified_name="out__post_message", definition=ToolDefinition(
    name="post_message", annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                                     open_world_hint=True)))


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


def test_one_caller_flooding_session_ids_cannot_end_another_callers_taint(tmp_path):
    guard = FlowGuard(max_sessions=50, max_per_owner=8)
    sessions = TaintSessions(guard.end_session)
    bob = Principal(user="bob", key_id="kb")
    bob_sid = sessions.of(modern(), bob)
    guard.record_content(bob_sid, "1", "resources/read toolhost://files/file:///plan", PRIVATE)
    guard.record_content(bob_sid, "2", "prompts/get web__summarize", UNTRUSTED)
    for i in range(4200):  # alice: a new _meta session with every request
        sid = sessions.of(modern({"toolhost/session": f"s{i}"}), ALICE)
        guard.check(sid, f"c{i}", READ)
    verdict = guard.check(sessions.of(modern(), bob), "3", POST)
    assert (verdict.triggered, verdict.decision.value) == (True, "approve")
    assert len(guard.sessions) == 9  # bob's and alice's newest 8


def test_caller_keys_expire_idle_keys_and_evict_only_the_flooding_callers():
    now = [0.0]
    expired: list[str] = []
    evicted: list[str] = []
    keys = CallerKeys(ttl_seconds=100, on_expire=expired.append, on_evict=evicted.append, per_caller=2, size=4,
                      clock=lambda: now[0])
    keys.touch("caller:bob:kb")
    for name in ("a1", "a2", "a3"):
        keys.touch(f"caller:alice:k1:{name}")
    assert evicted == ["caller:alice:k1:a1"] and keys.of("caller:bob:kb") == ["caller:bob:kb"]
    keys.touch("caller:carol:kc:c1")
    keys.touch("caller:carol:kc:c2")  # 5 keys > 4: the caller holding the most (alice, 2) loses her oldest
    assert evicted == ["caller:alice:k1:a1", "caller:alice:k1:a2"] and len(keys) == 4
    now[0] = 150.0
    keys.touch("caller:bob:kb")
    assert expired == ["caller:bob:kb", "caller:alice:k1:a3", "caller:carol:kc:c1", "caller:carol:kc:c2"]
    assert keys.of("caller:bob:kb") == ["caller:bob:kb"]


def test_a_dropped_tainted_session_is_an_audit_row(tmp_path):
    access = AccessControl.open(tmp_path / "data")
    try:
        guard = FlowGuard(max_sessions=1)
        guard.watch_drops(taint_drop_auditor(access))
        guard.record_content("conn-a", "1", "resources/read toolhost://files/file:///plan", PRIVATE)
        guard.check("conn-b", "1", READ)
        assert access.audit_writer.flush(timeout=30)
        rows = [r for r in access.audit_log.rows() if r["action"] == "taint"]
        assert [(r["status"], r["detail"]) for r in rows] == [(
            "session_dropped", "session conn-a (private) dropped: toolhost keeps at most 1 taint sessions; it had "
            "seen 1 private and 0 untrusted results (#1 resources/read toolhost://files/file:///plan (call 1))")]
    finally:
        access.close()
