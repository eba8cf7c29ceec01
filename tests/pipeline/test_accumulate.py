"""Streamed argument accumulation (BR-04 parallel calls, BR-07 split UTF-8)."""

from __future__ import annotations

import json

import pytest

from host.agent.accumulate import ArgumentAccumulator, InvalidEncoding
from host.pipeline import CallAlreadyFinished, DuplicateCall, UnknownCall


def test_br04_interleaved_parallel_calls_to_the_same_tool_stay_separate():
    acc = ArgumentAccumulator()
    for i, cid in enumerate(["c1", "c2", "c3"]):
        acc.start(index=i, call_id=cid, name="gitlab__get_project")
    pieces = {0: ['{"proj', 'ect_id"', ':3}'], 1: ['{"project_id"', ':9', '}'], 2: ['{', '"project_id"', ':11}']}
    for step in range(3):  # interleave: one fragment of each call per round
        for i in range(3):
            acc.feed(pieces[i][step], index=i)
    acc.finish_all()
    calls = acc.calls()
    assert [c.call_id for c in calls] == ["c1", "c2", "c3"]
    assert [c.raw_arguments for c in calls] == ['{"project_id":3}', '{"project_id":9}', '{"project_id":11}']
    assert [json.loads(c.raw_arguments) for c in calls] == [{"project_id": n} for n in (3, 9, 11)]
    assert [c.index for c in calls] == [0, 1, 2]
    assert all(c.arguments is None for c in calls)


def test_br04_same_index_different_ids_are_different_calls():
    # Some OpenAI-compatible servers send every parallel call at index 0 with a new id.
    acc = ArgumentAccumulator()
    acc.start(index=0, call_id="a", name="t")
    acc.feed('{"n":1}', index=0, call_id="a")
    acc.start(index=0, call_id="b", name="t")
    acc.feed('{"n":2}', index=0, call_id="b")
    acc.finish_all()
    assert [(c.call_id, c.raw_arguments) for c in acc.calls()] == [("a", '{"n":1}'), ("b", '{"n":2}')]


def test_br07_utf8_split_one_byte_per_chunk_is_byte_identical():
    payload = '{"city":"杭州"}'
    acc = ArgumentAccumulator()
    acc.start(index=0, call_id="c1", name="weather")
    for b in payload.encode("utf-8"):
        acc.feed(bytes([b]), index=0)
    acc.finish(index=0)
    (call,) = acc.calls()
    assert call.raw_arguments == payload
    assert call.raw_arguments.encode("utf-8") == payload.encode("utf-8")
    assert "\ufffd" not in call.raw_arguments


def test_br07_two_calls_each_split_mid_character_interleaved():
    a, b = '{"q":"🙂é"}'.encode(), '{"q":"漢字"}'.encode()
    acc = ArgumentAccumulator()
    acc.start(index=0, call_id="x")
    acc.start(index=1, call_id="y")
    for i in range(max(len(a), len(b))):
        if i < len(a):
            acc.feed(a[i : i + 1], call_id="x")
        if i < len(b):
            acc.feed(b[i : i + 1], call_id="y")
    acc.finish_all()
    assert [c.raw_arguments for c in acc.calls()] == ['{"q":"🙂é"}', '{"q":"漢字"}']


def test_id_arriving_after_an_index_only_start_is_attached():
    acc = ArgumentAccumulator()
    acc.start(index=0)
    acc.feed('{"a":', index=0, call_id="late")
    acc.feed("1}", index=0)
    acc.set_name("t", call_id="late")
    acc.finish_all()
    (call,) = acc.calls()
    assert (call.call_id, call.name, call.raw_arguments) == ("late", "t", '{"a":1}')


def test_calls_without_provider_ids_get_unique_generated_ids():
    acc = ArgumentAccumulator()
    acc.start(index=0, name="a")
    acc.start(index=1, name="b")
    acc.finish_all()
    assert [c.call_id for c in acc.calls()] == ["toolhost_call_0", "toolhost_call_1"]


def test_fragment_for_a_call_never_started_raises_a_clear_error():
    acc = ArgumentAccumulator()
    with pytest.raises(UnknownCall, match=r"feed\(index=4\).*start\(\)"):
        acc.feed("{}", index=4)
    with pytest.raises(UnknownCall):
        acc.finish(call_id="nope")


def test_fragment_after_finish_raises():
    acc = ArgumentAccumulator()
    acc.start(index=0, call_id="c")
    acc.finish(index=0)
    with pytest.raises(CallAlreadyFinished, match="already finished"):
        acc.feed("x", index=0)


def test_duplicate_start_raises():
    acc = ArgumentAccumulator()
    acc.start(index=0, call_id="c")
    with pytest.raises(DuplicateCall):
        acc.start(index=1, call_id="c")


def test_invalid_utf8_is_stream_corruption():
    acc = ArgumentAccumulator()
    acc.start(index=0, call_id="c")
    acc.feed(b'{"a":"\xe6\x9d', index=0)  # truncated 3-byte sequence
    with pytest.raises(InvalidEncoding, match="not valid UTF-8"):
        acc.finish(index=0)


def test_unfinished_calls_are_not_returned_until_finished():
    acc = ArgumentAccumulator()
    acc.start(index=0, call_id="c")
    acc.feed("{}", index=0)
    assert acc.calls() == [] and acc.pending == 1
    acc.finish_all()
    assert [c.raw_arguments for c in acc.calls()] == ["{}"] and acc.pending == 0
