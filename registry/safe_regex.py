"""Regular expressions with a time budget, for patterns or texts that come from outside.

Python's ``re`` backtracks without limit and holds the GIL while it does, so one crafted
pattern (``(\\w|\\w)+!``) or one crafted input against a server's schema ``pattern``
(``^(a|aa)+$``) can freeze the whole event loop for seconds or forever. The well-kept
``regex`` package takes a ``timeout`` and releases the GIL (``concurrent=True``); we use it
wherever a pattern or the text it runs on is not ours. Pure: no I/O.
"""

from __future__ import annotations

import functools
from typing import Any

import regex

__all__ = ["DEFAULT_TIMEOUT_SECONDS", "RegexSyntaxError", "RegexTimeout", "compile_pattern", "search"]

DEFAULT_TIMEOUT_SECONDS = 0.05
"""Budget of one :func:`search` call (seconds)."""


class RegexTimeout(Exception):
    """A match ran out of its time budget.

    Attributes:
        pattern: the pattern.
        timeout_seconds: the budget that ran out.
    """

    def __init__(self, pattern: str, timeout_seconds: float) -> None:
        self.pattern = pattern
        self.timeout_seconds = timeout_seconds
        super().__init__(f"the pattern {pattern[:80]!r} took longer than {timeout_seconds:g} s to match")


class RegexSyntaxError(ValueError):
    """The pattern does not compile. Attributes: ``pattern``, ``reason``."""

    def __init__(self, pattern: str, reason: str) -> None:
        self.pattern = pattern
        self.reason = reason
        super().__init__(f"invalid regular expression {pattern[:80]!r}: {reason}")


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str, flags: int) -> Any:
    try:
        return regex.compile(pattern, flags)
    except regex.error as err:
        raise RegexSyntaxError(pattern, str(err)) from None


def compile_pattern(pattern: str, *, ignore_case: bool = False) -> Any:
    """The compiled pattern (cached).

    Raises:
        RegexSyntaxError: it does not compile.
    """
    return _compiled(pattern, regex.IGNORECASE if ignore_case else 0)


def search(
    pattern: str, text: str, *, ignore_case: bool = False, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
) -> Any:
    """``regex.search`` with a time budget: the match object, or ``None``.

    Raises:
        RegexSyntaxError: the pattern does not compile.
        RegexTimeout: matching took longer than ``timeout_seconds``.
    """
    compiled = compile_pattern(pattern, ignore_case=ignore_case)
    try:
        return compiled.search(text, timeout=timeout_seconds, concurrent=True)
    except TimeoutError:
        raise RegexTimeout(pattern, timeout_seconds) from None
