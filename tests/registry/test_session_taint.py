"""Session taint: the trifecta rule's decisions and reasons; order and session isolation."""

from __future__ import annotations

import pytest

from registry.safety.flow import Label, derive_labels
from registry.safety.taint import MAX_CALLS_KEPT, SessionTaint, TaintDecision, TaintRule, TaintTracker
from registry.tool import ToolAnnotations, ToolDefinition, build_record

P, U, E = Label.PRIVATE_SOURCE, Label.UNTRUSTED_SOURCE, Label.EGRESS


def labels(name, **hints):
    rec = build_record(server="s", qualified_name=f"s__{name}",
                       definition=ToolDefinition(name=name, annotations=ToolAnnotations(**hints)))
    return derive_labels(rec)


READ_FILE = labels("read_file", read_only_hint=True, open_world_hint=False)
FETCH = labels("fetch", read_only_hint=True, open_world_hint=True)
POST = labels("post_note", read_only_hint=False, destructive_hint=False, open_world_hint=True)


def test_egress_after_private_and_untrusted_needs_approval_by_default():
    s = SessionTaint("sess-1")
    s.record_result("c1", "fs__read_file", READ_FILE)
    s.record_result("c2", "web__fetch", FETCH)
    verdict = s.check("c3", "out__post_note", POST)
    assert (verdict.decision, verdict.triggered, s.state) == (TaintDecision.APPROVE, True, "tainted")
    assert [c.call_id for c in verdict.private_calls] == ["c1"]
    assert [c.call_id for c in verdict.untrusted_calls] == ["c2"]
    assert verdict.reasons == (
        "Private data came from #1 fs__read_file (call c1).",
        "Untrusted content came from #2 web__fetch (call c2).",
        "out__post_note (call c3) is egress (name cue 'post' and not read-only).",
    )
    assert verdict.message("out__post_note").startswith(
        "The call to out__post_note needs an approval: this session has read private data and untrusted content")


@pytest.mark.parametrize("decision", list(TaintDecision))
def test_configured_decision_is_returned(decision):
    s = SessionTaint("s")
    s.record_result("c1", "inbox", [P, U])  # one result can carry both labels
    verdict = s.check("c2", "post", [E], TaintRule(decision=decision))
    assert (verdict.decision, verdict.triggered) == (decision, True)


def test_other_orders_and_missing_untrusted_read_run():
    only_private = SessionTaint("a")
    only_private.record_result("c1", "read", READ_FILE)
    assert only_private.check("c2", "post", POST).decision is TaintDecision.ALLOW
    assert only_private.state == "private"

    post_first = SessionTaint("b")  # egress before the untrusted read: allowed, then the read taints
    post_first.record_result("c1", "read", READ_FILE)
    assert not post_first.check("c2", "post", POST).triggered
    post_first.record_result("c2", "post", POST)  # a post result carries untrusted (its cue) and egress
    assert post_first.state == "tainted"

    not_egress = SessionTaint("c")
    not_egress.record_result("c1", "read", READ_FILE)
    not_egress.record_result("c2", "fetch", FETCH)
    verdict = not_egress.check("c3", "read", READ_FILE)
    assert (verdict.decision, verdict.triggered, verdict.message("read")) == (TaintDecision.ALLOW, False, "")


def test_sessions_are_isolated_and_bounded():
    tracker = TaintTracker(max_sessions=2)
    dropped: list[tuple[str, str]] = []
    tracker.watch_drops(lambda state, reason: dropped.append((state.session_id, state.state)))
    tracker.session("x").record_result("c1", "read", READ_FILE)
    tracker.session("y").record_result("c1", "fetch", FETCH)
    assert tracker.session("x").state == "private" and tracker.session("y").state == "untrusted"
    tracker.session("x")
    tracker.session("z")  # x was used more recently than y: y goes, and is reported
    assert len(tracker) == 2 and dropped == [("y", "untrusted")]
    assert tracker.session("y").state == "clean"
    tracker.end("x")
    assert tracker.session("x").state == "clean"
    with pytest.raises(ValueError, match="max_sessions must be at least 1"):
        TaintTracker(max_sessions=0)


def test_many_sources_are_counted_but_only_the_first_kept():
    s = SessionTaint("s")
    for i in range(MAX_CALLS_KEPT + 5):
        s.record_result(f"p{i}", "read", READ_FILE)
    s.record_result("u", "fetch", FETCH)
    verdict = s.check("e", "post", POST, TaintRule(decision="deny"))
    assert len(verdict.private_calls) == MAX_CALLS_KEPT
    assert verdict.reasons[0].endswith("and 5 more.")
    assert "Start a new session" in verdict.message("post")


def test_a_caller_flooding_new_sessions_pushes_out_only_its_own_and_reports_a_tainted_one():
    tracker = TaintTracker(max_sessions=10, max_per_owner=3)
    dropped: list[tuple[str, str, str]] = []
    tracker.watch_drops(lambda state, reason: dropped.append((state.session_id, state.state, reason)))
    bob = tracker.session("caller:bob:kb")
    bob.record_result("c1", "read", READ_FILE)
    bob.record_result("c2", "fetch", FETCH)
    tracker.session("caller:alice:ka:s0").record_result("c1", "read", READ_FILE)
    for i in range(1, 200):  # clean sessions go first: alice's private one stays
        tracker.session(f"caller:alice:ka:s{i}")
    assert tracker.session("caller:bob:kb") is bob and bob.state == "tainted"
    assert len(tracker) == 4 and dropped == []  # bob's, alice's private s0 and her two newest
    assert tracker.session("caller:alice:ka:s0").state == "private"
    for i in range(200, 203):  # every one of alice's sessions has seen a source: her oldest goes, reported
        tracker.session(f"caller:alice:ka:s{i}").record_result("c1", "read", READ_FILE)
    reason = "its caller caller:alice:ka opened more than 3 taint sessions"
    assert dropped == [("caller:alice:ka:s0", "private", reason)]
    assert tracker.session("caller:bob:kb") is bob and bob.state == "tainted"


def test_the_global_bound_drops_a_clean_session_first_then_the_biggest_callers_oldest():
    tracker = TaintTracker(max_sessions=3, max_per_owner=10)
    dropped: list[tuple[str, str]] = []
    tracker.watch_drops(lambda state, reason: dropped.append((state.session_id, reason)))
    tracker.session("conn-a").record_result("c1", "fetch", FETCH)
    tracker.session("conn-b")  # clean
    tracker.session("caller:eve:ke:1").record_result("c1", "fetch", FETCH)
    tracker.session("caller:eve:ke:2").record_result("c1", "fetch", FETCH)  # over 3: clean conn-b goes, unreported
    assert dropped == [] and tracker.session("conn-a").state == "untrusted"
    tracker.session("caller:eve:ke:3")  # no clean one left: eve holds the most, her oldest goes
    assert dropped == [("caller:eve:ke:1", "toolhost keeps at most 3 taint sessions")]
    assert tracker.session("conn-a").state == "untrusted"
    with pytest.raises(ValueError, match="max_per_owner must be at least 1"):
        TaintTracker(max_per_owner=0)


def test_owner_of_names_the_caller_of_a_stateless_session():
    from registry.safety import owner_of

    assert owner_of("caller:alice:k1:conv-7:x") == "caller:alice:k1" == owner_of("caller:alice:k1")
    assert owner_of("conn-0123") == "conn-0123"
