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
    tracker.session("x").record_result("c1", "read", READ_FILE)
    tracker.session("y").record_result("c1", "fetch", FETCH)
    assert tracker.session("x").state == "private" and tracker.session("y").state == "untrusted"
    tracker.session("x")
    tracker.session("z")  # x was used more recently than y: y goes
    assert len(tracker) == 2
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
