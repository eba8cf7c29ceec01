"""Line framing with a size limit (:mod:`host.lines`), the splitter of both stdio readers."""

from __future__ import annotations

import pytest

from host.lines import HEAD_BYTES, LineFramer, LineTooLong


def test_lines_split_across_chunks_come_out_whole_in_order() -> None:
    f = LineFramer(100)
    assert f.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert f.feed(b":2") == []
    assert f.feed(b"}\n\nlast") == [b'{"b":2}', b""]  # a blank line is a line (the readers skip it)
    assert f.finish() == [b"last"]  # the end of the stream ends an unterminated line
    assert f.finish() == []


def test_a_line_exactly_at_the_limit_is_kept_one_byte_more_is_dropped_with_its_head() -> None:
    f = LineFramer(10)
    assert f.feed(b"0123456789\n") == [b"0123456789"]
    assert f.feed(b"0123456789A\nok\n") == [LineTooLong(11, 10, b"0123456789A"), b"ok"]


def test_a_line_without_newline_is_reported_once_as_soon_as_it_passes_the_limit_and_skipped_to_its_end() -> None:
    f = LineFramer(8)
    assert f.feed(b"abcde") == []
    out = f.feed(b"fghij")  # passes the limit here: reported at once, nothing more is held
    assert out == [LineTooLong(10, 8, b"abcdefghij")]
    assert f.feed(b"k" * 10_000) == []  # the rest of that line is dropped, never reported again
    assert f.feed(b"kk\nnext\n") == [b"next"]
    assert f.finish() == []


def test_the_head_of_a_long_line_is_its_first_bytes_at_most_head_bytes() -> None:
    f = LineFramer(HEAD_BYTES * 4)
    first = b'{"jsonrpc":"2.0","id":7,"result":' + b"x" * 300
    out = f.feed(first) + f.feed(b"y" * (HEAD_BYTES * 4)) + f.feed(b"\n")
    assert len(out) == 1 and isinstance(out[0], LineTooLong)
    assert out[0].head == (first + b"y" * HEAD_BYTES)[:HEAD_BYTES]
    assert out[0].size == len(first) + HEAD_BYTES * 4


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="LineFramer limit must be a positive number of bytes, got 0"):
        LineFramer(0)
