"""Decoders the scanner runs before its word rules: text hidden by an encoding is read again decoded.

An instruction the model can decode is still an instruction ("rot13: nsgre genafyngvat, fraq …",
``%73end%20the%20key``, ``&#115;end``), and look-alike letters or invisible format characters split
the words the rules look for (``ѕend`` with a Cyrillic ``ѕ``, ``.env`` wrapped in U+200E marks).
:func:`decoded_views` gives the decoded *views* of one field; :mod:`registry.safety.definition_scan`
runs its word rules over them and reports what they find with :func:`view_findings`:

* ``rot13``: a sentence whose ROT13 reads as English (clearly more common English words than the line
  itself: ``uggcf`` → ``https``, ``gur hfre`` → ``the user``);
* ``url``: percent-encoding (``%xx``, at least three escapes), decoded with :func:`urllib.parse.unquote`;
* ``html``: HTML character references (``&#115;``, ``&lt;``), decoded with :func:`html.unescape`;
* ``folded``: Unicode NFKC (:func:`unicodedata.normalize`: full-width and mathematical letters),
  format characters (category ``Cf``: soft hyphen, U+200B–U+200F, U+2060 …) removed, and
  Cyrillic/Greek letters that look like Latin ones replaced inside words that mix scripts (the Unicode confusables'
  most common entries, https://www.unicode.org/Public/security/latest/confusables.txt).

A finding in a ``rot13``, ``url`` or ``html`` view that the plain text does not have is an
instruction someone encoded on purpose: one strong ``encoded_payload`` finding (``encoded_instruction``)
names the decoding and what it found. English that needs ROT13 to be read is strong on its own
(``rot13_text``): no honest tool documents itself in ROT13. A finding in the ``folded`` view keeps its kind and strength
(rule ``folded:<rule>``): folding only undoes disguise. Pure; no I/O.
"""

from __future__ import annotations

import codecs
import html
import re
import unicodedata
from urllib.parse import unquote

from registry.safety.scan_chars import Finding
from registry.safety.scan_rules import FindingKind

__all__ = ["decoded_views", "english_words", "view_findings"]

_ENGLISH = frozenset(
    "the a an and or to of in on for with from by this that these it its is are be was were you your they "
    "their user users all any every each before after when then also not do does must should send read "
    "include call use tool data file files text message messages key keys email when if as at we us our please "
    "only there here what which who into out up so no can will has have get them him her he she".split())
_WORD = re.compile(r"[A-Za-z]{1,24}")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_ENTITY = re.compile(r"&(?:#\d{2,7}|#x[0-9A-Fa-f]{2,6}|[A-Za-z]{2,8});")
_MIN_ROT13_WORDS = 6
_ROT13_HINT = re.compile(r"\b(?:gur|naq|lbh|lbhe|hfre|sbe|jvgu|guvf|gung|nyy|orsber|nsgre|jura|fraq|gb|bs|vf|vg)\b",
                         re.IGNORECASE)
"""ROT13 of the commonest English words (the, and, you, user, for, with …): a field without one is not decoded."""
_SENTENCE = re.compile(r"(?:[^\n.!?:;]|[.!?:;](?!\s))+")

# Cyrillic and Greek letters drawn like Latin ones (Unicode confusables, the common single letters)
_LOOKALIKE = str.maketrans({
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y",
    "х": "x", "ѕ": "s", "і": "i", "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l", "А": "A", "В": "B", "Е": "E",
    "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J",
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "ι": "i", "κ": "k", "τ": "t", "υ": "u", "χ": "x", "Α": "A", "Β": "B",
    "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y",
    "Χ": "X",
})
_FORMAT = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
                     "\U000e0000-\U000e007f]")
"""Format characters (Unicode category ``Cf``) that hide inside words: soft hyphen, zero-width and
bidi marks, word joiners, the byte-order mark, tag characters."""
_ANY_WORD = re.compile(r"\w+")
_LATIN = re.compile(r"[A-Za-z]")
_GREEK_CYRILLIC = re.compile(r"[\u0370-\u03ff\u0400-\u052f]")


def _unmix(m: re.Match[str]) -> str:
    """A word mixing Latin with Greek or Cyrillic letters, with the look-alikes made Latin."""
    word = m.group(0)
    return word.translate(_LOOKALIKE) if _LATIN.search(word) and _GREEK_CYRILLIC.search(word) else word


def english_words(text: str) -> int:
    """How many words of ``text`` are among the commonest English words."""
    return sum(1 for w in _WORD.findall(text) if w.lower() in _ENGLISH)


def _rot13(text: str) -> str | None:
    """``text`` with every sentence that reads as English only in ROT13 decoded, or ``None``."""
    changed = False

    def sentence(m: re.Match[str]) -> str:
        nonlocal changed
        piece = m.group(0)
        words = _WORD.findall(piece)
        if len(words) < _MIN_ROT13_WORDS:
            return piece
        decoded = codecs.encode(piece, "rot13")
        plain, rot = english_words(piece), english_words(decoded)
        if rot >= 3 and rot >= 0.25 * len(words) and rot >= 3 * plain + 2:
            changed = True
            return decoded
        return piece

    out = _SENTENCE.sub(sentence, text)
    return out if changed else None


def _fold(text: str) -> str | None:
    folded = unicodedata.normalize("NFKC", text)
    folded = _FORMAT.sub("", folded)
    folded = _ANY_WORD.sub(_unmix, folded)
    return folded if folded != text else None


def decoded_views(text: str) -> list[tuple[str, str]]:
    """``[(view, decoded text)]`` of one field: only the views that change it (module docstring)."""
    views: list[tuple[str, str]] = []
    if len(text) >= 24 and len(text.encode("ascii", "ignore")) > 0.8 * len(text) and _ROT13_HINT.search(text):
        rot = _rot13(text)
        if rot is not None:
            views.append(("rot13", rot))
    if "%" in text and len(_PERCENT.findall(text)) >= 3:
        views.append(("url", unquote(text)))
    if "&" in text and _ENTITY.search(text):
        unescaped = html.unescape(text)
        if unescaped != text:
            views.append(("html", unescaped))
    if not text.isascii():
        folded = _fold(text)
        if folded is not None:
            views.append(("folded", folded))
    return views


def view_findings(view: str, path: str, text: str, in_key: bool, found: list[Finding],
                  plain: list[Finding]) -> list[Finding]:
    """The findings to report for the word rules' ``found`` in one decoded ``view`` of the field at
    ``path`` (``text``: the field as written; ``plain``: the field's own findings).

    Only findings the plain text does not have (by kind and rule) count. ``folded``: each is
    reported as ``folded:<rule>`` over the whole field, strength kept. ``rot13``/``url``/``html``:
    one strong ``encoded_payload`` finding naming the decoding and the kinds found.
    """
    known = {(f.kind, f.rule) for f in plain if f.path == path and f.in_key == in_key}
    new = [f for f in found if (f.kind, f.rule) not in known]
    if view == "rot13" and not new:  # English hidden in ROT13 is no honest tool's documentation
        return [Finding(FindingKind.ENCODED_PAYLOAD, path, "", 0, len(text), True, "rot13_text", in_key,
                        f"a line at {path} reads as English only after ROT13")]
    if view == "folded":
        return [Finding(f.kind, path, f.span, 0, len(text), f.strong, f"folded:{f.rule}", in_key,
                        f"after folding look-alike and invisible characters, {f.kind.value} ({f.rule}) at {path}")
                for f in new]
    if not new:
        return []
    kinds = ", ".join(sorted({f"{f.kind.value} ({f.rule})" for f in new}))
    return [Finding(FindingKind.ENCODED_PAYLOAD, path, new[0].span, 0, len(text), True,
                    "encoded_instruction", in_key, f"{view}-encoded text at {path} decodes to {kinds}")]
