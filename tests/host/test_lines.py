"""Line framing with a size limit (:mod:`host.lines`), the splitter of both stdio readers."""

from __future__ import annotations

import random

import pytest

from host.lines import EDGE_BYTES, LineFramer, LineTooLong


def test_lines_split_across_chunks_come_out_whole_in_order() -> None:
    f = LineFramer(100)
    assert f.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert f.feed(b":2") == []
    assert f.feed(b"}\n\nlast") == [b'{"b":2}', b""]  # a blank line is a line (the readers skip it)
    assert f.finish() == [b"last"]  # the end of the stream ends an unterminated line
    assert f.finish() == []


def test_a_line_exactly_at_the_limit_is_kept_one_byte_more_is_dropped_with_its_edges() -> None:
    f = LineFramer(10)
    assert f.feed(b"0123456789\n") == [b"0123456789"]
    assert f.feed(b"0123456789A\nok\n") == [LineTooLong(11, 10, b"0123456789A", b"0123456789A"), b"ok"]


def test_a_long_line_is_reported_once_when_it_ends_and_nothing_past_the_limit_is_held() -> None:
    f = LineFramer(8)
    assert f.feed(b"abcde") == []
    assert f.feed(b"fghij") == []  # past the limit: from here on only its edges are kept
    assert f.feed(b"k" * 10_000) == []
    assert f._parts == []  # the point of the limit: no part of the line is held
    line = b"abcdefghij" + b"k" * 10_002 + b"}"
    assert f.feed(b"kk}\nnext\n") == [LineTooLong(10_013, 8, line[:EDGE_BYTES], line[-EDGE_BYTES:]), b"next"]
    assert f.finish() == []


def test_an_unterminated_long_line_is_reported_at_the_end_of_the_stream() -> None:
    f = LineFramer(4)
    assert f.feed(b"123456") == []
    assert f.finish() == [LineTooLong(6, 4, b"123456", b"123456")]


def test_head_and_tail_are_the_first_and_last_edge_bytes_of_the_line() -> None:
    f = LineFramer(EDGE_BYTES * 4)
    first = b'{"jsonrpc":"2.0","id":7,"result":' + b"x" * 300
    last = b"z" * 600 + b',"jsonrpc":"2.0","id":8}'
    out = f.feed(first) + f.feed(b"y" * (EDGE_BYTES * 4)) + f.feed(last[:5]) + f.feed(last[5:] + b"\n")
    line = first + b"y" * (EDGE_BYTES * 4) + last
    assert out == [LineTooLong(len(line), EDGE_BYTES * 4, line[:EDGE_BYTES], line[-EDGE_BYTES:])]


def test_random_chunking_gives_what_a_plain_split_gives() -> None:
    rng = random.Random(7)
    for _ in range(300):
        limit = rng.randint(1, 40)
        lines = [bytes(rng.choice(b"ab\r{}") for _ in range(rng.randint(0, 60))) for _ in range(rng.randint(0, 8))]
        data = b"\n".join(lines) + rng.choice([b"", b"\n"])
        f, out, i = LineFramer(limit), [], 0
        while i < len(data):
            j = i + rng.randint(1, 17)
            out += f.feed(data[i:j])
            i = j
        out += f.finish()
        want = [x if len(x) <= limit else LineTooLong(len(x), limit, x[:EDGE_BYTES], x[-EDGE_BYTES:])
                for x in data.split(b"\n")]
        if data.endswith(b"\n") or not data:
            want = want[:-1]
        assert out == want, (limit, data)


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="LineFramer limit must be a positive number of bytes, got 0"):
        LineFramer(0)
