"""The scanner's character-level checks and its finding type: invisible or control characters,
encoded payloads (base64, hex) and whitespace padding, per field.

:func:`segment_findings` is what :mod:`registry.safety.definition_scan` runs on every field before
the word rules; :class:`Finding` and :func:`escape_span` are shared by every part of the scanner.
Pure; no I/O.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from dataclasses import dataclass

from registry.safety import scan_rules as rules
from registry.safety.scan_rules import FindingKind

__all__ = ["MAX_SPAN_CHARS", "Finding", "decoded_text", "escape_span", "segment_findings"]

MAX_SPAN_CHARS = 160
"""Longest span reported (escaped characters); longer spans end with ``…``."""


@dataclass(frozen=True)
class Finding:
    """One suspicious span.

    Attributes:
        kind: :class:`FindingKind`.
        path: JSON path of the field (``description``, ``inputSchema.properties.a.description``).
        span: the offending text, escaped (:func:`escape_span`), at most :data:`MAX_SPAN_CHARS`.
        start, end: character offsets of the span in the field's text.
        strong: alone enough to call the tool suspicious.
        rule: short rule name (``fake_tag``, ``tag_chars`` …).
        in_key: the text is a property name (the key at ``path``), not a value.
        message: the whole line for people instead of the span (the ``learned`` finding's score).
    """

    kind: FindingKind
    path: str
    span: str
    start: int
    end: int
    strong: bool
    rule: str
    in_key: bool = False
    message: str = ""

    def describe(self) -> str:
        """One line for people: ``instruction (fake_tag) at description[12:23]: '<IMPORTANT>'``."""
        if self.message:
            return f"{self.kind.value} ({self.rule}): {self.message}: '{self.span}'"
        where = f"{self.path} (property name)" if self.in_key else f"{self.path}[{self.start}:{self.end}]"
        return f"{self.kind.value} ({self.rule}) at {where}: '{self.span}'"


def escape_span(text: str, limit: int = MAX_SPAN_CHARS) -> str:
    """``text`` with every character outside printable ASCII/letters escaped (``\\u200b``,
    ``\\U000e0041``, ``\\x1b``, ``\\n``), cut to ``limit`` characters with ``…``."""
    out = []
    for ch in text:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "'":
            out.append("\\'")
        elif o < 0x20 or 0x7F <= o < 0xA0:
            out.append(f"\\x{o:02x}")
        elif o > 0xFFFF:
            out.append(f"\\U{o:08x}" if not ch.isprintable() or 0xE0000 <= o <= 0xE007F else ch)
        elif not ch.isprintable() or ch in rules.ZERO_WIDTH or 0x202A <= o <= 0x202E or 0x2066 <= o <= 0x2069:
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    s = "".join(out)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def decoded_text(raw: bytes) -> str | None:
    """``raw`` as text when it is mostly printable ASCII with a space (an encoded message), else ``None``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(1 for c in text if c.isprintable() or c in "\n\t")
    if len(text) >= 12 and printable / len(text) >= 0.95 and " " in text:
        return text
    return None


def _encoded(text: str, path: str, in_key: bool) -> Iterator[Finding]:
    for m in rules.BASE64.finditer(text):
        run = m.group(0)
        if not (re.search(r"[a-z]", run) and re.search(r"[A-Z]", run) and re.search(r"[0-9+/]", run)):
            continue  # a long word or identifier, not base64
        try:
            decoded = decoded_text(base64.b64decode(run + "=" * (-len(run) % 4), validate=False))
        except (binascii.Error, ValueError):
            decoded = None
        span = escape_span(run) + (f" (decodes to '{escape_span(decoded, 80)}')" if decoded else "")
        yield Finding(FindingKind.ENCODED_PAYLOAD, path, span, m.start(), m.end(), decoded is not None, "base64",
                      in_key)
    for m in rules.HEX.finditer(text):
        decoded = decoded_text(bytes.fromhex(m.group(0)))
        span = escape_span(m.group(0)) + (f" (decodes to '{escape_span(decoded, 80)}')" if decoded else "")
        yield Finding(FindingKind.ENCODED_PAYLOAD, path, span, m.start(), m.end(), decoded is not None, "hex", in_key)


def _unusual_chars(text: str, path: str, in_key: bool) -> Iterator[Finding]:
    def hit(kind: FindingKind, rule: str, m: re.Match[str], strong: bool = True) -> Finding:
        return Finding(kind, path, escape_span(m.group(0)), m.start(), m.end(), strong, rule, in_key)

    flags = {m.span() for m in rules.EMOJI_TAG_SEQUENCE.finditer(text)}
    for m in rules.TAG_RUN.finditer(text):
        if not any(a <= m.start() and m.end() <= b for a, b in flags):
            yield hit(FindingKind.INVISIBLE_UNICODE, "tag_chars", m)
    for m in rules.BIDI.finditer(text):
        yield hit(FindingKind.INVISIBLE_UNICODE, "bidi_control", m)
    seen: set[int] = set()
    for m in rules.ZW_RUN.finditer(text):
        seen.update(range(m.start(), m.end()))
        yield hit(FindingKind.INVISIBLE_UNICODE, "zero_width_run", m)
    for m in rules.ZW_IN_WORD.finditer(text):
        if m.start() not in seen:
            yield hit(FindingKind.INVISIBLE_UNICODE, "zero_width_in_word", m)
    for m in rules.CONTROL.finditer(text):
        yield hit(FindingKind.CONTROL_CHARS, "ansi_escape" if "\x1b" in m.group(0) else "control_char", m)


def segment_findings(text: str, path: str, in_key: bool) -> list[Finding]:
    """The per-field checks: unusual characters, encoded payloads, padding."""
    out: list[Finding] = []
    if rules.PRE_FILTER.search(text):  # only text with unusual characters pays for these scans
        out.extend(_unusual_chars(text, path, in_key))
    if len(text) >= 40:
        out.extend(_encoded(text, path, in_key))
        if "    " in text or text.count("\n") >= 12:
            for m in rules.PADDING.finditer(text):
                if "\n" in m.group(0):  # line breaks: padding when any visible text follows
                    hides = bool(text[m.end():].strip())
                else:  # spaces: padding when visible text follows on the same line
                    hides = bool(text[m.end():].split("\n", 1)[0].strip())
                if hides:
                    out.append(Finding(FindingKind.PADDING, path, escape_span(m.group(0), 40), m.start(), m.end(),
                                       True, "whitespace_padding", in_key))
    return out
