"""Regular expressions with a time budget, for patterns or texts that come from outside.

Python's ``re`` backtracks without limit and holds the GIL while it does, so one crafted
pattern (``(\\w|\\w)+!``) or one crafted input against a server's schema ``pattern``
(``^(a|aa)+$``) can freeze the whole event loop for seconds or forever. The well-kept
``regex`` package takes a ``timeout`` and releases the GIL (``concurrent=True``); we use it
wherever a pattern or the text it runs on is not ours. Pure: no I/O.

A time budget does not bound *compiling*: ``regex`` (like ``re``) unrolls counted repetition,
so the 25-character ``((a{1000}){1000}){1000}`` asks for 10⁹ nodes and took a server past 20 GB.
Every pattern is therefore measured before it is compiled (:func:`check_pattern`):
its unrolled size (each atom times the bounds of the repetitions around it), its largest counted
repetition and its group nesting are capped, and fuzzy-matching constraints (``{e<=2}``, which
``regex`` runs in exponential time) are refused. A refused pattern raises
:class:`RegexTooComplex` (a :class:`RegexSyntaxError`) naming the limit and how to stay under it.
"""

from __future__ import annotations

import functools
from typing import Any

import regex

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_NESTING",
    "MAX_REPEAT",
    "MAX_UNROLLED",
    "RegexSyntaxError",
    "RegexTimeout",
    "RegexTooComplex",
    "check_pattern",
    "compile_pattern",
    "search",
]

DEFAULT_TIMEOUT_SECONDS = 0.05
"""Budget of one :func:`search` call (seconds)."""

MAX_REPEAT = 20_000
"""Largest counted repetition bound accepted by default (``{n}``, ``{n,m}``)."""

MAX_UNROLLED = 20_000
"""Largest unrolled pattern size accepted by default (atoms × enclosing repetition bounds); about
270 bytes of compiled pattern each, so a pattern at the cap compiles in about 6 MB and < 0.1 s
(``a{20000}``: 84 ms, ``(?:[\\w\\W]{140}){140}``: 28 ms on the CI machine)."""

MAX_NESTING = 32
"""Deepest group nesting accepted."""


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


class RegexTooComplex(RegexSyntaxError):
    """The pattern would cost too much to compile (see :func:`check_pattern`).

    Attributes: ``pattern``, ``reason`` (which limit, and how to stay under it), ``limit`` (name of
    the exceeded limit: ``repeat``, ``unrolled``, ``nesting`` or ``fuzzy``).
    """

    def __init__(self, pattern: str, reason: str, limit: str) -> None:
        self.limit = limit
        super().__init__(pattern, reason)


_QUANT = regex.compile(r"\{(\d*)(?:(,)(\d*))?\}")
_BRACED_ESCAPES = frozenset("pPNxuUgk")  # \p{L}, \N{name}, \x{41}, \g<1>/\g{1}, \k<n>/\k{n}


def check_pattern(
    pattern: str, *, max_repeat: int = MAX_REPEAT, max_unrolled: int = MAX_UNROLLED, max_nesting: int = MAX_NESTING
) -> int:
    """Measure ``pattern`` before compiling it; return its unrolled size.

    The size counts every atom (a character, class, escape or group) once per copy the compiler
    makes of it: an atom under ``{n,m}`` counts ``m`` times (``n`` times, at least 1, when
    unbounded), and nested repetitions multiply. A linear scan in ``len(pattern)``; it reads the
    syntax of ``regex`` and ``re`` (escapes, classes, groups, quantifiers).

    Raises:
        RegexTooComplex: a counted bound above ``max_repeat``, an unrolled size above
            ``max_unrolled``, groups nested deeper than ``max_nesting``, or a fuzzy-matching
            constraint (``{e<=1}``).
    """
    # stack of [cost of the finished atoms of this group, cost of the last atom]
    stack: list[list[int]] = [[0, 0]]
    i, n = 0, len(pattern)

    def fail(reason: str, limit: str) -> RegexTooComplex:
        return RegexTooComplex(pattern, reason, limit)

    def add_atom(cost: int) -> None:
        top = stack[-1]
        top[0] += top[1]
        top[1] = cost

    def multiply(times: int) -> None:
        top = stack[-1]
        top[1] *= times
        if top[0] + top[1] > max_unrolled:
            raise fail(
                f"it unrolls to more than {max_unrolled} pattern nodes (counted repetitions multiply); "
                "use smaller bounds or '+'/'*' instead of large {n,m}",
                "unrolled",
            )

    while i < n:
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1] if i + 1 < n else ""
            i += 2
            if nxt in _BRACED_ESCAPES and i < n and pattern[i] in "{<":
                close = pattern.find("}" if pattern[i] == "{" else ">", i)
                i = n if close < 0 else close + 1
            add_atom(1)
        elif ch == "[":
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            depth = 1
            while j < n and depth:
                c = pattern[j]
                if c == "\\":
                    j += 2
                    continue
                if c == "[" and j + 1 < n and pattern[j + 1] == ":":  # POSIX class [:alpha:]
                    close = pattern.find(":]", j + 2)
                    j = n if close < 0 else close + 2
                    continue
                if c == "[":
                    depth += 1  # regex V1 nested sets
                elif c == "]":
                    depth -= 1
                j += 1
            i = j
            add_atom(1)
        elif ch == "(":
            if len(stack) > max_nesting:
                raise fail(f"groups are nested more than {max_nesting} deep", "nesting")
            stack.append([0, 0])
            i += 1
            if pattern.startswith("?#", i):  # comment group: skip to its end
                close = pattern.find(")", i)
                stack.pop()
                i = n if close < 0 else close + 1
        elif ch == ")":
            inner = stack.pop() if len(stack) > 1 else [0, 0]
            add_atom(max(1, inner[0] + inner[1]))
            i += 1
        elif ch == "|":
            top = stack[-1]
            top[0] += top[1]
            top[1] = 0
            i += 1
        elif ch in "*+?":
            i += 1  # unbounded or optional: one copy plus a loop
        elif ch == "{":
            m = _QUANT.match(pattern, i)
            if m is None:
                close = pattern.find("}", i)
                body = pattern[i + 1 : close] if close > 0 else ""
                if body and regex.search(r"[eids]\s*[<>=]|[<>=]\s*[eids]|^[eids]$|\d\s*[eids]", body):
                    raise fail("fuzzy matching ({e<=n}) is not supported: it can run in exponential time", "fuzzy")
                add_atom(1)  # a literal '{'
                i += 1
                continue
            lo, comma, hi = m.group(1), m.group(2), m.group(3)
            if not lo and not hi and not comma:
                add_atom(1)  # "{}" is literal
                i = m.end()
                continue
            bounds = [int(b) for b in (lo, hi) if b]
            if any(b > max_repeat for b in bounds):
                raise fail(f"a counted repetition bound is larger than {max_repeat}", "repeat")
            times = int(hi) if hi else (int(lo or 0) if not comma else max(1, int(lo or 0)))
            multiply(max(1, times))
            i = m.end()
        else:
            add_atom(1)
            i += 1
    while len(stack) > 1:  # unbalanced: the compiler reports it
        inner = stack.pop()
        add_atom(max(1, inner[0] + inner[1]))
    total = stack[0][0] + stack[0][1]
    if total > max_unrolled:
        raise fail(f"it unrolls to more than {max_unrolled} pattern nodes", "unrolled")
    return total


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str, flags: int, max_repeat: int, max_unrolled: int) -> Any:
    check_pattern(pattern, max_repeat=max_repeat, max_unrolled=max_unrolled)
    try:
        return regex.compile(pattern, flags)
    except regex.error as err:
        raise RegexSyntaxError(pattern, str(err)) from None
    except (OverflowError, MemoryError, RecursionError) as err:
        raise RegexTooComplex(pattern, f"it is too large to compile ({type(err).__name__})", "unrolled") from None


def compile_pattern(
    pattern: str, *, ignore_case: bool = False, max_repeat: int = MAX_REPEAT, max_unrolled: int = MAX_UNROLLED
) -> Any:
    """The compiled pattern (cached), after :func:`check_pattern` bounded what compiling it costs.

    Raises:
        RegexTooComplex: it would cost too much to compile (see :func:`check_pattern`).
        RegexSyntaxError: it does not compile.
    """
    return _compiled(pattern, regex.IGNORECASE if ignore_case else 0, max_repeat, max_unrolled)


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
