"""Checking a ``tool_search`` query before it reaches a compiler (issue 11).

``regex:PATTERN`` queries come from remote callers; :func:`search_pattern_problem` measures the
pattern (:func:`registry.safe_regex.check_pattern`) with the search limits, so a server answers a
hostile pattern with an ``invalid_arguments`` error instead of compiling it. Pure: no I/O.
"""

from __future__ import annotations

from registry.safe_regex import RegexTooComplex, check_pattern
from registry.search.exact import MAX_REGEX_CHARS, REGEX_MAX_REPEAT, REGEX_MAX_UNROLLED

__all__ = ["search_pattern_problem"]


def search_pattern_problem(query: str) -> str | None:
    """Why ``query`` cannot run (one sentence naming the limit and the fix), or ``None``.

    Only ``regex:`` queries are checked; other modes never compile user text.
    """
    text = query.strip()
    if not text.lower().startswith("regex:"):
        return None
    pattern = text[len("regex:") :].strip()
    if len(pattern) > MAX_REGEX_CHARS:
        return f"the regex pattern is {len(pattern)} characters; use at most {MAX_REGEX_CHARS}"
    try:
        check_pattern(pattern, max_repeat=REGEX_MAX_REPEAT, max_unrolled=REGEX_MAX_UNROLLED)
    except RegexTooComplex as exc:
        return f"the regex {pattern[:80]!r} is too complex: {exc.reason}"
    return None
