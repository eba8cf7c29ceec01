"""The exact query forms of tool search: ``select:name1,name2`` (lookup by name) and
``regex:PATTERN`` (a time-bounded Python regular expression over names and texts, like
Anthropic's ``tool_search_tool_regex``). Pure: no I/O."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from registry.safe_regex import RegexSyntaxError, RegexTooComplex, compile_pattern
from registry.search.document import schema_texts
from registry.search.ranking import ToolFilter
from registry.search.result import SearchHit, SearchResult
from registry.tool import ToolRecord

__all__ = [
    "MAX_REGEX_CHARS",
    "REGEX_BUDGET_SECONDS",
    "REGEX_MAX_REPEAT",
    "REGEX_MAX_UNROLLED",
    "regex_tools",
    "select_tools",
]

MAX_REGEX_CHARS = 200
"""Longest accepted ``regex:`` pattern (characters), as Anthropic's regex tool search."""

REGEX_BUDGET_SECONDS = 0.25
"""Time one ``regex:`` search may spend matching, over all tools (seconds)."""

REGEX_MAX_REPEAT = 1000
"""Largest counted repetition bound in a ``regex:`` pattern (compile memory, :mod:`registry.safe_regex`)."""

REGEX_MAX_UNROLLED = 10_000
"""Largest unrolled size of a ``regex:`` pattern (about 3 MB compiled, :func:`registry.safe_regex.check_pattern`)."""

_REGEX_TEXT_CHARS = 4000


def select_tools(
    by_name: Mapping[str, ToolRecord],
    names: str,
    visible: Callable[[ToolRecord], bool] | None,
    keep: ToolFilter,
    limit: int,
) -> SearchResult:
    """``select:a,b``: the named tools in the order given (exact, case-insensitive, or by unique
    original name); names that match no visible tool are listed in ``not_found``."""
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    if not wanted:
        return SearchResult(
            [], "select", "select: needs tool names, e.g. 'select:git__git_status,time__get_current_time'."
        )
    hits: list[SearchHit] = []
    missing: list[str] = []
    seen: set[str] = set()
    for name in wanted:
        rec = _lookup(by_name, name, visible)
        if rec is None or (visible is not None and not visible(rec)) or not keep(rec):
            missing.append(name)
        elif rec.qualified_name not in seen:
            seen.add(rec.qualified_name)
            hits.append(SearchHit(rec, 1.0))
    message = None
    if missing:
        message = f"No tool named {', '.join(missing)}. Search by what the tool does, e.g. 'send email'."
    return SearchResult(hits[: max(limit, len(wanted))], "select", message, missing)


def regex_tools(
    by_name: Mapping[str, ToolRecord],
    pattern: str,
    visible: Callable[[ToolRecord], bool] | None,
    keep: ToolFilter,
    limit: int,
) -> SearchResult:
    """``regex:PATTERN`` over names (rank 2) and description / parameter texts (rank 1), with a
    time budget over all tools; errors come back as a result with a message, never raised."""
    if not pattern:
        return SearchResult(
            [], "regex", "regex: needs a pattern, e.g. 'regex:^git__' or 'regex:(?i)weather'.", invalid=True
        )
    if len(pattern) > MAX_REGEX_CHARS:
        return SearchResult(
            [], "regex", f"The regex pattern is longer than {MAX_REGEX_CHARS} characters.", invalid=True
        )
    try:
        rx = compile_pattern(pattern, ignore_case=True, max_repeat=REGEX_MAX_REPEAT, max_unrolled=REGEX_MAX_UNROLLED)
    except RegexTooComplex as exc:
        return SearchResult([], "regex", f"The regex {pattern!r} is too complex: {exc.reason}.", invalid=True)
    except RegexSyntaxError as exc:
        return SearchResult(
            [], "regex", f"Invalid regex {pattern!r}: {exc.reason}. Use Python 're' syntax.", invalid=True
        )
    # Patterns come from remote callers: every match runs with a share of one time budget
    # (registry.safe_regex), so a backtracking pattern cannot freeze the host.
    deadline = time.monotonic() + REGEX_BUDGET_SECONDS
    found: list[SearchHit] = []

    def hit(text: str) -> bool:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        return rx.search(text, timeout=remaining, concurrent=True) is not None

    try:
        for name in sorted(by_name):
            rec = by_name[name]
            if (visible is not None and not visible(rec)) or not keep(rec):
                continue
            if hit(rec.qualified_name) or hit(rec.original_name):
                found.append(SearchHit(rec, 2.0))
            elif hit(_regex_text(rec)):
                found.append(SearchHit(rec, 1.0))
    except TimeoutError:
        return SearchResult(
            [],
            "regex",
            f"The regex {pattern!r} took longer than {REGEX_BUDGET_SECONDS:g} s "
            "to run over the tools; use a simpler pattern (avoid nested repetition).",
        )
    found.sort(key=lambda h: (-h.score, h.tool.qualified_name))
    if not found:
        return SearchResult([], "regex", f"No tool matches the regex {pattern!r}.")
    return SearchResult(found[:limit], "regex")


def _lookup(
    by_name: Mapping[str, ToolRecord], name: str, visible: Callable[[ToolRecord], bool] | None
) -> ToolRecord | None:
    rec = by_name.get(name)
    if rec is not None:
        return rec
    low = name.lower()
    matches = [r for n, r in by_name.items() if n.lower() == low]
    if not matches:
        matches = [r for r in by_name.values() if r.original_name == name]
    if visible is not None:
        matches = [r for r in matches if visible(r)]
    return matches[0] if len(matches) == 1 else None


def _regex_text(rec: ToolRecord) -> str:
    names, descs, _ = schema_texts(rec.input_schema)
    text = "\n".join([rec.title or "", rec.description, " ".join(names), *descs])
    return text[:_REGEX_TEXT_CHARS]
