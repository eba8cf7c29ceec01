"""Finding secrets by their shape inside any text (a JWT, an AWS key, a password in a URL, ``token VALUE`` in prose).
Pure: no I/O.

:func:`secret_spans` returns the ``(start, end)`` character spans of secret values in a string:

* the detectors of `detect-secrets <https://github.com/Yelp/detect-secrets>`_ (Yelp; regex and
  keyword-context detectors for JWTs, AWS access key ids and secret access keys next to an
  ``aws``/``secret`` word, passwords in URLs, private-key headers, GitHub/GitLab/Slack/Stripe/
  OpenAI/npm/PyPI/SendGrid/Twilio/Discord/Telegram/… tokens);
* private-key blocks (``-----BEGIN … PRIVATE KEY-----`` to its ``END`` line, whole);
* a token-like value right after a secret word in prose (``token abc123…``, ``password is
  hunter22``, ``api key: …``) and a high-entropy token (Shannon entropy ≥
  :data:`ENTROPY_NEAR_WORD` bits per character, ≥ 16 characters) within three words after one;
* a free-standing 40-character mixed-case base64 run (an AWS secret access key without its label).

detect-secrets' own high-entropy and keyword plugins are not used: they only read quoted strings
of source files and flag ordinary identifiers in tool arguments.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from typing import Any

__all__ = ["DETECTOR_WINDOW", "ENTROPY_NEAR_WORD", "FoldedHint", "secret_spans", "shannon_entropy"]

ENTROPY_NEAR_WORD = 3.5
"""Bits per character above which a token within three words after a secret word is masked."""

_SKIP_DETECTORS = frozenset(
    {"IPPublicDetector", "KeywordDetector", "Base64HighEntropyString", "HexHighEntropyString"}
)

_PEM = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
_WORD = (
    r"(?:access[ _-]?token|refresh[ _-]?token|auth[ _-]?token|token|secret(?:[ _-]?(?:access[ _-]?)?key)?"
    r"|password|passwd|passphrase|pwd|api[ _-]?key|access[ _-]?key|private[ _-]?key|credentials?|bearer)"
)
_AFTER_WORD = re.compile(
    rf"(?i)\b{_WORD}s?\b(?P<gap>\s*(?:(?:is|was|=|:|of)\s*)?)(?P<value>[A-Za-z0-9_\-./+=~!@#$%^&*]{{8,}})"
)
_NEAR_WORD = re.compile(rf"(?i)\b{_WORD}s?\b(?:\W+\w+){{0,4}}?\W+(?P<value>[A-Za-z0-9_\-./+=~]{{16,}})")
# Bounded parts keep the scan linear: an unbounded scheme made every letter of a long run a
# start that scanned to the run's end (a 2 MB argument took the event loop for minutes).
_URL_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://[^/\s:@]{1,256}:(?P<value>[^@\s/]{1,512})@"
)
_OWN_TOKENS = re.compile(r"(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{22,}|(?<![A-Za-z0-9])glpat-[A-Za-z0-9_-]{20,}")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[a-z])"
                         r"(?=[A-Za-z0-9/+]*[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_JWT = re.compile(r"(?<![A-Za-z0-9_=-])eyJ[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+(?:\.[A-Za-z0-9_\-.+/=]*)?")
DETECTOR_WINDOW = 1024
"""Characters per piece that detect-secrets' regexes see. Some of them backtrack quadratically
on long runs (``NpmDetector`` on 20,000 ``/`` took 4.6 s, ``JwtTokenDetector`` on ``eyJ`` runs
0.5 s): they are written for lines of source files. Pieces overlap by half a window, so a secret
shorter than half a window is always whole in one piece; longer JWTs are found by :data:`_JWT`."""


_REQUIRED_LITERAL = {"NpmDetector": "_authToken"}
"""Detectors whose pattern cannot match without this text (checked first: ``NpmDetector``'s
``//.+/:_authToken=`` costs 9 ms per window of ``/``)."""


def _windows(text: str) -> list[str]:
    """``text`` cut into :data:`DETECTOR_WINDOW`-character pieces overlapping by half of one."""
    if len(text) <= DETECTOR_WINDOW:
        return [text]
    step = DETECTOR_WINDOW // 2
    return [text[i : i + DETECTOR_WINDOW] for i in range(0, len(text) - step, step)]


_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-.~+/=]*")
class FoldedHint:
    """A case-insensitive pre-check pattern that answers ASCII text ~4x faster than ``re.IGNORECASE``.

    Python's ``re`` cannot use its literal-prefix scan for an ignore-case alternation (~9 µs for
    a 17-character identifier; the call path checks dozens of strings per call). ASCII
    text is lowercased and searched with ``lower``, a case-sensitive pattern written in lower case,
    which finds exactly what ``(?i)`` + ``lower`` finds in ASCII text; other text goes through the
    ignore-case pattern itself. ``search`` returns a match (positions valid for ``text``) or ``None``.
    """

    __slots__ = ("ignore_case", "lower")

    def __init__(self, lower: str) -> None:
        self.lower = re.compile(lower)
        self.ignore_case = re.compile(lower, re.IGNORECASE)

    def search(self, text: str) -> re.Match[str] | None:
        if text.isascii():
            return self.lower.search(text.lower())
        return self.ignore_case.search(text)


_HINT = FoldedHint(
    r"token|secret|passw|pwd|passphrase|api.?key|access.?key|auth|cookie|private|session|credential|bearer|basic"
    r"|://|begin|[a-z0-9_\-+/=.:]{20}"
)
"""Cheap pre-check: text without a secret word, a URL, a PEM header or a 20-character token-like
run cannot hold a secret any rule finds."""


def shannon_entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character (0 for an empty string)."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


@functools.cache
def _detectors() -> tuple[Any, ...]:
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    except ImportError:  # pragma: no cover - detect-secrets is a dependency; the own rules still apply
        return ()
    classes = get_mapping_from_secret_type_to_class().values()
    return tuple(cls() for cls in sorted(classes, key=lambda c: c.__name__) if cls.__name__ not in _SKIP_DETECTORS)


def _looks_like_value(value: str) -> bool:
    """A token right after a secret word: letters and digits mixed, or high entropy (not a word)."""
    v = value.rstrip(".,;:!?")
    if len(v) < 8:
        return False
    has_digit = any(c.isdigit() for c in v)
    has_alpha = any(c.isalpha() for c in v)
    return (has_digit and has_alpha) or shannon_entropy(v) >= ENTROPY_NEAR_WORD


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Sorted, merged ``(start, end)`` spans of secret values found in ``text`` (see module docstring)."""
    if len(text) < 8 or not _HINT.search(text):
        return []
    spans: list[tuple[int, int]] = []
    for m in _PEM.finditer(text):
        spans.append(m.span())
    for m in _JWT.finditer(text):  # linear; the detector's own regex only runs on windows
        spans.append(m.span())
    windows = _windows(text)
    for det in _detectors():
        found: set[str] = set()
        needs = _REQUIRED_LITERAL.get(det.__class__.__name__)
        for window in windows:
            if needs is not None and needs not in window:
                continue
            try:
                found.update(det.analyze_string(window))
            except Exception:  # noqa: BLE001 - a detector bug must never lose the call's record
                continue
        for secret in found:
            if not isinstance(secret, str) or len(secret) < 4:
                continue
            start = text.find(secret)
            while start >= 0:
                end = start + len(secret)
                tail = _TOKEN_TAIL.match(text, end)  # e.g. the JWT signature after the detected part
                if det.__class__.__name__ in ("JwtTokenDetector",) and tail:
                    end = tail.end()
                spans.append((start, end))
                start = text.find(secret, end)
    for m in _URL_PASSWORD.finditer(text):
        spans.append(m.span("value"))
    for m in _OWN_TOKENS.finditer(text):
        spans.append(m.span())
    for m in _AFTER_WORD.finditer(text):
        if _looks_like_value(m.group("value")):
            spans.append(m.span("value"))
    for m in _NEAR_WORD.finditer(text):
        value = m.group("value")
        if shannon_entropy(value) >= ENTROPY_NEAR_WORD and any(c.isdigit() for c in value):
            spans.append(m.span("value"))
    for m in _AWS_SECRET.finditer(text):
        if shannon_entropy(m.group(0)) >= 4.0:
            spans.append(m.span())
    if not spans:
        return []
    spans.sort()
    merged = [spans[0]]
    for s, e in spans[1:]:
        if s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged
