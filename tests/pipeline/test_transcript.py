"""Pairing, repair and trimming: BR-01 (trim whole units), BR-02 (duplicate ids)."""

from __future__ import annotations

from host.agent.transcript import Message, check_transcript, rename_duplicate_ids, repair_transcript, trim_history
from host.calls import ResultStatus, TextBlock, ToolCall, ToolResult


def call(cid, name="t", args="{}"):
    return ToolCall(call_id=cid, name=name, raw_arguments=args, arguments={})


def result(cid, text="ok"):
    return Message(role="tool", result=ToolResult(call_id=cid, name="t", content=[TextBlock(text=text)]))


def asst(*cids, text=""):
    return Message(role="assistant", text=text, calls=[call(c) for c in cids])


SYS, U1, U2 = Message(role="system", text="sys"), Message(role="user", text="q1"), Message(role="user", text="q2")


def issues(msgs):
    return [(i.kind, i.call_id, i.message_index) for i in check_transcript(msgs)]


def test_well_paired_transcript_has_no_issues():
    assert issues([SYS, U1, asst("c1", "c2"), result("c1"), result("c2"), U2]) == []


def test_checker_reports_every_kind_of_problem():
    msgs = [SYS, U1, asst("c1", "c1"), result("c1"), result("zz"), asst("c2"), result("c2"), result("c2"),
            asst("c1")]
    assert issues(msgs) == [
        ("duplicate_call_id", "c1", 2),
        ("orphan_result", "zz", 4),
        ("missing_result", "c1", 2),
        ("duplicate_result", "c2", 7),
        ("duplicate_call_id", "c1", 8),
        ("missing_result", "c1", 8),
    ]


def test_result_before_any_call_is_an_orphan():
    assert issues([U1, result("c9"), asst()]) == [("orphan_result", "c9", 1)]


def test_br02a_duplicate_ids_in_one_turn_are_renamed_and_results_paired_in_order():
    msgs = [U1, asst("call_X", "call_X"), result("call_X", "first"), result("call_X", "second")]
    rep = repair_transcript(msgs)
    assert [c.call_id for c in rep.messages[1].calls] == ["call_X", "call_X_dup1"]
    assert [(m.result.call_id, m.result.text) for m in rep.messages[2:]] == [("call_X", "first"),
                                                                            ("call_X_dup1", "second")]
    assert check_transcript(rep.messages) == []
    assert rep.actions == ["renamed duplicate call id call_X to call_X_dup1 (message 1)"]


def test_br02b_reused_id_in_a_later_turn_is_renamed_deterministically():
    msgs = [U1, asst("list_dir:0"), result("list_dir:0", "a"), U2, asst("list_dir:0"), result("list_dir:0", "b")]
    rep1, rep2 = repair_transcript(msgs), repair_transcript(msgs)
    assert rep1.messages == rep2.messages
    assert rep1.messages[4].calls[0].call_id == "list_dir:0_dup1"
    assert rep1.messages[5].result.call_id == "list_dir:0_dup1" and rep1.messages[5].result.text == "b"
    assert check_transcript(rep1.messages) == []


def test_rename_skips_ids_that_already_exist():
    out = rename_duplicate_ids([call("x"), call("x_dup1"), call("x")])
    assert [c.call_id for c in out] == ["x", "x_dup1", "x_dup2"]


def test_repair_adds_not_executed_results_and_moves_results_after_their_turn():
    msgs = [U1, asst("a", "b", "c"), result("b"), U2, result("a"), result("a"), result("q")]
    rep = repair_transcript(msgs, reason="the host crashed")
    roles = [(m.role, m.result.call_id if m.result else m.text) for m in rep.messages]
    assert roles == [("user", "q1"), ("assistant", ""), ("tool", "a"), ("tool", "b"), ("tool", "c"), ("user", "q2")]
    added = rep.messages[4].result
    assert added.status is ResultStatus.NOT_EXECUTED and "the host crashed" in added.text
    assert check_transcript(rep.messages) == []
    assert "dropped duplicate result for a (message 5)" in rep.actions
    assert "dropped result without a call for q (message 6)" in rep.actions


def test_repair_of_an_interrupted_last_turn():
    rep = repair_transcript([U1, asst("a", "b"), result("a")])
    assert [m.result.status for m in rep.messages[2:]] == [ResultStatus.OK, ResultStatus.NOT_EXECUTED]


def test_br01_trimming_drops_whole_units_never_half_a_pair():
    msgs = [SYS, U1, asst("c1"), result("c1", "x" * 500), U2, asst("c2", "c3"), result("c2"), result("c3"),
            Message(role="assistant", text="done")]
    for budget in range(0, 3000, 50):
        kept = trim_history(msgs, budget)
        assert kept[0] == SYS
        assert check_transcript(kept) == []
        assert kept[-1] == msgs[-1]
        body = [m for m in kept if m.role != "system"]
        assert body[0].role == "user"
    def size(m):
        return 10 + len(m.result.text if m.result else m.text) // 10 * 10

    small = trim_history(msgs, 100, size)
    assert small == [SYS, U2, asst("c2", "c3"), result("c2"), result("c3"), Message(role="assistant", text="done")]
    tiny = trim_history(msgs, 0, size)  # over budget: the last unit and the user message it answers survive
    assert tiny == [SYS, U2, Message(role="assistant", text="done")]
    assert trim_history(msgs, 10**6) == msgs
