"""Hostile ``regex:`` search patterns (issue 11, finding 1): bounded in compile memory and time.

A 25-character pattern with nested counted repetition once drove the server past 20 GB while
compiling. Here the patterns run in a child process whose address space is capped at what it maps
after imports plus 256 MB: an unbounded compile would die there with MemoryError (exit 1).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from registry.safe_regex import RegexTooComplex, check_pattern
from registry.search.query_check import search_pattern_problem

CHILD = Path(__file__).parent / "hostile" / "regex_under_cap.py"


def test_hostile_patterns_are_refused_under_a_memory_cap():
    run = subprocess.run([sys.executable, str(CHILD), "256"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    search = dict(r for i, r in enumerate(report["results"]) if i % 2 == 0)
    library = dict(r for i, r in enumerate(report["results"]) if i % 2 == 1)
    assert search["((a{1000}){1000}){1000}"] == (
        "The regex '((a{1000}){1000}){1000}' is too complex: it unrolls to more than 10000 pattern nodes "
        "(counted repetitions multiply); use smaller bounds or '+'/'*' instead of large {n,m}."
    )
    for pattern in ("(?:a{1000}){1000}", "(?:(?:(?:(?:a{10}){10}){10}){10}){10}", "(?:[\\w\\W]{100}){100}"):
        assert "unrolls to more than 10000 pattern nodes" in search[pattern]
    for pattern in ("(?:x{99999}){99999}", "(?:a{1,}){4294967294}", "a{65535}b{65535}c{65535}"):
        assert search[pattern].endswith("a counted repetition bound is larger than 1000.")
    assert "fuzzy matching ({e<=n}) is not supported" in search["(?:foo){e<=3}"]
    assert search["(" * 40 + "a" + ")" * 40].endswith("groups are nested more than 32 deep.")
    assert "took longer than 0.25 s" in search["(?:(a|aa)+)+$"]
    # library defaults (schema patterns of upstream servers): same kinds refused, larger bounds
    assert "more than 20000 pattern nodes" in library["((a{1000}){1000}){1000}"]
    assert library["(?:x{99999}){99999}"].endswith("a counted repetition bound is larger than 20000")
    assert library["a{20000}"] == "compiled" and library["(?:[\\w\\W]{140}){140}"] == "compiled"
    assert search["a{20000}"].endswith("a counted repetition bound is larger than 1000.")
    assert search["(?:[\\w\\W]{99}){100}"] == "No tool matches the regex '(?:[\\\\w\\\\W]{99}){100}'."
    assert report["peak_rss_mb"] < 256


@pytest.mark.parametrize(
    ("pattern", "size"),
    [("^git__", 6), ("a{2}(b|c){3}", 8), ("[{]x{1,3}", 4), ("x{,5}", 5), ("\\p{L}+", 1), ("a{3,}", 3)],
)
def test_unrolled_size_of_ordinary_patterns(pattern: str, size: int):
    assert check_pattern(pattern) == size


def test_server_answers_invalid_arguments_before_compiling():
    assert search_pattern_problem("regex:((a{1000}){1000}){1000}") == (
        "the regex '((a{1000}){1000}){1000}' is too complex: it unrolls to more than 10000 pattern nodes "
        "(counted repetitions multiply); use smaller bounds or '+'/'*' instead of large {n,m}"
    )
    assert search_pattern_problem("regex:" + "a" * 201) == "the regex pattern is 201 characters; use at most 200"
    assert search_pattern_problem("regex:^git__") is None
    assert search_pattern_problem("send email {x{99999}}") is None  # bm25 text never compiles
    with pytest.raises(RegexTooComplex) as exc:
        check_pattern("(?:foo){e<=1}")
    assert exc.value.limit == "fuzzy"
